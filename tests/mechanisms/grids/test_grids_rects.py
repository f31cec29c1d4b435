"""TwoLevelGrid.rects, vectorised (issue 28: AAG's goal seek spent most of its time building them cell by cell):
the same rectangles, bit for bit, as the per-cell construction (grid paper, Algorithm 3's second level)."""

from __future__ import annotations

import numpy as np
import pytest

from ldpviz.mechanisms.grids import decompositions as dc


def _per_cell(grid: dc.TwoLevelGrid) -> np.ndarray:
    """The reference: each first-level cell's sub-cells from its own edges, row by row (np.meshgrid order)."""
    g1, out = grid.first_side, []
    for k, (xc, yc) in enumerate(zip(grid.x_cuts, grid.y_cuts)):
        row, col = divmod(k, g1)
        xe = (col + np.concatenate([[0.0], xc, [1.0]])) / g1
        ye = (row + np.concatenate([[0.0], yc, [1.0]])) / g1
        x0, y0 = np.meshgrid(xe[:-1], ye[:-1])
        x1, y1 = np.meshgrid(xe[1:], ye[1:])
        out.append(np.column_stack([x0.ravel(), y0.ravel(), x1.ravel(), y1.ravel()]))
    return np.concatenate(out)


@pytest.mark.parametrize("g1", [1, 2, 7, 30])
def test_rects_equal_the_per_cell_construction(g1):
    rng = np.random.default_rng(g1)
    grid = dc.aag_grid(rng.random((g1, g1)), rng.integers(1, 9, g1 * g1))
    got = grid.rects()
    np.testing.assert_array_equal(got, _per_cell(grid))
    assert got.shape == (grid.n_cells, 4)
    # rectangles tile the unit square: positive sides, total area 1, and locate() finds each centre in its own
    assert np.all(got[:, 2] > got[:, 0]) and np.all(got[:, 3] > got[:, 1])
    assert np.sum((got[:, 2] - got[:, 0]) * (got[:, 3] - got[:, 1])) == pytest.approx(1.0)
    centres = np.column_stack([(got[:, 0] + got[:, 2]) / 2, (got[:, 1] + got[:, 3]) / 2])
    np.testing.assert_array_equal(grid.locate(centres), np.arange(grid.n_cells))


def test_rects_of_cells_without_cuts():
    """A first-level cell with no cuts is one rectangle."""
    grid = dc.TwoLevelGrid(2, (np.array([]), np.array([0.5]), np.array([]), np.array([0.25, 0.5])),
                           (np.array([]), np.array([]), np.array([0.5]), np.array([0.75])))
    np.testing.assert_array_equal(grid.rects(), _per_cell(grid))
