"""Trajectory data model, loader checks, bundled storms and OD pairs (ldpviz.data.trajectories)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from ldpviz.mechanisms.fo.private_region import upload_frame
from ldpviz.data import trajectories as T
from ldpviz.cli.commands import main
from ldpviz.geo.domain import Region
from ldpviz.errors import LdpvizInputError

CSV = b"""user,lat,lon,time
a,44.90,-93.20,2020-01-01T00:00:00
a,44.91,-93.21,2020-01-01T00:10:00
b,44.90,-93.20,2020-01-01T00:00:00
,44.90,-93.20,2020-01-01T00:00:00
c,44.90,-93.20,2020-01-01T00:10:00
c,44.95,-93.20,2020-01-01T00:00:00
d,44.90,-93.20,2020-01-01T00:00:00
d,48.90,-93.20,2020-01-01T00:01:00
"""


def test_storms_bundled():
    """The bundled storms: 655 storms = 655 people with one trip, 19,537 points, documented checks."""
    t = T.load("atlantic-storms")
    assert (t.n_points, t.n_trips, t.n_people) == (19_537, 655, 655)
    assert t.time is not None and np.all(np.isfinite(t.time))
    checks = T.trajectory_checks(t.person, t.trip_start, t.lon, t.lat, t.time)
    assert checks["trips with times out of order"] == 0
    assert checks["jumps faster than a plane"] == 21      # identical time stamps, documented in data/README.md
    assert t.lon.min() == pytest.approx(-136.9) and t.lat.max() == pytest.approx(70.7)


def test_loader_reports_every_problem_with_counts():
    """Missing person id is dropped and counted; one-point trips and fast jumps are counted, kept; with no seq column
    the time column orders each trip (issue 26: c's rows are put in time order, and the note says so)."""
    x = T.load_trajectory_file(CSV, filename="t.csv", frame=upload_frame("public-tiles"))
    r = x.report
    assert r.rows_read == 8 and r.rows_kept == 7 and r.dropped == {"missing person id": 1}
    assert r.checks["one-point trips"] == 1 and r.checks["people with one point"] == 1
    assert r.checks["trips with times out of order"] == 0 and r.order == "time"
    assert r.checks["jumps faster than a plane"] == 1       # d: 445 km in one minute
    assert x.n_trips == 4 and list(x.trip_lengths()) == [2, 1, 2, 2]
    lon, lat = x.trip_points(2)                               # c re-sorted by its time column
    assert list(lat) == [44.95, 44.90]
    assert "dropped 1 with no person id" in r.summary() and "not changed" in r.summary()
    assert "points ordered by 'time' within each trip" in r.summary()
    assert "2 rows were not in 'time' order in the file" in r.summary()
    seq = CSV.replace(b"user,lat,lon,time\n", b"user,lat,lon,time,seq\n").replace(b"00\n", b"00,1\n")
    y = T.load_trajectory_file(seq, filename="s.csv", frame=upload_frame("public-tiles"))   # seq wins over time
    assert y.report.order == "seq" and y.report.checks["trips with times out of order"] == 1


def test_loader_refuses_mixed_coordinate_systems():
    """Degrees mixed with projected metres is refused with both counts named."""
    raw = b"id,lat,lon\na,44.9,-93.2\na,4975000,478000\nb,4975100,478100\n"
    with pytest.raises(LdpvizInputError, match=r"mixes coordinate systems: 1 rows .* 2 look like projected"):
        T.load_trajectory_file(raw, filename="m.csv")


def test_loader_needs_a_person_column_and_names_it():
    with pytest.raises(LdpvizInputError, match="no person column found"):
        T.load_trajectory_file(b"lat,lon\n1,2\n", filename="p.csv")
    with pytest.raises(LdpvizInputError, match="person column 'who' is not in"):
        T.load_trajectory_file(b"id,lat,lon\na,1,2\n", filename="p.csv", person_column="who")


def test_loader_parquet_trips_and_no_time(tmp_path):
    """Parquet with a trip column and no time: trips grouped in file order, no time checks."""
    frame = pd.DataFrame({"person_id": ["p", "q", "p", "p"], "trip": [1, 1, 1, 2],
                          "latitude": [10.0, 11.0, 10.5, 12.0], "longitude": [20.0, 21.0, 20.5, 22.0]})
    path = tmp_path / "tr.parquet"
    frame.to_parquet(path)
    x = T.load_trajectory_file(path, frame=upload_frame("public-tiles"))
    assert x.time is None and x.n_people == 2 and x.n_trips == 3
    assert list(x.trip_lengths()) == [2, 1, 1]
    assert list(x.trip_points(0)[1]) == [10.0, 10.5]
    assert "points without time" not in x.report.checks
    assert any("grouped" in note for note in x.report.notes)


def test_haversine_across_the_antimeridian():
    """179.9 E to 179.9 W is 0.2 degrees of longitude at the equator, not 359.8."""
    d = T.haversine_m(np.array([179.9]), np.array([0.0]), np.array([-179.9]), np.array([0.0]))
    assert d[0] == pytest.approx(22_239, rel=1e-3)


def test_od_pairs_clip_to_region_and_count_left_out():
    """Every trip gets an OD pair inside the region or is counted under a reason."""
    t = T.load("atlantic-storms")
    region = t.presets["Caribbean"]
    pairs = T.od_pairs(t, region)
    assert pairs.n + sum(pairs.left_out.values()) == t.n_trips
    assert region.contains(pairs.origin_lon, pairs.origin_lat).all()
    assert region.contains(pairs.dest_lon, pairs.dest_lat).all()


def test_gravity_pairs_seeded_and_inside():
    """Synthetic gravity pairs: same seed same pairs; both ends inside the region; destinations near origins."""
    rng = np.random.default_rng(0)
    lon, lat = rng.uniform(-93.3, -93.2, 5000), rng.uniform(44.9, 45.0, 5000)
    region = Region.fit(lon, lat)
    a = T.gravity_od_pairs(lon, lat, region, 2000, seed=3)
    b = T.gravity_od_pairs(lon, lat, region, 2000, seed=3)
    assert np.array_equal(a.dest_lon, b.dest_lon)
    assert region.contains(a.dest_lon, a.dest_lat).all()
    far = T.haversine_m(a.origin_lon, a.origin_lat, a.dest_lon, a.dest_lat)
    rnd = T.haversine_m(a.origin_lon, a.origin_lat, np.roll(a.dest_lon, 1), np.roll(a.dest_lat, 1))
    assert np.median(far) < np.median(rnd)      # the distance decay is there


def test_datasets_json_lists_kinds(capsys):
    """`ldpviz datasets --json`: every dataset with a kind, the point datasets keep their fields."""
    assert main(["datasets", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    kinds = {r["name"]: r["kind"] for r in rows}
    assert kinds["minneapolis-stops"] == "points" and kinds["atlantic-storms"] == "trajectories"
    assert all({"name", "label", "n", "synthetic", "description", "presets"} <= set(r) for r in rows)


def test_cli_od_reads_a_trajectory_file(tmp_path, capsys):
    """`ldpviz od --file`: an uploaded trajectory file, its load summary on stderr, the OD result as JSON."""
    rng = np.random.default_rng(0)
    rows = ["person,lat,lon"] + [f"p{i},{44.9 + 0.1 * rng.random():.5f},{-93.3 + 0.1 * rng.random():.5f}"
                                 for i in range(200) for _ in range(3)]
    path = tmp_path / "trips.csv"
    path.write_text("\n".join(rows) + "\n")
    assert main(["od", "--file", str(path), "--mechanism", "grr", "--grid", "4", "--json",
                 "--region-rule", "public-tiles"]) == 0
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    assert out["n_users"] == 200 and out["dataset"] == "upload:trips.csv"
    assert "Kept 600 of 600 rows" in captured.err
    assert main(["od", "--file", str(tmp_path / "missing.csv")]) == 2
