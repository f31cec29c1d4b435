"""W2 between two densities on a d x d grid by the back-and-forth method.

Jacobs & Léger, "A fast approach to optimal transport: the back-and-forth
method", Numer. Math. 146 (2020) 513-544 (BFM). Quadratic cost
``c(x, y) = |x - y|^2 / 2`` between cell centres (one unit apart), so the
optimal cost ``C`` gives ``W2^2 = 2 C``. The method ascends the Kantorovich dual

    J(phi) = sum_x phi(x) mu(x) + sum_y phi^c(y) nu(y),
    phi^c(y) = min_x c(x, y) - phi(x)                      (c-transform)

alternately in ``phi`` and in ``psi = phi^c`` (their back-and-forth iteration):

    phi <- phi + sigma (-Lap)^{-1} (mu - T_phi# nu);   psi <- phi^c
    psi <- psi + sigma (-Lap)^{-1} (nu - T_psi# mu);   phi <- psi^c

* The c-transform of the quadratic cost on a grid is separable: a 1-D
  lower envelope of parabolas along columns, then along rows (Felzenszwalb &
  Huttenlocher's distance transform of sampled functions, linear time), so
  one transform costs O(d^2) (the paper computes the equivalent
  Legendre-Fenchel form ``phi^c = |y|^2/2 - (|x|^2/2 - phi)^*``).
* ``T_phi(y) = y - grad phi^c(y)`` is the transport map of the current
  potential; the gradient of J is ``mu - T_phi# nu`` (as in the paper). We
  take ``grad phi^c`` by central differences and push each cell's mass
  forward by bilinear (cloud-in-cell) deposit at ``T_phi(y)``, a simple
  stand-in for the paper's own pushforward discretisation (our choice; see
  docs/w2-method.md).
* ``(-Lap)^{-1}`` is the H1 (Neumann) preconditioner, applied with a
  DCT-II in O(d^2 log d) (the paper's H1 gradient ascent).
* The step ``sigma`` adapts in the paper's manner: grown when the
  ascent achieves more than ``_UP`` of its first-order prediction, shrunk
  below ``_DOWN``.
* One c-transform per half-step (the paper's Algorithm 1); ``bfm_w2`` starts
  from the potential of the 2 x 2-coarsened problem, solved the same way
  (our choice, a multiscale start; the paper starts from zero).
* BFM's smooth map approximates the *continuous* problem between
  piecewise-constant densities; on near-copies (W2 of about a cell) the
  discrete optimum between cell centres is percents higher, so BFM reads
  low there (docs/w2-method.md, diagnosis in docs/w2-speed.md).

Certified bounds. Because the c-transform is exact on the grid, *every*
iterate gives a dual value ``J <= C`` (weak duality), so the value returned,
the best dual value seen, is a rigorous **lower bound** on the exact discrete
W2. An **upper bound** comes from a feasible plan: each cell's mass moved to
the four corners around ``T(y)`` (bilinear weights; its exact cost is summed),
scaled down where it over-fills ``mu``, with the remainder matched by a
quadtree plan (mass left unmatched inside 2^k-blocks travels at most
``2 (2^k - 1)^2`` squared cells); or, by the triangle inequality, W2 to the
pushed-forward density plus a quadtree bound on the rest. The smaller of the
two is returned. ``W2`` lies in ``[lower, upper]`` whatever
happened in the iterations; the bench (``bench/w2_accuracy.py``) measures how
far the returned lower bound is from the exact value.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.fft as sfft

try:  # numba compiles the pushforward; without it a bincount fallback runs.
    import numba as _numba
except ImportError:  # pragma: no cover - numba is a declared dependency
    _numba = None

from ldpviz.metrics.envelope import HAVE_NUMBA, sq_distance_transform  # noqa: E402  (the one envelope kernel)

__all__ = ["BfmResult", "bfm_w2", "bfm_potentials", "bfm_potentials_multiscale", "quad_ctransform", "HAVE_NUMBA"]

#: Stop when the best dual value gained less than this fraction over the last _WINDOW iterations.
BFM_RTOL = 3e-4
_WINDOW = 10
#: Initial step, times 1 / (largest cell probability) (our choice: the step scales inversely with the densities).
_SIGMA0 = 4.0
#: The multiscale start (bfm_w2's default) coarsens by 2 x 2 while the coarse side is at least this.
BFM_COARSEST_SIDE = 32
#: Stop after this many back-and-forth iterations (each is two half-steps).
BFM_MAX_ITER = 200
#: The multiscale start's levels get at most this many cells x iterations each (issue 38.4), so the cap is
#: BFM_MAX_ITER up to 128 x 128 and 50 at 256 x 256, where one iteration costs about 10 ms. Started from the
#: coarse level's potential, a smooth pair's lower bound there gains little per iteration: a DAM estimate against
#: its truth (d = 256, 1M users, epsilon 1) took 2.0 s for 200 iterations, which raised it from 5.56 to 5.71 cells
#: (50 reach 5.63) while the certified upper bound stayed at 14.7 cells or more; a noisy GRR estimate stops by the
#: tolerance after 10. Never fewer than BFM_MIN_LEVEL_ITER.
BFM_LEVEL_WORK = BFM_MAX_ITER * 128 * 128
BFM_MIN_LEVEL_ITER = 20
#: Step-size adaptation: grow when the ascent is > _UP of its first-order prediction, shrink below _DOWN.
_UP, _DOWN, _SCALE = 0.75, 0.25, 0.95
_SHRINK_ON_DESCENT = 0.8


@dataclass(frozen=True)
class BfmResult:
    """W2 by BFM: ``value`` (= ``lower``) and a certified ``[lower, upper]``, in cells."""

    value: float
    lower: float
    upper: float
    iterations: int
    residual: float  #: final ``sum |mu - T# nu|`` of the smoothed pushforward


# ---- c-transform -----------------------------------------------------------------------

def quad_ctransform(phi: np.ndarray) -> np.ndarray:
    """``phi^c(y) = min_x |x - y|^2 / 2 - phi(x)`` over a ``(d, d)`` grid of unit spacing (exact): half the
    squared-distance transform of ``-2 phi`` (:func:`ldpviz.metrics.envelope.sq_distance_transform`)."""
    g, _ = sq_distance_transform(-2.0 * np.asarray(phi, dtype=float))
    return 0.5 * g


# ---- pushforward and preconditioner --------------------------------------------------------

def _map(psi: np.ndarray):
    """Bilinear footprint of ``T(y) = y - grad psi(y)`` (central differences, clipped to the grid).

    Returns the lower-left target cell ``(i0, j0)`` and the fractional offsets ``(a, b)``.
    """
    d = psi.shape[0]
    if d == 1:
        z = np.zeros((1, 1))
        return z.astype(np.int64), z.astype(np.int64), z, z
    g0, g1 = np.gradient(psi)                       # one-sided differences at the edges
    idx = np.arange(d, dtype=float)
    t0 = np.clip(idx[:, None] - g0, 0.0, d - 1.0)   # target row coordinate
    t1 = np.clip(idx[None, :] - g1, 0.0, d - 1.0)   # target column coordinate
    i0 = np.minimum(np.floor(t0).astype(np.int64), d - 2)
    j0 = np.minimum(np.floor(t1).astype(np.int64), d - 2)
    return i0, j0, t0 - i0, t1 - j0


def _corners(psi: np.ndarray, mass: np.ndarray):
    """The four bilinear pieces ``(flat target, weight, cost per unit mass)`` of pushing ``mass`` by T."""
    d = mass.shape[0]
    i0, j0, a, b = _map(psi)
    rr = np.arange(d, dtype=float)[:, None]
    cc = np.arange(d, dtype=float)[None, :]
    for di, wi in ((0, 1.0 - a), (1, a)):
        for dj, wj in ((0, 1.0 - b), (1, b)):
            ti, tj = np.minimum(i0 + di, d - 1), np.minimum(j0 + dj, d - 1)
            yield (ti * d + tj).ravel(), (mass * wi * wj).ravel(), (0.5 * ((ti - rr) ** 2 + (tj - cc) ** 2)).ravel()


def _pushforward_py(psi: np.ndarray, mass: np.ndarray, out: np.ndarray) -> None:  # pragma: no cover
    """Compiled loop of :func:`_pushforward` (same footprint as :func:`_map`)."""
    d = mass.shape[0]
    for y0 in range(d):
        for y1 in range(d):
            m = mass[y0, y1]
            if m == 0.0:
                continue
            if y0 == 0:
                g0 = psi[1, y1] - psi[0, y1]
            elif y0 == d - 1:
                g0 = psi[d - 1, y1] - psi[d - 2, y1]
            else:
                g0 = 0.5 * (psi[y0 + 1, y1] - psi[y0 - 1, y1])
            if y1 == 0:
                g1 = psi[y0, 1] - psi[y0, 0]
            elif y1 == d - 1:
                g1 = psi[y0, d - 1] - psi[y0, d - 2]
            else:
                g1 = 0.5 * (psi[y0, y1 + 1] - psi[y0, y1 - 1])
            t0 = min(max(y0 - g0, 0.0), d - 1.0)
            t1 = min(max(y1 - g1, 0.0), d - 1.0)
            i0 = min(int(np.floor(t0)), d - 2)
            j0 = min(int(np.floor(t1)), d - 2)
            a = t0 - i0
            b = t1 - j0
            out[i0, j0] += m * (1.0 - a) * (1.0 - b)
            out[i0, j0 + 1] += m * (1.0 - a) * b
            out[i0 + 1, j0] += m * a * (1.0 - b)
            out[i0 + 1, j0 + 1] += m * a * b


_pushforward_compiled = _numba.njit(cache=True, nogil=True)(_pushforward_py) if _numba is not None else None


def _pushforward(psi: np.ndarray, mass: np.ndarray) -> np.ndarray:
    """Bilinear (cloud-in-cell) deposit of ``mass[y]`` at ``T(y) = y - grad psi(y)``."""
    d = mass.shape[0]
    if _pushforward_compiled is not None and d > 1:
        out = np.zeros((d, d))
        _pushforward_compiled(np.ascontiguousarray(psi), np.ascontiguousarray(mass), out)
        return out
    out = np.zeros(d * d)
    for target, w, _ in _corners(psi, mass):
        out += np.bincount(target, weights=w, minlength=d * d)
    return out.reshape(d, d)


class _Poisson:
    """``(-Lap)^{-1}`` with Neumann boundaries on a d x d grid (DCT-II), mean-zero solution."""

    def __init__(self, d: int):
        k = np.arange(d)
        lam = 2.0 - 2.0 * np.cos(np.pi * k / d)
        self.denom = lam[:, None] + lam[None, :]
        self.denom[0, 0] = 1.0

    def __call__(self, r: np.ndarray) -> np.ndarray:
        h = sfft.dctn(r, type=2, norm="ortho")
        h /= self.denom
        h[0, 0] = 0.0
        return sfft.idctn(h, type=2, norm="ortho")


# ---- upper bound -----------------------------------------------------------------------------

def _quadtree_cost(supply: np.ndarray, demand: np.ndarray) -> float:
    """Cost bound (in c = |.|^2/2) of matching ``supply`` to ``demand`` (equal totals) inside growing 2^k blocks."""
    s, t = supply, demand
    cost = 0.0
    side = 1
    while True:
        m = np.minimum(s, t)
        cost += float(m.sum()) * (side - 1) ** 2     # 0.5 * 2 (side - 1)^2: the block's squared diagonal / 2
        s, t = s - m, t - m
        if s.shape[0] == 1:
            break
        n = s.shape[0]
        if n % 2:
            s = np.pad(s, ((0, 1), (0, 1)))
            t = np.pad(t, ((0, 1), (0, 1)))
            n += 1
        s = s.reshape(n // 2, 2, n // 2, 2).sum(axis=(1, 3))
        t = t.reshape(n // 2, 2, n // 2, 2).sum(axis=(1, 3))
        side *= 2
    return cost


def _upper_bound(psi: np.ndarray, mu: np.ndarray, nu: np.ndarray) -> float:
    """Cost (c = |.|^2 / 2) of a feasible plan between ``mu`` and ``nu`` from the map of ``psi`` (module doc)."""
    d = mu.shape[0]
    pieces = list(_corners(psi, nu))
    pushed = np.zeros(d * d)
    for target, w, _ in pieces:
        pushed += np.bincount(target, weights=w, minlength=d * d)
    m = mu.ravel()
    # keep the fraction min(1, mu / pushed) of what arrives at each cell: x-marginal min(pushed, mu)
    keep = np.where(pushed > m, m / np.where(pushed > 0, pushed, 1.0), 1.0)
    kept_cost = 0.0
    freed = np.zeros(d * d)                           # the rest of each piece, counted at its source y
    for target, w, c in pieces:
        k = keep[target]
        kept_cost += float(np.sum(w * k * c))
        freed += w * (1.0 - k)
    deficit = m - np.minimum(pushed, m)
    fs, ds = float(freed.sum()), float(deficit.sum())  # equal up to round-off; match them exactly
    if fs > 0 and ds > 0:
        if fs > ds:
            freed *= ds / fs
        else:
            deficit *= fs / ds
    return kept_cost + _quadtree_cost(freed.reshape(d, d), deficit.reshape(d, d)) + abs(fs - ds) * (d - 1) ** 2


def _upper_bound_triangle(psi: np.ndarray, mu: np.ndarray, nu: np.ndarray) -> float:
    """A second certified bound on W2 (not on the cost): W2(nu, mu) <= W2(nu, m) + W2(m, mu) with
    m = the bilinear pushforward of nu, W2(nu, m)^2 <= twice the exact cost of the deposit plan, and
    W2(m, mu)^2 <= twice the quadtree cost of matching the residual where it lies (near the targets)."""
    d = mu.shape[0]
    pushed = np.zeros(d * d)
    plan_cost = 0.0
    for target, w, c in _corners(psi, nu):
        pushed += np.bincount(target, weights=w, minlength=d * d)
        plan_cost += float(np.sum(w * c))
    diff = pushed.reshape(d, d) - mu
    surplus, deficit = np.clip(diff, 0.0, None), np.clip(-diff, 0.0, None)
    ss, ds = float(surplus.sum()), float(deficit.sum())
    if ss > 0 and ds > 0:
        if ss > ds:
            surplus *= ds / ss
        else:
            deficit *= ss / ds
    residual = _quadtree_cost(surplus, deficit) + abs(ss - ds) * (d - 1) ** 2
    return math.sqrt(2.0 * plan_cost) + math.sqrt(2.0 * residual)


# ---- the method ------------------------------------------------------------------------------

def bfm_w2(mu: np.ndarray, nu: np.ndarray, *, rtol: float = BFM_RTOL, max_iter: int = BFM_MAX_ITER,
           with_upper: bool = True, multiscale: bool = True) -> BfmResult:
    """W2 (in cells) between two ``(d, d)`` probability arrays by the back-and-forth method.

    ``mu`` and ``nu`` must be non-negative and sum to 1 (callers normalise).
    Iterates until the best dual value gained less than ``rtol`` (relative)
    over the last :data:`_WINDOW` iterations, or ``max_iter``. Returns the best
    certified dual lower bound as ``value`` and, with ``with_upper``, a
    certified upper bound from a feasible plan. With ``multiscale`` (default) the iterations start from
    the potential of the 2 x 2-coarsened problem, solved the same way down to side
    :data:`BFM_COARSEST_SIDE` (:func:`bfm_potentials_multiscale`); ``iterations`` counts the finest level.
    """
    if multiscale:
        best, _, best_psi, it, residual = bfm_potentials_multiscale(mu, nu, rtol=rtol, max_iter=max_iter)
    else:
        best, _, best_psi, it, residual = bfm_potentials(mu, nu, rtol=rtol, max_iter=max_iter)
    mu = np.ascontiguousarray(mu, dtype=float)
    nu = np.ascontiguousarray(nu, dtype=float)
    lower = math.sqrt(2.0 * max(best, 0.0))
    upper = (min(math.sqrt(2.0 * _upper_bound(best_psi, mu, nu)), _upper_bound_triangle(best_psi, mu, nu))
             if with_upper else math.inf)
    return BfmResult(value=lower, lower=lower, upper=max(upper, lower), iterations=it, residual=residual)


def bfm_potentials(mu: np.ndarray, nu: np.ndarray, *, rtol: float = BFM_RTOL, max_iter: int = BFM_MAX_ITER,
                   double: bool = False, init: np.ndarray | None = None):
    """The BFM iterations: ``(best dual value, phi, psi, iterations, residual)``.

    Cost ``|x - y|^2 / 2``; ``mu``, ``nu`` non-negative, summing to 1. ``residual`` is the last
    ``sum |mu - T# nu|`` of the smoothed pushforward (a convergence diagnostic, not a bound).
    One c-transform per half-step, as in the paper's Algorithm 1: the phi half-step pushes ``nu``
    by the map of the current ``psi`` (whose c-transform ``phi`` is), and the psi half-step pushes
    ``mu`` by the map of the ``phi`` just computed. ``double`` re-conjugates first (``psi <- phi^c``,
    ``phi <- psi^c``: two more transforms per iteration, the former scheme, kept for comparison).
    Every ``(phi, psi)`` evaluated is a c-transform pair, so every value is a certified lower bound.
    """
    mu = np.ascontiguousarray(mu, dtype=float)
    nu = np.ascontiguousarray(nu, dtype=float)
    d = mu.shape[0]
    solve = _Poisson(d)
    sigma0 = _SIGMA0 / max(float(mu.max()), float(nu.max()))
    state = {"phi": [sigma0, False], "psi": [sigma0, False]}   # [step size, first ascent found]

    def value(f: np.ndarray, g: np.ndarray, a: np.ndarray, b: np.ndarray) -> float:
        return float(np.einsum("ij,ij->", f, a) + np.einsum("ij,ij->", g, b))

    def half(f: np.ndarray, g: np.ndarray, a: np.ndarray, b: np.ndarray, key: str):
        """One H1 ascent step in ``f`` on ``<f, a> + <f^c, b>``; ``(f, g)`` is a c-transform pair."""
        s, found = state[key]
        cur = value(f, g, a, b)
        grad = a - _pushforward(g, b)
        step = solve(grad)
        f_new = f + s * step
        g_new = quad_ctransform(f_new)
        new = value(f_new, g_new, a, b)
        res = float(np.abs(grad).sum())
        if new < cur and not found:       # initial step too long: halve it, retry from the same iterate
            state[key][0] = s * 0.5
            return f, g, cur, res, True
        state[key] = [_adapt(s, new - cur, s * float(np.einsum("ij,ij->", step, grad))), True]
        return f_new, g_new, new, res, False

    phi = np.zeros((d, d)) if init is None else np.array(init, dtype=float)
    psi = quad_ctransform(phi)
    best = value(phi, psi, mu, nu)
    best_phi, best_psi = phi, psi
    history = [best]
    it = 0
    residual = math.inf
    for it in range(1, max_iter + 1):
        if double:
            psi = quad_ctransform(phi)
        phi, psi, cur, residual, rejected_phi = half(phi, psi, mu, nu, "phi")
        if cur > best:
            best, best_phi, best_psi = cur, phi, psi
        if double:
            phi = quad_ctransform(psi)
        psi, phi, cur, _, rejected_psi = half(psi, phi, nu, mu, "psi")
        if cur > best:
            best, best_phi, best_psi = cur, phi, psi
        history.append(best)
        if (not (rejected_phi or rejected_psi) and len(history) > _WINDOW
                and best - history[-1 - _WINDOW] <= rtol * abs(best)):
            break
    return best, best_phi, best_psi, it, residual


def _adapt(sigma: float, gain: float, predicted: float) -> float:
    """Compare the achieved ascent with its first-order prediction (a descent: shrink faster)."""
    if predicted <= 0:
        return sigma
    if gain < 0:
        return sigma * _SHRINK_ON_DESCENT
    ratio = gain / predicted
    if ratio > _UP:
        return sigma / _SCALE
    if ratio < _DOWN:
        return sigma * _SCALE
    return sigma


def _coarse_sums(p: np.ndarray) -> np.ndarray:
    """2 x 2 block sums of an even-sided grid."""
    d = p.shape[0]
    return p.reshape(d // 2, 2, d // 2, 2).sum(axis=(1, 3))


def _upsample_potential(phi_c: np.ndarray) -> np.ndarray:
    """A fine-grid potential from a coarse one (coarse cells 2 fine cells wide, so costs scale by 4).

    Fine index ``i`` sits at coarse coordinate ``(i - 0.5) / 2``; ``phi_c`` is interpolated bilinearly there
    (clamped at the edges) and multiplied by 4.
    """
    dc = phi_c.shape[0]
    x = np.clip((np.arange(2 * dc) - 0.5) / 2.0, 0.0, dc - 1.0)
    i0 = np.minimum(np.floor(x).astype(np.int64), max(dc - 2, 0))
    w = x - i0
    i1 = np.minimum(i0 + 1, dc - 1)
    rows = phi_c[i0] * (1 - w)[:, None] + phi_c[i1] * w[:, None]
    return 4.0 * (rows[:, i0] * (1 - w)[None, :] + rows[:, i1] * w[None, :])


def bfm_potentials_multiscale(mu: np.ndarray, nu: np.ndarray, *, min_side: int | None = None, **kw):
    """:func:`bfm_potentials` started from the potential of the 2 x 2-coarsened problem (recursively, down
    to ``min_side``, default :data:`BFM_COARSEST_SIDE`): where mass travels several cells the fine level
    then needs a few times fewer iterations. Same return value, certified the same way (every value is a
    dual value of a c-transform pair on the fine grid). Our choice: the paper starts from zero. Each level runs
    at most ``max_iter`` iterations and at most :data:`BFM_LEVEL_WORK` / its cells.
    """
    min_side = BFM_COARSEST_SIDE if min_side is None else min_side
    d = mu.shape[0]
    init = None
    if d % 2 == 0 and d // 2 >= min_side:
        coarse = bfm_potentials_multiscale(_coarse_sums(mu), _coarse_sums(nu), min_side=min_side, **kw)
        init = _upsample_potential(coarse[1])
    cap = int(kw.pop("max_iter", BFM_MAX_ITER))
    cap = min(cap, max(BFM_MIN_LEVEL_ITER, BFM_LEVEL_WORK // (d * d)))
    return bfm_potentials(mu, nu, init=init, max_iter=cap, **kw)
