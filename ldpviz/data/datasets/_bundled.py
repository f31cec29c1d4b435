"""The bundled and synthetic data sets by name: their builders, labels, and loading (cached)."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd

from ldpviz.data import synthetic
from ldpviz.data.dataset_types import Dataset, check_seed
from ldpviz.errors import require
from ldpviz.geo.domain import Region


DATA_DIR = Path(__file__).resolve().parents[1]   # the bundled files ship in ldpviz/data, beside this package
MINNEAPOLIS_FILE = DATA_DIR / "minneapolis_stops.parquet"


# ---------------------------------------------------------------- data types


# ---------------------------------------------------------------- bundled real data
def _minneapolis(seed: int) -> Dataset:
    """2017 Minneapolis police stops; ``seed`` is ignored (real data)."""
    if not MINNEAPOLIS_FILE.is_file():
        raise FileNotFoundError(f"bundled data file {MINNEAPOLIS_FILE} is missing; rebuild it with "
                                "`python data/make_minneapolis.py` (see data/README.md)")
    frame = pd.read_parquet(MINNEAPOLIS_FILE, columns=["long", "lat"])
    presets = {r.name: r for r in (
        Region(-93.2650, 44.9710, 20_000.0, "Whole city"),
        Region(-93.2700, 44.9770, 3_000.0, "Downtown"),
        Region(-93.2800, 44.9500, 3_000.0, "Whittier and Lyndale"),
        Region(-93.2970, 45.0020, 3_000.0, "North Minneapolis"),
        Region(-93.2520, 44.9530, 3_000.0, "Phillips"),
    )}
    return Dataset(
        name="minneapolis-stops", label="Minneapolis police stops, 2017",
        description=(
            f"{len(frame):,} traffic and suspicious-person or -vehicle stops made by the Minneapolis "
            "Police Department in 2017, one point per stop (locations rounded at the source). Each stop "
            "stands for one user. Source: data set MplsStops of the carData R package (Fox & Weisberg, "
            "GPL-2 | GPL-3), taken from Minneapolis Open Data; see data/README.md. Regions: the whole "
            "city (20 km square) and four dense 3 km squares chosen from the stop density."),
        lon=frame["long"].to_numpy(np.float64), lat=frame["lat"].to_numpy(np.float64),
        presets=presets, synthetic=False)


# ---------------------------------------------------------------- synthetic data


_BUILDERS: dict[str, Callable[[int], Dataset]] = {
    "minneapolis-stops": _minneapolis,
    **synthetic.BUILDERS,
}


def names() -> list[str]:
    """Registered dataset names, real data first."""
    return list(_BUILDERS)


#: Each registered dataset's label, for lists that should not generate every set to name it (test_datasets
#: checks it equals the loaded dataset's label).
LABELS = {"minneapolis-stops": "Minneapolis police stops, 2017", "normal": "Normal (correlated, rho 0.5)",
          "szipf": "Skew Zipf", "mnormal": "Multi-centre normal", "gmm": "Gaussian mixture (20 clusters)",
          "uniform": "Uniform"}


def label(name: str) -> str:
    """A registered dataset's readable label without loading it (the name itself if unknown)."""
    return LABELS.get(name, name)


def load(name: str, seed: int = 0) -> Dataset:
    """The registered dataset ``name`` (cached); ``seed`` drives synthetic generators only.

    ``'normal:n=5000000'`` (any synthetic set, any n up to 100M) draws that many
    points with :func:`ldpviz.data.synthetic.generate` (cached up to 5M points).
    """
    sized = synthetic.parse_name(name) if isinstance(name, str) else None
    if sized is not None:
        seed = check_seed(seed)
        if sized[1] <= 5_000_000:
            return _load_sized(sized[0], sized[1], seed)
        return synthetic.generate(sized[0], sized[1], seed)
    require(isinstance(name, str) and name in _BUILDERS,
            f"unknown dataset {name!r}; choose one of: {', '.join(_BUILDERS)} "
            "(uploaded files are read with load_file; any size of a synthetic set: e.g. 'normal:n=1000000')")
    seed = check_seed(seed)
    return _load_cached(name, seed if name != "minneapolis-stops" else 0)


@functools.lru_cache(maxsize=4)
def _load_sized(name: str, n: int, seed: int) -> Dataset:
    return synthetic.generate(name, n, seed)


@functools.lru_cache(maxsize=32)
def _load_cached(name: str, seed: int) -> Dataset:
    return _BUILDERS[name](seed)


def describe() -> list[dict[str, Any]]:
    """One row per registered dataset (default seed): name, label, n, synthetic, description, presets."""
    rows = []
    for name in _BUILDERS:
        ds = load(name)
        rows.append({"name": ds.name, "label": ds.label, "n": ds.n, "synthetic": ds.synthetic,
                     "description": ds.description, "presets": list(ds.presets)})
    return rows
