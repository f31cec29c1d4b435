"""How long a scenario will take on a quiet machine: measured cost models per mechanism and path.

Issue 22: the dashboard's long-run predictions were far off (OUE at d = 256 predicted at 8 min, took 6.3 s;
HUEM at d = 96 predicted at 18 s, took 68 s with five sessions running). Two causes: one linear scaling for
every mechanism (the nearest measured run times users x cells), and no account of the load.

The model. A run's seconds are ``fixed + (1 + (trials - 1) x extra) x per_trial + trials x metrics``, where
``extra`` is what each further trial's perturb and estimate cost as a share of the first's (1 for a mechanism
that runs its trials one after the other, less where trials run as one batch; measured per mechanism and path
at one size), and ``fixed``, ``per_trial`` and ``metrics`` are non-negative combinations of the features of
:func:`features` (n users, D = d x d cells):

    t(n, D) = c0 + c_n n + c_D D + c_nD n D + c_D15 D^1.5

fitted (non-negative least squares, :func:`fit`) to wall times that ``bench/bench_runtime.py`` measures
per mechanism and path ('per-user', 'aggregate'; '-' for mechanisms with one path), and, for the metrics
every trial computes (W2, AQE, ...), one model shared by all mechanisms. ``path='auto'`` is predicted as
the faster of the two paths (what :mod:`ldpviz.mechanisms.path_cost` aims to choose).

The load (issue 28). Predictions are quiet-machine seconds and never multiplied by the load: a gate that did
so (x6.4 seen) hid the bundled default behind a Start button on every busy server, and missed by 3-10x in both
directions. Each measurement is the run's CPU seconds (``time.process_time`` of its process, which the other
processes on the machine do not inflate; on a quiet machine a CPU-bound run's wall time), so the calibration
means the same on a busy server as on an idle one. A prediction is shown as a range (:func:`seconds_range`),
with the words that the load may slow it. :func:`slowdown` (``max(1, load / cores)``) remains for a page that
wants to say how busy the server is.

The machine (issue 36). The calibration is measured on one machine; a server on another runs at another speed
(the shipped file, measured on an AMD EPYC, predicted the Intel Xeon that ran docs/goal-seek-shapes.md 2-4x
short). The file also keeps the CPU seconds of one fixed probe run (:data:`PROBE`) on the machine that measured it,
and :func:`machine_factor` times the same probe here (again every few minutes, the median of the last few): every
calibrated prediction is scaled by the ratio. ``LDPVIZ_MACHINE_FACTOR`` sets the factor instead (the test suite
pins it to 1, so what a test sees does not depend on the machine it runs on).

The coefficients and how they were measured (machine, date, sizes, load) are in
``ldpviz/data/runtime_calibration.json``; :data:`CALIBRATION_FILE` is read once.
"""

from __future__ import annotations

import functools
import json
import math
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np

from ldpviz.errors import LdpvizInputError, require

CALIBRATION_FILE = Path(__file__).resolve().parents[1] / "data" / "runtime_calibration.json"
FEATURE_NAMES = ("1", "n", "D", "n*D", "D^1.5")
SINGLE_PATH = "-"
METRICS = "metrics"        #: the key of the shared per-trial metrics model


def features(n_users: float, cells: float) -> np.ndarray:
    """The model's features for ``n_users`` users over ``cells`` cells."""
    n, d = float(n_users), float(cells)
    return np.array([1.0, n, d, n * d, d ** 1.5])


def cores() -> int:
    return max(os.cpu_count() or 1, 1)


def current_load() -> float:
    """The 1-minute load average (runnable processes), or 0 where the system does not report one."""
    try:
        return float(os.getloadavg()[0])
    except (AttributeError, OSError):
        return 0.0


def slowdown(load: float, n_cores: int | None = None) -> float:
    """How much slower a CPU-bound run goes with ``load`` runnable processes on ``n_cores`` cores."""
    return max(1.0, float(load) / float(n_cores or cores()))


