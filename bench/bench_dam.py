"""Speed of the DAM paper's mechanisms: n users on a d x d grid, perturb + estimate.

Usage: PYTHONPATH=. python bench/bench_dam.py [--quick] [--out DIR] [--users 1000000] [--side 64] [--repeats 5]
Writes DIR/dam-benchmark.md (default docs/; provenance, seed, medians). Not a timed test.

``--scale [--baseline COMMIT]`` (issue 28) instead measures the DAM family and planar Laplace at d = 256 with
1,000,000 users, epsilon = 1, against the code of COMMIT in the same run (each mechanism alternately in this
process and in a process running COMMIT's ``ldpviz``, extracted with ``git archive``), and W2 at d = 32 on the
same seeds under both codes; it replaces that section of DIR/dam-benchmark.md and keeps the rest.
``--whole`` (issue 38) instead times whole runs (``experiment.run``: the draw, the estimate and every readout) of
DAM and GRR at d = 256 with 1,000,000 users of the bundled ``normal`` set, epsilon = 1, each in a fresh process
(imported, numba kernels and the data set loaded before the clock starts), alternating, ``--repeats`` times, with
the CPU seconds of each phase (the EM and its FFTs; each readout); it replaces that section of DIR/dam-benchmark.md.
``--quick``: 20,000 users on a 40 x 40 grid (still beyond SEM-Geo-I's limit, so its fallback path runs),
1 repeat, SEM-Geo-I at d = 8.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import tempfile
import sys
import time
from pathlib import Path

import numpy as np

from ldpviz import mechanisms
from ldpviz.mechanisms.dam.kernels import FFT_WORKERS
from ldpviz.geo.domain import Grid, Region
from ldpviz.errors import LdpvizInputError
from ldpviz.evidence.reproduce import provenance_markdown

NAMES = ("dam", "dam-ns", "huem", "planar-laplace", "mdsw", "sem-geoi")
TARGET_S = {"dam": 1.0, "dam-ns": 1.0, "huem": 1.0, "planar-laplace": 1.0}
SEED = 2024


def population(n: int, d: int, rng: np.random.Generator):
    """Users from a two-blob mixture (correlated normal + a tight cluster) on the unit square."""
    a = rng.multivariate_normal([0.45, 0.5], [[0.02, 0.012], [0.012, 0.02]], size=n - n // 4)
    b = rng.normal([0.75, 0.25], 0.03, size=(n // 4, 2))
    uv = np.clip(np.vstack([a, b]), 0, 1)
    grid = Grid(Region(0.0, 45.0, 10_000.0), d)
    return grid, grid.bin_unit(uv)


def time_one(name: str, grid: Grid, users, repeats: int, epsilon: float) -> dict:
    setup_t, perturb_t, estimate_t, iters = [], [], [], []
    for r in range(repeats):
        t0 = time.perf_counter()
        mech = mechanisms.create(name, grid, epsilon)
        t1 = time.perf_counter()
        rng = np.random.default_rng(SEED + r)
        reports = mech.perturb(users, rng)
        t2 = time.perf_counter()
        est = mech.estimate(reports)
        t3 = time.perf_counter()
        setup_t.append(t1 - t0)
        perturb_t.append(t2 - t1)
        estimate_t.append(t3 - t2)
        iters.append(est.info.get("iterations", 0))
    total = [p + e for p, e in zip(perturb_t, estimate_t)]
    return {"setup": statistics.median(setup_t), "perturb": statistics.median(perturb_t),
            "estimate": statistics.median(estimate_t), "total": statistics.median(total),
            "iterations": int(statistics.median(iters))}


SCALE_NAMES = ("dam", "dam-ns", "huem", "planar-laplace")
SCALE_TARGET_S = 5.0
SCALE_SECTION = "## d = 256, 1,000,000 users: this commit against a baseline (issue 28)"


def scale_measure(name: str, side: int, users: int, epsilon: float, seeds: list[int], w2: bool) -> dict:
    """One mechanism: seconds of setup, draw and estimate per seed (and W2 in metres of a 10 km region)."""
    from ldpviz import metrics
    grid, binned = population(users, side, np.random.default_rng(SEED))
    out = {"setup": [], "collect": [], "estimate": [], "cpu": [], "load": [], "iterations": [], "w2_m": []}
    for seed in seeds:
        c0, t0 = time.process_time(), time.perf_counter()
        mech = mechanisms.create(name, grid, epsilon)
        t1 = time.perf_counter()
        reports = mech.collect(binned, np.random.default_rng(seed))
        t2 = time.perf_counter()
        est = mech.estimate(reports)
        t3, c3 = time.perf_counter(), time.process_time()
        out["setup"].append(t1 - t0)
        out["collect"].append(t2 - t1)
        out["estimate"].append(t3 - t2)
        out["cpu"].append(c3 - c0)                  # CPU seconds of this process, all its threads
        out["load"].append(os.getloadavg()[0])
        out["iterations"].append(int(est.info.get("iterations", 0)))
        if w2:
            truth = grid.histogram(binned.cells) / len(binned.cells)
            try:   # exact (dense network simplex), never "auto": its time budget may fall back to an
                   # approximation in one code and not the other (a fresh baseline tree compiles numba first)
                w2_m = metrics.w2(truth, est.density, cell_m=grid.cell_m, method="exact")
            except TypeError:  # a baseline without the method argument
                w2_m = metrics.w2(truth, est.density, cell_m=grid.cell_m)
            out["w2_m"].append(float(w2_m))
    return out


def _in_process(src: Path, name: str, side: int, users: int, epsilon: float, seeds: list[int], w2: bool) -> dict:
    """:func:`scale_measure` in a fresh process that imports the ``ldpviz`` found in ``src`` (this script's own
    code): both codes start equally cold (imports excluded, first-call caches included)."""
    job = json.dumps({"name": name, "side": side, "users": users, "epsilon": epsilon, "seeds": seeds, "w2": w2})
    env = dict(os.environ, PYTHONPATH=str(src))
    run = subprocess.run([sys.executable, __file__, "--worker", job], env=env, capture_output=True, text=True,
                         check=True)
    return json.loads(run.stdout.strip().splitlines()[-1])


def scale_section(out_dir: Path, baseline: str, users: int, side: int, w2_side: int, w2_users: int,
                  w2_seeds: int) -> None:
    repo = Path(__file__).resolve().parents[1]
    base_sha = subprocess.run(["git", "-C", str(repo), "rev-parse", "--short", baseline], capture_output=True,
                              text=True, check=True).stdout.strip()
    load = [os.getloadavg()[0]]
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        archive = subprocess.run(["git", "-C", str(repo), "archive", baseline, "ldpviz"], capture_output=True,
                                 check=True).stdout
        subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
        src = Path(tmp)
        rows = []
        for k, name in enumerate(SCALE_NAMES):
            runs = {}
            order = ("now", "base") if k % 2 == 0 else ("base", "now")
            for which in order:                                      # alternate which code goes first
                runs[which] = _in_process(repo if which == "now" else src, name, side, users, 1.0, [SEED], False)
            seeds = list(range(SEED, SEED + w2_seeds))
            acc = {"now": _in_process(repo, name, w2_side, w2_users, 1.0, seeds, True),
                   "base": _in_process(src, name, w2_side, w2_users, 1.0, seeds, True)}
            rows.append((name, runs, acc))
            load.append(os.getloadavg()[0])
            print(name, {w: (r["setup"][0], r["collect"][0], r["estimate"][0]) for w, r in runs.items()},
                  {w: np.mean(a["w2_m"]) for w, a in acc.items()}, file=sys.stderr, flush=True)
    wall = time.perf_counter() - started
    lines = [SCALE_SECTION, "",
             provenance_markdown(seeds=f"{SEED} (population and the d = 256 draw); {SEED}..{SEED + w2_seeds - 1} "
                                       f"(W2 at d = {w2_side})", trials="1 timed run per code and mechanism"),
             f"`bench/bench_dam.py --scale --baseline {baseline}`: {users:,} users on a {side} x {side} grid, "
             f"epsilon = 1, default parameters; each mechanism timed once with this commit's code and once with "
             f"commit {base_sha}'s (each in a fresh process importing its code's `ldpviz`), alternating which goes "
             f"first. {wall:.0f} s wall; load average (1 min) {min(load):.1f} to {max(load):.1f} on the shared "
             f"2-core machine, so seconds are the load's as much as the code's: read the two columns side by side.",
             "",
             f"Goal (issue 28): setup + draw + estimate at most {SCALE_TARGET_S:g} s for the DAM family, and planar "
             f"Laplace with it.", "",
             "Wall seconds on a shared machine include waiting for the cores; the CPU seconds (this process's, all "
             "its threads: each code's FFTs run on the threads its kernels ask for) are the work itself, and "
             "their ratio is the reading that survives load. The goal is judged on the total wall seconds of a "
             "quiet run (load below 1).", "",
             "| mechanism | setup s (base / now) | draw s (base / now) | estimate s (base / now) | total s (base / "
             "now) | CPU s (base / now) | speed-up (wall / CPU) | load (base / now) | EM evaluations (base / now) | "
             "goal |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for name, runs, _ in rows:
        b, n = runs["base"], runs["now"]
        tb = b["setup"][0] + b["collect"][0] + b["estimate"][0]
        tn = n["setup"][0] + n["collect"][0] + n["estimate"][0]
        goal = "meets" if tn <= SCALE_TARGET_S else "misses"
        if max(b["load"][0], n["load"][0]) >= 1.0:
            goal += " (loaded: re-run quiet)"
        lines.append(f"| {name} | {b['setup'][0]:.2f} / {n['setup'][0]:.2f} | {b['collect'][0]:.2f} / "
                     f"{n['collect'][0]:.2f} | {b['estimate'][0]:.2f} / {n['estimate'][0]:.2f} | {tb:.2f} / {tn:.2f} "
                     f"| {b['cpu'][0]:.2f} / {n['cpu'][0]:.2f} | {tb / tn:.2f}x / {b['cpu'][0] / n['cpu'][0]:.2f}x "
                     f"| {b['load'][0]:.1f} / {n['load'][0]:.1f} | {b['iterations'][0]} / {n['iterations'][0]} "
                     f"| {goal} |")
    lines += ["",
              f"W2 at d = {w2_side} ({w2_users:,} users of the same population, seeds {SEED}..{SEED + w2_seeds - 1}, "
                  "the same reports under both codes; exact W2 (POT's network simplex) in metres of the 10 km region, "
                  "mean ± sd over seeds): the two codes' EM runs the same transforms and steps, so the estimates "
                  "differ by floating-point round-off only; the first table shows whether round-off moved the held-out "
                  "stopping step (EM evaluations per seed).", "",
              "| mechanism | EM evaluations per seed (base / now) |", "|---|---|"] + [
                  f"| {name} | {', '.join(map(str, acc['base']['iterations']))} / "
                  f"{', '.join(map(str, acc['now']['iterations']))} |" for name, _, acc in rows] + ["",
              "| mechanism | W2 m, base | W2 m, now | t of the paired difference (mean / its standard error) |",
              "|---|---|---|---|"]
    for name, _, acc in rows:
        wb, wn = np.array(acc["base"]["w2_m"]), np.array(acc["now"]["w2_m"])
        diff = wn - wb
        sd = float(np.std(diff, ddof=1)) if len(diff) > 1 else float("nan")
        z = float(np.mean(diff) / (sd / np.sqrt(len(diff)))) if sd > 0 else 0.0
        lines.append(f"| {name} | {wb.mean():.1f} ± {wb.std(ddof=1):.1f} | {wn.mean():.1f} ± {wn.std(ddof=1):.1f} | "
                     f"{z:+.2f} |")
    changed = [name for name, _, acc in rows
               if abs(np.mean(acc["now"]["w2_m"]) - np.mean(acc["base"]["w2_m"])) > 2 * max(
                   np.std(acc["base"]["w2_m"], ddof=1), 1e-9)]
    lines += ["", "W2 at d = {} moved by more than twice its sd over seeds for: {}.".format(
        w2_side, ", ".join(changed) if changed else "none (unchanged within noise)"), ""]
    path = out_dir / "dam-benchmark.md"
    text = path.read_text() if path.exists() else "# DAM family benchmark\n"
    if SCALE_SECTION in text:
        text = text[:text.index(SCALE_SECTION)].rstrip() + "\n"
    path.write_text(text.rstrip() + "\n\n" + "\n".join(lines) + "\n")
    print(f"wrote {path}")


WHOLE_SECTION = "## Whole run at d = 256 against GRR's (issue 38)"
WHOLE_NAMES = ("grr", "dam")
WHOLE_GOAL = 4.0
#: A whole run in a fresh process: phases timed by wrapping the functions experiment.run calls (CPU seconds of this
#: process, all threads), after imports, numba kernels and the data set are loaded.
WHOLE_WORKER = r"""
import json, sys, time
from ldpviz import experiment, mechanisms, metrics
from ldpviz.data import datasets
from ldpviz.mechanisms.dam import kernels
from ldpviz.metrics import evaluation, transport
name, users, side, seed = json.loads(sys.argv[1])
metrics.warm_up()
datasets.load(f"normal:n={users}")
cpu = {}
def wrap(owner, attr, key, tag=None):
    fn = getattr(owner, attr)
    def timed(*a, **k):
        c = time.process_time()
        try:
            return fn(*a, **k)
        finally:
            label = key if tag is None else f"{key} {tag(*a, **k)}"
            cpu[label] = cpu.get(label, 0.0) + time.process_time() - c
    setattr(owner, attr, timed)
