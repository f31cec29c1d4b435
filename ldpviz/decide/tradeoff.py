"""The privacy-accuracy trade-off as decisions: the frontier, the smallest epsilon for a target, users needed.

* :func:`frontier`: per mechanism and epsilon (and optionally number of users), the
  accuracy (mean metric with a 95% CI over trials) against the attacker's error
  (:mod:`ldpviz.decide.attacker`, population prior) -- one curve per mechanism, one point per
  epsilon.
* :func:`target_epsilon` (goal seek, as DP Wizard's users asked for): the smallest
  epsilon at which the metric meets a target *with 95% confidence* -- the t-interval's
  upper end over the trials is at most the target, not merely the mean -- within
  [0.001, 50] (stated with every answer). It brackets on a cheap estimate (one trial per
  epsilon), then decides near the answer with ``trials`` trials, adding trials only where
  they can decide (:class:`_Decider`, capped at :data:`MAX_TRIALS_NEAR`), and says how many
  it ran. An answer beyond meaningful privacy carries a warning (:func:`ldpviz.decide.privacy_scale.weak_privacy_warning`).
* :func:`users_needed`: the smallest number of users meeting the target with the same
  confidence at a given epsilon, by bisection on log n within the data set.

Every evaluation is the same computation as :func:`ldpviz.experiment.run` (same users,
same per-trial random streams ``default_rng([seed, trial])``), scoring only the chosen
metric. Because every epsilon reuses the trials' random streams (common random
numbers), the metric is a smooth, in practice monotone function of epsilon and the
search converges. Where it is not monotone (DAM's disk radius, and so its channel,
changes with epsilon), the answer is an epsilon that meets the target with one
``rtol`` below it that does not -- a crossing, not necessarily the smallest.
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
from ldpviz.mechanisms.base import EPSILON_MAX, EPSILON_MIN, GEO_I_UNIT
from ldpviz.decide.privacy_scale import weak_privacy_warning

#: Metrics the goal seek accepts (lower is better for all of them).
TARGET_METRICS = ("w2_m", "aqe", "kl", "l1")
#: Relative precision of the epsilon found (the bracket's hi / lo at the end).
EPS_RTOL = 0.05
#: Default trials per evaluation: enough for a t interval.
DEFAULT_TRIALS = 5
#: Most trials the goal seek runs at one setting to decide it (the stated cap; at least the trials asked for).
MAX_TRIALS_NEAR = 10
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
        self._trials: dict[tuple[float, int | None], np.ndarray] = {}
        self.evaluations = 0
        #: trials run so far (over every setting)
        self.runs = 0

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
        """The metric of trials 0 .. trials-1 (default ``base.trials``) at this setting; trials already run
        here are reused (trial t always draws from ``default_rng([seed, t])``, as experiment.run)."""
        want = int(trials or self.base.trials)
        key = (float(epsilon), n_users)
        have = self._trials.get(key, np.empty(0))
        if len(have) < want:
            grid, users, true_density = self.users(n_users)
            mech = self.mechanism(epsilon, n_users)
            more = []
            for trial in range(len(have), want):
                rng = np.random.default_rng([self.base.seed, trial])
                est = mech.estimate(mech.collect(users, rng)) if mech.has_client else mech.run(users, rng)
                more.append(_score(self.metric, grid, true_density, users, est, self.queries))
            self.runs += len(more)
            have = np.concatenate([have, np.asarray(more, dtype=float)])
            self._trials[key] = have
            self.evaluations += 1
        return have[:want]


def _attacker_fields(ev: Evaluator, epsilon: float, n_users: int | None, r_m: float | None) -> dict[str, Any]:
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
            "attacker_error_se_m": a.best_guess_error_se_m, "attacker_method": a.method, "attacker_note": "",
            "attacker_r_m": a.r_m, "attacker_r_note": a.r_note}


def _set_attacker(result: "GoalResult", fields: dict[str, Any]) -> None:
    for key, value in fields.items():
        setattr(result, key, value)


def frontier(base: Scenario, mechanism_names: Iterable[str], epsilons: Iterable[float], *, metric: str = "w2_m",
             n_users: Iterable[int | None] = (None,), r_m: float | None = None, attacker: bool = True,
             dataset: datasets.Dataset | None = None,
             progress: Callable[[int, int], None] | None = None) -> pd.DataFrame:
    """One row per (mechanism, number of users, epsilon): the metric's mean and 95% CI over
    ``base.trials`` trials and the population-prior attacker's expected error (metres) and
    probability of a guess within ``r_m`` of the person (default 1% of the region's side; None, with
    ``attacker_note``, when not computable).
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
    """The answer of a goal seek for one mechanism (epsilon or users), with its evidence.

    ``reached`` means reached *with 95% confidence*: the CI's upper end (lower end for a
    higher-is-better metric) meets the target at ``trials`` trials. ``runs`` counts every trial
    the search ran; ``search_range`` says what was searched; ``warning`` is set when the answer
    gives practically no privacy (:func:`ldpviz.decide.privacy_scale.weak_privacy_warning`).
    """

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
    #: "at_most" (lower is better: the CI's upper end must meet it) or "at_least" (its lower end)
    sense: str = "at_most"
    confidence: float = 0.95
    #: trials run over the whole search (every setting tried)
    runs: int = 0
    #: e.g. "epsilon 0.001 to 50" or "10 to 51,920 users"
    search_range: str = ""
    #: set when the answer is beyond meaningful privacy
    warning: str = ""
    #: the attacker's r (metres) and where it comes from
    attacker_r_m: float | None = None
    attacker_r_note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _lower_is_better(metric: str) -> bool:
    return bool(metrics.METRIC_INFO[metric]["lower_is_better"])


