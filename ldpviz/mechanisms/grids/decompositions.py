"""Grid decompositions under LDP: UG, PrivAG and AAG (grid-decompositions-ug-privag-aag.md Sec. 3).

* UG (Algorithm 1): an N x N uniform grid, every user reports its cell with a
  frequency oracle (OLH by default, any oracle of :mod:`ldpviz.mechanisms.fo.oracles`).
* PrivAG (Sec. 3.2, Algorithm 2; Yang et al. MDM'22): a share sigma of the
  users estimates densities on a g1 x g1 grid (eq. 4); each first-level cell is
  cut into g2 x g2 equal cells (eq. 5); the other users report on that grid.
* AAG (Sec. 3.3, Algorithm 3): as PrivAG, but each first-level cell is first cut
  unevenly at hsplit / vsplit (eq. 6-7), towards its denser neighbours, and each
  of the four parts is then divided uniformly.

The result is a :class:`~ldpviz.geo.partition.Partition` of rectangles whose masses
are the second phase's unbiased counts as fractions of its users; range
queries are answered on it by eq. 8 and it converts to the evaluation grid for
the maps, W2 and KL.

Choices where the paper is open (documented in docs/grids-design.md and tested):

* eq. 5 takes Phi(C_k) as a *fraction* of the first-phase users (counts would
  give g2 in the hundreds); negative noisy Phi counts as 0. g1 and g2 are rounded
  to the nearest integer, at least 1.
* AAG's first level uses eq. 4 with ``alpha_first`` = 0.02, PrivAG's alpha, and
  AAG's alpha = 0.25 enters eq. 5 only: the paper's Table 1 shows one "Initial
  G1" row for both methods, and its AAG totals (e.g. 567 cells for Gowalla at
  eps = 1) are smaller than the 961 cells a 0.25 first level would already have.
* AAG always makes the four parts (Algorithm 3 line 12 is unconditional), so a
  cell holds G x G sub-cells with G = max(2, g2). Along each axis the part next
  to the *denser* neighbour is the narrower one; it gets ceil(G/2) pieces, the
  other floor(G/2) (the paper's (g2 - 1)/2 per part only adds up for no g2).
* Negative noisy neighbour densities count as 0 in eq. 6-7; when both
  neighbours are 0 the split is central; the split fraction is clamped to
  [MIN_SPLIT_FRACTION, 1 - MIN_SPLIT_FRACTION] so no part has zero width.
* Edge and corner cells: a missing neighbour takes the cell's own density
  (Sec. 3.3, "Handling edge and corner cells").
* Size cap (not in the paper): eq. 4-5 grow like e^(eps/4), so at large epsilon
  (e.g. 50) or large alpha they ask for millions of cells (hundreds of GiB).
  Every grid is capped at MAX_GRID_CELLS = 65,536 cells (256 x 256): N and g1
  are capped at 256 (AAG's g1 at 128, as each of its cells holds >= 2 x 2
  parts), and when the g2_k of eq. 5 would exceed the budget they are all
  scaled down by one common factor (keeping their proportions, each >= 1, or
  >= 2 for AAG). ``Estimate.info["capped"]`` says when this happened.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ldpviz.geo.domain import Binned
from ldpviz.errors import require
from ldpviz.mechanisms.estimation import norm_sub, to_distribution
from ldpviz.mechanisms import register
from ldpviz.mechanisms.base import LDP, Estimate, Mechanism, Param
from ldpviz.mechanisms.fo.oracles import (ORACLES, PATHS, OLHReports, ReportHistogram, SupportCounts, olh_supports,
                                          oracle_counts, oracle_estimate, oracle_perturb, oracle_report_likelihood)
from ldpviz.mechanisms.path_cost import AGGREGATE, AUTO, PER_USER, choose_path
from ldpviz.geo.partition import Partition, rect_cell_shares
from ldpviz.wording import plural

FAMILY_GRIDS = "Grid decompositions (grid paper)"
REFERENCE = "grid-decompositions-ug-privag-aag.md"
#: No AAG part is narrower than this share of its first-level cell.
MIN_SPLIT_FRACTION = 0.05
#: Most cells any grid of this module has (256 x 256): every cell is an oracle value (OLH costs users x cells)
#: and a range query touches every piece. Eq. 4-5 sizes beyond it are capped (see the module docstring).
MAX_GRID_CELLS = 1 << 16
MAX_GRID_SIDE = math.isqrt(MAX_GRID_CELLS)


# ---------------------------------------------------------------------------
# Grid sizes (eq. 4 and 5)
# ---------------------------------------------------------------------------

def first_level_side(n_users: int, epsilon: float, alpha: float) -> int:
    """g1 = sqrt(2 alpha (e^eps - 1) sqrt(|U| / e^eps)), rounded to the nearest integer, >= 1 (eq. 4)."""
    value = math.sqrt(2.0 * alpha * math.expm1(epsilon) * math.sqrt(n_users / math.exp(epsilon)))
    return max(1, int(round(value)))


def second_level_sides(density: np.ndarray, n_users: int, epsilon: float, alpha: float, sigma: float) -> np.ndarray:
    """g2_k = sqrt(2 alpha Phi(C_k) (e^eps - 1) sqrt((1 - sigma) |U| / e^eps)), rounded, >= 1 (eq. 5).

    ``density`` is Phi as a fraction of the first-phase users; negative values count as 0.
    """
    phi = np.clip(np.asarray(density, dtype=float), 0.0, None)
    value = np.sqrt(2.0 * alpha * phi * math.expm1(epsilon) * math.sqrt((1 - sigma) * n_users / math.exp(epsilon)))
    return np.maximum(1, np.round(value)).astype(np.int64)


def capped_first_side(side: int, min_pieces: int = 1) -> int:
    """``side`` limited so that side^2 cells of at least ``min_pieces`` x ``min_pieces`` fit MAX_GRID_CELLS."""
    return max(1, min(int(side), math.isqrt(MAX_GRID_CELLS // (min_pieces * min_pieces))))


def capped_second_sides(sides: np.ndarray, min_side: int = 1) -> tuple[np.ndarray, bool]:
    """Eq. 5 sides (each >= ``min_side``), scaled down by one common factor until sum(g2^2) <= MAX_GRID_CELLS.

    Returns the sides and whether they were scaled. Needs len(sides) * min_side^2 <= MAX_GRID_CELLS
    (guaranteed by :func:`capped_first_side`).
    """
    g2 = np.maximum(np.asarray(sides, dtype=np.int64), min_side)
    total = float(np.square(g2.astype(float)).sum())
    if total <= MAX_GRID_CELLS:
        return g2, False
    require(len(g2) * min_side * min_side <= MAX_GRID_CELLS, "first-level grid too large for the cell budget")
    factor = math.sqrt(MAX_GRID_CELLS / total)
    while True:
        scaled = np.maximum(min_side, np.floor(g2 * factor)).astype(np.int64)
        if float(np.square(scaled.astype(float)).sum()) <= MAX_GRID_CELLS:
            return scaled, True
        factor *= 0.95


# ---------------------------------------------------------------------------
# Two-level grids
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class TwoLevelGrid:
    """A g1 x g1 first-level grid whose cell k (flat ``row * g1 + col``) is cut by its own edges.

    ``x_cuts[k]`` / ``y_cuts[k]`` are the internal cut positions as fractions
    (0, 1) of the cell's width / height, increasing. Sub-cells are numbered cell
    by cell (k ascending), row-major inside a cell (rows from the south).
    """

    first_side: int
    x_cuts: tuple[np.ndarray, ...]
    y_cuts: tuple[np.ndarray, ...]

    @classmethod
    def uniform(cls, side: int, pieces: np.ndarray | None = None) -> "TwoLevelGrid":
        """Each first-level cell k cut into pieces[k] x pieces[k] equal cells (PrivAG; UG with pieces = 1)."""
        pieces = np.ones(side * side, dtype=np.int64) if pieces is None else np.asarray(pieces, dtype=np.int64)
        cuts = tuple(np.arange(1, g) / g for g in pieces)
        return cls(side, cuts, cuts)

    @property
    def columns(self) -> np.ndarray:
        return np.array([len(c) + 1 for c in self.x_cuts], dtype=np.int64)

    @property
    def rows(self) -> np.ndarray:
        return np.array([len(c) + 1 for c in self.y_cuts], dtype=np.int64)

    @property
    def cells_per_first_cell(self) -> np.ndarray:
        return self.columns * self.rows

    @property
    def n_cells(self) -> int:
        return int(self.cells_per_first_cell.sum())

    def rects(self) -> np.ndarray:
        """(n_cells, 4) rectangles x0, y0, x1, y1 in unit coordinates, in sub-cell order."""
        g1 = self.first_side
        k = np.arange(g1 * g1)
        row, col = np.divmod(k, g1)
        cols, rows = self.columns, self.rows
        # every first-level cell's edges, back to back: (col + [0, cuts..., 1]) / g1, as one array per axis
        xe = np.concatenate([e for c in self.x_cuts for e in ([0.0], c, [1.0])])
        ye = np.concatenate([e for c in self.y_cuts for e in ([0.0], c, [1.0])])
        xe = (np.repeat(col, cols + 1) + xe) / g1
        ye = (np.repeat(row, rows + 1) + ye) / g1
        x_start = np.concatenate([[0], np.cumsum(cols + 1)[:-1]])
        y_start = np.concatenate([[0], np.cumsum(rows + 1)[:-1]])
        per = cols * rows
        owner = np.repeat(k, per)                                   # sub-cells in order, row by row in each cell
        j = np.arange(int(per.sum())) - np.repeat(np.concatenate([[0], np.cumsum(per)[:-1]]), per)
        r, c = np.divmod(j, cols[owner])
        xi, yi = x_start[owner] + c, y_start[owner] + r
        return np.column_stack([xe[xi], ye[yi], xe[xi + 1], ye[yi + 1]])

    def first_level_cells(self, unit: np.ndarray) -> np.ndarray:
        """Flat first-level cell of each position (the far edges belong to the last cell)."""
        g1 = self.first_side
        idx = np.minimum((np.asarray(unit, dtype=float) * g1).astype(np.int64), g1 - 1)
        return idx[:, 1] * g1 + idx[:, 0]

    def locate(self, unit: np.ndarray) -> np.ndarray:
        """Sub-cell index of each position (vectorised; a point on a cut goes to the east/north cell)."""
        unit = np.asarray(unit, dtype=float).reshape(-1, 2)
        g1 = self.first_side
        k = self.first_level_cells(unit)
        col, row = k % g1, k // g1
        fx = np.clip(unit[:, 0] * g1 - col, 0.0, 1.0)
        fy = np.clip(unit[:, 1] * g1 - row, 0.0, 1.0)
        sub_col = _position_in_cuts(self.x_cuts, k, fx)
        sub_row = _position_in_cuts(self.y_cuts, k, fy)
        offsets = np.concatenate([[0], np.cumsum(self.cells_per_first_cell)[:-1]])
        return offsets[k] + sub_row * self.columns[k] + sub_col


def _position_in_cuts(cuts: tuple[np.ndarray, ...], cell: np.ndarray, fraction: np.ndarray) -> np.ndarray:
    """How many of cell k's cuts lie at or below ``fraction``: one searchsorted over keys k + cut."""
    lengths = np.array([len(c) for c in cuts], dtype=np.int64)
    if lengths.sum() == 0:
        return np.zeros(len(cell), dtype=np.int64)
    keys = np.concatenate([k + c for k, c in enumerate(cuts)])
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    # A fraction of exactly 1 (the cell's far edge) must not reach the next cell's keys.
    query = cell + np.minimum(fraction, np.nextafter(1.0, 0.0))
    return np.searchsorted(keys, query, side="right") - starts[cell]


