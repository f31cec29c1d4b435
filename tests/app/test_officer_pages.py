"""AppTest of the officer-facing additions (issue 12): one attacker on every page, the query size ρ,
Explore's spread view and decision report, Compare's target mode, Trade-offs' frontier and budget.

Small scenarios (the synthetic 'normal' set, 2,000-3,000 users, d = 8) keep each run to a second or so.
"""

from __future__ import annotations

import re

import numpy as np

from streamlit.testing.v1 import AppTest

import test_app
from test_app import assert_clean

from ldpviz.app import state

SMALL = {"ds": "normal", "users": "2000", "d": "8"}


def app(page: str = "app.py", **query: str) -> AppTest:
    return test_app.app(page, base=SMALL, **query)


def test_officer_state_round_trip():
    """The new settings (query size ρ, the spread view) survive encode/decode; junk is dropped with a warning."""
    from ldpviz.app import state
    cfg, warnings = state.decode({"rho": "0.05", "spread": "1"})
    assert not warnings and cfg["query_rho"] == 0.05 and cfg["show_spread"] is True
    query = state.encode(cfg)
    assert query == {"rho": "0.05", "spread": "1"}
    assert state.encode(state.decode(query)[0]) == query
    cfg, warnings = state.decode({"rho": "2"})
    assert cfg["query_rho"] == state.defaults()["query_rho"] and any("'rho'" in w for w in warnings)


def test_one_attacker_on_explore_audit_and_mechanisms():
    """GRR at ε = 1 on the same 8 x 8 grid: Explore's sentence, the audit table's population-prior column and
    the Mechanisms page's metric give the same attacker error (ldpviz.decide.attacker, population prior)."""
    explore = app(mech="grr", eps="1")
    explore.run()
    assert_clean(explore)
    sentence = next(m.value for m in explore.markdown if "an attacker's best guess" in m.value)
    assert "population density" in sentence and "uniform" in sentence
    assert re.search(r"lands within 100 m \(1% of the region's 10 km side\) of them [<\d.]+% of the time", sentence)
    from_explore = re.search(r"is off by \*\*([^*]+)\*\*", sentence).group(1)

    audit = app("ldpviz/app/views/privacy_audit.py", eps="1", ad="8", bb="0")
    audit.run()
    assert_clean(audit)
    table = audit.dataframe[0].value
    row = table[table["mechanism"].str.contains("GRR|Generalized Randomized Response", regex=True)].iloc[0]
    assert row["attacker error (population prior)"] == from_explore
    assert row["attacker error (uniform prior)"] != "—"

    mech = app("ldpviz/app/views/mechanisms.py", mech="grr", eps="1", cd="8")
    mech.run()
    assert_clean(mech)
    shown = {m.label: m.value for m in mech.metric}
    assert shown["Attacker's expected error, over everyone (population prior)"] == from_explore


def test_query_size_reaches_the_scenario_and_the_caption():
    """ρ = 5% in the link: the sidebar shows it, the AQE caption names it, and AQE differs from ρ = 1%."""
    at = app(mech="grr", rho="0.05")
    at.run()
    assert_clean(at)
    assert at.select_slider(key="w:query_rho").value == 0.05
    assert any("covering 5% of the area" in c.value for c in at.caption)
    assert any("query_rho=0.05" in c.value for c in at.code)     # the reproducing snippet carries it
    aqe5 = next(m.value for m in at.metric if m.label == "AQE")
    at.select_slider(key="w:query_rho").set_value(0.01).run()
    assert_clean(at)
    assert any("covering 1% of the area" in c.value for c in at.caption)
    assert next(m.value for m in at.metric if m.label == "AQE") != aqe5


