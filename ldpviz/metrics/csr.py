"""The adjacency of an edge list in compressed sparse row (CSR) form: one compiled kernel for the exact W2 solver.

The network simplex's crash basis (:mod:`ldpviz.metrics.network_simplex`, walking the greedy forest) and the
leaf order of a refined plan (:mod:`ldpviz.metrics.plan_refine`, breadth-first over the plan's arcs) both walk a
graph given as the edges ``(u[k], v[k])``; both read its adjacency from here.
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["csr_adjacency"]


@numba.njit(cache=True, nogil=True)
def csr_adjacency(n, u, v):
    """``(start, adj)`` for the undirected edges ``(u[k], v[k])`` on nodes ``0 .. n - 1``: the edges at node ``x``
    are ``adj[start[x]:start[x + 1]]`` (edge indices ``k``, in increasing order of ``k``)."""
    m = u.shape[0]
    start = np.zeros(n + 1, np.int64)
    for k in range(m):
        start[u[k] + 1] += 1
        start[v[k] + 1] += 1
    for x in range(n):
        start[x + 1] += start[x]
    adj = np.empty(2 * m + 1, np.int64)
    fill = start[:n].copy()
    for k in range(m):
        adj[fill[u[k]]] = k
        fill[u[k]] += 1
        adj[fill[v[k]]] = k
        fill[v[k]] += 1
    return start, adj
