"""End-to-end: the dashboard served by ``streamlit run``, driven in Debian's headless Chromium.

Each page is opened on a small scenario, the ε slider is moved one step, and the
test waits for the page to re-render with different readouts and no exception
box. A screenshot of every page lands in artifacts/screenshots/. Without
/usr/bin/chromium the tests skip, unless LDPVIZ_REQUIRE_BROWSER=1 (then they fail).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ldpviz.app import serve

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("browser")]

ROOT = Path(__file__).resolve().parents[2]
SHOTS = ROOT / "artifacts" / "screenshots"
#: A small scenario so every page renders in a few seconds.
SMALL = "ds=normal&users=5000&d=16"
PAGES = [  # (url path, screenshot name, has an epsilon slider)
    ("", "explore", True),
    ("Compare", "compare", True),
    ("Trade-offs", "trade-offs", True),
    ("Mechanisms", "mechanisms", True),
    ("Data", "data", False),
    ("Privacy_audit", "privacy-audit", True),
    ("Flows", "flows", True),
    ("People", "people", True),
]


def wait_idle(page, timeout_ms: int = 180_000) -> None:
    """Until the script run has finished and stays finished (see ldpviz.app.serve.wait_until_idle)."""
    serve.wait_until_idle(page, timeout_ms)


def main_text(page) -> str:
    return page.locator('[data-testid="stMain"]').inner_text()


def assert_no_exception(page) -> None:
    """No exception box, no bug box, and the run finished: every page empties its progress bar at the end."""
    assert page.locator('[data-testid="stException"]').count() == 0, main_text(page)[:2000]
    assert page.locator('[data-testid="stProgress"]').count() == 0, main_text(page)[:2000]
    assert "Something went wrong inside ldpviz" not in main_text(page)


def move_epsilon(page) -> None:
    """One step right on the ε select-slider, via the keyboard as a user would."""
    slider = page.locator('[data-testid="stSidebar"] input[aria-label^="Privacy budget"]').first
    slider.wait_for(state="attached", timeout=90_000)
    slider.focus()
    slider.press("ArrowRight")


@pytest.mark.parametrize("path,name,has_eps", PAGES, ids=[p[1] for p in PAGES])
def test_page_renders_and_reacts_to_epsilon(server, browser, path, name, has_eps):
    """Each page loads without an exception box; moving ε re-renders it with new readouts."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    try:
        page.goto(f"{server}/{path}?{SMALL}&trials=2")
        page.wait_for_selector('[data-testid="stSidebar"]', timeout=180_000)
        page.locator('[data-testid="stMain"] h1').first.wait_for(timeout=180_000)
        wait_idle(page)
        assert_no_exception(page)
        # A link straight to a page gets the app's own navigation (Explore first), not Streamlit's
        # file-name navigation of an auto-discovered pages/ folder.
        nav = page.locator('[data-testid="stSidebarNav"]').inner_text()
        assert "Explore" in nav and "Privacy audit" in nav, nav
        SHOTS.mkdir(parents=True, exist_ok=True)
        if has_eps:
            before = main_text(page)
            move_epsilon(page)
            page.wait_for_function("""(before) => {
                const m = document.querySelector('[data-testid="stMain"]');
                return m && m.innerText !== before; }""", arg=before, timeout=180_000)
            wait_idle(page)
            assert_no_exception(page)
            assert main_text(page) != before
            assert "eps=1.25" in page.url, page.url   # one step right of 1; the new setting is in the link
        if page.locator('[data-testid="stDeckGlJsonChart"]').count():
            page.locator('[data-testid="stDeckGlJsonChart"] canvas').first.wait_for(timeout=90_000)
        tables = page.locator('[data-testid="stDataFrame"]:visible')   # (not those in a closed expander)
        if tables.count():   # tables draw on a canvas, lazily
            tables.first.scroll_into_view_if_needed()
            tables.first.locator("canvas").first.wait_for(state="attached", timeout=90_000)
        page.wait_for_timeout(1500)   # let the maps and tables paint
        page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)
    finally:
        page.close()


@pytest.mark.parametrize("mechanism", ["dam", "aag", "dp-heatmap"])
def test_explore_screenshot_per_mechanism(server, browser, mechanism):
    """Explore with DAM, an adaptive grid (AAG) and a central-DP heatmap: readouts, no exception box."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    try:
        page.goto(f"{server}/?{SMALL}&mech={mechanism}")
        page.locator('[data-testid="stMetric"]').first.wait_for(timeout=180_000)
        wait_idle(page)
        assert_no_exception(page)
        assert "estimate is on average" in main_text(page)
        page.locator('[data-testid="stDeckGlJsonChart"] canvas').first.wait_for(timeout=90_000)
        page.wait_for_timeout(1500)
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / f"explore-{mechanism}.png"), full_page=True)
    finally:
        page.close()


def test_link_reopens_the_same_view(server, browser):
    """A copied link restores the configuration: ε, grid and dataset come back from the URL."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    try:
        page.goto(f"{server}/?{SMALL}&eps=2.5")
        page.locator('[data-testid="stMetric"]').first.wait_for(timeout=180_000)
        wait_idle(page)
        sidebar = page.locator('[data-testid="stSidebar"]').inner_text()
        assert "2.5" in sidebar
        assert "At ε = 2.5" in main_text(page)
        assert_no_exception(page)
    finally:
        page.close()
