"""The papers' synthetic datasets at any size, up to 100 million points, seeded and chunked (issue 14.3).

The registered datasets (``normal``, ``szipf``, ``mnormal``, ``gmm``,
``uniform`` in :mod:`ldpviz.data.datasets`) have the papers' fixed sizes. Here the
same distributions are drawn for any ``n`` in chunks of :data:`CHUNK` points;
chunk ``i`` uses its own generator seeded by ``(seed, i)``, so

* the same seed gives the same points, whatever the chunking of the consumer;
* the first ``m`` points do not depend on ``n`` (a 1M-point set is the prefix of
  the 100M-point one), and any chunk can be drawn alone (by a worker);
* memory stays bounded: :func:`chunks` holds one chunk at a time;
  :func:`generate` holds the result (16 bytes a point) plus one chunk, and refuses up front a set whose run
  would not fit (:func:`check_memory`); ``ldpviz run`` takes sets above 10M points chunk by chunk
  (:mod:`ldpviz.experiment.chunked`).

Distributions as in :mod:`ldpviz.data.datasets` (DAM paper Sec. VII-A; heatmaps
paper App. E.3). MNormal draws each point's component uniformly (the paper's
set is three equal blocks, which a prefix cannot keep); the Gaussian mixture's
means and covariances come from ``seed`` alone, as in
:func:`ldpviz.data.datasets.gaussian_mixture`.
"""

from __future__ import annotations

import functools
from typing import Callable, Iterator

import numpy as np

from ldpviz.data.dataset_types import Dataset, check_seed
from ldpviz.errors import LdpvizInputError, require
from ldpviz.geo.domain import Region

MAX_POINTS = 100_000_000
CHUNK = 1_000_000
#: name -> native square [low, high)
DOMAINS = {"normal": (-5.0, 5.0), "szipf": (0.0, 1.0), "mnormal": (-5.0, 7.0), "gmm": (0.0, 1.0),
           "uniform": (0.0, 1.0)}


def _check(name: str, n: int, seed: int) -> None:
    require(name in DOMAINS, f"no synthetic generator {name!r}; choose one of: {', '.join(DOMAINS)}")
    require(isinstance(n, (int, np.integer)) and not isinstance(n, bool) and 1 <= n <= MAX_POINTS,
            f"number of synthetic points must be a whole number from 1 to {MAX_POINTS:,}, got {n!r}")
    check_seed(seed)


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
        return _inside(lambda m: _correlated_normal(rng, m, 0.0, 0.5), k, low, high)
    if name == "szipf":
        return np.exp2(rng.random((k, 2))) - 1.0
    if name == "uniform":
        return rng.random((k, 2))
    if name == "mnormal":
        comps = MNORMAL_COMPONENTS

        def draw(m: int) -> np.ndarray:
            which = rng.integers(len(comps), size=m)
            out = np.empty((m, 2))
            for j, (mean, rho) in enumerate(comps):
                sel = which == j
                out[sel] = _correlated_normal(rng, int(sel.sum()), mean, rho)
            return out
        return _inside(draw, k, low, high)
    means, shape = gmm

    def draw_gmm(m: int) -> np.ndarray:
        which = rng.integers(len(means), size=m)
        return means[which] + np.einsum("kij,kj->ki", shape[which], rng.standard_normal((m, 2)))
    return _inside(draw_gmm, k, low, high)


