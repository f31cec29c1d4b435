"""Non-negative quadratic programs with a Kronecker-product Hessian: the OD Lasso's solver.

Problem: ``min q(F) = 1/2 <F, G_o F G_d> - <c, F>`` over ``F >= 0`` (d_o x d_d), with ``G_o``, ``G_d``
symmetric positive semi-definite. ``vec(G_o F G_d) = (G_o (x) G_d) vec(F)``, so the d^2 x d^2 Hessian
is never formed: a product costs two small dense matrix products. Used by :func:`ldpviz.flows.od.estimate_lasso`
(``G = A^T A`` of each end's channel, ``c`` = score minus penalty; L-SRR Sec. 4.1).

The channels make the Hessian very ill-conditioned (condition numbers 1e6 to 1e10 on 16 x 16 grids:
one large eigenvalue along the all-ones directions, the bulk near ``(p - q)^4``), which defeats plain
and accelerated gradient methods (FISTA was still 0.8 in L1 from the optimum after 3,000 iterations
on GRR). Two phases instead:

1. **ADMM** on ``F = Z``, ``Z >= 0`` (Boyd et al. 2011, Sec. 5.2): the F-update solves
   ``(G_o (x) G_d + rho I) f = r`` exactly in the factors' eigenbases (four products), so every
   iteration costs as much as a gradient step whatever the conditioning. ``rho`` is 10 x the geometric
   mean of the Hessian's positive eigenvalues (a choice: it identified the support best among 0.1x,
   1x and 10x on GRR and HR at 1M users). A fixed number of iterations finds the sparse support.
2. **Projected Newton** (Bertsekas, SIAM J. Control Optim. 1982) from ADMM's point: pairs at (or
   within the epsilon-active margin of) zero whose gradient is positive are held at zero; on the others
   the exact Newton point of the quadratic is computed (dense Cholesky of the free block when it has at
   most ``dense_max`` pairs, else conjugate gradients on the masked Kronecker operator), followed by a
   projected Armijo search. Stops when the KKT conditions hold to ``tol`` relative to ``max |c|``, or
   when the objective stalls (relative change below ``stall`` = 1e-8 over 5 iterations), or after ``max_iter``.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg


def _quad(F: np.ndarray, G_o: np.ndarray, G_d: np.ndarray, c: np.ndarray) -> tuple[float, np.ndarray]:
    HF = G_o @ F @ G_d
    return 0.5 * float((F * HF).sum()) - float((c * F).sum()), HF


def kkt_violation(F: np.ndarray, grad: np.ndarray) -> float:
    """Largest violation of the KKT conditions of ``min q, F >= 0``: |g| where F > 0, max(-g, 0) where F = 0."""
    return float(np.where(F > 0, np.abs(grad), np.maximum(-grad, 0.0)).max())


def admm(G_o: np.ndarray, G_d: np.ndarray, c: np.ndarray, iterations: int = 100,
         rho_factor: float = 10.0) -> np.ndarray:
    """Phase 1: ADMM with the exact Kronecker solve; returns the (feasible) Z iterate."""
    lo, U_o = np.linalg.eigh(G_o)
    ld, U_d = np.linalg.eigh(G_d)
    lam = np.outer(np.clip(lo, 0.0, None), np.clip(ld, 0.0, None))
    positive = lam[lam > 1e-12 * max(float(lam.max()), 1e-300)]
    rho = rho_factor * float(np.exp(np.mean(np.log(positive)))) if positive.size else 1.0
    Z = np.zeros_like(c)
    U = np.zeros_like(c)
    denom = lam + rho
    for _ in range(iterations):
        F = U_o @ ((U_o.T @ (c + rho * (Z - U)) @ U_d) / denom) @ U_d.T
        Z_new = np.maximum(F + U, 0.0)
        U += F - Z_new
        Z = Z_new
    return Z


def _newton_direction(G_o: np.ndarray, G_d: np.ndarray, grad: np.ndarray, free: np.ndarray, dense_max: int,
                      cg_iter: int, L: float) -> np.ndarray:
    """``-H_PP^{-1} g_P`` on the free pairs P (0 elsewhere); pseudo-inverse plus a gradient step in null directions."""
    d_d = grad.shape[1]
    idx = np.flatnonzero(free)
    if len(idx) <= dense_max:
        i, j = np.divmod(idx, d_d)
        H = G_o[np.ix_(i, i)] * G_d[np.ix_(j, j)]
        g = grad.ravel()[idx]
        try:
            step = scipy.linalg.cho_solve(scipy.linalg.cho_factor(H, check_finite=False), g, check_finite=False)
            if not np.all(np.isfinite(step)):
                raise np.linalg.LinAlgError
        except (np.linalg.LinAlgError, scipy.linalg.LinAlgError):
            lam, V = np.linalg.eigh(H)
            keep = lam > 1e-10 * max(float(lam.max()), 1e-300)
            step = V[:, keep] @ ((V[:, keep].T @ g) / lam[keep])
            if (~keep).any():       # singular block (SRR, PLDP): move along the gradient in its null space
                step += V[:, ~keep] @ (V[:, ~keep].T @ g) / L
        D = np.zeros(grad.size)
        D[idx] = -step
        return D.reshape(grad.shape)
    mask = free.astype(float)                  # conjugate gradients on the masked Kronecker operator
    b = grad * mask
    x = np.zeros_like(b)
    r, p = b.copy(), b.copy()
    rr, bb = float((b * b).sum()), float((b * b).sum())
    for _ in range(cg_iter):
        Hp = (G_o @ p @ G_d) * mask
        pHp = float((p * Hp).sum())
        if pHp <= 0:
            break
        a = rr / pHp
        x += a * p
        r -= a * Hp
        rn = float((r * r).sum())
        if rn <= 1e-20 * bb:
            break
        p = r + (rn / rr) * p
        rr = rn
    return -x


def nonnegative_kron_qp(G_o: np.ndarray, G_d: np.ndarray, c: np.ndarray, *, max_iter: int = 60, tol: float = 1e-9,
                        admm_iterations: int = 100, dense_max: int = 2000, cg_iter: int = 50,
                        eps_active: float = 1e-2, stall: float = 1e-8,
                        start: np.ndarray | None = None) -> tuple[np.ndarray, dict]:
    """Minimise ``1/2 <F, G_o F G_d> - <c, F>`` over ``F >= 0``; returns ``(F, info)`` (see module docstring)."""
    scale = max(float(np.abs(c).max()), 1e-300)
    L = max(float(np.linalg.eigvalsh(G_o)[-1] * np.linalg.eigvalsh(G_d)[-1]), 1e-300)
    F = admm(G_o, G_d, c, admm_iterations) if start is None else np.maximum(start, 0.0)
    f, HF = _quad(F, G_o, G_d, c)
    history = [f]
    violation = float("inf")
    it = 0
    for it in range(1, max_iter + 1):
        grad = HF - c
        violation = kkt_violation(F, grad)
        if violation <= tol * scale:
            break
        if len(history) > 5 and abs(history[-6] - f) <= stall * max(abs(f), 1e-300):
            break
        margin = min(eps_active * float(F.max()), float(np.abs(F - np.maximum(F - grad / L, 0.0)).max()))
        free = ~(((F <= margin) & (grad > 0)) | ((F == 0) & (grad >= 0)))
        D = _newton_direction(G_o, G_d, grad, free, dense_max, cg_iter, L)
        alpha, accepted = 1.0, False
        for _ in range(40):                       # projected Armijo search
            trial = np.maximum(F + alpha * D, 0.0)
            ft, HT = _quad(trial, G_o, G_d, c)
            if ft <= f + 1e-4 * float((grad * (trial - F)).sum()):
                accepted = True
                break
            alpha *= 0.5
        if not accepted:                          # fall back to one projected gradient step
            trial = np.maximum(F - grad / L, 0.0)
            ft, HT = _quad(trial, G_o, G_d, c)
            if ft > f:
                break
        F, f, HF = trial, ft, HT
        history.append(f)
    else:
        violation = kkt_violation(F, HF - c)
    return F, {"iterations": it, "converged": violation <= tol * scale, "kkt_violation": violation / scale,
               "admm_iterations": admm_iterations}


def range_factor(A: np.ndarray) -> np.ndarray:
    """``R`` (rank x d) with ``R^T R = A^T A`` and ``A = U R`` (U orthonormal columns), from the SVD of ``A``."""
    U, s, Vt = np.linalg.svd(A, full_matrices=False)
    r = int((s > 1e-10 * s[0]).sum()) if s.size and s[0] > 0 else 0
    return s[:r, None] * Vt[:r]


def lp_polish(R_o: np.ndarray, R_d: np.ndarray, W: np.ndarray, F: np.ndarray, start_columns: int = 2000,
              max_rounds: int = 50, stall_rounds: int = 3, stall: float = 1e-6) -> np.ndarray | None:
    """Among ``F' >= 0`` with the same fit ``R_o F' R_d^T = R_o F R_d^T``, one minimising ``<W, F'>`` (an LP).

    For a rank-deficient design everything in the Lasso objective except the penalty is a function of
    the fit (``A F A^T = U R F R^T U^T``), so this can only lower the objective; it jumps along the null
    space, where Newton steps see no curvature and gradient steps crawl. Solved by column generation
    (HiGHS on a few thousand pairs at a time; reduced costs ``W - R_o^T N R_d`` of every pair from the
    duals N, two small products) with big-M artificial slacks so every restricted LP is feasible; exact
    when no pair has a negative reduced cost and the slacks are zero.

    The LP is highly degenerate (many optimal duals), so the duals can keep pricing in columns that do
    not improve it: column generation then cycles (seen on 289 trips at 16 x 16 with SRR: 50 rounds at the
    same objective to 1e-6, with slacks of 1e-10 against a fit of 1e-3). It therefore also stops when the best
    feasible restricted objective (artificial slacks within 1e-7 of the fit's L1 norm, HiGHS's own
    feasibility tolerance; the Newton phase that follows restores the fit exactly) has not fallen by more than
    ``stall`` (relative) over ``stall_rounds`` rounds, and returns that best point, provided its penalty is no
    larger than ``F``'s (so the polish does not raise the objective). ``None`` if no such point is found.
    """
    import scipy.optimize

    b = (R_o @ F @ R_d.T).ravel()
    rows = len(b)
    d_d = F.shape[1]
    big = 1e3 * (float(np.abs(W).max()) + 1.0) * max(1.0, float(np.abs(R_o).max() * np.abs(R_d).max()))
    cols = np.argsort(-F.ravel(), kind="stable")[:start_columns]
    cols = cols[F.ravel()[cols] > 0] if (F > 0).any() else cols
    w = W.ravel()
    scale = max(float(np.abs(W).max()), 1e-300)
    feasible = 1e-7 * max(float(np.abs(b).sum()), 1e-300)   # HiGHS's own primal feasibility tolerance
    current = float((W * F).sum())
    best: tuple[float, np.ndarray] | None = None
    since_best = 0

    def point(columns: np.ndarray, x: np.ndarray) -> np.ndarray:
        out = np.zeros(F.size)
        out[columns] = x[:len(columns)]
        return out.reshape(F.shape)

    for _ in range(max_rounds):
        i, j = np.divmod(cols, d_d)
        A = (R_o[:, i][:, None, :] * R_d[:, j][None, :, :]).reshape(rows, len(cols))
        A_eq = np.hstack([A, np.eye(rows), -np.eye(rows)])
        cost = np.concatenate([w[cols], np.full(2 * rows, big)])
        res = scipy.optimize.linprog(cost, A_eq=A_eq, b_eq=b, bounds=(0, None), method="highs")
        if res.status != 0:
            return None
        slack = float(res.x[len(cols):].sum())
        if slack <= feasible:
            value = float(w[cols] @ res.x[:len(cols)])
            if best is None or value < best[0] - stall * max(abs(best[0]), 1e-300):
                best, since_best = (value, point(cols, res.x)), 0
            else:
                since_best += 1
        N = np.asarray(res.eqlin.marginals).reshape(len(R_o), len(R_d))
        reduced = W - R_o.T @ N @ R_d
        reduced.ravel()[cols] = 0.0
        new = np.flatnonzero(reduced.ravel() < -1e-12 * scale)
        if not len(new):
            return point(cols, res.x) if slack <= feasible else None
        if since_best >= stall_rounds:
            break
        keep = cols[res.x[:len(cols)] > 0]
        add = new[np.argsort(reduced.ravel()[new], kind="stable")[:start_columns]]
        cols = np.union1d(np.union1d(keep, add), cols[:start_columns // 2])
    if best is not None and best[0] <= current + stall * max(abs(current), 1e-300):
        return best[1]
    return None
