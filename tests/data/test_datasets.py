"""Tests for ldpviz.data.datasets: bundled and synthetic sets, and file loading/validation."""

from __future__ import annotations

import functools
import gzip
import io

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ldpviz.data import datasets
from ldpviz.data.datasets import Dataset, LoadReport, gaussian_mixture, load, names
from ldpviz.errors import LdpvizInputError
from ldpviz.mechanisms.fo.private_region import upload_frame

# These tests are about reading files; the region rule (private tiles by default) is tested in test_regions.
load_file = functools.partial(datasets.load_file, frame=upload_frame("public-tiles"))

SIZES = {"minneapolis-stops": 51_920, "normal": 300_000, "szipf": 100_000, "mnormal": 300_000,
         "gmm": 100_000, "uniform": 100_000}


def native(ds: Dataset, low: float, high: float) -> np.ndarray:
    """Undo the Null Island placement: points back in the native square [low, high]^2."""
    return ds.default_region.to_unit(ds.lon, ds.lat) * (high - low) + low


# ---------------------------------------------------------------- registry
def test_names_and_describe() -> None:
    assert names() == ["minneapolis-stops", "normal", "szipf", "mnormal", "gmm", "uniform"]
    rows = datasets.describe()
    assert [r["name"] for r in rows] == names()
    for row in rows:
        assert row["n"] == SIZES[row["name"]]
        assert row["synthetic"] == (row["name"] != "minneapolis-stops")
        assert row["description"] and row["label"] and len(row["presets"]) >= 4


@pytest.mark.parametrize("name", list(SIZES))
def test_documented_size_and_inside_default_region(name: str) -> None:
    ds = load(name)
    assert ds.name == name and ds.n == SIZES[name]
    assert ds.lon.dtype == np.float64 and ds.lat.dtype == np.float64
    assert ds.default_region is next(iter(ds.presets.values()))
    assert ds.default_region.contains(ds.lon, ds.lat).all()
    assert all(key == region.name for key, region in ds.presets.items())
    with pytest.raises(ValueError):          # cached arrays are read-only
        ds.lon[0] = 0.0


def test_load_is_cached_and_rejects_bad_input() -> None:
    assert load("normal", seed=3) is load("normal", seed=3)
    assert load("minneapolis-stops", seed=5) is load("minneapolis-stops")
    with pytest.raises(LdpvizInputError, match="minneapolis-stops, normal, szipf"):
        load("chicago")
    with pytest.raises(LdpvizInputError, match="seed"):
        load("normal", seed=-1)
    with pytest.raises(LdpvizInputError):
        load(["normal"])  # type: ignore[arg-type]


@pytest.mark.parametrize("name", ["normal", "szipf", "mnormal", "gmm", "uniform"])
def test_synthetic_determinism(name: str) -> None:
    build = datasets._BUILDERS[name]
    a, b, c = build(7), build(7), build(8)
    assert np.array_equal(a.lon, b.lon) and np.array_equal(a.lat, b.lat)
    assert a.key == b.key
    assert not np.array_equal(a.lon, c.lon) and a.key != c.key
    assert a.synthetic and "Null Island" in a.description


def test_minneapolis_presets_hold_the_data() -> None:
    ds = load("minneapolis-stops")
    assert list(ds.presets)[0] == "Whole city"
    assert ds.default_region.contains(ds.lon, ds.lat).mean() >= 0.99
    assert len(ds.presets) >= 4
    for name, region in list(ds.presets.items())[1:]:
        assert region.contains(ds.lon, ds.lat).sum() >= 5_000, name
    assert ds.key == load("minneapolis-stops").key and len(ds.key) == 40
    assert "GPL" in ds.description and ds.report is None


@pytest.mark.parametrize("name", ["normal", "szipf", "mnormal", "gmm", "uniform"])
def test_synthetic_presets(name: str) -> None:
    ds = load(name)
    assert list(ds.presets) == ["Whole square", "Centre", "South-west quarter", "North-east quarter"]
    assert ds.default_region.center_lon == 0.0 and ds.default_region.center_lat == 0.0
    assert ds.default_region.side_m == 10_000.0
    for region in ds.presets.values():
        assert region.contains(ds.lon, ds.lat).mean() >= 0.10


