"""Datasets: bundled real points, the papers' synthetic sets, and uploaded files.

Every dataset is a :class:`Dataset`: one lon/lat point per user plus named
square regions (``presets``) to study, the first being the whole view.

* ``minneapolis-stops`` -- 51,920 stops by the Minneapolis Police Department in
  2017 (``MplsStops`` of the carData R package, from Minneapolis Open Data),
  read from ``ldpviz/data/minneapolis_stops.parquet`` (built by
  ``data/make_minneapolis.py``; see ``data/README.md``). Nothing is downloaded.
* ``normal``, ``szipf``, ``mnormal`` -- the synthetic sets of the DAM paper
  (../shared/papers/dam-disk-area-mechanism.md, Sec. VII-A).
* ``gmm`` -- a uniform mixture of random 2-D Gaussians as in the DP heatmaps
  paper (../shared/papers/dp-heatmaps-sparse-emd.md, App. E.3).
* ``uniform`` -- uniform points, the featureless baseline.

Synthetic points live in a planar native domain (e.g. [-5, 5]^2). They are
mapped linearly onto a nominal 10 km x 10 km square centred on lon 0, lat 0
("Null Island", the GIS placeholder for "no real place"), so every dataset goes
through the same map, region and grid code. Native points outside the native
domain are redrawn (rejection sampling), so each set has exactly its documented
size; for the DAM paper's normals this affects about one point in a million.

:func:`load_file` reads a user's CSV or Parquet file, finds the coordinate
columns, drops unusable rows (counted by reason in a :class:`LoadReport`) and
raises :class:`~ldpviz.errors.LdpvizInputError` with a plain message for every
file it cannot use.
"""

from __future__ import annotations

import codecs
import csv
import functools
import gzip
import hashlib
import io
import os
import re
import unicodedata
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd

from ldpviz.domain import Region, wrap_lon
from ldpviz.errors import LdpvizInputError, clause, require

DATA_DIR = Path(__file__).resolve().parent / "data"
MINNEAPOLIS_FILE = DATA_DIR / "minneapolis_stops.parquet"

#: Side of the nominal square that synthetic data is drawn on, centred on (0, 0).
SYNTHETIC_SIDE_M = 10_000.0

LAT_NAMES = ("lat", "latitude", "y")
LON_NAMES = ("lon", "lng", "long", "longitude", "x")
_REASON_PHRASE = {
    "malformed row": "with more fields than the header",
    "missing coordinate": "with a missing coordinate",
    "non-numeric coordinate": "with a non-numeric coordinate",
    "latitude out of range": "with latitude outside [-90, 90]",
    "longitude out of range": "with longitude outside [-180, 540] (values in (180, 540] are wrapped)",
    "longitude past 180, not wrapped": "with a longitude in (180, 540], kept out because wrapping was turned off",
    "outside the bbox": "outside the bbox",
}
_CHANGE_PHRASE = {
    "longitude wrapped": "with a longitude in (180, 540] wrapped to [-180, 180] (value - 360)",
}
_MISSING_TOKENS = ["", "na", "n/a", "nan", "null", "none", "#n/a"]
_PARQUET_SUFFIXES = {".parquet", ".pq", ".parq"}
_DELIMITERS = (",", ";", "\t", "|")


# ---------------------------------------------------------------- data types
@dataclass(frozen=True)
class LoadReport:
    """What :func:`load_file` read, kept and dropped (reason -> count), and from which columns."""

    rows_read: int
    rows_kept: int
    dropped: dict[str, int]
    lat_column: str
    lon_column: str
    notes: tuple[str, ...] = ()   #: how the file was interpreted (encoding, delimiter, decimal commas)
    changed: dict[str, int] = field(default_factory=dict)   #: kept rows whose values were altered, by reason

    def summary(self) -> str:
        """One sentence for the user, followed by any notes."""
        text = (f"Kept {self.rows_kept:,} of {self.rows_read:,} rows "
                f"(latitude from '{self.lat_column}', longitude from '{self.lon_column}')")
        parts = [f"{count:,} {_REASON_PHRASE.get(reason, f'({reason})')}"
                 for reason, count in self.dropped.items() if count]
        if parts:
            listed = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
            text += f"; dropped {listed}"
        changes = [f"{count:,} {_CHANGE_PHRASE.get(reason, f'({reason})')}"
                   for reason, count in self.changed.items() if count]
        if changes:
            text += f"; changed {', '.join(changes)}"
        return " ".join([text + "."] + [f"Note: {note}" for note in self.notes])


