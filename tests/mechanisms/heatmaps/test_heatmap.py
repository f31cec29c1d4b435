"""Central-DP heatmap mechanisms (dp-heatmap, laplace, laplace-top), per-user distributions, the
Gaussian heatmap filter (dp-heatmaps-sparse-emd.md Sec. 2.3, 3, 4)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp

from ldpviz import mechanisms
from ldpviz.mechanisms.heatmaps import pyramid
from ldpviz.cli.commands import main as cli_main
from ldpviz.geo.domain import Grid, Region
from ldpviz.errors import LdpvizInputError
from ldpviz.mechanisms.heatmaps import dp_heatmap as hm
from ldpviz.mechanisms.base import CENTRAL_DP

REGION = Region(0.0, 0.0, 10_000.0)
NAMES = ("dp-heatmap", "laplace", "laplace-top")


def clustered_users(grid: Grid, n: int, seed: int):
    rng = np.random.default_rng(seed)
    centres = rng.uniform(0.2, 0.8, (4, 2))
    uv = np.clip(centres[rng.integers(4, size=n)] + rng.normal(0, 0.03, (n, 2)), 0, 1)
    return grid.bin_unit(uv)


@pytest.mark.parametrize("name", NAMES)
def test_registered_as_central_dp(name):
    cls = mechanisms.get(name)
    assert cls.privacy_model == CENTRAL_DP
    assert cls.has_client is False
    assert "central" in cls.summary.lower() and "central" in cls.label.lower()
    mech = mechanisms.create(name, Grid(REGION, 16), 1.0)
    assert "central DP" in mech.guarantee() and "trusted aggregator" in mech.guarantee()


@pytest.mark.parametrize("side", [100, 3, 48, 1000])
def test_dp_heatmap_refuses_non_power_of_two(side):
    with pytest.raises(LdpvizInputError) as err:
        mechanisms.create("dp-heatmap", Grid(REGION, side), 1.0)
    assert str(err.value) == (f"dp-heatmap needs the grid side d to be a power of two (e.g. 64, 128, 256); "
                              f"got {side}")


@pytest.mark.parametrize("name", ["laplace", "laplace-top"])
def test_laplace_baselines_accept_any_side(name):
    est = mechanisms.create(name, Grid(REGION, 100), 1.0).run(clustered_users(Grid(REGION, 100), 50, 0),
                                                              np.random.default_rng(0))
    assert est.density.shape == (100, 100)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("side", [1, 2, 16, 64])
def test_run_returns_a_distribution_and_is_seeded(name, side):
    grid = Grid(REGION, side)
    users = clustered_users(grid, 200, 1)
    mech = mechanisms.create(name, grid, 2.0)
    a = mech.run(users, np.random.default_rng(5))
    b = mech.run(users, np.random.default_rng(5))
    assert a.density.shape == (side, side)
    assert a.density.min() >= 0 and math.isclose(a.density.sum(), 1.0, rel_tol=1e-12)
    np.testing.assert_array_equal(a.density, b.density)
    assert a.info["users"] == 200


def test_dp_heatmap_run_equals_reconstruct_of_measurements():
    """run() = normalise(RECONSTRUCT(Algorithm 1 release)): nothing but the release reaches the output."""
    grid = Grid(REGION, 64)
    users = clustered_users(grid, 300, 2)
    est = mechanisms.create("dp-heatmap", grid, 1.0, width=20).run(users, np.random.default_rng(9))
    released = pyramid.measure(grid.histogram(users.cells), 1.0, np.random.default_rng(9), width=20)
    rec = pyramid.reconstruct(released, 20).estimate
    np.testing.assert_allclose(est.density, rec / rec.sum(), atol=1e-12)
    assert math.isclose(sum(est.info["level_epsilons"]), 1.0, rel_tol=1e-5)


def test_laplace_noise_scale_and_zeroed_negatives():
    """laplace: raw = histogram + Lap(1/eps) per cell (l1 sensitivity 1); density = max(raw, 0) normalised."""
    grid = Grid(REGION, 64)
    users = clustered_users(grid, 200, 3)
    eps = 0.5
    est = mechanisms.create("laplace", grid, eps).run(users, np.random.default_rng(4))
    noise = est.raw - grid.histogram(users.cells)
    # |Lap(b)| / b ~ Exp(1): mean 1 with standard error 1 / sqrt(4096); allow 4 standard errors.
    assert abs(np.mean(np.abs(noise)) * eps - 1) < 4 / 64
    kept = np.maximum(est.raw, 0)
    np.testing.assert_allclose(est.density, kept / kept.sum(), atol=1e-15)
    assert np.all(est.density[est.raw <= 0] == 0)


@pytest.mark.parametrize("top_percent,side,expected", [(0.01, 256, 7), (0.001, 256, 1), (0.01, 64, 1),
                                                        (1.0, 64, 41), (100.0, 8, 64)])
def test_laplace_top_keeps_the_largest_noisy_cells(top_percent, side, expected):
    grid = Grid(REGION, side)
    users = clustered_users(grid, 200, 5)
    est = mechanisms.create("laplace-top", grid, 5.0, top_percent=top_percent).run(users,
                                                                                   np.random.default_rng(1))
    assert est.info["cells_kept"] == expected
    positive = est.density > 0
    assert positive.sum() <= expected
    # every kept cell's noisy value is at least every dropped positive cell's
    dropped = (~positive) & (est.raw > 0)
    if dropped.any() and positive.any():
        assert est.raw[positive].min() >= est.raw[dropped].max()


def test_parameters_validated():
    grid = Grid(REGION, 16)
    with pytest.raises(LdpvizInputError, match="width"):
        mechanisms.create("dp-heatmap", grid, 1.0, width=0)
    with pytest.raises(LdpvizInputError, match="gamma"):
        mechanisms.create("dp-heatmap", grid, 1.0, gamma=0.2)
    with pytest.raises(LdpvizInputError, match="top_percent"):
        mechanisms.create("laplace-top", grid, 1.0, top_percent=0)


# ---- per-user distributions -------------------------------------------------------------------

def test_user_histograms_are_normalised_per_user():
    users = np.array(["a", "b", "a", "a", "c", "b"])
    cells = np.array([0, 5, 0, 3, 15, 6])
    H = hm.user_histograms(users, cells, 16)
    assert H.shape == (3, 16)
    np.testing.assert_allclose(np.asarray(H.sum(axis=1)).ravel(), 1.0)
    np.testing.assert_allclose(H.toarray()[0, [0, 3]], [2 / 3, 1 / 3])


def test_distribution_inputs_agree_and_sum():
    """Sparse matrix, dense matrix and list of (d, d) arrays give the same aggregate and the same output."""
    side = 16
    rng = np.random.default_rng(0)
    checkin_user = rng.integers(0, 40, 300)
    checkin_cell = rng.integers(0, side * side, 300)
    H = hm.user_histograms(checkin_user, checkin_cell, side * side)
    as_list = [row.reshape(side, side) for row in H.toarray()]
    total, n = hm.aggregate_distributions(H, side)
    assert n == H.shape[0]
    np.testing.assert_allclose(total.ravel(), np.asarray(H.sum(axis=0)).ravel())
    for form in (H, H.toarray(), as_list):
        t, _ = hm.aggregate_distributions(form, side)
        np.testing.assert_allclose(t, total)
        density, info = hm.dp_heatmap(form, side, 1.0, np.random.default_rng(3))
        ref, _ = hm.dp_heatmap(H, side, 1.0, np.random.default_rng(3))
        np.testing.assert_allclose(density, ref)
        d2, noisy, _ = hm.laplace_heatmap(form, side, 1.0, np.random.default_rng(3), top_percent=5.0)
        assert d2.shape == (side, side) and math.isclose(d2.sum(), 1.0)


def test_indicator_users_equal_point_users():
    """A point is its indicator distribution: the function API on indicators equals the mechanism's run."""
    grid = Grid(REGION, 32)
    users = clustered_users(grid, 120, 6)
    indicators = sp.csr_matrix((np.ones(120), (np.arange(120), users.cells)), shape=(120, 1024))
    via_api, _ = hm.dp_heatmap(indicators, 32, 1.5, np.random.default_rng(2))
    via_run = mechanisms.create("dp-heatmap", grid, 1.5).run(users, np.random.default_rng(2)).density
    np.testing.assert_allclose(via_api, via_run)


