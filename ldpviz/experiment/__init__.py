"""Scenario -> Result: the one path every page, the CLI and the benchmarks take.

A :class:`Scenario` names everything that determines a run (dataset, region,
grid side d, mechanism and its parameters, epsilon, number of users, seed,
trials). :func:`run` loads the points, clips them to the region, bins them on
the d x d grid, lets every user perturb their cell as a phone would (client
half), estimates the distribution as the server would, and scores the estimate
against the truth. Same scenario and seed, same result.

:func:`sweep` runs a grid of scenarios (over epsilon, d, or any mechanism
parameter) with several trials and returns a tidy DataFrame, one row per trial;
:func:`summarise` adds means and 95% confidence intervals.
"""

from __future__ import annotations

import itertools
import math
import time
from concurrent.futures import Executor
from dataclasses import dataclass, field, fields, replace
from typing import Any, Callable, ClassVar, Iterable, Mapping

import numpy as np
import pandas as pd
from scipy import special   # the t quantile (stdtrit) without scipy.stats' import cost

from ldpviz.data import datasets
from ldpviz import mechanisms, metrics
from ldpviz.geo.domain import Binned, Grid, Region
from ldpviz.errors import require
from ldpviz import wording
from ldpviz.wording import plural
from ldpviz.mechanisms import accounting, estimation
from ldpviz.mechanisms.base import Estimate
from ldpviz.experiment.report_description import describe as describe_reports
from ldpviz.limits import MAX_TRIALS   # declared once, for every command



@dataclass(frozen=True)
class Scenario:
    """Everything that determines one experiment. Hashable, so it can key a cache.

    ``region`` is a preset name of the dataset, a :class:`Region`, or ``None``
    for the dataset's default view. ``params`` may be given as a dict; it is
    stored as sorted ``(name, value)`` pairs. ``n_users=None`` uses every point
    in the region; a smaller number draws a seeded subsample of users.
    """

    dataset: str = "minneapolis-stops"
    mechanism: str = "grr"
    epsilon: float = 1.0
    grid_side: int = 32
    region: str | Region | None = None
    params: Any = ()
    n_users: int | None = None
    seed: int = 0
    trials: int = 1
    query_rho: float = 0.01

    def __post_init__(self) -> None:
        params = self.params
        if isinstance(params, Mapping):
            params = tuple(sorted(params.items()))
        object.__setattr__(self, "params", tuple(params))
        require(isinstance(self.trials, (int, np.integer)) and 1 <= self.trials <= MAX_TRIALS,
                f"trials must be a whole number from 1 to {MAX_TRIALS}, got {self.trials!r}")
        require(self.n_users is None or (isinstance(self.n_users, (int, np.integer)) and self.n_users >= 1),
                f"number of users must be a whole number >= 1, got {self.n_users!r}")
        require(isinstance(self.seed, (int, np.integer)) and self.seed >= 0,
                f"seed must be a whole number >= 0, got {self.seed!r}")
        require(0 < float(self.query_rho) <= 1, f"query size rho must be in (0, 1], got {self.query_rho!r}")

    @property
    def param_dict(self) -> dict[str, Any]:
        return dict(self.params)

    def with_(self, **changes: Any) -> "Scenario":
        """A copy with some fields (or mechanism parameters, by name) changed."""
        own = {f.name for f in fields(self)}
        params = self.param_dict
        direct = {}
        for key, value in changes.items():
            if key in own:
                direct[key] = value
            else:
                params[key] = value
        if "params" not in direct:
            direct["params"] = params
        return replace(self, **direct)


