"""A feasible fine transport plan from a coarse one: the warm start of the coarse-to-fine exact W2 solver.

Issue 28's recipe for the fine level is to "start from a basis ordered by the coarse level's duals"; a greedy
crash over the fine arcs ordered by reduced cost is not enough where mass travels far (two Gaussians shifted by
20 cells at d = 256): the greedy leaves residual mass on nodes with no arc to a partner with residual left, the
first basis routes it through the artificial root, and the simplex spends most of its pivots driving it out.

Here each coarse transfer ``f(I, J)`` is spread over the children instead (Schmitzer, "A sparse multiscale
algorithm for dense optimal transport", J. Math. Imaging Vis. 56 (2016), Sec. 4, uses the same refinement to
build the fine problem's feasible plan), by three north-west-corner rules:

1. for each coarse source ``I``: its children's masses (at most 4) over its coarse arcs' flows,
2. for each coarse sink ``J``: its coarse arcs' flows over its children's masses,
3. for each coarse arc ``(I, J)``: the parts of its flow the two rules gave its source children over those they
   gave its sink children.

The result meets every fine mass (up to round-off) and uses only arcs between children of a coarse plan arc, so it
lies in the fine level's candidate arcs. When the coarse plan is a forest (a basic solution, as the network
simplex returns), so is the fine plan: rules 1 and 2 give a tree around every coarse node, the trees meet only at
coarse arcs, and rule 3 replaces each coarse arc's star by a north-west path on the same nodes. :func:`leaf_order`
lists its arcs so that each arc, when reached, has a leaf at one end: a greedy crash taking ``min`` of the two
residual masses along that order reproduces the plan exactly (``network_simplex.TransportSimplex``'s
``order_key``), so the first basis carries no artificial flow.
"""

from __future__ import annotations

import numba
import numpy as np

from ldpviz.metrics.csr import csr_adjacency

__all__ = ["refine_plan", "leaf_order"]


@numba.njit(cache=True, nogil=True)
def _children(c, dc, d, mass, out_cell, out_mass):
    """The (at most 4) fine cells of coarse cell ``c`` with positive mass; their number."""
    r, col = divmod(c, dc)
    n = 0
    for a in range(2):
        rr = 2 * r + a
        if rr >= d:
            continue
        for b in range(2):
            cc = 2 * col + b
            if cc >= d:
                continue
            x = rr * d + cc
            if mass[x] > 0.0:
                out_cell[n] = x
                out_mass[n] = mass[x]
                n += 1
    return n


@numba.njit(cache=True, nogil=True)
def _split_nodes(d, cnode, cflow, mass):
    """Rules 1 and 2: the children of each coarse node over its arcs' flows, north-west corner.

    ``cnode[k]`` is arc k's coarse end on this side. Returns ``(fine cell, arc, amount)`` triples."""
    dc = (d + 1) // 2
    m = cnode.shape[0]
    order = np.argsort(cnode, kind="mergesort")
    cap = 5 * m + 8
    cell = np.empty(cap, np.int64)
    arc = np.empty(cap, np.int64)
    amt = np.empty(cap, np.float64)
    kc = np.empty(4, np.int64)
    km = np.empty(4, np.float64)
    n = 0
    s = 0
    while s < m:
        t = s
        while t < m and cnode[order[t]] == cnode[order[s]]:
            t += 1
        nch = _children(cnode[order[s]], dc, d, mass, kc, km)
        x = 0
        y = s
        rx = km[0] if nch > 0 else 0.0
        ry = cflow[order[s]]
        while x < nch and y < t:
            k = order[y]
            if rx < ry:
                a = rx
                ry -= rx
                cell[n] = kc[x]
                arc[n] = k
                amt[n] = a
                n += 1
                x += 1
                if x < nch:
                    rx = km[x]
            else:
                a = ry
                rx -= ry
                if a > 0.0:
                    cell[n] = kc[x]
                    arc[n] = k
                    amt[n] = a
                    n += 1
                y += 1
                if y < t:
                    ry = cflow[order[y]]
                if rx <= 0.0:
                    x += 1
                    if x < nch:
                        rx = km[x]
        s = t
    return cell[:n], arc[:n], amt[:n]