def privag_grid(first_side: int, second_sides: np.ndarray) -> TwoLevelGrid:
    """PrivAG's adaptive grid: first-level cell k cut into g2_k x g2_k equal cells (Algorithm 2)."""
    return TwoLevelGrid.uniform(first_side, second_sides)


def neighbour_densities(density: np.ndarray) -> dict[str, np.ndarray]:
    """Phi of the west, east, south and north neighbour of every first-level cell.

    ``density`` is (g1, g1) indexed [row from south, col from west]. A missing
    neighbour (edge and corner cells) takes the cell's own density (Sec. 3.3).
    """
    phi = np.asarray(density, dtype=float)
    west, east, south, north = phi.copy(), phi.copy(), phi.copy(), phi.copy()
    west[:, 1:] = phi[:, :-1]
    east[:, :-1] = phi[:, 1:]
    south[1:, :] = phi[:-1, :]
    north[:-1, :] = phi[1:, :]
    return {"west": west, "east": east, "south": south, "north": north}


def split_fractions(density: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """AAG's cut positions per first-level cell as fractions of its width / height (eq. 6-7).

    x: hsplit / width = Phi(east) / (Phi(west) + Phi(east)), from the west edge;
    y: the cut lies vsplit = Phi(south) / (Phi(north) + Phi(south)) below the north
    edge, i.e. at Phi(north) / (Phi(north) + Phi(south)) of the height from the
    south edge. Either way the part next to the denser neighbour is the narrower.
    Negative densities count as 0; two zero neighbours give a central cut; the
    result is clamped to [MIN_SPLIT_FRACTION, 1 - MIN_SPLIT_FRACTION].
    """
    nb = {k: np.clip(v, 0.0, None) for k, v in neighbour_densities(density).items()}

    def ratio(towards: np.ndarray, other: np.ndarray) -> np.ndarray:
        total = towards + other
        safe = np.where(total > 0, total, 1.0)
        frac = np.where(total > 0, towards / safe, 0.5)
        return np.clip(frac, MIN_SPLIT_FRACTION, 1.0 - MIN_SPLIT_FRACTION)

    return ratio(nb["east"], nb["west"]), ratio(nb["north"], nb["south"])


def _uneven_cuts(split: float, pieces: int) -> np.ndarray:
    """Internal cuts of a unit interval first cut at ``split``, then both parts divided uniformly.

    ``pieces`` >= 2 in total; the narrower part gets ceil(pieces / 2).
    """
    narrow_first = split <= 0.5
    first = (pieces + 1) // 2 if narrow_first else pieces // 2
    second = pieces - first
    left = split * np.arange(1, first) / first
    right = split + (1.0 - split) * np.arange(1, second) / second
    return np.concatenate([left, [split], right])


def aag_grid(density: np.ndarray, second_sides: np.ndarray) -> TwoLevelGrid:
    """AAG's adaptive grid (Algorithm 3): uneven cut at hsplit / vsplit, then G x G cells, G = max(2, g2)."""
    phi = np.asarray(density, dtype=float)
    g1 = phi.shape[0]
    fx, fy = split_fractions(phi)
    pieces = np.maximum(2, np.asarray(second_sides, dtype=np.int64).reshape(-1))
    fx, fy = fx.reshape(-1), fy.reshape(-1)
    x_cuts = tuple(_uneven_cuts(float(fx[k]), int(pieces[k])) for k in range(g1 * g1))
    y_cuts = tuple(_uneven_cuts(float(fy[k]), int(pieces[k])) for k in range(g1 * g1))
    return TwoLevelGrid(g1, x_cuts, y_cuts)


# ---------------------------------------------------------------------------
# Mechanisms
# ---------------------------------------------------------------------------

_ORACLE = Param("oracle", str, "olh", "frequency oracle every user runs on its cell (the paper uses OLH)",
                choices=ORACLES)
_PATH = Param("path", str, "auto",
              "'per-user' simulates every phone; 'aggregate' draws the oracle's sufficient statistic from its "
              "exact distribution; 'auto' takes, in every round, the one a measured cost model predicts faster "
              "(see the frequency oracles)", choices=PATHS)
_PROJECTION = Param("projection", str, "none",
                    "post-processing of the cell estimates: 'none' keeps the unbiased estimates for range "
                    "queries, as the paper does (the map always shows a clipped distribution); 'clip' or "
                    "'norm-sub' (Wang et al. NDSS'20) make them a distribution first",
                    choices=("none", "clip", "norm-sub"))


def _project(counts: np.ndarray, method: str) -> np.ndarray:
    if method == "none":
        return counts
    if method == "norm-sub":
        return norm_sub(counts, max(float(counts.sum()), 0.0) or None)
    return np.clip(counts, 0.0, None) * (max(counts.sum(), 0.0) / max(np.clip(counts, 0.0, None).sum(), 1e-300))


def _check_cells(grid2: TwoLevelGrid) -> None:
    require(grid2.n_cells <= MAX_GRID_CELLS,
            f"the grid would have {grid2.n_cells:,} cells, more than {MAX_GRID_CELLS:,}; lower alpha or "
            "cells_per_side")


@dataclass(frozen=True)
class UGReports:
    """What UG's server receives: N (public, fixed from the number of users) and the oracle's reports."""

    side: int
    capped: bool
    n_users: int
    reports: Any


class _GridDecomposition(Mechanism):
    family = FAMILY_GRIDS
    privacy_model = LDP
    has_client = False
    #: the attacker's reports depend on public state built from the whole collection (N, the adaptive grid)
    attack_uses_crowd = True

    def _cell_likelihood(self, grid2: TwoLevelGrid, reports: Any) -> np.ndarray:
        """``(n, d*d)``: the oracle likelihood of each report over ``grid2``'s cells, spread to the grid's
        cells by area (P(y | x) = sum_v P(v | x) P(y | v), people uniform within a grid cell)."""
        L = oracle_report_likelihood(self.oracle, reports, grid2.n_cells, self.epsilon)
        shares = rect_cell_shares(grid2.rects(), self.grid.side)
        return np.asarray((shares.T @ L.T).T)

    def _path_for(self, n_users: int, domain_size: int) -> str:
        """The oracle path of one round: the forced one, or the cost model's choice for 'auto'."""
        return self.path if self.path != AUTO else choose_path(self.oracle, int(n_users), int(domain_size))

    def _oracle(self, values: np.ndarray, domain_size: int, rng: np.random.Generator) -> np.ndarray:
        return oracle_counts(self.oracle, values, domain_size, self.epsilon, rng,
                             self._path_for(len(values), domain_size))

    def _finish(self, grid2: TwoLevelGrid, unit: np.ndarray, rng: np.random.Generator,
                info: dict) -> Estimate:
        """Final phase: users in ``unit`` report their sub-cell; partition masses are fractions of them."""
        _check_cells(grid2)
        info["path"] = self._path_for(len(unit), grid2.n_cells)
        counts = self._oracle(grid2.locate(unit), grid2.n_cells, rng)
        return self._partition_estimate(grid2, counts, len(unit), info)

    def _partition_estimate(self, grid2: TwoLevelGrid, counts: np.ndarray, n_final: int, info: dict) -> Estimate:
        """The final phase's unbiased cell counts (from ``n_final`` reports) -> adaptive partition and density."""
        mass = _project(counts, self.projection) / max(n_final, 1)
        partition = Partition(grid2.rects(), mass)
        raw = partition.to_grid(self.grid.side)
        info.update({"cells": grid2.n_cells, "oracle": self.oracle, "path": info.get("path", self.path),
                     "path requested": self.path,
                     "reports": int(n_final) + info.get("first-phase reports", 0)})
        return Estimate(to_distribution(raw), partition=partition, raw=raw, info=info)

    def _split_users(self, users: Binned, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        unit = np.asarray(users.unit, dtype=float).reshape(-1, 2)
        n = len(unit)
        n1 = int(round(self.sigma * n))
        require(n1 >= 1 and n - n1 >= 1,
                f"{self.name} splits the users into two groups and needs at least one in each; "
                f"{plural(n, 'user')} with sigma = {self.sigma:g} {'leaves' if n == 1 else 'leave'} one group empty")
        order = rng.permutation(n)
        return unit[order[:n1]], unit[order[n1:]]


@register
class UG(_GridDecomposition):
    """Uniform N x N grid with a frequency oracle per user (grid paper Sec. 3.1, Algorithm 1).

    Default N: eq. 4 (Yang et al.'s guideline for a uniform LDP grid) with
    ``alpha``; the paper's Fig. 2 shows the error is U-shaped in N and the best
    N varies by dataset, so ``cells_per_side`` sets it directly.
    """

    name = "ug"
    label = "UG (uniform grid)"
    reference = f"{REFERENCE} Sec. 3.1, Algorithm 1"
    summary = ("The area is cut into N x N equal cells; every phone reports its cell through a frequency "
               "oracle and the server estimates how many people are in each cell.")
    params = (Param("cells_per_side", int, None,
                    "N, cells per side of the uniform grid; empty = eq. 4 of the grid paper with alpha, capped at "
                    f"{MAX_GRID_SIDE} ({MAX_GRID_CELLS:,} cells)", minimum=1, maximum=MAX_GRID_SIDE),
              Param("alpha", float, 0.02, "alpha of eq. 4 when N is computed", minimum=1e-4, maximum=10.0),
              _ORACLE, _PATH, _PROJECTION)
    has_client = True   # one round: a phone needs only N, which the server fixes from the number of users

    def setup(self) -> None:
        if self.path == "aggregate":
            self.has_client = False   # draws the oracle's sufficient statistic, not per-user reports

    def side_for(self, n_users: int) -> int:
        if self.cells_per_side is not None:
            return int(self.cells_per_side)
        return capped_first_side(first_level_side(n_users, self.epsilon, self.alpha))

    def perturb(self, users: Binned, rng: np.random.Generator) -> UGReports:
        """Every phone reports its cell of the public N x N grid through the frequency oracle."""
        unit = np.asarray(users.unit, dtype=float).reshape(-1, 2)
        require(len(unit) >= 1, "UG needs at least one user")
        side = self.side_for(len(unit))
        capped = self.cells_per_side is None and side < first_level_side(len(unit), self.epsilon, self.alpha)
        grid2 = TwoLevelGrid.uniform(side)
        _check_cells(grid2)
        path = AGGREGATE if self.path == AGGREGATE else PER_USER
        reports = oracle_perturb(self.oracle, grid2.locate(unit), grid2.n_cells, self.epsilon, rng, path)
        return UGReports(side, capped, len(unit), reports)

    def collect(self, users: Binned, rng: np.random.Generator) -> UGReports:
        """What the server receives: per-user reports or, when the cost model says it is faster, their exact
        statistic (the N x N grid depends only on the number of users)."""
        unit = np.asarray(users.unit, dtype=float).reshape(-1, 2)
        require(len(unit) >= 1, "UG needs at least one user")
        side = self.side_for(len(unit))
        capped = self.cells_per_side is None and side < first_level_side(len(unit), self.epsilon, self.alpha)
        grid2 = TwoLevelGrid.uniform(side)
        _check_cells(grid2)
        reports = oracle_perturb(self.oracle, grid2.locate(unit), grid2.n_cells, self.epsilon, rng,
                                 self._path_for(len(unit), grid2.n_cells))
        return UGReports(side, capped, len(unit), reports)

    def estimate(self, reports: UGReports) -> Estimate:
        grid2 = TwoLevelGrid.uniform(reports.side)
        counts = oracle_estimate(self.oracle, reports.reports, grid2.n_cells, self.epsilon)
        inner = reports.reports
        used = inner.path if isinstance(inner, (ReportHistogram, SupportCounts)) else PER_USER
        return self._partition_estimate(grid2, counts, reports.n_users,
                                        {"N": reports.side, "capped": reports.capped, "path": used})

    def attack_reports(self, people: Binned, rng: np.random.Generator, crowd: Binned) -> UGReports:
        """Per-user reports of ``people`` on the N x N grid a collection of ``crowd``'s size fixes."""
        side = self.side_for(len(crowd.cells))
        grid2 = TwoLevelGrid.uniform(side)
        _check_cells(grid2)
        reports = oracle_perturb(self.oracle, grid2.locate(people.unit), grid2.n_cells, self.epsilon, rng, PER_USER)
        return UGReports(side, False, len(crowd.cells), reports)

    def report_likelihood(self, reports: UGReports) -> np.ndarray:
        """``(n, d*d)``: each report's oracle likelihood over the N x N cells, spread to the grid's cells."""
        return self._cell_likelihood(TwoLevelGrid.uniform(reports.side), reports.reports)

    def report_key(self, reports: UGReports) -> Any:
        """For the black-box audit: the oracle's reports (OLH's as the cells each report supports, see
        :meth:`ldpviz.mechanisms.fo.oracles.OLH.report_key`)."""
        inner = reports.reports
        return olh_supports(inner, reports.side ** 2) if isinstance(inner, OLHReports) else inner


@dataclass(frozen=True)
class AdaptiveGridReports:
    """One report per person of PrivAG / AAG: the phase, the public grids and the oracle reports per phase."""

    in_first: np.ndarray        #: bool per person: reported in the first phase (on first_grid)
    first_grid: TwoLevelGrid
    second_grid: TwoLevelGrid
    first: Any                  #: oracle reports of the first-phase people, in order
    second: Any                 #: oracle reports of the second-phase people, in order


@register
class PrivAG(_GridDecomposition):
    """PrivAG (Yang et al. MDM'22; grid paper Sec. 3.2, Algorithm 2).

    Defaults alpha = 0.02 and sigma = 0.2 lie inside the recommended ranges
    [0.01, 0.02] and [0.1, 0.3] (Sec. 3.2).
    """

    name = "privag"
    label = "PrivAG (adaptive grid, Yang et al.)"
    reference = f"{REFERENCE} Sec. 3.2, eq. (4)-(5), Algorithm 2"
    summary = ("A fifth of the phones first report on a coarse grid; dense cells are then cut into more equal "
               "pieces and the remaining phones report on that finer, adaptive grid.")
    params = (Param("alpha", float, 0.02, "alpha of eq. 4 and 5 (recommended 0.01 to 0.02)",
                    minimum=1e-4, maximum=10.0),
              Param("sigma", float, 0.2, "share of users in the first phase (recommended 0.1 to 0.3)",
                    minimum=0.01, maximum=0.99),
              _ORACLE, _PATH, _PROJECTION)


    #: smallest number of pieces per side of a first-level cell (AAG always cuts each cell in four)
    min_pieces = 1

    def _alpha_first(self) -> float:
        return self.alpha

    def _second_grid(self, g1: int, phi: np.ndarray, g2: np.ndarray) -> TwoLevelGrid:
        return privag_grid(g1, g2)

    def run(self, users: Binned, rng: np.random.Generator) -> Estimate:
        first, second = self._split_users(users, rng)
        g1, grid2, info = self._first_round(first, len(first) + len(second), rng)
        return self._finish(grid2, second, rng, info)

    def _first_round(self, first: np.ndarray, n: int, rng: np.random.Generator) -> tuple[int, TwoLevelGrid, dict]:
        """Round one (eq. 4-5, and 6-7 for AAG): the first-phase users at ``first`` (unit coordinates) report on
        the g1 x g1 grid; returns g1, the public second-level grid and what happened."""
        g1_formula = first_level_side(n, self.epsilon, self._alpha_first())
        g1 = capped_first_side(g1_formula, self.min_pieces)
        grid1 = TwoLevelGrid.uniform(g1)
        first_path = self._path_for(len(first), g1 * g1)
        phi = self._oracle(grid1.first_level_cells(first), g1 * g1, rng) / len(first)
        g2, scaled = capped_second_sides(second_level_sides(phi, n, self.epsilon, self.alpha, self.sigma),
                                         self.min_pieces)
        grid2 = self._second_grid(g1, phi.reshape(g1, g1), g2)
        info = {"g1": g1, "first-level cells": g1 * g1, "max g2": int(g2.max()),
                "first-phase reports": len(first), "first-phase path": first_path,
                "capped": bool(scaled or g1 < g1_formula)}
        return g1, grid2, info

    def attack_reports(self, people: Binned, rng: np.random.Generator, crowd: Binned) -> "AdaptiveGridReports":
        """One report per person, as a phone sees the protocol: the public second-level grid comes from a
        first round of ``crowd`` (a collection of that size); each person is in the first phase with
        probability sigma (Algorithm 2-3 split the users at random) and reports its cell of the grid of its
        phase through the oracle, per user."""
        first, _ = self._split_users(crowd, rng)
        g1, grid2, _ = self._first_round(first, len(crowd.cells), rng)
        _check_cells(grid2)
        unit = np.asarray(people.unit, dtype=float).reshape(-1, 2)
        in_first = rng.random(len(unit)) < self.sigma
        grid1 = TwoLevelGrid.uniform(g1)
        r1 = oracle_perturb(self.oracle, grid1.first_level_cells(unit[in_first]), g1 * g1, self.epsilon, rng,
                            PER_USER)
        r2 = oracle_perturb(self.oracle, grid2.locate(unit[~in_first]), grid2.n_cells, self.epsilon, rng, PER_USER)
        return AdaptiveGridReports(in_first, grid1, grid2, r1, r2)

    def report_likelihood(self, reports: "AdaptiveGridReports") -> np.ndarray:
        """``(n, d*d)``: each report's oracle likelihood over its phase's grid, spread to the grid's cells (the
        phase is part of the report; its probability does not depend on the location)."""
        out = np.empty((len(reports.in_first), self.grid.n_cells))
        if reports.in_first.any():
            out[reports.in_first] = self._cell_likelihood(reports.first_grid, reports.first)
        if (~reports.in_first).any():
            out[~reports.in_first] = self._cell_likelihood(reports.second_grid, reports.second)
        return out


@register
class AAG(PrivAG):
    """AAG, the Advanced Adaptive Grid (grid paper Sec. 3.3, eq. 6-7, Algorithm 3).

    Defaults alpha = 0.25 and sigma = 0.5 (Sec. 3.3); eq. 4 uses ``alpha_first``
    (0.02, PrivAG's value, as the paper's Table 1 implies).
    """

    name = "aag"
    label = "AAG (advanced adaptive grid)"
    reference = f"{REFERENCE} Sec. 3.3, eq. (4)-(7), Algorithm 3"
    summary = ("Like PrivAG, but each coarse cell is cut off-centre, towards its busier neighbours, so the small "
               "cells land where people are.")
    params = (Param("alpha", float, 0.25, "alpha of eq. 5 (the paper's AAG value)", minimum=1e-4, maximum=10.0),
              Param("sigma", float, 0.5, "share of users in the first phase", minimum=0.01, maximum=0.99),
              Param("alpha_first", float, 0.02,
                    "alpha of eq. 4 for the first-level grid (0.02 reproduces the paper's Table 1)",
                    minimum=1e-4, maximum=10.0),
              _ORACLE, _PATH, _PROJECTION)

    min_pieces = 2

    def _alpha_first(self) -> float:
        return self.alpha_first

    def _second_grid(self, g1: int, phi: np.ndarray, g2: np.ndarray) -> TwoLevelGrid:
        return aag_grid(phi, g2)
