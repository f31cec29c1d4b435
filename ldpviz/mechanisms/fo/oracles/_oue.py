"""OUE, optimised unary encoding: client, support counts, estimator and the aggregate support (USENIX'17 Sec. 4.3)."""

from __future__ import annotations

import math

import numpy as np

from ldpviz.mechanisms.fo.oracles._common import SupportCounts, OUEReports, pure_estimate_counts, _as_values


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