def test_normal_matches_paper() -> None:
    xy = native(load("normal"), -5.0, 5.0)
    assert np.all(np.abs(xy) < 5.0)
    assert np.allclose(xy.mean(axis=0), 0.0, atol=0.01)
    assert np.allclose(xy.std(axis=0), 1.0, atol=0.01)
    assert np.corrcoef(xy.T)[0, 1] == pytest.approx(0.5, abs=0.01)


def test_mnormal_components() -> None:
    xy = native(load("mnormal"), -5.0, 7.0)
    for k, (mean, rho) in enumerate(datasets.MNORMAL_COMPONENTS):
        part = xy[k * 100_000:(k + 1) * 100_000]
        assert np.allclose(part.mean(axis=0), mean, atol=0.02)
        assert np.corrcoef(part.T)[0, 1] == pytest.approx(rho, abs=0.02)


def test_szipf_marginals() -> None:
    xy = native(load("szipf"), 0.0, 1.0)
    assert xy.min() >= 0.0 and xy.max() <= 1.0
    for t in (0.25, 0.5, 0.75):   # CDF log2(1 + t)
        assert np.mean(xy < t, axis=0) == pytest.approx([np.log2(1 + t)] * 2, abs=0.01)


def test_gaussian_mixture_parameters() -> None:
    small = gaussian_mixture(n_points=5_000, n_clusters=3, cluster_std=0.01, seed=1)
    assert small.n == 5_000 and small.name == "gmm:n=5000,k=3,std=0.01"
    # three tight clusters: a 50 x 50 histogram is very sparse
    hist, _, _ = np.histogram2d(*native(small, 0, 1).T, bins=50, range=[[0, 1], [0, 1]])
    assert (hist > 0).mean() < 0.05
    assert gaussian_mixture(seed=0).key == load("gmm").key
    for bad in ({"n_points": 0}, {"n_clusters": 2.5}, {"cluster_std": 0.0}, {"cluster_std": 1.0}):
        with pytest.raises(LdpvizInputError):
            gaussian_mixture(**bad)


# ---------------------------------------------------------------- load_file: good files
def write(tmp_path, name: str, text: str, encoding: str = "utf-8"):
    path = tmp_path / name
    path.write_bytes(text.encode(encoding))
    return path


def test_every_drop_reason_counted(tmp_path) -> None:
    rows = ["lat,lon,note",
            "44.97,-93.26,good", "44.98,-93.27,good", " 44.99 , -93.28 ,spaces",
            ",-93.26,missing lat", "44.97,,missing lon", "NA,-93.2,na", "44.9,nan,nan",
            "abc,-93.2,text", "44.9,1O,typo", "inf,-93.2,infinite",
            "95,-93.2,lat high", "-90.5,-93.2,lat low", "44.9,-200,lon low", "44.9,540.01,lon high",
            "44.9,-93.2,extra,field", "",
            "45.0,-93.3"]                                       # short row: note column empty, kept
    ds = load_file(write(tmp_path, "stops.csv", "\n".join(rows) + "\n"))
    rep = ds.report
    assert rep.rows_read == 16 and rep.rows_kept == 4
    assert rep.dropped == {"malformed row": 1, "missing coordinate": 4, "non-numeric coordinate": 3,
                           "latitude out of range": 2, "longitude out of range": 2}
    assert rep.rows_kept + sum(rep.dropped.values()) == rep.rows_read
    assert (rep.lat_column, rep.lon_column) == ("lat", "lon")
    assert ds.lat.tolist() == [44.97, 44.98, 44.99, 45.0] and ds.lon.tolist() == [-93.26, -93.27, -93.28, -93.3]
    assert ds.name == "upload:stops.csv" and not ds.synthetic
    assert ds.default_region.contains(ds.lon, ds.lat).all()
    assert rep.summary().startswith("Kept 4 of 16 rows")
    assert "4 with a missing coordinate" in rep.summary() and "2 with longitude outside" in rep.summary()


