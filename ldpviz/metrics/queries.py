"""Range queries and the Average Query Error (grid-decompositions-ug-privag-aag.md eq. 8-9, Sec. 4.2)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ldpviz.errors import LdpvizInputError, require
from ldpviz.geo.partition import Partition, grid_query
from ldpviz.metrics.inputs import _as_distribution

__all__ = ["random_queries", "aqe", "true_answers", "estimate_answers", "aqe_from_answers", "QUERY_ASPECT_RANGE"]

#: Aspect ratios (width / height) of random queries: log-uniform on this range.
QUERY_ASPECT_RANGE = (0.25, 4.0)


def random_queries(rho: float, gamma: int = 500, seed: int = 0) -> np.ndarray:
    """``gamma`` random axis-aligned query rectangles ``(x0, y0, x1, y1)`` of area ``rho``.

    Grid paper (grid-decompositions-ug-privag-aag.md, Sec. 4.2 and 4.4):
    gamma = 500 random queries with ``A(q) = rho x Omega``. The paper does not
    say how the shapes are drawn; we draw the aspect ratio width/height
    log-uniformly on :data:`QUERY_ASPECT_RANGE` (narrowed so the rectangle fits
    in the unit square), then the position uniformly among those that keep the
    rectangle inside [0, 1]^2. Same seed, same queries.
    """
    try:
        rho = float(rho)
    except (TypeError, ValueError):
        raise LdpvizInputError(f"query size rho must be a number in (0, 1], got {rho!r}") from None
    require(math.isfinite(rho) and 0 < rho <= 1,
            f"query size rho (fraction of the region's area) must be in (0, 1], got {rho!r}")
    require(isinstance(gamma, (int, np.integer)) and not isinstance(gamma, bool) and gamma >= 1,
            f"the number of queries gamma must be a whole number >= 1, got {gamma!r}")
    rng = np.random.default_rng(seed)
    lo = max(QUERY_ASPECT_RANGE[0], rho)
    hi = min(QUERY_ASPECT_RANGE[1], 1.0 / rho)
    aspect = np.exp(rng.uniform(math.log(lo), math.log(hi), gamma))
    width = np.minimum(np.sqrt(rho * aspect), 1.0)
    height = np.minimum(rho / width, 1.0)
    x0 = rng.uniform(0.0, 1.0, gamma) * (1.0 - width)
    y0 = rng.uniform(0.0, 1.0, gamma) * (1.0 - height)
    return np.column_stack([x0, y0, np.minimum(x0 + width, 1.0), np.minimum(y0 + height, 1.0)])


def _check_queries(queries: Any) -> np.ndarray:
    try:
        qs = np.asarray(queries, dtype=float)
    except (TypeError, ValueError):
        raise LdpvizInputError("queries must be an array of rectangles (x0, y0, x1, y1)") from None
    require(qs.ndim == 2 and qs.shape[1] == 4 and qs.shape[0] >= 1,
            f"queries must have shape (n, 4) with rows (x0, y0, x1, y1), got {qs.shape}")
    require(bool(np.all(np.isfinite(qs))), "queries contain NaN or infinite coordinates")
    require(bool(np.all(qs[:, 2] >= qs[:, 0]) and np.all(qs[:, 3] >= qs[:, 1])),
            "every query needs x0 <= x1 and y0 <= y1")
    return qs


def _count_points(points: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """Fraction of ``points`` inside each query; cells' convention: [x0, x1) except at the far edge 1."""
    order = np.argsort(points[:, 0], kind="stable")
    xs, ys = points[order, 0], points[order, 1]
    out = np.empty(len(queries))
    for k, (x0, y0, x1, y1) in enumerate(queries):
        lo = np.searchsorted(xs, x0, side="left")
        hi = np.searchsorted(xs, x1, side="right" if x1 >= 1.0 else "left")
        y = ys[lo:hi]
        inside = (y >= y0) & ((y < y1) | ((y1 >= 1.0) & (y <= y1)))
        out[k] = np.count_nonzero(inside)
    return out / len(points)


def _query_fractions(obj: Any, queries: np.ndarray, name: str, allow_points: bool,
                     kind: str | None = None, raw_partition: bool = False) -> np.ndarray:
    """Fraction of the users inside each query (eq. 8: area-proportional within a piece).

    A Partition is normalised by its total mass unless ``raw_partition``: then its
    masses are read as fractions of the users as they are (an estimate's raw unbiased
    partition, grid paper eq. 8), so a noisy total -- which for fine grids is far from 1
    and can be negative -- neither inflates the answers nor flips their sign.
    """
    if isinstance(obj, Partition):
        require(bool(np.all(np.isfinite(obj.mass))), f"{name} partition has NaN or infinite masses")
        if raw_partition:
            return obj.query(queries)
        total = float(obj.mass.sum())
        require(total > 0, f"{name} partition has zero total mass")
        return obj.query(queries) / total
    try:
        arr = np.asarray(obj, dtype=float)
    except (TypeError, ValueError):
        raise LdpvizInputError(f"{name} must be a Partition, a (d, d) density or (n, 2) points") from None
    if kind is None:
        kind = "points" if (arr.ndim == 2 and arr.shape[1] == 2 and arr.shape[0] != 2) else "density"
    if kind == "points":
        require(allow_points, f"{name} must be a Partition or a (d, d) density, not points")
        require(arr.ndim == 2 and arr.shape[1] == 2 and len(arr) > 0,
                f"{name} points must have shape (n, 2) with n >= 1, got {arr.shape}")
        require(bool(np.all(np.isfinite(arr))), f"{name} points contain NaN or infinite coordinates")
        return _count_points(arr, queries)
    p = _as_distribution(arr, name)
    return grid_query(p, queries)


