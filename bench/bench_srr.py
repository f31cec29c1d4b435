"""Benchmark SRR: offline plan for a ~3,000-location domain; perturb + estimate for 1,000,000 users.

Paper (L-SRR Sec. 6.5): offline about 30 s at most, server side about 9 s for ~1M users.
Writes DIR/srr-benchmark.md (default docs/). Run: PYTHONPATH=. python bench/bench_srr.py [--quick] [--out DIR]
``--quick``: the same steps on a 300-location domain, 100,000 users, epsilon 1 and 5.
"""

import argparse
import time
from pathlib import Path

import numpy as np

from ldpviz.geo.domain import Grid, Region
from ldpviz.mechanisms.srr import staircase as S
from ldpviz.evidence.reproduce import provenance_markdown

SEED = 2024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="smoke run: 300 locations, 100,000 users, epsilon 1 and 5")
    parser.add_argument("--out", default="docs", help="output directory (default docs/)")
    args = parser.parse_args()
    locations, n_users = (300, 100_000) if args.quick else (3000, 1_000_000)
    epsilons = (1.0, 5.0) if args.quick else (1.0, 3.0, 5.0)
    users_label = f"{n_users // 1000:,}k" if n_users < 1_000_000 else f"{n_users // 1_000_000}M"
    rng = np.random.default_rng(SEED)
    grid = Grid(Region(-73.95, 40.73, 40_000), 64)
    uv = np.clip(np.concatenate([rng.normal(c, 0.08, size=(200_000, 2)) for c in rng.random((5, 2))]), 0, 1)
    users = grid.bin_unit(uv)
    domain = S.occupied_domain(grid, users.unit, 17)
    codes = (domain.codes[np.sort(rng.choice(domain.size, locations, replace=False))]
             if domain.size > locations else domain.codes)
    domain = S.LocationDomain(codes=codes, n_bits=domain.n_bits, rects=np.zeros((len(codes), 4)),
                              kind="occupied", level=17)
    rows = []
    for eps in epsilons:
        t0 = time.perf_counter()
        plan = S.build_plan(domain, eps)
        t1 = time.perf_counter()
        S.hadamard_estimate(plan, np.ones(domain.size))   # LU / SVD factorisation
        t2 = time.perf_counter()
        x = rng.integers(0, domain.size, n_users)
        t3 = time.perf_counter()
        reports = S.perturb_positions(plan, x, rng)
        t4 = time.perf_counter()
        counts = np.bincount(reports, minlength=domain.size).astype(float)
        S.hadamard_estimate(plan, counts)
        t5 = time.perf_counter()
        rows.append((eps, domain.size, plan.m, t1 - t0, t2 - t1, t4 - t3, t5 - t4))
    lines = ["# SRR benchmark", "",
             provenance_markdown(seeds=str(SEED), trials="one timed run per epsilon", quick=args.quick),
             f"Script `bench/bench_srr.py`{' --quick' if args.quick else ''}: {len(codes):,} occupied locations "
             f"(level-17 cells of a 5-cluster population), {n_users:,} users.", "",
             "Paper (Sec. 6.5, Xeon Gold 6126): offline partitioning up to ~30 s; server ~9 s for ~1M users.", "",
             f"| eps | domain d | m | offline plan (s) | solver factorisation (s) | perturb {users_label} (s) | "
             f"estimate {users_label} (s) |",
             "|---|---|---|---|---|---|---|"]
    lines += [f"| {e:g} | {d} | {m} | {a:.2f} | {b:.2f} | {c:.2f} | {f:.2f} |" for e, d, m, a, b, c, f in rows]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "srr-benchmark.md"
    path.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
