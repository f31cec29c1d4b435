"""The one cached path from a Scenario to a Result, plus small cached helpers.

Every page computes through :func:`cached_run`: results are keyed by the
Scenario (its repr: dataset, region, mechanism, parameters, epsilon, d, users,
seed, trials) and the dataset's content key, and the cache is bounded
(``MAX_RESULTS`` entries, ``RESULT_TTL_S`` seconds) so a busy session cannot
grow memory without limit. Uploaded datasets are passed alongside (excluded
from hashing: their content key already identifies them) and never written
anywhere.
"""

from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict
from typing import Any, Callable

import numpy as np
import pandas as pd
import streamlit as st

from ldpviz.app import longrun
from ldpviz.data import datasets
from ldpviz import experiment, mechanisms
from ldpviz.experiment import runtime_model
from ldpviz.geo.domain import Grid, Region  # noqa: F401 (Grid re-exported for pages)
from ldpviz.errors import LdpvizInputError
from ldpviz.experiment import Result, Scenario

MAX_RESULTS = 128
RESULT_TTL_S = 3600
MAX_CHANNEL_CELLS = 32 * 32


@st.cache_data(max_entries=MAX_RESULTS, ttl=RESULT_TTL_S, show_spinner=False, hash_funcs={Scenario: repr})
def cached_run(scenario: Scenario, dataset_key: str, _dataset: datasets.Dataset | None = None) -> Result:
    """``ldpviz.experiment.run`` memoised on (scenario, dataset content key); its timings feed the predictions
    (its CPU seconds: what it costs on a quiet server, whatever the other sessions are doing)."""
    cpu = time.thread_time()
    first = _FIRST.get((repr(scenario.with_(trials=1)), dataset_key)) if int(scenario.trials) > 1 else None
    result = experiment.run(scenario, _dataset, first=first)
    if first is None:        # a run that reused Explore's first trial did not cost a whole run: not a timing
        longrun.timings().record(result, cpu_seconds=time.thread_time() - cpu)
    longrun.seen().add(longrun.key(scenario, dataset_key))
    return result


#: Explore's first-trial results, most recent last (:func:`first_result` draws trial 0 alone, then
#: :func:`finish_trials` runs the rest: ``experiment.run(first=...)`` reuses trial 0 instead of running it again)
_FIRST: "OrderedDict[tuple[str, str], Result]" = OrderedDict()
_FIRST_LOCK = threading.Lock()
MAX_FIRST = 8


def _remember_first(scenario: Scenario, dataset_key: str, result: Result) -> None:
    with _FIRST_LOCK:
        _FIRST[(repr(scenario), dataset_key)] = result
        _FIRST.move_to_end((repr(scenario), dataset_key))
        while len(_FIRST) > MAX_FIRST:
            _FIRST.popitem(last=False)


@st.cache_resource(max_entries=16, show_spinner="Loading the dataset ...")
def load_bundled(name: str) -> datasets.Dataset:
    """A bundled dataset, loaded once per server (read-only arrays, shared across sessions)."""
    return datasets.load(name)


@st.cache_data(max_entries=32, show_spinner=False)
def fit_region(dataset_key: str, _dataset: datasets.Dataset) -> Region:
    return Region.fit(_dataset.lon, _dataset.lat)


#: Points a page derived from other data in this session (Decide: one point per person of a trips file), by name.
DERIVED = "derived_datasets"


#: Derived datasets one session holds (the most recently derived last; the oldest beyond it are dropped and
#: derived again when asked for: they are a function of data the session holds).
MAX_DERIVED = 4


def derive(data: datasets.Dataset) -> datasets.Dataset:
    """Hold ``data`` (points derived from other data, e.g. trips) under its name for this session's runs."""
    derived = st.session_state.setdefault(DERIVED, {})
    derived.pop(data.name, None)
    derived[data.name] = data
    while len(derived) > MAX_DERIVED:
        derived.pop(next(iter(derived)))
    return data


