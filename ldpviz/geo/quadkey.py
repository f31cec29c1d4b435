"""Hierarchical location encoding on the Bing Maps tile system (L-SRR Sec. 3.2).

The Bing tile system (Web Mercator, https://learn.microsoft.com/bingmaps/articles/bing-maps-tile-system)
splits the world into ``4^h`` square tiles at level ``h``. A tile's *quadkey*
is the string of its ``h`` base-4 digits from the root down; digit ``i`` is
``2 * ybit + xbit`` of the tile coordinates at that level (y counted from the
north). The L-SRR paper (Sec. 3.2, Fig. 3) encodes a location as the ``2h``-bit
string of those digits; the closeness of two locations is the length, in bits,
of the longest common prefix (LCP) of their strings.

Codes are held as ``int64`` integers whose binary expansion, left-padded to
``2h`` bits, is the bit string (so ``h`` <= 31). Example 3.1 of the paper, New
York (40.730610, -73.935242) at h = 23, is the quadkey
``03201011013231222333333`` = 0xe1147b6afff (the paper prints its first ten hex
digits, "e1147b6aff").

The same interleaving applied to the ``(row, col)`` of a uniform grid gives the
quadtree (Morton) code used when the SRR domain is the evaluation grid itself.
"""

from __future__ import annotations

import math

import numpy as np

#: Bing's Earth radius and latitude clamp (Web Mercator).
EARTH_RADIUS_M = 6_378_137.0
MIN_LATITUDE = -85.05112878
MAX_LATITUDE = 85.05112878
MAX_LEVEL = 31
TILE_PIXELS = 256


def _check_level(level: int) -> int:
    level = int(level)
    if not 1 <= level <= MAX_LEVEL:
        raise ValueError(f"quadkey level must be in [1, {MAX_LEVEL}], got {level}")
    return level


def tile_side_m(latitude: float, level: int) -> float:
    """Ground side of a level-``level`` tile at ``latitude`` (metres, Bing ground resolution x 256)."""
    lat = min(max(latitude, MIN_LATITUDE), MAX_LATITUDE)
    return math.cos(math.radians(lat)) * 2 * math.pi * EARTH_RADIUS_M / (1 << _check_level(level))


def lonlat_to_tile_xy(lon: np.ndarray, lat: np.ndarray, level: int) -> tuple[np.ndarray, np.ndarray]:
    """Tile coordinates (x east, y south-going) of lon/lat points at ``level`` (Bing's LatLongToPixelXY)."""
    level = _check_level(level)
    lat = np.clip(np.asarray(lat, dtype=float), MIN_LATITUDE, MAX_LATITUDE)
    lon = np.clip(np.asarray(lon, dtype=float), -180.0, 180.0)
    x = (lon + 180.0) / 360.0
    sin_lat = np.sin(np.radians(lat))
    y = 0.5 - np.log((1 + sin_lat) / (1 - sin_lat)) / (4 * math.pi)
    map_size = float(TILE_PIXELS << level)
    pixel_x = np.clip(x * map_size + 0.5, 0, map_size - 1).astype(np.int64)
    pixel_y = np.clip(y * map_size + 0.5, 0, map_size - 1).astype(np.int64)
    return pixel_x // TILE_PIXELS, pixel_y // TILE_PIXELS


def tile_bounds_lonlat(tile_x: np.ndarray, tile_y: np.ndarray, level: int) -> np.ndarray:
    """``(k, 4)`` west, south, east, north (degrees) of tiles (Bing's PixelXYToLatLong on the corners)."""
    level = _check_level(level)
    n = float(1 << level)
    tx = np.asarray(tile_x, dtype=float)
    ty = np.asarray(tile_y, dtype=float)

    def lat_of(y_frac: np.ndarray) -> np.ndarray:
        return 90.0 - 360.0 * np.arctan(np.exp((y_frac - 0.5) * 2 * math.pi)) / math.pi

    west = tx / n * 360.0 - 180.0
    east = (tx + 1) / n * 360.0 - 180.0
    north = lat_of(ty / n)
    south = lat_of((ty + 1) / n)
    return np.column_stack([west, south, east, north])


