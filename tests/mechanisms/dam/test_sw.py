"""MDSW: Square Wave parameters, privacy of the bucketised channel, sampler, EMS convergence."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from ldpviz import mechanisms
from ldpviz.geo.domain import Binned, Grid, Region
from ldpviz.mechanisms.dam.square_wave import SquareWave1D, square_wave_radius


def grid(d: int) -> Grid:
    return Grid(Region(0.0, 45.0, 1000.0), d)


def in_cells(g: Grid, cells: np.ndarray, rng: np.random.Generator) -> Binned:
    """Users uniformly spread inside the given cells."""
    cells = np.asarray(cells, dtype=np.int64)
    r, c = np.divmod(cells, g.side)
    unit = np.column_stack([(c + rng.random(len(cells))) / g.side, (r + rng.random(len(cells))) / g.side])
    return Binned(cells, unit, 0)


def test_square_wave_radius():
    """b = (eps e^eps - e^eps + 1) / (2 e^eps (e^eps - 1 - eps)); -> 1/2 as eps -> 0, decreasing."""
    eps = 1.0
    e = math.e
    assert square_wave_radius(eps) == pytest.approx((eps * e - e + 1) / (2 * e * (e - 1 - eps)))
    assert square_wave_radius(1e-5) == pytest.approx(0.5, abs=1e-3)
    assert square_wave_radius(4.0) < square_wave_radius(1.0)


def test_continuous_sampler_density():
    """Noisy values: density p within b of v, q elsewhere on [-b, 1+b] (KS test against the CDF)."""
    sw = SquareWave1D(1.5, 10)
    v = 0.3
    noisy = sw.perturb(np.full(50_000, v), np.random.default_rng(2))
    b, p, q = sw.b, sw.p, sw.q

    def cdf(t):
        t = np.clip(t, -b, 1 + b)
        return q * (t + b) + (p - q) * np.clip(t - (v - b), 0, 2 * b)
    assert cdf(np.array(1 + b)) == pytest.approx(1.0)
    assert stats.kstest(noisy, cdf).pvalue > 1e-3


@pytest.mark.parametrize("split,bound", [("users", 1.0), ("budget", 1.0)])
@pytest.mark.parametrize("d,eps", [(1, 1.0), (4, 0.5), (8, 3.5), (12, 2.0)])
def test_channel_is_a_distribution_and_eps_ldp(split, bound, d, eps):
    """Columns sum to 1; max_y P(y|x)/P(y|x') <= e^eps for both splits."""
    P = mechanisms.create("mdsw", grid(d), eps, split=split).channel()
    assert np.allclose(P.sum(axis=0), 1.0, atol=1e-12)
    assert (P.max(axis=1) / P.min(axis=1)).max() <= math.exp(eps) * (1 + 1e-9)


@pytest.mark.parametrize("split", ["users", "budget"])
def test_sampler_follows_channel(split):
    """Chi-square of 40,000 reports from users uniform in three cells against the channel column."""
    g = grid(5)
    mech = mechanisms.create("mdsw", g, 2.0, split=split)
    P = mech.channel()
    rng = np.random.default_rng(5)
    for x in (0, 12, 23):
        reps = mech.perturb(in_cells(g, np.full(40_000, x), rng), rng)
        observed = np.bincount(reps, minlength=P.shape[0])
        keep = P[:, x] > 0
        assert stats.chisquare(observed[keep], P[keep, x] * len(reps)).pvalue > 1e-3


@pytest.mark.slow
@pytest.mark.parametrize("split", ["users", "budget"])
def test_ems_error_shrinks_with_n_on_a_product_distribution(split):
    """On an independent (product) distribution MDSW is consistent: error falls with n."""
    d = 8
    g = grid(d)
    mech = mechanisms.create("mdsw", g, 2.0, split=split, postprocess="em")
    px = np.exp(-((np.arange(d) - 2.5) ** 2) / 4)
    py = np.exp(-((np.arange(d) - 5) ** 2) / 6)
    truth = np.outer(py / py.sum(), px / px.sum())
    errors = []
    for n in (10_000, 100_000, 1_000_000):
        rng = np.random.default_rng(n)
        cells = rng.choice(d * d, size=n, p=truth.ravel())
        errors.append(np.abs(mech.estimate(mech.perturb(in_cells(g, cells, rng), rng)).density - truth).sum())
    assert errors[0] > errors[1] > errors[2]
    assert errors[2] < 0.4 * errors[0]  # 100x users: ~1/10 in theory


def test_estimate_is_product_of_marginals():
    """The 2-D estimate is an outer product: it has rank one, so correlation is lost."""
    g = grid(10)
    mech = mechanisms.create("mdsw", g, 3.5)
    rng = np.random.default_rng(0)
    diag = rng.integers(0, 10, 20_000)
    est = mech.estimate(mech.perturb(in_cells(g, diag * 10 + diag, rng), rng))
    s = np.linalg.svd(est.density, compute_uv=False)
    assert s[1] < 1e-10 * s[0]
    assert est.density.sum() == pytest.approx(1.0)


@pytest.mark.parametrize("postprocess", ["ems-fine", "ems", "em"])
def test_every_postprocessing_keeps_the_channel_epsilon_ldp(postprocess):
    """The channel over grid cells (users uniform in their cell) has columns summing to 1 and max ratio
    <= e^eps whatever the bucketisation the post-processing asks for (d = 6, eps = 2, users split)."""
    mech = mechanisms.create("mdsw", grid(6), 2.0, postprocess=postprocess)
    P = mech.channel()
    np.testing.assert_allclose(P.sum(axis=0), 1.0, atol=1e-9)
    assert (P.max(axis=1) / P.min(axis=1)).max() <= math.exp(2.0) * (1 + 1e-9)


def test_default_smooths_at_a_fine_resolution_not_the_grid():
    """Default is 'ems-fine' (SW-EMS at 256 buckets per axis, the paper's SW-EMS); on a 5 x 5 grid, where
    EMS at grid resolution blurs each step over a fifth of the range, its L1 error on a concentrated product
    distribution (100,000 users, eps = 3.5, seed 4) is below half of 'ems''s."""
    g = grid(5)
    rng = np.random.default_rng(4)
    px = np.array([0.02, 0.06, 0.84, 0.06, 0.02])
    truth = np.outer(px, px)
    cells = rng.choice(25, size=100_000, p=truth.ravel())
    users = in_cells(g, cells, rng)
    default = mechanisms.create("mdsw", g, 3.5)
    assert default.postprocess == "ems-fine" and default.sw.buckets == 256
    err = {}
    for pp in ("ems-fine", "ems"):
        mech = mechanisms.create("mdsw", g, 3.5, postprocess=pp)
        err[pp] = np.abs(mech.estimate(mech.perturb(users, np.random.default_rng(9))).density - truth).sum()
    assert err["ems-fine"] < 0.5 * err["ems"], err
