"""Synthetic trajectories from any point data set: the random walk of DAM App. D.

dam-disk-area-mechanism.md, Appendix D ("Experiment for Trajectory on NYC"):

    "we first divide the data set domain into a 300 x 300 grid. Then we map each grid
    cell to the points within it. Next, we randomly select 1,000 trajectory start cells
    and 1,000 trajectory lengths ranging from 2 to 200. For each trajectory start cell,
    we iteratively choose one of its neighbors with probability proportional to the
    point quantity within these neighboring cells until reaching the sampled trajectory
    length. For each chosen cell, we randomly select one point within it."

:func:`generate_trajectories` does exactly that, with every size a parameter, and
returns a plain DataFrame with columns ``person, seq, lon, lat`` (one row per point,
``seq`` = 0, 1, ... within a person) so it can be joined with a trajectory data model.

Where the paper is silent we chose (and record the choice in ``frame.attrs``):

* *Domain*: the square :class:`~ldpviz.geo.domain.Region` holding every point
  (:func:`fit_region`, longitudes taken on the shortest arc, so data straddling the
  antimeridian gets a small region), unless a region is given; points outside a given
  region are not used and are counted in ``attrs["points_outside_region"]``.
* *Start cells*: drawn uniformly among the cells that hold at least one point (a cell
  without points cannot yield a point); ``start="weighted"`` draws them in proportion
  to their point counts instead.
* *Lengths*: uniform integers in ``[min_length, max_length]``, independent of the start.
* *Neighbours*: the 8 surrounding cells (Moore neighbourhood) inside the grid; the
  current cell is not a neighbour. When all 8 are empty the walk stays in the current
  cell for that step (it has points), counted in ``attrs["stays"]``.
* *Points*: one point drawn uniformly (with replacement) among the points of each chosen
  cell, so a trajectory may revisit a point.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from ldpviz.geo.domain import EARTH_RADIUS_M, Grid, Region
from ldpviz.errors import require

#: App. D's sizes.
PAPER_TRAJECTORIES = 1000
PAPER_MIN_LENGTH = 2
PAPER_MAX_LENGTH = 200
PAPER_GRID_SIDE = 300

COLUMNS = ("person", "seq", "lon", "lat")
_MOVES = np.array([(dr, dc) for dr in (-1, 0, 1) for dc in (-1, 0, 1) if (dr, dc) != (0, 0)])


def fit_region(lon: np.ndarray, lat: np.ndarray, margin: float = 0.01, name: str = "fit to data") -> Region:
    """The square region holding every point; longitudes measured on their shortest covering arc.

    Unlike :meth:`Region.fit` (west = min, east = max), points on both sides of the
    antimeridian (lon 179.9 and -179.9) get a region a few km wide, not one around the globe.
    """
    lon = np.asarray(lon, dtype=float)
    lat = np.asarray(lat, dtype=float)
    require(lon.size > 0, "cannot fit a region to an empty set of points")
    require(bool(np.all(np.isfinite(lon)) and np.all(np.isfinite(lat))),
            "cannot fit a region to points with missing coordinates")
    wrapped = np.sort(np.mod(lon + 180.0, 360.0))          # in [0, 360)
    gaps = np.diff(np.concatenate([wrapped, [wrapped[0] + 360.0]]))
    widest = int(np.argmax(gaps))                           # the arc is everything but the widest gap
    west = wrapped[(widest + 1) % wrapped.size]
    width_deg = 360.0 - gaps[widest]
    centre_lon = (west + width_deg / 2.0) % 360.0 - 180.0
    south, north = float(lat.min()), float(lat.max())
    lat0 = (south + north) / 2.0
    width = math.radians(width_deg) * EARTH_RADIUS_M * math.cos(math.radians(lat0))
    height = math.radians(north - south) * EARTH_RADIUS_M
    side = min(max(max(width, height) * (1 + 2 * margin), 100.0), 2_000_000.0)
    return Region(float(centre_lon), lat0, side, name)


def generate_trajectories(lon: Any, lat: Any, *, n_trajectories: int = PAPER_TRAJECTORIES,
                          min_length: int = PAPER_MIN_LENGTH, max_length: int = PAPER_MAX_LENGTH,
                          grid_side: int = PAPER_GRID_SIDE, seed: int = 0, region: Region | None = None,
                          start: str = "uniform") -> pd.DataFrame:
    """DAM App. D's random-walk trajectories over the points ``(lon, lat)``.

    Returns a DataFrame with columns ``person`` (0..n_trajectories-1), ``seq`` (0..L-1),
    ``lon``, ``lat``; ``frame.attrs`` records the generator, its parameters, the region and
    the counts of points outside it and of forced stays. Same seed, same trajectories.
    """
    lon = np.asarray(lon, dtype=float).ravel()
    lat = np.asarray(lat, dtype=float).ravel()
    require(lon.shape == lat.shape, f"{lon.size} longitudes but {lat.size} latitudes")
    finite = np.isfinite(lon) & np.isfinite(lat)
    require(bool(finite.all()), f"{int((~finite).sum())} points have missing coordinates; remove them first")
    require(lon.size > 0, "no points to generate trajectories from")
    for label, value, low in (("n_trajectories", n_trajectories, 1), ("min_length", min_length, 1),
                              ("max_length", max_length, 1), ("grid_side", grid_side, 1)):
        require(isinstance(value, (int, np.integer)) and not isinstance(value, bool) and value >= low,
                f"{label} must be a whole number >= {low}, got {value!r}")
    require(min_length <= max_length, f"min_length ({min_length}) must not exceed max_length ({max_length})")
    require(start in ("uniform", "weighted"), f"start must be 'uniform' or 'weighted', got {start!r}")
    require(n_trajectories * max_length <= 50_000_000,
            f"{n_trajectories} trajectories of up to {max_length} points is too many (at most 50 million points)")
    region = region if region is not None else fit_region(lon, lat)
    grid = Grid(region, int(grid_side))
    binned = grid.bin_lonlat(lon, lat)
    require(binned.cells.size > 0, "no point lies inside the region; nothing to walk on")
    inside = region.contains(lon, lat)
    src_lon, src_lat = lon[inside], lat[inside]
    # cell -> its points: points sorted by cell, offsets into that order
    order = np.argsort(binned.cells, kind="stable")
    counts = np.bincount(binned.cells, minlength=grid.n_cells)
    offsets = np.concatenate([[0], np.cumsum(counts)])
    occupied = np.nonzero(counts)[0]

    rng = np.random.default_rng(seed)
    if start == "uniform":
        first = occupied[rng.integers(0, occupied.size, size=n_trajectories)]
    else:
        first = rng.choice(grid.n_cells, size=n_trajectories, p=counts / counts.sum())
    lengths = rng.integers(min_length, max_length + 1, size=n_trajectories)
    side = grid.side
    cells = np.full((n_trajectories, int(lengths.max())), -1, dtype=np.int64)
    cells[:, 0] = first
    stays = 0
    for step in range(1, cells.shape[1]):
        alive = np.nonzero(lengths > step)[0]
        if alive.size == 0:
            break
        row, col = np.divmod(cells[alive, step - 1], side)
        nr = row[:, None] + _MOVES[:, 0]
        nc = col[:, None] + _MOVES[:, 1]
        valid = (nr >= 0) & (nr < side) & (nc >= 0) & (nc < side)
        nbr = np.where(valid, nr * side + nc, 0)
        weight = np.where(valid, counts[nbr], 0).astype(float)
        total = weight.sum(axis=1)
        stuck = total == 0
        stays += int(stuck.sum())
        cum = np.cumsum(weight, axis=1)
        pick = (cum < (rng.random(alive.size) * total)[:, None]).sum(axis=1)
        nxt = nbr[np.arange(alive.size), np.minimum(pick, 7)]
        cells[alive, step] = np.where(stuck, cells[alive, step - 1], nxt)
    person = np.repeat(np.arange(n_trajectories), lengths)
    seq = np.concatenate([np.arange(n) for n in lengths])
    flat = cells[person, seq]
    chosen = order[offsets[flat] + (rng.random(flat.size) * counts[flat]).astype(np.int64)]
    frame = pd.DataFrame({"person": person, "seq": seq, "lon": src_lon[chosen], "lat": src_lat[chosen]})
    frame.attrs.update({
        "generator": "DAM App. D random walk (ldpviz.data.trajectory_generator.generate_trajectories)",
        "n_trajectories": int(n_trajectories), "min_length": int(min_length), "max_length": int(max_length),
        "grid_side": int(grid_side), "seed": int(seed), "start": start,
        "region": {"center_lon": region.center_lon, "center_lat": region.center_lat, "side_m": region.side_m},
        "points_used": int(src_lon.size), "points_outside_region": int((~inside).sum()),
        "stays": stays})
    return frame


def minneapolis_trajectories(seed: int = 0, **sizes: Any) -> pd.DataFrame:
    """App. D's generator applied to the bundled 2017 Minneapolis police stops (seeded).

    The walk runs over the stops inside the data set's "Whole city" 20 km region (its
    default view); ``sizes`` are passed on (n_trajectories, min_length, max_length,
    grid_side, start). The stops are public events, so nothing here is a real person's trip:
    each synthetic person is a random walk through cells weighted by stop counts.
    """
    from ldpviz.data import datasets

    data = datasets.load("minneapolis-stops")
    frame = generate_trajectories(data.lon, data.lat, seed=seed, region=data.default_region, **sizes)
    frame.attrs["source"] = "minneapolis-stops (carData::MplsStops, see data/README.md)"
    return frame


def to_cells(frame: pd.DataFrame, grid: Grid) -> tuple[list[np.ndarray], dict[str, int]]:
    """Each person's ordered flat cells on ``grid``; points outside are dropped and counted.

    Returns ``(sequences, counts)`` with ``counts = {"points_outside": ..., "people_without_points": ...}``;
    people whose every point lies outside the grid's region are dropped (and counted).
    """
    require(all(c in frame.columns for c in COLUMNS),
            f"trajectories need columns {', '.join(COLUMNS)}; got {', '.join(map(str, frame.columns))}")
    ordered = frame.sort_values(["person", "seq"], kind="stable")
    uv = grid.region.to_unit(ordered["lon"].to_numpy(float), ordered["lat"].to_numpy(float))
    inside = np.all(np.isfinite(uv) & (uv >= 0.0) & (uv <= 1.0), axis=1)
    idx = np.minimum((uv[inside] * grid.side).astype(np.int64), grid.side - 1)
    cells = idx[:, 1] * grid.side + idx[:, 0]
    person = ordered["person"].to_numpy()[inside]
    n_people = ordered["person"].nunique()
    if cells.size == 0:
        return [], {"points_outside": int((~inside).sum()), "people_without_points": int(n_people)}
    breaks = np.nonzero(person[1:] != person[:-1])[0] + 1
    sequences = np.split(cells, breaks)
    return sequences, {"points_outside": int((~inside).sum()),
                       "people_without_points": int(n_people - len(sequences))}


__all__ = ["generate_trajectories", "minneapolis_trajectories", "fit_region", "to_cells", "COLUMNS",
           "PAPER_TRAJECTORIES", "PAPER_MIN_LENGTH", "PAPER_MAX_LENGTH", "PAPER_GRID_SIDE"]