def fit(rows: Sequence[tuple[float, float, float]]) -> tuple[float, ...]:
    """Non-negative coefficients of :func:`features` fitted to (n, D, seconds) rows.

    Minimises sum((predicted - t)^2 / t): between absolute error (which only the longest runs would steer)
    and relative error (which the many sub-second runs, mostly overhead, would steer); the predictions
    that matter are of long runs, so larger runs weigh more, but every run counts.
    """
    from scipy.optimize import nnls

    require(len(rows) > 0, "cannot fit a cost model to no measurements")
    X = np.array([features(n, d) for n, d, _ in rows])
    y = np.array([max(t, 1e-6) for _, _, t in rows])
    scale = X.max(axis=0)
    scale[scale == 0] = 1.0
    w = 1.0 / np.sqrt(y)
    coef, _ = nnls((X / scale) * w[:, None], y * w)
    return tuple(float(c) for c in coef / scale)


def evaluate(coefficients: Iterable[float], n_users: float, cells: float) -> float:
    return float(np.dot(np.asarray(tuple(coefficients), dtype=float), features(n_users, cells)))


def metrics_table(runs: Sequence[dict[str, Any]],
                  mechanism: str | None = None) -> tuple[tuple[float, float, float], ...]:
    """The measured metrics seconds per size: (n, D, median over the runs at that size), from ``mechanism``'s own
    runs (its estimates, noisy or smooth, set what exact W2 costs) and, beyond the largest grid it was measured on,
    the shared larger-grid runs; ``mechanism=None``: every run."""
    mine = [r for r in runs if mechanism is None or r["mechanism"] == mechanism]
    top = max((r["D"] for r in mine), default=0)
    chosen = mine + [r for r in runs if r["D"] > top and r not in mine]
    by: dict[tuple[float, float], list[float]] = {}
    for r in chosen:
        by.setdefault((float(r["n"]), float(r["D"])), []).append(float(r["metrics"]))
    return tuple((n, d, float(np.median(v))) for (n, d), v in sorted(by.items()))


def along(points: Sequence[tuple[float, float]], x: float, geometric: bool = False) -> float:
    """(x, y) points read at x > 0: linear in log x between the two nearest (y linear, or with ``geometric`` linear
    in log y), held at the end values beyond them (never extrapolated). One reading for every measured table here."""
    points = sorted(points)
    if x <= points[0][0]:
        return points[0][1]
    if x >= points[-1][0]:
        return points[-1][1]
    (x0, y0), (x1, y1) = next((a, b) for a, b in zip(points, points[1:]) if a[0] <= x <= b[0])
    w = (math.log(x) - math.log(x0)) / (math.log(x1) - math.log(x0)) if x1 > x0 else 0.0
    return y0 * (y1 / y0) ** w if geometric else y0 + w * (y1 - y0)


def interpolate(table: Sequence[tuple[float, float, float]], n_users: float, cells: float) -> float:
    """Seconds at (n, D) from a table of measured (n, D, seconds): linear in log D between the two nearest
    measured grids and, at each, linear in log n between the two nearest measured user counts (a grid measured at
    one count only grows with n as the nearest grid measured at several did); held at the nearest measured size
    outside the table (never extrapolated: the solver behind a metric changes with the grid, so no smooth curve
    carries it beyond what was measured)."""
    grids = sorted({d for _, d, _ in table})
    n = max(n_users, 1.0)
    rows = {d: [(nn, t) for nn, dd, t in table if dd == d] for d in grids}
    several = [d for d in grids if len(rows[d]) > 1]

    def at(d: float) -> float:
        if len(rows[d]) > 1 or not several:
            return along(rows[d], n)
        # one user count measured on this grid: scale it by how the nearest grid measured at several counts grew
        near = min(several, key=lambda g: abs(math.log(g) - math.log(d)))
        (n0, t0), = rows[d]
        return t0 * along(rows[near], n) / max(along(rows[near], n0), 1e-12)

    return float(along([(d, at(d)) for d in grids], max(cells, 1.0)))