wrap(mechanisms.get(name), "run_trials", "draw + estimate")
wrap(kernels._Convolver, "_transform", "of which FFT transforms")
wrap(experiment.metrics, "evaluate_trials", "readouts")
wrap(transport, "_transport", "readout", lambda p, q, metric, *a, **k: "W2" if metric == "sqeuclidean" else "EMD-L1")
wrap(evaluation, "_sliced_w2_many", "readout sliced W2")
sc = experiment.Scenario(dataset=f"normal:n={users}", mechanism=name, epsilon=1.0, grid_side=side, seed=seed)
w, c = time.perf_counter(), time.process_time()
r = experiment.run(sc)
out = {"wall": time.perf_counter() - w, "cpu": time.process_time() - c, "phases": cpu,
       "iterations": int(r.estimate.info.get("iterations", 0)),
       "readouts": {k: v.method for k, v in r.readouts[0].items()}, "w2_m": float(r.metrics["w2_m"][0])}
print(json.dumps(out))
"""


def whole_section(out_dir: Path, users: int, side: int, repeats: int, quick: bool) -> None:
    """DAM's whole run against GRR's, fresh processes alternating; replaces WHOLE_SECTION of dam-benchmark.md."""
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    runs: dict[str, list[dict]] = {n: [] for n in WHOLE_NAMES}
    loads = [os.getloadavg()[0]]
    started = time.perf_counter()
    for rep in range(repeats):
        for name in (WHOLE_NAMES if rep % 2 == 0 else WHOLE_NAMES[::-1]):
            done = subprocess.run([sys.executable, "-c", WHOLE_WORKER, json.dumps([name, users, side, SEED + rep])],
                                  env=env, capture_output=True, text=True, check=True)
            runs[name].append(json.loads(done.stdout.strip().splitlines()[-1]))
            loads.append(os.getloadavg()[0])
            print(name, rep, {k: round(v, 2) for k, v in runs[name][-1]["phases"].items()},
                  round(runs[name][-1]["cpu"], 2), round(runs[name][-1]["wall"], 2), file=sys.stderr, flush=True)
    elapsed = time.perf_counter() - started
    med = {n: {k: statistics.median(r[k] for r in rs) for k in ("wall", "cpu")} for n, rs in runs.items()}
    phases = {n: {k: statistics.median(r["phases"].get(k, 0.0) for r in rs)
                  for k in sorted({k for r in rs for k in r["phases"]})} for n, rs in runs.items()}
    ratio_cpu = statistics.median(d["cpu"] / g["cpu"] for d, g in zip(runs["dam"], runs["grr"]))
    ratio_wall = statistics.median(d["wall"] / g["wall"] for d, g in zip(runs["dam"], runs["grr"]))
    dam = phases["dam"]
    em = dam.get("draw + estimate", 0.0)
    fft = dam.get("of which FFT transforms", 0.0)
    reads = dam.get("readouts", 0.0)
    lines = [WHOLE_SECTION, "",
             provenance_markdown(seeds=f"{SEED}..{SEED + repeats - 1} (one per repeat, both mechanisms)",
                                 trials=f"median of {repeats} fresh processes per mechanism", quick=quick),
             f"`bench/bench_dam.py --whole{' --quick' if quick else ''}`: `experiment.run` (what `ldpviz run "
             f"--dataset normal:n={users} --mechanism NAME --grid {side} --epsilon 1` runs: the draw, the estimate "
             f"and every readout) for DAM and GRR, each in a fresh process with imports, numba kernels and the data "
             f"set loaded before the clock, alternating which goes first, {repeats} time{'s' if repeats != 1 else ''}; "
             f"{elapsed:.0f} s wall, load average (1 min) {min(loads):.1f} to {max(loads):.1f} on {os.cpu_count()} "
             f"cores. CPU seconds count every thread of the process (the FFTs run on {FFT_WORKERS} "
             f"thread{'s' if FFT_WORKERS != 1 else ''}); each phase's CPU seconds come from wrapping the function "
             "`experiment.run` calls for it.", "",
             f"Goal (issue 38): DAM's whole run at most {WHOLE_GOAL:g}x GRR's.", "",
             "| mechanism | wall s | CPU s | draw + estimate CPU s | of which FFT transforms CPU s | readouts CPU s "
             "| readout W2 CPU s | readout EMD-L1 CPU s | readout sliced W2 CPU s | EM evaluations | W2 readout |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for n in WHOLE_NAMES:
        p, r0 = phases[n], runs[n][0]
        lines.append(f"| {n} | {med[n]['wall']:.2f} | {med[n]['cpu']:.2f} | {p.get('draw + estimate', 0):.2f} | "
                     f"{p.get('of which FFT transforms', 0):.2f} | {p.get('readouts', 0):.2f} | "
                     f"{p.get('readout W2', 0):.2f} | {p.get('readout EMD-L1', 0):.2f} | "
                     f"{p.get('readout sliced W2', 0):.2f} | {r0['iterations']} | {r0['readouts']['w2_m']} |")
    verdict = "meets" if ratio_cpu <= WHOLE_GOAL else "misses"
    lines += ["", f"DAM's whole run is {ratio_cpu:.1f}x GRR's in CPU seconds and {ratio_wall:.1f}x in wall seconds "
                  f"(medians of the paired ratios): it {verdict} the {WHOLE_GOAL:g}x goal. Of DAM's "
                  f"{med['dam']['cpu']:.1f} s CPU, the draw and the EM estimate take {em:.1f} s "
                  f"({100 * em / med['dam']['cpu']:.0f}%; the EM's FFT transforms alone {fft:.1f} s, "
                  f"{100 * fft / max(em, 1e-9):.0f}% of it) and the readouts {reads:.1f} s "
                  f"({100 * reads / med['dam']['cpu']:.0f}%). GRR's readouts take "
                  f"{phases['grr'].get('readouts', 0):.1f} s of its {med['grr']['cpu']:.1f} s. Even with readouts "
                  f"free, DAM's estimate alone is {em / med['grr']['cpu']:.1f}x GRR's whole run: the {side}-cell grid "
                  f"at epsilon 1 has the paper's optimal radius (eq. 12) of "
                  f"{dam_radius(side):.0f} cells, so every EM evaluation convolves over a "
                  f"{side + 2 * int(dam_radius(side))}-cell output box, and the held-out stopping rule runs EM twice "
                  "(once on the training split to choose the step count, once on all reports).", ""]
    path = out_dir / "dam-benchmark.md"
    text = path.read_text() if path.exists() else "# DAM family benchmark\n"
    if WHOLE_SECTION in text:
        start = text.index(WHOLE_SECTION)
        nxt = text.find("\n## ", start + len(WHOLE_SECTION))
        text = text[:start].rstrip() + "\n" + (text[nxt:] if nxt >= 0 else "")
    path.write_text(text.rstrip() + "\n\n" + "\n".join(lines) + "\n")
    print(f"wrote {path}")


def dam_radius(side: int, epsilon: float = 1.0) -> float:
    from ldpviz.mechanisms.dam.kernels import optimal_radius
    return optimal_radius(epsilon, side)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true",
                    help="smoke run: 20,000 users, d = 40, 1 repeat, SEM-Geo-I at d = 8 (about 20 s)")
    ap.add_argument("--out", default="docs", help="output directory (default docs/)")
    ap.add_argument("--users", type=int, help="default 1,000,000 (20,000 with --quick)")
    ap.add_argument("--side", type=int, help="default 64 (40 with --quick)")
    ap.add_argument("--epsilon", type=float, default=3.5)
    ap.add_argument("--repeats", type=int, help="default 5 (1 with --quick)")
    ap.add_argument("--sem-side", type=int, help="grid side for SEM-Geo-I, refused beyond 32 (default 16; 8 with "
                                                 "--quick)")
    ap.add_argument("--scale", action="store_true", help="the d = 256 section against --baseline (issue 28)")
    ap.add_argument("--baseline", default="7546b33",
                    help="commit to compare with in --scale (default 7546b33, before issue 28's in-place maps)")
    ap.add_argument("--w2-seeds", type=int, default=5, help="--scale: seeds for W2 at d = 32 (default 5)")
    ap.add_argument("--whole", action="store_true", help="whole runs of DAM against GRR at d = 256 (issue 38)")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        job = json.loads(args.worker)
        print(json.dumps(scale_measure(job["name"], job["side"], job["users"], job["epsilon"], job["seeds"],
                                       job["w2"])))
        return 0
    if args.whole:
        out_dir = Path(args.out)
        out_dir.mkdir(parents=True, exist_ok=True)
        whole_section(out_dir, args.users or (20_000 if args.quick else 1_000_000),
                      args.side or (32 if args.quick else 256), args.repeats or (1 if args.quick else 3), args.quick)
        return 0
    if args.scale:
        out_dir = Path(args.out)
        out_dir.mkdir(parents=True, exist_ok=True)
        scale_section(out_dir, args.baseline, args.users or 1_000_000, args.side or 256, 32,
                      20_000 if args.quick else 100_000, 2 if args.quick else args.w2_seeds)
        return 0
    for key, full, quick in (("users", 1_000_000, 20_000), ("side", 64, 40), ("repeats", 5, 1), ("sem_side", 16, 8)):
        if getattr(args, key) is None:
            setattr(args, key, quick if args.quick else full)
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(SEED)
    grid, users = population(args.users, args.side, rng)
    rows = []
    for name in NAMES:
        g, u = grid, users
        note = ""
        try:
            result = time_one(name, g, u, args.repeats, args.epsilon)
        except LdpvizInputError as err:
            note = f"refused at d = {args.side}: {err}"
            g, u = population(args.users // 10, args.sem_side, np.random.default_rng(SEED))
            result = time_one(name, g, u, max(1, args.repeats // 2), args.epsilon)
            note += f"; timed at d = {args.sem_side} with {args.users // 10:,} users instead"
        target = TARGET_S.get(name)
        verdict = "" if target is None else ("meets" if result["total"] <= target else "MISSES") + f" {target:g} s"
        rows.append((name, result, verdict, note))
        print(name, result, verdict, note, file=sys.stderr)
    lines = ["# DAM family benchmark\n",
             provenance_markdown(seeds=f"{SEED} (population), {SEED}..{SEED + args.repeats - 1} (repeats)",
                                 trials=f"median of {args.repeats} repeats", quick=args.quick),
             f"`bench/bench_dam.py`{' --quick' if args.quick else ''}: {args.users:,} users on a {args.side} x "
             f"{args.side} grid, epsilon = "
             f"{args.epsilon:g}, seed {SEED}, median of {args.repeats} repeats (setup excluded from the total: it is "
             "done once per (grid, epsilon)). Default parameters (EM stopped by the shared held-out rule of "
             "ldpviz.mechanisms.estimation; SW-EMS at 256 buckets per axis for MDSW).\n",
             "| mechanism | setup s | perturb s | estimate s | perturb + estimate s | EM iterations | target | note |",
             "|---|---|---|---|---|---|---|---|"]
    for name, r, verdict, note in rows:
        lines.append(f"| {name} | {r['setup']:.3f} | {r['perturb']:.3f} | {r['estimate']:.3f} | {r['total']:.3f} | "
                     f"{r['iterations']} | {verdict} | {note} |")
    path = out_dir / "dam-benchmark.md"
    kept = ""
    if path.exists() and SCALE_SECTION in path.read_text():           # the --scale section is its own run's
        old = path.read_text()
        kept = "\n" + old[old.index(SCALE_SECTION):]
    path.write_text("\n".join(lines) + "\n" + kept)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
