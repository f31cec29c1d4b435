"""Large uploads read in chunks (issue 14.3): same rows and counts as reading at once, progress, clear errors."""

import functools
import gzip
import io

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ldpviz.data import datasets
from ldpviz.errors import LdpvizInputError
from ldpviz.mechanisms.fo.private_region import upload_frame

# These tests are about reading files; the region rule (private tiles by default) is tested in test_regions.
load_file = functools.partial(datasets.load_file, frame=upload_frame("public-tiles"))

ROWS = ["lat,lon,note",
        "44.97,-93.26,good", "44.98,-93.27,good", " 44.99 , -93.28 ,spaces",
        ",-93.26,missing lat", "44.97,,missing lon", "NA,-93.2,na", "44.9,nan,nan",
        "abc,-93.2,text", "44.9,1O,typo", "inf,-93.2,infinite",
        "95,-93.2,lat high", "-90.5,-93.2,lat low", "44.9,-200,lon low", "44.9,540.01,lon high",
        "44.9,-93.2,extra,field", "44.91,186.5,wrapped", "44,97;x", "45.0,-93.3,last"]


@pytest.fixture
def chunked(monkeypatch):
    """Every file takes the chunked path."""
    monkeypatch.setattr(datasets._files, "CHUNK_BYTES", 0)


def test_chunked_csv_matches_reading_at_once(tmp_path, monkeypatch):
    """Chunks of 4 rows keep exactly the rows, counts and changes of the one-shot reader."""
    path = tmp_path / "p.csv"
    path.write_text("\n".join(ROWS[:1] + ROWS[1:] * 5 + ["44.9,-93.2,extra,field at the end"]) + "\n")
    whole = load_file(path)
    monkeypatch.setattr(datasets._files, "CHUNK_BYTES", 0)
    seen = []
    parts = load_file(path, chunk_rows=4, progress=lambda f, m: seen.append((f, m)))
    assert np.array_equal(parts.lon, whole.lon) and np.array_equal(parts.lat, whole.lat)
    assert parts.report.dropped == whole.report.dropped
    assert parts.report.changed == whole.report.changed == {"longitude wrapped": 5}
    assert parts.report.rows_read == whole.report.rows_read
    assert parts.report.dropped["malformed row"] == 6                  # the last line too
    fractions = [f for f, _ in seen]
    assert fractions[0] == 0.0 and fractions[-1] == 1.0 and fractions == sorted(fractions) and len(seen) > 5
    assert "kept" in seen[-1][1]


def test_chunked_gzip_and_file_object(tmp_path, chunked):
    body = ("lat;lon\n" + "\n".join(f"44,{i % 90:02d};-93,{i % 70:02d}" for i in range(1000)) + "\n").encode()
    packed = tmp_path / "p.csv.gz"
    packed.write_bytes(gzip.compress(body))
    ds = load_file(packed, chunk_rows=128)
    assert ds.report.rows_kept == 1000 and "decimal comma" in " ".join(ds.report.notes)
    assert sum("decimal comma" in n for n in ds.report.notes) == 2       # one note per column, not per chunk
    upload = io.BytesIO(body)
    upload.name = "up.csv"
    assert np.array_equal(load_file(upload, chunk_rows=100).lat, ds.lat)


def test_chunked_parquet_and_wrong_types(tmp_path, chunked):
    """Parquet is read batch by batch; text columns are parsed with counts; non-numeric types are refused."""
    lat = [f"{44.9 + i * 1e-4:.4f}" for i in range(500)] + ["n/a", "bad"]
    lon = [-93.2] * 500 + [-93.2, -93.2]
    path = tmp_path / "p.parquet"
    pq.write_table(pa.table({"lat": lat, "lon": lon}), path, row_group_size=100)
    ds = load_file(path, chunk_rows=64)
    assert ds.report.rows_kept == 500
    assert ds.report.dropped == {"missing coordinate": 1, "non-numeric coordinate": 1}
    when = pa.array(pd.date_range("2020-01-01", periods=3))
    pq.write_table(pa.table({"lat": when, "lon": [1.0, 2.0, 3.0]}), tmp_path / "t.parquet")
    with pytest.raises(LdpvizInputError, match="'lat' in 't.parquet' holds timestamp.*not numbers"):
        load_file(tmp_path / "t.parquet")


def test_chunked_refuses_workbooks_and_binary(tmp_path, chunked):
    (tmp_path / "w.xlsx").write_bytes(b"PK\x03\x04" + b"\x00" * 100)
    with pytest.raises(LdpvizInputError, match="spreadsheet"):
        load_file(tmp_path / "w.xlsx")
    (tmp_path / "b.csv").write_bytes(b"lat,lon\x00\x01\x02" * 10)
    with pytest.raises(LdpvizInputError, match="binary"):
        load_file(tmp_path / "b.csv")
    (tmp_path / "h.csv").write_text("a,b\n1,2\n")
    with pytest.raises(LdpvizInputError, match="no latitude or longitude column"):
        load_file(tmp_path / "h.csv")


def test_bad_last_line_after_a_full_chunk_is_counted(tmp_path, chunked):
    """pandas reports a bad last line only when it reaches the end of the file; it must still be counted."""
    good = ["44.9,-93.2"] * 4
    path = tmp_path / "m.csv"
    path.write_text("\n".join(["lat,lon"] + good + ["44.9,-93.2,x"] + good + ["44.9,-93.2,x"]) + "\n")
    rep = load_file(path, chunk_rows=4).report
    assert rep.dropped == {"malformed row": 2} and rep.rows_read == 10 and rep.rows_kept == 8


def test_streamed_gzip_bomb_stops_at_the_row_limit(tmp_path, chunked, monkeypatch):
    """A small gzip that unpacks to many rows is streamed (bounded memory) and refused past MAX_ROWS."""
    monkeypatch.setattr(datasets._files, "MAX_ROWS", 50_000)
    path = tmp_path / "bomb.csv.gz"
    path.write_bytes(gzip.compress(b"lat,lon\n" + b"44.9,-93.2\n" * 200_000))
    with pytest.raises(LdpvizInputError, match="more than 50,000 rows"):
        load_file(path, chunk_rows=10_000)
