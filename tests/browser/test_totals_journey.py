"""Issue 37 in a real browser: the Trade-offs budget panel splits a total through the accountant, Trade-offs marks and
names the sweep points whose estimate never left its uniform start, Explore says when an estimate never left its
uniform start and Compare does not rank it, and Flows' worst-trip metric is the ledger's
figure.
Screenshots: build/screenshots/journey-totals-*.png.
"""

from __future__ import annotations

import re

import pytest

from test_journey import Walk

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.xdist_group("browser")]


def test_budget_start_map_and_worst_trip(server, browser):
    walk = Walk(browser, server, 1440, 1000)
    try:
        # daily for a week, a total of 7, GRR (no paid region on a bundled set): 7 / 7 = 1 per collection
        walk.page.goto(f"{server}/Trade-offs?ds=normal&users=3000&d=8&smech=grr&vary=epsilon&vals=0.5,2"
                       "&bev=day&bper=1&bunit=week&bfrom=1&btot=7")
        walk.idle()
        # the readouts, waited for: under load a run can end with the columns above them still empty
        walk.page.get_by_text("Charged per collection").first.wait_for(timeout=90_000)
        walk.idle()
        walk.check_clean("Trade-offs from a total")
        text = walk.main_text()
        assert re.search(r"Charged per collection\s+1\s", text), text[:3000]
        assert re.search(r"whole period\)\s+7\s", text), text[:3000]
        assert "the total per person over 7 collections (every day for 1 week) is ε = 7 (LDP)" in text
        assert "the region's ε0 included" in text
        walk.page.get_by_text("Budget over time").first.scroll_into_view_if_needed()
        walk.shot("totals-budget")

        # Trade-offs over SEM-Geo-I and GRR at d = 32, 0.5 and 1: SEM-Geo-I's points are the uniform start, marked on
        # the curves (a legend entry of their own) and named under the charts; GRR is not named
        walk.page.goto(f"{server}/Trade-offs?ds=minneapolis-stops&users=3000&d=32&trials=1&smech=sem-geoi,grr"
                       "&vary=epsilon&vals=0.5,1")
        walk.idle()
        walk.check_clean("Trade-offs with start maps")
        note = walk.page.get_by_text("Not an estimate (circled ✕ on the curves)").first
        note.wait_for(timeout=180_000)
        text = walk.main_text()
        assert "2 of 4 runs stayed at (or within noise of) the uniform starting map" in text, text[:3000]
        assert walk.page.get_by_text("stayed at the uniform start map").count() >= 1      # the charts' legend entry
        note.scroll_into_view_if_needed()
        walk.shot("totals-tradeoffs-start-map")

        # SEM-Geo-I at d = 32 and 0.5 per km: the map is the uniform start, and the page says so above the maps
        walk.page.goto(f"{server}/?ds=minneapolis-stops&users=20000&d=32&mech=sem-geoi&eps=0.5&trials=1")
        walk.idle()
        walk.check_clean("Explore at an uninformative setting")
        text = walk.main_text()
        assert "Not an estimate. The reports carry too little information at these settings: the map shown is " \
               "the uniform starting map" in text, text[:3000]
        walk.shot("totals-start-map")
        walk.page.goto(f"{server}/?ds=minneapolis-stops&users=20000&d=16&mech=dam&eps=1&trials=1")
        walk.idle()
        assert "Not an estimate" not in walk.main_text()

        # Compare at the same uninformative setting: SEM-Geo-I is not ranked, GRR is named best
        walk.page.goto(f"{server}/Compare?ds=minneapolis-stops&users=20000&d=32&eps=0.5&trials=2&cmp=sem-geoi,grr")
        walk.idle()
        start = walk.page.get_by_role("button", name=re.compile(r"^Start \("))
        if start.count():
            start.first.click()
            walk.idle()
        walk.check_clean("Compare with a start map")
        walk.page.get_by_text("Not ranked: SEM-Geo-I").first.wait_for(timeout=120_000)
        text = walk.main_text()
        assert "Best for this data at ε = 0.5 by W2 (m): GRR" in text, text[:3000]
        walk.page.get_by_text("Not ranked: SEM-Geo-I").first.scroll_into_view_if_needed()
        walk.shot("totals-compare")

        # Flows: the worst trip's total is the ledger's figure, beside its mean
        walk.page.goto(f"{server}/Flows?eps=1&fd=4")
        walk.idle()
        walk.check_clean("Flows")
        walk.page.get_by_text("Total privacy λ·ε (worst trip)").first.wait_for(timeout=120_000)
        metric = next(m for m in walk.page.locator('[data-testid="stMetric"]').all_inner_texts() if "worst trip" in m)
        assert re.search(r"worst trip\)\s+\d+(\.\d+)? \(mean \d", metric), metric
        assert "Total per person in one collection" in walk.main_text()
        walk.page.get_by_text("Navigation with location updates").first.scroll_into_view_if_needed()
        walk.shot("totals-flows")
    finally:
        walk.close()