def get_dataset(name: str) -> tuple[datasets.Dataset, str]:
    """(dataset, content key): an upload kept in this session, points derived from one, or a bundled dataset."""
    uploads = st.session_state.get("uploads", {})
    if name in uploads:
        return uploads[name], uploads[name].key
    derived = st.session_state.get(DERIVED, {})
    if name in derived:
        return derived[name], derived[name].key
    data = load_bundled(name)
    return data, data.key


def is_upload(name: str) -> bool:
    return name in st.session_state.get("uploads", {})


def dataset_arg(name: str) -> datasets.Dataset | None:
    """What to pass to ``experiment.run`` besides the scenario: the upload itself, or None."""
    return st.session_state["uploads"][name] if is_upload(name) else st.session_state.get(DERIVED, {}).get(name)


def run_scenario(scenario: Scenario) -> Result:
    """The result of a scenario now, whatever it costs (a finished long run is reused)."""
    data, key = get_dataset(scenario.dataset)
    return longrun.kept().get(longrun.key(scenario, key)) or cached_run(scenario, key, dataset_arg(scenario.dataset))


def predicted_seconds(scenario: Scenario) -> tuple[float, str]:
    """(quiet-machine seconds, what it rests on) a scenario is predicted to take; 0 when it is in a cache. The
    load is not in it (issue 28): a setting predicted short runs at once however busy the server is."""
    data, key = get_dataset(scenario.dataset)
    run_key = longrun.key(scenario, key)
    if run_key in longrun.seen() or longrun.kept().get(run_key) is not None:
        return 0.0, "the cache"
    grid_cells = int(scenario.grid_side) ** 2
    return longrun.timings().predict(scenario.mechanism, min(scenario.n_users or data.n, data.n), grid_cells,
                                     int(scenario.trials), path=runtime_model.path_of(scenario.params))


def results_or_announce(scenarios: list[Scenario], label: str,
                        describe: Any = None) -> list[Result | Exception] | None:
    """Several scenarios (Compare, Trade-offs): run at once when predicted short in total; otherwise announced
    with the predicted total and run when the user starts them, with elapsed time, each long one in a stoppable
    child process. One entry per scenario: its Result, or the exception it raised. None while waiting."""
    predictions = [predicted_seconds(sc) for sc in scenarios]
    total = sum(p for p, _ in predictions)
    if total > longrun.LONG_S:
        basis = next((b for p, b in predictions if p > 0), "the cache")
        keys = "|".join(longrun.key(sc, get_dataset(sc.dataset)[1]) for sc in scenarios)
        if not longrun.announce(label, total, basis, str(hash(keys))):
            return None
    out: list[Result | Exception] = []
    bar = st.progress(0.0, text=f"Running {label} ...")
    started = time.perf_counter()
    for i, (sc, (seconds, _)) in enumerate(zip(scenarios, predictions)):
        what = describe(sc) if describe else sc.mechanism
        try:
            if seconds > longrun.LONG_S:
                result = longrun.run_in_child(sc, dataset_arg(sc.dataset), seconds, what)
                longrun.timings().record(result)
                longrun.kept().put(longrun.key(sc, get_dataset(sc.dataset)[1]), result)
            else:
                result = run_scenario(sc)
            out.append(result)
        except Exception as exc:  # noqa: BLE001 -- shown per scenario by the page; the others still run
            out.append(exc)
        elapsed = time.perf_counter() - started
        bar.progress((i + 1) / len(scenarios), text=f"{i + 1} of {len(scenarios)} done, {elapsed:.0f} s so far"
                     + (f" of {runtime_model.fmt_range(total)}" if total > longrun.LONG_S else ""))
    bar.empty()
    return out


