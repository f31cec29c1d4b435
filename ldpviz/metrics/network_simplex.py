"""A network simplex for the transportation problem that keeps its basis when arcs are added (issue 28).

The primal network simplex on a spanning-tree basis (Dantzig; Ahuja, Magnanti & Orlin, *Network Flows* (1993),
ch. 11), organised as LEMON's ``NetworkSimplex`` (the solver POT wraps) is: an artificial root joined to every
node, the tree kept as parent / predecessor-arc / direction arrays with a thread (preorder, and its reverse), each
node's subtree size and the last node of its subtree in the thread (the "extended threaded index" of Barr, Glover
& Klingman (1979), as in LEMON), node potentials, Dantzig's rule applied within blocks of arcs ("block search"
pricing), and Cunningham's leaving-arc rule on a strongly feasible tree (every zero-flow tree arc points to the
root), which rules out cycling on degenerate pivots. This is our own implementation of that algorithm; two things
differ from a one-shot solver:

* **Arcs can be added to a live solve.** A new arc enters as a non-tree arc at flow 0, so the current basis stays
  primal feasible and the simplex simply continues from it: a column-generation round (``w2_exact``'s certificate
  names the arcs to add) costs the pivots it needs, not a solve from scratch.
* **A crash basis.** Instead of the all-artificial star, the first basis is built greedily from the arcs in a
  given order (the matrix-minimum rule on the order's key: ``w2_exact`` passes the reduced costs under the coarse
  level's duals). Each greedy arc exhausts one of its ends, so every tree of the greedy forest has at most one
  node left with residual mass; that node hangs the tree from the root by its artificial arc, carrying the
  residual (a source's artificial arc points to the root, so a zero-flow one keeps the tree strongly feasible).

What a pivot costs (issue 38). The basis trees of near-copies on a grid are deep (about 1,300 nodes at d = 256 on
a full-support 1-cell blur), and one pivot in ten re-hangs a subtree of 10,000 to 100,000 nodes. The thread is
therefore re-linked only at the stem (the path from the entering arc's end to the leaving arc, reversed), subtree
sizes and ends change only along the cycle and the chain of ancestors that ended with the moved subtree, and the
one walk over a subtree is the potentials' shift: over the moved subtree, or over all the other nodes by the
opposite amount when those are fewer (potentials matter only up to a common constant). Before, every pivot walked
the moved subtree twice to recompute depths and the thread: 2.8x the CPU time on that case, the same pivots.

Costs are expected to be integers (squared cell distances): the potentials are sums and differences of costs and
of the integer artificial cost, so they are exact in floating point and a reduced cost is either 0 or at least
1 in size. They are recomputed from the tree whenever pricing finds no entering arc, before optimality is declared.

Nodes: sources ``0 .. n1-1``, sinks ``n1 .. n1+n2-1``, the root ``n1+n2``. Arcs: ``0 .. N-1`` are the artificial
arcs (arc ``k`` joins node ``k`` and the root; source -> root at cost 0, root -> sink at the artificial cost
``(max cost + 1) (N + 1)``); real arcs (source -> sink) follow from ``N`` on. A reduced cost is
``cost + pi[tail] - pi[head]``; the transport duals are ``u = -pi[sources]`` and ``v = pi[sinks]``.
"""

from __future__ import annotations

import math
from typing import Any

import numba
import numpy as np

from ldpviz.metrics.csr import csr_adjacency

__all__ = ["TransportSimplex", "feasible", "warm_up"]

_TREE, _LOWER, _OFF = 0, 1, 2
#: Pricing block: this many times sqrt(number of arcs), at least _MIN_BLOCK. Small blocks win on grids (issue 38;
#: one-off run, 8 cases d = 128-256, factors 0.05-1): the arcs are sorted by source cell, so a small block sweeps
#: the grid and picks local entering arcs, whose cycles are short and whose pivots move small subtrees; at factor
#: 0.1 a full-support 1-cell blur at d = 256 took 125k pivots instead of 166k and 40% of the CPU time, the city
#: blur 0.73 s instead of 1.01, far transport (shifted Gaussians, blobs vs blobs, GRR estimates) 0.65-0.8x.
#: Factor 1 was LEMON's default; 4 to 16 gave more pivots, not fewer.
BLOCK_FACTOR = 0.1
_MIN_BLOCK = 16
#: Pivots per compiled call: the caller checks its deadline between calls (a pivot costs microseconds to a
#: fraction of a millisecond at d = 256, so a deadline is seen within a few seconds at worst).
_CHUNK = 20_000


