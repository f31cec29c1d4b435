"""SRR's effective resolution (ldpviz.mechanisms.srr.resolution): the blocks its channel can tell apart, and the
baselines."""

import numpy as np
import pytest

from ldpviz import mechanisms
from ldpviz.geo.domain import Grid, Region
from ldpviz.mechanisms.srr.resolution import class_histogram, effective_resolution, uniform_over_domain


def _users(grid: Grid, n: int = 3_000, seed: int = 2):
    rng = np.random.default_rng(seed)
    pts = np.clip(np.concatenate([rng.normal(0.3, 0.08, (n // 2, 2)), rng.uniform(0, 1, (n - n // 2, 2))]), 0, 1)
    return grid.bin_unit(pts)


@pytest.mark.parametrize("epsilon", [1.0, 5.0])
def test_blocks_are_exactly_the_distinct_channel_columns(epsilon):
    """On the public grid domain, the number of blocks equals the number of distinct columns of SRR's explicit
    channel over the cells, and two cells share a block iff their columns are identical."""
    grid = Grid(Region(0, 0, 8_000), 16)
    mech = mechanisms.create("srr", grid, epsilon)
    res = effective_resolution(mech)
    P = mech.channel()
    _, column_class = np.unique(np.round(P.T, 14), axis=0, return_inverse=True)
    assert res.n_classes == len(np.unique(column_class)) and res.domain_size == grid.n_cells
    labels = res.cell_class.ravel()
    same_block = labels[:, None] == labels[None, :]
    same_column = column_class.ravel()[:, None] == column_class.ravel()[None, :]
    assert np.array_equal(same_block, same_column)
    assert 1 < res.n_classes < grid.n_cells and f"{res.n_classes:,} distinct blocks" in res.sentence()


def test_class_histogram_is_the_truth_averaged_within_blocks():
    """The noise-free baseline keeps every block's true total and is flat inside each block; the data-free
    baseline is uniform over the public grid domain."""
    grid = Grid(Region(0, 0, 8_000), 16)
    users = _users(grid)
    mech = mechanisms.create("srr", grid, 3.0)
    res = effective_resolution(mech, users)
    est = class_histogram(mech, users).ravel()
    truth = grid.histogram(users.cells).ravel() / len(users.cells)
    labels = res.cell_class.ravel()
    for block in range(res.n_classes):
        members = labels == block
        assert est[members].sum() == pytest.approx(truth[members].sum())
        assert np.ptp(est[members]) == pytest.approx(0.0, abs=1e-15)
    np.testing.assert_allclose(uniform_over_domain(mech), np.full((16, 16), 1 / 256))


def test_occupied_domain_resolution_needs_the_users_and_labels_only_occupied_cells():
    """With the paper's occupied domain the blocks are counted on the users' tiles; cells without a tile are -1."""
    grid = Grid(Region(0, 0, 8_000), 16)
    users = _users(grid, n=400)
    mech = mechanisms.create("srr", grid, 3.0, domain="occupied")
    res = effective_resolution(mech, users)
    assert res.domain_size == len(res.class_of) and res.class_size.sum() == res.domain_size
    assert set(np.unique(res.cell_class)) <= set(range(-1, res.n_classes))
    assert (res.cell_class >= 0).sum() <= len(np.unique(users.cells))
