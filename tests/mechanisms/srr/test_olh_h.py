"""OLH-H (L-SRR Sec. 6.2): hierarchy, constrained inference consistency and exactness, end-to-end run."""

import numpy as np
import pytest

from ldpviz import mechanisms
from ldpviz.geo.domain import Grid, Region
from ldpviz.mechanisms.srr import olh_h
from ldpviz.mechanisms.srr.staircase import grid_domain


def test_hierarchy_levels_nest():
    dom = grid_domain(Grid(Region(0, 0, 1000), 8))
    levels = olh_h.hierarchy(dom)
    assert [len(n) for n, _ in levels] == [4, 16, 64]


def test_constrained_inference_consistent_and_exact_without_noise():
    """Parents equal the sum of children after inference; noiseless inputs are returned unchanged."""
    dom = grid_domain(Grid(Region(0, 0, 1000), 8))
    levels = olh_h.hierarchy(dom)
    p = np.random.default_rng(0).dirichlet(np.ones(64))
    exact = [np.bincount(idx, weights=p, minlength=len(nodes)) for nodes, idx in levels]
    out = olh_h.constrained_inference(levels, exact, [1.0, 1.0, 1.0])
    for a, b in zip(out, exact):
        np.testing.assert_allclose(a, b, atol=1e-12)
    noisy = [e + np.random.default_rng(i).normal(0, 0.01, len(e)) for i, e in enumerate(exact)]
    out = olh_h.constrained_inference(levels, noisy, [1e-4] * 3)
    assert out[0].sum() == pytest.approx(1.0)
    for i in range(1, 3):
        parent = np.empty(len(levels[i][0]), dtype=np.int64)
        parent[levels[i][1]] = levels[i - 1][1]
        sums = np.bincount(parent, weights=out[i], minlength=len(out[i - 1]))
        np.testing.assert_allclose(sums, out[i - 1], atol=1e-12)


def test_inference_reduces_error():
    """Averaged over noise draws, consistent leaves are closer to the truth than the noisy leaves (Hay et al.)."""
    dom = grid_domain(Grid(Region(0, 0, 1000), 8))
    levels = olh_h.hierarchy(dom)
    p = np.random.default_rng(1).dirichlet(np.ones(64))
    exact = [np.bincount(idx, weights=p, minlength=len(nodes)) for nodes, idx in levels]
    rng = np.random.default_rng(2)
    raw_err = inf_err = 0.0
    for _ in range(50):
        noisy = [e + rng.normal(0, 0.01, len(e)) for e in exact]
        out = olh_h.constrained_inference(levels, noisy, [1e-4] * 3)
        raw_err += ((noisy[-1] - exact[-1]) ** 2).sum()
        inf_err += ((out[-1] - exact[-1]) ** 2).sum()
    assert inf_err < raw_err


def test_olh_h_runs_and_is_accurate_with_many_users():
    grid = Grid(Region(-93.26, 44.97, 10_000), 8)
    rng = np.random.default_rng(3)
    users = grid.bin_unit(np.clip(rng.normal(0.5, 0.2, size=(20_000, 2)), 0, 1))
    mech = mechanisms.create("olh-h", grid, 4.0, domain="grid")
    est = mech.run(users, np.random.default_rng(4))
    true = grid.histogram(users.cells)
    true /= true.sum()
    assert est.density.sum() == pytest.approx(1.0)
    uniform = np.full_like(true, 1 / true.size)
    assert np.abs(est.density - true).sum() < 0.5 * np.abs(uniform - true).sum()
