"""Reading a user's file: coordinate column detection, CSV dialect sniffing, Parquet schemas and the
size texts of refusals; shared by the in-memory loader (:mod:`ldpviz.data.datasets`) and the chunked
one (:mod:`ldpviz.data.big_files`).
"""

from __future__ import annotations

import csv
import unicodedata
from typing import Any

from ldpviz.errors import LdpvizInputError, require


LAT_NAMES = ("lat", "latitude", "y")


LON_NAMES = ("lon", "lng", "long", "longitude", "x")


PARQUET_SUFFIXES = {".parquet", ".pq", ".parq"}


DELIMITERS = (",", ";", "\t", "|")


def refuse_workbook(head: bytes, filename: str, suffix: str) -> None:
    require(suffix not in {".xlsx", ".xls", ".xlsm", ".ods"} and head[:4] != b"PK\x03\x04"
            and head[:4] != b"\xd0\xcf\x11\xe0",
            f"'{filename}' looks like a spreadsheet workbook or ZIP archive, not CSV or Parquet; save it as CSV "
            "(e.g. Excel: File > Save As > CSV UTF-8) and load that")


def size_text(n: int) -> str:
    return f"{n / 2**20:.1f} MB" if n >= 2**20 else f"{n / 2**10:.1f} KB"


def _norm(name: Any) -> str:
    return unicodedata.normalize("NFKC", str(name)).replace("\ufeff", "").strip().strip("\"'").strip().casefold()


def find_column(columns: list[str], override: str | None, candidates: tuple[str, ...]) -> int | None:
    """Index of the override column (exact, then case-insensitive) or of the first candidate name."""
    normed = [_norm(c) for c in columns]
    if override is not None:
        if override in columns:
            return columns.index(override)
        return normed.index(_norm(override)) if _norm(override) in normed else None
    return next((normed.index(c) for c in candidates if c in normed), None)


def _columns_error(columns: list[str], filename: str, lat_column: str | None, lon_column: str | None,
                   lat_i: int | None, lon_i: int | None) -> LdpvizInputError:
    seen = ", ".join(repr(c) for c in columns[:30]) + (" ..." if len(columns) > 30 else "")
    for what, override, idx in (("latitude", lat_column, lat_i), ("longitude", lon_column, lon_i)):
        if override is not None and idx is None:
            return LdpvizInputError(f"the {what} column {override!r} is not in '{filename}'; its columns are: {seen}")
    missing = " or ".join(w for w, i in (("latitude", lat_i), ("longitude", lon_i)) if i is None)
    return LdpvizInputError(
        f"no {missing} column found in '{filename}'. Columns seen: {seen}. Name the columns "
        f"lat and lon (also accepted: {', '.join(LAT_NAMES[1:])} / {', '.join(LON_NAMES[1:])}), "
        "or choose them explicitly (lat_column= and lon_column=).")


def refuse_duplicate_columns(columns: list[Any], filename: str) -> None:
    """Refuse a header naming a column twice (two ``person`` columns, two ``lat``): which one holds the data
    cannot be told, and readers silently took the first (pandas renames the second ``person.1``). Names are
    compared as the column lookup compares them (:func:`find_column`: case, surrounding spaces and quotes
    ignored), so ``person`` and ``Person`` are the same column twice; both spellings are named. Unnamed columns
    (trailing separators) are not names and may repeat."""
    spellings: dict[str, list[str]] = {}
    for c in columns:
        if key := _norm(c):
            spellings.setdefault(key, []).append(str(c).replace("\ufeff", "").strip())
    twice = [names for names in spellings.values() if len(names) > 1]
    if not twice:
        return
    differ = [names for names in twice if len(set(names)) > 1]

    def named(names: list[str]) -> str:
        forms = list(dict.fromkeys(names))
        return repr(forms[0]) + (f" (as {', '.join(map(repr, forms[:-1]))} and {forms[-1]!r})" if len(forms) > 1
                                 else "")

    raise LdpvizInputError(
        f"'{filename}' names the column{'s' if len(twice) > 1 else ''} {', '.join(named(n) for n in twice)} more "
        "than once" + ("; column names are matched ignoring case and surrounding spaces" if differ else "")
        + "; which one holds the data cannot be told: rename or remove the extra column")


