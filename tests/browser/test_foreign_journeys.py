"""An officer's own files in Debian's headless Chromium (issue 36): files ldpviz has never seen, generated here.

* A national file (8,000 places over the US north-east, no private map tile can frame it): uploaded on Decide, the
  suggested box accepted, an answer at d = 32 (cells of ~36 km), signed; the signed report opened offline states
  that the box was read from the file's rows and prints commands that take the file (``--csv FILE --bbox=...
  --bbox-from suggestion``); deploy is refused with the reason; Decide's Explore link opens Explore at the
  answer's epsilon; Compare's goal seek on the same upload answers with 'Use ε' buttons.
* A trips file (200 people x 15 points): with blank bounds a clear stop that says how many people the private
  tiles need and asks for a box; a typed box; an answer per person; the signed report offline; the deploy bundle,
  whose collection.json says the region was typed.

Screenshots: build/screenshots/journey-foreign-*.png.
"""

from __future__ import annotations

import io
import json
import re
import zipfile
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit

import numpy as np
import pytest

from test_journey import DOWNLOADS, Walk
from test_regions_journey import type_bounds, upload
from tests.foreign_files import north_east, trips, write

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.xdist_group("browser")]

#: Decide as the officer leaves it before the file: Geo-I accepted (planar Laplace and SEM-Geo-I), a W2 target, a
#: purpose, an owner and a retention (so the sign step is complete once there is an answer).
SIGNER = {"dcm": "geoi", "dcmet": "w2_m", "dcpur": "Shelter planning", "dcown": "Data Protection Office",
          "dcret": "90 days"}


def open_decide(walk: Walk, **query: str) -> None:
    walk.page.goto(f"{walk.url}/Decide?{urlencode({**SIGNER, **query})}")
    walk.page.locator('[data-testid="stMain"] h1').first.wait_for(timeout=90_000)
    walk.idle()


def steps_kept(walk: Walk, target: str) -> None:
    """Steps 2-3 still hold what the link set before the file (Geo-I accepted, the target): the box step stops the
    page before them, and they must not come back empty (they did in Chromium, at the widgets' minimums, until
    ldpviz.app.session.keep re-sent every widget the previous run had not drawn; AppTest did not show it)."""
    text = walk.main_text()
    assert "0 mechanisms eligible" not in text and "Accept at least one privacy model" not in text, (
        "steps 2-3 lost their settings after the box step: " + text[text.find("2 · Who"):][:1500])
    assert main_value(walk, "x = (") == target, main_value(walk, "x = (")


def main_value(walk: Walk, label_start: str) -> str:
    return walk.page.locator(f'[data-testid="stMain"] input[aria-label^="{label_start}"]').first.input_value()




def wait_for_answers(walk: Walk, name: str, limit_s: int = 300) -> None:
    """Start the search when the page asks (the rest of the mechanisms wait for the officer), then wait for the
    sign step; a screenshot of the page as it stands every half minute (build/screenshots/journey-<name>.png)."""
    walk.idle()
    start = walk.page.locator('[data-testid="stMain"] button', has_text=re.compile(r"Start \("))
    if start.count():
        start.first.click()
    ready = walk.page.get_by_text("Download the signed decision (HTML)").first
    for _ in range(0, limit_s, 30):
        try:
            ready.wait_for(timeout=30_000)
            break
        except Exception:
            walk.page.screenshot(path=str(walk_shots() / f"journey-{name}.png"), full_page=True)
            (walk_shots() / f"journey-{name}.txt").write_text(walk.main_text())
    ready.wait_for(timeout=1_000)
    walk.idle()


def answers_after_the_box(walk: Walk, name: str, target: str) -> str:
    """After the box step: steps 2-3 kept (target ``target``), the answers awaited, the page clean, a screenshot of
    step 4 (journey-foreign-<name>-answer.png); returns the page's text."""
    steps_kept(walk, target)
    wait_for_answers(walk, f"foreign-{name}-waiting")
    walk.check_clean(f"Decide on the {name} file after the answers")
    walk.page.get_by_text("4 · The answer").first.scroll_into_view_if_needed()
    walk.shot(f"foreign-{name}-answer")
    return walk.main_text()


def signed_offline(walk: Walk, browser, name: str) -> tuple[str, str]:
    """Download the signed decision, open it from file:// in a fresh page with every request blocked, and return
    (its visible text, its HTML). Nothing it shows may need the network."""
    DOWNLOADS.mkdir(parents=True, exist_ok=True)
    with walk.page.expect_download(timeout=240_000) as info:
        walk.page.get_by_text("Download the signed decision (HTML)").first.click()
    path = DOWNLOADS / f"{name}.html"
    info.value.save_as(str(path))
    context = browser.new_context(viewport={"width": 1200, "height": 1000}, offline=True)
    asked: list[str] = []

    def block(route) -> None:
        if not route.request.url.startswith(("file:", "data:", "blob:")):
            asked.append(route.request.url)
            route.abort()
        else:
            route.continue_()

    try:
        context.route("**/*", block)
        page = context.new_page()
        page.goto(path.as_uri())
        page.wait_for_load_state("load")
        page.screenshot(path=str(walk_shots() / f"journey-{name}.png"), full_page=True)
        text = page.locator("body").inner_text()
    finally:
        context.close()
    assert not asked, f"the signed report asked the network for {asked}"
    return text, path.read_text()


