"""Issue 37.1-8: every total is the accountant's, judged on the right figure, named in its unit.

Each expected figure is derived by hand in the test (sequential composition: a person's total is the sum of what
each of their reports costs) and compared with what the command line prints (text and JSON), the files it writes
(collection.json, README.md, the report) and the pages (AppTest).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from ldpviz import mechanisms
from ldpviz.cli.commands import main
from ldpviz.decide import budget
from ldpviz.errors import LdpvizInputError
from ldpviz.geo.domain import Grid, Region
from ldpviz.mechanisms import accounting as A
from ldpviz.mechanisms.base import GEO_I, LDP, UNIT_ROW

ROOT = Path(__file__).resolve().parents[2]
CITY = Region(-93.26, 44.97, 16_000.0, name="city")
PAID = Region(-93.26, 44.97, 16_000.0, name="paid", epsilon_spent=0.5,
              data_use="chosen under 0.5-LDP: each person reported the tile of one of their points")
BOX = "-93.34,44.88,-93.18,45.06"


def _trips(tmp_path, people=400, extra_trips=None, seed=0) -> Path:
    """One trip per person (person p0 makes ``extra_trips`` more), 6 points each, inside BOX."""
    rng = np.random.default_rng(seed)
    rows = []
    for p in range(people):
        for t in range(1 + (extra_trips if p == 0 and extra_trips else 0)):
            a, b = rng.uniform([-93.33, 44.89], [-93.19, 45.05], (2, 2))
            rows += [(f"p{p}", t, s, *(a + (b - a) * s / 5)) for s in range(6)]
    path = tmp_path / "trips.csv"
    pd.DataFrame(rows, columns=["person", "trip", "seq", "lon", "lat"]).to_csv(path, index=False)
    return path


# ------------------------------------------------------------------ 37.1 the warning judges the largest total
def test_the_warning_judges_the_largest_total_and_names_it():
    """GRR at 6, twice: 6 per collection (weak), 12 over both (practically none): the 12 is judged and named."""
    once = A.Ledger((A.Charge("a report", LDP, 6.0, 1, 1),))
    assert once.warning().startswith("Weak privacy (judged on the total per person in one collection)")
    twice = once.repeated(2)
    text = twice.warning()
    assert text.startswith("Practically no privacy: the total per person over 2 collections is ε = 12 (LDP)")
    assert "e^12" in text and "in one collection" not in text


def test_deploy_repeats_warns_on_the_repeated_total(tmp_path, capsys):
    out = tmp_path / "bundle"
    assert main(["deploy", "--mechanism", "grr", "--epsilon", "6", "--repeats", "2", "--grid", "8",
                 "--bbox", BOX, "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "warning: Practically no privacy: the total per person over 2 collections is ε = 12 (LDP)" in err
    spec = json.loads((out / "collection.json").read_text())
    assert spec["ledger"]["total"]["ldp_epsilon"] == 12.0                      # by hand: 2 x 6
    assert spec["ledger"]["warning"].startswith("Practically no privacy")
    readme = (out / "README.md").read_text()
    assert "**Practically no privacy: the total per person over 2 collections" in readme


# ------------------------------------------------------------------ 37.2 navigate's worst person is the ledger's
def test_navigate_worst_person_includes_the_traffic_reports(tmp_path, capsys):
    """srr epsilon 1, theta 40, d 16, one trip per person, everyone inside the box: a person pays W traffic
    reports (one per window) plus their own trip's updates, so the worst is 1 x (W + most updates)."""
    path = _trips(tmp_path)
    args = ["navigate", "--file", str(path), f"--bbox={BOX}", "--mechanism", "srr", "--epsilon", "1",
            "--theta", "40", "--grid", "16", "--trips", "200", "--seed", "1"]
    assert main([*args, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    w, lam = out["reporter_windows"], out["max_updates"]
    assert w > 0 and lam > 0
    assert out["worst_person_epsilon"] == pytest.approx(1.0 * (w + lam))       # not lam x 1, the old figure
    assert out["worst_person_epsilon"] == out["ledger"]["total"]["ldp_epsilon"]
    assert out["max_total_epsilon"] == pytest.approx(1.0 * lam) and out["reporter_total_epsilon"] == w
    assert main(args) == 0
    text = capsys.readouterr().out
    assert f"privacy: Total per person in one collection: ε = {w + lam:g} (LDP)" in text


# ------------------------------------------------------------------ 37.3 the budget panel through the accountant
def test_budget_from_a_total_pays_the_region_every_collection():
    """A paid region (epsilon0 0.5) and GRR, daily for a week (7 collections): a total of 7 leaves 7/7 - 0.5 = 0.5
    for each report; a report at 1 totals 7 x (0.5 + 1) = 10.5, printed with e^10.5."""
    ledger = A.collection_ledger(mechanisms.create("grr", Grid(PAID, 8), 1.0), PAID)
    split = budget.plan(every="day", period=1, period_unit="week", total_epsilon=7.0, ledger=ledger)
    assert split["collections"] == 7 and split["per_collection_epsilon"] == pytest.approx(0.5)
    assert split["total_epsilon"] == pytest.approx(7.0)
    spent = budget.plan(every="day", period=1, period_unit="week", per_collection_epsilon=1.0, ledger=ledger)
    assert spent["total_epsilon"] == pytest.approx(10.5) and "e^10.5" in spent["sentence"]
    assert spent["warnings"] and "practically no privacy" in spent["warnings"][-1]
    nothing = budget.plan(every="day", period=1, period_unit="week", total_epsilon=3.0, ledger=ledger)
    assert nothing["per_collection_epsilon"] == 0.0 and "already spend the total of 3" in nothing["sentence"]


def test_budget_never_adds_ldp_and_geo_i():
    """Planar Laplace at 1 per km over a paid region, 7 collections: 3.5 (LDP) + 7 per km, two figures, no sum."""
    mech = mechanisms.create("planar-laplace", Grid(PAID, 8), 1.0)
    ledger = A.collection_ledger(mech, PAID)
    spent = budget.plan(every="day", period=1, period_unit="week", per_collection_epsilon=1.0, ledger=ledger,
                        epsilon_unit="per km")
    assert spent["total_epsilon"] is None                                   # no one number across models
    assert spent["total_text"] == "3.5 + 7/km" and "ε = 3.5 + 7 per km × d" in spent["sentence"]
    split = budget.plan(every="day", period=1, period_unit="week", total_epsilon=14.0, ledger=ledger,
                        epsilon_unit="per km")
    assert split["per_collection_epsilon"] == pytest.approx(2.0)           # 14 per km / 7; epsilon0 stated beside
    assert split["total_text"] == "3.5 + 14/km"


def _tradeoffs(**query: str) -> AppTest:
    at = AppTest.from_file(str(ROOT / "ldpviz/app/views/trade_offs.py"), default_timeout=120)
    for key, value in {"ds": "normal", "users": "3000", "d": "8", "smech": "grr", "vary": "epsilon",
                       "vals": "0.5,2", **query}.items():
        at.query_params[key] = value
    return at.run()


def test_tradeoffs_budget_panel_reads_the_accountant():
    """The page: daily for a week, a total of 7 -> 1 per collection; 2 per collection -> 14 and its warning."""
    at = _tradeoffs(bev="day", bper="1", bunit="week", bfrom="1", btot="7")
    assert not at.exception
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Charged per collection"] == "1" and metrics["Total ε (one person, whole period)"] == "7"
    at = _tradeoffs(bev="day", bper="1", bunit="week", eps="2")
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Total ε (one person, whole period)"] == "14"
    assert any("over 7 collections" in w.value and "ε = 14" in w.value for w in at.warning)


# ------------------------------------------------------------------ 37.4 one figure for the region's protection
def test_od_and_navigate_print_one_figure_for_a_paid_region(tmp_path, capsys):
    """A trip file without a box: the region's 0.5 is a ledger line; no second 'protected at 0.5 + epsilon'."""
    path = _trips(tmp_path, people=1500, extra_trips=3)
    assert main(["od", "--file", str(path), "--mechanism", "grr", "--epsilon", "2", "--grid", "4"]) == 0
    text = capsys.readouterr().out
    assert "protected at" not in text and "+ epsilon" not in text
    # by hand: p0 has 4 trips, 2 reports each at epsilon/2 = 1: 8; plus epsilon0 0.5 once
    assert "privacy: Total per person in one collection: ε = 8.5 (LDP)" in text
    assert "ε0 = 0.5 per person is a line of the ledger" in text


# ------------------------------------------------------------------ 37.5 the per-trip line keeps the slack
def test_the_worst_trip_keeps_the_geo_i_slack(tmp_path, capsys):
    """SEM-Geo-I snaps to cell centres: each update is epsilon per km x (d + the cell diagonal)."""
    path = _trips(tmp_path)
    assert main(["navigate", "--file", str(path), f"--bbox={BOX}", "--mechanism", "sem-geoi", "--epsilon", "1",
                 "--theta", "0", "--grid", "8", "--trips", "60", "--delay", "30", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    lam = out["max_updates"]
    slack = out["max_trip_total"]["geo_i_slack_m"]
    grid = Grid(Region.from_bbox(*map(float, BOX.split(","))), 8)
    assert slack == pytest.approx(np.sqrt(2) * grid.cell_m)                   # the cell diagonal
    assert out["trip_total_text"] == f"{lam:g} per km × (d + {A.length_text(slack)})"
    assert out["max_total_epsilon"] == pytest.approx(lam) and out["epsilon_unit"] == "per km"


# ------------------------------------------------------------------ 37.6 units
def test_per_row_ledgers_count_per_row():
    ledger = A.collection_ledger(mechanisms.create("grr", Grid(PAID, 8), 1.0), PAID)
    assert ledger.unit == UNIT_ROW
    assert all(" per row" in line and " per person" not in line for line in ledger.lines())
    assert ledger.sentence().startswith("Total per row (event-level: a person with m rows pays m times)")


def test_the_report_honours_a_trips_files_person_column(tmp_path, capsys):
    """`ldpviz report` on a trip file: one point per person (as od and navigate), a per-person ledger, and no
    'per row' total beside it."""
    path = _trips(tmp_path, people=1500, extra_trips=2)
    page = tmp_path / "r.html"
    assert main(["report", "--file", str(path), "--mechanism", "grr", "--epsilon", "2", "--grid", "8",
                 "--trials", "2", "--no-audit", "--out", str(page)]) == 0
    assert "Person column 'person': one point per person (1,500 people)" in capsys.readouterr().err
    html = page.read_text()
    assert "What each person pays (the ledger)" in html and "What each row pays" not in html
    embedded = json.loads(re.search(r'<pre id="ldpviz-report-json">(.*?)</pre>', html, re.S).group(1)
                          .replace("&quot;", '"').replace("&#x27;", "'").replace("&amp;", "&"))
    # by hand: epsilon0 0.5 once and one report at 2 per person, whatever their trips
    assert embedded["ledger"]["total"]["ldp_epsilon"] == pytest.approx(2.5)
    assert embedded["ledger"]["unit"] == "one person"
    assert embedded["scenario"]["ledger"]["unit"] == "one person"


def test_the_deploy_readme_states_one_reports_guarantee_and_the_per_person_ledger(tmp_path):
    out = tmp_path / "b"
    assert main(["deploy", "--mechanism", "grr", "--epsilon", "1", "--grid", "8", "--bbox", BOX,
                 "--reports-per-person", "3", "--out", str(out)]) == 0
    readme = (out / "README.md").read_text()
    assert "per row (event-level)" not in readme
    assert "- Guarantee of one report: epsilon-LDP with epsilon = 1." in readme
    assert "Total per person in one collection: ε = 3 (LDP)" in readme                  # by hand: 3 x 1


# ------------------------------------------------------------------ 37.8 same-lp-as-dam is not deployed
def test_deploy_refuses_the_non_monotone_calibration(tmp_path, capsys):
    out = tmp_path / "b"
    assert main(["deploy", "--mechanism", "sem-geoi", "--epsilon", "2", "--param", "calibration=same-lp-as-dam",
                 "--grid", "8", "--bbox", BOX, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "not monotone" in err and not out.exists()
    suggested = float(re.search(r"--mechanism sem-geoi --epsilon ([0-9.]+)", err).group(1))
    mech = mechanisms.create("sem-geoi", Grid(Region.from_bbox(*map(float, BOX.split(","))), 8), 2.0,
                             calibration="same-lp-as-dam")
    assert suggested == pytest.approx(mech.epsilon_per_cell * 1000 / mech.grid.cell_m, rel=1e-3)
    assert main(["deploy", "--mechanism", "sem-geoi", "--epsilon", f"{suggested:g}", "--grid", "8", "--bbox", BOX,
                 "--out", str(out)]) == 0                                           # the printed command runs
    with pytest.raises(LdpvizInputError, match="not monotone"):
        from ldpviz.deploy import spec as specs
        specs.build_spec(mech)
    assert GEO_I == mech.privacy_model
