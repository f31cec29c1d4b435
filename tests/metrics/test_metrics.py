"""Tests of ldpviz.metrics: each test's docstring states the property it checks."""

from __future__ import annotations

import math

import numpy as np
import ot
import pytest

from ldpviz import metrics
from ldpviz.errors import LdpvizInputError
from ldpviz.mechanisms.base import Estimate
from ldpviz.geo.partition import Partition


# ---- helpers ---------------------------------------------------------------------------

def point_mass(d: int, row: int, col: int) -> np.ndarray:
    p = np.zeros((d, d))
    p[row, col] = 1.0
    return p


def centres(d: int) -> np.ndarray:
    """Cell centres (x = col + 0.5, y = row + 0.5) in flat-index order, in cells."""
    c = np.arange(d) + 0.5
    cols, rows = np.meshgrid(c, c)
    return np.column_stack([cols.ravel(), rows.ravel()])


def blobs(d: int, seed: int, k: int = 3) -> np.ndarray:
    """A smooth clustered density: a few Gaussian blobs."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:d, 0:d] + 0.5
    out = np.zeros((d, d))
    for _ in range(k):
        cx, cy = rng.uniform(0, d, 2)
        s = rng.uniform(0.05, 0.15) * d
        out += rng.uniform(0.5, 2.0) * np.exp(-((x - cx) ** 2 + (y - cy) ** 2) / (2 * s * s))
    return out / out.sum()


def noisy(p: np.ndarray, seed: int, scale: float = 0.5) -> np.ndarray:
    """An LDP-like estimate of ``p``: additive noise, clipped, renormalised."""
    rng = np.random.default_rng(seed)
    q = np.clip(p + rng.normal(0.0, scale / p.size, p.shape), 0.0, None)
    return q / q.sum()


def reference_w2(p: np.ndarray, q: np.ndarray, metric: str = "sqeuclidean") -> float:
    """Independent computation: ot.emd2 on the full cost matrix from ot.dist."""
    d = p.shape[0]
    X = centres(d)
    M = ot.dist(X, X, metric=metric)
    a = p.ravel() / p.sum()
    b = q.ravel() / q.sum()
    value = ot.emd2(a, b, M, numItermax=10_000_000)
    return math.sqrt(value) if metric == "sqeuclidean" else float(value)


# ---- W2 ----------------------------------------------------------------------------------

@pytest.mark.parametrize("method", ["exact", "fast", "auto"])
def test_w2_point_masses_is_their_distance(method):
    """W2 between two point masses is the Euclidean distance of the cells, in cells and metres."""
    p = point_mass(40, 1, 2)
    q = point_mass(40, 4, 6)   # 3 rows north, 4 columns east: distance 5 cells
    assert metrics.w2(p, q, method=method) == pytest.approx(5.0, abs=1e-12)
    assert metrics.w2(p, q, cell_m=12.5, method=method) == pytest.approx(62.5, abs=1e-9)


@pytest.mark.parametrize("method", ["exact", "fast", "certified"])
def test_w2_of_equal_densities_is_zero(method):
    """W2(p, p) = 0 for dense and sparse densities; W2(s, 3 s) is no more than the normalised inputs' own
    round-off differences allow (they differ in the last bit in some cells): W2^2 <= TV x diameter^2."""
    rng = np.random.default_rng(3)
    p = rng.random((24, 24))
    assert metrics.w2(p, p, method=method) == pytest.approx(0.0, abs=1e-9)
    s = np.where(rng.random((24, 24)) < 0.2, rng.random((24, 24)), 0.0)
    a, b = s / s.sum(), 3.0 * s / (3.0 * s).sum()
    assert 0 < np.abs(a - b).max() < 1e-17                     # the case: equal up to round-off, not bit for bit
    bound = math.sqrt(0.5 * np.abs(a - b).sum() * 2 * 23 ** 2)
    assert 0.0 <= metrics.w2(s, 3.0 * s, method=method) <= bound
    assert metrics.w2(s, s.copy(), method=method) == 0.0


def test_w2_exact_matches_independent_emd2():
    """Exact W2 equals sqrt(ot.emd2) with ot.dist('sqeuclidean') on the full grid, random 8x8 densities."""
    rng = np.random.default_rng(0)
    for _ in range(5):
        p = rng.random((8, 8))
        q = rng.random((8, 8)) * (rng.random((8, 8)) < 0.6)   # some empty cells in est
        assert metrics.w2(p, q, method="exact") == pytest.approx(reference_w2(p, q), rel=1e-9)


@pytest.mark.parametrize("d", [16, 25, 32])
def test_w2_fast_matches_exact(d):
    """Fast W2 is within 2% of exact (it is certified exact, so we ask for 1e-7) on random, clustered,
    noisy and sparse densities."""
    rng = np.random.default_rng(d)
    t = blobs(d, seed=d)
    sparse = np.where(rng.random((d, d)) < 0.15, rng.pareto(1.5, (d, d)) + 0.01, 0.0)
    cases = [
        (rng.random((d, d)), rng.random((d, d))),
        (t, noisy(t, seed=1)),
        (t, blobs(d, seed=d + 1)),
        (sparse, noisy(sparse, seed=2, scale=0.2)),
    ]
    for p, q in cases:
        exact = metrics.w2(p, q, method="exact")
        fast = metrics.w2(p, q, method="fast")
        assert abs(fast - exact) <= 0.02 * exact
        assert fast == pytest.approx(exact, rel=1e-7)


def test_w2_auto_above_threshold_is_exact():
    """'auto' switches to the multiscale solver above AUTO_EXACT_MAX_PAIRS and still gives the exact value."""
    d = 24
    assert d ** 4 > metrics.AUTO_EXACT_MAX_PAIRS
    t = blobs(d, seed=5)
    q = noisy(t, seed=6)
    assert metrics.w2(t, q) == pytest.approx(reference_w2(t, q), rel=1e-7)


def test_block_approximation_is_within_its_stated_bound(monkeypatch):
    """method='blocks' sums f x f blocks: within sqrt(2)(f-1) (W2) and 2(f-1) (EMD-L1) cells of the exact
    value, and its readout is flagged approximate with an interval that holds the exact value."""
    monkeypatch.setattr(metrics.transport, "BLOCKS_SIDE", 8)
    d, f = 20, 3                                  # ceil(20 / 8) = 3
    for seed in range(3):
        t = blobs(d, seed=seed)
        q = noisy(t, seed=seed + 20, scale=3.0)
        exact_w2 = metrics.w2(t, q, method="exact")
        r = metrics.w2_readout(t, q, method="blocks")
        assert r.method == "blocks" and not r.exact
        assert abs(r.value - exact_w2) <= math.sqrt(2) * (f - 1)
        assert r.lower <= exact_w2 <= r.upper
        exact_emd = reference_w2(t, q, metric="cityblock")
        e = metrics.emd_l1_readout(t, q, method="blocks")
        assert abs(e.value - exact_emd) <= 2 * (f - 1) and e.lower <= exact_emd <= e.upper
        # 'auto' stays exact here: the supports' product is below SUPPORT_EXACT_MAX_PAIRS
        assert metrics.emd_l1_readout(t, q).exact
        assert metrics.emd_l1(t, q) == pytest.approx(exact_emd, rel=1e-7)


def test_w2_is_symmetric_and_scale_invariant():
    """W2(p, q) = W2(q, p), and inputs are normalised (counts and frequencies give the same value)."""
    rng = np.random.default_rng(11)
    p, q = rng.random((20, 20)), rng.random((20, 20))
    assert metrics.w2(p, q) == pytest.approx(metrics.w2(q, p), rel=1e-9)
    assert metrics.w2(1000 * p, q) == pytest.approx(metrics.w2(p, q), rel=1e-9)


def test_w2_rejects_bad_method_and_cell_size():
    """An unknown method or a non-positive cell size is an input error."""
    p = point_mass(4, 0, 0)
    with pytest.raises(LdpvizInputError, match="method"):
        metrics.w2(p, p, method="sinkhorn")
    with pytest.raises(LdpvizInputError, match="cell_m"):
        metrics.w2(p, p, cell_m=0)


# ---- sliced W2 -------------------------------------------------------------------------------

def textbook_sliced_w2(p: np.ndarray, q: np.ndarray, directions: np.ndarray) -> float:
    """Independent SW2: per direction, the 1-D W2^2 from the two quantile functions (merged cumulative
    weights), averaged over directions, square root (Bonneel et al. 2015; DAM paper Definition 7)."""
    X = centres(p.shape[0])
    a, b = p.ravel() / p.sum(), q.ravel() / q.sum()
    total = 0.0
    for theta in directions.T:
        xa, xb = X @ theta, X @ theta
        oa, ob = np.argsort(xa), np.argsort(xb)
        ca, cb = np.cumsum(a[oa]), np.cumsum(b[ob])
        levels = np.unique(np.concatenate([[0.0], ca, cb]))
        levels = levels[levels <= 1.0]
        mids = (levels[:-1] + levels[1:]) / 2
        qa = xa[oa][np.minimum(np.searchsorted(ca, mids), len(ca) - 1)]
        qb = xb[ob][np.minimum(np.searchsorted(cb, mids), len(cb) - 1)]
        total += float(np.sum(np.diff(levels) * (qa - qb) ** 2))
    return math.sqrt(total / directions.shape[1])


def test_sliced_w2_matches_a_textbook_computation():
    """sliced_w2 is the textbook SW2 = sqrt(mean_theta W2^2(projections)), no sqrt(2) factor (issue 15.18):
    equal to an independent quantile-function computation on the same directions."""
    rng = np.random.default_rng(12)
    for seed in range(3):
        p = blobs(12, seed=seed)
        q = rng.random((12, 12)) * (rng.random((12, 12)) < 0.5)
        expected = textbook_sliced_w2(p, q, metrics.sliced_directions(50, seed))
        assert metrics.sliced_w2(p, q, n_projections=50, seed=seed) == pytest.approx(expected, rel=1e-5)


def test_sliced_w2_is_at_most_w2_over_sqrt2():
    """SW2 <= W2 / sqrt(2) in 2-D (E_theta (theta.z)^2 = |z|^2 / 2 for every displacement of the optimal plan),
    up to 1% for the quadrature over directions."""
    rng = np.random.default_rng(7)
    for seed in range(4):
        p = blobs(16, seed=seed)
        q = noisy(p, seed=seed + 10) if seed % 2 else rng.random((16, 16))
        assert metrics.sliced_w2(p, q) <= 1.01 * metrics.w2(p, q) / math.sqrt(2)


def test_sliced_w2_of_a_shift_is_the_shift_over_sqrt2():
    """Translating a density by a vector s gives SW2 = |s| / sqrt(2) (cells and metres) while W2 = |s|."""
    p = np.zeros((16, 16))
    p[2:6, 3:7] = np.arange(16).reshape(4, 4) + 1.0
    q = np.roll(np.roll(p, 3, axis=0), 2, axis=1)        # 3 cells north, 2 east
    assert metrics.sliced_w2(p, q) == pytest.approx(math.sqrt(13 / 2), rel=1e-9)
    assert metrics.sliced_w2(p, q, cell_m=10.0, seed=4) == pytest.approx(10 * math.sqrt(13 / 2), rel=1e-9)
    assert metrics.w2(p, q) == pytest.approx(math.sqrt(13), rel=1e-9)


def test_sliced_w2_is_deterministic_per_seed():
    """Same seed, same value."""
    rng = np.random.default_rng(2)
    p, q = rng.random((12, 12)), rng.random((12, 12))
    assert metrics.sliced_w2(p, q, seed=3) == metrics.sliced_w2(p, q, seed=3)


# ---- EMD (L1) -----------------------------------------------------------------------------

def test_emd_l1_point_masses_is_manhattan_distance():
    """EMD with L1 ground metric between two point masses is |drow| + |dcol| (cells and metres)."""
    p = point_mass(10, 1, 2)
    q = point_mass(10, 4, 6)
    assert metrics.emd_l1(p, q) == pytest.approx(7.0, abs=1e-12)
    assert metrics.emd_l1(p, q, cell_m=3.0) == pytest.approx(21.0, abs=1e-9)


def test_emd_l1_sanity_bounds():
    """W1 (Euclidean) <= EMD-L1 <= sqrt(2) W1, EMD-L1 <= diameter x TV, and it matches ot.emd2 with cityblock."""
    for seed in range(3):
        p = blobs(12, seed=seed)
        q = noisy(p, seed=seed + 1, scale=2.0)
        e = metrics.emd_l1(p, q)
        w1 = reference_w2(p, q, metric="euclidean")
        assert w1 - 1e-9 <= e <= math.sqrt(2) * w1 + 1e-9
        assert e <= 2 * (12 - 1) * metrics.l1(p, q) / 2 + 1e-9
        assert e == pytest.approx(reference_w2(p, q, metric="cityblock"), rel=1e-9)


def test_emd_l1_large_grid_uses_exact_multiscale():
    """Above the dense threshold EMD-L1 (multiscale, certified) equals the dense cityblock optimum."""
    d = 24
    assert d ** 4 > metrics.AUTO_EXACT_MAX_PAIRS
    t = blobs(d, seed=8)
    q = noisy(t, seed=9)
    assert metrics.emd_l1(t, q) == pytest.approx(reference_w2(t, q, metric="cityblock"), rel=1e-7)


# ---- KL, L1, MSE, Pearson, similarity ----------------------------------------------------

def test_kl_properties():
    """KL(p || p) = 0, KL >= 0, and it is finite when est has zeros where true has mass."""
    rng = np.random.default_rng(4)
    p = rng.random((10, 10))
    assert metrics.kl(p, p) == pytest.approx(0.0, abs=1e-12)
    for _ in range(5):
        assert metrics.kl(rng.random((10, 10)), rng.random((10, 10))) >= 0.0
    q = p.copy()
    q[:5] = 0.0
    value = metrics.kl(p, q)
    assert math.isfinite(value) and value > 0.0
    # terms with true = 0 contribute nothing
    t = np.zeros((2, 2))
    t[0, 0] = 1.0
    assert metrics.kl(t, np.array([[0.5, 0.5], [0.0, 0.0]])) == pytest.approx(math.log(2), rel=1e-6)


def test_l1_similarity_mse_pearson():
    """l1 in [0, 2] (2 for disjoint supports); similarity = 1 - l1/2; mse >= 0; pearson(p, p) = 1,
    pearson = 0 when one map is flat."""
    rng = np.random.default_rng(5)
    for _ in range(5):
        p, q = rng.random((9, 9)), rng.random((9, 9))
        v = metrics.l1(p, q)
        assert 0.0 <= v <= 2.0
        assert metrics.similarity(p, q) == pytest.approx(1.0 - v / 2.0, abs=1e-12)
        assert metrics.mse(p, q) >= 0.0
        assert -1.0 <= metrics.pearson(p, q) <= 1.0
    assert metrics.l1(point_mass(4, 0, 0), point_mass(4, 3, 3)) == pytest.approx(2.0)
    assert metrics.similarity(point_mass(4, 0, 0), point_mass(4, 3, 3)) == pytest.approx(0.0)
    p = rng.random((9, 9))
    assert metrics.pearson(p, p) == pytest.approx(1.0)
    assert metrics.pearson(p, np.ones((9, 9))) == 0.0
    assert metrics.mse(p, 5 * p) == pytest.approx(0.0, abs=1e-15)


# ---- queries and AQE ------------------------------------------------------------------------

def test_random_queries_area_inside_and_deterministic():
    """Every query has area rho, lies inside [0, 1]^2, aspect in range; same seed gives the same queries."""
    for rho in (0.0001, 0.01, 0.04, 0.5, 1.0):
        qs = metrics.random_queries(rho, gamma=300, seed=1)
        assert qs.shape == (300, 4)
        w, h = qs[:, 2] - qs[:, 0], qs[:, 3] - qs[:, 1]
        np.testing.assert_allclose(w * h, rho, rtol=1e-9)
        assert np.all(qs >= 0.0) and np.all(qs <= 1.0)
        lo, hi = metrics.QUERY_ASPECT_RANGE
        assert np.all(w / h >= lo * (1 - 1e-9)) and np.all(w / h <= hi * (1 + 1e-9))
    np.testing.assert_array_equal(metrics.random_queries(0.01, seed=7), metrics.random_queries(0.01, seed=7))
    assert not np.array_equal(metrics.random_queries(0.01, seed=7), metrics.random_queries(0.01, seed=8))
    assert len(metrics.random_queries(0.01)) == 500


def test_random_queries_rejects_bad_rho():
    """rho must be in (0, 1]."""
    for rho in (0.0, -0.1, 1.5, float("nan")):
        with pytest.raises(LdpvizInputError, match="rho"):
            metrics.random_queries(rho)


def test_aqe_hand_computed_partial_overlap():
    """AQE (grid paper eq. 8-9) on a 2x2 grid, computed by hand.

    True density [row, col] = [[0.4, 0.1], [0.2, 0.3]] (row 0 is south), estimate
    [[0.2, 0.3], [0.25, 0.25]], n = 1000 users, bound b = 2% x 1000 = 20.
    Query A = left half of the south-west cell (0, 0, 0.25, 0.5): true 0.4 x 1/2 x 1000 = 200,
    estimate 0.2 x 1/2 x 1000 = 100, error 100 / max(200, 20) = 0.5.
    Query B = (0.5, 0, 0.6, 0.1), 4% of the south-east cell: true 0.1 x 0.04 x 1000 = 4,
    estimate 0.3 x 0.04 x 1000 = 12, error 8 / max(4, 20) = 0.4.  AQE = (0.5 + 0.4) / 2 = 0.45.
    """
    true = np.array([[0.4, 0.1], [0.2, 0.3]])
    est = np.array([[0.2, 0.3], [0.25, 0.25]])
    queries = np.array([[0.0, 0.0, 0.25, 0.5], [0.5, 0.0, 0.6, 0.1]])
    assert metrics.aqe(true, est, n_users=1000, queries=queries) == pytest.approx(0.45, rel=1e-12)
    # The same with partitions: the truth's masses as counts (normalised), the estimate's as fractions of users.
    assert metrics.aqe(Partition.uniform(1000 * true), Partition.uniform(est), n_users=1000,
                       queries=queries) == pytest.approx(0.45, rel=1e-12)
    # An adaptive partition: the west half as one piece (mass 0.6), east split in two (0.1, 0.3).
    # Query A covers 1/4 of the west piece: 0.15 x 1000 = 150, error 50 / 200 = 0.25;
    # query B covers 4% of the south-east piece [0.5, 1] x [0, 0.5]: 0.1 x 0.04 x 1000 = 4, error 0.
    adaptive = Partition(np.array([[0, 0, 0.5, 1], [0.5, 0, 1, 0.5], [0.5, 0.5, 1, 1]]), np.array([0.6, 0.1, 0.3]))
    assert metrics.aqe(true, adaptive, n_users=1000, queries=queries) == pytest.approx(0.125, rel=1e-12)


def test_aqe_points_equal_density_on_cell_aligned_queries():
    """With queries aligned to cell edges, AQE from exact point counts equals AQE from the true density."""
    d = 4
    rng = np.random.default_rng(6)
    cells = rng.integers(0, d, size=(500, 2))                  # (col, row)
    pts = (cells + rng.uniform(0.05, 0.95, size=(500, 2))) / d  # strictly inside cells
    density = np.zeros((d, d))
    np.add.at(density, (cells[:, 1], cells[:, 0]), 1.0)
    est = rng.random((d, d))
    queries = np.array([[0.25, 0.5, 0.75, 1.0], [0.0, 0.0, 0.5, 0.25], [0.5, 0.25, 1.0, 1.0], [0, 0, 1, 1]])
    a_points = metrics.aqe(pts, est, n_users=500, queries=queries)
    a_density = metrics.aqe(density, est, n_users=500, queries=queries)
    assert a_points == pytest.approx(a_density, rel=1e-12)
    assert a_points > 0.0


def test_aqe_default_queries_and_zero_for_identical():
    """AQE of the truth against itself is 0; the default queries are random_queries(rho, gamma, seed)."""
    p = blobs(8, seed=1)
    assert metrics.aqe(p, p, n_users=100) == pytest.approx(0.0, abs=1e-12)
    q = noisy(p, seed=2, scale=5.0)
    explicit = metrics.aqe(p, q, n_users=100, queries=metrics.random_queries(0.04, 50, seed=3))
    assert metrics.aqe(p, q, n_users=100, rho=0.04, gamma=50, seed=3) == explicit


# ---- evaluate and input errors ----------------------------------------------------------------

def test_evaluate_returns_every_metric_finite():
    """evaluate() returns exactly the METRIC_INFO keys, all finite; w2_m = w2_cells x cell_m."""
    d = 16
    t = blobs(d, seed=3)
    est = Estimate(density=noisy(t, seed=4))
    rng = np.random.default_rng(0)
    pts = rng.uniform(0, 1, size=(200, 2))
    for kwargs in ({}, {"true_points": pts}):
        row = metrics.evaluate(t, est, cell_m=50.0, n_users=200, **kwargs)
        assert set(row) == set(metrics.METRIC_INFO)
        assert all(math.isfinite(v) for v in row.values())
        assert row["w2_m"] == pytest.approx(50.0 * row["w2_cells"])
    for key, info in metrics.METRIC_INFO.items():
        assert set(info) >= {"label", "lower_is_better", "help"}, key
        assert isinstance(info["lower_is_better"], bool)


@pytest.mark.parametrize("fn", [metrics.w2, metrics.sliced_w2, metrics.emd_l1, metrics.kl, metrics.l1,
                                metrics.mse, metrics.pearson, metrics.similarity])
def test_zero_mass_and_bad_inputs_raise(fn):
    """A zero-mass input, negative entries or mismatched grids raise LdpvizInputError with a clear message."""
    p = np.ones((4, 4))
    with pytest.raises(LdpvizInputError, match="zero total mass"):
        fn(np.zeros((4, 4)), p)
    with pytest.raises(LdpvizInputError, match="zero total mass"):
        fn(p, np.zeros((4, 4)))
    with pytest.raises(LdpvizInputError, match="negative"):
        fn(p, -p)
    with pytest.raises(LdpvizInputError, match="same grid"):
        fn(p, np.ones((5, 5)))


def test_aqe_zero_mass_raises():
    """AQE refuses a zero-mass truth or estimate."""
    q = metrics.random_queries(0.1, 10)
    with pytest.raises(LdpvizInputError, match="zero total mass"):
        metrics.aqe(np.zeros((4, 4)), np.ones((4, 4)), n_users=10, queries=q)
    # A raw estimate partition with no positive total (possible for unbiased FO estimates at
    # tiny epsilon) is scored, not refused: every answer is 0, so each query's error is
    # ans_true / max(ans_true, b) with ans_true = area x n (uniform truth), b = 0.02 n.
    got = metrics.aqe(np.ones((4, 4)), Partition.uniform(np.zeros((4, 4))), n_users=10, queries=q)
    assert got == pytest.approx(1.0)  # every query has area 0.1 > 0.02, so each error is 1


# ---- solver choice and readouts (issues 14.5 and 15.14) ---------------------------------------

def test_auto_says_which_solver_ran(monkeypatch):
    """'auto' runs the dense exact solver on small supports and the certified sparse solver (ldpviz.metrics.w2_exact)
    beyond for W2, the certified multiscale one for EMD up to FAST_MAX_SIDE; when the certified solver's time
    budget is spent (0 here) it falls back to BFM, flagged approximate -- and the readout names each."""
    small = metrics.w2_readout(point_mass(40, 1, 2), point_mass(40, 4, 6))
    assert (small.method, small.exact, small.value) == ("exact", True, pytest.approx(5.0))
    t = blobs(24, seed=5)
    mid = metrics.w2_readout(t, noisy(t, seed=6))
    assert mid.method == "certified" and mid.exact and mid.lower <= mid.value == mid.upper
    assert mid.value == pytest.approx(metrics.w2(t, noisy(t, seed=6), method="exact"), abs=1e-9)
    d = 72
    big_p, big_q = blobs(d, seed=1), blobs(d, seed=2)
    monkeypatch.setattr(metrics.transport, "AUTO_W2_BUDGET_S", 0.0)
    big = metrics.w2_readout(big_p, big_q)
    assert big.method == "bfm" and not big.exact and big.lower <= big.value <= big.upper
    assert "approximate" in big.note("W2 (m)", "m")
    assert metrics.emd_l1_readout(big_p, big_q).method == "multiscale"
    with pytest.raises(LdpvizInputError, match="method"):
        metrics.emd_l1(big_p, big_q, method="bfm")     # BFM is for the quadratic cost only
    with pytest.raises(LdpvizInputError, match="time_budget"):
        metrics.w2(big_p, big_q, time_budget=-1)


@pytest.mark.slow
def test_one_cell_shift_at_d256_reads_one_cell():
    """Issue 15.14: an estimate shifted by one cell at d = 256 reads W2 = 1 cell (the old block
    approximation read 1.417). Sparse truth (n << d^2) and full-support truth alike: solved exactly and
    certified (issue 23); EMD-L1 of the sparse pair is exactly 1 too."""
    d = 256
    rng = np.random.default_rng(0)
    sparse = np.zeros((d, d))
    cells = rng.integers(20, 230, size=(300, 2))
    np.add.at(sparse, (cells[:, 0], cells[:, 1]), 1.0)
    shifted = np.roll(sparse, 1, axis=1)
    r = metrics.w2_readout(sparse, shifted)
    assert r.exact and r.value == pytest.approx(1.0, abs=1e-9)
    e = metrics.emd_l1_readout(sparse, shifted)
    assert e.exact and e.value == pytest.approx(1.0, abs=1e-9)
    dense = np.zeros((d, d))
    dense[16:240, 16:240] = blobs(224, seed=3)
    r = metrics.w2_readout(dense, np.roll(dense, 1, axis=0), time_budget=600)   # not cut short by a loaded machine
    assert r.method == "certified" and r.exact and r.value == pytest.approx(1.0, abs=1e-9)


def test_evaluate_fills_readouts_in_metres():
    """evaluate(readouts=...) reports the solver of W2 and EMD-L1, in metres, consistent with the row."""
    t = blobs(16, seed=3)
    out: dict = {}
    row = metrics.evaluate(t, Estimate(density=noisy(t, seed=4)), cell_m=50.0, n_users=200, readouts=out)
    assert set(out) == {"w2_m", "emd_l1_m"}
    assert out["w2_m"].value == pytest.approx(row["w2_m"]) and out["w2_m"].exact
    assert out["emd_l1_m"].value == pytest.approx(row["emd_l1_m"])


# ---- KL on smoothed maps (issue 15.15) ----------------------------------------------------------

def sparse_truth(d: int, n: int, seed: int) -> np.ndarray:
    """Histogram of n users on a d x d grid (n << d^2): mostly empty cells."""
    rng = np.random.default_rng(seed)
    cells = rng.integers(d // 4, 3 * d // 4, size=(n, 2))
    h = np.zeros((d, d))
    np.add.at(h, (cells[:, 0], cells[:, 1]), 1.0)
    return h


def test_smoothed_kl_is_bounded_by_transport():
    """KL on maps smoothed by a Gaussian of sd sigma is <= W2^2 / (2 sigma^2) (heatmaps paper, App. B,
    Lemma B.2 with convexity; mirror fold and binning only lower KL), for sparse and dense pairs."""
    rng = np.random.default_rng(9)
    for seed in range(3):
        p = sparse_truth(24, 40, seed)
        for q in (np.roll(p, seed + 1, axis=1), noisy(blobs(24, seed), seed, scale=2.0), rng.random((24, 24))):
            w = metrics.w2(p, q)
            for sigma in (1.0, 2.5):
                assert metrics.kl(p, q, sigma=sigma) <= w * w / (2 * sigma * sigma) + 1e-9


def test_smoothed_kl_ranks_shifts_by_distance_when_users_are_few():
    """n = 60 users on a 64 x 64 grid, estimates = the truth shifted by 1, 3, 6 and 9 + 9 cells, and the
    uniform map. Raw KL is governed by its 1e-10 floor: every shift reads 17-19 nats, not in order of the
    distance, and the uniform map (EMD 16.6 cells) reads best of all. KL at evaluate's smoothing grows with
    the shift, as EMD does, and prefers the 1-cell shift to the uniform map."""
    d = 64
    p = sparse_truth(d, 60, 1)
    shifts = [np.roll(p, 1, axis=0), np.roll(p, 3, axis=0), np.roll(p, 6, axis=1),
              np.roll(np.roll(p, 9, axis=0), 9, axis=1)]
    uniform = np.ones((d, d))
    raw = [metrics.kl(p, q) for q in shifts]
    assert min(raw) > 15 and max(raw) < 1.2 * min(raw)                   # log(1e10) = 23: the floor governs
    assert metrics.kl(p, uniform) < min(raw)
    sigma = metrics.kl_sigma(d)
    smooth = [metrics.kl(p, q, sigma=sigma) for q in shifts]
    emd = [metrics.emd_l1(p, q) for q in shifts]
    assert np.all(np.diff(smooth) > 0) and np.all(np.diff(emd) > 0)
    assert smooth[0] < metrics.kl(p, uniform, sigma=sigma)


def test_kl_rejects_bad_sigma():
    """A negative or non-numeric smoothing is an input error."""
    p = np.ones((4, 4))
    for bad in (-1.0, float("nan"), "x"):
        with pytest.raises(LdpvizInputError, match="sigma"):
            metrics.kl(p, p, sigma=bad)


def test_aqe_is_eq_8_9_on_a_raw_partition_without_renormalising():
    """Grid paper eq. 8-9 on a raw (unbiased, noisy) partition, by hand: the estimate's masses are fractions of
    the users as they are, never divided by their noisy total.

    Two pieces, west [0, .5] x [0, 1] and east [.5, 1] x [0, 1]; truth 600 / 400 of n = 1000 users.
    Raw estimate masses (0.62, 0.18): total 0.8, which renormalising would inflate to (0.775, 0.225).
    Query A = west piece: ans 600, ans' 620, error 20 / 600. Query B = south half of the east piece:
    ans 200, ans' 0.18 x 0.5 x 1000 = 90, error 110 / 200. Query C = a 1% sliver of the west piece
    (area 0.005 of the square): ans 6, ans' 6.2, error 0.2 / max(6, b = 20) = 0.01.
    """
    rects = np.array([[0, 0, 0.5, 1], [0.5, 0, 1, 1]])
    truth = Partition(rects, np.array([600.0, 400.0]))
    raw = Partition(rects, np.array([0.62, 0.18]))
    queries = np.array([[0, 0, 0.5, 1], [0.5, 0, 1, 0.5], [0, 0, 0.05, 0.1]])
    expect = (20 / 600 + 110 / 200 + 0.2 / 20) / 3
    assert metrics.aqe(truth, raw, n_users=1000, queries=queries) == pytest.approx(expect, rel=1e-12)
    np.testing.assert_allclose(metrics.estimate_answers(raw, queries), [0.62, 0.09, 0.0062])
    assert metrics.aqe_from_answers(metrics.true_answers(truth, queries), metrics.estimate_answers(raw, queries),
                                    1000) == pytest.approx(expect, rel=1e-12)
    # evaluate() (the dashboard and Scenario path) answers on Estimate.partition the same way.
    est = Estimate(density=np.array([[0.775, 0.225]] * 2) / 2, partition=raw)
    row = metrics.evaluate(np.array([[0.3, 0.2], [0.3, 0.2]]), est, cell_m=1.0, n_users=1000, queries=queries)
    assert row["aqe"] == pytest.approx(expect, rel=1e-12)


def test_aqe_negative_noisy_total_does_not_flip_signs():
    """A raw partition whose noisy total is negative (or tiny) keeps each answer's sign and size: a piece with
    mass +0.3 answers +300 of 1000 users whatever the other pieces' noise."""
    rects = np.array([[0, 0, 0.5, 1], [0.5, 0, 1, 1]])
    truth = Partition(rects, np.array([0.3, 0.7]))
    queries = np.array([[0, 0, 0.5, 1], [0.5, 0, 1, 1]])
    for east in (-0.5, -0.29, 0.7):                       # totals -0.2, 0.01, 1.0
        raw = Partition(rects, np.array([0.3, east]))
        answers = metrics.estimate_answers(raw, queries)
        assert answers[0] == pytest.approx(0.3) and answers[1] == pytest.approx(east)
        expect = (0.0 + abs(700 - 1000 * east) / 700) / 2
        assert metrics.aqe(truth, raw, n_users=1000, queries=queries) == pytest.approx(expect, rel=1e-12)