def content_key(name: str, *parts: bytes) -> str:
    """A stable sha1 of a dataset's name and content, for caches (points and trajectories alike)."""
    h = hashlib.sha1(name.encode("utf-8"))
    h.update(b"\0")
    for part in parts:
        h.update(part)
    return h.hexdigest()


@dataclass(frozen=True, eq=False)
class Dataset:
    """Points (one per user) and the square regions worth looking at.

    ``lon`` and ``lat`` are read-only float64 arrays; ``presets`` is ordered and
    its first region is the default whole view.
    """

    name: str
    label: str
    description: str
    lon: np.ndarray
    lat: np.ndarray
    presets: dict[str, Region]
    synthetic: bool
    report: LoadReport | None = None

    def __post_init__(self) -> None:
        lon = np.array(self.lon, dtype=np.float64).reshape(-1)
        lat = np.array(self.lat, dtype=np.float64).reshape(-1)
        require(lon.shape == lat.shape, f"dataset {self.name!r}: {lon.size} longitudes but {lat.size} latitudes")
        require(bool(np.all(np.isfinite(lon)) and np.all(np.isfinite(lat))),
                f"dataset {self.name!r} has non-finite coordinates")
        require(len(self.presets) > 0, f"dataset {self.name!r} needs at least one region preset")
        lon.setflags(write=False)
        lat.setflags(write=False)
        object.__setattr__(self, "lon", lon)
        object.__setattr__(self, "lat", lat)
        object.__setattr__(self, "presets", dict(self.presets))

    @property
    def n(self) -> int:
        return int(self.lon.size)

    @property
    def default_region(self) -> Region:
        return next(iter(self.presets.values()))

    @functools.cached_property
    def key(self) -> str:
        """Stable content hash (sha1 of the name and the coordinate bytes), for caches."""
        return content_key(self.name, self.lon.tobytes(), self.lat.tobytes())


# ---------------------------------------------------------------- bundled real data
def _minneapolis(seed: int) -> Dataset:
    """2017 Minneapolis police stops; ``seed`` is ignored (real data)."""
    if not MINNEAPOLIS_FILE.is_file():
        raise FileNotFoundError(f"bundled data file {MINNEAPOLIS_FILE} is missing; rebuild it with "
                                "`python data/make_minneapolis.py` (see data/README.md)")
    frame = pd.read_parquet(MINNEAPOLIS_FILE, columns=["long", "lat"])
    presets = {r.name: r for r in (
        Region(-93.2650, 44.9710, 20_000.0, "Whole city"),
        Region(-93.2700, 44.9770, 3_000.0, "Downtown"),
        Region(-93.2800, 44.9500, 3_000.0, "Whittier and Lyndale"),
        Region(-93.2970, 45.0020, 3_000.0, "North Minneapolis"),
        Region(-93.2520, 44.9530, 3_000.0, "Phillips"),
    )}
    return Dataset(
        name="minneapolis-stops", label="Minneapolis police stops, 2017",
        description=(
            f"{len(frame):,} traffic and suspicious-person or -vehicle stops made by the Minneapolis "
            "Police Department in 2017, one point per stop (locations rounded at the source). Each stop "
            "stands for one user. Source: data set MplsStops of the carData R package (Fox & Weisberg, "
            "GPL-2 | GPL-3), taken from Minneapolis Open Data; see data/README.md. Regions: the whole "
            "city (20 km square) and four dense 3 km squares chosen from the stop density."),
        lon=frame["long"].to_numpy(np.float64), lat=frame["lat"].to_numpy(np.float64),
        presets=presets, synthetic=False)


# ---------------------------------------------------------------- synthetic data
def _square_presets() -> dict[str, Region]:
    """The whole Null Island square, its centre half and two opposite quarters."""
    whole = Region(0.0, 0.0, SYNTHETIC_SIDE_M, "Whole square")
    presets = {whole.name: whole}
    for name, u in (("Centre", 0.5), ("South-west quarter", 0.25), ("North-east quarter", 0.75)):
        lon, lat = whole.unit_to_lonlat(np.array([u, u]))
        presets[name] = Region(float(lon), float(lat), SYNTHETIC_SIDE_M / 2, name)
    return presets