_TOKENS = {   # kind -> example cell values (for latitude; longitude uses the same with its own range)
    "missing": ["", "NA", "nan", "null", " "],
    "bad": ["abc", "1O", "inf", "-inf", "--"],
}


@st.composite
def _cell(draw, limit: float, centre: float, high: float | None = None):
    """A coordinate cell; out of range means below -limit or above ``high`` (default limit).

    Longitudes in (180, 540] are wrapped, not dropped, so their upper limit is 540.
    """
    kind = draw(st.sampled_from(["ok", "ok", "missing", "bad", "range"]))
    if kind == "ok":   # near Minneapolis, so the kept points always fit one region
        return kind, repr(draw(st.floats(centre - 0.1, centre + 0.1)))
    if kind == "range":
        if draw(st.booleans()):
            return kind, repr(draw(st.floats((high or limit) + 0.001, 1e6)))
        return kind, repr(-draw(st.floats(limit + 0.001, 1e6)))
    return kind, draw(st.sampled_from(_TOKENS[kind]))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(_cell(90.0, 44.97), _cell(180.0, -93.26, high=540.0)), min_size=1, max_size=30))
def test_drop_counts_property(cells) -> None:
    text = "lat,lon\n" + "".join(f"{la},{lo}\n" for (_, la), (_, lo) in cells)
    expected: dict[str, int] = {}
    for (lat_kind, _), (lon_kind, _) in cells:
        kinds = {lat_kind, lon_kind}
        reason = ("missing coordinate" if "missing" in kinds else "non-numeric coordinate" if "bad" in kinds
                  else "latitude out of range" if lat_kind == "range"
                  else "longitude out of range" if lon_kind == "range" else None)
        if reason:
            expected[reason] = expected.get(reason, 0) + 1
    kept = len(cells) - sum(expected.values())
    if kept == 0:
        with pytest.raises(LdpvizInputError, match="none of the rows"):
            load_file(text.encode(), filename="h.csv")
        return
    rep = load_file(text.encode(), filename="h.csv").report
    assert rep.rows_read == len(cells) and rep.rows_kept == kept
    assert rep.dropped == {k: expected[k] for k in ("missing coordinate", "non-numeric coordinate",
                                                    "latitude out of range", "longitude out of range")
                           if k in expected}


def test_summary_sentence() -> None:
    rep = LoadReport(1000, 980, {"missing coordinate": 12, "non-numeric coordinate": 8}, "lat", "lon")
    assert rep.summary() == ("Kept 980 of 1,000 rows (latitude from 'lat', longitude from 'lon'); dropped 12 "
                             "with a missing coordinate and 8 with a non-numeric coordinate.")
    assert LoadReport(5, 5, {}, "y", "x").summary().endswith("'x').")


@pytest.mark.parametrize("header, lat_name, lon_name", [
    ("Latitude,Longitude", "Latitude", "Longitude"), ("LAT,LNG", "LAT", "LNG"), ("y,x", "y", "x"),
    ("id,LONG,Lat", "Lat", "LONG"), ("ｌａｔ,ｌｏｎ", "ｌａｔ", "ｌｏｎ")])
def test_column_autodetect(tmp_path, header: str, lat_name: str, lon_name: str) -> None:
    first, second = header.split(",")[-2:]
    values = "44.9,-93.2" if first.casefold().startswith(("lat", "y", "ｌａｔ")) else "-93.2,44.9"
    prefix = "7," if header.count(",") == 2 else ""
    ds = load_file(write(tmp_path, "a.csv", f"{header}\n{prefix}{values}\n"))
    assert (ds.report.lat_column, ds.report.lon_column) == (lat_name, lon_name)
    assert ds.lat.tolist() == [44.9] and ds.lon.tolist() == [-93.2]