@dataclass
class Result:
    """The outcome of a :class:`Scenario`: truth, estimates, metrics, timings, notes."""

    scenario: Scenario
    region: Region
    grid: Grid
    true_density: np.ndarray
    estimates: list[Estimate]
    metrics: pd.DataFrame            #: one row per trial
    timings: dict[str, float]        #: seconds per phase (mean over trials for perturb/estimate)
    n_users: int
    n_outside: int
    guarantee: str                   #: the mechanism's guarantee with its privacy unit named (issue 15.17)
    notes: list[str] = field(default_factory=list)
    #: what phones sent in trial 0 (ldpviz.experiment.report_description)
    received: dict[str, str] = field(default_factory=dict)
    coverage: list[str] = field(default_factory=list)   #: what the guarantee covers and what it does not
    #: per trial, how each transport metric was computed (metrics.TransportReadout: solver name,
    #: ``exact`` flag, and the interval holding the exact value), keyed as the metrics ("w2_m", "emd_l1_m")
    readouts: list[dict[str, Any]] = field(default_factory=list)
    #: True when the mechanism's estimator ran on all trials' statistics in one pass (Mechanism.run_trials)
    batched: bool = False
    #: what each row pays, composed once (:class:`ldpviz.mechanisms.accounting.Ledger`): every total printed reads it
    ledger: Any = None

    def start_map_trials(self) -> list[bool]:
        """Per trial, whether its EM estimate never left the uniform starting map (or stayed within noise of it:
        :func:`ldpviz.mechanisms.estimation.start_map_tests`); all False for estimators without that test."""
        return [estimation.stayed_at_start(e.info) for e in self.estimates]

    def start_map_note(self) -> str | None:
        """One sentence where some trials' estimates stayed at their start, naming whether the map shown did."""
        stayed = self.start_map_trials()
        if not any(stayed):
            return None
        first = estimation.start_map_text(self.estimates[0].info)
        k, t = sum(stayed), len(stayed)
        if first:
            head = first[0].upper() + first[1:]
            return head + (f"; so did {k - 1} of the other {t - 1} trials." if t > 1 else ".")
        return (f"In {k} of {t} trials {estimation.START_MAP_TEXT.replace('the map shown', 'the estimate')}; the map "
                "shown (trial 1) left it.")

    def trial_rows(self, **extra: Any) -> list[dict[str, Any]]:
        """One row per trial, the layout of :func:`sweep` (so :func:`summarise` applies): the scenario, ``extra``
        columns, the trial's metrics, seconds, and whether its estimate left the uniform starting map
        (:data:`START_MAP_COLUMNS`)."""
        s = self.scenario
        base = {"dataset": s.dataset, "mechanism": s.mechanism, "epsilon": s.epsilon, "grid_side": s.grid_side,
                "n_users": self.n_users, "seed": s.seed, **{f"param_{k}": v for k, v in s.params}, **extra}
        stayed = self.start_map_trials()
        return [{**base, **row, "seconds": self.timings["total"] / s.trials,
                 "estimate_informative": not stayed[i], "start_map_trials": int(sum(stayed)),
                 "start_map": estimation.start_map_text(self.estimates[i].info) or ""}
                for i, row in enumerate(self.metrics.to_dict("records"))]

    def approximate_readouts(self) -> dict[str, Any]:
        """The first trial's transport readouts that are approximate (empty when every value is exact)."""
        return {k: r for k, r in (self.readouts[0] if self.readouts else {}).items() if not r.exact}

    @property
    def estimate(self) -> Estimate:
        """The first trial's estimate (what a map shows)."""
        return self.estimates[0]

    def mean(self) -> dict[str, float]:
        return {k: float(v) for k, v in self.metrics.mean(numeric_only=True).items() if k != "trial"}

    def cell_spread(self, kind: str = "sd", confidence: float = 0.95) -> np.ndarray:
        """Per-cell spread of the estimated share over the trials, a ``(d, d)`` map (a third view).

        ``kind="sd"``: the sample standard deviation of each cell's estimate;
        ``kind="ci"``: the full width of its t-based ``confidence`` interval for the
        mean (2 t s / sqrt(trials)). Needs at least two trials.
        """
        require(kind in ("sd", "ci"), f"spread kind must be 'sd' or 'ci', got {kind!r}")
        require(len(self.estimates) >= 2, "a per-cell spread needs at least 2 trials; run the scenario with "
                                          "trials >= 2")
        require(0 < confidence < 1, f"confidence must be in (0, 1), got {confidence!r}")
        stack = np.stack([e.density for e in self.estimates])
        sd = stack.std(axis=0, ddof=1)
        if kind == "sd":
            return sd
        k = len(self.estimates)
        return 2 * float(special.stdtrit(k - 1, 0.5 + confidence / 2)) * sd / math.sqrt(k)

    def metric_ci(self, metric: str, confidence: float = 0.95) -> tuple[float, float, float]:
        """(mean, low, high) of a metric over the trials (t interval; low = high = mean for one trial). The
        low end of a metric that cannot be negative (:data:`ldpviz.metrics.NONNEGATIVE_METRICS`) is clipped
        at zero: the t interval is symmetric and can reach below zero for few trials (issue 22)."""
        require(metric in self.metrics.columns, f"unknown metric {metric!r}; available: "
                                                f"{', '.join(c for c in self.metrics.columns if c != 'trial')}")
        values = self.metrics[metric].to_numpy(dtype=float)
        return mean_ci(values, confidence, floor=0.0 if metric in metrics.NONNEGATIVE_METRICS else None)

    def summary(self) -> dict[str, Any]:
        """Flat dict for JSON/CSV: scenario, means of every metric, timings."""
        s = self.scenario
        out: dict[str, Any] = {
            "dataset": s.dataset, "mechanism": s.mechanism, "epsilon": s.epsilon, "grid": s.grid_side,
            "region": self.region.name or "custom", "region_side_m": self.region.side_m,
            "n_users": self.n_users, "n_outside_region": self.n_outside, "seed": s.seed, "trials": s.trials,
            "params": s.param_dict, "guarantee": self.guarantee, "coverage": self.coverage,
            "region_projection": self.region.projection, "region_scale_error": self.region.scale_error,
            "region_bounds": list(self.region.bounds) if self.region.bounds is not None else None,
            "region_epsilon": self.region.epsilon_spent,
            "total_epsilon": _ldp_total(self.ledger),
            "ledger": self.ledger.to_dict() if self.ledger is not None else None,
        }
        out.update(self.mean())
        out["seconds"] = self.timings["total"]
        out["timings"] = self.timings
        out["notes"] = self.notes
        stayed = self.start_map_trials()
        out["start_map_trials"] = int(sum(stayed))       # trials whose estimate is (within noise of) the uniform start
        out["estimate_informative"] = not stayed[0] if stayed else True     # trial 1, the map shown
        return out