def test_explore_spread_view_and_report_need_two_trials():
    """One trial: the spread toggle is disabled and the report is explained, not offered; two trials: the toggle
    draws a third map (from Result.cell_spread) and the 'Decision report (HTML)' download is there."""
    at = app(mech="grr", trials="1")
    at.run()
    assert_clean(at)
    assert at.toggle(key="w:show_spread").disabled
    assert any("needs 2 or more trials" in c.value for c in at.caption)
    maps = len(at.get("deck_gl_json_chart"))
    at = app(mech="grr", trials="2")
    at.run()
    assert_clean(at)
    assert not at.toggle(key="w:show_spread").disabled
    assert any(getattr(b, "label", "") == "Decision report (HTML)" for b in at.get("download_button"))
    at.toggle(key="w:show_spread").set_value(True).run()
    assert_clean(at)
    assert len(at.get("deck_gl_json_chart")) == maps + 1
    assert any("Spread over 2 trials" in h.value for h in at.subheader)
    assert at.query_params["spread"] in (["1"], "1")


def test_explore_explains_epsilon_and_geoi_per_km():
    """The plain-language ε and the common-scale sentence are shown; a Geo-I mechanism's ε is labelled per km
    (planar Laplace and SEM-Geo-I: the slider's ε itself, issue 26)."""
    at = app(mech="grr", eps="1")
    at.run()
    assert_clean(at)
    assert any("50% / 50%" in m.value for m in at.markdown)          # explain.epsilon_plain's worked example
    assert any("Local differential privacy, epsilon = 1" in m.value for m in at.markdown)   # common_terms
    at = app(mech="planar-laplace", eps="2")
    at.run()
    assert_clean(at)
    assert any("per km" in m.value for m in at.markdown if "estimate is on average" in m.value)
    assert any("is per km of distance" in c.value for c in at.sidebar.caption)
    assert any("like LDP with epsilon" in m.value for m in at.markdown)
    at = app(mech="sem-geoi", eps="2")     # its slider ε is the Geo-I ε' per km (issue 26): the page says so
    at.run()
    assert_clean(at)
    assert any("per km" in m.value and "calibrated" not in m.value for m in at.markdown
               if "estimate is on average" in m.value)
    assert any("its ε = 2 is per km of distance" in c.value for c in at.sidebar.caption)
    at = app(mech="sem-geoi", eps="2", **{"p.calibration": "same-lp-as-dam"})   # the DAM paper's comparison
    at.run()
    assert_clean(at)
    assert any("is calibrated to ε' =" in c.value and "does not fall steadily with the slider" in c.value
               for c in at.sidebar.caption)


def test_compare_groups_by_model_and_shows_the_common_scale():
    """The table is grouped by privacy model (LDP rows before Geo-I before central DP) and has common_terms'
    LDP-equivalent ε: ε itself for LDP, infinite for central DP."""
    at = app("ldpviz/app/views/compare.py", cmp="laplace,planar-laplace,grr", eps="1")
    at.run()
    assert_clean(at)
    table = at.dataframe[0].value
    assert list(table["privacy"]) == ["LDP", "Geo-I", "central DP (trusted aggregator)"]
    assert table["LDP-equivalent ε"].iloc[0] == "1"
    assert table["LDP-equivalent ε"].iloc[2].startswith("∞")
    assert float(table["LDP-equivalent ε"].iloc[1]) > 1      # Geo-I across the whole region


def test_a_long_goal_seek_states_both_outcomes(monkeypatch):
    """Compare's long-search notice gives the seek's predicted time and, when no ε reaches the target, the shorter
    time of its scan alone (both from runtime_model.goal_seek_seconds: the table measures a scan at a fraction of a
    reached seek for GRR); the users question has no such outcome and says none. The threshold is lowered so the
    notice shows (at d = 64, where the two round apart)."""
    from ldpviz.app import longrun
    from ldpviz.experiment import runtime_model
    monkeypatch.setattr(longrun, "LONG_S", 1e-6)
    at = app("ldpviz/app/views/compare.py", cmp="grr", cmode="target_epsilon", metric="w2_m", tgt="2000", d="64")
    at.run()
    assert_clean(at)
    notice = " ".join(i.value for i in at.info)
    assert "on a quiet server" in notice, notice
    scan = re.search(r"If no ε reaches the target, the search ends after its scan: (about [^.]+)\.", notice)
    assert scan and notice.index("**About") < notice.index(scan.group(0)), notice
    assert runtime_model.goal_seek_runs(10, "grr", 64 * 64, "scan") < runtime_model.goal_seek_runs(10, "grr", 64 * 64)
    at = app("ldpviz/app/views/compare.py", cmp="grr", cmode="users_needed", metric="w2_m", tgt="2000")
    at.run()
    assert_clean(at)
    notice = " ".join(i.value for i in at.info)
    assert "on a quiet server" in notice and "ends after its scan" not in notice, notice


