"""Local privacy (LP): how far, on average, a Bayesian adversary's guess lands from a user.

dam-disk-area-mechanism.md Sec. VII-B, eq. (15)-(16) (after Shokri et al.'s location
privacy, ref. [17]): uniform prior over the d x d input cells, the adversary sees one
report y and guesses a cell from the posterior Pr(x_hat | y) ~ Pr(y | x_hat); LP is the
expected Euclidean distance between guess and truth,

    LP = 1/n sum_y [sum_{x, x_hat} P(y|x) P(y|x_hat) |x - x_hat|] / [sum_x P(y|x)].

Larger is more private. Reported in metres (cell units times ``grid.cell_m``).
This is the paper's figure (used by its claims); pages and reports state the
attacker through :func:`ldpviz.decide.attacker.attackers` (population prior, named, with this
uniform-prior attacker beside it).
Three routes, all exact except the last:

* DAM-like mechanisms (a :class:`~ldpviz.mechanisms.dam.kernels.DiskChannel`): from the translation-
  invariant kernel, P(y|x) = (1 + B(y - x)) / Z, so the sums split into a constant, an
  FFT convolution and a short sum over kernel-offset differences -- cheap at d = 64;
* any mechanism with an explicit ``channel()``: the dense formula;
* mechanisms with an astronomically large output space (SEM-Geo-I's k-subsets) provide
  ``local_privacy_cells()`` themselves (Monte Carlo, see :mod:`ldpviz.mechanisms.dam.sem_geoi`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ldpviz.geo.domain import Grid
from ldpviz.errors import require
from ldpviz.mechanisms.dam.kernels import DiskChannel


def cell_distances(side: int) -> np.ndarray:
    """(n, n) Euclidean distances between cell centres, in cells."""
    r, c = np.divmod(np.arange(side * side), side)
    return np.hypot(r[:, None] - r[None, :], c[:, None] - c[None, :])


def lp_from_channel(P: np.ndarray, side: int) -> float:
    """Eq. (16) from a dense channel P[y, x] (uniform prior), in cells."""
    P = np.asarray(P, float)
    n = P.shape[1]
    D = cell_distances(side)
    mass = P.sum(axis=1)
    keep = mass > 0
    num = np.einsum("yx,yx->y", P[keep] @ D, P[keep])
    return float((num / mass[keep]).sum() / n)


def lp_from_disk_channel(chan: DiskChannel) -> float:
    """Eq. (16) for P(y|x) = (mask(y) + B(y - x)) / Z without building P (cells)."""
    d, R, Z = chan.side, chan.radius, chan.z
    n = d * d
    B = chan.bump
    D = cell_distances(d)
    row_d = D.sum(axis=1).reshape(d, d)
    total_d = D.sum()
    grid_ones = np.ones((d, d))
    den = (n + chan.conv64.full(grid_ones)) / Z                       # sum_x P(y|x)
    cross = chan.conv64.full(row_d)                                   # sum_x B(y-x) rowD(x)
    # quadratic term Q(y) = sum_{k,k'} B(k) B(k') |k - k'| [y-k in G][y-k' in G], per difference delta
    w = 2 * R + 1
    out = chan.out_side
    Q = np.zeros((out, out))
    ys, xs = np.mgrid[0:out, 0:out]
    for dy in range(0, w):                       # half of the differences; |delta| = |-delta|
        for dx in range(-(w - 1), w):
            if dy == 0 and dx <= 0:
                continue
            dist = np.hypot(dy, dx)
            # H(k) = B(k) B(k - delta)
            H = np.zeros((w, w))
            y0, y1 = max(0, dy), min(w, w + dy)
            x0, x1 = max(0, dx), min(w, w + dx)
            if y0 >= y1 or x0 >= x1:
                continue
            H[y0:y1, x0:x1] = B[y0:y1, x0:x1] * B[y0 - dy:y1 - dy, x0 - dx:x1 - dx]
            if not H.any():
                continue
            # y - k in G and y - k + delta in G  <=>  k in [y - hi, y - lo] per axis
            lo_r, hi_r = max(0, -dy), min(d - 1, d - 1 - dy)
            lo_c, hi_c = max(0, -dx), min(d - 1, d - 1 - dx)
            if lo_r > hi_r or lo_c > hi_c:
                continue
            sat = np.zeros((w + 1, w + 1))
            sat[1:, 1:] = H.cumsum(0).cumsum(1)
            r0 = np.clip(ys - hi_r, 0, w)
            r1 = np.clip(ys - lo_r + 1, 0, w)
            c0 = np.clip(xs - hi_c, 0, w)
            c1 = np.clip(xs - lo_c + 1, 0, w)
            r1 = np.maximum(r1, r0)
            c1 = np.maximum(c1, c0)
            Q += 2 * dist * (sat[r1, c1] - sat[r0, c1] - sat[r1, c0] + sat[r0, c0])
    num = (total_d + 2 * cross + Q) / (Z * Z)
    mask = chan.mask
    return float((num[mask] / den[mask]).sum() / n)


def local_privacy(mechanism: Any, grid: Grid | None = None, eps: float | None = None, **params: Any) -> float:
    """Eq. (15)-(16): expected distance (metres) between a user's cell and a Bayesian guess.

    ``mechanism`` is a registry name (then ``grid`` and ``eps`` are required, ``params`` go
    to the mechanism) or a constructed :class:`~ldpviz.mechanisms.base.Mechanism`.
    """
    from ldpviz import mechanisms
    if isinstance(mechanism, str):
        require(grid is not None and eps is not None, "local_privacy needs a grid and epsilon with a mechanism name")
        mech = mechanisms.create(mechanism, grid, eps, **params)
    else:
        mech = mechanism
    side = mech.grid.side
    if hasattr(mech, "local_privacy_cells"):
        cells = mech.local_privacy_cells()
    elif isinstance(getattr(mech, "chan", None), DiskChannel):
        cells = lp_from_disk_channel(mech.chan)
    else:
        require(mech.has_channel, f"mechanism '{mech.name}' has no explicit channel, so its local privacy "
                                  f"cannot be computed")
        cells = lp_from_channel(mech.channel(), side)
    return cells * mech.grid.cell_m
