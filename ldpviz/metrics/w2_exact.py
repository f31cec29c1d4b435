"""Exact, certified W2 on a d x d grid: sparse network simplex on local arcs, certified by a distance transform.

The discrete transport problem between cell centres (squared Euclidean cost, in squared cells) is solved on a
*sparse* set of candidate arcs and the restricted optimum is then proved globally optimal, or improved, by LP
duality:

1. **Candidate arcs.** Coarse to fine (Schmitzer, "A sparse multiscale algorithm for dense optimal transport",
   J. Math. Imaging Vis. 56 (2016), Sec. 4; Oberman & Ruan 2015): the 2 x 2-coarsened problem is solved first
   (recursively, densely at side <= ``_BASE_SIDE``); every coarse plan arc (I, J) contributes its children
   pairs (children of I) x (children of J, widened by ``_CHILD_RING`` fine cells), which admit a feasible
   plan (each coarse transfer spread over the children, :mod:`ldpviz.metrics.plan_refine`), so the restricted
   problem is always feasible. To these we add every
   source's local arcs to the destinations within ``radius`` cells (Chebyshev): near-copies move most mass
   by about a cell, and the local arcs carry it.
2. **Restricted optimum.** Our network simplex (:mod:`ldpviz.metrics.network_simplex`, LEMON's algorithm) returns
   the plan and the duals ``(u, v)``. Its first basis is the coarse plan's refinement (that feasible plan,
   a forest, taken first in leaf order), completed greedily over the other candidate arcs ordered by their
   reduced cost under the coarse level's duals (times 4: costs scale with the square of the cell side), so it
   starts feasible and near the coarse optimum (issue 28: "start from a basis ordered by the coarse level's
   duals"; a greedy crash on those reduced costs alone left mass on the artificial root wherever mass travels
   far, and the simplex spent most of its pivots driving it out). (Until issue 28 this was POT's ``ot.emd`` with
   a sparse cost, which in POT 0.9.x ignores ``potentials_init``: every repair round re-solved from scratch.)
3. **Certificate.** The restricted optimum is the global one iff every reduced cost is non-negative,
   ``|x - y|^2 - u(x) - v(y) >= 0`` for all d^2 x d^2 pairs. ``H(x) = min_y |x - y|^2 - v(y)`` is a
   squared-distance transform of ``-v``, separable into 1-D lower envelopes of parabolas (Felzenszwalb &
   Huttenlocher, "Distance transforms of sampled functions", Theory of Computing 8 (2012), Sec. 2-3), so it
   costs O(d^2) and also yields the minimising y for every x. No x with ``H(x) < u(x)`` means optimal.
4. **Repair.** Otherwise the arcs (x, argmin_y) of violating rows, and symmetrically (argmin_x, y) of
   violating columns (transform of ``-u``), each widened to the 3 x 3 cells around the new end (Schmitzer's
   shielding neighbourhoods are such grid-local sets), are added *to the live solve*: they enter as non-tree
   arcs at flow 0, the current basis stays feasible and optimal for the old arcs, and the simplex continues
   from it with the pivots the new arcs need.

Bounds, valid after any round: ``upper`` is the cost of the (feasible) restricted plan; ``lower`` is the dual
value of ``(H, v)``, ``sum_x p(x) H(x) + sum_y q(y) v(y)``, feasible by construction of H (weak duality).
Both are squared cells. :func:`solve` stops when they agree to ``_GAP_TOL`` or at a deadline, returning them
either way (``certified`` says which).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from ldpviz.metrics.envelope import sq_distance_transform
from ldpviz.metrics.network_simplex import feasible as root_ok
from ldpviz.metrics.plan_refine import leaf_order, refine_plan
from ldpviz.metrics.sparse_pairs import SparsePairs, unique_sorted

__all__ = ["ExactW2", "solve", "sq_distance_transform", "coarsen_2x2", "warm_up"]

#: Grids up to this side are solved on every pair of their supports (the simplex with all arcs).
_BASE_SIDE = 16
#: Start each fine level from the coarse plan spread over the children (plan_refine); False: the greedy crash on
#: the coarse duals' reduced costs alone (the solver before; kept for the benchmark's comparison).
WARM_PLAN = True
#: Largest all-pairs problem (support pairs) solved directly at any side.
_DENSE_MAX_PAIRS = 70_000
#: The bounds agree when upper - lower <= _GAP_TOL * max(1, upper) (squared cells).
_GAP_TOL = 1e-10
#: Repair arcs reach the cells within this Chebyshev radius of a violating arc's far end.
_WIDEN = 1
#: Coarse arcs' destination children are widened by this many fine cells. 0 since the fine level starts from
#: the coarse plan's refinement (plan_refine): widening to 4 x 4 children quadrupled the arcs (2.2 M for two
#: shifted Gaussians at d = 256) and doubled their time, while the certificate's repair rounds add the few
#: arcs the optimum needs beyond the 2 x 2 children (one-off measurement during issue 28).
_CHILD_RING = 0
#: A reduced cost below -_VIOLATION is a violation. Costs are whole squared cells and the simplex's duals are
#: exact whole numbers (network_simplex), so a true violation is at least 1 and round-off cannot fake one.
_VIOLATION = 0.5


@dataclass(frozen=True)
class ExactW2:
    """Squared W2 in squared cells: ``lower <= exact <= upper``; ``certified`` when they agree (to 1e-10)."""

    lower: float
    upper: float
    certified: bool
    rounds: int
    arcs: int
    seconds: float

    @property
    def value(self) -> float:
        """The plan's cost (the exact optimum when certified)."""
        return self.upper