def resolve_columns(columns: list[str], filename: str, lat_column: str | None, lon_column: str | None,
             notes: list[str] | None = None) -> tuple[int, int]:
    refuse_duplicate_columns(columns, filename)
    lat_i = find_column(columns, lat_column, LAT_NAMES)
    lon_i = find_column(columns, lon_column, LON_NAMES)
    if lat_i is None or lon_i is None:
        raise _columns_error(columns, filename, lat_column, lon_column, lat_i, lon_i)
    require(lat_i != lon_i, f"latitude and longitude must be different columns, both are {columns[lat_i]!r}")
    for what, override, candidates, used in (("latitude", lat_column, LAT_NAMES, lat_i),
                                             ("longitude", lon_column, LON_NAMES, lon_i)):
        matches = [c for c in columns if _norm(c) in candidates]
        if override is None and notes is not None and len(matches) > 1:
            notes.append(f"several columns could hold {what} ({', '.join(map(repr, matches))}); "
                         f"used {columns[used]!r} (column {used + 1}).")
    return lat_i, lon_i


def parquet_columns(schema: Any, filename: str, lat_column: str | None, lon_column: str | None,
                     notes: list[str]) -> tuple[list[str], int, int]:
    """Column names and coordinate indices of a Parquet schema; refuses columns that cannot hold numbers."""
    import pyarrow as pa

    columns = list(schema.names)
    lat_i, lon_i = resolve_columns(columns, filename, lat_column, lon_column, notes)
    for i in (lat_i, lon_i):
        kind = schema.field(i).type
        value_kind = kind.value_type if pa.types.is_dictionary(kind) else kind
        require(not pa.types.is_nested(value_kind),
                f"column {columns[i]!r} in '{filename}' holds nested values ({kind}), not one number per row; "
                "flatten it into separate latitude and longitude columns")
        require(pa.types.is_integer(value_kind) or pa.types.is_floating(value_kind)
                or pa.types.is_decimal(value_kind) or pa.types.is_string(value_kind)
                or pa.types.is_large_string(value_kind) or pa.types.is_null(value_kind),
                f"column {columns[i]!r} in '{filename}' holds {kind} values, not numbers; "
                "store latitude and longitude as numbers (or text holding numbers)")
    return columns, lat_i, lon_i


def sniff_header(header_line: str, filename: str, lat_column: str | None, lon_column: str | None,
           notes: list[str]) -> tuple[str, list[str], int, int]:
    """Delimiter, column names and coordinate column indices from the header line."""
    best: tuple[str, list[str]] | None = None
    for sep in DELIMITERS:   # sniff: the first delimiter whose header holds the coordinate columns
        columns = next(csv.reader([header_line], delimiter=sep))
        lat_i, lon_i = find_column(columns, lat_column, LAT_NAMES), find_column(columns, lon_column, LON_NAMES)
        if lat_i is not None and lon_i is not None:
            break
        if best is None or len(columns) > len(best[1]):
            best = (sep, columns)
    else:
        sep, columns = best
        if all(_is_number(c) for c in columns if c.strip()):
            raise LdpvizInputError(
                f"the first line of '{filename}' looks like data ({header_line.strip()[:80]!r}), not column "
                "names: the file needs a header row that names its latitude and longitude columns, e.g. lat,lon")
        resolve_columns(columns, filename, lat_column, lon_column)   # raises the right message
    lat_i, lon_i = resolve_columns(columns, filename, lat_column, lon_column, notes)
    if sep != ",":
        notes.append(f"columns are separated by {'tab' if sep == chr(9) else repr(sep)}.")
    return sep, columns, lat_i, lon_i


def _is_number(text: str) -> bool:
    try:
        float(text.strip().replace(",", "."))
        return True
    except ValueError:
        return False