def test_distributions_must_have_l1_norm_at_most_one():
    side = 4
    with pytest.raises(LdpvizInputError, match="sum to at most 1"):
        hm.aggregate_distributions(np.full((3, 16), 0.1), side)
    with pytest.raises(LdpvizInputError, match="non-negative"):
        hm.aggregate_distributions(np.array([[-0.5, 1.5] + [0] * 14]), side)
    with pytest.raises(LdpvizInputError, match="16 columns|16 cells"):
        hm.aggregate_distributions(np.ones((2, 9)) / 9, side)
    with pytest.raises(LdpvizInputError, match="power of two"):
        hm.dp_heatmap(np.ones((2, 9)) / 9, 3, 1.0, np.random.default_rng(0))


def test_multi_checkin_user_has_sensitivity_one():
    """Adding one multi-check-in user changes every level's sums by l1 exactly 1 (the proof's sensitivity)."""
    side = 16
    H = hm.user_histograms(np.array([0, 0, 0, 1]), np.array([3, 200, 77, 5]), side * side)
    with_user, _ = hm.aggregate_distributions(H, side)
    without, _ = hm.aggregate_distributions(H[1:], side)
    for level in range(0, 5):
        diff = pyramid.level_sums(with_user, level) - pyramid.level_sums(without, level)
        assert math.isclose(np.abs(diff).sum(), 1.0, rel_tol=1e-12)


