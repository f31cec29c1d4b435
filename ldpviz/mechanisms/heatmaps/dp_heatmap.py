"""Central-DP heatmaps: sparse EMD aggregation (dp-heatmap) and the Laplace baselines.

Ghazi et al., "Differentially Private Heatmaps" (dp-heatmaps-sparse-emd.md).
Unlike every LDP mechanism in the tool, these run in the *central* model: a
trusted aggregator sees every user's location (or check-in histogram), sums
them, and adds Laplace noise to the aggregate before anything is released.

* ``dp-heatmap`` — Algorithms 1 and 2 (Sec. 3.2-3.3, Sec. 4 implementation
  details); the maths lives in :mod:`ldpviz.mechanisms.heatmaps.pyramid`.
* ``laplace`` — the baseline of Sec. 4 ([LXD+19]): Lap(1/eps) on every cell of
  the sum, negatives zeroed.
* ``laplace-top`` — the thresholding variant of Sec. 4: keep only the top t% of
  the noisy cells.

Users hold distributions over the Delta x Delta grid (Sec. 2.3: a location is
an indicator, a user with several check-ins is their normalised histogram).
The mechanisms' :meth:`run` take one point per user (the bundled data); the
function-level API (:func:`dp_heatmap`, :func:`laplace_heatmap`) takes per-user
distributions, e.g. from :func:`user_histograms`.

:func:`heatmap` is the Gaussian-filtered heatmap H_p^sigma of Sec. 2.3, for
display and for the heatmap metrics.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import scipy.sparse as sp

from ldpviz.mechanisms.heatmaps import pyramid
from ldpviz.geo.domain import Binned
from ldpviz.errors import require
from ldpviz.mechanisms.estimation import to_distribution
from ldpviz.mechanisms import register
from ldpviz.mechanisms.base import CENTRAL_DP, Estimate, Mechanism, Param

FAMILY_HEATMAP = "Central-DP heatmaps (trusted aggregator)"
REFERENCE = "dp-heatmaps-sparse-emd.md"
TOLERANCE = 1e-9


# ---- heatmaps (Sec. 2.3) -------------------------------------------------------------------

def gaussian_kernel_1d(side: int, sigma: float) -> np.ndarray:
    """``K[x, x'] = exp(-(x - x')^2 / 2 sigma^2) / sum_x exp(...)``: columns sum to 1 (x in cells)."""
    pos = np.arange(side, dtype=float)
    kernel = np.exp(-((pos[:, None] - pos[None, :]) ** 2) / (2.0 * sigma * sigma))
    return kernel / kernel.sum(axis=0, keepdims=True)


def heatmap(density: np.ndarray, sigma: float) -> np.ndarray:
    """H_p^sigma of Sec. 2.3 on the grid; ``sigma`` in cell sides (0 = no filter).

    Each source cell's Gaussian is normalised over the grid (Z(x', y') of
    Sec. 2.3), so mass is preserved: the result sums to what ``density`` sums
    to. The 2-D Gaussian is separable and so is its truncated normaliser, hence
    ``H = K p K^T`` with the 1-D column-normalised kernel K.
    """
    p = np.asarray(density, dtype=float)
    require(p.ndim == 2 and p.shape[0] == p.shape[1], f"a heatmap needs a square (d, d) density, got {p.shape}")
    require(math.isfinite(sigma) and sigma >= 0, f"heatmap sigma must be a number >= 0, got {sigma!r}")
    if sigma == 0:
        return p.copy()
    kernel = gaussian_kernel_1d(p.shape[0], sigma)
    return kernel @ p @ kernel.T


# ---- users' distributions --------------------------------------------------------------------

def user_histograms(user_ids: np.ndarray, cells: np.ndarray, n_cells: int) -> sp.csr_matrix:
    """Per-user normalised check-in histograms: ``(n_users, n_cells)`` sparse, every row sums to 1.

    ``user_ids[k]`` and ``cells[k]`` are the user and flat cell of check-in k;
    users are numbered in the order of ``np.unique(user_ids)``.
    """
    user_ids = np.asarray(user_ids)
    cells = np.asarray(cells, dtype=np.int64)
    require(user_ids.shape == cells.shape, "user_ids and cells must have one entry per check-in")
    require(len(cells) > 0, "no check-ins given")
    require(cells.min() >= 0 and cells.max() < n_cells, f"cells must lie in 0..{n_cells - 1}")
    _, user = np.unique(user_ids, return_inverse=True)
    counts = sp.csr_matrix((np.ones(len(cells)), (user, cells)), shape=(int(user.max()) + 1, n_cells))
    counts.sum_duplicates()
    totals = np.asarray(counts.sum(axis=1)).ravel()
    return sp.csr_matrix(sp.diags(1.0 / totals) @ counts)


def aggregate_distributions(distributions: Any, side: int) -> tuple[np.ndarray, int]:
    """``(s, n)``: the (side, side) sum of the users' distributions and the number of users.

    ``distributions`` is an ``(n_users, side^2)`` array or scipy sparse matrix
    (flat cells ``row * side + col``), or a sequence of per-user ``(side, side)``
    or flat arrays. Every row must be non-negative with l1 norm at most 1 — the
    sensitivity bound the privacy proof rests on (Sec. 3.3, "Privacy analysis").
    """
    n_cells = side * side
    if sp.issparse(distributions):
        matrix = sp.csr_matrix(distributions, dtype=float)
    elif isinstance(distributions, np.ndarray) and distributions.ndim == 2 and distributions.shape[1] == n_cells:
        matrix = sp.csr_matrix(distributions.astype(float))
    else:
        rows = [np.asarray(p, dtype=float).ravel() for p in distributions]
        require(all(r.size == n_cells for r in rows),
                f"every user's distribution must have {n_cells} cells ({side} x {side})")
        matrix = sp.csr_matrix(np.vstack(rows) if rows else np.zeros((0, n_cells)))
    require(matrix.shape[1] == n_cells,
            f"user distributions must have {n_cells} columns ({side} x {side} cells), got {matrix.shape[1]}")
    require(matrix.shape[0] >= 1, "no users given")
    require(np.all(np.isfinite(matrix.data)), "user distributions must be finite")
    require(matrix.data.size == 0 or matrix.data.min() >= 0, "user distributions must be non-negative")
    norms = np.asarray(matrix.sum(axis=1)).ravel()
    require(norms.max() <= 1.0 + TOLERANCE,
            f"each user's distribution must sum to at most 1 (the privacy guarantee assumes it); "
            f"the largest sums to {norms.max():.6g}")
    total = np.asarray(matrix.sum(axis=0)).ravel().reshape(side, side)
    return total, matrix.shape[0]


# ---- function-level API ----------------------------------------------------------------------

def dp_heatmap(distributions: Any, side: int, epsilon: float, rng: np.random.Generator,
               width: int = pyramid.DEFAULT_WIDTH, gamma: float = pyramid.DEFAULT_GAMMA
               ) -> tuple[np.ndarray, dict[str, Any]]:
    """Algorithms 1 + 2 on per-user distributions: ``(density, info)``, density a (side, side) distribution."""
    pyramid.require_power_of_two(side)
    aggregate, n_users = aggregate_distributions(distributions, side)
    return dp_heatmap_from_aggregate(aggregate, epsilon, rng, width, gamma, n_users)


def dp_heatmap_from_aggregate(aggregate: np.ndarray, epsilon: float, rng: np.random.Generator,
                              width: int = pyramid.DEFAULT_WIDTH, gamma: float = pyramid.DEFAULT_GAMMA,
                              n_users: int | None = None) -> tuple[np.ndarray, dict[str, Any]]:
    """As :func:`dp_heatmap` from the sum ``s`` of distributions of l1 norm <= 1 each."""
    measured = pyramid.measure(aggregate, epsilon, rng, width, gamma)
    rec = pyramid.reconstruct(measured, width)
    density = to_distribution(rec.estimate)          # s_hat / ||s_hat||_1 (uniform if s_hat = 0)
    info = {"users": n_users, "levels_measured": f"{measured.first_level}..{measured.top}",
            "level_epsilons": [round(float(e), 6) for e in measured.level_epsilon],
            "measurements_kept": rec.selected, "lp_variables": rec.variables,
            "lp_objective": rec.objective, "mass_before_normalising": float(rec.estimate.sum())}
    return density, info


def laplace_heatmap(distributions: Any, side: int, epsilon: float, rng: np.random.Generator,
                    top_percent: float | None = None) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """The Laplace baselines of Sec. 4 on per-user distributions: ``(density, noisy_sum, info)``."""
    aggregate, n_users = aggregate_distributions(distributions, side)
    return laplace_from_aggregate(aggregate, epsilon, rng, top_percent, n_users)


def laplace_from_aggregate(aggregate: np.ndarray, epsilon: float, rng: np.random.Generator,
                           top_percent: float | None = None, n_users: int | None = None
                           ) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """Lap(1/eps) per cell of the sum (l1 sensitivity 1), negatives zeroed, optionally top t% kept."""
    noisy = aggregate + rng.laplace(0.0, 1.0 / epsilon, size=aggregate.shape)
    kept = np.maximum(noisy, 0.0)
    info: dict[str, Any] = {"users": n_users, "noise_scale": 1.0 / epsilon, "cells": int(aggregate.size)}
    if top_percent is not None:
        keep = max(1, int(round(top_percent / 100.0 * aggregate.size)))
        flat = kept.ravel()
        if keep < flat.size:
            cut = np.argpartition(-flat, keep - 1)[keep:]
            flat = flat.copy()
            flat[cut] = 0.0
            kept = flat.reshape(aggregate.shape)
        info["cells_kept"] = keep
    info["positive_cells"] = int((kept > 0).sum())
    return to_distribution(kept), noisy, info


# ---- registry mechanisms -----------------------------------------------------------------------

class _CentralHeatmap(Mechanism):
    family = FAMILY_HEATMAP
    privacy_model = CENTRAL_DP
    has_client = False
    has_channel = False

    def guarantee(self) -> str:
        return (f"epsilon-central DP with epsilon = {self.epsilon:g}: a trusted aggregator sees every raw "
                f"location and only its noisy aggregate is released (no local privacy)")

    def aggregate(self, users: Binned) -> np.ndarray:
        """Each user contributes the indicator of their cell: the sum is the histogram."""
        return self.grid.histogram(users.cells)


@register
class DPHeatmap(_CentralHeatmap):
    """Sparse EMD aggregation (Algorithms 1-2), central DP; grid side must be 2^l."""

    name = "dp-heatmap"
    label = "DP heatmap (sparse EMD aggregation, central DP)"
    reference = f"{REFERENCE} Alg. 1-2, Def. 3.1, Thm 3.1 budgets, Sec. 4 implementation details"
    summary = ("Central DP, not local: a trusted server collects the true locations, adds Laplace noise to "
               "counts of nested squares (coarse to fine) and rebuilds the sparse map that best fits them.")
    params = (
        Param("width", int, pyramid.DEFAULT_WIDTH,
              "w: squares kept per level when rebuilding (paper: 20); the first level measured is "
              "floor(log2 sqrt w)", minimum=1, maximum=4096),
        Param("gamma", float, pyramid.DEFAULT_GAMMA,
              "budget decay per level away from the first measured level (paper: 1/sqrt 2 = 0.7071; "
              "theory needs > 0.5)", minimum=0.5, maximum=1.0),
    )

    def setup(self) -> None:
        self.levels = pyramid.require_power_of_two(self.grid.side)

    def run(self, users: Binned, rng: np.random.Generator) -> Estimate:
        aggregate = self.aggregate(users)
        density, info = dp_heatmap_from_aggregate(aggregate, self.epsilon, rng, self.width, self.gamma,
                                                  n_users=len(users.cells))
        return Estimate(density, info=info)


@register
class LaplaceHeatmap(_CentralHeatmap):
    """Laplace on every cell of the sum, negatives zeroed (Sec. 4 baseline, [LXD+19])."""

    name = "laplace"
    label = "Laplace on every cell (central DP baseline)"
    reference = f"{REFERENCE} Sec. 4 'Baselines' ([LXD+19]); Lemma 2.2"
    summary = ("Central DP, not local: a trusted server counts the true locations per cell and adds Laplace "
               "noise to every cell; negative counts are set to zero.")

    def run(self, users: Binned, rng: np.random.Generator) -> Estimate:
        density, noisy, info = laplace_from_aggregate(self.aggregate(users), self.epsilon, rng,
                                                      n_users=len(users.cells))
        return Estimate(density, raw=noisy, info=info)


@register
class LaplaceTop(_CentralHeatmap):
    """Laplace baseline keeping only the top t% noisy cells (Sec. 4 thresholding variant)."""

    name = "laplace-top"
    label = "Laplace, top t% cells kept (central DP baseline)"
    reference = f"{REFERENCE} Sec. 4 'Baselines' (thresholding variant), App. E.1"
    summary = ("Central DP, not local: as the Laplace baseline, then only the largest t% of the noisy cells are "
               "kept (at least one) and the rest set to zero.")
    params = (Param("top_percent", float, 0.01,
                    "t: percentage of cells kept after noising (paper shows 0.01 and 0.001); at least one cell",
                    minimum=1e-6, maximum=100.0),)

    def run(self, users: Binned, rng: np.random.Generator) -> Estimate:
        density, noisy, info = laplace_from_aggregate(self.aggregate(users), self.epsilon, rng,
                                                      self.top_percent, n_users=len(users.cells))
        return Estimate(density, raw=noisy, info=info)


__all__ = ["heatmap", "gaussian_kernel_1d", "user_histograms", "aggregate_distributions", "dp_heatmap",
           "dp_heatmap_from_aggregate", "laplace_heatmap", "laplace_from_aggregate", "DPHeatmap",
           "LaplaceHeatmap", "LaplaceTop"]
