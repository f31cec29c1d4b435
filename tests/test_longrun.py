"""Long runs: predicted from measured timings, announced before they start, run in a child process on request."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from ldpviz.app import longrun
from ldpviz import Scenario, run

ROOT = Path(__file__).resolve().parents[1]


def test_prediction_scales_the_nearest_measured_run():
    """Twice the users and four times the cells of a measured run predict about eight times its per-trial time."""
    timings = longrun.Timings()
    result = run(Scenario(dataset="normal", mechanism="grr", epsilon=1, grid_side=8, n_users=2000, seed=0))
    timings.record(result)
    per_trial = result.timings["perturb"] + result.timings["estimate"] + result.timings["metrics"]
    fixed = result.timings["prepare"] + result.timings["setup"]
    seconds, basis = timings.predict("grr", 4000, 256, trials=3)
    assert seconds == pytest.approx(fixed + 3 * per_trial * 2 * 4)
    assert "this mechanism" in basis
    other, basis = timings.predict("dam", 2000, 64, trials=1)
    assert other == pytest.approx(fixed + per_trial) and "other mechanisms" in basis
    empty, basis = longrun.Timings().predict("grr", 10**6, 4096, trials=2)
    assert empty > 0 and "prior" in basis


def test_a_long_run_waits_for_start_then_runs_in_a_child(monkeypatch):
    """With every run counted as long, Explore announces the prediction and computes nothing until Start; after
    Start the result (from a child process) fills the readouts, and the notice, its Start button and the run's
    Stop box are gone (issue 21: they stayed above the charts)."""
    monkeypatch.setattr(longrun, "LONG_S", -1.0)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)
    for key, value in {"ds": "normal", "users": "2000", "d": "8", "mech": "grr"}.items():
        at.query_params[key] = value
    at.run()
    assert not at.exception
    assert any("is predicted to take about" in i.value for i in at.info), [i.value for i in at.info]
    assert not at.metric, "nothing is computed before Start"
    start = next(b for b in at.button if b.label.startswith("Start"))
    start.click().run()
    assert not at.exception, [e.message for e in at.exception]
    assert any(m.label == "W2" for m in at.metric)
    assert not any("is predicted to take about" in i.value for i in at.info)
    assert not [b.label for b in at.button if b.label.startswith(("Start", "Stop this run"))]
