"""AppTest checks of the People page (ldpviz/app/views/people.py) and the Flows page's link and CSV download.

Small settings (d = 8, few centres) so each test runs in a few seconds. Every statistical
reading uses the page's fixed seed 0 (the shared default).
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from unittest import mock

import numpy as np
import pandas as pd
from streamlit.runtime.memory_media_file_storage import MemoryMediaFileStorage
from streamlit.testing.v1 import AppTest

from ldpviz.app import state

ROOT = Path(__file__).resolve().parents[2]
PEOPLE = str(ROOT / "ldpviz/app/views/people.py")
FLOWS = str(ROOT / "ldpviz/app/views/flows.py")


class _Storage(MemoryMediaFileStorage):
    """The media storage AppTest creates per run, remembered so a download's bytes can be read back."""

    last: "_Storage | None" = None

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        _Storage.last = self


def run_page(path: str, query: dict[str, str], timeout: int = 120) -> AppTest:
    at = AppTest.from_file(path, default_timeout=timeout)
    for key, value in query.items():
        at.query_params[key] = value
    with mock.patch("streamlit.testing.v1.app_test.MemoryMediaFileStorage", _Storage):
        at.run()
    assert not at.exception, [e.message for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    return at


def download_text(at: AppTest, label: str) -> str:
    button = next(b for b in at.get("download_button") if b.label == label)
    return _Storage.last.get_file(button.proto.url.rsplit("/", 1)[-1]).content.decode("utf-8")


def centre_markers(at: AppTest) -> list[dict]:
    """The records of the k-median ScatterplotLayer on the page's maps (empty when absent)."""
    for chart in at.get("deck_gl_json_chart"):
        for layer in json.loads(chart.proto.json)["layers"]:
            if layer.get("id") == "kmedian-centres":
                return layer["data"]
    return []


def test_people_page_minneapolis_shuffle_readouts_and_markers():
    """Minneapolis walks, shuffle model, k = 3: W2/EMD readouts, messages per person, 3 markers inside the region."""
    at = run_page(PEOPLE, {"pds": "minneapolis-walks", "pd": "8", "pshuf": "1", "pk": "3"})
    metrics = {m.label: m.value for m in at.metric}
    assert {"People", "Privacy unit", "W2", "EMD", "Messages per person", "Bits per person"} <= set(metrics)
    assert metrics["Privacy unit"] == "one person"
    value, unit = metrics["W2"].split()
    assert unit in ("m", "km") and float(value.replace(",", "")) > 0          # a distance with its unit
    assert int(metrics["Messages per person"].replace(",", "")) > 0
    assert any("shuffle model" in c.value and "per one person" in c.value for c in at.caption)
    markers = centre_markers(at)
    assert len(markers) == 3
    from ldpviz.data import datasets
    region = datasets.load("minneapolis-stops").presets["Whole city"]
    lon = np.array([m["lon"] for m in markers])
    lat = np.array([m["lat"] for m in markers])
    assert region.contains(lon, lat).all()


def test_people_page_storms_laplace_download_and_units():
    """Storm tracks with the Laplace baseline: the grid CSV is a distribution per column; every unit is named."""
    at = run_page(PEOPLE, {"pmeth": "laplace", "pd": "8", "pk": "2"})
    assert len(centre_markers(at)) == 2
    table = pd.read_csv(io.StringIO(download_text(at, "Estimated grid (CSV)")))
    assert len(table) == 64 and {"true_share", "estimated_share"} <= set(table.columns)
    assert abs(table["true_share"].sum() - 1) < 1e-6 and abs(table["estimated_share"].sum() - 1) < 1e-6
    captions = " ".join(c.value for c in at.caption)
    assert "one location: a person with L points is protected at L·ε" in captions
    assert captions.count("privacy unit: one trajectory") == 2          # dam-sample and LDPTrace
    assert "per one person" in captions                                 # the heatmap and the centres
    comparison = at.dataframe[0].value
    assert list(comparison["mechanism"]) == ["dam-points", "dam-sample", "ldptrace"]
    assert (comparison["W2 to the points (km)"] > 0).all()
    # the accountant's totals: L·ε for the person with the most points, ε per trajectory
    totals = list(comparison["total per person (worst)"])
    longest = int(float(totals[0].split()[2]))
    assert longest > 1 and totals[1:] == ["ε = 1 (LDP)", "ε = 1 (LDP)"]     # storms have many points each
    ledger = " ".join(m.value for m in at.markdown)
    assert "central ε-DP 2 for the published map" in ledger              # map and centres: the ledger adds both
    assert "Per person: this page joins each person's trips into one trajectory (the most trips by one person " \
           "here is 1)" in captions                                    # storms: one track per storm


def test_people_page_link_round_trip_and_widget_change():
    """A link's settings reach the widgets and come back unchanged; a widget change goes into the link."""
    query = {"pds": "minneapolis-walks", "preg": "Downtown", "pmeth": "laplace-top", "pd": "8", "pk": "4",
             "eps": "2"}
    at = run_page(PEOPLE, query)
    assert dict(at.query_params) == query
    assert at.selectbox(key="w:people_region").value == "Downtown"
    assert at.selectbox(key="w:people_method").value == "laplace-top"
    assert at.slider(key="w:people_k").value == 4
    at.slider(key="w:people_k").set_value(2)
    at.run()
    assert not at.exception
    assert len(centre_markers(at)) == 2
    assert at.query_params["pk"] == "2"


def test_people_link_bad_values_warn_and_fall_back():
    """Bad People link values are dropped one by one with a warning naming the key; the page still draws."""
    cfg, warnings = state.decode({"pd": "12", "pk": "99", "pds": "nowhere", "pshuf": "yes", "pmeth": "laplace"})
    assert cfg["people_grid"] == state.defaults()["people_grid"] and cfg["people_k"] == state.defaults()["people_k"]
    assert cfg["people_source"] == state.defaults()["people_source"] and cfg["people_method"] == "laplace"
    assert sorted(w.split("'")[1] for w in warnings) == ["pd", "pds", "pk", "pshuf"]
    at = AppTest.from_file(PEOPLE, default_timeout=120)
    at.query_params["pk"] = "99"
    at.query_params["pd"] = "8"
    at.run()
    assert not at.exception
    assert any("'pk' ignored" in w.value for w in at.warning)


def test_flows_page_link_round_trip_and_flow_csv():
    """Flows settings survive the link; the flow CSV holds every pair with a share, both columns summing to ~1."""
    query = {"fds": "atlantic-storms", "freg": "Caribbean", "fmech": "grr-tiles", "fest": "em", "fd": "4",
             "ftheta": "20", "eps": "2"}
    at = run_page(FLOWS, query, timeout=180)
    assert dict(at.query_params) == query
    assert at.selectbox(key="w:flows_region").value == "Caribbean"
    assert at.select_slider(key="w:flows_theta").value == 20
    table = pd.read_csv(io.StringIO(download_text(at, "Flow table (CSV)")))
    assert {"origin_cell", "destination_cell", "true_share", "estimated_share"} <= set(table.columns)
    assert table["origin_cell"].between(0, 15).all() and table["destination_cell"].between(0, 15).all()
    assert abs(table["true_share"].sum() - 1) < 1e-6
    assert not table.duplicated(["origin_cell", "destination_cell"]).any()
    assert table["true_share"].is_monotonic_decreasing


def test_people_page_says_when_the_heatmap_is_pure_noise():
    """Issue 27: a heatmap no closer to the truth than a flat map (W2) says so, with both numbers; a setting that
    beats the flat map does not."""
    noisy = run_page(PEOPLE, {"pmeth": "laplace", "pd": "16", "pk": "2", "eps": "0.1"})
    text = " ".join(w.value for w in noisy.warning)
    assert "This heatmap says nothing yet" in text and "flat map" in text
    clear = run_page(PEOPLE, {"pmeth": "laplace", "pd": "8", "pk": "2", "eps": "8"})
    assert not any("says nothing yet" in w.value for w in clear.warning)
