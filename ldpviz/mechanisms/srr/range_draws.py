"""Exact histogram of many uniform draws over contiguous ranges, in work independent of the number of draws.

:func:`uniform_range_histogram` returns, for ranges ``[lo_i, hi_i)`` of ``[0, size)`` holding
``counts_i`` draws each (every draw uniform on its range, all independent), the histogram of
all draws -- the same distribution as drawing them one by one -- in O(R log size + size)
binomial draws for R ranges, whatever the counts:

1. every range is the disjoint union of at most 2 log2(size) aligned dyadic blocks (the
   segment-tree decomposition); a uniform draw on the range lands in a block with probability
   block size / range size, so the range's counts per block are a multinomial, drawn as
   sequential binomials, vectorised over ranges;
2. draws uniform on one block, summed over ranges, are uniform on that block: only each
   block's total matters;
3. a block's total splits over its two halves as Bin(total, 1/2) (uniform on equal halves),
   pushed down level by level to single positions.

Used by SRR's aggregate path (:mod:`ldpviz.mechanisms.srr.staircase`), whose channel is a mixture of
uniform distributions over nested contiguous intervals of the sorted domain.
"""

from __future__ import annotations

import numpy as np

from ldpviz.errors import require


def uniform_range_histogram(lo: np.ndarray, hi: np.ndarray, counts: np.ndarray, size: int,
                            rng: np.random.Generator) -> np.ndarray:
    """Histogram over ``[0, size)`` of ``counts[i]`` independent uniform draws on ``[lo[i], hi[i])`` for every i."""
    lo = np.asarray(lo, dtype=np.int64).reshape(-1)
    hi = np.asarray(hi, dtype=np.int64).reshape(-1)
    left = np.asarray(counts, dtype=np.int64).reshape(-1).copy()
    require(len(lo) == len(hi) == len(left), "need one lower bound, upper bound and count per range")
    keep = left > 0
    lo, hi, left = lo[keep], hi[keep], left[keep]
    require(np.all((0 <= lo) & (lo < hi) & (hi <= size)), "draws need non-empty ranges inside [0, size)")
    top = max(0, int(size - 1).bit_length())   # blocks of 2^top >= size positions at the top level
    levels = top + 1
    blocks = [np.zeros(1 << (top - level), dtype=np.int64) for level in range(levels)]
    room = (hi - lo).astype(np.int64)          # positions of the range not yet assigned to a block
    a, b = lo.copy(), hi.copy()                # current bounds in units of 2^level
    for level in range(levels):
        width = 1 << level
        for side in (0, 1):                    # the odd block at the left end, then at the right end
            take = (a & 1 == 1) if side == 0 else (b & 1 == 1)
            take &= a < b
            if not take.any():
                continue
            idx = np.flatnonzero(take)
            p = np.minimum(width / room[idx], 1.0)
            got = rng.binomial(left[idx], p)
            left[idx] -= got
            room[idx] -= width
            where = a[idx] if side == 0 else b[idx] - 1
            blocks[level] += np.bincount(where, weights=got, minlength=len(blocks[level])).astype(np.int64)
            if side == 0:
                a[idx] += 1
            else:
                b[idx] -= 1
        a >>= 1
        b >>= 1
    for level in range(levels - 1, 0, -1):     # push every block's total down to its halves
        total = blocks[level]
        first = rng.binomial(total, 0.5)
        blocks[level - 1][0::2] += first
        blocks[level - 1][1::2] += total - first
    return blocks[0][:size]
