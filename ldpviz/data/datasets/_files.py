"""A user's CSV or Parquet file read into points: the columns found, every dropped or changed row counted by reason, big
files streamed in chunks."""

from __future__ import annotations

import codecs
import csv
import gzip
import io
import os
import re
import warnings
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd

from ldpviz.data import big_files as bigfile
from ldpviz.data.dataset_types import Dataset, LoadReport
from ldpviz.data.file_formats import (LON_NAMES, PARQUET_SUFFIXES, find_column, parquet_columns, refuse_workbook,
                                      size_text, sniff_header)
from ldpviz.errors import LdpvizInputError, RegionTooLargeError, require
from ldpviz.geo import region_choice as regions
from ldpviz.geo.domain import Region, in_bounds


_MISSING_TOKENS = ["", "na", "n/a", "nan", "null", "none", "#n/a"]


# ---------------------------------------------------------------- user files
@dataclass(frozen=True, eq=False)
class ReadPoints:
    """A file's usable rows before a region is chosen: what :func:`read_points` read, screened and counted."""

    filename: str
    lon: np.ndarray
    lat: np.ndarray
    wrapped: np.ndarray          #: per kept row: its longitude was wrapped from (180, 540]
    rows_read: int
    dropped: dict[str, int]
    lat_column: str
    lon_column: str
    notes: tuple[str, ...] = ()

    def within(self, bbox: tuple[float, float, float, float]) -> "ReadPoints":
        """Only the rows inside ``bbox`` (W, S, E, N; W > E crosses 180); the rest counted as "outside the bbox".

        The same rows and counts as reading the file with ``load_file(..., bbox=bbox)``.
        """
        require(self.dropped.get("outside the bbox", 0) == 0, "these rows were already cut to a bbox; read the "
                                                              "file again to apply another")
        inside = in_bbox(self.lon, self.lat, tuple(float(v) for v in bbox))
        dropped = {**self.dropped, "outside the bbox": int((~inside).sum())}
        return ReadPoints(self.filename, self.lon[inside], self.lat[inside], self.wrapped[inside], self.rows_read,
                          dropped, self.lat_column, self.lon_column, self.notes)

    def report(self) -> LoadReport:
        wrapped = int(self.wrapped.sum())
        notes = list(self.notes)
        if wrapped:
            notes.append(f"{wrapped:,} longitudes in (180, 540] (e.g. 188 for 172 W, as near Fiji) were "
                         "wrapped to [-180, 180] by subtracting 360.")
        return LoadReport(rows_read=self.rows_read, rows_kept=int(self.lon.size),
                          dropped={r: n for r, n in self.dropped.items() if n}, lat_column=self.lat_column,
                          lon_column=self.lon_column, notes=tuple(notes),
                          changed={"longitude wrapped": wrapped} if wrapped else {})


class NeedsBounds(RegionTooLargeError):
    """The rows were read but no default region frames them: give bounds (W, S, E, N). ``points`` holds the rows,
    so a caller (the Data page) can apply a box without reading the file again; ``suggestion`` is the densest
    continent-sized box when the rule failed (:func:`ldpviz.geo.region_suggestion.suggest_bbox`)."""

    def __init__(self, message: str, points: ReadPoints, suggestion: object = None) -> None:
        super().__init__(message, suggestion)
        self.points = points


