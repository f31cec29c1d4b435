"""Regions, projection and binning (ldpviz.geo.domain)."""

import math

import numpy as np
import pytest

from ldpviz.geo.domain import EARTH_RADIUS_M, Grid, Region
from ldpviz.errors import LdpvizInputError


def haversine_m(lon1, lat1, lon2, lat2):
    p1, p2 = np.radians(lat1), np.radians(lat2)
    dphi, dl = p2 - p1, np.radians(lon2 - lon1)
    a = np.sin(dphi / 2) ** 2 + np.cos(p1) * np.cos(p2) * np.sin(dl / 2) ** 2
    return 2 * EARTH_RADIUS_M * np.arcsin(np.sqrt(a))


def test_projection_round_trip_and_centre():
    """to_metres and to_lonlat are inverse; the centre maps to (0, 0)."""
    r = Region(-93.27, 44.98, 20_000)
    x, y = r.to_metres(np.array([-93.27, -93.2]), np.array([44.98, 45.0]))
    assert x[0] == pytest.approx(0) and y[0] == pytest.approx(0)
    lon, lat = r.to_lonlat(x, y)
    np.testing.assert_allclose(lon, [-93.27, -93.2], atol=1e-12)
    np.testing.assert_allclose(lat, [44.98, 45.0], atol=1e-12)


def test_equirectangular_error_is_small_at_city_scale():
    """Planar distances within a 20 km region agree with haversine to 0.2% (documented bound ~0.1%)."""
    r = Region(-93.27, 44.98, 20_000)
    rng = np.random.default_rng(0)
    uv = rng.random((500, 2))
    lon, lat = r.unit_to_lonlat(uv)
    x, y = r.to_metres(lon, lat)
    planar = np.hypot(x[1:] - x[:-1], y[1:] - y[:-1])
    true = haversine_m(lon[1:], lat[1:], lon[:-1], lat[:-1])
    keep = true > 100
    assert np.max(np.abs(planar[keep] / true[keep] - 1)) < 2e-3


def test_region_side_matches_bbox_extent():
    """The bbox of a region is side_m wide and tall (within projection error)."""
    r = Region(10.0, 50.0, 5_000)
    w, s, e, n = r.bbox
    assert haversine_m(w, 50.0, e, 50.0) == pytest.approx(5_000, rel=1e-4)
    assert haversine_m(10.0, s, 10.0, n) == pytest.approx(5_000, rel=1e-6)


def test_from_bbox_grows_to_square():
    """A non-square bbox becomes the enclosing square centred on it."""
    r = Region.from_bbox(-93.33, 44.89, -93.19, 45.05)
    height = math.radians(45.05 - 44.89) * EARTH_RADIUS_M
    assert r.side_m == pytest.approx(height)
    assert r.center_lon == pytest.approx(-93.26) and r.center_lat == pytest.approx(44.97)


@pytest.mark.parametrize("args", [(-93, 45, -94, 46), (-93, 46, -92, 45), (float("nan"), 45, -92, 46)])
def test_from_bbox_rejects_bad_boxes(args):
    with pytest.raises(LdpvizInputError):
        Region.from_bbox(*args)


@pytest.mark.parametrize("side", [0.0, -5.0, 1e9, float("inf")])
def test_region_rejects_bad_sides(side):
    with pytest.raises(LdpvizInputError, match="side"):
        Region(0.0, 0.0, side)


def test_binning_cell_borders_and_far_edge():
    """Points on an inner border go to the upper cell; the far edge belongs to the last cell."""
    g = Grid(Region(0, 0, 1000), 4)
    b = g.bin_unit(np.array([[0.0, 0.0], [0.25, 0.0], [1.0, 1.0], [0.999, 0.5], [0.5, 0.25]]))
    assert b.cells.tolist() == [0, 1, 15, 2 * 4 + 3, 1 * 4 + 2]
    assert b.n_outside == 0


def test_binning_drops_and_counts_points_outside():
    """Points outside [0,1]^2 (or NaN) are dropped and counted, never silently kept."""
    g = Grid(Region(0, 0, 1000), 2)
    b = g.bin_unit(np.array([[-0.01, 0.5], [0.5, 1.01], [np.nan, 0.5], [0.5, 0.5]]))
    assert b.n_outside == 3 and b.cells.tolist() == [3]


def test_binning_lonlat_matches_unit_and_histogram_sums():
    g = Grid(Region(-93.27, 44.98, 20_000), 16)
    rng = np.random.default_rng(1)
    lon = -93.27 + rng.normal(0, 0.05, 2000)
    lat = 44.98 + rng.normal(0, 0.05, 2000)
    b = g.bin_lonlat(lon, lat)
    inside = g.region.contains(lon, lat)
    assert len(b.cells) == inside.sum() and b.n_outside == (~inside).sum()
    assert g.histogram(b.cells).sum() == len(b.cells)


def test_tiny_and_huge_regions():
    """A 1 m region and a 2000 km region both project and bin sensibly."""
    tiny = Grid(Region(2.35, 48.85, 1.0), 3)
    lon, lat = tiny.cell_centers_lonlat()
    assert tiny.bin_lonlat(lon, lat).cells.tolist() == list(range(9))
    huge = Grid(Region(0, 40, 2_000_000), 8)
    lon, lat = huge.cell_centers_lonlat()
    assert huge.bin_lonlat(lon, lat).cells.tolist() == list(range(64))


def test_cell_geometry():
    """Cell centres and polygons are consistent: each centre lies in its own polygon."""
    g = Grid(Region(-93.27, 44.98, 8_000), 5)
    assert g.cell_m == pytest.approx(1600)
    lon, lat = g.cell_centers_lonlat()
    polys = g.cell_polygons_lonlat()
    for k in (0, 7, 24):
        ring = np.array(polys[k])
        assert ring[:, 0].min() < lon[k] < ring[:, 0].max()
        assert ring[:, 1].min() < lat[k] < ring[:, 1].max()


@pytest.mark.parametrize("side", [0, -1, 2.5, 5000, True])
def test_grid_side_validated(side):
    with pytest.raises(LdpvizInputError, match="grid side"):
        Grid(Region(0, 0, 1000), side)


def test_fit_holds_all_points_and_handles_identical_points():
    """fit() contains every point; a single repeated point gets a small square, not an error."""
    rng = np.random.default_rng(2)
    lon, lat = -93.3 + rng.random(100) * 0.1, 44.9 + rng.random(100) * 0.05
    r = Region.fit(lon, lat)
    assert r.contains(lon, lat).all()
    same = Region.fit(np.full(5, 10.0), np.full(5, 50.0))
    assert same.side_m == pytest.approx(100.0) and same.contains(np.array([10.0]), np.array([50.0])).all()
    with pytest.raises(LdpvizInputError):
        Region.fit(np.array([]), np.array([]))
