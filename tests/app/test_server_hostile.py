"""Hostile links against the dashboard (issue 39.12, 39.13), without a browser: a long link value reaches the page
(a real server on 127.0.0.1) and is refused there in a sentence; a saved region of an upload the server no longer
holds is named when the page falls back (AppTest). The browser walk: tests/browser/test_hostile_links.py."""

from __future__ import annotations

import subprocess
import urllib.request
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[2]
SMALL = {"ds": "normal", "users": "3000", "d": "8"}


def explore(**query: str) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=200)
    for key, value in {**SMALL, **query}.items():
        at.query_params[key] = value
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    return at


def test_long_link_values_and_names_are_refused_in_a_sentence():
    """A 200 kB value, or a 100-character name, is ignored with a warning that quotes neither whole; the rest of
    the link is read."""
    from ldpviz.app.session import MAX_LINK_KEY, MAX_LINK_VALUE
    at = explore(eps="9" * 200_000, **{"x" * 100: "1"}, mech="grr")
    warnings = [w.value for w in at.warning]
    assert f"link parameter 'eps' ignored: its value is 200,000 characters long, more than the {MAX_LINK_VALUE:,}" \
        in warnings[0]
    assert f"its name is 100 characters long, more than the {MAX_LINK_KEY}" in warnings[1]
    assert max(map(len, warnings)) < 300 and len(warnings) == 2
    assert at.session_state["cfg"]["mechanism"] == "grr" and at.session_state["cfg"]["epsilon"] == 1.0
    at = explore(eps="9" * MAX_LINK_VALUE)                   # at the limit: read (and refused as a number)
    assert any("link parameter 'eps' ignored: epsilon" in w.value for w in at.warning)


def test_a_saved_region_of_a_lost_upload_is_named():
    """After a restart the link's upload is gone, and with it the region saved on it: the page fell back to the
    whole city saying only that the upload was lost. It now names the region too."""
    at = explore(ds="upload:0123abcd:my.csv", region="My area", rc="-93.25,44.95,3000.0")
    text = " ".join(w.value for w in at.warning)
    assert "the uploaded file 'my.csv' is no longer held by this server" in text
    assert "The link's saved region 'My area' was drawn on the uploaded file 'my.csv'" in text
    assert "'Whole city' instead" in text and at.session_state["cfg"]["region"] == "Whole city"
    at = explore(region="Nowhere")                          # a region no session saved: the old sentence
    assert any("The link's region 'Nowhere' is not one of" in w.value for w in at.warning)


@pytest.mark.slow
@pytest.mark.xdist_group("browser")    # starts a dashboard server, as the browser tests do: one at a time
def test_the_server_reads_a_long_link():
    """A 200 kB link got uvicorn's bare "400 Invalid HTTP request received." (its h11 parser stops at 16 KiB of
    request head); the server now reads up to 2 MiB (ldpviz.app.entry.streamlit_server)."""
    from ldpviz.app import serve
    proc, url = serve.start(output=subprocess.DEVNULL)
    try:
        for size in (20_000, 200_000, 1_500_000):
            with urllib.request.urlopen(f"{url}/?eps={'9' * size}", timeout=30) as resp:
                assert resp.status == 200 and b"<html" in resp.read().lower()
    finally:
        serve.stop(proc)
