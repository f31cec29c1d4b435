"""Trials in one pass (issue 23): a run's trials drawn, estimated and scored together give the same numbers
as the one-trial loop with the same seeds."""

import numpy as np
import pytest

from ldpviz.data import datasets
from ldpviz import experiment, mechanisms, metrics
from ldpviz.mechanisms.estimation import em_stopping_rule, expectation_maximisation, expectation_maximisation_batch
from ldpviz.experiment import Scenario

SMALL = Scenario(dataset="minneapolis-stops", epsilon=1.0, grid_side=16, n_users=4000, seed=5, trials=3)


def _loop(scenario: Scenario):
    """The one-trial loop the batched run replaces: trial t collects and estimates with generator (seed, t)."""
    data = datasets.load(scenario.dataset)
    grid, users, _ = experiment.prepare_users(scenario, data)
    mech = mechanisms.create(scenario.mechanism, grid, scenario.epsilon, **scenario.param_dict)
    out = []
    for trial in range(scenario.trials):
        rng = np.random.default_rng([scenario.seed, trial])
        out.append(mech.estimate(mech.collect(users, rng)) if mech.has_client else mech.run(users, rng))
    return grid, users, out


@pytest.mark.parametrize("name", mechanisms.available())
def test_batched_run_equals_one_trial_loop(name):
    """Same seeds, same results, for every registered mechanism: every trial's estimate, its EM step count and
    every metric of ``run(trials=3)`` equal the one-trial loop's, bit for bit (the stacked EM takes each
    trial's steps and stops, its maps give each trial the same bits whatever the stack's width; shared
    truth-side metric work changes no value). The streams are the same generators used in the same order."""
    scenario = SMALL.with_(mechanism=name)
    result = experiment.run(scenario)
    grid, users, loop = _loop(scenario)
    queries = metrics.random_queries(scenario.query_rho, seed=scenario.seed)
    for trial, (got, want) in enumerate(zip(result.estimates, loop)):
        np.testing.assert_array_equal(got.density, want.density)
        for key in ("iterations", "steps", "converged"):
            assert got.info.get(key) == want.info.get(key), (name, trial, key)
        row = metrics.evaluate(result.true_density, want, cell_m=grid.cell_m, n_users=len(users.cells),
                               true_points=users.unit, queries=queries)
        for key, value in row.items():
            assert result.metrics.iloc[trial][key] == value, (name, trial, key)


def test_trial_zero_does_not_depend_on_the_number_of_trials():
    """A run with 3 trials starts with the run of 1 trial: adding trials never changes the first map."""
    one = experiment.run(SMALL.with_(mechanism="dam", trials=1))
    three = experiment.run(SMALL.with_(mechanism="dam"))
    np.testing.assert_array_equal(one.estimate.density, three.estimate.density)
    assert one.metrics.iloc[0]["w2_m"] == three.metrics.iloc[0]["w2_m"]


@pytest.mark.parametrize("rule", ["holdout", "converged"])
def test_batched_em_equals_per_trial_em(rule):
    """EM on a (T, D, D) stack of DAM histograms gives, trial by trial, the estimate and the step count of EM
    on each histogram alone, including a trial with too few reports to hold some out (it converges)."""
    grid = experiment.prepare_users(SMALL, datasets.load(SMALL.dataset))[0]
    mech = mechanisms.create("dam", grid, 2.0)
    rng = np.random.default_rng(11)
    D, d = mech.chan.out_side, grid.side
    truth = np.bincount(rng.integers(0, d * d, 3000), minlength=d * d)
    lonely = np.zeros((D, D))
    lonely.flat[mech.chan.mask_cells[5]] = 1.0                      # one report: nothing to hold out
    stack = np.stack([mech.chan.aggregate(truth, rng).reshape(D, D).astype(float) for _ in range(3)] + [lonely])
    with em_stopping_rule(rule):
        batched, infos = expectation_maximisation_batch(stack, mech.chan.forward_batch, mech.chan.adjoint_batch,
                                                        (d, d), smoothing=False)
        for k, counts in enumerate(stack):
            alone, info = expectation_maximisation(counts, mech.chan.forward, mech.chan.adjoint, (d, d),
                                                   smoothing=False)
            np.testing.assert_allclose(batched[k], alone, rtol=1e-12, atol=1e-15)
            assert infos[k] == info


