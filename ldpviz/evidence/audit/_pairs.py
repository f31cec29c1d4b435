"""The audited inputs and the pairs of them: hard pairs, pairs across a cell's edge and corner, random close pairs."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ldpviz.geo.domain import Binned, Grid
from ldpviz.mechanisms.base import GEO_I, Mechanism


# ------------------------------------------------------------------ inputs and pairs
@dataclass(frozen=True)
class AuditInput:
    """One user's true location: its grid cell and its position (unit coordinates)."""

    cell: int
    position: tuple[float, float]

    def users(self, n: int) -> Binned:
        """``n`` identical users at this location (what ``perturb`` takes)."""
        return Binned(cells=np.full(n, self.cell, dtype=np.int64),
                      unit=np.tile(np.asarray(self.position, dtype=float), (n, 1)), n_outside=0)


@dataclass(frozen=True)
class AuditPair:
    """Two inputs to tell apart, why they were chosen, and their distance in cell sides."""

    label: str
    first: AuditInput
    second: AuditInput

    def distance_cells(self, grid: Grid) -> float:
        delta = np.subtract(self.first.position, self.second.position) * grid.side
        return float(np.hypot(*delta))


def _input(grid: Grid, row: int, col: int, offset: tuple[float, float] = (0.5, 0.5)) -> AuditInput:
    d = grid.side
    row, col = min(max(row, 0), d - 1), min(max(col, 0), d - 1)
    return AuditInput(row * d + col, ((col + offset[0]) / d, (row + offset[1]) / d))


def _radius_cells(mech: Mechanism) -> int | None:
    """The mechanism's radius in whole cells, if it declares one (parameter or attribute)."""
    for name in ("radius_cells", "radius"):
        value = mech.__dict__.get(name, mech.param_values.get(name))
        if isinstance(value, (int, float, np.integer, np.floating)) and math.isfinite(value) and value > 0:
            return int(math.ceil(value))
    return None


def hard_pairs(grid: Grid, mech: Mechanism | None = None, seed: int = 0) -> list[AuditPair]:
    """Input pairs that are hard to tell apart: neighbours, far corners, radius shift, within a cell.

    For an LDP mechanism every pair must satisfy the same bound, so the pairs
    that matter are those where the mechanism's output differs most: adjacent
    cells (where smoothing mechanisms such as DAM or SRR blur least), opposite
    corners (where border effects and distance-based mechanisms differ most), a
    cell and the cell one radius away (the edge of a disk or staircase), and two
    positions inside one cell (mechanisms on continuous coordinates). Geo-I mechanisms also get close pairs
    across a cell edge and corner (:func:`boundary_pairs`) and at random positions (:func:`random_close_pairs`,
    drawn from ``seed``).
    """
    d = grid.side
    mid = (d - 1) // 2
    pairs = [AuditPair("neighbouring cells (east)", _input(grid, mid, mid), _input(grid, mid, mid + 1)),
             AuditPair("neighbouring cells (north-east)", _input(grid, mid, mid), _input(grid, mid + 1, mid + 1)),
             AuditPair("far corners", _input(grid, 0, 0), _input(grid, d - 1, d - 1)),
             AuditPair("corner and its neighbour", _input(grid, 0, 0), _input(grid, 0, 1))]
    radius = _radius_cells(mech) if mech is not None else None
    if radius is not None and radius < d:
        pairs.append(AuditPair(f"cell and itself shifted by the radius ({radius} cells)",
                               _input(grid, mid, 0), _input(grid, mid, radius)))
    pairs.append(AuditPair("two corners of one cell", _input(grid, mid, mid, (0.01, 0.01)),
                           _input(grid, mid, mid, (0.99, 0.99))))
    if mech is not None and mech.privacy_model == GEO_I and d > 1:
        pairs.extend(boundary_pairs(grid))
        pairs.extend(random_close_pairs(grid, seed))
    unique, seen = [], set()
    for pair in pairs:          # tiny grids collapse some pairs onto the same inputs
        key = (pair.first, pair.second)
        if key not in seen:
            seen.add(key)
            unique.append(pair)
    return unique


#: Distance between the two positions of a cross-boundary pair (metres; at most a tenth of a cell side).
BOUNDARY_GAP_M = 20.0