def load_file(source: Any, *, filename: str | None = None, lat_column: str | None = None,
              lon_column: str | None = None, max_bytes: int = 50 * 2**20,
              bbox: tuple[float, float, float, float] | None = None,
              progress: Callable[[float, str], None] | None = None, chunk_rows: int = 1_000_000,
              wrap_longitudes: bool = True,
              frame: Callable[[np.ndarray, np.ndarray], Region] | None = None, bbox_data_use: str = "") -> Dataset:
    """Read points from a CSV or Parquet file (a path, bytes, or a file-like object such as an upload).

    Coordinate columns are found case-insensitively (latitude: lat, latitude, y;
    longitude: lon, lng, long, longitude, x) unless named by ``lat_column`` /
    ``lon_column``. Rows with a missing, non-numeric or out-of-range coordinate
    are dropped and counted by reason in ``Dataset.report``; longitudes in
    (180, 540] are wrapped to [-180, 180] and counted in ``report.changed`` (with
    ``wrap_longitudes=False`` they are dropped instead, counted as "longitude past 180,
    not wrapped"); all other rows are kept unchanged. CSV: the delimiter is sniffed among , ; tab |,
    a UTF-8 BOM is removed, non-UTF-8 text is read as Windows-1252/Latin-1 (with a
    note) and gzip-compressed files are unpacked. Parquet is recognised by its
    suffix or its ``PAR1`` magic bytes.

    ``bbox`` (W, S, E, N degrees; W > E crosses 180) keeps only the rows inside it
    (the rest are counted as "outside the bbox") and becomes the dataset's region
    (:func:`ldpviz.geo.region_choice.stated_region`), which then depends on no user's data unless
    ``bbox_data_use`` says how the box was read from them (a box suggested from the rows). Without it
    ``frame(lon, lat)`` chooses the region from the rows: the command line and the dashboard pass
    :func:`ldpviz.mechanisms.fo.private_region.upload_region`
    (private tiles paid with epsilon0 per row by default; public tiles, not private,
    only when asked). This layer never picks a region from the rows by itself: with
    neither, or when the rule frames nothing, :class:`NeedsBounds` is raised with the
    rows read. Files over :data:`CHUNK_BYTES` are read in chunks of ``chunk_rows`` rows
    (bounded memory; see :mod:`ldpviz.data.big_files`), and ``progress(fraction,
    message)`` is called as they are read.
    """
    if bbox is not None:
        regions.stated_region(bbox)    # a bad box is refused before the file is read
    points = read_points(source, filename=filename, lat_column=lat_column, lon_column=lon_column,
                         max_bytes=max_bytes, bbox=bbox, progress=progress, chunk_rows=chunk_rows,
                         wrap_longitudes=wrap_longitudes)
    return frame_points(points, bbox=bbox, frame=frame, progress=progress, bbox_data_use=bbox_data_use)


def read_points(source: Any, *, filename: str | None = None, lat_column: str | None = None,
                lon_column: str | None = None, max_bytes: int = 50 * 2**20,
                bbox: tuple[float, float, float, float] | None = None,
                progress: Callable[[float, str], None] | None = None, chunk_rows: int = 1_000_000,
                wrap_longitudes: bool = True) -> ReadPoints:
    """The screening half of :func:`load_file` (same arguments): the usable rows, no region yet.

    A ``bbox`` here cuts rows chunk by chunk (bounded memory for big files); :meth:`ReadPoints.within` cuts
    the same rows from points read without one.
    """
    for label, value in (("lat_column", lat_column), ("lon_column", lon_column), ("filename", filename)):
        require(value is None or isinstance(value, str), f"{label} must be text, got {value!r}")
    require(isinstance(max_bytes, int) and max_bytes > 0,
            f"max_bytes must be a positive whole number, got {max_bytes!r}")
    require(isinstance(chunk_rows, int) and chunk_rows >= 1,
            f"chunk_rows must be a whole number >= 1, got {chunk_rows!r}")
    require(isinstance(wrap_longitudes, bool), f"wrap_longitudes must be True or False, got {wrap_longitudes!r}")
    if progress is not None:
        progress(0.0, "reading the file")
    notes: list[str] = []
    big = bigfile.open_large(source, filename, max_bytes, CHUNK_BYTES)
    if big is not None:
        filename = big.name
        chunks = bigfile.chunks(big, lat_column, lon_column, notes, chunk_rows, MAX_ROWS)
    else:
        chunks = iter([_read_small(source, filename, lat_column, lon_column, max_bytes, notes)])
    screen = _Screen(bbox, wrap_longitudes)
    comma: dict[str, int] = {}
    lat_name = lon_name = ""
    for lat_raw, lon_raw, lat_name, lon_name, malformed, filename, fraction in chunks:
        lat, lat_missing, lat_bad = _to_numbers(lat_raw, lat_name, notes, comma)
        lon, lon_missing, lon_bad = _to_numbers(lon_raw, lon_name, notes, comma)
        del lat_raw, lon_raw
        screen.add(lat, lon, lat_missing | lon_missing, lat_bad | lon_bad, malformed)
        require(screen.rows_read <= MAX_ROWS, f"'{filename}' holds more than {MAX_ROWS:,} rows (or unpacks to "
                                              "them); keep only the rows of the area and period you need")
        _refuse_projected_rows(screen.rows_read, fraction, filename)
        if progress is not None:
            progress(min(fraction, 0.99), f"read {screen.rows_read:,} rows")
    for column, count in comma.items():
        notes.append(f"{count:,} values in column '{column}' use a decimal comma "
                     "(e.g. 44,97) and were read as decimal points.")
    require(screen.rows_read > 0, f"'{filename}' has column names but no data rows")
    lon, lat, wrapped = screen.result()
    return ReadPoints(str(filename), lon, lat, wrapped, screen.rows_read, dict(screen.dropped), lat_name, lon_name,
                      tuple(notes))


