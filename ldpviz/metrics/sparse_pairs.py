"""A transport problem on a growing set of candidate grid pairs, solved by one live network simplex.

The two exact solvers that certify a sparse solve by LP duality keep their candidate pairs here: W2's
coarse-to-fine solver (:mod:`ldpviz.metrics.w2_exact`) and EMD-L1's multiscale solver
(:func:`ldpviz.metrics.transport._ot_multiscale`). Each round of either adds the pairs its certificate names
(:meth:`SparsePairs.add`) to the live solve, which continues from its basis instead of restarting (issue 28;
Schmitzer, "A sparse multiscale algorithm for dense optimal transport", J. Math. Imaging Vis. 56 (2016)).

Pairs are held as sorted, distinct keys ``la * len(ib) + lb``, where ``la`` and ``lb`` index the supports
``ia`` (cells where ``p > 0``) and ``ib`` (where ``q > 0``) of two ``(d, d)`` distributions.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from ldpviz.metrics.network_simplex import TransportSimplex

#: ``cost(x, y)``: the ground cost between flat grid cells ``x`` and ``y`` (arrays of the same length).
PairCost = Callable[[np.ndarray, np.ndarray], np.ndarray]


def unique_sorted(x: np.ndarray) -> np.ndarray:
    """Sorted distinct values (a sort and a comparison of neighbours; faster here than numpy's unique)."""
    x = np.sort(x, kind="stable")
    return x[np.concatenate([[True], x[1:] != x[:-1]])] if x.size else x


class SparsePairs:
    """The supports of ``p`` and ``q``, the candidate pairs (sorted keys) and the live simplex over them.

    ``cost`` gives the ground cost of grid pairs; ``max_cost`` bounds it over every pair that may ever join
    (the simplex sizes its artificial arcs by it).
    """

    def __init__(self, p: np.ndarray, q: np.ndarray, cost: PairCost, max_cost: float) -> None:
        self.p, self.q = p, q
        self.d = d = p.shape[0]
        self.cost = cost
        self.max_cost = float(max_cost)
        self.ia = np.flatnonzero(p.ravel() > 0)
        self.ib = np.flatnonzero(q.ravel() > 0)
        self.a, self.b = p.ravel()[self.ia], q.ravel()[self.ib]
        self.pos_a = np.full(d * d, -1, dtype=np.int64)
        self.pos_a[self.ia] = np.arange(len(self.ia))
        self.pos_b = np.full(d * d, -1, dtype=np.int64)
        self.pos_b[self.ib] = np.arange(len(self.ib))
        self.keys = np.empty(0, dtype=np.int64)
        self.simplex: TransportSimplex | None = None

    def pair_keys(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Keys of the grid pairs (x, y) with both ends in the supports (the others dropped)."""
        lx, ly = self.pos_a[x], self.pos_b[y]
        ok = (lx >= 0) & (ly >= 0)
        return lx[ok] * len(self.ib) + ly[ok]

    def all_keys(self) -> np.ndarray:
        """Every pair of support cells."""
        return np.arange(len(self.ia) * len(self.ib), dtype=np.int64)

    def key_cost(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(la, lb, cost)`` of ``keys``."""
        la, lb = np.divmod(keys, len(self.ib))
        return la, lb, self.cost(self.ia[la], self.ib[lb])

    def start(self, keys: np.ndarray, order_key: np.ndarray | None = None,
              costed: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None) -> TransportSimplex:
        """The simplex over ``keys`` (sorted, distinct); ``order_key`` orders its crash basis (default: cost);
        ``costed``: :meth:`key_cost` of ``keys`` when the caller has it already."""
        self.keys = keys
        la, lb, cost = costed if costed is not None else self.key_cost(keys)
        self.simplex = TransportSimplex(self.a, self.b, la, lb, cost, max_cost=self.max_cost, order_key=order_key)
        return self.simplex

    def add(self, new: np.ndarray) -> int:
        """Add the keys in ``new`` not held yet to the live simplex, in increasing order; the number added."""
        new = unique_sorted(new)
        if new.size == 0:
            return 0
        at = np.searchsorted(self.keys, new)
        held = at < len(self.keys)
        held[held] = self.keys[at[held]] == new[held]
        new, at = new[~held], at[~held]
        if new.size:
            self.keys = np.insert(self.keys, at, new)
            la, lb, cost = self.key_cost(new)
            self.simplex.add_arcs(la, lb, cost)
        return int(new.size)

    def plan(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The simplex's plan as flat grid cells: ``(rows, cols, mass)``, zero-mass basic arcs included."""
        x, y, m = self.simplex.plan()
        return self.ia[x], self.ib[y], m
