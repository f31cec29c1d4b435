"""The privacy-accuracy trade-off as decisions: the frontier, the smallest epsilon found for a target, users needed.

* :func:`frontier`: per mechanism and epsilon (and optionally number of users), the
  accuracy (mean metric with a 95% CI over trials) against the attacker's error
  (:mod:`ldpviz.decide.attacker`, population prior) -- one curve per mechanism, one point per
  epsilon.
* :func:`target_epsilon` (goal seek, as DP Wizard's users asked for): the smallest epsilon
  *found* at which ONE collection -- the one the officer will run -- meets the target with
  probability >= 95% (configurable), with the confidence of that statement
  (:mod:`ldpviz.decide.one_collection`: a one-sided normal tolerance bound, a log-grid scan with
  common random numbers, a bisection, and the decision on fresh streams the search never used).
  "The mean meets it" is kept as a second, labelled reading. The answer is stated as "the smallest
  found on a scan of N values", never as the smallest: where the metric is not monotone (DAM's disk
  radius, and so its channel, changes with epsilon) a larger scanned epsilon that misses the target
  again is named. An answer beyond meaningful privacy carries a warning
  (:func:`ldpviz.decide.privacy_scale.weak_privacy_warning`).
* :func:`users_needed`: the fewest users found meeting the same rule at a given epsilon.
* :func:`goal_seek`: either, as the pages and ``ldpviz target`` ask it.
* :func:`seeks_side_by_side`: one goal seek per mechanism on the machine's cores, answers as they finish.

Every evaluation is the same computation as :func:`ldpviz.experiment.run` (same users,
same per-trial random streams ``default_rng([seed, trial])``), scoring only the chosen
metric; fresh collections draw from ``default_rng([seed, trial, 1])``.
"""

from __future__ import annotations

import math
import os
import threading
import time
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, as_completed, wait
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator, Sequence

import numpy as np
import pandas as pd

from ldpviz.data import datasets
from ldpviz import mechanisms, metrics
from ldpviz.decide.attacker import POPULATION, attack, availability
from ldpviz.geo.domain import Binned, Grid
from ldpviz.errors import LdpvizInputError, require
from ldpviz.experiment import Scenario, mean_ci, prepare_users
from ldpviz.mechanisms.base import EPSILON_MAX, EPSILON_MIN, GEO_I_UNIT
from ldpviz.decide import one_collection
from ldpviz.decide.privacy_scale import weak_privacy_warning
from ldpviz.mechanisms import estimation
from ldpviz.mechanisms.accounting import collection_ledger