@numba.njit(cache=True, nogil=True)
def _find(uf, x):
    while uf[x] != x:
        uf[x] = uf[uf[x]]
        x = uf[x]
    return x


@numba.njit(cache=True, nogil=True)
def _crash(n1, n2, supply, tail, head, cost, flow, state, order,
           parent, pred, up, thread, rev_thread, succ, last_succ, pi):
    """Greedy basis from the real arcs in ``order`` (module docstring); fills the tree arrays."""
    N = n1 + n2
    R = N
    res = supply.copy()
    uf = np.arange(N)
    chosen = np.empty(N, np.int64)
    nc = 0
    for k in range(order.shape[0]):
        e = order[k]
        i = tail[e]
        j = head[e]
        ai = res[i]
        bj = res[j]
        if ai > 0.0 and bj > 0.0:
            ri = _find(uf, i)
            rj = _find(uf, j)
            if ri != rj:
                if ai < bj:
                    f = ai
                    res[i] = 0.0
                    res[j] = bj - ai
                elif bj < ai:
                    f = bj
                    res[j] = 0.0
                    res[i] = ai - bj
                else:
                    f = ai
                    res[i] = 0.0
                    res[j] = 0.0
                flow[e] = f
                state[e] = _TREE
                uf[ri] = rj
                chosen[nc] = e
                nc += 1
    # adjacency of the forest (CSR): adj holds positions in forest
    forest = chosen[:nc]
    deg, adj = csr_adjacency(N, tail[forest], head[forest])
    seen = np.zeros(N, np.bool_)
    comp = np.empty(N, np.int64)
    stack = np.empty(N, np.int64)
    parent[R] = -1
    pred[R] = -1
    pi[R] = 0.0
    last = R
    for s0 in range(N):
        if seen[s0]:
            continue
        # 1. the component's nodes
        nco = 0
        top = 0
        stack[top] = s0
        top += 1
        seen[s0] = True
        while top > 0:
            top -= 1
            x = stack[top]
            comp[nco] = x
            nco += 1
            for k in range(deg[x], deg[x + 1]):
                e = forest[adj[k]]
                y = head[e] if tail[e] == x else tail[e]
                if not seen[y]:
                    seen[y] = True
                    stack[top] = y
                    top += 1
        # 2. where it hangs from the root: its node with residual mass, else a source
        att = -1
        for k in range(nco):
            if res[comp[k]] > 0.0:
                att = comp[k]
                break
        if att < 0:
            for k in range(nco):
                if comp[k] < n1:
                    att = comp[k]
                    break
            if att < 0:
                att = comp[0]
        a = att                       # artificial arc a joins att and the root
        parent[att] = R
        pred[att] = a
        up[att] = tail[a] == att
        pi[att] = -cost[a] if up[att] else cost[a]
        flow[a] = res[att]
        state[a] = _TREE
        # 3. preorder from att, setting the tree arrays
        for k in range(nco):
            seen[comp[k]] = False
        top = 0
        stack[top] = att
        top += 1
        seen[att] = True
        while top > 0:
            top -= 1
            x = stack[top]
            thread[last] = x
            rev_thread[x] = last
            last = x
            for k in range(deg[x], deg[x + 1]):
                e = forest[adj[k]]
                y = head[e] if tail[e] == x else tail[e]
                if not seen[y]:
                    seen[y] = True
                    parent[y] = x
                    pred[y] = e
                    up[y] = tail[e] == y
                    pi[y] = pi[x] - cost[e] if up[y] else pi[x] + cost[e]
                    stack[top] = y
                    top += 1
    thread[last] = R
    rev_thread[R] = last
    _subtree_sizes(R, parent, rev_thread, succ, last_succ)


