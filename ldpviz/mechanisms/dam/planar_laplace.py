"""Planar Laplace (geo-indistinguishability) on the grid, with remapping and EM estimation.

Andres et al., "Geo-Indistinguishability: Differential Privacy for Location-Based
Systems", CCS'13 (ref. [20] of dam-disk-area-mechanism.md): noise with density
D(z) = eps^2 / (2 pi) e^{-eps |z|} gives eps-geo-indistinguishability; discretising the
output and remapping it to the nearest point of the area of interest (their Sec. 4.2)
are post-processing and keep the guarantee.

Units: ``epsilon`` is per km (``GEO_I_UNIT_M`` in :mod:`ldpviz.mechanisms.base`), so the
guarantee is the same on every grid; the kernel works in cell units with
``eps_cell = epsilon * cell side / 1 km`` (:attr:`Mechanism.epsilon_per_cell`).

Discretisation used here (cell units, eps_cell per cell side):

* k(delta) = the density integrated over the cell at offset delta by an 8 x 8 midpoint
  rule. Because the rule uses the same nodes for every input, the discrete kernel
  keeps the pointwise bound k(z - x) <= e^{eps |x - x'|} k(z - x') exactly
  (triangle inequality at every node);
* the kernel window reaches ``1.42 d + 40 / eps_cell`` cells, beyond which the dropped
  mass is below e^-40 relative to any kept probability;
* a report is the true cell plus an offset drawn from k, remapped to the nearest grid
  cell (each coordinate clamped to [0, d-1]). The output domain is the grid itself.

The server runs EM/EMS (Li et al. SIGMOD'20) through FFT convolutions.

Aggregate path (``path``, :mod:`ldpviz.mechanisms.collection_paths`): the server reads only the report
histogram, drawn exactly by :meth:`ldpviz.mechanisms.dam.kernels.ClampedChannel.aggregate` (a multinomial over
the kernel's offsets for every cell holding more users than the kernel has offsets, one draw per
user elsewhere). It pays only where cells hold more users than the kernel has offsets (small grids,
large epsilon, many users); 'auto' compares the two by a cost model measured on both
(:data:`PER_USER_SECONDS_PER_USER`, :data:`AGGREGATE_SECONDS_PER_DRAW`, :data:`AGGREGATE_SECONDS_PER_CELL`).
"""

from __future__ import annotations

import math

import numpy as np

from ldpviz.geo.domain import Binned
from ldpviz.errors import require
from ldpviz.mechanisms.estimation import expectation_maximisation
from ldpviz.mechanisms.dam.kernels import ClampedChannel
from ldpviz.mechanisms import register
from ldpviz.mechanisms.base import GEO_I, GEO_I_UNIT, GEO_I_UNIT_M, Estimate, Mechanism
from ldpviz.mechanisms.dam.disk_area import FAMILY_SPATIAL, POSTPROCESS_PARAM
from ldpviz.mechanisms.fo.oracles import ReportHistogram, report_histogram
from ldpviz.mechanisms.path_cost import AGGREGATE, PER_USER
from ldpviz.mechanisms.collection_paths import TwoPaths, path_param

QUADRATURE_NODES = 8
TAIL_NATS = 40.0
MAX_KERNEL_RADIUS = 1500
MAX_CHANNEL_SIDE = 32
#: 'auto' cost model (seconds), read off ClampedChannel.sample + bincount against .aggregate at d = 8, 16, 64,
#: epsilon = 1 to 30 per km, 1e4 to 1e7 users (min of 3) on the development machine, 2026-11-23: 0.4-3.6e-7 s per
#: user, 1.2-3.3e-7 s per draw. Where every draw is a single user's (no crowded cell), the aggregate is the per-user
#: path plus a bincount of the true cells (AGGREGATE_SECONDS_PER_USER), so 'auto' keeps the per-user path there.
PER_USER_SECONDS_PER_USER = 1.5e-7
AGGREGATE_SECONDS_PER_DRAW = 1.5e-7
AGGREGATE_SECONDS_PER_CELL = 1.0e-6
AGGREGATE_SECONDS_PER_USER = 1.0e-8


def planar_laplace_kernel(epsilon: float, radius: int, nodes: int = QUADRATURE_NODES) -> np.ndarray:
    """Planar Laplace density integrated over every cell at offsets [-radius, radius]^2.

    The quadrature nodes are symmetric about each cell's centre, so the kernel is even in both offsets:
    one quadrant is computed (a quarter of the work) and mirrored, value for value."""
    r = np.arange(0, radius + 1, dtype=float)
    dy, dx = np.meshgrid(r, r, indexing="ij")
    k = np.zeros_like(dx)
    sub = (np.arange(nodes) + 0.5) / nodes - 0.5
    for oy in sub:
        for ox in sub:
            k += np.exp(-epsilon * np.hypot(dx + ox, dy + oy))
    k *= epsilon * epsilon / (2 * math.pi) / nodes ** 2
    k = np.concatenate([k[:0:-1], k], axis=0)
    return np.concatenate([k[:, :0:-1], k], axis=1)


