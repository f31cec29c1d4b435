"""SRR's online part: perturbation (Algorithm 1, client) and estimation (Algorithm 2, server; Hadamard solve and EM)."""

from __future__ import annotations

import math

import numpy as np
import scipy.linalg

from ldpviz.errors import require
from ldpviz.mechanisms.estimation import expectation_maximisation
from ldpviz.mechanisms.srr.range_draws import uniform_range_histogram
from ldpviz.mechanisms.srr.staircase._plan import StaircasePlan


# ---------------------------------------------------------------------------
# Online part: perturbation (Algorithm 1, client) and estimation (Algorithm 2, server)
# ---------------------------------------------------------------------------
def perturb_positions(plan: StaircasePlan, positions: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Algorithm 1, line 14: each input samples a group by its mass, then a member uniformly."""
    x = np.asarray(positions, dtype=np.int64)
    n, m = len(x), plan.m
    if n == 0:
        return x.copy()
    u = rng.random(n)
    group = (u[:, None] >= plan.cum_mass[x, :m - 1]).sum(axis=1)       # 0-based j - 1
    size = plan.group_sizes[x, group]
    k = np.minimum((rng.random(n) * size).astype(np.int64), np.maximum(size - 1, 0))
    outer_lo = plan.lo[x, group + 1]
    inner_lo, inner_hi = plan.lo[x, group], plan.hi[x, group]
    left = inner_lo - outer_lo
    return np.where(k < left, outer_lo + k, inner_hi + (k - left))


def aggregate_histogram(plan: StaircasePlan, counts: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Histogram of reported positions for ``counts`` users per position, drawn exactly (the mixture form of
    :func:`staircase_channel`; module docstring): the same distribution as :func:`perturb_positions` + bincount."""
    D, m = plan.domain.size, plan.m
    counts = np.asarray(counts, dtype=np.int64).reshape(-1)
    require(counts.size == D, f"need one count per domain position ({D}), got {counts.size}")
    xs = np.flatnonzero(counts)
    if not len(xs):
        return np.zeros(D, dtype=np.int64)
    alpha_min = plan.alpha[xs, m - 1]
    step = alpha_min * (plan.c - 1.0) / (m - 1)
    lo, hi = plan.lo[xs, 1:m], plan.hi[xs, 1:m]
    weights = np.column_stack([alpha_min * D, step[:, None] * (hi - lo)])
    total = weights.sum(axis=1, keepdims=True)
    require(np.allclose(total, 1.0, atol=1e-6), "the staircase plan's probabilities do not sum to 1")
    split = rng.multinomial(counts[xs], weights / total)                      # (inputs, 1 + inner intervals)
    return uniform_range_histogram(np.concatenate([[0], lo.ravel()]), np.concatenate([[D], hi.ravel()]),
                                   np.concatenate([[split[:, 0].sum()], split[:, 1:].ravel()]), D, rng)


def fwht(a: np.ndarray) -> np.ndarray:
    """Unnormalised fast Walsh-Hadamard transform along axis 0 (Sylvester order, eq. 8); length 2^k."""
    out = np.array(a, dtype=float, copy=True)
    n = out.shape[0]
    h = 1
    while h < n:
        view = out.reshape(n // (2 * h), 2, h, *out.shape[1:])
        first = view[:, 0].copy()
        view[:, 0] += view[:, 1]
        view[:, 1] = first - view[:, 1]
        h *= 2
    return out


def hadamard_size(d: int) -> int:
    """K = 2^ceil(log2(d + 1))."""
    return 1 << math.ceil(math.log2(d + 1))


def candidate_matrix(d: int) -> np.ndarray:
    """``M[x, y] = 1`` iff y in C_x: row x + 1 of H_K has +1 in column y (y < d). Dense; for tests and small d."""
    rows = np.arange(1, d + 1, dtype=np.uint64)[:, None]
    cols = np.arange(d, dtype=np.uint64)[None, :]
    return (np.bitwise_count(rows & cols) % 2 == 0).astype(float)


def candidate_mass(values: np.ndarray) -> np.ndarray:
    """``sum_(y in C_x) values[y, ...]`` for every x (fast Walsh-Hadamard; values has d rows)."""
    d = values.shape[0]
    padded = np.zeros((hadamard_size(d),) + values.shape[1:])
    padded[:d] = values
    transformed = fwht(padded)
    return 0.5 * (transformed[1:d + 1] + values.sum(axis=0))


def channel_classes(plan: StaircasePlan) -> tuple[np.ndarray, np.ndarray]:
    """Inputs with identical channel columns: ``(representatives, class_of_each_input)``.

    A column of the SRR channel is fixed by its nested intervals I_1..I_(m-1)
    and alpha_min(x), so inputs sharing them (e.g. two sibling tiles that are
    each other's only G_1 neighbour) send identical report distributions: no
    estimator can tell them apart, and the system of Algorithm 2 is singular.
    """
    m = plan.m
    key = np.column_stack([plan.lo[:, 1:m], plan.hi[:, 1:m], plan.alpha[:, m - 1].view(np.int64)])
    _, first, inverse = np.unique(key, axis=0, return_index=True, return_inverse=True)
    return first, inverse.reshape(-1)


def hadamard_system(plan: StaircasePlan) -> np.ndarray:
    """``A[x, x'] = sum_(y in C_x) q(y | x')``: the linear system of Algorithm 2 (d x d)."""
    return candidate_mass(plan.channel())


#: Smallest reciprocal condition number accepted for the square LU solve of Algorithm 2.
RCOND_MIN = 1e-10


def _hadamard_solver(plan: StaircasePlan) -> dict:
    """A reusable solver for Algorithm 2's system (computed once per plan).

    The paper factorises the d x d system ``A p = p(C)`` by LU, assuming its d
    equations are independent. On real domains the SRR channel is usually
    rank-deficient: inputs sharing their groups send identical reports
    (:func:`channel_classes`), and columns of the form ``a 1 + b 1_B`` for
    nested LCP blocks B are linearly dependent. So: identical inputs are merged
    into one unknown; if the merged system is square and well conditioned it is
    solved by LU exactly as in the paper, otherwise by its minimum-norm
    least-squares solution (truncated-SVD pseudo-inverse). Either way the
    estimate is unbiased for every identifiable combination of frequencies;
    each merged class's mass is shared equally among its members.
    """
    reps, classes = channel_classes(plan)
    system = candidate_mass(plan.channel()[:, reps])
    solver: dict = {"classes": classes, "class_size": np.bincount(classes).astype(float), "rank": len(reps),
                    "system": system}
    if len(reps) == plan.domain.size:
        lu = scipy.linalg.lu_factor(system, check_finite=False)
        rcond, _ = scipy.linalg.lapack.dgecon(lu[0], np.abs(system).sum(axis=0).max(), norm="1")
        if rcond > RCOND_MIN:
            solver.update(method="lu", lu=lu)
            return solver
    u, sv, vt = scipy.linalg.svd(system, full_matrices=False, check_finite=False)
    solver.update(method="min-norm least squares", svd=(u, sv, vt), rank=int((sv > sv[0] * 1e-10).sum()))
    return solver


def hadamard_estimate(plan: StaircasePlan, counts: np.ndarray, fill: str = "prior") -> np.ndarray:
    """Algorithm 2: solve ``A p = p(C)`` (see :func:`_hadamard_solver`). Unbiased; may be negative.

    Where the system is rank-deficient (or a direction is too noisy to keep), the directions
    the reports cannot determine are filled from a data-free prior, the uniform distribution
    over the domain (``fill="prior"``: the solution closest to uniform, p0 + A^+ (p(C) - A p0)),
    or set to zero (``fill="min-norm"``: the minimum-norm solution A^+ p(C), which pulls the
    unidentified mass towards whatever shape the null space's complement happens to have).
    Both agree on every identifiable combination of frequencies.
    """
    require(fill in ("prior", "min-norm"), f"fill must be 'prior' or 'min-norm', got {fill!r}")
    n = counts.sum()
    if n == 0:
        return np.full(plan.domain.size, 1.0 / plan.domain.size)
    if plan._lu is None:
        plan._lu = _hadamard_solver(plan)
    solver = plan._lu
    observed = candidate_mass(counts.astype(float)) / n
    if solver["method"] == "lu":
        merged = scipy.linalg.lu_solve(solver["lu"], observed, check_finite=False)
    else:
        # Truncated SVD: drop directions whose sampling noise (sd <= 1/(2 sqrt(n) s_k) on the
        # coefficient) would exceed 1/2, the most a distribution's coefficient can carry there.
        u, sv, vt = solver["svd"]
        keep = (sv > sv[0] * 1e-10) & (sv > 1.0 / math.sqrt(n))
        prior = solver["class_size"] / plan.domain.size if fill == "prior" else np.zeros(len(sv))
        residual = observed - solver["system"] @ prior
        merged = prior + vt[keep].T @ ((u[:, keep].T @ residual) / sv[keep])
    return (merged / solver["class_size"])[solver["classes"]]


def em_estimate(plan: StaircasePlan, counts: np.ndarray, rule: str | None = None) -> tuple[np.ndarray, int]:
    """Maximum-likelihood distribution under the SRR channel by EM (Sec. 6.5 ablation "SRR + MLE").

    Uses the shared EM of :mod:`ldpviz.mechanisms.estimation` and its stopping rule. Inputs with identical
    channel columns (:func:`channel_classes`) are merged first: EM's multiplicative update moves
    them in lockstep, so running it on the classes (started from the uniform distribution over
    the domain, i.e. class size / D) and splitting each class's mass equally is the same EM,
    ~100x smaller. Where the likelihood still has flat directions (rank below the number of
    classes), EM stays at the point its uniform start leads to. Returns (distribution, iterations).
    """
    reps, classes = channel_classes(plan)
    q = plan.channel()[:, reps]
    size = np.bincount(classes).astype(float)
    p, info = expectation_maximisation(np.asarray(counts, dtype=float), lambda f: q @ f, lambda r: q.T @ r,
                                       (len(reps),), smoothing=False, rule=rule, initial=size)
    return (p / size)[classes], int(info["iterations"])