@numba.njit(cache=True, nogil=True)
def _subtree_sizes(R, parent, rev_thread, succ, last_succ):
    """Each node's subtree size and the last node of its subtree in preorder, from the thread (reverse preorder:
    a node is reached after all its descendants, and its last child first)."""
    n = succ.shape[0]
    for x in range(n):
        succ[x] = 1
        last_succ[x] = -1
    x = rev_thread[R]
    while True:
        if last_succ[x] < 0:
            last_succ[x] = x
        if x == R:
            break
        p = parent[x]
        succ[p] += succ[x]
        if last_succ[p] < 0:
            last_succ[p] = last_succ[x]
        x = rev_thread[x]


@numba.njit(cache=True, nogil=True)
def _recompute_potentials(R, cost, parent, pred, up, thread, pi):
    """Potentials from the tree, root first (exact for integer costs)."""
    pi[R] = 0.0
    x = thread[R]
    while x != R:
        e = pred[x]
        p = parent[x]
        pi[x] = pi[p] - cost[e] if up[x] else pi[p] + cost[e]
        x = thread[x]


@numba.njit(cache=True, nogil=True)
def _simplex(N, m_end, tail, head, cost, flow, state, parent, pred, up, thread, rev_thread, succ, last_succ, pi,
             block, next_arc, max_pivots, tol, stem, s_thr, s_rev, s_last, s_after, s_succ):
    """Pivot until no real arc prices below ``-tol`` or ``max_pivots`` pivots: ``(optimal, pivots, next_arc)``."""
    n_real = m_end - N
    if n_real <= 0:
        return True, 0, next_arc
    if next_arc < N or next_arc >= m_end:
        next_arc = N
    n_nodes = N + 1
    it = 0
    while True:
        # ---- entering arc: the most negative reduced cost within the first block that has one
        e_in = -1
        best = -tol
        cnt = block
        e = next_arc
        for _ in range(n_real):
            if state[e] == _LOWER:
                rc = cost[e] + pi[tail[e]] - pi[head[e]]
                if rc < best:
                    best = rc
                    e_in = e
            e += 1
            if e == m_end:
                e = N
            cnt -= 1
            if cnt == 0:
                if e_in >= 0:
                    break
                cnt = block
        if e_in < 0:
            return True, it, next_arc
        if it >= max_pivots:
            return False, it, next_arc
        next_arc = e
        first = tail[e_in]
        second = head[e_in]
        # ---- the cycle's apex: a node with the smaller subtree is not an ancestor of the other
        u = first
        v = second
        while u != v:
            if succ[u] < succ[v]:
                u = parent[u]
            else:
                v = parent[v]
        join = u
        # ---- leaving arc (Cunningham): flow runs join -> first -> second -> join
        delta = np.inf
        u_out = -1
        side = 0
        u = first
        while u != join:
            if up[u]:
                d = flow[pred[u]]
                if d < delta:
                    delta = d
                    u_out = u
                    side = 1
            u = parent[u]
        u = second
        while u != join:
            if not up[u]:
                d = flow[pred[u]]
                if d <= delta:
                    delta = d
                    u_out = u
                    side = 2
            u = parent[u]
        if u_out < 0:          # unbounded: impossible with non-negative costs
            return False, it, next_arc
        # ---- flows
        if delta > 0.0:
            u = first
            while u != join:
                if up[u]:
                    flow[pred[u]] -= delta
                else:
                    flow[pred[u]] += delta
                u = parent[u]
            u = second
            while u != join:
                if up[u]:
                    flow[pred[u]] += delta
                else:
                    flow[pred[u]] -= delta
                u = parent[u]
        flow[e_in] = delta
        e_out = pred[u_out]
        flow[e_out] = 0.0
        state[e_out] = _LOWER if e_out >= N else _OFF
        state[e_in] = _TREE
        # ---- the subtree S of u_out is re-hung from the entering arc: u_in (in S) takes v_in as its parent
        if side == 1:
            u_in = first
            v_in = second
        else:
            u_in = second
            v_in = first
        rc_in = cost[e_in] + pi[first] - pi[second]
        sigma = rc_in if u_in == second else -rc_in
        v_out = parent[u_out]
        # the stem x_0 = u_in, x_1 = parent(x_0), ..., x_k = u_out, with each one's old thread links, subtree
        # end and size (the thread is re-linked only at these nodes)
        k = 0
        x = u_in
        while True:
            stem[k] = x
            s_thr[k] = thread[x]
            s_rev[k] = rev_thread[x]
            s_last[k] = last_succ[x]
            s_after[k] = thread[last_succ[x]]
            s_succ[k] = succ[x]
            if x == u_out:
                break
            x = parent[x]
            k += 1
        size = s_succ[k]
        l_old = s_last[k]
        # the new preorder of S: x_0's subtree as it was, then for i = 1..k: x_i, the part of its old subtree
        # before x_(i-1)'s (A_i) and the part after it (B_i), each a run of whole subtrees of its other children
        tail_ = s_last[0]
        for i in range(1, k + 1):
            x = stem[i]
            thread[tail_] = x
            rev_thread[x] = tail_
            tail_ = x
            if s_thr[i] != stem[i - 1]:                  # A_i: thread(x_i) .. the node before x_(i-1)
                thread[tail_] = s_thr[i]
                rev_thread[s_thr[i]] = tail_
                tail_ = s_rev[i - 1]
            if s_last[i] != s_last[i - 1]:               # B_i: after x_(i-1)'s subtree .. x_i's old end
                thread[tail_] = s_after[i - 1]
                rev_thread[s_after[i - 1]] = tail_
                tail_ = s_last[i]
        l_new = tail_
        # cut S out of the thread (between the node before u_out and the node after its subtree), then insert
        # it right after v_in
        before = s_rev[k]
        after = s_after[k]
        thread[before] = after
        rev_thread[after] = before
        after = thread[v_in]
        thread[v_in] = u_in
        rev_thread[u_in] = v_in
        thread[l_new] = after
        rev_thread[after] = l_new
        # subtree ends: the ancestors of u_out whose subtree ended with S now end before it; then the
        # ancestors of v_in whose subtree ended at v_in now end with S; the stem nodes all end at S's new end
        x = v_out
        while x >= 0 and last_succ[x] == l_old:
            last_succ[x] = before
            x = parent[x]
        x = v_in
        while x >= 0 and last_succ[x] == v_in:
            last_succ[x] = l_new
            x = parent[x]
        # subtree sizes: S leaves the path v_out .. join and joins the path v_in .. join
        x = v_out
        while x != join:
            succ[x] -= size
            x = parent[x]
        x = v_in
        while x != join:
            succ[x] += size
            x = parent[x]
        # reverse the stem: x_i's new subtree is S less x_(i-1)'s old one
        new_par = v_in
        new_pred = e_in
        new_up = tail[e_in] == u_in
        for i in range(k + 1):
            x = stem[i]
            old_pred = pred[x]
            old_up = up[x]
            parent[x] = new_par
            pred[x] = new_pred
            up[x] = new_up
            last_succ[x] = l_new
            succ[x] = size if i == 0 else size - s_succ[i - 1]
            new_par = x
            new_pred = old_pred
            new_up = not old_up
        # potentials: S moves by sigma, or (the smaller walk) every other node, the root included, by -sigma
        if 2 * size <= n_nodes:
            x = u_in
            for _ in range(size):
                pi[x] += sigma
                x = thread[x]
        else:
            x = after
            for _ in range(n_nodes - size):
                pi[x] -= sigma
                x = thread[x]
        it += 1


