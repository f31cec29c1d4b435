"""OLH's support counts, compiled (numba): the server half's n x D hash evaluations in one fused loop.

Sup(v) counts the users whose reported bucket is the hash of v under their own hash function (grid paper Sec. 2.3).
Per user, z = (a v + b - L_y) mod P steps by a as v steps by one (one conditional subtraction of P keeps it reduced),
and the user supports v iff z < L_{y+1} - L_y: the same integer arithmetic as
:func:`ldpviz.mechanisms.fo.oracles._olh_support_chunk`, so the counts are identical, but the update, the test and the
count run in one pass over a block of users small enough to stay in the first-level cache (the vectorised numpy loop
makes four passes per value). Imported only when OLH reports are estimated (numba loads in about a second).
"""

from __future__ import annotations

import numba
import numpy as np

#: Users per block: z, a and the bucket widths of 1,024 users (12 kB) stay in cache across all D values.
BLOCK = 1024


@numba.njit(cache=True, nogil=True)
def support_counts(z0: np.ndarray, step: np.ndarray, width: np.ndarray, domain_size: int, prime: int
                   ) -> np.ndarray:
    """Sup(v) for v in [0, domain_size) of users with start z0 = (b - L_y) mod P, step a and bucket width (uint32
    arrays; every value below 2^31, so z + a < 2^32 and z + a - P wraps to a huge value exactly when z + a < P)."""
    n = z0.shape[0]
    out = np.zeros(domain_size, dtype=np.int64)
    z = np.empty(BLOCK, dtype=np.uint32)
    P = np.uint32(prime)
    for s in range(0, n, BLOCK):
        e = min(s + BLOCK, n)
        m = e - s
        a = step[s:e]
        w = width[s:e]
        z[:m] = z0[s:e]
        for v in range(domain_size):
            if v:
                for u in range(m):
                    t = np.uint32(z[u] + a[u])
                    z[u] = min(t, np.uint32(t - P))
            c = 0
            for u in range(m):
                c += np.int64(z[u] < w[u])
            out[v] += c
    return out