def result_or_announce(scenario: Scenario, label: str) -> Result | None:
    """The result at once when cached or predicted short; a long run is announced and runs when the user starts
    it (in a child process, stoppable). None while it waits for the user."""
    data, key = get_dataset(scenario.dataset)
    predicted, basis = predicted_seconds(scenario)
    if predicted <= longrun.LONG_S:
        return run_scenario(scenario)
    run_key = longrun.key(scenario, key)
    if not longrun.announce(label, predicted, basis, run_key):
        return None
    result = longrun.run_in_child(scenario, dataset_arg(scenario.dataset), predicted, label)
    longrun.timings().record(result)
    longrun.kept().put(run_key, result)
    return result


def first_result(scenario: Scenario, label: str) -> tuple[Result | None, bool]:
    """Explore's result as soon as its maps can be drawn: ``(result, complete)``.

    A setting whose trials are all in a cache, with one trial, or predicted long (announced, then run whole in
    a child process) gives ``complete`` True. Otherwise the first trial alone runs now (trial t draws from
    (seed, t), so it is the full run's first trial and its maps are the full run's maps) and ``complete`` is
    False: the page draws it, then calls :func:`finish_trials` for the intervals."""
    data, key = get_dataset(scenario.dataset)
    run_key = longrun.key(scenario, key)
    if (int(scenario.trials) <= 1 or run_key in longrun.seen() or longrun.kept().get(run_key) is not None
            or predicted_seconds(scenario)[0] > longrun.LONG_S):
        return result_or_announce(scenario, label), True
    one = scenario.with_(trials=1)
    result = run_scenario(one)
    _remember_first(one, key, result)
    return result, False


def finish_trials(scenario: Scenario) -> Result:
    """All of a scenario's trials (after :func:`first_result` drew the first, which the run reuses), into the
    cache."""
    return run_scenario(scenario)


def run_label(mechanism_name: str, scenario: Scenario) -> str:
    """What a run is, in the words of its announcement: 'DAM at d = 128 with 5 trials (ε = 1, 50,000 users)'."""
    users = f", {int(scenario.n_users):,} users" if scenario.n_users else ""
    trials = f"{int(scenario.trials)} trial" + ("s" if int(scenario.trials) != 1 else "")
    return f"{mechanism_name} at d = {scenario.grid_side} with {trials} (ε = {scenario.epsilon:g}{users})"


# ---- parameters as the mechanism uses them -------------------------------------------------------

def has_radius(mechanism: str) -> bool:
    """True for mechanisms with a computed-default ``radius`` and a ``radius_factor`` (the DAM family)."""
    names = {p.name for p in mechanisms.get(mechanism).params}
    return {"radius", "radius_factor"} <= names


@st.cache_resource(max_entries=8, ttl=RESULT_TTL_S, show_spinner=False)
def built_mechanism(mechanism: str, grid_side: int, region: Region, epsilon: float,
                    params: tuple) -> mechanisms.Mechanism:
    """A constructed mechanism, shared by the sidebar (effective_params) and the attacker clause (local
    privacy), so a slow setup (SEM-Geo-I calibrates against DAM) is paid once. Read-only use only."""
    return mechanisms.create(mechanism, Grid(region, grid_side), epsilon, **dict(params))


@st.cache_data(max_entries=64, show_spinner=False)
def srr_resolution(mechanism: str, grid_side: int, region: Region, epsilon: float, params: tuple) -> Any:
    """SRR on its public grid domain: the blocks it can tell apart (``ldpviz.mechanisms.srr.resolution.SrrResolution``,
    issue 15.9); None for anything else (the occupied domain is built from the users' data, so it is
    described in the audit report instead)."""
    from ldpviz.mechanisms.srr.staircase import SRR
    from ldpviz.mechanisms.srr.resolution import effective_resolution
    mech = built_mechanism(mechanism, grid_side, region, epsilon, params)
    if not isinstance(mech, SRR) or dict(params).get("domain", "grid") != "grid":
        return None
    return effective_resolution(mech)


