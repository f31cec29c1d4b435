"""AppTest smoke test of the Flows page (views/6_Flows.py): renders, shows the readouts, no bug box."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[1]


def test_flows_page_renders_readouts_and_maps():
    """Default view (storm tracks, SRR, d = 4): L1, top-k, budget split and the navigation readouts."""
    at = AppTest.from_file(str(ROOT / "views/6_Flows.py"), default_timeout=180)
    at.session_state["w:flows_grid"] = 4
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    assert not [e.value for e in at.error if "Something went wrong" in e.value]
    labels = {m.label: m.value for m in at.metric}
    assert {"L1 over OD pairs", "Budget split", "Updates per trip λ", "Total privacy λ·ε (worst trip)"} <= set(labels)
    assert 0.0 <= float(labels["L1 over OD pairs"]) <= 2.0
    assert labels["Budget split"] == "0.5 + 0.5"       # the default epsilon 1, split in two
    assert any("ε/2" in c.value or "epsilon/2" in c.value for c in at.caption)


def test_flows_page_switches_mechanism():
    """Another scheme and estimator recompute without errors."""
    at = AppTest.from_file(str(ROOT / "views/6_Flows.py"), default_timeout=180)
    at.session_state["w:flows_grid"] = 4
    at.session_state["w:flows_mechanism"] = "grr-tiles"
    at.session_state["w:flows_estimator"] = "em"
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    assert any(m.label == "L1 over OD pairs" for m in at.metric)


def test_flows_page_headlines_the_worst_trip_and_the_per_person_total():
    """Navigation: the worst trip's lambda x epsilon with the mean beside it; the OD guarantee line names the most
    trips by one person (storms: one each) and how the region was chosen; the reporters' W x epsilon is stated."""
    import re
    at = AppTest.from_file(str(ROOT / "views/6_Flows.py"), default_timeout=180)
    at.session_state["w:flows_grid"] = 4
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    value = {m.label: m.value for m in at.metric}["Total privacy λ·ε (worst trip)"]
    worst, mean = re.fullmatch(r"([\d.]+) \(mean ([\d.]+)\)", value).groups()
    assert float(worst) >= float(mean)
    captions = " ".join(c.value for c in at.caption)
    assert "the most trips by one person is 1" in captions
    assert "chosen without reading users' data" in captions and "independent of the data" not in captions
    assert "each reporter is at" in captions
