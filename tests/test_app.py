"""AppTest (streamlit.testing) of every page on small scenarios: no exceptions, live readouts, bad input.

Small scenarios (the synthetic 'normal' set, 3,000 users, d = 8 or 16) keep each run to a second or so.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from ldpviz import mechanisms

ROOT = Path(__file__).resolve().parents[1]
SMALL = {"ds": "normal", "users": "3000", "d": "8"}
PAGES = ["pages/1_Compare.py", "pages/2_Trade-offs.py", "pages/3_Mechanisms.py", "pages/4_Data.py",
         "pages/5_Privacy_audit.py"]


def app(page: str = "app.py", **query: str) -> AppTest:
    at = AppTest.from_file(str(ROOT / page), default_timeout=120)
    for key, value in {**SMALL, **query}.items():
        at.query_params[key] = value
    return at


def assert_clean(at: AppTest) -> None:
    """No uncaught exception, and no 'bug' box from the pages' guard."""
    assert not at.exception, [e.message for e in at.exception]
    bugs = [e.value for e in at.error if "Something went wrong inside ldpviz" in e.value]
    assert not bugs, bugs


def readouts(at: AppTest) -> dict[str, str]:
    return {m.label.split(" · ")[0]: m.value for m in at.metric if m.label != "Run time"}


@pytest.mark.parametrize("mechanism", mechanisms.available())
def test_explore_renders_for_every_mechanism(mechanism):
    """Explore shows readouts for each registered mechanism, or a plain error box for a bad combination."""
    at = app(mech=mechanism, d="16" if mechanism != "exact" else "8")
    at.run()
    assert_clean(at)
    assert readouts(at) or at.error, "neither readouts nor an explanation"
    if readouts(at):
        assert "W2 (m)" in " ".join(m.label for m in at.metric) or any("W2" in k for k in readouts(at))
        assert any("estimate is on average" in m.value for m in at.markdown)


@pytest.mark.parametrize("mechanism", mechanisms.available())
def test_mechanisms_page_for_every_mechanism(mechanism):
    """The Mechanisms page explains each mechanism and draws its channel when it has one."""
    at = app("pages/3_Mechanisms.py", mech=mechanism, cd="6")
    at.run()
    assert_clean(at)
    assert at.header[0].value == mechanisms.get(mechanism).label
    if mechanisms.get(mechanism).has_channel and not at.error:
        assert len(at.get("deck_gl_json_chart")) >= 2


@pytest.mark.parametrize("page", PAGES)
def test_every_page_renders(page):
    at = app(page, cmp=",".join(mechanisms.available()), smech=",".join(mechanisms.available()[:2]), trials="2")
    at.run()
    assert_clean(at)
    assert at.title, "page has no title"


def test_moving_epsilon_changes_the_readouts():
    """Explore: a new epsilon gives new readouts, shows the change as deltas, and updates the link."""
    at = app(mech="grr")
    at.run()
    before = readouts(at)
    assert all(m.delta in (None, "") for m in at.metric)
    at.select_slider(key="w:epsilon").set_value(4.0).run()
    assert_clean(at)
    after = readouts(at)
    assert after != before
    assert any(m.delta not in (None, "") for m in at.metric if m.label != "Run time")
    assert at.query_params["eps"] == ["4"] or at.query_params["eps"] == "4"
    assert any("At ε = 4" in m.value for m in at.markdown)


def test_link_restores_configuration_and_rejects_junk():
    """Query parameters set the view; invalid ones are ignored with a warning, not a traceback."""
    at = app(eps="2.5", trials="2", seed="7", junk_ok="1")
    at.run()
    assert_clean(at)
    assert at.select_slider(key="w:epsilon").value == 2.5
    assert at.slider(key="w:trials").value == 2
    bad = app(eps="banana", d="-3", mech="nope", ds="nowhere")
    bad.run()
    assert_clean(bad)
    texts = " ".join(w.value for w in bad.warning)
    for key in ("eps", "d", "mech", "ds"):
        assert f"'{key}' ignored" in texts
    assert bad.select_slider(key="w:epsilon").value == 1.0


def test_bad_upload_shows_error_and_keeps_previous_data():
    """Data page: a good file becomes the dataset; a bad one shows an error and leaves it selected."""
    at = app("pages/4_Data.py")
    at.run()
    good = b"lat,lon\n44.97,-93.26\n44.98,-93.27\nnot-a-number,-93.2\n44.99,-93.25\n"
    at.file_uploader[0].set_value(("stops.csv", good, "text/csv")).run()
    assert_clean(at)
    assert at.session_state["cfg"]["dataset"] == "upload:stops.csv"
    assert [m.value for m in at.metric][:2] == ["4", "3"]
    at.file_uploader[0].set_value(("broken.csv", b"a,b\n1,2\n", "text/csv")).run()
    assert_clean(at)
    assert any("could not be used" in e.value for e in at.error)
    assert at.session_state["cfg"]["dataset"] == "upload:stops.csv"
    assert at.selectbox(key="w:dataset").value == "upload:stops.csv"


def test_bad_input_shows_error_not_traceback():
    """A region without any point, or a bad parameter in the link, is explained, never a traceback."""
    at = app(region="bounds typed in", bbox="10,10,10.01,10.01")
    at.run()
    assert_clean(at)
    assert any("contains none" in e.value for e in at.error), [e.value for e in at.error]
    at = app(mech="grr", **{"p.projection": "bogus"})
    at.run()
    assert_clean(at)
    assert any("'p.projection' ignored" in w.value for w in at.warning)
    assert readouts(at)


def test_state_round_trip():
    """encode(decode(link)) keeps every setting; defaults are left out of the link."""
    from dashboard import state
    cfg, warnings = state.decode({"ds": "normal", "eps": "0.3", "d": "24", "users": "1000", "seed": "3",
                                  "trials": "4", "mech": "grr", "p.projection": "norm-sub", "region": "Centre",
                                  "cmp": "grr,exact", "metric": "kl", "diff": "1"})
    assert not warnings
    query = state.encode(cfg)
    expected = {"ds": "normal", "eps": "0.3", "d": "24", "users": "1000", "seed": "3", "trials": "4",
                "mech": "grr", "p.projection": "norm-sub", "region": "Centre", "cmp": "grr,exact",
                "metric": "kl", "diff": "1"}
    if state.default_mechanism() == "grr":
        expected.pop("mech")            # defaults are left out
    assert query == expected
    again, _ = state.decode(query)
    assert state.encode(again) == query
    assert state.encode(state.defaults()) == {}


def test_compare_names_a_best_mechanism():
    at = app("pages/1_Compare.py", cmp=",".join(m for m in mechanisms.available()), metric="w2_m", trials="2")
    at.run()
    assert_clean(at)
    assert any("Best for this data" in s.value for s in at.success)


def test_tradeoffs_sweep_draws_a_chart_per_metric():
    at = app("pages/2_Trade-offs.py", smech="grr", vary="epsilon", vals="0.5,2", trials="2")
    at.run()
    assert_clean(at)
    assert len(at.get("plotly_chart")) == 3


def test_audit_passes_registered_ldp_channels():
    """The audit page measures every channel; no registered LDP mechanism may exceed its epsilon."""
    at = app("pages/5_Privacy_audit.py", eps="0.5")
    at.run()
    assert_clean(at)
    table = at.dataframe[0].value
    from dashboard.session import mechanism_rows
    assert list(table["mechanism"]) == [r["label"] for r in mechanism_rows()]
    assert not (table["verdict"] == "❌ FAIL").any(), table
