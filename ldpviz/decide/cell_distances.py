"""Distances between grid cells, summed against many distributions at once: what the attacker's
expected error and within-r probability are made of (shared by the exact and Monte Carlo attackers,
:mod:`ldpviz.decide.attacker` and :mod:`ldpviz.decide.attacker_monte_carlo`).

A person sits anywhere inside their grid cell (uniformly: the modelling choice both
attackers state); the attacker's guess is a cell centre. Both figures are measured from the
person's *exact position* to the guessed point (issue 27: the mean error used to be
centre-to-centre, 0 m for a right cell, while "within r" used positions, so on large cells
the two readings contradicted each other). Two kernels of the offset (i, j) (in cells)
between the person's cell and the guessed centre:

* :func:`distance_kernel`: the expected distance from a position uniform in the unit
  square centred at (i, j) to the origin (cells; closed form, below) -- 0.383 of a cell
  side for the right cell, never 0, and |(i, j)| plus a little further away;
* :func:`within_kernel`: the probability that the person is within ``r`` of the
  guessed centre, i.e. the area of the unit square centred at (i, j) that lies inside
  the disc of radius ``r`` around the origin -- computed exactly (closed form, below).
  A right-cell guess is within ``r`` only with probability ~ pi r^2 / g^2 when r is much
  smaller than the cell side g, never "always".

Products ``J @ K`` with K[x, x'] = kernel(c_x - c_x') are 2-D convolutions, done by FFT
beyond d = 32.
"""

from __future__ import annotations

import numpy as np

#: Rows per FFT batch beyond d = 32.
ROW_BATCH = 256
#: Up to this grid side a dense product is faster than the FFT.
_DENSE_MAX_SIDE = 32
#: Beyond d = 32, a dense product over only the columns J uses beats the FFT's per-row cost up to about this many
#: columns (people in a few hundred cells, as a small file has; the two agree to rounding).
_SPARSE_MAX_COLUMNS = 1024


def offsets(side: int) -> np.ndarray:
    """Offsets -(d-1)..(d-1) (cells)."""
    return np.arange(-(side - 1), side, dtype=float)


def centre_distance_kernel(side: int) -> np.ndarray:
    """Centre-to-centre distances (cells) for offsets -(d-1)..(d-1) on both axes, a (2d-1, 2d-1) array."""
    r = offsets(side)
    return np.hypot(r[:, None], r[None, :])


