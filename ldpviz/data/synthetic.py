"""The papers' synthetic datasets at any size, up to 100 million points, seeded and chunked (issue 14.3).

The registered datasets (``normal``, ``szipf``, ``mnormal``, ``gmm``,
``uniform`` in :mod:`ldpviz.datasets`) have the papers' fixed sizes. Here the
same distributions are drawn for any ``n`` in chunks of :data:`CHUNK` points;
chunk ``i`` uses its own generator seeded by ``(seed, i)``, so

* the same seed gives the same points, whatever the chunking of the consumer;
* the first ``m`` points do not depend on ``n`` (a 1M-point set is the prefix of
  the 100M-point one), and any chunk can be drawn alone (by a worker);
* memory stays bounded: :func:`chunks` holds one chunk at a time;
  :func:`generate` holds the result (16 bytes a point) plus one chunk.

Distributions as in :mod:`ldpviz.datasets` (DAM paper Sec. VII-A; heatmaps
paper App. E.3). MNormal draws each point's component uniformly (the paper's
set is three equal blocks, which a prefix cannot keep); the Gaussian mixture's
means and covariances come from ``seed`` alone, as in
:func:`ldpviz.datasets.gaussian_mixture`.
"""

from __future__ import annotations

from typing import Iterator

import numpy as np

from ldpviz import datasets
from ldpviz.errors import require

MAX_POINTS = 100_000_000
CHUNK = 1_000_000
#: name -> native square [low, high)
DOMAINS = {"normal": (-5.0, 5.0), "szipf": (0.0, 1.0), "mnormal": (-5.0, 7.0), "gmm": (0.0, 1.0),
           "uniform": (0.0, 1.0)}


def _check(name: str, n: int, seed: int) -> None:
    require(name in DOMAINS, f"no synthetic generator {name!r}; choose one of: {', '.join(DOMAINS)}")
    require(isinstance(n, (int, np.integer)) and not isinstance(n, bool) and 1 <= n <= MAX_POINTS,
            f"number of synthetic points must be a whole number from 1 to {MAX_POINTS:,}, got {n!r}")
    datasets._check_seed(seed)


def _gmm_shape(seed: int, n_clusters: int = 20, cluster_std: float = 0.03) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng([seed, 0x6A1])
    means = rng.uniform(0.1, 0.9, (n_clusters, 2))
    angle = rng.uniform(0.0, np.pi, n_clusters)
    rot = np.stack([np.stack([np.cos(angle), -np.sin(angle)], -1),
                    np.stack([np.sin(angle), np.cos(angle)], -1)], -2)
    return means, rot * (cluster_std * rng.uniform(0.5, 1.5, (n_clusters, 1, 2)))


def _native_chunk(name: str, k: int, rng: np.random.Generator, gmm: tuple[np.ndarray, np.ndarray] | None) -> np.ndarray:
    low, high = DOMAINS[name]
    if name == "normal":
        return datasets._inside(lambda m: datasets._correlated_normal(rng, m, 0.0, 0.5), k, low, high)
    if name == "szipf":
        return np.exp2(rng.random((k, 2))) - 1.0
    if name == "uniform":
        return rng.random((k, 2))
    if name == "mnormal":
        comps = datasets.MNORMAL_COMPONENTS

        def draw(m: int) -> np.ndarray:
            which = rng.integers(len(comps), size=m)
            out = np.empty((m, 2))
            for j, (mean, rho) in enumerate(comps):
                sel = which == j
                out[sel] = datasets._correlated_normal(rng, int(sel.sum()), mean, rho)
            return out
        return datasets._inside(draw, k, low, high)
    means, shape = gmm

    def draw_gmm(m: int) -> np.ndarray:
        which = rng.integers(len(means), size=m)
        return means[which] + np.einsum("kij,kj->ki", shape[which], rng.standard_normal((m, 2)))
    return datasets._inside(draw_gmm, k, low, high)


def chunk(name: str, n: int, index: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(lon, lat) of chunk ``index`` of the ``n``-point set: points ``index * CHUNK`` up to the next chunk."""
    _check(name, n, seed)
    start = index * CHUNK
    require(0 <= start < n, f"chunk {index} is outside a set of {n:,} points")
    k = min(CHUNK, n - start)
    rng = np.random.default_rng([seed, index])
    xy = _native_chunk(name, CHUNK, rng, _gmm_shape(seed) if name == "gmm" else None)[:k]   # full chunk: prefixes agree
    low, high = DOMAINS[name]
    whole = datasets._square_presets()["Whole square"]
    return whole.unit_to_lonlat((xy - low) / (high - low))


def chunks(name: str, n: int, seed: int = 0) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Every chunk of the ``n``-point set in order, one at a time (bounded memory)."""
    _check(name, n, seed)
    for index in range((n + CHUNK - 1) // CHUNK):
        yield chunk(name, n, index, seed)


def generate(name: str, n: int, seed: int = 0) -> datasets.Dataset:
    """The ``n``-point set as a :class:`~ldpviz.datasets.Dataset` named ``name:n=N`` (same regions as ``name``)."""
    _check(name, n, seed)
    lon, lat = np.empty(n), np.empty(n)
    at = 0
    for lo, la in chunks(name, n, seed):
        lon[at:at + lo.size], lat[at:at + lo.size] = lo, la
        at += lo.size
    label = datasets.load(name).label
    low, high = DOMAINS[name]
    return datasets.Dataset(
        name=f"{name}:n={n}", label=f"{label}, {n:,} points",
        description=(f"{n:,} points from the distribution of the '{name}' set ({label}), drawn in chunks of "
                     f"{CHUNK:,} (seed {seed}; chunk i seeded by (seed, i)). Native domain [{low:g}, {high:g})^2 "
                     "on the nominal 10 km square at lon 0, lat 0, as the registered set."),
        lon=lon, lat=lat, presets=datasets._square_presets(), synthetic=True)


def parse_name(name: str) -> tuple[str, int] | None:
    """``'normal:n=1000000'`` -> ``('normal', 1000000)``; None for other names."""
    base, sep, rest = name.partition(":n=")
    if not sep or base not in DOMAINS:
        return None
    try:
        n = int(rest.replace("_", "").replace(",", ""))
    except ValueError:
        return None
    return base, n
