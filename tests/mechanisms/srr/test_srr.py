"""SRR (L-SRR Sec. 3): privacy (Thm 3.3), staircase structure, groups, sampler, Hadamard estimation."""

import math

import numpy as np
import pytest
import scipy.linalg
from scipy import stats

from ldpviz import mechanisms
from ldpviz.geo import quadkey
from ldpviz.geo.domain import Grid, Region
from ldpviz.errors import LdpvizInputError
from ldpviz.mechanisms.srr import staircase as S


def random_domain(n_codes: int, bits: int, seed: int) -> S.LocationDomain:
    """A clustered random domain of distinct codes (mimics occupied tiles)."""
    rng = np.random.default_rng(seed)
    centres = rng.integers(0, 1 << bits, 5)
    codes = np.unique(np.clip(centres[rng.integers(0, 5, n_codes * 3)] +
                              rng.integers(-(1 << (bits - 5)), 1 << (bits - 5), n_codes * 3), 0, (1 << bits) - 1))
    codes = np.sort(rng.choice(codes, size=min(n_codes, len(codes)), replace=False))
    return S.LocationDomain(codes=codes.astype(np.int64), n_bits=bits, rects=np.zeros((len(codes), 4)),
                            kind="occupied", level=bits // 2)


@pytest.mark.parametrize("eps", [0.3, 1.0, 3.0, 6.0])
@pytest.mark.parametrize("seed", [0, 1])
def test_theorem33_bound_and_channel(eps, seed):
    """Thm 3.3 eps for the chosen c, m, groups is <= target; the exact channel ratio equals/does not exceed it."""
    plan = S.build_plan(random_domain(150, 16, seed), eps)
    assert plan.epsilon <= eps + 1e-12
    assert plan.epsilon >= eps - 1e-6 or plan.c == pytest.approx(math.exp(eps))   # c is the largest allowed
    q = plan.channel()
    np.testing.assert_allclose(q.sum(axis=0), 1.0, atol=1e-12)
    ratio = (q.max(axis=1) / q.min(axis=1)).max()
    assert ratio <= math.exp(eps) * (1 + 1e-9)
    assert plan.channel_epsilon() <= plan.epsilon + 1e-9
    assert plan.channel_epsilon() >= math.log(plan.c) - 1e-9      # a true ratio of at least c exists


def test_staircase_structure():
    """alpha_j non-increasing in j, equal steps, alpha_1 = c alpha_m; group masses sum to 1 per input."""
    plan = S.build_plan(random_domain(200, 18, 3), 0.5)
    assert plan.m >= 3
    steps = -np.diff(plan.alpha, axis=1)
    assert np.all(steps >= 0)
    np.testing.assert_allclose(steps, steps[:, :1] * np.ones_like(steps), rtol=1e-12)
    np.testing.assert_allclose(plan.alpha[:, 0], plan.c * plan.alpha[:, -1], rtol=1e-12)
    np.testing.assert_allclose((plan.alpha * plan.group_sizes).sum(axis=1), 1.0, atol=1e-12)
    assert np.all(plan.group_sizes.sum(axis=1) == plan.domain.size)


def test_groups_follow_lcp():
    """Members of G_j(x) share >= beta_j bits with x and fewer than the previous threshold (Def. 3.2)."""
    dom = random_domain(120, 16, 4)
    plan = S.build_plan(dom, 1.0)
    lcp = quadkey.lcp_bits(dom.codes[:, None], dom.codes[None, :], dom.n_bits)
    q = plan.channel()
    for x in range(0, dom.size, 7):
        for j in range(plan.m):
            members = np.arange(plan.lo[x, j + 1], plan.hi[x, j + 1])
            inner = np.arange(plan.lo[x, j], plan.hi[x, j])
            group = np.setdiff1d(members, inner)
            assert len(group) == plan.group_sizes[x, j]
            if len(group):
                assert lcp[x, group].min() == plan.glcp[x, j]
                np.testing.assert_allclose(q[group, x], plan.alpha[x, j])
        betas = plan.glcp[x][plan.glcp[x] >= 0]
        assert np.all(np.diff(betas) < 0)          # beta_1 > beta_2 > ... (non-empty groups)


def test_thresholds_are_optimal_by_brute_force():
    """The DP finds the thresholds maximising the expected LCP (checked exhaustively for m = 3)."""
    import itertools
    dom = random_domain(60, 12, 5)
    ball = S.lcp_ball_sizes(dom)
    lsum = S.lcp_ball_sums(ball)
    m, c = 3, 2.5
    w = S.staircase_levels(m, c)
    thr = S.optimal_thresholds(ball, m, c)
    bits = dom.n_bits

    def value(x, t):
        cuts = list(t) + [0]
        s = [ball[x, min(k, bits + 1)] if k <= bits else 0 for k in cuts]
        ls = [lsum[x, k] if k <= bits else 0.0 for k in cuts]
        sizes = np.diff([0] + s)
        lcps = np.diff([0.0] + ls)
        return (w * lcps).sum() / (w * sizes).sum()

    for x in range(0, dom.size, 9):
        v_min = int((ball[x, :bits + 1] == ball[x, 0]).sum() - 1)
        best = max(value(x, t) for t in itertools.combinations(range(bits + m, v_min, -1), m - 1))
        assert value(x, thr[x]) == pytest.approx(best, rel=1e-12)


def test_hadamard_candidate_sets():
    """C_x = +1 columns of row i+1 of the Sylvester H_K, K = 2^ceil(log2(d+1)); about half the domain."""
    for d in (5, 37, 100, 300):
        K = S.hadamard_size(d)
        assert K >= d + 1 and K // 2 < d + 1
        H = scipy.linalg.hadamard(K)
        M = S.candidate_matrix(d)
        np.testing.assert_array_equal(M, (H[1:d + 1, :d] == 1).astype(float))
        assert 0.4 * d <= M.sum(axis=1).mean() <= 0.8 * d
        assert np.linalg.matrix_rank(M) == d                       # the candidate sets are independent
        v = np.random.default_rng(d).random((d, 3))
        np.testing.assert_allclose(S.candidate_mass(v), M @ v, atol=1e-9)


def test_linear_system_well_posed_when_channel_identifiable():
    """With G_1 = {x} (all channels distinct) Algorithm 2's system is square and well conditioned (LU path)."""
    dom = random_domain(80, 14, 6)
    plan = S.build_plan(dom, 4.0)
    reps, _ = S.channel_classes(plan)
    A = S.hadamard_system(plan)
    if len(reps) == dom.size:
        assert np.linalg.cond(A) < 1e8
    # the noiseless system is solved exactly whatever the path (identifiable part)
    p = np.random.default_rng(0).dirichlet(np.ones(dom.size))
    est = S.hadamard_estimate(plan, plan.channel() @ p * 1e9)
    np.testing.assert_allclose(plan.channel() @ est, plan.channel() @ p, atol=1e-9)


def test_sampler_follows_channel():
    """Algorithm 1 sampler vs the declared channel, several inputs: chi-square p > 1e-3 (fixed seed)."""
    dom = random_domain(60, 12, 7)
    plan = S.build_plan(dom, 1.0)
    q = plan.channel()
    rng = np.random.default_rng(11)
    for x in (0, 17, 42):
        reports = S.perturb_positions(plan, np.full(60000, x), rng)
        observed = np.bincount(reports, minlength=dom.size)
        expected = q[:, x] * len(reports)
        assert stats.chisquare(observed, expected).pvalue > 1e-3


@pytest.mark.parametrize("estimator", ["hadamard", "mle"])
def test_estimates_consistent_as_n_grows(estimator):
    """Error in the identifiable quantity Q p (what reports reveal) shrinks roughly like 1/sqrt(n)."""
    dom = random_domain(80, 14, 8)
    plan = S.build_plan(dom, 2.0)
    q = plan.channel()
    p = np.random.default_rng(1).dirichlet(np.ones(dom.size) * 0.5)
    rng = np.random.default_rng(2)
    errors = []
    for n in (5_000, 500_000):
        x = rng.choice(dom.size, size=n, p=p)
        counts = np.bincount(S.perturb_positions(plan, x, rng), minlength=dom.size).astype(float)
        est = S.hadamard_estimate(plan, counts) if estimator == "hadamard" else S.em_estimate(plan, counts)[0]
        errors.append(np.abs(q @ est - q @ p).sum())
    assert errors[1] < errors[0] / 4


def test_hadamard_estimate_unbiased():
    """Mean of the raw Hadamard estimate over repetitions matches the truth on an identifiable domain."""
    dom = random_domain(40, 12, 9)
    plan = S.build_plan(dom, 5.0)
    p = np.random.default_rng(3).dirichlet(np.ones(dom.size))
    rng = np.random.default_rng(4)
    reps, classes = S.channel_classes(plan)
    q = plan.channel()
    mean = np.zeros(dom.size)
    for _ in range(40):
        x = rng.choice(dom.size, size=20_000, p=p)
        counts = np.bincount(S.perturb_positions(plan, x, rng), minlength=dom.size).astype(float)
        mean += S.hadamard_estimate(plan, counts) / 40
    np.testing.assert_allclose(q @ mean, q @ p, atol=3e-3)


@pytest.fixture
def users_grid():
    grid = Grid(Region(-93.26, 44.97, 10_000), 16)
    rng = np.random.default_rng(5)
    uv = np.clip(rng.normal(0.5, 0.15, size=(8000, 2)), 0, 1)
    return grid, grid.bin_unit(uv)


@pytest.mark.parametrize("params", [{}, {"domain": "occupied"}, {"estimator": "mle"},
                                    {"domain": "occupied", "level": 14, "groups": 3}])
def test_mechanism_runs(users_grid, params):
    """The registered mechanism returns a valid (d, d) distribution with the achieved eps in info."""
    grid, users = users_grid
    mech = mechanisms.create("srr", grid, 2.0, **params)
    est = mech.run(users, np.random.default_rng(0))
    assert est.density.shape == (16, 16)
    assert est.density.min() >= 0 and est.density.sum() == pytest.approx(1.0)
    assert est.info["epsilon_achieved"] <= 2.0 + 1e-12
    assert est.info["domain_size"] >= 1


def test_grid_channel_is_ldp():
    """domain='grid' exposes a channel over all cells; columns sum to 1, ratio <= e^eps."""
    for side, eps in ((4, 1.0), (8, 0.5), (6, 3.0)):
        mech = mechanisms.create("srr", Grid(Region(0, 0, 1000), side), eps, domain="grid")
        P = mech.channel()
        np.testing.assert_allclose(P.sum(axis=0), 1.0, atol=1e-12)
        assert (P.max(axis=1) / P.min(axis=1)).max() <= math.exp(eps) * (1 + 1e-9)


def test_bad_inputs():
    with pytest.raises(LdpvizInputError, match="blocks"):
        mechanisms.create("srr", Grid(Region(0, 0, 1000), 100), 1.0, domain="grid").channel()
    with pytest.raises(LdpvizInputError):
        mechanisms.create("srr", Grid(Region(0, 0, 1000), 4), 1.0, domain="nowhere")
    with pytest.raises(LdpvizInputError):
        mechanisms.create("srr", Grid(Region(0, 0, 1000), 4), 1.0, domain="occupied").channel()
    with pytest.raises(LdpvizInputError, match="level"):
        mechanisms.create("srr", Grid(Region(0, 0, 1000), 4), 1.0, level=12)


def test_default_domain_is_public_grid():
    """The default domain depends on the grid only: two different populations get the same domain."""
    grid = Grid(Region(-93.26, 44.97, 10_000), 16)
    mech = mechanisms.create("srr", grid, 1.0)
    assert mech.domain == "grid" and "NOT" not in mech.guarantee()
    rng = np.random.default_rng(1)
    one = mech.build_domain(grid.bin_unit(rng.random((5, 2))))
    two = mech.build_domain(grid.bin_unit(np.full((3, 2), 0.1)))
    assert one.key() == two.key() and one.size == grid.n_cells
    occupied = mechanisms.create("srr", grid, 1.0, domain="occupied")
    assert "NOT epsilon-LDP" in occupied.guarantee()


def test_large_grid_uses_public_blocks():
    """Beyond MAX_DOMAIN_SIZE cells the grid domain uses k x k blocks (d = 100 -> 2 x 2, 2,500 blocks)."""
    grid = Grid(Region(-93.26, 44.97, 10_000), 100)
    users = grid.bin_unit(np.clip(np.random.default_rng(2).normal(0.5, 0.1, (3000, 2)), 0, 1))
    est = mechanisms.create("srr", grid, 3.0).run(users, np.random.default_rng(0))
    assert est.info["domain_size"] == 2500 and est.density.shape == (100, 100)
    assert est.density.min() >= 0 and est.density.sum() == pytest.approx(1.0)
    # each 2 x 2 block's mass is spread evenly over its cells
    blocks = est.density.reshape(50, 2, 50, 2)
    np.testing.assert_allclose(blocks, blocks[:, :1, :, :1].repeat(2, 1).repeat(2, 3), atol=1e-12)


def test_offline_plan_is_cached(users_grid):
    grid, users = users_grid
    mech = mechanisms.create("srr", grid, 1.0)
    dom = mech.build_domain(users)
    assert S.cached_plan(dom, 1.0) is S.cached_plan(dom, 1.0)