def srr_resolution_sentence(mechanism: str, grid_side: int, region: Region, epsilon: float,
                            params: tuple) -> str | None:
    """The guarantee panel's sentence on SRR's effective resolution (None when not SRR on its grid domain)."""
    res = srr_resolution(mechanism, grid_side, region, epsilon, params)
    return None if res is None else res.sentence()


def srr_blocks(mechanism: str, grid_side: int, region: Region, epsilon: float, params: tuple) -> np.ndarray | None:
    """The ``(d, d)`` block label of every cell, for outlines on the map (None when not SRR on its grid domain)."""
    res = srr_resolution(mechanism, grid_side, region, epsilon, params)
    return None if res is None else np.asarray(res.cell_class)


def effective_params(mechanism: str, grid_side: int, region: Region, epsilon: float,
                     params: tuple) -> dict[str, Any]:
    """``Mechanism.effective_params()`` at this grid and epsilon: computed defaults filled in."""
    return built_mechanism(mechanism, grid_side, region, epsilon, params).effective_params()


def radius_summary(mechanism: str, grid: Grid, epsilon: float, params: dict[str, Any]) -> dict[str, float] | None:
    """The DAM family's radius: optimal b (eq. 12) and the b in use, in cells and metres; None otherwise.

    The optimal b is the radius used at ``radius_factor`` = 1, i.e. used / radius_factor when no
    explicit radius is given.
    """
    if not has_radius(mechanism):
        return None
    values = effective_params(mechanism, grid.side, grid.region, epsilon, tuple(sorted(params.items())))
    used = values.get("radius")
    if not isinstance(used, (int, float)) or not math.isfinite(float(used)):
        return None
    if params.get("radius") is None:
        optimal = float(used) / float(values.get("radius_factor") or 1.0)
    else:
        others = {k: v for k, v in params.items() if k not in ("radius", "radius_factor")}
        optimal = float(effective_params(mechanism, grid.side, grid.region, epsilon,
                                         tuple(sorted(others.items())))["radius"])
    return {"optimal_cells": optimal, "optimal_m": optimal * grid.cell_m,
            "used_cells": float(used), "used_m": float(used) * grid.cell_m}


# ---- channels -------------------------------------------------------------------------------------

@st.cache_data(max_entries=16, show_spinner="Building the channel ...")
def cached_channel(mechanism: str, grid_side: int, region: Region, epsilon: float, params: tuple) -> np.ndarray:
    """P[y, x] of a mechanism with an explicit channel, on a small grid."""
    if grid_side * grid_side > MAX_CHANNEL_CELLS:
        raise LdpvizInputError(f"channels are drawn on grids up to {int(math.isqrt(MAX_CHANNEL_CELLS))} x "
                               f"{int(math.isqrt(MAX_CHANNEL_CELLS))}; choose a smaller grid side")
    mech = mechanisms.create(mechanism, Grid(region, grid_side), epsilon, **dict(params))
    return np.asarray(mech.channel(), dtype=float)


# ---- sweeps -----------------------------------------------------------------------------------------

def sweep_rows(result: Result) -> list[dict[str, Any]]:
    """One row per trial, in the layout of ``experiment.sweep`` (so ``summarise`` applies), with whether each
    trial's estimate left its uniform start (``experiment.START_MAP_COLUMNS``)."""
    return result.trial_rows()


def result_table(result: Result) -> pd.DataFrame:
    """Per-trial metrics with the scenario spelled out, for CSV export."""
    return pd.DataFrame(sweep_rows(result))


# ---- reproduction ------------------------------------------------------------------------------------

