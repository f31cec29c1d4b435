"""A box to suggest when a file is too large for one region (issue 21: "a suggested box holding most rows").

A national or world file cannot be framed by one square of at most
:data:`ldpviz.geo.domain.MAX_REGION_SIDE_M` (a continent). :func:`suggest_bbox`
finds the continent-sized box of whole degrees that holds the most rows, then
shrinks it to the occupied 1-degree cells inside it. What is read: the count of
rows per 1-degree cell (about 111 km), so the box's edges are whole degrees and
no single row's position shows in them beyond its cell. A file whose rows span
fewer than :data:`MIN_CELLS_ACROSS` such cells (a city, a small trips file) is
refined in halves, to cells as fine as :data:`FINEST_CELL_DEG` (about 1.7 km),
until its rows span that many cells (issue 36: a city's suggested box was a whole
degree, ~111 km, around ~10 km of data, so its map cells were mostly empty). The
finer the cell, the closer the edges follow the rows; the box is stated as read
from the rows (not covered by epsilon) either way.

The suggestion is for the analyst who holds the file; a region the analyst then
states with ``--bbox`` (or on the Data page) is a stated region, and the rows
kept are exactly those inside it (:func:`ldpviz.data.datasets.in_bbox`), the count
:attr:`SuggestedBox.rows_inside` states. The command line and the dashboard use
the same function.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ldpviz.geo.domain import MAX_REGION_SIDE_M, Region, bounds_text, in_bbox, lon_span, wrap_lon
from ldpviz.errors import LdpvizInputError, require

#: Cell size (degrees) of the occupancy the suggestion reads.
CELL_DEG = 1.0
#: A box narrower than this many cells is refined (cells halved) down to :data:`FINEST_CELL_DEG`.
MIN_CELLS_ACROSS = 8
FINEST_CELL_DEG = 1.0 / 64
_KM_PER_DEG = 111.195          # one degree of a great circle on the mean Earth (radius 6,371 km)
_TRY_FRACTIONS = (0.95, 0.85, 0.75, 0.6, 0.45, 0.3)   # of the largest side, while the box does not fit


#: ``--bbox-from`` value of a box pasted from a suggestion, and how such a region reads in a guarantee.
FROM_SUGGESTION = "suggestion"
SUGGESTED_DATA_USE = ("the box ldpviz suggested from the file's rows (the densest continent-sized box, read from the "
                      f"count of rows per {CELL_DEG:g}-degree cell, about 111 km, or per finer cell down to "
                      f"1/{round(1 / FINEST_CELL_DEG)} degree for rows that span a few degrees or less): it depends "
                      "on the users' data and is not covered by epsilon")


@dataclass(frozen=True)
class SuggestedBox:
    """A W, S, E, N box on a grid of whole degrees, or of finer cells for a small file (W > E crosses 180), and how
    many rows lie inside it (``unit``: what a row is, "rows" or, for a trips file read one point per person,
    "people")."""

    west: float
    south: float
    east: float
    north: float
    rows_inside: int
    rows_total: int
    unit: str = "rows"

    @property
    def bbox(self) -> tuple[float, float, float, float]:
        return (self.west, self.south, self.east, self.north)

    def as_text(self) -> str:
        """``W,S,E,N`` as the command line and the Data page take it, exactly (a refined box's edges are
        multiples of 1/64 degree: six decimals)."""
        return bounds_text(self.bbox)

    def size_km(self) -> tuple[float, float]:
        """(width, height) of the box in km: its width along its middle latitude, its height north to south."""
        return box_size_km(self.bbox)

    def as_option(self) -> str:
        """``--bbox=W,S,E,N --bbox-from suggestion``: pastes as is (the ``=`` keeps a west longitude from reading as
        an option), and the second flag keeps the box's provenance: the run then states that its region was read
        from the rows (:data:`SUGGESTED_DATA_USE`), not "a box you gave" (issue 26)."""
        return f"--bbox={self.as_text()} --bbox-from {FROM_SUGGESTION}"

    def sentence(self) -> str:
        share = 100.0 * self.rows_inside / max(self.rows_total, 1)
        return (f"the densest continent-sized box, {self.as_text()} (W,S,E,N), holds {self.rows_inside:,} of the "
                f"{self.rows_total:,} {self.unit} ({share:.0f}%)")


def box_size_km(bbox: tuple[float, float, float, float]) -> tuple[float, float]:
    """(width, height) in km of a W, S, E, N box (W > E crosses 180): the width along its middle latitude."""
    west, south, east, north = (float(v) for v in bbox)
    width_deg = (float(wrap_lon(east)) - float(wrap_lon(west))) % 360.0 or 360.0
    mid = math.radians((south + north) / 2.0)
    return width_deg * _KM_PER_DEG * math.cos(mid), abs(north - south) * _KM_PER_DEG


def _occupancy(lon: np.ndarray, lat: np.ndarray) -> np.ndarray:
    rows = int(round(180 / CELL_DEG))
    cols = int(round(360 / CELL_DEG))
    i = np.clip(np.floor((lat + 90.0) / CELL_DEG).astype(np.int64), 0, rows - 1)
    j = np.floor((wrap_lon(lon) + 180.0) / CELL_DEG).astype(np.int64) % cols
    return np.bincount(i * cols + j, minlength=rows * cols).reshape(rows, cols)


def _window_counts(counts: np.ndarray, half_rows: int, width_cols: np.ndarray) -> np.ndarray:
    """Rows in the window centred on every cell: ``half_rows`` up and down, ``width_cols[i]`` wide (wrapping)."""
    rows, cols = counts.shape
    tiled = np.concatenate([counts, counts, counts], axis=1)      # longitude wraps
    table = np.zeros((rows + 1, 3 * cols + 1), dtype=np.int64)
    table[1:, 1:] = tiled.cumsum(0).cumsum(1)
    out = np.zeros_like(counts)
    for i in range(rows):
        lo, hi = max(i - half_rows, 0), min(i + half_rows + 1, rows)
        width = int(min(width_cols[i], cols))
        left = np.arange(cols) + cols - width // 2
        right = left + width
        out[i] = table[hi, right] - table[lo, right] - table[hi, left] + table[lo, left]
    return out


def _tight_box(counts: np.ndarray, i: int, j: int, half_rows: int, width: int) -> tuple[float, float, float, float]:
    """Whole-degree W, S, E, N around the occupied cells of the window centred on cell (i, j)."""
    rows, cols = counts.shape
    lo, hi = max(i - half_rows, 0), min(i + half_rows + 1, rows)
    width = min(width, cols)
    col_idx = (np.arange(width) + j - width // 2) % cols
    window = counts[lo:hi][:, col_idx]
    occupied_rows = np.flatnonzero(window.sum(1)) + lo
    occupied_cols = col_idx[np.flatnonzero(window.sum(0))]
    south = -90.0 + occupied_rows.min() * CELL_DEG
    north = -90.0 + (occupied_rows.max() + 1) * CELL_DEG
    west, east = _cell_edges(lon_span(-180.0 + (occupied_cols + 0.5) * CELL_DEG), CELL_DEG)
    return west, float(max(south, -90.0)), east, float(min(north, 90.0))


def _cell_edges(centre_span: tuple[float, float], cell: float) -> tuple[float, float]:
    """West and east edges of the cells whose centres span ``centre_span`` (west, east; west > east crosses 180),
    ``cell`` degrees wide; an east edge at 180 is written 180, not -180."""
    west_c, east_c = centre_span
    west = float(wrap_lon(west_c - cell / 2))
    east = west_c + ((east_c - west_c) % 360.0) + cell / 2
    east = float(east if east <= 180.0 else wrap_lon(east))
    return west, 180.0 if east == -180.0 else east


def _refined(lon: np.ndarray, lat: np.ndarray, box: tuple[float, float, float, float]
             ) -> tuple[float, float, float, float]:
    """``box`` shrunk to the occupied cells of the finest grid (halving from 1 degree, at most to
    :data:`FINEST_CELL_DEG`) on which the rows inside it span fewer than :data:`MIN_CELLS_ACROSS` cells at the
    previous, coarser level; ``box`` itself when its rows already span that many 1-degree cells. Every row inside
    ``box`` stays inside: the finer cells nest in the coarser ones."""
    inside = in_bbox(lon, lat, box)
    lon_in, lat_in = lon[inside], lat[inside]
    if not lon_in.size:
        return box
    cell, out = CELL_DEG, box
    while True:
        south = math.floor(float(lat_in.min()) / cell) * cell
        north = (math.floor(float(lat_in.max()) / cell) + 1) * cell
        centres = (np.unique(np.floor(wrap_lon(lon_in) / cell)) + 0.5) * cell
        west_c, east_c = lon_span(centres)
        across = max(round((north - south) / cell), round(((east_c - west_c) % 360.0) / cell) + 1)
        if cell < CELL_DEG:
            west, east = _cell_edges((west_c, east_c), cell)
            out = (west, float(max(south, -90.0)), east, float(min(north, 90.0)))
        if across >= MIN_CELLS_ACROSS or cell <= FINEST_CELL_DEG:
            return out
        cell /= 2.0


def _fits(box: tuple[float, float, float, float]) -> bool:
    try:
        Region.from_bbox(*box)
    except LdpvizInputError:
        return False
    return True


def suggest_bbox(lon: np.ndarray, lat: np.ndarray, unit: str = "rows") -> SuggestedBox:
    """The continent-sized whole-degree box holding the most rows (see the module docstring).

    Tries windows of 95%, 85%, ... of the largest region side centred on every
    occupied 1-degree cell (longitude wraps, so a box may cross 180), keeps the
    one holding the most rows, shrinks it to its occupied cells, and checks that
    :meth:`Region.from_bbox` accepts it; rows spanning fewer than :data:`MIN_CELLS_ACROSS`
    degrees are then framed on finer cells (:func:`_refined`). ``rows_inside`` counts the rows
    inside the returned box exactly as ``--bbox`` filters them.
    """
    lon = np.asarray(lon, dtype=float).ravel()
    lat = np.asarray(lat, dtype=float).ravel()
    require(lon.size == lat.size and lon.size > 0, "cannot suggest a box for an empty set of points")
    ok = np.isfinite(lon) & np.isfinite(lat) & (np.abs(lat) <= 85.0)
    require(bool(ok.any()), "no point lies between 85 degrees south and north; polar regions are not supported")
    counts = _occupancy(lon[ok], lat[ok])
    rows, cols = counts.shape
    centre_lat = -90.0 + (np.arange(rows) + 0.5) * CELL_DEG
    for fraction in _TRY_FRACTIONS:
        side_km = fraction * MAX_REGION_SIDE_M / 1000.0
        half_rows = int(math.floor(side_km / 2 / _KM_PER_DEG / CELL_DEG))
        # the widest the box may be: at its edge nearest the equator, where a degree of longitude is longest
        nearest = np.clip(np.abs(centre_lat) - half_rows * CELL_DEG, 0.0, 85.0)
        width_cols = np.floor(side_km / (_KM_PER_DEG * np.cos(np.radians(nearest))) / CELL_DEG).astype(np.int64)
        width_cols = np.maximum(width_cols, 1)
        totals = _window_counts(counts, half_rows, width_cols)
        totals[np.abs(centre_lat) > 85.0] = -1
        order = np.argsort(totals, axis=None, kind="stable")[::-1][:16]   # a few best, should one not fit
        for flat in order:
            i, j = divmod(int(flat), cols)
            if totals[i, j] <= 0:
                break
            box = _tight_box(counts, i, j, half_rows, int(width_cols[i]))
            if _fits(box):
                fine = _refined(lon, lat, box)
                box = fine if _fits(fine) else box
                inside = int(in_bbox(lon, lat, box).sum())
                return SuggestedBox(*box, rows_inside=inside, rows_total=int(lon.size), unit=unit)
    raise LdpvizInputError("no continent-sized box could be found around these points; give a bbox (W,S,E,N)")
