"""Re-run the DP heatmaps paper's *user-level* experiments and write DIR/heatmap-user-level.md.

dp-heatmaps-sparse-emd.md: every user holds a distribution (their check-ins normalised to
weight 1, Sec. 2.2-2.3), the privacy unit is one person. Sections of the report:

* Fig. 1: EMD and heatmap similarity vs eps in {0.5, 1, 2, 5, 10} (n = 200 users, Delta = 64);
* Fig. 2: EMD vs the number of users n in {50, 100, 200, 400} (Delta = 64, eps = 10) and vs the
  resolution Delta in {32, 64, 128} (n = 200, eps = 10);
* App. F (Figs. 12-13): the shuffle-model dp-heatmap vs the scaling factor B in {1, 10, 100, 1000}
  (n = 50, eps = 5, delta = 1e-5): bits per person and EMD, B = inf being the central algorithm;
* App. A: DP k-median (k = 5) cost on the true aggregate relative to non-private local search.

Users: people with many points, the paper's setting. The paper's Gowalla / Brightkite check-ins
are not shipped; we use 1,000 synthetic people from DAM App. D's random walk over the bundled
Minneapolis stops (ldpviz.data.trajectory_generator, 2-200 points each, "Whole city" region). Each trial draws n
distinct people. EMD is exact (ldpviz.metrics.emd_l1) between the true average distribution
a = s / n and the estimate, in region sides; similarity is on the Sec. 2.3 heatmaps with
sigma = Delta / 64 cells. ``laplace-top`` keeps the top 0.1% of cells (at least one).

    PYTHONPATH=. python bench/heatmap_user_level.py [--quick] [--out DIR] [--trials 10]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd

from ldpviz import metrics
from ldpviz.data import trajectory_generator as trajgen
from ldpviz.people import user_heatmaps as uh
from ldpviz.geo.domain import Grid, Region
from ldpviz.mechanisms.heatmaps import dp_heatmap as hm
from ldpviz.evidence.reproduce import provenance_markdown
from ldpviz.evidence.summaries import write_summary

EPSILONS = (0.5, 1.0, 2.0, 5.0, 10.0)
USERS = (50, 100, 200, 400)
SIDES = (32, 64, 128)
SCALES = (1, 10, 100, 1000)
METHODS = ("dp-heatmap", "laplace", "laplace-top")
TOP_PERCENT = 0.1
K = 5
QUICK = {"people": 300, "trials": 2, "epsilons": (1.0, 10.0), "users": (50, 200), "sides": (32, 64),
         "scales": (10, 1000)}


def sample(frame: pd.DataFrame, grid: Grid, n: int, rng: np.random.Generator) -> uh.PersonDistributions:
    people = rng.choice(frame["person"].unique(), size=n, replace=False)
    return uh.person_distributions(frame[frame["person"].isin(people)], grid)


def score(dists: uh.PersonDistributions, est: np.ndarray) -> dict[str, float]:
    side = dists.side
    truth = dists.aggregate() / dists.n_people
    sigma = side / 64
    return {"emd": metrics.emd_l1(truth, est) / side,
            "similarity": metrics.similarity(hm.heatmap(truth, sigma), hm.heatmap(est, sigma))}


def run(frame, region, side, n, eps, trials, seed, shuffle=None, methods=METHODS) -> dict[str, dict[str, float]]:
    grid = Grid(region, side)
    acc: dict[str, dict[str, list[float]]] = {m: {"emd": [], "similarity": []} for m in methods}
    for trial in range(trials):
        dists = sample(frame, grid, n, np.random.default_rng([seed, side, n, trial]))
        for i, method in enumerate(methods):
            rng = np.random.default_rng([seed, side, n, int(eps * 10), trial, i])
            res = uh.user_level_heatmap(dists, method, eps, rng, top_percent=TOP_PERCENT,
                                        shuffle=shuffle if method == "dp-heatmap" else None)
            for key, value in score(dists, res.density).items():
                acc[method][key].append(value)
    return {m: {k: float(np.mean(v)) for k, v in d.items()} for m, d in acc.items()}


def fmt_table(axis: str, keys, results, metric: str) -> list[str]:
    lines = ["| method | " + " | ".join(f"{axis} = {k:g}" for k in keys) + " |", "|---|" + "---|" * len(keys)]
    for m in next(iter(results.values())):
        lines.append(f"| {m} | " + " | ".join(f"{results[k][m][metric]:.4f}" for k in keys) + " |")
    return lines


def wins(results, metric="emd", better=min) -> str:
    keys = list(results)
    n_win = sum(1 for k in keys if better(results[k], key=lambda m: results[k][m][metric]) == "dp-heatmap")
    return f"{n_win} of {len(keys)}"


def trend(values: list[float]) -> str:
    diffs = np.diff(values)
    if (diffs < 0).all():
        return "decreasing at every step"
    if values[-1] < values[0]:
        return f"lower at the end but not at every step ({int((diffs >= 0).sum())} of {diffs.size} steps rise)"
    return "not decreasing"


def similarity_sentence(by_eps: dict) -> str:
    """Where the paper's 'better on every metric' does not hold for similarity (generated)."""
    behind = [e for e, r in by_eps.items() if r["dp-heatmap"]["similarity"] < r["laplace"]["similarity"]]
    emd_ahead = sum(r["dp-heatmap"]["emd"] < r["laplace"]["emd"] for r in by_eps.values())
    if not behind:
        return "- Similarity: dp-heatmap is ahead of the Laplace baseline at every eps, as in the paper."
    return (f"- The paper finds dp-heatmap ahead on every metric; here its heatmap similarity trails the plain "
            f"Laplace baseline at eps = {', '.join(f'{e:g}' for e in behind)} while its EMD is lower at {emd_ahead} of "
            f"{len(by_eps)} eps. A likely reason (not tested here): similarity is taken after the Gaussian filter, "
            f"which averages the baseline's per-cell noise away, while EMD charges for mass put far from the data.")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small run (300 people, 2 trials, 2 values per axis)")
    parser.add_argument("--out", type=Path, default=Path("docs"), help="output directory (default docs/)")
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    q = args.quick
    trials = QUICK["trials"] if q else args.trials
    epsilons, users = (QUICK["epsilons"], QUICK["users"]) if q else (EPSILONS, USERS)
    sides, scales = (QUICK["sides"], QUICK["scales"]) if q else (SIDES, SCALES)
    start = time.time()
    frame = trajgen.minneapolis_trajectories(seed=args.seed, n_trajectories=QUICK["people"] if q else 1000)
    region = Region(**frame.attrs["region"])
    n_default = min(200, frame["person"].nunique())
    by_eps = {e: run(frame, region, 64, n_default, e, trials, args.seed) for e in epsilons}
    by_n = {n: run(frame, region, 64, n, 10.0, trials, args.seed) for n in users}
    by_side = {s: run(frame, region, s, n_default, 10.0, trials, args.seed) for s in sides}
    # ---- App. F: shuffle vs B -------------------------------------------------------------------
    shuffle_rows = []
    for scale in scales:
        spec = uh.ShuffleSpec(1e-5, scale)
        res = run(frame, region, 64, 50, 5.0, trials, args.seed, shuffle=spec, methods=("dp-heatmap",))
        plan = uh.shuffle_plan(5.0, 50, 64, spec)
        shuffle_rows.append((scale, plan, res["dp-heatmap"]["emd"]))
    central = run(frame, region, 64, 50, 5.0, trials, args.seed, methods=("dp-heatmap",))["dp-heatmap"]["emd"]
    # ---- App. A: k-median -------------------------------------------------------------------------
    kmed = []
    grid = Grid(region, 64)
    for eps in epsilons:
        ratios = []
        for trial in range(trials):
            dists = sample(frame, grid, n_default, np.random.default_rng([args.seed, 7, trial]))
            s = dists.aggregate()
            top = np.argsort(-s.ravel())[:512]
            base = uh.kmedian_cost(s, uh.kmedian_local_search(s, K, top))
            res = uh.dp_kmedian_centres(dists, grid, K, eps, np.random.default_rng([args.seed, 8, int(eps * 10),
                                                                                    trial]))
            ratios.append(uh.kmedian_cost(s, res.centres_cells) / base)
        kmed.append((eps, float(np.mean(ratios)), float(np.max(ratios))))
    elapsed = time.time() - start

    lo_eps = [e for e in by_eps if 0.2 <= e <= 5]
    emd_n = {m: [by_n[n][m]["emd"] for n in users] for m in METHODS}
    emd_side = {m: [by_side[s][m]["emd"] for s in sides] for m in METHODS}
    a = frame.attrs
    fig1_sentence = (f"- dp-heatmap has the lowest EMD at {wins(by_eps)} values of eps, and at "
                     f"{wins({e: by_eps[e] for e in lo_eps})} of those in 0.2 <= eps <= 5, the range where the paper "
                     f"reports its advantage as largest; the highest similarity at {wins(by_eps, 'similarity', max)}.")
    delta_sentence = (f"- The paper: dp-heatmap's utility stays nearly constant in Delta while the Laplace baseline "
                      f"degrades; here dp-heatmap changes by "
                      f"x{emd_side['dp-heatmap'][-1] / max(emd_side['dp-heatmap'][0], 1e-12):.2f} "
                      f"and laplace by x{emd_side['laplace'][-1] / max(emd_side['laplace'][0], 1e-12):.2f} "
                      f"(Delta = {sides[0]} to {sides[-1]}).")
    shuffle_sentence = (f"- Communication grows from {shuffle_rows[0][1].bits_per_person:,} bits (B = "
                        f"{shuffle_rows[0][0]}) to {shuffle_rows[-1][1].bits_per_person:,} bits (B = "
                        f"{shuffle_rows[-1][0]}); the EMD at the largest B is "
                        f"{shuffle_rows[-1][2] / max(central, 1e-12):.2f} times the central algorithm's.")
    generated = [fig1_sentence, delta_sentence, similarity_sentence(by_eps), shuffle_sentence]
    lines = [
        "# DP heatmaps: the user-level experiments re-run (one distribution per person)", "",
        provenance_markdown(seeds="numpy default_rng([seed, Delta, n, (10 eps,) trial(, method)]), seed 0",
                            trials=f"{trials} per setting", quick=q),
        f"Users: {frame['person'].nunique():,} synthetic people ({len(frame):,} points, {a['min_length']}-"
        f"{a['max_length']} each) from DAM App. D's random walk over the Minneapolis stops "
        f"(`ldpviz.data.trajectory_generator.minneapolis_trajectories(seed={args.seed})`); each trial draws n distinct "
        f"people and normalises each person's points to weight 1 (`ldpviz.people.user_heatmaps.person_distributions`). "
        f"Privacy unit: {uh.PRIVACY_UNIT}; l1 sensitivity {uh.SENSITIVITY:g} per level (add/remove one person). "
        f"EMD exact, in region sides (lower is better); similarity on heatmaps (higher is better). "
        f"w = 20, gamma = 1/sqrt 2. Total run time {elapsed:.0f} s.", "",
        f"## Fig. 1: vs epsilon (n = {n_default}, Delta = 64)", "", "EMD:", "", *fmt_table("eps", epsilons, by_eps,
                                                                                           "emd"),
        "", "Similarity:", "", *fmt_table("eps", epsilons, by_eps, "similarity"), "",
        fig1_sentence, "",
        "## Fig. 2: vs the number of people n (Delta = 64, eps = 10)", "", *fmt_table("n", users, by_n, "emd"), "",
        *[f"- {m}: EMD goes from {emd_n[m][0]:.4f} at n = {users[0]} to {emd_n[m][-1]:.4f} at n = {users[-1]} "
          f"({trend(emd_n[m])} in n)." for m in METHODS], "",
        f"## Fig. 2: vs the resolution Delta (n = {n_default}, eps = 10)", "", *fmt_table("Delta", sides, by_side,
                                                                                          "emd"), "",
        *[f"- {m}: EMD from {emd_side[m][0]:.4f} at Delta = {sides[0]} to {emd_side[m][-1]:.4f} at Delta = {sides[-1]} "
          f"(x{emd_side[m][-1] / max(emd_side[m][0], 1e-12):.2f})." for m in METHODS],
        delta_sentence, "",
        "## App. F: shuffle model vs the scaling factor B (n = 50, eps = 5, delta = 1e-5, Delta = 64)", "",
        "| B | shares r | messages per person | bits per person | EMD |", "|---|---|---|---|---|",
        *[f"| {b} | {p.shares} | {p.messages_per_person:,} | {p.bits_per_person:,} | {e:.4f} |" for b, p,
          e in shuffle_rows],
        f"| inf (central) | - | - | - | {central:.4f} |", "",
        f"- Guarantee: {shuffle_rows[-1][1].guarantee()}.",
        shuffle_sentence, "",
        f"## App. A: DP k-median (k = {K}, n = {n_default}, Delta = 64)", "",
        "Cost on the true aggregate of the centres found on the DP coreset, relative to local search on the true "
        "aggregate (1 = as good as non-private):", "",
        "| eps | mean cost ratio | worst cost ratio |", "|---|---|---|",
        *[f"| {e:g} | {m:.3f} | {w:.3f} |" for e, m, w in kmed], "",
        f"- At eps = {kmed[-1][0]:g} the DP centres cost {kmed[-1][1]:.3f} times the non-private ones on average; at "
        f"eps = {kmed[0][0]:g}, {kmed[0][1]:.3f} times.", "",
        "## Where this differs from the paper and why", "",
        generated[2],
        "- Data: the paper's Gowalla and Brightkite check-ins (30 city cells, 200 users per trial) are not shipped; "
        "our people are random walks over Minneapolis stops, so their points are spatially coherent like check-ins "
        "of one city but not real people.",
        "- Resolution: Delta = 64 by default (the paper: 256) to keep the exact EMD and the run short; "
        f"laplace-top keeps {TOP_PERCENT}% of cells (the paper: 0.01% and 0.001% of 256^2 cells, i.e. a handful).",
        "- App. F's noise parameter: the paper writes Polya(1/n, e^-eps_i); on the B-scaled integers the l1 "
        "sensitivity is B, so we use e^(-eps_i/B) (otherwise the protocol would be (B eps)-DP). App. F's modulus "
        "q = B n cannot tell a cell holding everyone's mass from an empty one; we use q = 2 B n (r grows by at most "
        "one share).",
        "- App. A's k-median uses local search (a 5-approximation over its candidates) on the 512 heaviest coreset "
        "cells; the paper leaves the non-private solver open.", ""]
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "heatmap-user-level.md"
    path.write_text("\n".join(lines))
    summary = write_summary(args.out, "heatmap-user-level.md", "DP heatmaps, user level",
                            [line[2:] for line in generated],
                            {"emd_vs_delta": {m: dict(zip(map(str, sides), v)) for m, v in emd_side.items()},
                             "emd_vs_n": {m: dict(zip(map(str, users), v)) for m, v in emd_n.items()},
                             "shuffle_emd": {str(b): e for b, _, e in shuffle_rows}, "central_emd": central},
                            quick=q)
    print(f"wrote {path} and {summary}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
