"""A session's uploads are bounded in bytes (issue 39): on a server whose session budget holds one small file
(LDPVIZ_SESSION_UPLOAD_MB), a person uploads a.csv then b.csv on the Data page; b.csv is loaded and selected, and
the page names a.csv as released, with what to do. Screenshot: build/screenshots/journey-upload-budget.png."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ldpviz.app import serve
from test_journey import SHOTS, Walk
from test_regions_journey import CITY, type_bounds, upload

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("browser")]

LOGS = Path(__file__).resolve().parents[2] / "build"


@pytest.fixture(scope="module")
def server() -> str:
    """A server whose sessions hold 40 KB of uploads (one 2,000-point file, not two); its log holds no traceback."""
    LOGS.mkdir(parents=True, exist_ok=True)
    path = LOGS / "browser-server-test_upload_budget_journey.log"
    before = os.environ.get("LDPVIZ_SESSION_UPLOAD_MB")
    os.environ["LDPVIZ_SESSION_UPLOAD_MB"] = "0.04"
    try:
        with open(path, "wb") as log:
            proc, url = serve.start(output=log)
            yield url
            serve.stop(proc)
    finally:
        if before is None:
            os.environ.pop("LDPVIZ_SESSION_UPLOAD_MB", None)
        else:
            os.environ["LDPVIZ_SESSION_UPLOAD_MB"] = before
    assert "Traceback" not in path.read_text(errors="replace"), f"the server logged a traceback (see {path})"


def points_csv(path: Path, seed: int) -> Path:
    rng = np.random.default_rng(seed)
    pd.DataFrame({"lat": rng.uniform(44.89, 45.05, 2000), "lon": rng.uniform(-93.33, -93.19, 2000)}).to_csv(
        path, index=False)
    return path


def test_the_earlier_upload_is_named_as_released(server, browser, tmp_path):
    walk = Walk(browser, server)
    try:
        walk.page.goto(f"{server}/Data")
        walk.page.locator('[data-testid="stMain"] h1').first.wait_for(timeout=180_000)
        walk.idle()
        type_bounds(walk, "Bounds W, S, E, N", CITY)
        upload(walk, points_csv(tmp_path / "a.csv", 1))
        assert "Your earlier file" not in walk.main_text()      # one file fits: nothing released yet
        upload(walk, points_csv(tmp_path / "b.csv", 2))
        walk.page.get_by_text("Your earlier file 'a.csv' was released").first.wait_for(timeout=180_000)
        text = walk.main_text()
        assert "Your earlier file 'a.csv' was released to keep the server's memory bounded" in text
        assert "upload it again to use it" in text
        assert walk.query().get("ds", "").endswith(":b.csv")      # the file just uploaded is the one in use
        walk.check_clean("Data after two uploads")
        SHOTS.mkdir(parents=True, exist_ok=True)
        walk.page.screenshot(path=str(SHOTS / "journey-upload-budget.png"), full_page=True)
    finally:
        walk.context.close()