@numba.njit(cache=True, nogil=True)
def _refine(d, ci, cj, cf, p, q):
    m = ci.shape[0]
    si, sa, sm = _split_nodes(d, ci, cf, p)
    tj, ta, tm = _split_nodes(d, cj, cf, q)
    o1 = np.argsort(sa, kind="mergesort")
    o2 = np.argsort(ta, kind="mergesort")
    cap = si.shape[0] + tj.shape[0] + 8
    fi = np.empty(cap, np.int64)
    fj = np.empty(cap, np.int64)
    fm = np.empty(cap, np.float64)
    n = 0
    x = 0
    y = 0
    n1 = o1.shape[0]
    n2 = o2.shape[0]
    for k in range(m):
        x0 = x
        while x < n1 and sa[o1[x]] == k:
            x += 1
        y0 = y
        while y < n2 and ta[o2[y]] == k:
            y += 1
        # rule 3: north-west corner between the arc's source parts [x0, x) and sink parts [y0, y)
        a = x0
        b = y0
        if a >= x or b >= y:
            continue
        ra = sm[o1[a]]
        rb = tm[o2[b]]
        while a < x and b < y:
            if ra < rb:
                amount = ra
                rb -= ra
                adv_a = True
                adv_b = False
            else:
                amount = rb
                ra -= rb
                adv_a = ra <= 0.0
                adv_b = True
            if amount > 0.0:
                fi[n] = si[o1[a]]
                fj[n] = tj[o2[b]]
                fm[n] = amount
                n += 1
            if adv_a:
                a += 1
                if a < x:
                    ra = sm[o1[a]]
            if adv_b:
                b += 1
                if b < y:
                    rb = tm[o2[b]]
    return fi[:n], fj[:n], fm[:n]


def refine_plan(d: int, ci: np.ndarray, cj: np.ndarray, cf: np.ndarray, p: np.ndarray,
                q: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The fine plan ``(source cells, sink cells, masses)`` (flat indices on the d x d grid) spreading the coarse
    plan ``(ci, cj, cf)`` (flat indices on the ``(d + 1) // 2`` grid) over the children (module docstring).
    ``p`` and ``q`` are the fine masses (d x d)."""
    keep = np.asarray(cf) > 0
    return _refine(int(d), np.ascontiguousarray(np.asarray(ci)[keep], np.int64),
                   np.ascontiguousarray(np.asarray(cj)[keep], np.int64),
                   np.ascontiguousarray(np.asarray(cf)[keep], np.float64),
                   np.ascontiguousarray(p, np.float64).ravel(), np.ascontiguousarray(q, np.float64).ravel())


@numba.njit(cache=True, nogil=True)
def _leaf_order(n, u, v):
    m = u.shape[0]
    deg, adj = csr_adjacency(n, u, v)
    seen = np.zeros(n, np.bool_)
    used = np.zeros(m, np.bool_)
    queue = np.empty(n, np.int64)
    tree_edges = np.empty(m, np.int64)
    nt = 0
    for s in range(n):
        if seen[s] or deg[s + 1] == deg[s]:
            continue
        seen[s] = True
        h = 0
        t = 0
        queue[t] = s
        t += 1
        while h < t:
            x = queue[h]
            h += 1
            for k in range(deg[x], deg[x + 1]):
                e = adj[k]
                y = v[e] if u[e] == x else u[e]
                if not seen[y]:
                    seen[y] = True
                    used[e] = True
                    tree_edges[nt] = e
                    nt += 1
                    queue[t] = y
                    t += 1
    out = np.empty(m, np.int64)
    for k in range(nt):                 # deepest first: each node's edge to its parent after its children's
        out[k] = tree_edges[nt - 1 - k]
    r = nt
    for e in range(m):                  # edges closing a cycle (only when the coarse plan was not a forest)
        if not used[e]:
            out[r] = e
            r += 1
    return out


def leaf_order(n_nodes: int, u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Indices of the edges ``(u[k], v[k])`` (nodes ``0 .. n_nodes - 1``) so that, in a forest, each edge has a
    leaf of the remaining edges at one end when reached (breadth-first from a root, reversed); edges that close a
    cycle come last."""
    return _leaf_order(int(n_nodes), np.ascontiguousarray(u, np.int64), np.ascontiguousarray(v, np.int64))


def warm_up() -> None:
    """Compile (or load from numba's cache) the kernels on a tiny plan."""
    p = np.zeros((4, 4))
    p[0, :2] = 0.5
    q = np.zeros((4, 4))
    q[3, 2:] = 0.5
    fi, fj, fm = refine_plan(4, np.array([0]), np.array([3]), np.array([1.0]), p, q)
    leaf_order(32, fi, 16 + fj)
