"""The bundle's example page runs client.js in headless Chromium (issue 29; docs/deploy.md).

The bundle is served from a local http server on 127.0.0.1 (ES modules do not load from file://); the page makes
reports in the browser with crypto.getRandomValues. The test reads the reports back through ``ldpviz estimate``
and checks that no request the page made carries the typed location.
"""

from __future__ import annotations

import functools
import http.server
import json
import threading
from pathlib import Path

import pytest

from ldpviz import mechanisms
from ldpviz.geo.domain import Grid, Region
from ldpviz.deploy import bundle, estimate as deployed, spec as specs

pytestmark = pytest.mark.browser
ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs" / "deploy.md"
SHOTS = ROOT / "build"


@pytest.fixture()
def served_bundle(tmp_path):
    region = Region.from_bbox(-93.33, 44.89, -93.19, 45.05, name="Minneapolis box")
    bundle.write_bundle(mechanisms.create("dam", Grid(region, 16), 2.0), out_dir=tmp_path)
    handler = functools.partial(_QuietHandler, directory=str(tmp_path))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield tmp_path, f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # keep test output clean
        pass


def test_example_page_reports_in_chromium(browser, served_bundle, tmp_path):
    folder, url = served_bundle
    spec = specs.load_spec(folder / "collection.json")
    page = browser.new_page()
    requests: list[str] = []
    page.on("request", lambda r: requests.append(f"{r.url} {r.post_data or ''}"))
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(f"{url}/example.html")
    page.wait_for_function("document.getElementById('out').textContent.startsWith('ready')", timeout=20_000)
    page.fill("#lon", "-93.2650")
    page.fill("#lat", "44.9778")
    reports = []
    for _ in range(200):
        page.click("#go")
        reports.append(json.loads(page.text_content("#out")))
    SHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SHOTS / "deploy-example-page.png"))
    page.fill("#lon", "10.0")
    page.click("#go")
    assert page.text_content("#out") == "outside the region: nothing is sent"
    page.close()
    assert errors == []
    assert all(set(r) == {"spec", "y"} and r["spec"] == spec["digest"] for r in reports)
    assert len({r["y"] for r in reports}) > 5                      # random reports, not the cell itself
    assert not any("93.265" in r or "44.977" in r for r in requests), requests
    path = tmp_path / "reports.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in reports))
    result = deployed.estimate_reports(folder / "collection.json", path, bootstrap=5)
    assert result.collected.accepted == 200 and result.collected.n_rejected == 0


def test_docs_show_the_tested_page():
    """docs/deploy.md quotes the example page's module script exactly as the bundle ships it."""
    text = DOCS.read_text()
    script = bundle.EXAMPLE_HTML.split('<script type="module">')[1].split("</script>")[0].strip()
    script = script.replace("{{", "{").replace("}}", "}")
    assert script in text


@pytest.mark.xdist_group("browser")
def test_data_page_opens_collected_reports(server, browser, tmp_path):
    """Data -> Collected reports: upload a collection.json and reports (some bad), see the counts, the rejected lines
    by reason, the ledger and the estimated map, without an exception, a console error or a foreign request."""
    import random
    import sys
    sys.path.insert(0, str(Path(__file__).parent))
    from test_journey import Walk

    from ldpviz.deploy import client as pyclient
    region = Region.from_bbox(-93.33, 44.89, -93.19, 45.05, name="Minneapolis box")
    spec = specs.build_spec(specs.deployable_mechanism("grr", Grid(region, 8), 2.0, {}))
    spec_path = specs.write_spec(spec, tmp_path / "collection.json")
    client = pyclient.Client(spec, random.Random(1).getrandbits)
    lines = [json.dumps(client.report_unit(0.3 + 0.01 * (i % 10), 0.6)) for i in range(400)] + ["{bad", "[1]"]
    reports = tmp_path / "reports.jsonl"
    reports.write_text("\n".join(lines) + "\n")
    walk = Walk(browser, server)
    try:
        walk.page.goto(f"{server}/Data")
        walk.page.locator('[data-testid="stMain"] h1').first.wait_for(timeout=180_000)
        walk.idle()
        uploader = walk.page.locator('[data-testid="stFileUploader"]')
        walk.upload(uploader.filter(has_text="collection.json").locator("input[type=file]"), spec_path)
        uploader.filter(has_text="Reports").locator("input[type=file]").set_input_files(str(reports))
        walk.page.get_by_text("Valid reports").first.wait_for(timeout=120_000)
        walk.page.locator('[data-testid="stDeckGlJsonChart"]').last.wait_for(timeout=180_000)
        walk.idle()
        text = walk.main_text()
        assert "400" in text and "malformed" in text and "What each person paid" in text
        SHOTS.mkdir(exist_ok=True)
        walk.page.get_by_text("Valid reports").first.scroll_into_view_if_needed()
        walk.page.screenshot(path=str(SHOTS / "deploy-data-collected-reports.png"))
        walk.check_clean("Data with collected reports")
    finally:
        walk.close()
