"""The Decide page as an officer walks it (issue 27), in Debian's headless Chromium: a national file uploaded with
typed bounds, a non-default choice on every step, answers per mechanism, two pinned maps, a reload and
back/forward that keep every step, and a downloaded signed decision that states every choice, whose answer
equals `ldpviz target` on the same file, box and target. Screenshots: build/screenshots/journey-decide-*.png."""

from __future__ import annotations

import html as html_lib
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd

import pytest

from ldpviz.app import serve
from ldpviz.cli import main as cli_main
from test_journey import DOWNLOADS, Walk
from test_regions_journey import CITY, NORTH_EAST, national_csv, upload

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.xdist_group("browser")]

TARGET = "90000"          # W2 at most 90 km on the north-east box (cells of ~140 km at d = 8)


def main_input(walk: Walk, label_start: str):
    return walk.page.locator(f'[data-testid="stMain"] input[aria-label^="{label_start}"]').first


def fill(walk: Walk, label_start: str, value: str) -> None:
    box = main_input(walk, label_start)
    box.fill(value)
    box.press("Enter")
    walk.idle()


def choose(walk: Walk, label: str, option: str) -> None:
    box = walk.page.locator(f'[data-testid="stMain"] [data-testid="stSelectbox"] input[aria-label="{label}"]').first
    box.click()
    box.fill(option)
    walk.page.locator('[role="option"]', has_text=option).first.click()
    walk.idle()


def radio(walk: Walk, option: str) -> None:
    walk.page.locator('[data-testid="stMain"] [data-testid="stRadio"] label', has_text=option).first.click()
    walk.idle()


def accept_only_geo_i(walk: Walk) -> None:
    """Step 2's privacy models: remove both default tags (Geo-I, then local DP) and accept Geo-I alone."""
    for _ in range(2):
        models = walk.page.locator('[data-testid="stMain"] [data-testid="stMultiSelect"] input').first
        models.click()
        models.press("Backspace")
        walk.idle()
    models = walk.page.locator('[data-testid="stMain"] [data-testid="stMultiSelect"] input').first
    models.click()
    models.fill("Geo")
    walk.page.locator('[role="option"]', has_text="Geo-indistinguishability").first.click()
    walk.page.keyboard.press("Escape")
    walk.idle()


def wait_for_answers(walk: Walk) -> None:
    """Start the search when the page asks (a long one waits for the officer), then wait for step 5."""
    walk.idle()
    # the button's icon text comes before "Start (": an anchored pattern never matched, so the journey signed what
    # the quick group alone had answered
    start = walk.page.locator('[data-testid="stMain"] button', has_text=re.compile(r"Start \("))
    if start.count():
        start.first.click()
        walk.page.wait_for_timeout(1_000)
        serve.wait_until_idle(walk.page, 600_000)       # every remaining mechanism searched (one press answers all)
    walk.page.get_by_text("Download the signed decision (HTML)").first.wait_for(timeout=600_000)
    walk.idle()