class _Decider:
    """Whether a setting meets the target with 95% confidence, adding trials only where they can decide it.

    Starts from ``first`` trials. If the interval straddles the target and the mean is on the
    target's side, it predicts the trials that would shrink the half-width to the mean's distance
    from the target (half-width ~ 1 / sqrt(trials)) and runs them (x1.2, at least one more) up to
    ``cap``; a mean on the wrong side, or a prediction beyond the cap, is "not met" at once.
    """

    def __init__(self, values: Callable[[Any, int], np.ndarray], target: float, lower_better: bool,
                 first: int, cap: int) -> None:
        self.values, self.target, self.lower_better = values, float(target), lower_better
        self.first, self.cap = int(first), int(cap)
        self.seen: dict[Any, tuple[bool, float, float, float, int]] = {}

    def __call__(self, x: Any) -> tuple[bool, float, float, float, int]:
        """(met, mean, low, high, trials) at setting ``x``."""
        if x in self.seen:
            return self.seen[x]
        trials = self.first
        while True:
            mean, lo, hi = mean_ci(self.values(x, trials))
            edge, margin = (hi, self.target - mean) if self.lower_better else (lo, mean - self.target)
            met = edge <= self.target if self.lower_better else edge >= self.target
            if met or margin <= 0 or trials >= self.cap:
                break
            half = abs(edge - mean)
            needed = math.ceil(trials * (half / margin) ** 2 * 1.2)
            if needed > self.cap:
                break
            trials = max(trials + 1, needed)
        self.seen[x] = (bool(met), mean, lo, hi, trials)
        return self.seen[x]

    def edge(self, x: Any) -> float:
        """The CI's end that must meet the target (upper for lower-is-better), for the search's interpolation."""
        met, mean, lo, hi, _ = self(x)
        return hi if self.lower_better else lo


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