def _inside(draw: Callable[[int], np.ndarray], n: int, low: float, high: float) -> np.ndarray:
    """``n`` points from ``draw`` that fall in the native square [low, high)^2, redrawing the rest."""
    parts, have = [], 0
    for _ in range(1000):
        pts = draw(n - have)
        pts = pts[np.all((pts >= low) & (pts < high), axis=1)]
        parts.append(pts)
        have += len(pts)
        if have == n:
            return np.concatenate(parts)
    raise LdpvizInputError("the generator almost never lands inside its domain; use a smaller spread")


def _correlated_normal(rng: np.random.Generator, n: int, mean: float, rho: float) -> np.ndarray:
    """Normal(mean, mean, 1, 1, rho): x = z1, y = rho z1 + sqrt(1 - rho^2) z2."""
    z = rng.standard_normal((n, 2))
    return np.column_stack([z[:, 0], rho * z[:, 0] + np.sqrt(1.0 - rho * rho) * z[:, 1]]) + mean


def _synthetic(name: str, label: str, description: str, xy: np.ndarray, low: float, high: float) -> Dataset:
    """Map native points in [low, high]^2 linearly onto the 10 km Null Island square."""
    lon, lat = _square_presets()["Whole square"].unit_to_lonlat((xy - low) / (high - low))
    scale = f"{SYNTHETIC_SIDE_M / (high - low):,.0f} m"
    return Dataset(
        name=name, label=label,
        description=(f"{description} Native domain [{low:g}, {high:g})^2, drawn on a nominal 10 km x 10 km "
                     f"square centred on lon 0, lat 0 (\"Null Island\", the GIS placeholder for no real "
                     f"place); one native unit is {scale}."),
        lon=lon, lat=lat, presets=_square_presets(), synthetic=True)


def _normal(seed: int) -> Dataset:
    """DAM paper Sec. VII-A "Normal": 300,000 points of Normal(0, 0, 1, 1, rho=0.5) in (-5, 5)^2."""
    rng = np.random.default_rng(seed)
    xy = _inside(lambda k: _correlated_normal(rng, k, 0.0, 0.5), 300_000, -5.0, 5.0)
    return _synthetic("normal", "Normal (correlated, rho 0.5)",
                      "300,000 points from a 2-D normal with means 0, variances 1 and correlation 0.5, as the "
                      "Normal set of the DAM paper (Sec. VII-A), which keeps all points in (-5, 5)^2; the "
                      "rare points outside (about 1 in 900,000) are redrawn.",
                      xy, -5.0, 5.0)


def _szipf(seed: int) -> Dataset:
    """DAM paper Sec. VII-A "SZipf": 100,000 points, each coordinate skew-Zipf on [0, 1).

    The paper gives "a CDF of (1/ln 2) / (X + 1)" on [0, 1); read as a density,
    f(x) = 1 / (ln 2 (x + 1)) integrates to 1 on [0, 1), so we take that density
    (CDF F(x) = log2(1 + x), twice as dense at 0 as at 1) with independent
    coordinates, sampled by inversion x = 2^U - 1. Nothing falls outside [0, 1).
    """
    rng = np.random.default_rng(seed)
    xy = np.exp2(rng.random((100_000, 2))) - 1.0
    return _synthetic("szipf", "Skew Zipf",
                      "100,000 points whose coordinates independently follow the skew Zipf density "
                      "1 / (ln 2 (x + 1)) on [0, 1), the SZipf set of the DAM paper (Sec. VII-A; its "
                      "\"CDF\" is read as this density). Densest in the south-west corner.",
                      xy, 0.0, 1.0)


#: MNormal components (mean on the diagonal, rho). The paper lists Normal(0, 0, 1, 1, rho)
#: for all three, but its reported range [-4.25, 6.18] x [-4.32, 6.44] needs a component
#: centred near (2, 2); we take centres (0, 0), (1, 1), (2, 2).
MNORMAL_COMPONENTS = ((0.0, 0.5), (1.0, 0.0), (2.0, -0.2))


