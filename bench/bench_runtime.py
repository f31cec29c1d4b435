"""Benchmark: calibrate the run-time model (ldpviz.experiment.runtime_model) per mechanism and path, and check it.

Runs every registered mechanism on each of its paths ('per-user' and 'aggregate'; '-' where it has one)
through ``experiment.run`` (one trial, the 'normal' dataset) at a grid of sizes, records each run's CPU
seconds (``time.process_time``: what the run costs on a quiet machine, which other processes on a shared
machine do not inflate; issue 28), its phases' shares of the wall time and the 1-minute load around it,
and fits the model's non-negative coefficients: per (mechanism, path) for the fixed part (prepare + setup)
and the per-trial part (perturb + estimate), and one shared model for the metrics; and, at one size, what
each trial after the first costs (3 trials against 1). Then predicts held-out runs (larger grids and several
trials, the cases of issues 22 and 28) and reports prediction / CPU seconds measured, with the wall time.

Writes DIR/runtime-calibration.md and the coefficients (with how they were measured) to
DIR/runtime-calibration.json; ``--install`` also copies them to ldpviz/data/runtime_calibration.json, the
file the dashboard reads (refused with --quick).

    python bench/bench_runtime.py [--quick] [--out DIR] [--slow SECONDS] [--install]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from ldpviz import experiment, mechanisms  # noqa: E402
from ldpviz.experiment import runtime_model  # noqa: E402
from ldpviz.errors import LdpvizInputError  # noqa: E402
from ldpviz.evidence.reproduce import machine, provenance_markdown  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
#: n = 200: a small file of a few hundred people is a first-class case (issue 36); below the smallest measured count
#: the model holds that count's metrics cost, and exact W2 of a 2,000-user collection cost a 300-person file's
#: prediction 4x what its runs took (GRR, d = 32).
FULL_SIZES = [(n, d) for d in (8, 16, 32, 64) for n in (200, 2_000, 20_000)]
QUICK_SIZES = [(1_000, 8), (1_000, 16), (4_000, 16)]
#: Larger grids, up to the dashboard's largest, for the shared metrics model (W2 and the others grow faster than the
#: cells, and their solvers change with the size), run with one
#: cheap mechanism: (mechanism, path, sizes).
FULL_METRICS_RUNS = ("grr", "aggregate", [(2_000, 96), (2_000, 128), (20_000, 128), (2_000, 256), (20_000, 256)])
QUICK_METRICS_RUNS = ("grr", "aggregate", [(1_000, 32)])
#: Held-out checks: (mechanism, path, users, grid side); the first two are issue 22's cases.
#: (mechanism, path, users, grid side, trials); the first two are issue 22's cases, the rest issue 28's
#: (several trials; the bundled default).
FULL_CHECKS = [("oue", "auto", 20_000, 256, 1), ("huem", "auto", 20_000, 96, 1), ("grr", "auto", 50_000, 96, 1),
               ("dam", "auto", 50_000, 64, 5), ("planar-laplace", "auto", 20_000, 32, 3),
               ("grr", "auto", 50_000, 32, 3), ("olh", "auto", 50_000, 64, 5), ("grr", "auto", 500, 32, 1),
               ("dam", "auto", 500, 64, 1)]
QUICK_CHECKS = [("grr", "auto", 4_000, 32, 1), ("oue", "auto", 4_000, 32, 3)]
#: The size at which the cost of further trials is measured (3 trials against 1): d = 64, where a run is long enough
#: for a prediction to matter; at d = 16 the stacked EM's saved overhead dominates and made further trials look cheap
#: (DAM 0.27 of the first), which under-predicted 5 trials at d = 64 by 2.2x.
EXTRA_SIZE = (20_000, 64)


def paths_of(name: str) -> list[str]:
    if any(p.name == "path" for p in mechanisms.get(name).params):
        return ["per-user", "aggregate"]
    return [runtime_model.SINGLE_PATH]


def timed_run(name: str, path: str, n: int, d: int, trials: int = 1) -> dict:
    """One run: its wall and CPU seconds, and its phases in CPU seconds (each phase's share of the wall time)."""
    params = {} if path in (runtime_model.SINGLE_PATH, "auto") else {"path": path}
    load_before = runtime_model.current_load()
    t0, c0 = time.perf_counter(), time.process_time()
    result = experiment.run(experiment.Scenario(dataset="normal", mechanism=name, grid_side=d, n_users=n,
                                                params=params, seed=0, trials=trials))
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    load = (load_before + runtime_model.current_load()) / 2
    t = result.timings
    share = min(cpu, wall) / max(t["total"], 1e-9)
    return {"mechanism": name, "path": path, "n": n, "D": d * d, "trials": trials, "wall": wall, "cpu": cpu,
            "load": load, "fixed": (t["prepare"] + t["setup"]) * share,
            "trial": (t["perturb"] + t["estimate"]) * trials * share, "metrics": t["metrics"] * share}


def measure(sizes: list[tuple[int, int]], slow: float, only: tuple[str, str] | None = None
            ) -> tuple[list[dict], list[str]]:
    rows, skipped = [], []
    for name in mechanisms.available():
        for path in paths_of(name):
            if only is not None and (name, path) != only:
                continue
            for n, d in sizes:
                try:
                    row = timed_run(name, path, n, d)
                except LdpvizInputError as exc:
                    skipped.append(f"{name} / {path} at n = {n:,}, d = {d}: refused ({str(exc)[:90]})")
                    continue
                rows.append(row)
                print(f"{name:<14} {path:<9} n={n:>7,} d={d:>4}  {row['wall']:7.3f} s ({row['cpu']:.3f} s CPU) "
                      f"load {row['load']:.1f}", file=sys.stderr, flush=True)
                if row["cpu"] > slow:
                    skipped.append(f"{name} / {path}: sizes after n = {n:,}, d = {d} not run (that run took "
                                   f"{row['cpu']:.1f} s CPU > --slow {slow:g} s)")
                    break
    return rows, skipped


def measure_extra(size: tuple[int, int], paths: list[tuple[str, str]]) -> tuple[dict[str, float], list[dict]]:
    """Per (mechanism, path): what each trial after the first costs as a share of the first, from 3 trials
    against 1 at ``size`` (perturb + estimate; clipped to [0.05, 1.5])."""
    out, rows = {}, []
    n, d = size
    for name, path in paths:
        try:
            one, three = timed_run(name, path, n, d, 1), timed_run(name, path, n, d, 3)
        except LdpvizInputError:
            continue
        rows += [one, three]
        extra = (three["trial"] / max(one["trial"], 1e-9) - 1) / 2
        out[f"{name}|{path}"] = min(max(extra, 0.05), 1.5)
        print(f"{name:<14} {path:<9} 3 trials cost {1 + 2 * extra:.2f} x one", file=sys.stderr, flush=True)
    return out, rows


#: The smooth per-mechanism models (fixed and per-trial parts) are fitted to runs of at least this many users. Below
#: it EM's work is no smooth function of the size: at 200 users DAM's estimate took 0.72 s at d = 32 and 0.09 s at
#: d = 64 (its held-out search stops where a few hundred reports stop informing it), and fitting those runs pulled
#: DAM's prediction at 500 users, d = 64 to a third of what it took. The smaller runs still set the measured
#: metrics tables, whose readouts (exact W2 of a few hundred people's map) cost a fraction of 2,000 users'.
FIT_MIN_USERS = 2_000


def fit_calibration(rows: list[dict], measured_on: str, extra: dict[str, float] | None = None,
                    probe_s: float | None = None) -> runtime_model.Calibration:
    models = {}
    for key in sorted({(r["mechanism"], r["path"]) for r in rows}):
        every = [r for r in rows if (r["mechanism"], r["path"]) == key]
        mine = [r for r in every if r["n"] >= FIT_MIN_USERS] or every
        models[f"{key[0]}|{key[1]}"] = {
            "fixed": runtime_model.fit([(r["n"], r["D"], r["fixed"]) for r in mine]),
            "trial": runtime_model.fit([(r["n"], r["D"], r["trial"]) for r in mine])}
        if extra and f"{key[0]}|{key[1]}" in extra:
            models[f"{key[0]}|{key[1]}"]["extra"] = (extra[f"{key[0]}|{key[1]}"],)
    metrics = runtime_model.fit([(r["n"], r["D"], r["metrics"]) for r in rows])
    tables = {"*": runtime_model.metrics_table(rows)}
    tables.update({name: runtime_model.metrics_table(rows, name) for name in sorted({r["mechanism"] for r in rows})})
    return runtime_model.Calibration(models, metrics, measured_on, tables, probe_s)


def fit_error(cal: runtime_model.Calibration, rows: list[dict]) -> dict[str, float]:
    """Median |predicted / measured - 1| of the idle-machine seconds, per mechanism and path."""
    import numpy as np

    out = {}
    for key in sorted({(r["mechanism"], r["path"]) for r in rows}):
        errs = []
        for r in rows:
            if (r["mechanism"], r["path"]) != key:
                continue
            idle = r["fixed"] + r["trial"] + r["metrics"]     # one-trial runs
            errs.append(abs(cal.idle_seconds(key[0], key[1], r["n"], r["D"], 1) / max(idle, 1e-6) - 1))
        out[f"{key[0]} / {key[1]}"] = float(np.median(errs))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="small sizes (a smoke test; coefficients to --out)")
    ap.add_argument("--out", default=str(ROOT / "docs"), help="output directory (default docs/)")
    ap.add_argument("--slow", type=float, default=8.0, help="stop growing a mechanism's sizes after a run "
                                                            "longer than this many CPU seconds (default 8)")
    ap.add_argument("--install", action="store_true", help="also write the coefficients to "
                                                           "ldpviz/data/runtime_calibration.json (full runs only)")
    ap.add_argument("--refit", metavar="JSON", help="fit the model again to the runs stored in JSON (a previous "
                                                    "calibration) instead of measuring them; the held-out runs are "
                                                    "still measured")
    args = ap.parse_args(argv)
    if args.install and args.quick:
        ap.error("--install takes a full run's coefficients, not --quick ones")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    sizes, checks = (QUICK_SIZES, QUICK_CHECKS) if args.quick else (FULL_SIZES, FULL_CHECKS)
    extra_name, extra_path, extra_sizes = QUICK_METRICS_RUNS if args.quick else FULL_METRICS_RUNS
    started = time.perf_counter()
    if args.refit:
        stored = json.loads(Path(args.refit).read_text(encoding="utf-8"))
        rows, skipped, extra_rows = stored["runs"], [], stored.get("extra_trial_runs", [])
        extra = {k: v["extra"][0] for k, v in stored["models"].items() if "extra" in v}
        probe_s = runtime_model.Calibration.from_json(stored).probe_seconds
    else:
        probe_s = runtime_model.time_probe()      # this machine's speed, kept beside the coefficients
        print(f"probe ({runtime_model.PROBE_TEXT}): {probe_s:.3f} s CPU", file=sys.stderr, flush=True)
        rows, skipped = measure(sizes, args.slow)
        more, more_skipped = measure(extra_sizes, args.slow, only=(extra_name, extra_path))
        rows, skipped = rows + more, skipped + more_skipped
        extra, extra_rows = measure_extra(QUICK_SIZES[0] if args.quick else EXTRA_SIZE,
                                          sorted({(r["mechanism"], r["path"]) for r in rows}))
    mean_load = sum(r["load"] for r in rows) / max(len(rows), 1)
    host = machine()
    measured_on = stored["measured_on"].split("; refitted")[0] + f"; refitted {datetime.date.today().isoformat()}" \
        if args.refit else (f"bench/bench_runtime.py{' --quick' if args.quick else ''}: sizes (n, d) "
                   f"{', '.join(f'({n:,}, {d})' for n, d in sizes)} (and {extra_name} / {extra_path} at "
                   f"{', '.join(f'({n:,}, {d})' for n, d in extra_sizes)} for the metrics), one run each, 'normal' "
                   f"data, on {host.get('processor', 'this machine')} ({runtime_model.cores()} cores, mean load "
                   f"{mean_load:.1f}; CPU seconds, which the load does not inflate), "
                   f"{datetime.date.today().isoformat()}")
    cal = fit_calibration(rows, measured_on, extra, probe_s)
    target = out / "runtime-calibration.json"
    target.write_text(json.dumps({**cal.to_json(), "runs": rows, "extra_trial_runs": extra_rows}, indent=1) + "\n",
                      encoding="utf-8")
    if args.install:
        runtime_model.CALIBRATION_FILE.write_text(target.read_text(encoding="utf-8"), encoding="utf-8")
    runtime_model.calibration.cache_clear()
    errors = fit_error(cal, rows)

    held, ratios = [], []
    for name, path, n, d, trials in checks:
        predicted = cal.idle_seconds(name, path, n, d * d, trials)
        low, high = runtime_model.seconds_range(predicted)
        try:
            row = timed_run(name, path, n, d, trials)
        except LdpvizInputError as exc:
            held.append(f"| {name} | {path} | {n:,} | {d} | {trials} | {predicted:.1f} | refused: {str(exc)[:60]} "
                        "| | | | |")
            continue
        ratio = predicted / max(row["cpu"], 1e-9)
        ratios.append(ratio)
        held.append(f"| {name} | {path} | {n:,} | {d} | {trials} | {predicted:.1f} ({low:.1f}-{high:.1f}) | "
                    f"{row['cpu']:.1f} | {ratio:.2f} | {row['wall']:.1f} | {row['load']:.1f} |")
        print(f"check {name} {path} n={n} d={d} x{trials}: predicted {predicted:.1f} s, took {row['cpu']:.1f} s "
              f"CPU ({row['wall']:.1f} s wall)", file=sys.stderr, flush=True)
    worst = max((max(r, 1 / r) for r in ratios), default=float("nan"))

    lines = ["# Run-time model calibration", "",
             provenance_markdown(seeds="0", trials="1 per size", quick=args.quick), "",
             "Coefficients of `ldpviz.experiment.runtime_model` (the dashboard's long-run predictions), fitted per "
             "mechanism and path to the runs below. Each run is measured in CPU seconds (`time.process_time`): "
             "on a quiet machine a CPU-bound run's wall time, and not inflated by the other processes of a shared "
             "machine, so the figures mean the same whatever the load; the dashboard shows a prediction p as "
             f"about p / {runtime_model.RANGE:g} to p x {runtime_model.RANGE:g} on a quiet server (a busy one takes "
             f"longer) and never multiplies it by the load. {measured_on}.", "",
             f"Written to `{target.name}`"
             + (" and installed as `ldpviz/data/runtime_calibration.json`. " if args.install else ". ") +
             f"{len(rows)} runs in {time.perf_counter() - started:,.0f} s.", "",
             (f"Machine speed probe ({runtime_model.PROBE_TEXT}): {probe_s:.3f} s CPU here, kept in the file; a server "
              "times the same probe once and scales every calibrated prediction by the ratio "
              "(`runtime_model.machine_factor`)." if probe_s else "No machine speed probe in this calibration."), "",
             "## Fit: median relative error on the measured sizes", "",
             "| mechanism / path | median error |", "|---|---|"]
    lines += [f"| {k} | {v:.0%} |" for k, v in errors.items()]
    lines += ["", "## Further trials: cost of each trial after the first, as a share of the first (3 trials against 1, "
              f"n = {(QUICK_SIZES[0] if args.quick else EXTRA_SIZE)[0]:,}, d = "
              f"{(QUICK_SIZES[0] if args.quick else EXTRA_SIZE)[1]})", "",
              "| mechanism / path | share |", "|---|---|"]
    lines += [f"| {k.replace('|', ' / ')} | {v:.2f} |" for k, v in sorted(extra.items())]
    lines += ["", "## Held-out runs (not used in the fit): quiet-machine prediction vs CPU seconds measured", "",
              f"Worst ratio (either way): {worst:.2f}x "
              + ("(within 2x)." if worst <= 2 else "(NOT within 2x)."), "",
              "| mechanism | path | users | d | trials | predicted s (range shown) | measured CPU s | ratio | wall s "
              "| load |", "|---|---|---|---|---|---|---|---|---|---|"]
    lines += held
    if skipped:
        lines += ["", "## Not measured", ""] + [f"- {s}" for s in skipped]
    (out / "runtime-calibration.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {out / 'runtime-calibration.md'} and {target}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