def mean_ci(values: np.ndarray, confidence: float = 0.95,
            floor: float | None = None) -> tuple[float, float, float]:
    """(mean, low, high): a t-based confidence interval for the mean of ``values`` (NaNs ignored); with
    ``floor`` (e.g. 0 for a distance) the low end is clipped there."""
    values = np.asarray(values, dtype=float)
    values = values[np.isfinite(values)]
    if len(values) == 0:
        return math.nan, math.nan, math.nan
    mean = float(values.mean())
    if len(values) < 2:
        return mean, mean, mean
    half = (float(special.stdtrit(len(values) - 1, 0.5 + confidence / 2)) * float(values.std(ddof=1))
            / math.sqrt(len(values)))
    low = mean - half if floor is None else max(mean - half, floor)
    return mean, low, mean + half


def prepare_users(scenario: Scenario, dataset: datasets.Dataset) -> tuple[Grid, Binned, list[str]]:
    """Clip the dataset to the scenario's region, bin it, and draw the user sample."""
    notes: list[str] = []
    region = dataset.resolve_region(scenario.region)
    grid = Grid(region, scenario.grid_side)
    binned = grid.bin_lonlat(dataset.lon, dataset.lat)
    if binned.n_outside:
        notes.append(f"{binned.n_outside:,} of {dataset.n:,} points lie outside the region and were left out.")
    n_in = len(binned.cells)
    require(n_in > 0, f"the region '{region.name or 'custom'}' contains none of the {dataset.n:,} points of "
                      f"{dataset.label}; choose another region or fit it to the data")
    if scenario.n_users is not None and scenario.n_users < n_in:
        pick = np.sort(np.random.default_rng([scenario.seed, 0xC0FFEE]).choice(n_in, scenario.n_users,
                                                                               replace=False))
        binned = Binned(binned.cells[pick], binned.unit[pick], binned.n_outside)
        notes.append(f"A seeded sample of {scenario.n_users:,} of the {n_in:,} users in the region takes part.")
    elif scenario.n_users is not None and scenario.n_users > n_in:
        notes.append(wording.capped(scenario.n_users, n_in))
    return grid, binned, notes


