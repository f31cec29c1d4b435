"""A big synthetic set (``normal:n=100000000``) run chunk by chunk in bounded memory (issue 30.5).

:mod:`ldpviz.data.synthetic` draws ``NAME:n=N`` in chunks of :data:`~ldpviz.data.synthetic.CHUNK` points, chunk
``i`` from its own generator ``(seed, i)``. Holding all N points and binning them at once (the in-memory path of
:func:`ldpviz.experiment.run`) needs about :data:`~ldpviz.data.synthetic.BYTES_PER_POINT` bytes a point. For a
mechanism whose reports reduce to an additive statistic (the frequency oracles, see
:func:`ldpviz.experiment.partitioned.check_splittable`) no point needs to outlive its chunk: each chunk is drawn,
binned and perturbed (aggregate or per-user path, by the cost model) and only its statistic and true cell counts
are kept; :func:`ldpviz.experiment.partitioned.run_partitioned` adds them up (integer sums, exact) and estimates
once. Memory is then one chunk's work plus the grid, whatever N.

The points are exactly :func:`ldpviz.data.synthetic.generate`'s (the same chunks); the reports are drawn from the
streams of a partitioned run, ``(seed, trial, chunk)``. AQE is scored against the true density of the cells
rather than the exact points (no point is kept), as in every partitioned run; the result's notes say both.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ldpviz import mechanisms, wording
from ldpviz.data import synthetic
from ldpviz.geo.domain import Grid, Region
from ldpviz.errors import LdpvizInputError
from ldpviz.experiment import Result, Scenario, coverage, guarantee_with_region
from ldpviz.experiment.partitioned import check_splittable, run_partitioned, synthetic_region

#: Sets above this many points are run chunk by chunk when the mechanism allows it (the in-memory path holds
#: every point; 10 million take about 1 GB there, see docs/data-loading.md).
CHUNKED_ABOVE = 10_000_000


@dataclass(frozen=True)
class ChunkSource:
    """The chunks of ``NAME:n=N`` as partitions (:class:`ldpviz.experiment.partitioned.PartitionSource`)."""

    name: str
    n: int
    seed: int = 0

    @property
    def description(self) -> str:
        return f"{self.n:,} points of {self.name}"

    def partitions(self) -> list[int]:
        return list(range((self.n + synthetic.CHUNK - 1) // synthetic.CHUNK))

    def load(self, handle: int, index: int) -> tuple[np.ndarray, np.ndarray]:
        return synthetic.chunk(self.name, self.n, int(handle), self.seed)


def applies(scenario: Scenario) -> bool:
    """True when ``scenario`` is a sized synthetic set above :data:`CHUNKED_ABOVE` points, every point takes part
    (no ``n_users`` below N: a seeded subsample needs them all), and its mechanism can be split."""
    sized = synthetic.parse_name(scenario.dataset) if isinstance(scenario.dataset, str) else None
    if sized is None or sized[1] <= CHUNKED_ABOVE or (scenario.n_users is not None and scenario.n_users < sized[1]):
        return False
    try:
        check_splittable(_mechanism(scenario, _region(scenario)))
    except LdpvizInputError:
        return False          # the in-memory path runs it, or says in one line why it cannot
    return True


def run(scenario: Scenario) -> Result:
    """Run ``scenario`` (for which :func:`applies`) chunk by chunk; the result states how."""
    name, n = synthetic.parse_name(scenario.dataset)
    region = _region(scenario)
    mech = _mechanism(scenario, region)
    source = ChunkSource(name, n, scenario.seed)
    result = run_partitioned(scenario, source, region).result
    notes = [f"Drawn, binned and perturbed chunk by chunk ({len(source.partitions()):,} chunks of up to "
             f"{synthetic.CHUNK:,} points) in bounded memory; only each chunk's report statistic and cell counts "
             "are kept, so AQE is scored against the true cell density, not the exact points."]
    if scenario.n_users is not None and scenario.n_users > result.n_users:
        notes.append(wording.capped(scenario.n_users, result.n_users))
    return replace(result, notes=notes + list(result.notes),
                   guarantee=guarantee_with_region(mech, region, scenario.epsilon),
                   coverage=coverage(mech, region, result.n_users, result.n_outside))


def _region(scenario: Scenario) -> Region:
    return scenario.region if isinstance(scenario.region, Region) else synthetic_region(scenario.region)


def _mechanism(scenario: Scenario, region: Region) -> mechanisms.Mechanism:
    return mechanisms.create(scenario.mechanism, Grid(region, scenario.grid_side), scenario.epsilon,
                             **scenario.param_dict)
