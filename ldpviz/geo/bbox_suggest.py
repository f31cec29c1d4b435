"""A box to offer when a file is too large for one region: the densest box of a given size (issue 21.1).

A national file (the US with Alaska and Hawaii, say) cannot be framed by one
square of at most :data:`ldpviz.geo.domain.MAX_REGION_SIDE_M`. :func:`suggest_bbox`
finds the W, S, E, N box about ``max_side_km`` across that holds the most rows,
on a 1-degree count grid (prefix sums, wrapping across 180 degrees), then
tightens it to the rows inside and rounds it outward to 0.1 degree so it can be
typed or pasted. The suggestion is read from the rows; the user accepts it or
types their own (the page says so).
"""

from __future__ import annotations

import math

import numpy as np

from ldpviz.geo.domain import MAX_REGION_SIDE_M, Region, in_bounds, lon_span, wrap_lon
from ldpviz.errors import LdpvizInputError, require

KM_PER_DEG_LAT = 111.2
KM_PER_DEG_LON_EQUATOR = 111.32
#: Latitudes a suggested box may reach (regions are supported to 85 degrees).
MAX_LAT = 85.0
#: Suggested boxes are rounded outward to this many degrees.
ROUND_DEG = 0.1


def suggest_bbox(lon: np.ndarray, lat: np.ndarray, max_side_km: float) -> tuple[float, float, float, float]:
    """(W, S, E, N) of the box about ``max_side_km`` across holding the most points (W > E crosses 180).

    The box is accepted by :meth:`Region.from_bbox` (its square is at most the
    largest region); ``max_side_km`` is shrunk by 10% steps until it is.
    """
    lon = wrap_lon(np.asarray(lon, dtype=float).ravel())
    lat = np.asarray(lat, dtype=float).ravel()
    require(lon.size == lat.size and lon.size > 0, "a box can only be suggested for a non-empty set of points")
    require(math.isfinite(max_side_km) and max_side_km > 0, f"max_side_km must be > 0, got {max_side_km!r}")
    keep = np.isfinite(lon) & np.isfinite(lat) & (np.abs(lat) <= MAX_LAT)
    require(bool(keep.any()), f"no point lies within {MAX_LAT:g} degrees of the equator")
    lon, lat = lon[keep], lat[keep]
    side = min(float(max_side_km), MAX_REGION_SIDE_M / 1000.0)
    for _ in range(30):
        box = _tightened(lon, lat, _densest(lon, lat, side))
        try:
            Region.from_bbox(*box)
        except LdpvizInputError:
            side *= 0.9
            continue
        return box
    raise LdpvizInputError("no box small enough for one region holds these points")  # pragma: no cover


def _densest(lon: np.ndarray, lat: np.ndarray, side_km: float) -> tuple[float, float, float, float]:
    """The 1-degree-aligned box of about ``side_km`` (height; width at its central latitude) with the most
    points (the caller checks that its square fits one region)."""
    counts, _, _ = np.histogram2d(lat, lon, bins=[180, 360], range=[[-90, 90], [-180, 180]])
    rows_cum = np.vstack([np.zeros(360), np.cumsum(counts, axis=0)])      # [row edge, col]
    n_rows = max(1, min(int(side_km / KM_PER_DEG_LAT), int(2 * MAX_LAT)))
    lowest, highest = int(90 - MAX_LAT), int(90 + MAX_LAT) - n_rows
    best = (-1.0, 0, 0, 1)
    for i0 in range(lowest, highest + 1):
        south, north = i0 - 90, i0 - 90 + n_rows
        n_cols = int(side_km / (KM_PER_DEG_LON_EQUATOR * math.cos(math.radians((south + north) / 2))))
        n_cols = max(1, min(n_cols, 359))
        band = rows_cum[i0 + n_rows] - rows_cum[i0]                           # points per column in the band
        cum = np.concatenate([[0.0], np.cumsum(np.concatenate([band, band]))])
        sums = cum[np.arange(360) + n_cols] - cum[np.arange(360)]
        j = int(np.argmax(sums))
        if sums[j] > best[0]:
            best = (float(sums[j]), i0, j, n_cols)
    _, i0, j, n_cols = best
    west = -180.0 + j
    return (float(wrap_lon(west)), float(i0 - 90), float(wrap_lon(west + n_cols)), float(i0 - 90 + n_rows))


def _tightened(lon: np.ndarray, lat: np.ndarray, box: tuple[float, float, float, float]
               ) -> tuple[float, float, float, float]:
    """The box around the points inside ``box``, rounded outward to :data:`ROUND_DEG`."""
    inside = in_bounds(lon, lat, box)
    west, east = lon_span(lon[inside])
    south, north = float(lat[inside].min()), float(lat[inside].max())
    width = (east - west) % 360.0
    w = math.floor(west / ROUND_DEG) * ROUND_DEG
    e = math.ceil((west + width) / ROUND_DEG) * ROUND_DEG
    if e - w <= 0:
        e = w + ROUND_DEG
    s = max(-90.0, math.floor(south / ROUND_DEG) * ROUND_DEG)
    n = min(90.0, math.ceil(north / ROUND_DEG) * ROUND_DEG)
    if n - s <= 0:
        n = s + ROUND_DEG
    return (round(float(wrap_lon(w)), 1), round(s, 1), round(float(wrap_lon(e)), 1), round(n, 1))
