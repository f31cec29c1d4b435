"""The Disk Area Mechanism family: DAM, DAM-NS and HUEM on the d x d grid.

dam-disk-area-mechanism.md: SAM (Def. 4), HUEM (Def. 5, Appendix A), DAM (Def. 8,
eq. 3), the optimal radius (eq. 12), bucketizing with border shrinkage (Sec. VI-A,
eq. 13-14, Theorem VI.1, Algorithm 2) and EM post-processing (Sec. VI-B, Algorithm 1).

Each user reports one cell of the *output domain*: the input grid grown by the disk, so
a report may fall outside the region. A cell whose centre lies within ``b_hat`` cells of
the user's cell is reported with weight e^eps, a cell the circle crosses with its centre
outside with weight 1 + (e^eps - 1) S (S the shrunken high area of Theorem VI.1), every
other domain cell with weight 1; dividing by the total weight gives p_hat and q_hat.
The channel is translation invariant, so sampling and the EM post-processing run as
FFT convolutions (:mod:`ldpviz.mechanisms.dam.kernels`).

Choices where the paper is open (documented for the dashboard):

* ``b_hat = floor(b)`` with b in cells (Sec. VI-A); b defaults to eq. (12) with L = d.
* HUEM has no radius rule in the paper; it uses the same default radius as DAM.
* PostProcess is "EM [6]" (Sec. VI-B), so ``postprocess`` defaults to plain EM; ``ems``
  adds [6]'s binomial smoothing after every step. On 2-D grids of d ~ 15 the (1,2,1)^2
  smoothing blurs concentrated data badly (W2 three times EM's on Normal, d = 15,
  eps = 3.5), which is why it is not the default. Stopping rule: count log-likelihood
  improvement < 1e-3 x number of cells, or 10,000 iterations (see ldpviz.mechanisms.estimation).
"""

from __future__ import annotations

import math
import time
from typing import Sequence

import numpy as np

from ldpviz.geo.domain import Binned
from ldpviz.errors import require
from ldpviz.mechanisms.estimation import expectation_maximisation, expectation_maximisation_batch
from ldpviz.mechanisms.dam.kernels import DiskChannel, dam_weights, huem_weights, optimal_radius
from ldpviz.mechanisms import register
from ldpviz.mechanisms.base import LDP, Estimate, Mechanism, Param, TrialRun
from ldpviz.mechanisms.fo.oracles import PATHS, ReportHistogram
from ldpviz.mechanisms.path_cost import AGGREGATE, AUTO, PER_USER, choose_disk_path

FAMILY_SPATIAL = "Spatial LDP (DAM paper)"
PAPER = "dam-disk-area-mechanism.md"
#: Largest disk radius (cells) accepted; the output box is (d + 2 b_hat)^2 cells.
MAX_RADIUS_CELLS = 1024
#: ... and at most this many grid sides: the paper's radii are at most ~2.5 d (eq. 12's optimum is below 1.5 d at
#: any epsilon, and its sweep goes to 1.67 x that). A disk of 64 d (1,024 cells on a 16 x 16 grid) puts each report
#: anywhere in a box ~16,000 times the region's area, carries practically no information about where the person
#: is, and took 40 s per collection to estimate (an EM over 2,064 x 2,064 output cells for 256 input cells).
MAX_RADIUS_SIDES = 8
#: Dense channels are only built up to this many entries.
MAX_DENSE_ENTRIES = 40_000_000

POSTPROCESS_PARAM = Param("postprocess", str, "em",
                          "server post-processing: 'em' = maximum-likelihood EM (the paper's PostProcess), "
                          "'ems' = EM with binomial smoothing (Li et al. SIGMOD'20)", choices=("em", "ems"))