#: Metrics the goal seek accepts (lower is better for all of them).
TARGET_METRICS = ("w2_m", "aqe", "kl", "l1")
#: Relative precision of the epsilon found (the bracket's hi / lo at the end).
EPS_RTOL = 0.05
#: Collections per decision of the goal seek (on the search's streams and on fresh ones alike).
DEFAULT_TRIALS = one_collection.DEFAULT_TRIALS
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

    Loads the data once and caches the binned users per number of users and the mechanism per setting; the
    values equal ``experiment.run(scenario).metrics[metric]`` for the same scenario. Trials asked for together
    run in one pass (:meth:`~ldpviz.mechanisms.base.Mechanism.run_trials`, bit for bit the one-at-a-time
    values; ``batch_trials = False`` runs them one at a time, the benchmark's baseline).
    """

    #: run the trials of one request in one pass (False: one after another, as before issue 28)
    batch_trials: bool = True

    def __init__(self, base: Scenario, metric: str, dataset: datasets.Dataset | None = None) -> None:
        require(metric in metrics.METRIC_INFO, f"unknown metric {metric!r}; choose one of "
                                               f"{', '.join(metrics.METRIC_INFO)}")
        self.base, self.metric = base, metric
        self.dataset = dataset if dataset is not None else datasets.load(base.dataset)
        self.queries = metrics.random_queries(base.query_rho, seed=base.seed)
        self._users: dict[int | None, tuple[Grid, Binned, np.ndarray]] = {}
        self._trials: dict[tuple[float, int | None, int], np.ndarray] = {}
        self._mechanisms: dict[tuple[float, int | None], mechanisms.Mechanism] = {}
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
        """The mechanism at this setting, built once (its setup, e.g. planar Laplace's kernel, depends only on
        the grid, epsilon and parameters; the search, the fresh decision and the attacker share it)."""
        key = (float(epsilon), n_users)
        if key not in self._mechanisms:
            grid = self.users(n_users)[0]
            self._mechanisms[key] = mechanisms.create(self.base.mechanism, grid, epsilon, **self.base.param_dict)
        return self._mechanisms[key]

    def setting(self) -> dict[str, Any] | None:
        """What the accountant reads of this mechanism (:class:`ldpviz.decide.feasibility.Setting`, as a dict), from
        any setting built so far; None when none was (every setting refused)."""
        from ldpviz.decide.feasibility import Setting
        mech = next(iter(self._mechanisms.values()), None)
        return None if mech is None else Setting.of(mech).to_dict()

    def values(self, epsilon: float, n_users: int | None = None, trials: int | None = None,
               stream: int = 0) -> np.ndarray:
        """The metric of trials 0 .. trials-1 (default ``base.trials``) at this setting; trials already run
        here are reused (trial t always draws from ``default_rng([seed, t])``, as experiment.run; ``stream``
        s > 0 draws from the independent family ``default_rng([seed, t, s])``, e.g. fresh collections that
        a search never saw)."""
        want = int(trials or self.base.trials)
        key = (float(epsilon), n_users, int(stream))
        have = self._trials.get(key, np.empty(0))
        if len(have) < want:
            estimation.check_time()          # a caller's time limit (estimation.stop_after), between collections
            grid, users, true_density = self.users(n_users)
            mech = self.mechanism(epsilon, n_users)
            rngs = [np.random.default_rng([self.base.seed, trial] + ([int(stream)] if stream else []))
                    for trial in range(len(have), want)]
            if self.batch_trials:    # one pass (a stacked EM where the mechanism has one): the same bits per trial
                estimates = mech.run_trials(users, rngs).estimates
            else:
                estimates = [mech.estimate(mech.collect(users, rng)) if mech.has_client else mech.run(users, rng)
                             for rng in rngs]
            # a collection whose EM estimate never left its uniform start answers nothing, whatever its metric:
            # it counts as a miss (issue 37.14; estimation.start_map_tests)
            miss = math.inf if _lower_is_better(self.metric) else -math.inf
            more = []
            for est in estimates:            # a W2 readout can take a second: cancellation is checked between them
                estimation.check_time()
                more.append(miss if estimation.stayed_at_start(est.info) else
                            _score(self.metric, grid, true_density, users, est, self.queries))
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
                mean, lo, hi = mean_ci(ev.values(eps, n), floor=_floor(metric))
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

    The reading is about *one collection* (:mod:`ldpviz.decide.one_collection`): ``reached`` means
    that on ``trials`` fresh collections (streams the search never used) the one-sided normal
    tolerance bound ``bound`` meets the target, i.e. with confidence ``confidence`` at least a share
    ``probability`` of single collections meet it. ``miss_chance`` estimates the chance that one
    collection misses (``miss_chance_max``: at most this, with ``confidence``); ``misses`` counts the
    fresh collections that did. ``mean``/``ci_low``/``ci_high`` are the mean's 95% t-interval over the
    same collections and ``mean_met`` the older, second reading "the mean meets it". The epsilon is
    the smallest *found* on a scan of ``scanned`` values (``scan``), refined by bisection (``refined``),
    never claimed to be the smallest; ``scan_warning`` names larger scanned values where the target
    was missed again (the metric is not monotone there). ``runs`` counts every collection simulated.
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
    #: "at_most" (lower is better) or "at_least"
    sense: str = "at_most"
    #: confidence of the statement "at least `probability` of single collections meet the target"
    confidence: float = one_collection.CONFIDENCE
    probability: float = one_collection.PROBABILITY
    reading: str = "one collection"
    rule: str = ""
    bound: float | None = None
    miss_chance: float | None = None
    miss_chance_max: float | None = None
    misses: int | None = None
    mean_met: bool | None = None
    #: where the search's own streams met the rule (before the fresh decision)
    search_answer: float | None = None
    scanned: int = 0
    scan: list[dict[str, Any]] = field(default_factory=list)
    refined: list[list[Any]] = field(default_factory=list)
    fresh_tried: list[list[Any]] = field(default_factory=list)
    scan_warning: str = ""
    #: collections run over the whole search (every setting tried, both stream families)
    runs: int = 0
    #: e.g. "epsilon 0.001 to 50" or "10 to 51,920 users"
    search_range: str = ""
    #: set when the answer is beyond meaningful privacy
    warning: str = ""
    #: the attacker's r (metres) and where it comes from
    attacker_r_m: float | None = None
    attacker_r_note: str = ""
    #: what a row pays at the answer (the accountant's ledger, region included; None when unreached)
    ledger: dict[str, Any] | None = None
    #: what the accountant reads of the mechanism at any epsilon (:class:`ldpviz.decide.feasibility.Setting`):
    #: the officer's limit is judged on it (:func:`ldpviz.decide.feasibility.apply_limit`)
    setting: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _privacy_at(mech: Any) -> tuple[str, dict[str, Any]]:
    """The warning and the ledger of one collection at ``mech``'s setting, the region's epsilon0 included: the
    warning is judged on the ledger's per-row total (:mod:`ldpviz.mechanisms.accounting`)."""
    ledger = collection_ledger(mech, mech.grid.region)
    return weak_privacy_warning(mech, ledger) or "", ledger.to_dict()


def _floor(metric: str) -> float | None:
    """The least value ``metric`` can take (0 for distances and divergences), where intervals are clipped."""
    return 0.0 if metric in metrics.NONNEGATIVE_METRICS else None


def _lower_is_better(metric: str) -> bool:
    return bool(metrics.METRIC_INFO[metric]["lower_is_better"])


def _range_text(lo: float, hi: float, model: str) -> str:
    unit = f" per {GEO_I_UNIT}" if model == mechanisms.GEO_I else ""
    return f"epsilon {lo:g} to {hi:g}{unit}"


def rule_text(probability: float = one_collection.PROBABILITY, confidence: float = one_collection.CONFIDENCE,
              trials: int = one_collection.DEFAULT_TRIALS) -> str:
    """The rule in words (one text for the command, the pages and the report)."""
    return (f"met when one collection meets the target with probability at least {probability:.0%}, with "
            f"{confidence:.0%} confidence: a one-sided normal tolerance bound over {trials} fresh collections "
            f"(seeds the search did not use)")


def _chunk(mechanism: str, trials: int) -> int:
    """Collections a decision asks for at once: all of them where the mechanism estimates trials in one pass (a
    stacked EM costs less per collection than one at a time, more than the collections an early stop would
    skip); one at a time where it does not (nothing to share) or when :attr:`Evaluator.batch_trials` is off
    (the benchmark's baseline)."""
    from ldpviz.mechanisms.base import Mechanism
    stacked = mechanisms.get(mechanism).run_trials is not Mechanism.run_trials
    return trials if Evaluator.batch_trials and stacked else 1


def _checked_goal(metric: str, at_most: float, trials: int, probability: float, confidence: float) -> None:
    """Validate a goal seek's target (one place for both searches)."""
    require(metric in TARGET_METRICS, f"--metric must be one of {', '.join(TARGET_METRICS)}, got {metric!r}")
    require(math.isfinite(at_most) and at_most > 0, f"--at-most must be a number > 0, got {at_most!r}")
    require(trials >= 3, f"trials must be at least 3 for a tolerance bound, got {trials}")
    require(0.5 <= probability < 1, f"--probability must be from 0.5 to below 1, got {probability!r}")
    require(0.5 <= confidence < 1, f"--confidence must be from 0.5 to below 1, got {confidence!r}")


def _fill(result: GoalResult, scan: one_collection.Scan, fmt: Callable[[float], str]) -> None:
    r = scan.reading if scan.reading is not None else scan.search_reading
    if r is not None:
        result.mean, result.ci_low, result.ci_high, result.trials = r.mean, r.ci_low, r.ci_high, r.trials
        result.bound = None if not math.isfinite(r.bound) else r.bound
        result.miss_chance = None if not math.isfinite(r.miss_chance) else r.miss_chance
        result.miss_chance_max, result.misses, result.mean_met = r.miss_chance_max, r.misses, r.mean_met
    result.search_answer = scan.search_answer
    result.scanned = scan.scanned
    result.scan = [{"epsilon": p.epsilon, "first": p.first, "met": p.met, "bound": p.bound} for p in scan.points]
    result.refined = [[x, ok] for x, ok in scan.refined]
    result.fresh_tried = [[x, ok] for x, ok in scan.fresh_tried]
    if scan.missed_above:
        first = scan.missed_above[0][0]
        where = ", ".join(f"{fmt(e)} ({result.metric} {v:.4g})" for _, e, v in scan.missed_above[:4])
        more = f" and {len(scan.missed_above) - 4} more" if len(scan.missed_above) > 4 else ""
        result.scan_warning = (f"not monotone: on the scan's streams a collection met the target at {fmt(first)} "
                               f"but missed it again at the larger {where}{more}; more epsilon is not always "
                               f"more accuracy here, so the answer is the smallest found, not a proven smallest")


def target_epsilon(base: Scenario, metric: str, at_most: float, *, n_users: int | None = None,
                   eps_range: tuple[float, float] = (EPSILON_MIN, EPSILON_MAX), rtol: float = EPS_RTOL,
                   r_m: float | None = None, attacker: bool = True, trials: int = one_collection.DEFAULT_TRIALS,
                   probability: float = one_collection.PROBABILITY, confidence: float = one_collection.CONFIDENCE,
                   dataset: datasets.Dataset | None = None, time_limit_s: float | None = None) -> GoalResult:
    """The smallest epsilon *found* at which one collection meets ``at_most`` with probability ``probability``.

    :func:`ldpviz.decide.one_collection.scan_epsilon`: one collection per value of a log grid over
    ``eps_range`` (x2 steps, common random numbers ``default_rng([seed, t])`` as experiment.run),
    the tolerance rule (``trials`` collections) at grid values from the smallest up, a bisection to
    ``rtol`` below the first value meeting it, then the same rule on ``trials`` fresh collections
    (``default_rng([seed, t, 1])``), stepping up until it holds. ``base.trials`` is not used: the rule
    sets its own count. The answer is the smallest found on the scan, stated so; a larger scanned value
    that misses the target again is named in ``scan_warning``. ``time_limit_s``: raise
    :class:`ldpviz.mechanisms.estimation.Stopped` once the search has run that long (a page's quick start).
    """
    _checked_goal(metric, at_most, trials, probability, confidence)
    t0 = time.perf_counter()
    ev = Evaluator(base, metric, dataset)
    model = mechanisms.get(base.mechanism).privacy_model
    lower_better = _lower_is_better(metric)
    lo_lim, hi_lim = eps_range
    rule = dict(target=at_most, lower_better=lower_better, trials=trials, probability=probability,
                confidence=confidence, chunk=_chunk(base.mechanism, trials), floor=_floor(metric))
    search = one_collection.Rule(lambda e, t: ev.values(e, n_users, t), **rule)
    fresh = one_collection.Rule(lambda e, t: ev.values(e, n_users, t, stream=one_collection.FRESH_STREAM), **rule)
    with estimation.stop_after(time_limit_s):
        scan = one_collection.scan_epsilon(search, fresh, lo_lim, hi_lim, rtol)
    unit = f" per {GEO_I_UNIT}" if model == mechanisms.GEO_I else ""

    def fmt(e: float) -> str:
        return f"epsilon {e:.3g}{unit}"

    common = dict(mechanism=base.mechanism, privacy_model=model, metric=metric, target=float(at_most),
                  sense="at_most" if lower_better else "at_least", search_range=_range_text(lo_lim, hi_lim, model),
                  probability=probability, confidence=confidence, rule=rule_text(probability, confidence, trials))
    n_found = len(ev.users(n_users)[1].cells)
    result = GoalResult(**common, reached=scan.answer is not None, epsilon=scan.answer, n_users=n_found, mean=None,
                        ci_low=None, ci_high=None, trials=trials, evaluations=0, seconds=0.0)
    _fill(result, scan, fmt)
    share = f"{probability:.0%}"
    if scan.answer is None:
        where = ("on the scan" if scan.search_answer is None else
                 f"on fresh collections (the search's streams met it at {fmt(scan.search_answer)})")
        result.message = (f"not reached: no epsilon up to {hi_lim:g}{unit} gives one collection a {share} chance of "
                          f"{metric} <= {at_most:g} with {confidence:.0%} confidence {where}")
    else:
        floor = " -- at the floor of the range: already met at the smallest epsilon searched" \
            if scan.status == "below" else ""
        result.message = (f"smallest found on a scan of {scan.scanned} values ({result.search_range}, x2 apart), "
                          f"refined to within {rtol:.0%} and decided on {trials} fresh collections{floor}")
        result.warning, result.ledger = _privacy_at(ev.mechanism(scan.answer, n_users))
        if attacker:
            _set_attacker(result, _attacker_fields(ev, scan.answer, n_users, r_m))
    result.evaluations, result.runs = ev.evaluations, ev.runs
    result.setting = ev.setting()
    result.seconds = time.perf_counter() - t0
    return result


def reading_at(base: Scenario, metric: str, at_most: float, epsilon: float, *,
               trials: int = one_collection.DEFAULT_TRIALS, dataset: datasets.Dataset | None = None,
               coverage: float = 0.95) -> dict[str, Any]:
    """The inverse question: what ``metric`` one collection reaches at ``epsilon`` (e.g. the officer's limit) with
    ``base.n_users`` users (None: everyone in the region, as the epsilon question), over
    ``trials`` fresh collections (the streams a goal seek decides on): the mean, the range one collection falls in
    with probability ``coverage`` (:func:`ldpviz.decide.one_collection.one_collection_range`, clipped at 0 for a
    non-negative metric) and how many met ``at_most``. A setting the mechanism refuses gives ``note``."""
    ev = Evaluator(base, metric, dataset)
    out: dict[str, Any] = {"epsilon": float(epsilon), "trials": int(trials), "coverage": coverage}
    try:
        values = ev.values(epsilon, base.n_users, trials, stream=one_collection.FRESH_STREAM)
    except LdpvizInputError as err:
        return {**out, "mean": None, "low": None, "high": None, "met": 0, "note": str(err)}
    lower = _lower_is_better(metric)
    met = int(np.sum(values <= at_most) if lower else np.sum(values >= at_most))
    answered = values[np.isfinite(values)]      # a collection left at EM's start map has no reading (a miss)
    at_start = int(values.size - answered.size)
    if not answered.size:
        return {**out, "mean": None, "low": None, "high": None, "met": 0, "at_start": at_start,
                "note": f"every collection stayed at the estimate's start map (the uniform map; {at_start} of "
                        f"{values.size}): at this ε the estimate says nothing about where people are"}
    mean, low, high = one_collection.one_collection_range(answered, coverage, floor=_floor(metric))
    start = (f"{at_start} of {values.size} collections stayed at the estimate's start map (the uniform map): they "
             "say nothing about where people are and count as misses") if at_start else ""
    return {**out, "mean": mean, "low": low, "high": high, "met": met, "at_start": at_start,
            "note": "", "start_note": start}


def users_needed(base: Scenario, metric: str, at_most: float, *, r_m: float | None = None, attacker: bool = True,
                 trials: int = one_collection.DEFAULT_TRIALS, probability: float = one_collection.PROBABILITY,
                 confidence: float = one_collection.CONFIDENCE,
                 dataset: datasets.Dataset | None = None, time_limit_s: float | None = None) -> GoalResult:
    """The fewest users found (within the data set) at which one collection at ``base.epsilon`` meets
    ``at_most`` with probability ``probability`` -- the same rule as :func:`target_epsilon`, the other way round
    (:func:`ldpviz.decide.one_collection.scan_users`: bisection on log n over the search's streams, then
    confirmed on fresh collections).

    Users are seeded subsamples of the region's users (as ``Scenario.n_users``). If even everyone is not
    enough the answer says so: simulating more users than the data holds would invent data.
    """
    _checked_goal(metric, at_most, trials, probability, confidence)
    t0 = time.perf_counter()
    ev = Evaluator(base, metric, dataset)
    model = mechanisms.get(base.mechanism).privacy_model
    everyone = len(ev.users(None)[1].cells)

    def values(stream: int) -> Callable[[float, int], np.ndarray]:
        return lambda n, t: ev.values(base.epsilon, None if int(n) >= everyone else int(n), t, stream=stream)

    rule = dict(target=at_most, lower_better=_lower_is_better(metric), trials=trials, probability=probability,
                confidence=confidence, chunk=_chunk(base.mechanism, trials), floor=_floor(metric))
    search = one_collection.Rule(values(0), **rule)
    fresh = one_collection.Rule(values(one_collection.FRESH_STREAM), **rule)
    low = min(MIN_USERS, everyone)
    with estimation.stop_after(time_limit_s):       # as target_epsilon
        scan = one_collection.scan_users(search, fresh, low, everyone, EPS_RTOL)
    result = GoalResult(mechanism=base.mechanism, privacy_model=model, metric=metric, target=float(at_most),
                        epsilon=float(base.epsilon), sense="at_most" if _lower_is_better(metric) else "at_least",
                        search_range=f"{low:,} to {everyone:,} users (everyone in the region)",
                        warning=_privacy_at(ev.mechanism(base.epsilon))[0], probability=probability,
                        confidence=confidence, rule=rule_text(probability, confidence, trials),
                        reached=scan.answer is not None, n_users=None if scan.answer is None else int(scan.answer),
                        mean=None, ci_low=None, ci_high=None, trials=trials, evaluations=0, seconds=0.0)
    result.ledger = _privacy_at(ev.mechanism(base.epsilon))[1]
    _fill(result, scan, lambda n: f"{int(n):,} users")
    if scan.answer is None:
        result.message = (f"all {everyone:,} users in the region do not give one collection a {probability:.0%} "
                          f"chance of {metric} <= {at_most:g} with {confidence:.0%} confidence at epsilon = "
                          f"{base.epsilon:g}; more users than the data holds would be needed")
    else:
        result.message = (f"fewest found by bisection on the number of users ({result.search_range}), decided on "
                          f"{trials} fresh collections")
        if attacker:
            _set_attacker(result, _attacker_fields(ev, base.epsilon, None, r_m))
    result.evaluations, result.runs = ev.evaluations, ev.runs
    result.setting = ev.setting()
    result.seconds = time.perf_counter() - t0
    return result


def goal_seek(question: str, base: Scenario, metric: str, at_most: float, **options: Any) -> GoalResult:
    """One goal seek, as every caller asks it: ``question`` "epsilon" is :func:`target_epsilon` at
    ``base.n_users`` users, "users" is :func:`users_needed` at ``base.epsilon``; ``options`` go to either."""
    if question == "epsilon":
        return target_epsilon(base, metric, at_most, n_users=base.n_users, **options)
    require(question == "users", f"a goal seek asks 'epsilon' or 'users', got {question!r}")
    return users_needed(base, metric, at_most, **options)


#: Threads for goal seeks run side by side: at most one per core this process may use, and at most this many.
MAX_SEEK_THREADS = 4


def seek_threads(n_seeks: int) -> int:
    """How many of ``n_seeks`` independent goal seeks run at once: one per core this process may use (its CPU
    affinity, as a container or ``taskset`` sets it), at most :data:`MAX_SEEK_THREADS`, at most one per seek."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):      # not Linux
        cores = os.cpu_count() or 1
    return max(1, min(int(n_seeks), cores, MAX_SEEK_THREADS))


def start_order(costs: Sequence[float | None], threads: int) -> list[int]:
    """The order seeks start in. One thread: shortest predicted first (the first answer comes soonest; the
    total is the same). Several: longest, shortest, second longest, second shortest, ... -- the first threads
    start the longest seek (which would otherwise finish last) and the shortest (a first answer within
    seconds), and the rest alternate as threads free up. An unknown cost (None) counts as 0."""
    by_cost = sorted(range(len(costs)), key=lambda i: float(costs[i] or 0.0))
    if threads <= 1:
        return by_cost
    order, lo, hi = [], 0, len(by_cost) - 1
    while lo <= hi:
        order.append(by_cost[hi])
        hi -= 1
        if lo <= hi:
            order.append(by_cost[lo])
            lo += 1
    return order


#: How often :func:`seeks_side_by_side` calls its ``poll`` while it waits for an answer (seconds).
POLL_S = 0.25


def seeks_side_by_side(seeks: Sequence[Callable[[], Any]], costs: Sequence[float] | None = None,
                       threads: int | None = None, poll: Callable[[], None] | None = None,
                       cancel: threading.Event | None = None) -> Iterator[tuple[int, Future]]:
    """Run independent goal seeks (:func:`target_epsilon` / :func:`users_needed` calls, one per mechanism) on
    threads and yield ``(index, future)`` as each finishes; ``future.result()`` returns its answer or raises
    its error. ``costs`` (predicted seconds, e.g. :func:`ldpviz.experiment.runtime_model.predict`) set the
    order (:func:`start_order`): a first answer soon, and no long seek started late.

    Threads, not processes: the seeks' heavy parts release the GIL (numpy's BLAS and FFTs, the numba solvers
    are ``nogil``; the FFT work arrays are per thread), with no process start-up or copy of the data. They do
    not run fully in parallel: the EM loops between those calls are many small Python and numpy steps, so two
    threads wait on each other for the GIL: docs/target-mode.md times four seeks as threads, as processes and
    one after another in one run (bench/target_mode.py; about 30% over the longest seek alone as threads, 10%
    as processes, on 2 cores).
    Every seek draws from its own seeded streams, so the answers are the same as one after another (tested).

    Cancellation (issue 36): when the caller stops early (it closes the generator, or ``poll`` raises, as a
    page's re-run does for a new file, bounds or target), seeks not started are dropped and those running stop
    at their next EM iteration or collection (:func:`ldpviz.mechanisms.estimation.cancel_on`: they raise
    :class:`~ldpviz.mechanisms.estimation.Cancelled` on their thread, which nobody reads), so a superseded search
    burns no more CPU. ``poll`` is called every :data:`POLL_S` seconds while waiting (a page passes a call that
    lets its framework interrupt it); ``cancel`` (optional) is the event set then, for a caller that wants to
    cancel from elsewhere too. With ``poll`` the seeks always run on worker threads, even one at a time, so the
    caller's thread stays free to notice a change.
    """
    from ldpviz.mechanisms.estimation import cancel_on
    threads = seek_threads(len(seeks)) if threads is None else max(1, int(threads))
    order = list(range(len(seeks))) if costs is None else start_order(costs, threads)
    cancel = cancel if cancel is not None else threading.Event()

    def guarded(call: Callable[[], Any]) -> Callable[[], Any]:
        def run() -> Any:
            with cancel_on(cancel):
                return call()
        return run

    if poll is None and (threads == 1 or len(seeks) <= 1):
        try:
            for i in order:
                done: Future = Future()
                try:
                    done.set_result(guarded(seeks[i])())
                except Exception as exc:         # the caller decides: .result() raises it as a direct call would
                    done.set_exception(exc)
                yield i, done
        finally:
            cancel.set()
        return
    pool = ThreadPoolExecutor(threads, thread_name_prefix="ldpviz-seek")
    try:
        futures = {pool.submit(guarded(seeks[i])): i for i in order}
        if poll is None:
            for future in as_completed(futures):
                yield futures[future], future
            return
        waiting = set(futures)
        while waiting:
            finished, waiting = wait(waiting, timeout=POLL_S, return_when=FIRST_COMPLETED)
            for future in sorted(finished, key=lambda f: order.index(futures[f])):
                yield futures[future], future
            if waiting:
                poll()
    finally:
        cancel.set()                              # running seeks stop at their next EM iteration
        pool.shutdown(wait=False, cancel_futures=True)