def frame_points(points: ReadPoints, *, bbox: tuple[float, float, float, float] | None = None,
                 frame: Callable[[np.ndarray, np.ndarray], Region] | None = None,
                 progress: Callable[[float, str], None] | None = None, bbox_data_use: str = "") -> Dataset:
    """The dataset of rows read (the framing half of :func:`load_file`): cut to ``bbox`` if given and not yet
    applied, then framed by the box or by ``frame`` (see :func:`load_file`). ``bbox_data_use`` says how the box
    was read from the rows, if it was (:func:`ldpviz.geo.region_choice.stated_region`)."""
    if bbox is not None and points.dropped.get("outside the bbox", 0) == 0:
        points = points.within(bbox)
    report = points.report()
    filename = points.filename
    if report.rows_kept == 0:
        dropped = report.dropped
        hint = ""
        if dropped.get("latitude out of range", 0) + dropped.get("longitude out of range", 0) > 0:
            hint = (" The coordinates look like projected metres or swapped columns, not degrees; "
                    "ldpviz needs longitude and latitude in degrees (WGS 84).")
        elif dropped.get("outside the bbox", 0) > 0:
            hint = " No row lies inside the bbox; check its order (W,S,E,N) and signs."
        raise LdpvizInputError(f"none of the rows in '{filename}' has a usable coordinate. "
                               f"{report.summary()}{hint}")
    if bbox is not None:
        whole = regions.upload_region(points.lon, points.lat, filename, bbox, bbox_data_use=bbox_data_use)
    else:
        try:   # the rule shared with trajectory uploads
            whole = regions.upload_region(points.lon, points.lat, filename, frame=frame)
        except RegionTooLargeError as exc:
            needs = NeedsBounds(str(exc), points, exc.suggestion)
            needs.needed = getattr(exc, "needed", 0)        # too few rows for the private tiles: how many they need
            raise needs from None
    if progress is not None:
        progress(1.0, f"kept {report.rows_kept:,} of {report.rows_read:,} rows")
    return Dataset(name=f"upload:{filename}", label=filename,
                   description=f"Uploaded file '{filename}'. {report.summary()}",
                   lon=points.lon, lat=points.lat, presets={whole.name: whole}, synthetic=False, report=report)


