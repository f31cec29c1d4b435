"""Long runs: predicted from measured timings, announced before they start, run in a child process on request."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from ldpviz.app import longrun
from ldpviz import Scenario, run

ROOT = Path(__file__).resolve().parents[1]


def test_prediction_scales_the_nearest_measured_run(monkeypatch):
    """Without a calibration, twice the users and four times the cells of a measured run predict about eight
    times its per-trial time (idle machine: load 0)."""
    from ldpviz.experiment import runtime_model
    monkeypatch.setattr(runtime_model, "calibration", lambda: None)
    timings = longrun.Timings()
    result = run(Scenario(dataset="normal", mechanism="grr", epsilon=1, grid_side=8, n_users=2000, seed=0))
    timings.record(result, load=0.0)
    per_trial = result.timings["perturb"] + result.timings["estimate"] + result.timings["metrics"]
    fixed = result.timings["prepare"] + result.timings["setup"]
    seconds, basis = timings.predict("grr", 4000, 256, trials=3, load=0.0)
    assert seconds == pytest.approx(fixed + 3 * per_trial * 2 * 4)
    assert "this mechanism" in basis
    other, basis = timings.predict("dam", 2000, 64, trials=1, load=0.0)
    assert other == pytest.approx(fixed + per_trial) and "other mechanisms" in basis
    empty, basis = longrun.Timings().predict("grr", 10**6, 4096, trials=2, load=0.0)
    assert empty > 0 and "prior" in basis


def test_prediction_uses_the_calibrated_shape_and_the_load(monkeypatch):
    """With a calibration, a measured run is scaled by the calibrated model of its mechanism and path (not
    linearly); a run of another path is not used for it; an uncalibrated size comes from the model alone; and
    the load scales every prediction by max(1, (load + 1) / cores), with the measurement's own load divided
    out."""
    from ldpviz.experiment import runtime_model
    zero = (0.0,) * 5
    cal = runtime_model.Calibration(
        {"grr|aggregate": {"fixed": zero, "trial": (0.0, 0.0, 1e-4, 0.0, 0.0)},          # linear in cells
         "grr|per-user": {"fixed": zero, "trial": (0.0, 1e-6, 0.0, 0.0, 0.0)}},          # linear in users
        (0.0, 0.0, 0.0, 0.0, 1e-6), "a test")
    monkeypatch.setattr(runtime_model, "calibration", lambda: cal)
    monkeypatch.setattr(runtime_model, "cores", lambda: 2)
    timings = longrun.Timings()
    result = run(Scenario(dataset="normal", mechanism="grr", epsilon=1, grid_side=8, n_users=2000, seed=0,
                          params={"path": "aggregate"}))
    timings.record(result, load=3.0)                         # measured at slowdown 1.5: stored as idle
    t = result.timings
    measured_idle = (t["prepare"] + t["setup"] + t["perturb"] + t["estimate"] + t["metrics"]) / 1.5
    seconds, basis = timings.predict("grr", 2000, 1024, trials=1, path="aggregate", load=0.0)
    shape = cal.idle_seconds("grr", "aggregate", 2000, 1024, 1) / cal.idle_seconds("grr", "aggregate", 2000, 64, 1)
    assert seconds == pytest.approx(measured_idle * shape) and "calibrated cost model" in basis
    loaded, basis = timings.predict("grr", 2000, 1024, trials=1, path="aggregate", load=5.0)
    assert loaded == pytest.approx(3 * seconds) and "x3.0 for the load" in basis
    model_only, basis = timings.predict("grr", 10**6, 1024, trials=2, path="per-user", load=0.0)
    assert model_only == pytest.approx(cal.idle_seconds("grr", "per-user", 10**6, 1024, 2))
    assert "calibrated cost model of grr" in basis
    auto, _ = timings.predict("grr", 10**6, 1024, trials=1, path="auto", load=0.0)
    assert auto == pytest.approx(min(cal.idle_seconds("grr", p, 10**6, 1024, 1) for p in ("aggregate", "per-user")))


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