def _quadrant_distance_integral(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The integral of sqrt(x^2 + y^2) over [0, a] x [0, b], a, b >= 0 (closed form):
    (a b h) / 3 + (a^3 / 6) ln((b + h) / a) + (b^3 / 6) ln((a + h) / b), with h = sqrt(a^2 + b^2)
    (each log term tends to 0 with its cube)."""
    h = np.hypot(a, b)
    with np.errstate(divide="ignore", invalid="ignore"):
        ta = np.where(a > 0, a ** 3 / 6 * np.log((b + h) / np.where(a > 0, a, 1.0)), 0.0)
        tb = np.where(b > 0, b ** 3 / 6 * np.log((a + h) / np.where(b > 0, b, 1.0)), 0.0)
    return a * b * h / 3 + np.nan_to_num(ta) + np.nan_to_num(tb)


def mean_distance_from_square(cx: np.ndarray, cy: np.ndarray) -> np.ndarray:
    """E|p| for p uniform in the unit square centred at (cx, cy): the mean distance (cells) from a position
    spread uniformly in that cell to the origin (inclusion-exclusion over the square's corners)."""
    def signed(x, y):
        return np.sign(x) * np.sign(y) * _quadrant_distance_integral(np.abs(x), np.abs(y))
    x0, x1, y0, y1 = cx - 0.5, cx + 0.5, cy - 0.5, cy + 0.5
    return signed(x1, y1) - signed(x0, y1) - signed(x1, y0) + signed(x0, y0)


def distance_kernel(side: int) -> np.ndarray:
    """Expected distances (cells) from a position uniform in the cell at offset (i, j) to the origin (a guessed
    centre), for offsets -(d-1)..(d-1) on both axes, a (2d-1, 2d-1) array."""
    r = offsets(side)
    return mean_distance_from_square(r[:, None], r[None, :])


def _quadrant_area(x: np.ndarray, y: np.ndarray, rho: float) -> np.ndarray:
    """Area of the disc of radius ``rho`` (centre 0) inside [0, x] x [0, y], for x, y >= 0 (closed form).

    Where the corner (x, y) is outside the disc, the area is y u* + the integral of
    sqrt(rho^2 - u^2) from u* = sqrt(rho^2 - y^2) to x, whose primitive is
    (u sqrt(rho^2 - u^2) + rho^2 asin(u / rho)) / 2.
    """
    x, y = np.minimum(x, rho), np.minimum(y, rho)
    inside = x * x + y * y <= rho * rho
    u_star = np.sqrt(np.maximum(rho * rho - y * y, 0.0))

    def primitive(u: np.ndarray) -> np.ndarray:
        return 0.5 * (u * np.sqrt(np.maximum(rho * rho - u * u, 0.0)) + rho * rho * np.arcsin(np.clip(u / rho, -1, 1)))

    outside = y * u_star + primitive(x) - primitive(u_star)
    return np.where(inside, x * y, outside)


def _signed_area(x: np.ndarray, y: np.ndarray, rho: float) -> np.ndarray:
    """Disc area inside the rectangle spanned by the origin and (x, y), signed by the quadrant (odd in x and y)."""
    return np.sign(x) * np.sign(y) * _quadrant_area(np.abs(x), np.abs(y), rho)


def square_in_disc(cx: np.ndarray, cy: np.ndarray, rho: float) -> np.ndarray:
    """Area of the unit square centred at (cx, cy) inside the disc of radius ``rho`` around the origin."""
    if rho <= 0:
        return np.zeros(np.broadcast(cx, cy).shape)
    x0, x1, y0, y1 = cx - 0.5, cx + 0.5, cy - 0.5, cy + 0.5
    area = (_signed_area(x1, y1, rho) - _signed_area(x0, y1, rho) - _signed_area(x1, y0, rho)
            + _signed_area(x0, y0, rho))
    return np.clip(area, 0.0, 1.0)


def within_kernel(side: int, r_cells: float) -> np.ndarray:
    """P(a person uniform in the cell at offset (i, j) is within ``r_cells`` of the origin), a (2d-1, 2d-1) array."""
    r = offsets(side)
    return square_in_disc(r[:, None], r[None, :], float(r_cells))


def rows_times_kernel(J: np.ndarray, side: int, kernel: np.ndarray) -> np.ndarray:
    """E = J @ K for K[x, x'] = kernel[offset of x from x'] (kernel as from :func:`distance_kernel`); J is (m, d*d)."""
    m = J.shape[0]
    r, c = np.divmod(np.arange(side * side), side)
    if side <= _DENSE_MAX_SIDE:                          # dense BLAS product is faster up to ~1k cells
        return J @ kernel[r[:, None] - r[None, :] + side - 1, c[:, None] - c[None, :] + side - 1]
    used = np.flatnonzero(J.any(axis=0))             # a reduction, no (m, n) temporary
    if used.size <= _SPARSE_MAX_COLUMNS:                 # people in few cells (a small file): the used rows of K
        ru, cu = r[used], c[used]
        return J[:, used] @ kernel[ru[:, None] - r[None, :] + side - 1, cu[:, None] - c[None, :] + side - 1]
    size = 2 * side - 1
    fft_n = 1 << (size - 1).bit_length()
    K = np.fft.rfft2(kernel, s=(fft_n, fft_n))
    out = np.empty_like(J)
    for s in range(0, m, ROW_BATCH):
        block = J[s:s + ROW_BATCH].reshape(-1, side, side)
        conv = np.fft.irfft2(np.fft.rfft2(block, s=(fft_n, fft_n)) * K, s=(fft_n, fft_n))
        # full convolution index of output cell x' is x' + (d - 1)
        out[s:s + ROW_BATCH] = conv[:, side - 1:2 * side - 1, side - 1:2 * side - 1].reshape(len(block), -1)
    return out


def rows_times_distance(J: np.ndarray, side: int, within: float | None = None) -> np.ndarray:
    """E = J @ K for K[x, x'] = the expected distance (cells) from a person uniform in cell x to the centre of x'
    (:func:`distance_kernel`), or, with ``within`` (cells), the probability that such a person is within that
    distance of the centre of x' (:func:`within_kernel`): both from the person's exact position."""
    kernel = distance_kernel(side) if within is None else within_kernel(side, within)
    return rows_times_kernel(J, side, kernel)