def test_compare_target_mode_finds_epsilon_and_users():
    """Target mode: GRR's smallest ε found for W2 <= 2 km is met by one collection with probability 95% (decided on
    10 fresh collections whatever the sidebar's trials) and the attacker columns are filled; 'users needed' answers
    with a user count under columns that say the ε is fixed; the mode travels in the link."""
    at = app("ldpviz/app/views/compare.py", cmp="grr", cmode="target_epsilon", metric="w2_m", tgt="2000", trials="2")
    at.run()
    assert_clean(at)
    table = at.dataframe[0].value
    row = table.iloc[0]
    assert row["one collection meets it"] == "yes" and row["ε found"] != "—" and row["mean's 95% CI"].startswith("[")
    assert row["fresh collections"] == 10 and row["collections simulated"] >= row["fresh collections"]
    assert row["chance one misses (at most)"].endswith("%") and "smallest found on a scan of" in row["note"]
    assert row["attacker error (population prior)"] != "—"
    assert any(c.startswith("attacker within 100 m") for c in table.columns)
    assert any("one collection meets the target with probability at least 95%" in m.value
               and "Searched: epsilon 0.001 to 50" in m.value
               for m in at.markdown)
    at.segmented_control(key="w:compare_mode").set_value("users_needed").run()
    assert_clean(at)
    assert at.query_params["cmode"] in (["users_needed"], "users_needed")
    table = at.dataframe[0].value
    assert "ε (fixed)" in table.columns and "ε found" not in table.columns
    assert table.iloc[0]["users needed"] != "—"


def test_compare_target_follows_the_metric_and_opens_explore_at_the_answer():
    """Changing the target metric resets the target to that metric's default (no 'AQE <= 500'); a link's own
    target is kept on the first run; 'Use ε = ...' puts the answer (rounded up) and the mechanism in the state
    and opens Explore."""
    at = app("ldpviz/app/views/compare.py", cmp="grr", cmode="target_epsilon", metric="w2_m", tgt="2000", trials="2")
    at.run()
    assert at.session_state["cfg"]["target"] == 2000.0
    at.selectbox(key="w:metric").set_value("aqe").run()
    assert_clean(at)
    assert at.session_state["cfg"]["target"] == state.COMPARE_TARGET_DEFAULTS["aqe"]
    at.selectbox(key="w:metric").set_value("w2_m").run()
    assert at.session_state["cfg"]["target"] == state.COMPARE_TARGET_DEFAULTS["w2_m"]
    found = float(at.dataframe[0].value.iloc[0]["ε found"])
    use = [b for b in at.button if b.key == "goal:use:grr"]
    assert use and use[0].label.startswith("Use ε = ")
    eps = float(use[0].label.split("=")[1].split("·")[0])
    assert eps == found          # issue 27: 'ε found 1.65' beside 'Use ε = 1.66'; one rounding for both
    use[0].click().run()
    cfg = at.session_state["cfg"]
    assert cfg["epsilon"] == eps and cfg["mechanism"] == "grr"
    fresh = int(at.dataframe[0].value.iloc[0]["fresh collections"])
    assert cfg["trials"] == fresh           # the answer's collections come along into Explore (issue 27)
    goal = at.session_state["goal_answer"]  # and the answer with its reading, for Explore's report and JSON
    assert goal["epsilon_used"] == eps and goal["metric"] == "w2_m" and goal["target"] == cfg["target"]
    assert goal["mechanism"] == "grr" and goal["trials"] == fresh and goal["miss_chance_max"] is not None


