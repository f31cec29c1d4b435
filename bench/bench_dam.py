"""Speed of the DAM paper's mechanisms: n users on a d x d grid, perturb + estimate.

Usage: PYTHONPATH=. python bench/bench_dam.py [--quick] [--out DIR] [--users 1000000] [--side 64] [--repeats 5]
Writes DIR/dam-benchmark.md (default docs/; provenance, seed, medians). Not a timed test.
``--quick``: 20,000 users on a 40 x 40 grid (still beyond SEM-Geo-I's limit, so its fallback path runs),
1 repeat, SEM-Geo-I at d = 8.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from ldpviz import mechanisms
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
    args = ap.parse_args(argv)
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
             f"done once per (grid, epsilon)). Default parameters (EM stopped by the shared held-out rule of ldpviz.mechanisms.estimation; SW-EMS at 256 buckets per axis for MDSW).\n",
             "| mechanism | setup s | perturb s | estimate s | perturb + estimate s | EM iterations | target | note |",
             "|---|---|---|---|---|---|---|---|"]
    for name, r, verdict, note in rows:
        lines.append(f"| {name} | {r['setup']:.3f} | {r['perturb']:.3f} | {r['estimate']:.3f} | {r['total']:.3f} | "
                     f"{r['iterations']} | {verdict} | {note} |")
    path = out_dir / "dam-benchmark.md"
    path.write_text("\n".join(lines) + "\n")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
