"""Explore's pin and basemap in Debian's headless Chromium: pin a setting, change ε, compare; the pin survives a page
switch; a cell's tooltip gives its centre's lat/lon; the basemap toggle asks only its tile host (offline: the maps
still draw) and, off, nothing leaves the server. Screenshots: build/screenshots/pin-*.png.
"""

from __future__ import annotations

import io
import re
from urllib.parse import urlparse

import numpy as np
import pytest

from ldpviz.render import maps as viz
from test_journey import SHOTS, Walk

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("browser")]

SMALL = "ds=normal&users=3000&d=8"


def shot(walk: Walk, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    walk.page.wait_for_timeout(1200)   # let the maps paint
    walk.page.screenshot(path=str(SHOTS / f"pin-{name}.png"), full_page=True)


def maps(walk: Walk):
    return walk.page.locator('[data-testid="stDeckGlJsonChart"]')


def outline_drawn(chart) -> bool:
    """The region's outline (dark grey) is on the map's canvas: the layers drew."""
    from PIL import Image
    chart.scroll_into_view_if_needed()
    grey = np.asarray(Image.open(io.BytesIO(chart.screenshot())).convert("L"))
    return bool((grey < 110).sum() > 50)


def test_pin_compare_switch_page_tooltip_and_basemap(server, browser):
    """Pin, move ε: two estimated maps, a difference map and the readout table with 'Current − pinned'; another page and
    back keeps the pin; hovering a cell shows its centre's lat/lon; basemap on asks only the tile host and the maps
    still draw offline; basemap off again: the maps redraw asking nothing from another host."""
    walk = Walk(browser, server, 1400, 1000)
    try:
        walk.page.goto(f"{server}/?{SMALL}")
        walk.page.locator('[data-testid="stMetric"]').first.wait_for(timeout=120_000)
        walk.idle()
        walk.page.get_by_role("button", name="Pin this setting").click()
        walk.idle()
        assert "The current setting is the pinned one" in walk.main_text()
        assert "pin" in walk.query()
        walk.step_slider("Privacy budget", 1)          # 1 -> 1.25
        text = walk.main_text()
        assert "Pinned setting vs current" in text and "Current − pinned" in text and "ε 1 → 1.25" in text, text[-2500:]
        assert maps(walk).count() == 5                  # true, estimate; pinned, current, their difference
        walk.check_clean("Explore with a pin")
        walk.page.locator("#pinned").scroll_into_view_if_needed()
        shot(walk, "compare")

        walk.nav("Data")
        assert "pin" in walk.query(), walk.page.url
        walk.nav("Explore")
        assert "Pinned setting vs current" in walk.main_text() and walk.query().get("eps") == "1.25"
        walk.check_clean("Explore after another page")

        estimate = maps(walk).nth(1)                    # the current estimate beside the true density
        estimate.scroll_into_view_if_needed()
        walk.page.wait_for_timeout(1000)
        box = estimate.locator("canvas").first.bounding_box()
        for step in range(6):                           # a person moves the pointer onto the middle cell
            walk.page.mouse.move(box["x"] + box["width"] / 2 - 12 + 4 * step, box["y"] + box["height"] / 2)
            walk.page.wait_for_timeout(200)
        tip = walk.page.locator(".deck-tooltip:visible")
        tip.first.wait_for(state="visible", timeout=10_000)
        tooltip = tip.first.inner_text()
        assert "centre: lat " in tooltip and "% of users" in tooltip, tooltip
        lat, lon = (float(v) for v in re.findall(r"(?:lat|lon) (-?[0-9.]+)", tooltip))
        assert abs(lat) < 0.05 and abs(lon) < 0.05, tooltip   # a cell of the synthetic set's square around (0, 0)
        shot(walk, "tooltip")

        walk.sidebar().locator("label", has_text="Basemap").click()
        walk.idle()
        assert walk.query().get("basemap") == "1"
        walk.page.wait_for_timeout(1500)
        hosts = {urlparse(u).hostname for u in walk.foreign}
        assert hosts <= {viz.BASEMAP_HOST}, hosts      # (offline these fail; the maps must still draw)
        assert walk.page.locator('[data-testid="stException"]').count() == 0
        assert all(outline_drawn(maps(walk).nth(i)) for i in (0, 1)), "layers not drawn over a missing basemap"
        assert viz.BASEMAP_CREDIT in walk.main_text()
        shot(walk, "basemap-on")

        walk.errors.clear()
        walk.foreign.clear()
        walk.sidebar().locator("label", has_text="Basemap").click()
        walk.idle()
        assert "basemap" not in walk.query()
        walk.page.wait_for_timeout(1500)
        assert all(outline_drawn(maps(walk).nth(i)) for i in (0, 1))
        walk.check_clean("Explore with the basemap off again")   # the maps redrawn without a foreign request
    finally:
        walk.close()