def _seek_log(value: Callable[[float], float], ok: Callable[[float], bool], target: float, lo_lim: float,
              hi_lim: float, rtol: float, start: float = 1.0, slope: float | None = None
              ) -> tuple[str, float | None, list[float]]:
    """Smallest x in [lo_lim, hi_lim] (within ``rtol``) with ok(x), for ok monotone in x ("met from some x on").

    Works on log x against log value(x) (the metrics fall roughly like a power of epsilon):
    from ``start`` it steps up or down (by the log-log ``slope`` when given, else by 2), then
    extrapolates or interpolates the last two points on a log-log line to the target, with
    safeguards -- steps at most x8, stays at least 10% of a bracket away from its ends, and
    probes the point ``rtol`` beyond a guess that lands close to a bracket end, so a good guess
    closes the bracket in one or two evaluations. Returns (status, x, log-log points' slope
    samples): ("found", x) with x met and x / (1 + rtol) not; ("below", lo_lim) when even
    ``lo_lim`` is met; ("unreachable", None) when ``hi_lim`` is not.
    """
    step = math.log1p(rtol)
    lo_end, hi_end = math.log(lo_lim), math.log(hi_lim)
    seen: dict[float, tuple[bool, float]] = {}

    def f(u: float) -> None:
        u = min(max(u, lo_end), hi_end)
        if u not in seen:
            x = math.exp(u)
            seen[u] = (ok(x), value(x))

    def log_gap(v: float) -> float:
        return math.log(max(v, 1e-300)) - math.log(target)

    def line(u1: float, u2: float) -> float:          # where the log-log line through two points hits the target
        g1, g2 = log_gap(seen[u1][1]), log_gap(seen[u2][1])
        return u1 + (u2 - u1) * g1 / (g1 - g2) if g1 != g2 and math.isfinite(g1 - g2) else math.nan

    def jump(u: float, sign: float) -> float:         # from u towards the target along the slope hint, else x2
        if slope and slope < 0 and math.isfinite(slope):
            return u + log_gap(seen[u][1]) / -slope
        return u + sign * math.log(2.0)

    f(min(max(math.log(start), lo_end), hi_end))
    for _ in range(60):
        ok_u = sorted(u for u, (m, _) in seen.items() if m)
        bad_u = sorted(u for u, (m, _) in seen.items() if not m)
        if not ok_u:                                     # extrapolate up from the largest that failed
            a = bad_u[-1]
            if a >= hi_end - 1e-12:
                return "unreachable", None, []
            near = len(bad_u) >= 2 and bad_u[-1] - bad_u[-2] <= math.log(8.0) + 1e-12
            guess = line(bad_u[-2], bad_u[-1]) if near else math.nan
            if not math.isfinite(guess) or guess <= a:
                guess = jump(a, +1)
            guess = min(max(min(guess, a + math.log(8.0)), a + step), hi_end)
            f(guess)
            continue
        b = ok_u[0]
        below = [u for u in bad_u if u < b]
        if not below:                                    # extrapolate down from the two smallest that met it
            if b <= lo_end + 1e-12:
                return "below", lo_lim, []
            near = len(ok_u) >= 2 and ok_u[1] - ok_u[0] <= math.log(8.0) + 1e-12   # a far point fits badly
            guess = line(ok_u[0], ok_u[1]) if near else math.nan
            if not math.isfinite(guess) or guess >= b:
                guess = jump(b, -1) if slope else b - math.log(2.0)
                guess = min(guess, b - step)
            guess = max(min(max(guess, b - math.log(8.0)), b - step), lo_end)
        else:
            a = max(below)
            width = b - a
            if width <= step + 1e-12:
                return "found", math.exp(b), []
            guess = line(a, b)
            if not math.isfinite(guess):
                guess = a + width / 2
            guess = min(max(guess, a + 0.1 * width), b - 0.1 * width)
            if b - guess < 2 * step:                      # close to the end that met it: test just below
                guess = b - step
            elif guess - a < 2 * step:                    # close to the failing end: test just above
                guess = a + step
        f(guess)
    ok_u = sorted(u for u, (m, _) in seen.items() if m)
    return ("found", math.exp(ok_u[0]), []) if ok_u else ("unreachable", None, [])


def _local_slope(points: dict[float, float], around: float | None) -> float | None:
    """The median log-log slope between neighbouring cheap (one-trial) points within a factor 4 of ``around``
    (all points when None; the median resists one jittery point); None when fewer than two or not falling
    (then the search steps by x2)."""
    pts = [(math.log(e), math.log(v)) for e, v in points.items()
           if v > 0 and (around is None or 0.25 <= e / around <= 4.0)]
    if len({x for x, _ in pts}) < 2:
        return None
    pts.sort()
    pair = [(y2 - y1) / (x2 - x1) for (x1, y1), (x2, y2) in zip(pts, pts[1:]) if x2 > x1]
    slope = float(np.median(pair))
    return slope if math.isfinite(slope) and slope < 0 else None