@dataclass(frozen=True)
class Calibration:
    """Fitted models keyed ``mechanism|path`` (each ``{"fixed": coef, "trial": coef}`` and optionally
    ``"extra": (share,)``, what each trial after the first costs), the shared metrics model, and how they were
    measured."""

    models: dict[str, dict[str, tuple[float, ...]]]
    metrics: tuple[float, ...]
    measured_on: str
    #: measured metrics seconds per mechanism (``"*"``: every run), :func:`metrics_table`; read by
    #: :meth:`metrics_seconds` in place of the fitted ``metrics`` curve when present
    metrics_tables: dict[str, tuple[tuple[float, float, float], ...]] = field(default_factory=dict)
    #: CPU seconds of :data:`PROBE` on the machine that measured the calibration (None: not measured)
    probe_seconds: float | None = None

    def metrics_seconds(self, mechanism: str, n_users: int, cells: int) -> float:
        """What one trial's metrics cost: interpolated from the measured table of this mechanism (else of every
        run), else the fitted curve. The fitted curve, shared by every mechanism, missed 3x where exact W2 of a
        noisy estimate costs more than of a smooth one (OLH at d = 64, docs/runtime-calibration.md)."""
        table = self.metrics_tables.get(mechanism) or self.metrics_tables.get("*")
        if table:
            return interpolate(table, n_users, cells)
        return evaluate(self.metrics, n_users, cells)

    def has(self, mechanism: str) -> bool:
        return any(k.split("|")[0] == mechanism for k in self.models)

    def paths(self, mechanism: str) -> list[str]:
        return [k.split("|")[1] for k in self.models if k.split("|")[0] == mechanism]

    def idle_seconds(self, mechanism: str, path: str, n_users: int, cells: int, trials: int) -> float | None:
        """Seconds on an idle machine, or None when the mechanism was not calibrated."""
        known = self.paths(mechanism)
        if not known:
            return None
        if path in known:
            chosen = [path]
        elif SINGLE_PATH in known:
            chosen = [SINGLE_PATH]
        else:                                   # 'auto': the faster of the calibrated paths
            chosen = known
        metrics = self.metrics_seconds(mechanism, n_users, cells)
        best = math.inf
        for p in chosen:
            model = self.models[f"{mechanism}|{p}"]
            extra = float(model.get("extra", (1.0,))[0])
            seconds = (evaluate(model["fixed"], n_users, cells)
                       + (1 + (trials - 1) * extra) * evaluate(model["trial"], n_users, cells) + trials * metrics)
            best = min(best, seconds)
        return best

    def to_json(self) -> dict[str, Any]:
        return {"measured_on": self.measured_on, "features": list(FEATURE_NAMES), "metrics": list(self.metrics),
                "models": {k: {part: list(c) for part, c in v.items()} for k, v in self.models.items()},
                "metrics_tables": {k: [list(row) for row in v] for k, v in self.metrics_tables.items()},
                **({"probe": {"run": PROBE_TEXT, "cpu_s": self.probe_seconds}} if self.probe_seconds else {})}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "Calibration":
        require(list(data.get("features", [])) == list(FEATURE_NAMES), "runtime calibration: features differ")
        return cls({k: {part: tuple(c) for part, c in v.items()} for k, v in data["models"].items()},
                   tuple(data["metrics"]), str(data["measured_on"]),
                   {k: tuple(tuple(float(x) for x in row) for row in v)
                    for k, v in data.get("metrics_tables", {}).items()},
                   _probe_seconds(data.get("probe")))


def _probe_seconds(probe: Any) -> float | None:
    """The stored probe's CPU seconds, if it is this version's probe and a positive number."""
    try:
        seconds = float(probe["cpu_s"])
    except (TypeError, KeyError, ValueError):
        return None
    return seconds if probe.get("run") == PROBE_TEXT and math.isfinite(seconds) and seconds > 0 else None


#: The probe run that measures this machine's speed against the calibrating machine's: one GRR trial on the
#: aggregate path, 20,000 users of the synthetic 'normal' data on a 32 x 32 grid (about 0.1 s; its perturbation,
#: EM-free estimate and W2 readout are the arithmetic most runs spend their time on).
PROBE = {"dataset": "normal", "mechanism": "grr", "grid_side": 32, "n_users": 20_000,
         "params": {"path": "aggregate"}, "seed": 0, "trials": 1}
PROBE_TEXT = "experiment.run: grr, aggregate path, 20,000 users of 'normal', d = 32, one trial, seed 0"
#: The probe's repeats after one warm-up run (imports, first-use caches); their median CPU time is the figure. The
#: least of three, used before, caught this shared machine's rare fast moments: probes of 0.054 s among the usual
#: 0.065-0.070 s put one process's factor at 0.77 and the next's at 0.96, and every prediction with it.
PROBE_REPEATS = 5
#: The factor is kept within these bounds: a probe disturbed beyond them says more about the moment than the
#: machine.
MACHINE_FACTOR_BOUNDS = (0.25, 4.0)


