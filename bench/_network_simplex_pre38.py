"""BASELINE for bench/w2_speed.py: ldpviz.metrics.network_simplex as it was before issue 38 (commit a6dd950), kept
verbatim: depths instead of subtree sizes (each pivot walks the moved subtree twice) and pricing blocks of
sqrt(arcs). Not part of the package.

A network simplex for the transportation problem that keeps its basis when arcs are added (issue 28).

The primal network simplex on a spanning-tree basis (Dantzig; Ahuja, Magnanti & Orlin, *Network Flows* (1993),
ch. 11), organised as LEMON's ``NetworkSimplex`` (the solver POT wraps) is: an artificial root joined to every
node, the tree kept as parent / predecessor-arc / direction / depth / thread (preorder) arrays, node potentials,
Dantzig's rule applied within blocks of arcs ("block search" pricing), and Cunningham's leaving-arc rule on a
strongly feasible tree (every zero-flow tree arc points to the root), which rules out cycling on degenerate pivots.
This is our own implementation of that algorithm; two things differ from a one-shot solver:

* **Arcs can be added to a live solve.** A new arc enters as a non-tree arc at flow 0, so the current basis stays
  primal feasible and the simplex simply continues from it: a column-generation round (``w2_exact``'s certificate
  names the arcs to add) costs the pivots it needs, not a solve from scratch.
* **A crash basis.** Instead of the all-artificial star, the first basis is built greedily from the arcs in a
  given order (the matrix-minimum rule on the order's key: ``w2_exact`` passes the reduced costs under the coarse
  level's duals). Each greedy arc exhausts one of its ends, so every tree of the greedy forest has at most one
  node left with residual mass; that node hangs the tree from the root by its artificial arc, carrying the
  residual (a source's artificial arc points to the root, so a zero-flow one keeps the tree strongly feasible).

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

import numba
import numpy as np

__all__ = ["TransportSimplex", "warm_up"]

_TREE, _LOWER, _OFF = 0, 1, 2
#: Pricing block: this many times sqrt(number of arcs), at least _MIN_BLOCK (0.25 to 16 measured within 15% of
#: each other on a translation at d = 128: fewer pivots with larger blocks, each priced longer).
BLOCK_FACTOR = 1.0
_MIN_BLOCK = 64
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
           parent, pred, up, thread, rev_thread, depth, pi):
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
    # adjacency of the forest (CSR)
    deg = np.zeros(N + 1, np.int64)
    for k in range(nc):
        e = chosen[k]
        deg[tail[e] + 1] += 1
        deg[head[e] + 1] += 1
    for x in range(N):
        deg[x + 1] += deg[x]
    adj = np.empty(2 * nc + 1, np.int64)
    fill = deg[:N].copy()
    for k in range(nc):
        e = chosen[k]
        adj[fill[tail[e]]] = e
        fill[tail[e]] += 1
        adj[fill[head[e]]] = e
        fill[head[e]] += 1
    seen = np.zeros(N, np.bool_)
    comp = np.empty(N, np.int64)
    stack = np.empty(N, np.int64)
    parent[R] = -1
    pred[R] = -1
    depth[R] = 0
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
                e = adj[k]
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
        depth[att] = 1
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
                e = adj[k]
                y = head[e] if tail[e] == x else tail[e]
                if not seen[y]:
                    seen[y] = True
                    parent[y] = x
                    pred[y] = e
                    up[y] = tail[e] == y
                    depth[y] = depth[x] + 1
                    pi[y] = pi[x] - cost[e] if up[y] else pi[x] + cost[e]
                    stack[top] = y
                    top += 1
    thread[last] = R
    rev_thread[R] = last


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
def _simplex(N, m_end, tail, head, cost, flow, state, parent, pred, up, thread, rev_thread, depth, pi,
             block, next_arc, max_pivots, tol, snodes, start, stack, stem_at, end):
    """Pivot until no real arc prices below ``-tol`` or ``max_pivots`` pivots: ``(optimal, pivots, next_arc)``."""
    n_real = m_end - N
    if n_real <= 0:
        return True, 0, next_arc
    if next_arc < N or next_arc >= m_end:
        next_arc = N
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
        # ---- the cycle's apex
        u = first
        v = second
        while u != v:
            if depth[u] > depth[v]:
                u = parent[u]
            elif depth[v] > depth[u]:
                v = parent[v]
            else:
                u = parent[u]
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
        # ---- the subtree below the leaving arc is re-hung from the entering arc
        if side == 1:
            u_in = first
            v_in = second
        else:
            u_in = second
            v_in = first
        rc_in = cost[e_in] + pi[first] - pi[second]
        sigma = rc_in if u_in == second else -rc_in
        # the stem u_in = x_0, x_1 = parent(x_0), ..., x_k = u_out (old parents); stem_at[x] = its index
        k = 0
        x = u_in
        stack[0] = x
        stem_at[x] = 0
        while x != u_out:
            x = parent[x]
            k += 1
            stack[k] = x
            stem_at[x] = k
        # pass 1: the subtree in its old preorder (snodes) and each stem node's old subtree as the range
        # [start[i], end[i]) of it (nested: x_i's range holds x_(i-1)'s)
        d0 = depth[u_out]
        s = 0
        lo = k
        x = u_out
        start[k] = 0
        snodes[0] = x
        s = 1
        x = thread[x]
        while depth[x] > d0:
            dx = depth[x]
            while lo < k and depth[stack[lo]] >= dx:
                end[lo] = s
                lo += 1
            j = stem_at[x]
            if j >= 0:
                start[j] = s
                lo = j
            snodes[s] = x
            s += 1
            x = thread[x]
        for j in range(lo, k + 1):
            end[j] = s
        prev = rev_thread[u_out]
        thread[prev] = x
        rev_thread[x] = prev
        nxt = thread[v_in]
        # pass 2: the new preorder hangs x_0's old subtree from v_in, then each x_i (i >= 1) with its old
        # subtree less x_(i-1)'s; depths shift by a constant per segment, potentials by sigma
        prev = v_in
        base = depth[v_in] + 1
        for i in range(k + 1):
            shift = base + i - depth[stack[i]]
            if i == 0:
                a0, a1, b0, b1 = start[0], end[0], 0, 0
            else:
                a0, a1, b0, b1 = start[i], start[i - 1], end[i - 1], end[i]
            for r in range(a0, a1):
                y = snodes[r]
                depth[y] += shift
                pi[y] += sigma
                thread[prev] = y
                rev_thread[y] = prev
                prev = y
            for r in range(b0, b1):
                y = snodes[r]
                depth[y] += shift
                pi[y] += sigma
                thread[prev] = y
                rev_thread[y] = prev
                prev = y
        thread[prev] = nxt
        rev_thread[nxt] = prev
        # reverse the path u_in .. u_out
        x = u_in
        new_par = v_in
        new_pred = e_in
        new_up = tail[e_in] == u_in
        while True:
            old_par = parent[x]
            old_pred = pred[x]
            old_up = up[x]
            parent[x] = new_par
            pred[x] = new_pred
            up[x] = new_up
            if x == u_out:
                break
            new_par = x
            new_pred = old_pred
            new_up = not old_up
            x = old_par
        for i in range(k + 1):
            stem_at[stack[i]] = -1
        it += 1


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
        self.depth = np.empty(n, np.int64)
        self.pi = np.zeros(n, np.float64)
        self._work = tuple(np.full(n, -1, np.int64) for _ in range(5))   # stem_at must start at -1
        self.next_arc = N
        self.pivots = 0
        key = costs if order_key is None else np.asarray(order_key, dtype=np.float64)
        order = np.argsort(key, kind="stable").astype(np.int64) + N
        _crash(n1, n2, np.concatenate([a, b]), self.tail, self.head, self.cost, self.flow, self.state, order,
               self.parent, self.pred, self.up, self.thread, self.rev_thread, self.depth, self.pi)
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
                self.pred, self.up, self.thread, self.rev_thread, self.depth, self.pi, block, self.next_arc,
                chunk, 0.5 if self.max_cost == math.floor(self.max_cost) else 1e-9, *self._work)
            self.pivots += it
            done += it
            if optimal:
                _recompute_potentials(self.N, self.cost, self.parent, self.pred, self.up, self.thread, self.pi)
                # a pricing pass on exact potentials confirms it (round-off cannot hide an entering arc)
                optimal, it, self.next_arc = _simplex(
                    self.N, self.m_end, self.tail, self.head, self.cost, self.flow, self.state, self.parent,
                    self.pred, self.up, self.thread, self.rev_thread, self.depth, self.pi, block, self.next_arc,
                    0, 0.5 if self.max_cost == math.floor(self.max_cost) else 1e-9, *self._work)
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
