"""W2 and EMD-L1 between two grid densities: exact solvers, BFM, and the rule that picks one.

Exact transport on a d x d grid
-------------------------------
``w2`` and ``emd_l1`` solve the discrete transport problem between the cell
centres exactly. For small supports this is a network simplex over every pair
(``method="exact"``): our own (:mod:`ldpviz.metrics.network_simplex`) up to :data:`OWN_DENSE_MAX_PAIRS`
pairs, POT's on the dense cost matrix above (it stores a full bipartite graph implicitly, so it needs less
memory there). The same optimum either way; ours keeps POT's import (half a second with the scipy.stats it
pulls in) out of a command that needs none (issue 28). A dense cost matrix has (d^2)^2 entries, which
at d = 64 is 16.8 M pairs and up to ~19 s of network simplex, and at d = 128
(268 M pairs, 2 GB) does not fit comfortably in memory. ``method="multiscale"`` (formerly ``"fast"``,
still accepted) is a *multiscale, certified* solver (:func:`_ot_multiscale`) that returns the same optimum:

1. solve the problem on the 2x coarsened grid (recursively, down to
   ``_BASE_SIDE``), which says roughly where every cell's mass goes;
2. on the fine grid, keep only the pairs (i, j) whose coarse parents are
   matched by the coarse plan, widened to the 3x3 coarse neighbourhood of the
   destination, and solve that *sparse* transport problem exactly with our
   network simplex (:class:`~ldpviz.metrics.network_simplex.TransportSimplex`;
   later rounds add their pairs to the live solve, which continues from its basis). The restricted problem is
   always feasible: spreading each coarse transfer over the children in
   proportion to their mass is a feasible plan;
3. check the dual solution (u, v) against *all* d^2 x d^2 pairs at once: the
   reduced costs ``c_ij - u_i - v_j`` are all >= 0 iff the sparse optimum is
   the global optimum (LP duality). ``min_j c_ij - v_j`` is a c-transform, and
   because both ground costs are separable (``f(dx) + f(dy)``) it costs
   O(d^3) rather than O(d^4);
4. for every violated row add its ``_ADD_PER_ROW`` most negative pairs and
   re-solve, until the certificate holds (column generation; each round
   strictly adds pairs, so it ends).

The result is the exact optimum up to ``_CERT_TOL`` in squared cells (the
certificate bounds the gap between primal and dual), not an approximation.
For W2 the certificate's c-transform is the O(d^2) lower envelope of
parabolas of :mod:`ldpviz.metrics.envelope`. ``bench/w2_accuracy.py`` measures it
against the dense solver and times it (``docs/w2-accuracy.md``). Other
candidates were set aside: dropping negligible mass does not help because LDP
estimates are dense; entropic (Sinkhorn) distances are biased by an amount
that grows with the regularisation while their iteration count grows with its
inverse; plain coarsening (exact W2 between 2x2 block sums) was measured at
d = 64 to be off by up to 28% when W2 is about one cell.

W2 has a faster exact path, ``method="certified"`` (:mod:`ldpviz.metrics.w2_exact`): the same
coarse-to-fine candidate arcs with local arcs added, solved by our own network simplex
(:mod:`ldpviz.metrics.network_simplex`, issue 28) which takes the repair arcs into the live solve
instead of restarting, certified by an O(d^2) squared-distance transform that also names the
violating arcs to add (docs/w2-speed.md).

Choosing a solver (``method="auto"``, issue 14 item 5, issue 15 item 14, issue 23)
---------------------------------------------------------------------------------
1. supports' product <= :data:`AUTO_EXACT_MAX_PAIRS`: dense exact;
2. W2: the certified solver within a time budget (:data:`AUTO_W2_BUDGET_S` seconds unless
   the caller passes ``time_budget``); above :data:`AUTO_CERTIFY_ALWAYS_SIDE` only where BFM reads a
   near-copy (BFM's own readout stands elsewhere: accurate there, and seconds); EMD-L1: full grids up to
   :data:`FAST_MAX_SIDE` and any grid whose supports' product is at most :data:`SUPPORT_EXACT_MAX_PAIRS`
   (sparse maps, e.g. a few hundred users at d = 256): the certified multiscale solver, exact;
3. otherwise (W2 not certified within the budget) the back-and-forth method
   (:mod:`ldpviz.metrics.w2_back_and_forth`, under a second at d = 256; it reads low on near-copies, W2 under
   :data:`BFM_NEAR_COPY_CELLS`, and says so), its interval narrowed by the bounds the
   certified solver reached; EMD-L1 exact transport between f x f block sums
   (f = ceil(d / :data:`BLOCKS_SIDE`)).
   Both are approximate and say so: :func:`w2_readout` / :func:`emd_l1_readout`
   return a :class:`TransportReadout` with the method and a certified interval
   ``[lower, upper]`` holding the exact value, and :func:`ldpviz.metrics.evaluate` hands them
   out through its ``readouts`` argument. ``docs/w2-method.md`` explains BFM and
   ``docs/w2-accuracy.md`` measures every path.

A page that must answer at once (issue 28) uses :func:`w2_progressive`: BFM's approximate readout first
(about a second at d = 256, labelled approximate), then the exact one when the certified solver finishes.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any, Iterator

import numpy as np

from ldpviz.errors import LdpvizInputError, require
from ldpviz.metrics import w2_exact
from ldpviz.metrics.envelope import HAVE_NUMBA, sq_distance_transform
from ldpviz.metrics.inputs import _check_cell_m, _pair
from ldpviz.metrics.network_simplex import TransportSimplex, feasible as root_ok
from ldpviz.metrics.sparse_pairs import SparsePairs, unique_sorted
from ldpviz.metrics.w2_back_and_forth import bfm_w2



def _pot() -> Any:
    """POT, imported where a solve uses it (its import pulls in scipy.stats: half a second a command need not pay
    when our own network simplex answers)."""
    import ot
    return ot


__all__ = ["w2", "w2_readout", "w2_progressive", "emd_l1", "emd_l1_readout", "TransportReadout", "W2_METHODS",
           "EMD_METHODS"]

#: ``method="auto"`` uses the dense exact solver while (support of true) x
#: (support of est) is at most this many pairs (a full 19x19 grid is 130 k);
#: above it the multiscale solver is faster (from d = 24 on, see docs/w2-accuracy.md).
AUTO_EXACT_MAX_PAIRS = 150_000
#: ``"auto"`` runs the multiscale solver on full EMD-L1 grids up to this side.
FAST_MAX_SIDE = 128
#: ``method="blocks"`` sums the grid into f x f blocks, f = ceil(d / BLOCKS_SIDE), so that the block
#: grid is at most this side (the multiscale solver takes about a second there).
BLOCKS_SIDE = 64
#: Above FAST_MAX_SIDE ``"auto"`` still solves EMD-L1 exactly (multiscale, on the supports) while the
#: supports' product is at most this many pairs (sparse maps such as small-n heatmaps: seconds).
SUPPORT_EXACT_MAX_PAIRS = 8_000_000
#: ``"auto"`` gives the certified W2 solver (ldpviz.metrics.w2_exact) this many seconds before falling back to BFM
#: (checked every few million simplex pivots and between repair rounds). Measured on 2 shared cores
#: (docs/w2-speed.md, issue 28): every case at d <= 64 certifies in under a second, a 1-cell blur of a city at
#: d = 256 in under 2 s of CPU, LDP estimates of a city at d = 256 in several seconds (warm-started levels); 5 s
#: lets the near-copies through, and above AUTO_CERTIFY_ALWAYS_SIDE 'auto' tries the exact solver only where BFM
#: reads a near-copy, so it never spends its budget on far estimates before falling back. BFM there is an
#: approximation with a certified interval, not a guarantee of a small error: ~0.3% on the synthetic cases of
#: docs/w2-speed.md, but 14% low on a city's DAM estimate at epsilon 3, d = 256 (4.98 against 5.81 cells).
#: 0: BFM at once. A page that must answer at once uses :func:`w2_progressive` instead.
AUTO_W2_BUDGET_S = 5.0
#: Below this W2 (in cells) a BFM readout carries a caveat: near-copies, where BFM reads low against the
#: discrete optimum (the continuous relaxation differs; measured in docs/w2-speed.md, "Diagnosis").
BFM_NEAR_COPY_CELLS = 3.0
#: Up to this grid side ``"auto"`` runs the certified W2 solver directly; above it, only where BFM reads a
#: near-copy (under :data:`BFM_NEAR_COPY_CELLS`), so a page at d = 256 never waits for repair rounds.
AUTO_CERTIFY_ALWAYS_SIDE = 64
#: ``method="exact"`` refuses dense cost matrices larger than this (8 bytes each).
EXACT_MAX_PAIRS = 64_000_000
#: Up to this many pairs the dense exact solve is our own network simplex (about 40 bytes a pair held); above,
#: POT's (a full bipartite graph stored implicitly: about half the memory at EXACT_MAX_PAIRS).
OWN_DENSE_MAX_PAIRS = 4_000_000
#: Largest number of network-simplex iterations allowed (a cap, not a target).
_NUM_ITER_MAX = 100_000_000
#: Recursion base of the multiscale solver: grids this small are solved densely.
_BASE_SIDE = 16
#: Ring (in fine cells) added around each coarse-plan destination block.
_RING = 2
#: Reduced costs above -_CERT_TOL (squared cells / cells) certify optimality.
_CERT_TOL = 1e-9
#: Candidate pairs added per violated row in one column-generation round.
_ADD_PER_ROW = 32
#: Column-generation rounds before falling back to the dense solver (never reached in the bench).
_MAX_ROUNDS = 50

# ---- transport on the grid ------------------------------------------------------------

def _axis_cost(delta: np.ndarray, metric: str) -> np.ndarray:
    """Per-axis ground cost: both metrics are separable, c = f(dx) + f(dy)."""
    delta = np.asarray(delta, dtype=float)
    return delta * delta if metric == "sqeuclidean" else np.abs(delta)


def _pair_cost(i: np.ndarray, j: np.ndarray, d: int, metric: str) -> np.ndarray:
    """Ground cost between flat cell indices ``i`` and ``j`` (broadcasting), in cells."""
    ri, ci = np.divmod(i, d)
    rj, cj = np.divmod(j, d)
    return _axis_cost(ci - cj, metric) + _axis_cost(ri - rj, metric)


def _result_ok(log: dict, what: str) -> None:
    code = int(log.get("result_code", 1))
    if code != 1:  # 1 = OPTIMAL in POT's network simplex
        raise RuntimeError(f"{what}: network simplex did not reach the optimum "
                           f"(result code {code}: {log.get('warning')})")


def _pairs(p: np.ndarray, q: np.ndarray, metric: str) -> SparsePairs:
    """The supports of ``p`` and ``q`` under the metric's ground cost, no pairs yet (:meth:`SparsePairs.start`)."""
    d = p.shape[0]
    top = float(_axis_cost(np.array([d - 1]), metric)[0]) * 2.0      # the largest cost any later pair can have
    return SparsePairs(p, q, lambda x, y: _pair_cost(x, y, d, metric), top)


