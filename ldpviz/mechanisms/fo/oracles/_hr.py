"""HR, Hadamard response: client, server, variance, channel and the aggregate report histogram
(Acharya et al. AISTATS'19)."""

from __future__ import annotations

import math

import numpy as np

from ldpviz.errors import require
from ldpviz.mechanisms.fo.oracles._common import ReportHistogram, _as_values


# ---------------------------------------------------------------------------
# HR (Hadamard response)
# ---------------------------------------------------------------------------

def hr_output_size(domain_size: int) -> int:
    """K = 2^ceil(log2(D + 1)): the smallest power of two above D (L-SRR Sec. 3.5, [38])."""
    return 1 << int(math.ceil(math.log2(domain_size + 1)))


def hr_in_probability(epsilon: float) -> float:
    """Probability that a report lands in the user's own set C_x: e^eps / (1 + e^eps)."""
    return 1.0 / (1.0 + math.exp(-epsilon))


def fwht(values: np.ndarray) -> np.ndarray:
    """Fast Walsh-Hadamard transform in Sylvester order: out[r] = sum_j (-1)^popcount(r & j) values[j]."""
    a = np.asarray(values, dtype=float).copy()
    K = a.size
    require(K & (K - 1) == 0, "the Walsh-Hadamard transform needs a power-of-two length")
    h = 1
    while h < K:
        a = a.reshape(-1, 2, h)
        a = np.stack([a[:, 0] + a[:, 1], a[:, 0] - a[:, 1]], axis=1)
        h *= 2
    return a.reshape(K)


def hr_perturb(values: np.ndarray, domain_size: int, epsilon: float, rng: np.random.Generator) -> np.ndarray:
    """Client half of HR: a report in [0, K), K = :func:`hr_output_size`.

    Value x owns row x + 1 of the Sylvester Hadamard matrix H_K (row 0, all +1,
    is skipped); C_x = {j : H[x+1, j] = +1} = {j : popcount((x+1) & j) even},
    |C_x| = K/2. The report is uniform on C_x with probability e^eps/(1+e^eps),
    otherwise uniform on its complement, so every output has probability
    2e^eps/(K(1+e^eps)) or 2/(K(1+e^eps)): ratio e^eps. Sampling: draw j uniform
    on [0, K) and, if it is on the wrong side, flip the lowest set bit of x + 1
    (a bijection between C_x and its complement), so no per-user loop.
    """
    v = _as_values(values, domain_size)
    K = hr_output_size(domain_size)
    row = (v + 1).astype(np.uint64)
    j = rng.integers(0, K, size=len(v), dtype=np.uint64)
    in_set = (np.bitwise_count(row & j) & 1) == 0
    want_in = rng.random(len(v)) < hr_in_probability(epsilon)
    lowbit = row & (~row + np.uint64(1))
    j = np.where(in_set == want_in, j, j ^ lowbit)
    return j.astype(np.int64)


def hr_estimate_counts(reports: np.ndarray | ReportHistogram, domain_size: int, epsilon: float) -> np.ndarray:
    """Server half of HR: unbiased count per value via one fast Walsh-Hadamard transform.

    With t = H_K @ histogram, t[x+1] = (#reports in C_x) - (#outside) and
    E[t[x+1]] = n_x (2 p_in - 1), because a report of any other value x' lands
    in C_x with probability exactly 1/2 (rows of H_K are orthogonal: |C_x n C_x'| = K/4).
    This is the unique solution of L-SRR Algorithm 2's linear system for HR.
    """
    K = hr_output_size(domain_size)
    if isinstance(reports, ReportHistogram):
        hist = np.asarray(reports.counts, dtype=float)
    else:
        hist = np.bincount(np.asarray(reports, dtype=np.int64), minlength=K).astype(float)
    t = fwht(hist)
    return t[1:domain_size + 1] / (2.0 * hr_in_probability(epsilon) - 1.0)


def hr_support_probabilities(epsilon: float) -> tuple[float, float]:
    """(p*, q*) of HR as a pure protocol: a report supports x when it lies in C_x."""
    return hr_in_probability(epsilon), 0.5


def hr_variance(n: int, true_counts: np.ndarray | float, epsilon: float) -> np.ndarray:
    """Exact variance of :func:`hr_estimate_counts`: [f (1 - (2p-1)^2) + (n - f)] / (2p-1)^2."""
    f = np.asarray(true_counts, dtype=float)
    bias = 2.0 * hr_in_probability(epsilon) - 1.0
    return (f * (1 - bias ** 2) + (n - f)) / bias ** 2


def hr_channel(domain_size: int, epsilon: float) -> np.ndarray:
    """P[y, x] of HR, shape (K, D)."""
    K = hr_output_size(domain_size)
    rows = np.arange(1, domain_size + 1, dtype=np.uint64)[None, :]
    cols = np.arange(K, dtype=np.uint64)[:, None]
    in_set = (np.bitwise_count(rows & cols) & 1) == 0
    p_in = hr_in_probability(epsilon)
    return np.where(in_set, 2.0 * p_in / K, 2.0 * (1.0 - p_in) / K)


def _hr_in_set_sample(values: np.ndarray, K: int, rng: np.random.Generator) -> np.ndarray:
    """One report uniform on C_x for each value x (j uniform on [0, K), moved into C_x by the lowest bit of x+1)."""
    row = (np.asarray(values, dtype=np.int64) + 1).astype(np.uint64)
    j = rng.integers(0, K, size=len(row), dtype=np.uint64)
    out_of_set = (np.bitwise_count(row & j) & 1) == 1
    lowbit = row & (~row + np.uint64(1))
    return np.where(out_of_set, j ^ lowbit, j).astype(np.int64)


def hr_aggregate_histogram(true_counts: np.ndarray, epsilon: float, rng: np.random.Generator) -> ReportHistogram:
    """Aggregate path of HR: the exact report histogram, drawing only the users whose report depends on them.

    HR is a mixture: with probability b = 2 p_in - 1 a user reports uniformly on
    its own set C_x (|C_x| = K/2), otherwise uniformly on all K outputs. An
    output in C_x then has probability b 2/K + (1 - b)/K = 2 p_in/K and one
    outside (1 - b)/K = 2 (1 - p_in)/K, as in :func:`hr_perturb`. So the
    histogram is one Multinomial(n - m, uniform over K) plus m = sum Bin(n_v, b)
    reports drawn uniformly on their C_v: O(K + D + b n) work instead of the
    O(D K) of a multinomial per value (b = tanh(eps/2): 0.46 at eps = 1).
    """
    counts = np.asarray(true_counts, dtype=np.int64).reshape(-1)
    D = counts.size
    K = hr_output_size(D)
    n = int(counts.sum())
    informed = rng.binomial(counts, 2.0 * hr_in_probability(epsilon) - 1.0)
    hist = rng.multinomial(n - int(informed.sum()), np.full(K, 1.0 / K))
    cum = np.cumsum(informed)
    cuts = np.unique(np.concatenate([[0], np.searchsorted(cum, np.arange(1 << 22, int(cum[-1]), 1 << 22)), [D]]))
    for lo, hi in zip(cuts[:-1], cuts[1:]):   # value ranges of about 4M informed users each: bounded memory
        values = np.repeat(np.arange(lo, hi, dtype=np.int64), informed[lo:hi])
        hist += np.bincount(_hr_in_set_sample(values, K, rng), minlength=K)
    return ReportHistogram(hist, n)
