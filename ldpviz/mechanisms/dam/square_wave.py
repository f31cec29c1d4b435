"""MDSW: the Square Wave mechanism on each coordinate, the DAM paper's main baseline.

Square Wave: Li et al., "Estimating Numerical Distributions under Local Differential
Privacy", SIGMOD'20, Sec. 4 -- input v in [0, 1], output in [-b, 1 + b] with density
p = e^eps / (2 b e^eps + 1) within b of v and q = 1 / (2 b e^eps + 1) elsewhere,
b = (eps e^eps - e^eps + 1) / (2 e^eps (e^eps - 1 - eps)); estimation by EMS on a
bucketised channel. Multi-dimensional SW (Yang et al. VLDB'20, ref. [10] of
dam-disk-area-mechanism.md) applies it per coordinate.

Choices (documented): ``split = "users"`` (default) sends each user, chosen by a fair
coin, to report one coordinate (east or north) with the full epsilon -- the usual
user-splitting of multi-dimensional LDP, which beats budget splitting when only
marginals are needed; ``split = "budget"`` makes every user report both coordinates
with eps / 2 each (sequential composition). Users perturb their exact positions
(``Binned.unit``); the server buckets the noisy values into buckets of width about
1/d over [-b, 1 + b], estimates each marginal by EMS and returns the product of the
two marginals -- which is exactly why MDSW cannot see correlation (Sec. VII-C).

Post-processing (``postprocess``): the DAM paper's MDSW "extends SW-EMS [6]", and Li et al.
run SW-EMS on a fine bucketisation of the value domain (hundreds to 1,024 buckets), where the
(1, 2, 1)/4 smoothing step acts at a small fraction of the range. The default ``"ems-fine"``
does that (FINE_BUCKETS = 256 input buckets per axis, or the grid's side if larger; reports
bucketed as finely; 1,024 buckets cost 30 s per estimate on a loaded 2-core machine against
0.1 s) and then sums each marginal into the grid's d buckets (exact overlaps). ``"ems"`` smooths at the
grid's own resolution (1/d of the range per step: on a 15 x 15 grid a heavy blur, which widened DAM's lead
over MDSW 1.5-2.5x) and
``"em"`` is plain EM at the grid's resolution; bench/dam_claims.py reports all three.

No aggregate path (unlike the other client mechanisms, see :mod:`ldpviz.mechanisms.collection_paths`):
users perturb their exact positions, not their cells, so the distribution of the server's
statistic (the histogram of report buckets) depends on every user's position within its cell and
no draw from the cell counts has it. The best exact shortcut, SW's mixture form (with probability
2b(p - q) uniform within b of v, otherwise uniform on [-b, 1 + b]: one multinomial for the latter),
still touches each of the 2b(p - q) n informed users' positions, a constant factor on a client half
that is already O(n) vectorised (~0.04 s for 1,000,000 users here); estimates say ``path`` 'per-user'.
"""

from __future__ import annotations

import math

import numpy as np

from ldpviz.geo.domain import Binned
from ldpviz.errors import require
from typing import Sequence

from ldpviz.mechanisms.estimation import (combine_start_maps, expectation_maximisation, expectation_maximisation_batch,
                                          matrix_maps)
from ldpviz.mechanisms import register
from ldpviz.mechanisms.base import LDP, Estimate, Mechanism, Param, TrialRun
from ldpviz.mechanisms.dam.disk_area import FAMILY_SPATIAL
from ldpviz.mechanisms.fo.oracles import ReportHistogram, report_histogram

#: Midpoint nodes per input bucket when averaging the SW channel over a bucket.
BUCKET_NODES = 64
#: Input buckets per axis of the "ems-fine" post-processing (a fine resolution as in Li et al. SIGMOD'20).
FINE_BUCKETS = 256
#: Midpoint nodes per bucket at the fine resolution (the channel barely varies within 1/256).
FINE_BUCKET_NODES = 8
POSTPROCESS_CHOICES = ("ems-fine", "ems", "em")


def square_wave_radius(epsilon: float) -> float:
    """b of Li et al. SIGMOD'20 (maximises the mutual-information bound; -> 1/2 as eps -> 0)."""
    e = math.exp(epsilon)
    m1 = math.expm1(epsilon) - epsilon
    if m1 <= 0:
        return 0.5
    return (epsilon * e - math.expm1(epsilon)) / (2 * e * m1)


