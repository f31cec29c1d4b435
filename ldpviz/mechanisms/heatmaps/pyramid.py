"""Sparse EMD aggregation: the scaled pyramidal transform, its noisy measurement and RECONSTRUCT.

Ghazi et al., "Differentially Private Heatmaps" (dp-heatmaps-sparse-emd.md):

* :func:`level_sums` / :func:`pyramid_transform` / :func:`pyramid_matrix` —
  Definition 3.1: level ``i`` splits [0, 1)^2 into 2^i x 2^i cells of side
  2^-i; ``P_i s`` are the cell sums and the scaled transform is
  ``P = [P_0; 2^-1 P_1; ...; 2^-l P_l]`` (Delta = 2^l).
* :func:`level_budgets` / :func:`measure` — Algorithm 1 with the budgets of the
  proof of Thm 3.1, ``eps_i = gamma^|i - q| eps / Z``, ``q = floor(log2 sqrt(w))``,
  and the modification of Sec. 4 ("Implementation details"): no measurement
  below level q, so Z sums over the measured levels q..l only and the budgets
  add up to eps exactly. Every user's distribution has l1 norm 1, so each
  ``P_i s`` has l1 sensitivity 1 and level i gets Laplace noise of scale
  1 / eps_i (Lemma 2.2, "Privacy analysis" of Thm 3.1).
* :func:`reconstruct` — Algorithm 2: top-w children per level, then
  ``argmin_{s >= 0} || y_hat - P s ||_1`` as the O(w l)-variable LP of Sec. 4,
  solved exactly by HiGHS (``scipy.optimize.linprog``). It reads only the noisy
  :class:`Measurements`, so it is post-processing and costs no privacy.

Arrays are ``(Delta, Delta)`` indexed ``[row, col]`` like every density in the
tool; a level-i cell ``(r, c)`` covers rows ``r*B..(r+1)*B-1`` and columns
``c*B..(c+1)*B-1`` with ``B = Delta / 2^i``. Its four children at level i+1 are
``(2r + a, 2c + b)``, a, b in {0, 1}.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linprog

from ldpviz.errors import require

DEFAULT_GAMMA = 1.0 / math.sqrt(2.0)   # Sec. 4: minimises the second error term as l -> infinity
DEFAULT_WIDTH = 20                     # Sec. 4: w = 20


def is_power_of_two(value: int) -> bool:
    return isinstance(value, (int, np.integer)) and value >= 1 and (int(value) & (int(value) - 1)) == 0


def require_power_of_two(side: int) -> int:
    """``l`` with ``side = 2^l``; a clear error otherwise."""
    require(is_power_of_two(side),
            f"dp-heatmap needs the grid side d to be a power of two (e.g. 64, 128, 256); got {side}")
    return int(side).bit_length() - 1


def level_sums(aggregate: np.ndarray, level: int) -> np.ndarray:
    """``P_i s`` as a ``(2^i, 2^i)`` array: the mass of ``aggregate`` in every level-i cell (Def. 3.1)."""
    delta = aggregate.shape[0]
    cells = 1 << level
    block = delta // cells
    return aggregate.reshape(cells, block, cells, block).sum(axis=(1, 3))


def pyramid_transform(aggregate: np.ndarray, first_level: int = 0) -> list[np.ndarray]:
    """The scaled pyramidal transform ``2^-i P_i s`` for levels ``first_level..l`` (Def. 3.1)."""
    aggregate = np.asarray(aggregate, dtype=float)
    top = require_power_of_two(aggregate.shape[0])
    out = []
    sums = aggregate
    for level in range(top, first_level - 1, -1):     # finest to coarsest, each level from the one below
        if level < top:
            sums = sums.reshape(1 << level, 2, 1 << level, 2).sum(axis=(1, 3))
        out.append(sums * 2.0 ** -level)
    return out[::-1]


def pyramid_matrix(delta: int, first_level: int = 0) -> sp.csr_matrix:
    """``P`` (rows of levels ``first_level..l`` stacked, each level row-major) as a sparse matrix."""
    top = require_power_of_two(delta)
    rows_idx, cols_idx, vals = [], [], []
    offset = 0
    fine_r, fine_c = np.divmod(np.arange(delta * delta), delta)
    for level in range(first_level, top + 1):
        cells = 1 << level
        block = delta // cells
        parent = (fine_r // block) * cells + (fine_c // block)
        rows_idx.append(offset + parent)
        cols_idx.append(np.arange(delta * delta))
        vals.append(np.full(delta * delta, 2.0 ** -level))
        offset += cells * cells
    return sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows_idx), np.concatenate(cols_idx))),
                         shape=(offset, delta * delta))


def start_level(width: int, top: int) -> int:
    """``q = floor(log2 sqrt(w))`` (Thm 3.1), capped at the finest level ``l``."""
    require(width >= 1, f"the width w must be at least 1, got {width}")
    # floor(log2(sqrt(w))) = floor(log2(w) / 2), done in integers to avoid rounding at powers of 4.
    return min((int(width).bit_length() - 1) // 2, top)


def level_budgets(epsilon: float, top: int, width: int = DEFAULT_WIDTH,
                  gamma: float = DEFAULT_GAMMA) -> tuple[int, np.ndarray]:
    """``(q, eps_q..eps_l)``: ``eps_i = gamma^|i-q| eps / Z`` over the measured levels q..l; they sum to eps."""
    q = start_level(width, top)
    weights = gamma ** np.abs(np.arange(q, top + 1) - q).astype(float)
    budgets = weights * (epsilon / weights.sum())
    return q, budgets


@dataclass(frozen=True)
class Measurements:
    """What Algorithm 1 releases: noisy scaled level sums, nothing else about the users.

    ``noisy[j]`` is ``y'_i = 2^-i (P_i s + nu_i)`` for level ``i = first_level + j``
    with ``nu_i ~ Lap(noise_scale[j])`` i.i.d. per cell and
    ``noise_scale[j] = sensitivity / level_epsilon[j]`` (sensitivity 1).
    """

    delta: int
    first_level: int
    level_epsilon: np.ndarray
    noise_scale: np.ndarray
    noisy: tuple[np.ndarray, ...]

    @property
    def top(self) -> int:
        return self.first_level + len(self.noisy) - 1

    @property
    def epsilon(self) -> float:
        """Total budget by basic composition over the measured levels."""
        return float(self.level_epsilon.sum())


def measure(aggregate: np.ndarray, epsilon: float, rng: np.random.Generator, width: int = DEFAULT_WIDTH,
            gamma: float = DEFAULT_GAMMA) -> Measurements:
    """Algorithm 1 (Sec. 3.2, budgets of Thm 3.1, levels q..l as in Sec. 4) on ``aggregate = sum_i p_i``.

    ``aggregate`` is the (Delta, Delta) sum of the users' distributions, each of
    l1 norm 1, so every level has l1 sensitivity 1.
    """
    aggregate = np.asarray(aggregate, dtype=float)
    top = require_power_of_two(aggregate.shape[0])
    q, budgets = level_budgets(epsilon, top, width, gamma)
    sensitivity = 1.0
    scales = sensitivity / budgets
    noisy = []
    for j, level in enumerate(range(q, top + 1)):
        sums = level_sums(aggregate, level)
        noise = rng.laplace(0.0, scales[j], size=sums.shape)
        noisy.append((sums + noise) * 2.0 ** -level)
    return Measurements(aggregate.shape[0], q, budgets, scales, tuple(noisy))


@dataclass(frozen=True)
class Reconstruction:
    """RECONSTRUCT's output: ``s_hat`` (unnormalised, >= 0) and how it was found."""

    estimate: np.ndarray          #: (Delta, Delta) s_hat >= 0
    selected: int                 #: |S|, measurements kept
    variables: int                #: LP variables (regions + slack pairs)
    objective: float              #: || y_hat - P s_hat ||_1 over the measured levels


