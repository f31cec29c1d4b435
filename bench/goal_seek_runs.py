"""What a goal seek costs in one-trial runs of its mechanism, per grid side and per outcome (issue 36): the table the
pages' time predictions read (``ldpviz/data/goal_seek_runs.json``).

On the bundled city (minneapolis-stops, whole city) at each grid side d, every LDP and Geo-I mechanism gets

- **reached**: one goal seek as the Decide page and ``ldpviz target`` run it (W2 at most the page's default target,
  10 fresh collections per decision, seed 2026): its CPU seconds over the calibrated run-time model's one-trial run
  of that mechanism at that size (:func:`ldpviz.experiment.runtime_model.predict`, with this machine's speed factor
  taken out so the table holds for any machine);
- **scan**: what a seek costs when no epsilon reaches the target: the scan alone, one collection at every value of
  its log grid (``one_collection.scan_epsilon`` runs all of them and stops), timed the same way.

CPU seconds (``time.process_time``), one seek at a time on one thread, after an uncounted warm-up seek, so other
processes on a shared machine inflate the figures little. The pages interpolate between the measured sides in log
cells (:func:`ldpviz.experiment.runtime_model.goal_seek_runs`): a seek's cost grows with the grid differently from
one run at epsilon 1 (its answer lies at another epsilon, where the W2 readout or EM costs more or less).
``bench/goal_seek_shapes.py`` then judges the predictions on files this table was not measured on.

    python bench/goal_seek_runs.py                       # d = 32 and 64: docs/goal-seek-runs.md (+ .json)
    python bench/goal_seek_runs.py --install             # ... and installs the table for the pages
    python bench/goal_seek_runs.py --quick --out /tmp/r  # smoke run: d = 8 and 16, 2 mechanisms, 3,000 users
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ldpviz.data import datasets  # noqa: E402
from ldpviz.errors import LdpvizInputError  # noqa: E402
from ldpviz.decide import decision_flow as flow, one_collection, tradeoff  # noqa: E402
from ldpviz.evidence.reproduce import provenance_markdown  # noqa: E402
from ldpviz.experiment import Scenario, runtime_model  # noqa: E402
from ldpviz.mechanisms.base import EPSILON_MAX, EPSILON_MIN  # noqa: E402

DATASET = "minneapolis-stops"
SEED = 2026
QUICK_MECHANISMS = ("grr", "dam")


def scan_cpu(base: Scenario, data: datasets.Dataset, n_users: int | None) -> tuple[float, int]:
    """CPU seconds and collections of the scan alone: one collection at every value of the seek's log grid."""
    ev = tradeoff.Evaluator(base, "w2_m", data)
    grid = one_collection.log_grid(EPSILON_MIN, EPSILON_MAX, one_collection.SCAN_RATIO)
    cpu = time.process_time()
    for e in grid:
        try:
            ev.values(e, n_users, 1)
        except LdpvizInputError:           # refused there (planar Laplace at a tiny epsilon): the scan skips it
            pass
    return time.process_time() - cpu, len(grid)


def measure(name: str, side: int, data: datasets.Dataset, n_users: int | None, target: float) -> dict:
    base = Scenario(dataset=DATASET, mechanism=name, epsilon=1.0, grid_side=side, n_users=n_users, seed=SEED,
                    trials=tradeoff.DEFAULT_TRIALS)
    n_seen = len(tradeoff.Evaluator(base, "w2_m", data).users(n_users)[1].cells)
    one_run = runtime_model.predict(name, runtime_model.path_of({}), n_seen, side * side, 1)
    one_run = one_run / runtime_model.machine_factor() if one_run else None
    cpu = time.process_time()
    found = tradeoff.target_epsilon(base, "w2_m", target, n_users=n_users, dataset=data)
    reached_cpu = time.process_time() - cpu
    scan, scanned = scan_cpu(base, data, n_users)
    row = {"mechanism": name, "d": side, "users": n_seen, "one_run_s": one_run, "reached_cpu_s": reached_cpu,
           "reached": bool(found.reached), "runs": found.runs, "scan_cpu_s": scan, "scanned": scanned,
           "load": os.getloadavg()[0]}
    if one_run:
        row["reached_runs"], row["scan_runs"] = reached_cpu / one_run, scan / one_run
    print(json.dumps(row), file=sys.stderr, flush=True)
    return row


