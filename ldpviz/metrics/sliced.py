"""Sliced 2-Wasserstein distance on a grid (DAM paper, dam-disk-area-mechanism.md Sec. V-A, Definition 7)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ldpviz.errors import require
from ldpviz.metrics.inputs import _check_cell_m, _pair

__all__ = ["sliced_w2", "sliced_directions"]


def sliced_w2(true: Any, est: Any, *, cell_m: float = 1.0, n_projections: int = 200, seed: int = 0) -> float:
    """Sliced 2-Wasserstein distance, textbook scale: ``SW2 = sqrt(E_theta W2^2(P_theta p, P_theta q))``.

    DAM paper (dam-disk-area-mechanism.md Sec. V-A, Definition 7, with p = 2 and
    the uniform measure on directions): project both distributions on lines
    through the origin and average the squared 1-D 2-Wasserstein distances.
    Both live on the grid's cell centres, so each direction needs one sort of
    the common support and one O(n) walk of the monotone coupling (the value
    ``ot.sliced_wasserstein_distance(p=2)`` gives, tested; ~5x faster at
    d = 256); the directions are ``n_projections`` evenly spaced angles
    in [0, pi) rotated by a random offset drawn from ``seed`` (stratified
    Monte Carlo: deterministic per seed and far less noisy than i.i.d. angles).

    No rescaling: a translation by a vector ``s`` gives ``|s| / sqrt(2)`` in 2-D
    (``E_theta (theta . s)^2 = |s|^2 / 2``), and ``SW2 <= W2 / sqrt(2)`` for any
    pair. (Until issue 15 this value was multiplied by sqrt(2).) In cells, or
    metres with ``cell_m``.
    """
    p, q = _pair(true, est)
    cell = _check_cell_m(cell_m)
    require(isinstance(n_projections, (int, np.integer)) and n_projections >= 1,
            f"n_projections must be a whole number >= 1, got {n_projections!r}")
    return _sliced_w2_many(p, [q], cell, n_projections, seed)[0]


def _sliced_w2_many(p: np.ndarray, qs: list[np.ndarray], cell: float, n_projections: int = 200,
                    seed: int = 0) -> list[float]:
    """:func:`sliced_w2` of ``p`` against each of ``qs``, sharing one sort per direction.

    All maps live on the grid's cell centres, so the points are the union of the supports; a point with
    zero weight in a map moves no mass in the monotone walk, so each value equals the one computed on that
    pair's own support (the same masses meet in the same order)."""
    d = p.shape[0]
    a = p.ravel() / p.sum()
    bs = [q.ravel() / q.sum() for q in qs]
    keep = a > 0
    for b in bs:
        keep |= b > 0
    idx = np.flatnonzero(keep)
    r, c = np.divmod(idx, d)
    wa = a[idx]
    wbs = [b[idx] for b in bs]
    theta = sliced_directions(n_projections, seed)
    totals = [0.0] * len(qs)
    for k in range(theta.shape[1]):
        t = (c + 0.5) * theta[0, k] + (r + 0.5) * theta[1, k]
        order = np.argsort(t, kind="stable")
        x, wa_k = t[order], wa[order]
        for i, wb in enumerate(wbs):
            totals[i] += float(_w2_sq_1d_common(x, wa_k, wb[order]))
    return [float(math.sqrt(max(total / theta.shape[1], 0.0))) * cell for total in totals]


def _w2_sq_1d_common_py(x: np.ndarray, a: np.ndarray, b: np.ndarray) -> float:
    """Squared 1-D W2 between weights ``a`` and ``b`` (each summing to 1) on the same sorted points ``x``:
    the monotone (north-west corner) coupling, walked once, O(n)."""
    n = x.shape[0]
    i = j = 0
    ra, rb = a[0], b[0]
    total = 0.0
    while i < n and j < n:
        m = min(ra, rb)
        diff = x[i] - x[j]
        total += m * diff * diff
        ra -= m
        rb -= m
        if ra <= 1e-15:
            i += 1
            if i < n:
                ra = a[i]
        if rb <= 1e-15:
            j += 1
            if j < n:
                rb = b[j]
    return total


try:  # numba compiles the walk (a declared dependency; ldpviz.metrics.w2_back_and_forth uses it too)
    import numba as _numba
    _w2_sq_1d_common = _numba.njit(cache=True, nogil=True)(_w2_sq_1d_common_py)
except ImportError:  # pragma: no cover
    _w2_sq_1d_common = _w2_sq_1d_common_py


def sliced_directions(n_projections: int, seed: int = 0) -> np.ndarray:
    """The ``(2, n)`` unit directions :func:`sliced_w2` uses: stratified angles in [0, pi)."""
    offset = np.random.default_rng(seed).uniform()
    angles = np.pi * (np.arange(n_projections) + offset) / n_projections
    return np.vstack([np.cos(angles), np.sin(angles)])
