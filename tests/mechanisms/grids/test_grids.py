"""UG, PrivAG, AAG: grid sizes (eq. 4-5, Table 1), tiling, AAG's uneven cuts and edge rule, AQE (eq. 8)."""

import math

import numpy as np
import pytest

from ldpviz import mechanisms
from ldpviz.geo.domain import Grid, Region
from ldpviz.errors import LdpvizInputError
from ldpviz.mechanisms.grids import decompositions as grids
from ldpviz.geo.partition import Partition

# The paper's Table 1, "Initial G1" row: (|U|, epsilon) -> cells.
TABLE1_G1 = {
    (3_451_190, 0.5): 36, (3_451_190, 1.0): 81, (3_451_190, 3.0): 324, (3_451_190, 5.0): 900,   # Gowalla
    (1_620_157, 0.5): 25, (1_620_157, 1.0): 49, (1_620_157, 3.0): 225, (1_620_157, 5.0): 625,   # Porto
    (573_703, 0.5): 16, (573_703, 1.0): 36, (573_703, 3.0): 121, (573_703, 5.0): 361,           # Foursquare
}


@pytest.mark.parametrize("key", list(TABLE1_G1))
def test_first_level_grid_matches_table1(key):
    n, eps = key
    assert grids.first_level_side(n, eps, alpha=0.02) ** 2 == TABLE1_G1[key]


def test_second_level_sides_follow_eq5():
    n, eps, alpha, sigma = 1_000_000, 1.0, 0.25, 0.5
    phi = np.array([-0.01, 0.0, 0.001, 0.05, 0.3])
    expect = [max(1, round(math.sqrt(2 * alpha * max(f, 0) * (math.e - 1) * math.sqrt((1 - sigma) * n / math.e))))
              for f in phi]
    np.testing.assert_array_equal(grids.second_level_sides(phi, n, eps, alpha, sigma), expect)