def time_probe() -> float:
    """CPU seconds of :data:`PROBE` here: the median of :data:`PROBE_REPEATS` runs after a warm-up."""
    from ldpviz import experiment
    scenario = experiment.Scenario(**PROBE)
    experiment.run(scenario)
    seconds = []
    for _ in range(PROBE_REPEATS):
        started = time.process_time()
        experiment.run(scenario)
        seconds.append(time.process_time() - started)
    return float(np.median(seconds))


#: A server re-times the probe when its last probe is older than this, and uses the median of the last
#: MACHINE_PROBE_HISTORY probes: one probe disturbed at start-up (1.41 against 0.97 quiet, measured while writing
#: docs/goal-seek-shapes.md) is outvoted within a few refreshes instead of scaling every prediction for the life of the
#: process. The fastest probe so far, used before, ratcheted onto a shared machine's rare fast moments: on the AMD EPYC
#: that measured docs/goal-seek-runs.md a probe of 0.040 s among the usual 0.050-0.066 s moved one run's factor from
#: 0.78 to 0.58 for its last third, with no faster seeks. About 0.3 s of CPU per refresh.
MACHINE_PROBE_REFRESH_S = 600.0
MACHINE_PROBE_HISTORY = 12
_PROBES: dict[str, Any] = {"seen": [], "at": -math.inf}
_PROBE_LOCK = threading.Lock()


def _typical_probe() -> float | None:
    """The median CPU seconds of the last :data:`MACHINE_PROBE_HISTORY` probes of :data:`PROBE` this process timed
    (timed again when the last is older than :data:`MACHINE_PROBE_REFRESH_S`); None if it never could run."""
    with _PROBE_LOCK:
        now = time.monotonic()
        seen: list[float] = _PROBES["seen"]
        if not seen or now - float(_PROBES["at"]) >= MACHINE_PROBE_REFRESH_S:
            try:
                seen.append(time_probe())
                del seen[:-MACHINE_PROBE_HISTORY]
                _PROBES["at"] = now
            except Exception:  # noqa: BLE001 -- a prediction must never fail: the probes so far, if any
                pass
        return float(np.median(seen)) if seen else None


def pin_machine_factor(probes: int = 5) -> float:
    """Time the probe ``probes`` times, pin the factor at their median for this process (``LDPVIZ_MACHINE_FACTOR``)
    and return it: a benchmark's rows then all carry one factor, stated in its report, instead of one that moves
    as the probe is timed again during the run."""
    os.environ.pop("LDPVIZ_MACHINE_FACTOR", None)
    forget_machine_probes()
    for _ in range(max(int(probes), 1)):
        with _PROBE_LOCK:
            _PROBES["at"] = -math.inf                   # due again
        factor = machine_factor()
    os.environ["LDPVIZ_MACHINE_FACTOR"] = repr(factor)
    return factor


def forget_machine_probes() -> None:
    """Forget the probes timed so far: the next :func:`machine_factor` times the probe afresh (tests, benches)."""
    with _PROBE_LOCK:
        _PROBES.update(seen=[], at=-math.inf)


def machine_factor() -> float:
    """How much slower this machine runs the calibration's work than the machine that measured it (a ratio of
    :data:`PROBE`'s CPU seconds: the median of the last probes this process timed, :func:`_typical_probe`;
    ``LDPVIZ_MACHINE_FACTOR`` overrides it; 1 where the calibration has no probe or the probe cannot run)."""
    pinned = os.environ.get("LDPVIZ_MACHINE_FACTOR", "").strip()
    if pinned:
        try:
            value = float(pinned)
            if math.isfinite(value) and value > 0:
                return value
        except ValueError:
            pass
    cal = calibration()
    if cal is None or not cal.probe_seconds:
        return 1.0
    here = _typical_probe()
    if here is None:
        return 1.0
    low, high = MACHINE_FACTOR_BOUNDS
    return min(max(here / cal.probe_seconds, low), high)


@functools.lru_cache(maxsize=1)
def calibration() -> Calibration | None:
    """The stored calibration (None if the file is missing or unreadable: predictions then rely on runs
    measured by the server itself)."""
    try:
        return Calibration.from_json(json.loads(CALIBRATION_FILE.read_text(encoding="utf-8")))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def path_of(params: dict[str, Any] | Iterable[tuple[str, Any]]) -> str:
    """The path a scenario's parameters request ('auto' unless stated)."""
    return str(dict(params).get("path", "auto"))