def _solved(prob: SparsePairs, keys: np.ndarray, what: str) -> TransportSimplex:
    """Our network simplex over the pairs ``keys`` of ``prob``, solved; refuses a plan that still routes mass
    through its artificial root (the pairs given admit no feasible plan)."""
    sx = prob.start(keys)
    _run(sx, what)
    return sx


def _run(sx: TransportSimplex, what: str) -> None:
    if not sx.run() or not root_ok(sx):
        raise RuntimeError(f"{what}: network simplex did not reach a feasible optimum "
                           f"(mass {sx.artificial_flow:.3g} left on the artificial root)")


def _emd_dense(p: np.ndarray, q: np.ndarray, metric: str, want_plan: bool = True):
    """Exact OT between ``(d, d)`` distributions on their supports (every pair of support cells).

    Returns ``(cost, i, j, mass)``: the optimal cost and the optimal plan's
    non-zero entries as flat grid indices.
    """
    d = p.shape[0]
    prob = _pairs(p, q, metric)
    ia, ib, a, b = prob.ia, prob.ib, prob.a, prob.b
    if len(ia) * len(ib) <= OWN_DENSE_MAX_PAIRS:
        sx = _solved(prob, prob.all_keys(), "exact transport")
        r, c, m = prob.plan()
        keep = m > 0
        return max(sx.cost_value, 0.0), r[keep], c[keep], m[keep]
    M = _pair_cost(ia[:, None], ib[None, :], d, metric)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the result code is checked below
        if want_plan:
            G, log = _pot().emd(a, b, M, numItermax=_NUM_ITER_MAX, log=True)
        else:
            _, log = _pot().emd2(a, b, M, numItermax=_NUM_ITER_MAX, log=True)
    _result_ok(log, "exact transport")
    cost = max(float(log["cost"]), 0.0)
    if not want_plan:
        return cost, None, None, None
    r, c = np.nonzero(G > 0)
    return cost, ia[r], ib[c], G[r, c]


