"""A region chosen under LDP: the square around the coarse public map tiles many rows report with OLH.

The paid alternative to :func:`ldpviz.geo.region_choice.public_tile_region` (which reads the exact
rows and is not covered by epsilon): every row spends ``epsilon0`` once, and the guarantee adds it.
It lives with the frequency oracles because it is one (OLH over tiles); the region logic it needs
comes from :mod:`ldpviz.geo`.
"""

from __future__ import annotations

import numpy as np
from scipy.stats import binom

from ldpviz.errors import require
from ldpviz.geo import quadkey
from ldpviz.geo.domain import Region, wrap_lon
from ldpviz.geo.region_choice import tile_extent
from ldpviz.mechanisms import base
from ldpviz.mechanisms.fo import oracles as fo


def private_tile_region(lon: np.ndarray, lat: np.ndarray, epsilon0: float, seed: int = 0, level: int = 6,
                        alpha: float = 0.01, name: str = "Private tiles") -> Region:
    """A region chosen under epsilon0-LDP: the square around the coarse tiles many rows report.

    Each row reports its level-``level`` Bing tile (4^level tiles; level 6: about
    626 km at the equator) with OLH at ``epsilon0`` (grid paper Sec. 2.3, eq. 2-3).
    The server keeps tiles whose support count exceeds the upper ``alpha`` / 4^level
    quantile of an empty tile's, Bin(n, 1/g) (Bonferroni: any empty tile is kept
    with probability at most ``alpha``), i.e. whose unbiased count (eq. 3) clears
    the matching threshold, and returns the square around them. Simulated on the exact-in-distribution
    aggregate path (per-tile support counts), whose per-tile marginals are those
    of the phones' reports. Rows in tiles too sparse to clear the threshold fall
    outside and are counted by the run: the cut grows like sqrt(n) (about 2,200
    rows of 60,000 at epsilon0 = 1, level 6), so this frames where people
    concentrate, not thinly spread rows.
    """
    epsilon0 = base.validate_epsilon(epsilon0)
    require(1 <= int(level) <= 10, f"private tile level must be from 1 to 10, got {level!r}")
    require(0 < alpha < 1, f"alpha must be in (0, 1), got {alpha!r}")
    level = int(level)
    lon = np.asarray(lon, dtype=float)
    lat = np.asarray(lat, dtype=float)
    require(lon.size > 0, "cannot choose a region for an empty set of points")
    side = 1 << level
    tx, ty = quadkey.lonlat_to_tile_xy(wrap_lon(lon), lat, level)
    counts = np.bincount(ty * side + tx, minlength=side * side)
    rng = np.random.default_rng([int(seed), 0x5E610])
    reports = fo.olh_aggregate_support(counts, epsilon0, rng)
    p_star, q_star = fo.olh_support_probabilities(epsilon0, fo.olh_buckets(epsilon0))
    support_cut = binom.isf(alpha / (side * side), lon.size, q_star)   # empty tile: Sup ~ Bin(n, q*)
    threshold = (support_cut - lon.size * q_star) / (p_star - q_star)   # the same cut on the count estimate
    kept = np.flatnonzero(reports.support > support_cut)
    require(kept.size > 0, f"with epsilon0 = {epsilon0:g} no map tile holds enough of the {lon.size:,} rows to be "
                           f"told apart from noise (threshold {threshold:,.0f} rows); give a bbox, a larger "
                           "epsilon0 or a coarser level")
    side_km = quadkey.tile_side_m(0.0, level) / 1000.0
    use = (f"chosen under {epsilon0:g}-LDP: each row reported its Bing level-{level} map tile (about {side_km:,.0f} "
           f"km at the equator) with OLH, and the region frames the {kept.size} tiles whose estimated count "
           f"exceeds {threshold:,.0f} rows")
    west, south, east, north = tile_extent(kept % side, kept // side, level)
    region = Region.from_bbox(west, south, east, north, name=name)
    return Region(region.center_lon, region.center_lat, region.side_m, name, use, epsilon0)
