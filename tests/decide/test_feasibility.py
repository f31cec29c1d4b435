"""Issue 36: feasible targets (the cell note, the officer's limit, the inverse question), intervals of non-negative
metrics never below 0, answers ranked within a privacy model, and numbers and distances written for people."""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pandas as pd
import pytest

from ldpviz import wording
from ldpviz.app import state
from ldpviz.cli.commands import main
from ldpviz.decide import decision_flow as flow
from ldpviz.decide import decision_report, feasibility, one_collection
from ldpviz.decide.feasibility import Setting
from ldpviz.geo.domain import Region
from ldpviz.mechanisms import accounting
from ldpviz.mechanisms.base import CENTRAL_DP, GEO_I, LDP

#: The north-east box of issue 36's national file: 10 x 9 degrees, about 1,270 km square, so d = 32 gives ~40 km cells.
NORTH_EAST = (-80.0, 38.0, -67.0, 47.0)


def national_csv(path, n: int = 8_000, seed: int = 36):
    """~8,000 places spread over the north-east box (a few towns denser), as a national file's box holds."""
    rng = np.random.default_rng(seed)
    w, s, e, n_ = NORTH_EAST
    spread = n * 3 // 4
    towns = rng.uniform([w + 1, s + 1], [e - 1, n_ - 1], (8, 2))
    lon = np.concatenate([rng.uniform(w, e, spread), np.repeat(towns[:, 0], (n - spread) // 8)
                          + rng.normal(0, 0.3, (n - spread) // 8 * 8)])
    lat = np.concatenate([rng.uniform(s, n_, spread), np.repeat(towns[:, 1], (n - spread) // 8)
                          + rng.normal(0, 0.3, (n - spread) // 8 * 8)])
    pd.DataFrame({"latitude": lat, "longitude": lon}).to_csv(path, index=False)
    return path


# ---- the cell note ------------------------------------------------------------------------------------------------

def test_cell_note_when_the_target_is_finer_than_a_quarter_cell():
    note = feasibility.cell_note("w2_m", 1000.0, 39_600.0)
    assert note and "40× finer than a cell (39.6 km)" in note and "1 km" in note and "9.9 km" in note
    assert feasibility.cell_note("w2_m", 9_900.0, 39_600.0) is None        # a quarter of a cell: fine
    assert feasibility.cell_note("aqe", 0.001, 39_600.0) is None            # not a distance


# ---- the officer's limit, on the accountant's ledger -----------------------------------------------------------------

def test_epsilon_at_the_limit_is_where_the_ledger_reaches_it():
    """LDP: a paid region (eps0 0.5) and 2 reports a person: the per-report epsilon at a limit of 5 is 2.25, and
    the accountant's per-person total there is exactly 5; Geo-I: epsilon per km x cell (km) = the limit; a limit
    below the region's own charge has no epsilon."""
    region = Region(-93.27, 44.97, 6000.0, "t", epsilon_spent=0.5)
    grr = Setting("grr", LDP, 1.0, 750.0)

    def ledger_at(s):
        return accounting.collection_ledger(s, region, reports_worst=2, reports_median=2)

    eps = feasibility.epsilon_at_limit(ledger_at, grr, 5.0)
    assert eps == pytest.approx(2.25)
    assert feasibility.per_person(ledger_at(grr.at(eps))) == pytest.approx(5.0)
    assert feasibility.epsilon_at_limit(ledger_at, grr, 0.4) is None
    assert feasibility.epsilon_at_limit(ledger_at, grr, 0.5001) is None       # below the smallest epsilon (0.001)
    pl = Setting("planar-laplace", GEO_I, 1.0, 39_600.0)
    eps = feasibility.epsilon_at_limit(lambda s: accounting.collection_ledger(s), pl, 5.0)
    assert eps == pytest.approx(5.0 / 39.6)


def test_limit_summary_leads_when_none_meets_the_target_within_the_limit():
    goals = [{"mechanism": "dam", "privacy_model": LDP, "reached": True, "epsilon": 18.2, "within_limit": False,
              "at_limit": {"epsilon": 5.0, "mean": 61_000.0, "low": 0.0, "high": 90_000.0, "trials": 10, "met": 0,
                           "coverage": 0.95, "note": ""}}]
    s = feasibility.limit_summary(goals, 5.0, "w2_m", 1000.0, 39_600.0)
    assert not s["feasible"] and s["lead"].startswith("No mechanism meets w2_m ≤ 1 km within your limit of ε 5")
    assert "40× finer" in s["lead"] and s["lines"] == [
        "dam (LDP) at ε 5: w2_m 61 km on average; one collection 0 m to 90 km (95% of collections); 0 of 10 "
        "collections met the target"]
    goals[0]["within_limit"] = True
    assert feasibility.limit_summary(goals, 5.0, "w2_m", 1000.0)["lead"] == ""


# ---- intervals never below 0 -------------------------------------------------------------------------------------

def test_intervals_of_a_distance_never_go_below_zero():
    """Three collections 0, 0 and 250 m: the t-interval of the mean reaches below 0 unclipped (so the test can fail)
    and stops at 0 with the metric's floor; the one-collection range too."""
    values = np.array([0.0, 0.0, 250.0])
    assert one_collection.read(values, 500.0, True).ci_low < 0
    r = one_collection.read(values, 500.0, True, floor=0.0)
    assert r.ci_low == 0.0 and r.ci_high > r.mean
    assert one_collection.one_collection_range(values)[1] < 0
    mean, low, high = one_collection.one_collection_range(values, floor=0.0)
    assert low == 0.0 and high > mean


# ---- ranked within a privacy model ---------------------------------------------------------------------------------

ROWS = [{"mechanism": "sem-geoi", "privacy_model": GEO_I, "reached": True, "epsilon": 0.548},
        {"mechanism": "dam", "privacy_model": LDP, "reached": True, "epsilon": 18.2},
        {"mechanism": "grr", "privacy_model": LDP, "reached": True, "epsilon": 21.0},
        {"mechanism": "olh", "privacy_model": LDP, "reached": False, "epsilon": None},
        {"mechanism": "dp-heatmap", "privacy_model": CENTRAL_DP, "reached": True, "epsilon": 0.1}]


def test_ranked_within_each_model_in_the_officers_order_and_the_top_is_signed():
    """SEM-Geo-I at 0.548 per km is not ranked above DAM at 18.2 per report: each model has its own table, in the
    order the officer accepted the models; the signed default is the top of the first table."""
    ranked = flow.rank([dict(r) for r in ROWS], "epsilon", [LDP, GEO_I])
    assert [(h.split(":")[0], [r["mechanism"] for r in rows]) for h, rows in flow.groups(ranked)] == [
        ("Local DP", ["dam", "grr", "olh"]), ("Geo-indistinguishability", ["sem-geoi"]),
        ("Central DP", ["dp-heatmap"])]
    assert [r["rank"] for r in ranked] == [1, 2, None, 1, 1]
    assert flow.signed(ranked) == "dam" and flow.signed(ranked, "sem-geoi") == "sem-geoi"
    assert flow.signed(ranked, "olh") == "dam"                # not reached: cannot be signed
    ranked = flow.rank([dict(r) for r in ROWS], "epsilon", [GEO_I, LDP])
    assert flow.groups(ranked)[0][0].startswith("Geo-indistinguishability") and flow.signed(ranked) == "sem-geoi"


def test_the_limit_and_the_signed_mechanism_survive_the_link_and_old_links_open():
    back, warnings = state.decode({})
    assert not warnings and back["decide_limit"] == feasibility.DEFAULT_LIMIT and back["decide_chosen"] == ""
    cfg = state.defaults()
    cfg.update(decide_limit=2.5, decide_chosen="dam", decide_models=[GEO_I, LDP])
    query = state.encode(cfg)
    assert query["dclim"] == "2.5" and query["dcsign"] == "dam" and query["dcm"] == "geoi,ldp"
    back, warnings = state.decode(query)
    assert not warnings and (back["decide_limit"], back["decide_chosen"], back["decide_models"]) == (
        2.5, "dam", [GEO_I, LDP])
    _, warnings = state.decode({"dclim": "-1", "dcsign": "nope"})
    assert len(warnings) == 2


def test_the_printed_command_carries_the_limit_and_the_datas_users():
    cfg = {**state.defaults(), "dataset": "normal", "grid_side": 32, "n_users": None, "decide_limit": 3.0}
    cli = flow.command(cfg, ["dam"])
    assert "--limit 3" in cli and "--users" not in cli


def test_record_groups_alternatives_states_the_limit_and_one_schedule():
    """The signed record: alternatives under one heading per model, the limit among the choices, the one-collection
    ledger line once when the collection runs once, and the chosen schedule (monthly), never 'daily'."""
    cfg = {**state.defaults(), "decide_every": "monthly", "decide_limit": 5.0, "decide_target": 1000.0}
    full = dict(probability=0.95, confidence=0.95, trials=10, misses=0, miss_chance_max=0.01, mean=900.0,
                ci_low=800.0, ci_high=1000.0, message="smallest found", ledger={"lines": ["a report"]})
    ranked = flow.rank([dict(r, **full, ledger_one="Total per person in one collection: ε = 18.2 (LDP).",
                             ledger_sentence="Total per person over 12 collections (collected monthly for a year).",
                             within_limit=False, limit_epsilon=5.0) for r in ROWS], "epsilon", [LDP, GEO_I])
    head, tail = flow.record_sections(cfg, data_label="us.csv", rows_text="8,134 rows", region_text="box",
                                      cell_text="32 × 32 cells of 39.6 km", answers=ranked, chosen="dam",
                                      why_not={}, link="http://x", cli="ldpviz target")
    assert head.index("Local DP: ranked by ε per report") < head.index("Geo-indistinguishability: ranked")
    assert "The largest ε per person in one collection accepted" in head and "daily" not in head
    assert "total per person, one collection" in head
    once = {**cfg, "decide_every": "once"}
    same = "Total per person in one collection: ε = 18.2 (LDP)."
    ranked1 = [dict(r, ledger_sentence=same) for r in ranked]
    head, _ = flow.record_sections(once, data_label="d", rows_text="r", region_text="b", cell_text="c",
                                   answers=ranked1, chosen="dam", why_not={}, link="l", cli="c")
    section = head.split("Decision: the ledger")[1].split("Decision: alternatives")[0]
    assert section.count(same) == 1


# ---- numbers and distances for people -------------------------------------------------------------------------------

def test_numbers_for_people():
    assert wording.times(18.22) == "about 82 million" and wording.times(10.0) == "22,026"
    assert wording.times(math.log(3.1e9)) == "about 3.1 billion" and wording.times(1e5) == "more than 10^300"
    warning = accounting.collection_ledger(Setting("dam", LDP, 18.22, 40_000.0)).warning()
    assert "about 82 million times likelier (e^18.22)" in warning and not re.search(r"\d{1,3}(,\d{3}){2,}", warning)
    assert decision_report.metric_value("w2_m", 39_600.0) == "39.6 km"
    assert "e+" not in decision_report._num(39_600.0) and "e-" not in decision_report._num(0.0000123)


# ---- the national file: the feasibility note and the inverse answer, on the command line -----------------------

@pytest.mark.slow
def test_target_judges_the_limit_on_decides_ledger_reports_and_unit(capsys):
    """Issue 36: the printed command judged the limit per row with one report while the page judged it per person
    with step 2's reports. With 3 reports per person, `ldpviz target` (as Decide prints it) gives each answer the
    page's ledger (3 reports, per person) and the same epsilon at the limit as the page's with_limit; per report,
    the ledger is per row."""
    cfg = {**state.defaults(), "dataset": "normal", "grid_side": 8, "n_users": 2_000, "decide_limit": 3.0,
           "decide_reports": 3, "decide_metric": "w2_m", "decide_target": 5_000.0}
    cli = flow.command(cfg, ["grr"])
    assert "--reports 3" in cli and "--unit" not in cli
    argv = cli.split()[1:]
    assert main([*argv, "--no-attacker", "--trials", "3"]) == 0
    out = json.loads(capsys.readouterr().out)
    row = out["results"][0]
    assert out["reports"] == 3 and out["limit_unit"] == "person" and row["reached"]
    assert row["ledger"]["unit"] == accounting.UNIT_PERSON
    assert row["limit_epsilon"] == pytest.approx(1.0)             # 3 reports of epsilon 1 reach the limit of 3
    from ldpviz.data import datasets
    region = datasets.load("normal").resolve_region(cfg["region"])
    page = flow.with_limit([{k: v for k, v in row.items() if k not in ("limit", "limit_epsilon", "within_limit")}],
                           region, cfg)[0]
    assert page["limit_epsilon"] == pytest.approx(row["limit_epsilon"]) and page["within_limit"] == row["within_limit"]
    per_report = flow.command({**cfg, "decide_reports": 1, "decide_unit": "report"}, ["grr"])
    assert "--unit report" in per_report and "--reports" not in per_report
    assert main([*per_report.split()[1:], "--no-attacker", "--trials", "3"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["limit_unit"] == "row" and out["results"][0]["ledger"]["unit"] == accounting.UNIT_ROW
    assert out["results"][0]["limit_epsilon"] == pytest.approx(3.0)


def test_target_on_a_national_file_says_the_target_is_finer_than_a_cell_and_what_the_limit_reaches(tmp_path, capsys):
    """~8,000 places over the north-east box at d = 32 (cells of ~40 km), W2 at most 1 km: the LDP mechanisms
    need far more than a limit of 5, so the answer leads with that, says the target is ~40x finer than a cell and
    gives, per mechanism, W2 at epsilon 5 over fresh collections with a range clipped at 0; the text and the JSON
    say the same, ranked under the model's heading."""
    path = national_csv(tmp_path / "us.csv")
    box = ",".join(f"{v:g}" for v in NORTH_EAST)
    argv = ["target", "--csv", str(path), f"--bbox={box}", "--grid", "32", "--metric", "w2_m", "--at-most", "1000",
            "--mechanism", "grr", "--mechanism", "dam", "--trials", "3", "--no-attacker"]
    assert main(argv + ["--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert 30_000 < out["cell_m"] < 50_000 and out["limit"] == 5.0 and not out["feasible"]
    assert out["lead"].startswith("No mechanism meets w2_m ≤ 1 km within your limit of ε 5")
    assert "finer than a cell" in out["lead"] and out["groups"][0]["model"] == LDP
    for r in out["results"]:
        assert not r["within_limit"] and r["limit_epsilon"] == pytest.approx(5.0)
        at = r["at_limit"]
        assert at["epsilon"] == pytest.approx(5.0) and at["trials"] == 3 and 0 <= at["low"] <= at["mean"] <= at["high"]
        assert at["mean"] > 1000 and at["met"] == 0
        assert r["ci_low"] is None or r["ci_low"] >= 0
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert text.splitlines()[0] == out["lead"] and "Local DP: ranked by ε per report:" in text
    assert all(line.strip() in text for line in out["at_limit_lines"]) and "e+" not in text
    assert not re.search(r"CI -", text)


# ---- the Decide page (AppTest) ------------------------------------------------------------------------------------

def _page(**query: str):
    from pathlib import Path

    from streamlit.testing.v1 import AppTest
    at = AppTest.from_file(str(Path(__file__).resolve().parents[2] / "ldpviz/app/views/decide.py"),
                           default_timeout=900)
    for key, value in query.items():
        at.query_params[key] = value
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_decide_page_notes_a_target_finer_than_a_cell_and_leads_with_the_limit():
    """Step 3 shows the cell size beside a W2 target of 300 m on 1.25 km cells and notes it is 4.2x finer; with a
    limit of 0.01 no central-DP mechanism meets it, so step 4 leads with that and what each reaches at 0.01."""
    at = _page(ds="normal", users="2000", d="8", dcm="cdp", dcmet="w2_m", dct="300", dclim="0.01")
    assert any("beside cells of 1.25 km" in c.value for c in at.caption)
    assert any("4.2× finer than a cell (1.25 km)" in w.value for w in at.warning)
    lead = [e.value for e in at.error if e.value.startswith("No mechanism")]     # (some may wait for Start)
    assert lead and "within your limit of ε 0.01" in lead[0]
    answers = at.session_state["decide_answers"]
    assert all(a["at_limit"]["epsilon"] == pytest.approx(0.01) for a in answers if a.get("limit_epsilon"))
    assert all(f"- {a['mechanism']} (central DP) at ε 0.01: w2_m" in lead[0] for a in answers)
    assert all(a["at_limit"]["low"] >= 0 for a in answers)


def test_decide_page_ranks_each_model_apart_in_the_officers_order_and_names_the_signed_one():
    """Central DP accepted first, then Geo-I: two tables under their headings in that order, each ranked from 1,
    with the limit column; the signed mechanism is the top of the first table and the page says so."""
    at = _page(ds="normal", users="2000", d="8", dcm="cdp,geoi", dcmet="w2_m", dct="1500")
    for _ in range(3):          # the mechanisms that wait for Start (opening the page searches only a few)
        start = [b for b in at.button if str(b.label).startswith("Start (")]
        if not start:
            break
        start[0].click().run()
        assert not at.exception, [e.value for e in at.exception]
    text = [m.value for m in at.markdown]
    heads = [t for t in text if t.startswith("**") and "ranked by" in t]
    assert heads == ["**Central DP: ranked by ε of the published map**",
                     "**Geo-indistinguishability: ranked by ε per km**"]
    tables = [d.value for d in at.dataframe]
    assert len(tables) == 2 and all(list(t["rank"])[0] == "1" for t in tables)
    # (planar Laplace may wait for Start: predicted long on a loaded machine)
    assert "sem-geoi" in set(tables[1]["mechanism"]) <= {"planar-laplace", "sem-geoi"}
    assert "within your limit" in tables[0]
    top = tables[0]["mechanism"].iloc[0]
    assert any(t.startswith(f"**The signed decision is for {top}**") and "the top of the first table" in t
               for t in text)
    assert at.number_input(key="w:decide_limit").value == feasibility.DEFAULT_LIMIT


def test_signed_report_states_the_decisions_unit_and_schedule_once():
    """A signed decision (a person, monthly): the report's own ledger section is the decision's (per person, 12
    collections), never 'daily for a year', its lines stated once, and no sentence says it protects one row."""
    from ldpviz import mechanisms
    from ldpviz.experiment import Scenario
    from ldpviz.data import datasets
    from ldpviz.geo.domain import Grid

    cfg = {**state.defaults(), "decide_every": "monthly", "decide_unit": "person", "decide_target": 800.0}
    region = datasets.load("normal").resolve_region(None)
    mech = mechanisms.create("grr", Grid(region, 8), 2.0)
    ledger = flow.ledger_for(mech, region, cfg)
    goal = {"mechanism": "grr", "privacy_model": LDP, "metric": "w2_m", "target": 800.0, "epsilon": 2.0,
            "n_users": 1000, "reached": True, "probability": 0.95, "confidence": 0.95, "miss_chance_max": 0.01,
            "misses": 0, "trials": 3, "mean": 700.0, "ci_low": 650.0, "ci_high": 750.0, "message": "found"}
    row = flow.answer(goal, mech, region, cfg)
    sections = flow.record_sections(cfg, data_label="d", rows_text="r", region_text="b", cell_text="c",
                                    answers=[row], chosen="grr", why_not={}, link="l", cli="c")
    sc = Scenario(dataset="normal", mechanism="grr", epsilon=2.0, grid_side=8, n_users=1000, trials=2)
    html = decision_report.build_report(sc, audit=False, goal=row, decision=sections, ledger=ledger)
    assert "daily for a year" not in html and "collected monthly for a year" in html
    assert "What each person pays" in html and "What each row pays" not in html
    assert "protects one row, not one person" not in html
    assert html.count(f"<li>{ledger.lines()[0]}</li>") == 1            # the ledger's lines listed once
