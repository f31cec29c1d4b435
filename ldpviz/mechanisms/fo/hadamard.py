"""Hadamard response for every privacy level (Acharya, Sun, Zhang, AISTATS'19).

Paper: J. Acharya, Z. Sun, H. Zhang, "Hadamard Response: Estimating Distributions
Privately, Efficiently, and with Little Communication", AISTATS 2019 (ref. [38] of
l-srr-staircase-randomized-response.md). The high-privacy HR (their Sec. 4; the
tool's :func:`ldpviz.mechanisms.fo.oracles.hr_perturb`) gives every value a set C_x of half
of K outputs and reports into it with probability e^eps / (1 + e^eps): its variance
per user stays near 1 whatever eps, so beyond eps ~ 1 it falls far behind GRR and OLH.
The general-privacy HR (their Sec. 5) splits the outputs into B blocks:

* B = 2^floor(log2 min(e^eps, 2D)) blocks ("blocks of size ~e^eps"), each of
  b = 2^ceil(log2(D / B + 1)) outputs, K = B b outputs in all;
* value x lives in block j = x // (b - 1) at Hadamard row i = x mod (b - 1) + 1
  (row 0, all +1, is skipped), and owns C_x = {(j, c) : H_b[i, c] = +1}, s = b/2 outputs;
* the report is y with P(y | x) = e^eps / Z on C_x and 1 / Z elsewhere,
  Z = s e^eps + K - s, so every output's probabilities differ by exactly e^eps.

Server half (their Sec. 5 estimator): per block, one fast Walsh-Hadamard transform
of the report histogram; T_x = (#reports in C_x) - (#reports in x's block outside
C_x) has E[T_x] = n_x s (e^eps - 1) / Z, because a report of any other value sums
row i of H_b to zero over its block (rows are orthogonal; a value of another block
spreads uniformly over x's block). So n_hat_x = T_x Z / (s (e^eps - 1)) is unbiased,
with the exact variance of :func:`hadamard_variance`. With B = 1 (e^eps < 2, or
``variant="high-privacy"``) this is exactly the high-privacy HR.

Choices where the paper leaves room: values are laid out in order (no random
permutation: the tool's domains are public and the estimator is unbiased for any
layout), and all B blocks are kept even when fewer hold values, as the paper's
construction does (so the channel is the paper's).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ldpviz.errors import require
from ldpviz.mechanisms.base import Param

VARIANTS = ("auto", "general", "high-privacy")
HR_VARIANT_PARAM = Param(
    "variant", str, "auto",
    "'general': Acharya et al.'s HR for any epsilon (blocks of ~e^eps outputs); 'high-privacy': one block, "
    "fine for epsilon <= ~1; 'auto': whichever has the smaller variance at this domain size and epsilon",
    choices=VARIANTS)


@dataclass(frozen=True)
class HadamardCode:
    """The public parameters of one Hadamard response: domain, epsilon, B blocks of b outputs."""

    domain_size: int
    epsilon: float
    blocks: int        #: B
    block_size: int    #: b (a power of two; b - 1 values per block)

    @property
    def outputs(self) -> int:
        """K = B b reports."""
        return self.blocks * self.block_size

    @property
    def set_size(self) -> int:
        """s = b / 2 outputs in every C_x."""
        return self.block_size // 2

    @property
    def normaliser(self) -> float:
        """Z = s e^eps + K - s: P(y | x) is e^eps / Z on C_x and 1 / Z elsewhere."""
        return self.set_size * math.exp(self.epsilon) + self.outputs - self.set_size

    @property
    def in_set_probability(self) -> float:
        """P(report in C_x | x) = s e^eps / Z."""
        return self.set_size * math.exp(self.epsilon) / self.normaliser

    @property
    def scale(self) -> float:
        """Z / (s (e^eps - 1)): multiplies T_x into an unbiased count."""
        return self.normaliser / (self.set_size * math.expm1(self.epsilon))


def hadamard_code(domain_size: int, epsilon: float, variant: str = "auto") -> HadamardCode:
    """B and b of Acharya et al. Sec. 5 (``general``), B = 1 (``high-privacy``, their Sec. 4), or
    (``auto``) whichever of the two has the smaller mean variance on a uniform input.

    ``auto`` looks only at (D, eps), which are public: the general code takes B = 2 blocks as
    soon as e^eps >= 2, and at eps near 1 that costs more than it gains (D = 100, eps = 1:
    5.6 vs 4.7 per user), while from eps ~ 1.5 on the general code wins by a growing factor.
    """
    require(domain_size >= 1, f"the domain must hold at least one value, got {domain_size}")
    require(variant in VARIANTS, f"variant must be one of {', '.join(VARIANTS)}; got {variant!r}")
    require(epsilon > 0, f"epsilon must be > 0, got {epsilon}")
    if variant == "auto":
        codes = [hadamard_code(domain_size, epsilon, v) for v in ("high-privacy", "general")]
        uniform = np.ones(domain_size)
        return min(codes, key=lambda c: float(hadamard_variance(uniform, c).mean()))
    if variant == "high-privacy":
        blocks = 1
    else:
        # log in floating point can land a hair below an exact power of two: nudge by 1e-12.
        blocks = 1 << max(0, int(math.floor(min(epsilon / math.log(2), math.log2(2 * domain_size)) + 1e-12)))
    block_size = 1 << int(math.ceil(math.log2(domain_size / blocks + 1) - 1e-12))
    block_size = max(block_size, 2)
    while blocks * (block_size - 1) < domain_size:   # guard against rounding in the two logs
        block_size *= 2
    return HadamardCode(domain_size, float(epsilon), blocks, block_size)


def _as_values(values: np.ndarray, domain_size: int) -> np.ndarray:
    v = np.asarray(values, dtype=np.int64).reshape(-1)
    if v.size:
        require(v.min() >= 0 and v.max() < domain_size,
                f"values must lie in [0, {domain_size}), got range [{v.min()}, {v.max()}]")
    return v


def _block_and_row(values: np.ndarray, code: HadamardCode) -> tuple[np.ndarray, np.ndarray]:
    block, pos = np.divmod(values, code.block_size - 1)
    return block, pos + 1


def _parity(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """popcount(a & b) mod 2: 0 where H[a, b] = +1 (Sylvester order)."""
    return np.bitwise_count(np.asarray(a, dtype=np.uint64) & np.asarray(b, dtype=np.uint64)) & 1


def hadamard_perturb(values: np.ndarray, code: HadamardCode, rng: np.random.Generator) -> np.ndarray:
    """Client half: one report in [0, K) per value, P(y | x) = e^eps / Z on C_x, 1 / Z elsewhere.

    Sampling without a per-user loop: in C_x with probability s e^eps / Z; else in x's own
    block outside C_x with probability s / Z, else uniformly in one of the other B - 1
    blocks. Inside a block, c uniform on [0, b) lands on the wrong side of row i with
    probability 1/2 and is then moved across by flipping i's lowest set bit (a bijection
    between C_x and its complement in the block).
    """
    v = _as_values(values, code.domain_size)
    m = len(v)
    block, row = _block_and_row(v, code)
    b, B = code.block_size, code.blocks
    c = rng.integers(0, b, size=m).astype(np.int64)
    u = rng.random(m) * code.normaliser
    s, e = code.set_size, math.exp(code.epsilon)
    in_set = u < s * e
    own_block = u < s * e + s
    lowbit = row & -row
    want_parity = np.where(in_set, 0, 1)
    c = np.where(_parity(row, c) == want_parity, c, c ^ lowbit)
    if B > 1:
        other = rng.integers(0, B - 1, size=m)
        other += other >= block
        c_other = rng.integers(0, b, size=m)
        out = np.where(own_block, block * b + c, other * b + c_other)
    else:
        out = block * b + c
    return out.astype(np.int64)


def _batched_fwht(a: np.ndarray) -> np.ndarray:
    """Walsh-Hadamard transform of every row of ``a`` (rows of power-of-two length, Sylvester order)."""
    a = np.asarray(a, dtype=float)
    rows, n = a.shape
    h = 1
    while h < n:
        a = a.reshape(rows, -1, 2, h)
        a = np.stack([a[:, :, 0] + a[:, :, 1], a[:, :, 0] - a[:, :, 1]], axis=2)
        h *= 2
    return a.reshape(rows, n)


def hadamard_histogram(reports: np.ndarray, code: HadamardCode) -> np.ndarray:
    """How many reports named each of the K outputs."""
    r = np.asarray(reports, dtype=np.int64).reshape(-1)
    if r.size:
        require(r.min() >= 0 and r.max() < code.outputs,
                f"Hadamard reports must lie in [0, {code.outputs}), got range [{r.min()}, {r.max()}]")
    return np.bincount(r, minlength=code.outputs)


def hadamard_estimate_counts(histogram: np.ndarray, code: HadamardCode) -> np.ndarray:
    """Server half: unbiased count of every value from the report histogram (length K).

    One Walsh-Hadamard transform per block gives T_x for every value of the block at once
    (Acharya et al. Sec. 5); n_hat_x = T_x Z / (s (e^eps - 1)).
    """
    hist = np.asarray(histogram, dtype=float).reshape(code.blocks, code.block_size)
    t = _batched_fwht(hist)[:, 1:]                  # rows 1..b-1 of every block
    return t.reshape(-1)[:code.domain_size] * code.scale


def hadamard_channel(code: HadamardCode) -> np.ndarray:
    """P[y, x], shape (K, D)."""
    v = np.arange(code.domain_size)
    block, row = _block_and_row(v, code)
    y = np.arange(code.outputs)
    y_block, y_col = np.divmod(y, code.block_size)
    in_set = (y_block[:, None] == block[None, :]) & (_parity(row[None, :], y_col[:, None]) == 0)
    return np.where(in_set, math.exp(code.epsilon), 1.0) / code.normaliser


def hadamard_variance(true_counts: np.ndarray, code: HadamardCode) -> np.ndarray:
    """Exact variance of :func:`hadamard_estimate_counts` for every value, given all true counts.

    T_x sums one term per user in {-1, 0, +1}: nonzero when the report falls in x's block,
    with probability b (e^eps + 1) / (2Z) for users of that block and b / Z for the others;
    only users of x have a nonzero mean, s (e^eps - 1) / Z. So
    Var(n_hat_x) = scale^2 [n_j b (e^eps+1) / (2Z) + (n - n_j) b / Z - n_x (s (e^eps-1) / Z)^2].
    """
    counts = np.asarray(true_counts, dtype=float).reshape(-1)
    require(counts.size == code.domain_size, f"need one true count per value ({code.domain_size}), got {counts.size}")
    n = counts.sum()
    per_block = np.zeros(code.blocks * (code.block_size - 1))
    per_block[:code.domain_size] = counts
    n_block = per_block.reshape(code.blocks, -1).sum(axis=1)
    block, _ = _block_and_row(np.arange(code.domain_size), code)
    nj = n_block[block]
    Z, b, e = code.normaliser, code.block_size, math.exp(code.epsilon)
    mean = code.set_size * (e - 1) / Z
    return code.scale ** 2 * (nj * b * (e + 1) / (2 * Z) + (n - nj) * b / Z - counts * mean ** 2)


def hadamard_aggregate_histogram(true_counts: np.ndarray, code: HadamardCode,
                                 rng: np.random.Generator) -> np.ndarray:
    """The report histogram drawn directly: sum over x of Multinomial(n_x, P[:, x]). Exact in distribution.

    Mixture form of the channel (e^eps / Z on C_x, 1 / Z elsewhere): with probability
    w = s (e^eps - 1) / Z a user reports uniformly on its own C_x, otherwise uniformly on all K
    outputs (then C_x has w / s + (1 - w) / K = e^eps / Z and every other output (1 - w) / K = 1 / Z).
    So Bin(n_x, w) users of x are informed; the others make one Multinomial over K. An informed
    draw is c uniform on the block moved into C_x by flipping the lowest set bit of x's row (as
    :func:`hadamard_perturb`); a value with at least s informed users takes one Multinomial over
    its s members instead. Work O(K + D + sum_x min(w n_x, s)), no loop over values.
    """
    counts = np.asarray(true_counts, dtype=np.int64).reshape(-1)
    require(counts.size == code.domain_size, f"need one true count per value ({code.domain_size}), got {counts.size}")
    b, s, K = code.block_size, code.set_size, code.outputs
    w = s * math.expm1(code.epsilon) / code.normaliser
    informed = rng.binomial(counts, w)
    out = rng.multinomial(int(counts.sum() - informed.sum()), np.full(K, 1.0 / K)).astype(np.int64)
    few = np.flatnonzero((informed > 0) & (informed < s))
    cum = np.cumsum(informed[few])
    cuts = np.concatenate([[0], np.searchsorted(cum, np.arange(1 << 22, int(cum[-1]) if len(cum) else 0, 1 << 22)),
                           [len(few)]])
    for lo, hi in zip(cuts[:-1], cuts[1:]):           # about 4M informed users at a time: bounded memory
        values = np.repeat(few[lo:hi], informed[few[lo:hi]])
        block, row = _block_and_row(values, code)
        c = rng.integers(0, b, size=len(values)).astype(np.int64)
        c = np.where(_parity(row, c) == 0, c, c ^ (row & -row))
        out += np.bincount(block * b + c, minlength=K)
    cols = np.arange(b)
    for x in np.flatnonzero(informed >= s):           # at most n w / s values
        block, row = divmod(int(x), b - 1)
        members = block * b + cols[_parity(np.uint64(row + 1), cols) == 0]
        out[members] += rng.multinomial(informed[x], np.full(s, 1.0 / s))
    return out
