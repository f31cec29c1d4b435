"""Benchmark SRR: offline plan for a ~3,000-location domain; perturb + estimate for 1,000,000 users.

Paper (L-SRR Sec. 6.5): offline about 30 s at most, server side about 9 s for ~1M users.
Writes docs/srr-benchmark.md. Run: PYTHONPATH=. python bench/bench_srr.py
"""

import datetime
import platform
import time

import numpy as np

from ldpviz.domain import Grid, Region
from ldpviz.mechanisms import srr as S

SEED = 2024


def main() -> None:
    rng = np.random.default_rng(SEED)
    grid = Grid(Region(-73.95, 40.73, 40_000), 64)
    uv = np.clip(np.concatenate([rng.normal(c, 0.08, size=(200_000, 2)) for c in rng.random((5, 2))]), 0, 1)
    users = grid.bin_unit(uv)
    domain = S.occupied_domain(grid, users.unit, 17)
    codes = domain.codes[np.sort(rng.choice(domain.size, 3000, replace=False))] if domain.size > 3000 else domain.codes
    domain = S.LocationDomain(codes=codes, n_bits=domain.n_bits, rects=np.zeros((len(codes), 4)),
                              kind="occupied", level=17)
    rows = []
    for eps in (1.0, 3.0, 5.0):
        t0 = time.perf_counter(); plan = S.build_plan(domain, eps); t1 = time.perf_counter()
        S.hadamard_estimate(plan, np.ones(domain.size)); t2 = time.perf_counter()   # LU / SVD factorisation
        x = rng.integers(0, domain.size, 1_000_000)
        t3 = time.perf_counter(); reports = S.perturb_positions(plan, x, rng); t4 = time.perf_counter()
        counts = np.bincount(reports, minlength=domain.size).astype(float)
        S.hadamard_estimate(plan, counts); t5 = time.perf_counter()
        rows.append((eps, domain.size, plan.m, t1 - t0, t2 - t1, t4 - t3, t5 - t4))
    lines = ["# SRR benchmark", "",
             f"Machine: {platform.processor() or platform.machine()}, {platform.python_version()}; "
             f"date {datetime.date.today()}; seed {SEED}; script bench/bench_srr.py.", "",
             "Paper (Sec. 6.5, Xeon Gold 6126): offline partitioning up to ~30 s; server ~9 s for ~1M users.", "",
             "| eps | domain d | m | offline plan (s) | solver factorisation (s) | perturb 1M (s) | estimate 1M (s) |",
             "|---|---|---|---|---|---|---|"]
    lines += [f"| {e:g} | {d} | {m} | {a:.2f} | {b:.2f} | {c:.2f} | {f:.2f} |" for e, d, m, a, b, c, f in rows]
    open("docs/srr-benchmark.md", "w").write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
