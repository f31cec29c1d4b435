"""Categorical frequency oracles: exact (no privacy), GRR, OLH, OUE and HR.

Every oracle is a pair FO = <T, E> (grid paper Sec. 2.3): a client half that
perturbs one user's value and a server half that turns the reports into an
unbiased count for every value. The halves are plain functions on integer
values in ``[0, D)`` for an arbitrary domain size ``D`` (grid cells, adaptive
grid cells, SRR groups...), so any module can run an oracle on its own domain:

* GRR / direct encoding: :func:`grr_perturb`, :func:`grr_estimate_counts`
  (L-SRR eq. 1; Wang et al. USENIX Security'17 Sec. 4.1);
* OLH: :func:`olh_perturb`, :func:`olh_support_counts`, :func:`olh_estimate_counts`
  (grid paper eq. 2-3; USENIX'17 Sec. 4.4);
* OUE: :func:`oue_perturb`, :func:`oue_support_counts`, :func:`oue_estimate_counts`
  (USENIX'17 Sec. 4.3);
* HR: :func:`hr_perturb`, :func:`hr_estimate_counts` (Acharya, Sun, Zhang,
  "Hadamard Response", AISTATS'19; L-SRR Sec. 3.5 and ref. [38]).

All four are "pure" protocols (USENIX'17 Def. 2): each report *supports* a set
of values; a user's report supports its own value with probability ``p*`` and
any other given value with probability ``q*``. The unbiased count is
``(support - n q*) / (p* - q*)`` (:func:`pure_estimate_counts`) with variance
``n q*(1-q*)/(p*-q*)^2 + f (1-p*-q*)/(p*-q*)`` (:func:`pure_variance`, USENIX'17
Thm. 2); HR has its own variance (:func:`hr_variance`).

*Aggregate paths* draw the server's sufficient statistic directly from its
exact distribution given the true counts:
:func:`grr_aggregate_histogram` and :func:`hr_aggregate_histogram` (the report
histogram, drawn through each oracle's mixture form: O(D) and O(K + D + b n)),
:func:`oue_aggregate_support` (independent binomials per bit -- exact, since
OUE flips every bit independently) and :func:`olh_aggregate_support`
(independent binomials per value -- exact for a fully random hash family,
which USENIX'17's analysis assumes; the per-user path uses a universal family
and matches it in every per-value marginal). Mechanisms take a ``path``
parameter: 'auto' (default) picks the path a measured cost model
(:mod:`ldpviz.mechanisms.path_cost`) predicts faster for n users and D cells,
'per-user' or 'aggregate' force one; the estimate's ``info["path"]`` says which
was used. :func:`oracle_statistic` reduces per-user reports to the same
statistic, and statistics of disjoint groups of users add up
(:func:`merge_statistics`), which is what a cluster run reduces.
"""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

from ldpviz.geo.domain import Binned
from ldpviz.errors import require
from ldpviz.mechanisms.estimation import to_distribution
from ldpviz.mechanisms import register
from ldpviz.mechanisms.base import LDP, NO_PRIVACY, Estimate, Mechanism, Param
from ldpviz.mechanisms.path_cost import AGGREGATE, AUTO, PER_USER, choose_path
from ldpviz.mechanisms.fo.hadamard import (HR_VARIANT_PARAM, hadamard_aggregate_histogram, hadamard_channel,
                                        hadamard_code, hadamard_estimate_counts, hadamard_histogram,
                                        hadamard_perturb)

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


# ---------------------------------------------------------------------------
# OLH (optimised local hashing)
# ---------------------------------------------------------------------------

#: Prime modulus of the universal hash family (Mersenne prime 2^31 - 1).
OLH_PRIME = (1 << 31) - 1
#: Cap on the number of buckets: beyond it (epsilon > ~13.9) hashing gains nothing measurable.
OLH_MAX_BUCKETS = 1 << 20


def olh_buckets(epsilon: float) -> int:
    """g = round(e^eps + 1), the variance-optimal number of buckets (USENIX'17 Sec. 4.4; grid paper Sec. 2.3)."""
    if epsilon > math.log(OLH_MAX_BUCKETS):
        return OLH_MAX_BUCKETS
    return max(2, int(round(math.exp(epsilon) + 1)))


def olh_probabilities(epsilon: float, g: int) -> tuple[float, float]:
    """(p, q) of the bucket perturbation, grid paper eq. 2: p = e^eps/(e^eps+g-1), q = 1/(e^eps+g-1)."""
    denom = math.exp(epsilon) + g - 1
    return math.exp(epsilon) / denom, 1.0 / denom