def run(scenario: Scenario, dataset: datasets.Dataset | None = None, first: Result | None = None) -> Result:
    """Run ``scenario`` (all its trials). ``dataset`` overrides loading by name (uploads). ``first``: the result of
    ``scenario.with_(trials=1)`` already computed (Explore draws it first): its trial 0 is reused and only trials
    1 .. trials-1 run, giving the same result (trial t always draws from (seed, t)); ignored if it is not that."""
    t0 = time.perf_counter()
    dataset = dataset if dataset is not None else datasets.load(scenario.dataset)
    grid, users, notes = prepare_users(scenario, dataset)
    n = len(users.cells)
    true_density = grid.histogram(users.cells) / n
    t1 = time.perf_counter()
    mech = mechanisms.create(scenario.mechanism, grid, scenario.epsilon, **scenario.param_dict)
    t2 = time.perf_counter()
    queries = metrics.random_queries(scenario.query_rho, seed=scenario.seed)
    reuse = (first is not None and scenario.trials > 1 and first.scenario == scenario.with_(trials=1)
             and len(first.estimates) == 1 and first.n_users == n)
    # All trials in one pass (issue 23): trial t draws from the generator (seed, t), exactly as a run with
    # one trial per seed would, so a result's trial t is the same whatever the number of trials.
    rngs = [np.random.default_rng([scenario.seed, trial]) for trial in range(1 if reuse else 0, scenario.trials)]
    batch = mech.run_trials(users, rngs)
    estimates = ([first.estimates[0]] if reuse else []) + list(batch.estimates)
    received = first.received if reuse else describe_reports(mech, batch.first_reports if mech.has_client else None,
                                                              n)
    c = time.perf_counter()
    rows, readouts = metrics.evaluate_trials(true_density, batch.estimates, cell_m=grid.cell_m, n_users=n,
                                             true_points=users.unit, queries=queries)
    if reuse:
        rows = [{k: v for k, v in first.metrics.iloc[0].items() if k != "trial"}] + rows
        readouts = [first.readouts[0]] + readouts
    rows = [{"trial": trial, **row} for trial, row in enumerate(rows)]
    perturb_s, estimate_s, metrics_s = batch.perturb_s, batch.estimate_s, time.perf_counter() - c
    paths = sorted({str(e.info["path"]) for e in estimates if "path" in e.info})
    if paths:
        notes.append(f"Reports reached the server on the {' and '.join(paths)} path (requested: "
                     f"{mech.param_values.get('path', 'per-user')}; both give the same distribution).")
    trials = len(rngs)                 # the trials run here (all, or all but a reused first)
    timings = {"prepare": t1 - t0, "setup": t2 - t1, "perturb": perturb_s / trials,
               "estimate": estimate_s / trials, "metrics": metrics_s / trials,
               # the whole result's cost: a reused first trial's run counts too
               "total": time.perf_counter() - t0 + (float(first.timings["total"]) if reuse else 0.0)}
    for key, r in readouts[0].items():
        if not r.exact:
            notes.append(r.note(metrics.METRIC_INFO[key]["label"], "m") + " (first trial; see Result.readouts)")
    if grid.region.scale_error > 0.01:
        notes.append(f"Distances in metres are accurate to within {100 * grid.region.scale_error:.2g}% across "
                     f"this region ({grid.region.projection} projection centred on it).")
    ledger = run_ledger(mech, grid.region, scenario.dataset)
    result = Result(scenario, grid.region, grid, true_density, estimates, pd.DataFrame(rows), timings, n,
                    users.n_outside, guarantee_with_region(mech, grid.region, scenario.epsilon, ledger), notes,
                    received, coverage(mech, grid.region, n, users.n_outside), readouts, batch.batched, ledger)
    start = result.start_map_note()
    if start:                  # first: every readout of an estimate that never left its start says so (issue 37.14)
        result.notes.insert(0, start)
    return result


