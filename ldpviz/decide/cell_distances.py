"""Distances between grid cells, summed against many distributions at once: what the attacker's
expected error and within-r probability are made of (shared by the exact and Monte Carlo attackers).
"""

from __future__ import annotations

import numpy as np

#: Rows per FFT batch beyond d = 32.
ROW_BATCH = 256


def _distance_kernel(side: int) -> np.ndarray:
    """Distances (cells) for offsets -(d-1)..(d-1) on both axes, as a (2d-1, 2d-1) array."""
    r = np.arange(-(side - 1), side)
    return np.hypot(r[:, None], r[None, :])


def rows_times_distance(J: np.ndarray, side: int, within: float | None = None) -> np.ndarray:
    """E = J @ K for K[x, x'] = |c_x - c_x'| (cells), or the indicator |c_x - c_x'| <= ``within``;
    by FFT convolution per row beyond d = 32 (K depends on the offset only); J is (m, d*d)."""
    m = J.shape[0]

    def kernel(dist: np.ndarray) -> np.ndarray:
        return dist if within is None else (dist <= within + 1e-9).astype(float)

    if side <= 32:                                       # dense BLAS product is faster up to ~1k cells
        r, c = np.divmod(np.arange(side * side), side)
        return J @ kernel(np.hypot(r[:, None] - r[None, :], c[:, None] - c[None, :]))
    size = 2 * side - 1
    fft_n = 1 << (size - 1).bit_length()
    K = np.fft.rfft2(kernel(_distance_kernel(side)), s=(fft_n, fft_n))
    out = np.empty_like(J)
    for s in range(0, m, ROW_BATCH):
        block = J[s:s + ROW_BATCH].reshape(-1, side, side)
        conv = np.fft.irfft2(np.fft.rfft2(block, s=(fft_n, fft_n)) * K, s=(fft_n, fft_n))
        # full convolution index of output cell x' is x' + (d - 1)
        out[s:s + ROW_BATCH] = conv[:, side - 1:2 * side - 1, side - 1:2 * side - 1].reshape(len(block), -1)
    return out
