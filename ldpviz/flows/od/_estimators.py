"""The OD matrix from the joint statistic: the unbiased estimate, the Lasso and EM."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import scipy.sparse

from ldpviz.mechanisms.estimation import norm_sub
from ldpviz.flows.od_statistics import JointStatistic


_CHUNK = 1 << 15
#: Lasso on rank-deficient designs: LP rounds in the null space, and the largest LP constraint matrix.
_LP_ROUNDS = 6
_LP_ROWS = 1024
_LP_ENTRIES = 1 << 24


# ---------------------------------------------------------------- the joint statistic
def _eig(A: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    lam, U = np.linalg.eigh(A.T @ A)
    return np.clip(lam, 0.0, None), U


def estimate_unbiased(stat: JointStatistic) -> tuple[np.ndarray, dict]:
    """``A_o^+ (S/n) A_d^+T`` (pseudo-inverse, tiny eigenvalues cut at 1e-12 of the largest), Norm-Sub projected."""
    (lo, Uo), (ld, Ud) = _eig(stat.A_o), _eig(stat.A_d)
    inv_o = np.where(lo > 1e-12 * lo.max(), 1.0 / np.where(lo > 0, lo, 1.0), 0.0)
    inv_d = np.where(ld > 1e-12 * ld.max(), 1.0 / np.where(ld > 0, ld, 1.0), 0.0)
    T = stat.score()
    raw = Uo @ ((Uo.T @ T @ Ud) * np.outer(inv_o, inv_d)) @ Ud.T
    flat = norm_sub(raw.ravel(), 1.0)
    return _normalise(flat.reshape(raw.shape)), {"raw_sum": float(raw.sum())}


def lasso_weights(stat: JointStatistic, z: float | None = None) -> np.ndarray:
    """Per-pair penalties ``z * sqrt((E[score^2] - score^2) / n)``, ``z`` the universal threshold by default."""
    T = stat.score()
    var = np.clip(stat.second_moment() - T ** 2, 0.0, None) / max(stat.n, 1)
    z = math.sqrt(2.0 * math.log(max(T.size, 2))) if z is None else z
    return z * np.sqrt(var)


def _lasso_problem(stat: JointStatistic, z: float | None) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """``(G_o, G_d, c, z)``: the Lasso is ``min 1/2 <F, G_o F G_d> - <c, F>``, ``F >= 0``, with ``c = T - W``."""
    T = stat.score()
    z = math.sqrt(2.0 * math.log(max(T.size, 2))) if z is None else float(z)
    return stat.A_o.T @ stat.A_o, stat.A_d.T @ stat.A_d, T - lasso_weights(stat, z), z


def lasso_objective(stat: JointStatistic, F: np.ndarray, z: float | None = None) -> float:
    """``1/2 ||A_o F A_d^T - S/n||^2 + <W, F>`` without its constant ``||S/n||^2 / 2`` (F unnormalised)."""
    G_o, G_d, c, _ = _lasso_problem(stat, z)
    return 0.5 * float((F * (G_o @ F @ G_d)).sum()) - float((c * F).sum())


def _lasso_info(Z: np.ndarray, iterations: int, converged: bool, z: float, **extra: Any) -> dict:
    return {"iterations": int(iterations), "converged": bool(converged), "nonzero_pairs": int((Z > 0).sum()),
            "coef_sum": float(Z.sum()), "z": float(z), "pairs": int(Z.size), **extra}


def estimate_lasso(stat: JointStatistic, z: float | None = None, max_iter: int = 60,
                   tol: float = 1e-9) -> tuple[np.ndarray, dict]:
    """Non-negative weighted Lasso on the joint statistic (see module docstring), Kronecker-structured.

    The design ``M = A_o (x) A_d`` is never formed: ``M^T M w = vec(G_o F G_d)`` with ``G = A^T A``
    (two d x d products). Two phases (:mod:`ldpviz.flows.od_lasso_solver`): ADMM with the exact solve of
    ``(G_o (x) G_d + rho I)`` in the factors' eigenbases finds the sparse support; a projected Newton
    method (Bertsekas 1982) then solves the problem on the free pairs exactly (dense Cholesky of the
    free block when it is small, conjugate gradients otherwise) until the KKT conditions hold to ``tol``
    (relative to ``max |c|``). The minimiser is the same as that of :func:`estimate_lasso_lbfgsb` (the
    previous solver, kept as the reference) up to solver tolerance: unique when the channels have full
    column rank (GRR, HR, OLH-H), for SRR and PLDP (rank-deficient channels) the objective value is.
    Where the design has low rank (at most 1,024 and at most half the pairs; PLDP: rank(A) <= m + 1 for
    m projection rows) and the Newton phase stalls, the estimate alternates with an LP over the design's null space
    (:func:`ldpviz.flows.od_lasso_solver.lp_polish`: the same fit, the least penalty), at most ``_LP_ROUNDS`` times.
    ``info["converged"]`` says whether the KKT tolerance was met (OLH-H's Hessian has a condition number
    of 1e10 and more on 16 x 16 grids; it may stop on a stalled objective instead).
    """
    from ldpviz.flows.od_lasso_solver import lp_polish, nonnegative_kron_qp, range_factor

    G_o, G_d, c, z = _lasso_problem(stat, z)
    R_o, R_d = range_factor(stat.A_o), range_factor(stat.A_d)
    rank = len(R_o) * len(R_d)
    # a design of low rank (the LP has at most _LP_ROWS constraints): near-full rank leaves the Newton phase
    # only a small null space, and an LP with thousands of dense rows would cost more than it saves
    use_lp = rank <= min(_LP_ROWS, c.size // 2) and rank * c.size <= _LP_ENTRIES
    F, info = nonnegative_kron_qp(G_o, G_d, c, max_iter=min(max_iter, 10) if use_lp else max_iter, tol=tol)
    rounds = 0
    if use_lp and not info["converged"]:
        W = lasso_weights(stat, z)
        while rounds < _LP_ROUNDS:
            polished = lp_polish(R_o, R_d, W, F)
            if polished is None:
                break
            rounds += 1
            F, info = nonnegative_kron_qp(G_o, G_d, c, max_iter=max_iter, tol=tol, start=polished)
            if info["converged"]:
                break
    info["lp_rounds"] = rounds
    Z = np.clip(F, 0.0, None)
    return _normalise(Z), _lasso_info(Z, info.pop("iterations"), info.pop("converged"), z, **info)


def estimate_lasso_lbfgsb(stat: JointStatistic, z: float | None = None, max_iter: int = 1500,
                          tol: float = 1e-12) -> tuple[np.ndarray, dict]:
    """The previous solver of the same Lasso: L-BFGS-B on the full vector (the reference for tests).

    The objective ``1/2 <F, G_o F G_d> - <T, F> + <W, F>`` (``G = A^T A``; the constant ``||S/n||^2/2``
    dropped) and its gradient ``G_o F G_d - T + W`` use the Kronecker structure, but the quasi-Newton
    method needs hundreds to thousands of iterations on GRR, HR, OLH-H and PLDP (up to ~80 s for
    1M users on 16 x 16), which is why :func:`estimate_lasso` replaced it.
    """
    import scipy.optimize

    G_o, G_d, c, z = _lasso_problem(stat, z)
    shape = c.shape
    scale = 1.0 / max(float(np.abs(stat.score()).max()), 1e-300)

    def objective(w: np.ndarray) -> tuple[float, np.ndarray]:
        F = w.reshape(shape)
        GF = G_o @ F @ G_d
        grad = GF - c
        return float((0.5 * (F * GF).sum() - (c * F).sum()) * scale), grad.ravel() * scale

    start = np.full(c.size, 1.0 / c.size)
    res = scipy.optimize.minimize(objective, start, jac=True, method="L-BFGS-B", bounds=[(0.0, None)] * c.size,
                                  options={"maxiter": max_iter, "maxcor": 20, "ftol": tol, "gtol": 1e-10})
    Z = np.clip(res.x.reshape(shape), 0.0, None)
    return _normalise(Z), _lasso_info(Z, res.nit, res.success, z)


class _Channel:
    """``A`` (K x d) with fast products: GRR's ``a I + b J`` in O(K) per column, any other densely.

    (HR's channel has a fast Walsh-Hadamard form too, but at d = 256 numpy's transform was 2x slower
    than the dense BLAS product, so it is not used.)
    """

    def __init__(self, A: np.ndarray, structured: bool = True) -> None:
        self.A = A
        self.grr: tuple[float, float] | None = None
        if structured and A.shape[0] == A.shape[1] and A.shape[0] > 1:
            a_diag, b_off = float(A[0, 0]), float(A[0, 1])
            if np.allclose(A, b_off + (a_diag - b_off) * np.eye(A.shape[0]), rtol=0, atol=1e-15):
                self.grr = (a_diag - b_off, b_off)

    def apply(self, X: np.ndarray) -> np.ndarray:
        """``A @ X``."""
        if self.grr is None:
            return self.A @ X
        a, b = self.grr
        return a * X + b * X.sum(axis=0, keepdims=True)

    def apply_T(self, Y: np.ndarray) -> np.ndarray:
        """``A.T @ Y``."""
        return self.apply(Y) if self.grr is not None else self.A.T @ Y


def _predicted(stat: JointStatistic, F: np.ndarray, rows: np.ndarray | None, cols: np.ndarray | None,
               ch: tuple[_Channel, _Channel] | None = None) -> np.ndarray:
    """``A_o F A_d^T`` (dense), or its entries at ``(rows, cols)`` (sparse statistic)."""
    if rows is None and ch is not None:
        return ch[1].apply(ch[0].apply(F).T).T
    M = stat.A_o @ F
    if rows is None:
        return M @ stat.A_d.T
    out = np.empty(len(rows))
    for lo in range(0, len(rows), _CHUNK):
        hi = lo + _CHUNK
        out[lo:hi] = np.einsum("ij,ij->i", M[rows[lo:hi]], stat.A_d[cols[lo:hi]])
    return out


def estimate_em(stat: JointStatistic, max_iter: int = 300, tol: float = 1e-5,
                structured: bool = True) -> tuple[np.ndarray, dict]:
    """EM / Richardson-Lucy for F >= 0 with ``E[S] = n A_o F A_d^T``, accelerated by SQUAREM.

    The OD likelihood is very flat (d^2 unknowns behind channels of condition number 1e5 and more), so
    plain EM needs thousands of iterations; SQUAREM (Varadhan & Roland, Scand. J. Stat. 2008, scheme S3)
    extrapolates along two EM steps and falls back to the plain step whenever the likelihood would drop.
    Stops when a cycle moves F by less than ``tol`` in L1, or after ``max_iter`` cycles (3 EM steps each).
    Every product uses the Kronecker structure (``A_o F A_d^T``, never the pair channel); GRR's channel
    ``a I + b J`` is applied in O(d^2) instead of O(d^3) (``structured=False`` forces dense products,
    the same numbers up to rounding), and the prediction of the last point is reused by the next step.
    """
    d_o, d_d = stat.A_o.shape[1], stat.A_d.shape[1]
    norm = np.outer(stat.A_o.sum(axis=0), stat.A_d.sum(axis=0))     # 1 for channels (columns sum to 1)
    ch = (_Channel(stat.A_o, structured), _Channel(stat.A_d, structured))
    if scipy.sparse.issparse(stat.S):
        coo = stat.S.tocoo()
        rows, cols, vals = coo.row, coo.col, coo.data
    else:
        rows = cols = None
        vals = np.asarray(stat.S)
    total = float(vals.sum())
    cache: dict[str, Any] = {"F": None, "pred": None}

    def predicted(F: np.ndarray) -> np.ndarray:
        if cache["F"] is not F:
            cache["F"], cache["pred"] = F, np.maximum(_predicted(stat, F, rows, cols, ch), 1e-300)
        return cache["pred"]

    def loglik(F: np.ndarray) -> float:
        return float((vals * np.log(predicted(F))).sum()) - total * float((F * norm).sum())

    def step(F: np.ndarray) -> np.ndarray:
        ratio = vals / predicted(F)
        if rows is None:
            back = ch[1].apply_T(ch[0].apply_T(ratio).T).T
        else:
            back = stat.A_o.T @ (scipy.sparse.coo_matrix((ratio, (rows, cols)), shape=stat.S.shape) @ stat.A_d)
        out = F * back / (total * norm)
        out[out < 1e-30] = 0.0       # no denormals (they slow every product ~100x); such mass is nil
        return out

    F = np.full((d_o, d_d), 1.0 / (d_o * d_d))
    it = 0
    for it in range(1, max_iter + 1):
        F1 = step(F)
        F2 = step(F1)
        r, v = F1 - F, F2 - 2 * F1 + F
        vn = np.linalg.norm(v)
        alpha = -np.linalg.norm(r) / vn if vn > 0 else -1.0
        alpha = min(alpha, -1.0)
        G = F - 2 * alpha * r + alpha ** 2 * v
        G[G < 1e-30] = 0.0
        new = step(G) if G.sum() > 0 else F2
        if alpha < -1.0 and loglik(new) < loglik(F2):
            new = F2
        moved = float(np.abs(new - F).sum())
        F = new
        if moved < tol:
            break
    return _normalise(F), {"iterations": it, "loglik": loglik(F)}


def _normalise(F: np.ndarray) -> np.ndarray:
    F = np.clip(np.nan_to_num(F), 0.0, None)
    s = F.sum()
    return F / s if s > 0 else np.full(F.shape, 1.0 / F.size)
