"""Planar Laplace's server kernel (issue 38.6): its window stops where the quadrature's values underflow to exact
zeros, and one channel per (d, epsilon per cell, window) is shared by every run that asks for it."""

from __future__ import annotations

import numpy as np
import pytest

from ldpviz.geo.domain import Grid, Region
from ldpviz.mechanisms.dam import planar_laplace as pl


@pytest.mark.parametrize("epsilon", [5.0, 9.4, 37.8, 151.0])
def test_window_cut_at_underflow_drops_only_exact_zeros(epsilon):
    """The kernel built on the old window (1.42 d + 40 / eps + 1) holds exact 0.0 beyond the underflow radius, and
    the kernel built on the cut window equals its centre bit for bit: the cut loses nothing."""
    side = 128
    wide = int(np.ceil(1.42 * side + pl.TAIL_NATS / epsilon)) + 1
    cut = pl.kernel_radius(epsilon, side)
    assert cut == min(wide, pl.underflow_radius(epsilon)) and cut < wide
    nodes = pl._nodes_for(epsilon, wide)
    full = pl.planar_laplace_kernel(epsilon, wide, nodes)
    centre = full[wide - cut:wide + cut + 1, wide - cut:wide + cut + 1]
    outside = full.copy()
    outside[wide - cut:wide + cut + 1, wide - cut:wide + cut + 1] = 0.0
    assert not outside.any(), "an entry beyond the underflow radius is not an exact zero"
    assert np.array_equal(pl.planar_laplace_kernel(epsilon, cut, nodes), centre)


def test_wide_noise_keeps_the_whole_window():
    """Broad noise (eps per cell 0.3): the underflow radius is beyond the e^-40 window, which stays as it was."""
    assert pl.kernel_radius(0.3, 32) == int(np.ceil(1.42 * 32 + pl.TAIL_NATS / 0.3)) + 1


def test_channel_built_once_and_shared():
    """Two mechanisms at one (grid, epsilon) share one channel object; another epsilon gets its own."""
    grid = Grid(Region(center_lon=-73.75, center_lat=42.25, side_m=1_200_000.0, name="wide"), 16)
    from ldpviz import mechanisms
    a = mechanisms.create("planar-laplace", grid, 1.0)
    b = mechanisms.create("planar-laplace", grid, 1.0)
    c = mechanisms.create("planar-laplace", grid, 2.0)
    assert a.chan is b.chan and a.fine is b.fine
    assert c.chan is not a.chan
    assert not a.chan.kernel.flags.writeable


def test_cache_is_bounded(monkeypatch):
    """At most MAX_CHANNELS channels are kept, least recently used dropped first."""
    monkeypatch.setattr(pl, "_CHANNELS", type(pl._CHANNELS)())
    monkeypatch.setattr(pl, "MAX_CHANNELS", 3)
    for eps in (5.0, 6.0, 7.0, 8.0):
        pl.clamped_channel(8, eps, pl.kernel_radius(eps, 8))
    assert [k[1] for k in pl._CHANNELS] == [6.0, 7.0, 8.0]
