"""AppTest smoke test of the Flows page (ldpviz/app/views/flows.py): renders, shows the readouts, no bug box."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[2]


def test_flows_page_renders_readouts_and_maps():
    """Default view (storm tracks, SRR, d = 4): L1, top-k, budget split and the navigation readouts."""
    at = AppTest.from_file(str(ROOT / "ldpviz/app/views/flows.py"), default_timeout=180)
    at.session_state["w:flows_grid"] = 4
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    assert not [e.value for e in at.error if "Something went wrong" in e.value]
    labels = {m.label: m.value for m in at.metric}
    assert {"L1 over OD pairs", "Budget split", "Updates per trip λ",
            "Total privacy λ·ε (worst trip)"} <= set(labels)
    assert 0.0 <= float(labels["L1 over OD pairs"]) <= 2.0
    assert labels["Budget split"] == "0.5 + 0.5"       # the default epsilon 1, split in two
    assert any("ε/2" in c.value or "epsilon/2" in c.value for c in at.caption)


def test_flows_page_switches_mechanism():
    """Another scheme and estimator recompute without errors."""
    at = AppTest.from_file(str(ROOT / "ldpviz/app/views/flows.py"), default_timeout=180)
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
    at = AppTest.from_file(str(ROOT / "ldpviz/app/views/flows.py"), default_timeout=180)
    at.session_state["w:flows_grid"] = 4
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    value = {m.label: m.value for m in at.metric}["Total privacy λ·ε (worst trip)"]
    worst, mean = re.fullmatch(r"([\d.]+) \(mean ([\d.]+)\)", value).groups()
    assert float(worst) >= float(mean)
    captions = " ".join(c.value for c in at.caption)
    assert "the most trips by one person in the region: 1" in captions
    assert "chosen without reading users' data" in captions and "independent of the data" not in captions
    assert "a reporter pays" in captions and "a traffic report (" in captions


def test_flows_page_cap_bounds_the_worst_trip():
    """The sidebar's cap (enforced on the phone) bounds the worst trip at cap x epsilon, and the guarantee says so;
    without the cap, at theta = 0 some trip makes more than one update (so the cap binds)."""
    import re
    at = AppTest.from_file(str(ROOT / "ldpviz/app/views/flows.py"), default_timeout=180)
    for key, value in {"fd": "4", "ftheta": "0", "fcap": "1"}.items():   # the page's link keys
        at.query_params[key] = value
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    value = {m.label: m.value for m in at.metric}["Total privacy λ·ε (worst trip)"]
    assert float(re.match(r"[\d.]+", value).group()) <= 1.0          # epsilon 1, cap 1
    assert "the client sends at most 1 updates per trip" in " ".join(c.value for c in at.caption)
    free = AppTest.from_file(str(ROOT / "ldpviz/app/views/flows.py"), default_timeout=180)
    for key, value in {"fd": "4", "ftheta": "0"}.items():
        free.query_params[key] = value
    free.run()
    value = {m.label: m.value for m in free.metric}["Total privacy λ·ε (worst trip)"]
    assert float(re.match(r"[\d.]+", value).group()) > 1.0
