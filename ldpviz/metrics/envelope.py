"""The squared-distance transform on a grid: one lower-envelope-of-parabolas kernel for every W2 c-transform.

``g(x) = min_y |x - y|^2 + f(y)`` over a 2-D grid of unit spacing, with the minimising ``y``, in O(n0 n1): the
cost is separable, so the transform is a 1-D lower envelope of parabolas along every row and then along every
column (Felzenszwalb & Huttenlocher, "Distance transforms of sampled functions", Theory of Computing 8 (2012),
Sec. 2-3). ``+inf`` entries of ``f`` (cells that are not allowed as ``y``) never enter the envelope.

Used by the certificate of the exact W2 solver (:mod:`ldpviz.metrics.w2_exact`, which needs the arg-min to name the
arcs to add), by the back-and-forth method's c-transform (:mod:`ldpviz.metrics.w2_back_and_forth`, where
``min_x |x - y|^2 / 2 - phi(x)`` is ``g / 2`` for ``f = -2 phi``; doubling and halving are exact in floating point)
and by the multiscale transport solver's certificate (:mod:`ldpviz.metrics.transport`).
"""

from __future__ import annotations

import numpy as np

try:  # numba compiles the kernel (a declared dependency); the numpy fallback below is its O(d^3) reference.
    import numba as _numba
except ImportError:  # pragma: no cover
    _numba = None

__all__ = ["sq_distance_transform", "HAVE_NUMBA"]

#: True when the compiled O(d^2) kernel is available.
HAVE_NUMBA = _numba is not None


def _sq_envelope_2d_py(f, out, arg):  # pragma: no cover - compiled below
    """``out[x] = min_y |x - y|^2 + f[y]`` and ``arg[x]`` the minimising flat index (-1 where all f are +inf)."""
    n0, n1 = f.shape
    n = max(n0, n1)
    v = np.empty(n, dtype=np.int64)
    z = np.empty(n + 1)
    line = np.empty(n)
    best = np.empty(n)
    where = np.empty(n, dtype=np.int64)
    tmp = np.empty((n0, n1))
    acol = np.empty((n0, n1), dtype=np.int64)
    for axis in range(2):
        m = n1 if axis == 0 else n0          # length of a line
        lines = n0 if axis == 0 else n1
        for r in range(lines):
            for q in range(m):
                line[q] = f[r, q] if axis == 0 else tmp[q, r]
            # 1-D lower envelope of the parabolas (x - q)^2 + line[q]
            k = -1
            for q in range(m):
                fq = line[q]
                if fq == np.inf:
                    continue
                if k < 0:
                    k = 0
                    v[0] = q
                    z[0] = -np.inf
                    z[1] = np.inf
                    continue
                p = v[k]
                s = ((fq + q * q) - (line[p] + p * p)) / (2.0 * (q - p))
                while s <= z[k]:          # z[0] = -inf ends the loop at k = 0
                    k -= 1
                    p = v[k]
                    s = ((fq + q * q) - (line[p] + p * p)) / (2.0 * (q - p))
                k += 1
                v[k] = q
                z[k] = s
                z[k + 1] = np.inf
            if k < 0:
                for x in range(m):
                    best[x] = np.inf
                    where[x] = -1
            else:
                k = 0
                for x in range(m):
                    while z[k + 1] < x:
                        k += 1
                    q = v[k]
                    best[x] = (x - q) * (x - q) + line[q]
                    where[x] = q
            for x in range(m):
                if axis == 0:
                    tmp[r, x] = best[x]
                    acol[r, x] = where[x]
                else:
                    out[x, r] = best[x]
                    rr = where[x]
                    arg[x, r] = -1 if rr < 0 else rr * n1 + acol[rr, r]


_sq_envelope_2d = _numba.njit(cache=True, nogil=True)(_sq_envelope_2d_py) if _numba is not None else None


def _transform_numpy(f: np.ndarray, max_block: int = 1 << 22) -> tuple[np.ndarray, np.ndarray]:
    """The same transform by brute force along each axis (O(d^3)): the reference, and the path without numba."""
    n0, n1 = f.shape

    def along_last(g):
        n = g.shape[1]
        k = np.arange(n, dtype=float)
        D = (k[:, None] - k[None, :]) ** 2                       # D[y, x]
        val = np.empty_like(g)
        arg = np.empty(g.shape, dtype=np.int64)
        step = max(1, max_block // (n * n))
        for s in range(0, g.shape[0], step):
            M = g[s:s + step, :, None] + D[None, :, :]           # (rows, y, x)
            arg[s:s + step] = np.argmin(M, axis=1)
            val[s:s + step] = np.take_along_axis(M, arg[s:s + step][:, None, :], axis=1)[:, 0, :]
        return val, arg

    t, acol = along_last(f)
    tt, arow = along_last(np.ascontiguousarray(t.T))
    val, arow = tt.T, arow.T                                     # val[r, c], arow[r, c] = best row
    arg = arow * n1 + np.take_along_axis(acol, arow, axis=0)
    arg = np.where(np.isfinite(val), arg, -1)
    return np.ascontiguousarray(val), arg


def sq_distance_transform(f: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(g, arg)``: ``g[x] = min_y |x - y|^2 + f[y]`` over a ``(n0, n1)`` grid of unit spacing and ``arg`` the
    minimising flat index ``y`` (``+inf`` entries of ``f`` are excluded; ``-1`` and ``+inf`` where all are)."""
    f = np.ascontiguousarray(f, dtype=float)
    if _sq_envelope_2d is None:
        return _transform_numpy(f)
    out = np.empty_like(f)
    arg = np.empty(f.shape, dtype=np.int64)
    _sq_envelope_2d(f, out, arg)
    return out, arg