@register
class PlanarLaplace(TwoPaths, Mechanism):
    """Discretised planar Laplace with remapping to the grid (Andres et al. CCS'13)."""

    name = "planar-laplace"
    label = "Planar Laplace (geo-indistinguishability)"
    family = FAMILY_SPATIAL
    privacy_model = GEO_I
    reference = "Andres et al. CCS'13 (ref. [20] of dam-disk-area-mechanism.md), Sec. 4"
    summary = ("Each phone moves its location by random noise that is likelier to be small than large, then "
               "snaps it to the nearest cell; nearby places stay hard to tell apart.")
    params = (POSTPROCESS_PARAM,
              path_param("the report histogram (a multinomial over the kernel's offsets per crowded cell)",
                         "n users against sum over cells of min(users, kernel offsets) draws"))
    has_channel = True

    def setup(self) -> None:
        d = self.grid.side
        eps_cell = self.epsilon_per_cell
        radius = int(math.ceil(1.42 * d + TAIL_NATS / eps_cell))
        if radius > MAX_KERNEL_RADIUS:
            least = TAIL_NATS / (MAX_KERNEL_RADIUS - 1.42 * d) * GEO_I_UNIT_M / self.grid.cell_m if \
                MAX_KERNEL_RADIUS > 1.42 * d else math.inf
            require(False, f"planar Laplace at epsilon = {self.epsilon:g} per {GEO_I_UNIT} on cells of "
                           f"{self.grid.cell_m:.4g} m spreads reports over more than {MAX_KERNEL_RADIUS} cells; "
                           f"use a larger epsilon (e.g. >= {least:.2g} per {GEO_I_UNIT}), larger cells or a "
                           f"smaller grid")
        self.kernel_radius = radius
        self.chan = ClampedChannel(d, planar_laplace_kernel(eps_cell, radius))

    def per_user(self, users: Binned, rng: np.random.Generator) -> np.ndarray:
        return self.chan.sample(users.cells, rng)

    def aggregate(self, users: Binned, rng: np.random.Generator) -> ReportHistogram:
        counts = np.bincount(np.asarray(users.cells, dtype=np.int64), minlength=self.grid.n_cells)
        return ReportHistogram(self.chan.aggregate(counts, rng), int(counts.sum()), AGGREGATE)

    def choose(self, users: Binned) -> str:
        counts = np.bincount(np.asarray(users.cells, dtype=np.int64), minlength=self.grid.n_cells)
        aggregate = (AGGREGATE_SECONDS_PER_DRAW * self.chan.aggregate_draws(counts)
                     + AGGREGATE_SECONDS_PER_CELL * self.chan.crowded_cells(counts)
                     + AGGREGATE_SECONDS_PER_USER * len(users.cells))
        return AGGREGATE if aggregate < PER_USER_SECONDS_PER_USER * len(users.cells) else PER_USER

    def statistic(self, reports: np.ndarray | ReportHistogram) -> ReportHistogram:
        """The histogram of reported cells (additive over groups of users)."""
        return report_histogram(reports, self.grid.n_cells)

    def estimate(self, reports: np.ndarray | ReportHistogram) -> Estimate:
        d = self.grid.side
        hist = self.statistic(reports)
        counts = np.asarray(hist.counts, dtype=float).reshape(d, d)
        density, info = expectation_maximisation(counts, self.chan.forward, self.chan.adjoint, (d, d),
                                                 smoothing=self.postprocess == "ems")
        return Estimate(density, raw=counts, info={
            "reports": int(counts.sum()), "output_cells": d * d, "epsilon_per_m": self.epsilon / GEO_I_UNIT_M,
            "mean_noise_m": 2.0 / self.epsilon * GEO_I_UNIT_M, "postprocess": self.postprocess, **info,
            **self.path_info(hist.path)})

    def channel(self) -> np.ndarray:
        # The folded kernel (ClampedChannel) keeps each column's sum to a (3d)^2 box, so d = 32 is cheap.
        require(self.grid.side <= MAX_CHANNEL_SIDE,
                f"the explicit planar Laplace channel is built for grids of side <= {MAX_CHANNEL_SIDE}")
        return self.chan.dense()

    def guarantee(self) -> str:
        return (f"epsilon-geo-indistinguishability with epsilon = {self.epsilon:g} per {GEO_I_UNIT} "
                f"({self.epsilon / GEO_I_UNIT_M:.3g} per metre, {self.epsilon_per_cell:.3g} per cell side of "
                f"{self.grid.cell_m:.4g} m)")
