"""A person's journey with files no one tuned for (issue 21): a national file studied through bounds typed on
the Data page (the rows kept are exactly those ``ldpviz run --csv FILE --bbox`` keeps), a file across 180°
(Fiji) shown on Explore, and a trips file uploaded on Flows with bounds beside it and studied on People.
Screenshots at 1440, 1024 and 390 px land in build/screenshots/ (journey-regions-*.png)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from urllib.parse import urlencode

import numpy as np
import pandas as pd
import pytest

from ldpviz.cli import main as cli_main
from test_journey import Walk

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.xdist_group("browser")]

NORTH_EAST = "-80.5,38.5,-70.5,43.5"
FIJI = "170,-25,-170,-10"
CITY = "-93.34,44.88,-93.18,45.06"


def national_csv(path: Path) -> Path:
    """30,000 rows over the contiguous US, Alaska and Hawaii (too wide for one region), denser in the north-east."""
    rng = np.random.default_rng(21)
    parts = [(rng.uniform(-124.5, -67.0, 20_000), rng.uniform(25.0, 49.0, 20_000)),
             (rng.uniform(-80.0, -71.0, 8_000), rng.uniform(39.0, 43.0, 8_000)),
             (rng.uniform(-165.0, -141.0, 1_200), rng.uniform(55.0, 70.0, 1_200)),
             (rng.uniform(-160.0, -155.0, 800), rng.uniform(19.0, 22.0, 800))]
    lon = np.concatenate([p[0] for p in parts])
    lat = np.concatenate([p[1] for p in parts])
    pd.DataFrame({"city": [f"c{i}" for i in range(lon.size)], "latitude": lat, "longitude": lon}).to_csv(path,
                                                                                                         index=False)
    return path


def fiji_csv(path: Path) -> Path:
    """6,000 rows around Fiji, on both sides of 180° (longitudes written in [-180, 180])."""
    rng = np.random.default_rng(22)
    lon = np.concatenate([rng.normal(178.4, 0.5, 3_000), rng.normal(-179.8, 0.3, 3_000)])
    lon = np.where(lon > 180, lon - 360, lon)
    lat = np.concatenate([rng.normal(-17.8, 0.4, 3_000), rng.normal(-16.8, 0.3, 3_000)])
    pd.DataFrame({"lat": lat, "lon": lon}).to_csv(path, index=False)
    return path


def trips_csv(path: Path) -> Path:
    rng = np.random.default_rng(23)
    rows = []
    for person in range(300):
        for trip in range(2):
            a, b = rng.uniform([-93.33, 44.89], [-93.19, 45.05], (2, 2))
            rows += [(f"p{person}", trip, seq, *(a + (b - a) * seq / 4)) for seq in range(5)]
    frame = pd.DataFrame(rows, columns=["person", "trip", "seq", "lon", "lat"])
    frame.sample(frac=1.0, random_state=23).to_csv(path, index=False)    # shuffled: the seq column orders (issue 26)
    return path


def cli_rows_kept(path: Path, bbox: str, capsys) -> int:
    assert cli_main(["run", "--csv", str(path), "--bbox", bbox, "--mechanism", "grr", "--grid", "8", "--json"]) == 0
    return int(json.loads(capsys.readouterr().out)["rows"]["kept"])


def metric(walk: Walk, label: str) -> str:
    box = walk.page.locator('[data-testid="stMetric"]', has=walk.page.get_by_text(label, exact=True)).first
    return box.locator('[data-testid="stMetricValue"]').inner_text()


def type_bounds(walk: Walk, label_start: str, text: str) -> None:
    field = walk.page.locator(f'input[aria-label^="{label_start}"]').first
    field.fill(text)
    field.press("Enter")
    walk.idle()


def go(walk: Walk, title: str, path: str) -> None:
    """Open another page from the sidebar; on a phone, where the sidebar is folded away, by its link with the
    settings in the address (as a person would follow it)."""
    link = walk.page.locator('[data-testid="stSidebarNav"] a', has_text=re.compile(f"^{re.escape(title)}$"))
    box = link.first.bounding_box() if link.count() else None
    if box and box["x"] >= 0 and box["x"] + box["width"] <= walk.page.viewport_size["width"]:
        walk.nav(title)
        return
    walk.page.goto(f"{walk.url}/{path}?{urlencode(walk.query())}")
    walk.page.locator('[data-testid="stMain"] h1').first.wait_for(timeout=180_000)
    walk.idle()


def upload(walk: Walk, path: Path, index: int = 0) -> None:
    walk.upload(walk.page.locator('[data-testid="stFileUploader"] input[type="file"]').nth(index), path)


def test_national_file_through_bounds_keeps_the_cli_rows(server, browser, tmp_path, capsys):
    path = national_csv(tmp_path / "us_cities.csv")
    expected = cli_rows_kept(path, NORTH_EAST, capsys)
    walk = Walk(browser, server)
    try:
        walk.page.goto(f"{server}/Data")
        walk.idle()
        type_bounds(walk, "Bounds W, S, E, N", NORTH_EAST)
        upload(walk, path)
        walk.check_clean("Data after a national file with bounds")
        assert "Loaded" in walk.main_text() or "loaded" in walk.main_text(), walk.main_text()[:1500]
        assert metric(walk, "Rows kept") == f"{expected:,}", (metric(walk, "Rows kept"), expected)
        assert "typed bounds -80.5,38.5,-70.5,43.5" in walk.main_text() + walk.sidebar().inner_text()
        walk.shot("regions-national-data")
        walk.nav("Explore")
        walk.check_clean("Explore on the national file's box")
        walk.shot("regions-national-explore")
    finally:
        walk.close()


def test_file_across_180_on_explore(server, browser, tmp_path, capsys):
    path = fiji_csv(tmp_path / "fiji.csv")
    expected = cli_rows_kept(path, FIJI, capsys)
    for width, height in ((1440, 1000), (1024, 900), (390, 844)):
        walk = Walk(browser, server, width, height)
        try:
            walk.page.goto(f"{server}/Data")
            walk.idle()
            type_bounds(walk, "Bounds W, S, E, N", FIJI)
            upload(walk, path)
            walk.check_clean(f"Data, Fiji file at {width} px")
            assert metric(walk, "Rows kept") == f"{expected:,}"
            walk.shot(f"regions-fiji-data-{width}")
            go(walk, "Explore", "")
            walk.check_clean(f"Explore, Fiji at {width} px")
            assert re.search(r"W2", walk.main_text())
            walk.shot(f"regions-fiji-explore-{width}")
        finally:
            walk.close()


def test_trips_uploaded_on_flows_are_studied_on_people(server, browser, tmp_path, capsys):
    path = trips_csv(tmp_path / "my_trips.csv")
    assert cli_main(["od", "--file", str(path), "--bbox", CITY, "--grid", "4", "--json"]) == 0
    trips = json.loads(capsys.readouterr().out)["n_users"]
    for width, height in ((1440, 1000), (1024, 900), (390, 844)):
        walk = Walk(browser, server, width, height)
        try:
            walk.page.goto(f"{server}/Flows")
            walk.idle()
            type_bounds(walk, "Bounds for your trips", CITY)
            upload(walk, path)
            walk.check_clean(f"Flows after the trips upload at {width} px")
            text = walk.main_text()
            assert "Loaded my_trips.csv" in text and f"{trips:,} trips" in text, text[:1500]
            assert "typed bounds -93.34,44.88,-93.18,45.06" in text
            assert "seq from 'seq'" in text and "points ordered by 'seq' within each trip" in text, text[:1500]
            walk.shot(f"regions-flows-trips-{width}")
            go(walk, "People", "People")
            walk.check_clean(f"People with the uploaded trips at {width} px")
            walk.shot(f"regions-people-{width}")
        finally:
            walk.close()