def _spread_bits(v: np.ndarray) -> np.ndarray:
    """Insert a zero bit above every bit of a <= 32-bit integer (Morton 'part1by1')."""
    v = np.asarray(v, dtype=np.uint64) & np.uint64(0xFFFFFFFF)
    v = (v | (v << np.uint64(16))) & np.uint64(0x0000FFFF0000FFFF)
    v = (v | (v << np.uint64(8))) & np.uint64(0x00FF00FF00FF00FF)
    v = (v | (v << np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    v = (v | (v << np.uint64(2))) & np.uint64(0x3333333333333333)
    v = (v | (v << np.uint64(1))) & np.uint64(0x5555555555555555)
    return v


def _compact_bits(v: np.ndarray) -> np.ndarray:
    """Inverse of :func:`_spread_bits`."""
    v = np.asarray(v, dtype=np.uint64) & np.uint64(0x5555555555555555)
    v = (v | (v >> np.uint64(1))) & np.uint64(0x3333333333333333)
    v = (v | (v >> np.uint64(2))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    v = (v | (v >> np.uint64(4))) & np.uint64(0x00FF00FF00FF00FF)
    v = (v | (v >> np.uint64(8))) & np.uint64(0x0000FFFF0000FFFF)
    v = (v | (v >> np.uint64(16))) & np.uint64(0x00000000FFFFFFFF)
    return v


def interleave(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Code whose base-4 digits are ``2 * ybit + xbit`` from the most significant bit down."""
    return ((_spread_bits(y) << np.uint64(1)) | _spread_bits(x)).astype(np.int64)


def deinterleave(code: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(x, y)`` from :func:`interleave` codes."""
    c = np.asarray(code, dtype=np.int64).astype(np.uint64)
    return _compact_bits(c).astype(np.int64), _compact_bits(c >> np.uint64(1)).astype(np.int64)


def lonlat_to_code(lon: np.ndarray, lat: np.ndarray, level: int) -> np.ndarray:
    """The ``2 * level``-bit hierarchical code (as int64) of each lon/lat point."""
    tx, ty = lonlat_to_tile_xy(lon, lat, level)
    return interleave(tx, ty)


def code_to_quadkey(code: int, level: int) -> str:
    """Bing quadkey string (base-4 digits) of one code."""
    level = _check_level(level)
    return "".join(str((int(code) >> (2 * (level - 1 - i))) & 3) for i in range(level))


def quadkey_to_code(quadkey: str) -> int:
    """Integer code of a quadkey string (digits 0-3)."""
    if not quadkey or any(ch not in "0123" for ch in quadkey):
        raise ValueError(f"a quadkey is a non-empty string of digits 0-3, got {quadkey!r}")
    return int(quadkey, 4)


def code_to_bits(code: int, level: int) -> str:
    """The ``2 * level``-bit string of a code (the paper's encoding)."""
    return format(int(code), f"0{2 * _check_level(level)}b")


def bit_length(values: np.ndarray) -> np.ndarray:
    """Exact vectorised ``int.bit_length`` for non-negative int64 values."""
    v = np.asarray(values, dtype=np.int64).astype(np.uint64)
    for shift in (1, 2, 4, 8, 16, 32):
        v |= v >> np.uint64(shift)
    return np.bitwise_count(v).astype(np.int64)


def lcp_bits(a: np.ndarray, b: np.ndarray, n_bits: int) -> np.ndarray:
    """Length in bits of the longest common prefix of ``n_bits``-bit codes ``a`` and ``b`` (broadcasting)."""
    diff = np.bitwise_xor(np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64))
    return n_bits - bit_length(diff)


def prefix_interval(sorted_codes: np.ndarray, codes: np.ndarray, prefix_bits: np.ndarray,
                    n_bits: int) -> tuple[np.ndarray, np.ndarray]:
    """Positions ``[lo, hi)`` in ``sorted_codes`` of codes sharing the first ``prefix_bits`` bits with ``codes``.

    Codes with a common prefix are contiguous once sorted, so every LCP ball
    ``{y : LCP(x, y) >= b}`` is one interval (this is what makes SRR's groups
    cheap to store and sample).
    """
    shift = (n_bits - np.asarray(prefix_bits, dtype=np.int64)).astype(np.uint64)
    c = np.asarray(codes, dtype=np.int64).astype(np.uint64)
    low = (c >> shift) << shift
    high = low + (np.uint64(1) << shift)
    lo = np.searchsorted(sorted_codes.astype(np.uint64), low, side="left")
    hi = np.searchsorted(sorted_codes.astype(np.uint64), high, side="left")
    return lo.astype(np.int64), hi.astype(np.int64)
