"""The Data page's bounds (issue 21.1-2, 20.6): a national file gets a suggested box; the rows kept for typed
bounds are exactly the command line's; the default region is the paid private-tile one."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
from streamlit.testing.v1 import AppTest

from ldpviz.cli import commands as cli
from ldpviz import experiment

ROOT = Path(__file__).resolve().parents[2]
BOX = "-80.5, 38.5, -70.5, 43.5"


def national_csv(tmp_path: Path) -> Path:
    """Contiguous US (3,000 rows), Alaska (150), Hawaii (60): no single region holds it."""
    rng = np.random.default_rng(0)
    lon = np.concatenate([rng.uniform(-124, -67, 3000), rng.uniform(-165, -140, 150), rng.uniform(-160, -155, 60)])
    lat = np.concatenate([rng.uniform(25, 49, 3000), rng.uniform(58, 70, 150), rng.uniform(19, 22, 60)])
    path = tmp_path / "nation.csv"
    pd.DataFrame({"lat": lat, "lon": lon}).to_csv(path, index=False)
    return path


def data_page() -> AppTest:
    at = AppTest.from_file(str(ROOT / "ldpviz/app/views/data.py"), default_timeout=120)
    at.query_params["ds"] = "normal"
    at.run()
    return at


def cli_count(path: Path, bbox: str, capsys) -> int:
    assert cli.main(["run", "--csv", str(path), "--bbox", bbox.replace(" ", ""), "--grid", "8", "--json"]) == 0
    return json.loads(capsys.readouterr().out)["n_users"]


def test_national_file_opens_with_a_suggested_box_that_loads_the_cli_rows(tmp_path, capsys):
    """Refused by every default rule, the file gets a suggestion; accepting it loads exactly the rows
    ``ldpviz run --csv FILE --bbox`` keeps, with the count stated."""
    path = national_csv(tmp_path)
    at = data_page()
    at.file_uploader[0].set_value(("nation.csv", path.read_bytes(), "text/csv")).run()
    assert not at.exception
    assert not at.error, "a file that only needs a box is a step, not an error (issue 27)"
    suggestion = next(i.value for i in at.info if "Next step: choose the area of nation.csv" in i.value)
    box = suggestion.split("`")[1]
    assert "3,000 of 3,210 rows" in suggestion
    assert "about 5,060 km wide and 2,670 km tall" in suggestion       # the box's own size, not '6,000 km'
    assert "6,000 km" not in suggestion
    at.button(key="fix:bounds").click().run()
    assert not at.exception
    name = at.session_state["cfg"]["dataset"]
    held = at.session_state["uploads"][name]
    expected = cli_count(path, box, capsys)
    assert held.n == expected == 3000
    assert "suggested from where most of the file's rows are" in held.default_region.data_use   # not 'no data'
    # the accepted suggestion is named as what it is, not "typed" (issue 36: the signed record misstated it)
    assert any(f"{expected:,} points inside suggested bounds" in s.value for s in at.success)


def test_typed_bounds_load_the_cli_rows_and_the_run_keeps_the_box(tmp_path, capsys):
    """Bounds typed before the upload: the dataset, its region and a run hold the box's rows only (not the
    wider square around it), as the command line does."""
    path = national_csv(tmp_path)
    at = data_page()
    at.text_input(key="w:upload_bounds").set_value(BOX).run()
    at.file_uploader[0].set_value(("nation.csv", path.read_bytes(), "text/csv")).run()
    assert not at.exception
    name = at.session_state["cfg"]["dataset"]
    held = at.session_state["uploads"][name]
    expected = cli_count(path, BOX, capsys)
    assert held.n == expected and held.report.dropped["outside the bbox"] == 3210 - expected
    region = held.default_region
    assert region.bounds == (-80.5, 38.5, -70.5, 43.5) and at.session_state["cfg"]["region"] == region.name
    assert region.data_use == ""                      # typed by the user: no data read
    result = experiment.run(experiment.Scenario(dataset=name, grid_side=8, region=region.name), held)
    assert result.n_users == expected
    # after loading: new bounds apply to the rows already read, without the file
    at.text_input(key="w:upload_bounds").set_value("-100, 30, -90, 40").run()
    assert not at.exception
    again = at.session_state["uploads"][at.session_state["cfg"]["dataset"]]
    assert again.n == cli_count(path, "-100,30,-90,40", capsys)


def test_default_rule_is_private_tiles_and_public_tiles_say_not_private(tmp_path):
    """A city file with one far row: the default region is the paid one (ε0 stated); public tiles are an explicit
    choice named not private."""
    rng = np.random.default_rng(7)
    lon = np.append(rng.uniform(-93.33, -93.19, 6000), -90.0)
    lat = np.append(rng.uniform(44.89, 45.05, 6000), 46.5)
    raw = pd.DataFrame({"lat": lat, "lon": lon}).to_csv(index=False).encode()
    at = data_page()
    at.file_uploader[0].set_value(("city.csv", raw, "text/csv")).run()
    assert not at.exception
    region = at.session_state["uploads"][at.session_state["cfg"]["dataset"]].default_region
    assert region.epsilon_spent == 0.5 and "chosen under 0.5-LDP" in " ".join(s.value for s in at.success)
    at.radio(key="w:upload_rule").set_value("public-tiles").run()
    assert not at.exception
    region = at.session_state["uploads"][at.session_state["cfg"]["dataset"]].default_region
    assert region.epsilon_spent == 0 and "not private" in region.name


def test_bad_bounds_load_nothing(tmp_path):
    """Bounds the page rejects are explained, and the file is not loaded by the rule instead."""
    path = national_csv(tmp_path)
    at = data_page()
    at.text_input(key="w:upload_bounds").set_value("-80.5, 43.5, -70.5, 38.5").run()      # south > north
    at.file_uploader[0].set_value(("nation.csv", path.read_bytes(), "text/csv")).run()
    assert not at.exception
    assert any("These bounds cannot be used" in e.value for e in at.error)
    assert at.session_state["cfg"]["dataset"] == "normal" and not at.session_state["uploads"]


def test_sidebar_typed_bounds_keep_the_cli_rows(capsys):
    """Explore with 'bounds typed in' (a box much wider than tall): the sidebar states the rows inside the box,
    the same n as ``ldpviz run --bbox`` on the same data, not the rows of the square around it."""
    box = "-93.33,44.95,-93.19,44.98"
    assert cli.main(["run", "--dataset", "minneapolis-stops", "--bbox", box, "--grid", "8", "--json"]) == 0
    expected = json.loads(capsys.readouterr().out)["n_users"]
    from ldpviz.data import datasets
    from ldpviz.geo.domain import Region
    stops = datasets.load("minneapolis-stops")
    square = int(Region.from_bbox(*map(float, box.split(","))).contains(stops.lon, stops.lat).sum())
    assert square > expected > 0                       # the square around the box holds more people
    at = AppTest.from_file(str(ROOT / "ldpviz/app/views/explore.py"), default_timeout=180)
    for key, value in {"ds": "minneapolis-stops", "region": "bounds typed in", "bbox": box, "d": "8",
                       "users": "0", "mech": "grr"}.items():
        at.query_params[key] = value
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    caption = next(c.value for c in at.sidebar.caption if "typed bounds" in c.value)
    assert f"({expected:,} of 51,920 rows inside)" in caption and "square around the box" in caption
    assert any(f"over {expected:,} users" in m.value for m in at.markdown)


def test_a_new_file_does_not_keep_the_previous_files_bounds(tmp_path):
    """Issue 27: the bounds field kept the previous file's box and the next file then read 'none of the rows has
    a usable coordinate'. A new file clears bounds typed for the previous one (and says so); bounds typed before
    the first file stay; a box that holds none of a file's rows is a step that offers the file's own box."""
    first = national_csv(tmp_path)
    at = data_page()
    at.text_input(key="w:upload_bounds").set_value(BOX).run()
    at.file_uploader[0].set_value(("nation.csv", first.read_bytes(), "text/csv")).run()
    assert not at.exception and at.session_state["cfg"]["upload_bounds"] == BOX      # typed before: kept
    rng = np.random.default_rng(4)
    fiji = tmp_path / "fiji.csv"
    pd.DataFrame({"lat": rng.uniform(-18.5, -16.0, 2000), "lon": rng.uniform(177.0, 179.9, 2000)}).to_csv(
        fiji, index=False)
    at.file_uploader[0].set_value(("fiji.csv", fiji.read_bytes(), "text/csv")).run()
    assert not at.exception, [e.message for e in at.exception]
    assert at.session_state["cfg"]["upload_bounds"] == ""
    assert not any("usable coordinate" in e.value for e in at.error)
    assert any("bounds typed for the previous file" in m.value and "were cleared" in m.value for m in at.caption)
    # a box typed now that misses every row: a step with the file's own suggestion, not a dead end
    at.text_input(key="w:upload_bounds").set_value(BOX).run()
    assert not at.exception
    step = next(i.value for i in at.info if "Next step" in i.value)
    assert "fiji.csv" in step and "Suggested" in step
    at.button(key="fix:bounds").click().run()
    assert not at.exception
    held = at.session_state["uploads"][at.session_state["cfg"]["dataset"]]
    assert held.label == "fiji.csv" and held.n == 2000
    assert any("were cleared for this one" in m.value for m in at.success)


def test_one_file_framed_twice_is_told_apart_in_the_dataset_list(tmp_path):
    """Issue 27: two 'Uploaded: nation.csv' entries (the same file under two boxes) read the same; each names its
    rows and region."""
    path = national_csv(tmp_path)
    at = data_page()
    at.text_input(key="w:upload_bounds").set_value(BOX).run()
    at.file_uploader[0].set_value(("nation.csv", path.read_bytes(), "text/csv")).run()
    at.text_input(key="w:upload_bounds").set_value("-90, 30, -80, 40").run()
    assert not at.exception, [e.message for e in at.exception]
    options = [o for o in at.selectbox(key="w:dataset").options if o.startswith("Uploaded: nation.csv")]
    assert len(options) == 2 and len(set(options)) == 2, options
    assert all("rows, typed bounds" in o for o in options), options