def python_snippet(scenario: Scenario, upload_filename: str | None = None) -> str:
    """A short script that reproduces a run with the ldpviz API (an upload is re-read with the same framing)."""
    region = scenario.region
    if isinstance(region, Region) and region.bounds is not None:
        region_src = f"regions.stated_region({region.bounds!r})"
    elif isinstance(region, Region):
        region_src = (f"Region(center_lon={region.center_lon!r}, center_lat={region.center_lat!r}, "
                      f"side_m={region.side_m!r}, name={region.name!r})")
    else:
        region_src = repr(region)
    lines = ["from ldpviz import Scenario, run"]
    if isinstance(region, Region) and region.bounds is not None:
        lines.append("from ldpviz.geo import region_choice as regions")
    elif isinstance(region, Region):
        lines.append("from ldpviz.geo.domain import Region")
    if upload_filename:
        lines.append("from ldpviz.data import datasets")
        lines.append("from ldpviz.mechanisms.fo.private_region import upload_frame")
        lines.append(f"data = datasets.load_file({upload_filename!r}{_framing_args(scenario.dataset)})   # your file")
    lines += [
        "",
        "scenario = Scenario(",
        f"    dataset={scenario.dataset!r}, mechanism={scenario.mechanism!r}, epsilon={scenario.epsilon!r},",
        f"    grid_side={scenario.grid_side!r}, region={region_src},",
        f"    params={dict(scenario.params)!r}, n_users={scenario.n_users!r}, seed={scenario.seed!r}, "
        f"trials={scenario.trials!r},",
        *([f"    query_rho={scenario.query_rho!r},"] if scenario.query_rho != Scenario.query_rho else []),
        ")",
        f"result = run(scenario{', data' if upload_filename else ''})",
        "print(result.metrics.mean(numeric_only=True))",
    ]
    return "\n".join(lines)


# ---- privacy audit from channels ------------------------------------------------------------------

def _framing_args(name: str) -> str:
    """The load_file arguments that frame an upload as the dashboard did (bounds, or the rule and its epsilon0)."""
    held = st.session_state.get("uploads", {}).get(name)
    if held is None:
        return ""
    region = held.default_region
    if region.bounds is not None:
        return f", bbox={region.bounds!r}"
    if region.epsilon_spent > 0:
        return f", frame=upload_frame('private-tiles', {region.epsilon_spent!r})"
    return ", frame=upload_frame('public-tiles')"


def ldp_epsilon(P: np.ndarray) -> float:
    """The smallest epsilon the channel satisfies: max over reports y of log(max_x P[y,x] / min_x P[y,x]).

    Infinite when some report is possible from one cell and impossible from another.
    """
    P = np.asarray(P, dtype=float)
    hi = P.max(axis=1)
    lo = P.min(axis=1)
    live = hi > 0
    if np.any(live & (lo <= 0)):
        return math.inf
    if not np.any(live):
        return 0.0
    return float(np.max(np.log(hi[live]) - np.log(lo[live])))


def geo_epsilon(P: np.ndarray, grid: Grid, chunk: int = 64) -> float:
    """Geo-I: max over y and x != x' of log(P[y,x] / P[y,x']) / dist(x, x') in cell sides."""
    P = np.asarray(P, dtype=float)
    centres = grid.cell_centers_unit() * grid.side
    dist = np.linalg.norm(centres[:, None, :] - centres[None, :, :], axis=2)
    np.fill_diagonal(dist, np.inf)
    with np.errstate(divide="ignore"):
        logp = np.log(P)
    worst = 0.0
    for start in range(0, P.shape[0], chunk):
        block = logp[start:start + chunk]
        live = np.isfinite(block).any(axis=1)
        block = block[live]
        if not len(block):
            continue
        if np.any(~np.isfinite(block)):
            return math.inf
        diff = block[:, :, None] - block[:, None, :]
        worst = max(worst, float(np.max(diff / dist[None])))
    return worst


def claimed_epsilon(mech: mechanisms.Mechanism) -> float:
    """The ε a mechanism's guarantee states, in the unit its channel is measured in: Geo-I per cell side
    (its slider ε is per km; SEM-Geo-I's ε′ is its slider per km too unless calibrated to DAM, ``claimed_epsilon``)."""
    claimed = getattr(mech, "claimed_epsilon", None)
    if claimed is not None:
        return float(claimed() if callable(claimed) else claimed)
    if mech.privacy_model == mechanisms.GEO_I:
        return float(mech.epsilon_per_cell)
    return float(mech.epsilon)