def test_column_override_and_unicode_headers(tmp_path) -> None:
    text = "Straße,Breitengrad,Längengrad,ünïcødé 📍\nA,44.9,-93.2,x\nB,45.0,-93.3,y\n"
    with pytest.raises(LdpvizInputError, match="Breitengrad"):   # listed among the columns seen
        load_file(write(tmp_path, "de.csv", text))
    ds = load_file(write(tmp_path, "de.csv", text), lat_column="Breitengrad", lon_column="längengrad")
    assert (ds.report.lat_column, ds.report.lon_column) == ("Breitengrad", "Längengrad")
    assert ds.lat.tolist() == [44.9, 45.0]
    # the override wins over auto-detection
    ds = load_file(write(tmp_path, "b.csv", "lat,lon,lat2,lon2\n1,2,44.9,-93.2\n"), lat_column="lat2",
                   lon_column="lon2")
    assert ds.lat.tolist() == [44.9]


def test_bom_header(tmp_path) -> None:
    path = tmp_path / "excel.csv"
    path.write_bytes(b"\xef\xbb\xbflat,lon\r\n44.9,-93.2\r\n45,-93\r\n")
    ds = load_file(path)
    assert ds.report.lat_column == "lat" and ds.n == 2 and ds.report.notes == ()


def test_cp1252_falls_back_with_note(tmp_path) -> None:
    ds = load_file(write(tmp_path, "w.csv", "Stadt,lat,lon\nMünchen,48.1,11.6\nCafé €,48.2,11.5\n", "cp1252"))
    assert ds.n == 2 and any("Windows-1252" in note for note in ds.report.notes)
    assert "Windows-1252" in ds.report.summary()


@pytest.mark.parametrize("sep", [";", "\t", "|"])
def test_other_delimiters(tmp_path, sep: str) -> None:
    text = sep.join(["name", "lat", "lon"]) + "\n" + sep.join(["a, b", "44.9", "-93.2"]) + "\n"
    ds = load_file(write(tmp_path, "s.csv", text))
    assert ds.lat.tolist() == [44.9] and ds.report.rows_kept == 1
    assert any("separated" in note for note in ds.report.notes)


def test_semicolon_with_decimal_comma(tmp_path) -> None:
    ds = load_file(write(tmp_path, "eu.csv", "Breite;lat;lon\nx;44,97;-93,26\ny;45,5;-93\n"))
    assert ds.lat.tolist() == [44.97, 45.5] and ds.lon.tolist() == [-93.26, -93.0]
    assert any("decimal comma" in note for note in ds.report.notes)


def test_parquet_round_trip(tmp_path) -> None:
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"id": np.arange(50), "latitude": rng.uniform(44.9, 45.0, 50),
                          "longitude": rng.uniform(-93.3, -93.2, 50), "who": ["x"] * 50})
    frame.loc[3, "latitude"] = np.nan
    path = tmp_path / "pts.parquet"
    frame.to_parquet(path)
    ds = load_file(path)
    keep = frame.latitude.notna().to_numpy()
    assert np.array_equal(ds.lat, frame.latitude.to_numpy()[keep])
    assert np.array_equal(ds.lon, frame.longitude.to_numpy()[keep])
    assert ds.report.dropped == {"missing coordinate": 1} and ds.report.rows_read == 50
    # from bytes with no suffix (magic bytes) and from a named upload-like object
    assert np.array_equal(load_file(path.read_bytes()).lat, ds.lat)
    upload = io.BytesIO(path.read_bytes())
    upload.name = "mine.parquet"
    from_upload = load_file(upload)
    assert from_upload.name == "upload:mine.parquet" and from_upload.key == load_file(
        path, filename="mine.parquet").key


def test_parquet_string_coordinates_pandas3(tmp_path) -> None:
    frame = pd.DataFrame({"lat": pd.array(["44.9", "x", None], dtype="string"),
                          "lon": pd.Series(["-93.2", "-93.1", "-93.0"], dtype=str)})
    path = tmp_path / "s.parquet"
    frame.to_parquet(path)
    ds = load_file(path)
    assert ds.lat.tolist() == [44.9]
    assert ds.report.dropped == {"non-numeric coordinate": 1, "missing coordinate": 1}