def _position(grid: Grid, col: float, row: float) -> AuditInput:
    """The input at a position given in cell units (column, row from the south-west corner)."""
    d = grid.side
    col, row = min(max(col, 0.0), float(d)), min(max(row, 0.0), float(d))
    c, r = min(int(col), d - 1), min(int(row), d - 1)
    return AuditInput(r * d + c, (col / d, row / d))


def boundary_pairs(grid: Grid, gap_m: float = BOUNDARY_GAP_M) -> list[AuditPair]:
    """Close real positions on either side of a cell boundary (Geo-I between real positions, issue 20).

    A mechanism that snaps positions to cell centres reports them as if a whole cell apart, while the
    guarantee allows only e^(epsilon x gap) (plus any slack the mechanism states). Two pairs: ``gap_m``
    apart across the east edge of the middle cell, and across its north-east corner (the diagonal, where
    snapping moves the two centres furthest apart). The gap is capped at a tenth of the cell side."""
    d = grid.side
    mid = (d - 1) // 2
    gap = min(gap_m / grid.cell_m, 0.1)
    half, diag = gap / 2.0, gap / (2.0 * math.sqrt(2.0))
    edge, corner = float(mid + 1), float(mid + 1)
    gap_text = f"{gap * grid.cell_m:.3g} m"
    return [AuditPair(f"{gap_text} apart across a cell edge", _position(grid, edge - half, mid + 0.5),
                      _position(grid, edge + half, mid + 0.5)),
            AuditPair(f"{gap_text} apart across a cell corner", _position(grid, corner - diag, corner - diag),
                      _position(grid, corner + diag, corner + diag))]


#: Gap between the two positions of each random close pair (cell sides): the chain of :func:`random_close_pairs`.
RANDOM_GAP_CELLS = 0.1


def random_close_pairs(grid: Grid, seed: int = 0, gap_cells: float = RANDOM_GAP_CELLS) -> list[AuditPair]:
    """Close pairs of real positions at a seeded random place: a chain of steps ``gap_cells`` long from a random
    start, in a random direction near the diagonal (40 to 50 degrees), long enough to cross a whole cell width
    along both axes; each step is one pair (issue 26).

    The cross-boundary pairs (:func:`boundary_pairs`) catch snapping to cell centres. A mechanism that rounds to
    a finer lattice -- quarter cells, say, whose lines lie inside the cells -- keeps both points of those pairs on
    one lattice point and passes them. The chain crosses every lattice line inside a cell, whatever its offset,
    and the step across a line shows a loss of about epsilon x (the lattice spacing) against a claim of epsilon x
    ``gap_cells``: 2.5 x the claim for quarter cells at a gap of a tenth of a cell. (Pairs at independent random
    places straddle a line only with probability about gap / spacing each: ten such audits of a quarter-cell
    rounding missed it 4 times in 10 with 8 pairs.) ``gap_cells`` is capped at a tenth of the grid."""
    d = grid.side
    rng = np.random.default_rng([int(seed), 0x26C105E])
    gap = min(float(gap_cells), 0.1 * d)
    angle = math.radians(rng.uniform(40.0, 50.0)) + (math.pi / 2 if rng.random() < 0.5 else 0.0)
    step_x, step_y = gap * math.cos(angle), gap * math.sin(angle)
    steps = int(math.ceil(1.0 / (gap * min(abs(math.cos(angle)), abs(math.sin(angle)))))) if d > 1 else 1
    span_x, span_y = abs(step_x) * steps, abs(step_y) * steps
    x0 = rng.uniform(0.0, max(d - span_x, 0.0)) + (span_x if step_x < 0 else 0.0)
    y0 = rng.uniform(0.0, max(d - span_y, 0.0))
    gap_text = f"{gap * grid.cell_m:.3g} m"
    out = []
    for k in range(steps):
        ax, ay = x0 + k * step_x, y0 + k * step_y
        out.append(AuditPair(f"{gap_text} apart at a random place ({ax + step_x / 2:.2f}, {ay + step_y / 2:.2f} "
                             "cells)", _position(grid, ax, ay), _position(grid, ax + step_x, ay + step_y)))
    return out
