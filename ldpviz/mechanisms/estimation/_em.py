"""EM / EMS (SIGMOD'20 Sec. 5) on one trial's reports and on several trials' at once (issues 23 and 28),
SQUAREM-accelerated."""

from __future__ import annotations

import numpy as np

from ldpviz.mechanisms.estimation._post import check_time
from ldpviz.mechanisms.estimation._steps import (EM_RULES, EM_TOLERANCE, EM_WORK_BUDGET, HOLDOUT_FRACTION, HOLDOUT_SEED,
                                                 LARGE_EM_CELLS, LARGE_PLAIN_WARMUP, LARGE_SQUAREM_STEP_SHARE,
                                                 MAX_EM_ITERATIONS, MIN_EM_ITERATIONS, PATIENCE_EXTRA, PATIENCE_SHARE,
                                                 PLAIN_WARMUP, SQUAREM_STEP_SHARE, _RULE, _em_loop, _per_trial,
                                                 _predict, _rowsum, _smooth_stack)
from ldpviz.mechanisms.estimation._start import start_map_tests


def expectation_maximisation(counts: np.ndarray, forward, adjoint, input_shape: tuple[int, ...],
                             smoothing: bool = True, rule: str | None = None,
                             max_iterations: int = MAX_EM_ITERATIONS, initial: np.ndarray | None = None,
                             accelerate: bool | None = None, one_report_each: bool = True) -> tuple[np.ndarray, dict]:
    """Maximum-likelihood (EM) or smoothed (EMS) estimate of the input distribution.

    ``counts``: report counts over the output domain; ``forward(f)`` gives the output
    probabilities for an input distribution ``f`` of ``input_shape``; ``adjoint(r)`` gives
    sum_y P(y|x) r(y) for every input x; both must return new arrays (EM works on them in place). One step
    (Li et al. SIGMOD'20, Alg. EMS):
    f <- f * adjoint(counts / forward(f)) / n, then (EMS) binomial smoothing. ``rule`` is the
    stopping rule (see EM_RULES above; default: the one set by :func:`em_stopping_rule`,
    normally ``"holdout"``). ``initial`` is the starting distribution (default uniform). ``accelerate``
    (default: the block's setting, normally on) runs SQUAREM cycles instead of single steps for the
    "holdout" and "converged" rules; ``max_iterations`` then bounds EM evaluations. Returns
    (distribution, info); info names the rule, ``iterations`` (EM evaluations) and, accelerated,
    ``steps`` (plain steps, then cycles; for ``"holdout"`` the chosen count). ``one_report_each``: ``counts`` is
    a histogram of one report per person (False for SEM-Geo-I's k cells per report), so the start-map test
    (:func:`start_map_tests`) may also test the reports' fit to the start.
    """
    rule = rule or _RULE["rule"]
    accelerate = _RULE["accelerate"] if accelerate is None else bool(accelerate)
    if rule not in EM_RULES:
        raise ValueError(f"unknown EM stopping rule {rule!r}; use one of {', '.join(EM_RULES)}")
    counts = np.asarray(counts, dtype=float)
    n = counts.sum()
    work_cap = max(MIN_EM_ITERATIONS, int(EM_WORK_BUDGET // max(counts.size, 1)))
    capped_by_work = work_cap < max_iterations
    max_iterations = min(max_iterations, work_cap)
    f = np.full(input_shape, 1.0 / int(np.prod(input_shape)))
    if initial is not None:
        f = np.asarray(initial, dtype=float).reshape(input_shape) / float(np.sum(initial))
    if n <= 0:
        return f, {"iterations": 0, "converged": True, "loglik": 0.0, "stopping": rule}
    if rule == "legacy":
        f, info = _em_loop(counts, forward, adjoint, f, smoothing, _RULE["cell_tolerance"] * f.size, max_iterations)
    elif accelerate:
        f, info = _accelerated(counts, forward, adjoint, f, smoothing, rule, max_iterations, one_report_each)
    elif rule == "converged":
        f, info = _em_loop(counts, forward, adjoint, f, smoothing, EM_TOLERANCE * n, max_iterations)
    else:
        whole = np.rint(counts).astype(np.int64)
        train = np.random.default_rng(HOLDOUT_SEED).binomial(whole, 1.0 - HOLDOUT_FRACTION).astype(float)
        held_out = whole - train
        if train.sum() <= 0 or held_out.sum() <= 0:           # too few reports to split: converge
            f, info = _em_loop(counts, forward, adjoint, f, smoothing, EM_TOLERANCE * n, max_iterations)
        else:
            start = f.copy()
            _, trial = _em_loop(train, forward, adjoint, f.copy(), smoothing, EM_TOLERANCE * train.sum(),
                                max_iterations, held_out)
            chosen = max(trial["best_iteration"], 1)
            test = start_map_tests(lambda x: forward(x[0])[None], start[None], trial.pop("best_f")[None],
                                   held_out[None], [trial["best_iteration"]],
                                   counts[None] if one_report_each else None)[0]
            f, info = _em_loop(counts, forward, adjoint, f, smoothing, 0.0, chosen)
            # "converged": the rule, not the iteration cap, ended the search for t*.
            info.update(converged=bool(trial["converged"] or trial["iterations"] < max_iterations),
                        iterations=chosen, start_map=test)
    info.pop("best_iteration", None)
    info["stopping"] = rule
    if accelerate and rule != "legacy":
        info["acceleration"] = "SQUAREM"
    if capped_by_work:
        info["iteration cap"] = f"{max_iterations} (work cap: {counts.size:,} output cells)"
    return f, info


def _accelerated(counts: np.ndarray, forward, adjoint, f: np.ndarray, smoothing: bool, rule: str,
                 max_evaluations: int, one_report_each: bool = True) -> tuple[np.ndarray, dict]:
    """One problem through the stacked SQUAREM EM (a stack of one): the batched and the one-trial estimates
    then run the same arithmetic, trial for trial."""
    out, infos = _accelerated_batch(counts[None], lambda x: forward(x[0])[None], lambda r: adjoint(r[0])[None],
                                    f[None], smoothing, rule, max_evaluations, one_report_each)
    return out[0], infos[0]


def _step_batch(counts: np.ndarray, n: np.ndarray, forward, adjoint, f: np.ndarray, smoothing: bool,
                held_out: np.ndarray | None = None,
                known: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """One EM/EMS update of every slice of a stack: (next f, log-likelihood of f, held-out log-likelihood of f).

    One forward and one adjoint map of the whole stack; one logarithm of the predicted report probabilities
    serves both likelihoods (cells without reports contribute exact zeros, so a trial's sums do not depend on
    the other trials in the stack). ``known`` = (pred, log pred, which) gives the floored forward map and its
    logarithm already computed for the slices ``which`` (SQUAREM's accepted jumps): only the others are mapped."""
    if known is None:
        pred, log_pred = _predict(forward, f)
    else:
        pred, log_pred, have = known
        miss = ~have
        if miss.any():
            pred[miss], log_pred[miss] = _predict(forward, f[miss])
    held = _rowsum(held_out * log_pred) if held_out is not None else None
    np.multiply(counts, log_pred, out=log_pred)
    loglik = _rowsum(log_pred)
    np.divide(counts, pred, out=pred)
    g = adjoint(pred)
    g *= f
    g /= _per_trial(n, g.ndim)
    np.maximum(g, 0.0, out=g)
    if smoothing:
        g = _smooth_stack(g)
    g /= _per_trial(_rowsum(g), g.ndim)
    return g, loglik, held


def _squarem_batch(counts: np.ndarray, forward, adjoint, f: np.ndarray, smoothing: bool, threshold: np.ndarray,
                   max_evaluations: int, held_out: np.ndarray | None = None,
                   steps: np.ndarray | None = None, best_f: np.ndarray | None = None) -> tuple[np.ndarray, list[dict]]:
    """EM from ``f`` for T problems at once (leading axis): PLAIN_WARMUP single EM/EMS steps, then SQUAREM
    cycles (S3, Varadhan & Roland 2008); on a large output domain (:data:`LARGE_EM_CELLS`) LARGE_PLAIN_WARMUP,
    with steps bounded by LARGE_SQUAREM_STEP_SHARE.

    A *step* is one plain iteration or one cycle. Trial t stops after ``steps[t]`` steps, when a step changes
    its log-likelihood by less than ``threshold[t]``, after ``max_evaluations`` EM evaluations, or (with
    ``held_out``) once its evaluations exceed PATIENCE_SHARE x those at its best held-out step + PATIENCE_EXTRA
    (the plain rule's patience; on a large domain its plain-EM-equivalent progress, in the same way). Every
    active trial is at the same step, so one pass of the forward and adjoint maps serves
    them all; a trial that stops is frozen and drops out of the stack. Each decision uses that trial's numbers
    only, so a trial takes the same steps and stops where it would alone. ``best_f`` (with ``held_out``): filled
    with each trial's map at its best held-out step (the start where no step beat it)."""
    T = counts.shape[0]
    nd = f.ndim
    large = counts[0].size >= LARGE_EM_CELLS
    warmup = LARGE_PLAIN_WARMUP if large else PLAIN_WARMUP
    share = LARGE_SQUAREM_STEP_SHARE if large else SQUAREM_STEP_SHARE
    n_all = _rowsum(counts)
    f = f.copy()
    old = np.full(T, -np.inf)
    loglik = np.full(T, -np.inf)
    converged = np.zeros(T, bool)
    best = np.full(T, -np.inf)
    best_step = np.zeros(T, np.int64)
    best_at = np.zeros(T)         # where the best held-out step was: evaluations before it, or (large) progress
    progress = np.zeros(T)
    done_evaluations = np.zeros(T, np.int64)
    done_steps = np.zeros(T, np.int64)
    active = np.arange(T)
    c, nn, h, fa = counts, n_all, held_out, f
    evaluations, step = 0, 0
    known = None                  # the forward map of fa where a SQUAREM jump computed it (accepted jumps)
    while active.size:
        check_time()
        x1, ll, held = _step_batch(c, nn, forward, adjoint, fa, smoothing, h, known)
        known = None
        loglik[active] = ll
        evaluations += 1
        stop = np.zeros(active.size, bool)
        if held is not None:
            better = held > best[active]
            improved = active[better]
            at = progress[active] if large else np.full(active.size, evaluations - 1.0)
            best[improved], best_step[improved], best_at[improved] = held[better], step, at[better]
            if best_f is not None:
                best_f[improved] = fa[better]
            stop = ~better & (at > PATIENCE_SHARE * best_at[active] + PATIENCE_EXTRA)
        conv = ~stop & (np.abs(ll - old[active]) < threshold[active])
        converged[active[conv]] = True
        stop |= conv
        if steps is not None:
            stop |= step >= steps[active]
        if evaluations + 3 > max_evaluations:
            stop[:] = True
        if stop.any():
            done = active[stop]
            done_evaluations[done], done_steps[done] = evaluations, step
            f[done] = fa[stop]
            keep = ~stop
            active, x1, ll, fa, c, nn = active[keep], x1[keep], ll[keep], fa[keep], c[keep], nn[keep]
            h = h[keep] if h is not None else None
            if not active.size:
                break
        old[active] = ll
        step += 1
        if step <= warmup:
            fa = x1
            progress[active] += 1.0
            continue
        x2, loglik1, _ = _step_batch(c, nn, forward, adjoint, x1, smoothing)
        r = x1 - fa
        v = x2 - 2.0 * x1 + fa
        vv = _rowsum(v * v)
        rr = _rowsum(r * r)
        alpha = np.full(active.size, -1.0)
        pos = vv > 0
        alpha[pos] = np.minimum(-np.sqrt(rr[pos] / vv[pos]), -1.0)
        alpha = np.maximum(alpha, -np.maximum(1.0, share * progress[active]))
        a = _per_trial(alpha, nd)
        jump = np.maximum(fa - 2.0 * a * r + a * a * v, 0.0)
        jump /= _per_trial(_rowsum(jump), nd)
        evaluations += 2
        pred_jump, log_jump = _predict(forward, jump)
        accepted = _rowsum(c * log_jump) >= loglik1
        fa = np.where(_per_trial(accepted, nd), jump, x2)
        known = (pred_jump, log_jump, accepted)       # the next step's forward map of an accepted jump
        progress[active] += np.where(accepted, -2.0 * alpha, 2.0)
    infos = [{"iterations": int(done_evaluations[t]), "steps": int(done_steps[t]), "converged": bool(converged[t]),
              "loglik": float(loglik[t]), "best_iteration": int(best_step[t])} for t in range(T)]
    return f, infos


def _accelerated_batch(counts: np.ndarray, forward, adjoint, f: np.ndarray, smoothing: bool, rule: str,
                       max_iterations: int, one_report_each: bool = True) -> tuple[np.ndarray, list[dict]]:
    """The "converged" and "holdout" rules over SQUAREM cycles for a stack of problems (the held-out split of
    each trial drawn alone, with the fixed HOLDOUT_SEED: post-processing of that trial's reports only)."""
    T = counts.shape[0]
    n = _rowsum(counts)
    if rule == "converged":
        return _squarem_batch(counts, forward, adjoint, f, smoothing, EM_TOLERANCE * n, max_iterations)
    whole = np.rint(counts).astype(np.int64)
    train = np.stack([np.random.default_rng(HOLDOUT_SEED).binomial(w, 1.0 - HOLDOUT_FRACTION) for w in whole]
                     ).astype(float)
    held_out = whole - train
    split = (_rowsum(train) > 0) & (_rowsum(held_out) > 0)
    infos: list[dict] = [{} for _ in range(T)]
    f = f.copy()
    fit = np.flatnonzero(split)
    if fit.size:
        start, best_f = f[fit].copy(), f[fit].copy()
        _, trials = _squarem_batch(train[fit], forward, adjoint, f[fit], smoothing,
                                   EM_TOLERANCE * _rowsum(train[fit]), max_iterations, held_out[fit], best_f=best_f)
        tests = start_map_tests(forward, start, best_f, held_out[fit], [t["best_iteration"] for t in trials],
                                counts[fit] if one_report_each else None)
        chosen = np.array([max(t["best_iteration"], 1) for t in trials])
        f_fit, final = _squarem_batch(counts[fit], forward, adjoint, f[fit], smoothing, np.zeros(fit.size),
                                      max_iterations, steps=chosen)
        f[fit] = f_fit
        for k, t in enumerate(fit):
            # "converged": the rule, not the iteration cap, ended the search for t*.
            final[k]["converged"] = bool(trials[k]["converged"] or trials[k]["iterations"] + 3 <= max_iterations)
            final[k]["start_map"] = tests[k]
            infos[t] = final[k]
    rest = np.flatnonzero(~split)                  # too few reports to split: converge
    if rest.size:
        f_rest, conv = _squarem_batch(counts[rest], forward, adjoint, f[rest], smoothing,
                                      EM_TOLERANCE * n[rest], max_iterations)
        f[rest] = f_rest
        for k, t in enumerate(rest):
            infos[t] = conv[k]
    return f, infos


def expectation_maximisation_batch(counts: np.ndarray, forward, adjoint, input_shape: tuple[int, ...],
                                   smoothing: bool = True, rule: str | None = None,
                                   max_iterations: int = MAX_EM_ITERATIONS,
                                   one_report_each: bool = True) -> tuple[np.ndarray, list[dict]]:
    """:func:`expectation_maximisation` for a stack of T report-count arrays (leading axis), in one pass.

    ``forward`` and ``adjoint`` must map stacks to new stacks (leading axis kept; EM works on the arrays they
    return in place): FFT convolutions over the last
    two axes (:class:`ldpviz.mechanisms.dam.kernels.DiskChannel`,
    :class:`ldpviz.mechanisms.dam.kernels.ClampedChannel`) or one matrix-matrix product (``F @ M.T``). Each
    trial takes exactly the steps, the held-out split, the stopping decision and the step count it takes
    alone, and the one-trial estimator runs this same code on a stack of one, so trial t's estimate equals
    ``expectation_maximisation(counts[t], ...)`` up to floating-point round-off of the batched maps (none for
    the FFT channels; tests/experiment/test_trials.py). Accelerated rules ("holdout", "converged") run batched; the
    plain or "legacy" rules fall back to one call per trial. Returns (stack of estimates, infos).
    """
    rule = rule or _RULE["rule"]
    counts = np.asarray(counts, dtype=float)
    if rule not in EM_RULES:
        raise ValueError(f"unknown EM stopping rule {rule!r}; use one of {', '.join(EM_RULES)}")
    T = counts.shape[0]
    if rule == "legacy" or not _RULE["accelerate"] or np.any(_rowsum(counts) <= 0):
        out = [expectation_maximisation(c, lambda f: forward(f[None])[0], lambda r: adjoint(r[None])[0],
                                        input_shape, smoothing=smoothing, rule=rule, max_iterations=max_iterations,
                                        one_report_each=one_report_each)
               for c in counts]
        return np.stack([o[0] for o in out]), [o[1] for o in out]
    work_cap = max(MIN_EM_ITERATIONS, int(EM_WORK_BUDGET // max(counts[0].size, 1)))
    capped_by_work = work_cap < max_iterations
    max_iterations = min(max_iterations, work_cap)
    f = np.full((T, *input_shape), 1.0 / int(np.prod(input_shape)))
    f, infos = _accelerated_batch(counts, forward, adjoint, f, smoothing, rule, max_iterations, one_report_each)
    for info in infos:
        info.pop("best_iteration", None)
        info["stopping"] = rule
        info["acceleration"] = "SQUAREM"
        if capped_by_work:
            info["iteration cap"] = f"{max_iterations} (work cap: {counts[0].size:,} output cells)"
    return f, infos


def matrix_maps(matrix: np.ndarray, input_shape: tuple[int, ...]):
    """Stacked forward and adjoint maps of an explicit channel ``matrix`` (P[y, x], inputs flattened), for
    :func:`expectation_maximisation_batch`: one ``matmul`` call per map for the whole stack.

    The call is a stack of matrix-vector products (``(T, 1, n) @ (n, m)``), not one matrix-matrix product:
    each trial's product is then the same bits whatever the stack's width (a BLAS gemm's round-off depends
    on the width, which flipped held-out stopping decisions on flat likelihood plateaus), and on the shared
    2-core machine it measured faster (10 x 256 by 256 x 600: 0.7 ms against 19 ms for the threaded gemm)."""
    M = np.asarray(matrix, dtype=float)
    shape = tuple(input_shape)

    def forward(f: np.ndarray) -> np.ndarray:
        return np.matmul(f.reshape(f.shape[0], 1, -1), M.T)[:, 0, :]

    def adjoint(r: np.ndarray) -> np.ndarray:
        return np.matmul(r.reshape(r.shape[0], 1, -1), M)[:, 0, :].reshape((r.shape[0],) + shape)

    return forward, adjoint