def test_upload_like_csv_and_gzip(tmp_path) -> None:
    upload = io.BytesIO(b"lat,lon\n44.9,-93.2\n")
    upload.name = "folder/pts.csv"
    assert load_file(upload).name == "upload:pts.csv"
    packed = gzip.compress(b"lat,lon\n44.9,-93.2\n")
    ds = load_file(packed, filename="pts.csv.gz")
    assert ds.n == 1 and any("gzip" in note for note in ds.report.notes)


# ---------------------------------------------------------------- load_file: files it refuses
@pytest.mark.parametrize("content, pattern", [
    (b"", "empty"), (b"  \n\n", "empty"), (b"\xef\xbb\xbf", "empty"),
    (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)), "binary"),
    (b"PK\x03\x04" + b"\x00" * 40, "spreadsheet"),
    (b"PAR1 this is not really parquet", "Parquet"),
    (b"44.97,-93.26\n44.98,-93.27\n", "header row"),
    (b"lat,lon\n", "no data rows"),
    (b"lat,lon\n1,44.9,-93.2\n2,45.0,-93.1\n", "2 with more fields than the header"),   # no index column guessing
    (b"name,city\nx,Paris\n", r"Columns seen: 'name', 'city'.*lat_column"),
    (b"lat,city\n1,Paris\n", "no longitude column"),
    (b"lat lon\n44.9 -93.2\n", "'lat lon'"),
    (b"lat,lon\nabc,def\n,\n", "none of the rows.*1 with a missing coordinate and 1 with a non-numeric"),
    (b"x,y\n480000,4980000\n", "projected metres"),
    (b"lat,lon\n-60,-170\n70,170\n", "6,500 km"),
])
def test_malformed_files(content: bytes, pattern: str) -> None:
    with pytest.raises(LdpvizInputError, match=pattern):
        load_file(content, filename="bad.csv")


def test_override_naming_a_missing_column(tmp_path) -> None:
    with pytest.raises(LdpvizInputError, match=r"latitude column 'Lat_deg' is not in 'p.csv'.*'lat', 'lon'"):
        load_file(write(tmp_path, "p.csv", "lat,lon\n1,2\n"), lat_column="Lat_deg")


def test_file_over_the_limit(tmp_path) -> None:
    path = write(tmp_path, "big.csv", "lat,lon\n" + "44.9,-93.2\n" * 300)
    with pytest.raises(LdpvizInputError, match=r"'big.csv' is 3.2 KB, over the 1.0 KB limit"):
        load_file(path, max_bytes=1024)
    upload = io.BytesIO(path.read_bytes())
    upload.name = "big.csv"
    with pytest.raises(LdpvizInputError, match="over the 1.0 KB limit"):
        load_file(upload, max_bytes=1024)
    with pytest.raises(LdpvizInputError, match="over the"):
        load_file(path.read_bytes(), max_bytes=1024)


def test_parquet_nested_coordinates(tmp_path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "nested.parquet"
    pq.write_table(pa.table({"lat": pa.array([[44.9], [45.0]]), "lon": [-93.2, -93.1]}), path)
    with pytest.raises(LdpvizInputError, match="nested"):
        load_file(path)
    pq.write_table(pa.table({"lat": pa.array([{"v": 44.9}]), "lon": [-93.2]}), path)
    with pytest.raises(LdpvizInputError, match="nested"):
        load_file(path)


def test_missing_path_and_bad_source(tmp_path) -> None:
    with pytest.raises(LdpvizInputError, match="no file found"):
        load_file(tmp_path / "nope.csv")
    with pytest.raises(LdpvizInputError, match="cannot read a file from a int"):
        load_file(42)


def test_labels_without_loading_match_the_loaded_labels():
    """Flows and People list datasets by label without generating them; the labels are the datasets' own."""
    for name in names():
        assert datasets.label(name) == load(name).label
