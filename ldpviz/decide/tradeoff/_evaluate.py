"""One setting's metric over fresh collections (the Evaluator) and the frontier of metric against epsilon."""

from __future__ import annotations

import math
from typing import Any, Callable, Iterable

import numpy as np
import pandas as pd

from ldpviz.data import datasets
from ldpviz import mechanisms, metrics
from ldpviz.decide.attacker import POPULATION, attack, availability
from ldpviz.geo.domain import Binned, Grid
from ldpviz.errors import LdpvizInputError, require
from ldpviz.experiment import Scenario, mean_ci, prepare_users
from ldpviz.decide import one_collection
from ldpviz.mechanisms import estimation


#: Metrics the goal seek accepts (lower is better for all of them).
TARGET_METRICS = ("w2_m", "aqe", "kl", "l1")
#: Relative precision of the epsilon found (the bracket's hi / lo at the end).
EPS_RTOL = 0.05
#: Collections per decision of the goal seek (on the search's streams and on fresh ones alike).
DEFAULT_TRIALS = one_collection.DEFAULT_TRIALS


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


def _floor(metric: str) -> float | None:
    """The least value ``metric`` can take (0 for distances and divergences), where intervals are clipped."""
    return 0.0 if metric in metrics.NONNEGATIVE_METRICS else None


def _lower_is_better(metric: str) -> bool:
    return bool(metrics.METRIC_INFO[metric]["lower_is_better"])
