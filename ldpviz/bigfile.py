"""Reading large CSV and Parquet files in chunks, in bounded memory (issue 14.3).

:func:`ldpviz.datasets.load_file` sends files over ``datasets.CHUNK_BYTES``
here. One chunk is held at a time (at most ``chunk_rows`` rows); the kept
coordinates accumulate as float64 (16 bytes a row). CSV is streamed through
pandas' C parser from the open file (gzip is unpacked on the fly), every column
as text so that rows with more fields than the header are seen and counted as
malformed; a chunk holds at most :data:`CELLS_PER_CHUNK` cells, so wide files
take fewer rows a chunk. The header, delimiter and encoding are sniffed from
the first 64 KB as for small files. Parquet is read one record batch of the two
coordinate columns at a time with pyarrow. Every chunk reports the fraction of
the file read so far, for a progress bar.
"""

from __future__ import annotations

import codecs
import gzip
import io
import os
import re
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import pandas as pd

from ldpviz.errors import LdpvizInputError, require

SAMPLE_BYTES = 65536
#: Every CSV column is parsed as text (to see rows with extra fields), so a chunk holds at most this many cells.
CELLS_PER_CHUNK = 3_000_000
_SKIPPED = re.compile(r"Skipping line \d+")


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
    from ldpviz.datasets import _size

    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        if not path.is_file():
            return None                                 # the small path gives the message
        size, name = path.stat().st_size, filename or path.name
        if size <= threshold:
            return None
        require(size <= max_bytes, f"'{name}' is {_size(size)}, over the {_size(max_bytes)} limit; "
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
        require(size <= max_bytes, f"'{name}' is {_size(size)}, over the {_size(max_bytes)} limit; "
                                   "keep only the rows and columns you need")
        return LargeFile(source, size, name, False)
    return None


def chunks(big: LargeFile, lat_column: str | None, lon_column: str | None, notes: list[str],
           chunk_rows: int) -> Iterator[tuple[pd.Series, pd.Series, str, str, int, str, float]]:
    """(lat text, lon text, lat name, lon name, malformed rows, file name, fraction read) per chunk."""
    from ldpviz.datasets import _PARQUET_SUFFIXES, _refuse_workbook

    try:
        head = big.handle.read(8)
        big.handle.seek(0)
        stem = big.name[:-3] if big.name.lower().endswith(".gz") else big.name
        suffix = Path(stem).suffix.lower()
        _refuse_workbook(head, big.name, suffix)
        if head[:4] == b"PAR1" or (suffix in _PARQUET_SUFFIXES and head[:2] != b"\x1f\x8b"):
            yield from _parquet_chunks(big, lat_column, lon_column, notes, chunk_rows)
        else:
            yield from _csv_chunks(big, head, lat_column, lon_column, notes, chunk_rows)
    finally:
        if big.owns:
            big.handle.close()


def _parquet_chunks(big: LargeFile, lat_column: str | None, lon_column: str | None, notes: list[str],
                    chunk_rows: int) -> Iterator[tuple[pd.Series, pd.Series, str, str, int, str, float]]:
    import pyarrow.parquet as pq

    from ldpviz.datasets import _parquet_columns

    try:
        pf = pq.ParquetFile(big.handle)
    except Exception as exc:  # pyarrow raises several types for corrupt input
        raise LdpvizInputError(f"'{big.name}' could not be read as a Parquet file ({str(exc)[:200]}); "
                               "is it a CSV with the wrong name, or damaged?") from None
    columns, lat_i, lon_i = _parquet_columns(pf.schema_arrow, big.name, lat_column, lon_column, notes)
    total = max(pf.metadata.num_rows, 1)
    done = 0
    try:
        for batch in pf.iter_batches(batch_size=chunk_rows, columns=[columns[lat_i], columns[lon_i]]):
            done += batch.num_rows
            yield (batch.column(0).to_pandas(), batch.column(1).to_pandas(), columns[lat_i], columns[lon_i], 0,
                   big.name, done / total)
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


def _csv_chunks(big: LargeFile, head: bytes, lat_column: str | None, lon_column: str | None, notes: list[str],
                chunk_rows: int) -> Iterator[tuple[pd.Series, pd.Series, str, str, int, str, float]]:
    from ldpviz.datasets import _sniff

    raw = big.handle
    stream = raw
    if head[:2] == b"\x1f\x8b":
        stream = gzip.GzipFile(fileobj=raw)
        notes.append("the file was gzip-compressed and was unpacked.")
    start = raw.tell()
    try:
        sample = stream.read(SAMPLE_BYTES)
    except (OSError, EOFError) as exc:
        raise LdpvizInputError(f"'{big.name}' looks gzip-compressed but cannot be unpacked ({exc})") from None
    encoding = _encoding(sample, big.name, notes)
    text = sample.decode(encoding, errors="replace")
    header_line = next((line for line in io.StringIO(text.replace("\r", "\n")) if line.strip()), "")
    require(header_line.strip() != "", f"'{big.name}' is empty")
    sep, columns, lat_i, lon_i = _sniff(header_line.lstrip("\ufeff"), big.name, lat_column, lon_column, notes)
    if stream is raw:
        raw.seek(start)
    else:
        raw.seek(0)
        stream = gzip.GzipFile(fileobj=raw)
    rows = min(chunk_rows, max(1_000, CELLS_PER_CHUNK // max(len(columns), 1)))   # wide files: fewer rows
    reader = pd.read_csv(stream, sep=sep, header=0, dtype=str, na_filter=False, skip_blank_lines=True,
                         index_col=False, engine="c", chunksize=rows, encoding=encoding,
                         on_bad_lines="warn", encoding_errors="replace")
    while True:
        frame = None
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", pd.errors.ParserWarning)
            try:
                frame = next(reader)
            except StopIteration:
                pass
            except (pd.errors.ParserError, ValueError, UnicodeDecodeError) as exc:
                raise LdpvizInputError(f"'{big.name}' could not be parsed as CSV ({str(exc)[:200]})") from None
        malformed = sum(len(_SKIPPED.findall(str(w.message))) for w in caught)
        if frame is None:   # the parser may report the last bad lines only when it finds the end
            if malformed:
                empty = pd.Series([], dtype=str)
                yield empty, empty, columns[lat_i], columns[lon_i], malformed, big.name, 1.0
            break
        require(frame.shape[1] > max(lat_i, lon_i), f"'{big.name}' has fewer columns than its header names")
        fraction = raw.tell() / big.size if big.size else 1.0
        yield (frame.iloc[:, lat_i], frame.iloc[:, lon_i], columns[lat_i], columns[lon_i], malformed, big.name,
               fraction)
        del frame