class SpatialAreaMechanism(Mechanism):
    """Shared machinery of SAM instances on the grid (Def. 4 discretised, Sec. VI)."""

    family = FAMILY_SPATIAL
    privacy_model = LDP
    has_channel = True
    params = (
        Param("radius", float, None,
              "disk radius b in cells (reports within it are e^epsilon times likelier); default: the paper's "
              "optimal b of eq. (12) times radius_factor", minimum=0.0, maximum=MAX_RADIUS_CELLS),
        Param("radius_factor", float, 1.0,
              "multiple of the optimal radius used when 'radius' is not given (the paper sweeps 0.33 to 1.67)",
              minimum=0.01, maximum=20.0),
        POSTPROCESS_PARAM,
        Param("path", str, AUTO,
              "'per-user' simulates every phone; 'aggregate' draws the report histogram directly from its exact "
              "distribution (DiskChannel.aggregate); 'auto' (default) takes the one a cost model fitted to "
              "measured times predicts faster (ldpviz.mechanisms.path_cost)", choices=PATHS),
    )

    def kernel(self) -> tuple[np.ndarray, np.ndarray]:
        raise NotImplementedError

    def resolved_defaults(self) -> dict[str, float]:
        """The radius in use (cells, before flooring): radius_factor x the optimal b of eq. (12)."""
        return {"radius": self.radius_continuous}

    def setup(self) -> None:
        d = self.grid.side
        self.optimal_radius_cells = optimal_radius(self.epsilon, d)
        b = self.radius if self.radius is not None else self.radius_factor * self.optimal_radius_cells
        self.radius_continuous = float(b)
        self.radius_cells = int(math.floor(b + 1e-9))
        require(self.radius_cells <= MAX_RADIUS_CELLS,
                f"the disk radius of {self.radius_cells} cells is too large (at most {MAX_RADIUS_CELLS}); "
                f"lower radius or radius_factor")
        require(self.radius_cells <= MAX_RADIUS_SIDES * d,
                f"the disk radius of {self.radius_cells} cells is more than {MAX_RADIUS_SIDES} times the grid's side "
                f"({d} cells): every report would land anywhere in a box {((d + 2 * self.radius_cells) / d) ** 2:,.0f} "
                f"times the region's area and say practically nothing about where the person is (the paper's radii "
                f"are at most about 2.5 x the side); use a radius of at most {MAX_RADIUS_SIDES * d} cells, or a "
                "smaller radius_factor")
        weight, footprint = self.kernel()
        self.chan = DiskChannel(d, weight, footprint)

    # ---- client ----------------------------------------------------------
    def perturb(self, users: Binned, rng: np.random.Generator) -> np.ndarray | ReportHistogram:
        """GridAreaResponse (Algorithm 2), vectorised: flat index into the (D, D) output box (with
        ``path='aggregate'`` forced: the report histogram instead)."""
        if self.path == AGGREGATE:
            return self._histogram(self._true_counts(users), rng)
        return self.chan.sample(users.cells, rng)

    def _true_counts(self, users: Binned) -> np.ndarray:
        return np.bincount(np.asarray(users.cells, dtype=np.int64), minlength=self.grid.n_cells)

    def _histogram(self, counts: np.ndarray, rng: np.random.Generator) -> ReportHistogram:
        return ReportHistogram(self.chan.aggregate(counts, rng), int(counts.sum()))

    def collect(self, users: Binned, rng: np.random.Generator) -> np.ndarray | ReportHistogram:
        """Reports, or their exact histogram when :func:`~ldpviz.mechanisms.path_cost.choose_disk_path`
        predicts that faster (or ``path`` forces it)."""
        counts = None if self.path == PER_USER else self._true_counts(users)
        return self._draw(users, counts, self._collect_path(users, counts), rng)

    def _collect_path(self, users: Binned, counts: np.ndarray | None) -> str:
        if self.path == PER_USER:
            return PER_USER
        draws = float(self.chan.bump_draws(counts).sum())
        if self.path == AGGREGATE or choose_disk_path(len(users.cells), draws, self.chan.n_outputs) == AGGREGATE:
            return AGGREGATE
        return PER_USER

    def _draw(self, users: Binned, counts: np.ndarray | None, path: str,
              rng: np.random.Generator) -> np.ndarray | ReportHistogram:
        return self._histogram(counts, rng) if path == AGGREGATE else self.chan.sample(users.cells, rng)

    #: Run EM on all trials' histograms as one ``(T, D, D)`` stack? Issue 23 measured the stack slower than a
    #: loop (3.4 s against 1.45 s, d = 32): its transforms' temporaries were large enough for the allocator to
    #: hand them back to the system after every call. The pruned transforms of issue 28 (kernels._Convolver)
    #: and the stacked EM with one logarithm per step made the stack the faster of the two
    #: (docs/trials-benchmark.md), so it is on.
    batch_em = True

    def run_trials(self, users: Binned, rngs: Sequence[np.random.Generator]) -> TrialRun:
        """All trials: the path and the true counts once, each trial's reports drawn with its own generator
        (as :meth:`collect` draws them), then EM per trial, or on the ``(T, D, D)`` stack of histograms when
        :attr:`batch_em` (:func:`~ldpviz.mechanisms.estimation.expectation_maximisation_batch`, equal to the per-trial
        EM up to round-off of the batched FFTs). Trial t equals a one-trial run with ``rngs[t]``."""
        a = time.perf_counter()
        counts = None if self.path == PER_USER else self._true_counts(users)
        path = self._collect_path(users, counts)
        first, hists = None, []
        for trial, rng in enumerate(rngs):
            reports = self._draw(users, counts, path, rng)
            first = reports if trial == 0 else first
            hists.append(self.statistic(reports))
        b = time.perf_counter()
        if not self.batch_em:
            return TrialRun([self.estimate(h) for h in hists], first, b - a, time.perf_counter() - b)
        D, d = self.chan.out_side, self.grid.side
        stack = np.stack([np.asarray(h.counts, dtype=float).reshape(D, D) for h in hists])
        densities, infos = expectation_maximisation_batch(stack, self.chan.forward_batch, self.chan.adjoint_batch,
                                                          (d, d), smoothing=self.postprocess == "ems")
        estimates = [self._estimate(c, h, f, i) for c, h, f, i in zip(stack, hists, densities, infos)]
        return TrialRun(estimates, first, b - a, time.perf_counter() - b, batched=True)

    def statistic(self, reports: np.ndarray | ReportHistogram) -> ReportHistogram:
        """The histogram of reports over the output box (additive over groups of users)."""
        if isinstance(reports, ReportHistogram):
            return reports
        r = np.asarray(reports, dtype=np.int64)
        return ReportHistogram(np.bincount(r, minlength=self.chan.out_side ** 2), len(r), PER_USER)

    # ---- server ----------------------------------------------------------
    def estimate(self, reports: np.ndarray | ReportHistogram) -> Estimate:
        D = self.chan.out_side
        hist = self.statistic(reports)
        counts = np.asarray(hist.counts, dtype=float).reshape(D, D)
        d = self.grid.side
        density, info = expectation_maximisation(counts, self.chan.forward, self.chan.adjoint, (d, d),
                                                 smoothing=self.postprocess == "ems")
        return self._estimate(counts, hist, density, info)

    def _estimate(self, counts: np.ndarray, hist: ReportHistogram, density: np.ndarray, info: dict) -> Estimate:
        d = self.grid.side
        R = self.chan.radius
        outside = float(counts.sum() - counts[R:R + d, R:R + d].sum())
        return Estimate(density, raw=counts, info={
            "reports": int(counts.sum()), "reports_outside_region": int(outside),
            "output_cells": self.chan.n_outputs, "radius_cells": self.radius_cells,
            "radius_m": self.radius_cells * self.grid.cell_m, "optimal_radius_cells": self.optimal_radius_cells,
            "p_hat": float(self.chan.weight.max() / self.chan.z), "q_hat": 1.0 / self.chan.z,
            "postprocess": self.postprocess, "path": hist.path, "path requested": self.path, **info})

    def channel(self) -> np.ndarray:
        """P[y, x] over the output domain cells (row-major order of the (D, D) box) x input cells."""
        size = self.chan.n_outputs * self.grid.n_cells
        require(size <= MAX_DENSE_ENTRIES,
                f"the explicit channel would have {size:,} entries; use a grid of side <= 40 for it")
        return self.chan.dense()

    def output_cells(self) -> np.ndarray:
        """Flat (D, D)-box indices of the output domain, the row order of :meth:`channel`."""
        return self.chan.mask_cells


