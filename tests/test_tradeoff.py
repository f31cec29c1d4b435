"""ldpviz.decide.tradeoff: frontier, goal seek (smallest epsilon for a target) and users needed."""

from __future__ import annotations

import numpy as np
import pytest

from ldpviz import experiment
from ldpviz.decide import tradeoff
from ldpviz.errors import LdpvizInputError
from ldpviz.experiment import Scenario

SMALL = Scenario(dataset="minneapolis-stops", mechanism="grr", epsilon=1.0, grid_side=8, n_users=2000, seed=5,
                 trials=3)


@pytest.mark.parametrize("metric", ["w2_m", "aqe", "kl", "l1"])
def test_evaluator_matches_separate_runs(metric):
    """The single-metric evaluator reproduces experiment.run's per-trial metric exactly (same streams)."""
    for name, eps in (("grr", 1.5), ("planar-laplace", 0.7)):
        sc = SMALL.with_(mechanism=name, epsilon=eps)
        ev = tradeoff.Evaluator(sc, metric)
        np.testing.assert_allclose(ev.values(eps, 2000), experiment.run(sc).metrics[metric].to_numpy(), rtol=1e-12)


def test_frontier_points_match_separate_runs():
    """Each frontier point's mean equals a separate experiment.run at that setting; attacker error falls with epsilon."""
    df = tradeoff.frontier(SMALL, ["grr", "oue"], [0.5, 4.0], metric="l1", n_users=[2000])
    assert len(df) == 4 and set(df["privacy_model"]) == {"LDP"}
    for _, row in df.iterrows():
        run = experiment.run(SMALL.with_(mechanism=row["mechanism"], epsilon=row["epsilon"]))
        assert row["l1"] == pytest.approx(run.metrics["l1"].mean(), rel=1e-12)
        assert row["l1_lo"] <= row["l1"] <= row["l1_hi"]
    grr = df[df.mechanism == "grr"].sort_values("epsilon")
    assert grr["attacker_error_m"].iloc[0] > grr["attacker_error_m"].iloc[1]
    oue = df[df.mechanism == "oue"].sort_values("epsilon")      # no explicit channel: Monte Carlo attacker
    assert oue["attacker_method"].str.startswith("monte carlo").all() and (oue["attacker_error_se_m"] > 0).all()
    assert oue["attacker_error_m"].iloc[0] > oue["attacker_error_m"].iloc[1]
    assert (grr["attacker_method"] == "exact").all()


def test_frontier_sweeps_the_number_of_users():
    """Varying users: the frontier has one row per (n, epsilon), n as asked, and more users give lower L1."""
    df = tradeoff.frontier(SMALL.with_(n_users=None), ["grr"], [2.0], metric="l1", n_users=[300, 10_000],
                           attacker=False)
    assert list(df["n_users"]) == [300, 10_000]
    assert df["l1"].iloc[1] < df["l1"].iloc[0]


def confident(ev: tradeoff.Evaluator, x, users, target: float, first: int, cap: int = tradeoff.MAX_TRIALS_NEAR,
              by: str = "epsilon") -> bool:
    """The goal seek's rule, applied independently: met when the 95% CI's upper end is <= target, trials
    added (from ``first``, at most ``cap``) only while the mean meets it and the predicted trials fit the cap."""
    decide = tradeoff._Decider((lambda e, t: ev.values(e, users, t)) if by == "epsilon" else
                               (lambda n, t: ev.values(2.0, n, t)), target, True, first, max(first, cap))
    return decide(x)[0]


def brute_force_epsilon(sc: Scenario, metric: str, target: float, lo: float, hi: float) -> tuple[float, float]:
    """On a fine log grid (~2% steps) over [lo, hi] (lo itself must miss the target): the first epsilon meeting it
    with 95% confidence, and the threshold from which on every grid epsilon meets it. Each epsilon draws its own
    noise, so the rule is not monotone in epsilon: between the two, grid points can meet it and miss it. A
    bracketing search (the goal seek) lands in that band."""
    ev = tradeoff.Evaluator(sc, metric)
    grid = np.geomspace(lo, hi, int(np.log(hi / lo) / np.log(1.02)) + 1)
    met = [confident(ev, float(eps), sc.n_users, target, sc.trials) for eps in grid]
    assert not met[0]
    first = next((float(e) for e, ok in zip(grid, met) if ok), float("nan"))
    last_miss = max(i for i, ok in enumerate(met) if not ok)
    return first, (float(grid[last_miss + 1]) if last_miss + 1 < len(grid) else float("nan"))


@pytest.mark.parametrize("name,metric,target,users", [
    ("grr", "l1", 0.5, 2000), ("grr", "w2_m", 2000.0, 2000),
    pytest.param("planar-laplace", "w2_m", 1000.0, None, marks=pytest.mark.slow)])