#: The name prefix of points taken one per person from trips (Decide's trips, ``ldpviz report`` on a trips file).
ONE_POINT_PER_PERSON_PREFIX = "trips:"


def run_ledger(mech: mechanisms.Mechanism, region: Region, dataset: str) -> accounting.Ledger:
    """One collection's ledger for a run: per row (event-level) for points; per person where every row is one
    person, one point of their trips chosen at random (a dataset named ``trips:...``)."""
    if str(dataset).startswith(ONE_POINT_PER_PERSON_PREFIX):
        return accounting.collection_ledger(
            mech, region, unit=accounting.UNIT_PERSON, reports_basis="one of the person's points, chosen at random",
            region_basis="each person reports the tile of one of their points, once")
    return accounting.collection_ledger(mech, region)


def _ldp_total(ledger: Any) -> float | None:
    """The per-row total epsilon where the ledger is pure LDP and paid a region (the JSON's ``total_epsilon``);
    None otherwise (Geo-I and central DP totals are not one number: see ``ledger``)."""
    if ledger is None or len(ledger.charges) < 2:
        return None
    return ledger.total("worst").ldp_only()


def guarantee_with_region(mech: mechanisms.Mechanism, region: Region, epsilon: float, ledger: Any = None) -> str:
    """The mechanism's stated guarantee, plus the per-row total (read from the ledger) when choosing the region
    spent epsilon0."""
    ledger = ledger if ledger is not None else accounting.collection_ledger(mech, region)
    extra = accounting.region_total_sentence(ledger)
    stated = mech.stated_guarantee()
    if ledger.unit == accounting.UNIT_PERSON and mech.privacy_model != "none":   # each row is a person's one point
        stated = (f"{mech.guarantee()}, per person: each person sends one report (one of their points, chosen at "
                  "random), so everything a person sends in one collection is protected together")
    return f"{stated}; {extra}" if extra and mech.privacy_model != "none" else stated


def region_line(region: Region, n_users: int) -> str:
    """What the region is, in words: 'typed bounds W,S,E,N (N rows inside); the grid covers the 872 km square
    around it' or 'Private tiles (...): 112.6 km square'."""
    side = f"{region.side_m / 1000:,.4g} km square"
    if region.bounds is not None:
        return (f"{region.typed_bounds} ({plural(n_users, 'row')} inside); the grid covers the {side} around the "
                "box, and only rows inside the box take part")
    return f"{region.name or 'custom'}: {side} ({plural(n_users, 'row')} inside)"


