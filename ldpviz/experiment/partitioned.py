"""One scenario split into partitions of users: serially here, or on a Dask cluster, with the same result.

A frequency oracle's server needs only a sufficient statistic of the reports
(a report histogram or support counts, :mod:`ldpviz.mechanisms.fo.oracles`), and the
statistics of disjoint groups of users add up. So a population too large for
one machine is cut into partitions; each partition's users are binned on the
public grid and perturb their cells (per-user or aggregate path, chosen per
partition by the cost model) with randomness derived only from
``(seed, trial, partition)`` -- ``numpy.random.SeedSequence([seed, trial])
.spawn(n_partitions)[partition]`` -- and return the statistic. The client sums
the statistics (integer sums: exact in any order) and estimates once.
:func:`run_partitioned` with ``executor=None`` runs the partitions one after
the other in this process: that is the *serial run* a cluster run equals
exactly, array for array.

Where the users come from is a :class:`PartitionSource`, a small interface:
``partitions()`` lists one picklable handle per partition (an index, or a Dask
delayed frame) and ``load(handle, index)`` turns a handle into the partition's
``(lon, lat)`` arrays, deterministically. Two sources are provided:

* :class:`SyntheticSource` -- ``n_users`` points of a synthetic generator, drawn
  per partition from its own stream ``SeedSequence([seed, DATA_KEY]).spawn(P)``;
  the generator is any ``sampler(n, rng) -> (lon, lat)``
  (:func:`synthetic_sampler` gives the bundled synthetic sets as samplers that
  draw any number of points; when the datasets package gains chunkable generators they
  plug in here unchanged);
* :class:`ParquetSource` -- a Parquet file or directory read as a
  ``dask.dataframe`` (one partition per Dask partition, read on the workers).

Only mechanisms whose reports reduce to an additive statistic can be split
(those implementing :meth:`~ldpviz.mechanisms.base.Mechanism.statistic`: the
frequency oracles and the exact histogram). Mechanisms without a client half
-- central-DP heatmaps, the multi-round PrivAG and AAG, PLDP, and mechanisms on
the occupied domain -- need every user's data, or a plan built from a first
round, on the server, so they cannot be split: :func:`check_splittable` says
so. Dask is optional (``pip install 'ldpviz[cluster]'``) and imported only when
a cluster or a Parquet source is used. The command line's half (``ldpviz run
--scheduler``/``--partition-users``) is in :mod:`ldpviz.cli.commands`.
"""

from __future__ import annotations

import math
import os
import resource
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol

import numpy as np
import pandas as pd

from ldpviz.data import file_formats, synthetic
from ldpviz import mechanisms, metrics
from ldpviz.geo.domain import Grid, Region
from ldpviz.errors import LdpvizInputError, require
from ldpviz.experiment import Result, Scenario, guarantee_with_region
from ldpviz.mechanisms.accounting import collection_ledger
from ldpviz.mechanisms.base import CENTRAL_DP, Mechanism
from ldpviz.mechanisms.fo.oracles import merge_statistics

#: Default users per partition: about 100 MB of working memory per task.
DEFAULT_PARTITION_USERS = 1_000_000
MAX_PARTITIONS = 100_000
#: Second word of the data streams' seed (the perturbation streams use the trial number there).
DATA_KEY = 0xDA7A


# ---------------------------------------------------------------------------- sources

class PartitionSource(Protocol):
    """Where the users come from, one partition at a time (see the module docstring)."""

    description: str

    def partitions(self) -> list[Any]:
        """One picklable handle per partition, in a fixed order."""

    def load(self, handle: Any, index: int) -> tuple[np.ndarray, np.ndarray]:
        """The partition's (lon, lat) arrays; the same for the same (handle, index) wherever it runs."""


Sampler = Callable[[int, np.random.Generator], tuple[np.ndarray, np.ndarray]]


