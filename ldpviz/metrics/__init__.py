"""How far an estimated spatial distribution is from the truth.

Flat functions in the style of POT (``ot``). Every grid metric takes ``true``
and ``est`` as ``(d, d)`` non-negative arrays on the same grid (indexed
``[row, col]``, see :mod:`ldpviz.geo.domain`); both are normalised to sum 1 here, and
an input with zero total mass raises :class:`~ldpviz.errors.LdpvizInputError`.
Distances are in *cells* (cell centres one unit apart) unless ``cell_m`` (the
cell side in metres, ``Grid.cell_m``) is given, in which case they are in metres.

Sources (files in ``shared/papers/``):

* ``dam-disk-area-mechanism.md`` -- 2-Wasserstein distance between the true and
  recovered densities (eq. 17, Sec. VII-C) and the sliced Wasserstein distance
  (Sec. V-A, Definition 7);
* ``dp-heatmaps-sparse-emd.md`` -- EMD with the L1 ground metric (Sec. 2.1) and
  the heatmap metrics Similarity, Pearson coefficient and KL-divergence (Sec. 4,
  "Metrics");
* ``grid-decompositions-ug-privag-aag.md`` -- range queries answered
  area-proportionally (eq. 8) and the Average Query Error (eq. 9, Sec. 4.2).

Exact transport on a d x d grid
-------------------------------
``w2`` and ``emd_l1`` solve the discrete transport problem between the cell
centres exactly. For small supports this is POT's network simplex on the dense
cost matrix (``method="exact"``). A dense cost matrix has (d^2)^2 entries, which
at d = 64 is 16.8 M pairs and up to ~19 s of network simplex, and at d = 128
(268 M pairs, 2 GB) does not fit comfortably in memory. ``method="multiscale"`` (formerly ``"fast"``,
still accepted) is a *multiscale, certified* solver (:func:`_ot_multiscale`) that returns the same optimum:

1. solve the problem on the 2x coarsened grid (recursively, down to
   ``_BASE_SIDE``), which says roughly where every cell's mass goes;
2. on the fine grid, keep only the pairs (i, j) whose coarse parents are
   matched by the coarse plan, widened to the 3x3 coarse neighbourhood of the
   destination, and solve that *sparse* transport problem exactly with POT's
   sparse network simplex (``ot.emd`` with a ``scipy.sparse`` cost; later
   rounds warm-start from the previous duals). The restricted problem is
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
parabolas of :mod:`ldpviz.metrics.w2_back_and_forth`. ``bench/w2_accuracy.py`` measures it
against the dense solver and times it (``docs/w2-accuracy.md``). Other
candidates were set aside: dropping negligible mass does not help because LDP
estimates are dense; entropic (Sinkhorn) distances are biased by an amount
that grows with the regularisation while their iteration count grows with its
inverse; plain coarsening (exact W2 between 2x2 block sums) was measured at
d = 64 to be off by up to 28% when W2 is about one cell.

W2 has a faster exact path, ``method="certified"`` (:mod:`ldpviz.metrics.w2_exact`): the same
coarse-to-fine sparse network simplex with local arcs added, certified by an O(d^2)
squared-distance transform that also names the violating arcs to add (exact W2 at
d = 256 in seconds on near-copies; docs/w2-speed.md).

Choosing a solver (``method="auto"``, issue 14 item 5, issue 15 item 14, issue 23)
---------------------------------------------------------------------------------
1. supports' product <= :data:`AUTO_EXACT_MAX_PAIRS`: dense exact;
2. W2: the certified solver within a time budget (:data:`AUTO_W2_BUDGET_S` seconds unless
   the caller passes ``time_budget``); above :data:`AUTO_CERTIFY_ALWAYS_SIDE` only where BFM reads a
   near-copy (BFM's own readout stands elsewhere: accurate there, and seconds); EMD-L1: full grids up to :data:`FAST_MAX_SIDE`
   and any grid whose supports' product is at most :data:`SUPPORT_EXACT_MAX_PAIRS`
   (sparse maps, e.g. a few hundred users at d = 256): the certified multiscale solver, exact;
3. otherwise (W2 not certified within the budget) the back-and-forth method
   (:mod:`ldpviz.metrics.w2_back_and_forth`, under a second at d = 256; it reads low on near-copies, W2 under
   :data:`BFM_NEAR_COPY_CELLS`, and says so), its interval narrowed by the bounds the
   certified solver reached; EMD-L1 exact transport between f x f block sums
   (f = ceil(d / :data:`BLOCKS_SIDE`)).
   Both are approximate and say so: :func:`w2_readout` / :func:`emd_l1_readout`
   return a :class:`TransportReadout` with the method and a certified interval
   ``[lower, upper]`` holding the exact value, and :func:`evaluate` hands them
   out through its ``readouts`` argument. ``docs/w2-method.md`` explains BFM and
   ``docs/w2-accuracy.md`` measures every path.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import ot
import scipy.sparse as sp

from ldpviz.errors import LdpvizInputError, require
from ldpviz.metrics.w2_back_and_forth import HAVE_NUMBA, bfm_w2, quad_ctransform
from ldpviz.geo.partition import Partition, grid_query
from ldpviz.metrics import w2_exact

try:  # POT's low-level sparse network simplex, used only for its warm start
    from ot.lp.emd_wrap import emd_c_sparse as _emd_c_sparse
except ImportError:  # pragma: no cover - older or restructured POT
    _emd_c_sparse = None

__all__ = [
    "w2", "w2_readout", "sliced_w2", "emd_l1", "emd_l1_readout", "TransportReadout", "kl", "kl_sigma",
    "l1", "mse", "pearson", "similarity", "random_queries", "aqe", "true_answers", "estimate_answers",
    "aqe_from_answers", "evaluate", "evaluate_trials", "METRIC_INFO",
]

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
#: (checked between network-simplex rounds, so one round can overrun it). Near-copies at d = 256 certify in
#: about a second; GRR and DAM estimates of a city at epsilon = 1 (W2 of 16-61 cells) took 50-80 s of CPU
#: (docs/w2-speed.md), so there 'auto' ends with BFM, accurate to ~0.3% that far from the truth. 0: BFM at once.
AUTO_W2_BUDGET_S = 30.0
#: Below this W2 (in cells) a BFM readout carries a caveat: near-copies, where BFM reads low against the
#: discrete optimum (the continuous relaxation differs; measured in docs/w2-speed.md, "Diagnosis").
BFM_NEAR_COPY_CELLS = 3.0
#: Up to this grid side ``"auto"`` runs the certified W2 solver directly; above it, only where BFM reads a
#: near-copy (under :data:`BFM_NEAR_COPY_CELLS`), so a page at d = 256 never waits for repair rounds.
AUTO_CERTIFY_ALWAYS_SIDE = 64
#: ``method="exact"`` refuses dense cost matrices larger than this (8 bytes each).
EXACT_MAX_PAIRS = 64_000_000
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
#: Aspect ratios (width / height) of random queries: log-uniform on this range.
QUERY_ASPECT_RANGE = (0.25, 4.0)


# ---- input checking ----------------------------------------------------------------

def _as_distribution(x: Any, name: str) -> np.ndarray:
    """``x`` as a ``(d, d)`` float array normalised to sum 1, or LdpvizInputError."""
    try:
        arr = np.array(x, dtype=float)
    except (TypeError, ValueError):
        raise LdpvizInputError(f"{name} must be a (d, d) array of numbers, got {type(x).__name__}") from None
    require(arr.ndim == 2 and arr.shape[0] == arr.shape[1] and arr.shape[0] >= 1,
            f"{name} must be a square (d, d) density array, got shape {arr.shape}")
    require(bool(np.all(np.isfinite(arr))), f"{name} contains NaN or infinite values")
    scale = float(np.abs(arr).max())
    # Round-off from upstream arithmetic (e.g. -1e-18) is clipped; real negatives are refused.
    require(float(arr.min()) >= -1e-12 * scale,
            f"{name} has negative entries (smallest {arr.min():g}); a density must be non-negative "
            f"(project raw estimates onto the simplex first)")
    np.clip(arr, 0.0, None, out=arr)
    total = float(arr.sum())
    require(total > 0.0, f"{name} has zero total mass: a distribution needs at least one cell with "
                         f"positive mass")
    return arr / total


def _pair(true: Any, est: Any) -> tuple[np.ndarray, np.ndarray]:
    p = _as_distribution(true, "the true density")
    q = _as_distribution(est, "the estimated density")
    require(p.shape == q.shape, f"the true and estimated densities must be on the same grid, got shapes "
                                f"{p.shape} and {q.shape}")
    return p, q


def _check_cell_m(cell_m: Any) -> float:
    try:
        value = float(cell_m)
    except (TypeError, ValueError):
        raise LdpvizInputError(f"cell_m (cell side in metres) must be a number, got {cell_m!r}") from None
    require(math.isfinite(value) and value > 0, f"cell_m (cell side in metres) must be > 0, got {cell_m!r}")
    return value


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


def _emd_dense(p: np.ndarray, q: np.ndarray, metric: str, want_plan: bool = True):
    """Exact OT between ``(d, d)`` distributions on their supports (dense cost matrix).

    Returns ``(cost, i, j, mass)``: the optimal cost and the optimal plan's
    non-zero entries as flat grid indices.
    """
    d = p.shape[0]
    ia = np.flatnonzero(p.ravel() > 0)
    ib = np.flatnonzero(q.ravel() > 0)
    a = p.ravel()[ia]
    b = q.ravel()[ib]
    M = _pair_cost(ia[:, None], ib[None, :], d, metric)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the result code is checked below
        if want_plan:
            G, log = ot.emd(a, b, M, numItermax=_NUM_ITER_MAX, log=True)
        else:
            _, log = ot.emd2(a, b, M, numItermax=_NUM_ITER_MAX, log=True)
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
    """``min_j c(i, j) + w[j]``: O(d^2) lower envelope of parabolas for W2 (ldpviz.metrics.w2_back_and_forth), else O(d^3)."""
    if metric == "sqeuclidean" and HAVE_NUMBA:
        return 2.0 * quad_ctransform(-0.5 * w)      # |x - y|^2 + w = 2 (|x - y|^2 / 2 + w / 2)
    return _ctransform(w, metric)


def _emd_sparse(a: np.ndarray, b: np.ndarray, ei: np.ndarray, ej: np.ndarray, cost: np.ndarray,
                warm: tuple[np.ndarray, np.ndarray] | None = None):
    """Exact OT restricted to the pairs ``(ei[k], ej[k])`` (POT's sparse network simplex).

    Returns ``(cost, rows, cols, mass, u, v)``. ``warm`` (duals of a previous,
    smaller problem) is passed to POT's warm start when its low-level sparse
    solver offers one (POT >= 0.9.6); otherwise the public ``ot.emd`` is used.
    """
    if warm is not None and _emd_c_sparse is not None:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                fs, ft, fv, cost_, u, v, code = _emd_c_sparse(
                    a, b, ei.astype(np.uint64), ej.astype(np.uint64), np.ascontiguousarray(cost, dtype=float),
                    _NUM_ITER_MAX, np.ascontiguousarray(warm[0], dtype=float),
                    np.ascontiguousarray(warm[1], dtype=float))
        except TypeError:  # a POT without the warm-start arguments
            pass
        else:
            _result_ok({"result_code": code}, "sparse transport")
            return float(cost_), fs.astype(np.int64), ft.astype(np.int64), fv, np.asarray(u), np.asarray(v)
    M = sp.coo_array((cost, (ei, ej)), shape=(len(a), len(b)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        G, log = ot.emd(a, b, M, numItermax=_NUM_ITER_MAX, log=True, center_dual=False)
    _result_ok(log, "sparse transport")
    G = sp.coo_array(G)
    return float(log["cost"]), G.row, G.col, G.data, np.asarray(log["u"]), np.asarray(log["v"])


def _unique_sorted(x: np.ndarray) -> np.ndarray:
    """Sorted unique values (sort + diff; faster here than numpy's hash-based unique)."""
    x = np.sort(x, kind="stable")
    if x.size:
        x = x[np.concatenate([[True], x[1:] != x[:-1]])]
    return x


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

    pf, qf = p.ravel(), q.ravel()
    ia = np.flatnonzero(pf > 0)
    ib = np.flatnonzero(qf > 0)
    a, b = pf[ia], qf[ib]
    pos_a = np.full(d * d, -1, dtype=np.int64)
    pos_a[ia] = np.arange(len(ia))
    pos_b = np.full(d * d, -1, dtype=np.int64)
    pos_b[ib] = np.arange(len(ib))
    S = np.broadcast_to(src[:, :, None], (len(ci), src.shape[1], dst.shape[1])).ravel()
    T = np.broadcast_to(dst[:, None, :], (len(ci), src.shape[1], dst.shape[1])).ravel()
    ok = (S >= 0) & (T >= 0)
    S, T = S[ok], T[ok]
    li, lj = pos_a[S], pos_b[T]
    ok = (li >= 0) & (lj >= 0)
    keys = _unique_sorted(li[ok] * len(ib) + lj[ok])
    return _certified_sparse(p, q, ia, ib, keys, metric, stats)


def _certified_sparse(p: np.ndarray, q: np.ndarray, ia: np.ndarray, ib: np.ndarray, keys: np.ndarray,
                      metric: str, stats: dict | None = None):
    """Exact OT from an initial set of candidate pairs: sparse network simplex, then column generation
    until the global dual certificate holds (steps 2-4 of the module docstring).

    ``keys`` are ``i * len(ib) + j`` over the supports ``ia`` (of p) and ``ib`` (of q); the initial
    set must admit a feasible plan.
    """
    d = p.shape[0]
    a, b = p.ravel()[ia], q.ravel()[ib]
    rows_b, cols_b = np.divmod(ib, d)
    rounds = 0
    warm = None
    while True:
        rounds += 1
        ei, ej = np.divmod(keys, len(ib))
        cost, gi, gj, gm, u, v = _emd_sparse(a, b, ei, ej, _pair_cost(ia[ei], ib[ej], d, metric), warm)
        warm = (u, v)
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
            return _emd_dense(p, q, metric)
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
        grown = _unique_sorted(np.concatenate([keys, *new]))
        if len(grown) == len(keys):  # only round-off violations on pairs already in: optimal
            if stats is not None:
                stats["roundoff_stop"] = True
            break
        keys = grown
    if stats is not None:
        stats.update(rounds=rounds, pairs=int(len(keys)), gap=float(cost - (a @ u + b @ v)))
    keep = gm > 0
    return max(cost, 0.0), ia[gi[keep]], ib[gj[keep]], gm[keep]


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


def _transport(p: np.ndarray, q: np.ndarray, metric: str, method: str,
               time_budget: float | None = None) -> TransportReadout:
    """W2 (metric "sqeuclidean") or EMD-L1 ("cityblock") in cells, with the chosen solver."""
    allowed = W2_METHODS if metric == "sqeuclidean" else EMD_METHODS
    require(method in allowed, f"method must be one of {', '.join(repr(m) for m in allowed)}, got {method!r}")
    if time_budget is not None:
        try:
            time_budget = float(time_budget)
        except (TypeError, ValueError):
            raise LdpvizInputError(f"time_budget must be a number of seconds, got {time_budget!r}") from None
        require(time_budget > 0, f"time_budget must be > 0 seconds, got {time_budget!r}")
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

    ``method`` (module docstring, "Choosing a solver"): ``"exact"`` -- POT's
    network simplex (``ot.emd2``) on the dense cost matrix between the two
    supports (zero-mass cells dropped); ``"certified"`` -- :mod:`ldpviz.metrics.w2_exact`, coarse-to-fine sparse
    network simplex with local arcs and an O(d^2) global certificate (exact; seconds at d = 256 on
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


def sliced_w2(true: Any, est: Any, *, cell_m: float = 1.0, n_projections: int = 200, seed: int = 0) -> float:
    """Sliced 2-Wasserstein distance, textbook scale: ``SW2 = sqrt(E_theta W2^2(P_theta p, P_theta q))``.

    DAM paper (dam-disk-area-mechanism.md Sec. V-A, Definition 7, with p = 2 and
    the uniform measure on directions): project both distributions on lines
    through the origin and average the squared 1-D 2-Wasserstein distances.
    Both live on the grid's cell centres, so each direction needs one sort of
    the common support and one O(n) walk of the monotone coupling (the value
    ``ot.sliced_wasserstein_distance(p=2)`` gives, tested; ~5x faster at
    d = 256); the directions are ``n_projections`` evenly spaced angles
    in [0, pi) rotated by a random offset drawn from ``seed`` (stratified
    Monte Carlo: deterministic per seed and far less noisy than i.i.d. angles).

    No rescaling: a translation by a vector ``s`` gives ``|s| / sqrt(2)`` in 2-D
    (``E_theta (theta . s)^2 = |s|^2 / 2``), and ``SW2 <= W2 / sqrt(2)`` for any
    pair. (Until issue 15 this value was multiplied by sqrt(2).) In cells, or
    metres with ``cell_m``.
    """
    p, q = _pair(true, est)
    cell = _check_cell_m(cell_m)
    require(isinstance(n_projections, (int, np.integer)) and n_projections >= 1,
            f"n_projections must be a whole number >= 1, got {n_projections!r}")
    return _sliced_w2_many(p, [q], cell, n_projections, seed)[0]


def _sliced_w2_many(p: np.ndarray, qs: list[np.ndarray], cell: float, n_projections: int = 200,
                    seed: int = 0) -> list[float]:
    """:func:`sliced_w2` of ``p`` against each of ``qs``, sharing one sort per direction.

    All maps live on the grid's cell centres, so the points are the union of the supports; a point with
    zero weight in a map moves no mass in the monotone walk, so each value equals the one computed on that
    pair's own support (the same masses meet in the same order)."""
    d = p.shape[0]
    a = p.ravel() / p.sum()
    bs = [q.ravel() / q.sum() for q in qs]
    keep = a > 0
    for b in bs:
        keep |= b > 0
    idx = np.flatnonzero(keep)
    r, c = np.divmod(idx, d)
    wa = a[idx]
    wbs = [b[idx] for b in bs]
    theta = sliced_directions(n_projections, seed)
    totals = [0.0] * len(qs)
    for k in range(theta.shape[1]):
        t = (c + 0.5) * theta[0, k] + (r + 0.5) * theta[1, k]
        order = np.argsort(t, kind="stable")
        x, wa_k = t[order], wa[order]
        for i, wb in enumerate(wbs):
            totals[i] += float(_w2_sq_1d_common(x, wa_k, wb[order]))
    return [float(math.sqrt(max(total / theta.shape[1], 0.0))) * cell for total in totals]


def _w2_sq_1d_common_py(x: np.ndarray, a: np.ndarray, b: np.ndarray) -> float:
    """Squared 1-D W2 between weights ``a`` and ``b`` (each summing to 1) on the same sorted points ``x``:
    the monotone (north-west corner) coupling, walked once, O(n)."""
    n = x.shape[0]
    i = j = 0
    ra, rb = a[0], b[0]
    total = 0.0
    while i < n and j < n:
        m = min(ra, rb)
        diff = x[i] - x[j]
        total += m * diff * diff
        ra -= m
        rb -= m
        if ra <= 1e-15:
            i += 1
            if i < n:
                ra = a[i]
        if rb <= 1e-15:
            j += 1
            if j < n:
                rb = b[j]
    return total


try:  # numba compiles the walk (a declared dependency; ldpviz.metrics.w2_back_and_forth uses it too)
    import numba as _numba
    _w2_sq_1d_common = _numba.njit(cache=True, nogil=True)(_w2_sq_1d_common_py)
except ImportError:  # pragma: no cover
    _w2_sq_1d_common = _w2_sq_1d_common_py


def sliced_directions(n_projections: int, seed: int = 0) -> np.ndarray:
    """The ``(2, n)`` unit directions :func:`sliced_w2` uses: stratified angles in [0, pi)."""
    offset = np.random.default_rng(seed).uniform()
    angles = np.pi * (np.arange(n_projections) + offset) / n_projections
    return np.vstack([np.cos(angles), np.sin(angles)])


def kl_sigma(d: int) -> float:
    """Smoothing (standard deviation in cells) that :func:`evaluate` uses for KL on a d x d grid:
    d / 64 (the heatmap benchmark's sigma, bench/heatmap_claims.py), at least one cell."""
    return max(1.0, d / 64.0)


def _gaussian_smooth(p: np.ndarray, sigma: float) -> np.ndarray:
    """Point masses at cell centres convolved with N(0, sigma^2 I), binned back to the cells and folded at the
    region's edges (mirror), so no mass leaves the grid. The kernel is the exact binned Gaussian
    ``Phi((k + 1/2) / sigma) - Phi((k - 1/2) / sigma)`` (truncated at 8 sigma, renormalised)."""
    from scipy.ndimage import correlate1d
    from scipy.special import ndtr
    half = int(math.ceil(8 * sigma))
    k = np.arange(-half, half + 1, dtype=float)
    w = ndtr((k + 0.5) / sigma) - ndtr((k - 0.5) / sigma)
    w /= w.sum()
    out = correlate1d(p, w, axis=0, mode="reflect")
    out = correlate1d(out, w, axis=1, mode="reflect")
    return np.clip(out, 0.0, None) / out.sum()


def kl(true: Any, est: Any, *, sigma: float = 0.0, floor: float = 1e-10) -> float:
    """Kullback-Leibler divergence KL(true || est) in nats, optionally on Gaussian-smoothed maps.

    Heatmap metric of dp-heatmaps-sparse-emd.md (Sec. 4, "Metrics"; lower is
    better). With ``sigma > 0`` (cells) both maps are first smoothed as the
    paper's heatmaps are (Sec. 2: a Gaussian filter of variance sigma^2; here
    the exact binned kernel, mirrored at the edges, see :func:`_gaussian_smooth`).
    Smoothing is what makes KL informative when users are few (n << d^2): on
    raw maps almost every cell the truth uses is empty or noisy in an estimate,
    and the value is governed by ``floor``. On smoothed maps KL is bounded by
    transport, ``KL <= W2^2 / (2 sigma^2)`` (Appendix B, Lemma B.2 and
    convexity; the mirror fold and the binning only lower KL), so it ranks
    estimates by how far mass moved. Zero cells: terms with ``true = 0``
    contribute 0; ``est`` is floored at ``floor`` and renormalised, so KL stays
    finite when the estimate misses a cell the truth uses. Always >= 0.
    """
    p, q = _pair(true, est)
    require(isinstance(floor, (int, float, np.floating)) and 0 < floor < 1,
            f"floor must be a number in (0, 1), got {floor!r}")
    require(isinstance(sigma, (int, float, np.integer, np.floating)) and math.isfinite(sigma) and sigma >= 0,
            f"sigma (KL smoothing, in cells) must be a number >= 0, got {sigma!r}")
    if sigma > 0:
        p, q = _gaussian_smooth(p, float(sigma)), _gaussian_smooth(q, float(sigma))
    return _kl_smoothed(p, q, floor)


def _kl_smoothed(p: np.ndarray, q: np.ndarray, floor: float = 1e-10) -> float:
    """KL(p || q) of two (already smoothed) distributions, ``q`` floored at ``floor`` and renormalised."""
    q = np.maximum(q, floor)
    q = q / q.sum()
    mask = p > 0
    return max(float(np.sum(p[mask] * np.log(p[mask] / q[mask]))), 0.0)


def l1(true: Any, est: Any) -> float:
    """L1 distance ``sum |p - q|`` between the normalised distributions, in [0, 2].

    The l1 error of dp-heatmaps-sparse-emd.md (Sec. 1 and Appendix B: bounded by EMD).
    """
    p, q = _pair(true, est)
    return float(np.abs(p - q).sum())


def mse(true: Any, est: Any) -> float:
    """Mean over cells of ``(p - q)^2`` between the normalised distributions.

    The squared-error (variance) metric of frequency estimation that the DAM
    paper (dam-disk-area-mechanism.md Sec. I) lists with "mean absolute error,
    variances or KL divergence" as common, order-blind metrics.
    """
    p, q = _pair(true, est)
    return float(np.mean((p - q) ** 2))


def pearson(true: Any, est: Any) -> float:
    """Pearson correlation coefficient between the cell values (higher is better).

    Heatmap metric of dp-heatmaps-sparse-emd.md (Sec. 4, "Metrics"). Undefined
    when either distribution is constant over the grid (e.g. uniform); we then
    return 0.0 (no linear association can be measured).
    """
    p, q = _pair(true, est)
    p, q = p.ravel(), q.ravel()
    if np.all(p == p[0]) or np.all(q == q[0]):
        return 0.0
    r = float(np.corrcoef(p, q)[0, 1])
    return float(np.clip(r, -1.0, 1.0))


def similarity(true: Any, est: Any) -> float:
    """Histogram intersection ``sum min(p, q)`` in [0, 1] (higher is better).

    The Similarity metric of dp-heatmaps-sparse-emd.md (Sec. 4, "Metrics");
    equals ``1 - l1 / 2`` for normalised distributions.
    """
    p, q = _pair(true, est)
    return float(np.minimum(p, q).sum())


# ---- range queries --------------------------------------------------------------------

def random_queries(rho: float, gamma: int = 500, seed: int = 0) -> np.ndarray:
    """``gamma`` random axis-aligned query rectangles ``(x0, y0, x1, y1)`` of area ``rho``.

    Grid paper (grid-decompositions-ug-privag-aag.md, Sec. 4.2 and 4.4):
    gamma = 500 random queries with ``A(q) = rho x Omega``. The paper does not
    say how the shapes are drawn; we draw the aspect ratio width/height
    log-uniformly on :data:`QUERY_ASPECT_RANGE` (narrowed so the rectangle fits
    in the unit square), then the position uniformly among those that keep the
    rectangle inside [0, 1]^2. Same seed, same queries.
    """
    try:
        rho = float(rho)
    except (TypeError, ValueError):
        raise LdpvizInputError(f"query size rho must be a number in (0, 1], got {rho!r}") from None
    require(math.isfinite(rho) and 0 < rho <= 1,
            f"query size rho (fraction of the region's area) must be in (0, 1], got {rho!r}")
    require(isinstance(gamma, (int, np.integer)) and not isinstance(gamma, bool) and gamma >= 1,
            f"the number of queries gamma must be a whole number >= 1, got {gamma!r}")
    rng = np.random.default_rng(seed)
    lo = max(QUERY_ASPECT_RANGE[0], rho)
    hi = min(QUERY_ASPECT_RANGE[1], 1.0 / rho)
    aspect = np.exp(rng.uniform(math.log(lo), math.log(hi), gamma))
    width = np.minimum(np.sqrt(rho * aspect), 1.0)
    height = np.minimum(rho / width, 1.0)
    x0 = rng.uniform(0.0, 1.0, gamma) * (1.0 - width)
    y0 = rng.uniform(0.0, 1.0, gamma) * (1.0 - height)
    return np.column_stack([x0, y0, np.minimum(x0 + width, 1.0), np.minimum(y0 + height, 1.0)])


def _check_queries(queries: Any) -> np.ndarray:
    try:
        qs = np.asarray(queries, dtype=float)
    except (TypeError, ValueError):
        raise LdpvizInputError("queries must be an array of rectangles (x0, y0, x1, y1)") from None
    require(qs.ndim == 2 and qs.shape[1] == 4 and qs.shape[0] >= 1,
            f"queries must have shape (n, 4) with rows (x0, y0, x1, y1), got {qs.shape}")
    require(bool(np.all(np.isfinite(qs))), "queries contain NaN or infinite coordinates")
    require(bool(np.all(qs[:, 2] >= qs[:, 0]) and np.all(qs[:, 3] >= qs[:, 1])),
            "every query needs x0 <= x1 and y0 <= y1")
    return qs


def _count_points(points: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """Fraction of ``points`` inside each query; cells' convention: [x0, x1) except at the far edge 1."""
    order = np.argsort(points[:, 0], kind="stable")
    xs, ys = points[order, 0], points[order, 1]
    out = np.empty(len(queries))
    for k, (x0, y0, x1, y1) in enumerate(queries):
        lo = np.searchsorted(xs, x0, side="left")
        hi = np.searchsorted(xs, x1, side="right" if x1 >= 1.0 else "left")
        y = ys[lo:hi]
        inside = (y >= y0) & ((y < y1) | ((y1 >= 1.0) & (y <= y1)))
        out[k] = np.count_nonzero(inside)
    return out / len(points)


def _query_fractions(obj: Any, queries: np.ndarray, name: str, allow_points: bool,
                     kind: str | None = None, raw_partition: bool = False) -> np.ndarray:
    """Fraction of the users inside each query (eq. 8: area-proportional within a piece).

    A Partition is normalised by its total mass unless ``raw_partition``: then its
    masses are read as fractions of the users as they are (an estimate's raw unbiased
    partition, grid paper eq. 8), so a noisy total -- which for fine grids is far from 1
    and can be negative -- neither inflates the answers nor flips their sign.
    """
    if isinstance(obj, Partition):
        require(bool(np.all(np.isfinite(obj.mass))), f"{name} partition has NaN or infinite masses")
        if raw_partition:
            return obj.query(queries)
        total = float(obj.mass.sum())
        require(total > 0, f"{name} partition has zero total mass")
        return obj.query(queries) / total
    try:
        arr = np.asarray(obj, dtype=float)
    except (TypeError, ValueError):
        raise LdpvizInputError(f"{name} must be a Partition, a (d, d) density or (n, 2) points") from None
    if kind is None:
        kind = "points" if (arr.ndim == 2 and arr.shape[1] == 2 and arr.shape[0] != 2) else "density"
    if kind == "points":
        require(allow_points, f"{name} must be a Partition or a (d, d) density, not points")
        require(arr.ndim == 2 and arr.shape[1] == 2 and len(arr) > 0,
                f"{name} points must have shape (n, 2) with n >= 1, got {arr.shape}")
        require(bool(np.all(np.isfinite(arr))), f"{name} points contain NaN or infinite coordinates")
        return _count_points(arr, queries)
    p = _as_distribution(arr, name)
    return grid_query(p, queries)


def true_answers(true: Any, queries: np.ndarray, kind: str | None = None) -> np.ndarray:
    """Exact fraction of the users inside each query, from ``(n, 2)`` points (counted half-open
    ``[x0, x1)`` except at the far edge 1, as cells bin them), a ``(d, d)`` density or a Partition
    (both normalised; area-proportional within a cell, eq. 8). Compute once, reuse across estimates."""
    return _query_fractions(true, _check_queries(queries), "the truth", True, kind)


def estimate_answers(est: Any, queries: np.ndarray) -> np.ndarray:
    """Eq. 8 on an estimate: the fraction of users it puts inside each query.

    A Partition (e.g. ``Estimate.partition``) is answered on its *raw* masses, read as
    fractions of the users (the grid paper's unbiased counts / |U|), never renormalised by
    their noisy total; a ``(d, d)`` density is a distribution and is normalised.
    """
    return _query_fractions(est, _check_queries(queries), "the estimate", False, raw_partition=True)


def aqe_from_answers(true_fractions: np.ndarray, est_fractions: np.ndarray, n_users: Any,
                     bound_fraction: float = 0.02) -> float:
    """Eq. 9 of the grid paper: ``mean_q |ans_q - ans'_q| / max(ans_q, b)``, answers as counts
    (fractions x ``n_users``), ``b = bound_fraction x n_users`` (the paper: 2% of |U|)."""
    try:
        n = float(n_users)
    except (TypeError, ValueError):
        raise LdpvizInputError(f"n_users must be a whole number >= 1, got {n_users!r}") from None
    require(math.isfinite(n) and n >= 1, f"n_users must be a whole number >= 1, got {n_users!r}")
    require(isinstance(bound_fraction, (int, float, np.floating)) and 0 < bound_fraction <= 1,
            f"bound_fraction must be in (0, 1], got {bound_fraction!r}")
    ans_true = np.asarray(true_fractions, dtype=float) * n
    ans_est = np.asarray(est_fractions, dtype=float) * n
    require(ans_true.shape == ans_est.shape, "true and estimated answers must be for the same queries")
    return float(np.mean(np.abs(ans_true - ans_est) / np.maximum(ans_true, bound_fraction * n)))


def _aqe(true: Any, est: Any, n_users: Any, queries: np.ndarray, bound_fraction: float,
         true_kind: str | None = None) -> float:
    return aqe_from_answers(true_answers(true, queries, true_kind), estimate_answers(est, queries), n_users,
                            bound_fraction)


def aqe(true: Any, est: Any, *, n_users: int, queries: np.ndarray | None = None, rho: float = 0.01,
        gamma: int = 500, seed: int = 0, bound_fraction: float = 0.02) -> float:
    """Average Query Error of the grid paper (grid-decompositions-ug-privag-aag.md eq. 9).

    ``AQE = mean_q |ans_q - ans'_q| / max(ans_q, b)`` with ``b = bound_fraction
    x n_users`` (the paper: 2% of |U|) and answers as counts (fraction x
    ``n_users``). Answers on a partition or density are area-proportional (eq. 8,
    uniformity within a cell). An estimate Partition is read raw: its masses are
    fractions of the users (as ``Estimate.partition`` holds them), not renormalised
    by their noisy total (:func:`estimate_answers`); the truth is normalised.
    ``queries`` default to ``random_queries(rho, gamma, seed)``; ``rho`` is the
    query size as a share of the region's area (``Scenario.query_rho`` in runs).

    ``true`` may be a :class:`~ldpviz.geo.partition.Partition`, a ``(d, d)`` density,
    or ``(n, 2)`` user points in unit coordinates (exact answers: the fraction of
    points inside, counted half-open ``[x0, x1)`` except at the far edge 1, as
    cells bin them); ``est`` a Partition or a ``(d, d)`` density. An array of
    shape ``(2, 2)`` is read as a density; pass two points through
    :func:`evaluate` (``true_points``) instead.
    """
    qs = _check_queries(random_queries(rho, gamma, seed) if queries is None else queries)
    return _aqe(true, est, n_users, qs, bound_fraction)


# ---- everything at once ----------------------------------------------------------------

METRIC_INFO: dict[str, dict[str, Any]] = {
    "w2_m": {"label": "W2 (m)", "lower_is_better": True,
             "help": "2-Wasserstein distance in metres: how far, on average, mass must move "
                     "(DAM paper, dam-disk-area-mechanism.md eq. 17)."},
    "w2_cells": {"label": "W2 (cells)", "lower_is_better": True,
                 "help": "2-Wasserstein distance in grid cells (DAM paper eq. 17), comparable across regions."},
    "sliced_w2_m": {"label": "Sliced W2 (m)", "lower_is_better": True,
                    "help": "Sliced 2-Wasserstein distance in metres: root mean square over directions of the "
                            "1-D W2 of the projected maps (DAM paper Sec. V-A, Definition 7). Textbook scale: "
                            "a shift by s reads s / sqrt(2), and it is at most W2 / sqrt(2)."},
    "emd_l1_m": {"label": "EMD, L1 (m)", "lower_is_better": True,
                 "help": "Earth Mover's Distance with Manhattan ground distance, in metres "
                         "(dp-heatmaps-sparse-emd.md Sec. 2.1)."},
    "aqe": {"label": "AQE", "lower_is_better": True,
            "help": "Average relative error of random range-count queries, bounded at 2% of users "
                    "(grid-decompositions-ug-privag-aag.md eq. 9)."},
    "kl": {"label": "KL divergence", "lower_is_better": True,
           "help": "KL(true || estimate) in nats between the maps smoothed by a Gaussian of sd max(1, d/64) "
                   "cells, as heatmaps are (dp-heatmaps-sparse-emd.md Sec. 4, Metrics); without smoothing a "
                   "sparse truth makes KL a measure of empty cells, not of distance."},
    "l1": {"label": "L1 distance", "lower_is_better": True,
           "help": "Sum of absolute cell differences, 0 to 2 (dp-heatmaps-sparse-emd.md Sec. 1)."},
    "mse": {"label": "MSE", "lower_is_better": True,
            "help": "Mean over cells of the squared difference of cell probabilities (the variance-type "
                    "error the DAM paper's Sec. I lists among common metrics)."},
    "pearson": {"label": "Pearson r", "lower_is_better": False,
                "help": "Correlation of cell probabilities, 0 if either map is flat "
                        "(dp-heatmaps-sparse-emd.md Sec. 4, Metrics)."},
    "similarity": {"label": "Similarity", "lower_is_better": False,
                   "help": "Histogram intersection sum min(p, q), 0 to 1 "
                           "(dp-heatmaps-sparse-emd.md Sec. 4, Metrics)."},
}


#: Metrics that cannot be negative (distances, divergences, errors, the intersection): their confidence
#: intervals are clipped at zero (issue 22). Pearson's r is the one that can.
NONNEGATIVE_METRICS = frozenset(k for k in METRIC_INFO if k != "pearson")


def evaluate(true_density: np.ndarray, estimate: Any, *, cell_m: float, n_users: int,
             true_points: np.ndarray | None = None, queries: np.ndarray | None = None,
             rho: float = 0.01, readouts: dict[str, TransportReadout] | None = None) -> dict[str, float]:
    """Every metric of :data:`METRIC_INFO` for one estimate, keyed as there.

    ``estimate`` is an :class:`~ldpviz.mechanisms.base.Estimate`: grid metrics
    use ``estimate.density``, AQE uses ``estimate.partition`` (the mechanism's
    own cells, grid paper eq. 8). AQE's true answers come from ``true_points``
    (exact counts) when given, else from ``true_density``; ``queries`` default
    to ``random_queries(rho)`` (seed 0). KL is taken on maps smoothed by
    :func:`kl_sigma` cells. Pass a dict as ``readouts`` to receive the
    :class:`TransportReadout` of ``"w2_m"`` and ``"emd_l1_m"`` (in metres):
    which solver ran, and the interval holding the exact value when it is
    approximate (``readout.exact`` is False).
    """
    rows, found = evaluate_trials(true_density, [estimate], cell_m=cell_m, n_users=n_users,
                                  true_points=true_points, queries=queries, rho=rho)
    if readouts is not None:
        readouts.update(found[0])
    return rows[0]


def evaluate_trials(true_density: np.ndarray, estimates: list, *, cell_m: float, n_users: int,
                    true_points: np.ndarray | None = None, queries: np.ndarray | None = None,
                    rho: float = 0.01) -> tuple[list[dict[str, float]], list[dict[str, TransportReadout]]]:
    """:func:`evaluate` for several estimates of the same truth (the trials of a run), in one pass.

    What depends on the truth alone is computed once: AQE's true answers (a sort of every user's point),
    KL's smoothed truth, and sliced W2's projections and sorts (:func:`_sliced_w2_many`, one sort per
    direction for all trials). Exact transport (W2, EMD-L1) is solved per trial. Every value equals
    :func:`evaluate`'s for that estimate alone (tests/test_trials.py). Returns (one row of metrics per
    estimate, one dict of transport readouts in metres per estimate).
    """
    require(len(estimates) >= 1, "evaluate_trials needs at least one estimate")
    p = _as_distribution(true_density, "the true density")
    cell = _check_cell_m(cell_m)
    qs = _check_queries(random_queries(rho) if queries is None else queries)
    if true_points is not None:
        truth_answers = true_answers(true_points, qs, "points")
    else:
        truth_answers = true_answers(p, qs, "density")
    sigma = kl_sigma(p.shape[0])
    p_again = _as_distribution(p, "the true density")      # as sliced_w2() and kl() normalise their inputs
    p_smooth = _gaussian_smooth(p_again, float(sigma))
    densities = []
    for estimate in estimates:
        q = _as_distribution(getattr(estimate, "density", estimate), "the estimated density")
        require(p.shape == q.shape, f"the true and estimated densities must be on the same grid, got shapes "
                                    f"{p.shape} and {q.shape}")
        densities.append(q)
    sliced = _sliced_w2_many(p_again, [_as_distribution(q, "the estimated density") for q in densities], cell)
    rows, found = [], []
    for estimate, q, sliced_value in zip(estimates, densities, sliced):
        partition = getattr(estimate, "partition", None)
        if partition is None:
            partition = Partition.uniform(q)
        aqe_value = aqe_from_answers(truth_answers, estimate_answers(partition, qs), n_users, 0.02)
        w2_read = _transport(p, q, "sqeuclidean", "auto")
        emd_read = _transport(p, q, "cityblock", "auto").scaled(cell)
        found.append({"w2_m": w2_read.scaled(cell), "emd_l1_m": emd_read})
        rows.append({
            "w2_m": w2_read.value * cell,
            "w2_cells": w2_read.value,
            "sliced_w2_m": sliced_value,
            "emd_l1_m": emd_read.value,
            "aqe": aqe_value,
            "kl": _kl_smoothed(p_smooth, _gaussian_smooth(_as_distribution(q, "the estimated density"),
                                                          float(sigma))),
            "l1": l1(p, q),
            "mse": mse(p, q),
            "pearson": pearson(p, q),
            "similarity": similarity(p, q),
        })
    return rows, found


def local_privacy(mechanism: Any, grid: Any = None, eps: float | None = None, **params: Any) -> float:
    """Local privacy (DAM paper eq. 15-16): expected distance in metres between a user's true cell
    and a Bayesian adversary's guess from one report (uniform prior). See :mod:`ldpviz.mechanisms.dam.local_privacy`."""
    from ldpviz.mechanisms.dam.local_privacy import local_privacy as _local_privacy
    return _local_privacy(mechanism, grid, eps, **params)


from ldpviz.metrics.knn import knn_quality  # noqa: E402  (L-SRR Sec. 6.3)
