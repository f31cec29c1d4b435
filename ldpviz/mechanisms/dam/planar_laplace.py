"""Planar Laplace (geo-indistinguishability) on exact positions, reported as a grid cell, with EM estimation.

Andres et al., "Geo-Indistinguishability: Differential Privacy for Location-Based
Systems", CCS'13 (ref. [20] of dam-disk-area-mechanism.md). The mechanism is theirs, run on
each user's **exact position** x (``Binned.unit``, never the cell centre):

1. draw noise with density D_eps(z) = eps^2 / (2 pi) e^{-eps |z|} in polar form (their Sec. 4.1):
   the angle theta uniform on [0, 2 pi), the radius r = C_eps^{-1}(p) with p uniform on [0, 1) and
   C_eps^{-1}(p) = -(1/eps) (W_{-1}((p - 1)/e) + 1), W_{-1} the -1 branch of the Lambert W function;
2. the noisy point is z = x + r (cos theta, sin theta): eps-geo-indistinguishable between any two
   real positions, P(z in A | x) <= e^{eps |x - x'|} P(z in A | x') (their Theorem 4.1);
3. the report is the grid cell holding z, remapped to the nearest cell when z falls outside the region
   (each coordinate clamped to [0, d-1]: their Sec. 4.2's discretisation and remapping). Both steps are
   post-processing, so the report keeps the guarantee between real positions, with no slack.

Units: ``epsilon`` is per km (``GEO_I_UNIT_M`` in :mod:`ldpviz.mechanisms.base`), so the guarantee is the
same on every grid; the code works in cell units with ``eps_cell = epsilon * cell side / 1 km``
(:attr:`Mechanism.epsilon_per_cell`).

Channels.

* P(report cell y | exact position x) depends on where x lies inside its cell; :meth:`PlanarLaplace.
  position_channel` integrates D over every report cell (a fixed midpoint lattice in absolute
  coordinates, so the node-wise bound D(z - x) <= e^{eps |x - x'|} D(z - x') carries over exactly).
* The server does not know positions, only reports. Its model (:meth:`PlanarLaplace.channel`, what EM,
  the attacker and the channel audit use) is the channel averaged over a position uniform within the
  true cell: P(y | cell c) = integral over the cell of P(y | x) dx. With U, U' uniform on two unit squares
  the offset U' - U has the tent density (1 - |a|)(1 - |b|) on [-1, 1]^2, so before remapping
  P(y | c) = k(y - c) with k(delta) = integral tent(a) tent(b) D(delta + (a, b)) da db; a midpoint rule with
  the same nodes for every offset keeps the bound k(delta) <= e^{eps |delta - delta'|} k(delta') exactly.
  The averaged channel is translation invariant, so EM/EMS (Li et al. SIGMOD'20) runs through FFT
  convolutions (:class:`ldpviz.mechanisms.dam.kernels.ClampedChannel`). It is exact for users spread uniformly within
  their cells and a model otherwise (e.g. everyone at one bus stop): the estimate is then as if each user
  stood anywhere in their cell.
* Where a cell is no narrower than the noise (eps_cell > SUBCELL_EPSILON) that model is too coarse (issue
  28): EM then estimates the distribution over s x s sub-cells per cell, each with the same averaged model
  at the sub-cell's size (reports landing in sub-cells, summed into the report cells), and returns the
  sub-cells summed into cells. The cell-level channel above is that model with the mass spread evenly over
  a cell's sub-cells, so :meth:`PlanarLaplace.channel` and the audit are unchanged.
* The kernel window reaches ``1.42 d + 40 / eps_cell + 1`` cells, beyond which the dropped mass is below
  e^-40 relative to any kept probability, but no further than :func:`underflow_radius`: beyond
  ``UNDERFLOW_NATS / eps_cell`` cells every quadrature node's density ``e^{-eps |z|}`` is exactly 0 in float64,
  so the entries cut off there were exact zeros (issue 38.6: on 40 km cells at large epsilon the window was
  ~185 cells of which all but 2-80 were zeros, and building it took 1-7 s per epsilon of a goal seek).
* Channels are built once per (d, eps_cell, window) and shared (a bounded cache, :func:`clamped_channel`):
  a goal seek's runs at one epsilon (the search, its fresh decision, users_needed's every user count, the
  attacker) and every session asking the same setting use one kernel and one transform.

No aggregate path: each user's report distribution depends on their exact position, so the report
histogram is a sum of differently distributed draws with no exact shortcut. The ``path`` parameter is kept
for the common interface (:mod:`ldpviz.mechanisms.collection_paths`); every path runs the per-user client
half, and the estimate's ``info`` says so (``path note``).
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from typing import Sequence

import numpy as np

from ldpviz.geo.domain import Binned
from ldpviz.errors import require
from ldpviz.mechanisms.estimation import check_time, expectation_maximisation_batch
from ldpviz.mechanisms.dam.kernels import ClampedChannel
from ldpviz.mechanisms import register
from ldpviz.mechanisms.base import GEO_I, GEO_I_UNIT, GEO_I_UNIT_M, Estimate, Mechanism, Param, TrialRun
from ldpviz.mechanisms.dam.disk_area import FAMILY_SPATIAL, POSTPROCESS_PARAM
from ldpviz.mechanisms.fo.oracles import ReportHistogram, report_histogram
from ldpviz.mechanisms.path_cost import AUTO, PER_USER
from ldpviz.mechanisms.collection_paths import PATHS, TwoPaths
from ldpviz.wording import length

#: Midpoint nodes per cell side of the server model's quadrature where the noise is about a cell wide (fewer
#: for broader noise, :data:`NODE_EPSILON`; more at large eps per cell).
QUADRATURE_NODES = 8
#: Largest fine lattice side (nodes) of the server model's quadrature: bounds its cost on wide kernels.
MAX_LATTICE_SIDE = 12_000
TAIL_NATS = 40.0
MAX_KERNEL_RADIUS = 1500
MAX_CHANNEL_SIDE = 32
#: EM estimates the distribution over sub-cells of at most this many "epsilon per side" (s x s sub-cells per
#: cell, s = ceil(eps_cell / SUBCELL_EPSILON)), then sums them into cells. Why (issue 28, docs/em-stopping.md):
#: the server model averages the channel over a position uniform within the cell, and where the noise is no
#: wider than a cell real positions, which crowd in parts of a cell, make that model wrong by more than the
#: noise: minneapolis-stops at 1/km, d = 16 (1.25 km cells), 40 populations' worth of real reports differed
#: from the cell model's expected counts by 5 standard errors (rms), and EM on them gave W2 563 m; on 2 x 2
#: sub-cells per cell the model fits the reports and EM's W2 matches that of the d = 64 estimate summed into
#: the same cells. 0.7 keeps d = 32 at 1/km (0.625 per cell) on the cell-level model.
SUBCELL_EPSILON = 0.7
#: Largest side (sub-cells) of that latent grid: bounds EM's cost (a 128 x 128 planar Laplace EM).
MAX_SUBCELL_SIDE = 128
#: ``info["path note"]`` whenever a path other than the per-user one was asked for.
PATH_NOTE = ("per-user path used: each report depends on the user's exact position within the cell, so the "
             "report histogram has no exact aggregate draw")
#: ``info["server model"]``: what the EM channel assumes about positions.
SERVER_MODEL = ("EM's channel is the report channel averaged over a position uniform within each of s x s "
                "sub-cells of the true cell (the server never sees positions); the estimate sums the sub-cells "
                "into cells")


def subcells_per_side(epsilon_per_cell: float, side: int) -> int:
    """s: sub-cells per cell side of EM's latent grid (SUBCELL_EPSILON, capped at MAX_SUBCELL_SIDE in all)."""
    s = max(1, int(math.ceil(epsilon_per_cell / SUBCELL_EPSILON - 1e-9)))
    return max(1, min(s, MAX_SUBCELL_SIDE // max(int(side), 1)))


def _gap(t: np.ndarray) -> np.ndarray:
    """t - log(1 + t) for t >= 0, by its Taylor series below 0.01 (where the difference cancels; the series'
    first dropped term is t^10 / 10, below 2e-17 of the value there)."""
    g = t - np.log1p(t)
    small = t < 0.01
    if small.any():
        s = t[small]
        poly = 1.0 / 9.0
        for k in range(8, 1, -1):            # t^2/2 - t^3/3 + ... + t^9/9, by Horner
            poly = 1.0 / k - s * poly
        g[small] = s * s * poly
    return g


#: Halley steps of :func:`planar_laplace_radius` from its starting guess (two already reach round-off; one more
#: for margin).
RADIUS_STEPS = 3


def planar_laplace_radius(epsilon: float, p: np.ndarray) -> np.ndarray:
    """Andres et al. Sec. 4.1: C_eps^{-1}(p) = -(1/eps) (W_{-1}((p - 1)/e) + 1), the inverse CDF of the radius
    (density eps^2 r e^{-eps r}), for p in [0, 1).

    Solved directly rather than through a general Lambert W: with t = -(W_{-1} + 1) = eps r the CDF
    1 - (1 + t) e^{-t} = p reads t - log(1 + t) = L with L = -log(1 - p), solved by Halley's method from the
    series t ~ s + s^2/3 + s^3/36 (s = sqrt(2L)) for L < 1 and t ~ L + log(1 + L + log(1 + L)) above. Accurate
    to round-off at every p, including p -> 0 where forming (p - 1)/e first loses the digits of p
    (scipy.special.lambertw there gave NaN at p = 0 and 3e-12 instead of 1.4e-6 at p = 1e-12), and about ten
    times faster (planar Laplace draws one radius per report)."""
    p = np.asarray(p, dtype=float)
    shape, p = p.shape, p.reshape(-1)
    L = -np.log1p(-p)
    s = np.sqrt(2.0 * L)
    t = np.where(L < 1.0, s * (1.0 + s * (1.0 / 3.0 + s / 36.0)), L + np.log1p(L + np.log1p(L)))
    for _ in range(RADIUS_STEPS):
        h = _gap(t) - L                               # h(t); h'(t) = t / (1 + t), h''(t) = 1 / (1 + t)^2
        u = 1.0 + t
        slope = t / u
        denom = 2.0 * slope * slope - h / (u * u)
        t = t - np.divide(2.0 * h * slope, denom, out=np.zeros_like(t), where=denom > 0)
    return (np.maximum(t, 0.0) / epsilon).reshape(shape)


def planar_laplace_noise(epsilon: float, n: int, rng: np.random.Generator) -> np.ndarray:
    """``(n, 2)`` planar Laplace offsets (same unit as 1/epsilon): uniform angle, radius by the inverse CDF."""
    theta = rng.random(n) * (2.0 * math.pi)
    radius = planar_laplace_radius(epsilon, rng.random(n))
    return np.column_stack([radius * np.cos(theta), radius * np.sin(theta)])


#: Broad noise needs fewer nodes: below QUADRATURE_NODES, a node every NODE_EPSILON / eps cell (at least 2). The
#: midpoint rule's error is set by the density's cusp at 0 and falls as (eps / nodes)^2: the report distribution's
#: total variation from a 48-node reference is about 0.02 (eps / nodes)^2 (eps 0.04-2.4 per cell, nodes 2-8), so
#: eps / nodes <= 0.075 keeps it below 1.2e-4, under what 8 nodes gave at eps 1.2 (3.1e-4) and 4 eps nodes give
#: above 2 (1.2e-3). Issue 38.6: at the goal seek's smallest epsilon on 40 km cells (0.04 per cell, a
#: 1,100-cell window) 8 nodes cost 2 s per build; 2 nodes cost 1/16 of that.
NODE_EPSILON = 0.075


def _nodes_for(epsilon: float, radius: int) -> int:
    """Nodes per cell side: a node every NODE_EPSILON / eps cell up to QUADRATURE_NODES (broad noise: 2 nodes at
    eps <= 0.15 per cell), more where the density is sharp (a node every 1/(4 eps) cell), capped so the fine
    lattice stays within MAX_LATTICE_SIDE nodes. The node-wise Geo-I bound of the model holds at any count."""
    broad = min(QUADRATURE_NODES, int(math.ceil(epsilon / NODE_EPSILON - 1e-9)))
    sharp = int(math.ceil(4.0 * epsilon))
    cap = max(2, MAX_LATTICE_SIDE // (radius + 2))
    return int(max(2, min(max(broad, sharp), 64, cap)))


#: exp(-x) is exactly 0 in float64 for x above ~745.13 (half the smallest subnormal, 4.9e-324 = e^-744.4); a
#: little margin above it. A kernel entry at offset delta with max(|dy|, |dx|) = m >= 1 reads nodes at least
#: m - 1 + 1/(2 nodes) cells away, so every entry beyond radius R is an exact 0 when eps_cell R >= this.
UNDERFLOW_NATS = 750.0


def underflow_radius(epsilon: float) -> int:
    """The window beyond which every kernel entry is exactly 0 in float64 (:data:`UNDERFLOW_NATS`), at least 1."""
    return max(1, int(math.ceil(UNDERFLOW_NATS / float(epsilon))))


def kernel_radius(epsilon: float, side: int) -> int:
    """The kernel window (cells) for ``side`` x ``side`` cells at ``epsilon`` per cell: ``1.42 d + 40 / eps + 1``
    (the dropped mass below e^-40 of any kept probability), cut at :func:`underflow_radius` (entries beyond it
    were exact zeros)."""
    wide = int(math.ceil(1.42 * int(side) + TAIL_NATS / float(epsilon))) + 1
    return min(wide, underflow_radius(epsilon))


#: Channels kept (:func:`clamped_channel`): at most this many, and at most this many bytes of kernels.
MAX_CHANNELS, MAX_CHANNEL_BYTES = 48, 256 * 2 ** 20
_CHANNELS: "OrderedDict[tuple, ClampedChannel]" = OrderedDict()
_CHANNELS_LOCK = threading.Lock()


def _channel_bytes(chan: ClampedChannel) -> int:
    return int(chan.kernel.nbytes + chan._k.nbytes + chan.conv.k_fft.nbytes * 2)


def clamped_channel(side: int, epsilon: float, radius: int) -> ClampedChannel:
    """``ClampedChannel(side, planar_laplace_kernel(epsilon, radius))``, built once per (side, epsilon, radius)
    and shared (least recently used dropped first, within :data:`MAX_CHANNELS` and :data:`MAX_CHANNEL_BYTES`).
    Read-only after construction (its FFT work arrays are per thread), so threads and sessions share it; the
    same arrays as a fresh build, so estimates stay bit for bit."""
    key = (int(side), float(epsilon), int(radius))
    with _CHANNELS_LOCK:
        chan = _CHANNELS.get(key)
        if chan is not None:
            _CHANNELS.move_to_end(key)
            return chan
    chan = ClampedChannel(side, planar_laplace_kernel(epsilon, radius))    # built outside the lock
    chan.kernel.setflags(write=False)
    with _CHANNELS_LOCK:
        _CHANNELS[key] = chan
        _CHANNELS.move_to_end(key)
        total = sum(_channel_bytes(c) for c in _CHANNELS.values())
        while len(_CHANNELS) > 1 and (len(_CHANNELS) > MAX_CHANNELS or total > MAX_CHANNEL_BYTES):
            total -= _channel_bytes(_CHANNELS.popitem(last=False)[1])
    return chan


def planar_laplace_kernel(epsilon: float, radius: int, nodes: int | None = None) -> np.ndarray:
    """The server model's kernel k(delta), delta in [-radius, radius]^2 (cell units, eps per cell side).

    k(delta) = integral over [-1, 1]^2 of tent(a) tent(b) D_eps(delta + (a, b)): the probability that a user
    uniform in a cell reports the cell at offset delta (before remapping). Midpoint rule with ``nodes``
    nodes per cell side: node offsets a_i = (i + 1/2)/nodes - 1 (i < 2 nodes), weights tent(a_i) / nodes
    (they sum to 1). The nodes of all offsets lie on one lattice of spacing 1/nodes, so D is evaluated once
    per lattice node (one quadrant; D is even) in blocks of rows, then summed with the tent weights.
    """
    n = int(nodes or _nodes_for(epsilon, radius))
    R = int(radius)
    a = (np.arange(2 * n) + 0.5) / n - 1.0
    w = (1.0 - np.abs(a)) / n
    # lattice index m (coordinate (m + 1/2)/n) runs over [-n, (R + 1) n); padded index = m + n = b n + j
    coords = (np.arange(-n, (R + 1) * n) + 0.5) / n
    by_node = np.ascontiguousarray(coords.reshape(R + 2, n).T)      # [j, b] = coords[b n + j]
    quadrant = np.empty((R + 1, R + 1))
    block = max(1, (1 << 22) // (len(coords) * n) - 2)
    for y0 in range(0, R + 1, block):
        check_time()                                               # a superseded search stops here too
        y1 = min(R + 1, y0 + block)
        rows = coords[y0 * n:(y1 + 1) * n]                     # lattice rows y0 n - n ... y1 n + n - 1
        # D at (row, column b n + j) held at [j, row, b]: each node offset j is one contiguous (rows, R + 2) slab,
        # so the tent sums below read memory in order (the same products and sums, in the same order, as
        # reading every n-th column of a (rows, (R + 2) n) array: the same bits, about 25% faster at large R)
        dens = np.hypot(rows[None, :, None], by_node[:, None, :])
        dens *= -epsilon
        np.exp(dens, out=dens)
        # tent-weighted sums over each cell's 2n x 2n nodes, accumulated in place in the order j = 0, 1, ...
        cols = np.multiply(dens[0][:, :R + 1], w[0])                                    # (fine rows, R + 1)
        term = np.empty_like(cols)
        for j in range(1, 2 * n):
            shift = j // n                                     # nodes n..2n-1 of cell c are nodes 0..n-1 of c + 1
            cols += np.multiply(dens[j % n][:, shift:shift + R + 1], w[j], out=term)
        out = quadrant[y0:y1]
        np.multiply(cols[0::n][:y1 - y0], w[0], out=out)
        term = np.empty_like(out)
        for i in range(1, 2 * n):
            out += np.multiply(cols[i::n][:y1 - y0], w[i], out=term)
    quadrant *= epsilon * epsilon / (2.0 * math.pi)
    k = np.concatenate([quadrant[:0:-1], quadrant], axis=0)
    return np.concatenate([k[:, :0:-1], k], axis=1)


@register
class PlanarLaplace(TwoPaths, Mechanism):
    """Planar Laplace on each user's exact position, reported as the grid cell of the noisy point (Andres et al.
    CCS'13)."""

    name = "planar-laplace"
    label = "Planar Laplace (geo-indistinguishability)"
    family = FAMILY_SPATIAL
    privacy_model = GEO_I
    reference = "Andres et al. CCS'13 (ref. [20] of dam-disk-area-mechanism.md), Sec. 4"
    summary = ("Each phone moves its exact location by random noise that is likelier to be small than large, then "
               "reports the cell the moved point falls in; nearby places stay hard to tell apart.")
    params = (POSTPROCESS_PARAM,
              Param("path", str, AUTO,
                    "kept for the common interface: every choice simulates every phone (each report depends on "
                    "the user's exact position, so there is no exact aggregate draw; the estimate's info says so)",
                    choices=PATHS))
    has_channel = True

    def setup(self) -> None:
        d = self.grid.side
        eps_cell = self.epsilon_per_cell
        radius = kernel_radius(eps_cell, d)
        if radius > MAX_KERNEL_RADIUS:
            least = TAIL_NATS / (MAX_KERNEL_RADIUS - 1 - 1.42 * d) * GEO_I_UNIT_M / self.grid.cell_m if \
                MAX_KERNEL_RADIUS - 1 > 1.42 * d else math.inf
            require(False, f"planar Laplace at epsilon = {self.epsilon:g} per {GEO_I_UNIT} on cells of "
                           f"{length(self.grid.cell_m)} spreads reports over more than {MAX_KERNEL_RADIUS} cells; "
                           f"use a larger epsilon (e.g. >= {least:.2g} per {GEO_I_UNIT}), larger cells or a "
                           f"smaller grid")
        self.kernel_radius = radius
        self.chan = clamped_channel(d, eps_cell, radius)
        self.subcells = subcells_per_side(eps_cell, d)
        if self.subcells == 1:
            self.fine = self.chan
        else:
            s = self.subcells
            self.fine = clamped_channel(d * s, eps_cell / s, kernel_radius(eps_cell / s, d * s))

    # ---- client half ---------------------------------------------------------------------------------------
    def positions(self, users: Binned) -> np.ndarray:
        """``(n, 2)`` exact positions in cell units (column, row), checked to lie in each user's cell."""
        d = self.grid.side
        cells = np.asarray(users.cells, dtype=np.int64)
        unit = np.asarray(users.unit, dtype=float)
        require(unit.shape == (len(cells), 2),
                f"planar Laplace perturbs each user's exact position: expected {len(cells)} positions (users.unit), "
                f"got an array of shape {unit.shape}")
        require(bool(np.all(np.isfinite(unit))) and bool(np.all((unit >= 0.0) & (unit <= 1.0))),
                "planar Laplace needs every user's position inside the region (unit coordinates in [0, 1])")
        idx = np.minimum((unit * d).astype(np.int64), d - 1)
        wrong = int(np.count_nonzero(idx[:, 1] * d + idx[:, 0] != cells))
        require(wrong == 0, f"planar Laplace perturbs each user's exact position, but {wrong:,} of {len(cells):,} "
                            f"positions (users.unit) lie outside their cell (users.cells); bin positions with "
                            f"Grid.bin_unit or Grid.bin_lonlat so the two agree")
        return unit * d

    def per_user(self, users: Binned, rng: np.random.Generator) -> np.ndarray:
        """Every phone's report: the cell holding its exact position plus planar Laplace noise (clamped)."""
        d = self.grid.side
        noisy = self.positions(users) + planar_laplace_noise(self.epsilon_per_cell, len(users.cells), rng)
        idx = np.clip(np.floor(noisy), 0, d - 1).astype(np.int64)
        return idx[:, 1] * d + idx[:, 0]

    def aggregate(self, users: Binned, rng: np.random.Generator) -> ReportHistogram:
        """The report histogram from the per-user path (there is no exact aggregate over real positions)."""
        reports = self.per_user(users, rng)
        return ReportHistogram(np.bincount(reports, minlength=self.grid.n_cells), len(reports), PER_USER)

    def choose(self, users: Binned) -> str:
        return PER_USER

    def path_for(self, users: Binned) -> str:
        """Always the per-user path, whatever ``path`` asks (module docstring)."""
        return PER_USER

    def statistic(self, reports: np.ndarray | ReportHistogram) -> ReportHistogram:
        """The histogram of reported cells (additive over groups of users)."""
        return report_histogram(reports, self.grid.n_cells)

    # ---- server half ---------------------------------------------------------------------------------------
    def estimate(self, reports: np.ndarray | ReportHistogram) -> Estimate:
        return self._estimates([self.statistic(reports)])[0]

    def run_trials(self, users: Binned, rngs: Sequence[np.random.Generator]) -> TrialRun:
        """All trials in one pass: each trial's reports drawn on the per-user path (exact positions; there is no
        aggregate path) with its own generator, as :meth:`collect` draws them, then EM on the ``(T, d, d)`` stack
        of report histograms; a one-trial :meth:`estimate` runs the same code on a stack of one, so trial t
        equals a one-trial run with ``rngs[t]``."""
        return self.stacked_trials(users, rngs, self._estimates, draw=self.per_user)

    def em_maps(self):
        """EM's stacked forward and adjoint maps and its latent shape: the report channel from sub-cells
        (:data:`SUBCELL_EPSILON`): a sub-cell's reports land in sub-cells, summed into the report cells (the
        clamp to the grid commutes with that sum: a point beyond the border lands in the border cell either
        way). With one sub-cell per cell these are the cell-level channel's maps."""
        d, s = self.grid.side, self.subcells
        fine = self.fine
        if s == 1:
            return fine.forward_batch, fine.adjoint_batch, (d, d)

        def forward(f: np.ndarray) -> np.ndarray:
            out = fine.forward_batch(f)
            return out.reshape(out.shape[0], d, s, d, s).sum(axis=(2, 4))

        def adjoint(r: np.ndarray) -> np.ndarray:
            return fine.adjoint_batch(np.repeat(np.repeat(r, s, axis=1), s, axis=2))

        return forward, adjoint, (d * s, d * s)

    def _estimates(self, hists: Sequence[ReportHistogram]) -> list[Estimate]:
        d, s = self.grid.side, self.subcells
        stack = np.stack([np.asarray(h.counts, dtype=float).reshape(d, d) for h in hists])
        forward, adjoint, shape = self.em_maps()
        latent, infos = expectation_maximisation_batch(stack, forward, adjoint, shape,
                                                       smoothing=self.postprocess == "ems")
        densities = latent.reshape(len(hists), d, s, d, s).sum(axis=(2, 4))
        return [self._estimate(c, h, f, {**i, "subcells_per_side": s})
                for c, h, f, i in zip(stack, hists, densities, infos)]

    def _estimate(self, counts: np.ndarray, hist: ReportHistogram, density: np.ndarray, info: dict) -> Estimate:
        d = self.grid.side
        extra = {"path note": PATH_NOTE} if self.path != PER_USER else {}
        return Estimate(density, raw=counts, info={
            "reports": int(counts.sum()), "output_cells": d * d, "epsilon_per_m": self.epsilon / GEO_I_UNIT_M,
            "mean_noise_m": 2.0 / self.epsilon * GEO_I_UNIT_M, "postprocess": self.postprocess,
            "server model": SERVER_MODEL, **info, **self.path_info(PER_USER), **extra})

    # ---- channels --------------------------------------------------------------------------------------------
    def channel(self) -> np.ndarray:
        """The server model P[y, c]: report y from a position uniform within cell c (columns sum to 1).

        Between cell centres it keeps P[y, c] <= e^{eps |c - c'|} P[y, c'] (the average of the position-wise
        bound over matched positions c + u, c' + u). What an exact position x gives is
        :meth:`position_channel`."""
        # The folded kernel (ClampedChannel) keeps each column's sum to a (3d)^2 box, so d = 32 is cheap.
        require(self.grid.side <= MAX_CHANNEL_SIDE,
                f"the explicit planar Laplace channel is built for grids of side <= {MAX_CHANNEL_SIDE}")
        return self.chan.dense()

    def position_channel(self, unit: np.ndarray, nodes: int = 16) -> np.ndarray:
        """``(len(unit), d*d)``: P(report cell | exact position) for positions in unit coordinates.

        D_eps integrated over every lattice cell within ``40 / eps_cell + 1`` cells of the grid by a midpoint
        rule (``nodes`` per cell side, fixed absolute nodes for every position, so ratios between two
        positions keep the bound e^{eps |x - x'|} node by node), then remapped to the nearest grid cell. The
        mass beyond the window (below e^-40) is left out; small grids only (d <= 32)."""
        d = self.grid.side
        require(d <= MAX_CHANNEL_SIDE, f"the position channel is built for grids of side <= {MAX_CHANNEL_SIDE}")
        eps = self.epsilon_per_cell
        pad = int(math.ceil(TAIL_NATS / eps)) + 1
        lattice = (np.arange(-pad * nodes, (d + pad) * nodes) + 0.5) / nodes
        cell_of = np.clip(np.floor(lattice), 0, d - 1).astype(np.int64)
        unit = np.atleast_2d(np.asarray(unit, dtype=float)) * d
        out = np.empty((len(unit), d * d))
        for i, (px, py) in enumerate(unit):
            dens = np.exp(-eps * np.hypot(lattice[:, None] - py, lattice[None, :] - px))
            by_col = np.zeros((len(lattice), d))
            np.add.at(by_col.T, cell_of, dens.T)            # sum lattice columns into report columns
            by_cell = np.zeros((d, d))
            np.add.at(by_cell, cell_of, by_col)              # then lattice rows into report rows
            out[i] = by_cell.ravel() * eps * eps / (2.0 * math.pi) / nodes ** 2
        return out

    def guarantee(self) -> str:
        return (f"epsilon-geo-indistinguishability between exact positions with epsilon = {self.epsilon:g} per "
                f"{GEO_I_UNIT} ({self.epsilon / GEO_I_UNIT_M:.3g} per metre, {self.epsilon_per_cell:.3g} per cell "
                f"side of {length(self.grid.cell_m)}): P(report | x) <= e^(epsilon x |x - x'|) P(report | x') for "
                f"any two real positions x, x', no slack")