def walk_shots() -> Path:
    from test_journey import SHOTS
    SHOTS.mkdir(parents=True, exist_ok=True)
    return SHOTS


def printed_commands(text: str) -> list[str]:
    """The ``ldpviz ...`` command lines a page or report shows (one per line)."""
    return [line.strip() for line in text.splitlines() if line.strip().startswith("ldpviz ")]


def link(walk: Walk, has_text: str) -> str:
    """The href of the main area's link whose text contains ``has_text``, made absolute."""
    href = walk.page.locator('[data-testid="stMain"] a', has_text=has_text).first.get_attribute("href")
    assert href, has_text
    return href if href.startswith("http") else f"{walk.url}/{href.removeprefix('./')}"


def test_national_file_suggested_box_signed_offline_then_explore_and_compare(server, browser, tmp_path):
    path = write(north_east(np.random.default_rng(36)), tmp_path, "northeast.csv")
    walk = Walk(browser, server, 1440, 1000)
    try:
        open_decide(walk, d="8", users="1000", dct="300000")
        upload(walk, path)
        # blank bounds: no private tile frames 8,000 rows over ~1,150 km, so the page asks for a box and suggests one
        text = walk.main_text()
        assert "Next step: choose the area of northeast.csv" in text, text[:2000]
        assert "Use the suggested bounds" in text and "4 · The answer" not in text, "no search before the box"
        walk.shot("foreign-national-box")
        walk.page.locator('[data-testid="stMain"] button', has_text="Use the suggested bounds").first.click()
        walk.idle()
        text = walk.main_text()
        assert "Uploaded: northeast.csv" in text and "suggested bounds" in text, text[:2000]
        text = answers_after_the_box(walk, "national", "300000")
        assert "planar-laplace" in text, text[:3000]
        commands = printed_commands(text)
        target = next(c for c in commands if c.startswith("ldpviz target"))
        assert "--csv northeast.csv" in target and "--bbox=" in target and "--bbox-from suggestion" in target, target
        assert "upload:" not in " ".join(commands), commands
        # deploy: a region fitted to the users' data is refused, with the reason
        walk.page.get_by_text("6 · Deploy").first.scroll_into_view_if_needed()
        walk.shot("foreign-national-deploy")
        refusal = walk.page.locator('[data-testid="stMain"] [data-testid="stAlert"]', has_text="No phone bundle")
        assert refusal.count() == 1, walk.main_text()[-3000:]
        assert "must not depend on the users' data" in refusal.first.inner_text()
        assert walk.page.get_by_text("Download the collection bundle (ZIP)").count() == 0
        # the signed decision, opened offline: the provenance line and the commands
        report, html = signed_offline(walk, browser, "foreign-national-signed")
        assert "where it came from: the box ldpviz suggested from the file's rows" in report, report[:4000]
        assert "read no users' data" not in report and "typed bounds" not in report
        assert "Not covered by epsilon: the region was" in report
        signed_commands = printed_commands(report)
        assert signed_commands and not any("upload:" in c for c in signed_commands), signed_commands
        for command in signed_commands:
            if command.startswith(("ldpviz target", "ldpviz report")):
                assert re.search(r"--csv northeast\.csv .*--bbox=-?[\d.]+,-?[\d.]+,-?[\d.]+,-?[\d.]+ "
                                 r".*--bbox-from suggestion", command), command
        assert not any(c.startswith("ldpviz deploy") for c in signed_commands), signed_commands
        assert "No deploy command: the region was" in report
        # Decide's Explore link: the root page at the answer's mechanism and epsilon (not 'Page not found', not 1)
        explore = link(walk, "in depth on the Explore page at ε =")
        wanted = dict(parse_qsl(urlsplit(explore).query))
        assert float(wanted["eps"]) != 1.0, wanted
        walk.page.goto(explore)
        walk.page.locator('[data-testid="stMain"] h1').first.wait_for(timeout=90_000)
        walk.idle()
        walk.shot("foreign-national-explore")
        assert walk.page.get_by_text("Page not found").count() == 0
        shown = walk.query()
        assert shown.get("eps") == wanted["eps"] and shown.get("mech") == wanted["mech"], (shown, wanted)
        assert shown.get("ds", "").startswith("upload:"), shown
        slider = walk.sidebar().locator('[data-testid="stSlider"]', has_text="Privacy budget ε").first
        assert f"{float(wanted['eps']):g}" in slider.inner_text(), slider.inner_text()
        walk.check_clean("Explore from Decide's link")
        # Compare's goal seek on the same upload: answers and 'Use ε' buttons, no 'unknown dataset'
        query = {**wanted, "cmode": "target_epsilon", "cmp": "planar-laplace", "metric": "w2_m", "tgt": "300000"}
        walk.page.goto(f"{walk.url}/Compare?{urlencode(query)}")
        walk.page.locator('[data-testid="stMain"] h1').first.wait_for(timeout=90_000)
        walk.idle()
        use = walk.page.locator('[data-testid="stMain"] button', has_text=re.compile(r"^Use ε"))
        use.first.wait_for(timeout=240_000)
        walk.idle()
        walk.shot("foreign-national-compare")
        text = walk.main_text()
        assert "unknown dataset" not in text, text[:3000]
        assert walk.page.locator('[data-testid="stMain"] [data-testid="stAlertContentError"]').count() == 0, text[:3000]
        walk.check_clean("Compare's goal seek on the upload")
    finally:
        walk.close()