def feasible(sx: Any) -> bool:
    """Whether solver ``sx`` (its ``artificial_flow`` over ``N`` nodes) routes no more mass through the root than
    round-off leaves: 1e-12 plus 8 ulps of 1 per node, since the supplies and demands, each summing to 1, round
    differently over tens of thousands of cells (a one-point map against a DAM estimate on 174 x 174 cells left
    1.01e-12). A plan short of pairs leaves far more. A function, so a stand-in solver class (the benchmarks'
    earlier simplex) is judged the same way."""
    return sx.artificial_flow <= 1e-12 + 8 * np.finfo(np.float64).eps * sx.N


class TransportSimplex:
    """Min-cost transport from supplies ``a`` (sources) to demands ``b`` (sinks) over given arcs, solved by the
    network simplex of this module; :meth:`add_arcs` lets a solved instance continue from its basis.

    ``a`` and ``b`` are positive with (about) equal totals; arcs are ``(tails[k], heads[k])`` with tails indexing
    ``a`` and heads indexing ``b``, and integer ``costs`` at most ``max_cost``. The arcs given first must admit a
    feasible plan for the optimum to use no artificial arc (:attr:`artificial_flow` says how much does).
    ``order_key`` (one number an arc, smaller first) orders the crash basis; default the costs.
    """

    def __init__(self, a: np.ndarray, b: np.ndarray, tails: np.ndarray, heads: np.ndarray, costs: np.ndarray,
                 *, max_cost: float | None = None, order_key: np.ndarray | None = None,
                 block_factor: float = BLOCK_FACTOR):
        a = np.ascontiguousarray(a, dtype=np.float64)
        b = np.ascontiguousarray(b, dtype=np.float64)
        self.n1, self.n2 = n1, n2 = len(a), len(b)
        self.N = N = n1 + n2
        costs = np.asarray(costs, dtype=np.float64)
        top = float(costs.max()) if costs.size else 0.0
        self.max_cost = max(top, float(max_cost) if max_cost is not None else top)
        self.art_cost = float((math.floor(self.max_cost) + 1) * (N + 1))
        self.block_factor = block_factor
        m = len(costs)
        cap = N + m + max(1024, m // 4)
        self.tail = np.empty(cap, np.int64)
        self.head = np.empty(cap, np.int64)
        self.cost = np.empty(cap, np.float64)
        self.flow = np.zeros(cap, np.float64)
        self.state = np.full(cap, _LOWER, np.int8)
        src = np.arange(n1)
        snk = np.arange(n1, N)
        self.tail[:n1], self.head[:n1], self.cost[:n1] = src, N, 0.0
        self.tail[n1:N], self.head[n1:N], self.cost[n1:N] = N, snk, self.art_cost
        self.state[:N] = _OFF
        self.m_end = N + m
        self.tail[N:N + m] = tails
        self.head[N:N + m] = np.asarray(heads) + n1
        self.cost[N:N + m] = costs
        n = N + 1
        self.parent = np.empty(n, np.int64)
        self.pred = np.empty(n, np.int64)
        self.up = np.zeros(n, np.bool_)
        self.thread = np.empty(n, np.int64)
        self.rev_thread = np.empty(n, np.int64)
        self.succ = np.empty(n, np.int64)
        self.last_succ = np.empty(n, np.int64)
        self.pi = np.zeros(n, np.float64)
        self._work = tuple(np.empty(n, np.int64) for _ in range(6))
        self.next_arc = N
        self.pivots = 0
        key = costs if order_key is None else np.asarray(order_key, dtype=np.float64)
        order = np.argsort(key, kind="stable").astype(np.int64) + N
        _crash(n1, n2, np.concatenate([a, b]), self.tail, self.head, self.cost, self.flow, self.state, order,
               self.parent, self.pred, self.up, self.thread, self.rev_thread, self.succ, self.last_succ, self.pi)
        self.optimal = False

    @property
    def n_arcs(self) -> int:
        """Real arcs held."""
        return self.m_end - self.N

    def add_arcs(self, tails: np.ndarray, heads: np.ndarray, costs: np.ndarray) -> None:
        """Append arcs (non-tree, flow 0); the basis stays feasible and the next :meth:`run` continues from it.
        The caller keeps arcs distinct (a duplicate is harmless, only wasted pricing)."""
        k = len(costs)
        if k == 0:
            return
        need = self.m_end + k
        if need > len(self.cost):
            cap = max(need, int(1.5 * len(self.cost)))
            for name in ("tail", "head", "cost", "flow", "state"):
                old = getattr(self, name)
                new = np.zeros(cap, old.dtype) if name != "state" else np.full(cap, _LOWER, np.int8)
                new[:self.m_end] = old[:self.m_end]
                setattr(self, name, new)
        s = slice(self.m_end, need)
        self.tail[s] = tails
        self.head[s] = np.asarray(heads) + self.n1
        self.cost[s] = costs
        self.flow[s] = 0.0
        self.state[s] = _LOWER
        top = float(np.max(costs))
        if top > self.max_cost:
            raise ValueError("an added arc costs more than max_cost; pass max_cost to the constructor")
        self.m_end = need
        self.optimal = False

    def run(self, deadline: float | None = None, max_pivots: int | None = None) -> bool:
        """Pivot to the optimum over the arcs held (True), or until ``deadline`` (``time.perf_counter()``) or
        ``max_pivots`` (False; the basis is kept, call again to continue)."""
        import time
        block = max(_MIN_BLOCK, int(self.block_factor * math.sqrt(max(self.n_arcs, 1))))
        done = 0
        while True:
            chunk = _CHUNK if max_pivots is None else min(_CHUNK, max_pivots - done)
            optimal, it, self.next_arc = _simplex(
                self.N, self.m_end, self.tail, self.head, self.cost, self.flow, self.state, self.parent,
                self.pred, self.up, self.thread, self.rev_thread, self.succ, self.last_succ, self.pi, block,
                self.next_arc, chunk, 0.5 if self.max_cost == math.floor(self.max_cost) else 1e-9, *self._work)
            self.pivots += it
            done += it
            if optimal:
                _recompute_potentials(self.N, self.cost, self.parent, self.pred, self.up, self.thread, self.pi)
                # a pricing pass on exact potentials confirms it (round-off cannot hide an entering arc)
                optimal, it, self.next_arc = _simplex(
                    self.N, self.m_end, self.tail, self.head, self.cost, self.flow, self.state, self.parent,
                    self.pred, self.up, self.thread, self.rev_thread, self.succ, self.last_succ, self.pi, block,
                    self.next_arc, 0, 0.5 if self.max_cost == math.floor(self.max_cost) else 1e-9, *self._work)
                if optimal:
                    self.optimal = True
                    return True
                continue
            if max_pivots is not None and done >= max_pivots:
                return False
            if deadline is not None and time.perf_counter() > deadline:
                return False

    # ---- the solution -----------------------------------------------------------------------------------------

    def _flow_arcs(self) -> np.ndarray:
        """Indices of the real arcs carrying flow."""
        return self.N + np.flatnonzero((self.state[self.N:self.m_end] == _TREE) & (self.flow[self.N:self.m_end] > 0))

    def plan(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(tails, heads, mass)`` of the real arcs carrying flow."""
        idx = self._flow_arcs()
        return self.tail[idx], self.head[idx] - self.n1, self.flow[idx]

    @property
    def cost_value(self) -> float:
        """Total cost of the real arcs' flow."""
        idx = self._flow_arcs()
        return float(self.flow[idx] @ self.cost[idx])

    @property
    def artificial_flow(self) -> float:
        """Mass still routed through the root (0 at an optimum of a feasible problem, up to round-off)."""
        return float(self.flow[self.n1:self.N].sum())

    def duals(self) -> tuple[np.ndarray, np.ndarray]:
        """``(u, v)`` with ``cost - u - v >= 0`` on every held arc at an optimum (0 on the plan's arcs),
        shifted by a whole number so they are small (the shift leaves every ``u_i + v_j`` unchanged)."""
        u = -self.pi[:self.n1]
        v = self.pi[self.n1:self.N].copy()
        shift = float(np.round(np.median(v))) if v.size else 0.0
        return u + shift, v - shift


def warm_up() -> None:
    """Compile (or load from numba's on-disk cache) every kernel of this module on a tiny problem."""
    a = np.array([0.5, 0.5])
    b = np.array([0.25, 0.75])
    s = TransportSimplex(a, b, np.array([0, 0, 1, 1]), np.array([0, 1, 0, 1]), np.array([0.0, 1.0, 1.0, 0.0]))
    s.add_arcs(np.array([0]), np.array([1]), np.array([1.0]))
    s.run()