def true_answers(true: Any, queries: np.ndarray, kind: str | None = None) -> np.ndarray:
    """Exact fraction of the users inside each query, from ``(n, 2)`` points (counted half-open
    ``[x0, x1)`` except at the far edge 1, as cells bin them), a ``(d, d)`` density or a Partition
    (both normalised; area-proportional within a cell, eq. 8). Compute once, reuse across estimates."""
    return _query_fractions(true, _check_queries(queries), "the truth", True, kind)


def estimate_answers(est: Any, queries: np.ndarray) -> np.ndarray:
    """Eq. 8 on an estimate: the fraction of users it puts inside each query.

    A Partition (e.g. ``Estimate.partition``) is answered on its *raw* masses, read as
    fractions of the users (the grid paper's unbiased counts / |U|), never renormalised by
    their noisy total; a ``(d, d)`` density is a distribution and is normalised.
    """
    return _query_fractions(est, _check_queries(queries), "the estimate", False, raw_partition=True)


def aqe_from_answers(true_fractions: np.ndarray, est_fractions: np.ndarray, n_users: Any,
                     bound_fraction: float = 0.02) -> float:
    """Eq. 9 of the grid paper: ``mean_q |ans_q - ans'_q| / max(ans_q, b)``, answers as counts
    (fractions x ``n_users``), ``b = bound_fraction x n_users`` (the paper: 2% of |U|)."""
    try:
        n = float(n_users)
    except (TypeError, ValueError):
        raise LdpvizInputError(f"n_users must be a whole number >= 1, got {n_users!r}") from None
    require(math.isfinite(n) and n >= 1, f"n_users must be a whole number >= 1, got {n_users!r}")
    require(isinstance(bound_fraction, (int, float, np.floating)) and 0 < bound_fraction <= 1,
            f"bound_fraction must be in (0, 1], got {bound_fraction!r}")
    ans_true = np.asarray(true_fractions, dtype=float) * n
    ans_est = np.asarray(est_fractions, dtype=float) * n
    require(ans_true.shape == ans_est.shape, "true and estimated answers must be for the same queries")
    return float(np.mean(np.abs(ans_true - ans_est) / np.maximum(ans_true, bound_fraction * n)))


def _aqe(true: Any, est: Any, n_users: Any, queries: np.ndarray, bound_fraction: float,
         true_kind: str | None = None) -> float:
    return aqe_from_answers(true_answers(true, queries, true_kind), estimate_answers(est, queries), n_users,
                            bound_fraction)


def aqe(true: Any, est: Any, *, n_users: int, queries: np.ndarray | None = None, rho: float = 0.01,
        gamma: int = 500, seed: int = 0, bound_fraction: float = 0.02) -> float:
    """Average Query Error of the grid paper (grid-decompositions-ug-privag-aag.md eq. 9).

    ``AQE = mean_q |ans_q - ans'_q| / max(ans_q, b)`` with ``b = bound_fraction
    x n_users`` (the paper: 2% of |U|) and answers as counts (fraction x
    ``n_users``). Answers on a partition or density are area-proportional (eq. 8,
    uniformity within a cell). An estimate Partition is read raw: its masses are
    fractions of the users (as ``Estimate.partition`` holds them), not renormalised
    by their noisy total (:func:`estimate_answers`); the truth is normalised.
    ``queries`` default to ``random_queries(rho, gamma, seed)``; ``rho`` is the
    query size as a share of the region's area (``Scenario.query_rho`` in runs).

    ``true`` may be a :class:`~ldpviz.geo.partition.Partition`, a ``(d, d)`` density,
    or ``(n, 2)`` user points in unit coordinates (exact answers: the fraction of
    points inside, counted half-open ``[x0, x1)`` except at the far edge 1, as
    cells bin them); ``est`` a Partition or a ``(d, d)`` density. An array of
    shape ``(2, 2)`` is read as a density; pass two points through
    :func:`evaluate` (``true_points``) instead.
    """
    qs = _check_queries(random_queries(rho, gamma, seed) if queries is None else queries)
    return _aqe(true, est, n_users, qs, bound_fraction)
