"""Choosing the region broadcast to phones without reading users' exact points (issue 15.1).

The region defines the grid, the domain and every plan sent to each phone, so a
region fitted to the true points (:meth:`Region.fit`) leaks the extreme users'
coordinates whatever they report: the grid paper (Sec. 2.1) and L-SRR (Sec. 3.2)
assume a public domain. Three choices, from most to least private:

* :func:`stated_region` -- a box the analyst types (W,S,E,N): no data is read.
* :func:`public_tile_region` -- the square around the public Bing map tiles at a
  coarse level (:data:`COARSE_LEVEL`, tiles of about 156 km at the equator,
  see :mod:`ldpviz.geo.quadkey`) that hold at least one row. What is looked at: the
  set of occupied coarse tiles, nothing finer. A user moving anywhere inside
  their coarse tile, or into another occupied one, cannot move the region; a
  user alone in an outer coarse tile can, by whole tiles. That residue is not
  covered by epsilon and the region says so in :attr:`Region.data_use`.
* :func:`ldpviz.mechanisms.fo.private_region.private_tile_region` -- a region spent from a stated budget: every row
  sends one epsilon0-LDP report (OLH) of its coarse tile; the server keeps the
  tiles whose estimated count clears a Bonferroni-corrected noise threshold and
  frames them. Covered by epsilon0, which adds to the mechanism's epsilon
  (sequential composition, per row).
* :meth:`Region.fit` -- the smallest square around the exact points: not
  private, kept as an explicit, labelled choice.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Callable, Sequence

import numpy as np

from ldpviz.geo import quadkey
from ldpviz.errors import LdpvizInputError, RegionTooLargeError, TooFewToFrame, require
from ldpviz.geo.domain import Region, lon_span, wrap_lon
from ldpviz.geo.region_suggestion import suggest_bbox

#: Bing tile level of the coarse occupancy that :func:`public_tile_region` reads (360/2^8 = 1.4 degrees).
COARSE_LEVEL = 8


def stated_region(bbox: Sequence[float], name: str | None = None, data_use: str = "") -> Region:
    """The region of a box the analyst states (W, S, E, N degrees; W > E crosses 180): reads no data.

    The grid covers the square around the box; the box itself is kept as
    :attr:`Region.bounds`, so only the points inside it belong to the region (the
    rows ``ldpviz run --csv --bbox`` keeps). Named "typed bounds W,S,E,N" ("suggested bounds W,S,E,N" with a
    ``data_use``) unless ``name`` is given.
    ``data_use``: how the box was read from data, if it was (a box the tool suggested from the rows).
    """
    try:
        values = [float(v) for v in bbox]
    except (TypeError, ValueError):
        raise LdpvizInputError(f"a bbox is four numbers W, S, E, N in degrees, got {bbox!r}") from None
    require(len(values) == 4, f"a bbox is four numbers W, S, E, N in degrees, got {len(values)}")
    square = Region.from_bbox(*values)
    bounds = tuple(values)
    region = replace(square, bounds=bounds, data_use=data_use)
    return replace(region, name=name or region.typed_bounds)


#: Where a region came from (:func:`origin`), from least to most dependent on the users' data: a preset of a
#: bundled data set, a box typed in (ldpviz cannot tell where it came from), the private map tiles paid with
#: epsilon0 per row (covered, added to each person's total), the box ldpviz suggested from the rows (not covered),
#: and any other region read from the rows (public tiles, fitted: not covered).
ORIGIN_PRESET, ORIGIN_TYPED, ORIGIN_PRIVATE_TILES, ORIGIN_SUGGESTION, ORIGIN_DATA = (
    "preset", "typed", "private-tiles", "suggestion", "data")
ORIGINS = (ORIGIN_PRESET, ORIGIN_TYPED, ORIGIN_PRIVATE_TILES, ORIGIN_SUGGESTION, ORIGIN_DATA)


def origin(region: Region) -> str:
    """The region's provenance, one of :data:`ORIGINS`, read from the region itself (its ``epsilon_spent``,
    ``bounds`` and ``data_use``: the one place it is kept), so every page, command, report, ledger and
    collection.json that carries the region carries where it came from."""
    if region.epsilon_spent > 0:
        return ORIGIN_PRIVATE_TILES
    if region.bounds is not None:
        return ORIGIN_SUGGESTION if region.data_use else ORIGIN_TYPED
    return ORIGIN_DATA if region.data_use else ORIGIN_PRESET


def origin_text(region: Region) -> str:
    """The region's provenance in one line, as the signed record and the pages state it."""
    kind = origin(region)
    if kind == ORIGIN_PRIVATE_TILES:
        return f"private map tiles, paid with ε0 = {region.epsilon_spent:g} per person and charged in the ledger"
    if kind == ORIGIN_SUGGESTION:
        return "the box ldpviz suggested from the file's rows: read from the data, not covered by ε"
    if kind == ORIGIN_TYPED:
        return "a box typed in: ldpviz read no users' data to choose it"
    if kind == ORIGIN_DATA:
        return f"read from the rows ({region.data_use}): not covered by ε"
    return "a preset of the data set: chosen without reading users' data"


