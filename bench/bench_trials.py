"""Benchmark: trials in one pass (issue 23). What do 5 trials cost against one, for every mechanism?

Scenario: Minneapolis stops (bundled), d = 32, 50,000 users (a seeded sample), epsilon = 1, seed 0. For each
mechanism, in every repetition and in rotating order (so they share the machine's momentary load):

* ``one``: ``run(Scenario(..., trials=1))``, the whole run (prepare, setup, draw, estimate, metrics);
* ``loop5``: 5 trials the way ``run`` did them before issue 23: prepare and setup once, then per trial
  collect, estimate and ``metrics.evaluate`` (truth-side metric work repeated per trial);
* ``batched5``: ``run(Scenario(..., trials=5))`` on the batched path (``Mechanism.run_trials``,
  ``metrics.evaluate_trials``).

* ``mech1`` / ``mech5`` (issue 28): the mechanism side alone, what ``run`` spends on it: build the mechanism
  (setup) and ``Mechanism.run_trials`` with 1 or 5 generators (draw + estimate), no metrics.

Reports the median over the repetitions of each, the goal ratios batched5 / one and mech5 / mech1 (issues 23
and 28: at most 2) and the speed-up loop5 / batched5. Both 5-trial variants give identical numbers
(tests/experiment/test_trials.py). A mechanism that refuses the grid (SEM-Geo-I at d = 32) is measured on the fallback
grid instead, and says so. Writes DIR/trials-benchmark.md (default docs/).

    PYTHONPATH=. python bench/bench_trials.py [--reps 3] [--users 50000] [--grid 32] [--out DIR] [--only a,b]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ldpviz.data import datasets  # noqa: E402
from ldpviz import experiment, mechanisms, metrics  # noqa: E402
from ldpviz.experiment import Scenario  # noqa: E402
from ldpviz.evidence.reproduce import provenance_markdown  # noqa: E402

TRIALS = 5
#: Settings that differ from the defaults, with the reason (stated in the report). None: every mechanism runs
#: at its defaults, and one that refuses this setting is listed as not measured, with its own message (SEM-Geo-I
#: refuses d = 32 at epsilon = 1: its calibration against DAM would take minutes).
OVERRIDES: dict[str, tuple[dict, str]] = {}


def loop_run(scenario: Scenario, dataset: datasets.Dataset) -> list[dict]:
    """The pre-issue-23 loop: one trial after another, every metric recomputed from scratch per trial."""
    grid, users, _ = experiment.prepare_users(scenario, dataset)
    n = len(users.cells)
    true_density = grid.histogram(users.cells) / n
    mech = mechanisms.create(scenario.mechanism, grid, scenario.epsilon, **scenario.param_dict)
    queries = metrics.random_queries(scenario.query_rho, seed=scenario.seed)
    rows = []
    for trial in range(scenario.trials):
        rng = np.random.default_rng([scenario.seed, trial])
        est = mech.estimate(mech.collect(users, rng)) if mech.has_client else mech.run(users, rng)
        rows.append(metrics.evaluate(true_density, est, cell_m=grid.cell_m, n_users=n, true_points=users.unit,
                                     queries=queries))
    return rows


def mechanism_side(scenario: Scenario, dataset: datasets.Dataset, trials: int) -> tuple[float, float]:
    """What ``run`` spends on the mechanism, in CPU seconds of this process (all threads): (setup, every trial's
    draw and estimate); the data preparation before it is not timed, metrics are not run."""
    grid, users, _ = experiment.prepare_users(scenario, dataset)
    c0 = time.process_time()
    mech = mechanisms.create(scenario.mechanism, grid, scenario.epsilon, **scenario.param_dict)
    c1 = time.process_time()
    mech.run_trials(users, [np.random.default_rng([scenario.seed, t]) for t in range(trials)])
    return c1 - c0, time.process_time() - c1


def mechanism_side_alone(scenario: Scenario, dataset: datasets.Dataset, trials: int) -> tuple[float, float]:
    """:func:`mechanism_side` with every trial run alone (``run_trials`` with one generator, the same draws):
    (setup once, the trials' draw and estimate summed), CPU seconds. Its sum is the per-trial arithmetic of
    the trials the batched run does (trials differ: one that stops late costs more EM steps)."""
    grid, users, _ = experiment.prepare_users(scenario, dataset)
    c0 = time.process_time()
    mech = mechanisms.create(scenario.mechanism, grid, scenario.epsilon, **scenario.param_dict)
    c1 = time.process_time()
    for t in range(trials):
        mech.run_trials(users, [np.random.default_rng([scenario.seed, t])])
    return c1 - c0, time.process_time() - c1


def floor_ratio(setup_s: float, trials_alone_s: float, one_trial_s: float) -> float:
    """The mechanism side's ratio if nothing but setup were shared: (setup + each trial's draw and estimate run
    alone, summed) / (setup + one trial's). Independent trials need independent draws and EM iterations per
    trial, so a batched run can beat this only by sharing per-call overhead, not arithmetic."""
    return (setup_s + trials_alone_s) / max(setup_s + one_trial_s, 1e-12)


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3, help="repetitions per mechanism (default 3)")
    parser.add_argument("--users", type=int, default=50_000)
    parser.add_argument("--grid", type=int, default=32)
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--only", default="", help="comma-separated mechanisms (default: all)")
    parser.add_argument("--fallback-grid", type=int, default=16,
                        help="grid side for a mechanism that refuses --grid (default 16)")
    parser.add_argument("--out", default=str(ROOT / "docs"))
    parser.add_argument("--quick", action="store_true",
                        help="smoke run: 5,000 users, d = 16, one repetition, GRR, DAM and planar Laplace only")
    args = parser.parse_args()
    if args.quick:
        args.reps, args.users, args.grid = 1, 5_000, 16
        args.only = args.only or "grr,dam,planar-laplace"

    data = datasets.load("minneapolis-stops")
    names = [n for n in args.only.split(",") if n] or mechanisms.available()
    load_start = os.getloadavg()
    started = time.perf_counter()
    rows, skipped = [], []
    for name in names:
        params = OVERRIDES.get(name, ({}, ""))[0]
        base = Scenario(dataset="minneapolis-stops", mechanism=name, epsilon=args.epsilon, grid_side=args.grid,
                        n_users=args.users, seed=0, params=params)
        note = ""
        try:
            experiment.run(base, data)                                   # warm-up: imports, JIT, caches
        except Exception as exc:  # noqa: BLE001 -- retried on the fallback grid, reported with the reason
            try:
                base = base.with_(grid_side=args.fallback_grid)
                experiment.run(base, data)
                note = f"d = {args.fallback_grid}: refused d = {args.grid} ({exc})"
            except Exception as again:  # noqa: BLE001 -- reported as skipped with the reason
                skipped.append((name, f"{exc}; at d = {args.fallback_grid}: {again}"))
                continue
        runs = {"one": lambda: experiment.run(base.with_(trials=1), data),
                "loop5": lambda: loop_run(base.with_(trials=TRIALS), data),
                "batched5": lambda: experiment.run(base.with_(trials=TRIALS), data),
                "mech1": lambda: mechanism_side(base, data, 1),
                "mech5": lambda: mechanism_side(base, data, TRIALS),
                "alone5": lambda: mechanism_side_alone(base, data, TRIALS)}
        order = list(runs)
        times: dict[str, list[float]] = {k: [] for k in runs}
        parts: dict[str, list[tuple[float, float]]] = {"mech1": [], "mech5": [], "alone5": []}
        for rep in range(args.reps):
            for key in order[rep % len(order):] + order[:rep % len(order)]:
                if key in parts:
                    parts[key].append(runs[key]())
                    times[key].append(sum(parts[key][-1]))
                else:
                    times[key].append(timed(runs[key]))
        med = {k: statistics.median(v) for k, v in times.items()}
        med["setup1"] = statistics.median(p[0] for p in parts["mech1"])
        med["trial1"] = statistics.median(p[1] for p in parts["mech1"])
        med["floor"] = floor_ratio(med["setup1"], statistics.median(p[1] for p in parts["alone5"]), med["trial1"])
        batched = experiment.run(base.with_(trials=2), data).batched
        rows.append((name, med, med["batched5"] / med["one"], med["loop5"] / med["batched5"], batched, note))
        print(f"{name:15s} one {med['one']:.3f} s  loop5 {med['loop5']:.3f} s  batched5 {med['batched5']:.3f} s  "
              f"ratio {med['batched5'] / med['one']:.2f}  mechanism CPU {med['mech1']:.3f} / {med['mech5']:.3f} s "
              f"(floor {med['floor']:.2f})",
              flush=True)
    wall = time.perf_counter() - started
    load_end = os.getloadavg()

    met = sum(r[2] <= 2.0 for r in rows)
    met_mech = sum(r[1]["mech5"] <= 2.0 * r[1]["mech1"] for r in rows)
    slow = [r for r in rows if r[1]["mech5"] > 2.0 * r[1]["mech1"]]

    def near_floor(r) -> bool:   # a floor above 2, and mech5 at or below 1.1x that floor
        return r[1]["floor"] > 2.0 and r[1]["mech5"] <= 1.1 * r[1]["floor"] * r[1]["mech1"]
    lines = [
        "# Trials in one pass: 5 trials against one",
        "",
        provenance_markdown(seeds="0 (trial t draws from the generator (0, t))",
                            trials=f"{TRIALS} against 1; median of {args.reps} interleaved repetitions",
                            quick=args.quick or args.reps < 3),
        f"Run by `bench/bench_trials.py --reps {args.reps} --users {args.users} --grid {args.grid}`; "
        f"{wall:.0f} s wall. Load average (1 min) {load_start[0]:.1f} at the start, {load_end[0]:.1f} at the end: "
        "the 2-core machine is shared with other sessions, so absolute times vary between runs; the five "
        "variants of a mechanism were interleaved in rotating order, so their ratios share the load.",
        "",
        f"Scenario: Minneapolis stops (bundled), d = {args.grid}, {args.users:,} users (a seeded sample), "
        f"epsilon = {args.epsilon:g}, default parameters"
        + "".join(f"; {k}: {v[0]} ({v[1]})" for k, v in OVERRIDES.items() if k in names) + ".",
        "",
        "- **one**: `run(Scenario(..., trials=1))`, the whole run (prepare, setup, draw, estimate, every metric).",
        "- **loop5**: 5 trials as `run` did them before issue 23 (per trial: collect, estimate, "
        "`metrics.evaluate` from scratch).",
        "- **batched5**: `run(Scenario(..., trials=5))` now: `Mechanism.run_trials` (path and true counts once, "
        "each trial its own generator; every EM estimator on one stack of all trials) and "
        "`metrics.evaluate_trials` (AQE's true answers, KL's smoothed truth and sliced W2's sorts once).",
        "- Both 5-trial variants give identical numbers (tests/experiment/test_trials.py).",
        "",
        "- **mech1 / mech5** (issue 28): the mechanism side alone, in CPU seconds of the process (all threads; "
        "they survive load better than wall seconds): build the mechanism and run `Mechanism.run_trials` with 1 "
        "or 5 generators (draw + estimate; no metrics, no data preparation).",
        f"- **floor**: (setup + each of the {TRIALS} trials' draw and estimate run alone, summed) / mech1, in CPU "
        "seconds (setup and one trial's time from mech1): the ratio if only setup were shared. Trials must stay "
        "independent (their "
        "intervals assume it), so each trial's draws and each trial's EM iterations are its own arithmetic; "
        f"a mechanism whose floor is above 2 cannot meet the goal by batching, and mech5 / mech1 near its "
        "floor means what remains is that arithmetic.",
        "",
        f"Goal (issues 23 and 28): 5 trials at most 2x one. Whole run (batched5 / one): met by {met} of "
        f"{len(rows)} mechanisms. Mechanism side (mech5 / mech1): met by {met_mech} of {len(rows)}; of the "
        f"{len(rows) - met_mech} that miss, {sum(r[1]['floor'] > 2.0 for r in slow)} have a floor above 2 "
        "(the per-trial arithmetic alone is more than twice one run) and "
        f"{sum(near_floor(r) for r in slow)} of "
        "those run at or below 1.1x their floor (what remains is that arithmetic); "
        f"{', '.join(r[0] for r in slow if not near_floor(r)) or 'none'} "
        "miss for another reason.",
        "",
        "| mechanism | one (s) | loop5 (s) | batched5 (s) | batched5 / one | loop5 / batched5 | mech1 (CPU s) | "
        "setup (CPU s) | mech5 (CPU s) | mech5 / mech1 | floor | EM stacked | note |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, med, ratio, speedup, stacked, note in rows:
        mratio = med["mech5"] / med["mech1"]
        lines.append(f"| {name} | {med['one']:.3f} | {med['loop5']:.3f} | {med['batched5']:.3f} | "
                     f"{ratio:.2f}{' ✓' if ratio <= 2.0 else ''} | {speedup:.2f} | {med['mech1']:.4f} | "
                     f"{med['setup1']:.4f} | {med['mech5']:.4f} | {mratio:.2f}{' ✓' if mratio <= 2.0 else ''} | "
                     f"{med['floor']:.2f} | {'yes' if stacked else ''} | {note} |")
    if slow:
        lines += ["", "Mechanism side above 2x: " + "; ".join(
                          f"{n} {m['mech1'] * 1000:.1f} ms for one, {m['mech5'] * 1000:.1f} ms for five (floor "
                          f"{m['floor']:.2f}: {'the per-trial arithmetic' if m['floor'] > 2.0 else 'batching could'}"
                          f"{'' if m['floor'] > 2.0 else ' meet it'}; "
                          f"{'at or below' if m['mech5'] / m['mech1'] <= 1.1 * m['floor'] else 'above'} the floor)"
                          for n, m, *_ in slow) + "."]
    if skipped:
        lines += ["", "Not measured:"] + [f"- {n}: {why}" for n, why in skipped]
    lines += [
        "",
        "Where the time goes. Metrics: exact transport (W2 and EMD-L1) is solved per trial (its speed is issue "
        "28's exact-W2 part, measured in docs/w2-speed.md). Mechanism side: each trial's reports must be drawn "
        "independently (no draws are shared between trials: sharing would correlate what the intervals treat as "
        "independent), so a mechanism whose trial is a draw and a closed-form estimate pays its draw 5 times; "
        "what is shared is setup (channels, kernels and their transforms, calibrations), the true counts and "
        "the collection path, and the held-out split's fixed seed (each trial's split is drawn from its own "
        "counts). EM estimators (DAM family, planar Laplace, MDSW, SEM-Geo-I) run all trials as one stacked EM: "
        "one pass of the transforms or matrix products per step for every trial still running; the stack "
        "saves the per-call overhead, not the arithmetic, which on the FFT channels grows with the number of "
        "trials.",
        "",
    ]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "trials-benchmark.md"
    path.write_text("\n".join(lines))
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