@dataclass(frozen=True)
class SyntheticSampler:
    """A bundled synthetic set as a sampler of any number of points (lon, lat), mapped as ldpviz.data.datasets maps it.

    ``uniform``: uniform on the square; ``normal``: Normal(0, 0, 1, 1, rho 0.5) kept in (-5, 5)^2;
    ``szipf``: independent coordinates of density 1/(ln 2 (x + 1)) on [0, 1); ``mnormal``: each point
    from one of the three components of :data:`ldpviz.data.synthetic.MNORMAL_COMPONENTS` chosen uniformly
    (the bundled set has exactly a third in each), kept in [-5, 7)^2. Same laws as the bundled sets
    (DAM paper Sec. VII-A), at any size.
    """

    name: str

    def __call__(self, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        if self.name == "uniform":
            xy, low, high = rng.random((n, 2)), 0.0, 1.0
        elif self.name == "szipf":
            xy, low, high = np.exp2(rng.random((n, 2))) - 1.0, 0.0, 1.0
        elif self.name == "normal":
            low, high = -5.0, 5.0
            xy = synthetic._inside(lambda k: synthetic._correlated_normal(rng, k, 0.0, 0.5), n, low, high)
        else:  # mnormal
            low, high = -5.0, 7.0
            which = rng.integers(0, len(synthetic.MNORMAL_COMPONENTS), size=n)
            xy = np.empty((n, 2))
            for c, (mean, rho) in enumerate(synthetic.MNORMAL_COMPONENTS):
                mine = which == c
                xy[mine] = synthetic._inside(lambda k, m=mean, r=rho: synthetic._correlated_normal(rng, k, m, r),
                                            int(mine.sum()), low, high)
        whole = synthetic._square_presets()["Whole square"]
        return whole.unit_to_lonlat((xy - low) / (high - low))


SYNTHETIC_SAMPLERS = ("uniform", "normal", "szipf", "mnormal")


def synthetic_region(preset: str | None = None) -> Region:
    """A region preset of the synthetic sets (default: the whole 10 km square), with a clear error."""
    presets = synthetic._square_presets()
    require(preset is None or preset in presets,
            f"the synthetic datasets have no region preset {preset!r}; presets: {', '.join(presets)}")
    return presets[preset] if preset else next(iter(presets.values()))


def synthetic_sampler(name: str) -> SyntheticSampler:
    """The sampler of a bundled synthetic set (clear error for sets that cannot be drawn per partition)."""
    require(name in SYNTHETIC_SAMPLERS,
            f"dataset {name!r} cannot be generated per partition; choose one of {', '.join(SYNTHETIC_SAMPLERS)} "
            "or give a Parquet file")
    return SyntheticSampler(name)


def partition_sizes(n_users: int, partition_users: int) -> list[int]:
    """Split n users into ceil(n / partition_users) partitions whose sizes differ by at most one."""
    require(isinstance(n_users, (int, np.integer)) and n_users >= 1,
            f"number of users must be a whole number >= 1, got {n_users!r}")
    require(isinstance(partition_users, (int, np.integer)) and partition_users >= 1,
            f"users per partition must be a whole number >= 1, got {partition_users!r}")
    k = math.ceil(n_users / partition_users)
    require(k <= MAX_PARTITIONS, f"{n_users:,} users in partitions of {partition_users:,} make {k:,} partitions, "
                                 f"more than {MAX_PARTITIONS:,}; use larger partitions")
    base, extra = divmod(int(n_users), k)
    return [base + (i < extra) for i in range(k)]


@dataclass(frozen=True)
class SyntheticSource:
    """``n_users`` points from ``sampler``, partition i drawn from SeedSequence([seed, DATA_KEY]).spawn(P)[i]."""

    sampler: Sampler
    n_users: int
    seed: int = 0
    partition_users: int = DEFAULT_PARTITION_USERS
    description: str = "synthetic"

    def partitions(self) -> list[int]:
        return list(partition_sizes(self.n_users, self.partition_users))

    def load(self, handle: int, index: int) -> tuple[np.ndarray, np.ndarray]:
        # = SeedSequence([seed, DATA_KEY]).spawn(P)[index], built from its spawn key
        stream = np.random.SeedSequence([int(self.seed), DATA_KEY], spawn_key=(int(index),))
        return self.sampler(int(handle), np.random.default_rng(stream))


def require_dask(what: str) -> None:
    """Clear input error when Dask (an optional dependency) is missing."""
    try:
        import dask  # noqa: F401
        import dask.dataframe  # noqa: F401
    except ImportError:
        raise LdpvizInputError(f"{what} needs the optional Dask packages: pip install 'ldpviz[cluster]' "
                               "(or: pip install 'dask[dataframe,distributed]')") from None


class ParquetSource:
    """A Parquet file or directory as a dask.dataframe; one partition per Dask partition.

    The coordinate columns are found as :func:`ldpviz.data.datasets.load_file` finds them
    (or named); they must be numeric. Rows with a missing or impossible coordinate
    (non-finite, |lat| > 90, |lon| > 180) are dropped and counted per partition.
    """

    def __init__(self, path: str, lat_column: str | None = None, lon_column: str | None = None) -> None:
        require_dask("reading a Parquet file in partitions")
        import dask.dataframe as dd

        try:
            frame = dd.read_parquet(path)
        except (OSError, ValueError) as exc:
            raise LdpvizInputError(f"cannot read {path!r} as Parquet: {exc}".splitlines()[0]) from None
        columns = [str(c) for c in frame.columns]
        lat_i = file_formats.find_column(columns, lat_column, file_formats.LAT_NAMES)
        lon_i = file_formats.find_column(columns, lon_column, file_formats.LON_NAMES)
        require(lat_i is not None and lon_i is not None,
                f"{path}: no latitude/longitude columns found among {', '.join(columns)}; name them with "
                "--lat-column and --lon-column")
        self.lat, self.lon = columns[lat_i], columns[lon_i]
        for col in (self.lat, self.lon):
            require(pd.api.types.is_numeric_dtype(frame.dtypes[col]),
                    f"{path}: column {col!r} holds {frame.dtypes[col]}, not numbers; convert it to a numeric type")
        self.frame = frame[[self.lon, self.lat]]
        self.description = f"{path} ({self.frame.npartitions} Parquet partitions)"

    def partitions(self) -> list[Any]:
        return list(self.frame.to_delayed())

    def __getstate__(self) -> dict:   # workers need the column names, not the whole collection
        return {"lat": self.lat, "lon": self.lon, "description": self.description}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)

    def load(self, handle: Any, index: int) -> tuple[np.ndarray, np.ndarray]:
        if hasattr(handle, "compute"):   # serial run: read the partition here
            handle = handle.compute(scheduler="sync")
        return (handle[self.lon].to_numpy(np.float64, na_value=np.nan),
                handle[self.lat].to_numpy(np.float64, na_value=np.nan))


