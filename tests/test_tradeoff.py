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


def brute_force_epsilon(sc: Scenario, metric: str, target: float, lo: float, hi: float) -> float:
    """Smallest epsilon on a fine log grid (~2% steps) over [lo, hi] whose mean metric is <= target
    (lo itself must miss the target, so nothing below the grid could be the answer if the metric is monotone)."""
    ev = tradeoff.Evaluator(sc, metric)
    grid = np.geomspace(lo, hi, int(np.log(hi / lo) / np.log(1.02)) + 1)
    assert ev.values(float(grid[0]), sc.n_users).mean() > target
    for eps in grid:
        if ev.values(float(eps), sc.n_users).mean() <= target:
            return float(eps)
    return float("nan")


@pytest.mark.parametrize("name,metric,target,users", [
    ("grr", "l1", 0.5, 2000), ("grr", "w2_m", 2000.0, 2000),
    pytest.param("planar-laplace", "w2_m", 1000.0, None, marks=pytest.mark.slow)])
def test_goal_seek_matches_brute_force(name, metric, target, users):
    """The goal seek's epsilon meets the target, 5% less does not, and it lies within the 5% tolerance (plus
    one 2% grid step) of a brute-force scan (cases where the mean metric is monotone in epsilon)."""
    sc = SMALL.with_(mechanism=name, n_users=users)
    got = tradeoff.target_epsilon(sc, metric, target, n_users=users, attacker=False)
    ev = tradeoff.Evaluator(sc, metric)
    assert ev.values(got.epsilon / 1.05, users).mean() > target
    want = brute_force_epsilon(sc, metric, target, got.epsilon / 1.25, min(got.epsilon * 1.25, 50.0))
    assert got.reached and got.mean <= target
    assert want / 1.03 <= got.epsilon <= want * 1.08, (got.epsilon, want)
    assert got.ci_low <= got.mean <= got.ci_high and got.evaluations < 20


def test_unreachable_target_says_so():
    got = tradeoff.target_epsilon(SMALL, "l1", 0.05, n_users=2000, attacker=False, eps_range=(1e-3, 0.5))
    assert not got.reached and got.epsilon is None and "cannot reach" in got.message


def test_users_needed_matches_brute_force():
    """Smallest n (within 5% or one user) at epsilon = 2 whose mean L1 is <= target, against a scan."""
    sc = SMALL.with_(epsilon=2.0, n_users=None)
    target = 0.45
    got = tradeoff.users_needed(sc, "l1", target, attacker=False)
    assert got.reached and got.mean <= target
    ev = tradeoff.Evaluator(sc, "l1")
    scan = [n for n in np.unique(np.geomspace(10, 40_000, 120).astype(int)) if ev.values(2.0, int(n)).mean() <= target]
    assert scan and scan[0] / 1.15 <= got.n_users <= scan[0] * 1.15, (got.n_users, scan[0])
    never = tradeoff.users_needed(sc.with_(epsilon=0.01), "l1", 0.01, attacker=False)
    assert not never.reached and "more users than the data holds" in never.message


def test_bad_goal_arguments():
    with pytest.raises(LdpvizInputError, match="--metric"):
        tradeoff.target_epsilon(SMALL, "pearson", 0.5)
    with pytest.raises(LdpvizInputError, match="--at-most"):
        tradeoff.target_epsilon(SMALL, "l1", -1.0)
