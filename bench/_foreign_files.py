"""Synthetic files unlike the bundled city, for the speed benchmarks of issue 36 (never shipped data).

* :func:`national`: ~8,000 points over the US north-east (a 13.5 x 10.5 degree box, cells of ~38 km at d = 32),
  80% around 60 towns of Pareto-distributed size, 20% spread evenly.
* :func:`small`: a few hundred points in a 10 km box (fewer people than private tiles need).
* :func:`antimeridian`: 1,000 points around Fiji on both sides of 180 degrees, bounds typed across it (W > E).
* :func:`dense_city`: 6,000 points packed around three centres of one city.
* :func:`trips_points`: what Decide collects from a trips file of 200 people x 15 points: one point per person.
"""

from __future__ import annotations

import io

import numpy as np
import pandas as pd

from ldpviz.data import datasets, trajectories

NATIONAL_BOX = (-80.5, 37.0, -67.0, 47.5)
SMALL_BOX = (-93.32, 44.93, -93.19, 45.02)
FIJI_BOX = (176.0, -20.0, -176.0, -15.0)            # across 180 degrees: west > east
CITY_BOX = (-93.33, 44.89, -93.19, 45.05)


def _file(lon: np.ndarray, lat: np.ndarray, name: str, box: tuple[float, float, float, float]) -> datasets.Dataset:
    buf = io.StringIO()
    pd.DataFrame({"lat": lat, "lon": lon}).to_csv(buf, index=False)
    return datasets.load_file(buf.getvalue().encode(), filename=name, bbox=box)


def clustered(n: int, box: tuple[float, float, float, float], towns: int, spread_deg: float, seed: int
              ) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    w0, s0, e0, n0 = box
    centres = np.column_stack([rng.uniform(w0, e0, towns), rng.uniform(s0, n0, towns)])
    weight = rng.pareto(1.2, towns) + 0.1
    pick = rng.choice(towns, size=int(n * 0.8), p=weight / weight.sum())
    pts = centres[pick] + rng.normal(0.0, spread_deg, (len(pick), 2))
    rest = np.column_stack([rng.uniform(w0, e0, n - len(pick)), rng.uniform(s0, n0, n - len(pick))])
    pts = np.vstack([pts, rest])
    return np.clip(pts[:, 0], w0, e0), np.clip(pts[:, 1], s0, n0)


def national(n: int = 8134, seed: int = 7) -> datasets.Dataset:
    lon, lat = clustered(n, NATIONAL_BOX, 60, 0.25, seed)
    return _file(lon, lat, "national-ne.csv", NATIONAL_BOX)


def small(n: int = 300, seed: int = 11) -> datasets.Dataset:
    lon, lat = clustered(n, SMALL_BOX, 6, 0.004, seed)
    return _file(lon, lat, "small.csv", SMALL_BOX)


def antimeridian(n: int = 1000, seed: int = 13) -> datasets.Dataset:
    rng = np.random.default_rng(seed)
    lon = (rng.normal(180.0, 1.2, n) + 180.0) % 360.0 - 180.0
    lat = rng.normal(-17.5, 0.8, n)
    return _file(lon, lat, "fiji.csv", FIJI_BOX)


def dense_city(n: int = 6000, seed: int = 17) -> datasets.Dataset:
    rng = np.random.default_rng(seed)
    centre = rng.choice(3, n)
    lon = np.array([-93.27, -93.23, -93.30])[centre] + rng.normal(0, 0.01, n)
    lat = np.array([44.98, 44.95, 45.01])[centre] + rng.normal(0, 0.008, n)
    return _file(lon, lat, "dense-city.csv", CITY_BOX)


def trips_points(people: int = 200, points: int = 15, seed: int = 19) -> datasets.Dataset:
    """One point per person of a random-walk trips file (``trajectories.one_point_per_person``, what Decide's
    trips path collects), as a points file over the city's box."""
    rng = np.random.default_rng(seed)
    person, lon, lat = [], [], []
    for p in range(people):
        at = rng.uniform([-93.33, 44.89], [-93.19, 45.05])
        for _ in range(points):
            at = at + rng.normal(0, 0.003, 2)
            person.append(f"p{p}")
            lon.append(at[0])
            lat.append(at[1])
    x, y = trajectories.one_point_per_person(np.array(person), np.array(lon), np.array(lat), seed)
    return _file(np.clip(x, CITY_BOX[0], CITY_BOX[2]), np.clip(y, CITY_BOX[1], CITY_BOX[3]), "trips.csv", CITY_BOX)