def test_evaluate_trials_equals_evaluate():
    """Scoring several estimates at once (truth-side work shared) gives evaluate()'s numbers and readouts."""
    result = experiment.run(SMALL.with_(mechanism="grr"))
    grid, users, _ = _loop(SMALL.with_(mechanism="grr", trials=1))
    rows, readouts = metrics.evaluate_trials(result.true_density, result.estimates, cell_m=grid.cell_m,
                                             n_users=len(users.cells))
    for est, row, read in zip(result.estimates, rows, readouts):
        found = {}
        assert metrics.evaluate(result.true_density, est, cell_m=grid.cell_m, n_users=len(users.cells),
                                readouts=found) == row
        assert found == read


@pytest.mark.parametrize("rule", ["holdout", "converged"])
def test_stacked_matrix_em_stops_each_trial_where_it_stops_alone(rule):
    """EM on a stack through stacked matrix products (MDSW's, SEM-Geo-I's maps) gives every problem the bits,
    the step count and the stopping decision it gets alone; the stack's problems (200 to 200,000 reports)
    stop at different steps, so the stack shrinks as it runs."""
    from ldpviz.mechanisms.estimation import matrix_maps
    k = 30
    P = np.zeros((k + 10, k))
    for x in range(k):
        P[x:x + 11, x] = 1.0
    P += 0.05
    P /= P.sum(axis=0, keepdims=True)
    truth = np.exp(-((np.arange(k) - 10) ** 2) / 8.0) + 0.5 * np.exp(-((np.arange(k) - 22) ** 2) / 4.0)
    truth /= truth.sum()
    rng = np.random.default_rng(7)
    stack = np.stack([rng.multinomial(n, P @ truth).astype(float) for n in (200, 5_000, 200_000)])
    forward, adjoint = matrix_maps(P, (k,))
    with em_stopping_rule(rule):
        batched, infos = expectation_maximisation_batch(stack, forward, adjoint, (k,), smoothing=True)
        for t, counts in enumerate(stack):
            alone, info = expectation_maximisation(counts, lambda f: P @ f, lambda r: P.T @ r, (k,), smoothing=True)
            one, one_info = expectation_maximisation_batch(counts[None], forward, adjoint, (k,), smoothing=True)
            np.testing.assert_array_equal(batched[t], one[0])
            assert infos[t] == one_info[0]
            np.testing.assert_allclose(batched[t], alone, rtol=1e-9, atol=1e-15)
            assert infos[t]["steps"] == info["steps"]
    assert len({i["iterations"] for i in infos}) > 1


@pytest.mark.parametrize("name", ["dam", "grr", "planar-laplace", "ug"])
def test_run_reusing_the_first_trial_equals_the_whole_run(name):
    """Explore draws trial 0 first, then the intervals: a run given that one-trial result reuses it and runs
    trials 1 .. T-1 only, and gives the whole run's estimates, metrics, readouts and notes; a result of another
    scenario is not reused."""
    scenario = SMALL.with_(mechanism=name)
    whole = experiment.run(scenario)
    first = experiment.run(scenario.with_(trials=1))
    again = experiment.run(scenario, first=first)
    assert again.estimates[0] is first.estimates[0]            # reused, not run again
    for got, want in zip(again.estimates, whole.estimates, strict=True):
        np.testing.assert_array_equal(got.density, want.density)
    assert again.metrics.equals(whole.metrics)
    assert again.readouts == whole.readouts and again.notes == whole.notes and again.received == whole.received
    other = experiment.run(scenario.with_(trials=1, seed=scenario.seed + 1))
    not_reused = experiment.run(scenario, first=other)
    assert not_reused.estimates[0] is not other.estimates[0] and not_reused.metrics.equals(whole.metrics)