_coarsen = w2_exact.coarsen_2x2       # 2x2 block sums, shared with the certified W2 solver


def _ctransform(w: np.ndarray, metric: str, max_block: int = 1 << 22) -> np.ndarray:
    """``H[i] = min_j c(i, j) + w[j]`` over a ``(d, d)`` grid, in O(d^3) by separability.

    ``w`` is ``+inf`` on cells that are not allowed as ``j``.
    """
    d = w.shape[0]
    k = np.arange(d)
    D = _axis_cost(k[:, None] - k[None, :], metric)          # D[a, b] = f(a - b)
    step = max(1, max_block // (d * d))
    T = np.empty((d, d))
    for s in range(0, d, step):                               # T[yi, xj] = min_yj f(yi-yj) + w[yj, xj]
        T[s:s + step] = np.min(D[s:s + step, :, None] + w[None, :, :], axis=1)
    H = np.empty((d, d))
    for s in range(0, d, step):                               # H[yi, xi] = min_xj f(xi-xj) + T[yi, xj]
        H[s:s + step] = np.min(T[s:s + step, None, :] + D[None, :, :], axis=2)
    return H


def _certificate_transform(w: np.ndarray, metric: str) -> np.ndarray:
    """``min_j c(i, j) + w[j]``: the O(d^2) envelope kernel (ldpviz.metrics.envelope) for W2, else O(d^3)."""
    if metric == "sqeuclidean" and HAVE_NUMBA:
        return sq_distance_transform(w)[0]
    return _ctransform(w, metric)


def _ot_multiscale(p: np.ndarray, q: np.ndarray, metric: str, stats: dict | None = None):
    """Exact OT by coarse-to-fine sparse network simplex with a global dual certificate.

    Same return value as :func:`_emd_dense`. See the module docstring for the method.
    """
    d = p.shape[0]
    if d <= _BASE_SIDE:
        return _emd_dense(p, q, metric)
    # 1. coarse solution
    _, ci, cj, _ = _ot_multiscale(_coarsen(p), _coarsen(q), metric, None)
    dc = (d + 1) // 2
    # 2. candidate pairs: children of the coarse source x children of the coarse
    #    destination widened by a ring of ``_RING`` fine cells.
    h = _RING
    ri, cli = np.divmod(ci, dc)
    rj, clj = np.divmod(cj, dc)
    off_i = np.array([0, 1])
    off_j = np.arange(-h, h + 2)
    fr_i = (2 * ri[:, None] + off_i[None, :])                 # (E, 2)
    fc_i = (2 * cli[:, None] + off_i[None, :])
    fr_j = (2 * rj[:, None] + off_j[None, :])                 # (E, 4h+2)
    fc_j = (2 * clj[:, None] + off_j[None, :])
    src = (fr_i[:, :, None] * d + fc_i[:, None, :])           # (E, 2, 2) flat fine indices
    src_ok = (fr_i[:, :, None] < d) & (fc_i[:, None, :] < d)
    src = np.where(src_ok, src, -1).reshape(len(ci), -1)
    dst_ok = ((fr_j[:, :, None] >= 0) & (fr_j[:, :, None] < d) &
              (fc_j[:, None, :] >= 0) & (fc_j[:, None, :] < d))
    dst = np.where(dst_ok, fr_j[:, :, None] * d + fc_j[:, None, :], -1).reshape(len(ci), -1)

    prob = _pairs(p, q, metric)
    S = np.broadcast_to(src[:, :, None], (len(ci), src.shape[1], dst.shape[1])).ravel()
    T = np.broadcast_to(dst[:, None, :], (len(ci), src.shape[1], dst.shape[1])).ravel()
    ok = (S >= 0) & (T >= 0)
    return _certified_sparse(prob, unique_sorted(prob.pair_keys(S[ok], T[ok])), metric, stats)


def _certified_sparse(prob: SparsePairs, keys: np.ndarray, metric: str, stats: dict | None = None):
    """Exact OT from an initial set of candidate pairs: sparse network simplex, then column generation
    until the global dual certificate holds (steps 2-4 of the module docstring).

    ``keys`` are pairs of ``prob`` (:class:`~ldpviz.metrics.sparse_pairs.SparsePairs`); the initial set must admit
    a feasible plan. Each round's pairs join the live solve, which continues from its basis.
    """
    d, ia, ib, a, b = prob.d, prob.ia, prob.ib, prob.a, prob.b
    rows_b, cols_b = np.divmod(ib, d)
    rounds = 0
    sx = _solved(prob, keys, "sparse transport")
    while True:
        rounds += 1
        cost = sx.cost_value
        u, v = sx.duals()
        # 3. certificate: min_j c_ij - v_j >= u_i for every source cell i
        w = np.full(d * d, np.inf)
        w[ib] = -v
        H = _certificate_transform(w.reshape(d, d), metric).ravel()[ia]
        slack = H - u
        bad = np.flatnonzero(slack < -_CERT_TOL)
        if bad.size == 0:
            break
        if rounds >= _MAX_ROUNDS and len(ia) * len(ib) <= EXACT_MAX_PAIRS:
            if stats is not None:
                stats["fallback"] = True
            return _emd_dense(prob.p, prob.q, metric)
        # 4. add, for every violated row, its most negative reduced costs
        new = []
        step = max(1, (1 << 22) // max(len(ib), 1))
        for s in range(0, len(bad), step):
            rows = bad[s:s + step]
            ri_, ci_ = np.divmod(ia[rows], d)
            red = (_axis_cost(ci_[:, None] - cols_b[None, :], metric) +
                   _axis_cost(ri_[:, None] - rows_b[None, :], metric) - u[rows, None] - v[None, :])
            k = min(_ADD_PER_ROW, len(ib))
            top = np.argpartition(red, k - 1, axis=1)[:, :k]
            vals = np.take_along_axis(red, top, axis=1)
            sel = vals < -_CERT_TOL
            new.append((rows[:, None] * len(ib) + top)[sel])
        if prob.add(np.concatenate(new)) == 0:  # only round-off violations on pairs already in: optimal
            if stats is not None:
                stats["roundoff_stop"] = True
            break
        _run(sx, "sparse transport")                                   # the solve continues from its basis
    if stats is not None:
        stats.update(rounds=rounds, pairs=int(len(prob.keys)), gap=float(cost - (a @ u + b @ v)))
    gi, gj, gm = prob.plan()
    keep = gm > 0
    return max(cost, 0.0), gi[keep], gj[keep], gm[keep]


def _coarsen_by(p: np.ndarray, factor: int) -> np.ndarray:
    """``factor x factor`` block sums (zero rows and columns added to reach a multiple)."""
    d = p.shape[0]
    e = -(-d // factor) * factor
    if e != d:
        p = np.pad(p, ((0, e - d), (0, e - d)))
    return p.reshape(e // factor, factor, e // factor, factor).sum(axis=(1, 3))


@dataclass(frozen=True)
class TransportReadout:
    """One W2 or EMD-L1 value and how it was obtained (see :func:`w2_readout`, :func:`emd_l1_readout`).

    ``method`` is ``"exact"`` (dense network simplex), ``"multiscale"`` (certified
    multiscale network simplex: exact), ``"bfm"`` (back-and-forth method,
    :mod:`ldpviz.metrics.w2_back_and_forth`: approximate) or ``"blocks"`` (exact transport between
    f x f block sums: approximate). The exact value lies in ``[lower, upper]``
    (both equal ``value`` when ``exact``). Same unit as ``value`` (cells, or
    metres when ``cell_m`` was given).
    """

    value: float
    method: str
    exact: bool
    lower: float
    upper: float
    #: Why an approximate value may be off beyond what ``[lower, upper]`` conveys (empty if nothing known).
    caveat: str = ""

    def scaled(self, factor: float) -> "TransportReadout":
        return TransportReadout(self.value * factor, self.method, self.exact, self.lower * factor,
                                self.upper * factor, self.caveat)

    def note(self, label: str, unit: str) -> str:
        """One sentence for a page or a report; empty when the value is exact."""
        if self.exact:
            return ""
        how = {"bfm": "back-and-forth method (Jacobs & Léger 2020), a certified lower bound",
               "blocks": "exact transport between block sums",
               "certified": "the best plan found before the time budget ran out, not yet certified optimal"
               }.get(self.method, self.method)
        return (f"{label} is approximate ({how}): the exact value lies between {self.lower:.4g} and "
                f"{self.upper:.4g} {unit}." + (f" {self.caveat}" if self.caveat else ""))


#: Solver names accepted by ``method=`` ("fast" is the former name of "multiscale").
W2_METHODS = ("auto", "exact", "certified", "multiscale", "fast", "bfm", "blocks")
EMD_METHODS = ("auto", "exact", "multiscale", "fast", "blocks")


def _choose_method(p: np.ndarray, q: np.ndarray, metric: str) -> str:
    """What ``method="auto"`` runs (module docstring, "Choosing a solver")."""
    pairs = int(np.count_nonzero(p)) * int(np.count_nonzero(q))
    d = p.shape[0]
    if pairs <= AUTO_EXACT_MAX_PAIRS:
        return "exact"
    if metric == "sqeuclidean":
        return "certified"
    if d <= FAST_MAX_SIDE or pairs <= SUPPORT_EXACT_MAX_PAIRS:
        return "multiscale"
    return "bfm" if metric == "sqeuclidean" else "blocks"


def _bfm_readout(p: np.ndarray, q: np.ndarray, lower_sq: float = 0.0, upper_sq: float = math.inf) -> TransportReadout:
    """BFM's readout in cells, its interval narrowed by squared-cell bounds known from elsewhere (both hold)."""
    r = bfm_w2(p, q)
    caveat = ("" if r.value >= BFM_NEAR_COPY_CELLS else
              f"The estimate is close to the truth (W2 under {BFM_NEAR_COPY_CELLS:g} cells), where BFM's smooth "
              "map reads low against the discrete optimum (by a few percent on noisy copies, by tens of percent on "
              "blurred ones).")
    lower = max(r.lower, math.sqrt(max(lower_sq, 0.0)))
    upper = min(r.upper, math.sqrt(upper_sq))
    return TransportReadout(min(max(r.value, lower), upper), "bfm", False, lower, upper, caveat)


def _certified_readout(p: np.ndarray, q: np.ndarray, time_budget: float | None, fallback: bool) -> TransportReadout:
    """W2 by :func:`ldpviz.metrics.w2_exact.solve`; not certified within ``time_budget``: BFM (``fallback``) or the
    solver's own bounds (value = the plan's cost, an upper bound)."""
    r = w2_exact.solve(p, q, time_budget=time_budget)
    if r.certified:
        v = math.sqrt(r.upper)
        return TransportReadout(v, "certified", True, min(math.sqrt(r.lower), v), v)
    if fallback:
        return _bfm_readout(p, q, r.lower, r.upper)
    lo, hi = math.sqrt(r.lower), math.sqrt(r.upper)
    return TransportReadout(hi, "certified", False, lo, hi,
                            f"Not certified within {time_budget:g} s: the value is the best plan's cost.")


def _check_budget(time_budget: Any) -> float:
    try:
        time_budget = float(time_budget)
    except (TypeError, ValueError):
        raise LdpvizInputError(f"time_budget must be a number of seconds, got {time_budget!r}") from None
    require(time_budget > 0, f"time_budget must be > 0 seconds, got {time_budget!r}")
    return time_budget


def _transport(p: np.ndarray, q: np.ndarray, metric: str, method: str,
               time_budget: float | None = None) -> TransportReadout:
    """W2 (metric "sqeuclidean") or EMD-L1 ("cityblock") in cells, with the chosen solver."""
    allowed = W2_METHODS if metric == "sqeuclidean" else EMD_METHODS
    require(method in allowed, f"method must be one of {', '.join(repr(m) for m in allowed)}, got {method!r}")
    if time_budget is not None:
        time_budget = _check_budget(time_budget)
    auto = method == "auto"
    if auto:
        method = _choose_method(p, q, metric)
    if method == "certified":
        budget = AUTO_W2_BUDGET_S if auto and time_budget is None else time_budget
        if auto and budget <= 0:
            return _bfm_readout(p, q)
        if auto and time_budget is None and p.shape[0] > AUTO_CERTIFY_ALWAYS_SIDE:
            # Large grids: BFM first (seconds). Far from the truth it is accurate (docs/w2-speed.md) and the exact
            # solver can take minutes there (many repair rounds); near a copy BFM reads low and the exact solver
            # certifies in about a second, so it runs only there.
            first = _bfm_readout(p, q)
            if first.value >= BFM_NEAR_COPY_CELLS:
                return first
        return _certified_readout(p, q, budget, fallback=auto)
    if method == "fast":
        method = "multiscale"

    def dist(cost: float) -> float:
        return math.sqrt(cost) if metric == "sqeuclidean" else cost

    if method == "exact":
        pairs = int(np.count_nonzero(p)) * int(np.count_nonzero(q))
        require(pairs <= EXACT_MAX_PAIRS,
                f"exact transport would need a {pairs:,}-entry cost matrix (more than "
                f"{EXACT_MAX_PAIRS:,}); use method='multiscale', which gives the same optimum")
        v = dist(_emd_dense(p, q, metric, want_plan=False)[0])
        return TransportReadout(v, "exact", True, v, v)
    if method == "multiscale":
        v = dist(_ot_multiscale(p, q, metric)[0])
        return TransportReadout(v, "multiscale", True, v, v)
    if method == "bfm":
        return _bfm_readout(p, q)
    # blocks: exact transport between f x f block sums (block centres f cells apart). Each cell's
    # mass moves at most (f - 1) / sqrt(2) cells (W2) or f - 1 cells (L1) to its block centre, on
    # both sides, so the exact value is within sqrt(2) (f - 1), resp. 2 (f - 1), cells.
    d = p.shape[0]
    f = -(-d // BLOCKS_SIDE)
    if f == 1:
        return _transport(p, q, metric, "multiscale")
    v = dist(_ot_multiscale(_coarsen_by(p, f), _coarsen_by(q, f), metric)[0]) * f
    bound = (math.sqrt(2.0) if metric == "sqeuclidean" else 2.0) * (f - 1)
    return TransportReadout(v, "blocks", False, max(v - bound, 0.0), v + bound)


# ---- distances ---------------------------------------------------------------------

def w2_readout(true: Any, est: Any, *, cell_m: float = 1.0, method: str = "auto",
               time_budget: float | None = None) -> TransportReadout:
    """:func:`w2` with the solver used and, when approximate, a certified interval for the exact value.

    ``time_budget`` (seconds) bounds the certified solver (``method="auto"`` or ``"certified"``); ``"auto"``
    defaults it to :data:`AUTO_W2_BUDGET_S` and falls back to BFM when it runs out."""
    p, q = _pair(true, est)
    cell = _check_cell_m(cell_m)
    return _transport(p, q, "sqeuclidean", method, time_budget).scaled(cell)


def w2(true: Any, est: Any, *, cell_m: float = 1.0, method: str = "auto",
       time_budget: float | None = None) -> float:
    """2-Wasserstein distance with Euclidean ground cost between cell centres.

    ``sqrt(min_T sum_ij T_ij ||c_i - c_j||^2)`` over plans T with marginals
    ``true`` and ``est`` (DAM paper, dam-disk-area-mechanism.md eq. 17 and
    Sec. VII-C, where W2 = sqrt(W2^2) is the headline metric).

    ``method`` (module docstring, "Choosing a solver"): ``"exact"`` -- a
    network simplex over every pair of the two supports (zero-mass cells dropped;
    ours up to :data:`OWN_DENSE_MAX_PAIRS` pairs, POT's ``ot.emd2`` above); ``"certified"`` --
    :mod:`ldpviz.metrics.w2_exact`, coarse-to-fine sparse network simplex with local arcs and an O(d^2) global
    certificate (exact; seconds at d = 256 on
    near-copies); ``"multiscale"`` (alias ``"fast"``) --
    the certified multiscale solver, the same optimum (to 1e-9 squared cells)
    at a fraction of the time and memory from d ~ 24 on; ``"bfm"`` -- the
    back-and-forth method of :mod:`ldpviz.metrics.w2_back_and_forth` (approximate: a certified
    lower bound, about a second at d = 256); ``"blocks"`` -- exact transport
    between f x f block sums (f = ceil(d / :data:`BLOCKS_SIDE`), within
    sqrt(2) (f - 1) cells); ``"auto"`` -- dense exact on small supports, else
    ``"certified"`` within ``time_budget`` seconds (default :data:`AUTO_W2_BUDGET_S`), else
    BFM. :func:`w2_readout` says which ran and bounds an approximate value. Returned in
    cells, or metres when ``cell_m`` is given.
    """
    return w2_readout(true, est, cell_m=cell_m, method=method, time_budget=time_budget).value


def w2_progressive(true: Any, est: Any, *, cell_m: float = 1.0,
                   time_budget: float | None = None) -> Iterator[TransportReadout]:
    """W2 for a page that must answer at once: BFM's approximate readout first, then the exact one.

    Yields :class:`TransportReadout` objects, best last. Small supports (dense exact in well under a second)
    yield the exact value only. Otherwise the first is BFM's (``method="bfm"``, ``exact`` False, a certified
    interval; about a second at d = 256), the second the certified exact solver's (``exact`` True) -- or, when it
    does not certify within ``time_budget`` seconds (default: no limit), BFM's value with its interval narrowed by
    the bounds the solver reached (still ``exact`` False). A caller shows the first at once, labelled
    approximate (:meth:`TransportReadout.note`), and replaces it when the next arrives; stopping the iteration
    early costs nothing more. In cells, or metres when ``cell_m`` is given."""
    p, q = _pair(true, est)
    cell = _check_cell_m(cell_m)
    if time_budget is not None:
        time_budget = _check_budget(time_budget)
    if int(np.count_nonzero(p)) * int(np.count_nonzero(q)) <= AUTO_EXACT_MAX_PAIRS:
        yield _transport(p, q, "sqeuclidean", "exact").scaled(cell)
        return
    first = _bfm_readout(p, q)
    yield first.scaled(cell)
    r = w2_exact.solve(p, q, time_budget=time_budget)
    if r.certified:
        v = math.sqrt(r.upper)
        yield TransportReadout(v, "certified", True, min(math.sqrt(r.lower), v), v).scaled(cell)
    else:
        yield _bfm_readout(p, q, r.lower, r.upper).scaled(cell)


def emd_l1_readout(true: Any, est: Any, *, cell_m: float = 1.0, method: str = "auto") -> TransportReadout:
    """:func:`emd_l1` with the solver used and, when approximate, a certified interval for the exact value."""
    p, q = _pair(true, est)
    cell = _check_cell_m(cell_m)
    return _transport(p, q, "cityblock", method).scaled(cell)


def emd_l1(true: Any, est: Any, *, cell_m: float = 1.0, method: str = "auto") -> float:
    """Earth Mover's Distance with the L1 (Manhattan) ground metric between cell centres.

    ``min_T sum_ij T_ij ||c_i - c_j||_1`` (dp-heatmaps-sparse-emd.md, Sec. 2.1),
    between the normalised distributions. ``method``: ``"exact"`` (dense
    network simplex), ``"multiscale"``/``"fast"`` (certified multiscale, exact
    for any separable cost), ``"blocks"`` (f x f block sums, within 2 (f - 1)
    cells) or ``"auto"``: exact up to d = :data:`FAST_MAX_SIDE` and, above it,
    wherever the supports' product is at most :data:`SUPPORT_EXACT_MAX_PAIRS`;
    blocks otherwise (flagged by :func:`emd_l1_readout`). Returned in cells, or
    metres when ``cell_m`` is given.
    """
    return emd_l1_readout(true, est, cell_m=cell_m, method=method).value
