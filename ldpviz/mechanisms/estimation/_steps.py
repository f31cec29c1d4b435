"""EM's stopping rules, shared by every EM / EMS estimator, and one plain EM / EMS step."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np


# ---------------------------------------------------------------------------
# EM / EMS (Li et al., "Estimating Numerical Distributions under Local Differential
# Privacy", SIGMOD'20, Sec. 5: the Square Wave paper's post-processing, also DAM's
# PostProcess, dam-disk-area-mechanism.md Sec. VI-B)
# ---------------------------------------------------------------------------
#: Stopping rules shared by every EM/EMS estimator (``expectation_maximisation``):
#:
#: * ``"holdout"`` (default): early stopping validated on held-out reports. A fixed-seed split
#:   keeps HOLDOUT_FRACTION of the report counts aside (binomial thinning, seed HOLDOUT_SEED:
#:   post-processing of the reports, no privacy cost); EM runs on the rest and the iteration
#:   count t* that maximises the held-out log-likelihood is kept (patience: stop once
#:   t > 1.5 t* + 50 without a gain, or at convergence); then EM runs t* iterations on all
#:   reports. Plain EM on a deconvolution overfits the noise as it converges (the
#:   maximum-likelihood map is spikier), so where it stops is a regulariser; this rule chooses
#:   it from the data instead of a constant. Held-out likelihood lives in the report space, so
#:   it can run long where the map no longer improves (HUEM, d = 8, eps = 2, 10^6 users: ~4,400
#:   iterations, about as far as convergence), never longer than ``"converged"`` would.
#: * ``"converged"``: stop when an iteration raises the count log-likelihood by less than
#:   EM_TOLERANCE per report (Delta L < EM_TOLERANCE x n): the maximum-likelihood (EM) or EMS
#:   fixed point. Relative to n because L sums over n reports; at n = 10^5 the remaining steps
#:   change L by < 1e-4 nats, far below its statistical resolution (O(1) nats). Capped at
#:   MAX_EM_ITERATIONS (info["converged"] is then False).
#: * ``"legacy"``: the former rule, Delta L < LEGACY_CELL_TOLERANCE x number of input cells in
#:   absolute nats (1e-3; with 1e-4 DAM vs SEM-Geo-I flipped on Normal at 10^5 users).
#:
#: bench/em_stopping.py reports the effect of each rule (docs/em-stopping.md): on the DAM
#: paper's Normal/MNormal setting the held-out rule gives the lowest or near-lowest W2 for
#: DAM, HUEM and SEM-Geo-I, and running to convergence the highest.
#:
#: Acceleration (default on for "holdout" and "converged"): each step is a SQUAREM cycle
#: (Varadhan & Roland, "Simple and globally convergent methods for accelerating the convergence
#: of any EM algorithm", Scand. J. Stat. 35, 2008; scheme S3, step length bounded by
#: SQUAREM_STEP_SHARE of the progress so far): two EM/EMS steps, an extrapolation along their
#: squared difference, kept only if it does not lower the log-likelihood. The first PLAIN_WARMUP
#: steps are plain, so where the held-out optimum comes early (large eps, many reports) the choice
#: is plain EM's. At small eps plain EM moves so slowly that the
#: held-out optimum lies thousands of iterations out (DAM, eps = 0.1, d = 32: 5,000 iterations, ~6 s,
#: still rising); SQUAREM gets there in a few hundred evaluations. The held-out rule then picks a
#: *step* count (plain steps, then cycles). docs/em-stopping.md compares accelerated and plain
#: held-out EM. ``"legacy"`` always runs plain EM.
EM_RULES = ("holdout", "converged", "legacy")
EM_TOLERANCE = 1e-9
MAX_EM_ITERATIONS = 5_000
#: A stated cap on EM's work: output cells x iterations. Huge output domains (DAM with the largest radius,
#: thousands of cells a side) would otherwise spend minutes in thousands of FFT-sized iterations; there the
#: iteration cap becomes EM_WORK_BUDGET / output cells (at least MIN_EM_ITERATIONS) and ``info`` says so.
EM_WORK_BUDGET = 3e8
MIN_EM_ITERATIONS = 50
HOLDOUT_FRACTION = 0.2
HOLDOUT_SEED = 20200614
LEGACY_CELL_TOLERANCE = 1e-3
_RULE: dict = {"rule": "holdout", "cell_tolerance": LEGACY_CELL_TOLERANCE, "accelerate": True}
#: SQUAREM's step length |alpha| is bounded by this share of the plain-EM-equivalent progress so far (a cycle
#: of step alpha moves about as far as 2|alpha| plain steps), so no cycle jumps more than ~20% further along the
#: path and the held-out rule can still resolve where on it to stop. (Varadhan & Roland's own default, a bound
#: that quadruples whenever it is reached, jumped past held-out optima: SEM-Geo-I, d = 6, 10^6 reports.)
SQUAREM_STEP_SHARE = 0.1
#: Accelerated EM runs this many plain steps before its first SQUAREM cycle, so a held-out optimum within
#: ~100 iterations (large eps, many reports) is chosen exactly as plain EM chooses it.
PLAIN_WARMUP = 200
#: Held-out patience (the plain rule's): a search stops once it is past PATIENCE_SHARE x its best step + PATIENCE_EXTRA
#: without a gain (counted in EM evaluations; on a large domain in plain-EM-equivalent progress, below).
PATIENCE_SHARE, PATIENCE_EXTRA = 1.5, 50
#: Large output domains (at least this many output cells: DAM's family at d = 256 and epsilon up to about 2, about
#: 473,000 cells at epsilon 1; never at d <= 128 with the paper's optimal radius, down to the smallest epsilon) run a
#: work-saving schedule (issue 38.4): SQUAREM from step LARGE_PLAIN_WARMUP, and the held-out patience counted
#: in the units it was set in, plain-EM-equivalent progress (a cycle of step alpha moves about 2|alpha| plain
#: steps), instead of evaluations, which a SQUAREM cycle covers far faster. Each evaluation there is two FFTs
#: of ~700^2 (~28 ms), and 200 plain steps then a patience of 1.5 t + 50 evaluations took 588 of them (19 s at
#: d = 256, 1M users, epsilon 1). Measured in docs/em-large-domains.md (bench/em_large_domains.py, with the step
#: bound below): W2 on 4 x 4 blocks -3.7% on average over 15 collections, within seed noise, in 0.30x the CPU
#: (0.19x at that run). Smaller domains keep the schedule above, bit for bit.
LARGE_EM_CELLS = 2 ** 18
LARGE_PLAIN_WARMUP = 20
#: SQUAREM's step bound on a large output domain: a cycle moves at most ~40% further along the path instead of
#: ~20%. The held-out rule then samples its curve at points up to 1.4x apart in progress, so the step it keeps is
#: within about 20% of path of the held-out optimum (against 10%); near that optimum the held-out log-likelihood
#: is flat to first order, so the map it picks moves by a second-order amount, while the search and the refit
#: usually need fewer maps. Measured against 0.1 on the same reports in docs/em-large-domains.md: 0.84x the CPU on
#: average, fewer maps on 4 of 5 settings (DAM at epsilon 0.5 took more).
LARGE_SQUAREM_STEP_SHARE = 0.2


@contextmanager
def em_stopping_rule(rule: str = "holdout", cell_tolerance: float = LEGACY_CELL_TOLERANCE,
                     accelerate: bool = True) -> Iterator[None]:
    """Within the block, every EM/EMS estimator that does not name its own rule uses ``rule``
    (and SQUAREM acceleration or not; for benchmarks that measure their effect; not thread-safe)."""
    if rule not in EM_RULES:
        raise ValueError(f"unknown EM stopping rule {rule!r}; use one of {', '.join(EM_RULES)}")
    saved = dict(_RULE)
    _RULE.update(rule=rule, cell_tolerance=cell_tolerance, accelerate=bool(accelerate))
    try:
        yield
    finally:
        _RULE.update(saved)


def binomial_smooth(f: np.ndarray) -> np.ndarray:
    """EMS smoothing: the binomial kernel (1, 2, 1)/4 along every axis.

    At the border the kernel is renormalised over the cells that exist (Li et al.'s
    row-normalised smoothing matrix); the result is rescaled to the input's total.
    """
    return _smooth_stack(np.asarray(f, dtype=float)[None])[0]


def _rowsum(x: np.ndarray) -> np.ndarray:
    """Per-trial totals of a stack (leading axis): each row summed as one contiguous array, so a trial's sum
    is the same bits whether it is summed alone or in a stack of any size."""
    return x.reshape(x.shape[0], -1).sum(axis=1)


def _per_trial(x: np.ndarray, ndim: int) -> np.ndarray:
    return x.reshape((-1,) + (1,) * (ndim - 1))


def _smooth_stack(f: np.ndarray) -> np.ndarray:
    """:func:`binomial_smooth` of every slice of a stack (leading axis = trials), in one pass per axis."""
    out = f
    for axis in range(1, f.ndim):
        if f.shape[axis] < 2:
            continue
        padded = np.moveaxis(out, axis, 0)
        ones = np.ones(padded.shape[0])
        num = 2 * padded
        num[1:] += padded[:-1]
        num[:-1] += padded[1:]
        den = 2 * ones
        den[1:] += 1
        den[:-1] += 1
        out = np.moveaxis(num / den.reshape((-1,) + (1,) * (padded.ndim - 1)), 0, axis)
    total = _rowsum(out)
    scale = np.where(total > 0, _rowsum(f) / np.where(total > 0, total, 1.0), 1.0)
    return out * _per_trial(scale, f.ndim)


def _em_step(counts: np.ndarray, n: float, observed: np.ndarray, forward, adjoint, f: np.ndarray,
             smoothing: bool) -> tuple[np.ndarray, float, np.ndarray]:
    """One EM/EMS update: (next f, log-likelihood of f, forward(f))."""
    pred = forward(f)
    safe = np.where(observed, pred, 1.0)
    loglik = float(np.sum(counts[observed] * np.log(np.maximum(safe[observed], 1e-300))))
    ratio = np.where(observed, counts / np.maximum(safe, 1e-300), 0.0)
    g = np.maximum(f * adjoint(ratio) / n, 0.0)
    if smoothing:
        g = binomial_smooth(g)
    return g / g.sum(), loglik, pred


def _em_loop(counts: np.ndarray, forward, adjoint, f: np.ndarray, smoothing: bool, threshold: float,
             max_iterations: int, held_out: np.ndarray | None = None) -> tuple[np.ndarray, dict]:
    """EM/EMS iterations from ``f``; with ``held_out``, also track the held-out log-likelihood."""
    n = counts.sum()
    observed = counts > 0
    watch = held_out > 0 if held_out is not None else None
    old, loglik, converged, iterations = -np.inf, -np.inf, False, 0
    best, best_it, best_f = -np.inf, 0, f.copy()
    for iterations in range(1, max_iterations + 1):
        pred = forward(f)
        safe = np.where(observed, pred, 1.0)
        loglik = float(np.sum(counts[observed] * np.log(np.maximum(safe[observed], 1e-300))))
        if watch is not None:
            held = float(np.sum(held_out[watch] * np.log(np.maximum(pred[watch], 1e-300))))
            if held > best:
                best, best_it, best_f = held, iterations - 1, f.copy()     # f after (iterations - 1) updates
            elif iterations - 1 > 1.5 * best_it + 50:
                break
        if abs(loglik - old) < threshold:
            converged = True
            break
        old = loglik
        ratio = np.where(observed, counts / np.maximum(safe, 1e-300), 0.0)
        f = f * adjoint(ratio) / n
        f = np.maximum(f, 0.0)
        if smoothing:
            f = binomial_smooth(f)
        f /= f.sum()
    out = {"iterations": iterations, "converged": converged, "loglik": loglik, "best_iteration": best_it}
    if watch is not None:
        out["best_f"] = best_f
    return f, out


# ---------------------------------------------------------------------------
# Stacked EM: several trials' report counts at once (issues 23 and 28, "trials in one pass")
# ---------------------------------------------------------------------------

def _predict(forward, f: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Predicted report probabilities of a stack (floored at 1e-300) and their logarithm."""
    pred = forward(f)
    np.maximum(pred, 1e-300, out=pred)
    return pred, np.log(pred)
