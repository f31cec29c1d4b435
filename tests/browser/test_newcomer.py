"""A newcomer's first visit with files no one tuned for (issue 27), in Debian's headless Chromium.

* First visit: a fresh browser (no cookie yet) opens Explore at 1440 px; its three maps are framed to their
  real columns on that very visit (the page keeps the window's width in a cookie and loads once more), not to
  the 1024 px column a cookie would only fix on the next load.
* A file that only needs a box: a national points file on Data, a national trips file on Flows and on People.
  Each page asks for the box as a step (no red error box), shows the suggested box and a button; one click
  loads the file with that box (the rows the command line keeps for it). On a phone (390 px) too.

Screenshots land in build/screenshots/newcomer-*.png: look at them.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from ldpviz.app import ui
from ldpviz.cli import main as cli_main
from test_journey import Walk
from test_maps_layout import outline_box

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.xdist_group("browser")]

SHOTS = Path(__file__).resolve().parents[2] / "build" / "screenshots"


def national_points(path: Path) -> Path:
    """4,000 rows over the contiguous US, 300 in Alaska, 100 in Hawaii: no rule frames one region."""
    rng = np.random.default_rng(27)
    lon = np.concatenate([rng.uniform(-124, -67, 4000), rng.uniform(-165, -140, 300), rng.uniform(-160, -155, 100)])
    lat = np.concatenate([rng.uniform(25, 49, 4000), rng.uniform(58, 70, 300), rng.uniform(19, 22, 100)])
    pd.DataFrame({"latitude": lat, "longitude": lon}).to_csv(path, index=False)
    return path


def national_trips(path: Path) -> Path:
    """120 people with 2 short trips in the contiguous US, 10 in Alaska."""
    rng = np.random.default_rng(28)
    rows = []
    for person in range(130):
        lon0, lat0 = ((rng.uniform(-124, -67), rng.uniform(25, 49)) if person < 120 else
                      (rng.uniform(-160, -140), rng.uniform(60, 68)))
        for trip in range(2):
            rows += [(f"p{person}", trip, seq, lon0 + 0.01 * seq, lat0 + 0.01 * seq) for seq in range(3)]
    pd.DataFrame(rows, columns=["person", "trip", "seq", "lon", "lat"]).to_csv(path, index=False)
    return path


def shot(walk: Walk, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    walk.page.wait_for_timeout(1200)
    walk.page.screenshot(path=str(SHOTS / f"newcomer-{name}.png"), full_page=True)


def red_errors(walk: Walk) -> int:
    return walk.page.locator('[data-testid="stAlertContentError"]').count()


def step_text(walk: Walk) -> str:
    step = walk.page.locator('[data-testid="stAlertContentInfo"]', has_text="Next step")
    step.first.wait_for(timeout=300_000)     # content, not speed: a loaded CI machine may take minutes
    return step.first.inner_text()


def upload(walk: Walk, path: Path) -> None:
    walk.upload(walk.page.locator('[data-testid="stFileUploader"] input[type="file"]').first, path)


def test_first_visit_frames_maps_to_their_columns(server, browser):
    """A fresh browser at 1440 px: on the first load the three maps of Explore are as wide as a third of the main
    column (ui.column_widths(1440)), and each region outline spans most of its map's width -- framed to it, not to
    the 177 px a 1024 px window gives."""
    walk = Walk(browser, server, 1440, 1000)
    try:
        assert not walk.context.cookies()
        walk.page.goto(f"{server}/?ds=normal&users=3000&d=16&diff=1")
        walk.page.locator('[data-testid="stDeckGlJsonChart"] canvas').first.wait_for(timeout=120_000)
        walk.idle()
        walk.page.wait_for_timeout(1500)
        walk.idle()
        want = ui.column_widths(1440)["third"]
        maps = walk.page.locator('[data-testid="stDeckGlJsonChart"]')
        assert maps.count() == 3
        for i in range(3):
            png = maps.nth(i).screenshot()
            w, _ = Image.open(io.BytesIO(png)).size
            assert abs(w - want) <= 24, (i, w, want)
            box = outline_box(png)
            if box is not None:                       # the difference map may have no dark outline pixels
                assert box[2] - box[0] >= 0.85 * w, f"map {i}: outline {box} in a {w} px map (framed narrower)"
        walk.check_clean("Explore on a first visit")
        shot(walk, "first-visit-1440")
    finally:
        walk.close()


@pytest.mark.parametrize("width,height", [(1440, 1000), (390, 844)], ids=["1440", "phone"])
def test_a_file_that_only_needs_a_box_is_a_step_on_data_flows_and_people(server, browser, tmp_path, capsys, width,
                                                                         height):
    points = national_points(tmp_path / "us_points.csv")
    trips = national_trips(tmp_path / "us_trips.csv")
    walk = Walk(browser, server, width, height)
    try:
        walk.page.goto(f"{server}/Data")
        walk.idle()
        upload(walk, points)
        text = step_text(walk)
        assert red_errors(walk) == 0, walk.main_text()[:1500]
        assert "Suggested" in text and "km wide" in text and "of 4,400 rows" in text, text
        box = text.split("Suggested: ")[1].split(",  about")[0].split(", about")[0].strip().strip("`")
        shot(walk, f"data-step-{width}")
        walk.page.get_by_role("button", name="Use the suggested bounds").click()
        walk.page.locator('[data-testid="stAlertContentSuccess"]', has_text="Loaded").first.wait_for(timeout=120_000)
        walk.idle()
        assert cli_main(["run", "--csv", str(points), f"--bbox={box.replace(' ', '')}", "--grid", "8",
                         "--json"]) == 0
        kept = int(json.loads(capsys.readouterr().out)["rows"]["kept"])
        # the accepted suggestion is stated as read from the rows, not as bounds the user typed (issue 36)
        assert f"{kept:,} points inside suggested bounds" in walk.main_text(), walk.main_text()[:1500]
        assert "typed bounds" not in walk.main_text()
        walk.check_clean(f"Data after accepting the box at {width} px")
        shot(walk, f"data-loaded-{width}")
        for page, title in (("Flows", "Flows"), ("People", "People")):
            walk.page.goto(f"{server}/{page}")
            walk.page.locator('[data-testid="stMain"] h1').first.wait_for(timeout=180_000)
            walk.idle()
            upload(walk, trips)
            text = step_text(walk)
            assert red_errors(walk) == 0 and "upload again" not in walk.main_text(), walk.main_text()[:1500]
            shot(walk, f"{page.lower()}-step-{width}")
            walk.page.get_by_role("button", name="Use the suggested bounds").click()
            walk.page.locator('[data-testid="stAlertContentSuccess"]', has_text="Loaded").first.wait_for(
                timeout=180_000)
            walk.idle()
            assert "us_trips.csv" in walk.main_text()
            walk.check_clean(f"{title} after accepting the box at {width} px")
            shot(walk, f"{page.lower()}-loaded-{width}")
    finally:
        walk.close()


def test_a_narrow_window_without_a_phone_agent_keeps_the_us_outline(server, browser, tmp_path):
    """Issue 27: a 390 px window whose browser does not say 'Mobile' (a desktop browser narrowed, a phone preview)
    was framed for 560 px columns and cut the contiguous US's outline. The page learns the window's width and
    frames each stacked map to it: every outline lies wholly inside its map, with little blank above and below."""
    from urllib.parse import urlencode

    from test_maps_layout import MAX_BLANK_PX

    points = national_points(tmp_path / "us_points.csv")
    walk = Walk(browser, server, 390, 844)
    try:
        walk.page.goto(f"{server}/Data")
        walk.idle()
        field = walk.page.locator('input[aria-label^="Bounds W, S, E, N"]').first
        field.fill("-125,24,-66,50")
        field.press("Enter")
        walk.idle()
        upload(walk, points)
        walk.page.locator('[data-testid="stAlertContentSuccess"]', has_text="Loaded").first.wait_for(timeout=120_000)
        walk.idle()
        query = {**walk.query(), "d": "16", "mech": "grr", "diff": "1"}
        for path, expected in (("Data", 1), ("", 3)):        # the full-width preview, then three stacked maps
            walk.page.goto(f"{server}/{path}?{urlencode(query)}")
            walk.page.locator('[data-testid="stDeckGlJsonChart"] canvas').first.wait_for(timeout=180_000)
            walk.idle()
            walk.page.wait_for_timeout(1500)
            walk.idle()
            maps = walk.page.locator('[data-testid="stDeckGlJsonChart"]')
            assert maps.count() == expected
            for i in range(maps.count()):
                maps.nth(i).scroll_into_view_if_needed()
                walk.page.wait_for_timeout(400)
                png = maps.nth(i).screenshot()
                w, h = Image.open(io.BytesIO(png)).size
                box = outline_box(png)
                where = f"{path or 'Explore'} map {i}"
                assert box is not None, f"{where}: no outline"
                left, top, right, bottom = box
                assert left >= 1 and top >= 1 and right <= w - 2 and bottom <= h - 2, \
                    f"{where} cuts the outline {box} ({w}x{h})"
                assert top <= MAX_BLANK_PX and h - 1 - bottom <= MAX_BLANK_PX, \
                    f"{where}: blank above/below {box} ({w}x{h})"
            walk.check_clean(f"{path or 'Explore'}, contiguous US in a 390 px window")
            shot(walk, f"narrow-window-us-{(path or 'explore').lower()}-390")
    finally:
        walk.close()