#: A prediction is shown as [p / RANGE, p x RANGE]: the calibration's held-out runs fall within 2x of p
#: (docs/runtime-calibration.md), most within 1.5x.
RANGE = 1.5


def predict(mechanism: str, path: str, n_users: int, cells: int, trials: int) -> float | None:
    """Quiet-machine seconds from the stored calibration on this machine (scaled by :func:`machine_factor`); None
    if the mechanism was not calibrated."""
    cal = calibration()
    if cal is None:
        return None
    seconds = cal.idle_seconds(mechanism, path, max(int(n_users), 1), max(int(cells), 1), max(int(trials), 1))
    return None if seconds is None else seconds * machine_factor()


#: What a goal seek costs in one-trial runs of its mechanism, per grid side, outcome and mechanism: written by
#: ``bench/goal_seek_runs.py --install`` (its CPU over the calibrated one-run prediction, docs/goal-seek-runs.md).
GOAL_SEEK_FILE = Path(__file__).resolve().parents[1] / "data" / "goal_seek_runs.json"
#: The same for a mechanism the file does not name (or without the file): the measured median, else this.
GOAL_SEEK_RUNS = 26.0
#: A seek's two outcomes: some epsilon reaches the target (scan, rule, refinement, fresh decision, attacker), or
#: none does (the scan alone: one collection at each of its values, ``one_collection.scan_epsilon``).
BRANCHES = ("reached", "scan")
#: The scan's share of a reached seek's collections (about 15 values at one collection, then about 6 settings at
#: 10), for a table without the scan outcome.
SCAN_SHARE = 15 / (15 + 6 * 10)


def target_depth(target_m: float, cell_m: float, n_users: int) -> float:
    """How deep a W2 target lies for the data: ``z = target / cell x sqrt(users)``, the target in cells against the
    1 / sqrt(n) noise of an estimate from n reports (issue 36). Where z is small (a national file's 40 km cells
    under an 800 m target: z ~ 2; the bundled city at d = 32: ~290) the seek's answer lands at a large epsilon,
    where an EM mechanism's collections converge in a few steps, so the seek costs fewer runs."""
    return float(target_m) / max(float(cell_m), 1e-9) * math.sqrt(max(int(n_users), 1))


def estimated_by_em(mechanism: str) -> bool:
    """Whether ``mechanism``'s server estimate is an EM / EMS fit (it declares a ``postprocess`` parameter: the DAM
    family, planar Laplace, SEM-Geo-I, MDSW): its collections cost fewer EM steps the larger the epsilon, so where a
    seek's answer lands sets its cost. A frequency oracle's estimate is closed-form, at the same cost at any
    epsilon."""
    from ldpviz import mechanisms
    try:
        return any(p.name == "postprocess" for p in mechanisms.get(mechanism).params)
    except (KeyError, LdpvizInputError, AttributeError):
        return False


def depth_factor(mechanism: str, side: int, depth: float | None) -> float:
    """How much a reached goal seek's cost in runs at target depth ``depth`` (:func:`target_depth`) differs from the
    table's at grid side ``side``: the mechanism's runs against depth, measured on the bundled city at one side
    (``depth`` in :data:`GOAL_SEEK_FILE`, bench/goal_seek_runs.py), at ``depth`` over at the depth where that side's
    figure was measured (the city's default target at that side). 1 without a depth, for a mechanism whose estimate
    is not an EM fit (:func:`estimated_by_em`: its runs on the city moved with the depth, 9.8 / 15.1 / 12.9 for GRR,
    but the national file's seeks did not follow: GRR, GRR and HR on tiles ran at 1.7-2.3x the curve's figure), or
    measured at fewer than two depths."""
    info = goal_seek_depths()
    curve = info.get("runs", {}).get(mechanism) if depth and estimated_by_em(mechanism) else None
    ref = info.get("reference")
    if not curve or len(curve) < 2 or not ref:
        return 1.0
    ref_cell = float(ref["width_m"]) / max(int(side), 1)
    here_ref = target_depth(float(ref["target_m"]), ref_cell, int(ref["users"]))
    return along(curve, float(depth), geometric=True) / along(curve, here_ref, geometric=True)


