"""Uploaded trips on Flows and People (issue 21.5): the loader and checks of ``ldpviz od --file``, kept across
pages; page grids follow the shared d where allowed; captions and units say what is drawn."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
from streamlit.testing.v1 import AppTest

from ldpviz.cli import commands as cli

ROOT = Path(__file__).resolve().parents[2]


def trips_csv(tmp_path: Path) -> Path:
    """300 people, 2 straight trips each of 5 points, across Minneapolis: person, trip, seq, lon, lat."""
    rng = np.random.default_rng(3)
    rows = []
    for person in range(300):
        for trip in range(2):
            a, b = rng.uniform([-93.33, 44.89], [-93.19, 45.05], (2, 2))
            rows += [(f"p{person}", trip, seq, *(a + (b - a) * seq / 4)) for seq in range(5)]
    path = tmp_path / "my_trips.csv"
    pd.DataFrame(rows, columns=["person", "trip", "seq", "lon", "lat"]).to_csv(path, index=False)
    return path


def page(name: str, **query: str) -> AppTest:
    at = AppTest.from_file(str(ROOT / "ldpviz/app/views" / name), default_timeout=180)
    for key, value in query.items():
        at.query_params[key] = value
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    return at


BOX = "-93.34,44.88,-93.18,45.06"


def test_flows_upload_counts_the_trips_the_cli_counts(tmp_path, capsys):
    """Trips uploaded on Flows with bounds typed beside the uploader: the same trips as `ldpviz od --file --bbox`,
    the box is the region (no data read), and the upload is kept for People. Without bounds the region is the
    Data page's rule, private tiles paid with epsilon0 once per person (issue 26): 300 people are too few to frame
    privately, so the page asks for bounds and counts people, not rows."""
    path = trips_csv(tmp_path)
    assert cli.main(["od", "--file", str(path), "--grid", "4", "--json", "--bbox", BOX]) == 0
    expected = json.loads(capsys.readouterr().out)["n_users"]
    first = page("flows.py", d="4")
    first.file_uploader[0].set_value(("my_trips.csv", path.read_bytes(), "text/csv")).run()
    assert any("Next step: choose the area of my_trips.csv" in i.value for i in first.info)
    assert any("300 people in all" in c.value for c in first.caption)        # 'Why ldpviz asks', folded away
    # too few for the private tiles: the step says how many people they need (issue 36), counted in people
    assert any("need at least" in i.value and "this file has 300 people in all" in i.value for i in first.info)
    at = page("flows.py", d="4")
    at.text_input(key="w:trip_bounds:flows").set_value(BOX)
    at.file_uploader[0].set_value(("my_trips.csv", path.read_bytes(), "text/csv")).run()
    assert not at.exception, [e.message for e in at.exception]
    name = at.session_state["cfg"]["flows_dataset"]
    assert name.startswith("upload:") and name.endswith(":my_trips.csv")
    assert any("Loaded **my_trips.csv**: 300 people, 600 trips" in s.value for s in at.success)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Trips"] == f"{expected:,}" == "600"
    assert at.selectbox(key="w:flows_dataset").value == name
    assert "Your trips: my_trips.csv" in at.selectbox(key="w:flows_dataset").options
    assert any("typed bounds -93.34,44.88,-93.18,45.06" in c.value for c in at.caption), \
        [c.value for c in at.caption]
    # kept across pages: People lists it and studies its 300 people
    people = AppTest.from_file(str(ROOT / "ldpviz/app/views/people.py"), default_timeout=180)
    people.session_state["trip_uploads"] = at.session_state["trip_uploads"]
    people.query_params["d"] = "8"
    people.run()
    assert "Your trips: my_trips.csv" in people.selectbox(key="w:people_source").options


def test_people_upload_studies_each_person_and_states_units(tmp_path):
    path = trips_csv(tmp_path)
    at = page("people.py", d="8", pk="2")
    at.text_input(key="w:trip_bounds:people").set_value(BOX)
    at.file_uploader[0].set_value(("my_trips.csv", path.read_bytes(), "text/csv")).run()
    assert not at.exception, [e.message for e in at.exception]
    assert at.session_state["cfg"]["people_source"].endswith(":my_trips.csv")
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["People"] == "300"
    assert metrics["W2"].split()[1] in ("m", "km") and metrics["EMD"].split()[1] in ("m", "km")
    assert any("share of the people's weight per cell" in h.proto.body for h in at.get("html"))


def test_bad_trips_file_is_explained(tmp_path):
    at = page("flows.py", d="4")
    at.file_uploader[0].set_value(("bad.csv", b"a,b\n1,2\n", "text/csv")).run()
    assert not at.exception
    assert any("trips file could not be used" in e.value for e in at.error)


def test_page_grids_follow_the_shared_d_where_allowed():
    """Flows' OD grid follows the shared d when it is 4, 8 or 16, else uses 8 and says why; People says why
    Shuffle is off for laplace-top."""
    at = page("flows.py", d="4")
    assert at.select_slider(key="w:flows_grid").value == 4
    assert any("Follows the shared grid side d = 4" in c.value for c in at.sidebar.caption)
    at = page("flows.py", d="32", fd="4")
    assert at.select_slider(key="w:flows_grid").value == 4
    assert any("Set on this page; the shared grid side is d = 32" in c.value for c in at.sidebar.caption)
    at = page("people.py", d="8", pmeth="laplace-top", pk="2")
    assert at.toggle(key="w:people_shuffle").disabled
    assert any("laplace-top has no shuffled version" in c.value for c in at.sidebar.caption)


def test_flows_trip_box_suggested_from_the_rows_keeps_its_provenance(tmp_path):
    """Issue 26.6 on the dashboard: a trips file no region frames (people in Minneapolis and in Paris) is refused with
    a suggested box; typed back, that box is labelled as read from the rows (not covered by ε), while another typed
    box is 'the box you typed', with the caveat that ldpviz cannot know where it came from."""
    rng = np.random.default_rng(5)
    rows = []
    for person in range(300):
        lon0, lat0 = (-93.3, 44.95) if person < 200 else (2.35, 48.85)
        rows += [(f"p{person}", 0, seq, lon0 + rng.normal(0, 0.03), lat0 + rng.normal(0, 0.03)) for seq in range(3)]
    path = tmp_path / "two_cities.csv"
    pd.DataFrame(rows, columns=["person", "trip", "seq", "lon", "lat"]).to_csv(path, index=False)
    at = page("flows.py", d="4")
    at.file_uploader[0].set_value(("two_cities.csv", path.read_bytes(), "text/csv")).run()
    step = next(i.value for i in at.info if "Next step: choose the area of two_cities.csv" in i.value)
    box = step.split("`")[1]
    at.button(key="fix:trip_bounds:flows").click().run()          # accept the suggestion: typed back by the page
    assert not at.exception, [e.message for e in at.exception]
    message = " ".join(s.value for s in at.success)
    assert "the box ldpviz suggested from the file's rows" in message and "not covered by epsilon" in message, message
    at = page("flows.py", d="4")                            # a new session: the same box typed, not suggested
    at.text_input(key="w:trip_bounds:flows").set_value(box).run()
    at.file_uploader[0].set_value(("two_cities.csv", path.read_bytes(), "text/csv")).run()
    message = " ".join(s.value for s in at.success)
    assert "the box you typed: ldpviz read no users' data to use it; if it was read from the data" in message
    assert "suggested from the file's rows" not in message


def national_trips_csv(tmp_path: Path) -> Path:
    """120 people with 2 short trips each in the contiguous US and 10 in Alaska: no rule frames one region."""
    rng = np.random.default_rng(5)
    rows = []
    for person in range(130):
        lon0, lat0 = (rng.uniform(-124, -67), rng.uniform(25, 49)) if person < 120 else (rng.uniform(-160, -140),
                                                                                         rng.uniform(60, 68))
        for trip in range(2):
            rows += [(f"p{person}", trip, seq, lon0 + 0.01 * seq, lat0 + 0.01 * seq) for seq in range(3)]
    path = tmp_path / "nation_trips.csv"
    pd.DataFrame(rows, columns=["person", "trip", "seq", "lon", "lat"]).to_csv(path, index=False)
    return path


def test_trips_that_only_need_a_box_get_it_as_a_step_on_flows_and_people(tmp_path):
    """Issue 27: a trips file that only needs a box read as a red error ending in 'upload again'. On Flows and on
    People it is a step: the suggested box with its rows, a button that accepts it, and the file loads with that
    box without being uploaded again; the 'Loaded' banner shows only while that file is the selected data."""
    path = national_trips_csv(tmp_path)
    for name, key in (("flows.py", "flows"), ("people.py", "people")):
        at = page(name, d="8")
        at.file_uploader[0].set_value(("nation_trips.csv", path.read_bytes(), "text/csv")).run()
        assert not at.exception, [e.message for e in at.exception]
        assert not at.error, [e.value for e in at.error]
        step = next(i.value for i in at.info if "Next step: choose the area of nation_trips.csv" in i.value)
        assert "upload again" not in step and "Suggested" in step and "km wide" in step
        at.button(key=f"fix:trip_bounds:{key}").click().run()
        assert not at.exception, [e.message for e in at.exception]
        box = step.split("`")[1]
        assert at.text_input(key=f"w:trip_bounds:{key}").value == box
        assert any("Loaded **nation_trips.csv**" in s.value for s in at.success)
        source = "flows_dataset" if key == "flows" else "people_source"
        assert at.session_state["cfg"][source].endswith(":nation_trips.csv")
    # People: switch back to the bundled storms; the banner about the uploaded trips goes away
    at.selectbox(key="w:people_source").set_value(state_sources()[0]).run()
    assert not at.exception
    assert not any("Loaded **nation_trips.csv**" in s.value for s in at.success)


def state_sources() -> list[str]:
    from ldpviz.app import state
    return list(state.PEOPLE_SOURCES)