#: Verdicts of the channel audit (short texts for the table).
PASS, FAIL = "pass", "FAIL"
UNDETERMINED = "undetermined"


def channel_underflows(mech: mechanisms.Mechanism, claimed: float, grid: Grid) -> bool:
    """True when the stated guarantee lets report probabilities fall below what a float holds (10^-308), so an
    infinite measured ratio (a report possible from one cell, 0 from another) may be underflow, not a leak:
    Geo-I with epsilon per cell x the largest distance on the grid (plus slack) beyond ln(10^300)."""
    from ldpviz.decide.privacy_scale import LOG_RATIO_TEXT_LIMIT
    if mech.privacy_model == mechanisms.GEO_I:
        span = math.sqrt(2.0) * (grid.side - 1) + float(mech.geo_slack_m()) / grid.cell_m
        return claimed * span > LOG_RATIO_TEXT_LIMIT
    return claimed > LOG_RATIO_TEXT_LIMIT
CENTRAL_NOTE = "central DP (trusted aggregator): no per-user report to measure"


@st.cache_data(max_entries=512, ttl=RESULT_TTL_S, show_spinner=False)
def audit_row(mechanism: str, grid_side: int, region: Region, epsilon: float) -> dict[str, Any]:
    """One mechanism's row of the audit (default parameters): claimed guarantee, measured worst case, verdict.

    Cached per (mechanism, grid, region, epsilon), so moving epsilon back, or another page's visit,
    reuses it. Never raises for a mechanism's limits: a channel that cannot be built on this grid
    becomes the verdict text.
    """
    import time
    started = time.perf_counter()
    cls = mechanisms.get(mechanism)
    grid = Grid(region, grid_side)
    row: dict[str, Any] = {"guarantee": "—", "measured": None, "verdict": "no explicit channel to measure",
                           "seconds": 0.0}
    try:
        mech = mechanisms.create(mechanism, grid, epsilon)
        row["guarantee"] = mech.guarantee()
        if cls.privacy_model == mechanisms.CENTRAL_DP:
            row["verdict"] = CENTRAL_NOTE
        elif mech.has_channel:   # the instance's flags: e.g. L-SRR's channel exists on the public grid domain only
            P = np.asarray(mech.channel(), dtype=float)
            row["columns_sum_to_1"] = bool(np.allclose(P.sum(axis=0), 1.0, atol=1e-9))
            measured = geo_epsilon(P, grid) if cls.privacy_model == mechanisms.GEO_I else ldp_epsilon(P)
            row["measured"] = measured
            claimed = claimed_epsilon(mech)
            row["claimed"] = claimed
            if cls.privacy_model == mechanisms.NO_PRIVACY:
                row["verdict"] = "no guarantee claimed"
            elif math.isinf(measured) and channel_underflows(mech, claimed, grid):
                row["measured"] = math.nan
                row["verdict"] = UNDETERMINED
                row["why"] = ("the guarantee allows probability ratios beyond 10^300 on this grid, so some report "
                              "probabilities underflow to 0 in floating point and the worst ratio cannot be "
                              "measured (not a violation found; use a smaller region or epsilon, or the black-box "
                              "audit)")
            elif measured <= claimed * (1 + 1e-9) + 1e-9 and row["columns_sum_to_1"]:
                row["verdict"] = PASS
            else:
                row["verdict"] = FAIL
        elif not mech.has_client:
            row["verdict"] = ("no explicit channel (several rounds, a data-dependent domain, or randomness shared "
                              "per collection)")
    except LdpvizInputError as exc:
        row["verdict"] = f"not measured on this grid: {exc}"
    except MemoryError:
        row["verdict"] = "not measured: the channel is too large for this server"
    row["seconds"] = time.perf_counter() - started
    return row


