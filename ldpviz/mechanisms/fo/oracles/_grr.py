"""GRR / direct encoding: client, server, channel and the aggregate report histogram (L-SRR eq. 1;
USENIX'17 Sec. 4.1)."""

from __future__ import annotations

import math

import numpy as np

from ldpviz.mechanisms.fo.oracles._common import ReportHistogram, pure_estimate_counts, _as_values


# ---------------------------------------------------------------------------
# GRR (direct encoding)
# ---------------------------------------------------------------------------

def grr_probabilities(domain_size: int, epsilon: float) -> tuple[float, float]:
    """(p, q) of GRR: keep with p = e^eps/(e^eps + D - 1), each other value q = 1/(e^eps + D - 1)."""
    if domain_size == 1:
        return 1.0, 0.0
    denom = math.exp(epsilon) + domain_size - 1
    return math.exp(epsilon) / denom, 1.0 / denom


def grr_perturb(values: np.ndarray, domain_size: int, epsilon: float, rng: np.random.Generator) -> np.ndarray:
    """Client half of GRR (L-SRR eq. 1), vectorised: one report in [0, D) per value."""
    v = _as_values(values, domain_size)
    if domain_size == 1:
        return v.copy()
    p, _ = grr_probabilities(domain_size, epsilon)
    keep = rng.random(len(v)) < p
    other = rng.integers(0, domain_size - 1, size=len(v))
    other += other >= v
    return np.where(keep, v, other)


def grr_estimate_counts(reports: np.ndarray | ReportHistogram, domain_size: int, epsilon: float) -> np.ndarray:
    """Server half of GRR: unbiased count per value (may be negative)."""
    if isinstance(reports, ReportHistogram):
        observed, n = np.asarray(reports.counts, dtype=float), reports.n
    else:
        observed = np.bincount(np.asarray(reports, dtype=np.int64), minlength=domain_size).astype(float)
        n = int(observed.sum())
    if domain_size == 1:
        return observed
    p, q = grr_probabilities(domain_size, epsilon)
    return pure_estimate_counts(observed, n, p, q)


def grr_channel(domain_size: int, epsilon: float) -> np.ndarray:
    """P[y, x] of GRR."""
    if domain_size == 1:
        return np.ones((1, 1))
    p, q = grr_probabilities(domain_size, epsilon)
    P = np.full((domain_size, domain_size), q)
    np.fill_diagonal(P, p)
    return P


def grr_aggregate_histogram(true_counts: np.ndarray, epsilon: float, rng: np.random.Generator) -> ReportHistogram:
    """Aggregate path of GRR: the exact report histogram in O(D) draws.

    GRR is a mixture: with probability a = p - q a user reports its own value,
    otherwise a value uniform over all D (its own included). Its own value then
    has probability a + (1 - a)/D = p and each other value (1 - a)/D = q, as in
    L-SRR eq. 1, independently over users. So the histogram is Bin(n_v, a) per
    value plus one Multinomial(n - sum, uniform over D): the same distribution
    as :func:`grr_perturb` followed by a bincount.
    """
    counts = np.asarray(true_counts, dtype=np.int64).reshape(-1)
    D = counts.size
    n = int(counts.sum())
    if D == 1:
        return ReportHistogram(counts.copy(), n)
    p, q = grr_probabilities(D, epsilon)
    truthful = rng.binomial(counts, p - q)
    uniform = rng.multinomial(n - int(truthful.sum()), np.full(D, 1.0 / D))
    return ReportHistogram(truthful + uniform, n)
