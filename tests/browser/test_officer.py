"""The officer's pages in Debian's headless Chromium: the decision report downloads as one offline HTML file, and
Compare's target mode and the Trade-offs frontier render without an exception, a console error or a foreign request.
"""

from __future__ import annotations

import pytest

from test_journey import DOWNLOADS, Walk

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("browser")]

SMALL = "ds=normal&users=3000&d=8"


def test_decision_report_downloads_and_target_mode_and_frontier_render(server, browser):
    """Explore with 2 trials: 'Decision report (HTML)' downloads a self-contained page (no http(s) reference, the
    attacker named); Compare in target mode shows the ε found; Trade-offs draws the frontier."""
    walk = Walk(browser, server)
    try:
        walk.page.goto(f"{server}/?{SMALL}&mech=grr&trials=2")
        button = walk.page.locator('[data-testid="stDownloadButton"] button', has_text="Decision report (HTML)")
        button.first.wait_for(state="visible", timeout=120_000)
        walk.idle()
        DOWNLOADS.mkdir(parents=True, exist_ok=True)
        with walk.page.expect_download(timeout=120_000) as info:
            button.first.click()
        path = DOWNLOADS / info.value.suggested_filename
        info.value.save_as(str(path))
        html = path.read_text()
        assert html.lstrip().lower().startswith("<!doctype html") and "</html>" in html
        assert "http://" not in html and "https://" not in html
        assert "population" in html
        walk.check_clean("Explore with the report")

        walk.page.goto(f"{server}/Compare?{SMALL}&cmp=grr&cmode=target_epsilon&metric=w2_m&tgt=2000&trials=2")
        walk.page.locator('[data-testid="stDataFrame"]').first.wait_for(timeout=120_000)
        walk.idle()
        assert "Smallest ε found for a target" in walk.main_text()
        walk.check_clean("Compare in target mode")

        walk.page.goto(f"{server}/Trade-offs?{SMALL}&smech=grr&vary=epsilon&vals=0.5,2&fr=1")
        walk.page.locator('[data-testid="stPlotlyChart"]').first.wait_for(timeout=120_000)
        walk.idle()
        assert "Privacy–accuracy frontier" in walk.main_text() and "Budget over time" in walk.main_text()
        walk.check_clean("Trade-offs with the frontier")
    finally:
        walk.close()