def _range_text(lo: float, hi: float, model: str) -> str:
    unit = f" per {GEO_I_UNIT}" if model == mechanisms.GEO_I else ""
    return f"epsilon {lo:g} to {hi:g}{unit}"


def _checked_goal(metric: str, at_most: float, base: Scenario, max_trials: int | None) -> int:
    """Validate a goal seek's target (one place for both searches); returns the trial cap near the answer."""
    require(metric in TARGET_METRICS, f"--metric must be one of {', '.join(TARGET_METRICS)}, got {metric!r}")
    require(math.isfinite(at_most) and at_most > 0, f"--at-most must be a number > 0, got {at_most!r}")
    require(base.trials >= 2, f"trials must be at least 2 for a confidence interval, got {base.trials}")
    return max(base.trials, MAX_TRIALS_NEAR if max_trials is None else int(max_trials))


def target_epsilon(base: Scenario, metric: str, at_most: float, *, n_users: int | None = None,
                   eps_range: tuple[float, float] = (EPSILON_MIN, EPSILON_MAX), rtol: float = EPS_RTOL,
                   r_m: float | None = None, attacker: bool = True, max_trials: int | None = None,
                   dataset: datasets.Dataset | None = None) -> GoalResult:
    """The smallest epsilon (within ``rtol``) at which ``metric`` meets ``at_most`` with 95% confidence.

    "Meets" means the t-interval's upper end over the trials is at most the target (lower end at
    least the target for a higher-is-better metric): the mean alone is not enough. Two phases:

    1. *bracket on a cheap estimate*: :func:`_seek_log` on trial 0 alone (one run per epsilon,
       common random numbers), from ``base.epsilon``; it finds where one trial crosses the target;
    2. *confidence near the answer*: :func:`_seek_log` again from there, each epsilon decided by
       :class:`_Decider` (``base.trials`` trials, more only where they can decide, at most
       ``max_trials``, default the larger of ``base.trials`` and :data:`MAX_TRIALS_NEAR`), stepping by
       the log-log slope of phase 1.

    The answer is met with confidence, and one ``rtol`` below it is not. ``runs`` counts every trial
    run; ``search_range`` states the epsilons searched; ``warning`` flags an answer beyond
    meaningful privacy (:func:`ldpviz.decide.privacy_scale.weak_privacy_warning`). A mechanism that cannot meet the target with
    confidence at ``eps_range[1]`` says so (``reached`` False).
    """
    max_trials = _checked_goal(metric, at_most, base, max_trials)
    t0 = time.perf_counter()
    ev = Evaluator(base, metric, dataset)
    model = mechanisms.get(base.mechanism).privacy_model
    lower_better = _lower_is_better(metric)
    lo_lim, hi_lim = eps_range
    sign = 1.0 if lower_better else -1.0

    def one_trial(eps: float) -> float:
        return float(ev.values(eps, n_users, 1)[0])

    cheap = {}

    def cheap_value(eps: float) -> float:
        cheap[eps] = one_trial(eps)
        return cheap[eps]

    start = min(max(float(base.epsilon), lo_lim), hi_lim)
    status, eps_a, _ = _seek_log(cheap_value, lambda e: sign * one_trial(e) <= sign * at_most, at_most, lo_lim,
                                 hi_lim, rtol, start=start)
    decide = _Decider(lambda e, t: ev.values(e, n_users, t), at_most, lower_better, base.trials, max_trials)
    near = hi_lim if status == "unreachable" else eps_a
    slope = _local_slope(cheap, near)
    status, eps, _ = _seek_log(decide.edge, lambda e: decide(e)[0], at_most, lo_lim, hi_lim, rtol, start=near,
                               slope=slope)
    common = dict(mechanism=base.mechanism, privacy_model=model, metric=metric, target=float(at_most),
                  sense="at_most" if lower_better else "at_least", search_range=_range_text(lo_lim, hi_lim, model))
    n_found = len(ev.users(n_users)[1].cells)
    if status == "unreachable":
        _, mean, lo, hi, trials = decide(hi_lim)
        bound = "upper" if lower_better else "lower"
        return GoalResult(**common, reached=False, epsilon=None, n_users=n_found, mean=mean, ci_low=lo, ci_high=hi,
                          trials=trials, evaluations=ev.evaluations, runs=ev.runs, seconds=time.perf_counter() - t0,
                          message=f"not reached with 95% confidence for epsilon up to {hi_lim:g}: at {hi_lim:g} "
                                  f"{metric} = {mean:.4g} (95% CI {lo:.4g} to {hi:.4g}, {trials} trials; its {bound} "
                                  f"end must meet {at_most:g})")
    _, mean, lo, hi, trials = decide(eps)
    result = GoalResult(**common, reached=True, epsilon=float(eps), n_users=n_found, mean=mean, ci_low=lo,
                        ci_high=hi, trials=trials, evaluations=0, seconds=0.0,
                        message=("already met at the smallest epsilon searched" if status == "below" else ""),
                        warning=weak_privacy_warning(ev.mechanism(eps, n_users)) or "")
    if attacker:
        _set_attacker(result, _attacker_fields(ev, eps, n_users, r_m))
    result.evaluations, result.runs = ev.evaluations, ev.runs
    result.seconds = time.perf_counter() - t0
    return result