def _refuse_projected_rows(rows_read: int, fraction: float, filename: str) -> None:
    """Refuse a streamed file early when the rows read so far, scaled by the share of the file read, pass
    :data:`MAX_ROWS` by half again, instead of after reading them all. The reader reads ahead, so the share
    is over-stated and the projection errs low (never refuses a file within the limit); packed files are
    projected more sharply from their unpacked lines (:class:`ldpviz.data.big_files.GuardedGzip`)."""
    if 0.02 <= fraction < 1.0 and rows_read >= min(1_000_000, MAX_ROWS // 10):
        projected = rows_read / fraction
        require(projected <= 1.5 * MAX_ROWS,
                f"'{filename}' holds more than {MAX_ROWS:,} rows: {rows_read:,} in its first {100 * fraction:.0f}%, "
                f"so about {projected:,.0f} in all; keep only the rows of the area and period you need")


#: Files larger than this are read in chunks (bounded memory) instead of at once.
CHUNK_BYTES = 64 * 2**20
#: Most rows a file may hold (16 bytes each once read): guards streamed gzip bombs as max_bytes guards the rest.
MAX_ROWS = 200_000_000


def _read_small(source: Any, filename: str | None, lat_column: str | None, lon_column: str | None,
                max_bytes: int, notes: list[str]) -> tuple[pd.Series, pd.Series, str, str, int, str, float]:
    """The whole file at once: (lat, lon, their column names, malformed rows, display name, 1.0)."""
    raw, filename = _read_source(source, filename, max_bytes)
    if raw[:2] == b"\x1f\x8b":
        raw = _gunzip(raw, filename, max_bytes)
        notes.append("the file was gzip-compressed and was unpacked.")
    stem = filename[:-3] if filename.lower().endswith(".gz") else filename
    suffix = Path(stem).suffix.lower()
    require(raw.strip(b" \t\r\n\x00" + codecs.BOM_UTF8) != b"", f"'{filename}' is empty")
    refuse_workbook(raw, filename, suffix)
    read = _read_parquet if suffix in PARQUET_SUFFIXES or raw[:4] == b"PAR1" else _read_csv
    return (*read(raw, filename, lat_column, lon_column, notes), filename, 1.0)


class _Screen:
    """Counts and keeps rows chunk by chunk: each dropped row counts once, under the first check it fails."""

    REASONS = ("malformed row", "missing coordinate", "non-numeric coordinate", "latitude out of range",
               "longitude out of range", "longitude past 180, not wrapped", "outside the bbox")

    def __init__(self, bbox: tuple[float, float, float, float] | None, wrap: bool = True) -> None:
        self.bbox = None if bbox is None else tuple(float(v) for v in bbox)
        self.wrap = wrap
        self.dropped = dict.fromkeys(self.REASONS, 0)
        self.rows_read = 0
        self._wrapped: list[np.ndarray] = []
        self._lon: list[np.ndarray] = []
        self._lat: list[np.ndarray] = []

    def add(self, lat: np.ndarray, lon: np.ndarray, missing: np.ndarray, bad: np.ndarray, malformed: int) -> None:
        self.rows_read += len(lat) + malformed
        self.dropped["malformed row"] += malformed
        with np.errstate(invalid="ignore"):
            checks = {"missing coordinate": missing, "non-numeric coordinate": bad,
                      "latitude out of range": np.abs(lat) > 90,
                      "longitude out of range": (lon < -180) | (lon > 540),
                      "longitude past 180, not wrapped": (lon > 180) if not self.wrap else np.zeros(len(lon), bool)}
        keep = np.ones(len(lat), bool)
        for reason, hit in checks.items():
            self.dropped[reason] += int((hit & keep).sum())
            keep &= ~hit
        lat, lon = lat[keep], lon[keep]
        wrap = lon > 180
        if wrap.any():
            lon = np.where(wrap, lon - 360.0, lon)
        if self.bbox is not None:
            inside = in_bbox(lon, lat, self.bbox)
            self.dropped["outside the bbox"] += int((~inside).sum())
            lat, lon, wrap = lat[inside], lon[inside], wrap[inside]
        self._wrapped.append(wrap)
        self._lat.append(lat)
        self._lon.append(lon)

    def result(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        lon = np.concatenate(self._lon) if self._lon else np.zeros(0)
        lat = np.concatenate(self._lat) if self._lat else np.zeros(0)
        wrapped = np.concatenate(self._wrapped) if self._wrapped else np.zeros(0, bool)
        self._lon, self._lat, self._wrapped = [], [], []
        return lon, lat, wrapped


def in_bbox(lon: np.ndarray, lat: np.ndarray, bbox: tuple[float, float, float, float]) -> np.ndarray:
    """Rows inside a W, S, E, N box (edges included); W > E means the box crosses 180."""
    return in_bounds(lon, lat, bbox)


def wrap_longitudes(frame: pd.DataFrame, column: str | None = None) -> tuple[pd.DataFrame, int, int]:
    """Wrap longitudes in (180, 540] into [-180, 180]: (new frame, rows wrapped, rows still out of range).

    ``column`` defaults to the first of lon, lng, long, longitude, x (any case).
    Rows still outside [-180, 180] afterwards (below -180, above 540, or not a
    number) are counted, not dropped: the caller decides and tells the user.
    """
    require(isinstance(frame, pd.DataFrame), f"wrap_longitudes needs a DataFrame, got {type(frame).__name__}")
    columns = [str(c) for c in frame.columns]
    i = find_column(columns, column, LON_NAMES)
    require(i is not None, f"no longitude column found among {', '.join(map(repr, columns[:30]))}"
            + (f" (asked for {column!r})" if column else ""))
    values = pd.to_numeric(frame.iloc[:, i], errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    wrap = (values > 180) & (values <= 540)
    out = frame.copy()
    if wrap.any():
        col = frame.iloc[:, i]
        if pd.api.types.is_numeric_dtype(col.dtype):
            out.isetitem(i, np.where(wrap, values - 360.0, col.to_numpy(dtype=np.float64)))
        else:
            fixed = col.astype(object).copy()
            fixed[wrap] = values[wrap] - 360.0
            out.isetitem(i, fixed)
        values = np.where(wrap, values - 360.0, values)
    still = ~((values >= -180) & (values <= 180))
    return out, int(wrap.sum()), int(still.sum())


def _read_source(source: Any, filename: str | None, max_bytes: int) -> tuple[bytes, str]:
    """The raw bytes and a display name, refusing anything over ``max_bytes``."""
    def too_big(size: int, name: str) -> LdpvizInputError:
        return LdpvizInputError(f"'{name}' is {size_text(size)}, over the {size_text(max_bytes)} limit; "
                                "keep only the rows and columns you need")

    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        name = filename or path.name
        require(path.is_file(), f"no file found at '{path}'")
        if path.stat().st_size > max_bytes:
            raise too_big(path.stat().st_size, name)
        return path.read_bytes(), name
    if isinstance(source, (bytes, bytearray, memoryview)):
        raw, name = bytes(source), filename or "upload"
    elif hasattr(source, "read"):
        name = filename or Path(str(getattr(source, "name", "") or "upload")).name
        size = getattr(source, "size", None)
        if not isinstance(size, int) and hasattr(source, "seek") and hasattr(source, "tell"):
            try:
                size = source.seek(0, io.SEEK_END)
            except (OSError, ValueError):
                size = None
        if isinstance(size, int) and size > max_bytes:
            raise too_big(size, name)
        if hasattr(source, "seek"):
            try:
                source.seek(0)
            except (OSError, ValueError):
                pass
        raw = source.read(max_bytes + 1)
        if isinstance(raw, str):
            raw = raw.encode("utf-8")
    else:
        raise LdpvizInputError(f"cannot read a file from a {type(source).__name__}; "
                               "give a path, bytes or an open binary file")
    if len(raw) > max_bytes:
        raise too_big(len(raw), name)
    return raw, name


def _gunzip(raw: bytes, filename: str, max_bytes: int) -> bytes:
    """Unpack in pieces, refusing past ``max_bytes`` or at a bomb's expansion ratio (:func:`bigfile.check_unpacked`)
    before the whole output is held."""
    packed = io.BytesIO(raw)
    parts: list[bytes] = []
    unpacked = 0
    try:
        with gzip.GzipFile(fileobj=packed) as fh:
            while unpacked <= max_bytes:
                part = fh.read(min(16 * 2**20, max_bytes + 1 - unpacked))
                if not part:
                    break
                parts.append(part)
                unpacked += len(part)
                bigfile.check_unpacked(unpacked, packed.tell(), filename)
    except (OSError, EOFError, zlib.error) as exc:
        raise LdpvizInputError(f"'{filename}' looks gzip-compressed but cannot be unpacked ({exc})") from None
    require(unpacked <= max_bytes, f"'{filename}' unpacks to more than the {size_text(max_bytes)} limit")
    return b"".join(parts)


def _read_parquet(raw: bytes, filename: str, lat_column: str | None, lon_column: str | None,
                  notes: list[str]) -> tuple[pd.Series, pd.Series, str, str, int]:
    import pyarrow.parquet as pq

    try:
        schema = pq.read_schema(io.BytesIO(raw))
    except Exception as exc:  # pyarrow raises several types for corrupt input
        raise LdpvizInputError(f"'{filename}' could not be read as a Parquet file ({str(exc)[:200]}); "
                               "is it a CSV with the wrong name, or damaged?") from None
    columns, lat_i, lon_i = parquet_columns(schema, filename, lat_column, lon_column, notes)
    try:
        table = pq.read_table(io.BytesIO(raw), columns=[columns[lat_i], columns[lon_i]])
    except Exception as exc:
        raise LdpvizInputError(f"'{filename}' could not be read as a Parquet file ({str(exc)[:200]})") from None
    lat, lon = (table.column(j).to_pandas() for j in (0, 1))
    return lat, lon, columns[lat_i], columns[lon_i], 0


def _decode(raw: bytes, filename: str, notes: list[str]) -> str:
    if raw.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return raw.decode("utf-16")
    require(b"\x00" not in raw[:65536], f"'{filename}' is a binary file, not CSV text or Parquet")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        pass
    try:
        text = raw.decode("cp1252")
    except UnicodeDecodeError:
        text = raw.decode("latin-1")
    notes.append("the file is not UTF-8; it was read as Windows-1252/Latin-1 text, so check that "
                 "accented names look right.")
    return text


def _read_csv(raw: bytes, filename: str, lat_column: str | None, lon_column: str | None,
              notes: list[str]) -> tuple[pd.Series, pd.Series, str, str, int]:
    text = _decode(raw, filename, notes).replace("\r\n", "\n").replace("\r", "\n")
    sample = text[:65536]
    controls = sum(ch < " " and ch not in "\t\r\n" for ch in sample)
    require(controls <= len(sample) // 100, f"'{filename}' is a binary file, not CSV text or Parquet")
    header_line = next((line for line in io.StringIO(text) if line.strip()), "")
    sep, columns, lat_i, lon_i = sniff_header(header_line, filename, lat_column, lon_column, notes)
    try:   # fast path: pandas' C parser; any row longer than the header sends us to the slow path
        with warnings.catch_warnings():
            warnings.simplefilter("error", pd.errors.ParserWarning)
            frame = pd.read_csv(io.StringIO(text), sep=sep, header=0, dtype=str, na_filter=False,
                                skip_blank_lines=True, index_col=False, engine="c")
        if frame.shape[1] == len(columns):
            return frame.iloc[:, lat_i], frame.iloc[:, lon_i], columns[lat_i], columns[lon_i], 0
    except (pd.errors.ParserError, pd.errors.ParserWarning, ValueError, csv.Error):
        pass
    return _csv_rows(text, sep, columns, lat_i, lon_i, filename)


def _csv_rows(text: str, sep: str, columns: list[str], lat_i: int, lon_i: int,
              filename: str) -> tuple[pd.Series, pd.Series, str, str, int]:
    """Row-by-row reading that counts rows with extra fields (shifted data) instead of failing."""
    width, lat_values, lon_values, malformed = len(columns), [], [], 0
    reader = csv.reader(io.StringIO(text), delimiter=sep)
    try:
        for row in reader:
            if row and any(f.strip() for f in row):
                break                                   # the header, already parsed
        for row in reader:
            if not row or (len(row) == 1 and not row[0].strip()):
                continue                                # blank line (a row of empty fields is a row)
            if len(row) > width and any(f.strip() for f in row[width:]):
                malformed += 1                          # extra fields: the row is shifted
                continue
            lat_values.append(row[lat_i] if lat_i < len(row) else "")
            lon_values.append(row[lon_i] if lon_i < len(row) else "")
    except csv.Error as exc:
        raise LdpvizInputError(f"'{filename}' could not be parsed as CSV near line {reader.line_num} ({exc})") from None
    return (pd.Series(lat_values, dtype="string"), pd.Series(lon_values, dtype="string"),
            columns[lat_i], columns[lon_i], malformed)


_DECIMAL_COMMA = re.compile(r"[+-]?\d+,\d+")


def _to_numbers(values: pd.Series, column: str, notes: list[str],
                comma_counts: dict[str, int] | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Floats plus masks of missing and non-numeric entries (non-finite counts as non-numeric).

    Decimal commas are noted in ``notes``, or counted in ``comma_counts`` per column when given.
    """
    if pd.api.types.is_bool_dtype(values.dtype):
        return np.full(len(values), np.nan), np.zeros(len(values), bool), np.ones(len(values), bool)
    if pd.api.types.is_numeric_dtype(values.dtype):
        out = values.to_numpy(dtype=np.float64, na_value=np.nan)
        missing = np.isnan(out)
        return out, missing, ~missing & ~np.isfinite(out)
    text = values.astype("string").str.strip()
    out = pd.to_numeric(text, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    missing = np.zeros(len(out), bool)
    failed = np.isnan(out)
    if failed.any():   # classify only the entries that did not parse
        sub = text[failed]
        missing[failed] = (sub.isna() | sub.str.casefold().isin(_MISSING_TOKENS)).to_numpy(dtype=bool)
        failed &= ~missing
    comma = np.zeros(len(out), bool)
    if failed.any():
        comma[failed] = text[failed].str.fullmatch(_DECIMAL_COMMA).fillna(False).to_numpy(dtype=bool)
    if comma.any():
        out[comma] = pd.to_numeric(text[comma].str.replace(",", ".", regex=False)).to_numpy(np.float64)
        if comma_counts is not None:
            comma_counts[column] = comma_counts.get(column, 0) + int(comma.sum())
            return out, missing, ~missing & ~np.isfinite(out)
        notes.append(f"{int(comma.sum()):,} values in column '{column}' use a decimal comma "
                     "(e.g. 44,97) and were read as decimal points.")
    return out, missing, ~missing & ~np.isfinite(out)
