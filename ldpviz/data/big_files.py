"""Reading large CSV and Parquet files in chunks, in bounded memory (issue 14.3).

:func:`ldpviz.data.datasets.load_file` sends files over ``datasets.CHUNK_BYTES``
here. One chunk is held at a time (at most ``chunk_rows`` rows); the kept
coordinates accumulate as float64 (16 bytes a row). CSV is streamed through
pyarrow's CSV reader from the open file (gzip is unpacked on the fly), which
converts only the two coordinate columns; rows whose field count differs from
the header's are handled as the one-shot reader does (extra non-empty fields:
counted as malformed; short rows: kept with what they hold). The header,
delimiter and encoding are sniffed from the first 64 KB as for small files.
Parquet is read one record batch of the two coordinate columns at a time.
Every chunk reports the fraction of the file read so far, for a progress bar.
"""

from __future__ import annotations

import codecs
import csv
import gzip
import io
import os
import re
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import pandas as pd

from ldpviz.data.file_formats import PARQUET_SUFFIXES, parquet_columns, refuse_workbook, size_text, sniff_header
from ldpviz.errors import LdpvizInputError, require

SAMPLE_BYTES = 65536
#: Unpacked bytes after which a gzip's expansion ratio is checked (smaller files are cheap whatever their ratio).
GZIP_GUARD_BYTES = 256 * 2**20
#: Most a gzip may expand: coordinate CSVs pack 3-10 times; a decompression bomb packs hundreds of times.
MAX_GZIP_RATIO = 40.0


def check_unpacked(unpacked: int, packed: int, name: str) -> None:
    """Refuse a gzip that expands like a decompression bomb, while it is being unpacked (issue 22).

    Checked once ``unpacked`` passes :data:`GZIP_GUARD_BYTES`: more than
    :data:`MAX_GZIP_RATIO` unpacked bytes per packed byte read so far is refused,
    so a 47 MB file of 10 GB of zeros stops after about 256 MB, not 2 GB.
    """
    if unpacked > GZIP_GUARD_BYTES and unpacked > MAX_GZIP_RATIO * max(packed, 1):
        raise LdpvizInputError(
            f"'{name}' unpacks to more than {MAX_GZIP_RATIO:g} times its packed size ({_mib(unpacked)} from the "
            f"first {_mib(packed)}), as a decompression bomb does; if the file is genuine, unpack it yourself "
            "and load the CSV")


def _mib(n: int) -> str:
    return f"{n / 2**20:,.0f} MiB" if n >= 2**20 else f"{n / 1024:,.0f} KiB"


