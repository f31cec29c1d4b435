"""Fixtures shared by the real-browser tests: one ``streamlit run`` server and one headless Chromium per module.

The server's output goes to build/browser-server-<module>.log (tracebacks that the pages turn into one plain
sentence land there). Without /usr/bin/chromium or Playwright the tests skip, unless LDPVIZ_REQUIRE_BROWSER=1
(as in CI): then they fail.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ldpviz.app import serve

LOGS = Path(__file__).resolve().parents[2] / "build"


@pytest.fixture(scope="module")
def server(request) -> str:
    """The served dashboard's URL; afterwards its log must hold no traceback (an error a page swallowed, or a
    table Streamlit could only show after 'automatic fixes')."""
    LOGS.mkdir(parents=True, exist_ok=True)
    path = LOGS / f"browser-server-{request.module.__name__.rsplit('.', 1)[-1]}.log"
    with open(path, "wb") as log:
        proc, url = serve.start(output=log)
        yield url
        serve.stop(proc)
    text = path.read_text(errors="replace")
    assert "Traceback" not in text, \
        f"the server logged a traceback (see {path}):\n" + text[text.find("Traceback") - 300:][:3000]


@pytest.fixture(scope="module")
def browser():
    missing = serve.browser_missing()
    if missing:
        if os.environ.get("LDPVIZ_REQUIRE_BROWSER") == "1":
            pytest.fail(f"{missing} (LDPVIZ_REQUIRE_BROWSER=1)")
        pytest.skip(missing)
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=serve.CHROMIUM, args=serve.CHROMIUM_ARGS)
        yield b
        b.close()
