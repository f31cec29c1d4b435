"""A region chosen under LDP: the square around the coarse public map tiles many rows report with OLH.

The paid alternative to :func:`ldpviz.geo.region_choice.public_tile_region` (which reads the exact
rows and is not covered by epsilon): every row spends ``epsilon0`` once, and the guarantee adds it.
It lives with the frequency oracles because it is one (OLH over tiles); the region logic it needs
comes from :mod:`ldpviz.geo`. :func:`upload_region` is the rule an uploaded file without bounds is framed
by (issue 20.6): these paid tiles by default, the public tiles only as an explicit "not private" choice.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Callable

import numpy as np
from scipy import special

from ldpviz.errors import TooFewToFrame, require
from ldpviz.geo import quadkey
from ldpviz.geo.domain import Region, wrap_lon
from ldpviz.geo.region_choice import COARSE_LEVEL, public_tile_region, tile_extent
from ldpviz.mechanisms import base
from ldpviz.mechanisms.fo import oracles as fo



def binomial_isf(a: float, n: int, p: float) -> float:
    """The smallest whole k >= 0 with P(X > k) <= a for X ~ Binomial(n, p): ``scipy.stats.binom.isf(a, n, p)``
    (equal on every input tested), from scipy.special's binomial tail so the region step does not import
    scipy.stats (a quarter of a second at every command's start)."""
    k = special.bdtrik(1.0 - a, n, p)
    k = float(np.clip(np.ceil(k), 0, n)) if np.isfinite(k) else 0.0
    while k > 0 and special.bdtrc(k - 1, n, p) <= a:
        k -= 1
    while k < n and special.bdtrc(k, n, p) > a:
        k += 1
    return k

def private_tile_region(lon: np.ndarray, lat: np.ndarray, epsilon0: float, seed: int = 0, level: int = 6,
                        alpha: float = 0.01, name: str = "Private tiles", reporter: str = "row") -> Region:
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
    concentrate, not thinly spread rows. ``reporter`` names who sends one report per point given ("row"; "person"
    when the caller passes one point per person, as trip files do).
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
    p_star, q_star = fo.olh_support_probabilities(epsilon0, fo.olh_buckets(epsilon0))
    support_cut = binomial_isf(alpha / (side * side), lon.size, q_star)   # empty tile: Sup ~ Bin(n, q*)
    threshold = (support_cut - lon.size * q_star) / (p_star - q_star)   # the same cut on the count estimate
    many = "rows" if reporter == "row" else "people"
    # Too few to frame: even with everyone in one tile, its estimated count would be expected at n, not above the
    # cut, so a tile kept is as likely noise as people (200 people, threshold 323: a tile in Antarctica). Refused
    # before any report is counted, with the number needed, so the caller asks for a box (issue 36).
    if lon.size <= threshold:
        needed = int(math.floor(threshold)) + 1
        raise TooFewToFrame(f"the private map tiles need at least {needed:,} {many} in one tile to tell it apart "
                            f"from noise at epsilon0 = {epsilon0:g}, and there are {lon.size:,} {many} in all",
                            needed=needed, have=lon.size)
    rng = np.random.default_rng([int(seed), 0x5E610])
    reports = fo.olh_aggregate_support(counts, epsilon0, rng)
    kept = np.flatnonzero(reports.support > support_cut)
    require(kept.size > 0, f"with epsilon0 = {epsilon0:g} no map tile holds enough of the {lon.size:,} {many} to be "
                           f"told apart from noise (threshold {threshold:,.0f} {many}); give a bbox, a larger "
                           "epsilon0 or a coarser level")
    side_km = quadkey.tile_side_m(0.0, level) / 1000.0
    who = ("each row reported its" if reporter == "row" else
           f"each {reporter} reported the tile of one of their points, chosen at random, as its")
    use = (f"chosen under {epsilon0:g}-LDP: {who} Bing level-{level} map tile (about {side_km:,.0f} "
           f"km at the equator) with OLH, and the region frames the {kept.size} "
           f"{'tile' if kept.size == 1 else 'tiles'} whose estimated count exceeds {threshold:,.0f} "
           f"{'rows' if reporter == 'row' else 'people'}")
    west, south, east, north = tile_extent(kept % side, kept // side, level)
    region = Region.from_bbox(west, south, east, north, name=name)
    return Region(region.center_lon, region.center_lat, region.side_m, name, use, float(epsilon0))


#: How an upload's region is chosen when no bounds are given (``ldpviz run --csv --region-rule``).
PRIVATE_TILES = "private-tiles"
PUBLIC_TILES = "public-tiles"
REGION_RULES = (PRIVATE_TILES, PUBLIC_TILES)
#: Default LDP budget each row spends on the private-tile region (added to the mechanism's epsilon).
DEFAULT_REGION_EPSILON = 0.5
#: Tile level of the private-tile region for uploads: the same tiles as the public fit (about 156 km).
UPLOAD_TILE_LEVEL = COARSE_LEVEL
#: Chance that a tile holding no row is kept anyway (Bonferroni over all tiles), for uploads.
UPLOAD_ALPHA = 0.001


def upload_region(lon: np.ndarray, lat: np.ndarray, rule: str = PRIVATE_TILES,
                  epsilon0: float = DEFAULT_REGION_EPSILON, seed: int = 0, reporter: str = "row") -> Region:
    """The default region of an uploaded file without bounds (issue 20.6).

    ``private-tiles`` (the default): :func:`private_tile_region` at level
    :data:`UPLOAD_TILE_LEVEL`, paid with ``epsilon0`` per row, which adds to the
    mechanism's epsilon (the result states both and their sum).
    ``public-tiles``: :func:`public_tile_region`, unpaid and labelled not private.
    """
    require(rule in REGION_RULES, f"the region rule must be one of {', '.join(REGION_RULES)}, got {rule!r}")
    if rule == PUBLIC_TILES:
        region = public_tile_region(lon, lat, name="Public tiles (not private)")
        return replace(region, data_use=region.data_use + " (not private: not covered by any epsilon)")
    return private_tile_region(lon, lat, epsilon0, seed=seed, level=UPLOAD_TILE_LEVEL, alpha=UPLOAD_ALPHA,
                               name=f"Private tiles (ε0 = {float(epsilon0):g})", reporter=reporter)


def upload_frame(rule: str = PRIVATE_TILES, epsilon0: float = DEFAULT_REGION_EPSILON,
                 seed: int = 0) -> Callable[..., Region]:
    """:func:`upload_region` with its rule fixed, as ``load_file(frame=...)`` takes it (checked here, before any
    file is read). The frame takes ``reporter="person"`` when it is given one point per person (trip files)."""
    require(rule in REGION_RULES, f"the region rule must be one of {', '.join(REGION_RULES)}, got {rule!r}")
    if rule == PRIVATE_TILES:
        base.validate_epsilon(epsilon0)
    return lambda lon, lat, reporter="row": upload_region(lon, lat, rule, epsilon0, seed, reporter)
