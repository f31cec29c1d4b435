"""Origin-destination (OD) flows under LDP: L-SRR Sec. 4.1 for SRR and its Sec. 6.2 baselines.

Paper: l-srr-staircase-randomized-response.md Sec. 4.1 (Def. 4.1, Fig. 6), Sec. 6.4 (Fig. 10).

Protocol (client): each trip's origin and destination are reported *separately* with the mechanism's
own client half (``Mechanism.perturb``) at epsilon/2 each; by sequential composition the pair is
epsilon-LDP (Def. 4.1). Privacy unit: one trip's OD pair (one person when each person has one trip;
a person with t trips spends t * epsilon). The domain is the public grid domain of the L-SRR family
(``domain="grid"``), so everything broadcast to phones is fixed by the grid alone.

Server: the two report sets are paired by user. Every mechanism's report has a known *response*
``A[k, x] = E[a_k(report) | true location x]``: for the mechanisms whose report is one symbol
(SRR and GRR: a location; HR: a Hadamard column; PLDP: a (row, sign) pair) ``a`` is the one-hot
report and ``A`` is the channel; for OLH-H, whose report carries a fresh hash, ``a`` is the report's
support over the domain (which leaves its hashed node supports) and ``A[v, x] = q* + (p* - q*) *
(share of hierarchy levels where v and x are in the same node)``. Because origin and destination
are randomised independently, the joint statistic ``S = sum_i a(o_i) a(d_i)^T`` has expectation
``n A_o F A_d^T`` for the OD distribution F (d x d for d locations, d^2 pairs). All estimators work
on ``S`` (a K x K histogram; never a per-user loop):

* ``lasso`` (the paper's estimator): Lasso regression of the response ``y = S / n`` on the
  predictors ``M = A_o (x) A_d`` -- one column per candidate OD pair, its expected joint report
  distribution -- with non-negative coefficients, ``min 1/2 ||A_o F A_d^T - S/n||^2 + sum W * F``,
  ``F >= 0``; "the non-zero coefficients ... are the frequencies" (normalised to sum 1). The paper
  does not say what ``y`` holds beyond "estimated from the perturbed values", nor how the penalty is
  chosen. We use the joint report statistic because the two marginal distributions alone cannot
  identify the joint (every coupling of the marginals fits them equally), and per-pair penalties
  ``W = z * (standard error of the pair's score A_o^T (S/n) A_d)`` with the universal threshold
  ``z = sqrt(2 ln d^2)`` (Donoho-Johnstone): a pair with no flow stays at zero unless its score
  exceeds noise of that size. Solved with the Kronecker structure (d x d products, never the
  d^2 x d^2 design) by ADMM and a projected Newton polish (:mod:`ldpviz.flows.od_lasso_solver`).
* ``em`` (maximum likelihood): EM on the joint report histogram, ``F <- F * A_o^T (S / (A_o F
  A_d^T)) A_d / n`` (the Sec. 6.5 ablation's MLE, on pairs). Exact maximum likelihood for the
  one-symbol mechanisms; for OLH-H it maximises the Poisson likelihood of the support-pair counts
  (Richardson-Lucy), because the likelihood of a fresh-hash report does not factor through any
  histogram.
* ``unbiased``: the unbiased linear estimate ``A_o^+ (S/n) A_d^+T`` projected onto the simplex
  (Norm-Sub): the explaining baseline, the product of the mechanisms' own unbiased estimators.

Metrics: L1 over OD pairs (Fig. 10) and the precision of the top-k flows (of the k largest true
pairs, the share that are among the estimate's k largest).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse

from ldpviz import mechanisms, wording
from ldpviz.wording import plural
from ldpviz.geo.domain import Binned, Grid, Region
from ldpviz.errors import require
from ldpviz.limits import MAX_TRIALS
from ldpviz.mechanisms.estimation import norm_sub
from ldpviz.mechanisms import accounting
from ldpviz.mechanisms.base import UNIT_PERSON, validate_epsilon
from ldpviz.flows.od_simulate import simulate_statistic
from ldpviz.flows.od_statistics import JointStatistic, joint_statistic
from ldpviz.mechanisms.srr.staircase import grid_domain

#: The L-SRR Sec. 6.4 schemes (registry names); ``grr`` and ``hr`` mean the tile oracles on the grid domain.
OD_MECHANISMS = ("srr", "grr-tiles", "olh-h", "hr-tiles", "pldp")
ALIASES = {"grr": "grr-tiles", "hr": "hr-tiles", "l-srr": "srr"}
ESTIMATORS = ("lasso", "em", "unbiased")
#: How reports are simulated: every user's two reports (``Mechanism.perturb``), or the joint statistic
#: drawn from the true OD counts (:mod:`ldpviz.flows.od_simulate`; same distribution, see there).
PATHS = ("users", "aggregate")
#: Largest grid side for OD: d = 32^2 = 1,024 locations, 1,048,576 OD pairs.
MAX_OD_GRID_SIDE = 32
_CHUNK = 1 << 15
#: Lasso on rank-deficient designs: LP rounds in the null space, and the largest LP constraint matrix.
_LP_ROUNDS = 6
_LP_ROWS = 1024
_LP_ENTRIES = 1 << 24


def resolve_mechanism(name: str) -> str:
    """The registry name of an OD scheme (``grr`` -> ``grr-tiles``, ``hr`` -> ``hr-tiles``), or a clear error."""
    require(isinstance(name, str), f"mechanism must be a name, got {name!r}")
    key = ALIASES.get(name.strip().lower(), name.strip().lower())
    require(key in OD_MECHANISMS, f"OD analysis supports the L-SRR schemes {', '.join(OD_MECHANISMS)} "
                                  f"(also grr, hr); got {name!r}")
    return key


def trips_per_person(person: np.ndarray | None) -> tuple[int, int] | None:
    """(most trips by one person, number of people) among the trips taking part; None if persons are unknown."""
    if person is None or len(person) == 0:
        return None
    _, counts = np.unique(np.asarray(person).astype(str), return_counts=True)
    return int(counts.max()), int(len(counts))


def region_sentence(region: Region) -> str:
    """How the region was chosen, for every OD and navigation guarantee (never 'independent' when fitted)."""
    from ldpviz.geo.region_choice import region_covers

    return (f"Region '{region.name or 'custom'}', a {region.side_m / 1000:,.4g} km square: "
            + region_covers(region))


def od_guarantee(mechanism: str, epsilon: float, ledger: accounting.Ledger, region: Region | None = None) -> str:
    """The OD guarantee in words: budget split, privacy unit, the per-person total (``ledger``, :func:`od_ledger`:
    region included, from the accountant) and how the region was chosen."""
    person = ledger.sentence()
    text = (f"epsilon-LDP with epsilon = {epsilon:g} per trip's origin-destination pair (L-SRR Def. 4.1): "
            f"{mechanism} reports the origin at epsilon/2 = {epsilon / 2:g} and the destination at "
            f"epsilon/2 = {epsilon / 2:g}, and sequential composition adds them. Privacy unit: one trip's OD "
            f"pair. {person} Domain: every cell of the grid on the region, so what "
            "phones receive is fixed by the region and the grid.")
    return text + (f" {region_sentence(region)}" if region is not None else "")


def od_ledger(mech: Any, region: Region, person: np.ndarray | None, n_pairs: int) -> accounting.Ledger:
    """What a person pays in one OD collection (the accountant's ledger): the region's epsilon0 once per person
    where it was paid for, and two reports at epsilon/2 (origin, destination) for each of their trips in the
    region. ``person``: the person of every pair that reports (None: synthetic pairs, one per person)."""
    if person is None:
        worst, median, basis = 1, 1.0, "synthetic pairs: one trip per synthetic person"
    else:
        worst, median = accounting.counts_per_person(person)
        basis = f"the most trips by one person in the region: {worst}; median {median:g}"
    charges = [c for c in [accounting.region_charge(region, 1, 1, "each person reports the tile of one of "
                                                                  "their points, once")] if c is not None]
    charges.append(accounting.report_charge(mech, 2 * worst, 2 * median, basis + "; each trip sends two reports",
                                            what=f"an origin or destination report ({mech.name} at ε/2)"))
    return accounting.Ledger(tuple(charges), unit=UNIT_PERSON,
                             notes=(f"{n_pairs:,} OD pairs report",))


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


# ---------------------------------------------------------------- metrics
def od_l1(true: np.ndarray, est: np.ndarray) -> float:
    """L1 distance over OD pairs between two OD distributions (L-SRR Fig. 10), in [0, 2]."""
    return float(np.abs(_normalise(np.asarray(true, float)) - _normalise(np.asarray(est, float))).sum())


def flat_l1(true: np.ndarray) -> float:
    """The L1 of a flat guess (every OD pair equally likely, knowing nothing) from ``true``: the bar an estimate
    must beat to say anything (issue 27: a 300-trip estimate that was pure noise carried no word)."""
    return od_l1(true, np.ones_like(np.asarray(true, dtype=float)))


def top_k_precision(true: np.ndarray, est: np.ndarray, k: int) -> float:
    """Of the k largest true OD pairs (ties by index), the share that are among the estimate's k largest."""
    t, e = np.asarray(true, float).ravel(), np.asarray(est, float).ravel()
    require(isinstance(k, (int, np.integer)) and k >= 1, f"top-k needs k >= 1, got {k!r}")
    k = int(min(k, int((t > 0).sum()) or 1, t.size))
    top_t = np.argsort(-t, kind="stable")[:k]
    top_e = np.argsort(-e, kind="stable")[:k]
    return float(len(np.intersect1d(top_t, top_e)) / k)


# ---------------------------------------------------------------- one OD run
@dataclass
class ODResult:
    """True and estimated OD distributions over grid cells (d_cells x d_cells, row = origin cell)."""

    mechanism: str
    estimator: str
    epsilon: float
    grid: Grid
    true: np.ndarray
    estimate: np.ndarray
    l1: float
    top_k: int
    top_k_precision: float
    n_users: int
    left_out: dict[str, int]
    guarantee: str
    seconds: dict[str, float]
    info: dict[str, Any] = field(default_factory=dict)
    max_trips_per_person: int = 1    #: most trips by one person among the pairs (1 for synthetic pairs)
    people: int = 0                  #: distinct people among the pairs
    persons_known: bool = False      #: False for synthetic pairs (one per synthetic person)
    region_chosen: str = ""          #: how the region was chosen (:func:`region_sentence`)
    ledger: Any = None               #: what each person pays (:func:`od_ledger`, the accountant's ledger)

    def summary(self) -> dict[str, Any]:
        return {"mechanism": self.mechanism, "estimator": self.estimator, "epsilon": self.epsilon,
                "epsilon_origin": self.epsilon / 2, "epsilon_destination": self.epsilon / 2,
                "grid": self.grid.side, "od_pairs": int(self.true.size), "n_users": self.n_users,
                "distinct_true_pairs": int((self.true > 0).sum()), "l1": self.l1, "top_k": self.top_k,
                "top_k_precision": self.top_k_precision, "left_out": dict(self.left_out),
                "guarantee": self.guarantee, "seconds": dict(self.seconds), "info": dict(self.info),
                "max_trips_per_person": self.max_trips_per_person, "people": self.people,
                "persons_known": self.persons_known,
                "max_person_epsilon": self.ledger.total("worst").ldp_only(),
                "region_chosen": self.region_chosen,
                "ledger": self.ledger.to_dict() if self.ledger is not None else None}



def check_od_grid(grid_side: Any) -> int:
    require(isinstance(grid_side, (int, np.integer)) and not isinstance(grid_side, bool) and grid_side >= 1,
            f"grid side must be a whole number >= 1, got {grid_side!r}")
    require(grid_side <= MAX_OD_GRID_SIDE,
            f"grid side {grid_side} is too large for OD analysis: at most {MAX_OD_GRID_SIDE} "
            f"({MAX_OD_GRID_SIDE ** 2:,} locations, {MAX_OD_GRID_SIDE ** 4:,} OD pairs)")
    return int(grid_side)


#: Memory one simulated OD pair takes while it is drawn, binned and reported (coordinates, unit positions,
#: cells and two reports; peak measured with tracemalloc at 300,000 pairs: 263 (GRR) to 465 (OLH-H), rounded up): the users path holds them all.
OD_BYTES_PER_PAIR = 500
#: Most memory an OD run may plan to take for its pairs.
MAX_OD_BYTES = 8 * 2**30


def check_od_users(n_users: Any) -> int:
    """Refuse, before anything is allocated, a number of OD pairs whose simulation would pass :data:`MAX_OD_BYTES`."""
    require(isinstance(n_users, (int, np.integer)) and not isinstance(n_users, bool) and n_users >= 1,
            f"users must be a whole number >= 1, got {n_users!r}")
    most = MAX_OD_BYTES // OD_BYTES_PER_PAIR
    require(n_users <= most, f"{int(n_users):,} OD pairs would need about "
                             f"{int(n_users) * OD_BYTES_PER_PAIR / 2**30:,.0f} GiB; the limit is {most:,} pairs "
                             f"({MAX_OD_BYTES / 2**30:g} GiB)")
    return int(n_users)


def bin_pairs(grid: Grid, o_lon: np.ndarray, o_lat: np.ndarray, d_lon: np.ndarray,
              d_lat: np.ndarray) -> tuple[Binned, Binned, int]:
    """Bin origins and destinations; pairs with either end outside the region are left out (counted)."""
    uo, ud = grid.region.to_unit(o_lon, o_lat), grid.region.to_unit(d_lon, d_lat)
    inside = np.all((uo >= 0) & (uo <= 1), axis=1) & np.all((ud >= 0) & (ud <= 1), axis=1)
    bo, bd = grid.bin_unit(uo[inside]), grid.bin_unit(ud[inside])
    return bo, bd, int((~inside).sum())


def estimate_od(stat: JointStatistic, estimator: str, lasso_z: float | None = None) -> tuple[np.ndarray, dict]:
    require(estimator in ESTIMATORS, f"estimator must be one of {', '.join(ESTIMATORS)}; got {estimator!r}")
    if estimator == "lasso":
        return estimate_lasso(stat, lasso_z)
    if estimator == "em":
        return estimate_em(stat)
    return estimate_unbiased(stat)


def run_od(o_lon: np.ndarray, o_lat: np.ndarray, d_lon: np.ndarray, d_lat: np.ndarray, region: Region,
           grid_side: int, mechanism: str, epsilon: float, *, estimator: str = "lasso", seed: int = 0,
           top_k: int = 10, params: dict[str, Any] | None = None, lasso_z: float | None = None,
           left_out: dict[str, int] | None = None, path: str = "users",
           person: np.ndarray | None = None) -> ODResult:
    """Collect every trip's OD pair with ``mechanism`` at epsilon/2 + epsilon/2 and estimate the OD distribution.

    ``person`` (the person of every pair; None for synthetic pairs, one per synthetic person) sets the
    per-person total stated in the guarantee: a person with k trips in the region is at k x epsilon.

    ``path="aggregate"`` draws the joint statistic from the true OD counts instead of simulating each
    phone (:mod:`ldpviz.flows.od_simulate`: exact in distribution; OLH-H under a fully random hash family).
    """
    require(path in PATHS, f"path must be one of {', '.join(PATHS)}; got {path!r}")
    name = resolve_mechanism(mechanism)
    epsilon = validate_epsilon(epsilon)
    grid = Grid(region, check_od_grid(grid_side))
    params = dict(params or {})
    require(params.get("domain", "grid") == "grid",
            "OD analysis uses the public grid domain only (domain='grid'): the occupied domain is built from the "
            "users' true locations")
    left = dict(left_out or {})
    bo, bd, outside = bin_pairs(grid, o_lon, o_lat, d_lon, d_lat)
    trips = reporting = None
    if person is not None:
        require(len(person) == len(o_lon), f"person labels: {len(person)} for {len(o_lon)} OD pairs")
        uo, ud = grid.region.to_unit(o_lon, o_lat), grid.region.to_unit(d_lon, d_lat)
        inside = np.all((uo >= 0) & (uo <= 1), axis=1) & np.all((ud >= 0) & (ud <= 1), axis=1)
        reporting = np.asarray(person)[inside]          # the person of every pair that sends its two reports
        trips = trips_per_person(reporting)
    if outside:
        left["pairs with an end outside the region"] = left.get("pairs with an end outside the region", 0) + outside
    require(len(bo.cells) > 0, "no OD pair has both ends inside the region; choose another region")
    mech = mechanisms.create(name, grid, epsilon / 2.0, **params)
    ledger = od_ledger(mech, grid.region, reporting, len(bo.cells))
    domain = grid_domain(grid)
    rng = np.random.default_rng(seed)
    pos_o, pos_d = mech.positions(domain, bo), mech.positions(domain, bd)
    D = domain.size
    counts = np.bincount(pos_o * D + pos_d, minlength=D * D).reshape(D, D)
    t0 = time.perf_counter()
    if path == "users":
        rep_o, rep_d = mech.perturb(bo, rng), mech.perturb(bd, rng)       # the phones: two reports at eps/2
        t1 = time.perf_counter()
        stat = joint_statistic(mech, rep_o, rep_d)
    else:

        t1 = t0
        stat = simulate_statistic(mech, domain, counts, rng)
    t2 = time.perf_counter()
    F_pos, info = estimate_od(stat, estimator, lasso_z)
    t3 = time.perf_counter()
    true_pos = counts / len(pos_o)
    cells = domain.cells
    true = np.zeros((grid.n_cells, grid.n_cells))
    est = np.zeros_like(true)
    true[np.ix_(cells, cells)] = true_pos
    est[np.ix_(cells, cells)] = F_pos
    return ODResult(mechanism=name, estimator=estimator, epsilon=epsilon, grid=grid, true=true, estimate=est,
                    l1=od_l1(true, est), top_k=top_k, top_k_precision=top_k_precision(true, est, top_k),
                    n_users=int(len(bo.cells)), left_out=left,
                    guarantee=od_guarantee(name, epsilon, ledger, grid.region),
                    seconds={"perturb": t1 - t0, "statistic": t2 - t1, "estimate": t3 - t2},
                    info={**info, "report_symbols": int(stat.A_o.shape[0]), "exact_likelihood": stat.exact,
                          "path": path},
                    max_trips_per_person=trips[0] if trips else 1, people=trips[1] if trips else int(len(bo.cells)),
                    persons_known=trips is not None, region_chosen=region_sentence(grid.region), ledger=ledger)


# ---------------------------------------------------------------- datasets -> OD pairs, trials
def load_od_pairs(dataset: Any, region: Any = None, n_users: int | None = None,
                  seed: int = 0) -> tuple[Any, Region, str]:
    """OD pairs of a dataset: trips of a trajectory dataset (a bundled name or a loaded
    :class:`~ldpviz.data.trajectories.Trajectories`), or gravity-model pairs of a bundled point dataset.

    Returns ``(ODPairs, region, source)``; ``source`` says in words where the pairs come from.
    ``n_users`` subsamples trips (seeded, without replacement) or sets the number of synthetic pairs.
    """
    from ldpviz.data import datasets, trajectories

    if isinstance(dataset, trajectories.Trajectories) or dataset in trajectories.names():
        data = dataset if isinstance(dataset, trajectories.Trajectories) else trajectories.load(dataset)
        reg = _region(data.presets, region)
        pairs = trajectories.od_pairs(data, reg)
        source = f"{data.label}: first and last point of each trip inside the region"
        if n_users is not None:
            require(isinstance(n_users, (int, np.integer)) and n_users >= 1, f"users must be >= 1, got {n_users!r}")
            if n_users < pairs.n:
                keep = np.sort(np.random.default_rng(seed).choice(pairs.n, size=n_users, replace=False))
                left = dict(pairs.left_out)
                left["trips not in the requested subsample"] = pairs.n - n_users
                pairs = trajectories.ODPairs(pairs.origin_lon[keep], pairs.origin_lat[keep], pairs.dest_lon[keep],
                                             pairs.dest_lat[keep], pairs.n_trips, left,
                                             None if pairs.person is None else pairs.person[keep])
        return pairs, reg, source
    data = dataset if isinstance(dataset, datasets.Dataset) else datasets.load(dataset, seed)
    reg = _region(data.presets, region)
    n = int(n_users) if n_users is not None else int(reg.contains(data.lon, data.lat).sum())
    check_od_users(n)
    pairs = trajectories.gravity_od_pairs(data.lon, data.lat, reg, n, seed=seed)
    return pairs, reg, (f"{data.label}: {n:,} synthetic OD pairs by a gravity model on the points "
                        "(not real trips; see ldpviz.data.trajectories.gravity_od_pairs)")


def _region(presets: dict[str, Region], region: Any) -> Region:
    if region is None:
        return next(iter(presets.values()))
    if isinstance(region, Region):
        return region
    require(region in presets, f"unknown region {region!r}; this dataset has: {', '.join(presets)}")
    return presets[region]


def od_trials(dataset: Any, mechanism: str, epsilon: float, grid_side: int, *, region: Any = None,
              estimator: str = "lasso", trials: int = 1, seed: int = 0, n_users: int | None = None,
              top_k: int = 10, params: dict[str, Any] | None = None, path: str = "users") -> dict[str, Any]:
    """``trials`` OD runs (seeds seed, seed+1, ...) on one population; means and per-trial values.

    ``path="aggregate"`` draws each run's joint statistic from the OD counts (see :func:`run_od`).
    """
    require(isinstance(trials, (int, np.integer)) and 1 <= trials <= MAX_TRIALS,
            f"trials must be a whole number from 1 to {MAX_TRIALS}, got {trials!r}")
    pairs, reg, source = load_od_pairs(dataset, region, n_users, seed)
    runs = [run_od(pairs.origin_lon, pairs.origin_lat, pairs.dest_lon, pairs.dest_lat, reg, grid_side, mechanism,
                   epsilon, estimator=estimator, seed=seed + t, top_k=top_k, params=params,
                   left_out=pairs.left_out, path=path, person=pairs.person) for t in range(int(trials))]
    out = runs[0].summary()
    name = dataset.name if hasattr(dataset, "name") else dataset
    out.update({"dataset": name, "region": reg.name, "source": source, "trials": int(trials),
                "seeds": [seed + t for t in range(int(trials))],
                "l1": float(np.mean([r.l1 for r in runs])), "l1_trials": [r.l1 for r in runs],
                "top_k_precision": float(np.mean([r.top_k_precision for r in runs])),
                "top_k_precision_trials": [r.top_k_precision for r in runs]})
    out["notes"] = ([wording.capped(n_users, pairs.n, "trips", "the region")]
                    if n_users is not None and n_users > pairs.n else [])
    occurring = int((runs[0].true > 0).sum())       # top_k_precision ranks at most the OD pairs that occur
    if top_k > occurring:
        out["notes"].append(f"top-{top_k} was asked for but {plural(occurring, 'OD pair')} occur in the data; the "
                            f"precision is over the top {occurring:,}.")
    return out