def test_report_from_explore_states_the_goal_seeks_target_and_answer():
    """Issue 27: the report reached from a goal seek never mentioned the target. With the answer carried (as
    Compare's 'Use ε' leaves it) the report states the target, the answer, its one-collection reading and how its
    own collections read against it, in words and in its embedded JSON; with only a target set, the target."""
    import json
    import re
    from html import unescape as html_unescape

    from ldpviz.decide import decision_report
    from ldpviz.experiment import Scenario

    sc = Scenario(dataset="normal", mechanism="grr", epsilon=4.0, grid_side=8, n_users=2000, trials=3)
    goal = {"mechanism": "grr", "metric": "w2_m", "target": 2000.0, "reached": True, "epsilon": 3.97,
            "epsilon_used": 4.0, "probability": 0.95, "confidence": 0.95, "miss_chance_max": 0.004, "misses": 0,
            "trials": 10, "mean": 1500.0, "ci_low": 1400.0, "ci_high": 1600.0,
            "message": "smallest found on a scan of 16 values"}
    html = decision_report.build_report(sc, audit=False, goal=goal)
    for text in ("The target and the answer", "Target: W2 (m) ≤ 2000", "epsilon 3.97", "this report uses 4",
                 "at most 0.4%", "0 of 10 fresh collections missed", "This report's own 3 collections"):
        assert text in html, text
    data = json.loads(html_unescape(re.search(r'<pre id="ldpviz-report-json">(.*?)</pre>', html, re.S).group(1)))
    assert data["target"]["epsilon"] == 3.97 and data["target"]["report_collections"] == 3
    only = decision_report.build_report(sc, audit=False, metric="w2_m", target=2000.0)
    assert "Target: W2 (m) ≤ 2000" in only and "goal seek's answer" not in only
    assert "The target and the answer" not in decision_report.build_report(sc, audit=False)


def test_explore_opened_from_a_goal_seek_states_the_target():
    """Explore with the goal seek's target in the state reads its collections against it; without one it is
    silent."""
    at = app("ldpviz/app/views/explore.py", mech="grr", eps="4", d="16", users="4000", cmode="target_epsilon",
             metric="w2_m", tgt="1500", trials="4")
    at.run()
    assert_clean(at)
    line = next(i.value for i in at.info if "Target from Compare's goal seek" in i.value)
    assert "of 4 collections meet it" in line and "≤ 1.50 km" in line and "(m)" not in line
    plain = app("ldpviz/app/views/explore.py", mech="grr", eps="4", d="16", users="4000")
    plain.run()
    assert not any("Target from Compare" in i.value for i in plain.info)
    carried = app("ldpviz/app/views/explore.py", mech="grr", eps="4", d="16", users="4000", cmode="target_epsilon",
                  metric="w2_m", tgt="1500", trials="4")
    carried.session_state["goal_answer"] = {"mechanism": "grr", "metric": "w2_m", "target": 1500.0, "epsilon": 3.96,
                                            "epsilon_used": 4.0, "probability": 0.95, "confidence": 0.95,
                                            "miss_chance_max": 0.012, "trials": 10}
    carried.run()
    assert_clean(carried)
    line = next(i.value for i in carried.info if "Target from Compare's goal seek" in i.value)
    assert "Its answer: ε 3.96 found" in line and "at most 1.2%" in line


def test_compare_target_met_at_the_search_floor_is_not_called_reached():
    """Issue 27: a target every ε meets (W2 <= 50 km on a 10 km region) was answered 'ε 0.001, reached'. The table
    says it is met at any ε, at the search floor, and never a plain 'yes'."""
    at = app("ldpviz/app/views/compare.py", cmp="grr", cmode="target_epsilon", metric="w2_m", tgt="50000",
             trials="2")
    at.run()
    assert_clean(at)
    row = at.dataframe[0].value.iloc[0]
    assert row["one collection meets it"] == "at any ε (met at the search floor)", row.to_dict()


def test_epsilon_for_use_rounds_up():
    assert state.epsilon_for_use(1.4597) == 1.46 and state.epsilon_for_use(1.46) == 1.46
    assert state.epsilon_for_use(0.19917) == 0.2 and state.epsilon_for_use(6.8675) == 6.87


