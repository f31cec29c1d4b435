"""BASELINE for bench/w2_speed.py: ldpviz.metrics.w2_exact as it was before issue 28 (commit c50dcb9), kept verbatim
but for its distance transform (now ldpviz.metrics.envelope): POT's sparse ot.emd per repair round, which in POT
0.9.x ignores potentials_init and so re-solves from scratch every round. Not part of the package.

Exact, certified W2 on a d x d grid: sparse network simplex on local arcs, certified by a distance transform.

The discrete transport problem between cell centres (squared Euclidean cost, in squared cells) is solved on a
*sparse* set of candidate arcs and the restricted optimum is then proved globally optimal, or improved, by LP
duality:

1. **Candidate arcs.** Coarse to fine (Schmitzer, "A sparse multiscale algorithm for dense optimal transport",
   J. Math. Imaging Vis. 56 (2016), Sec. 4; Oberman & Ruan 2015): the 2 x 2-coarsened problem is solved first
   (recursively, densely at side <= ``_BASE_SIDE``); every coarse plan arc (I, J) contributes its children
   pairs (children of I) x (children of J, widened by ``_CHILD_RING`` fine cells), which admit a feasible
   plan (spread each coarse transfer in proportion to the children's masses), so the restricted problem is
   always feasible. To these we add every
   source's local arcs to the destinations within ``radius`` cells (Chebyshev): near-copies move most mass
   by about a cell, and the local arcs carry it.
2. **Restricted optimum.** POT's sparse network simplex (``ot.emd`` with a ``scipy.sparse`` cost, Bonneel et
   al. 2011) returns the plan and the duals ``(u, v)``; later rounds warm-start from the previous duals
   (``potentials_init``).
3. **Certificate.** The restricted optimum is the global one iff every reduced cost is non-negative,
   ``|x - y|^2 - u(x) - v(y) >= 0`` for all d^2 x d^2 pairs. ``H(x) = min_y |x - y|^2 - v(y)`` is a
   squared-distance transform of ``-v``, separable into 1-D lower envelopes of parabolas (Felzenszwalb &
   Huttenlocher, "Distance transforms of sampled functions", Theory of Computing 8 (2012), Sec. 2-3), so it
   costs O(d^2) and also yields the minimising y for every x. No x with ``H(x) < u(x)`` means optimal.
4. **Repair.** Otherwise the arcs (x, argmin_y) of violating rows, and symmetrically (argmin_x, y) of
   violating columns (transform of ``-u``), each widened to the 3 x 3 cells around the new end (Schmitzer's
   shielding neighbourhoods are such grid-local sets), are added and the problem re-solved from the current
   duals.

Bounds, valid after any round: ``upper`` is the cost of the (feasible) restricted plan; ``lower`` is the dual
value of ``(H, v)``, ``sum_x p(x) H(x) + sum_y q(y) v(y)``, feasible by construction of H (weak duality).
Both are squared cells. :func:`solve` stops when they agree to ``_GAP_TOL`` or at a deadline, returning them
either way (``certified`` says which).
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass

import numpy as np
import ot
import scipy.sparse as sp


__all__ = ["ExactW2", "solve", "sq_distance_transform"]

#: Grids up to this side are solved densely (POT's network simplex on the full cost matrix).
_BASE_SIDE = 16
#: Largest dense problem (support pairs) solved directly at any side.
_DENSE_MAX_PAIRS = 70_000
#: The bounds agree when upper - lower <= _GAP_TOL * max(1, upper) (squared cells).
_GAP_TOL = 1e-10
#: Network-simplex iteration cap (a cap, not a target).
_NUM_ITER_MAX = 1_000_000_000
#: Repair arcs reach the cells within this Chebyshev radius of a violating arc's far end (1 measured best:
#: 2 doubled the arcs for no fewer solves on an LDP estimate at d = 256).
_WIDEN = 1
#: Coarse arcs' destination children are widened by this many fine cells (1 measured best: a (3, 4)-cell
#: translation at d = 64 certified in 4 rounds instead of 27; full-support near-copies at d = 128 certified
#: within a minute instead of not; about 20% more CPU on an LDP estimate at d = 256).
_CHILD_RING = 1


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


from ldpviz.metrics.envelope import sq_distance_transform  # noqa: E402


# ---- sparse exact transport with a global certificate ------------------------------------------------

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


def _dense(p: np.ndarray, q: np.ndarray):
    """Dense exact solve on the supports: ``(plan rows, plan cols, mass)`` as flat grid indices."""
    d = p.shape[0]
    ia, ib = np.flatnonzero(p.ravel() > 0), np.flatnonzero(q.ravel() > 0)
    M = _cost(ia[:, None], ib[None, :], d)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        G, log = ot.emd(p.ravel()[ia], q.ravel()[ib], M, numItermax=_NUM_ITER_MAX, log=True)
    _check(log)
    r, c = np.nonzero(G > 0)
    return ia[r], ib[c], G[r, c]


def _check(log: dict) -> None:
    code = int(log.get("result_code", 1))
    if code != 1:
        raise RuntimeError(f"network simplex did not reach the optimum (code {code}: {log.get('warning')})")


def _neighbours(cells: np.ndarray, d: int, radius: int) -> tuple[np.ndarray, np.ndarray]:
    """``(k, cell)`` pairs: for each ``cells[k]``, every grid cell within ``radius`` (Chebyshev)."""
    r, c = np.divmod(cells, d)
    off = np.arange(-radius, radius + 1)
    rr = r[:, None, None] + off[None, :, None]
    cc = c[:, None, None] + off[None, None, :]
    ok = (rr >= 0) & (rr < d) & (cc >= 0) & (cc < d)
    k = np.broadcast_to(np.arange(len(cells))[:, None, None], ok.shape)
    return k[ok], (rr * d + cc)[ok]


def _unique(x: np.ndarray) -> np.ndarray:
    x = np.sort(x)
    return x[np.concatenate([[True], x[1:] != x[:-1]])] if x.size else x


class _Problem:
    """One level: supports, flat-index maps and the current candidate arcs (keys ``la * nb + lb``)."""

    def __init__(self, p: np.ndarray, q: np.ndarray):
        self.d = d = p.shape[0]
        self.ia = np.flatnonzero(p.ravel() > 0)
        self.ib = np.flatnonzero(q.ravel() > 0)
        self.a, self.b = p.ravel()[self.ia], q.ravel()[self.ib]
        self.pos_a = np.full(d * d, -1, dtype=np.int64)
        self.pos_a[self.ia] = np.arange(len(self.ia))
        self.pos_b = np.full(d * d, -1, dtype=np.int64)
        self.pos_b[self.ib] = np.arange(len(self.ib))

    def keys(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Keys of the grid pairs (x, y) with both ends in the supports."""
        lx, ly = self.pos_a[x], self.pos_b[y]
        ok = (lx >= 0) & (ly >= 0)
        return lx[ok] * len(self.ib) + ly[ok]

    def local_keys(self, radius: int) -> np.ndarray:
        k, y = _neighbours(self.ia, self.d, radius)
        return self.keys(self.ia[k], y)

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
        return self.keys(x[ok], y[ok])

    def solve(self, keys: np.ndarray, warm):
        la, lb = np.divmod(keys, len(self.ib))
        M = sp.coo_array((_cost(self.ia[la], self.ib[lb], self.d), (la, lb)), shape=(len(self.ia), len(self.ib)))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            G, log = ot.emd(self.a, self.b, M, numItermax=_NUM_ITER_MAX, log=True, center_dual=False,
                            potentials_init=warm)
        _check(log)
        G = sp.coo_array(G)
        keep = G.data > 0
        return float(log["cost"]), G.row[keep], G.col[keep], G.data[keep], np.asarray(log["u"]), np.asarray(log["v"])

    def certificate(self, u: np.ndarray, v: np.ndarray):
        """Lower bound and the repair arcs: ``(lower, keys of violating arcs)``."""
        d, n = self.d, self.d * self.d
        f = np.full(n, np.inf)
        f[self.ib] = -v
        H, argy = sq_distance_transform(f.reshape(d, d))
        H, argy = H.ravel()[self.ia], argy.ravel()[self.ia]
        lower = float(self.a @ H + self.b @ v)
        tol = 1e-12 * max(1.0, float(np.max(np.abs(v))) if v.size else 1.0)
        bad_rows = np.flatnonzero(H - u < -tol)
        g = np.full(n, np.inf)
        g[self.ia] = -u
        G, argx = sq_distance_transform(g.reshape(d, d))
        G, argx = G.ravel()[self.ib], argx.ravel()[self.ib]
        bad_cols = np.flatnonzero(G - v < -tol)
        xs = np.concatenate([self.ia[bad_rows], argx[bad_cols]])
        ys = np.concatenate([argy[bad_rows], self.ib[bad_cols]])
        # widen: each violating arc's far end to its 3 x 3 neighbourhood
        k1, y1 = _neighbours(ys[:len(bad_rows)], d, _WIDEN)
        k2, x2 = _neighbours(xs[len(bad_rows):], d, _WIDEN)
        new = np.concatenate([self.keys(xs[:len(bad_rows)][k1], y1),
                              self.keys(x2, ys[len(bad_rows):][k2])])
        return lower, new, len(bad_rows) + len(bad_cols)