# ---------------------------------------------------------------------------- the work of one partition

@dataclass(frozen=True)
class Job:
    """What every partition task needs: public parameters only (region, grid, mechanism, seeds)."""

    region: Region
    grid_side: int
    mechanism: str
    epsilon: float
    params: tuple
    seed: int
    trials: int
    n_partitions: int

    def mechanism_instance(self) -> Mechanism:
        return mechanisms.create(self.mechanism, Grid(self.region, self.grid_side), self.epsilon,
                                 **dict(self.params))

    def rng(self, trial: int, index: int) -> np.random.Generator:
        """The perturbation stream of (seed, trial, partition): SeedSequence([seed, trial]).spawn(P)[index],
        built directly from its spawn key (the same stream, without spawning P children)."""
        require(0 <= index < self.n_partitions, f"partition {index} is not one of {self.n_partitions}")
        return np.random.default_rng(np.random.SeedSequence([int(self.seed), int(trial)], spawn_key=(int(index),)))


@dataclass
class PartitionResult:
    """A partition's contribution: one statistic per trial, the true histogram (for scoring only) and counts."""

    index: int
    statistics: list
    true_counts: np.ndarray
    n_users: int
    n_outside: int
    n_invalid: int
    seconds: float
    peak_rss_bytes: int    #: peak resident memory of the process that ran it, so far (bytes)
    pid: int               #: that process (one per worker on a process cluster)


def _peak_rss_bytes() -> int:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak if sys.platform == "darwin" else peak * 1024)


def run_partition(job: Job, source: PartitionSource, handle: Any, index: int) -> PartitionResult:
    """Load, bin and perturb one partition; return its statistics (what a worker sends back)."""
    t0 = time.perf_counter()
    lon, lat = source.load(handle, index)
    lon = np.asarray(lon, dtype=np.float64)
    lat = np.asarray(lat, dtype=np.float64)
    valid = np.isfinite(lon) & np.isfinite(lat) & (np.abs(lat) <= 90.0) & (np.abs(lon) <= 180.0)
    mech = job.mechanism_instance()
    users = mech.grid.bin_lonlat(lon[valid], lat[valid])
    stats = [mech.statistic(mech.collect(users, job.rng(t, index))) if len(users.cells) else None
             for t in range(job.trials)]
    true_counts = np.bincount(users.cells, minlength=mech.grid.n_cells)
    return PartitionResult(index, stats, true_counts, len(users.cells), users.n_outside, int((~valid).sum()),
                           time.perf_counter() - t0, _peak_rss_bytes(), os.getpid())


# ---------------------------------------------------------------------------- the whole scenario