def _children(rows: np.ndarray, cols: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return ((2 * rows)[:, None] + np.array([0, 0, 1, 1])).ravel(), \
           ((2 * cols)[:, None] + np.array([0, 1, 0, 1])).ravel()


def reconstruct(measurements: Measurements, width: int = DEFAULT_WIDTH) -> Reconstruction:
    """Algorithm 2 RECONSTRUCT on the noisy measurements only (post-processing).

    Selection: ``S_q`` = every level-q cell (4^q <= w); ``S_i`` = the
    ``min(w, |T_i|)`` children of ``S_{i-1}`` with the largest noisy values.

    LP (Sec. 4, "one variable per cell that is left out at each stage"): the
    left-out children ``T_i \\ S_i`` and the finest selected cells ``S_l``
    partition the grid. Inside a left-out cell c at level i no row of S is
    touched, and every unselected row costs ``2^-j * mass`` (P s >= 0 and
    y_hat = 0 there), so its mass ``x_c`` costs ``sum_{j=i}^{l} 2^-j`` wherever
    it sits; one variable per region is therefore exact. With slack pairs
    ``e+ - e-`` per selected row::

        min  sum_c cost_c x_c + sum_{rows in S} (e+ + e-)
        s.t. 2^-i * sum_{regions r in row cell} x_r + e+ - e- = y_hat(row),   x, e+, e- >= 0

    Within a left-out cell the optimum is indifferent to placement; we spread
    its mass uniformly over the cell's fine cells (the paper leaves this open).
    """
    delta, q, top = measurements.delta, measurements.first_level, measurements.top
    noisy = measurements.noisy
    # ---- selection (Algorithm 2 lines 3-8) -----------------------------------------
    sel_r = [np.repeat(np.arange(1 << q), 1 << q)]
    sel_c = [np.tile(np.arange(1 << q), 1 << q)]
    out_r: list[np.ndarray] = []
    out_c: list[np.ndarray] = []
    out_level: list[int] = []
    for level in range(q + 1, top + 1):
        cand_r, cand_c = _children(sel_r[-1], sel_c[-1])
        values = noisy[level - q][cand_r, cand_c]
        keep = min(width, len(values))
        if keep < len(values):
            order = np.argpartition(-values, keep - 1)
            chosen, dropped = order[:keep], order[keep:]
        else:
            chosen, dropped = np.arange(len(values)), np.arange(0)
        sel_r.append(cand_r[chosen])
        sel_c.append(cand_c[chosen])
        out_r.append(cand_r[dropped])
        out_c.append(cand_c[dropped])
        out_level.append(level)
    # ---- regions: left-out cells per level, then the finest selected cells ------------
    reg_level = np.concatenate([np.full(len(r), lv) for r, lv in zip(out_r, out_level)]
                               + [np.full(len(sel_r[-1]), top)]).astype(np.int64)
    reg_r = np.concatenate(out_r + [sel_r[-1]]).astype(np.int64)
    reg_c = np.concatenate(out_c + [sel_c[-1]]).astype(np.int64)
    n_left_out = len(reg_level) - len(sel_r[-1])
    tail = np.array([sum(2.0 ** -j for j in range(i, top + 1)) for i in range(top + 1)])
    reg_cost = np.where(np.arange(len(reg_level)) < n_left_out, tail[reg_level], 0.0)
    # ---- constraint matrix: selected row (level i cell) contains region r? ---------------
    rows_i, cols_i, vals = [], [], []
    rhs = []
    row_offset = 0
    for j, level in enumerate(range(q, top + 1)):
        cells_r, cells_c = sel_r[j], sel_c[j]
        rhs.append(noisy[j][cells_r, cells_c])
        # A region at level L >= level lies in the level cell (r >> (L - level), c >> (L - level)).
        inside = reg_level >= level
        shift = reg_level[inside] - level
        anc = (reg_r[inside] >> shift) * (1 << level) + (reg_c[inside] >> shift)
        keys = cells_r * (1 << level) + cells_c
        order = np.argsort(keys)
        pos = np.minimum(np.searchsorted(keys[order], anc), len(keys) - 1)
        hits = np.where(keys[order][pos] == anc, order[pos], -1)
        region_ids = np.nonzero(inside)[0]
        ok = hits >= 0
        rows_i.append(row_offset + hits[ok])
        cols_i.append(region_ids[ok])
        vals.append(np.full(int(ok.sum()), 2.0 ** -level))
        row_offset += len(cells_r)
    n_rows, n_reg = row_offset, len(reg_level)
    a_regions = sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows_i), np.concatenate(cols_i))),
                              shape=(n_rows, n_reg))
    eye = sp.identity(n_rows, format="csr")
    a_eq = sp.hstack([a_regions, eye, -eye], format="csr")
    cost = np.concatenate([reg_cost, np.ones(2 * n_rows)])
    b_eq = np.concatenate(rhs)
    res = linprog(cost, A_eq=a_eq, b_eq=b_eq, bounds=(0, None), method="highs")
    if res.status != 0:  # the LP is always feasible and bounded below by 0; anything else is a solver bug
        raise RuntimeError(f"RECONSTRUCT LP failed: {res.message}")
    mass = np.maximum(res.x[:n_reg], 0.0)
    # ---- back to the grid: uniform inside each region --------------------------------
    estimate = np.zeros((delta, delta))
    for level in np.unique(reg_level):
        at = reg_level == level
        cells = 1 << int(level)
        block = delta // cells
        coarse = np.zeros((cells, cells))
        np.add.at(coarse, (reg_r[at], reg_c[at]), mass[at] / (block * block))
        estimate += np.kron(coarse, np.ones((block, block)))
    return Reconstruction(estimate, selected=n_rows, variables=n_reg + 2 * n_rows, objective=float(res.fun))