def test_decide_from_a_national_file_to_a_signed_decision(server, browser, tmp_path, capsys):
    path = national_csv(tmp_path / "national.csv")
    walk = Walk(browser, server, 1440, 1000)
    try:
        walk.page.goto(f"{server}/Decide?d=8&users=0")
        walk.page.locator('[data-testid="stMain"] h1').first.wait_for(timeout=180_000)
        walk.idle()
        # 1. Your data: typed bounds, then the file
        fill(walk, "Bounds of your file", NORTH_EAST)
        upload(walk, path)
        walk.idle()
        text = walk.main_text()
        assert "Uploaded: national.csv" in text and "rows kept" in text, text[:2000]
        # 2. Who is protected: a location report, 2 reports, weekly, Geo-I only
        radio(walk, "one location report")
        fill(walk, "Reports per person per collection", "2")
        choose(walk, "How often the collection runs", "weekly")
        accept_only_geo_i(walk)
        walk.shot("decide-steps")
        # 3. What the map must show: the target and the share of collections
        fill(walk, "x = (", TARGET)
        fill(walk, "Share of collections that must meet it", "0.9")
        wait_for_answers(walk)
        walk.check_clean("Decide after the answers")
        walk.page.get_by_text("4 · The answer").first.scroll_into_view_if_needed()
        text = walk.main_text()
        assert "planar-laplace" in text and "sem-geoi" in text and "Why not the other" in text
        # ranked within the privacy model, under its heading; the officer's limit (default 5) and its column
        assert "Geo-indistinguishability: ranked by ε per km" in text and "Local DP: ranked" not in text
        assert main_input(walk, "The largest ε per person in one collection").input_value() == "5"
        assert "The signed decision is for" in text           # (the tables themselves are drawn on a canvas)
        walk.shot("decide-answers")
        # a limit no mechanism meets (1 for 2 reports on 109 km cells): the lead, what each reaches there; back to 5
        fill(walk, "The largest ε per person in one collection", "1")
        wait_for_answers(walk)
        walk.page.get_by_text("within your limit of ε 1 ").first.scroll_into_view_if_needed()
        text = walk.main_text()
        assert "within your limit of ε 1 " in text and "sem-geoi (Geo-I) at ε" in text, text[-3000:]
        assert walk.query().get("dclim") == "1"
        walk.shot("decide-limit")
        fill(walk, "The largest ε per person in one collection", "5")
        wait_for_answers(walk)
        assert "dclim" not in walk.query()
        # every mechanism answered before pinning (a loaded machine may leave planar Laplace waiting for Start)
        for _ in range(5):
            start = walk.page.locator('[data-testid="stMain"] button', has_text="Start (")   # (its icon comes first)
            if not start.count():
                break
            start.first.click()
            start.first.wait_for(state="detached", timeout=600_000)
            walk.idle()
        # 4. pin both, see two maps
        for name in ("planar-laplace", "sem-geoi"):
            pins = walk.page.locator('[data-testid="stMain"] [data-testid="stMultiSelect"] input').nth(1)
            pins.scroll_into_view_if_needed()
            pins.click()
            pins.fill(name)
            walk.page.locator('[role="option"]', has_text=name).first.click()
            walk.page.keyboard.press("Escape")
            walk.idle()
        walk.page.keyboard.press("Escape")
        walk.idle()
        assert walk.page.locator('[data-testid="stDeckGlJsonChart"]').count() >= 2
        walk.page.get_by_text("Pin two to compare their maps").first.scroll_into_view_if_needed()
        walk.shot("decide-pinned")
        # 5. Sign: the second-ranked mechanism, purpose, owner, retention
        fill(walk, "Purpose of the collection", "Storm shelter planning")
        fill(walk, "Owner (who answers for it)", "Data Protection Office")
        fill(walk, "Retention (how long the data is kept)", "90 days")
        wait_for_answers(walk)
        query = walk.query()
        for key, value in {"dcu": "report", "dcr": "2", "dce": "weekly", "dcm": "geoi", "dct": TARGET,
                           "dcp": "0.9", "dcpur": "Storm shelter planning", "d": "8"}.items():
            assert query.get(key) == value, (key, query)
        # reload: every step stays
        walk.page.reload()
        wait_for_answers(walk)
        assert main_input(walk, "Purpose of the collection").input_value() == "Storm shelter planning"
        assert main_input(walk, "Bounds of your file").input_value().replace(" ", "") == NORTH_EAST
        assert walk.query() == query
        # away and back
        walk.nav("Explore")
        walk.page.go_back()
        wait_for_answers(walk)
        assert walk.query() == query and "Uploaded: national.csv" in walk.main_text()
        walk.page.go_forward()
        walk.idle()
        walk.page.go_back()
        wait_for_answers(walk)
        assert main_input(walk, "Reports per person per collection").input_value() == "2"
        walk.shot("decide-sign")
        # the signed decision
        DOWNLOADS.mkdir(parents=True, exist_ok=True)
        with walk.page.expect_download(timeout=120_000) as info:
            walk.page.get_by_text("Download the signed decision (HTML)").first.click()
        html = (DOWNLOADS / "decide-journey.html")
        info.value.save_as(str(html))
        record = html.read_text()
        for text in ("national.csv", "-80.5", "one location report", "weekly", "Geo-I", f"w2_m &lt;= {TARGET}",
                     "8 × 8", "Storm shelter planning", "Data Protection Office", "90 days", "probability at least 90%",
                     "Total epsilon per person over a year", "--csv", "--bbox=-80.5,38.5,-70.5,43.5",
                     "what this does not cover", "Left out, and why not",
                     "The largest ε per person in one collection accepted", "Geo-indistinguishability: ranked by",
                     # the signed decision IS the decision report: the target, maps, interval, attacker, audit
                     "Signed decision", "The target and the answer", f"≤ {TARGET}", "4. Maps", "95% CI",
                     "6. What an attacker learns", "7. Audit", "Sign-off"):
            assert text in record, text
        assert record.index("Decision: every choice") < record.index("4. Maps") < record.index("Sign-off")
        assert not re.search(r"(src|href)=['\"]https?://", record.split("Reopen the whole flow")[0])
        walk.check_clean("Decide after the download")
        # step 6: the collection bundle, opened offline: its spec carries the ledger the page shows
        with walk.page.expect_download(timeout=120_000) as info:
            walk.page.get_by_text("Download the collection bundle (ZIP)").first.click()
        bundle = DOWNLOADS / "decide-journey-bundle.zip"
        info.value.save_as(str(bundle))
        import zipfile
        with zipfile.ZipFile(bundle) as zf:
            names = zf.namelist()
            spec = json.loads(zf.read(next(n for n in names if n.endswith("collection.json"))))
        assert any(n.endswith("client.js") for n in names) and any(n.endswith("client.py") for n in names)
        assert spec["ledger"]["repeats"] == 52 and spec["ledger"]["sentence"] in walk.main_text()
        walk.shot("decide-deploy")
        # the answer equals `ldpviz target` on the same file, box and target
        cli = re.search(r"<pre>(ldpviz target .*?)</pre>", record, re.S).group(1).replace("&#x27;", "'")
        argv = cli.split()[2:]
        argv[argv.index("--csv") + 1] = str(path)
        capsys.readouterr()
        assert cli_main(["target", *argv]) == 0
        out = json.loads(capsys.readouterr().out)
        by_cli = {r["mechanism"]: r["epsilon"] for r in out["results"]}
        for name, eps in by_cli.items():
            shown = f"{eps:.3g} per km"
            assert shown in record, (name, shown)
    finally:
        walk.close()


