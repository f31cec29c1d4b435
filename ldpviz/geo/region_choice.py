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

from typing import Sequence

import numpy as np

from ldpviz.geo import quadkey
from ldpviz.geo.domain import Region, lon_span, wrap_lon
from ldpviz.errors import LdpvizInputError, require

#: Bing tile level of the coarse occupancy that :func:`public_tile_region` reads (360/2^8 = 1.4 degrees).
COARSE_LEVEL = 8


def stated_region(bbox: Sequence[float], name: str = "Your bbox") -> Region:
    """The square around a box the analyst states (W, S, E, N degrees; W > E crosses 180): reads no data."""
    try:
        values = [float(v) for v in bbox]
    except (TypeError, ValueError):
        raise LdpvizInputError(f"a bbox is four numbers W, S, E, N in degrees, got {bbox!r}") from None
    require(len(values) == 4, f"a bbox is four numbers W, S, E, N in degrees, got {len(values)}")
    return Region.from_bbox(*values, name=name)


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


def region_covers(region: Region) -> str:
    """One sentence for a guarantee: what choosing this region revealed, if anything."""
    if region.epsilon_spent > 0:
        return (f"The region was {region.data_use}; together with the mechanism a row is protected at "
                f"{region.epsilon_spent:g} + epsilon (sequential composition).")
    if not region.data_use:
        return "The region was chosen without reading users' data."
    return f"Not covered by epsilon: the region was {region.data_use}."

