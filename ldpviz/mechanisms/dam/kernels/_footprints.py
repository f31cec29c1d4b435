"""The DAM radius (eq. 12) and footprints: DAM's, DAM-NS's and HUEM's weights on the grid (Sec. VI-A, Appendix A)."""

from __future__ import annotations

import math

import numpy as np

from ldpviz.errors import require


# ---------------------------------------------------------------------------
# radius (eq. 12) and footprints (Sec. VI-A, Appendix A)
# ---------------------------------------------------------------------------
def optimal_radius(epsilon: float, side: float = 1.0) -> float:
    """Eq. (12): b = (2 m2 + sqrt(4 m2^2 + pi e^eps m1 m2)) / (pi e^eps m1) * L.

    m1 = e^eps - 1 - eps, m2 = 1 - e^eps + eps e^eps (computed with expm1 so that small
    epsilon does not cancel). eps -> 0 gives (2 + sqrt(4 + pi)) / pi * L.
    """
    eps = float(epsilon)
    e = math.exp(eps)
    m1 = math.expm1(eps) - eps
    m2 = eps * e - math.expm1(eps)
    if m1 <= 0 or m2 <= 0:  # eps below float resolution: the limit
        return (2 + math.sqrt(4 + math.pi)) / math.pi * side
    return (2 * m2 + math.sqrt(4 * m2 * m2 + math.pi * e * m1 * m2)) / (math.pi * e * m1) * side


def _offsets(radius: int) -> tuple[np.ndarray, np.ndarray]:
    r = np.arange(-radius, radius + 1, dtype=float)
    dy, dx = np.meshgrid(r, r, indexing="ij")
    return dy, dx


def dam_weights(radius_cells: int, shrink: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """High-area fraction of every offset cell and the footprint, arrays ``(2b+1, 2b+1)``.

    A cell whose centre lies in or on the circle of radius ``b_hat`` is pure high (1).
    With ``shrink``, a cell the circle crosses (nearest point strictly inside the
    circle) but whose centre is outside gets Theorem VI.1's shrunken area
    S = 4 (delta |x| + 1/2)(delta |y| + 1/2), delta = b_hat / sqrt(x^2 + y^2) - 1,
    clamped to [0, 1]; such cells belong to the footprint (the paper's A_m) even when S
    clamps to 0. Every crossed cell has |x|, |y| <= b_hat, so the arrays have radius b_hat.
    """
    b = int(radius_cells)
    require(b >= 0, "the disk radius must be >= 0 cells")
    dy, dx = _offsets(b)
    rho2 = dx * dx + dy * dy
    inside = rho2 <= b * b
    high = inside.astype(float)
    if not shrink:
        return high, inside
    near2 = np.maximum(np.abs(dx) - 0.5, 0) ** 2 + np.maximum(np.abs(dy) - 0.5, 0) ** 2
    crossed = (~inside) & (near2 < b * b)
    rho = np.sqrt(np.where(crossed, rho2, 1.0))
    delta = b / rho - 1.0
    area = 4.0 * (delta * np.abs(dx) + 0.5) * (delta * np.abs(dy) + 0.5)
    high[crossed] = np.clip(area[crossed], 0.0, 1.0)
    return high, inside | crossed


def huem_weights(radius_cells: int, epsilon: float) -> tuple[np.ndarray, np.ndarray]:
    """HUEM's grid weights W / q (Appendix A), arrays ``(2b+1, 2b+1)``; W = 1 outside.

    Ring kappa (1..b_hat, width one cell) has level L_k = e^{(1 - (k-1)/b_hat) eps}, the
    outside level 1 = q. Written as nested disks, W = 1 + sum_k (L_k - L_{k+1}) s_k with
    s_k the shrunken DAM fraction for radius k, so a cell split by circle k gets
    s L_k + (1 - s) L_{k+1}, the Appendix's weighted sum. 1 <= W <= e^eps.

    Computed in O(b^2), not by summing b disks: s_k(cell) is 1 for every k >= the cell's
    centre distance (those terms telescope to L_kin - 1) and fractional only for a k strictly
    between the cell's nearest-point and centre distances (at most one k, as they differ by
    < 1), which gets :func:`dam_weights`' shrunken area for that radius.
    """
    b = int(radius_cells)
    _, footprint = dam_weights(b, shrink=True)
    weight = np.ones((2 * b + 1, 2 * b + 1))
    if b == 0:
        weight[0, 0] = math.exp(epsilon)
        return weight, footprint
    # levels[k] = L_k for k = 1..b, levels[b + 1] = 1 (levels[0] unused)
    levels = np.array([math.nan] + [math.exp((1.0 - (k - 1) / b) * epsilon) for k in range(1, b + 1)] + [1.0])
    dy, dx = _offsets(b)
    rho2 = dx * dx + dy * dy
    near2 = np.maximum(np.abs(dx) - 0.5, 0) ** 2 + np.maximum(np.abs(dy) - 0.5, 0) ** 2
    # smallest k >= 1 with k^2 >= rho2 (the cell's centre is inside disk k for every k >= k_in)
    k_in = np.maximum(np.ceil(np.sqrt(rho2)).astype(np.int64), 1)
    k_in = np.where((k_in - 1) ** 2 >= rho2, k_in - 1, k_in)
    k_in = np.where(k_in ** 2 < rho2, k_in + 1, k_in)
    k_in = np.maximum(k_in, 1)
    inside = k_in <= b
    weight[inside] += levels[k_in[inside]] - 1.0
    # circles crossing the cell with its centre outside: near2 < k^2 < rho2, 1 <= k <= b
    rho = np.sqrt(np.where(rho2 > 0, rho2, 1.0))
    base = np.floor(np.sqrt(near2)).astype(np.int64)
    for step in range(3):
        k = base + step
        crossed = (k >= 1) & (k <= b) & (near2 < k * k) & (rho2 > k * k)
        if not crossed.any():
            continue
        kc = k[crossed]
        delta = kc / rho[crossed] - 1.0
        area = np.clip(4.0 * (delta * np.abs(dx[crossed]) + 0.5) * (delta * np.abs(dy[crossed]) + 0.5), 0.0, 1.0)
        weight[crossed] += (levels[kc] - levels[kc + 1]) * area
    return weight, footprint


def huem_continuous_q(epsilon: float, radius: float, side: float = 1.0) -> float:
    """Def. 5's low density q generalised to an L x L input square.

    Normalisation 1 = q (pi b^2 (e^eps - 1 - eps) 2 / eps^2 + 4 L b + L^2); L = 1 gives
    q = eps^2 / (2 pi (e^eps - 1 - eps) b^2 + 4 eps^2 b + eps^2).
    """
    eps = float(epsilon)
    m1 = math.expm1(eps) - eps
    return eps * eps / (2 * math.pi * m1 * radius ** 2 + 4 * eps * eps * radius * side + eps * eps * side ** 2)