def users_needed(base: Scenario, metric: str, at_most: float, *, r_m: float | None = None, attacker: bool = True,
                 max_trials: int | None = None, dataset: datasets.Dataset | None = None) -> GoalResult:
    """The smallest number of users (within the data set) at which ``metric`` at ``base.epsilon`` meets
    ``at_most`` with 95% confidence (the CI's upper end, as :func:`target_epsilon`; trials added near
    the answer by :class:`_Decider`, at most ``max_trials`` as there).

    Users are seeded subsamples of the region's users (as ``Scenario.n_users``); the search
    bisects on log n between 10 and everyone in the region, to within 5% or one user. If
    even everyone is not enough the answer says so: simulating more users than the data
    holds would invent data.
    """
    max_trials = _checked_goal(metric, at_most, base, max_trials)
    t0 = time.perf_counter()
    ev = Evaluator(base, metric, dataset)
    model = mechanisms.get(base.mechanism).privacy_model
    everyone = len(ev.users(None)[1].cells)
    decide = _Decider(lambda n, t: ev.values(base.epsilon, None if n >= everyone else n, t), at_most,
                      _lower_is_better(metric), base.trials, max_trials)

    def ok(n: float) -> bool:
        return decide(int(n))[0]

    low = min(MIN_USERS, everyone)
    common = dict(mechanism=base.mechanism, privacy_model=model, metric=metric, target=float(at_most),
                  epsilon=float(base.epsilon), sense="at_most" if _lower_is_better(metric) else "at_least",
                  search_range=f"{low:,} to {everyone:,} users (everyone in the region)",
                  warning=weak_privacy_warning(ev.mechanism(base.epsilon)) or "")
    if not ok(everyone):
        _, mean, lo, hi, trials = decide(everyone)
        return GoalResult(**common, reached=False, n_users=None, mean=mean, ci_low=lo, ci_high=hi, trials=trials,
                          evaluations=ev.evaluations, runs=ev.runs, seconds=time.perf_counter() - t0,
                          message=f"all {everyone:,} users in the region give {metric} = {mean:.4g} (95% CI "
                                  f"{lo:.4g} to {hi:.4g}, {trials} trials), not {at_most:g} with 95% confidence, at "
                                  f"epsilon = {base.epsilon:g}; more users than the data holds would be needed")
    if low < everyone and not ok(low):
        n = int(_bisect_log(float(low), float(everyone), ok, EPS_RTOL, integer=True))
    else:
        n = low
    _, mean, lo, hi, trials = decide(n)
    result = GoalResult(**common, reached=True, n_users=n, mean=mean, ci_low=lo, ci_high=hi, trials=trials,
                        evaluations=0, seconds=0.0)
    if attacker:
        _set_attacker(result, _attacker_fields(ev, base.epsilon, None, r_m))
    result.evaluations, result.runs = ev.evaluations, ev.runs
    result.seconds = time.perf_counter() - t0
    return result
