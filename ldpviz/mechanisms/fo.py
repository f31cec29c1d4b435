"""Categorical frequency oracles over grid cells: exact (no privacy) and GRR.

GRR / direct encoding: L-SRR paper (l-srr-staircase-randomized-response.md)
eq. (1); Wang et al., "Locally Differentially Private Protocols for Frequency
Estimation", USENIX Security'17, Sec. 4.1. The other oracles (OLH, OUE, HR)
live beside it in this module's family.
"""

from __future__ import annotations

import math

import numpy as np

from ldpviz.domain import Binned
from ldpviz.estimation import to_distribution
from ldpviz.mechanisms import register
from ldpviz.mechanisms.base import LDP, NO_PRIVACY, Estimate, Mechanism, Param

FAMILY_FO = "Frequency oracles (grid cells)"


@register
class Exact(Mechanism):
    """No privacy: every report is the true cell. The reference point (W2 = 0)."""

    name = "exact"
    label = "Exact (no privacy)"
    family = "Reference"
    privacy_model = NO_PRIVACY
    reference = "baseline: the true histogram"
    summary = "Each phone sends its true grid cell; the map is exact and nobody is protected."
    has_channel = True

    def perturb(self, users: Binned, rng: np.random.Generator) -> np.ndarray:
        return np.asarray(users.cells, dtype=np.int64).copy()

    def estimate(self, reports: np.ndarray) -> Estimate:
        counts = self.grid.histogram(reports)
        return Estimate(to_distribution(counts), raw=counts, info={"reports": int(len(reports))})

    def channel(self) -> np.ndarray:
        return np.eye(self.grid.n_cells)


@register
class GRR(Mechanism):
    """Generalised randomised response over the d x d cells.

    Keep the true cell with p = e^eps / (e^eps + D - 1), otherwise report one of
    the other D - 1 cells uniformly, q = 1 / (e^eps + D - 1) each (L-SRR eq. 1).
    Server: unbiased counts c_hat(v) = (C(v) - n q) / (p - q) (USENIX'17 Sec. 4.1),
    then a projection to a distribution (``projection``).
    """

    name = "grr"
    label = "GRR (generalised randomised response)"
    family = FAMILY_FO
    privacy_model = LDP
    reference = "l-srr-staircase-randomized-response.md eq. (1); Wang et al. USENIX Security'17 Sec. 4.1"
    summary = ("Each phone keeps its true cell with a boosted probability, otherwise names a cell uniformly at "
               "random; the server corrects the counts for the known noise.")
    params = (Param("projection", str, "clip", "how negative unbiased counts become a distribution",
                    choices=("clip", "norm-sub")),)
    has_channel = True

    def setup(self) -> None:
        D = self.grid.n_cells
        # exp(eps) is at most e^50 here; computed in log space for the ratio to stay exact.
        denom = math.exp(self.epsilon) + D - 1
        self.p = math.exp(self.epsilon) / denom
        self.q = 1.0 / denom

    def perturb(self, users: Binned, rng: np.random.Generator) -> np.ndarray:
        cells = np.asarray(users.cells, dtype=np.int64)
        D = self.grid.n_cells
        if D == 1:
            return cells.copy()
        keep = rng.random(len(cells)) < self.p
        other = rng.integers(0, D - 1, size=len(cells))
        other += other >= cells
        return np.where(keep, cells, other)

    def estimate_counts(self, reports: np.ndarray) -> np.ndarray:
        """Unbiased count estimate for every cell (may be negative)."""
        observed = np.bincount(np.asarray(reports, dtype=np.int64), minlength=self.grid.n_cells).astype(float)
        if self.grid.n_cells == 1:
            return observed
        n = observed.sum()
        return (observed - n * self.q) / (self.p - self.q)

    def estimate(self, reports: np.ndarray) -> Estimate:
        raw = self.estimate_counts(reports).reshape(self.grid.side, self.grid.side)
        density = to_distribution(raw, self.projection)
        return Estimate(density, raw=raw, info={"reports": int(len(reports)), "p": self.p, "q": self.q})

    def channel(self) -> np.ndarray:
        D = self.grid.n_cells
        if D == 1:
            return np.ones((1, 1))
        P = np.full((D, D), self.q)
        np.fill_diagonal(P, self.p)
        return P
