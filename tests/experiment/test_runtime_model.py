"""The run-time model behind long-run predictions (ldpviz.experiment.runtime_model): fit, load, stored calibration."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from ldpviz import mechanisms
from ldpviz.experiment import runtime_model


def test_fit_recovers_known_coefficients():
    """Noise-free times of a known non-negative model over a grid of sizes are fitted back to within 1%."""
    truth = (0.01, 2e-7, 3e-5, 1e-9, 0.0)
    rows = [(n, d, runtime_model.evaluate(truth, n, d)) for n in (1e3, 1e4, 1e5) for d in (64, 256, 1024, 4096)]
    fitted = runtime_model.fit(rows)
    for n, d, t in rows:
        assert runtime_model.evaluate(fitted, n, d) == pytest.approx(t, rel=0.01)
    assert all(c >= 0 for c in fitted)


def test_slowdown_counts_the_load():
    """A CPU-bound run slows by load / cores once the runnable processes outnumber the cores, never below 1."""
    assert runtime_model.slowdown(0.5, 2) == 1.0
    assert runtime_model.slowdown(2.0, 2) == 1.0
    assert runtime_model.slowdown(10.0, 2) == 5.0
    assert runtime_model.current_load() >= 0.0


def test_stored_calibration_covers_every_mechanism_and_path():
    """The shipped calibration names how it was measured and has a model for each mechanism's every path
    (a mechanism refused at every measured size would be missing, and the dashboard would fall back)."""
    cal = runtime_model.calibration()
    assert cal is not None and "bench/bench_runtime.py" in cal.measured_on and "load" in cal.measured_on
    for name in mechanisms.available():
        paths = ["per-user", "aggregate"] if any(p.name == "path" for p in mechanisms.get(name).params) else ["-"]
        assert sorted(cal.paths(name)) == sorted(paths), name
    seconds = runtime_model.predict("oue", "auto", 20_000, 256 * 256, 1)
    assert 0 < seconds < np.inf
    assert runtime_model.predict("no-such-mechanism", "auto", 10, 10, 1) is None


def test_machine_factor_scales_predictions_by_the_probe(monkeypatch):
    """A server times the calibration's probe run once and scales every calibrated prediction by its CPU seconds
    over the calibrating machine's: a calibration whose probe took half this machine's time predicts twice as long
    here (within the probe's own noise), a pinned factor wins, a calibration without a probe scales by 1, and the
    factor is kept within its bounds. The shipped calibration carries its probe."""
    shipped = runtime_model.calibration()
    assert shipped.probe_seconds and shipped.probe_seconds > 0
    assert runtime_model.Calibration.from_json(shipped.to_json()).probe_seconds == shipped.probe_seconds
    here = runtime_model.time_probe()
    base = shipped.idle_seconds("oue", "auto", 20_000, 1024, 1)

    def factor_with(probe_s, pinned=""):
        monkeypatch.setenv("LDPVIZ_MACHINE_FACTOR", pinned)
        cal = runtime_model.Calibration(shipped.models, shipped.metrics, shipped.measured_on, shipped.metrics_tables,
                                        probe_s)
        monkeypatch.setattr(runtime_model, "calibration", lambda: cal)
        runtime_model.forget_machine_probes()
        try:
            return runtime_model.machine_factor(), runtime_model.predict("oue", "auto", 20_000, 1024, 1)
        finally:
            runtime_model.forget_machine_probes()

    factor, seconds = factor_with(here / 2)
    assert 1.3 < factor < 3.0                   # 2 up to the probe's repeat-to-repeat noise
    assert seconds == pytest.approx(base * factor)
    assert factor_with(here / 2, pinned="1.5") == (1.5, pytest.approx(base * 1.5))
    assert factor_with(None) == (1.0, pytest.approx(base))
    assert factor_with(here * 1000)[0] == runtime_model.MACHINE_FACTOR_BOUNDS[0]


def test_metrics_table_interpolates_what_was_measured_and_holds_beyond():
    """The measured metrics table gives back each measured size exactly, lies between its neighbours in log n and
    log D, holds the nearest size outside the table, and borrows the growth with n of the nearest grid measured at
    several user counts where a grid was measured at one."""
    runs = [{"mechanism": "m", "n": n, "D": d, "metrics": t}
            for n, d, t in [(2000, 1024, 0.02), (20000, 1024, 0.04), (2000, 4096, 0.16), (20000, 4096, 0.32)]]
    runs.append({"mechanism": "big", "n": 2000, "D": 16384, "metrics": 0.5})
    table = runtime_model.metrics_table(runs, "m")
    assert {(n, d) for n, d, _ in table} == {(2000, 1024), (20000, 1024), (2000, 4096), (20000, 4096), (2000, 16384)}
    for r in runs[:4]:
        assert runtime_model.interpolate(table, r["n"], r["D"]) == pytest.approx(r["metrics"])
    mid = runtime_model.interpolate(table, 6325, 2048)
    assert 0.02 < mid < 0.32
    assert runtime_model.interpolate(table, 50000, 4096) == pytest.approx(0.32)      # held, not extrapolated
    assert runtime_model.interpolate(table, 20000, 16384) == pytest.approx(0.5 * 0.32 / 0.16)   # borrowed growth



def test_goal_seek_prediction_scales_with_its_collections_and_side_by_side_wall_is_bounded():
    from ldpviz.experiment import runtime_model as rm
    table = rm.goal_seek_table()             # the installed file (bench/goal_seek_runs.py --install)
    assert {32, 64} <= set(table)
    assert all(v > 0 for per in table.values() for runs in per.values() for v in runs.values())
    assert rm.goal_seek_runs(10, "aag", 32 ** 2) == table[32]["reached"]["aag"]
    assert rm.goal_seek_runs(10, "no-such-mechanism", 32 ** 2) == table[32]["reached"]["*"]
    assert rm.goal_seek_runs(10, "grr", 32 ** 2, "scan") == table[32]["scan"]["grr"]
    assert rm.goal_seek_runs(3) < rm.goal_seek_runs(10) < rm.goal_seek_runs(20)
    assert rm.goal_seek_runs(3, "grr", branch="scan") == rm.goal_seek_runs(20, "grr", branch="scan")
    assert rm.side_by_side_seconds([8.0, 1.0, 1.0], 2) == 8.0          # the longest bounds it
    assert rm.side_by_side_seconds([4.0, 4.0, 4.0, 4.0], 2) == 8.0     # the total over the threads
    assert rm.side_by_side_seconds([], 2) == 0.0


def test_goal_seek_runs_interpolate_between_measured_sides_and_hold_beyond(tmp_path, monkeypatch):
    """The seek's cost in one-trial runs follows the measured sides in log cells (geometric between d = 32 and
    64), is held outside them, falls back to the median ("*") for an unlisted mechanism, and a table of the
    earlier single-side form reads as d = 32's reached outcome with the scan its share."""
    from ldpviz.experiment import runtime_model as rm
    path = tmp_path / "runs.json"
    path.write_text(json.dumps({"sides": {"32": {"reached": {"grr": 10.0, "*": 20.0}, "scan": {"grr": 2.0}},
                                          "64": {"reached": {"grr": 40.0, "*": 20.0}, "scan": {"grr": 8.0}}}}))
    monkeypatch.setattr(rm, "GOAL_SEEK_FILE", path)
    rm.goal_seek_table.cache_clear()
    try:
        assert rm.goal_seek_runs(10, "grr", 32 ** 2) == pytest.approx(10.0)
        assert rm.goal_seek_runs(10, "grr", 45 ** 2) == pytest.approx(10.0 * 4.0 ** (math.log(45 ** 2 / 32 ** 2)
                                                                                      / math.log(4.0)))
        assert rm.goal_seek_runs(10, "grr", 16 ** 2) == pytest.approx(10.0)        # held below
        assert rm.goal_seek_runs(10, "grr", 128 ** 2) == pytest.approx(40.0)       # held above
        assert rm.goal_seek_runs(10, "grr", 64 ** 2, "scan") == pytest.approx(8.0)
        assert rm.goal_seek_runs(10, "dam", 64 ** 2) == pytest.approx(20.0)
        assert rm.goal_seek_runs(10, "dam", 64 ** 2, "scan") == pytest.approx(20.0 * rm.SCAN_SHARE)
        path.write_text(json.dumps({"runs": {"grr": 12.0, "*": 18.0}}))
        rm.goal_seek_table.cache_clear()
        assert rm.goal_seek_runs(10, "grr", 64 ** 2) == pytest.approx(12.0)
        assert rm.goal_seek_runs(10, "grr", 64 ** 2, "scan") == pytest.approx(12.0 * rm.SCAN_SHARE)
    finally:
        rm.goal_seek_table.cache_clear()


