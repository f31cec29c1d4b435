"""The box offered for a file too large for one region (issue 21.1): the densest continent-sized box."""

import numpy as np
import pytest

from ldpviz.geo.bbox_suggest import suggest_bbox
from ldpviz.geo.domain import MAX_REGION_SIDE_M, Region, in_bounds
from ldpviz.errors import LdpvizInputError


def national(seed=0):
    """Contiguous US (3,000 rows), Alaska (150) and Hawaii (60): too wide for one region."""
    rng = np.random.default_rng(seed)
    lon = np.concatenate([rng.uniform(-124, -67, 3000), rng.uniform(-165, -140, 150), rng.uniform(-160, -155, 60)])
    lat = np.concatenate([rng.uniform(25, 49, 3000), rng.uniform(58, 70, 150), rng.uniform(19, 22, 60)])
    return lon, lat


def test_national_file_gets_the_contiguous_box():
    lon, lat = national()
    with pytest.raises(LdpvizInputError):
        Region.from_bbox(float(lon.min()), float(lat.min()), float(lon.max()), float(lat.max()))
    box = suggest_bbox(lon, lat, 6000)
    assert Region.from_bbox(*box).side_m <= MAX_REGION_SIDE_M
    assert in_bounds(lon[:3000], lat[:3000], box).all() and in_bounds(lon, lat, box).sum() == 3000
    assert all(round(v, 1) == v for v in box)          # typed as it is shown


def test_box_across_the_antimeridian_and_smaller_sizes():
    rng = np.random.default_rng(1)
    lon = np.concatenate([rng.uniform(177, 180, 500), rng.uniform(-180, -178, 500), rng.uniform(0, 10, 30)])
    lat = rng.uniform(-19, -16, 1030)
    w, s, e, n = suggest_bbox(lon, lat, 5000)
    assert w > e and in_bounds(lon, lat, (w, s, e, n)).sum() == 1000
    small = suggest_bbox(lon, lat, 100)                # a 100 km box holds the densest ~degree only
    assert Region.from_bbox(*small).side_m < 400_000


def test_bad_input_is_refused():
    with pytest.raises(LdpvizInputError):
        suggest_bbox(np.zeros(0), np.zeros(0), 1000)
    with pytest.raises(LdpvizInputError):
        suggest_bbox(np.zeros(2), np.zeros(2), -1)
