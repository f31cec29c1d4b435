"""DAM, DAM-NS and HUEM: geometry against the paper, privacy, sampler, EM convergence."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from ldpviz import mechanisms
from ldpviz.geo.domain import Binned, Grid, Region
from ldpviz.errors import LdpvizInputError
from ldpviz.mechanisms.estimation import binomial_smooth, em_stopping_rule, expectation_maximisation
from ldpviz.mechanisms.dam.kernels import DiskChannel, dam_weights, huem_continuous_q, huem_weights, optimal_radius

DISK = ("dam", "dam-ns", "huem")


def grid(d: int) -> Grid:
    return Grid(Region(0.0, 45.0, 1000.0), d)


def users(cells: np.ndarray) -> Binned:
    return Binned(np.asarray(cells, dtype=np.int64), np.zeros((len(cells), 2)), 0)


# ---- eq. (12) -----------------------------------------------------------------
def test_optimal_radius_matches_paper_values():
    """eps = 3.5, L = 15 cells gives b = 3.499 ('about 3', Sec. VII-C1); eps -> 0 the stated limit."""
    assert optimal_radius(3.5, 15) == pytest.approx(3.499, abs=1e-3)
    assert optimal_radius(1e-6, 1.0) == pytest.approx((2 + math.sqrt(4 + math.pi)) / math.pi, rel=1e-4)
    assert optimal_radius(20.0, 1.0) < 0.01
    # b maximises the bound g(b) of eq. (11): check against a dense scan
    eps, L = 2.0, 10.0
    b = np.linspace(0.01, 20, 200001)
    e = math.exp(eps)
    g = np.log((np.pi * b**2 + 4 * L * b + L**2) / (np.pi * b**2 * e + 4 * L * b + L**2)) + \
        np.pi * b**2 * e * eps / (np.pi * b**2 * e + 4 * L * b + L**2)
    assert optimal_radius(eps, L) == pytest.approx(b[np.argmax(g)], abs=1e-3)


# ---- discrete footprint (Sec. VI-A) ------------------------------------------
def _strict_quarter(b: int):
    high, footprint = dam_weights(b)
    pure, mixed = [], []
    for y in range(1, b + 1):
        for x in range(y + 1, b + 1):
            if x * x + y * y <= b * b:
                pure.append((x, y))
            elif footprint[b + y, b + x]:
                mixed.append((x, y))
    return high, pure, mixed


def test_fig6_worked_example():
    """b_hat = 7: the strict quarter (0, pi/4) holds 13 pure-high and 4 mixed cells (Fig. 6)."""
    high, pure, mixed = _strict_quarter(7)
    assert len(pure) == 13
    assert sorted(mixed) == [(6, 4), (7, 1), (7, 2), (7, 3)]
    # Theorem VI.1 areas, clamped: (7, 3) is crossed but its shrunken rectangle is empty
    assert high[7 + 3, 7 + 7] == 0.0
    assert 0 < high[7 + 1, 7 + 7] < 1 and 0 < high[7 + 4, 7 + 6] < 1


@pytest.mark.parametrize("b", range(1, 16))
def test_total_high_area_matches_eq14_normalisation(b):
    """Our cell-by-cell high area equals S_H of Sec. VI-A (axes, diagonal eq. 14, 8 strict octants)."""
    high, pure, mixed = _strict_quarter(b)
    bp = b / math.sqrt(2) - 0.5
    bh = math.floor(bp)
    s_diag = 4 * (bp - bh) ** 2 if bp - bh < 0.5 else 1.0
    s_high = 1 + 4 * (b + bh + s_diag) + 8 * (len(pure) + sum(high[b + y, b + x] for x, y in mixed))
    assert high.sum() == pytest.approx(s_high, abs=1e-9)


@pytest.mark.parametrize("b", range(1, 16))
def test_theorems_vi3_vi4_cross_check(b):
    """Theorem VI.4 counts the strict quarter's cells (pure + mixed); Theorem VI.3's row cells are
    the crossed cells of each row, which contain all our mixed cells (its extra ones have centres inside)."""
    _, pure, mixed = _strict_quarter(b)
    c = math.ceil(b / math.sqrt(2) - 0.5)
    r1 = math.floor(b / math.sqrt(2) - 0.5) * math.sqrt(2) + 1 / math.sqrt(2)
    r = math.sqrt(r1 * r1 + 1 + math.sqrt(2) * r1)
    n_m = c - math.floor(r / b)
    rows = [(math.ceil(math.sqrt(b * b - (i - 0.5) ** 2) - 0.5), i) for i in range(1, n_m + 1)]
    n_p = 0.5 * c * (c - 2 * n_m - 1) + sum(x for x, _ in rows)
    assert n_p == len(pure) + len(mixed)
    assert set(mixed) <= set(rows)
    assert all(x * x + y * y <= b * b for x, y in set(rows) - set(mixed))


@pytest.mark.parametrize("d,b", [(1, 3), (5, 2), (15, 3), (8, 7)])
def test_output_domain_size_theorem_vi2(d, b):
    """|output domain| = |footprint| + d^2 + 4 b d - 4 b - 1 (Theorem VI.2's pure-low area)."""
    high, footprint = dam_weights(b)
    chan = DiskChannel(d, 1 + high, footprint)
    assert chan.n_outputs == footprint.sum() + d * d + 4 * b * d - 4 * b - 1


def test_huem_weights_are_rings():
    """Appendix A: ring k holds e^{(1-(k-1)/b) eps}, outside 1; border cells lie between rings."""
    eps, b = 2.0, 4
    w, footprint = huem_weights(b, eps)
    assert w[b, b] == pytest.approx(math.exp(eps))
    assert w[b, b + 1] == pytest.approx(math.exp(eps))            # distance 1: ring 1
    assert w[b, b + 2] == pytest.approx(math.exp(0.75 * eps))     # distance 2: ring 2
    assert w[b, b + 4] == pytest.approx(math.exp(0.25 * eps))     # on circle 4: ring 4
    assert np.all(w >= 1 - 1e-12) and np.all(w <= math.exp(eps) + 1e-9)
    assert np.all(w[~footprint] == 1.0)
    # continuous q of Def. 5 (L = 1) and its eps -> 0 limit
    assert huem_continuous_q(1e-6, 0.5) == pytest.approx(1 / (math.pi * 0.25 + 2 + 1), rel=1e-4)


# ---- privacy ---------------------------------------------------------------------
@pytest.mark.parametrize("name", DISK)
@pytest.mark.parametrize("d,eps,params", [(1, 1.0, {}), (2, 0.5, {}), (5, 2.0, {}), (8, 3.5, {}),
                                          (6, 5.0, {"radius": 4.0}), (7, 1.0, {"radius_factor": 0.33}),
                                          (4, 8.0, {"radius": 0})])
def test_channel_is_a_distribution_and_eps_ldp(name, d, eps, params):
    """Every column sums to 1 and max_y P(y|x)/P(y|x') <= e^eps (Def. 1)."""
    P = mechanisms.create(name, grid(d), eps, **params).channel()
    assert np.all(P >= 0)
    assert np.allclose(P.sum(axis=0), 1.0, atol=1e-12)
    ratio = (P.max(axis=1) / P.min(axis=1)).max()
    assert ratio <= math.exp(eps) * (1 + 1e-9)


@pytest.mark.parametrize("name", DISK)
def test_fft_maps_match_dense_channel(name):
    """forward = P f and adjoint = P^T r on the output domain."""
    mech = mechanisms.create(name, grid(9), 2.0)
    P = mech.channel()
    rng = np.random.default_rng(1)
    f = rng.random((9, 9))
    f /= f.sum()
    assert np.allclose(mech.chan.forward(f).ravel()[mech.output_cells()], P @ f.ravel(), atol=1e-13)
    assert np.allclose(mech.chan.forward(f).sum(), 1.0)
    r = np.zeros(mech.chan.out_side ** 2)
    r[mech.output_cells()] = rng.random(P.shape[0])
    assert np.allclose(mech.chan.adjoint(r.reshape(mech.chan.out_side, -1)).ravel(),
                       P.T @ r[mech.output_cells()], atol=1e-12)


@pytest.mark.parametrize("name", DISK)
def test_sampler_follows_channel(name):
    """Chi-square of 40,000 reports from three input cells against the declared column (p > 1e-3)."""
    mech = mechanisms.create(name, grid(6), 2.5)
    P = mech.channel()
    index = {int(c): i for i, c in enumerate(mech.output_cells())}
    rng = np.random.default_rng(7)
    for x in (0, 14, 35):
        reps = mech.perturb(users(np.full(40_000, x)), rng)
        rows = np.array([index[int(r)] for r in reps])
        observed = np.bincount(rows, minlength=P.shape[0])
        expected = P[:, x] * len(reps)
        assert stats.chisquare(observed, expected).pvalue > 1e-3


# ---- estimation ----------------------------------------------------------------
def _blob(d: int) -> np.ndarray:
    r, c = np.mgrid[0:d, 0:d]
    f = np.exp(-((r - 0.6 * d) ** 2 + (c - 0.4 * d) ** 2) / (2 * (0.2 * d) ** 2))
    return f / f.sum()


@pytest.mark.slow
@pytest.mark.parametrize("name", DISK)
def test_em_error_shrinks_like_root_n(name):
    """L1 error of the EM estimate falls roughly like 1/sqrt(n) (x10 users -> error / ~3): the
    maximum-likelihood estimate (EM run to convergence) is consistent."""
    d = 8
    mech = mechanisms.create(name, grid(d), 2.0, postprocess="em")
    truth = _blob(d)
    errors = []
    for n in (10_000, 100_000, 1_000_000):
        errs = []
        for seed in range(2):
            rng = np.random.default_rng(seed)
            cells = rng.choice(d * d, size=n, p=truth.ravel())
            with em_stopping_rule("converged"):
                est = mech.estimate(mech.perturb(users(cells), rng))
            errs.append(np.abs(est.density - truth).sum())
        errors.append(np.mean(errs))
    assert errors[0] > errors[1] > errors[2]
    assert errors[2] < 0.5 * errors[0], errors  # 100x users: 1/10 in theory; EM's stopping rule costs some


def test_ems_estimate_is_a_distribution_with_info():
    mech = mechanisms.create("dam", grid(15), 3.5)
    rng = np.random.default_rng(0)
    cells = rng.choice(225, size=50_000, p=_blob(15).ravel())
    est = mech.estimate(mech.perturb(users(cells), rng))
    assert est.density.shape == (15, 15)
    assert est.density.sum() == pytest.approx(1.0) and est.density.min() >= 0
    assert est.info["radius_cells"] == 3 and est.info["reports"] == 50_000
    assert est.info["p_hat"] / est.info["q_hat"] == pytest.approx(math.exp(3.5))
    assert est.info["converged"]
    assert est.info["reports_outside_region"] > 0


def test_radius_parameters():
    g = grid(15)
    assert mechanisms.create("dam", g, 3.5).radius_cells == 3
    assert mechanisms.create("dam", g, 3.5, radius_factor=1.67).radius_cells == 5
    assert mechanisms.create("dam", g, 3.5, radius=6.9).radius_cells == 6
    with pytest.raises(LdpvizInputError):
        mechanisms.create("dam", g, 3.5, radius=-1)
    with pytest.raises(LdpvizInputError):
        mechanisms.create("dam", g, 3.5, postprocess="magic")


def test_binomial_smooth_and_em_exact_channel():
    """Smoothing keeps mass; EM on exact expected counts of an invertible channel recovers the input."""
    f = np.arange(12.0).reshape(3, 4)
    assert binomial_smooth(f).sum() == pytest.approx(f.sum())
    P = np.array([[0.7, 0.2], [0.3, 0.8]])
    truth = np.array([0.25, 0.75])
    est, info = expectation_maximisation(P @ truth * 1e6, lambda v: P @ v, lambda r: P.T @ r, (2,),
                                         smoothing=False, rule="converged")
    assert np.allclose(est, truth, atol=1e-4)


# ---------------------------------------------------------------- output domain and HUEM weights at scale
def _support_brute_force(side: int, footprint: np.ndarray) -> np.ndarray:
    R = (footprint.shape[0] - 1) // 2
    box = np.zeros((side + 2 * R, side + 2 * R), bool)
    for r in range(side):
        for c in range(side):
            box[r:r + 2 * R + 1, c:c + 2 * R + 1] |= footprint
    return box


def test_output_support_is_the_minkowski_sum() -> None:
    """kernels.output_support equals the union of every input's footprint: disks (direct formula) and
    arbitrary footprints (FFT path), on several grids."""
    from ldpviz.mechanisms.dam.kernels import output_support
    rng = np.random.default_rng(0)
    for side in (1, 2, 5, 12):
        for b in (0, 1, 3, 7):
            for shrink in (True, False):
                footprint = dam_weights(b, shrink)[1]
                assert np.array_equal(output_support(side, footprint), _support_brute_force(side, footprint))
            if b:
                footprint = rng.random((2 * b + 1, 2 * b + 1)) < 0.3
                assert np.array_equal(output_support(side, footprint), _support_brute_force(side, footprint))


def _huem_weights_by_nested_disks(b: int, epsilon: float) -> np.ndarray:
    """Appendix A summed literally over the b nested DAM disks (the former O(b^3) construction)."""
    weight = np.ones((2 * b + 1, 2 * b + 1))
    if b == 0:
        return weight * math.exp(epsilon)
    levels = [math.exp((1.0 - (k - 1) / b) * epsilon) for k in range(1, b + 1)] + [1.0]
    for k in range(1, b + 1):
        s_k, _ = dam_weights(k, shrink=True)
        weight[b - k:b + k + 1, b - k:b + k + 1] += (levels[k - 1] - levels[k]) * s_k
    return weight


@pytest.mark.parametrize("epsilon", [0.01, 1.0, 5.0])
def test_huem_weights_match_nested_disk_sum(epsilon: float) -> None:
    """The O(b^2) HUEM weights equal the nested-disk sum of Appendix A for every radius up to 40."""
    for b in range(0, 41):
        np.testing.assert_allclose(huem_weights(b, epsilon)[0], _huem_weights_by_nested_disks(b, epsilon),
                                   rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", ["dam", "huem"])
@pytest.mark.parametrize("side,params", [(256, {}), (16, {"radius": 128.0}), (128, {"radius": 1024.0})])
def test_large_grids_and_radii_run(name: str, side: int, params: dict) -> None:
    """Large grids (d = 256, the default radius) and the largest radii (8 grid sides; 1,024 cells) run in modest
    memory and give a distribution (they exhausted memory through a binary dilation before)."""
    grid = Grid(Region(0, 0, 10_000), side)
    users = grid.bin_unit(np.clip(np.random.default_rng(1).normal(0.5, 0.1, (2000, 2)), 0, 1))
    with em_stopping_rule("legacy"):   # memory is the point here; converged EM on 65,536 cells takes minutes
        est = mechanisms.create(name, grid, 1.0, **params).run(users, np.random.default_rng(2))
    assert est.density.shape == (side, side) and est.density.sum() == pytest.approx(1.0)


@pytest.mark.parametrize("name", ["dam", "dam-ns", "huem"])
def test_a_radius_beyond_eight_grid_sides_is_refused_with_the_reason(name: str) -> None:
    """A disk of more than 8 d (radius_factor 20 at eps = 1 on 16 x 16: 270 cells) puts a report anywhere in a box
    hundreds of times the region: refused, saying so and naming the largest radius accepted; 8 d itself runs."""
    grid = Grid(Region(0, 0, 10_000), 16)
    for params in ({"radius_factor": 20.0}, {"radius": 129.0}, {"radius": 1024.0}):
        with pytest.raises(LdpvizInputError, match="more than 8 times the grid's side .* at most 128 cells"):
            mechanisms.create(name, grid, 1.0, **params)
    assert mechanisms.create(name, grid, 1.0, radius=128.0).radius_cells == 128
