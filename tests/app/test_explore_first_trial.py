"""Explore draws the first trial's maps at once and fills in the intervals when the other trials finish (issue 28).

The design rests on one property of the core: trial t draws from (seed, t), so a one-trial run is the first trial
of a longer one (same estimate, same metrics): the maps drawn first are the maps of the finished run.
"""

from __future__ import annotations

import numpy as np
import pytest

from ldpviz import Scenario, run
from ldpviz.app import ui


@pytest.mark.parametrize("mechanism", ["grr", "dam", "planar-laplace"])
def test_the_first_trial_alone_is_the_first_trial_of_the_run(mechanism):
    sc = Scenario(dataset="normal", mechanism=mechanism, epsilon=1.0, grid_side=8, n_users=3000, seed=5, trials=3)
    first, whole = run(sc.with_(trials=1)), run(sc)
    np.testing.assert_array_equal(first.estimates[0].density, whole.estimates[0].density)
    assert first.metrics.iloc[0]["w2_m"] == pytest.approx(whole.metrics.iloc[0]["w2_m"], rel=1e-12)


def test_the_words_while_the_other_trials_run():
    """The first trial shown says its interval follows, not that the user should raise Trials."""
    first = run(Scenario(dataset="normal", mechanism="grr", epsilon=1.0, grid_side=8, n_users=2000, seed=0))
    text = ui.summary_sentence(first, pending=2)
    assert "the first of 3 trials: its interval follows" in text and "no interval below" not in text
    assert "no interval below" in ui.summary_sentence(first)


def test_the_intervals_run_reuses_the_first_trial(monkeypatch):
    """Explore's intervals (compute.finish_trials) run trials 2..T only: experiment.run receives the first trial's
    result that compute.first_result drew, and the finished result is the whole run's."""
    import streamlit as st

    from ldpviz import experiment
    from ldpviz.app import compute

    st.cache_data.clear()
    sc = Scenario(dataset="normal", mechanism="dam", epsilon=1.0, grid_side=8, n_users=3000, seed=11, trials=3)
    seen = []
    real = experiment.run

    def spy(scenario, dataset=None, first=None):
        seen.append((scenario.trials, first is not None))
        return real(scenario, dataset, first=first)

    monkeypatch.setattr(experiment, "run", spy)
    monkeypatch.setattr(compute, "predicted_seconds", lambda scenario: (0.1, ""))   # short: no announcement
    shown, complete = compute.first_result(sc, "DAM")
    assert not complete and len(shown.estimates) == 1
    done = compute.finish_trials(sc)
    assert seen == [(1, False), (3, True)]
    whole = real(sc)
    assert done.metrics.equals(whole.metrics)
    np.testing.assert_array_equal(done.estimates[2].density, whole.estimates[2].density)
