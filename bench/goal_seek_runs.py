"""What a goal seek costs in one-trial runs of its mechanism, per grid side and per outcome (issue 36): the table the
pages' time predictions read (``ldpviz/data/goal_seek_runs.json``).

On the bundled city (minneapolis-stops, whole city) at each grid side d, every LDP and Geo-I mechanism gets

- **reached**: one goal seek as the Decide page and ``ldpviz target`` run it (W2 at most the page's default target,
  10 fresh collections per decision, seed 2026): its CPU seconds over the calibrated run-time model's one-trial run
  of that mechanism at that size (:func:`ldpviz.experiment.runtime_model.predict`, which carries this machine's speed
  factor, so the CPU seconds over it hold for any machine);
- **scan**: what a seek costs when no epsilon reaches the target: the scan alone, one collection at every value of
  its log grid (``one_collection.scan_epsilon`` runs all of them and stops), timed the same way.

CPU seconds (``time.process_time``), one seek at a time on one thread, after an uncounted warm-up seek, so other
processes on a shared machine inflate the figures little. The pages interpolate between the measured sides in log
cells (:func:`ldpviz.experiment.runtime_model.goal_seek_runs`): a seek's cost grows with the grid differently from
one run at epsilon 1 (its answer lies at another epsilon, where the W2 readout or EM costs more or less).
``bench/goal_seek_shapes.py`` then judges the predictions on files this table was not measured on.

**depth** (at d = :data:`DEPTH_SIDE` only): a seek's cost depends on where its answer lands (an EM mechanism's
collections at a large epsilon converge in a few steps, at a small one in hundreds), and that follows the target's
depth ``z = target / cell x sqrt(users)`` (:func:`ldpviz.experiment.runtime_model.target_depth`: the target in cells
against the 1 / sqrt(n) noise of an estimate from n reports). The default target on the city is deep (z ~ 290 at
d = 32); a national file's 40 km cells put the same 800 m at z ~ 2. So each mechanism's seek is also measured on the
city at the targets of depths :data:`DEPTHS`, giving its cost in runs as a curve in z, which the pages read as a
factor against the depth where the table above was measured.

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
#: The target depths (z = target / cell x sqrt(users)) measured besides the default target, at d = DEPTH_SIDE: a
#: national file's (~2) and a small file's order (~20); the default target adds the city's own (~290 at d = 32).
DEPTHS = (2.0, 20.0)
DEPTH_SIDE = 32
FROM_LOG = (" (written with --from-log from the rows that run printed, nothing measured again; each row's one run "
            "re-expressed at the run's first machine speed factor{moved})")


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


def measure(name: str, side: int, data: datasets.Dataset, n_users: int | None, target: float | None,
            depth: float | None = None) -> dict:
    """One seek at ``target`` metres (or at the target of ``depth`` z here, then without the scan alone)."""
    base = Scenario(dataset=DATASET, mechanism=name, epsilon=1.0, grid_side=side, n_users=n_users, seed=SEED,
                    trials=tradeoff.DEFAULT_TRIALS)
    grid, users, _ = tradeoff.Evaluator(base, "w2_m", data).users(n_users)
    n_seen = len(users.cells)
    if depth is not None:
        target = depth * grid.cell_m / n_seen ** 0.5
    one_run = runtime_model.predict(name, runtime_model.path_of({}), n_seen, side * side, 1)
    factor = runtime_model.machine_factor()      # in the one run, so the runs are in this machine's own units
    cpu = time.process_time()
    found = tradeoff.target_epsilon(base, "w2_m", target, n_users=n_users, dataset=data)
    reached_cpu = time.process_time() - cpu
    scan, scanned = scan_cpu(base, data, n_users) if depth is None else (None, None)
    row = {"mechanism": name, "d": side, "users": n_seen, "target_m": target,
           "z": runtime_model.target_depth(target, grid.cell_m, n_seen), "depth_row": depth is not None,
           "one_run_s": one_run, "machine_factor": factor, "reached_cpu_s": reached_cpu, "answer": found.epsilon,
           "reached": bool(found.reached), "runs": found.runs, "scan_cpu_s": scan, "scanned": scanned,
           "load": os.getloadavg()[0]}
    if one_run:
        row["reached_runs"] = reached_cpu / one_run
        if scan is not None:
            row["scan_runs"] = scan / one_run
    print(json.dumps(row), file=sys.stderr, flush=True)
    return row


def table(rows: list[dict], sides: list[int], measured_on: str) -> dict:
    """The installed form: per side, per outcome, ``{mechanism: runs}`` and ``"*"`` the median; and per mechanism
    its reached seeks' runs against their target depth at d = DEPTH_SIDE (``depth``, reached seeks only)."""
    out: dict = {"measured_on": measured_on, "sides": {}}
    for side in sides:
        per = {}
        for branch in ("reached", "scan"):
            runs = {r["mechanism"]: round(r[f"{branch}_runs"], 2) for r in rows      # seeks that ran (a mechanism
                    if r["d"] == side and r["runs"] and r.get(f"{branch}_runs")     # refusing every epsilon did not)
                    and (branch == "scan" or r["reached"]) and not r.get("depth_row")}
            if runs:
                values = sorted(runs.values())
                runs["*"] = values[len(values) // 2]
            per[branch] = runs
        out["sides"][str(side)] = per
    side = _depth_side(rows)
    default = next((r for r in rows if r["d"] == side and not r.get("depth_row")), None)
    if default is not None:
        curves: dict[str, list[list[float]]] = {}
        for r in rows:
            if r["d"] == side and r["reached"] and r.get("reached_runs"):
                curves.setdefault(r["mechanism"], []).append([round(r["z"], 3), round(r["reached_runs"], 2)])
        out["depth"] = {"side": side, "reference": {"target_m": default["target_m"], "users": default["users"],
                                                    "width_m": runtime_model.REFERENCE_WIDTH_M},
                        "runs": {k: sorted(v) for k, v in curves.items() if len(v) > 1}}
    return out


def _factors(rows: list[dict]) -> str:
    """The machine speed factors the rows' one-run predictions carried, as a range."""
    got = [r["machine_factor"] for r in rows if r.get("machine_factor")]
    return "not recorded" if not got else (f"{min(got):.2f}" if max(got) - min(got) < 0.005 else
                                           f"{min(got):.2f}-{max(got):.2f}")


def _depth_side(rows: list[dict]) -> int | None:
    """The grid side the depth rows were measured at (None: none were)."""
    return next((r["d"] for r in rows if r.get("depth_row")), None)


def report(rows: list[dict], sides: list[int], quick: bool, target: float, loads: tuple, how: str = "") -> str:
    """The report; ``how``: what the "Generated by" line adds (how a --from-log report was written)."""
    lines = ["# What a goal seek costs, in one-trial runs (the pages' time predictions)", "",
             provenance_markdown(seeds=str(SEED), trials=f"{tradeoff.DEFAULT_TRIALS} fresh collections per decision",
                                 quick=quick), "",
             f"Generated by `python bench/goal_seek_runs.py{' --quick' if quick else ''}`"
             f"{how}. Data: {DATASET}, whole "
             f"city, d = {', '.join(map(str, sides))}; target W2 <= {target:g} m. Load average (1 min) before / "
             f"after: {loads[0]:.1f} / {loads[1]:.1f} on {os.cpu_count()} cores; CPU seconds, one seek at a time.",
             f"Machine speed factor in the one-run predictions: {_factors(rows)} (this machine's speed probe over the "
             "calibration's, as the pages apply it; before this report stated it, the table divided it out of the one "
             "run instead, which left the runs scaled by the factor at measurement).",
             "", "**reached**: a goal seek's CPU over the calibrated model's one-trial run on this machine (its speed "
             "factor included, so the runs hold for any machine). **scan**: the scan alone (one collection at each "
             "of its values), what a seek costs "
             "when no epsilon reaches the target. A mechanism whose seek did not reach the target here has no "
             "reached figure (the median stands in); the pages interpolate between the sides in log cells and hold "
             "the end values beyond them.", "",
             "| mechanism | d | users | one run predicted (s) | seek CPU (s) | collections | reached: runs | "
             "scan CPU (s) | scan: runs |", "|---|---|---|---|---|---|---|---|---|"]
    for r in (r for r in rows if not r.get("depth_row")):
        one = f"{r['one_run_s']:.3f}" if r["one_run_s"] else "—"
        reached = (f"{r['reached_runs']:.1f}" if r.get("reached_runs") and r["reached"] else
                   "not reached" if r["runs"] else "refused at every ε (no seek)")
        scan = f"{r['scan_runs']:.1f}" if r.get("scan_runs") else "—"
        lines.append(f"| {r['mechanism']} | {r['d']} | {r['users']:,} | {one} | {r['reached_cpu_s']:.2f} | "
                     f"{r['runs']} | {reached} | {r['scan_cpu_s']:.2f} | {scan} |")
    side = _depth_side(rows)
    deep = [r for r in rows if r["d"] == side]
    if side is not None:
        lines += ["", f"## The target's depth (d = {side})", "",
                  "The same seek on the city at targets of other depths z = target / cell x sqrt(users) (a national "
                  "file's 40 km cells put the default 800 m at z ~ 2): where its answer lands, and its cost in runs. "
                  "The pages scale a seek's runs by this curve (log-linear in z, held beyond its ends) against the "
                  "depth where the table above was measured; a mechanism with fewer than two reached seeks here "
                  "keeps a factor of 1.", "",
                  "| mechanism | target (m) | z | answer | collections | seek CPU (s) | runs |",
                  "|---|---|---|---|---|---|---|"]
        for r in sorted(deep, key=lambda r: (r["mechanism"], r["z"])):
            answer = f"{r['answer']:.3g}" if r.get("answer") else "not reached"
            runs = f"{r['reached_runs']:.1f}" if r.get("reached_runs") and r["reached"] else "—"
            lines.append(f"| {r['mechanism']} | {r['target_m']:.1f} | {r['z']:.1f} | {answer} | {r['runs']} | "
                         f"{r['reached_cpu_s']:.2f} | {runs} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "docs"))
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--sides", default=None, help="grid sides d, comma-separated (default 32,64; quick 8,16)")
    ap.add_argument("--install", action="store_true", help="install the table as ldpviz/data/goal_seek_runs.json")
    ap.add_argument("--from-log", help="write the report and table from the JSON rows a run printed to stderr (one "
                                       "per line); nothing is measured again")
    args = ap.parse_args(argv)
    sides = [int(s) for s in (args.sides or ("8,16" if args.quick else "32,64")).split(",")]
    n_users = 3000 if args.quick else None
    target = flow.DECIDE_TARGET_DEFAULTS["w2_m"] * (3.0 if args.quick else 1.0)
    if args.from_log:           # the rows a run printed; the warm-up's repeats the first row and is dropped
        logged = [json.loads(line) for line in Path(args.from_log).read_text().splitlines() if line.startswith("{")]
        rows = list({(r["mechanism"], r["d"], bool(r.get("depth_row")), round(r.get("z") or 0, 3)): r
                     for r in logged}.values())
        before, after = rows[0]["load"], rows[-1]["load"]
        factor = rows[0].get("machine_factor")
        seen = [r["machine_factor"] for r in rows if r.get("machine_factor")]
        moved = sum(abs(f - factor) > 1e-9 for f in seen) if factor else 0
        how = FROM_LOG.format(moved=f": the run re-timed the probe as it went, and {moved} of {len(seen)} rows "
                                    f"carried another factor ({min(seen):.2f}-{max(seen):.2f})" if moved else "")
        for r in rows:           # one factor for the run, its first (a run before factors were pinned moved them)
            if factor and r.get("machine_factor") and r.get("one_run_s"):
                r["one_run_s"] *= factor / r["machine_factor"]
                r["machine_factor"] = factor
                r["reached_runs"] = r["reached_cpu_s"] / r["one_run_s"]
                if r.get("scan_cpu_s") is not None:
                    r["scan_runs"] = r["scan_cpu_s"] / r["one_run_s"]
    else:
        how = ""
        data = datasets.load(DATASET)
        names, _ = flow.eligible(["LDP", "Geo-I"])
        if args.quick:
            names = [n for n in names if n in QUICK_MECHANISMS]
        measure(names[0], sides[0], data, n_users, target)        # warm-up, not counted
        runtime_model.pin_machine_factor()                         # one factor for every row
        before = os.getloadavg()[0]
        rows = [measure(name, side, data, n_users, target) for side in sides for name in names]
        side = DEPTH_SIDE if DEPTH_SIDE in sides else sides[0]     # a quick run: its smallest side
        rows += [measure(name, side, data, n_users, None, depth) for depth in DEPTHS for name in names]
        after = os.getloadavg()[0]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    measured_on = (f"bench/goal_seek_runs.py: {DATASET}, d = {', '.join(map(str, sides))}, W2 <= {target:g} m, "
                   f"{tradeoff.DEFAULT_TRIALS} collections per decision, CPU seconds, one seek at a time")
    installed = table(rows, sides, measured_on)
    (out / "goal-seek-runs.json").write_text(json.dumps({"rows": rows, "table": installed}, indent=1) + "\n")
    (out / "goal-seek-runs.md").write_text(report(rows, sides, args.quick, target, (before, after), how))
    if args.install:
        runtime_model.GOAL_SEEK_FILE.write_text(json.dumps(installed, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