def table(rows: list[dict], sides: list[int], measured_on: str) -> dict:
    """The installed form: per side, per outcome, ``{mechanism: runs}`` and ``"*"`` the median."""
    out: dict = {"measured_on": measured_on, "sides": {}}
    for side in sides:
        per = {}
        for branch in ("reached", "scan"):
            runs = {r["mechanism"]: round(r[f"{branch}_runs"], 2) for r in rows      # seeks that ran (a mechanism
                    if r["d"] == side and r["runs"] and r.get(f"{branch}_runs")     # refusing every epsilon did not)
                    and (branch == "scan" or r["reached"])}
            if runs:
                values = sorted(runs.values())
                runs["*"] = values[len(values) // 2]
            per[branch] = runs
        out["sides"][str(side)] = per
    return out


def report(rows: list[dict], sides: list[int], quick: bool, target: float, loads: tuple) -> str:
    lines = ["# What a goal seek costs, in one-trial runs (the pages' time predictions)", "",
             provenance_markdown(seeds=str(SEED), trials=f"{tradeoff.DEFAULT_TRIALS} fresh collections per decision",
                                 quick=quick), "",
             f"Generated by `python bench/goal_seek_runs.py{' --quick' if quick else ''}`. Data: {DATASET}, whole "
             f"city, d = {', '.join(map(str, sides))}; target W2 <= {target:g} m. Load average (1 min) before / "
             f"after: {loads[0]:.1f} / {loads[1]:.1f} on {os.cpu_count()} cores; CPU seconds, one seek at a time.",
             "", "**reached**: a goal seek's CPU over the calibrated model's one-trial run (this machine's speed "
             "factor taken out). **scan**: the scan alone (one collection at each of its values), what a seek costs "
             "when no epsilon reaches the target. A mechanism whose seek did not reach the target here has no "
             "reached figure (the median stands in); the pages interpolate between the sides in log cells and hold "
             "the end values beyond them.", "",
             "| mechanism | d | users | one run predicted (s) | seek CPU (s) | collections | reached: runs | "
             "scan CPU (s) | scan: runs |", "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        one = f"{r['one_run_s']:.3f}" if r["one_run_s"] else "—"
        reached = (f"{r['reached_runs']:.1f}" if r.get("reached_runs") and r["reached"] else
                   "not reached" if r["runs"] else "refused at every ε (no seek)")
        scan = f"{r['scan_runs']:.1f}" if r.get("scan_runs") else "—"
        lines.append(f"| {r['mechanism']} | {r['d']} | {r['users']:,} | {one} | {r['reached_cpu_s']:.2f} | "
                     f"{r['runs']} | {reached} | {r['scan_cpu_s']:.2f} | {scan} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "docs"))
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--sides", default=None, help="grid sides d, comma-separated (default 32,64; quick 8,16)")
    ap.add_argument("--install", action="store_true", help="install the table as ldpviz/data/goal_seek_runs.json")
    args = ap.parse_args(argv)
    sides = [int(s) for s in (args.sides or ("8,16" if args.quick else "32,64")).split(",")]
    n_users = 3000 if args.quick else None
    target = flow.DECIDE_TARGET_DEFAULTS["w2_m"] * (3.0 if args.quick else 1.0)
    data = datasets.load(DATASET)
    names, _ = flow.eligible(["LDP", "Geo-I"])
    if args.quick:
        names = [n for n in names if n in QUICK_MECHANISMS]
    measure(names[0], sides[0], data, n_users, target)        # warm-up, not counted
    before = os.getloadavg()[0]
    rows = [measure(name, side, data, n_users, target) for side in sides for name in names]
    after = os.getloadavg()[0]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    measured_on = (f"bench/goal_seek_runs.py: {DATASET}, d = {', '.join(map(str, sides))}, W2 <= {target:g} m, "
                   f"{tradeoff.DEFAULT_TRIALS} collections per decision, CPU seconds, one seek at a time")
    installed = table(rows, sides, measured_on)
    (out / "goal-seek-runs.json").write_text(json.dumps({"rows": rows, "table": installed}, indent=1) + "\n")
    (out / "goal-seek-runs.md").write_text(report(rows, sides, args.quick, target, (before, after)))
    if args.install:
        runtime_model.GOAL_SEEK_FILE.write_text(json.dumps(installed, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