def coarsen_2x2(p: np.ndarray) -> np.ndarray:
    """2x2 block sums (a zero row and column are added first when d is odd)."""
    d = p.shape[0]
    if d % 2:
        p = np.pad(p, ((0, 1), (0, 1)))
        d += 1
    return p.reshape(d // 2, 2, d // 2, 2).sum(axis=(1, 3))


def _cost(i: np.ndarray, j: np.ndarray, d: int) -> np.ndarray:
    ri, ci = np.divmod(i, d)
    rj, cj = np.divmod(j, d)
    return ((ri - rj) ** 2 + (ci - cj) ** 2).astype(float)


def _neighbours(cells: np.ndarray, d: int, radius: int) -> tuple[np.ndarray, np.ndarray]:
    """``(k, cell)`` pairs: for each ``cells[k]``, every grid cell within ``radius`` (Chebyshev)."""
    r, c = np.divmod(cells, d)
    off = np.arange(-radius, radius + 1)
    rr = r[:, None, None] + off[None, :, None]
    cc = c[:, None, None] + off[None, None, :]
    ok = (rr >= 0) & (rr < d) & (cc >= 0) & (cc < d)
    k = np.broadcast_to(np.arange(len(cells))[:, None, None], ok.shape)
    return k[ok], (rr * d + cc)[ok]


class _Problem(SparsePairs):
    """One level: the supports and candidate arcs of :class:`~ldpviz.metrics.sparse_pairs.SparsePairs` under the
    squared Euclidean cost, with the arcs this solver proposes (local, children of coarse arcs) and its
    certificate."""

    def __init__(self, p: np.ndarray, q: np.ndarray):
        d = p.shape[0]
        super().__init__(p, q, lambda x, y: _cost(x, y, d), max_cost=2.0 * (d - 1) ** 2)

    def local_keys(self, radius: int) -> np.ndarray:
        k, y = _neighbours(self.ia, self.d, radius)
        return self.pair_keys(self.ia[k], y)

    def children_keys(self, ci: np.ndarray, cj: np.ndarray) -> np.ndarray:
        """Children pairs of the coarse arcs (ci, cj) (flat indices on the (d+1)//2 grid)."""
        d, dc = self.d, (self.d + 1) // 2

        def kids(c, ring):
            off = np.arange(-ring, 2 + ring)
            r, col = np.divmod(c, dc)
            rr = 2 * r[:, None, None] + off[None, :, None]
            cc = 2 * col[:, None, None] + off[None, None, :]
            flat = np.where((rr >= 0) & (rr < d) & (cc >= 0) & (cc < d), rr * d + cc, -1)
            return flat.reshape(len(c), -1)

        src, dst = kids(ci, 0), kids(cj, _CHILD_RING)
        shape = (len(ci), src.shape[1], dst.shape[1])
        x = np.broadcast_to(src[:, :, None], shape).ravel()
        y = np.broadcast_to(dst[:, None, :], shape).ravel()
        ok = (x >= 0) & (y >= 0)
        return self.pair_keys(x[ok], y[ok])

    def start_warm(self, keys: np.ndarray, coarse_duals: tuple[np.ndarray, np.ndarray] | None,
                   coarse_plan: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
                   p: np.ndarray | None = None, q: np.ndarray | None = None) -> None:
        """The simplex over ``keys`` (sorted, distinct), its crash basis ordered by the reduced costs under the
        coarse level's duals (``(U, V)`` on the coarse grid, NaN off the supports) when given; with the coarse
        plan ``(ci, cj, mass)`` (and the fine masses ``p``, ``q``), the crash first takes the plan's refinement
        (:mod:`ldpviz.metrics.plan_refine`) in leaf order, so the first basis is feasible."""
        costed = la, lb, cost = self.key_cost(keys)
        order = None
        if coarse_duals is not None:
            d, dc = self.d, (self.d + 1) // 2
            U, V = coarse_duals
            ra, ca = np.divmod(self.ia, d)
            rb, cb = np.divmod(self.ib, d)
            ua = 4.0 * U[(ra // 2) * dc + ca // 2]
            vb = 4.0 * V[(rb // 2) * dc + cb // 2]
            order = cost - ua[la] - vb[lb]
        if coarse_plan is not None:
            if order is None:
                order = cost.copy()
            fi, fj, _ = refine_plan(self.d, *coarse_plan, p, q)
            kk = self.pair_keys(fi, fj)
            at = np.minimum(np.searchsorted(keys, kk), max(len(keys) - 1, 0))
            at = at[keys[at] == kk] if len(keys) else at[:0]
            ra, rb = np.divmod(keys[at], len(self.ib))
            lo = leaf_order(len(self.ia) + len(self.ib), ra, len(self.ia) + rb)
            order[at[lo]] = -1e15 + np.arange(len(lo), dtype=float)
        self.start(keys, order, costed)

    def certificate(self, u: np.ndarray, v: np.ndarray):
        """Lower bound and the repair arcs: ``(lower, keys of violating arcs, number of violations)``."""
        d, n = self.d, self.d * self.d
        f = np.full(n, np.inf)
        f[self.ib] = -v
        H, argy = sq_distance_transform(f.reshape(d, d))
        H, argy = H.ravel()[self.ia], argy.ravel()[self.ia]
        lower = float(self.a @ H + self.b @ v)
        bad_rows = np.flatnonzero(H - u < -_VIOLATION)
        g = np.full(n, np.inf)
        g[self.ia] = -u
        G, argx = sq_distance_transform(g.reshape(d, d))
        G, argx = G.ravel()[self.ib], argx.ravel()[self.ib]
        bad_cols = np.flatnonzero(G - v < -_VIOLATION)
        xs = np.concatenate([self.ia[bad_rows], argx[bad_cols]])
        ys = np.concatenate([argy[bad_rows], self.ib[bad_cols]])
        # widen: each violating arc's far end to its 3 x 3 neighbourhood
        k1, y1 = _neighbours(ys[:len(bad_rows)], d, _WIDEN)
        k2, x2 = _neighbours(xs[len(bad_rows):], d, _WIDEN)
        new = np.concatenate([self.pair_keys(xs[:len(bad_rows)][k1], y1),
                              self.pair_keys(x2, ys[len(bad_rows):][k2])])
        return lower, new, len(bad_rows) + len(bad_cols)

    def grid_duals(self, u: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        U = np.full(self.d * self.d, np.nan)
        V = np.full(self.d * self.d, np.nan)
        U[self.ia], V[self.ib] = u, v
        return U, V


class _OutOfTime(Exception):
    """The deadline passed before the finest level was reached."""


def _solve_level(p: np.ndarray, q: np.ndarray, radius: int, deadline: float, stats: dict, finest: bool):
    """Plan (flat rows, cols, mass) at this level, (lower, upper, certified) in squared cells, and the duals on
    the grid (for the next finer level's crash basis).

    Coarser levels only supply candidate arcs and duals: past the deadline they raise :class:`_OutOfTime`; the
    finest level returns the bounds it has reached.
    """
    d = p.shape[0]
    prob = _Problem(p, q)
    n_pairs = len(prob.ia) * len(prob.ib)
    cpu0 = time.process_time()          # this level's own work (the coarser levels' is taken out below)
    if d <= _BASE_SIDE or n_pairs <= _DENSE_MAX_PAIRS:
        prob.start(prob.all_keys(), None)
    else:
        cx, cy, cm, _, _, _, cduals = _coarse_level(coarsen_2x2(p), coarsen_2x2(q), radius, deadline, stats)
        cpu0 = time.process_time()
        if time.perf_counter() > deadline and not finest:
            raise _OutOfTime
        keys = unique_sorted(np.concatenate([prob.children_keys(cx, cy), prob.local_keys(radius)]))
        prob.start_warm(keys, cduals, (cx, cy, cm) if WARM_PLAN else None, p, q)
    sx = prob.simplex
    rounds = 0
    while True:
        rounds += 1
        done = sx.run(deadline=deadline)
        u, v = sx.duals()
        lower, new, n_bad = prob.certificate(u, v)
        feasible = root_ok(sx)
        cost = sx.cost_value if feasible else float("inf")
        certified = done and feasible and (n_bad == 0 or cost - lower <= _GAP_TOL * max(1.0, cost))
        stats.setdefault("levels", {})[d] = dict(rounds=rounds, arcs=int(sx.n_arcs), violations=n_bad,
                                                 lower=lower, upper=cost, pivots=int(sx.pivots),
                                                 cpu_s=time.process_time() - cpu0)
        if certified:
            break
        if time.perf_counter() > deadline:
            if not finest:
                raise _OutOfTime
            break
        if not done:
            continue
        if prob.add(new) == 0:   # violations only on arcs already in: cannot happen with exact duals
            raise RuntimeError("exact W2: the certificate names only arcs the optimal basis already prices")
    stats["rounds"] = stats.get("rounds", 0) + rounds
    stats["arcs"] = int(sx.n_arcs)
    stats["pivots"] = stats.get("pivots", 0) + int(sx.pivots)
    x, y, m = prob.plan()
    return x, y, m, lower, cost, certified, prob.grid_duals(u, v)


def _coarse_level(pc: np.ndarray, qc: np.ndarray, radius: int, deadline: float, stats: dict):
    """The next coarser level (a seam the tests use to plant a poor coarse plan)."""
    return _solve_level(pc, qc, radius, deadline, stats, False)


def solve(p: np.ndarray, q: np.ndarray, *, radius: int = 1, time_budget: float | None = None,
          stats: dict | None = None) -> ExactW2:
    """Squared W2 (squared cells) between two ``(d, d)`` distributions, each summing to 1.

    ``radius``: local arcs per source (Chebyshev radius in cells). ``time_budget`` (seconds) is checked
    during the simplex (every few million pivots) and between rounds: when it runs out on the finest level the
    bounds reached are returned (``upper`` is infinite while the basis still routes mass through the artificial
    root), before it ``lower = 0, upper = inf``; ``certified`` is then False.
    """
    t0 = time.perf_counter()
    deadline = t0 + (time_budget if time_budget is not None else float("inf"))
    st = {} if stats is None else stats
    try:
        _, _, _, lower, upper, certified, _ = _solve_level(np.asarray(p, float), np.asarray(q, float), radius,
                                                           deadline, st, True)
    except _OutOfTime:
        lower, upper, certified = 0.0, float("inf"), False
    return ExactW2(max(lower, 0.0), max(upper, 0.0), bool(certified), int(st.get("rounds", 0)),
                   int(st.get("arcs", 0)), time.perf_counter() - t0)


def warm_up() -> None:
    """Compile (or load from numba's on-disk cache) the solver's kernels on a tiny problem, so that the first
    real solve does not wait for numba (the app calls this at start; see ldpviz.metrics.warm_up)."""
    from ldpviz.metrics import plan_refine
    plan_refine.warm_up()
    p = np.zeros((20, 20))
    p[2:6, 3:7] = 1.0
    q = np.roll(p, 3, axis=1)
    solve(p / p.sum(), q / q.sum())
