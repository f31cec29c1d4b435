"""Frequency oracles' shared pieces: report containers and the pure-protocol estimator (USENIX'17 Def. 2, Thm. 2)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ldpviz.errors import require
from ldpviz.mechanisms.path_cost import AGGREGATE, AUTO, PER_USER



FAMILY_FO = "Frequency oracles (grid cells)"
PATHS = (AUTO, PER_USER, AGGREGATE)


# ---------------------------------------------------------------------------
# Report containers (what crosses the wire, or its exact aggregate)
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class ReportHistogram:
    """How many users reported each output (GRR: cells, HR: Hadamard columns): the server's sufficient
    statistic, drawn by the aggregate path or summed from per-user reports (``path`` says which)."""

    counts: np.ndarray
    n: int
    path: str = AGGREGATE


@dataclass(frozen=True)
class SupportCounts:
    """For every value, how many reports support it (OLH, OUE): the server's sufficient statistic, drawn by
    the aggregate path or counted from per-user reports (``path`` says which)."""

    support: np.ndarray
    n: int
    path: str = AGGREGATE


@dataclass(frozen=True)
class OLHReports:
    """One OLH report per user: the seed of the user's hash function and the perturbed bucket."""

    seeds: np.ndarray      #: uint64, index of the user's member of the hash family (see olh_hash)
    buckets: np.ndarray    #: int64 in [0, g)
    g: int                 #: number of hash buckets


@dataclass(frozen=True)
class OUEReports:
    """One OUE report per user: D bits, packed 8 per byte along axis 1 (np.packbits)."""

    packed: np.ndarray     #: uint8 (n, ceil(D / 8))
    domain_size: int


# ---------------------------------------------------------------------------
# Shared estimator of pure protocols
# ---------------------------------------------------------------------------

def pure_estimate_counts(support: np.ndarray, n: int, p_star: float, q_star: float) -> np.ndarray:
    """Unbiased counts from support counts: (support - n q*) / (p* - q*) (USENIX'17 Thm. 2)."""
    return (np.asarray(support, dtype=float) - n * q_star) / (p_star - q_star)


def pure_variance(n: int, true_counts: np.ndarray | float, p_star: float, q_star: float) -> np.ndarray:
    """Exact variance of :func:`pure_estimate_counts` per value (USENIX'17 eq. 4 before approximation)."""
    f = np.asarray(true_counts, dtype=float)
    return n * q_star * (1 - q_star) / (p_star - q_star) ** 2 + f * (1 - p_star - q_star) / (p_star - q_star)


def _as_values(values: np.ndarray, domain_size: int) -> np.ndarray:
    v = np.asarray(values, dtype=np.int64).reshape(-1)
    require(domain_size >= 1, f"the domain must hold at least one value, got {domain_size}")
    if v.size:
        require(v.min() >= 0 and v.max() < domain_size,
                f"values must lie in [0, {domain_size}), got range [{v.min()}, {v.max()}]")
    return v