def test_machine_factor_is_the_median_of_the_last_probes_timed_again(monkeypatch):
    """A probe disturbed by other work (slower) or caught in a fast moment does not scale predictions for the life of
    the server: after MACHINE_PROBE_REFRESH_S the probe is timed again, and the factor is the median of the last
    MACHINE_PROBE_HISTORY probes, so a disturbed start-up probe is outvoted, and one fast outlier among usual probes
    moves nothing (the fastest-so-far rule it replaces ratcheted onto such outliers)."""
    shipped = runtime_model.calibration()
    monkeypatch.setenv("LDPVIZ_MACHINE_FACTOR", "")
    probes = iter([1.5, 1.0, 1.0, 0.6, 1.0] + [1.1] * runtime_model.MACHINE_PROBE_HISTORY)
    clock = [1000.0]
    monkeypatch.setattr(runtime_model, "time_probe", lambda: next(probes) * shipped.probe_seconds)
    monkeypatch.setattr(runtime_model.time, "monotonic", lambda: clock[0])
    runtime_model.forget_machine_probes()
    try:
        assert runtime_model.machine_factor() == pytest.approx(1.5)
        clock[0] += runtime_model.MACHINE_PROBE_REFRESH_S / 2
        assert runtime_model.machine_factor() == pytest.approx(1.5)     # not timed again yet
        clock[0] += runtime_model.MACHINE_PROBE_REFRESH_S
        assert runtime_model.machine_factor() == pytest.approx(1.25)    # [1.5, 1.0]
        clock[0] += runtime_model.MACHINE_PROBE_REFRESH_S
        assert runtime_model.machine_factor() == pytest.approx(1.0)     # the disturbed one outvoted
        clock[0] += runtime_model.MACHINE_PROBE_REFRESH_S
        clock[0] += runtime_model.MACHINE_PROBE_REFRESH_S
        runtime_model.machine_factor()
        assert runtime_model.machine_factor() == pytest.approx(1.0)     # a fast outlier (0.6) moves nothing
        for _ in range(runtime_model.MACHINE_PROBE_HISTORY):
            clock[0] += runtime_model.MACHINE_PROBE_REFRESH_S
            runtime_model.machine_factor()
        assert runtime_model.machine_factor() == pytest.approx(1.1)     # only the last probes count
    finally:
        runtime_model.forget_machine_probes()