#: A box typed for the trips file: the city the 200 people move in (~18 km square, cells of ~2.2 km at d = 8).
TRIPS_BOX = "-93.34, 44.88, -93.18, 45.06"


def test_trips_file_too_few_people_then_typed_box_signed_offline_and_deployed(server, browser, tmp_path):
    path = write(trips(np.random.default_rng(4)), tmp_path, "trips.csv")
    walk = Walk(browser, server, 1440, 1000)
    try:
        open_decide(walk, d="8", users="0", dct="5000")
        walk.page.get_by_text("Or upload trips").first.click()
        walk.idle()
        upload(walk, path, index=1)
        # blank bounds: 200 people cannot frame a region with the private tiles; the page says how many it needs
        text = walk.main_text()
        assert "Next step: choose the area of trips.csv" in text, text[:3000]
        needed = int(re.search(r"need at least ([\d,]+) people", text).group(1).replace(",", ""))
        assert needed > 200 and "this file has 200 people in all" in text, text[:3000]
        assert "4 · The answer" not in text, "no search before the box"
        walk.shot("foreign-trips-stop")
        # a typed box instead of the suggestion
        type_bounds(walk, "Bounds for your trips", TRIPS_BOX)
        text = walk.main_text()
        assert "Your trips: trips.csv" in text and "The unit is a person" in text, text[:3000]
        text = answers_after_the_box(walk, "trips", "5000")
        assert "of one of the person's points" in text, text[:3000]
        code = walk.page.locator('[data-testid="stMain"] [data-testid="stCode"]', has_text="trajectories").first
        assert "trips.csv" in code.inner_text() and "upload:" not in code.inner_text()
        # the signed decision offline: a typed box, stated as such, per person
        report, html = signed_offline(walk, browser, "foreign-trips-signed")
        assert "where it came from: a box typed in: ldpviz read no users' data to choose it" in report, report[:4000]
        assert "suggested from the file's rows" not in report
        assert "trips.csv" in report and "a person (all their trips" in report, report[:4000]
        signed_commands = printed_commands(report)
        assert not any("upload:" in c for c in signed_commands), signed_commands
        deploy = [c for c in signed_commands if c.startswith("ldpviz deploy")]
        assert deploy and "--bbox-from" not in deploy[0], signed_commands
        assert "--bbox=-93.34,44.88,-93.18,45.06" in deploy[0], deploy      # trips deploy by their typed box
        # the deploy bundle: its collection.json says the region was typed, with the typed bounds
        walk.page.get_by_text("6 · Deploy").first.scroll_into_view_if_needed()
        walk.shot("foreign-trips-deploy")
        with walk.page.expect_download(timeout=240_000) as info:
            walk.page.get_by_text("Download the collection bundle (ZIP)").first.click()
        bundle = DOWNLOADS / "foreign-trips-bundle.zip"
        info.value.save_as(str(bundle))
        with zipfile.ZipFile(io.BytesIO(bundle.read_bytes())) as zf:
            spec = json.loads(zf.read(next(n for n in zf.namelist() if n.endswith("collection.json"))))
        assert spec["region"]["origin"] == "typed", spec["region"]
        assert spec["region"]["epsilon_spent"] == 0, spec["region"]
        typed = [float(v) for v in TRIPS_BOX.split(",")]
        assert np.allclose(spec["region"]["bounds"], typed), spec["region"]
        assert spec["ledger"]["unit"] == "person" or "person" in json.dumps(spec["ledger"]), spec["ledger"]
        walk.check_clean("Decide after the trips downloads")
    finally:
        walk.close()