def test_tradeoff_state_round_trip():
    """The frontier switch and the budget panel's settings survive encode/decode; junk is dropped with a warning."""
    from ldpviz.app import state
    link = {"fr": "1", "bev": "week", "btimes": "2", "bper": "6", "bunit": "month", "bfrom": "1", "btot": "4",
            "vary": "n_users"}
    cfg, warnings = state.decode(link)
    assert not warnings
    assert cfg["budget_every"] == "week" and cfg["budget_times"] == 2 and cfg["budget_from_total"] is True
    assert state.encode(cfg) == link
    cfg, warnings = state.decode({"bev": "fortnight", "btimes": "0"})
    assert cfg["budget_every"] == "day" and cfg["budget_times"] == 1 and len(warnings) == 2


def test_tradeoffs_budget_over_time_derives_epsilon_from_a_total():
    """Daily for a year at the sidebar's ε = 0.5 adds up to 182.5; from a total of 36.5 over daily collections
    the page derives ε = 0.1 per collection and offers to use it in the sidebar."""
    at = app("ldpviz/app/views/trade_offs.py", smech="grr", vary="epsilon", vals="1", eps="0.5")
    at.run()
    assert_clean(at)
    shown = {m.label: m.value for m in at.metric}
    assert shown["Collections"] == "365" and shown["Total ε (one person, whole period)"] == "182"
    at = app("ldpviz/app/views/trade_offs.py", smech="grr", vary="epsilon", vals="1", bfrom="1", btot="36.5")
    at.run()
    assert_clean(at)
    assert {m.label: m.value for m in at.metric}["Charged per collection"] == "0.1"
    at.button(key="budget:use").click().run()
    assert_clean(at)
    assert at.query_params["eps"] in (["0.1"], "0.1")


def test_tradeoffs_budget_pays_an_uploaded_paid_region_every_collection():
    """An uploaded city file framed on the Data page by the paid private-tiles rule at ε0 = 0.25 reaches the
    Trade-offs page's budget through the accountant (issue 37.3). GRR, daily for one week = 7 collections; each
    collection charges a person the region's ε0 (each person reports their map tile once per collection) plus the
    report's ε, added by sequential composition:
      toggle off, sidebar ε = 1: total = 7 x (1 + 0.25) = 8.75 (without the region: 7 x 1 = 7);
      from a total of 7: the report's ε = 7/7 - 0.25 = 0.75 (offered as the sidebar's ε; without the region: 1),
      and at that ε the total is again 7 x (0.75 + 0.25) = 7. "Charged per collection" is the report's ε plus ε0
      (1.25, then 1); the button names the report's ε and says the region is charged besides."""
    from tests.foreign_files import city
    epsilon0 = 0.25
    data = AppTest.from_file(str(test_app.ROOT / "ldpviz/app/views/data.py"), default_timeout=120)
    data.run()
    data.number_input(key="w:upload_epsilon0").set_value(epsilon0)   # the rule defaults to the private tiles
    frame = city(np.random.default_rng(37))
    data.file_uploader[0].set_value(("city.csv", frame.to_csv(index=False).encode(), "text/csv"))
    data.run()
    assert_clean(data)
    link = state.encode(data.session_state["cfg"])          # the upload and its paid region, as a link carries them
    assert link["ds"].startswith("upload:") and link["region"] == f"Private tiles (ε0 = {epsilon0:g})", link
    week = dict(link, smech="grr", vary="epsilon", vals="1", bev="day", btimes="1", bper="1", bunit="week")

    at = app("ldpviz/app/views/trade_offs.py", **week, eps="1")
    at.run()
    assert_clean(at)
    shown = {m.label: m.value for m in at.metric}
    assert shown["Collections"] == "7" and shown["Total ε (one person, whole period)"] == "8.75", shown
    assert shown["Charged per collection"] == "1.25", shown          # 1 + 0.25: the report and the region
    assert any("add up to ε = 8.75 (LDP)" in m.value for m in at.markdown), [m.value for m in at.markdown]

    at = app("ldpviz/app/views/trade_offs.py", **week, eps="1", bfrom="1", btot="7")
    at.run()
    assert_clean(at)
    assert {m.label: m.value for m in at.metric}["Charged per collection"] == "1"      # 0.75 + 0.25
    use = [b.label for b in at.button if b.key == "budget:use"]
    assert use == ["Use ε = 0.75 per report in the sidebar; the region's ε0 is charged besides"], use
    at.button(key="budget:use").click().run()
    assert_clean(at)
    assert at.query_params["eps"] in (["0.75"], "0.75")
    assert {m.label: m.value for m in at.metric}["Total ε (one person, whole period)"] == "7"


