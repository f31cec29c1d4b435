"""A person's journey through the privacy ledger (issue 26): a trips file uploaded on Flows without bounds is
framed by the paid private tiles, and Flows and People show what each person pays, the region's epsilon0 once
per person included, with the same total the command line prints. Screenshots: build/screenshots/journey-ledger-*.png.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ldpviz.cli import main as cli_main
from test_journey import Walk
from test_regions_journey import go, upload

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.xdist_group("browser")]


def many_people_trips(path: Path) -> Path:
    """2,500 people around Minneapolis, 1 to 3 trips each of 4 to 12 points (enough people for private tiles)."""
    rng = np.random.default_rng(26)
    rows = []
    for person in range(2_500):
        for trip in range(int(rng.integers(1, 4))):
            a, b = rng.normal([-93.26, 44.97], 0.03, (2, 2))
            n = int(rng.integers(4, 13))
            rows += [(f"p{person}", trip, seq, *(a + (b - a) * seq / (n - 1))) for seq in range(n)]
    frame = pd.DataFrame(rows, columns=["person", "trip", "seq", "lon", "lat"])
    frame.sample(frac=1.0, random_state=1).to_csv(path, index=False)       # shuffled rows: seq gives the order
    return path


def test_uploaded_trips_without_bounds_show_the_ledger(server, browser, tmp_path, capsys):
    path = many_people_trips(tmp_path / "city_trips.csv")
    assert cli_main(["od", "--file", str(path), "--grid", "4", "--epsilon", "1", "--json"]) == 0
    cli = json.loads(capsys.readouterr().out)
    total = cli["ledger"]["total"]["text"]
    assert cli["ledger"]["total"]["ldp_epsilon"] == pytest.approx(0.5 + cli["max_trips_per_person"] * 1.0)
    walk = Walk(browser, server, 1440, 1000)
    try:
        walk.page.goto(f"{server}/Flows?eps=1&fd=4")
        walk.idle()
        upload(walk, path)
        walk.check_clean("Flows after an upload without bounds")
        text = walk.main_text()
        assert "region: one map-tile report (OLH) to choose the region" in text, text[:3000]
        assert "1 per person (each person reports the tile of one of their points, once)" in text
        assert f"Total per person in one collection: {total}" in text
        walk.shot("ledger-flows")
        go(walk, "People", "People")
        walk.choose("Trajectories", "Your trips: city_trips.csv")       # the upload, kept across pages
        walk.check_clean("People with the uploaded trips")
        text = walk.main_text()
        assert "region: one map-tile report (OLH) to choose the region: ε-LDP 0.5, 1 per person" in text, text[:3000]
        assert "a DAM report of one point" in text
        walk.shot("ledger-people")
    finally:
        walk.close()
