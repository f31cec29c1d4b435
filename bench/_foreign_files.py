"""Synthetic files unlike the bundled city, for the speed benchmarks of issue 36 (never shipped data).

* :func:`national`: ~8,000 points over the US north-east (a 13.5 x 10.5 degree box, cells of ~38 km at d = 32),
  80% around 60 towns of Pareto-distributed size, 20% spread evenly.
* :func:`small`: a few hundred points in a 10 km box (fewer people than private tiles need).
"""

from __future__ import annotations

import io

import numpy as np
import pandas as pd

from ldpviz.data import datasets

NATIONAL_BOX = (-80.5, 37.0, -67.0, 47.5)
SMALL_BOX = (-93.32, 44.93, -93.19, 45.02)


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