def chunk(name: str, n: int, index: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(lon, lat) of chunk ``index`` of the ``n``-point set: points ``index * CHUNK`` up to the next chunk."""
    _check(name, n, seed)
    start = index * CHUNK
    require(0 <= start < n, f"chunk {index} is outside a set of {n:,} points")
    k = min(CHUNK, n - start)
    rng = np.random.default_rng([seed, index])
    xy = _native_chunk(name, CHUNK, rng, _gmm_shape(seed) if name == "gmm" else None)[:k]   # full chunk: prefixes agree
    low, high = DOMAINS[name]
    whole = _square_presets()["Whole square"]
    return whole.unit_to_lonlat((xy - low) / (high - low))


def chunks(name: str, n: int, seed: int = 0) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Every chunk of the ``n``-point set in order, one at a time (bounded memory)."""
    _check(name, n, seed)
    for index in range((n + CHUNK - 1) // CHUNK):
        yield chunk(name, n, index, seed)


#: Memory a run holding all its points takes per point (the points, their cells and unit coordinates and the
#: run's working copies): 80 bytes measured for ``ldpviz run --dataset normal:n=N`` (grr, the peak's slope from 1M
#: to 10M points; docs/data-loading.md), rounded up. A floor for the check below: other mechanisms may take more.
BYTES_PER_POINT = 100


def memory_available() -> tuple[int | None, str]:
    """Bytes this process may still allocate, and what limits it: the address-space limit (``ulimit -v``) less
    what is mapped now, or the machine's available memory; ``(None, '')`` where neither can be read."""
    import resource

    found: list[tuple[int, str]] = []
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft != resource.RLIM_INFINITY:
        mapped = _proc_kib("/proc/self/status", "VmSize:")
        found.append((soft - (mapped or 0), f"the address-space limit of {soft / 2**30:,.1f} GiB"))
    free = _proc_kib("/proc/meminfo", "MemAvailable:")
    if free is not None:
        found.append((free, "the memory available on this machine"))
    return min(found) if found else (None, "")


def _proc_kib(path: str, key: str) -> int | None:
    try:
        with open(path, encoding="ascii") as fh:
            for line in fh:
                if line.startswith(key):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def check_memory(name: str, n: int) -> None:
    """Refuse, before drawing, a set whose run would not fit in memory, stating what it needs (as ``od`` does)."""
    need = int(n) * BYTES_PER_POINT
    have, limit = memory_available()
    require(have is None or need <= have,
            f"{name}:n={n} held in memory needs about {need / 2**30:,.1f} GiB ({BYTES_PER_POINT} bytes a point) but "
            f"{limit} leaves {max(have or 0, 0) / 2**30:,.1f} GiB; 'ldpviz run' draws a set above 10,000,000 points "
            "chunk by chunk in bounded memory when its mechanism reports an additive statistic (grr, oue, olh, hr, "
            "dam, planar-laplace, ...), or use fewer points")


def generate(name: str, n: int, seed: int = 0) -> Dataset:
    """The ``n``-point set as a :class:`~ldpviz.data.datasets.Dataset` named ``name:n=N`` (same regions as ``name``).

    It holds every point (16 bytes each, and the run on it about :data:`BYTES_PER_POINT`): a set that would not
    fit is refused up front by :func:`check_memory`."""
    _check(name, n, seed)
    check_memory(name, n)
    lon, lat = np.empty(n), np.empty(n)
    at = 0
    for lo, la in chunks(name, n, seed):
        lon[at:at + lo.size], lat[at:at + lo.size] = lo, la
        at += lo.size
    label = _registered_label(name)
    low, high = DOMAINS[name]
    return Dataset(
        name=f"{name}:n={n}", label=f"{label}, {n:,} points",
        description=(f"{n:,} points from the distribution of the '{name}' set ({label}), drawn in chunks of "
                     f"{CHUNK:,} (seed {seed}; chunk i seeded by (seed, i)). Native domain [{low:g}, {high:g})^2 "
                     "on the nominal 10 km square at lon 0, lat 0, as the registered set."),
        lon=lon, lat=lat, presets=_square_presets(), synthetic=True)


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


# ---------------------------------------------------------------- the registered synthetic sets
#: Side of the nominal square that synthetic data is drawn on, centred on (0, 0).
SYNTHETIC_SIDE_M = 10_000.0


def _square_presets() -> dict[str, Region]:
    """The whole Null Island square, its centre half and two opposite quarters."""
    whole = Region(0.0, 0.0, SYNTHETIC_SIDE_M, "Whole square")
    presets = {whole.name: whole}
    for name, u in (("Centre", 0.5), ("South-west quarter", 0.25), ("North-east quarter", 0.75)):
        lon, lat = whole.unit_to_lonlat(np.array([u, u]))
        presets[name] = Region(float(lon), float(lat), SYNTHETIC_SIDE_M / 2, name)
    return presets


def _inside(draw: Callable[[int], np.ndarray], n: int, low: float, high: float) -> np.ndarray:
    """``n`` points from ``draw`` that fall in the native square [low, high)^2, redrawing the rest."""
    parts, have = [], 0
    for _ in range(1000):
        pts = draw(n - have)
        pts = pts[np.all((pts >= low) & (pts < high), axis=1)]
        parts.append(pts)
        have += len(pts)
        if have == n:
            return np.concatenate(parts)
    raise LdpvizInputError("the generator almost never lands inside its domain; use a smaller spread")


def _correlated_normal(rng: np.random.Generator, n: int, mean: float, rho: float) -> np.ndarray:
    """Normal(mean, mean, 1, 1, rho): x = z1, y = rho z1 + sqrt(1 - rho^2) z2."""
    z = rng.standard_normal((n, 2))
    return np.column_stack([z[:, 0], rho * z[:, 0] + np.sqrt(1.0 - rho * rho) * z[:, 1]]) + mean


def _synthetic(name: str, label: str, description: str, xy: np.ndarray, low: float, high: float) -> Dataset:
    """Map native points in [low, high]^2 linearly onto the 10 km Null Island square."""
    lon, lat = _square_presets()["Whole square"].unit_to_lonlat((xy - low) / (high - low))
    scale = f"{SYNTHETIC_SIDE_M / (high - low):,.0f} m"
    return Dataset(
        name=name, label=label,
        description=(f"{description} Native domain [{low:g}, {high:g})^2, drawn on a nominal 10 km x 10 km "
                     f"square centred on lon 0, lat 0 (\"Null Island\", the GIS placeholder for no real "
                     f"place); one native unit is {scale}."),
        lon=lon, lat=lat, presets=_square_presets(), synthetic=True)


def _normal(seed: int) -> Dataset:
    """DAM paper Sec. VII-A "Normal": 300,000 points of Normal(0, 0, 1, 1, rho=0.5) in (-5, 5)^2."""
    rng = np.random.default_rng(seed)
    xy = _inside(lambda k: _correlated_normal(rng, k, 0.0, 0.5), 300_000, -5.0, 5.0)
    return _synthetic("normal", "Normal (correlated, rho 0.5)",
                      "300,000 points from a 2-D normal with means 0, variances 1 and correlation 0.5, as the "
                      "Normal set of the DAM paper (Sec. VII-A), which keeps all points in (-5, 5)^2; the "
                      "rare points outside (about 1 in 900,000) are redrawn.",
                      xy, -5.0, 5.0)


def _szipf(seed: int) -> Dataset:
    """DAM paper Sec. VII-A "SZipf": 100,000 points, each coordinate skew-Zipf on [0, 1).

    The paper gives "a CDF of (1/ln 2) / (X + 1)" on [0, 1); read as a density,
    f(x) = 1 / (ln 2 (x + 1)) integrates to 1 on [0, 1), so we take that density
    (CDF F(x) = log2(1 + x), twice as dense at 0 as at 1) with independent
    coordinates, sampled by inversion x = 2^U - 1. Nothing falls outside [0, 1).
    """
    rng = np.random.default_rng(seed)
    xy = np.exp2(rng.random((100_000, 2))) - 1.0
    return _synthetic("szipf", "Skew Zipf",
                      "100,000 points whose coordinates independently follow the skew Zipf density "
                      "1 / (ln 2 (x + 1)) on [0, 1), the SZipf set of the DAM paper (Sec. VII-A; its "
                      "\"CDF\" is read as this density). Densest in the south-west corner.",
                      xy, 0.0, 1.0)


#: MNormal components (mean on the diagonal, rho). The paper lists Normal(0, 0, 1, 1, rho)
#: for all three, but its reported range [-4.25, 6.18] x [-4.32, 6.44] needs a component
#: centred near (2, 2); we take centres (0, 0), (1, 1), (2, 2).
MNORMAL_COMPONENTS = ((0.0, 0.5), (1.0, 0.0), (2.0, -0.2))


def _mnormal(seed: int) -> Dataset:
    """DAM paper Sec. VII-A "MNormal": three 100,000-point normals with rho 0.5, 0, -0.2.

    Unit variances; centres (0, 0), (1, 1), (2, 2) (see :data:`MNORMAL_COMPONENTS`).
    Native domain [-5, 7)^2: five standard deviations beyond the outer centres.
    """
    rng = np.random.default_rng(seed)
    xy = np.concatenate([_inside(lambda k, m=m, r=r: _correlated_normal(rng, k, m, r), 100_000, -5.0, 7.0)
                         for m, r in MNORMAL_COMPONENTS])
    return _synthetic("mnormal", "Multi-centre normal",
                      "300,000 points: three 100,000-point unit-variance normals with correlations 0.5, 0 and "
                      "-0.2, the MNormal set of the DAM paper (Sec. VII-A). The paper writes all centres as "
                      "(0, 0) but reports a range reaching 6.4, so the centres are taken as (0, 0), (1, 1) "
                      "and (2, 2). The very rare points outside the native domain are redrawn.", xy, -5.0, 7.0)


def gaussian_mixture(n_points: int = 100_000, n_clusters: int = 20, cluster_std: float = 0.03,
                     seed: int = 0) -> Dataset:
    """A uniform mixture of random 2-D Gaussians on [0, 1)^2 (heatmaps paper App. E.3).

    As in the paper, each Gaussian's mean and covariance are random: means are
    uniform in [0.1, 0.9]^2; each covariance has a random orientation and axis
    standard deviations ``cluster_std`` x U(0.5, 1.5) (in units of the square's
    side). Each point picks its cluster uniformly. The paper varies the number of
    clusters (5 to 80; 20 in its first experiment, our default) to control
    sparsity. Points outside [0, 1)^2 are redrawn, so exactly ``n_points`` are
    returned. The default parameters give the registered ``gmm`` dataset.
    """
    for label, value, lo, hi in (("n_points", n_points, 1, 5_000_000), ("n_clusters", n_clusters, 1, 1000)):
        require(isinstance(value, (int, np.integer)) and not isinstance(value, bool) and lo <= value <= hi,
                f"{label} must be a whole number from {lo:,} to {hi:,}, got {value!r}")
    require(isinstance(cluster_std, (int, float, np.floating, np.integer)) and 0 < cluster_std <= 0.25,
            f"cluster_std must be in (0, 0.25] (a fraction of the square's side), got {cluster_std!r}")
    rng = np.random.default_rng(check_seed(seed))
    means = rng.uniform(0.1, 0.9, (n_clusters, 2))
    angle = rng.uniform(0.0, np.pi, n_clusters)
    rot = np.stack([np.stack([np.cos(angle), -np.sin(angle)], -1),
                    np.stack([np.sin(angle), np.cos(angle)], -1)], -2)       # (k, 2, 2)
    shape = rot * (cluster_std * rng.uniform(0.5, 1.5, (n_clusters, 1, 2)))  # rot @ diag(std)

    def draw(k: int) -> np.ndarray:
        which = rng.integers(n_clusters, size=k)
        return means[which] + np.einsum("kij,kj->ki", shape[which], rng.standard_normal((k, 2)))

    xy = _inside(draw, int(n_points), 0.0, 1.0)
    default = (n_points, n_clusters, cluster_std) == (100_000, 20, 0.03)
    name = "gmm" if default else f"gmm:n={n_points},k={n_clusters},std={cluster_std:g}"
    return _synthetic(name, f"Gaussian mixture ({n_clusters} clusters)",
                      f"{n_points:,} points from a uniform mixture of {n_clusters} Gaussians with random means "
                      f"and covariances (spread about {cluster_std:g} of the side), as the synthetic data of the "
                      "DP heatmaps paper (App. E.3). Points falling outside the square are redrawn.",
                      xy, 0.0, 1.0)


def _uniform(seed: int) -> Dataset:
    rng = np.random.default_rng(seed)
    return _synthetic("uniform", "Uniform", "100,000 points uniform on the square: no structure to find.",
                      rng.random((100_000, 2)), 0.0, 1.0)


#: The registered synthetic sets by name (seed -> Dataset); :mod:`ldpviz.data.datasets` lists them after the real data.
BUILDERS: dict[str, Callable[[int], Dataset]] = {
    "normal": _normal,
    "szipf": _szipf,
    "mnormal": _mnormal,
    "gmm": lambda seed: gaussian_mixture(seed=seed),
    "uniform": _uniform,
}


@functools.lru_cache(maxsize=8)
def _registered_label(name: str) -> str:
    return BUILDERS[name](0).label
