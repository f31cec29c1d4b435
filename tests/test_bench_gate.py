"""The benchmark gate's decision (bench/gate.py, issue 38): it fails on a ratio over its threshold, names the
benchmark, the ratio and the threshold, and the thresholds it reads cover every benchmark. No benchmark is run."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _gate():
    spec = importlib.util.spec_from_file_location("bench_gate", ROOT / "bench" / "gate.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module                  # dataclasses look their module up while it executes
    spec.loader.exec_module(module)
    return module


gate = _gate()


def _results(ratios: dict[str, list[float]]) -> dict[str, dict]:
    """What gate.measure returns, for given ratios per repeat (reference 1 s CPU)."""
    return {name: {"reference": "pot-64", "cpu": list(r), "wall": list(r), "ref_cpu": [1.0] * len(r),
                   "ref_wall": [1.0] * len(r), "ratio": list(r), "load": [0.0] * len(r),
                   "median": sorted(r)[len(r) // 2], "repeats": len(r)} for name, r in ratios.items()}


def test_a_ratio_over_its_threshold_fails_with_its_numbers():
    """Over the threshold fails, naming benchmark, ratio and threshold; at or under it passes."""
    thresholds = {"a": {"threshold": 4.0, "median": 2.0}, "b": {"threshold": 4.0, "median": 2.0}}
    verdicts = {v.name: v for v in gate.judge({"a": 4.01, "b": 4.0}, thresholds)}
    assert not verdicts["a"].passed and verdicts["b"].passed
    assert "a: ratio 4.01 > threshold 4.00" in verdicts["a"].message
    assert "2.00x the ratio when the threshold was set" in verdicts["a"].message


def test_a_benchmark_without_a_threshold_fails():
    (v,) = gate.judge({"new-bench": 1.0}, {})
    assert not v.passed and "no threshold is recorded" in v.message


def test_the_gate_exits_1_and_prints_the_failure(monkeypatch, tmp_path, capsys):
    """End to end through main() with the measurements replaced: a 2x regression of one benchmark (its median
    ratio doubled against the recorded median) makes the gate exit 1, and stderr names it."""
    recorded = {"benchmarks": {"cli-refusal": {"threshold": 8.0, "median": 4.0}}}
    path = tmp_path / "thresholds.json"
    path.write_text(json.dumps(recorded))
    monkeypatch.setattr(gate, "measure", lambda *a, **k: _results({"cli-refusal": [7.9, 8.2, 8.4]}))
    code = gate.main(["--only", "cli-refusal", "--thresholds", str(path), "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 1
    assert "bench-gate: FAILED cli-refusal: ratio 8.20 > threshold 8.00" in err
    assert "FAIL" in (tmp_path / gate.REPORT).read_text()
    monkeypatch.setattr(gate, "measure", lambda *a, **k: _results({"cli-refusal": [3.9, 4.1, 4.4]}))
    assert gate.main(["--only", "cli-refusal", "--thresholds", str(path), "--out", str(tmp_path)]) == 0


def test_suggested_thresholds_are_twice_the_median_or_above_the_spread():
    """FACTOR x the median of the runs' medians; HEADROOM x the largest ratio seen when that is higher."""
    quiet = _results({"x": [1.0, 1.1, 1.2], "y": [1.0, 1.0, 1.0]})
    loaded = _results({"x": [1.1, 1.2, 1.3], "y": [1.0, 1.0, 3.0]})
    s = gate.suggest([quiet, loaded, quiet])
    assert s["x"]["threshold"] == pytest.approx(gate.FACTOR * 1.1)
    assert s["y"]["threshold"] == pytest.approx(gate.HEADROOM * 3.0) and s["y"]["raised_by_spread"]
    assert s["x"]["run_medians"] == [1.1, 1.2, 1.1] and s["x"]["max"] == 1.3


def test_the_recorded_thresholds_cover_every_benchmark():
    """bench/gate_thresholds.json has a threshold above 1 for every benchmark the gate runs, and says when, at
    which commit and under what load it was measured."""
    doc = json.loads(gate.THRESHOLDS.read_text())
    names = {b.name for b in gate.BENCHES}
    assert names <= set(doc["benchmarks"])
    for name in names:
        entry = doc["benchmarks"][name]
        assert entry["threshold"] >= gate.FACTOR * entry["median"] * 0.99
        assert entry["reference"] in gate.REFERENCES
    assert {"date", "commit", "load"} <= set(doc["measured"])
