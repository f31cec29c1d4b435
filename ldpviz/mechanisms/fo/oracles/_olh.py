"""OLH, optimised local hashing: hashing, client, support counts (numba kernel in ``fo/olh_kernel``),
estimator and the aggregate support (grid paper eq. 2-3; USENIX'17 Sec. 4.4)."""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ldpviz.errors import require
from ldpviz.mechanisms.fo.oracles._common import (SupportCounts, OLHReports, pure_estimate_counts, pure_variance,
                                                  _as_values)


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