def check_splittable(mech: Mechanism) -> None:
    """Clear input error unless ``mech``'s users can perturb in partitions whose statistics add up."""
    if not mech.has_client:
        if mech.privacy_model == CENTRAL_DP:
            why = "it is a central-DP aggregator: a trusted curator needs every exact point"
        elif mech.name in ("privag", "aag"):
            why = "it runs in two rounds: the second round's grid is built from the first round's estimate"
        elif getattr(mech, "domain", None) == "occupied":
            why = "its domain (the occupied tiles) is built from the users' own data"
        elif mech.name == "pldp":
            why = "its public sign matrix is drawn per collection and its server needs every report of it"
        else:
            why = "it has no client half (its server draws a statistic of all the users at once)"
        raise LdpvizInputError(f"mechanism {mech.name!r} cannot be split across partitions: {why}; run it "
                               "without --scheduler")
    if type(mech).statistic is Mechanism.statistic:
        can = [n for n in mechanisms.available() if mechanisms.get(n).statistic is not Mechanism.statistic]
        raise LdpvizInputError(
            f"mechanism {mech.name!r} does not reduce its reports to an additive statistic yet, so it cannot be "
            f"split across partitions; mechanisms that can: {', '.join(can)}")


@dataclass
class PartitionedRun:
    """A :class:`~ldpviz.experiment.Result` plus what each partition reported."""

    result: Result
    partitions: list[PartitionResult] = field(default_factory=list)

    @property
    def users_per_second(self) -> float:
        return self.result.n_users / max(self.result.timings["total"], 1e-12)


def run_partitioned(scenario: Scenario, source: PartitionSource, region: Region, *, executor: Any = None,
                    progress: Callable[[int, int], None] | None = None) -> PartitionedRun:
    """Run ``scenario`` over ``source``'s partitions; ``executor=None`` is the serial run, a Dask client the
    cluster run (same statistics, bit for bit). ``scenario.n_users`` is ignored: the source fixes the users.

    AQE is scored against the true density (the exact points are never gathered in one place).
    """
    t0 = time.perf_counter()
    require(isinstance(region, Region), "a partitioned run needs a fixed region (a bbox or a preset)")
    handles = source.partitions()
    require(len(handles) >= 1, f"{source.description} has no partitions")
    job = Job(region, scenario.grid_side, scenario.mechanism, scenario.epsilon, scenario.params, scenario.seed,
              scenario.trials, len(handles))
    mech = job.mechanism_instance()
    check_splittable(mech)
    parts: list[PartitionResult] = []
    if executor is None:
        for i, handle in enumerate(handles):
            parts.append(run_partition(job, source, handle, i))
            if progress:
                progress(i + 1, len(handles))
    else:
        parts = _run_on_dask(executor, job, source, handles, progress)
    parts.sort(key=lambda p: p.index)
    t1 = time.perf_counter()
    n = int(sum(p.n_users for p in parts))
    require(n > 0, f"none of the points of {source.description} lie in the region")
    grid = mech.grid
    true_counts = np.sum([p.true_counts for p in parts], axis=0)
    true_density = true_counts.reshape(grid.side, grid.side) / n
    queries = metrics.random_queries(scenario.query_rho, seed=scenario.seed)
    estimates, rows = [], []
    for t in range(scenario.trials):
        stat = merge_statistics([p.statistics[t] for p in parts if p.statistics[t] is not None])
        est = mech.estimate(stat)
        est.info["partitions"] = len(parts)
        estimates.append(est)
        rows.append({"trial": t, **metrics.evaluate(true_density, est, cell_m=grid.cell_m, n_users=n,
                                                   queries=queries)})
    n_outside = int(sum(p.n_outside for p in parts))
    n_invalid = int(sum(p.n_invalid for p in parts))
    notes = [f"{len(parts):,} partitions ({'a Dask cluster' if executor is not None else 'serially, here'}); "
             f"paths: {', '.join(sorted({e.info.get('path', '?') for e in estimates}))}."]
    if n_outside:
        notes.append(f"{n_outside:,} points lie outside the region and were left out.")
    if n_invalid:
        notes.append(f"{n_invalid:,} rows had a missing or impossible coordinate and were left out.")
    timings = {"partitions": t1 - t0, "estimate": time.perf_counter() - t1, "total": time.perf_counter() - t0}
    ledger = collection_ledger(mech, region)
    result = Result(scenario, region, grid, true_density, estimates, pd.DataFrame(rows), timings, n, n_outside,
                    guarantee_with_region(mech, region, scenario.epsilon, ledger), notes, ledger=ledger)
    return PartitionedRun(result, parts)


def _run_on_dask(client: Any, job: Job, source: PartitionSource, handles: list[Any],
                 progress: Callable[[int, int], None] | None) -> list[PartitionResult]:
    """Submit one task per partition to a ``distributed.Client``; gather as they finish."""
    from dask import delayed
    from distributed import as_completed

    tasks = [delayed(run_partition, pure=False)(job, source, handle, i) for i, handle in enumerate(handles)]
    futures = client.compute(tasks)
    out = []
    for done, fut in enumerate(as_completed(futures), start=1):
        out.append(fut.result())
        fut.release()
        if progress:
            progress(done, len(handles))
    return out

