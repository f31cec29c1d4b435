"""OD estimation speed: 1,000,000 users on a 16 x 16 grid (65,536 OD pairs), every scheme, both estimators.

Paper: l-srr-staircase-randomized-response.md Sec. 4.1 (OD analysis by Lasso over the candidate pairs).
Issue 13 asks for "OD estimation for 1M users on a 16 x 16 grid in seconds, not minutes".

For each L-SRR scheme (SRR, GRR, OLH-H, HR, PLDP on the public grid domain; origin and destination at
epsilon/2 each) the script times: the joint statistic from per-user reports (every phone simulated,
ldpviz.flows.od.joint_statistic) and drawn from the true OD counts (ldpviz.flows.od_simulate, same distribution);
then, on the per-user statistic, the Lasso (ldpviz.flows.od.estimate_lasso: ADMM + projected Newton on the
Kronecker structure, ldpviz.flows.od_lasso_solver), EM and the unbiased estimate; and the previous Lasso solver
(L-BFGS-B, ldpviz.flows.od.estimate_lasso_lbfgsb) on the same statistic, with the relative difference of the
two Lasso objectives (negative: the new solver's optimum is lower) and the L1 distance between the two
estimates (where the channel is rank-deficient, SRR and PLDP, only the optimal value is unique).

BLAS is limited to one thread (the solvers do many small products; on the shared 2-core machine
threaded OpenBLAS was much slower for them), as in bench/flows_claims.py.

Run: PYTHONPATH=. python bench/bench_od.py [--quick] [--out DIR]   (writes DIR/od-benchmark.md)
``--quick``: 30,000 users on an 8 x 8 grid (4,096 pairs).
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from ldpviz import mechanisms
from ldpviz.flows import od  # noqa: E402
from ldpviz.geo.domain import Grid  # noqa: E402
from ldpviz.mechanisms.srr.staircase import grid_domain  # noqa: E402
from ldpviz.flows.od_simulate import simulate_statistic  # noqa: E402
from ldpviz.evidence.reproduce import provenance_markdown  # noqa: E402

SEED = 13
EPSILON = 4.0
SCHEMES = od.OD_MECHANISMS


def timed(fn, *args, **kwargs):
    t0 = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - t0


def scheme_row(name: str, grid: Grid, bo, bd, previous: bool) -> dict:
    mech = mechanisms.create(name, grid, EPSILON / 2)
    domain = grid_domain(grid)
    po, pd_ = mech.positions(domain, bo), mech.positions(domain, bd)
    D = domain.size
    counts = np.bincount(po * D + pd_, minlength=D * D).reshape(D, D)
    true = counts / counts.sum()
    rng = np.random.default_rng(SEED)
    (rep_o, rep_d), t_perturb = timed(lambda: (mech.perturb(bo, rng), mech.perturb(bd, rng)))
    stat, t_stat = timed(od.joint_statistic, mech, rep_o, rep_d)
    _, t_agg = timed(simulate_statistic, mech, domain, counts, np.random.default_rng(SEED + 1))
    (lasso, info), t_lasso = timed(od.estimate_lasso, stat)
    (em, em_info), t_em = timed(od.estimate_em, stat)
    (unb, _), t_unb = timed(od.estimate_unbiased, stat)
    row = {"scheme": name, "users": int(counts.sum()), "pairs": int(D * D),
           "per_user_s": t_perturb + t_stat, "aggregate_s": t_agg,
           "lasso_s": t_lasso, "lasso_iter": info["iterations"], "lasso_kkt": info["kkt_violation"],
           "lasso_conv": info["converged"], "lasso_l1": od.od_l1(true, lasso),
           "em_s": t_em, "em_iter": em_info["iterations"], "em_l1": od.od_l1(true, em),
           "unbiased_s": t_unb, "unbiased_l1": od.od_l1(true, unb)}
    if previous:
        (old, old_info), t_old = timed(od.estimate_lasso_lbfgsb, stat)
        f_new = od.lasso_objective(stat, lasso * info["coef_sum"])
        f_old = od.lasso_objective(stat, old * old_info["coef_sum"])
        row.update(prev_s=t_old, prev_iter=old_info["iterations"], prev_conv=old_info["converged"],
                   obj_rel_diff=(f_new - f_old) / abs(f_old), l1_new_vs_prev=od.od_l1(old, lasso))
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="30,000 users on an 8 x 8 grid (CI smoke run)")
    parser.add_argument("--out", type=Path, default=Path("docs"), help="output directory (default docs/)")
    parser.add_argument("--no-previous", action="store_true", help="skip the previous L-BFGS-B solver")
    args = parser.parse_args()
    users, side = (30_000, 8) if args.quick else (1_000_000, 16)
    t0 = time.perf_counter()
    load_start = os.getloadavg()[0]
    pairs, region, source = od.load_od_pairs("minneapolis-stops", "Whole city", users, SEED)
    grid = Grid(region, side)
    bo, bd, outside = od.bin_pairs(grid, pairs.origin_lon, pairs.origin_lat, pairs.dest_lon, pairs.dest_lat)
    rows = []
    for name in SCHEMES:
        rows.append(scheme_row(name, grid, bo, bd, not args.no_previous))
        print(rows[-1], flush=True)
    n, n_pairs = rows[0]["users"], rows[0]["pairs"]

    def fmt(v):
        if isinstance(v, (bool, np.bool_)):
            return "yes" if v else "no"
        if isinstance(v, float):
            return f"{v:.2e}" if v != 0 and abs(v) < 1e-3 else f"{v:.3f}"
        return f"{v:,}" if isinstance(v, int) else str(v)

    cols = ["scheme", "per_user_s", "aggregate_s", "lasso_s", "lasso_iter", "lasso_conv", "lasso_kkt", "lasso_l1",
            "em_s", "em_iter", "em_l1", "unbiased_s", "unbiased_l1"]
    table = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    table += ["| " + " | ".join(fmt(r[c]) for c in cols) + " |" for r in rows]
    worst = lambda key: max(rows, key=lambda r: r[key])             # noqa: E731
    sentences = [
        f"With {n:,} users on the {side} x {side} grid ({n_pairs:,} OD pairs, epsilon = {EPSILON:g}), the Lasso takes "
        f"at most {worst('lasso_s')['lasso_s']:.2f} s ({worst('lasso_s')['scheme']}) and EM at most "
        f"{worst('em_s')['em_s']:.2f} s ({worst('em_s')['scheme']}); the joint statistic takes at most "
        f"{worst('per_user_s')['per_user_s']:.2f} s from per-user reports ({worst('per_user_s')['scheme']}) and "
        f"{worst('aggregate_s')['aggregate_s']:.2f} s drawn from the OD counts ({worst('aggregate_s')['scheme']}).",
        f"The Lasso meets its KKT tolerance (1e-9 of max |c|) for "
        f"{sum(bool(r['lasso_conv']) for r in rows)} of {len(rows)} schemes"
        + (": " + ", ".join(f"{r['scheme']} stops on a stalled objective at KKT violation {r['lasso_kkt']:.1e}"
                            for r in rows if not r["lasso_conv"]) if not all(r["lasso_conv"] for r in rows) else "")
        + "."]
    prev_lines = []
    if not args.no_previous:
        pcols = ["scheme", "lasso_s", "prev_s", "prev_iter", "prev_conv", "obj_rel_diff", "l1_new_vs_prev"]
        prev_lines = ["## Against the previous Lasso solver (L-BFGS-B, 1,500 iterations at most)", "",
                      "| " + " | ".join(pcols) + " |", "|" + "---|" * len(pcols)]
        prev_lines += ["| " + " | ".join(fmt(r[c]) for c in pcols) + " |" for r in rows]
        lower = sum(r["obj_rel_diff"] <= 1e-9 for r in rows)
        sentences.append(
            f"The previous solver took up to {worst('prev_s')['prev_s']:.2f} s ({worst('prev_s')['scheme']}); the new "
            f"Lasso's objective is at most the previous one's (+1e-9 relative) for {lower} of {len(rows)} schemes"
            + ("" if lower == len(rows) else " (" + ", ".join(f"{r['scheme']}: {r['obj_rel_diff']:+.1e}" for r in rows
                                                              if r["obj_rel_diff"] > 1e-9) + ")")
            + f"; the largest relative objective difference is {max(abs(r['obj_rel_diff']) for r in rows):.1e}.")
        prev_lines += [""]
    text = [
        "# OD estimation speed (L-SRR Sec. 4.1)", "",
        provenance_markdown(seeds=f"{SEED} (reports), {SEED + 1} (aggregate draw)", trials="one timed run per scheme",
                            quick=args.quick),
        f"- Run time: {time.perf_counter() - t0:.0f} s; BLAS limited to one thread; the machine is shared: 1-minute "
        f"load average {load_start:.1f} at the start and {os.getloadavg()[0]:.1f} at the end on "
        f"{os.cpu_count()} cores, so times are upper bounds for an idle machine", "",
        "## Setting", "",
        f"- `bench/bench_od.py{' --quick' if args.quick else ''}`: {source}; {n:,} OD pairs inside the region "
        f"({outside:,} left out), {side} x {side} grid, public grid domain, epsilon = {EPSILON:g} per OD pair "
        f"(epsilon/2 = {EPSILON / 2:g} for the origin and for the destination; privacy unit: one trip's OD pair).",
        "- Columns: `per_user_s` = every phone's two reports plus the joint statistic; `aggregate_s` = the same "
        "statistic drawn from the true OD counts (ldpviz.flows.od_simulate; OLH-H under a fully random hash family); "
        "estimator times on the per-user statistic; L1 over OD pairs against the true distribution.",
        "- Solvers: Lasso = ADMM with the exact Kronecker solve + projected Newton (ldpviz/flows/od_lasso_solver.py); "
        "EM = Richardson-Lucy with SQUAREM on the joint report histogram (GRR's channel applied as a I + b J).", "",
        "## Times (seconds) and accuracy", "", *table, "", *prev_lines,
        "## Summary (generated from the numbers above)", "", *sentences, "",
    ]
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "od-benchmark.md"
    path.write_text("\n".join(text) + "\n")
    print("\n".join(sentences))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
