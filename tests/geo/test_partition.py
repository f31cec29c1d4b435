"""Partitions: area-proportional queries and conversion to grids."""

import numpy as np
import pytest

from ldpviz.geo.partition import Partition


def test_uniform_partition_tiles_and_converts_back():
    rng = np.random.default_rng(0)
    dens = rng.random((6, 6))
    p = Partition.uniform(dens)
    assert p.is_tiling()
    np.testing.assert_allclose(p.to_grid(6), dens)
    np.testing.assert_allclose(p.to_grid(3).sum(), dens.sum())
    np.testing.assert_allclose(p.to_grid(3)[0, 0], dens[:2, :2].sum())


def test_query_partial_overlap_by_hand():
    """Two rectangles [0,.5]x[0,1] mass 4 and [.5,1]x[0,1] mass 2; query [.25,.75]x[0,.5]."""
    p = Partition(np.array([[0, 0, 0.5, 1], [0.5, 0, 1, 1]]), np.array([4.0, 2.0]))
    # left piece: overlap area .25*.5=.125 of area .5 -> 1.0; right: .125/.5*2 = .5
    assert p.query(np.array([[0.25, 0, 0.75, 0.5]]))[0] == pytest.approx(1.5)


def test_adaptive_partition_to_finer_grid():
    p = Partition(np.array([[0, 0, 1, 0.5], [0, 0.5, 0.5, 1], [0.5, 0.5, 1, 1]]), np.array([2.0, 1.0, 1.0]))
    assert p.is_tiling()
    g = p.to_grid(2)
    np.testing.assert_allclose(g, [[1.0, 1.0], [1.0, 1.0]])


def test_overlapping_rectangles_are_not_a_tiling():
    p = Partition(np.array([[0, 0, 0.6, 1], [0.4, 0, 1, 1]]), np.ones(2))
    assert not p.is_tiling()


def test_large_partitions_are_processed_in_blocks(monkeypatch):
    """query and to_grid give the same results when the block budget forces one query / few pieces at a time."""
    import ldpviz.geo.partition as P
    rng = np.random.default_rng(3)
    part = Partition.uniform(rng.random((40, 40)))
    queries = np.sort(rng.random((50, 2, 2)), axis=1).transpose(0, 2, 1).reshape(50, 4)[:, [0, 2, 1, 3]]
    full_q, full_g = part.query(queries), part.to_grid(24)
    monkeypatch.setattr(P, "BLOCK_ENTRIES", 1000)
    np.testing.assert_allclose(part.query(queries), full_q, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(part.to_grid(24), full_g, rtol=1e-12, atol=1e-15)


def test_point_fractions_are_exact_counts_per_piece():
    """Noise-free masses: the share of points in each piece equals a direct half-open count, on an irregular
    tiling with points on piece edges and on the far edge 1 (which belongs to the last piece)."""
    rects = np.array([[0, 0, 0.3, 1], [0.3, 0, 1, 0.25], [0.3, 0.25, 0.65, 1], [0.65, 0.25, 1, 1]])
    part = Partition(rects, np.zeros(4))
    rng = np.random.default_rng(4)
    pts = np.vstack([rng.uniform(0, 1, (2000, 2)), [[0.3, 0.5], [1.0, 1.0], [0.65, 0.25], [0.0, 0.0]]])
    x, y = pts[:, 0], pts[:, 1]
    direct = [np.count_nonzero((x >= a) & ((x < c) | (c >= 1)) & (y >= b) & ((y < e) | (e >= 1)))
              for a, b, c, e in rects]
    np.testing.assert_allclose(part.point_fractions(pts), np.array(direct) / len(pts))
    assert part.point_fractions(pts).sum() == pytest.approx(1.0)


def test_grid_query_equals_the_general_rectangle_overlap():
    """On a regular d x d grid the separable answer (grid_query, and Partition.query's grid path) equals the
    general pairwise-overlap answer to round-off, for random queries and a signed (raw) density (seed 4)."""
    from ldpviz.geo.partition import Partition, grid_query, _overlap_1d
    rng = np.random.default_rng(4)
    for d in (3, 9, 17):
        dens = rng.normal(size=(d, d))
        q = np.sort(rng.random((40, 2, 2)), axis=1).reshape(40, 4)   # (lo, hi) x (x, y): x0, y0, x1, y1
        part = Partition.uniform(dens)
        r = part.rects
        ox = _overlap_1d(r[None, :, 0], r[None, :, 2], q[:, None, 0], q[:, None, 2])
        oy = _overlap_1d(r[None, :, 1], r[None, :, 3], q[:, None, 1], q[:, None, 3])
        general = (ox * oy) @ (part.mass / part.areas)
        np.testing.assert_allclose(grid_query(dens, q), general, atol=1e-12)
        np.testing.assert_allclose(part.query(q), general, atol=1e-12)
        assert part.grid_side() == d
    irregular = Partition(np.array([[0, 0, 0.5, 1], [0.5, 0, 1, 1]]), np.array([1.0, 2.0]))
    assert irregular.grid_side() is None
