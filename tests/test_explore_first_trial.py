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