def _mnormal(seed: int) -> Dataset:
    """DAM paper Sec. VII-A "MNormal": three 100,000-point normals with rho 0.5, 0, -0.2.

    Unit variances; centres (0, 0), (1, 1), (2, 2) (see :data:`MNORMAL_COMPONENTS`).
    Native domain [-5, 7)^2: five standard deviations beyond the outer centres.
    """
    rng = np.random.default_rng(seed)
    xy = np.concatenate([_inside(lambda k, m=m, r=r: _correlated_normal(rng, k, m, r), 100_000, -5.0, 7.0)
                         for m, r in MNORMAL_COMPONENTS])
    return _synthetic("mnormal", "Multi-centre normal",
                      "300,000 points: three 100,000-point unit-variance normals with correlations 0.5, 0 and "
                      "-0.2, the MNormal set of the DAM paper (Sec. VII-A). The paper writes all centres as "
                      "(0, 0) but reports a range reaching 6.4, so the centres are taken as (0, 0), (1, 1) "
                      "and (2, 2). The very rare points outside the native domain are redrawn.", xy, -5.0, 7.0)


def gaussian_mixture(n_points: int = 100_000, n_clusters: int = 20, cluster_std: float = 0.03,
                     seed: int = 0) -> Dataset:
    """A uniform mixture of random 2-D Gaussians on [0, 1)^2 (heatmaps paper App. E.3).

    As in the paper, each Gaussian's mean and covariance are random: means are
    uniform in [0.1, 0.9]^2; each covariance has a random orientation and axis
    standard deviations ``cluster_std`` x U(0.5, 1.5) (in units of the square's
    side). Each point picks its cluster uniformly. The paper varies the number of
    clusters (5 to 80; 20 in its first experiment, our default) to control
    sparsity. Points outside [0, 1)^2 are redrawn, so exactly ``n_points`` are
    returned. The default parameters give the registered ``gmm`` dataset.
    """
    for label, value, lo, hi in (("n_points", n_points, 1, 5_000_000), ("n_clusters", n_clusters, 1, 1000)):
        require(isinstance(value, (int, np.integer)) and not isinstance(value, bool) and lo <= value <= hi,
                f"{label} must be a whole number from {lo:,} to {hi:,}, got {value!r}")
    require(isinstance(cluster_std, (int, float, np.floating, np.integer)) and 0 < cluster_std <= 0.25,
            f"cluster_std must be in (0, 0.25] (a fraction of the square's side), got {cluster_std!r}")
    rng = np.random.default_rng(_check_seed(seed))
    means = rng.uniform(0.1, 0.9, (n_clusters, 2))
    angle = rng.uniform(0.0, np.pi, n_clusters)
    rot = np.stack([np.stack([np.cos(angle), -np.sin(angle)], -1),
                    np.stack([np.sin(angle), np.cos(angle)], -1)], -2)       # (k, 2, 2)
    shape = rot * (cluster_std * rng.uniform(0.5, 1.5, (n_clusters, 1, 2)))  # rot @ diag(std)

    def draw(k: int) -> np.ndarray:
        which = rng.integers(n_clusters, size=k)
        return means[which] + np.einsum("kij,kj->ki", shape[which], rng.standard_normal((k, 2)))

    xy = _inside(draw, int(n_points), 0.0, 1.0)
    default = (n_points, n_clusters, cluster_std) == (100_000, 20, 0.03)
    name = "gmm" if default else f"gmm:n={n_points},k={n_clusters},std={cluster_std:g}"
    return _synthetic(name, f"Gaussian mixture ({n_clusters} clusters)",
                      f"{n_points:,} points from a uniform mixture of {n_clusters} Gaussians with random means "
                      f"and covariances (spread about {cluster_std:g} of the side), as the synthetic data of the "
                      "DP heatmaps paper (App. E.3). Points falling outside the square are redrawn.",
                      xy, 0.0, 1.0)


def _uniform(seed: int) -> Dataset:
    rng = np.random.default_rng(seed)
    return _synthetic("uniform", "Uniform", "100,000 points uniform on the square: no structure to find.",
                      rng.random((100_000, 2)), 0.0, 1.0)


_BUILDERS: dict[str, Callable[[int], Dataset]] = {
    "minneapolis-stops": _minneapolis,
    "normal": _normal,
    "szipf": _szipf,
    "mnormal": _mnormal,
    "gmm": lambda seed: gaussian_mixture(seed=seed),
    "uniform": _uniform,
}


def _check_seed(seed: Any) -> int:
    require(isinstance(seed, (int, np.integer)) and not isinstance(seed, bool) and seed >= 0,
            f"seed must be a whole number >= 0, got {seed!r}")
    return int(seed)


def names() -> list[str]:
    """Registered dataset names, real data first."""
    return list(_BUILDERS)