def blackbox_available() -> bool:
    """True when ldpviz.evidence.audit (the black-box auditor) is installed with ``audit_mechanism``."""
    import importlib.util
    if importlib.util.find_spec("ldpviz.evidence.audit") is None:
        return False
    import importlib
    return callable(getattr(importlib.import_module("ldpviz.evidence.audit"), "audit_mechanism", None))


@st.cache_data(max_entries=256, ttl=RESULT_TTL_S, show_spinner=False)
def blackbox_row(mechanism: str, grid_side: int, region: Region, epsilon: float, n_samples: int,
                 seed: int) -> dict[str, Any]:
    """``ldpviz.evidence.audit.audit_mechanism``: a certified lower bound on epsilon from sampled reports."""
    from ldpviz.evidence import audit
    try:
        res = audit.audit_mechanism(mechanism, Grid(region, grid_side), epsilon, n_samples=n_samples, seed=seed)
    except LdpvizInputError as exc:
        return {"lower_bound": None, "status": f"not audited: {exc}", "passed": None, "seconds": 0.0}
    bound = float(res.lower_bound)
    status = str(res.status)
    if res.passed and not bound > 0:
        status = "no violation found (lower bound 0: uninformative, not a proof)"
    return {"lower_bound": bound if math.isfinite(bound) else None, "status": status,
            "passed": bool(res.passed),
            "seconds": float(res.seconds), "summary": res.summary(), "confidence": float(res.confidence)}


def goal_seek_seconds(scenario: Scenario, trials: int, branch: str = "reached",
                      w2_target_m: float | None = None) -> float:
    """Quiet-machine seconds a goal seek of ``scenario`` is predicted to take at ``trials`` collections per
    decision (:func:`runtime_model.goal_seek_seconds`): the calibrated model's one-trial run on this machine (its
    speed probe), times the seek's cost in such runs, which bench/goal_seek_runs.py measures against that same
    model, and the data's shape; ``branch`` "scan": if no epsilon reaches the target. A run timed on this server
    does not replace the model here: one run being cached or timed says little of a seek's 17-150 collections at
    other epsilons (a cached run used to predict a seek at 0 s). ``w2_target_m``: the W2 target of a seek for the
    smallest epsilon, whose depth for the data says where its answer lands (:func:`runtime_model.depth_factor`).
    Decide and Compare both predict with it."""
    data, _ = get_dataset(scenario.dataset)
    n_users, cells = min(scenario.n_users or data.n, data.n), int(scenario.grid_side) ** 2
    path = runtime_model.path_of(scenario.params)
    try:
        cell_m = Grid(data.resolve_region(scenario.region), int(scenario.grid_side)).cell_m
    except LdpvizInputError:
        cell_m = None                      # a region that cannot be resolved: predicted without the shape
    one = runtime_model.predict(scenario.mechanism, path, n_users, cells, 1)
    measured = one is None                 # not calibrated: this server's timings of such runs, if any
    if measured:
        one = longrun.timings().predict(scenario.mechanism, n_users, cells, 1, path=path)[0]
    return runtime_model.goal_seek_seconds(scenario.mechanism, n_users, cells, trials, cell_m=cell_m, one_run_s=one,
                                           path=path, measured=measured, branch=branch, target_m=w2_target_m)


def w2_target(question: str, metric: str, target: float) -> float | None:
    """The W2 target in metres a goal seek's time prediction reads (:func:`goal_seek_seconds`): a search for the
    smallest epsilon under a W2 target; None for other metrics and for the fewest-users question."""
    return float(target) if question in ("epsilon", "target_epsilon") and metric == "w2_m" else None


