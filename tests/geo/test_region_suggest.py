"""The box suggested for a file too large for one region (issue 21): the densest continent-sized box, the rows
``--bbox`` keeps from it, and the command line's refusal that can be pasted."""

from __future__ import annotations

import numpy as np
import pytest

from ldpviz.mechanisms.fo.private_region import upload_frame
from ldpviz.data import datasets
from ldpviz.cli.commands import main
from ldpviz.geo.domain import Region
from ldpviz.errors import LdpvizInputError, RegionTooLargeError
from ldpviz.geo.region_suggestion import suggest_bbox


def national(seed: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """A US-wide file: 30,000 rows in the lower 48, 2,000 in Alaska, 300 in the Aleutians west of 180
    (172 E to 179.9 E) and 800 in Hawaii."""
    rng = np.random.default_rng(seed)
    lon = np.r_[rng.uniform(-124.7, -67.0, 30_000), rng.uniform(-170, -140, 2_000), rng.uniform(172, 179.9, 300),
                rng.uniform(-160, -155, 800)]
    lat = np.r_[rng.uniform(24.6, 49.3, 30_000), rng.uniform(55, 70, 2_000), rng.uniform(51, 53, 300),
                rng.uniform(19, 22, 800)]
    return lon, lat


def write(path, lon, lat):
    path.write_text("lat,lon\n" + "\n".join(f"{a:.5f},{b:.5f}" for a, b in zip(lat, lon)) + "\n")
    return path


def test_national_file_gets_the_lower_48():
    """The densest continent-sized box of a US file holds the lower 48 (the most rows), its edges are whole
    degrees, it frames as one region, and rows_inside counts exactly the rows in_bbox keeps."""
    lon, lat = national()
    box = suggest_bbox(lon, lat)
    assert box.rows_total == lon.size and box.rows_inside >= 30_000
    assert box.west <= -124.7 and box.east >= -67.0 and box.south <= 24.6 and box.north >= 49.3
    assert all(float(v).is_integer() for v in box.bbox)
    Region.from_bbox(*box.bbox)                                      # accepted: no exception
    assert box.rows_inside == int(datasets.in_bbox(lon, lat, box.bbox).sum())
    assert box.as_option() == f"--bbox={box.as_text()} --bbox-from suggestion" and box.as_text().count(",") == 3


def test_box_across_the_antimeridian():
    """When most rows sit around Fiji (both sides of 180), the box crosses 180 (west > east) and holds them."""
    rng = np.random.default_rng(4)
    lon = np.r_[rng.uniform(177, 180, 5_000), rng.uniform(-180, -178, 5_000), rng.uniform(-124, -67, 3_000)]
    lat = np.r_[rng.uniform(-19, -16, 10_000), rng.uniform(25, 49, 3_000)]
    box = suggest_bbox(lon, lat)
    assert box.west > box.east and box.rows_inside == 10_000
    region = Region.from_bbox(*box.bbox)
    assert region.side_m < 1_000_000                                 # a Fiji-sized square, not half the globe


def test_suggestion_is_the_rows_bbox_keeps(tmp_path):
    """Loading the file with the suggested box keeps exactly rows_inside rows (the count the refusal states)."""
    lon, lat = national()
    path = write(tmp_path / "us.csv", lon, lat)
    with pytest.raises(RegionTooLargeError) as exc:
        datasets.load_file(path, frame=upload_frame())
    box = exc.value.suggestion
    assert box is not None and f"{box.rows_inside:,} of the {lon.size:,} rows" in str(exc.value)
    assert datasets.load_file(path, bbox=box.bbox).report.rows_kept == box.rows_inside


def test_cli_refusal_can_be_pasted(tmp_path, capsys):
    """`ldpviz run --csv national.csv` refuses in one line ending in --bbox=W,S,E,N --bbox-from suggestion; pasting
    it runs, and the run says its region was read from the rows -- never "chosen without reading users' data"
    (issue 26). The same box typed without the flag is "the box you gave", with the caveat that ldpviz cannot tell
    where it came from."""
    import json
    lon, lat = national()
    path = write(tmp_path / "us.csv", lon, lat)
    assert main(["run", "--csv", str(path), "--grid", "4"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.endswith("--bbox-from suggestion")
    options = err.split(" add ", 1)[-1].split()
    assert options[0].startswith("--bbox=") and options[1:] == ["--bbox-from", "suggestion"]
    assert main(["run", "--csv", str(path), *options, "--grid", "4", "--json"]) == 0
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    assert out["rows"]["kept"] == suggest_bbox(lon, lat).rows_inside
    text = captured.out + captured.err
    assert "without reading users' data" not in text and "read no users' data" not in text
    assert "Not covered by epsilon: the region was the box ldpviz suggested from the file's rows" in text
    assert "Region (--bbox-from suggestion): the box ldpviz suggested" in captured.err
    assert main(["run", "--csv", str(path), options[0], "--grid", "4", "--json"]) == 0      # typed: unknown source
    text = capsys.readouterr().out
    assert "without reading users' data" not in text and "the box you gave" in text
    assert "if it was read from the users' data (a box suggested from the rows, say), that is not covered" in text


def test_bbox_from_needs_a_bbox(capsys):
    """--bbox-from says where a --bbox came from: without a box it is a one-line error, not ignored."""
    assert main(["run", "--bbox-from", "suggestion", "--grid", "4"]) == 2
    assert "give the --bbox too" in capsys.readouterr().err


def test_empty_or_polar_input_refused():
    with pytest.raises(LdpvizInputError, match="empty"):
        suggest_bbox(np.array([]), np.array([]))
    with pytest.raises(LdpvizInputError, match="polar"):
        suggest_bbox(np.array([10.0]), np.array([89.0]))


def test_binomial_isf_equals_scipy_stats():
    """The private tiles' support cut uses scipy.special's binomial tail, not scipy.stats (import cost at every
    command's start): equal to binom.isf over n from 1 to 1e6, p from 1e-6 to 0.9, tail mass down to 1e-9."""
    from scipy.stats import binom

    from ldpviz.mechanisms.fo.private_region import binomial_isf
    for n in (1, 2, 5, 10, 100, 1000, 51_920, 10**6):
        for p in (1e-6, 1e-3, 0.01, 0.1, 0.3, 0.5, 0.9):
            for a in (0.5, 0.05, 1e-3, 1e-6, 1e-9, 0.05 / 4**10):
                assert binomial_isf(a, n, p) == binom.isf(a, n, p), (a, n, p)


@pytest.mark.parametrize("centre_lon", [-93.27, 179.97], ids=["city", "city across 180"])
def test_a_city_sized_file_gets_a_box_near_its_rows(centre_lon):
    """Issue 36: rows spanning ~10 km (a city, here also one straddling 180) got a whole-degree box, ~111 km, so
    most of its map cells were empty. Property: the box is refined (edges on a grid of 1/64-degree multiples, no
    side more than 4x the rows' span plus two fine cells), still holds every row, and rows_inside counts exactly
    the rows in_bbox keeps."""
    rng = np.random.default_rng(36)
    lon = (centre_lon + rng.uniform(-0.06, 0.06, 500) + 180.0) % 360.0 - 180.0
    lat = 44.97 + rng.uniform(-0.05, 0.05, 500)
    box = suggest_bbox(lon, lat)
    assert box.rows_inside == lon.size == int(datasets.in_bbox(lon, lat, box.bbox).sum())
    assert not all(float(v).is_integer() for v in box.bbox)
    assert all(float(v * 64).is_integer() for v in box.bbox), box.bbox
    width, height = box.size_km()
    assert width < 4 * 0.12 * 111 * np.cos(np.radians(45)) + 2 * 1.8 and height < 4 * 0.10 * 111 + 2 * 1.8, box
    Region.from_bbox(*box.bbox)
    if centre_lon > 179:
        assert box.west > box.east


def test_a_trips_suggestion_counts_people(tmp_path):
    """A trips file too small for the private tiles: its suggestion is read from one point per person and says
    'people', not 'rows' (issue 36: '200 of 200 rows' for 200 people with 3,000 rows)."""
    from ldpviz.data import trajectories
    from tests.foreign_files import trips, write as write_trips
    path = write_trips(trips(np.random.default_rng(36)), tmp_path, "trips.csv")
    with pytest.raises(RegionTooLargeError) as exc:
        trajectories.load_trajectory_file(path, filename="trips.csv", frame=upload_frame())
    box = exc.value.suggestion
    assert box is not None and box.unit == "people"
    assert f"of the {box.rows_total:,} people" in str(exc.value) and " rows (" not in str(exc.value)