def coarse_extent(lon: np.ndarray, lat: np.ndarray, level: int = COARSE_LEVEL) -> tuple[float, float, float, float]:
    """(west, south, east, north) of the level-``level`` Bing tiles holding at least one point.

    West > east when the occupied tiles straddle the antimeridian.
    """
    require(1 <= int(level) <= 20, f"coarse tile level must be from 1 to 20, got {level!r}")
    lon = np.asarray(lon, dtype=float)
    lat = np.asarray(lat, dtype=float)
    require(lon.size > 0, "cannot choose a region for an empty set of points")
    tx, ty = quadkey.lonlat_to_tile_xy(wrap_lon(lon), lat, int(level))
    return tile_extent(tx, ty, int(level))


def public_tile_region(lon: np.ndarray, lat: np.ndarray, level: int = COARSE_LEVEL,
                       name: str = "Public tiles") -> Region:
    """The square around the occupied coarse public tiles (see the module docstring for what is read)."""
    west, south, east, north = coarse_extent(lon, lat, level)
    side_km = quadkey.tile_side_m(0.0, int(level)) / 1000.0
    use = (f"chosen from which Bing level-{int(level)} map tiles (about {side_km:,.0f} km at the "
           f"equator, narrower towards the poles) hold at least one row, and from nothing finer; a row alone in "
           f"an outer tile can shift the region by whole tiles")
    return Region.from_bbox(west, south, east, north, name=name, data_use=use)


def tile_extent(tx: np.ndarray, ty: np.ndarray, level: int) -> tuple[float, float, float, float]:
    width = 360.0 / (1 << level)
    west, east = lon_span(np.unique(tx) * width - 180.0 + width / 2.0)
    bounds = quadkey.tile_bounds_lonlat(np.array([0, 0]), np.array([ty.min(), ty.max()]), level)
    return (float(wrap_lon(west - width / 2.0)), float(bounds[1, 1]), float(wrap_lon(east + width / 2.0)),
            float(bounds[0, 3]))


def upload_region(lon: np.ndarray, lat: np.ndarray, filename: str, bbox: Sequence[float] | None = None,
                  frame: Callable[[np.ndarray, np.ndarray], Region] | None = None,
                  bbox_data_use: str = "", unit: str = "rows") -> Region:
    """The region of an uploaded file (points or trajectories): the one rule both share.

    A stated ``bbox`` (W, S, E, N) wins and reads no data (the loader has already dropped and counted the rows
    outside it; ``bbox_data_use`` says so if the box itself was suggested from the rows). Without one,
    ``frame(lon, lat)`` chooses the region from the rows: callers pass
    :func:`ldpviz.mechanisms.fo.private_region.upload_frame` (private tiles paid with epsilon0 per row by
    default; public tiles, not private, only when asked). This layer never picks a region by itself: with
    neither, :class:`~ldpviz.errors.RegionTooLargeError` asks for a box, and a file the rule cannot frame gets
    the densest continent-sized box as its ``suggestion`` (:func:`ldpviz.geo.region_suggestion.suggest_bbox`),
    its count in ``unit`` (a trips file passes one point per person: "people").
    """
    if bbox is not None:
        return stated_region(bbox, data_use=bbox_data_use)
    if frame is None:
        raise RegionTooLargeError(f"'{filename}' needs a region: give a bbox (W,S,E,N), or a rule that chooses one "
                                  "from the rows (private map tiles paid with epsilon0 per row)")
    try:
        return frame(lon, lat)
    except RegionTooLargeError:
        raise
    except TooFewToFrame as exc:       # a clear stop before any search: the count needed, and a box (issue 36)
        try:
            suggestion = suggest_bbox(lon, lat, unit)
            hint = f" For example {suggestion.sentence()}."
        except LdpvizInputError:
            suggestion, hint = None, ""
        refused = RegionTooLargeError(f"'{filename}' is too small for the private map tiles to choose its region: "
                                      f"{str(exc).rstrip('.')}; give a bbox (W,S,E,N) of the area to study.{hint}",
                                      suggestion)
        refused.needed, refused.have = exc.needed, exc.have     # pages say the count needed before asking
        raise refused from None
    except LdpvizInputError as exc:
        try:
            suggestion = suggest_bbox(lon, lat, unit)
            hint = f" For example {suggestion.sentence()}."
        except LdpvizInputError:
            suggestion, hint = None, ""
        raise RegionTooLargeError(f"the points in '{filename}' cannot be framed by one square region: "
                                  f"{str(exc).rstrip('.')}. ldpviz works on areas up to 6,500 km across, between 85 "
                                  f"degrees south and north. Give a bbox (W,S,E,N) of one area and try again.{hint}",
                                  suggestion) from None


def region_covers(region: Region) -> str:
    """One sentence for a guarantee: what choosing this region revealed, if anything."""
    if region.epsilon_spent > 0:
        who = "person" if "each person reported" in region.data_use else "row"
        return (f"The region was {region.data_use}; that ε0 = {region.epsilon_spent:g} per {who} is a line of the "
                "ledger, which adds it to the reports in the one total it states (sequential composition).")
    if region.bounds is not None and not region.data_use:
        return (f"The region is the box you gave ({region.typed_bounds.split(' ', 2)[-1]}, W,S,E,N): ldpviz read no "
                "users' data to choose it, but cannot tell where the box came from; if it was read from the users' "
                "data (a box suggested from the rows, say), that is not covered by epsilon. The grid covers the "
                "square around it, and only rows inside the box take part.")
    if not region.data_use:
        return "The region was chosen without reading users' data."
    return f"Not covered by epsilon: the region was {region.data_use}."