@functools.lru_cache(maxsize=1)
def goal_seek_depths() -> dict[str, Any]:
    """The ``depth`` part of :data:`GOAL_SEEK_FILE`: ``{"side", "reference": {"target_m", "users", "width_m"},
    "runs": {mechanism: [[z, runs], ...]}}``; empty when the file has none or is unreadable."""
    try:
        data = json.loads(GOAL_SEEK_FILE.read_text(encoding="utf-8")).get("depth") or {}
        runs = {str(k): [(float(z), float(r)) for z, r in v if float(z) > 0 and float(r) > 0]
                for k, v in data.get("runs", {}).items()}
        ref = data["reference"] if "reference" in data else None
        return {"side": int(data.get("side", REFERENCE_SIDE)), "reference": ref, "runs": runs} if ref else {}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}


@functools.lru_cache(maxsize=1)
def goal_seek_table() -> dict[int, dict[str, dict[str, float]]]:
    """``{grid side: {outcome: {mechanism: one-trial runs a goal seek costs}}}`` from :data:`GOAL_SEEK_FILE`
    (``"*"``: the median; a file of the earlier form, ``{"runs": {...}}`` measured at d = 32, reads as that side's
    reached outcome); empty when the file is missing or unreadable."""
    try:
        data = json.loads(GOAL_SEEK_FILE.read_text(encoding="utf-8"))
        sides = data["sides"] if "sides" in data else {str(REFERENCE_SIDE): {"reached": data["runs"]}}
        return {int(side): {str(b): {str(k): float(v) for k, v in runs.items() if float(v) > 0}
                            for b, runs in per.items() if b in BRANCHES}
                for side, per in sides.items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}


def _runs_at(per_side: dict[str, dict[str, float]], branch: str, mechanism: str | None) -> float | None:
    runs = per_side.get(branch) or {}
    value = runs.get(str(mechanism), runs.get("*"))
    if value is None and branch == "scan":          # a table without the scan outcome: its share of a reached seek
        reached = _runs_at(per_side, "reached", mechanism)
        value = None if reached is None else reached * SCAN_SHARE
    return value


def goal_seek_runs(trials: int = 10, mechanism: str | None = None, cells: int | None = None,
                   branch: str = "reached") -> float:
    """One-trial runs a goal seek of ``mechanism`` costs on ``cells`` cells (default the reference d = 32) at
    ``trials`` collections per decision, when some epsilon reaches the target (``branch`` "reached") or when none
    does ("scan"): the measured figures (:func:`goal_seek_table`), interpolated between the measured grid sides in
    log cells and held beyond them (a seek's answer lies at another epsilon than the one run's, where W2 and EM cost
    more or less, so its cost grows with the grid at its own rate). A reached seek scales by the collections it
    simulates: about 15 scan values at one collection, then about 6 settings at ``trials``; the scan does not."""
    table = goal_seek_table()
    cells = REFERENCE_SIDE ** 2 if cells is None else max(int(cells), 1)
    known = sorted((side * side, _runs_at(per, branch, mechanism)) for side, per in table.items())
    known = [(c, v) for c, v in known if v]
    runs = (along(known, cells, geometric=True) if known else
            GOAL_SEEK_RUNS * (1.0 if branch == "reached" else SCAN_SHARE))
    return runs * (15 + 6 * int(trials)) / (15 + 6 * 10) if branch == "reached" else runs


#: Where goal_seek_runs.json was measured: the bundled city (minneapolis-stops), this many metres wide, so cells of
#: REFERENCE_WIDTH_M / d at each measured side d; REFERENCE_SIDE: the side an older single-side table was measured at.
REFERENCE_WIDTH_M, REFERENCE_SIDE = 20_000.0, 32
#: The goal seek's scan: epsilon per km from EPSILON_MIN doubling up to EPSILON_MAX (one_collection.scan_epsilon).
SCAN_EPSILONS = tuple(0.001 * 2.0 ** k for k in range(16))


def _latent_cells(side: int, cell_m: float, epsilons: Sequence[float] = SCAN_EPSILONS) -> float:
    """Planar Laplace's EM latent cells averaged over ``epsilons`` (per km; default the scan's): (d s)^2 with s
    sub-cells per cell side where the noise is narrower than a cell
    (:func:`ldpviz.mechanisms.dam.planar_laplace.subcells_per_side`)."""
    from ldpviz.mechanisms.dam.planar_laplace import subcells_per_side
    return float(np.mean([(side * subcells_per_side(e * cell_m / 1000.0, side)) ** 2 for e in epsilons]))