class GuardedGzip(io.RawIOBase):
    """A gzip stream over ``raw`` that applies :func:`check_unpacked` as it is read, and turns a corrupt
    stream (zlib.error, EOFError, BadGzipFile) into a one-line :class:`LdpvizInputError`."""

    def __init__(self, raw: Any, name: str, size: int = 0, max_rows: int | None = None) -> None:
        super().__init__()
        self._raw = raw
        self._gz = gzip.GzipFile(fileobj=raw)
        self._name = name
        self._size = size
        self._max_rows = max_rows
        self._unpacked = 0
        self._lines = 0

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        try:
            data = self._gz.read(size)
        except (OSError, EOFError, zlib.error) as exc:
            where = f" after {_mib(self._unpacked)}" if self._unpacked else ""
            raise LdpvizInputError(f"'{self._name}' looks gzip-compressed but cannot be unpacked{where} "
                                   f"({exc})") from None
        self._unpacked += len(data)
        packed = self._raw.tell()
        check_unpacked(self._unpacked, packed, self._name)
        self._lines += data.count(b"\n")
        self._check_lines(packed)
        return data

    def _check_lines(self, packed: int) -> None:
        """Refuse early when the lines unpacked so far, scaled by the share of the packed file read, pass
        ``max_rows`` (the reader's row limit) by half again: a small file of hundreds of millions of tiny rows
        stops here, after a few per cent of it, not at the row limit (issue 22: 920M rows in 125 MB)."""
        limit = self._max_rows
        if not limit or not self._size or self._lines < min(1_000_000, limit // 10) or packed < 0.02 * self._size:
            return
        projected = self._lines * self._size / max(packed, 1)
        if projected > 1.5 * limit:
            raise LdpvizInputError(
                f"'{self._name}' holds more than {limit:,} rows: {self._lines:,} lines in its first "
                f"{100 * packed / self._size:.0f}%, so about {projected:,.0f} in all; keep only the rows of the "
                "area and period you need")

    def readinto(self, buffer: Any) -> int:
        data = self.read(len(buffer))
        buffer[:len(data)] = data
        return len(data)


@dataclass
class LargeFile:
    """An open binary handle on a file too big to read at once, with its size and display name."""

    handle: Any
    size: int
    name: str
    owns: bool     #: whether we opened the handle (and close it)


def open_large(source: Any, filename: str | None, max_bytes: int, threshold: int) -> LargeFile | None:
    """A :class:`LargeFile` if ``source`` is a path or binary file over ``threshold`` bytes, else None.

    Sources over ``max_bytes`` are refused as for small files.
    """

    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        if not path.is_file():
            return None                                 # the small path gives the message
        size, name = path.stat().st_size, filename or path.name
        if size <= threshold:
            return None
        require(size <= max_bytes, f"'{name}' is {size_text(size)}, over the {size_text(max_bytes)} limit; "
                                   "keep only the rows and columns you need")
        return LargeFile(open(path, "rb"), size, name, True)
    if hasattr(source, "read") and hasattr(source, "seek") and hasattr(source, "tell"):
        try:
            start = source.tell()
            size = source.seek(0, io.SEEK_END) - start
            source.seek(start)
        except (OSError, ValueError):
            return None
        if size <= threshold:
            return None
        name = filename or Path(str(getattr(source, "name", "") or "upload")).name
        require(size <= max_bytes, f"'{name}' is {size_text(size)}, over the {size_text(max_bytes)} limit; "
                                   "keep only the rows and columns you need")
        return LargeFile(source, size, name, False)
    return None


def chunks(big: LargeFile, lat_column: str | None, lon_column: str | None, notes: list[str],
           chunk_rows: int, max_rows: int | None = None
           ) -> Iterator[tuple[pd.Series, pd.Series, str, str, int, str, float]]:
    """(lat text, lon text, lat name, lon name, malformed rows, file name, fraction read) per chunk."""

    try:
        head = big.handle.read(8)
        big.handle.seek(0)
        stem = big.name[:-3] if big.name.lower().endswith(".gz") else big.name
        suffix = Path(stem).suffix.lower()
        refuse_workbook(head, big.name, suffix)
        if head[:4] == b"PAR1" or (suffix in PARQUET_SUFFIXES and head[:2] != b"\x1f\x8b"):
            yield from _parquet_chunks(big, lat_column, lon_column, notes, chunk_rows)
        else:
            yield from _csv_chunks(big, head, lat_column, lon_column, notes, chunk_rows, max_rows)
    finally:
        if big.owns:
            big.handle.close()


def _parquet_chunks(big: LargeFile, lat_column: str | None, lon_column: str | None, notes: list[str],
                    chunk_rows: int) -> Iterator[tuple[pd.Series, pd.Series, str, str, int, str, float]]:
    import pyarrow.parquet as pq


    try:
        pf = pq.ParquetFile(big.handle)
    except Exception as exc:  # pyarrow raises several types for corrupt input
        raise LdpvizInputError(f"'{big.name}' could not be read as a Parquet file ({str(exc)[:200]}); "
                               "is it a CSV with the wrong name, or damaged?") from None
    columns, lat_i, lon_i = parquet_columns(pf.schema_arrow, big.name, lat_column, lon_column, notes)
    total = max(pf.metadata.num_rows, 1)
    done = 0
    try:
        for batch in pf.iter_batches(batch_size=chunk_rows, columns=[columns[lat_i], columns[lon_i]]):
            done += batch.num_rows
            yield (_float_or_text(batch.column(0)), _float_or_text(batch.column(1)), columns[lat_i], columns[lon_i],
                   0, big.name, done / total)
    except LdpvizInputError:
        raise
    except Exception as exc:
        raise LdpvizInputError(f"'{big.name}' could not be read as a Parquet file after {done:,} rows "
                               f"({str(exc)[:200]})") from None


def _encoding(sample: bytes, name: str, notes: list[str]) -> str:
    if sample.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return "utf-16"
    require(b"\x00" not in sample, f"'{name}' is a binary file, not CSV text or Parquet")
    cut = sample[:sample.rfind(b"\n") + 1] or sample
    try:
        cut.decode("utf-8-sig")
        return "utf-8-sig"
    except UnicodeDecodeError:
        notes.append("the file is not UTF-8; it was read as Windows-1252/Latin-1 text, so check that "
                     "accented names look right.")
        return "latin-1"


def _header_index(text: str) -> int:
    """Raw line number (blank lines counted, as pyarrow's skip_rows counts them) of the first non-blank line."""
    for i, line in enumerate(re.split(r"\r\n|\r|\n", text)):
        if line.strip():
            return i
    return 0


def _float_or_text(column: Any) -> pd.Series:
    """A column of text as floats when every entry parses (fast), else as text for the careful parser."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if not (pa.types.is_string(column.type) or pa.types.is_large_string(column.type)):
        return column.to_pandas()          # numbers, decimals, dictionaries: the careful parser as before
    try:
        return pc.cast(column, pa.float64()).to_pandas()
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return column.to_pandas()


def _csv_chunks(big: LargeFile, head: bytes, lat_column: str | None, lon_column: str | None, notes: list[str],
                chunk_rows: int, max_rows: int | None = None
                ) -> Iterator[tuple[pd.Series, pd.Series, str, str, int, str, float]]:
    """CSV through pyarrow's streaming reader, only the two coordinate columns converted (as text).

    Rows whose field count differs from the header's go to ``invalid``, which
    applies the rule of the one-shot reader: extra non-empty fields make a row
    malformed (counted); a short row, or one whose extra fields are empty, keeps
    its coordinate fields (an absent one is missing). Such rows join the chunk
    being read, so they may move within the file's order.
    """
    import pyarrow as pa
    import pyarrow.csv as pacsv


    raw = big.handle
    stream = raw
    if head[:2] == b"\x1f\x8b":
        stream = GuardedGzip(raw, big.name, big.size, max_rows)
        notes.append("the file was gzip-compressed and was unpacked.")
    start = raw.tell()
    try:
        sample = stream.read(SAMPLE_BYTES)
    except LdpvizInputError:
        raise
    except (OSError, EOFError, zlib.error) as exc:
        raise LdpvizInputError(f"'{big.name}' looks gzip-compressed but cannot be unpacked ({exc})") from None
    encoding = _encoding(sample, big.name, notes)
    text = sample.decode(encoding, errors="replace").lstrip("\ufeff")
    header_at = _header_index(text)
    header_line = re.split(r"\r\n|\r|\n", text)[header_at] if text.strip() else ""
    require(header_line.strip() != "", f"'{big.name}' is empty")
    sep, columns, lat_i, lon_i = sniff_header(header_line, big.name, lat_column, lon_column, notes)
    if stream is raw:
        raw.seek(start)
    else:
        raw.seek(0)
        stream = GuardedGzip(raw, big.name, big.size, max_rows)
    width = len(columns)
    names = [f"c{i}" for i in range(width)]
    pending: dict[str, Any] = {"lat": [], "lon": [], "malformed": 0}

    def invalid(row: Any) -> str:
        fields = next(csv.reader([row.text], delimiter=sep), [])
        if len(fields) > width and any(f.strip() for f in fields[width:]):
            pending["malformed"] += 1
        elif any(f.strip() for f in fields):
            pending["lat"].append(fields[lat_i] if lat_i < len(fields) else "")
            pending["lon"].append(fields[lon_i] if lon_i < len(fields) else "")
        return "skip"

    arrow_encoding = {"utf-8-sig": "utf8", "latin-1": "latin-1", "utf-16": "utf-16"}[encoding]
    try:
        reader = pacsv.open_csv(
            stream,
            read_options=pacsv.ReadOptions(column_names=names, skip_rows=header_at + 1, encoding=arrow_encoding,
                                           use_threads=False,
                                           block_size=max(1 << 20, min(1 << 26, chunk_rows * 16 * max(width, 2)))),
            parse_options=pacsv.ParseOptions(delimiter=sep, invalid_row_handler=invalid, newlines_in_values=True),
            convert_options=pacsv.ConvertOptions(
                column_types={names[lat_i]: pa.string(), names[lon_i]: pa.string()},
                include_columns=[names[lat_i], names[lon_i]], strings_can_be_null=False,
                quoted_strings_can_be_null=False))
    except (pa.ArrowInvalid, UnicodeDecodeError) as exc:
        raise LdpvizInputError(f"'{big.name}' could not be parsed as CSV ({str(exc)[:200]})") from None

    def flush(lat: pd.Series, lon: pd.Series) -> tuple[pd.Series, pd.Series, int]:
        malformed, pending["malformed"] = pending["malformed"], 0
        if pending["lat"]:
            lat = pd.concat([lat.astype(object), pd.Series(pending["lat"], dtype=object)], ignore_index=True)
            lon = pd.concat([lon.astype(object), pd.Series(pending["lon"], dtype=object)], ignore_index=True)
            pending["lat"], pending["lon"] = [], []
        return lat, lon, malformed

    while True:
        try:
            batch = reader.read_next_batch()
        except StopIteration:
            break
        except LdpvizInputError:
            raise
        except (pa.ArrowInvalid, UnicodeDecodeError) as exc:
            raise LdpvizInputError(f"'{big.name}' could not be parsed as CSV ({str(exc)[:200]})") from None
        for at in range(0, batch.num_rows, chunk_rows) if batch.num_rows else [0]:
            part = batch.slice(at, chunk_rows)
            lat, lon, malformed = flush(_float_or_text(part.column(0)), _float_or_text(part.column(1)))
            fraction = raw.tell() / big.size if big.size else 1.0
            yield lat, lon, columns[lat_i], columns[lon_i], malformed, big.name, min(fraction, 1.0)
    if pending["malformed"] or pending["lat"]:
        empty = pd.Series([], dtype=object)
        lat, lon, malformed = flush(empty, empty)
        yield lat, lon, columns[lat_i], columns[lon_i], malformed, big.name, 1.0