def test_goal_seek_matches_brute_force(name, metric, target, users):
    """The goal seek's epsilon meets the target with 95% confidence (the CI's upper end, not the mean), 5% less
    does not, and it lies (within the 5% tolerance plus one 2% grid step) between the first epsilon a brute-force
    scan of the same rule finds and the threshold above which every scanned epsilon meets it."""
    sc = SMALL.with_(mechanism=name, n_users=users)
    got = tradeoff.target_epsilon(sc, metric, target, n_users=users, attacker=False)
    ev = tradeoff.Evaluator(sc, metric)
    assert got.reached and got.ci_high <= target and got.trials >= sc.trials
    assert not confident(ev, got.epsilon / 1.05, users, target, sc.trials)
    first, threshold = brute_force_epsilon(sc, metric, target, got.epsilon / 1.25, min(got.epsilon * 1.25, 50.0))
    assert first / 1.03 <= got.epsilon <= threshold * 1.08, (got.epsilon, first, threshold)
    assert got.ci_low <= got.mean <= got.ci_high and got.evaluations < 25
    assert got.runs >= got.trials and got.search_range.startswith("epsilon 0.001 to 50")


def test_goal_seek_does_not_end_on_the_mean():
    """Issue 22: where the mean meets the target but the CI's upper end does not, the target is not reached
    there: the answer lies above the epsilon at which the mean alone first meets it."""
    sc = SMALL.with_(trials=3)
    got = tradeoff.target_epsilon(sc, "w2_m", 2000.0, n_users=2000, attacker=False, max_trials=3)
    ev = tradeoff.Evaluator(sc, "w2_m")
    below = got.epsilon / 1.05
    mean, lo, hi = experiment.mean_ci(ev.values(below, 2000, 3))
    assert hi > 2000.0 and got.ci_high <= 2000.0
    grid = np.geomspace(got.epsilon / 2, got.epsilon, 40)
    mean_first = next(e for e in grid if ev.values(float(e), 2000, 3).mean() <= 2000.0)
    assert mean_first < got.epsilon


def test_decider_adds_trials_only_where_they_can_decide():
    """The decider (synthetic per-trial values, fixed seed): a mean below the target with a wide interval gets
    more trials until the upper end meets it (never beyond the cap); a mean above the target is 'not met' with
    no trials added; a prediction beyond the cap stops at once."""
    noise = np.random.default_rng(3).standard_normal(100)
    calls = []

    def values(mean: float, trials: int) -> np.ndarray:
        calls.append(trials)
        return mean + 0.3 * noise[:trials]

    decide = tradeoff._Decider(values, 1.0, True, 5, 40)
    met, mean, lo, hi, trials = decide(0.8)
    assert met and hi <= 1.0 and 5 < trials <= 40
    calls.clear()
    met, _, _, _, trials = decide(1.1)
    assert not met and trials == 5 and calls == [5]
    capped = tradeoff._Decider(values, 1.0, True, 5, 6)
    met, _, _, hi, trials = capped(0.95)
    assert not met and hi > 1.0 and trials <= 6


def test_answers_beyond_meaningful_privacy_carry_a_warning():
    """Issue 22: an LDP answer above epsilon = 10 and a Geo-I setting above 10 per neighbouring cell are flagged;
    epsilon = 2 (LDP) and 1 per km on 750 m cells are not."""
    from ldpviz import mechanisms
    from ldpviz.geo.domain import Grid, Region
    got = tradeoff.target_epsilon(SMALL, "l1", 0.001, n_users=2000, attacker=False)
    assert got.reached and got.epsilon > 10 and "Practically no privacy" in got.warning
    small, wide = Grid(Region(-93.27, 44.97, 6000.0, "t"), 8), Grid(Region(10.0, 50.0, 800_000.0, "w"), 4)
    assert tradeoff.weak_privacy_warning(mechanisms.create("grr", small, 2.0)) is None
    assert tradeoff.weak_privacy_warning(mechanisms.create("planar-laplace", small, 1.0)) is None
    geo = tradeoff.weak_privacy_warning(mechanisms.create("planar-laplace", wide, 1.0))
    assert "per km on cells of 200 km" in geo and "Practically no privacy" in geo


def test_unreachable_target_says_so():
    got = tradeoff.target_epsilon(SMALL, "l1", 0.05, n_users=2000, attacker=False, eps_range=(1e-3, 0.5))
    assert not got.reached and got.epsilon is None and "not reached with 95% confidence" in got.message
    assert got.search_range == "epsilon 0.001 to 0.5" and got.ci_high > 0.05


def test_users_needed_matches_brute_force():
    """Smallest n (within 5% or one user) at epsilon = 2 meeting L1 <= target with 95% confidence, against a scan."""
    sc = SMALL.with_(epsilon=2.0, n_users=None)
    target = 0.45
    got = tradeoff.users_needed(sc, "l1", target, attacker=False)
    assert got.reached and got.ci_high <= target and got.search_range.endswith("users (everyone in the region)")
    ev = tradeoff.Evaluator(sc, "l1")
    scan = [n for n in np.unique(np.geomspace(10, 40_000, 120).astype(int))
            if confident(ev, int(n), None, target, sc.trials, by="users")]
    assert scan and scan[0] / 1.15 <= got.n_users <= scan[0] * 1.15, (got.n_users, scan[0])
    never = tradeoff.users_needed(sc.with_(epsilon=0.01), "l1", 0.01, attacker=False)
    assert not never.reached and "more users than the data holds" in never.message


def test_bad_goal_arguments():
    with pytest.raises(LdpvizInputError, match="--metric"):
        tradeoff.target_epsilon(SMALL, "pearson", 0.5)
    with pytest.raises(LdpvizInputError, match="--at-most"):
        tradeoff.target_epsilon(SMALL, "l1", -1.0)
