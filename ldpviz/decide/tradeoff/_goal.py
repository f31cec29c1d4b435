"""The goal seeks: the smallest epsilon, the reading at one epsilon, the fewest users, and their answer."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from ldpviz.data import datasets
from ldpviz import mechanisms
from ldpviz.errors import LdpvizInputError, require
from ldpviz.experiment import Scenario
from ldpviz.mechanisms.base import EPSILON_MAX, EPSILON_MIN, GEO_I_UNIT
from ldpviz.decide import one_collection
from ldpviz.decide.privacy_scale import weak_privacy_warning
from ldpviz.mechanisms import estimation
from ldpviz.mechanisms.accounting import collection_ledger
from ldpviz.decide.tradeoff._evaluate import (EPS_RTOL, Evaluator, TARGET_METRICS, _attacker_fields, _floor,
                                              _lower_is_better)


MIN_USERS = 10


def _set_attacker(result: "GoalResult", fields: dict[str, Any]) -> None:
    for key, value in fields.items():
        setattr(result, key, value)


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
