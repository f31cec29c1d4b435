"""Malformed uploads and ``--csv`` files: a clear message, good rows kept, dropped rows counted.

Every file goes through ``datasets.load_file`` (as the upload widget does, from
a file-like object with a name) and through ``ldpviz run --csv`` (exit code 2,
exactly one line on stderr, no traceback).
"""

from __future__ import annotations

import functools
import io
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ldpviz.cli import commands as cli
from ldpviz.data import datasets
from ldpviz.errors import LdpvizInputError
from ldpviz.mechanisms.fo.private_region import upload_frame

REPO = Path(__file__).resolve().parents[2]
# These tests are about reading files; the region rule (private tiles by default) is tested in test_regions.
load_file = functools.partial(datasets.load_file, frame=upload_frame("public-tiles"))


class Upload(io.BytesIO):
    """What Streamlit's file_uploader hands over: bytes with a name and a size."""

    def __init__(self, data: bytes, name: str) -> None:
        super().__init__(data)
        self.name = name
        self.size = len(data)


def _rows(n: int = 30, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return 44.9 + 0.05 * rng.random(n), -93.3 + 0.05 * rng.random(n)


def _csv(sep: str = ",", decimal: str = ".", header: str | None = None, n: int = 30) -> str:
    lat, lon = _rows(n)
    head = header if header is not None else f"id{sep}lat{sep}lon"
    lines = [head] + [f"{i}{sep}{a:.6f}{sep}{b:.6f}".replace(".", decimal) if decimal != "." else
                      f"{i}{sep}{a:.6f}{sep}{b:.6f}" for i, (a, b) in enumerate(zip(lat, lon))]
    return "\n".join(lines) + "\n"


def _parquet(table: pa.Table) -> bytes:
    sink = io.BytesIO()
    pq.write_table(table, sink)
    return sink.getvalue()


def _xlsx_bytes() -> bytes:
    """A minimal ZIP that starts like an .xlsx workbook (PK header)."""
    sink = io.BytesIO()
    with zipfile.ZipFile(sink, "w") as z:
        z.writestr("[Content_Types].xml", "<Types/>")
        z.writestr("xl/workbook.xml", "<workbook/>")
    return sink.getvalue()


# ---------------------------------------------------------------- files that must load (good rows kept)
LOADABLE = {
    "semicolon, decimal comma (European Excel)": (_csv(";", ",").encode("cp1252"), "stops.csv", 30),
    "tab separated": (_csv("\t").encode(), "stops.tsv", 30),
    "pipe separated": (_csv("|").encode(), "stops.txt", 30),
    "Excel CSV UTF-8 with BOM and CRLF": (codecs_bom := b"\xef\xbb\xbf" + _csv().replace("\n", "\r\n").encode(),
                                          "Book1.csv", 30),
    "Excel trailing empty columns": (_csv().replace("\n", ",,,\n").replace("id,lat,lon,,,", "id,lat,lon,,,").encode(),
                                     "Book2.csv", 30),
    "Latin-1 accented header": (("Stra\u00dfe," + _csv().split("\n", 1)[0] + "\n"
                                 + "\n".join("M\u00fcnchen," + line for line in _csv().split("\n")[1:] if line)
                                 + "\n").encode("latin-1"), "latin.csv", 30),
    "full-width unicode header": (_csv(header="id,\uff4c\uff41\uff54,\uff4c\uff4f\uff4e").encode(), "fw.csv", 30),
    "gzip-compressed": (__import__("gzip").compress(_csv().encode()), "stops.csv.gz", 30),
    "UTF-16 (Excel Unicode text)": (_csv("\t").encode("utf-16"), "unicode.txt", 30),
    "parquet": (_parquet(pa.table({"lat": _rows()[0], "lon": _rows()[1]})), "stops.parquet", 30),
    "parquet with a nested column besides lat/lon": (
        _parquet(pa.table({"lat": _rows()[0], "lon": _rows()[1], "tags": [[1, 2]] * 30})), "tags.parquet", 30),
}


@pytest.mark.parametrize("case", list(LOADABLE))
def test_loadable_variants_keep_every_good_row(case: str) -> None:
    raw, name, expected = LOADABLE[case]
    data = load_file(Upload(raw, name))
    assert data.n == expected and data.report.rows_kept == expected and not data.report.dropped
    assert np.all(np.abs(data.lat - 44.92) < 0.1) and np.all(np.abs(data.lon + 93.27) < 0.1)


def test_mixed_rows_are_kept_or_counted_by_reason() -> None:
    """Good rows survive; each bad row is counted once under the first reason that applies."""
    text = ("lat,lon,note\n"
            "44.97,-93.26,ok\n"
            "44.98,-93.27,ok\n"
            ",-93.2,missing lat\n"
            "NA,-93.2,missing token\n"
            "abc,-93.2,text\n"
            "44.9,north,text lon\n"
            "1e308,-93.2,huge\n"
            "1e400,-93.2,overflows to inf\n"
            "-1e20,-93.2,huge negative\n"
            "44.9,-1e6,lon out of range\n"
            "44.95,-93.25,ok,extra,fields\n"
            "44.96,-93.24,ok\n")
    data = load_file(Upload(text.encode(), "mixed.csv"))
    r = data.report
    assert r.rows_read == 12 and r.rows_kept == 3 and data.n == 3
    assert r.dropped == {"malformed row": 1, "missing coordinate": 2, "non-numeric coordinate": 3,
                         "latitude out of range": 2, "longitude out of range": 1}
    summary = r.summary()
    assert "Kept 3 of 12 rows" in summary and "\n" not in summary


def test_unicode_header_found_when_named() -> None:
    text = ("\u0428\u0438\u0440\u043e\u0442\u0430,\u0414\u043e\u043b\u0433\u043e\u0442\u0430\n"
            "44.97,-93.26\n44.98,-93.25\n")
    with pytest.raises(LdpvizInputError, match="Columns seen"):
        load_file(Upload(text.encode(), "cyrillic.csv"))
    data = load_file(Upload(text.encode(), "cyrillic.csv"), lat_column="\u0428\u0438\u0440\u043e\u0442\u0430",
                              lon_column="\u0414\u043e\u043b\u0433\u043e\u0442\u0430")
    assert data.n == 2


# ---------------------------------------------------------------- files that must be refused clearly
REFUSED = {
    "empty file": (b"", "empty.csv", "empty"),
    "only whitespace": (b"\n\n  \r\n", "blank.csv", "empty"),
    "header only": (b"lat,lon\n", "header.csv", "no data rows"),
    "no header": (b"44.97,-93.26\n44.98,-93.25\n", "noheader.csv", "header row"),
    "wrong delimiter (colon)": (_csv().replace(",", ":").encode(), "colon.csv", "longitude column"),
    "no coordinate columns": (b"name,city\nBob,Paris\n", "people.csv", "longitude column"),
    "binary file": (bytes(np.random.default_rng(0).integers(0, 256, 4096, dtype=np.uint8)), "photo.csv", "binary"),
    "PNG image": (b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4, "map.png", "binary"),
    "xlsx workbook saved with .csv name": (_xlsx_bytes(), "Book1.csv", "spreadsheet"),
    "old .xls workbook": (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 512, "Book1.xls", "spreadsheet"),
    "all rows unusable": (b"lat,lon\nabc,def\n,\n", "bad.csv", "none of the rows"),
    "projected metres, not degrees": (b"lat,lon\n4980000,480000\n4980100,480100\n", "utm.csv", "projected metres"),
    "points on two continents": (b"lat,lon\n44.9,-93.2\n48.8,2.3\n", "world.csv", "a bbox (W,S,E,N)"),
    "parquet with nested coordinates": (
        _parquet(pa.table({"lat": [[44.9, 44.91]] * 3, "lon": [-93.2, -93.21, -93.22]})), "nested.parquet",
        "nested values"),
    "parquet with struct coordinates only": (
        _parquet(pa.table({"point": [{"lat": 44.9, "lon": -93.2}] * 3})), "struct.parquet",
        "longitude column"),
    "damaged parquet": (b"PAR1" + b"\x00garbage" * 20, "broken.parquet", "could not be read as a Parquet"),
    "truncated gzip": (__import__("gzip").compress(_csv().encode())[:40], "cut.csv.gz", "cannot be unpacked"),
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_refused_files_give_one_clear_message(case: str) -> None:
    raw, name, phrase = REFUSED[case]
    with pytest.raises(LdpvizInputError) as info:
        load_file(Upload(raw, name))
    message = str(info.value)
    assert phrase in message, message
    assert name in message or case in ("only whitespace",) or name in message
    assert "\n" not in message and len(message) < 800


def test_file_over_the_size_limit(tmp_path: Path) -> None:
    path = tmp_path / "big.csv"
    path.write_bytes(_csv(n=2000).encode())
    for source in (path, Upload(path.read_bytes(), "big.csv"), path.read_bytes()):
        with pytest.raises(LdpvizInputError, match="over the .* limit"):
            load_file(source, filename="big.csv", max_bytes=10_000)


def test_gzip_bomb_is_refused() -> None:
    bomb = __import__("gzip").compress(b"lat,lon\n" + b"44.9,-93.2\n" * 200_000)
    with pytest.raises(LdpvizInputError, match="unpacks to more than"):
        load_file(Upload(bomb, "bomb.csv.gz"), max_bytes=len(bomb) * 2)


def test_missing_path_and_wrong_source_type(tmp_path: Path) -> None:
    with pytest.raises(LdpvizInputError, match="no file found"):
        load_file(tmp_path / "nope.csv")
    with pytest.raises(LdpvizInputError):
        load_file(12345)
    with pytest.raises(LdpvizInputError):
        load_file(tmp_path / "x.csv", lat_column=3)


# ---------------------------------------------------------------- the CLI: exit 2, one line, no traceback
def _cli(tmp_path: Path, raw: bytes, name: str, capsys) -> tuple[int, str]:
    path = tmp_path / name
    path.write_bytes(raw)
    code = cli.main(["run", "--csv", str(path), "--grid", "4"])
    return code, capsys.readouterr().err


@pytest.mark.parametrize("case", list(REFUSED))
def test_cli_refuses_with_exit_2_and_one_line(case: str, tmp_path: Path, capsys) -> None:
    raw, name, phrase = REFUSED[case]
    code, err = _cli(tmp_path, raw, name, capsys)
    assert code == 2 and err.count("\n") == 1 and err.startswith("ldpviz: error:") and phrase in err, err
    assert "Traceback" not in err


def test_cli_reports_dropped_rows_and_runs(tmp_path: Path, capsys) -> None:
    raw = (_csv() + "abc,def,ghi\n").encode()
    path = tmp_path / "ok.csv"
    path.write_bytes(raw)
    assert cli.main(["run", "--csv", str(path), "--grid", "4", "--json", "--region-rule", "public-tiles"]) == 0
    captured = capsys.readouterr()
    assert "Kept 30 of 31 rows" in captured.err and '"n_users": 30' in captured.out


def test_cli_subprocess_on_binary_file(tmp_path: Path) -> None:
    """The real entry point: no traceback, exit 2, one line."""
    path = tmp_path / "blob.csv"
    path.write_bytes(bytes(np.random.default_rng(1).integers(0, 256, 2048, dtype=np.uint8)))
    env = dict(os.environ, PYTHONPATH=str(REPO))
    done = subprocess.run([sys.executable, "-m", "ldpviz", "run", "--csv", str(path)], capture_output=True,
                          text=True, env=env, timeout=120)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "binary" in done.stderr, done.stderr
