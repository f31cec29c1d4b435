"""Long runs: predicted from measured timings, announced before they start, run in a child process on request."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from ldpviz.app import longrun
from ldpviz import Scenario, run

ROOT = Path(__file__).resolve().parents[2]


def test_prediction_scales_the_nearest_measured_run(monkeypatch):
    """Without a calibration, twice the users and four times the cells of a measured run predict about eight
    times its per-trial time (measured on an idle machine: load 0, no CPU time given)."""
    from ldpviz.experiment import runtime_model
    monkeypatch.setattr(runtime_model, "calibration", lambda: None)
    timings = longrun.Timings()
    result = run(Scenario(dataset="normal", mechanism="grr", epsilon=1, grid_side=8, n_users=2000, seed=0))
    timings.record(result, load=0.0)
    per_trial = result.timings["perturb"] + result.timings["estimate"] + result.timings["metrics"]
    fixed = result.timings["prepare"] + result.timings["setup"]
    seconds, basis = timings.predict("grr", 4000, 256, trials=3)
    assert seconds == pytest.approx(fixed + 3 * per_trial * 2 * 4)
    assert "this mechanism" in basis
    other, basis = timings.predict("dam", 2000, 64, trials=1)
    assert other == pytest.approx(fixed + per_trial) and "other mechanisms" in basis
    empty, basis = longrun.Timings().predict("grr", 10**6, 4096, trials=2)
    assert empty > 0 and "prior" in basis


def test_prediction_uses_the_calibrated_shape_and_never_the_load(monkeypatch):
    """With a calibration, a measured run is scaled by the calibrated model of its mechanism and path (not
    linearly); a run of another path is not used for it; an uncalibrated size comes from the model alone; a
    run measured on a busy machine is stored by its CPU seconds (at least wall / slowdown, at most the wall);
    and the load now never changes a prediction (issue 28: x6.4 hid the default behind a button)."""
    from ldpviz.experiment import runtime_model
    zero = (0.0,) * 5
    cal = runtime_model.Calibration(
        {"grr|aggregate": {"fixed": zero, "trial": (0.0, 0.0, 1e-4, 0.0, 0.0)},          # linear in cells
         "grr|per-user": {"fixed": zero, "trial": (0.0, 1e-6, 0.0, 0.0, 0.0), "extra": (0.5,)}},
        (0.0, 0.0, 0.0, 0.0, 1e-6), "a test")
    monkeypatch.setattr(runtime_model, "calibration", lambda: cal)
    monkeypatch.setattr(runtime_model, "cores", lambda: 2)
    timings = longrun.Timings()
    result = run(Scenario(dataset="normal", mechanism="grr", epsilon=1, grid_side=8, n_users=2000, seed=0,
                          params={"path": "aggregate"}))
    wall = result.timings["total"]
    timings.record(result, cpu_seconds=wall / 4, load=3.0)     # slowdown 1.5: CPU time is below wall / 1.5
    seconds, basis = timings.predict("grr", 2000, 1024, trials=1, path="aggregate")
    shape = cal.idle_seconds("grr", "aggregate", 2000, 1024, 1) / cal.idle_seconds("grr", "aggregate", 2000, 64, 1)
    t = result.timings
    phases = t["prepare"] + t["setup"] + t["perturb"] + t["estimate"] + t["metrics"]
    assert seconds == pytest.approx(phases / 1.5 * shape) and "calibrated cost model" in basis
    for load in (0.0, 5.0, 40.0):
        monkeypatch.setattr(runtime_model, "current_load", lambda load=load: load)
        assert timings.predict("grr", 2000, 1024, trials=1, path="aggregate")[0] == pytest.approx(seconds)
    model_only, basis = timings.predict("grr", 10**6, 1024, trials=3, path="per-user")
    assert model_only == pytest.approx(1e-6 * 10**6 * (1 + 2 * 0.5) + 3 * 1e-6 * 1024 ** 1.5)
    assert "calibrated cost model of grr" in basis
    auto, _ = timings.predict("grr", 10**6, 1024, trials=1, path="auto")
    assert auto == pytest.approx(min(cal.idle_seconds("grr", p, 10**6, 1024, 1) for p in ("aggregate", "per-user")))


def test_prediction_words_say_what_will_happen():
    """A prediction reads as a range of quiet-machine seconds with what will run, and that a busy server takes
    longer; it never names the model, the benchmark or the load factor."""
    from ldpviz.experiment import runtime_model
    assert runtime_model.fmt_range(20.0) == "about 13-30 s"
    assert runtime_model.fmt_range(0.2) == "about 1 s"
    assert runtime_model.fmt_range(300.0) == "about 3-8 min"
    low, high = runtime_model.seconds_range(20.0)
    assert low < 20.0 < high and high / low <= 4      # within 2x either way of the middle
    label = longrun.announcement("DAM at d = 128 with 5 trials (ε = 1)", 20.0)
    assert label.startswith("**About 13-30 s: DAM at d = 128 with 5 trials")
    assert "busy one takes longer" in label
    for word in ("cost model", "bench", "calibrat", "load (", "x6", "predicted"):
        assert word not in label, word
    seek = longrun.announcement("the smallest ε found for 4 mechanisms", 120.0, 20.0)
    assert "If no ε reaches the target, the search ends after its scan: about 13-30 s." in seek
    assert "ends after its scan" not in longrun.announcement("a seek", 20.0, 20.0)     # the same range: said once


def test_the_default_runs_at_once_on_a_loaded_server(monkeypatch):
    """The bundled default, with the machine's load read as 40 on 2 cores, shows its readouts and maps with no
    Start button and no announcement (the long-run threshold at its shipped value)."""
    from ldpviz.experiment import runtime_model
    monkeypatch.setattr(runtime_model, "current_load", lambda: 40.0)
    monkeypatch.setattr(longrun, "LONG_S", 10.0)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    assert not [b.label for b in at.button if b.label.startswith("Start")]
    assert not any("quiet server" in i.value for i in at.info)
    assert any(m.label == "W2" for m in at.metric)
    assert any("±" in m.value for m in at.metric), "all trials ran: the readouts carry their intervals"


def test_a_long_setting_still_asks(monkeypatch):
    """A setting predicted well over the threshold on a quiet machine (DAM at d = 256 on every user of the
    bundled city, 10 trials) is announced in words, and nothing runs before Start."""
    from ldpviz.experiment import runtime_model
    monkeypatch.setattr(runtime_model, "current_load", lambda: 0.0)
    monkeypatch.setattr(longrun, "LONG_S", 10.0)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
    for key, value in {"mech": "dam", "d": "256", "trials": "10"}.items():
        at.query_params[key] = value
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    notice = next(i.value for i in at.info if "quiet server" in i.value)
    assert "DAM" in notice and "d = 256 with 10 trials" in notice and "busy one takes longer" in notice
    assert any(b.label.startswith("Start") for b in at.button)
    assert not at.metric, "nothing is computed before Start"


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
    assert any("on a quiet server" in i.value for i in at.info), [i.value for i in at.info]
    assert not at.metric, "nothing is computed before Start"
    start = next(b for b in at.button if b.label.startswith("Start"))
    start.click().run()
    assert not at.exception, [e.message for e in at.exception]
    assert any(m.label == "W2" for m in at.metric)
    assert not any("on a quiet server" in i.value for i in at.info)
    assert not [b.label for b in at.button if b.label.startswith(("Start", "Stop this run"))]
