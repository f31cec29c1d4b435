"""ldpviz.decide.tradeoff: frontier, goal seek (smallest epsilon for a target) and users needed."""

from __future__ import annotations

import numpy as np
import pytest

from ldpviz import experiment
from ldpviz.decide import one_collection, tradeoff
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
    """Each frontier point's mean equals a separate experiment.run at that setting; attacker error falls with
    epsilon."""
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


def fresh_rule(ev: tradeoff.Evaluator, users, target: float, trials: int = one_collection.DEFAULT_TRIALS):
    """The goal seek's rule, applied independently on the fresh streams (stream 1): the tolerance bound over
    ``trials`` collections at or below the target."""
    return lambda e: one_collection.read(ev.values(float(e), users, trials, stream=one_collection.FRESH_STREAM),
                                         target, True).met


@pytest.mark.parametrize("name,metric,target,users", [
    ("grr", "l1", 0.5, 2000), ("grr", "w2_m", 2000.0, 2000),
    pytest.param("planar-laplace", "w2_m", 1000.0, None, marks=pytest.mark.slow)])
def test_goal_seek_answers_one_collection(name, metric, target, users):
    """The answer meets the one-collection rule on fresh streams (recomputed here independently, bound <= target);
    the search's own streams miss the rule 5% below the search's answer; and the answer is no larger than the
    smallest value of the scan's grid at which the fresh rule holds (a brute-force check over the grid)."""
    sc = SMALL.with_(mechanism=name, n_users=users)
    got = tradeoff.target_epsilon(sc, metric, target, n_users=users, attacker=False)
    ev = tradeoff.Evaluator(sc, metric)
    rule = fresh_rule(ev, users, target)
    assert got.reached and got.bound <= target and rule(got.epsilon) and got.trials == one_collection.DEFAULT_TRIALS
    search = one_collection.read(ev.values(got.search_answer / 1.05, users, got.trials), target, True)
    assert not search.met
    grid = [e for e in one_collection.log_grid(1e-3, 50.0) if e >= got.search_answer / 4]
    first = next(e for e in grid if rule(e))
    assert got.epsilon <= first * (1 + 1e-9), (got.epsilon, first)
    assert got.ci_low <= got.mean <= got.ci_high and got.mean_met
    assert got.runs >= got.trials and got.search_range.startswith("epsilon 0.001 to 50")
    assert got.message.startswith(f"smallest found on a scan of {got.scanned} values") and got.scanned >= 3
    assert "smallest epsilon" not in got.message


def test_one_collection_rule_is_stricter_than_the_mean():
    """Issue 27: just below the answer the mean's interval can meet the target while one collection is not yet
    safe: the search's streams show an epsilon below the answer where the mean meets it and the rule does not."""
    sc = SMALL.with_(trials=3)
    got = tradeoff.target_epsilon(sc, "w2_m", 2000.0, n_users=2000, attacker=False)
    ev = tradeoff.Evaluator(sc, "w2_m")
    grid = np.geomspace(got.search_answer / 3, got.search_answer, 30)
    readings = [one_collection.read(ev.values(float(e), 2000, 10), 2000.0, True) for e in grid]
    assert any(r.mean_met and not r.met for r in readings)


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
    assert not got.reached and got.epsilon is None and "not reached" in got.message
    assert got.search_range == "epsilon 0.001 to 0.5" and got.scanned == len(one_collection.log_grid(1e-3, 0.5))


def test_users_needed_answers_one_collection():
    """The fewest users found at epsilon = 2 meeting the one-collection rule on fresh streams; a bisection point
    within 5% (or one user) below the search's answer does not meet it on the search's streams (recomputed here).
    Each number of users is its own seeded subsample, so the rule is not monotone in n: 'fewest found', no more."""
    sc = SMALL.with_(epsilon=2.0, n_users=None)
    target = 0.45
    got = tradeoff.users_needed(sc, "l1", target, attacker=False)
    assert got.reached and got.bound <= target and got.search_range.endswith("users (everyone in the region)")
    ev = tradeoff.Evaluator(sc, "l1")
    fewer = max(n for n, ok in got.refined if not ok and n < got.search_answer)
    assert fewer >= got.search_answer / 1.05 - 1
    assert not one_collection.read(ev.values(2.0, int(fewer), got.trials), target, True).met
    assert one_collection.read(ev.values(2.0, got.n_users, got.trials, stream=1), target, True).met
    never = tradeoff.users_needed(sc.with_(epsilon=0.01), "l1", 0.01, attacker=False)
    assert not never.reached and "more users than the data holds" in never.message


def test_bad_goal_arguments():
    with pytest.raises(LdpvizInputError, match="--metric"):
        tradeoff.target_epsilon(SMALL, "pearson", 0.5)
    with pytest.raises(LdpvizInputError, match="--at-most"):
        tradeoff.target_epsilon(SMALL, "l1", -1.0)