def load(name: str, seed: int = 0) -> Dataset:
    """The registered dataset ``name`` (cached); ``seed`` drives synthetic generators only.

    ``'normal:n=5000000'`` (any synthetic set, any n up to 100M) draws that many
    points with :func:`ldpviz.synthetic.generate` (cached up to 5M points).
    """
    from ldpviz import synthetic

    sized = synthetic.parse_name(name) if isinstance(name, str) else None
    if sized is not None:
        seed = _check_seed(seed)
        if sized[1] <= 5_000_000:
            return _load_sized(sized[0], sized[1], seed)
        return synthetic.generate(sized[0], sized[1], seed)
    require(isinstance(name, str) and name in _BUILDERS,
            f"unknown dataset {name!r}; choose one of: {', '.join(_BUILDERS)} "
            "(uploaded files are read with load_file; any size of a synthetic set: e.g. 'normal:n=1000000')")
    seed = _check_seed(seed)
    return _load_cached(name, seed if name != "minneapolis-stops" else 0)


@functools.lru_cache(maxsize=4)
def _load_sized(name: str, n: int, seed: int) -> Dataset:
    from ldpviz import synthetic

    return synthetic.generate(name, n, seed)


@functools.lru_cache(maxsize=32)
def _load_cached(name: str, seed: int) -> Dataset:
    return _BUILDERS[name](seed)


def describe() -> list[dict[str, Any]]:
    """One row per registered dataset (default seed): name, label, n, synthetic, description, presets."""
    rows = []
    for name in _BUILDERS:
        ds = load(name)
        rows.append({"name": ds.name, "label": ds.label, "n": ds.n, "synthetic": ds.synthetic,
                     "description": ds.description, "presets": list(ds.presets)})
    return rows


