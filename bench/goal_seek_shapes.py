"""Goal seeks on data of other shapes (issue 36): predicted against measured CPU seconds, and planar Laplace on
large cells against the bundled city.

The matrix: the bundled city (minneapolis-stops), a national-scale file (~8,000 points over the US north-east,
cells of ~38 km at d = 32, :mod:`_foreign_files`) and a small file (300 points in a 10 km box), at d = 32 and
d = 64. Each cell runs one goal seek per mechanism, one at a time on one thread, as ``ldpviz target`` and the Decide
page ask it (W2 target of the page's default 800 m, 95% of collections, 10 fresh collections, seed 2026), and
records its CPU seconds (``time.process_time``; other processes on a shared machine do not inflate it) beside the
prediction the pages make (:func:`ldpviz.experiment.runtime_model.goal_seek_seconds`). The
ratio measured / predicted should lie within [1/2, 2].

    python bench/goal_seek_shapes.py                  # the matrix, 4 mechanisms: docs/goal-seek-shapes.md
    python bench/goal_seek_shapes.py --national-ldp           # ... and every LDP mechanism on the national file, d = 32
    python bench/goal_seek_shapes.py --quick --out /tmp/g     # smoke run: d = 16 only, 2 mechanisms
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
sys.path.insert(0, str(ROOT / "bench"))

import _foreign_files as foreign_files  # noqa: E402
from ldpviz import mechanisms  # noqa: E402
from ldpviz.data import datasets  # noqa: E402
from ldpviz.decide import decision_flow as flow, tradeoff  # noqa: E402
from ldpviz.evidence.reproduce import provenance_markdown  # noqa: E402
from ldpviz import experiment  # noqa: E402
from ldpviz.experiment import Scenario, prepare_users, runtime_model  # noqa: E402

MECHANISMS = ("grr", "oue", "dam", "planar-laplace")
FROM_LOG = (" (the rows it printed, written with --from-log: nothing measured again; predictions recomputed by "
            "the current model from the logged sizes and one-run times)")
SEED = 2026
TARGET_M = flow.DECIDE_TARGET_DEFAULTS["w2_m"]


def files(quick: bool) -> dict[str, datasets.Dataset]:
    out = {"city": datasets.load("minneapolis-stops"), "national": foreign_files.national()}
    if not quick:
        out["small"] = foreign_files.small()
    return out


def one(data: datasets.Dataset, mechanism: str, side: int) -> dict:
    base = Scenario(dataset=data.name, mechanism=mechanism, epsilon=1.0, grid_side=side, region=data.default_region,
                    seed=SEED, trials=tradeoff.DEFAULT_TRIALS)
    grid, users, _ = prepare_users(base, data)
    predicted = {b: runtime_model.goal_seek_seconds(mechanism, len(users.cells), grid.n_cells,
                                                    tradeoff.DEFAULT_TRIALS, cell_m=grid.cell_m, branch=b)
                 for b in runtime_model.BRANCHES}
    one_cpu = time.process_time()            # what a server predicts from once it has timed one run of it
    try:
        experiment.run(base.with_(trials=1), data)
        one_run = time.process_time() - one_cpu
    except Exception:  # noqa: BLE001 -- the seek below says why
        one_run = None
    from_run = ({b: runtime_model.goal_seek_seconds(mechanism, len(users.cells), grid.n_cells,
                                                    tradeoff.DEFAULT_TRIALS, cell_m=grid.cell_m, one_run_s=one_run,
                                                    measured=True, branch=b) for b in runtime_model.BRANCHES}
                if one_run else None)
    cpu, wall = time.process_time(), time.perf_counter()
    try:
        found = tradeoff.target_epsilon(base, "w2_m", TARGET_M, dataset=data)
        answer = (f"{found.epsilon:.3g}" + (" per km" if found.privacy_model == mechanisms.GEO_I else "")
                  if found.reached else "not reached")
        runs = found.runs
    except Exception as exc:  # noqa: BLE001 -- a mechanism that cannot run here is a row, not a crash
        answer, runs = f"error: {exc}"[:80], 0
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    return _judged({"mechanism": mechanism, "d": side, "users": len(users.cells), "cell_m": grid.cell_m,
                    "predicted": predicted, "one_run_s": one_run, "from_run": from_run, "cpu_s": cpu, "wall_s": wall,
                    "answer": answer, "runs": runs, "load": os.getloadavg()[0]})


def _judged(row: dict) -> dict:
    """The row with the prediction for the outcome its seek had (the pages state both: the seek's time, and the
    scan's alone if no epsilon reaches the target) and measured CPU over it."""
    branch = "scan" if row["answer"] == "not reached" else "reached"
    row["outcome"] = branch
    row["predicted_s"] = row["predicted"][branch]
    row["from_run_s"] = row["from_run"][branch] if row.get("from_run") else None
    row["ratio"] = row["cpu_s"] / max(row["predicted_s"], 1e-9)
    row["ratio_from_run"] = row["cpu_s"] / row["from_run_s"] if row["from_run_s"] else None
    return row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "docs"))
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--national-ldp", action="store_true", help="every LDP mechanism on the national file, d = 32")
    ap.add_argument("--mechanisms", default=",".join(MECHANISMS))
    ap.add_argument("--sides", default="32,64", help="grid sides d, comma-separated")
    ap.add_argument("--from-log", help="write the report from the JSON rows a run printed (one per line), e.g. a "
                                       "run stopped part way on a busy machine; nothing is measured again")
    args = ap.parse_args(argv)
    if args.from_log:
        logged = [json.loads(line) for line in Path(args.from_log).read_text().splitlines() if line.startswith("{")]
        loads = [r["load"] for r in logged] or [0.0]
        for r in logged:                         # predictions from the current model, on the logged sizes
            args_ = (r["mechanism"], r["users"], r["d"] ** 2, tradeoff.DEFAULT_TRIALS)
            r["predicted"] = {b: runtime_model.goal_seek_seconds(*args_, cell_m=r["cell_m"], branch=b)
                              for b in runtime_model.BRANCHES}
            r["from_run"] = ({b: runtime_model.goal_seek_seconds(*args_, cell_m=r["cell_m"], one_run_s=r["one_run_s"],
                                                                 measured=True, branch=b)
                              for b in runtime_model.BRANCHES} if r.get("one_run_s") else None)
            _judged(r)
        rows = [r for r in logged if not r.get("national_ldp")]
        ldp_rows = [r for r in logged if r.get("national_ldp")]
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "goal-seek-shapes.json").write_text(json.dumps({"rows": rows, "national_ldp": ldp_rows}, indent=1))
        (out / "goal-seek-shapes.md").write_text(report(rows, ldp_rows, (loads[0],) * 3, (loads[-1],) * 3, False,
                                                        from_log=True))
        return 0
    names = args.mechanisms.split(",")[:2] if args.quick else args.mechanisms.split(",")
    sides = (16,) if args.quick else tuple(int(x) for x in args.sides.split(","))
    load_before = os.getloadavg()
    data = files(args.quick)
    one(data["city"], "grr", 8)                     # warm-up, not counted: imports, compiled kernels
    rows: list[dict] = []
    for side in sides:                              # every file at d = 32 first: the smaller grids answer sooner
        for label, ds in data.items():
            for name in names:
                row = {"file": label, **one(ds, name, side)}
                rows.append(row)
                print(json.dumps(row), flush=True)
    ldp_rows: list[dict] = []
    if args.national_ldp:
        ldp = [n for n in mechanisms.available() if mechanisms.get(n).privacy_model == mechanisms.LDP]
        for name in ldp:
            row = {"file": "national", "national_ldp": True, **one(data["national"], name, 32)}
            ldp_rows.append(row)
            print(json.dumps(row), flush=True)
    load_after = os.getloadavg()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "goal-seek-shapes.json").write_text(json.dumps({"rows": rows, "national_ldp": ldp_rows}, indent=1))
    (out / "goal-seek-shapes.md").write_text(report(rows, ldp_rows, load_before, load_after, args.quick))
    return 0