# ---- heatmap filter (Sec. 2.3) ---------------------------------------------------------------------

def direct_heatmap(p: np.ndarray, sigma: float) -> np.ndarray:
    d = p.shape[0]
    out = np.zeros_like(p)
    pts = [(r, c) for r in range(d) for c in range(d)]
    for (r2, c2) in pts:                     # source (x', y')
        z = sum(math.exp(-((r - r2) ** 2 + (c - c2) ** 2) / (2 * sigma ** 2)) for r, c in pts)
        for (r, c) in pts:
            out[r, c] += math.exp(-((r - r2) ** 2 + (c - c2) ** 2) / (2 * sigma ** 2)) / z * p[r2, c2]
    return out


@pytest.mark.parametrize("sigma", [0.5, 1.0, 3.0])
def test_heatmap_matches_sec_2_3_formula(sigma):
    rng = np.random.default_rng(1)
    p = rng.random((7, 7))
    np.testing.assert_allclose(hm.heatmap(p, sigma), direct_heatmap(p, sigma), rtol=1e-10, atol=1e-14)


def test_heatmap_preserves_mass_and_identity_at_zero():
    p = np.zeros((64, 64))
    p[0, 0] = 0.3
    p[40, 17] = 0.7
    h = hm.heatmap(p, 4.0)
    assert math.isclose(h.sum(), 1.0, rel_tol=1e-12) and h.min() >= 0
    assert h[40, 17] == h[30:50, 7:27].max()   # (the corner source is sharper: truncated, renormalised)
    np.testing.assert_array_equal(hm.heatmap(p, 0.0), p)
    with pytest.raises(LdpvizInputError):
        hm.heatmap(p, -1.0)


# ---- CLI ---------------------------------------------------------------------------------------------

def test_cli_runs_dp_heatmap_and_refuses_bad_grid(capsys):
    assert cli_main(["run", "--dataset", "gmm", "--mechanism", "dp-heatmap", "--grid", "64",
                     "--users", "200", "--epsilon", "1"]) == 0
    assert "central DP" in capsys.readouterr().out
    assert cli_main(["run", "--dataset", "gmm", "--mechanism", "dp-heatmap", "--grid", "100",
                     "--users", "200"]) == 2
    assert "power of two (e.g. 64, 128, 256); got 100" in capsys.readouterr().err
