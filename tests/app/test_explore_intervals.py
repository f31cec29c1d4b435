"""Explore's headlines carry their uncertainty (issue 22): default trials give 95% intervals, the summary gives a
range, change arrows only between settings on the same data and region, a zero difference map says
"identical"."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from streamlit.testing.v1 import AppTest

from ldpviz.app import state, ui

ROOT = Path(__file__).resolve().parents[2]
SMALL = {"ds": "normal", "users": "3000", "d": "8"}


def app(**query: str) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    for key, value in {**SMALL, **query}.items():
        at.query_params[key] = value
    return at


def metric(at: AppTest, label: str):
    return next(m for m in at.metric if m.label == label)


def test_default_trials_show_intervals_on_w2_aqe_kl_and_a_range_in_the_summary():
    """With no trials in the link the page runs the default (3, the floor for an interval): W2, AQE and KL read
    'mean ± half-width' (or a low–high range where clipped at zero), the caption says why 3, and the summary
    sentence gives W2 as a range, not one seed's value."""
    assert state.defaults()["trials"] == state.DEFAULT_TRIALS == 3
    at = app(mech="grr")
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    for label in ("W2", "AQE", "KL"):
        value = metric(at, label).value
        assert "±" in value or "–" in value, (label, value)
    assert any("mean of 3 trials" in c.value and "floor" in c.value for c in at.caption)
    summary = next(m.value for m in at.markdown if "estimate is on average" in m.value)
    assert "95% interval of the mean over 3 trials" in summary
    assert "–" in summary.split("**")[1], summary       # '1.2–1.5 km'


def test_one_trial_shows_no_interval_and_says_so():
    """Below the floor the readouts are plain values and the page says an interval needs 3 trials."""
    at = app(mech="grr", trials="1")
    at.run()
    assert not at.exception
    assert "±" not in metric(at, "W2").value
    assert any("floor" in c.value and "no interval" in c.value for c in at.caption)


def test_interval_is_clipped_at_zero_for_non_negative_metrics():
    """A t interval of a distance never reaches below zero: the low end is clipped and shown as a range."""
    from ldpviz import experiment
    result = experiment.run(experiment.Scenario(dataset="normal", mechanism="grr", epsilon=0.5, grid_side=8,
                                                n_users=3000, trials=3))
    result.metrics.loc[:, "kl"] = [0.0, 0.0, 0.3]          # mean 0.1, sd 0.17: the t interval would reach -0.33
    mean, low, high = ui.interval(result, "kl")
    assert low == 0.0 and high > mean > 0
    assert ui.fmt_interval("kl", (mean, low, high)).startswith("0 –")


def test_change_arrows_only_on_the_same_data_and_region():
    """Moving epsilon on the same data shows a change (an arrow); switching the dataset shows none, and the
    caption says why (issue 22: Fiji -> US north-east read '-758 km' in green)."""
    at = app(mech="grr", eps="1")
    at.run()
    at.select_slider(key="w:epsilon").set_value(2.0)
    at.run()
    assert not at.exception
    assert metric(at, "W2").delta, "a change on the same data shows an arrow"
    at.selectbox(key="w:dataset").set_value("minneapolis-stops")
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    assert not metric(at, "W2").delta
    assert any("no change arrows" in c.value for c in at.caption)


def test_zero_difference_map_says_identical():
    """With no privacy (the exact mechanism) estimate and truth are the same map: the difference view says
    'Identical' instead of drawing round-off as colour."""
    at = app(mech="exact", diff="1")
    at.run()
    assert not at.exception
    assert any("Identical" in i.value for i in at.info)
    assert metric(at, "W2").value == "0.0 m"               # no spread over trials: the value, no '± 0'
    assert any("no spread" in m.value for m in at.markdown)
    assert len(at.get("deck_gl_json_chart")) == 2          # truth and estimate: no difference drawn
    assert ui.identical(np.eye(3) / 3, np.eye(3) / 3 + 1e-17)
    assert not ui.identical(np.eye(3) / 3, np.eye(3)[::-1] / 3)


def test_summarise_and_mean_ci_clip_non_negative_metrics_at_zero():
    """Sweeps' intervals (Trade-offs bands, confidence tables) of a distance never go below zero; Pearson's r,
    which can be negative, keeps its symmetric interval."""
    import pandas as pd

    from ldpviz import experiment
    df = pd.DataFrame({"epsilon": [1.0] * 3, "kl": [0.0, 0.0, 0.3], "pearson": [-0.5, 0.0, 0.5]})
    out = experiment.summarise(df, ["epsilon"])
    assert out["kl_lo"].iloc[0] == 0.0 and out["kl_hi"].iloc[0] > 0.1
    assert out["pearson_lo"].iloc[0] < -0.5
    assert experiment.mean_ci(np.array([0.0, 0.0, 0.3]), floor=0.0)[1] == 0.0
    assert experiment.mean_ci(np.array([0.0, 0.0, 0.3]))[1] < 0.0


def test_a_switch_to_no_privacy_is_not_shown_as_progress():
    """Issue 27: a switch to a setting with practically no privacy read as a green 'better' arrow (-382 km above
    'Practically no privacy'). The arrows of such a setting are grey, say 'at no privacy', and the caption says
    why; a move between two private settings keeps its coloured arrow."""
    from streamlit.proto.Metric_pb2 import Metric as MetricProto

    def colour(at):
        return MetricProto.MetricColor.Name(metric(at, "W2").proto.color)

    at = app(mech="grr", eps="1")
    at.run()
    at.select_slider(key="w:epsilon").set_value(2.0)
    at.run()
    assert not at.exception
    assert colour(at) != "GRAY" and "no privacy" not in metric(at, "W2").delta
    at.selectbox(key="w:family").set_value("Reference")
    at.run()
    mech = at.selectbox(key="w:mechanism")
    mech.set_value(next(o for o in mech.options if "no privacy" in o.lower()))
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    w2 = metric(at, "W2")
    assert w2.delta.startswith("-") and "at no privacy" in w2.delta, w2.delta
    assert colour(at) == "GRAY"
    assert any("grey arrows" in c.value and "practically no privacy" in c.value for c in at.caption)


def test_unknown_link_parameters_and_one_user_are_named():
    """Issue 27: unknown link parameters were dropped silently, and Explore said nothing about an estimate from one
    user. The page names the parameters it ignored, and warns that one user's estimate says nothing (and that a
    grid with under 5 users a cell is mostly noise); a well-populated setting carries neither warning."""
    at = app(mech="grr", users="1", d="4", colour="red", espilon="2")
    at.run()
    assert not at.exception
    warnings = [w.value for w in at.warning]
    assert any("'colour', 'espilon' ignored" in w for w in warnings), warnings
    assert any("Estimates from 1 user say nothing" in w for w in warnings), warnings
    at = app(mech="grr", users="100", d="8")
    at.run()
    assert any("Mostly noise" in w.value and "100 users over 8 × 8" in w.value for w in at.warning)
    at = app(mech="grr")
    at.run()
    assert not [w.value for w in at.warning if "ignored" in w.value or "noise" in w.value or "say nothing" in w.value]
