"""What one session holds of its uploads is bounded in bytes (issue 39: eight sessions took the server from 70 MB to
1.1 GB): beyond the budget (LDPVIZ_SESSION_UPLOAD_MB) the least recently used upload is released, never the one in
use now, and the page that asks for a released file names it; the server's shared store is bounded in bytes too."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from streamlit.testing.v1 import AppTest

from ldpviz.app import uploads
from ldpviz.data import datasets
from ldpviz.data.dataset_types import Dataset
from ldpviz.geo.domain import Region

ROOT = Path(__file__).resolve().parents[2]
BOX = "-93.34,44.88,-93.18,45.06"
#: 40 KB: one file of 2,000 points (32 KB of coordinates) fits, two do not.
TINY_MB = "0.04"
SESSION_KEYS = ("uploads", "trip_uploads", uploads.RELEASED, uploads.ORDER, "cfg")


def points_csv(seed: int, n: int = 2000) -> bytes:
    """``n`` random points across Minneapolis (lat, lon), different for each seed."""
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"lat": rng.uniform(44.89, 45.05, n), "lon": rng.uniform(-93.33, -93.19, n)}).to_csv(
        index=False).encode()


def trips_csv(seed: int, people: int = 60) -> bytes:
    """``people`` people with one straight 5-point trip each across Minneapolis: person, trip, seq, lon, lat."""
    rng = np.random.default_rng(seed)
    rows = []
    for person in range(people):
        a, b = rng.uniform([-93.33, 44.89], [-93.19, 45.05], (2, 2))
        rows += [(f"p{person}", 0, seq, *(a + (b - a) * seq / 4)) for seq in range(5)]
    return pd.DataFrame(rows, columns=["person", "trip", "seq", "lon", "lat"]).to_csv(index=False).encode()


def page(name: str, **query: str) -> AppTest:
    at = AppTest.from_file(str(ROOT / "ldpviz/app/views" / name), default_timeout=180)
    for key, value in query.items():
        at.query_params[key] = value
    return at


def held_total(at: AppTest) -> int:
    held = {**at.session_state["uploads"], **(at.session_state["trip_uploads"]
                                                if "trip_uploads" in at.session_state else {})}
    return sum(uploads.held_bytes(d) for d in held.values())


def texts(at: AppTest) -> str:
    return " ".join(e.value for kind in (at.warning, at.caption, at.info) for e in kind)


def upload_two_points_files(monkeypatch) -> tuple[AppTest, str, str]:
    """The Data page with a.csv then b.csv uploaded under the tiny budget: (page, name of a, name of b)."""
    monkeypatch.setenv("LDPVIZ_SESSION_UPLOAD_MB", TINY_MB)
    at = page("data.py").run()
    at.text_input(key="w:upload_bounds").set_value(BOX).run()
    at.file_uploader[0].set_value(("a.csv", points_csv(1), "text/csv")).run()
    assert not at.exception, [e.message for e in at.exception]
    first = at.session_state["cfg"]["dataset"]
    assert first.endswith(":a.csv") and first in at.session_state["uploads"]
    at.file_uploader[0].set_value(("b.csv", points_csv(2), "text/csv")).run()
    assert not at.exception, [e.message for e in at.exception]
    second = at.session_state["cfg"]["dataset"]
    assert second.endswith(":b.csv")
    return at, first, second


def test_the_session_bound_holds_and_the_current_upload_is_kept(monkeypatch):
    """Two 2,000-point files under a 40 KB budget: the first is released (named beside the uploader), the one
    just uploaded is held, and what the session holds stays within the budget."""
    at, first, second = upload_two_points_files(monkeypatch)
    budget = uploads.session_budget_bytes()
    assert budget == int(0.04 * 2**20)
    b = at.session_state["uploads"][second]
    assert uploads.held_bytes(b) <= budget < 2 * uploads.held_bytes(b)     # the budget holds one file, not two
    assert list(at.session_state["uploads"]) == [second]
    assert held_total(at) <= budget
    assert at.session_state[uploads.RELEASED] == {first: "a.csv"}
    assert "Your earlier file 'a.csv' was released to keep the server's memory bounded" in texts(at)
    assert "upload it again to use it" in texts(at)


def test_without_a_budget_set_both_files_are_held(monkeypatch):
    """The default budget (200 MB) holds both small files: nothing is released, nothing is said."""
    monkeypatch.delenv("LDPVIZ_SESSION_UPLOAD_MB", raising=False)
    assert uploads.session_budget_bytes() == 200 * 2**20
    at = page("data.py").run()
    at.text_input(key="w:upload_bounds").set_value(BOX).run()
    for i, name in enumerate(("a.csv", "b.csv")):
        at.file_uploader[0].set_value((name, points_csv(i + 1), "text/csv")).run()
    assert len(at.session_state["uploads"]) == 2 and not at.session_state[uploads.RELEASED]
    assert "released" not in texts(at)


def test_a_page_that_asks_for_the_released_file_names_it(monkeypatch):
    """Explore selecting the released a.csv (as the session's setting, and by a link): it says a.csv was released
    and to upload it again, and shows the default dataset meanwhile, without an exception. (The server's store
    is kept as small, so the link cannot find a.csv there either: while the store holds a file, a link restores it.)"""
    monkeypatch.setenv("LDPVIZ_SERVER_UPLOAD_MB", TINY_MB)
    at, first, _ = upload_two_points_files(monkeypatch)
    explore = page("explore.py")
    for key in SESSION_KEYS:
        if key in at.session_state:
            explore.session_state[key] = at.session_state[key]
    explore.session_state["cfg"] = {**at.session_state["cfg"], "dataset": first}
    explore.run()
    assert not explore.exception, [e.message for e in explore.exception]
    said = " ".join(w.value for w in explore.warning)
    assert "Your earlier file 'a.csv' was released to keep the server's memory bounded" in said
    assert "upload it again to use it" in said
    assert explore.session_state["cfg"]["dataset"] == datasets.names()[0]

    linked = page("explore.py", ds=first)       # a link naming it, in the session that released it
    for key in (uploads.RELEASED, uploads.ORDER):
        linked.session_state[key] = at.session_state[key]
    linked.run()
    assert not linked.exception, [e.message for e in linked.exception]
    said = " ".join(w.value for w in linked.warning)
    assert "your earlier file 'a.csv' was released to keep the server's memory bounded" in said


def test_trips_count_in_the_same_budget_and_the_one_just_loaded_is_kept(monkeypatch):
    """A trips file uploaded on Flows after a points file: the points file is released (the trips file in use
    now is kept, even alone above the budget), and Flows names the released points file."""
    at, _, second = upload_two_points_files(monkeypatch)
    monkeypatch.setenv("LDPVIZ_SESSION_UPLOAD_MB", "0.001")        # 1 KB: smaller than any one file
    flows = page("flows.py")
    for key in SESSION_KEYS:
        if key in at.session_state:
            flows.session_state[key] = at.session_state[key]
    flows.run()
    flows.text_input(key="w:trip_bounds:flows").set_value(BOX).run()
    flows.file_uploader[0].set_value(("trips.csv", trips_csv(5), "text/csv")).run()
    assert not flows.exception, [e.message for e in flows.exception]
    (name,) = flows.session_state["trip_uploads"]
    assert name.endswith(":trips.csv") and flows.session_state["cfg"]["flows_dataset"] == name
    assert not flows.session_state["uploads"]
    assert flows.session_state[uploads.RELEASED][second] == "b.csv"
    assert "'a.csv', 'b.csv' were released to keep the server's memory bounded" in texts(flows)


def test_the_servers_store_is_bounded_in_bytes(monkeypatch):
    """The store every session shares (reloads, links) drops its oldest upload beyond LDPVIZ_SERVER_UPLOAD_MB,
    never the newest."""
    monkeypatch.setenv("LDPVIZ_SERVER_UPLOAD_MB", TINY_MB)
    store = uploads._Store()
    rng = np.random.default_rng(0)
    region = Region.fit(np.array([-93.3, -93.2]), np.array([44.9, 45.0]))
    made = [Dataset(f"upload:{i}:s{i}.csv", f"s{i}.csv", "", rng.uniform(-93.3, -93.2, 2000),
                    rng.uniform(44.9, 45.0, 2000), {"all": region}, synthetic=False) for i in range(2)]
    for d in made:
        store.put(d)
    assert store.get(made[0].name) is None and store.get(made[1].name) is made[1]
