"""Trip files honour their order column (issue 26.7): points are put in travel order by seq (else time) within
each trip, rows with no usable order value are dropped and counted by name, repeated values are counted, and
the load message and the JSON row counts name the columns and the order used."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from ldpviz.cli.commands import main
from ldpviz.data import trajectories as T
from ldpviz.mechanisms.fo.private_region import upload_frame

BBOX = "-93.35,44.85,-93.15,45.05"
PUBLIC = upload_frame("public-tiles")


def ordered_trips(seed: int = 3, people: int = 40, trips: int = 2, points: int = 6) -> pd.DataFrame:
    """person, trip, seq, time, lat, lon in travel order: each trip walks north-east from a random start, so its
    first and last points (origin, destination) differ."""
    rng = np.random.default_rng(seed)
    rows = []
    for p in range(people):
        for t in range(trips):
            lat0, lon0 = 44.9 + 0.05 * rng.random(), -93.3 + 0.05 * rng.random()
            start = pd.Timestamp("2024-05-01T08:00:00Z") + pd.Timedelta(hours=24 * t + p % 7)
            for s in range(points):
                rows.append({"person": f"p{p}", "trip": t, "seq": s + 1,
                             "time": (start + pd.Timedelta(minutes=3 * s)).isoformat(),
                             "lat": round(lat0 + 0.01 * s, 5), "lon": round(lon0 + 0.008 * s, 5)})
    return pd.DataFrame(rows)


def shuffled(frame: pd.DataFrame, seed: int = 9) -> pd.DataFrame:
    return frame.sample(frac=1.0, random_state=seed).reset_index(drop=True)


def load(frame: pd.DataFrame, **kwargs) -> T.Trajectories:
    return T.load_trajectory_file(frame.to_csv(index=False).encode(), filename="trips.csv", frame=PUBLIC, **kwargs)


def trips_of(x: T.Trajectories) -> dict[tuple[str, str], list[tuple[float, float]]]:
    """Every trip's points in the loaded order, keyed by (person, trip)."""
    out = {}
    for i in range(x.n_trips):
        lo = x.trip_start[i]
        lon, lat = x.trip_points(i)
        out[(str(x.person[lo]), str(x.trip[lo]))] = list(zip(lon.tolist(), lat.tolist()))
    return out


@pytest.mark.parametrize("drop", [(), ("seq",), ("seq", "time")])
def test_shuffled_file_gives_the_same_trips(drop):
    """Shuffling the rows changes nothing when the file has an order column: seq (time ignored), or time alone
    (ISO dates). Without either the file's order is all there is -- and the message says so."""
    frame = ordered_trips().drop(columns=list(drop))
    ordered, mixed = load(frame), load(shuffled(frame))
    if "time" in frame or "seq" in frame:
        assert trips_of(mixed) == trips_of(ordered)
        region = ordered.default_region
        a, b = T.od_pairs(ordered, region), T.od_pairs(mixed, region)
        key = lambda od: sorted(zip(od.person.astype(str), od.origin_lon, od.dest_lon))   # noqa: E731
        assert key(a) == key(b)                                    # same destination for every person's trips
        column = "seq" if "seq" in frame else "time"
        assert mixed.report.order == column
        assert f"points ordered by '{column}' within each trip" in mixed.report.summary()
        assert f"rows were not in '{column}' order in the file" in mixed.report.summary()
        assert f"rows were not in '{column}' order" not in ordered.report.summary()
    else:
        assert mixed.report.order == ""
        assert "points in file order within each trip (no seq or time column)" in mixed.report.summary()
        assert trips_of(mixed) != trips_of(ordered)                # the file's order is all there is


def test_seq_wins_over_time_and_times_going_backwards_are_reported():
    """With both columns the seq orders; times that then go backwards are a counted check, not re-sorted."""
    frame = ordered_trips(people=5)
    frame.loc[(frame.person == "p0") & (frame.trip == 0) & (frame.seq == 2), "time"] = "2024-04-30T00:00:00Z"
    x = load(shuffled(frame))
    assert x.report.order == "seq" and x.report.checks["trips with times out of order"] == 1
    assert trips_of(x) == trips_of(load(frame))


def test_missing_and_repeated_order_values_are_counted_and_named():
    """A row with no seq or an unreadable one cannot be placed: dropped and counted under its reason. Rows sharing a
    seq within a trip are kept (in file order between them) and counted as a named check."""
    frame = ordered_trips(people=10, trips=1).astype({"seq": object})
    frame.loc[3, "seq"] = ""          # missing
    frame.loc[9, "seq"] = "third"     # not a number
    frame.loc[15, "seq"] = frame.loc[14, "seq"]    # a repeat inside one trip (p2's 4th and 3rd points: rows 14, 15)
    frame.loc[16, "seq"] = frame.loc[14, "seq"]    # ... and a third copy
    x = load(shuffled(frame))
    r = x.report
    assert r.rows_read == 60 and r.rows_kept == 58
    assert r.dropped == {"missing seq": 1, "non-numeric seq": 1}
    assert r.checks["points sharing their order value"] == 3
    text = r.summary()
    assert "dropped 1 with no seq (their place in the trip is unknown) and 1 with a seq that is not a number" in text
    assert "3 points whose order value repeats within their trip" in text


def test_missing_time_is_dropped_when_time_orders():
    """Ordering by time, a row with no time has no place in its trip: dropped and counted by name."""
    frame = ordered_trips(people=4, trips=1).drop(columns=["seq"])
    frame.loc[2, "time"] = ""
    x = load(frame)
    assert x.report.order == "time" and x.report.dropped == {"missing time to order by": 1}
    assert "1 with no time (the order column" in x.report.summary()


def test_named_columns_and_one_column_for_two_roles():
    """--seq-column picks a column by name; a column cannot be both the person and the seq."""
    frame = ordered_trips(people=3, trips=1).rename(columns={"seq": "k"})
    x = load(shuffled(frame), seq_column="k")
    assert x.report.order == "k" and x.report.columns["seq"] == "k"
    assert trips_of(x) == trips_of(load(frame, seq_column="k"))
    with pytest.raises(Exception, match="used for two roles"):
        load(frame, seq_column="person")


def test_command_line_names_the_columns_and_order(tmp_path, capsys):
    """`ldpviz od --file` says which columns it used and what ordered the points, in the load message and in the
    JSON row counts; a shuffled file gives the same OD pairs as the ordered one (the pairs' order differs, so the
    mechanism's random draws land on other users: only what the draws decide may differ)."""
    frame = ordered_trips()
    outs = []
    for name, table in (("ordered.csv", frame), ("shuffled.csv", shuffled(frame))):
        path = tmp_path / name
        table.to_csv(path, index=False)
        assert main(["od", "--file", str(path), "--bbox", BBOX, "--mechanism", "grr", "--grid", "4", "--json",
                     "--seed", "1"]) == 0
        captured = capsys.readouterr()
        assert "seq from 'seq'" in captured.err and "points ordered by 'seq' within each trip" in captured.err
        out = json.loads(captured.out)
        assert out["rows"]["columns"]["seq"] == "seq" and out["rows"]["columns"]["person"] == "person"
        assert out["rows"]["order"] == {"column": "seq", "text": "points ordered by 'seq' within each trip"}
        outs.append(out)
    same = ("n_users", "distinct_true_pairs", "left_out", "max_trips_per_person", "people", "guarantee",
            "region_chosen")
    assert [outs[0][k] for k in same] == [outs[1][k] for k in same]
