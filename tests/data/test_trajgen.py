"""DAM App. D's trajectory generator (ldpviz.data.trajectory_generator)."""

from __future__ import annotations

import numpy as np
import pytest

from ldpviz.data import trajectory_generator as trajgen
from ldpviz.geo.domain import Grid, Region
from ldpviz.errors import LdpvizInputError

REGION = Region(10.0, 50.0, 3000.0, "toy")


def _toy_points(counts: dict[tuple[int, int], int], side: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """Points at the centres of the given (row, col) cells of a side x side grid over REGION."""
    uv = []
    for (r, c), k in counts.items():
        uv += [((c + 0.5) / side, (r + 0.5) / side)] * k
    return REGION.unit_to_lonlat(np.array(uv))


def _cells(frame, side=3):
    return Grid(REGION, side).bin_lonlat(frame["lon"].to_numpy(), frame["lat"].to_numpy()).cells


def test_seeded_shape_and_lengths():
    """Same seed, same trajectories; lengths lie in [min, max]; seq runs 0..L-1 per person."""
    lon, lat = _toy_points({(0, 0): 5, (1, 1): 3, (2, 2): 7, (1, 2): 2})
    a = trajgen.generate_trajectories(lon, lat, n_trajectories=50, min_length=3, max_length=9, grid_side=3,
                                      seed=4, region=REGION)
    b = trajgen.generate_trajectories(lon, lat, n_trajectories=50, min_length=3, max_length=9, grid_side=3,
                                      seed=4, region=REGION)
    c = trajgen.generate_trajectories(lon, lat, n_trajectories=50, min_length=3, max_length=9, grid_side=3,
                                      seed=5, region=REGION)
    assert list(a.columns) == list(trajgen.COLUMNS)
    assert a.equals(b) and not a.equals(c)
    sizes = a.groupby("person").size()
    assert sizes.index.tolist() == list(range(50))
    assert sizes.min() >= 3 and sizes.max() <= 9
    assert all((g["seq"].to_numpy() == np.arange(len(g))).all() for _, g in a.groupby("person"))


def test_steps_go_to_neighbours_weighted_by_counts():
    """From the centre cell the next cell is a Moore neighbour drawn in proportion to its point count
    (chi-square test, fixed seed); every point drawn lies in its walk cell."""
    counts = {(1, 1): 1, (0, 0): 10, (0, 1): 30, (2, 2): 60}
    lon, lat = _toy_points(counts)
    frame = trajgen.generate_trajectories(lon, lat, n_trajectories=20000, min_length=2, max_length=2,
                                          grid_side=3, seed=1, region=REGION)
    cells = _cells(frame).reshape(-1, 2)
    rows, cols = np.divmod(cells, 3)
    assert (np.maximum(abs(np.diff(rows, axis=1)), abs(np.diff(cols, axis=1))) == 1).all()
    from_centre = cells[cells[:, 0] == 4, 1]
    observed = np.array([(from_centre == k).sum() for k in (0, 1, 8)])
    assert observed.sum() == from_centre.size
    expected = from_centre.size * np.array([10, 30, 60]) / 100
    chi2 = (((observed - expected) ** 2) / expected).sum()
    assert chi2 < 13.8   # 99.9% quantile of chi-square with 2 degrees of freedom


def test_isolated_cell_stays_and_is_counted():
    """A cell with no occupied neighbour keeps the walk in place; the stays are counted."""
    lon, lat = _toy_points({(0, 0): 1, (2, 2): 1})
    frame = trajgen.generate_trajectories(lon, lat, n_trajectories=10, min_length=4, max_length=4,
                                          grid_side=3, seed=0, region=REGION)
    cells = _cells(frame).reshape(-1, 4)
    assert (cells == cells[:, :1]).all()
    assert frame.attrs["stays"] == 30


def test_fit_region_antimeridian():
    """Points on both sides of lon 180 get a region a few km wide centred near 180, not the globe."""
    region = trajgen.fit_region(np.array([179.99, -179.99, 179.995]), np.array([-17.0, -17.01, -17.02]))
    assert region.side_m < 5000
    assert abs(abs(region.center_lon) - 180.0) < 0.01
    frame = trajgen.generate_trajectories(np.array([179.99, -179.99, 179.995]), np.array([-17.0, -17.01, -17.02]),
                                          n_trajectories=5, max_length=5, grid_side=4, seed=0)
    assert frame.attrs["points_outside_region"] == 0 and len(frame) >= 10


def test_minneapolis_sizes_and_outside_counted():
    """The bundled application runs at App. D's default sizes; a given region's outsiders are counted."""
    frame = trajgen.minneapolis_trajectories(seed=0, n_trajectories=200)
    assert frame["person"].nunique() == 200 and frame.attrs["grid_side"] == 300
    lon, lat = _toy_points({(0, 0): 3, (1, 1): 3})
    far = Region(10.0, 50.0, 1000.0)
    out = trajgen.generate_trajectories(np.append(lon, 30.0), np.append(lat, 10.0), n_trajectories=3,
                                        grid_side=3, region=far, seed=0)
    assert out.attrs["points_outside_region"] >= 1


@pytest.mark.parametrize("kwargs, word", [
    ({"n_trajectories": 0}, "n_trajectories"), ({"min_length": 5, "max_length": 3}, "min_length"),
    ({"grid_side": 2.5}, "grid_side"), ({"start": "nowhere"}, "start")])
def test_bad_parameters(kwargs, word):
    lon, lat = _toy_points({(0, 0): 3})
    with pytest.raises(LdpvizInputError, match=word):
        trajgen.generate_trajectories(lon, lat, region=REGION, **kwargs)


def test_to_cells_drops_and_counts():
    """Points outside the grid's region are dropped and counted; people left with none are counted."""
    lon, lat = _toy_points({(0, 0): 2, (2, 2): 2})
    import pandas as pd
    frame = pd.DataFrame({"person": [0, 0, 1, 1, 2], "seq": [1, 0, 0, 1, 0],
                          "lon": [lon[0], lon[2], lon[1], lon[3], 40.0], "lat": [lat[0], lat[2], lat[1], lat[3], 0.0]})
    seqs, counts = trajgen.to_cells(frame, Grid(REGION, 3))
    assert counts == {"points_outside": 1, "people_without_points": 1}
    assert [s.tolist() for s in seqs] == [[8, 0], [0, 8]]
