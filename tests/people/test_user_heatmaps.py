"""User-level central-DP heatmaps (dp-heatmaps paper): sensitivity, budgets, App. F shuffle, App. A k-median."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest

from ldpviz.mechanisms.heatmaps import pyramid
from ldpviz.people import user_heatmaps as uh
from ldpviz.geo.domain import Grid, Region
from ldpviz.errors import LdpvizInputError

REGION = Region(-93.0, 45.0, 4000.0, "toy")


def _frame(people: dict, side: int) -> pd.DataFrame:
    """Rows at the centres of (row, col) cells of a side x side grid over REGION."""
    rows = []
    for pid, cells in people.items():
        for r, c in cells:
            lon, lat = REGION.unit_to_lonlat(np.array([(c + 0.5) / side, (r + 0.5) / side]))
            rows.append((pid, float(lon), float(lat)))
    return pd.DataFrame(rows, columns=["person", "lon", "lat"])


POOL = {  # people with 1 to 3 points, some repeated cells (4 x 4 grid)
    "a": [(0, 0)], "b": [(3, 3), (3, 3)], "c": [(0, 1), (2, 2), (3, 0)], "d": [(1, 1), (1, 2)],
    "e": [(2, 3)], "f": [(0, 0), (0, 0), (3, 3)], "g": [(1, 0), (2, 1)], "h": [(3, 2), (3, 2), (3, 2)]}


def _levels(aggregate: np.ndarray) -> list[np.ndarray]:
    top = pyramid.require_power_of_two(aggregate.shape[0])
    return [pyramid.level_sums(aggregate, level) for level in range(top + 1)]


def test_sensitivity_exact_over_neighbouring_datasets():
    """For every data set of 1 to 3 people from a pool and every neighbour with one person removed, every
    level sum P_i s changes by exactly SENSITIVITY = 1 in l1 (each person normalised to weight 1); the
    unnormalised point counts change by up to 3, the largest number of points of a person."""
    grid = Grid(REGION, 4)
    seen_norm, seen_raw = set(), set()
    for size in (1, 2, 3):
        for group in itertools.combinations(POOL, size):
            full = uh.person_distributions(_frame({p: POOL[p] for p in group}, 4), grid)
            raw_full = grid.histogram(grid.bin_lonlat(*_lonlat(group)).cells)
            for gone in group:
                rest = [p for p in group if p != gone]
                agg_rest = (uh.person_distributions(_frame({p: POOL[p] for p in rest}, 4), grid).aggregate()
                            if rest else np.zeros((4, 4)))
                raw_rest = grid.histogram(grid.bin_lonlat(*_lonlat(rest)).cells) if rest else np.zeros((4, 4))
                for a, b in zip(_levels(full.aggregate()), _levels(agg_rest)):
                    seen_norm.add(round(float(np.abs(a - b).sum()), 12))
                seen_raw.add(float(np.abs(raw_full - raw_rest).sum()))
    assert seen_norm == {uh.SENSITIVITY}
    assert max(seen_raw) == 3.0


def _lonlat(group):
    frame = _frame({p: POOL[p] for p in group}, 4)
    return frame["lon"].to_numpy(), frame["lat"].to_numpy()


@pytest.mark.parametrize("side", [8, 64])
@pytest.mark.parametrize("epsilon", [0.1, 1.0, 5.0])
def test_budgets_sum_to_epsilon(side, epsilon):
    """dp-heatmap's level budgets (central and shuffle) add up to epsilon (basic composition)."""
    frame = _frame({i: [(i % 4, i // 4)] for i in range(16)}, 4)
    dists = uh.person_distributions(frame, Grid(REGION, side))
    central = uh.user_level_heatmap(dists, "dp-heatmap", epsilon, np.random.default_rng(0))
    assert sum(central.info["level_epsilons"]) == pytest.approx(epsilon, rel=1e-5)
    shuffled = uh.user_level_heatmap(dists, "dp-heatmap", epsilon, np.random.default_rng(0),
                                     shuffle=uh.ShuffleSpec(delta=1e-5, scale=10))
    assert sum(shuffled.info["level_epsilons"]) == pytest.approx(epsilon, rel=1e-12)
    assert central.privacy_unit == uh.PRIVACY_UNIT and "person" in shuffled.guarantee


@pytest.mark.parametrize("epsilon, delta, n, side, scale", [
    (1.0, 1e-5, 50, 4, 10), (5.0, 1e-5, 50, 64, 100), (0.5, 1e-3, 1000, 16, 1)])
def test_shuffle_accounting_matches_app_f(epsilon, delta, n, side, scale):
    """r = ceil((2 ln(e^eps + 1) + 2 ln(m / delta) + ln q) / ln n + 1), m = measured coordinates, and the
    communication r m ceil(log2(m q)) bits per person (App. F), recomputed by hand."""
    plan = uh.shuffle_plan(epsilon, n, side, uh.ShuffleSpec(delta, scale))
    top = int(math.log2(side))
    first = min(int(math.floor(math.log2(20) / 2)), top)
    m = sum(4 ** i for i in range(first, top + 1))
    q = 2 * scale * n
    r = math.ceil((2 * math.log(math.exp(epsilon) + 1) + 2 * math.log(m / delta) + math.log(q)) / math.log(n) + 1)
    assert (plan.coordinates, plan.modulus, plan.shares) == (m, q, r)
    assert plan.bits_per_person == r * m * math.ceil(math.log2(m * q))
    assert f"({epsilon:g}, {delta:g})-DP" in plan.guarantee() and f"{n:,} people" in plan.guarantee()


def test_shuffle_needs_two_people():
    with pytest.raises(LdpvizInputError, match="at least 2 people"):
        uh.shuffle_shares(1.0, 1e-5, 1, 16, 20)


def test_split_shares_sum_back():
    """Split & mix: the r shares of every coordinate sum to its value mod q."""
    rng = np.random.default_rng(0)
    values = rng.integers(-50, 500, size=40)
    shares = uh.split_shares(values, 7, 1000, rng)
    assert shares.shape == (7, 40) and shares.min() >= 0 and shares.max() < 1000
    assert (np.mod(shares.sum(axis=0), 1000) == np.mod(values, 1000)).all()


def test_polya_noise_sums_to_discrete_laplace():
    """The n people's Polya(1/n, a) differences sum to DLap(a): P(0) = (1-a)/(1+a) and variance
    2a/(1-a)^2 (a = 0.5: 1/3 and 4), checked on 100,000 sums of 20 people (fixed seed)."""
    rng = np.random.default_rng(1)
    total = uh.polya_noise((20, 100_000), 20, 0.5, rng).sum(axis=0)
    assert abs((total == 0).mean() - 1 / 3) < 0.01
    assert abs(total.var() - 4.0) < 0.15


def test_shuffle_measurements_track_the_aggregate():
    """At eps = 50 and B = 1000 the decoded shuffle measurements equal the true level sums within the
    rounding (each person's floor loses < 1/B per coordinate: < n/B) plus 10 noise scales 1/eps_i (the
    DLap(e^(-eps_i/B)) noise is eps_i-DP on B-scaled sums); a decoding or wrap-around bug would be off by ~n."""
    frame = _frame({i: POOL[p] for i, p in enumerate(POOL)}, 4)
    dists = uh.person_distributions(frame, Grid(REGION, 8))
    measured, plan = uh.shuffle_measure(dists, 50.0, np.random.default_rng(0), uh.ShuffleSpec(1e-5, 1000),
                                        per_person=True)
    agg = dists.aggregate()
    for j, level in enumerate(range(measured.first_level, measured.top + 1)):
        truth = pyramid.level_sums(agg, level)
        bound = 10.0 / measured.level_epsilon[j] + len(POOL) / 1000
        assert np.abs(measured.noisy[j] * 2.0 ** level - truth).max() < bound
    assert plan.n_people == len(POOL)


def test_person_distributions_count_what_is_dropped():
    """Rows without a person id, with a missing coordinate or outside the region are dropped and counted;
    a person left with no point is counted too; every kept row sums to 1."""
    frame = _frame({"x": [(0, 0), (1, 1)], "y": [(2, 2)]}, 4)
    extra = pd.DataFrame({"person": [None, "x", "z"], "lon": [-93.0, np.nan, 10.0], "lat": [45.0, 45.0, 10.0]})
    dists = uh.person_distributions(pd.concat([frame, extra], ignore_index=True), Grid(REGION, 4))
    assert dists.dropped == {"missing person id": 1, "missing coordinate": 1, "outside the region": 1}
    assert dists.people_dropped == 1 and dists.n_people == 2
    assert np.allclose(np.asarray(dists.matrix.sum(axis=1)).ravel(), 1.0)
    assert "dropped" in dists.summary()
    with pytest.raises(LdpvizInputError, match="no column 'who'"):
        uh.person_distributions(frame, Grid(REGION, 4), person="who")


def test_methods_and_shuffle_restriction():
    dists = uh.person_distributions(_frame({i: POOL[p] for i, p in enumerate(POOL)}, 4), Grid(REGION, 8))
    for method in uh.METHODS:
        res = uh.user_level_heatmap(dists, method, 1.0, np.random.default_rng(0))
        assert res.density.sum() == pytest.approx(1.0) and res.info["sensitivity"] == 1.0
    with pytest.raises(LdpvizInputError, match="dp-heatmap only"):
        uh.user_level_heatmap(dists, "laplace", 1.0, np.random.default_rng(0), shuffle=uh.ShuffleSpec())


@pytest.mark.parametrize("side, k", [(8, 2), (6, 3)])
def test_local_search_within_five_of_brute_force(side, k):
    """Single-swap local search over all cells costs at most 5 x the brute-force optimum (Arya et al.);
    on these toy instances (three weighted clusters, fixed seed) it finds the optimum."""
    rng = np.random.default_rng(side)
    w = np.zeros((side, side))
    for r, c, mass in ((1, 1, 30), (side - 2, side - 2, 20), (0, side - 1, 10)):
        w[r, c] += mass
    w += rng.integers(0, 3, size=(side, side))
    centres = uh.kmedian_local_search(w, k)
    _, opt = uh.kmedian_brute_force(w, k)
    cost = uh.kmedian_cost(w, centres)
    assert cost <= 5 * opt + 1e-9
    assert cost == pytest.approx(opt)


@pytest.mark.parametrize("epsilon", [1.0, 5.0])
def test_dp_kmedian_cost_within_stated_bound(epsilon):
    """App. A + local search: cost_s(C_dp) <= 5 OPT + 6 ||s - s_hat||_EMD, with OPT by brute force and the
    EMD norm solved exactly (fixed seeds); the centres come with lon/lat for a map."""
    side, k = 8, 2
    people = {}
    rng = np.random.default_rng(7)
    for i in range(60):
        r, c = ((1, 1), (6, 5))[i % 2]
        people[i] = [(min(side - 1, r + rng.integers(0, 2)), min(side - 1, c + rng.integers(0, 2)))
                     for _ in range(rng.integers(1, 4))]
    grid = Grid(REGION, side)
    dists = uh.person_distributions(_frame(people, side), grid)
    res = uh.dp_kmedian_centres(dists, grid, k, epsilon, np.random.default_rng(0), max_candidates=side * side)
    s = dists.aggregate()
    _, opt = uh.kmedian_brute_force(s, k)
    zeta = uh.emd_norm(s - res.coreset)
    assert uh.kmedian_cost(s, res.centres_cells) <= 5 * opt + 6 * zeta + 1e-9
    assert res.centres_lonlat.shape == (k, 2) and REGION.contains(*res.centres_lonlat.T).all()
    assert res.privacy_unit == uh.PRIVACY_UNIT


def test_emd_norm_simple_cases():
    """Moving one unit three cells costs 3; unmatched mass costs alpha per unit."""
    w = np.zeros((4, 4))
    w[0, 0], w[0, 3] = 1.0, -1.0
    assert uh.emd_norm(w) == pytest.approx(3.0)
    w[0, 3] = 0.0
    assert uh.emd_norm(w) == pytest.approx(6.0)


def test_trajectory_frames_and_mixed_ids():
    """A generated trajectory table feeds the user-level heatmap directly; mixed id types are distinct people."""
    from ldpviz.data import trajectory_generator as trajgen

    frame = trajgen.minneapolis_trajectories(seed=2, n_trajectories=40, max_length=30)
    grid = Grid(Region(**frame.attrs["region"]), 16)
    dists = uh.person_distributions(frame, grid)
    assert dists.n_people == 40 and int(dists.points.sum()) == len(frame)
    mixed = _frame({1: [(0, 0)], "1": [(1, 1)], "b": [(2, 2), (3, 3)]}, 4)
    assert uh.person_distributions(mixed, Grid(REGION, 4)).n_people == 3
    with pytest.raises(LdpvizInputError, match="top_percent"):
        uh.user_level_heatmap(dists, "laplace-top", 1.0, np.random.default_rng(0), top_percent=0)


@pytest.mark.parametrize("epsilon, scale", [(2.0, 10), (1.0, 1)])
def test_shuffle_noise_is_calibrated_to_the_scaled_sensitivity(epsilon, scale):
    """The decoded shuffle noise of level i is DLap(e^(-eps_i / B)) / B: its variance is
    2 a / ((1 - a)^2 B^2) with a = e^(-eps_i / B) (about 2 / eps_i^2, the central Laplace's), checked
    within 15% over 300 seeded runs (4,800 draws; the estimate's standard error is about 4%); with App. F's literal
    e^(-eps_i) it would be B^2 times smaller.
    One point per person, so B y is integral and no rounding enters."""
    people = {i: [(i % 4, (i // 4) % 4)] for i in range(30)}
    dists = uh.person_distributions(_frame(people, 4), Grid(REGION, 4))
    truth = pyramid.level_sums(dists.aggregate(), 2)
    errors = []
    for seed in range(300):
        measured, _ = uh.shuffle_measure(dists, epsilon, np.random.default_rng(seed), uh.ShuffleSpec(1e-5, scale))
        errors.append((measured.noisy[0] * 4.0 - truth).ravel())
        eps_i = measured.level_epsilon[0]
    a = math.exp(-eps_i / scale)
    expected = 2 * a / ((1 - a) ** 2 * scale ** 2)
    assert np.var(np.concatenate(errors)) == pytest.approx(expected, rel=0.15)