@register
class DAM(SpatialAreaMechanism):
    """Disk Area Mechanism with border shrinkage (Def. 8, Sec. VI-A, Theorem VI.1)."""

    name = "dam"
    label = "DAM (Disk Area Mechanism)"
    reference = f"{PAPER} Def. 8, eq. (12)-(14), Theorem VI.1, Algorithms 1-2"
    summary = ("Each phone reports a nearby cell: any cell within a disk around the true one is e^epsilon times "
               "likelier than the rest; the server inverts this blur.")

    shrink = True   #: crossed border cells get the shrunken high area of Theorem VI.1

    def kernel(self) -> tuple[np.ndarray, np.ndarray]:
        high, footprint = dam_weights(self.radius_cells, shrink=self.shrink)
        return 1.0 + math.expm1(self.epsilon) * high, footprint


@register
class DAMNonShrink(DAM):
    """DAM without border shrinkage: a cell is high iff its centre is within b_hat (eq. 13)."""

    name = "dam-ns"
    label = "DAM-NS (Disk Area Mechanism, no shrinkage)"
    reference = f"{PAPER} eq. (13), Sec. VII-B (DAM-NS)"
    summary = ("Like DAM, but a cell counts as near only if its centre is inside the disk (no partial border "
               "cells).")
    shrink = False


@register
class HUEM(SpatialAreaMechanism):
    """Hybrid Uniform-Exponential Mechanism (Def. 5) on the grid (Appendix A)."""

    name = "huem"
    label = "HUEM (Hybrid Uniform-Exponential Mechanism)"
    reference = f"{PAPER} Def. 5, Appendix A"
    summary = ("Each phone reports a nearby cell, with a likelihood that decays ring by ring from e^epsilon at "
               "the true cell down to the floor at the disk's edge.")

    def kernel(self) -> tuple[np.ndarray, np.ndarray]:
        return huem_weights(self.radius_cells, self.epsilon)