class _OutOfTime(Exception):
    """The deadline passed before the finest level was reached."""


def _solve_level(p: np.ndarray, q: np.ndarray, radius: int, deadline: float, stats: dict, finest: bool):
    """Plan (flat rows, cols, mass) at this level, plus (lower, upper, certified) in squared cells.

    Coarser levels only supply candidate arcs: past the deadline they raise :class:`_OutOfTime`; the finest
    level returns the bounds of its last round.
    """
    d = p.shape[0]
    n_pairs = int(np.count_nonzero(p)) * int(np.count_nonzero(q))
    if d <= _BASE_SIDE or n_pairs <= _DENSE_MAX_PAIRS:
        x, y, m = _dense(p, q)
        c = float(m @ _cost(x, y, d))
        return x, y, m, c, c, True
    cx, cy, _, _, _, _ = _solve_level(coarsen_2x2(p), coarsen_2x2(q), radius, deadline, stats, False)
    if not finest and time.perf_counter() > deadline:
        raise _OutOfTime
    prob = _Problem(p, q)
    keys = _unique(np.concatenate([prob.children_keys(cx, cy), prob.local_keys(radius)]))
    warm = None
    rounds = 0
    while True:
        rounds += 1
        cost, la, lb, m, u, v = prob.solve(keys, warm)
        warm = (u, v)
        lower, new, n_bad = prob.certificate(u, v)
        certified = n_bad == 0 or cost - lower <= _GAP_TOL * max(1.0, cost)
        stats.setdefault("levels", {})[d] = dict(rounds=rounds, arcs=int(len(keys)), violations=n_bad,
                                                 lower=lower, upper=cost)
        if certified:
            break
        if time.perf_counter() > deadline:
            if not finest:
                raise _OutOfTime
            break
        grown = _unique(np.concatenate([keys, new]))
        if len(grown) == len(keys):   # violations only on arcs already in: round-off, nothing to add
            break
        keys = grown
    stats["rounds"] = stats.get("rounds", 0) + rounds
    stats["arcs"] = int(len(keys))
    return prob.ia[la], prob.ib[lb], m, lower, cost, certified


def solve(p: np.ndarray, q: np.ndarray, *, radius: int = 1, time_budget: float | None = None,
          stats: dict | None = None) -> ExactW2:
    """Squared W2 (squared cells) between two ``(d, d)`` distributions, each summing to 1.

    ``radius``: local arcs per source (Chebyshev radius in cells). ``time_budget`` (seconds) is checked
    between rounds (one network-simplex solve can overrun it): when it runs out on the finest level the bounds
    of the last round are returned, before it ``lower = 0, upper = inf``; ``certified`` is then False.
    """
    t0 = time.perf_counter()
    deadline = t0 + (time_budget if time_budget is not None else float("inf"))
    st = {} if stats is None else stats
    try:
        _, _, _, lower, upper, certified = _solve_level(np.asarray(p, float), np.asarray(q, float), radius,
                                                        deadline, st, True)
    except _OutOfTime:
        lower, upper, certified = 0.0, float("inf"), False
    return ExactW2(max(lower, 0.0), max(upper, 0.0), bool(certified), int(st.get("rounds", 0)),
                   int(st.get("arcs", 0)), time.perf_counter() - t0)
