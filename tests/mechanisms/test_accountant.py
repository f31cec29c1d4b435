"""The privacy accountant (issue 26): every total a person pays is composed in one place and is true.

Table tests compare the ledger with totals derived by hand for points, trips (k trips, L points), navigation
(W windows), repetitions (R) and the region's epsilon0, with and without a typed box; property tests draw random
trip files and check that the worst person's total is what that person actually sent in the simulation.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ldpviz import experiment, mechanisms
from ldpviz.cli.commands import main
from ldpviz.data import trajectories
from ldpviz.data.datasets import load_file
from ldpviz.flows import navigation, od
from ldpviz.geo.domain import Grid, Region
from ldpviz.mechanisms import accounting as A
from ldpviz.mechanisms.base import CENTRAL_DP, GEO_I, LDP
from ldpviz.mechanisms.fo.private_region import upload_frame
from ldpviz.people import trajectory_mechanisms as tm
from ldpviz.people import user_heatmaps as uh

CITY = Region(-93.26, 44.97, 16_000.0, name="city")
BOX = (-93.34, 44.88, -93.18, 45.06)


# ------------------------------------------------------------------ the composition rule
def test_sequential_composition_per_model():
    """LDP adds epsilons; Geo-I adds epsilon per km and eps x slack; central DP is kept apart; uses multiply."""
    ledger = A.Ledger((A.Charge("tiles", LDP, 0.5, 1, 1), A.Charge("reports", LDP, 2.0, 3, 1),
                       A.Charge("geo", GEO_I, 1.5, 2, 1, slack_m=500.0), A.Charge("map", CENTRAL_DP, 1.0, 1, 1)))
    total = ledger.total()
    assert total.ldp == pytest.approx(0.5 + 6.0) and total.geo_per_km == pytest.approx(3.0)
    assert total.geo_slack_log == pytest.approx(2 * 1.5 * 0.5) and total.geo_slack_m == pytest.approx(500.0)
    assert total.central == 1.0
    assert total.log_ratio(2000.0) == pytest.approx(6.5 + 3.0 * 2.0 + 1.5)     # ldp + geo x (d + slack)
    median = ledger.total("median")
    assert median.ldp == pytest.approx(2.5) and median.geo_per_km == pytest.approx(1.5)
    assert ledger.repeated(365).total().ldp == pytest.approx(365 * 6.5)
    assert "central ε-DP 1 for the published map" in total.text()


def test_warning_judges_the_per_person_total_and_the_repetitions():
    """Each report at 2 is fine alone; 3 of them per person are weak; over 10 collections practically none."""
    one = A.Ledger((A.Charge("report", LDP, 2.0, 1, 1),))
    assert one.warning() is None
    three = A.Ledger((A.Charge("report", LDP, 2.0, 3, 1),))
    assert three.warning().startswith("Weak privacy") and "ε = 6 (LDP)" in three.warning()
    daily = one.repeated(10, "daily for 10 days")
    assert daily.warning().startswith("Practically no privacy") and "over 10 collections" in daily.warning()
    assert A.Ledger((A.Charge("exact", "none", 0.0, 1, 1),)).warning() is None


def test_person_ledger_is_one_real_persons_total():
    """The worst-off person is the one with the largest total, not a sum of each charge's worst."""
    a = A.Charge("traffic", LDP, 1.0, 0, 0)
    b = A.Charge("updates", LDP, 1.0, 0, 0)
    ledger = A.person_ledger([(a, np.array([5, 5, 0])), (b, np.array([0, 1, 9]))])
    assert ledger.total().ldp == 9.0                    # person 3 (0 + 9), not 5 + 9
    assert [c.uses_worst for c in ledger.charges] == [0, 9]


# ------------------------------------------------------------------ the table: hand-derived totals
def _city_file(tmp_path, n=4000):
    rng = np.random.default_rng(7)
    lon, lat = rng.normal(-93.26, 0.02, n), rng.normal(44.97, 0.02, n)
    path = tmp_path / "points.csv"
    pd.DataFrame({"lon": lon, "lat": lat}).to_csv(path, index=False)
    return path