def coverage(mech: mechanisms.Mechanism, region: Region, n_users: int, n_outside: int = 0) -> list[str]:
    """What a result's guarantee covers and what it releases or relies on outside it (issues 15.1, 15.18)."""
    from ldpviz.geo.region_choice import region_covers

    out = [f"The exact number of users (n = {n_users:,}) shown with the output is not private: it is the "
           "true count of rows in the region, released without noise.", f"Region: {region_line(region, n_users)}."]
    if mech.privacy_model != "none":
        out.append(region_covers(region))
        if n_outside:
            out.append(f"{plural(n_outside, 'row')} outside the region {'was' if n_outside == 1 else 'were'} left out "
                       "before any report: whether a row "
                       "lies inside the region is not protected by epsilon.")
    return out


@dataclass(frozen=True)
class GuaranteeLines:
    """The lines shown with every result, word for word on Explore and in the decision report."""

    model_prefix: str        #: "Central DP (trusted aggregator)." for central DP, else empty
    guarantee: str           #: the mechanism's guarantee with its privacy unit named, ending in a full stop
    notes: list[str]         #: what happened to the data in this run (rows left out, sampling, paths)
    coverage: list[str]      #: what the guarantee covers and what it does not (n, the region)

    COVERAGE_TITLE: ClassVar[str] = "What the guarantee covers, and what it does not"


def guarantee_lines(result: Result) -> GuaranteeLines:
    """The guarantee, privacy-unit and coverage lines of ``result``: the one source for Explore and the report."""
    central = mechanisms.get(result.scenario.mechanism).privacy_model == mechanisms.CENTRAL_DP
    return GuaranteeLines("Central DP (trusted aggregator)." if central else "", f"{result.guarantee}.",
                          list(result.notes), list(result.coverage))


# ---- sweeps ---------------------------------------------------------------------------

#: The sweep's columns on whether a trial's estimate left its uniform starting map (issue 37.14), in the run's words.
START_MAP_COLUMNS = {
    "estimate_informative": "False where this trial's estimate stayed at (or within noise of) the uniform starting "
                            f"map: {estimation.START_MAP_TEXT}; its metrics measure that map, not an estimate",
    "start_map_trials": "how many of this setting's trials stayed at the uniform starting map (as ldpviz run --json)",
    "start_map": "this trial's words when it stayed at the start (as ldpviz run's note); empty where it left",
}


def _sweep_task(scenario: Scenario, dataset: datasets.Dataset | None) -> list[dict[str, Any]]:
    result = run(scenario, dataset)
    # what a row pays, from the accountant (one text per model: Geo-I and central DP are no single number)
    return result.trial_rows(total_per_row=result.ledger.total().text() if result.ledger is not None else "")


def check_scenario(scenario: Scenario) -> None:
    """Refuse a scenario's settings without running it: the mechanism's name, epsilon, the grid side and each
    mechanism parameter (its declared type and bounds). Lets a sweep check every value before its first run."""
    from ldpviz.geo.domain import MAX_GRID_SIDE

    cls = mechanisms.get(scenario.mechanism)
    mechanisms.validate_epsilon(scenario.epsilon)
    side = scenario.grid_side
    require(isinstance(side, (int, np.integer)) and not isinstance(side, bool) and 1 <= side <= MAX_GRID_SIDE,
            f"grid side d must be a whole number from 1 to {MAX_GRID_SIDE}, got {side!r}")
    known = {p.name: p for p in cls.params}
    for name, value in scenario.params:
        require(name in known, f"mechanism '{scenario.mechanism}' has no parameter {name!r}; it takes: "
                               f"{', '.join(known) or 'no parameters'}")
        known[name].validate(value)


def expand(base: Scenario, vary: Mapping[str, Iterable[Any]]) -> list[Scenario]:
    """Every combination of the varied values applied to ``base`` (mechanism params by name)."""
    keys = list(vary)
    values = [list(vary[k]) for k in keys]
    for key, vals in zip(keys, values):
        require(len(vals) > 0, f"--vary {key} needs at least one value")
    return [base.with_(**dict(zip(keys, combo))) for combo in itertools.product(*values)]


