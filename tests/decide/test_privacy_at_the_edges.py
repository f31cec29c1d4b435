"""Issue 20: guarantees at the edges -- a continent-sized region never overflows, and a setting that gives
practically no privacy is flagged by one core function wherever it is shown (core, command line, Explore)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from ldpviz.evidence import audit
from ldpviz import mechanisms
from ldpviz.decide import decision_report as report
from ldpviz.cli.commands import main
from ldpviz.geo.domain import MAX_REGION_SIDE_M, Grid, Region
from ldpviz.experiment import Scenario
from ldpviz.decide.privacy_scale import common_terms, neighbour_log_ratio, ratio_text, weak_privacy_warning

ROOT = Path(__file__).resolve().parents[2]
#: The largest region the tool takes (6,500 km), centred on Minneapolis so the bundled stops lie inside it.
CONTINENT = Region(-93.26, 44.97, MAX_REGION_SIDE_M, "continent")
CITY = Region(-93.26, 44.97, 16_000.0, "city")


def test_ratio_text_works_from_the_log():
    """Ratios are written from their logs: small ones as numbers, large ones in powers of ten, and past 10^300
    (where e^x overflows a float) as 'more than 10^300'."""
    assert ratio_text(1.0) == "2.72" and ratio_text(10.0) == "22,026"
    assert ratio_text(100.0) == "2.7 x 10^43"
    assert ratio_text(9190.0) == "more than 10^300" and ratio_text(math.inf) == "more than 10^300"


@pytest.mark.parametrize("name,params", [("planar-laplace", {}), ("sem-geoi", {"calibration": "raw",
                                                                               "subset_size": 1})])
def test_privacy_scale_on_a_continent_does_not_overflow(name, params):
    """Geo-I at 1 per km on the 6,500 km region (d = 8, 812 km cells): every ratio is stated, the region-wide one
    as 'more than 10^300' from its finite log (9,192 for planar Laplace, the region's diagonal), and the setting is
    flagged as practically no privacy."""
    terms = common_terms(name, Grid(CONTINENT, 8), 1.0, **params)
    assert math.isfinite(terms["ldp_equivalent_epsilon"]) and terms["ldp_equivalent_epsilon"] > 7000
    assert terms["max_ratio_text"] == "more than 10^300" and math.isinf(terms["max_ratio"])
    assert "more than 10^300" in terms["sentence"]
    assert terms["warning"] and "Practically no privacy" in terms["warning"]
    if name == "planar-laplace":
        assert terms["ldp_equivalent_epsilon"] == pytest.approx(math.sqrt(2) * 6500.0)


def test_sem_geoi_states_its_slack_in_the_common_terms():
    """SEM-Geo-I's sentence names its snapping slack (the cell diagonal, 1.41 km on 1 km cells) and its ratio at
    r includes it: e^(eps' (r + slack))."""
    mech = mechanisms.create("sem-geoi", Grid(CITY, 16), 1.0, calibration="raw", subset_size=1)
    terms = common_terms(mech, r_m=500.0)
    assert terms["slack_m"] == pytest.approx(math.sqrt(2) * 1000.0)
    assert "snapping slack of 1.41 km" in terms["sentence"]
    assert terms["log_ratio_at_r"] == pytest.approx(1.0 * (0.5 + math.sqrt(2)))


def test_audit_on_a_continent_does_not_overflow():
    """The black-box audit of planar Laplace on the 6,500 km region (claims of ~800 per cell side) finishes with
    finite bounds and a worded verdict."""
    res = audit.audit_mechanism("planar-laplace", Grid(CONTINENT, 8), 1.0, n_samples=2_000, seed=0)
    assert res.status == audit.PASSED and math.isfinite(res.lower_bound) and math.isfinite(res.claimed)
    assert "no violation found" in res.summary()


def test_report_on_a_continent_states_the_ratio_and_warns():
    """The decision report for planar Laplace at 1 per km on the 6,500 km region builds, writes the region-wide
    ratio as 'more than 10^300' and carries the no-privacy warning."""
    sc = Scenario(dataset="minneapolis-stops", mechanism="planar-laplace", epsilon=1.0, grid_side=8, region=CONTINENT,
                  n_users=1_000, seed=1, trials=2)
    html = report.build_report(sc, audit=False)
    assert "more than 10^300" in html and "Practically no privacy" in html


@pytest.mark.parametrize("name,eps,grid,level", [
    ("grr", 5.0, Grid(CITY, 8), None), ("grr", 6.0, Grid(CITY, 8), "Weak privacy"),
    ("grr", 10.0, Grid(CITY, 8), "Weak privacy"), ("grr", 12.0, Grid(CITY, 8), "Practically no privacy"),
    ("planar-laplace", 2.0, Grid(CITY, 8), None),         # 2 km cells: 4 per neighbouring cell
    ("planar-laplace", 4.0, Grid(CITY, 8), "Weak privacy"),   # 8 per neighbouring cell
    ("planar-laplace", 6.0, Grid(CITY, 8), "Practically no privacy"),        # 12 per neighbouring cell
    ("planar-laplace", 1.0, Grid(Region(-93.26, 44.97, 3_328_000.0), 16), "Practically no privacy"),   # e^208
    ("laplace", 12.0, Grid(CITY, 8), "Practically no privacy"), ("exact", 1.0, Grid(CITY, 8), None),
])
def test_weak_privacy_warning_threshold(name, eps, grid, level):
    """The warning is weak above 5 and practically none above 10 (the accountant's thresholds): LDP/central
    epsilon, or Geo-I epsilon per km x cell side in km."""
    mech = mechanisms.create(name, grid, eps)
    text = weak_privacy_warning(mech)
    assert (text is not None) == (level is not None)
    if level:
        assert text.startswith(level) and neighbour_log_ratio(mech) > 5


def test_cli_run_prints_the_warning(capsys):
    """`ldpviz run` at epsilon 12 says so on stderr (stdout stays JSON, which carries it too)."""
    assert main(["run", "--mechanism", "grr", "--grid", "8", "--users", "2000", "--epsilon", "12", "--json"]) == 0
    captured = capsys.readouterr()
    assert "warning: Practically no privacy" in captured.err
    assert "Practically no privacy" in captured.out          # the JSON's privacy_warning
    assert main(["run", "--mechanism", "grr", "--grid", "8", "--users", "2000", "--epsilon", "2"]) == 0
    assert "Practically no privacy" not in capsys.readouterr().err


def test_cli_target_and_report_print_the_warning(capsys, tmp_path):
    """`ldpviz report` at epsilon 12 and `ldpviz target` finding epsilon above 10 warn on stderr."""
    out = tmp_path / "r.html"
    assert main(["report", "--mechanism", "grr", "--epsilon", "12", "--grid", "8", "--users", "1000",
                 "--no-audit", "--out", str(out)]) == 0
    assert "warning: Practically no privacy" in capsys.readouterr().err
    assert "Practically no privacy" in out.read_text()
    assert main(["target", "--metric", "w2_m", "--at-most", "1", "--mechanism", "grr", "--grid", "8",
                 "--users", "2000", "--trials", "3", "--no-attacker", "--json"]) == 0
    captured = capsys.readouterr()
    import json
    (row,) = json.loads(captured.out)["results"]
    assert (row["privacy_warning"] is not None) == bool(row["reached"] and row["epsilon"] > 10)
    if row["privacy_warning"]:
        assert "warning: grr: Practically no privacy" in captured.err


def test_explore_shows_the_warning():
    """Explore (AppTest), planar Laplace on the 10 km square at d = 4 (2.5 km cells): at 5 per km (12.5 per
    neighbouring cell) the page shows the warning outside any expander; at 1 per km (2.5) it does not. (The
    dashboard's LDP epsilon stops at 10, so Geo-I is where it can fire.)"""
    def explore(eps: str) -> AppTest:
        at = AppTest.from_file(str(ROOT / "ldpviz/app/views/explore.py"), default_timeout=180)
        for key, value in {"ds": "normal", "users": "2000", "d": "4", "mech": "planar-laplace", "eps": eps}.items():
            at.query_params[key] = value
        at.run()
        assert not at.exception, [e.message for e in at.exception]
        return at

    assert any("Practically no privacy" in w.value for w in explore("5").warning)
    assert not any("Practically no privacy" in w.value for w in explore("1").warning)


def test_channel_check_on_a_continent_is_undetermined_not_a_failure():
    """The Privacy audit page's channel check (ldpviz.app.compute.audit_row) of planar Laplace at 1 per km on the
    6,500 km region: report probabilities underflow (ratios beyond 10^300 are allowed), so the verdict is
    'undetermined' with its reason, never FAIL with measured inf; on a city it passes."""
    from ldpviz.app import compute
    row = compute.audit_row("planar-laplace", 8, CONTINENT, 1.0)
    assert row["verdict"] == compute.UNDETERMINED and math.isnan(row["measured"]) and "underflow" in row["why"]
    assert compute.audit_row("planar-laplace", 8, CITY, 1.0)["verdict"] == compute.PASS


@pytest.mark.slow
def test_explore_on_a_fiji_sized_region_does_not_overflow():
    """Issue 20: planar Laplace at 1 per km on a 3,356 km region (bounds -15,-15,15,15; d = 16, two trials) used to
    raise OverflowError in the guarantee box. Explore now runs cleanly, states the region-wide ratio as 'more than
    10^300' and shows the no-privacy warning (210 km cells: e^210 between neighbours)."""
    at = AppTest.from_file(str(ROOT / "ldpviz/app/views/explore.py"), default_timeout=300)
    for key, value in {"ds": "normal", "users": "2000", "d": "16", "mech": "planar-laplace", "eps": "1",
                       "region": "bounds typed in", "bbox": "-15,-15,15,15", "trials": "2"}.items():
        at.query_params[key] = value
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    assert not [e.value for e in at.error]
    assert any("Practically no privacy" in w.value and "e^210" in w.value for w in at.warning)
    assert any("more than 10^300" in m.value for m in at.markdown)