def test_sliced_w2_equals_pots_sliced_distance_on_the_same_directions():
    """The one-sort O(n) walk gives POT's sliced_wasserstein_distance(p=2) on the cell centres, for sparse and
    dense pairs of grids (seed 11), to round-off."""
    import ot
    rng = np.random.default_rng(11)
    for d in (5, 16, 40):
        p = rng.random((d, d)) * (rng.random((d, d)) > 0.6)
        q = rng.random((d, d)) * (rng.random((d, d)) > 0.2)
        p[0, 0] += 0.1
        q[-1, -1] += 0.1

        def centres(idx):
            r, c = np.divmod(idx, d)
            return np.column_stack([c + 0.5, r + 0.5]).astype(float)

        ia, ib = np.flatnonzero(p.ravel() > 0), np.flatnonzero(q.ravel() > 0)
        ref = ot.sliced_wasserstein_distance(centres(ia), centres(ib), p.ravel()[ia] / p.sum(),
                                             q.ravel()[ib] / q.sum(), p=2,
                                             projections=metrics.sliced_directions(64, 3))
        assert metrics.sliced_w2(p, q, n_projections=64, seed=3) == pytest.approx(float(ref), rel=1e-9, abs=1e-12)
def test_bfm_readout_carries_a_near_copy_caveat_only_when_close():
    """A BFM readout says it is approximate with its certified interval; below BFM_NEAR_COPY_CELLS (a
    near-copy, where BFM reads low against the discrete optimum) its note adds that caveat, and a pair whose
    mass travels far (a point mass moved 10 cells) carries none."""
    rng = np.random.default_rng(0)
    d = 24
    t = rng.random((d, d))
    near = metrics.w2_readout(t, rng.random((d, d)), method="bfm")
    assert near.value < metrics.BFM_NEAR_COPY_CELLS and near.caveat
    assert "approximate" in near.note("W2", "cells") and near.caveat in near.note("W2", "cells")
    a, b = np.zeros((d, d)), np.zeros((d, d))
    a[5:9, 5:9] = 1.0
    b[15:19, 5:9] = 1.0
    far = metrics.w2_readout(a, b, method="bfm", cell_m=10.0)
    assert far.value >= metrics.BFM_NEAR_COPY_CELLS * 10.0 and far.caveat == ""
    assert far.lower <= 100.0 + 1e-6 <= far.upper