def test_tradeoffs_frontier_and_users_axis():
    """The frontier toggle draws metric against attacker error (one trace per mechanism: GRR's attacker exact, OUE's
    by Monte Carlo; a central-DP heatmap has none and says so); the sweep may vary the number of users."""
    at = app("ldpviz/app/views/trade_offs.py", smech="grr,oue,laplace", vary="epsilon", vals="0.5,2", fr="1")
    at.run()
    assert_clean(at)
    import json
    fig = json.loads(next(c for c in at.get("plotly_chart") if "attacker" in c.proto.spec).proto.spec)
    assert len(fig["data"]) == 2 and all(len(t["x"]) == 2 for t in fig["data"])   # GRR and OUE, one point per ε
    assert all(t["x"][0] > t["x"][1] for t in fig["data"])                # the attacker does better at ε = 2
    assert any("Not drawn (no attacker error" in c.value for c in at.caption)     # the central-DP heatmap
    at = app("ldpviz/app/views/trade_offs.py", smech="grr", vary="n_users", vals="500,2000")
    at.run()
    assert_clean(at)
    assert any("2 settings" in c.value for c in at.caption)
    assert at.get("plotly_chart")


def test_compare_offers_a_decision_report_with_two_trials():
    """With 2 trials Compare offers the decision report for a chosen mechanism; with 1 it says why not."""
    at = app("ldpviz/app/views/compare.py", cmp="grr,planar-laplace", trials="2")
    at.run()
    assert_clean(at)
    assert at.selectbox(key="w:report_mechanism").options
    assert any(getattr(b, "label", "") == "Decision report (HTML)" for b in at.get("download_button"))
    at = app("ldpviz/app/views/compare.py", cmp="grr", trials="1")
    at.run()
    assert_clean(at)
    assert any("needs 2 or more trials" in c.value for c in at.caption)


def test_several_long_runs_in_one_comparison(monkeypatch):
    """When every run of a comparison is predicted long (LONG_S forced to 0), the announced comparison starts and
    runs each scenario in its own child process, each with its own Stop button, and names a best mechanism."""
    from ldpviz.app import longrun
    monkeypatch.setattr(longrun, "LONG_S", 0.0)
    at = app("ldpviz/app/views/compare.py", cmp="grr,exact", metric="w2_m", seed="11")
    at.run()
    start = [b for b in at.button if b.label.startswith("Start (")]
    assert start, "the comparison was not announced"
    start[0].click().run()
    assert_clean(at)
    assert not at.error, [e.value for e in at.error]
    assert any("Best" in s.value for s in at.success)


def test_explore_names_the_monte_carlo_attacker_for_oue():
    """OUE has no explicit channel: Explore's sentence still gives the population-prior attacker's error, and says
    it is a Monte Carlo estimate with its standard error."""
    at = app(mech="oue", eps="2")
    at.run()
    assert_clean(at)
    text = " ".join(m.value for m in at.markdown)
    assert "an attacker's best guess of one person's location" in text and "Monte Carlo over" in text, text[:2000]
    assert "standard error" in text


def test_explore_outlines_srrs_blocks_on_its_map():
    """SRR on the public grid: Explore's estimated map carries the outlines of the blocks SRR can tell apart,
    and the caption counts them (issue 15 item 9)."""
    at = app(mech="srr", eps="2", d="16")
    at.run()
    assert_clean(at)
    assert any("blocks SRR can tell apart" in c.value for c in at.caption)