def _out_of_sample(rows: list[dict]) -> list[str]:
    """The sentence on the files the seek's runs were not measured on (every file but the bundled city)."""
    other = [r for r in rows if r["file"] != "city"]
    if not other:
        return []
    inside = [r for r in other if 0.5 <= r["ratio"] <= 2.0]
    worst = max(other, key=lambda r: max(r["ratio"], 1 / max(r["ratio"], 1e-9)))
    return ["", f"On the files the runs were not measured on ({', '.join(sorted({r['file'] for r in other}))}): "
                f"{len(inside)} of {len(other)} within 2x (CPU / predicted {min(r['ratio'] for r in other):.2f} to "
                f"{max(r['ratio'] for r in other):.2f}); the farthest is {worst['mechanism']} on the {worst['file']} "
                f"file at d = {worst['d']} ({worst['ratio']:.2f})."]


def _predicted(row: dict, branch: str) -> str:
    """A row's prediction for one outcome, in bold for the outcome its seek had."""
    text = f"{row['predicted'][branch]:.1f}"
    return f"**{text}**" if row["outcome"] == branch else text


def _table(rows: list[dict]) -> list[str]:
    lines = ["| file | d | mechanism | users | cell | predicted (s): reached / none reaches | "
             "one run (s) | predicted from it (s) | CPU (s) | wall (s) | CPU / predicted | CPU / from run | answer |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        fr = r.get("from_run_s")
        lines.append(f"| {r['file']} | {r['d']} | {r['mechanism']} | {r['users']:,} | {r['cell_m'] / 1000:.2f} km | "
                     f"{_predicted(r, 'reached')} / {_predicted(r, 'scan')} | {r['one_run_s'] or float('nan'):.2f} | "
                     f"{fr or float('nan'):.1f} | "
                     f"{r['cpu_s']:.1f} | {r['wall_s']:.1f} | {r['ratio']:.2f} | "
                     f"{(r['ratio_from_run'] or float('nan')):.2f} | {r['answer']} |")
    return lines


def report(rows: list[dict], ldp_rows: list[dict], before: tuple, after: tuple, quick: bool,
           from_log: bool = False) -> str:
    within = [r for r in rows if 0.5 <= r["ratio"] <= 2.0]
    ok = [r for r in rows if r.get("ratio_from_run")] or [{"ratio_from_run": float("nan")}]
    within_run = [r for r in rows if r.get("ratio_from_run") and 0.5 <= r["ratio_from_run"] <= 2.0]
    lines = ["# Goal seeks on other shapes of data: predicted and measured", "",
             provenance_markdown(seeds=str(SEED), trials=f"{tradeoff.DEFAULT_TRIALS} fresh collections per decision",
                                 quick=quick),
             (f"- Load (1, 5, 15 min) before: {before[0]:.1f}, {before[1]:.1f}, {before[2]:.1f}; after: "
              f"{after[0]:.1f}, {after[1]:.1f}, {after[2]:.1f}" if len(set(before)) > 1 else
              f"- Load (1 min) at the first row {before[0]:.1f}, at the last {after[0]:.1f}; min-max over the rows "
              f"{min(r['load'] for r in rows + ldp_rows):.1f}-{max(r['load'] for r in rows + ldp_rows):.1f}")
             + " (2-core machine shared with other work: CPU seconds are compared, wall seconds are shown for what "
               "a person waited)",
             f"- Generated by `python bench/goal_seek_shapes.py{' --national-ldp' if ldp_rows else ''}`"
             f"{FROM_LOG if from_log else ''}"
             f"; target W2 <= "
             f"{TARGET_M:g} m (the Decide page's default), one seek at a time on one thread",
             f"- Machine speed factor behind every prediction: {runtime_model.machine_factor():.2f} (this process's "
             f"probe, {runtime_model.PROBE_TEXT}, over the calibration's; timed as a server times it)",
             "",
             "## Prediction error", "",
             "Each seek is judged against the prediction for the outcome it had (in bold): the pages state both, "
             "the seek's time and, if no epsilon reaches the target, the scan's alone (runs per outcome and grid "
             "side measured on the bundled city: docs/goal-seek-runs.md, so the city's rows are in-sample).", "",
             f"The pages' prediction (the calibrated one-run model on this machine's speed probe, times the seek's "
             f"runs and the data's shape): {len(within)} of {len(rows)} within 2x of the measured CPU seconds "
             f"(CPU / predicted {min(r['ratio'] for r in rows):.2f} to {max(r['ratio'] for r in rows):.2f}). "
             f"For comparison, from one run timed here at epsilon 1 instead of the model (the seek's runs are "
             f"measured against the model, so the pages do not predict this way): {len(within_run)} of {len(rows)} "
             f"within 2x (CPU / predicted {min(r['ratio_from_run'] for r in ok):.2f} to "
             f"{max(r['ratio_from_run'] for r in ok):.2f}).",
             *_out_of_sample(rows),
             "", *_table(rows), ""]
    pl = {(r["file"], r["d"]): r for r in rows if r["mechanism"] == "planar-laplace"}
    pairs = [(d, pl[("national", d)], pl[("city", d)]) for d in sorted({k[1] for k in pl})
             if ("national", d) in pl and ("city", d) in pl]
    if pairs:
        lines += ["## Planar Laplace on large cells", "",
                  "The same goal seek on the national file against the bundled city, same d, same run "
                  "(goal: at most 2x):", ""]
        for d, nat, city in pairs:
            lines.append(f"- d = {d}: national {nat['cpu_s']:.1f} s CPU ({nat['cell_m'] / 1000:.1f} km cells), city "
                         f"{city['cpu_s']:.1f} s ({city['cell_m']:.0f} m cells): "
                         f"{nat['cpu_s'] / max(city['cpu_s'], 1e-9):.2f}x")
        lines.append("")
    if ldp_rows:
        worst = max(ldp_rows, key=lambda r: r["cpu_s"])
        lines += ["## Every LDP mechanism on the national file (d = 32)", "",
                  f"Longest: {worst['mechanism']} at {worst['cpu_s']:.1f} s CPU (goal: every one within 60 s on a "
                  "quiet machine).", "", *_table(ldp_rows), ""]
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