class SquareWave1D:
    """Square Wave on [0, 1] with a bucketised channel M[j, i] = P(out bucket j | in bucket i)."""

    def __init__(self, epsilon: float, buckets: int, nodes: int = BUCKET_NODES) -> None:
        self.epsilon = epsilon
        self.b = square_wave_radius(epsilon)
        e = math.exp(epsilon)
        self.p = e / (2 * self.b * e + 1)
        self.q = 1 / (2 * self.b * e + 1)
        self.buckets = buckets
        self.out_buckets = max(1, int(round((1 + 2 * self.b) * buckets)))
        edges = np.linspace(-self.b, 1 + self.b, self.out_buckets + 1)
        v = (np.arange(buckets)[:, None] + (np.arange(nodes)[None, :] + 0.5) / nodes) / buckets
        lo = np.maximum(edges[:-1][:, None, None], v[None] - self.b)
        hi = np.minimum(edges[1:][:, None, None], v[None] + self.b)
        overlap = np.clip(hi - lo, 0, None)                       # (out, in, nodes)
        width = np.diff(edges)[:, None, None]
        self.matrix = (self.q * width + (self.p - self.q) * overlap).mean(axis=2)
        self.matrix /= self.matrix.sum(axis=0, keepdims=True)     # exact 1 up to rounding

    def perturb(self, values: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Noisy values in [-b, 1 + b] (Li et al. Alg. 1)."""
        v = np.asarray(values, float)
        u = rng.random(len(v))
        near = rng.random(len(v)) < 2 * self.b * self.p
        near_val = v - self.b + 2 * self.b * u
        far_val = np.where(u < v, -self.b + u, v + self.b + (u - v))
        return np.where(near, near_val, far_val)

    def bucket(self, noisy: np.ndarray) -> np.ndarray:
        j = np.floor((noisy + self.b) / (1 + 2 * self.b) * self.out_buckets).astype(np.int64)
        return np.clip(j, 0, self.out_buckets - 1)

    def estimate(self, counts: np.ndarray, smoothing: bool) -> tuple[np.ndarray, dict]:
        M = self.matrix
        return expectation_maximisation(counts, lambda f: M @ f, lambda r: M.T @ r, (self.buckets,),
                                        smoothing=smoothing)


def bucket_overlap(fine: int, coarse: int) -> np.ndarray:
    """A[i, j] = share of fine bucket j (of ``fine`` equal buckets on [0, 1]) inside coarse bucket i."""
    edges_f = np.linspace(0.0, 1.0, fine + 1)
    edges_c = np.linspace(0.0, 1.0, coarse + 1)
    lo = np.maximum(edges_c[:-1, None], edges_f[None, :-1])
    hi = np.minimum(edges_c[1:, None], edges_f[None, 1:])
    return np.clip(hi - lo, 0.0, None) * fine


@register
class MDSW(Mechanism):
    """Multi-dimensional Square Wave (Yang et al. VLDB'20 with Li et al. SIGMOD'20's SW)."""

    name = "mdsw"
    label = "MDSW (multi-dimensional Square Wave)"
    family = FAMILY_SPATIAL
    privacy_model = LDP
    reference = ("Li et al. SIGMOD'20 (Square Wave, EMS); Yang et al. VLDB'20; ref. [10] of "
                 "dam-disk-area-mechanism.md, Sec. VII-B")
    summary = ("Each phone blurs its east or its north coordinate separately; the server rebuilds the two "
               "marginals and multiplies them, so diagonal patterns are lost.")
    params = (Param("split", str, "users",
                    "'users': half the users report east, half north, each with the full epsilon; "
                    "'budget': every user reports both with epsilon/2", choices=("users", "budget")),
              Param("postprocess", str, "ems-fine",
                    "server post-processing of each marginal: 'ems-fine' (default) = SW-EMS at "
                    f"{FINE_BUCKETS:,} buckets per axis (or the grid's side if larger; Li et al. use up to 1,024), "
                    "then summed into the grid (the paper's baseline); 'ems' = EMS at the grid's own "
                    "resolution (smooths far more on coarse grids); 'em' = plain EM at the grid's resolution",
                    choices=POSTPROCESS_CHOICES))
    has_channel = True

    def setup(self) -> None:
        eps = self.epsilon if self.split == "users" else self.epsilon / 2
        if self.postprocess == "ems-fine":
            self.sw = SquareWave1D(eps, max(FINE_BUCKETS, self.grid.side), FINE_BUCKET_NODES)
        else:
            self.sw = SquareWave1D(eps, self.grid.side)
        self.to_grid = bucket_overlap(self.sw.buckets, self.grid.side)

    def perturb(self, users: Binned, rng: np.random.Generator) -> np.ndarray:
        """Report codes: 'users' -> axis * B + bucket (axis 0 east, 1 north); 'budget' -> bx * B + by."""
        unit = np.asarray(users.unit, float).reshape(-1, 2)
        require(len(unit) == len(users.cells), "MDSW needs the users' positions (Binned.unit)")
        B = self.sw.out_buckets
        if self.split == "users":
            axis = rng.integers(0, 2, size=len(unit))
            value = unit[np.arange(len(unit)), axis]
            return axis * B + self.sw.bucket(self.sw.perturb(value, rng))
        bx = self.sw.bucket(self.sw.perturb(unit[:, 0], rng))
        by = self.sw.bucket(self.sw.perturb(unit[:, 1], rng))
        return bx * B + by

    def statistic(self, reports: np.ndarray | ReportHistogram) -> ReportHistogram:
        """The histogram of report codes (additive over groups of users)."""
        B = self.sw.out_buckets
        return report_histogram(reports, 2 * B if self.split == "users" else B * B)

    def estimate(self, reports: np.ndarray | ReportHistogram) -> Estimate:
        return self._estimates([self.statistic(reports)])[0]

    def run_trials(self, users: Binned, rngs: Sequence[np.random.Generator]) -> TrialRun:
        """All trials: each trial's reports drawn with its own generator (as :meth:`collect` draws them), then
        the 2 T marginals (east and north of every trial) estimated by one EMS on a ``(2 T, buckets)`` stack:
        one matrix-matrix product with the bucketised channel per map and step, each marginal with its own
        held-out split and stopping (:func:`~ldpviz.mechanisms.estimation.expectation_maximisation_batch`). A
        one-trial :meth:`estimate` runs the same code on its 2 marginals, so trial t equals a one-trial run
        with ``rngs[t]`` up to the round-off of the wider matrix products."""
        return self.stacked_trials(users, rngs, self._estimates)

    def _marginals(self, hist: ReportHistogram) -> tuple[np.ndarray, np.ndarray]:
        B = self.sw.out_buckets
        codes = np.asarray(hist.counts, dtype=float)
        if self.split == "users":
            return codes[:B], codes[B:]
        return codes.reshape(B, B).sum(axis=1), codes.reshape(B, B).sum(axis=0)   # code = bx * B + by

    def _estimates(self, hists: Sequence[ReportHistogram]) -> list[Estimate]:
        """Every histogram's two marginals estimated as one stack, then each trial's product density."""
        stack = np.stack([m for hist in hists for m in self._marginals(hist)])
        forward, adjoint = matrix_maps(self.sw.matrix, (self.sw.buckets,))
        margins, infos = expectation_maximisation_batch(stack, forward, adjoint, (self.sw.buckets,),
                                                        smoothing=self.postprocess != "em")
        out = []
        for t, hist in enumerate(hists):
            fx, fy = margins[2 * t], margins[2 * t + 1]
            ix, iy = infos[2 * t], infos[2 * t + 1]
            density = np.outer(self.to_grid @ fy, self.to_grid @ fx)     # [row = north, col = east]
            out.append(Estimate(density / density.sum(), info={
                "reports": int(hist.n), "split": self.split, "sw_radius": self.sw.b,
                "output_buckets_per_axis": self.sw.out_buckets, "iterations": max(ix["iterations"], iy["iterations"]),
                "converged": bool(ix["converged"] and iy["converged"]), "postprocess": self.postprocess,
                "path": "per-user", **({"start_map": test} if (test := combine_start_maps(
                    [ix.get("start_map"), iy.get("start_map")])) is not None else {})}))
        return out

    def channel(self) -> np.ndarray:
        """P[report code, cell] for users uniform within their cell (codes as in :meth:`perturb`)."""
        d, B = self.grid.side, self.sw.out_buckets
        require(d <= 40, "the explicit MDSW channel is built for grids of side <= 40")
        # P(out | grid bucket) for a user uniform in the bucket: the fine columns averaged by overlap.
        M = self.sw.matrix @ (self.to_grid.T / self.to_grid.sum(axis=1))
        rows, cols = np.divmod(np.arange(d * d), d)
        if self.split == "users":
            return 0.5 * np.vstack([M[:, cols], M[:, rows]])
        return (M[:, None, cols] * M[None, :, rows]).reshape(B * B, d * d)