def goal_answer(mode: str, scenario: Scenario, metric: str, target: float,
                dataset: datasets.Dataset | None = None) -> dict[str, Any]:
    """Compare's target mode: ``tradeoff.target_epsilon`` ("target_epsilon": the smallest epsilon found
    meeting ``metric <= target``) or ``tradeoff.users_needed`` ("users_needed", at the scenario's epsilon).
    No Streamlit calls: it runs on a seek thread (:func:`tradeoff.seeks_side_by_side`)."""
    from ldpviz.decide import tradeoff     # at the scenario's users (None there means everyone in the region)
    question = "epsilon" if mode == "target_epsilon" else "users"
    return tradeoff.goal_seek(question, scenario, metric, float(target), dataset=dataset).to_dict()


def goal_seek_key(mode: str, scenario: Scenario, metric: str, target: float, dataset_key: str) -> str:
    """The key Compare holds a goal seek under (:func:`held_goal_seek`)."""
    return repr(("compare", mode, scenario, metric, float(target), dataset_key))


@st.cache_data(max_entries=256, ttl=RESULT_TTL_S, show_spinner=False)
def held_goal_seek(key: str, _compute: Callable[[], dict[str, Any]],
                   _found: dict[str, Any] | None = None) -> dict[str, Any]:
    """A goal seek's answer memoised under ``key`` (a repr of everything the answer depends on): ``_found`` when a
    seek thread computed it (:func:`ldpviz.decide.tradeoff.seeks_side_by_side`), else ``_compute()`` here. The key
    joins :func:`goal_seeks_held`, so Decide and Compare read a held answer back at once instead of searching on a
    thread again (and never ask to start it again)."""
    goal_seeks_held().add(key)
    return _found if _found is not None else _compute()


def seek_poll(slot: Any, seeks: int) -> Callable[[], None]:
    """``poll`` for :func:`ldpviz.decide.tradeoff.seeks_side_by_side` on a page: writes the seconds so far into
    ``slot`` (an ``st.empty``). Each write is a message to the browser, and sending one is where Streamlit stops a
    script whose inputs changed: the page's re-run then ends the seeks instead of waiting for them (issue 36)."""
    started = time.perf_counter()

    def poll() -> None:
        slot.caption(f"Searching {seeks} mechanism{'s' if seeks != 1 else ''}: {time.perf_counter() - started:.1f} s "
                     "so far; each answer shows as it is found ...")
    return poll


@st.cache_resource
def goal_seeks_held() -> longrun.Seen:
    """Keys of the goal seeks this server has answered (:func:`held_goal_seek`); bounded like every server-wide
    container (a key forgotten means the answer is sought again on a thread, as when its cache entry expires)."""
    return longrun.Seen(1024)


@st.cache_data(max_entries=16, ttl=RESULT_TTL_S, show_spinner=False, hash_funcs={Scenario: repr})
def frontier(scenario: Scenario, names: tuple[str, ...], epsilons: tuple[float, ...], metric: str,
             n_users: tuple[int | None, ...], attackers: tuple[bool, ...], dataset_key: str,
             _dataset: datasets.Dataset | None = None) -> pd.DataFrame:
    """``tradeoff.frontier`` memoised (metric and population-prior attacker per mechanism, users and epsilon);
    ``attackers[i]`` False skips the attacker of ``names[i]`` (too costly on this grid)."""
    from ldpviz.decide import tradeoff
    return pd.concat([tradeoff.frontier(scenario, [name], list(epsilons), metric=metric, n_users=list(n_users),
                                        attacker=bool(attack), dataset=_dataset)
                      for name, attack in zip(names, attackers)], ignore_index=True)


def approved_if_long(label: str, seconds: float, basis: str, run_key: str, unreached_s: float | None = None) -> bool:
    """True when a computation predicted at ``seconds`` may run now: short, or started by the user. ``unreached_s``:
    a goal seek's time if no epsilon reaches its target, said beside it."""
    return seconds <= longrun.LONG_S or longrun.announce(label, seconds, basis, run_key, unreached_s)