def sweep(base: Scenario, vary: Mapping[str, Iterable[Any]], *, dataset: datasets.Dataset | None = None,
          executor: Executor | None = None,
          progress: Callable[[int, int], None] | None = None) -> pd.DataFrame:
    """Run ``base`` for every combination in ``vary``; one row per (scenario, trial).

    With an ``executor`` (``concurrent.futures``: processes, or a Dask client's
    executor) the scenarios run in parallel; results are identical to the serial
    run because every trial's randomness derives from (seed, trial) only.
    """
    scenarios = expand(base, vary)
    total = len(scenarios)
    rows: list[dict[str, Any]] = []
    if executor is None:
        for i, sc in enumerate(scenarios):
            rows.extend(_sweep_task(sc, dataset))
            if progress:
                progress(i + 1, total)
    else:
        futures = [executor.submit(_sweep_task, sc, dataset) for sc in scenarios]
        for i, fut in enumerate(futures):
            rows.extend(fut.result())
            if progress:
                progress(i + 1, total)
    return pd.DataFrame(rows)


def summarise(df: pd.DataFrame, by: list[str], confidence: float = 0.95) -> pd.DataFrame:
    """Mean, standard deviation and a t-based confidence interval of every metric per group."""
    metric_cols = [c for c in df.columns if c in metrics.METRIC_INFO or c == "seconds"]
    groups = df.groupby(by, sort=True, dropna=False)
    out = groups[metric_cols].mean()
    counts = groups.size()
    for col in metric_cols:
        sd = groups[col].std(ddof=1).fillna(0.0)
        t = np.array([special.stdtrit(k - 1, 0.5 + confidence / 2) if k > 1 else math.nan for k in counts])
        half = t * sd.to_numpy() / np.sqrt(counts.to_numpy())
        out[f"{col}_sd"] = sd
        low = out[col] - np.nan_to_num(half)
        out[f"{col}_lo"] = low.clip(lower=0.0) if col in metrics.NONNEGATIVE_METRICS or col == "seconds" else low
        out[f"{col}_hi"] = out[col] + np.nan_to_num(half)
    out["trials"] = counts
    if "estimate_informative" in df.columns:      # trials whose estimate stayed at the uniform start (issue 37.14)
        out["start_map_trials"] = groups["estimate_informative"].apply(
            lambda v: int((~v.astype(bool)).sum()))
    return out.reset_index()


def start_map_sweep_note(summary: pd.DataFrame, columns: Iterable[str], labels: Mapping[str, str] | None = None,
                         unit: str = "run") -> str | None:
    """One sentence naming the settings of a :func:`summarise` table (grouped by ``columns``, the first naming the
    mechanism) whose estimate stayed at the uniform starting map in some trials, with what that means in the run's
    words (:data:`ldpviz.mechanisms.estimation.START_MAP_TEXT`); None where every estimate left its start.
    ``labels``: a display name per column (default the column's name); ``unit``: what one trial's line is called."""
    if "start_map_trials" not in summary.columns:
        return None
    hit = summary[summary["start_map_trials"] > 0]
    if hit.empty:
        return None
    first, *rest = [c for c in columns if c in summary.columns]
    labels = labels or {}

    def setting(row: pd.Series) -> str:
        where = ", ".join(f"{labels.get(c, c)} = {wording.number(row[c])}" for c in rest)
        return (f"{row[first]}{' at ' + where if where else ''}: {int(row['start_map_trials'])} of "
                f"{plural(int(row['trials']), 'trial')}")

    stayed, total = int(hit["start_map_trials"].sum()), int(summary["trials"].sum())
    return (f"{stayed} of {plural(total, unit)} stayed at (or within noise of) the uniform starting map ("
            + "; ".join(setting(row) for _, row in hit.iterrows())
            + f"): {estimation.START_MAP_TEXT.replace('the map shown', 'the estimate')}, so "
            f"{'its' if stayed == 1 else 'their'} metrics measure that map, not an estimate.")