def test_target_depth_scales_a_reached_seek_by_where_its_answer_lands(tmp_path, monkeypatch):
    """A reached seek's runs follow the measured curve of runs against the target's depth z = target / cell x
    sqrt(users) (log-linear, held beyond its ends), as a factor against the depth where the side's figure was
    measured (the reference target on the reference width at that side), so the reference itself is unchanged; no
    target, another outcome, a mechanism whose estimate is not an EM fit (a frequency oracle's costs the same at any
    epsilon), or one with fewer than two measured depths: factor 1."""
    from ldpviz.experiment import runtime_model as rm
    assert rm.target_depth(800.0, 625.0, 51_920) == pytest.approx(800 / 625 * math.sqrt(51_920))
    path = tmp_path / "runs.json"
    ref = {"target_m": 800.0, "users": 10_000, "width_m": 20_000.0}     # d = 32: cells of 625 m, z = 128
    path.write_text(json.dumps({"sides": {"32": {"reached": {"dam": 20.0, "grr": 10.0}, "scan": {"dam": 5.0}}},
                                "depth": {"side": 32, "reference": ref,
                                          "runs": {"dam": [[2.0, 5.0], [20.0, 10.0], [128.0, 20.0]],
                                                   "grr": [[2.0, 5.0], [128.0, 10.0]],
                                                   "sem-geoi": [[128.0, 10.0]]}}}))
    monkeypatch.setattr(rm, "GOAL_SEEK_FILE", path)
    rm.goal_seek_table.cache_clear()
    rm.goal_seek_depths.cache_clear()
    try:
        assert rm.depth_factor("dam", 32, 128.0) == pytest.approx(1.0)
        assert rm.depth_factor("dam", 32, 20.0) == pytest.approx(0.5)
        assert rm.depth_factor("dam", 32, 1.0) == pytest.approx(0.25)                # held below the curve
        assert rm.depth_factor("dam", 32, math.sqrt(2.0 * 20.0)) == pytest.approx(math.sqrt(5.0 * 10.0) / 20.0)
        assert rm.depth_factor("dam", 64, 256.0) == pytest.approx(1.0)               # d = 64's reference: z = 256
        assert rm.estimated_by_em("dam") and rm.estimated_by_em("sem-geoi") and not rm.estimated_by_em("grr")
        assert not rm.estimated_by_em("no-such-mechanism")
        assert rm.depth_factor("grr", 32, 2.0) == rm.depth_factor("sem-geoi", 32, 2.0) == 1.0
        assert rm.depth_factor("olh", 32, 2.0) == rm.depth_factor("dam", 32, None) == 1.0
        one = dict(one_run_s=0.1, cell_m=625.0)
        z20 = 20.0 * 625.0 / math.sqrt(10_000)                                       # the target at z = 20
        reached = rm.goal_seek_seconds("dam", 10_000, 1024, 10, **one)
        assert rm.goal_seek_seconds("dam", 10_000, 1024, 10, target_m=z20, **one) == pytest.approx(0.5 * reached)
        assert rm.goal_seek_seconds("dam", 10_000, 1024, 10, target_m=z20, branch="scan", **one) == \
            rm.goal_seek_seconds("dam", 10_000, 1024, 10, branch="scan", **one)
    finally:
        rm.goal_seek_table.cache_clear()
        rm.goal_seek_depths.cache_clear()


def test_the_installed_depth_curve_comes_from_the_bench_at_the_pages_default_target():
    """The shipped table carries the depth curves bench/goal_seek_runs.py measured, on the bundled city at the
    Decide page's default W2 target, so the city's own prediction keeps a factor of 1."""
    from ldpviz.decide import decision_flow as flow
    from ldpviz.experiment import runtime_model as rm
    info = rm.goal_seek_depths()
    assert info["reference"]["target_m"] == flow.DECIDE_TARGET_DEFAULTS["w2_m"]
    assert {"dam", "grr"} <= set(info["runs"])
    side = info["side"]
    cell = info["reference"]["width_m"] / side
    z_city = rm.target_depth(info["reference"]["target_m"], cell, info["reference"]["users"])
    assert rm.depth_factor("dam", side, z_city) == pytest.approx(1.0)
    assert all(len(curve) >= 2 for curve in info["runs"].values())