@pytest.mark.parametrize("name", ["grr", "srr", "dam", "planar-laplace", "sem-geoi"])
@pytest.mark.parametrize("paid", [False, True])
def test_points_total_is_epsilon0_plus_the_report(tmp_path, name, paid):
    """Points: a row pays the region's epsilon0 (a paid upload without a box) plus one report, in its own model
    (Geo-I: the mechanism's epsilon per km and slack, e.g. SEM-Geo-I's calibrated epsilon')."""
    path = _city_file(tmp_path)
    ds = load_file(path, frame=upload_frame("private-tiles", 0.5)) if paid else load_file(path, bbox=BOX)
    sc = experiment.Scenario(dataset=ds.name, mechanism=name, epsilon=1.0, grid_side=8, n_users=2000)
    result = experiment.run(sc, ds)
    mech = mechanisms.create(name, result.grid, 1.0)
    total = result.ledger.total()
    e0 = 0.5 if paid else 0.0
    if mech.privacy_model == GEO_I:
        per_km = mech.epsilon_per_cell * 1000 / result.grid.cell_m
        assert total.ldp == pytest.approx(e0) and total.geo_per_km == pytest.approx(per_km)
        assert total.geo_slack_m == pytest.approx(mech.geo_slack_m())
        assert result.summary()["total_epsilon"] is None
    else:
        assert total.ldp == pytest.approx(e0 + 1.0)
        assert result.summary()["total_epsilon"] == (pytest.approx(1.5) if paid else None)
    assert result.summary()["ledger"]["total"] == total.to_dict()


