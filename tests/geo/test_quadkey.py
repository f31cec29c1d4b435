"""Bing tile-system encoding and LCP distances (L-SRR Sec. 3.2, Example 3.1)."""

import numpy as np

from ldpviz.geo import quadkey


def test_paper_example_new_york():
    """Example 3.1: (40.730610, -73.935242) at h = 23 -> quadkey 03201011013231222333333, hex e1147b6afff."""
    code = int(quadkey.lonlat_to_code(np.array([-73.935242]), np.array([40.730610]), 23)[0])
    assert quadkey.code_to_quadkey(code, 23) == "03201011013231222333333"
    assert len(quadkey.code_to_bits(code, 23)) == 46
    assert format(code, "x") == "e1147b6afff"
    assert format(code, "x")[:10] == "e1147b6aff"       # the paper's printed digits


def test_known_tiles_and_round_trip():
    """Level-1 quadrants (Bing docs: 0 NW, 1 NE, 2 SW, 3 SE) and quadkey <-> code <-> tile XY."""
    lon = np.array([-90.0, 90.0, -90.0, 90.0])
    lat = np.array([45.0, 45.0, -45.0, -45.0])
    codes = quadkey.lonlat_to_code(lon, lat, 1)
    assert [quadkey.code_to_quadkey(c, 1) for c in codes] == ["0", "1", "2", "3"]
    assert quadkey.quadkey_to_code("213") == int("213", 4)
    tx, ty = quadkey.lonlat_to_tile_xy(np.array([-73.935242]), np.array([40.730610]), 23)
    x2, y2 = quadkey.deinterleave(quadkey.interleave(tx, ty))
    assert (x2[0], y2[0]) == (tx[0], ty[0])
    # the point lies inside its tile's bounds
    w, s, e, n = quadkey.tile_bounds_lonlat(tx, ty, 23)[0]
    assert w <= -73.935242 <= e and s <= 40.730610 <= n


def test_lcp_bits():
    """LCP in bits of 2h-bit codes: identical -> 2h, first bit differs -> 0, siblings share 2h - 2 or 2h - 1."""
    a = quadkey.quadkey_to_code("0123")
    others = np.array([quadkey.quadkey_to_code(q) for q in ["0123", "0122", "0121", "2123", "1123", "0023"]])
    assert list(quadkey.lcp_bits(a, others, 8)) == [8, 7, 6, 0, 1, 3]


def test_bit_length_exact_for_large_values():
    vals = np.array([0, 1, 2, 3, (1 << 53) - 1, (1 << 53), (1 << 62) - 1], dtype=np.int64)
    assert list(quadkey.bit_length(vals)) == [int(v).bit_length() for v in vals]


def test_prefix_interval_is_lcp_ball():
    """Sorted codes sharing b prefix bits with x form the interval returned, for every b."""
    rng = np.random.default_rng(1)
    codes = np.unique(rng.integers(0, 1 << 12, 300))
    for b in (0, 3, 6, 12):
        lo, hi = quadkey.prefix_interval(codes, codes, np.full(len(codes), b), 12)
        lcp = quadkey.lcp_bits(codes[:, None], codes[None, :], 12)
        expected = (lcp >= b).sum(axis=1)
        assert np.array_equal(hi - lo, expected)
        for i in range(0, len(codes), 37):
            assert np.all(lcp[i, lo[i]:hi[i]] >= b)
