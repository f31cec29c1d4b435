"""Local privacy (eq. 15-16): kernel route equals the dense formula; sanity of values."""

from __future__ import annotations

import numpy as np
import pytest

from ldpviz import mechanisms
from ldpviz.geo.domain import Grid, Region
from ldpviz.mechanisms.dam.local_privacy import cell_distances, local_privacy, lp_from_channel, lp_from_disk_channel


def grid(d: int, side_m: float = 1000.0) -> Grid:
    return Grid(Region(0.0, 45.0, side_m), d)


@pytest.mark.parametrize("name,d,eps", [("dam", 6, 2.0), ("dam-ns", 5, 1.0), ("huem", 9, 3.5), ("dam", 12, 0.7)])
def test_kernel_route_equals_dense_channel(name, d, eps):
    mech = mechanisms.create(name, grid(d), eps)
    assert lp_from_disk_channel(mech.chan) == pytest.approx(lp_from_channel(mech.channel(), d), rel=1e-10)


def test_extremes_and_units():
    """No privacy -> 0; a useless channel -> mean distance of two uniform cells; metres scale with cells."""
    g = grid(6)
    assert local_privacy("exact", g, 1.0) == 0.0
    uniform = np.full((4, 36), 0.25)
    assert lp_from_channel(uniform, 6) == pytest.approx(cell_distances(6).mean())
    assert local_privacy("dam", grid(6, 2000.0), 2.0) == pytest.approx(2 * local_privacy("dam", g, 2.0))


def test_lp_falls_as_epsilon_grows():
    g = grid(10)
    values = [local_privacy("dam", g, eps) for eps in (0.5, 1.5, 3.5, 7.0)]
    assert all(a > b for a, b in zip(values, values[1:]))
    assert local_privacy("planar-laplace", g, 1.0) > local_privacy("planar-laplace", g, 3.0)