def _clustered_users(n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    pts = np.concatenate([rng.normal(0.25, 0.04, (n // 2, 2)), rng.uniform(0, 1, (n - n // 2, 2))])
    return np.clip(pts, 0, 1)


@pytest.mark.parametrize("name", ["ug", "privag", "aag"])
@pytest.mark.parametrize("eps", [0.5, 3.0])
def test_partitions_tile_the_region_and_masses_are_fractions(name, eps):
    """Rectangles cover the unit square exactly once; locate() puts every user inside its rectangle."""
    grid = Grid(Region(0, 0, 1000), 16)
    users = grid.bin_unit(_clustered_users(60_000))
    est = mechanisms.create(name, grid, eps, path="aggregate").run(users, np.random.default_rng(1))
    part = est.partition
    assert part.is_tiling()
    assert part.mass.sum() == pytest.approx(1.0, abs=0.1)          # unbiased fractions, noisy
    assert est.density.sum() == pytest.approx(1.0) and np.all(est.density >= 0)
    assert est.info["cells"] == len(part)


def test_two_level_grid_locate_agrees_with_rects():
    rng = np.random.default_rng(2)
    phi = rng.uniform(-0.01, 0.1, (5, 5))
    g2 = rng.integers(1, 6, 25)
    for two in (grids.privag_grid(5, g2), grids.aag_grid(phi, g2)):
        rects = two.rects()
        pts = rng.uniform(0, 1, (20_000, 2))
        pts[:5] = [[0, 0], [1, 1], [1, 0], [0.2, 1.0], [0.6, 0.6]]      # corners and edges
        idx = two.locate(pts)
        r = rects[idx]
        assert np.all((pts[:, 0] >= r[:, 0]) & (pts[:, 0] <= r[:, 2]) & (pts[:, 1] >= r[:, 1]) & (pts[:, 1] <= r[:, 3]))
        assert Partition(rects, np.ones(len(rects))).is_tiling()


def test_cell_counts_privag_and_aag():
    """PrivAG holds sum g2^2 cells; AAG sum max(2, g2)^2 (the four parts are always made)."""
    phi = np.full((3, 3), 0.1)
    g2 = np.array([1, 2, 3, 4, 5, 1, 1, 2, 7])
    assert grids.privag_grid(3, g2).n_cells == int((g2 ** 2).sum())
    assert grids.aag_grid(phi, g2).n_cells == int((np.maximum(2, g2) ** 2).sum())


def test_aag_split_reproduces_figure1():
    """Fig. 1: up 10,000, down 50,000, left 2,000, right 4,000 -> width cut 2/3 from the west,
    height cut 1/6 from the south (the denser sides get the narrower parts)."""
    phi = np.array([[0, 50_000, 0], [2_000, 30_000, 4_000], [0, 10_000, 0]], dtype=float)   # row 0 = south
    fx, fy = grids.split_fractions(phi)
    assert fx[1, 1] == pytest.approx(2 / 3)
    assert fy[1, 1] == pytest.approx(1 / 6)


def test_aag_edge_and_corner_cells_use_their_own_density():
    """A missing neighbour takes the cell's own density (Sec. 3.3)."""
    phi = np.array([[4.0, 12.0], [1.0, 9.0]])      # [row from south, col from west]
    fx, fy = grids.split_fractions(phi)
    # South-west corner (4): west missing -> 4, east 12 -> fx = 12/16; south missing -> 4, north 1 -> fy = 1/5.
    assert fx[0, 0] == pytest.approx(12 / 16) and fy[0, 0] == pytest.approx(1 / 5)
    # North-east corner (9): east missing -> 9, west 1 -> fx = 9/10; north missing -> 9, south 12 -> fy = 9/21.
    assert fx[1, 1] == pytest.approx(9 / 10) and fy[1, 1] == pytest.approx(9 / 21)
    nb = grids.neighbour_densities(np.arange(9.0).reshape(3, 3))
    assert nb["west"][1, 0] == 3.0 and nb["east"][1, 2] == 5.0 and nb["south"][0, 1] == 1.0
    assert nb["north"][2, 1] == 7.0 and nb["north"][1, 1] == 7.0


def test_aag_negative_and_zero_densities():
    """Negative noisy densities count as 0; two empty neighbours cut centrally; cuts stay away from edges."""
    phi = np.array([[-5.0, -1.0, 3.0]])
    phi = np.vstack([phi, phi, phi])
    fx, _ = grids.split_fractions(phi)
    assert fx[1, 0] == pytest.approx(0.5)                      # west = own (-5 -> 0), east -1 -> 0
    assert fx[1, 1] == pytest.approx(1 - grids.MIN_SPLIT_FRACTION)   # east 3, west 0 -> clamped
    assert np.all((fx >= grids.MIN_SPLIT_FRACTION) & (fx <= 1 - grids.MIN_SPLIT_FRACTION))


@pytest.mark.parametrize("pieces", [2, 3, 4, 5, 8])
@pytest.mark.parametrize("split", [0.2, 0.5, 0.8])
def test_uneven_cuts_hold_pieces_and_give_the_narrow_part_more(split, pieces):
    cuts = grids._uneven_cuts(split, pieces)
    assert len(cuts) == pieces - 1 and split in cuts and np.all(np.diff(cuts) > 0)
    left = int(np.sum(cuts < split)) + 1
    right = pieces - left
    narrow_left = split <= 0.5
    assert (left, right) == (((pieces + 1) // 2, pieces // 2) if narrow_left else (pieces // 2, (pieces + 1) // 2))
    # Uniform inside each part.
    edges = np.concatenate([[0.0], cuts, [1.0]])
    widths = np.diff(edges)
    np.testing.assert_allclose(widths[:left], split / left)
    np.testing.assert_allclose(widths[left:], (1 - split) / right)


def test_aqe_on_a_hand_built_adaptive_partition():
    """Eq. 8 on a 2 x 2 first level whose south-west cell is cut at 1/4 of its width and 3/4 of its height."""
    two = grids.TwoLevelGrid(2, (np.array([0.25]), np.array([]), np.array([]), np.array([])),
                             (np.array([0.75]), np.array([]), np.array([]), np.array([])))
    rects = two.rects()
    # South-west cell [0, .5]^2 -> 4 pieces: x cut at .125, y cut at .375.
    np.testing.assert_allclose(rects[:4], [[0, 0, .125, .375], [.125, 0, .5, .375],
                                           [0, .375, .125, .5], [.125, .375, .5, .5]])
    mass = np.array([0.1, 0.2, 0.05, 0.15, 0.2, 0.2, 0.1])
    part = Partition(rects, mass)
    q = np.array([[0.0, 0.0, 0.125, 0.375],          # exactly piece 0
                  [0.0, 0.0, 0.25, 0.5],             # pieces 0, 2 whole, pieces 1, 3 one third each
                  [0.25, 0.25, 0.75, 0.75]])         # straddles all four first-level cells
    expect = [0.1,
              0.1 + 0.05 + (0.2 + 0.15) * (0.125 / 0.375),
              0.2 * (0.25 * 0.125) / (0.375 * 0.375) + 0.15 * (0.25 * 0.125) / (0.375 * 0.125)
              + 0.2 * 0.25 + 0.2 * 0.25 + 0.1 * 0.25]
    np.testing.assert_allclose(part.query(q), expect)
    assert two.locate(np.array([[0.1, 0.1], [0.2, 0.4], [0.9, 0.1], [0.1, 0.9], [0.9, 0.9]])).tolist() == \
        [0, 3, 4, 5, 6]


def test_ug_side_default_and_override():
    grid = Grid(Region(0, 0, 1000), 8)
    users = grid.bin_unit(_clustered_users(20_000))
    est = mechanisms.create("ug", grid, 1.0).run(users, np.random.default_rng(0))
    assert est.info["N"] == grids.first_level_side(20_000, 1.0, 0.02)
    est = mechanisms.create("ug", grid, 1.0, cells_per_side=5, oracle="hr").run(users, np.random.default_rng(0))
    assert est.info["N"] == 5 and len(est.partition) == 25


def test_aag_uses_alpha_first_for_g1():
    grid = Grid(Region(0, 0, 1000), 8)
    users = grid.bin_unit(_clustered_users(30_000))
    est = mechanisms.create("aag", grid, 1.0, path="aggregate").run(users, np.random.default_rng(0))
    assert est.info["g1"] == grids.first_level_side(30_000, 1.0, 0.02)
    est = mechanisms.create("aag", grid, 1.0, alpha_first=0.25, path="aggregate").run(users, np.random.default_rng(0))
    assert est.info["g1"] == grids.first_level_side(30_000, 1.0, 0.25)


def test_grid_registry_and_bad_input():
    for name in ("privag", "aag"):   # two phases: the second grid is built from the first phase's reports
        assert not mechanisms.get(name).has_client
    assert mechanisms.get("ug").has_client   # one round on a grid fixed by the number of users
    grid = Grid(Region(0, 0, 1000), 4)
    users = grid.bin_unit(np.array([[0.5, 0.5]]))
    with pytest.raises(LdpvizInputError, match="needs at least one in each"):
        mechanisms.create("privag", grid, 1.0).run(users, np.random.default_rng(0))
    with pytest.raises(LdpvizInputError, match="sigma"):
        mechanisms.create("aag", grid, 1.0, sigma=1.5)


# ---------------------------------------------------------------- size cap at extreme epsilon / alpha
def test_capped_second_sides_keep_budget_and_proportions():
    """Eq. 5 sides beyond the budget are scaled by one common factor: total <= MAX_GRID_CELLS, order kept."""
    sides = np.array([1, 3, 300, 5000, 10**7], dtype=np.int64)
    capped, scaled = grids.capped_second_sides(sides)
    assert scaled and float(np.square(capped.astype(float)).sum()) <= grids.MAX_GRID_CELLS
    assert np.all(np.diff(capped) >= 0) and capped.min() >= 1
    same, scaled = grids.capped_second_sides(np.array([2, 3]), min_side=2)
    assert not scaled and same.tolist() == [2, 3]


@pytest.mark.parametrize("name,epsilon,params", [("ug", 50.0, {}), ("ug", 18.0, {"alpha": 4.5}),
                                                 ("privag", 50.0, {}), ("aag", 50.0, {}),
                                                 ("privag", 50.0, {"alpha": 10.0})])
def test_extreme_sizes_are_capped(name, epsilon, params):
    """At eps = 50 (or a large alpha) eq. 4-5 ask for millions of cells; the grid is capped at MAX_GRID_CELLS
    and says so in info, and the estimate is still a distribution."""
    grid = Grid(Region(0, 0, 1000), 16)
    users = grid.bin_unit(_clustered_users(500))
    est = mechanisms.create(name, grid, epsilon, **params).run(users, np.random.default_rng(0))
    assert est.info["capped"] and est.info["cells"] <= grids.MAX_GRID_CELLS
    assert est.density.sum() == pytest.approx(1.0) and len(est.partition) == est.info["cells"]


def test_ug_client_half_reports_per_user():
    """UG is one round: perturb() gives one oracle report per user on the public N x N grid (OLH reports become
    the cells each supports, for the audit), estimate() turns them into the same map as run(); the aggregate
    path draws a statistic, so that instance has no client half."""
    grid = Grid(Region(0, 0, 1000), 8)
    users = grid.bin_unit(np.random.default_rng(4).random((3_000, 2)))
    mech = mechanisms.create("ug", grid, 1.0, cells_per_side=4)
    reports = mech.perturb(users, np.random.default_rng(9))
    assert reports.side == 4 and reports.n_users == 3_000
    key = mech.report_key(reports)
    assert key.shape == (3_000, 16) and key.dtype == bool
    forced = mechanisms.create("ug", grid, 1.0, cells_per_side=4, path="per-user")  # run() = perturb + estimate
    np.testing.assert_array_equal(mech.estimate(reports).density,
                                  forced.run(users, np.random.default_rng(9)).density)
    assert not mechanisms.create("ug", grid, 1.0, path="aggregate").has_client


@pytest.mark.slow
@pytest.mark.parametrize("name,params", [("ug", {"cells_per_side": 6}), ("privag", {}), ("aag", {})])
def test_aggregate_path_agrees_with_per_user_on_range_queries(name, params):
    """The aggregate path (per-cell OLH support counts drawn from their exact distribution given the true
    counts) agrees in distribution with simulating every phone, on what AQE uses: the raw partition's answer to
    range queries (sums over many pieces, so correlations between cells would show). Two-sample KS and Levene
    (equal variances) tests p > 1e-3, 200 seeded runs per path, 4,000 clustered users, eps = 1."""
    from scipy import stats
    from ldpviz import metrics
    grid = Grid(Region(0, 0, 1000), 16)
    users = grid.bin_unit(_clustered_users(4_000, seed=8))
    queries = np.array([[0.0, 0.0, 0.5, 0.5], [0.1, 0.1, 0.35, 0.3], [0.4, 0.2, 0.9, 0.8]])
    answers = {}
    for path, seed in (("per-user", 21), ("aggregate", 22)):
        mech = mechanisms.create(name, grid, 1.0, path=path, **params)
        answers[path] = np.array([metrics.estimate_answers(mech.run(users, np.random.default_rng([seed, t])).partition,
                                                           queries) for t in range(200)])
    for q in range(len(queries)):
        a, b = answers["per-user"][:, q], answers["aggregate"][:, q]
        assert stats.ks_2samp(a, b).pvalue > 1e-3, q
        assert stats.levene(a, b).pvalue > 1e-3, q