TRIPS_TARGET = "3000"      # W2 at most 3 km on the city box (cells of 2.5 km at d = 8)


def trips_csv(path: Path, people: int = 1500) -> Path:
    """Trips of 1,500 people around Minneapolis (1-3 trips of 5 points each), 40 people far outside the box and 10
    rows without a latitude (dropped, counted and named)."""
    rng = np.random.default_rng(31)
    rows = []
    for p in range(people):
        hub = rng.normal([-93.26, 44.97], [0.03, 0.03])
        for t in range(1 + p % 3):
            start = hub + rng.normal(0, 0.01, 2)
            for k in range(5):
                lon, lat = start + k * rng.normal(0, 0.004, 2)
                rows.append((f"p{p}", f"t{t}", k, lat, lon))
    rows += [(f"far{p}", "t0", 0, 46.0 + rng.random(), -94.0) for p in range(40)]
    rows += [(f"p{p}", "t9", 0, float("nan"), -93.25) for p in range(10)]
    pd.DataFrame(rows, columns=["person", "trip", "seq", "lat", "lon"]).to_csv(path, index=False)
    return path


def test_decide_from_uploaded_trips_to_a_signed_decision(server, browser, tmp_path):
    """Step 1 with a trips upload and typed bounds: rows kept and dropped named, the unit a person, non-default
    choices on every step, reload and back/forward, and a signed decision that states them, whose answer equals
    the Python it prints run on the same file (``ldpviz target`` reads points)."""
    path = trips_csv(tmp_path / "city_trips.csv")
    walk = Walk(browser, server, 1440, 1000)
    try:
        walk.page.goto(f"{server}/Decide?d=8&users=0")
        walk.page.locator('[data-testid="stMain"] h1').first.wait_for(timeout=180_000)
        walk.idle()
        # 1. Your data: trips, with typed bounds
        walk.page.get_by_text("Or upload trips").first.click()
        walk.idle()
        fill(walk, "Bounds for your trips", CITY)
        upload(walk, path, index=1)
        walk.idle()
        text = walk.main_text()
        assert "Your trips: city_trips.csv" in text and "The unit is a person" in text, text[:3000]
        assert "rows kept" in text and "missing coordinate" in text and "outside the bbox" in text, text[:3000]
        assert "people" in text and "one point per person" in text
        # 2. Who is protected: the unit is fixed (a person); 3 reports, monthly, Geo-I only
        assert walk.page.locator('[data-testid="stMain"] [data-testid="stRadio"]').first.get_by_text(
            "a person").count()
        fill(walk, "Reports per person per collection", "3")
        choose(walk, "How often the collection runs", "monthly")
        accept_only_geo_i(walk)
        walk.shot("decide-trips-steps")
        # 3. the target, the grid and the share of collections
        fill(walk, "x = (", TRIPS_TARGET)
        fill(walk, "Share of collections that must meet it", "0.9")
        wait_for_answers(walk)
        walk.check_clean("Decide on trips after the answers")
        walk.page.get_by_text("4 · The answer").first.scroll_into_view_if_needed()
        text = walk.main_text()
        assert "planar-laplace" in text and "sem-geoi" in text and "of one of the person's points" in text
        walk.shot("decide-trips-answers")
        # 5. Sign
        fill(walk, "Purpose of the collection", "Bus network redesign")
        fill(walk, "Owner (who answers for it)", "Transit DPO")
        fill(walk, "Retention (how long the data is kept)", "1 year")
        wait_for_answers(walk)
        query = walk.query()
        assert query.get("dctr", "").startswith("upload:") and query.get("dce") == "monthly", query
        assert query.get("dcr") == "3" and query.get("dcpur") == "Bus network redesign", query
        walk.page.reload()
        wait_for_answers(walk)
        assert "Your trips: city_trips.csv" in walk.main_text() and walk.query() == query
        assert main_input(walk, "Bounds for your trips").input_value().replace(" ", "") == CITY
        assert main_input(walk, "Owner (who answers for it)").input_value() == "Transit DPO"
        walk.nav("Explore")
        walk.page.go_back()
        wait_for_answers(walk)
        assert walk.query() == query and "The unit is a person" in walk.main_text()
        walk.shot("decide-trips-sign")
        DOWNLOADS.mkdir(parents=True, exist_ok=True)
        with walk.page.expect_download(timeout=180_000) as info:
            walk.page.get_by_text("Download the signed decision (HTML)").first.click()
        saved = DOWNLOADS / "decide-trips-journey.html"
        info.value.save_as(str(saved))
        record = saved.read_text()
        for text in ("city_trips.csv", "a person (all their trips", "one point per person", "monthly",
                     "missing coordinate", "outside the bbox", "Bus network redesign", "Transit DPO", "1 year",
                     "probability at least 90%", "Total epsilon per person over a year", "Signed decision",
                     "The target and the answer", f"≤ {TRIPS_TARGET}", "4. Maps", "7. Audit", "Sign-off",
                     "3 reports per person per collection"):
            assert text in record, text
        # the answer equals the Python the record prints, run on the same file
        code = html_lib.unescape(re.search(r"<pre>(from ldpviz.data import trajectories.*?)</pre>", record,
                                           re.S).group(1)).replace("'city_trips.csv'", repr(str(path)))
        got: dict[str, float] = {}
        exec(code, {"print": lambda name, eps: got.__setitem__(name, eps)})
        data = json.loads(html_lib.unescape(re.search(r'<pre id="ldpviz-report-json">(.*?)</pre>', record,
                                                      re.S).group(1)))
        shown = {a["mechanism"]: a["epsilon"] for a in data["decision"]["answers"]}
        assert got == shown and len(got) == 2
    finally:
        walk.close()