def _trip_rows(people: int, trips: dict[int, int], points: dict[int, int], seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for p in range(people):
        for t in range(trips.get(p, 1)):
            a, b = rng.uniform([-93.33, 44.89], [-93.19, 45.05], (2, 2))
            n = points.get(p, 3)
            rows += [(f"p{p}", t, s, *(a + (b - a) * s / max(n - 1, 1))) for s in range(n)]
    return pd.DataFrame(rows, columns=["person", "trip", "seq", "lon", "lat"])


def test_od_total_is_k_trips_plus_the_region_once(tmp_path):
    """OD: a person with k trips pays 2k reports at epsilon/2 (k x epsilon) plus the region's epsilon0 once,
    however many points they have; the CLI JSON and text print that same total."""
    frame = _trip_rows(1500, {0: 4, 1: 2}, {0: 6})
    path = tmp_path / "trips.csv"
    frame.to_csv(path, index=False)
    assert main(["od", "--file", str(path), "--mechanism", "grr", "--epsilon", "2", "--grid", "4", "--json"]) == 0
    from io import StringIO  # noqa: F401
    ledger_bbox = od.od_trials(trajectories.load_trajectory_file(path, bbox=BOX), "grr", 2.0, 4)["ledger"]
    assert ledger_bbox["total"]["ldp_epsilon"] == pytest.approx(4 * 2.0)           # typed box: no epsilon0
    paid = trajectories.load_trajectory_file(path, frame=upload_frame("private-tiles", 0.5))
    out = od.od_trials(paid, "grr", 2.0, 4)
    assert out["ledger"]["total"]["ldp_epsilon"] == pytest.approx(0.5 + 4 * 2.0)    # epsilon0 once, not per point
    assert out["max_person_epsilon"] == pytest.approx(8.5)
    assert "each person reported the tile of one of their points" in paid.default_region.data_use


def test_od_cli_prints_the_ledger(tmp_path, capsys):
    frame = _trip_rows(300, {0: 3}, {})
    path = tmp_path / "trips.csv"
    frame.to_csv(path, index=False)
    bbox = ",".join(map(str, BOX))
    assert main(["od", "--file", str(path), f"--bbox={bbox}", "--mechanism", "grr", "--epsilon", "2", "--grid",
                 "4", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["ledger"]["total"]["ldp_epsilon"] == pytest.approx(6.0)
    assert main(["od", "--file", str(path), f"--bbox={bbox}", "--mechanism", "grr", "--epsilon", "2", "--grid",
                 "4"]) == 0
    assert "privacy: Total per person in one collection: ε = 6 (LDP)" in capsys.readouterr().out


def test_people_totals_points_and_trajectories():
    """People: dam-points pays L reports (L points), dam-sample and LDPTrace epsilon once; + epsilon0 once."""
    paid = Region(-93.26, 44.97, 16_000.0, epsilon_spent=0.5, data_use="chosen under 0.5-LDP: each person "
                  "reported the tile of one of their points")
    assert tm.trajectory_ledger("dam-points", 1.0, [3, 25, 4]).total().ldp == 25.0
    assert tm.trajectory_ledger("dam-points", 1.0, [3, 25, 4], paid).total().ldp == 25.5
    assert tm.trajectory_ledger("dam-sample", 1.0, [3, 25, 4], paid).total().ldp == 1.5
    assert tm.trajectory_ledger("ldptrace", 2.0, [3, 25, 4]).total().ldp == 2.0
    heat = uh.heatmap_ledger(1.0, paid).total()
    assert heat.central == 2.0 and heat.ldp == 0.5                  # map and centres; the tile report


def test_sem_geoi_total_is_its_own_epsilon_prime_not_the_slider():
    """SEM-Geo-I: by default the slider is epsilon' per km itself; calibrated to DAM's local privacy the slider
    is DAM's LDP level, and the ledger charges the stated epsilon' per km (with the slack), not the slider."""
    raw = mechanisms.create("sem-geoi", Grid(CITY, 8), 1.0)
    assert A.collection_ledger(raw).total().geo_per_km == pytest.approx(1.0)
    assert A.setting_text(raw).startswith("epsilon = 1 per km + ")
    mech = mechanisms.create("sem-geoi", Grid(CITY, 8), 1.0, calibration="same-lp-as-dam")
    per_km = mech.epsilon_per_cell * 1000 / mech.grid.cell_m
    ledger = A.collection_ledger(mech)
    assert ledger.total().geo_per_km == pytest.approx(per_km) and not math.isclose(per_km, 1.0)
    assert ledger.total().geo_slack_m == pytest.approx(mech.geo_slack_m())
    assert "slider epsilon = 1" in A.setting_text(mech)


def test_navigation_charges_people_once_per_window(tmp_path):
    """Navigation on trips: a traffic reporter is a person (one location per window), so the worst person's
    total is W + their updates, times epsilon, whatever their number of points."""
    frame = _trip_rows(400, {0: 3}, {p: 30 for p in range(50)})
    path = tmp_path / "trips.csv"
    frame.to_csv(path, index=False)
    data = trajectories.load_trajectory_file(path, bbox=BOX)
    res = navigation.navigation_for_dataset(data, "srr", 0.5, 0.0, 8, n_trips=60, seed=2, delay_s=30.0)
    w = res.settings["windows_collected"]
    sent = res.settings["reports_sent_by_reporter"]
    assert sent.size == 400 and (sent == w).all()                    # one location per person per window
    worst = res.ledger.total().ldp
    assert worst <= 0.5 * (w + res.updates.sum()) + 1e-9 and worst >= 0.5 * w


# ------------------------------------------------------------------ property: what was actually sent
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(trips=st.lists(st.integers(1, 4), min_size=20, max_size=60),
       points=st.lists(st.integers(2, 9), min_size=20, max_size=60), seed=st.integers(0, 1000))
def test_worst_person_total_is_what_they_sent(trips, points, seed):
    """Random trip files: the OD ledger's worst person pays epsilon for every trip with both ends in the box,
    counted from the raw rows by hand; navigation's worst person sent W + their updates reports."""
    people = min(len(trips), len(points))
    frame = _trip_rows(people, dict(enumerate(trips)), dict(enumerate(points)), seed)
    data = trajectories.Trajectories(name="random", label="random", description="", person=frame.person.to_numpy(),
                                     trip=frame.trip.astype(str).to_numpy(), lon=frame.lon.to_numpy(),
                                     lat=frame.lat.to_numpy(), presets={"box": CITY})
    out = od.od_trials(data, "grr", 1.0, 4)
    # by hand: a trip counts when its first and last points inside the region are two distinct points
    inside = CITY.contains(frame.lon.to_numpy(), frame.lat.to_numpy())
    counted = frame[inside].groupby(["person", "trip"]).size()
    per_person = (counted >= 2).groupby(level=0).sum()
    assert out["ledger"]["total"]["ldp_epsilon"] == pytest.approx(float(per_person.max()))
    res = navigation.navigation_for_dataset(data, "srr", 1.0, 0.0, 6, n_trips=20, seed=seed, delay_s=30.0)
    w = res.settings["windows_collected"]
    trip_person = np.asarray(od.load_od_pairs(data, None, None, seed)[0].person)
    sent = {p: w for p in pd.unique(frame.person)}                   # every person reports traffic (all inside)
    assert (res.settings["reports_sent_by_reporter"] == w).all()
    picked = res.ledger.charges[-1].uses_worst + res.ledger.charges[-2].uses_worst
    assert res.ledger.total().ldp == pytest.approx(picked)
    assert max(sent.values()) <= picked <= w + res.updates.sum()
    assert len(trip_person) >= len(res.updates)