def shape_factor(mechanism: str, side: int, cell_m: float | None, measured: bool = False) -> float:
    """How much more a goal seek costs than its one-trial runs at epsilon 1 say, from the noise scale against the
    cell size (issue 36): planar Laplace's EM runs on s x s sub-cells wherever its noise is narrower than a cell,
    so its cost follows the scan-averaged latent grid. Against the seek where its cost in runs was measured (the
    bundled city at the same side, cells of :data:`REFERENCE_WIDTH_M` / d): with ``measured`` False the one run is
    the calibrated model's, which knows users and cells but not sub-cells, so the factor is the scan-averaged
    latent cells per cell here over the reference's; with ``measured`` True the one run was timed at epsilon 1
    here (its sub-cells included), so
    the factor is the scan's average over the latent grid at epsilon 1, here over the reference's. Below 1 on cells
    smaller than the reference's (fewer epsilons put the noise within a cell): a small file's seek (320 m cells) ran
    at about half its prediction when the factor was held at 1 there (docs/goal-seek-shapes.md, three runs). 1 for
    other mechanisms, whose cost does not depend on the cell size."""
    side = max(int(side), 1)
    ref_cell = REFERENCE_WIDTH_M / side          # the city at this side, where the seek's runs were measured
    if mechanism != "planar-laplace" or not cell_m:
        return 1.0
    cell_m = float(cell_m)
    here = _latent_cells(side, cell_m) / (_latent_cells(side, cell_m, (1.0,)) if measured else side ** 2)
    ref = _latent_cells(side, ref_cell) / (_latent_cells(side, ref_cell, (1.0,)) if measured else side ** 2)
    return here / ref


def goal_seek_seconds(mechanism: str, n_users: int, cells: int, trials: int = 10, cell_m: float | None = None,
                      one_run_s: float | None = None, path: str = "auto", measured: bool = False,
                      branch: str = "reached", target_m: float | None = None) -> float:
    """Quiet-machine seconds of a goal seek: one one-trial run at epsilon 1 (``one_run_s``, timed on this server
    when ``measured``, else the calibrated model's) times the seek's cost in such runs (:func:`goal_seek_runs`)
    times the data's shape (:func:`shape_factor`: the noise scale against the cell size) and, for a seek that
    reaches a W2 target of ``target_m`` metres, the target's depth (:func:`depth_factor`: where its answer lands).
    ``branch``: "reached" (some epsilon reaches the target) or "scan" (none does: the scan alone; its cost does not
    depend on the target). Every page and bench predicts with it."""
    if one_run_s is None:
        one_run_s, measured = predict(mechanism, path, n_users, cells, 1), False
        if one_run_s is None:                # not calibrated: the median mechanism's cost per user-cell
            one_run_s = 2e-6 * n_users + 2e-5 * cells
    side = int(round(math.sqrt(max(int(cells), 1))))
    depth = (target_depth(target_m, cell_m, n_users) if branch == "reached" and target_m and cell_m else None)
    return (float(one_run_s) * goal_seek_runs(trials, mechanism, cells, branch)
            * shape_factor(mechanism, side, cell_m, measured) * depth_factor(mechanism, side, depth))


def side_by_side_seconds(seconds: Sequence[float], threads: int) -> float:
    """Wall time of seeks predicted at ``seconds`` run ``threads`` at a time: at least the longest, at least
    their total shared over the threads (a lower bound that the start order nears)."""
    seconds = [float(s) for s in seconds]
    return max(max(seconds, default=0.0), sum(seconds) / max(int(threads), 1))


def seconds_range(seconds: float) -> tuple[float, float]:
    """The range a quiet-machine prediction of ``seconds`` is shown as."""
    return seconds / RANGE, seconds * RANGE


def fmt_range(seconds: float) -> str:
    """'about 15-30 s', 'about 2-4 min': a prediction as people read it (rounded so the ends differ)."""
    low, high = seconds_range(seconds)
    if high < 90:
        lo, hi = max(int(round(low)), 1), max(int(round(high)), 1)
        return f"about {hi} s" if lo >= hi else f"about {lo}-{hi} s"
    if high < 5400:
        lo, hi = max(int(round(low / 60)), 1), max(int(round(high / 60)), 1)
        return f"about {hi} min" if lo >= hi else f"about {lo}-{hi} min"
    return f"about {low / 3600:.1f}-{high / 3600:.1f} h"