def _olh_decode(seeds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    seeds = np.asarray(seeds, dtype=np.uint64)
    P = np.uint64(OLH_PRIME)
    return seeds // P + np.uint64(1), seeds % P


def _bucket_starts(g: int) -> np.ndarray:
    """L_y = ceil(y P / g): hash value z falls in bucket y iff L_y <= z < L_{y+1}."""
    y = np.arange(g + 1, dtype=np.uint64)
    return (y * np.uint64(OLH_PRIME) + np.uint64(g - 1)) // np.uint64(g)


def olh_hash(seeds: np.ndarray, values: np.ndarray, g: int) -> np.ndarray:
    """H_seed(v) = floor(((a v + b) mod P) g / P) with (a, b) = (seed // P + 1, seed mod P).

    A Carter-Wegman universal family over the prime P = 2^31 - 1 (a in [1, P),
    b in [0, P)); H(v) is uniform on the buckets and two distinct values collide
    with probability 1/g up to an error below g/P (< 5e-4 even at the 2^20-bucket
    cap, below 1e-8 for epsilon <= 3). Broadcasts seeds against values.
    """
    a, b = _olh_decode(seeds)
    z = (a * np.asarray(values, dtype=np.uint64) + b) % np.uint64(OLH_PRIME)
    return ((z * np.uint64(g)) // np.uint64(OLH_PRIME)).astype(np.int64)


def olh_perturb(values: np.ndarray, domain_size: int, epsilon: float, rng: np.random.Generator,
                g: int | None = None) -> OLHReports:
    """Client half of OLH: draw a hash function, hash the value, perturb the bucket by eq. 2."""
    v = _as_values(values, domain_size)
    require(domain_size < OLH_PRIME, f"OLH's hash family supports at most {OLH_PRIME - 1:,} values")
    g = olh_buckets(epsilon) if g is None else int(g)
    require(g >= 2, f"OLH needs at least 2 buckets, got {g}")
    seeds = rng.integers(0, (OLH_PRIME - 1) * OLH_PRIME, size=len(v), dtype=np.uint64)
    hashed = olh_hash(seeds, v, g)
    p, _ = olh_probabilities(epsilon, g)
    keep = rng.random(len(v)) < p
    other = rng.integers(0, g - 1, size=len(v))
    other += other >= hashed
    return OLHReports(seeds, np.where(keep, hashed, other), g)


def _olh_support_chunk(a: np.ndarray, b: np.ndarray, buckets: np.ndarray, starts: np.ndarray,
                       domain_size: int) -> np.ndarray:
    """Support counts of one chunk of users: a loop over values, vectorised over users (uint32).

    For each user keep z = (a v + b - L_y) mod P as v steps by one (z += a, then
    one conditional subtraction of P), so the user supports v iff z < L_{y+1} - L_y.
    """
    P = np.uint32(OLH_PRIME)
    lo = starts[buckets]
    width = (starts[buckets + 1] - lo).astype(np.uint32)
    z = ((b + np.uint64(OLH_PRIME) - lo) % np.uint64(OLH_PRIME)).astype(np.uint32)
    step = a.astype(np.uint32)
    tmp = np.empty_like(z)
    hit = np.empty(z.shape, dtype=bool)
    out = np.empty(domain_size, dtype=np.int64)
    for v in range(domain_size):
        if v:
            np.add(z, step, out=z)                 # < 2^32: both terms < 2^31
            np.subtract(z, P, out=tmp)             # wraps to a huge value when z < P
            np.minimum(z, tmp, out=z)
        np.less(z, width, out=hit)
        out[v] = np.count_nonzero(hit)
    return out


def olh_support_counts(reports: OLHReports, domain_size: int, chunk: int = 1 << 17,
                       threads: int = 2, compiled: bool | None = None) -> np.ndarray:
    """Sup(v) for every v in [0, D): how many users' reports satisfy x'_u = H_u(v) (grid paper Sec. 2.3).

    Exact: every user's own hash function is evaluated on every value (n x D
    evaluations in integer arithmetic, chunked over users, chunks spread over
    ``threads`` threads). ``compiled`` (default: from 2^16 users on): the fused
    numba loop of :mod:`~ldpviz.mechanisms.fo.olh_kernel` (same counts); else
    numpy, which releases the GIL inside each operation.
    """
    if compiled is None:
        compiled = len(reports.buckets) >= 1 << 16
    buckets = np.asarray(reports.buckets, dtype=np.int64)
    starts = _bucket_starts(reports.g)
    n = len(buckets)
    bounds = [(s, min(s + chunk, n)) for s in range(0, n, chunk)]
    if not bounds:
        return np.zeros(domain_size, dtype=np.int64)
    if compiled:
        from ldpviz.mechanisms.fo import olh_kernel

    def work(bound: tuple[int, int]) -> np.ndarray:
        s, e = bound
        a, b = _olh_decode(reports.seeds[s:e])
        if not compiled:
            return _olh_support_chunk(a, b, buckets[s:e], starts, domain_size)
        lo = starts[buckets[s:e]]
        width = (starts[buckets[s:e] + 1] - lo).astype(np.uint32)
        z0 = ((b + np.uint64(OLH_PRIME) - lo) % np.uint64(OLH_PRIME)).astype(np.uint32)
        return olh_kernel.support_counts(z0, a.astype(np.uint32), width, domain_size, OLH_PRIME)

    if threads > 1 and len(bounds) > 1:
        with ThreadPoolExecutor(max_workers=threads) as pool:
            parts = list(pool.map(work, bounds))
    else:
        parts = [work(bd) for bd in bounds]
    return np.sum(parts, axis=0)


def olh_support_probabilities(epsilon: float, g: int) -> tuple[float, float]:
    """(p*, q*) of OLH as a pure protocol: p* = e^eps/(e^eps+g-1), q* = 1/g."""
    return olh_probabilities(epsilon, g)[0], 1.0 / g


def olh_estimate_counts(reports: OLHReports | SupportCounts, domain_size: int, epsilon: float,
                        g: int | None = None) -> np.ndarray:
    """Server half of OLH: Phi(v) by grid paper eq. 3 for every v (may be negative)."""
    if isinstance(reports, SupportCounts):
        support, n = reports.support, reports.n
        g = olh_buckets(epsilon) if g is None else g
    else:
        support, n, g = olh_support_counts(reports, domain_size), len(reports.buckets), reports.g
    p_star, q_star = olh_support_probabilities(epsilon, g)
    return pure_estimate_counts(support, n, p_star, q_star)


def olh_hash_channel(seed: int, domain_size: int, epsilon: float, g: int) -> np.ndarray:
    """P[y, x] of OLH for one fixed hash function (the per-hash-function channel), shape (g, D)."""
    hashed = olh_hash(np.uint64(seed), np.arange(domain_size), g)
    p, q = olh_probabilities(epsilon, g)
    P = np.full((g, domain_size), q)
    P[hashed, np.arange(domain_size)] = p
    return P


def olh_supports(reports: OLHReports, domain_size: int) -> np.ndarray:
    """``(n, D)`` bool: whether each report <seed, bucket> supports each value (H_seed(v) == bucket)."""
    values = np.arange(domain_size, dtype=np.uint64)[None, :]
    n = len(reports.buckets)
    out = np.empty((n, domain_size), dtype=bool)
    step = max(1, (1 << 22) // max(domain_size, 1))
    for start in range(0, n, step):
        seeds = np.asarray(reports.seeds[start:start + step], dtype=np.uint64)[:, None]
        buckets = np.asarray(reports.buckets[start:start + step])[:, None]
        out[start:start + step] = olh_hash(seeds, values, reports.g) == buckets
    return out


def olh_aggregate_support(true_counts: np.ndarray, epsilon: float, rng: np.random.Generator,
                          g: int | None = None) -> SupportCounts:
    """Aggregate path of OLH: Sup(v) ~ Bin(n_v, p*) + Bin(n - n_v, 1/g), independent over v.

    Exact for a fully random hash family (given a user's report, the hash values
    of the other values are independent and uniform); the per-user universal
    family matches it in every per-value marginal.
    """
    counts = np.asarray(true_counts, dtype=np.int64).reshape(-1)
    g = olh_buckets(epsilon) if g is None else int(g)
    n = int(counts.sum())
    p_star, q_star = olh_support_probabilities(epsilon, g)
    return SupportCounts(rng.binomial(counts, p_star) + rng.binomial(n - counts, q_star), n)


def olh_variance(n: int, true_counts: np.ndarray | float, epsilon: float, g: int | None = None) -> np.ndarray:
    """Exact variance of the OLH estimate (USENIX'17 eq. 4 with p* and q* = 1/g)."""
    g = olh_buckets(epsilon) if g is None else g
    return pure_variance(n, true_counts, *olh_support_probabilities(epsilon, g))


# ---------------------------------------------------------------------------
# OUE (optimised unary encoding)
# ---------------------------------------------------------------------------

def oue_probabilities(epsilon: float) -> tuple[float, float]:
    """(p, q) of OUE: the user's own bit is 1 w.p. 1/2, every other bit w.p. 1/(e^eps + 1) (USENIX'17 Sec. 4.3)."""
    return 0.5, 1.0 / (math.exp(epsilon) + 1.0)


def oue_perturb(values: np.ndarray, domain_size: int, epsilon: float, rng: np.random.Generator,
                chunk: int = 1 << 14) -> OUEReports:
    """Client half of OUE: one-hot encode, then report each bit independently (packed bits)."""
    v = _as_values(values, domain_size)
    p, q = oue_probabilities(epsilon)
    n = len(v)
    packed = np.empty((n, (domain_size + 7) // 8), dtype=np.uint8)
    rows = max(1, min(chunk, (1 << 22) // max(domain_size, 1)))
    for s in range(0, n, rows):
        e = min(s + rows, n)
        bits = rng.random((e - s, domain_size)) < q
        bits[np.arange(e - s), v[s:e]] = rng.random(e - s) < p
        packed[s:e] = np.packbits(bits, axis=1)
    return OUEReports(packed, domain_size)


def oue_support_counts(reports: OUEReports) -> np.ndarray:
    """How many reports have bit v set, for every v."""
    D = reports.domain_size
    out = np.zeros(D, dtype=np.int64)
    rows = max(1, (1 << 22) // max(D, 1))
    for s in range(0, len(reports.packed), rows):
        out += np.unpackbits(reports.packed[s:s + rows], axis=1, count=D).sum(axis=0, dtype=np.int64)
    return out


def oue_estimate_counts(reports: OUEReports | SupportCounts, domain_size: int, epsilon: float) -> np.ndarray:
    """Server half of OUE: unbiased count per value (may be negative)."""
    if isinstance(reports, SupportCounts):
        support, n = reports.support, reports.n
    else:
        support, n = oue_support_counts(reports), len(reports.packed)
    return pure_estimate_counts(support, n, *oue_probabilities(epsilon))


def oue_aggregate_support(true_counts: np.ndarray, epsilon: float, rng: np.random.Generator) -> SupportCounts:
    """Aggregate path of OUE: bit v's count ~ Bin(n_v, 1/2) + Bin(n - n_v, q), independent over v. Exact."""
    counts = np.asarray(true_counts, dtype=np.int64).reshape(-1)
    n = int(counts.sum())
    p, q = oue_probabilities(epsilon)
    return SupportCounts(rng.binomial(counts, p) + rng.binomial(n - counts, q), n)


def oue_bit_channel(epsilon: float) -> np.ndarray:
    """Per-bit channel: rows = reported bit (0, 1), columns = (bit is the user's own, bit is another)."""
    p, q = oue_probabilities(epsilon)
    return np.array([[1 - p, 1 - q], [p, q]])


# ---------------------------------------------------------------------------
# One entry point over every oracle (used by the grid decompositions)
# ---------------------------------------------------------------------------

ORACLES = ("grr", "olh", "oue", "hr")


def oracle_perturb(oracle: str, values: np.ndarray, domain_size: int, epsilon: float, rng: np.random.Generator,
                   path: str = PER_USER) -> Any:
    """Client half of frequency oracle ``oracle`` on ``values`` in [0, D): per-user reports, or with
    ``path="aggregate"`` the oracle's sufficient statistic drawn from its exact distribution;
    ``path="auto"`` takes whichever :func:`~ldpviz.mechanisms.path_cost.choose_path` predicts faster."""
    require(oracle in ORACLES, f"unknown frequency oracle {oracle!r}; choose one of {', '.join(ORACLES)}")
    require(path in PATHS, f"path must be one of {', '.join(PATHS)}; got {path!r}")
    if path == AUTO:
        path = choose_path(oracle, int(np.size(values)), domain_size)
    if path == AGGREGATE:
        true_counts = np.bincount(_as_values(values, domain_size), minlength=domain_size)
        sample = {"grr": grr_aggregate_histogram, "hr": hr_aggregate_histogram, "olh": olh_aggregate_support,
                  "oue": oue_aggregate_support}[oracle]
        return sample(true_counts, epsilon, rng)
    client = {"grr": grr_perturb, "hr": hr_perturb, "olh": olh_perturb, "oue": oue_perturb}[oracle]
    return client(values, domain_size, epsilon, rng)


def oracle_estimate(oracle: str, reports: Any, domain_size: int, epsilon: float) -> np.ndarray:
    """Server half: unbiased counts of every value from :func:`oracle_perturb`'s output."""
    require(oracle in ORACLES, f"unknown frequency oracle {oracle!r}; choose one of {', '.join(ORACLES)}")
    server = {"grr": grr_estimate_counts, "hr": hr_estimate_counts, "olh": olh_estimate_counts,
              "oue": oue_estimate_counts}[oracle]
    return server(reports, domain_size, epsilon)


def oracle_statistic(oracle: str, reports: Any, domain_size: int) -> ReportHistogram | SupportCounts:
    """The server's sufficient statistic of per-user reports (already one: returned as is).

    GRR and HR: the histogram of reports; OLH and OUE: the support count of every
    value. Statistics of disjoint groups of users add up (:func:`merge_statistics`),
    and :func:`oracle_estimate` gives the same counts from the statistic as from
    the reports.
    """
    require(oracle in ORACLES, f"unknown frequency oracle {oracle!r}; choose one of {', '.join(ORACLES)}")
    if isinstance(reports, (ReportHistogram, SupportCounts)):
        return reports
    if oracle == "grr":
        r = np.asarray(reports, dtype=np.int64)
        return ReportHistogram(np.bincount(r, minlength=domain_size), len(r), PER_USER)
    if oracle == "hr":
        r = np.asarray(reports, dtype=np.int64)
        return ReportHistogram(np.bincount(r, minlength=hr_output_size(domain_size)), len(r), PER_USER)
    if oracle == "olh":
        return SupportCounts(olh_support_counts(reports, domain_size), len(reports.buckets), PER_USER)
    return SupportCounts(oue_support_counts(reports), len(reports.packed), PER_USER)


def report_histogram(reports: np.ndarray | ReportHistogram, size: int) -> ReportHistogram:
    """How many reports fell on each of ``size`` outputs (a histogram is returned as is): the additive
    statistic of any mechanism whose server reads only the report counts. ``n`` counts the users, one row
    of ``reports`` each (SEM-Geo-I's rows hold k cells)."""
    if isinstance(reports, ReportHistogram):
        require(len(reports.counts) == size, f"a report histogram over {len(reports.counts):,} outputs was given "
                                            f"where {size:,} were expected")
        return reports
    r = np.asarray(reports, dtype=np.int64)
    return ReportHistogram(np.bincount(r.reshape(-1), minlength=size), len(r), PER_USER)


def merge_statistics(parts: list) -> ReportHistogram | SupportCounts:
    """Sum the sufficient statistics of disjoint groups of users (integer sums: exact in any order).

    The merged ``path`` is the common path of the parts, or 'mixed'.
    """
    require(len(parts) > 0, "nothing to merge: no statistics were given")
    kind = type(parts[0])
    require(kind in (ReportHistogram, SupportCounts) and all(type(p) is kind for p in parts),
            "statistics to merge must all be report histograms or all support counts")
    paths = {p.path for p in parts}
    path = paths.pop() if len(paths) == 1 else "mixed"
    field = "counts" if kind is ReportHistogram else "support"
    total = np.sum([np.asarray(getattr(p, field), dtype=np.int64) for p in parts], axis=0)
    return kind(total, int(sum(p.n for p in parts)), path)


def oracle_counts(oracle: str, values: np.ndarray, domain_size: int, epsilon: float, rng: np.random.Generator,
                  path: str = PER_USER) -> np.ndarray:
    """Run frequency oracle ``oracle`` on ``values`` in [0, D): client and server halves, unbiased counts."""
    return oracle_estimate(oracle, oracle_perturb(oracle, values, domain_size, epsilon, rng, path), domain_size,
                           epsilon)


def oracle_variance(oracle: str, n: int, true_counts: np.ndarray | float, domain_size: int,
                    epsilon: float) -> np.ndarray:
    """Analytical variance of each oracle's unbiased count."""
    if oracle == "grr":
        return pure_variance(n, true_counts, *grr_probabilities(domain_size, epsilon))
    if oracle == "olh":
        return olh_variance(n, true_counts, epsilon)
    if oracle == "oue":
        return pure_variance(n, true_counts, *oue_probabilities(epsilon))
    if oracle == "hr":
        return hr_variance(n, true_counts, epsilon)
    raise ValueError(f"unknown oracle {oracle!r}")


# ---------------------------------------------------------------------------
# Mechanisms over the d x d evaluation grid
# ---------------------------------------------------------------------------

_PROJECTION = Param("projection", str, "clip",
                    "how unbiased counts (which can be negative) become the map's distribution: 'clip' "
                    "(zero the negatives) or 'norm-sub' (Wang et al. NDSS'20)", choices=("clip", "norm-sub"))


def _path_param(what: str) -> Param:
    return Param("path", str, AUTO,
                 f"'per-user' simulates every phone; 'aggregate' draws {what} directly from its exact "
                 "distribution (the same distribution of the server's statistic); 'auto' (default) takes the "
                 "one predicted faster for this number of users and cells by a cost model fitted to measured "
                 "wall times of both halves (ldpviz.mechanisms.path_cost; docs/fo-benchmark.md)",
                 choices=PATHS)


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

    def statistic(self, reports: np.ndarray | ReportHistogram) -> ReportHistogram:
        """The histogram of reports (additive over groups of users)."""
        if isinstance(reports, ReportHistogram):
            return reports
        return ReportHistogram(np.bincount(np.asarray(reports, dtype=np.int64), minlength=self.grid.n_cells),
                               len(reports), PER_USER)

    def estimate(self, reports: np.ndarray | ReportHistogram) -> Estimate:
        hist = self.statistic(reports)
        counts = np.asarray(hist.counts, dtype=float).reshape(self.grid.side, self.grid.side)
        return Estimate(to_distribution(counts), raw=counts, info={"reports": int(hist.n)})

    def channel(self) -> np.ndarray:
        return np.eye(self.grid.n_cells)


class _GridOracle(Mechanism):
    """Shared server side: unbiased counts -> (d, d) raw estimate -> projected distribution."""

    family = FAMILY_FO
    privacy_model = LDP

    def _true_counts(self, users: Binned) -> np.ndarray:
        return np.bincount(np.asarray(users.cells, dtype=np.int64), minlength=self.grid.n_cells)

    def estimate_counts(self, reports) -> np.ndarray:  # pragma: no cover - overridden
        raise NotImplementedError

    def _n_reports(self, reports) -> int:
        if isinstance(reports, (ReportHistogram, SupportCounts)):
            return reports.n
        if isinstance(reports, OLHReports):
            return len(reports.buckets)
        if isinstance(reports, OUEReports):
            return len(reports.packed)
        return len(reports)

    def path_for(self, n_users: int) -> str:
        """The path :meth:`collect` takes for ``n_users``: the one forced by ``path``, or with 'auto' the
        one :func:`~ldpviz.mechanisms.path_cost.choose_path` predicts faster."""
        return self.path if self.path != AUTO else choose_path(self.name, int(n_users), self.grid.n_cells)

    def perturb(self, users: Binned, rng: np.random.Generator) -> Any:
        """Client half: one report per user (with ``path='aggregate'`` forced: the statistic instead)."""
        if self.path == AGGREGATE:
            return self._aggregate(self._true_counts(users), rng)
        return self._per_user(users, rng)

    def collect(self, users: Binned, rng: np.random.Generator) -> Any:
        """What the server receives, on the path :meth:`path_for` picks (reports or their exact statistic)."""
        if self.path_for(len(users.cells)) == AGGREGATE:
            return self._aggregate(self._true_counts(users), rng)
        return self._per_user(users, rng)

    def statistic(self, reports: Any) -> ReportHistogram | SupportCounts:
        """The server's sufficient statistic of ``reports`` (additive over groups of users)."""
        return oracle_statistic(self.name, reports, self.grid.n_cells)

    def _per_user(self, users: Binned, rng: np.random.Generator) -> Any:  # pragma: no cover - overridden
        raise NotImplementedError

    def _aggregate(self, true_counts: np.ndarray, rng: np.random.Generator) -> Any:  # pragma: no cover
        raise NotImplementedError

    def estimate(self, reports) -> Estimate:
        d = self.grid.side
        raw = self.estimate_counts(reports).reshape(d, d)
        density = to_distribution(raw, self.projection)
        used = reports.path if isinstance(reports, (ReportHistogram, SupportCounts)) else PER_USER
        info = {"reports": self._n_reports(reports), "domain size": self.grid.n_cells, "path": used,
                "path requested": self.path}
        info.update(self._info())
        return Estimate(density, raw=raw, info=info)

    def _info(self) -> dict:
        return {}


@register
class GRR(_GridOracle):
    """Generalised randomised response over the d x d cells.

    Keep the true cell with p = e^eps / (e^eps + D - 1), otherwise report one of
    the other D - 1 cells uniformly, q = 1 / (e^eps + D - 1) each (L-SRR eq. 1).
    Server: unbiased counts c_hat(v) = (C(v) - n q) / (p - q) (USENIX'17 Sec. 4.1),
    then a projection to a distribution (``projection``). The aggregate path
    draws the report histogram exactly in O(D) (:func:`grr_aggregate_histogram`).
    """

    name = "grr"
    label = "GRR (generalised randomised response)"
    reference = "l-srr-staircase-randomized-response.md eq. (1); Wang et al. USENIX Security'17 Sec. 4.1"
    summary = ("Each phone keeps its true cell with a boosted probability, otherwise names a cell uniformly at "
               "random; the server corrects the counts for the known noise.")
    params = (_PROJECTION, _path_param("the report histogram (a binomial per cell plus one multinomial)"))
    has_channel = True

    def setup(self) -> None:
        self.p, self.q = grr_probabilities(self.grid.n_cells, self.epsilon)

    def _per_user(self, users: Binned, rng: np.random.Generator) -> np.ndarray:
        return grr_perturb(users.cells, self.grid.n_cells, self.epsilon, rng)

    def _aggregate(self, true_counts: np.ndarray, rng: np.random.Generator) -> ReportHistogram:
        return grr_aggregate_histogram(true_counts, self.epsilon, rng)

    def estimate_counts(self, reports: np.ndarray | ReportHistogram) -> np.ndarray:
        """Unbiased count estimate for every cell (may be negative)."""
        return grr_estimate_counts(reports, self.grid.n_cells, self.epsilon)

    def _info(self) -> dict:
        return {"p": self.p, "q": self.q}

    def attack_reports(self, people: Binned, rng: np.random.Generator, crowd: Binned) -> np.ndarray:
        """One per-user report for each of ``people`` (the phone's code; ``crowd`` shapes nothing public)."""
        return self._per_user(people, rng)

    def report_likelihood(self, reports: np.ndarray) -> np.ndarray:
        """``(n, D)`` P(report | cell) of each report (the rows of :meth:`channel`)."""
        return grr_report_likelihood(reports, self.epsilon, self.grid.n_cells)

    def channel(self) -> np.ndarray:
        """P[y, x], shape (D, D); built for grids up to 64 x 64."""
        require(self.grid.n_cells <= 4096, "the GRR channel matrix is built only for grids up to 64 x 64")
        return grr_channel(self.grid.n_cells, self.epsilon)


@register
class OLH(_GridOracle):
    """Optimised local hashing over the d x d cells (grid paper Sec. 2.3, eq. 2-3; USENIX'17 Sec. 4.4).

    Each phone draws its own hash function from a universal family (see
    :func:`olh_hash`), hashes its cell into g = round(e^eps + 1) buckets and
    perturbs the bucket by eq. 2; the report is <hash seed, bucket>. The server
    evaluates every user's hash on every cell (support counts) and applies eq. 3.
    The full channel over (seed, bucket) is not a matrix we can list; the
    per-hash-function channel (:func:`olh_hash_channel`) is what the tests check.
    """

    name = "olh"
    label = "OLH (optimised local hashing)"
    reference = ("grid-decompositions-ug-privag-aag.md Sec. 2.3 eq. (2)-(3); Wang et al. USENIX Security'17 "
                 "Sec. 4.4")
    summary = ("Each phone hashes its cell into a few buckets with its own random hash function and reports a "
               "noisy bucket; the server counts, for every cell, the reports consistent with it.")
    params = (_PROJECTION, _path_param("the support counts (independent binomials per cell)"))

    def setup(self) -> None:
        self.g = olh_buckets(self.epsilon)

    def _per_user(self, users: Binned, rng: np.random.Generator) -> OLHReports:
        return olh_perturb(users.cells, self.grid.n_cells, self.epsilon, rng, self.g)

    def _aggregate(self, true_counts: np.ndarray, rng: np.random.Generator) -> SupportCounts:
        return olh_aggregate_support(true_counts, self.epsilon, rng, self.g)

    def estimate_counts(self, reports: OLHReports | SupportCounts) -> np.ndarray:
        return olh_estimate_counts(reports, self.grid.n_cells, self.epsilon, self.g)

    def report_key(self, reports: OLHReports | SupportCounts) -> np.ndarray | SupportCounts:
        """For the black-box audit (ldpviz.evidence.audit): which cells each report supports, ``(n, D)`` bool.

        A raw report <seed, bucket> carries a fresh random seed, so no two reports are
        alike and frequency-based events see nothing. Whether the report supports cell v
        (H_seed(v) == bucket) is a function of the report (post-processing, so any event
        on it is sound) and is the event the estimator itself uses: P[supports x | x] = p,
        P[supports x | x'] = 1/g, a ratio of about (e^eps + 1) / 2 <= e^eps.
        """
        return olh_supports(reports, self.grid.n_cells) if isinstance(reports, OLHReports) else reports

    def _info(self) -> dict:
        return {"buckets g": self.g}

    def attack_reports(self, people: Binned, rng: np.random.Generator, crowd: Binned) -> OLHReports:
        """One per-user report <seed, bucket> for each of ``people`` (``crowd`` shapes nothing public)."""
        return self._per_user(people, rng)

    def report_likelihood(self, reports: OLHReports) -> np.ndarray:
        """``(n, D)`` P(report | cell) up to the seed's probability: :func:`olh_report_likelihood`."""
        return olh_report_likelihood(reports, self.epsilon, self.grid.n_cells)


@register
class OUE(_GridOracle):
    """Optimised unary encoding over the d x d cells (USENIX'17 Sec. 4.3).

    One bit per cell; the own bit is reported as 1 with p = 1/2, every other bit
    as 1 with q = 1/(e^eps + 1), independently. Reports are D bits per user.
    """

    name = "oue"
    label = "OUE (optimised unary encoding)"
    reference = "Wang et al. USENIX Security'17 Sec. 4.3 (cited by grid-decompositions-ug-privag-aag.md Sec. 3.1)"
    summary = ("Each phone sends one noisy yes/no bit for every cell; the server counts the yeses per cell and "
               "corrects for the known noise.")
    params = (_PROJECTION, _path_param("the bit counts (independent binomials per cell)"))
    has_channel = False

    def setup(self) -> None:
        self.p, self.q = oue_probabilities(self.epsilon)

    def _aggregate(self, true_counts: np.ndarray, rng: np.random.Generator) -> SupportCounts:
        return oue_aggregate_support(true_counts, self.epsilon, rng)

    def _per_user(self, users: Binned, rng: np.random.Generator) -> OUEReports:
        require(len(users.cells) * self.grid.n_cells <= 1 << 33,
                f"OUE per-user reports for {len(users.cells):,} users x {self.grid.n_cells:,} cells do not fit "
                "in memory; use path='aggregate' or a coarser grid")
        return oue_perturb(users.cells, self.grid.n_cells, self.epsilon, rng)

    def estimate_counts(self, reports: OUEReports | SupportCounts) -> np.ndarray:
        return oue_estimate_counts(reports, self.grid.n_cells, self.epsilon)

    def _info(self) -> dict:
        return {"p": self.p, "q": self.q}

    def attack_reports(self, people: Binned, rng: np.random.Generator, crowd: Binned) -> OUEReports:
        """One per-user report (D bits) for each of ``people`` (``crowd`` shapes nothing public)."""
        return oue_perturb(people.cells, self.grid.n_cells, self.epsilon, rng)

    def report_likelihood(self, reports: OUEReports) -> np.ndarray:
        """``(n, D)`` P(report | cell) up to a factor of the report alone: :func:`oue_report_likelihood`."""
        return oue_report_likelihood(reports, self.epsilon)


@register
class HR(_GridOracle):
    """Hadamard response over the d x d cells (Acharya et al. AISTATS'19; L-SRR Sec. 3.5, ref. [38]).

    ``variant`` picks the code (:mod:`ldpviz.mechanisms.fo.hadamard`): the paper's general-privacy
    HR (B ~ e^eps blocks, their Sec. 5), the high-privacy HR (one block, their Sec. 4; the
    module-level ``hr_*`` functions here), or ``auto``, the one with the smaller variance at
    this (D, eps). Reports are one of K outputs (log2 K bits).
    """

    name = "hr"
    label = "HR (Hadamard response)"
    reference = "l-srr-staircase-randomized-response.md Sec. 3.5 and ref. [38] (Acharya, Sun, Zhang AISTATS'19)"
    summary = ("Each phone reports one code word, drawn with a boosted probability from a set tied to its cell "
               "by a Hadamard matrix; the server inverts the code with one fast transform per block.")
    params = (_PROJECTION, _path_param("the report histogram (per informed value, binomial splits and uniform "
                                       "multinomials within the parts of its code)"), HR_VARIANT_PARAM)
    has_channel = True

    def setup(self) -> None:
        self.code = hadamard_code(self.grid.n_cells, self.epsilon, self.variant)
        self.K = self.code.outputs

    def _per_user(self, users: Binned, rng: np.random.Generator) -> np.ndarray:
        return hadamard_perturb(users.cells, self.code, rng)

    def statistic(self, reports: Any) -> ReportHistogram:
        """The report histogram over this instance's code (general or high-privacy HR)."""
        if isinstance(reports, ReportHistogram):
            return reports
        return ReportHistogram(hadamard_histogram(reports, self.code), len(reports), PER_USER)

    def _aggregate(self, true_counts: np.ndarray, rng: np.random.Generator) -> ReportHistogram:
        return ReportHistogram(hadamard_aggregate_histogram(true_counts, self.code, rng), int(true_counts.sum()))

    def estimate_counts(self, reports: np.ndarray | ReportHistogram) -> np.ndarray:
        hist = reports.counts if isinstance(reports, ReportHistogram) else hadamard_histogram(reports, self.code)
        return hadamard_estimate_counts(hist, self.code)

    def _info(self) -> dict:
        return {"outputs K": self.K, "blocks B": self.code.blocks, "block size b": self.code.block_size}

    def channel(self) -> np.ndarray:
        """P[y, x], shape (K, D); built for grids up to 64 x 64."""
        require(self.grid.n_cells <= 4096, "the HR channel matrix is built only for grids up to 64 x 64")
        return hadamard_channel(self.code)


# ---------------------------------------------------------------------------
# Report likelihoods: what one report says about every value (for the Bayesian attacker)
# ---------------------------------------------------------------------------

def oue_report_likelihood(reports: OUEReports, epsilon: float) -> np.ndarray:
    """``(n, D)``: P(report | value x) of each OUE report, up to a factor that depends on the report only.

    P(y | x) = prod_v q^(y_v) (1-q)^(1-y_v) * [p/q]^(y_x) [(1-p)/(1-q)]^(1-y_x) (USENIX'17 Sec. 4.3: bits
    flip independently, the own bit with p, every other with q). The product over v does not
    depend on x, so the row is 1 where bit x is 0 and p(1-q)/(q(1-p)) = e^eps where it is 1
    (scaled by (1-p)/(1-q), which cancels in any posterior).
    """
    p, q = oue_probabilities(epsilon)
    bits = np.unpackbits(reports.packed, axis=1, count=reports.domain_size).astype(bool)
    return np.where(bits, p / q, (1 - p) / (1 - q))


def olh_report_likelihood(reports: OLHReports, epsilon: float, domain_size: int) -> np.ndarray:
    """``(n, D)``: P(<seed, bucket> | value x) of each OLH report, up to the seed's probability (the same for
    every x): p where H_seed(x) equals the reported bucket, else q (grid paper eq. 2)."""
    p, q = olh_probabilities(epsilon, reports.g)
    return np.where(olh_supports(reports, domain_size), p, q)


def grr_report_likelihood(reports: np.ndarray, epsilon: float, domain_size: int) -> np.ndarray:
    """``(n, D)``: P(y | x) of each GRR report y: p on x = y, q elsewhere (L-SRR eq. 1)."""
    r = np.asarray(reports, dtype=np.int64).reshape(-1)
    p, q = grr_probabilities(domain_size, epsilon)
    out = np.full((len(r), domain_size), q)
    out[np.arange(len(r)), r] = p
    return out


def oracle_report_likelihood(oracle: str, reports: Any, domain_size: int, epsilon: float) -> np.ndarray:
    """``(n, D)``: the likelihood of every value given each per-user report of :func:`oracle_perturb`
    (rows up to a factor depending on the report only). Aggregate statistics carry no per-user report."""
    require(oracle in ORACLES, f"unknown frequency oracle {oracle!r}; choose one of {', '.join(ORACLES)}")
    require(not isinstance(reports, (ReportHistogram, SupportCounts)),
            "the report likelihood needs per-user reports, not the aggregate statistic")
    if oracle == "grr":
        return grr_report_likelihood(reports, epsilon, domain_size)
    if oracle == "olh":
        return olh_report_likelihood(reports, epsilon, domain_size)
    if oracle == "oue":
        return oue_report_likelihood(reports, epsilon)
    return hr_channel(domain_size, epsilon)[np.asarray(reports, dtype=np.int64)]
