"""EM's schedule on large output domains (issue 38.4): the standard schedule against the large-domain one.

Held-out EM (``ldpviz.mechanisms.estimation``) runs 200 plain EM steps before its first SQUAREM cycle and stops its
held-out search once it is past 1.5 x its best evaluation + 50. On an output domain of at least
``LARGE_EM_CELLS`` cells (DAM's family at d = 256 and epsilon up to about 2) each evaluation is two FFT convolutions
of about 700^2, and that schedule took 588 evaluations (19 s) at d = 256, 1M users, epsilon 1. The large-domain
schedule starts SQUAREM after ``LARGE_PLAIN_WARMUP`` steps, counts the patience in plain-EM-equivalent progress and
bounds SQUAREM's steps by ``LARGE_SQUAREM_STEP_SHARE`` of the progress so far; it is also run with the standard bound
(0.1, the first large-domain schedule) to show what the larger bound changes on its own.

For each setting this script draws one collection per seed and estimates it with both schedules (the same reports),
recording the estimate's CPU seconds, its forward maps (EM evaluations), and its error against the true histogram:
exact W2 on 4 x 4 block sums (64 x 64 cells at d = 256; exact W2 at the full 256^2 took 157 s for one such pair),
the product's W2 readout at full resolution (back-and-forth lower bound, with its certified upper bound) and L1.
Data: the DAM paper's Normal set (1M users, the speed gate's run) and the bundled city (all 51,920 users).

    python bench/em_large_domains.py                     # docs/em-large-domains.md (+ .json)
    python bench/em_large_domains.py --quick --out /tmp/e  # smoke run: d = 128, 20,000 users, DAM, one seed
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ldpviz import mechanisms, metrics  # noqa: E402
from ldpviz.data import datasets  # noqa: E402
from ldpviz.evidence.reproduce import provenance_markdown  # noqa: E402
from ldpviz.experiment import Scenario, prepare_users  # noqa: E402
from ldpviz.mechanisms import estimation  # noqa: E402
from ldpviz.mechanisms.estimation import _em  # noqa: E402

SEEDS = (2026, 2027, 2028)
#: (dataset, mechanism, epsilon, grid side)
FULL = [("normal:n=1000000", "dam", 1.0, 256), ("normal:n=1000000", "dam-ns", 1.0, 256),
        ("normal:n=1000000", "huem", 1.0, 256), ("normal:n=1000000", "dam", 0.5, 256),
        ("minneapolis-stops", "dam", 1.0, 256)]
QUICK = [("normal:n=20000", "dam", 1.0, 128)]
BLOCK = 4
#: The schedules compared: the standard one, the large-domain one with the standard SQUAREM step bound (the first
#: large-domain schedule, issue 38.4), and the large-domain one as it runs (its own step bound).
SHARE_ONE_TENTH = "large, step share 0.1"
SCHEDULES = ("standard", SHARE_ONE_TENTH, "large")


def blocks(p: np.ndarray, k: int) -> np.ndarray:
    d = p.shape[0]
    return p.reshape(d // k, k, d // k, k).sum(axis=(1, 3))


def estimate(mech, reports, schedule: str) -> tuple[np.ndarray, dict, float, int]:
    """The estimate under ``schedule`` (one of SCHEDULES), its info, CPU seconds and forward maps."""
    forward = mech.chan.forward_batch
    maps = [0]

    def counted(f: np.ndarray) -> np.ndarray:
        maps[0] += f.shape[0]
        return forward(f)

    mech.chan.forward_batch = counted
    saved = _em.LARGE_EM_CELLS, _em.LARGE_SQUAREM_STEP_SHARE
    if schedule == "standard":
        _em.LARGE_EM_CELLS = 10 ** 15
    elif schedule == SHARE_ONE_TENTH:
        _em.LARGE_SQUAREM_STEP_SHARE = estimation.SQUAREM_STEP_SHARE
    try:
        cpu = time.process_time()
        est = mech.estimate(reports)
        cpu = time.process_time() - cpu
    finally:
        _em.LARGE_EM_CELLS, _em.LARGE_SQUAREM_STEP_SHARE = saved
        del mech.chan.forward_batch
    return est.density, est.info, cpu, maps[0]


def measure(dataset: str, name: str, epsilon: float, side: int, seeds, block: int) -> list[dict]:
    data = datasets.load(dataset)
    base = Scenario(dataset=dataset, mechanism=name, epsilon=epsilon, grid_side=side, seed=seeds[0])
    grid, users, _ = prepare_users(base, data)
    truth = (grid.histogram(users.cells) / len(users.cells)).reshape(side, side)
    mech = mechanisms.create(name, grid, epsilon)
    rows = []
    for seed in seeds:
        reports = mech.collect(users, np.random.default_rng([seed, 0]))
        for schedule in SCHEDULES:
            density, info, cpu, maps = estimate(mech, reports, schedule)
            est = density.reshape(side, side)
            coarse = metrics.w2(blocks(truth, block), blocks(est, block), cell_m=grid.cell_m * block,
                                method="exact")
            readout = metrics.w2_readout(truth, est, cell_m=grid.cell_m)
            row = {"dataset": dataset, "mechanism": name, "epsilon": epsilon, "d": side, "users": len(users.cells),
                   "output_cells": int(mech.chan.out_side ** 2), "seed": seed, "schedule": schedule,
                   "cpu_s": cpu, "forward_maps": maps, "steps": info.get("steps"),
                   "w2_blocks_m": coarse, "w2_readout_m": readout.value, "w2_readout_upper_m": readout.upper,
                   "l1": float(np.abs(est - truth).sum()), "load": os.getloadavg()[0]}
            print(json.dumps(row), file=sys.stderr, flush=True)
            rows.append(row)
    return rows


def summary(rows: list[dict], block: int, schedule: str, against: str) -> list[str]:
    """Generated sentences: time and error of ``schedule`` against ``against``, per setting and over all."""
    lines = []
    keys = sorted({(r["dataset"], r["mechanism"], r["epsilon"], r["d"]) for r in rows}, key=str)
    cpu_ratios, w2_changes = [], []
    for key in keys:
        mine = [r for r in rows if (r["dataset"], r["mechanism"], r["epsilon"], r["d"]) == key]
        ref = {r["seed"]: r for r in mine if r["schedule"] == against}
        new = {r["seed"]: r for r in mine if r["schedule"] == schedule}
        seeds = sorted(set(ref) & set(new))
        if not seeds:
            continue
        cpu = [new[s]["cpu_s"] / ref[s]["cpu_s"] for s in seeds]
        change = [new[s]["w2_blocks_m"] / ref[s]["w2_blocks_m"] - 1 for s in seeds]
        spread = [ref[s]["w2_blocks_m"] for s in seeds]
        cpu_ratios += cpu
        w2_changes += change
        lines.append(
            f"- {key[1]}, {key[0]}, epsilon {key[2]:g}, d = {key[3]}: {statistics.mean(cpu):.2f}x the CPU "
            f"({min(cpu):.2f}-{max(cpu):.2f}; {statistics.mean(new[s]['forward_maps'] for s in seeds):.0f} forward "
            f"maps against {statistics.mean(ref[s]['forward_maps'] for s in seeds):.0f}); W2 on {block} x {block} "
            f"blocks changed by {100 * statistics.mean(change):+.1f}% on average (per seed "
            f"{', '.join(f'{100 * c:+.1f}%' for c in change)}), against a seed-to-seed range of "
            f"{min(spread):.0f}-{max(spread):.0f} m under the {against} schedule.")
    if cpu_ratios:
        lines.insert(0, f"**{schedule} against {against}.** Over all {len(cpu_ratios)} collections: CPU "
                        f"{statistics.mean(cpu_ratios):.2f}x (at most {max(cpu_ratios):.2f}x); W2 on blocks "
                        f"{100 * statistics.mean(w2_changes):+.1f}% on average ({100 * min(w2_changes):+.1f}% to "
                        f"{100 * max(w2_changes):+.1f}%).")
        lines.insert(1, "")
        lines.append("")
    return lines


def report(rows: list[dict], quick: bool, seeds, loads: tuple, block: int) -> str:
    lines = ["# EM on large output domains: the standard schedule against the large-domain one", "",
             provenance_markdown(seeds=", ".join(map(str, seeds)) + " (one collection each, rng [seed, 0])",
                                 trials="one collection per seed, both schedules on the same reports", quick=quick),
             "",
             f"Generated by `python bench/em_large_domains.py{' --quick' if quick else ''}`. Load average (1 min) "
             f"before / after: {loads[0]:.1f} / {loads[1]:.1f} on {os.cpu_count()} cores; CPU seconds of the "
             f"estimate alone. Standard: {estimation.PLAIN_WARMUP} plain steps, then SQUAREM; patience "
             f"{estimation.PATIENCE_SHARE:g} x the best evaluation + {estimation.PATIENCE_EXTRA}. Large-domain (at "
             f"least {estimation.LARGE_EM_CELLS:,} output cells): {estimation.LARGE_PLAIN_WARMUP} plain steps, the "
             "same patience in plain-EM-equivalent progress, SQUAREM steps bounded by "
             f"{estimation.LARGE_SQUAREM_STEP_SHARE:g} of the progress so far (\"{SHARE_ONE_TENTH}\": by the standard "
             f"schedule's {estimation.SQUAREM_STEP_SHARE:g}, as the first large-domain schedule was).", "",
             "## Summary (generated from the rows below)", "",
             *summary(rows, block, "large", "standard"),
             *summary(rows, block, "large", SHARE_ONE_TENTH),
             *summary(rows, block, SHARE_ONE_TENTH, "standard"),
             "## Rows", "",
             f"W2 blocks: exact W2 between the {block} x {block} block sums of the truth and the estimate. Readout: "
             "the product's W2 readout at full resolution (its value, the back-and-forth lower bound, and its "
             "certified upper bound).", "",
             "| data | mechanism | ε | d | output cells | seed | schedule | CPU (s) | forward maps | steps | "
             "W2 blocks (m) | W2 readout (m) | readout upper (m) | L1 |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['dataset']} | {r['mechanism']} | {r['epsilon']:g} | {r['d']} | {r['output_cells']:,} | "
                     f"{r['seed']} | {r['schedule']} | {r['cpu_s']:.2f} | {r['forward_maps']} | {r['steps']} | "
                     f"{r['w2_blocks_m']:.1f} | {r['w2_readout_m']:.1f} | {r['w2_readout_upper_m']:.1f} | "
                     f"{r['l1']:.4f} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "docs"))
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    settings, seeds, block = (QUICK, SEEDS[:1], 2) if args.quick else (FULL, SEEDS, BLOCK)
    before = os.getloadavg()[0]
    if args.quick:                      # a domain under the threshold: lowered to it so both schedules run
        _em.LARGE_EM_CELLS = 1
    rows = [r for s in settings for r in measure(*s, seeds, block)]
    after = os.getloadavg()[0]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "em-large-domains.json").write_text(json.dumps({"rows": rows}, indent=1) + "\n")
    (out / "em-large-domains.md").write_text(report(rows, args.quick, seeds, (before, after), block))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
