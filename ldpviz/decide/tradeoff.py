"""The privacy-accuracy trade-off as decisions: the frontier, the smallest epsilon for a target, users needed.

* :func:`frontier`: per mechanism and epsilon (and optionally number of users), the
  accuracy (mean metric with a 95% CI over trials) against the attacker's error
  (:mod:`ldpviz.decide.attacker`, population prior) -- one curve per mechanism, one point per
  epsilon.
* :func:`target_epsilon` (goal seek, as DP Wizard's users asked for): the smallest
  epsilon whose mean metric over the trials is at most a target, by a safeguarded
  secant/bisection on log epsilon within [0.001, 50].
* :func:`users_needed`: the smallest number of users whose mean metric at a given
  epsilon is at most the target, by bisection on log n within the data set.

Every evaluation is the same computation as :func:`ldpviz.experiment.run` (same users,
same per-trial random streams ``default_rng([seed, trial])``), scoring only the chosen
metric. Because every epsilon reuses the trials' random streams (common random
numbers), the mean metric is a smooth, in practice monotone function of epsilon and
the search converges. Where it is not monotone (DAM's disk radius, and so its channel,
changes with epsilon, so its mean W2 jitters by about the CI's width), the answer is an
epsilon that meets the target with one ``rtol`` below it that does not -- a crossing,
not necessarily the smallest; the reported CI says how sure it is.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterable

import numpy as np
import pandas as pd

from ldpviz.data import datasets
from ldpviz import mechanisms, metrics
from ldpviz.decide.attacker import POPULATION, attack, availability
from ldpviz.geo.domain import Binned, Grid
from ldpviz.errors import LdpvizInputError, require
from ldpviz.experiment import Scenario, mean_ci, prepare_users
from ldpviz.mechanisms.base import EPSILON_MAX, EPSILON_MIN

#: Metrics the goal seek accepts (lower is better for all of them).
TARGET_METRICS = ("w2_m", "aqe", "kl", "l1")
#: Relative precision of the epsilon found (the bracket's hi / lo at the end).
EPS_RTOL = 0.05
#: Default trials per evaluation: enough for a t interval.
DEFAULT_TRIALS = 5
MIN_USERS = 10


def _score(metric: str, grid: Grid, true_density: np.ndarray, users: Binned, estimate: Any,
           queries: np.ndarray) -> float:
    """One metric exactly as :func:`ldpviz.metrics.evaluate` computes it."""
    if metric in ("w2_m", "w2_cells"):
        value = metrics.w2(true_density, estimate.density)
        return value * grid.cell_m if metric == "w2_m" else value
    if metric == "aqe":
        return metrics.aqe(users.unit, estimate.partition, n_users=len(users.cells), queries=queries)
    if metric == "kl":   # on smoothed maps, as evaluate does
        return float(metrics.kl(true_density, estimate.density, sigma=metrics.kl_sigma(grid.side)))
    if metric in ("l1", "mse", "pearson", "similarity"):
        return float(getattr(metrics, metric)(true_density, estimate.density))
    if metric == "sliced_w2_m":
        return metrics.sliced_w2(true_density, estimate.density, cell_m=grid.cell_m)
    if metric == "emd_l1_m":
        return metrics.emd_l1(true_density, estimate.density, cell_m=grid.cell_m)
    raise LdpvizInputError(f"unknown metric {metric!r}; choose one of {', '.join(metrics.METRIC_INFO)}")


class Evaluator:
    """Per-trial values of one metric for a base scenario at any epsilon / number of users.

    Loads the data once and caches the binned users per number of users; the values equal
    ``experiment.run(scenario).metrics[metric]`` for the same scenario.
    """

    def __init__(self, base: Scenario, metric: str, dataset: datasets.Dataset | None = None) -> None:
        require(metric in metrics.METRIC_INFO, f"unknown metric {metric!r}; choose one of "
                                               f"{', '.join(metrics.METRIC_INFO)}")
        self.base, self.metric = base, metric
        self.dataset = dataset if dataset is not None else datasets.load(base.dataset)
        self.queries = metrics.random_queries(base.query_rho, seed=base.seed)
        self._users: dict[int | None, tuple[Grid, Binned, np.ndarray]] = {}
        self.evaluations = 0

    def users(self, n_users: int | None) -> tuple[Grid, Binned, np.ndarray]:
        if n_users not in self._users:
            grid, users, _ = prepare_users(self.base.with_(n_users=n_users), self.dataset)
            self._users[n_users] = (grid, users, grid.histogram(users.cells) / len(users.cells))
        return self._users[n_users]

    def population(self) -> np.ndarray:
        """Density of every user in the region (the attacker's census stand-in), independent of sampling."""
        return self.users(None)[2]

    def mechanism(self, epsilon: float, n_users: int | None = None) -> mechanisms.Mechanism:
        grid = self.users(n_users)[0]
        return mechanisms.create(self.base.mechanism, grid, epsilon, **self.base.param_dict)

    def values(self, epsilon: float, n_users: int | None = None, trials: int | None = None) -> np.ndarray:
        grid, users, true_density = self.users(n_users)
        mech = self.mechanism(epsilon, n_users)
        out = []
        for trial in range(trials or self.base.trials):
            rng = np.random.default_rng([self.base.seed, trial])
            est = mech.estimate(mech.collect(users, rng)) if mech.has_client else mech.run(users, rng)  # as experiment.run
            out.append(_score(self.metric, grid, true_density, users, est, self.queries))
        self.evaluations += 1
        return np.asarray(out, dtype=float)


def _attacker_fields(ev: Evaluator, epsilon: float, n_users: int | None, r_m: float) -> dict[str, Any]:
    mech = ev.mechanism(epsilon, n_users)
    ok, why = availability(mech)
    none = {"attacker_error_m": None, "attacker_within_r": None, "attacker_error_se_m": None,
            "attacker_method": ""}
    if not ok:
        return {**none, "attacker_note": why}
    try:
        a = attack(mech, POPULATION, population=ev.population(), r_m=r_m, n_users=len(ev.users(n_users)[1].cells))
    except LdpvizInputError as err:
        return {**none, "attacker_note": str(err)}
    return {"attacker_error_m": a.best_guess_error_m, "attacker_within_r": a.within_r,
            "attacker_error_se_m": a.best_guess_error_se_m, "attacker_method": a.method, "attacker_note": ""}


def _set_attacker(result: "GoalResult", fields: dict[str, Any]) -> None:
    for key, value in fields.items():
        setattr(result, key, value)


def frontier(base: Scenario, mechanism_names: Iterable[str], epsilons: Iterable[float], *, metric: str = "w2_m",
             n_users: Iterable[int | None] = (None,), r_m: float = 500.0, attacker: bool = True,
             dataset: datasets.Dataset | None = None,
             progress: Callable[[int, int], None] | None = None) -> pd.DataFrame:
    """One row per (mechanism, number of users, epsilon): the metric's mean and 95% CI over
    ``base.trials`` trials and the population-prior attacker's expected error (metres) and
    probability of a guess within ``r_m`` (None, with ``attacker_note``, when not computable).
    """
    names, eps_list, n_list = list(mechanism_names), [float(e) for e in epsilons], list(n_users)
    require(names and eps_list and n_list, "the frontier needs at least one mechanism, epsilon and user count")
    rows, total, done = [], len(names) * len(eps_list) * len(n_list), 0
    for name in names:
        ev = Evaluator(base.with_(mechanism=name), metric, dataset)
        model = mechanisms.get(name).privacy_model
        for n in n_list:
            for eps in eps_list:
                mean, lo, hi = mean_ci(ev.values(eps, n))
                row = {"mechanism": name, "privacy_model": model, "epsilon": eps,
                       "n_users": len(ev.users(n)[1].cells), metric: mean, f"{metric}_lo": lo, f"{metric}_hi": hi,
                       "trials": base.trials}
                if attacker:
                    row.update(_attacker_fields(ev, eps, n, r_m))
                rows.append(row)
                done += 1
                if progress:
                    progress(done, total)
    return pd.DataFrame(rows)


@dataclass
class GoalResult:
    """The answer of a goal seek for one mechanism (epsilon or users), with its evidence."""

    mechanism: str
    privacy_model: str
    metric: str
    target: float
    reached: bool
    epsilon: float | None
    n_users: int | None
    mean: float | None
    ci_low: float | None
    ci_high: float | None
    trials: int
    evaluations: int
    seconds: float
    attacker_error_m: float | None = None
    attacker_within_r: float | None = None
    attacker_note: str = ""
    message: str = ""
    #: standard error of attacker_error_m (0 when exact) and how it was computed ("exact" or "monte carlo (...)")
    attacker_error_se_m: float | None = None
    attacker_method: str = ""

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _bisect_log(lo: float, hi: float, ok: Callable[[float], bool], rtol: float, integer: bool) -> float:
    """Smallest x in [lo, hi] with ok(x), given ok(hi) and not ok(lo): bisection on log x."""
    while hi / lo > 1 + rtol and (not integer or hi - lo > 1):
        mid = math.sqrt(lo * hi)
        if integer:
            mid = float(min(max(int(round(mid)), int(lo) + 1), int(hi) - 1))
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return hi


def _seek_log(mean: Callable[[float], float], target: float, lo_lim: float, hi_lim: float, rtol: float,
              start: float = 1.0) -> float | None:
    """Smallest x in [lo_lim, hi_lim] (within ``rtol``) with mean(x) <= target, given mean(hi_lim) <= target.

    Works on log x against log mean (the metrics fall roughly like a power of epsilon):
    from ``start`` it steps by a factor 2, then extrapolates or interpolates the last
    two points on a log-log line to the target, with safeguards -- steps at most x8,
    stays at least 10% of a bracket away from its ends, and probes the point ``rtol``
    beyond a guess that lands close to a bracket end, so a good guess closes the
    bracket in one or two evaluations. Extrapolation approaches from the evaluated side,
    so for mechanisms that are slow at small epsilon (planar Laplace's wide kernel) few
    evaluations fall far below the answer. Returns the smallest x that met the target
    with one ``rtol`` below it that did not, or None when even ``lo_lim`` meets it.
    """
    step = math.log1p(rtol)
    seen: dict[float, float] = {}

    def f(u: float) -> float:                            # log x -> mean
        u = min(max(u, math.log(lo_lim)), math.log(hi_lim))
        if u not in seen:
            seen[u] = mean(math.exp(u))
        return seen[u]

    def log_gap(value: float) -> float:
        return math.log(max(value, 1e-300)) - math.log(target)

    def line(u1: float, u2: float) -> float:          # where the log-log line through two points hits the target
        g1, g2 = log_gap(seen[u1]), log_gap(seen[u2])
        return u1 + (u2 - u1) * g1 / (g1 - g2) if g1 != g2 and math.isfinite(g1 - g2) else math.nan

    lo_end = math.log(lo_lim)
    f(math.log(hi_lim))
    f(min(max(math.log(start), lo_end), math.log(hi_lim)))
    for _ in range(60):
        ok_u = sorted(v for v, m in seen.items() if m <= target)
        b = ok_u[0]
        below = [v for v, m in seen.items() if m > target and v < b]
        if not below:                                    # extrapolate down from the two smallest that met it
            if b <= lo_end + 1e-12:
                return None
            near = len(ok_u) >= 2 and ok_u[1] - ok_u[0] <= math.log(8.0) + 1e-12   # a far point fits badly
            guess = line(ok_u[0], ok_u[1]) if near else math.nan
            if not math.isfinite(guess) or guess >= b:
                guess = b - math.log(2.0)
            guess = max(min(max(guess, b - math.log(8.0)), b - step), lo_end)
        else:
            a = max(below)
            width = b - a
            if width <= step + 1e-12:
                return math.exp(b)
            guess = line(a, b)
            if not math.isfinite(guess):
                guess = a + width / 2
            guess = min(max(guess, a + 0.1 * width), b - 0.1 * width)
            if b - guess < 2 * step:                      # close to the end that met it: test just below
                guess = b - step
            elif guess - a < 2 * step:                    # close to the failing end: test just above
                guess = a + step
        f(guess)
    return math.exp(min(v for v, m in seen.items() if m <= target))


def target_epsilon(base: Scenario, metric: str, at_most: float, *, n_users: int | None = None,
                   eps_range: tuple[float, float] = (EPSILON_MIN, EPSILON_MAX), rtol: float = EPS_RTOL,
                   r_m: float = 500.0, attacker: bool = True,
                   dataset: datasets.Dataset | None = None) -> GoalResult:
    """The smallest epsilon (within ``rtol``) whose mean ``metric`` over ``base.trials`` trials is <= ``at_most``.

    The search (:func:`_seek_log`) starts at epsilon = 1 and fits log metric against log
    epsilon, with bisection-like safeguards; the answer is an epsilon that meets the
    target, less than ``rtol`` above one that does not. A mechanism that
    cannot reach the target at ``eps_range[1]`` (50) says so (``reached`` False).
    """
    require(metric in TARGET_METRICS, f"--metric must be one of {', '.join(TARGET_METRICS)}, got {metric!r}")
    require(math.isfinite(at_most) and at_most > 0, f"--at-most must be a number > 0, got {at_most!r}")
    t0 = time.perf_counter()
    ev = Evaluator(base, metric, dataset)
    model = mechanisms.get(base.mechanism).privacy_model
    cache: dict[float, np.ndarray] = {}

    def values(eps: float) -> np.ndarray:
        if eps not in cache:
            cache[eps] = ev.values(eps, n_users)
        return cache[eps]

    def gap(eps: float) -> float:
        return float(values(eps).mean()) - at_most

    def ok(eps: float) -> bool:
        return gap(eps) <= 0

    lo_lim, hi_lim = eps_range
    common = dict(mechanism=base.mechanism, privacy_model=model, metric=metric, target=float(at_most),
                  trials=base.trials)
    if not ok(hi_lim):
        mean, lo, hi = mean_ci(values(hi_lim))
        return GoalResult(**common, reached=False, epsilon=None, n_users=len(ev.users(n_users)[1].cells),
                          mean=mean, ci_low=lo, ci_high=hi, evaluations=ev.evaluations,
                          seconds=time.perf_counter() - t0,
                          message=f"cannot reach {metric} <= {at_most:g} with epsilon <= {hi_lim:g} "
                                  f"(at {hi_lim:g}: {mean:.4g})")
    found = _seek_log(lambda e: float(values(e).mean()), float(at_most), lo_lim, hi_lim, rtol)
    a = found
    eps = lo_lim if found is None else found
    mean, lo, hi = mean_ci(values(eps))
    result = GoalResult(**common, reached=True, epsilon=float(eps), n_users=len(ev.users(n_users)[1].cells),
                        mean=mean, ci_low=lo, ci_high=hi, evaluations=ev.evaluations, seconds=0.0,
                        message=("already met at the smallest epsilon" if a is None else ""))
    if attacker:
        _set_attacker(result, _attacker_fields(ev, eps, n_users, r_m))
    result.evaluations = ev.evaluations
    result.seconds = time.perf_counter() - t0
    return result


def users_needed(base: Scenario, metric: str, at_most: float, *, r_m: float = 500.0, attacker: bool = True,
                 dataset: datasets.Dataset | None = None) -> GoalResult:
    """The smallest number of users (within the data set) whose mean ``metric`` at ``base.epsilon`` is <= ``at_most``.

    Users are seeded subsamples of the region's users (as ``Scenario.n_users``); the search
    bisects on log n between 10 and everyone in the region, to within 5% or one user. If
    even everyone is not enough the answer says so: simulating more users than the data
    holds would invent data.
    """
    require(metric in TARGET_METRICS, f"--metric must be one of {', '.join(TARGET_METRICS)}, got {metric!r}")
    require(math.isfinite(at_most) and at_most > 0, f"--at-most must be a number > 0, got {at_most!r}")
    t0 = time.perf_counter()
    ev = Evaluator(base, metric, dataset)
    model = mechanisms.get(base.mechanism).privacy_model
    everyone = len(ev.users(None)[1].cells)
    cache: dict[int, np.ndarray] = {}

    def values(n: int) -> np.ndarray:
        if n not in cache:
            cache[n] = ev.values(base.epsilon, None if n >= everyone else n)
        return cache[n]

    def ok(n: float) -> bool:
        return float(values(int(n)).mean()) <= at_most

    common = dict(mechanism=base.mechanism, privacy_model=model, metric=metric, target=float(at_most),
                  trials=base.trials, epsilon=float(base.epsilon))
    if not ok(everyone):
        mean, lo, hi = mean_ci(values(everyone))
        return GoalResult(**common, reached=False, n_users=None, mean=mean, ci_low=lo, ci_high=hi,
                          evaluations=ev.evaluations, seconds=time.perf_counter() - t0,
                          message=f"all {everyone:,} users in the region give {metric} = {mean:.4g} > {at_most:g} "
                                  f"at epsilon = {base.epsilon:g}; more users than the data holds would be needed")
    low = min(MIN_USERS, everyone)
    if low < everyone and not ok(low):
        n = int(_bisect_log(float(low), float(everyone), ok, EPS_RTOL, integer=True))
    else:
        n = low
    mean, lo, hi = mean_ci(values(n))
    result = GoalResult(**common, reached=True, n_users=n, mean=mean, ci_low=lo, ci_high=hi,
                        evaluations=ev.evaluations, seconds=0.0)
    if attacker:
        _set_attacker(result, _attacker_fields(ev, base.epsilon, None, r_m))
    result.seconds = time.perf_counter() - t0
    return result
