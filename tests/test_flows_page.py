"""AppTest smoke test of the Flows page (ldpviz/app/views/6_Flows.py): renders, shows the readouts, no bug box."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[1]


def test_flows_page_renders_readouts_and_maps():
    """Default view (storm tracks, SRR, d = 4): L1, top-k, budget split and the navigation readouts."""
    at = AppTest.from_file(str(ROOT / "ldpviz/app/views/6_Flows.py"), default_timeout=180)
    at.session_state["w:flows_grid"] = 4
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    assert not [e.value for e in at.error if "Something went wrong" in e.value]
    labels = {m.label: m.value for m in at.metric}
    assert {"L1 over OD pairs", "Budget split", "Updates per trip λ", "Total privacy λ·ε"} <= set(labels)
    assert 0.0 <= float(labels["L1 over OD pairs"]) <= 2.0
    assert labels["Budget split"] == "0.5 + 0.5"       # the default epsilon 1, split in two
    assert any("ε/2" in c.value or "epsilon/2" in c.value for c in at.caption)


def test_flows_page_switches_mechanism():
    """Another scheme and estimator recompute without errors."""
    at = AppTest.from_file(str(ROOT / "ldpviz/app/views/6_Flows.py"), default_timeout=180)
    at.session_state["w:flows_grid"] = 4
    at.session_state["w:flows_mechanism"] = "grr-tiles"
    at.session_state["w:flows_estimator"] = "em"
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    assert any(m.label == "L1 over OD pairs" for m in at.metric)