# ---------------------------------------------------------------- user files
def load_file(source: Any, *, filename: str | None = None, lat_column: str | None = None,
              lon_column: str | None = None, max_bytes: int = 50 * 2**20,
              bbox: tuple[float, float, float, float] | None = None,
              progress: Callable[[float, str], None] | None = None, chunk_rows: int = 1_000_000,
              wrap_longitudes: bool = True) -> Dataset:
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
    (the rest are counted as "outside the bbox") and becomes the dataset's region,
    which then depends on no user's data. Without it the region is the square
    around the occupied coarse public tiles (:func:`ldpviz.regions.public_tile_region`,
    which says what it read). Files over :data:`CHUNK_BYTES` are read in chunks of
    ``chunk_rows`` rows (bounded memory; see :mod:`ldpviz.bigfile`), and
    ``progress(fraction, message)`` is called as they are read.
    """
    from ldpviz import bigfile, regions

    for label, value in (("lat_column", lat_column), ("lon_column", lon_column), ("filename", filename)):
        require(value is None or isinstance(value, str), f"{label} must be text, got {value!r}")
    require(isinstance(max_bytes, int) and max_bytes > 0,
            f"max_bytes must be a positive whole number, got {max_bytes!r}")
    require(isinstance(chunk_rows, int) and chunk_rows >= 1, f"chunk_rows must be a whole number >= 1, got {chunk_rows!r}")
    require(isinstance(wrap_longitudes, bool), f"wrap_longitudes must be True or False, got {wrap_longitudes!r}")
    stated = regions.stated_region(bbox) if bbox is not None else None
    if progress is not None:
        progress(0.0, "reading the file")
    notes: list[str] = []
    big = bigfile.open_large(source, filename, max_bytes, CHUNK_BYTES)
    if big is not None:
        filename = big.name
        chunks = bigfile.chunks(big, lat_column, lon_column, notes, chunk_rows)
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
        if progress is not None:
            progress(min(fraction, 0.99), f"read {screen.rows_read:,} rows")
    for column, count in comma.items():
        notes.append(f"{count:,} values in column '{column}' use a decimal comma "
                     "(e.g. 44,97) and were read as decimal points.")
    require(screen.rows_read > 0, f"'{filename}' has column names but no data rows")
    lon, lat = screen.result()
    changed = {"longitude wrapped": screen.wrapped} if screen.wrapped else {}
    if screen.wrapped:
        notes.append(f"{screen.wrapped:,} longitudes in (180, 540] (e.g. 188 for 172 W, as near Fiji) were "
                     "wrapped to [-180, 180] by subtracting 360.")
    dropped = {reason: count for reason, count in screen.dropped.items() if count}
    report = LoadReport(rows_read=screen.rows_read, rows_kept=int(lon.size), dropped=dropped,
                        lat_column=lat_name, lon_column=lon_name, notes=tuple(notes), changed=changed)
    if report.rows_kept == 0:
        hint = ""
        if dropped.get("latitude out of range", 0) + dropped.get("longitude out of range", 0) > 0:
            hint = (" The coordinates look like projected metres or swapped columns, not degrees; "
                    "ldpviz needs longitude and latitude in degrees (WGS 84).")
        elif dropped.get("outside the bbox", 0) > 0:
            hint = " No row lies inside the bbox; check its order (W,S,E,N) and signs."
        raise LdpvizInputError(f"none of the rows in '{filename}' has a usable coordinate. "
                               f"{report.summary()}{hint}")
    if stated is not None:
        whole = stated
    else:
        try:
            whole = regions.public_tile_region(lon, lat, name="Public tiles")
        except LdpvizInputError as exc:
            raise LdpvizInputError(f"the points in '{filename}' cannot be framed by one square region "
                                   f"({clause(exc)}); "
                                   f"ldpviz works on areas up to 6,500 km across, between 85 degrees south and "
                                   "north. Give a bbox (W,S,E,N) of one area and try again.") from None
    if progress is not None:
        progress(1.0, f"kept {report.rows_kept:,} of {report.rows_read:,} rows")
    return Dataset(name=f"upload:{filename}", label=filename,
                   description=f"Uploaded file '{filename}'. {report.summary()}",
                   lon=lon, lat=lat, presets={whole.name: whole}, synthetic=False, report=report)


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
    _refuse_workbook(raw, filename, suffix)
    read = _read_parquet if suffix in _PARQUET_SUFFIXES or raw[:4] == b"PAR1" else _read_csv
    return (*read(raw, filename, lat_column, lon_column, notes), filename, 1.0)


def _refuse_workbook(head: bytes, filename: str, suffix: str) -> None:
    require(suffix not in {".xlsx", ".xls", ".xlsm", ".ods"} and head[:4] != b"PK\x03\x04"
            and head[:4] != b"\xd0\xcf\x11\xe0",
            f"'{filename}' looks like a spreadsheet workbook or ZIP archive, not CSV or Parquet; save it as CSV "
            "(e.g. Excel: File > Save As > CSV UTF-8) and load that")


class _Screen:
    """Counts and keeps rows chunk by chunk: each dropped row counts once, under the first check it fails."""

    REASONS = ("malformed row", "missing coordinate", "non-numeric coordinate", "latitude out of range",
               "longitude out of range", "longitude past 180, not wrapped", "outside the bbox")

    def __init__(self, bbox: tuple[float, float, float, float] | None, wrap: bool = True) -> None:
        self.bbox = None if bbox is None else tuple(float(v) for v in bbox)
        self.wrap = wrap
        self.dropped = dict.fromkeys(self.REASONS, 0)
        self.rows_read = 0
        self.wrapped = 0
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
        self.wrapped += int(wrap.sum())
        self._lat.append(lat)
        self._lon.append(lon)

    def result(self) -> tuple[np.ndarray, np.ndarray]:
        lon = np.concatenate(self._lon) if self._lon else np.zeros(0)
        lat = np.concatenate(self._lat) if self._lat else np.zeros(0)
        self._lon, self._lat = [], []
        return lon, lat


def in_bbox(lon: np.ndarray, lat: np.ndarray, bbox: tuple[float, float, float, float]) -> np.ndarray:
    """Rows inside a W, S, E, N box (edges included); W > E means the box crosses 180."""
    west, south, east, north = (float(v) for v in bbox)
    west, east = float(wrap_lon(west)), float(wrap_lon(east))
    lon = wrap_lon(lon)
    in_lon = (lon >= west) & (lon <= east) if west <= east else (lon >= west) | (lon <= east)
    return in_lon & (lat >= south) & (lat <= north)


def wrap_longitudes(frame: pd.DataFrame, column: str | None = None) -> tuple[pd.DataFrame, int, int]:
    """Wrap longitudes in (180, 540] into [-180, 180]: (new frame, rows wrapped, rows still out of range).

    ``column`` defaults to the first of lon, lng, long, longitude, x (any case).
    Rows still outside [-180, 180] afterwards (below -180, above 540, or not a
    number) are counted, not dropped: the caller decides and tells the user.
    """
    require(isinstance(frame, pd.DataFrame), f"wrap_longitudes needs a DataFrame, got {type(frame).__name__}")
    columns = [str(c) for c in frame.columns]
    i = _find_column(columns, column, LON_NAMES)
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


def _size(n: int) -> str:
    return f"{n / 2**20:.1f} MB" if n >= 2**20 else f"{n / 2**10:.1f} KB"


def _read_source(source: Any, filename: str | None, max_bytes: int) -> tuple[bytes, str]:
    """The raw bytes and a display name, refusing anything over ``max_bytes``."""
    def too_big(size: int, name: str) -> LdpvizInputError:
        return LdpvizInputError(f"'{name}' is {_size(size)}, over the {_size(max_bytes)} limit; "
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
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(raw)) as fh:
            out = fh.read(max_bytes + 1)
    except (OSError, EOFError) as exc:
        raise LdpvizInputError(f"'{filename}' looks gzip-compressed but cannot be unpacked ({exc})") from None
    require(len(out) <= max_bytes, f"'{filename}' unpacks to more than the {_size(max_bytes)} limit")
    return out


def _norm(name: Any) -> str:
    return unicodedata.normalize("NFKC", str(name)).replace("\ufeff", "").strip().strip("\"'").strip().casefold()


def _find_column(columns: list[str], override: str | None, candidates: tuple[str, ...]) -> int | None:
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


def _resolve(columns: list[str], filename: str, lat_column: str | None, lon_column: str | None,
             notes: list[str] | None = None) -> tuple[int, int]:
    lat_i = _find_column(columns, lat_column, LAT_NAMES)
    lon_i = _find_column(columns, lon_column, LON_NAMES)
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


def _read_parquet(raw: bytes, filename: str, lat_column: str | None, lon_column: str | None,
                  notes: list[str]) -> tuple[pd.Series, pd.Series, str, str, int]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        schema = pq.read_schema(io.BytesIO(raw))
    except Exception as exc:  # pyarrow raises several types for corrupt input
        raise LdpvizInputError(f"'{filename}' could not be read as a Parquet file ({str(exc)[:200]}); "
                               "is it a CSV with the wrong name, or damaged?") from None
    columns, lat_i, lon_i = _parquet_columns(schema, filename, lat_column, lon_column, notes)
    try:
        table = pq.read_table(io.BytesIO(raw), columns=[columns[lat_i], columns[lon_i]])
    except Exception as exc:
        raise LdpvizInputError(f"'{filename}' could not be read as a Parquet file ({str(exc)[:200]})") from None
    lat, lon = (table.column(j).to_pandas() for j in (0, 1))
    return lat, lon, columns[lat_i], columns[lon_i], 0


def _parquet_columns(schema: Any, filename: str, lat_column: str | None, lon_column: str | None,
                     notes: list[str]) -> tuple[list[str], int, int]:
    """Column names and coordinate indices of a Parquet schema; refuses columns that cannot hold numbers."""
    import pyarrow as pa

    columns = list(schema.names)
    lat_i, lon_i = _resolve(columns, filename, lat_column, lon_column, notes)
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
    sep, columns, lat_i, lon_i = _sniff(header_line, filename, lat_column, lon_column, notes)
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


def _sniff(header_line: str, filename: str, lat_column: str | None, lon_column: str | None,
           notes: list[str]) -> tuple[str, list[str], int, int]:
    """Delimiter, column names and coordinate column indices from the header line."""
    best: tuple[str, list[str]] | None = None
    for sep in _DELIMITERS:   # sniff: the first delimiter whose header holds the coordinate columns
        columns = next(csv.reader([header_line], delimiter=sep))
        lat_i, lon_i = _find_column(columns, lat_column, LAT_NAMES), _find_column(columns, lon_column, LON_NAMES)
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
        _resolve(columns, filename, lat_column, lon_column)   # raises the right message
    lat_i, lon_i = _resolve(columns, filename, lat_column, lon_column, notes)
    if sep != ",":
        notes.append(f"columns are separated by {'tab' if sep == chr(9) else repr(sep)}.")
    return sep, columns, lat_i, lon_i


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


def _is_number(text: str) -> bool:
    try:
        float(text.strip().replace(",", "."))
        return True
    except ValueError:
        return False


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
