"""Benchmark: every client mechanism on its per-user and its aggregate path, at 1,000,000 users on a 64 x 64 grid.

Writes DIR/paths-benchmark.md. For every registered mechanism with a privacy guarantee whose users report
locally (every LDP and Geo-I mechanism; central-DP aggregators and the no-privacy reference are left out):
``collect`` (the client half, or the exact aggregate draw that replaces it) and ``estimate`` (the server),
on path 'per-user', 'aggregate' and 'auto', in *interleaved* repetitions (the three paths back to back in
rotating order in every repetition, so each repetition shares the machine's momentary load); reported as the
median and min-max over repetitions, with the paired per-user / aggregate ratio of collect times, the path
'auto' chose and whether that was the faster of the two (by median collect time).

Bounds (stated in the report): a per-user run whose first repetition took longer than --slow seconds is not
repeated; OUE's per-user reports (n x D bits) are skipped above --max-bits; SEM-Geo-I runs on a smaller grid
(it refuses grids above 32 x 32, and at epsilon = 1 its calibration refuses 32 x 32 too).

    python bench/bench_paths.py [--quick] [--out DIR]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.dirname(__file__))

from bench_fo import clustered_users, machine, spread  # noqa: E402
from ldpviz import mechanisms  # noqa: E402
from ldpviz.geo.domain import Grid, Region  # noqa: E402
from ldpviz.mechanisms.base import CENTRAL_DP, NO_PRIVACY  # noqa: E402
from ldpviz.evidence.reproduce import provenance_markdown  # noqa: E402

SEED = 20240601
PATHS = ("per-user", "aggregate", "auto")
REGION_M = 10_000.0


def client_mechanisms() -> list[str]:
    """Every registered mechanism whose users perturb locally (LDP and Geo-I)."""
    return [name for name in mechanisms.available()
            if mechanisms.get(name).privacy_model not in (CENTRAL_DP, NO_PRIVACY)]


def has_paths(name: str) -> bool:
    return any(p.name == "path" for p in mechanisms.get(name).params)


def timed(fn, *args) -> tuple[float, Any]:
    t = time.perf_counter()
    out = fn(*args)
    return time.perf_counter() - t, out


def one_run(mech, users, rng) -> tuple[float | None, float, str]:
    """(collect seconds or None, run seconds, path used) of one whole protocol run."""
    if hasattr(mech, "collect") and mech.name not in ("privag", "aag"):
        a, reports = timed(mech.collect, users, rng)
        b, est = timed(mech.estimate, reports)
        return a, a + b, str(est.info.get("path", "per-user"))
    sec, est = timed(mech.run, users, rng)
    return None, sec, str(est.info.get("path", "per-user"))


def bench_mechanism(name: str, users_by_side: dict, args: argparse.Namespace) -> dict:
    side = args.sem_side if name == "sem-geoi" else args.side
    grid = Grid(Region(0.0, 0.0, REGION_M), side)
    users = users_by_side.setdefault(side, clustered_users(args.users, grid))
    paths = PATHS if has_paths(name) else ("per-user",)
    t0 = time.perf_counter()
    mechs = {p: mechanisms.create(name, grid, args.epsilon, **({"path": p} if has_paths(name) else {}))
             for p in paths}
    setup_s = (time.perf_counter() - t0) / len(paths)
    n, cells = len(users.cells), grid.n_cells
    skipped: dict[str, str] = {}
    if name == "oue" and n * cells > args.max_bits:
        skipped["per-user"] = (f"skipped: {n:,} users x {cells:,} cells = {n * cells / 8 / 2 ** 20:,.0f} MiB of "
                               f"report bits, above the bound of {args.max_bits / 8 / 2 ** 20:,.0f} MiB")
    collect = {p: [] for p in paths}
    run = {p: [] for p in paths}
    used: dict[str, str] = {}
    for r in range(args.reps):
        order = paths[r % len(paths):] + paths[:r % len(paths)]
        for p in order:
            if p in skipped:
                continue
            a, b, path_used = one_run(mechs[p], users, np.random.default_rng([SEED, r]))
            if a is not None:
                collect[p].append(a)
            run[p].append(b)
            used[p] = path_used
            if r == 0 and b > args.slow and p == "per-user":
                skipped[p] = f"one run only: it took {b:.1f} s, above the bound of {args.slow:g} s"
    row = {"mechanism": name, "side": side, "users": n, "setup": setup_s, "paths": paths, "collect": collect,
           "run": run, "used": used, "skipped": skipped}
    pu, ag = collect.get("per-user", []), collect.get("aggregate", [])
    k = min(len(pu), len(ag))
    row["ratio"] = [pu[i] / ag[i] for i in range(k)] if k else []
    print(name, {p: spread(v) for p, v in run.items() if v}, used, flush=True)
    return row


def _cell(values: list[float]) -> str:
    return spread(values) if values else "-"


def write_report(path: str, rows: list[dict], args: argparse.Namespace) -> None:
    lines = ["# Both paths of every client mechanism at 1,000,000 users", "",
             provenance_markdown(seeds=f"{SEED} (population), [{SEED}, r] (repetition r)",
                                 trials=f"{args.reps} interleaved repetitions of every path", quick=args.quick),
             f"Machine: {machine()}.", "",
             f"Generated by `bench/bench_paths.py`{' (quick run)' if args.quick else ''}. Data: {args.users:,} "
             f"users, a synthetic clustered population (three Gaussian clusters and a uniform background, seed "
             f"{SEED}) on a {args.side} x {args.side} grid over a {REGION_M / 1000:g} km square (SEM-Geo-I: "
             f"{args.sem_side} x {args.sem_side}, see below), epsilon = {args.epsilon:g} (per km for Geo-I), "
             "default parameters. Each repetition runs the paths back to back in rotating order; every figure is "
             "the median [min-max] over repetitions, and the ratio is paired within repetitions.", "",
             "'collect' is what the server receives: the client half (every phone's report) on path 'per-user', "
             "the exact draw of the server's sufficient statistic on path 'aggregate' (same distribution; the "
             "tests in tests/mechanisms/fo/test_fo_paths.py and tests/mechanisms/test_client_paths.py check it); 'run' "
             "adds the server's estimate. 'auto' is the default: the path the mechanism's cost model predicts faster "
             "for these users. PrivAG and AAG run two rounds and are timed as whole runs only.", "",
             f"Bounds: a per-user run whose first repetition took over {args.slow:g} s is not repeated; OUE's "
             f"per-user reports are skipped above {args.max_bits / 8 / 2 ** 20:,.0f} MiB of report bits; SEM-Geo-I "
             "refuses grids above 32 x 32 (reports are sets of cells), and at epsilon = 1 its LP calibration refuses "
             f"32 x 32 as well, so it runs at {args.sem_side} x {args.sem_side}. MDSW has no aggregate path: its "
             "users perturb exact positions, not cells (ldpviz/mechanisms/dam/square_wave.py says why).", "",
             "| mechanism | grid | setup (s) | collect per-user (s) | collect aggregate (s) | collect auto (s) | "
             "paired collect ratio per-user / aggregate | auto chose | faster collect | run per-user (s) | "
             "run aggregate (s) | run auto (s) |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        c, u = r["collect"], r["run"]
        auto = r["used"].get("auto", "per-user (only path)")
        if c.get("per-user") and c.get("aggregate"):
            faster = "aggregate" if np.median(c["aggregate"]) < np.median(c["per-user"]) else "per-user"
        elif "per-user" in r["skipped"]:
            faster = "aggregate (per-user skipped)"
        else:
            faster = "-"
        pu = r["skipped"].get("per-user")
        pu_collect = (_cell(c.get("per-user", [])) + (f" ({pu})" if pu else "")) if c.get("per-user") or pu else "-"
        lines.append(f"| {r['mechanism']} | {r['side']} | {r['setup']:.2f} | {pu_collect} | "
                     f"{_cell(c.get('aggregate', []))} | {_cell(c.get('auto', []))} | "
                     f"{spread(r['ratio'], '{:,.3g}') + 'x' if r['ratio'] else '-'} | {auto} | {faster} | "
                     f"{_cell(u.get('per-user', []))} | {_cell(u.get('aggregate', []))} | {_cell(u.get('auto', []))} |")
    lines += ["", *summary_sentences(rows, args), ""]
    with open(path, "w") as fh:
        fh.write("\n".join(lines))


def summary_sentences(rows: list[dict], args: argparse.Namespace) -> list[str]:
    """The report's findings, generated from the numbers."""
    # a mechanism whose 'aggregate' request still ran per user (planar Laplace over exact positions) has no
    # aggregate path to compare
    with_agg = [r for r in rows if "aggregate" in r["paths"] and r["used"].get("aggregate", "aggregate") == "aggregate"]
    no_agg = [r["mechanism"] for r in rows if "aggregate" in r["paths"] and r not in with_agg]
    key = "auto"

    def med(r: dict, what: str, path: str) -> float:
        values = r[what].get(path) or []
        return float(np.median(values)) if values else float("nan")

    def collect_or_run(r: dict, path: str) -> float:
        return med(r, "collect", path) if r["collect"].get(path) else med(r, "run", path)

    fast = [r["mechanism"] for r in with_agg if collect_or_run(r, key) < 1.0]
    slow = [r for r in with_agg if not collect_or_run(r, key) < 1.0]
    out = [f"{len(with_agg)} of {len(rows)} client mechanisms have an aggregate path. On path 'auto' (the "
           f"default), {len(fast)} of those {len(with_agg)} collected the {args.users:,} users' reports in under "
           f"1 s (median; PrivAG and AAG: the whole run)"
           + (": all of them." if not slow else "; not: " + ", ".join(
               f"{r['mechanism']} ({collect_or_run(r, key):.2f} s)" for r in slow) + ".")]
    run_slow = [r for r in with_agg if not med(r, "run", key) < 1.0]
    if run_slow:
        out.append("Whole runs (collect + estimate) of 1 s or more on path 'auto': " + ", ".join(
            f"{r['mechanism']} ({med(r, 'run', key):.2f} s, of which the server's estimate "
            f"{med(r, 'run', key) - (med(r, 'collect', key) if r['collect'].get(key) else 0.0):.2f} s)"
            for r in run_slow) + "; the path changes only the collect part.")
    else:
        out.append("Every mechanism with an aggregate path ran the whole protocol in under 1 s on path 'auto'.")
    right = wrong = 0
    misses = []
    for r in with_agg:
        c = r["collect"]
        if c.get("per-user") and c.get("aggregate") and "auto" in r["used"]:
            faster = "aggregate" if np.median(c["aggregate"]) < np.median(c["per-user"]) else "per-user"
            if r["used"]["auto"] == faster:
                right += 1
            else:
                wrong += 1
                misses.append(f"{r['mechanism']} (chose {r['used']['auto']}: per-user "
                              f"{med(r, 'collect', 'per-user'):.3g} s, aggregate {med(r, 'collect', 'aggregate'):.3g} "
                              "s)")
    out.append(f"Where both paths were timed, 'auto' chose the faster collect in {right} of {right + wrong} "
               "mechanisms" + (": " + ", ".join(misses) + "." if misses else "."))
    if no_agg:
        out.append(f"No aggregate path (an 'aggregate' request runs per user): {', '.join(no_agg)}.")
    slower = [r for r in with_agg if r["ratio"] and np.median(r["ratio"]) < 1.0]
    if slower:
        out.append("The aggregate path collected slower than the per-user path (median paired ratio < 1) for: "
                   + ", ".join(f"{r['mechanism']} ({np.median(r['ratio']):.2g}x)" for r in slower)
                   + "; 'auto' keeps the per-user path where its model predicts that.")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="20,000 users on a 16 x 16 grid, two repetitions")
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "docs"),
                        help="output directory (default docs/)")
    parser.add_argument("--users", type=int, default=1_000_000)
    parser.add_argument("--side", type=int, default=64)
    parser.add_argument("--sem-side", type=int, default=16)
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--slow", type=float, default=5.0, help="per-user runs slower than this are not repeated")
    parser.add_argument("--max-bits", type=float, default=2 ** 31, help="bound on OUE's per-user report bits")
    parser.add_argument("--only", help="comma-separated mechanisms (default: every client mechanism)")
    args = parser.parse_args()
    if args.quick:
        args.users, args.side, args.sem_side, args.reps = 20_000, 16, 8, 2
    names = args.only.split(",") if args.only else client_mechanisms()
    users_by_side: dict = {}
    rows = [bench_mechanism(name, users_by_side, args) for name in names]
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "paths-benchmark.md")
    write_report(path, rows, args)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
