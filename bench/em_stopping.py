"""Effect of the EM stopping rule on the DAM paper's comparison (issue 15 item 7).

Every EM/EMS estimator shares ldpviz.mechanisms.estimation.expectation_maximisation and its stopping rule.
This script runs the DAM paper's setting (bench/dam_claims.py: Normal and MNormal, d = 15,
epsilon = 3.5, exact W2 in units of the region side) under four rules:

* legacy 1e-3 / legacy 1e-4: the former absolute rule, Delta L < tol x number of cells (nats);
* converged: Delta L < 1e-9 x n, the maximum-likelihood / EMS fixed point;
* holdout: early stopping at the iteration count that maximises the log-likelihood of 20% held-out
  reports, then refitted on all reports (the default).

MDSW runs with plain EM at grid resolution here (``postprocess="em"``), so the rule matters for it too.
Verdict sentences are generated from the numbers.

The last section (issue 28) compares planar Laplace at a fixed epsilon per km on a coarse and a fine grid
(minneapolis-stops, 1/km, d = 16 against 64) with the baselines that explain the difference.

Usage: PYTHONPATH=. python bench/em_stopping.py [--quick] [--planar-only] [--out DIR]   (writes DIR/em-stopping.md)
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import dam_claims as claims  # noqa: E402

from ldpviz.mechanisms.estimation import EM_TOLERANCE, MAX_EM_ITERATIONS, em_stopping_rule  # noqa: E402
from ldpviz.evidence.reproduce import provenance_markdown  # noqa: E402

RULES = (("legacy 1e-3", "legacy", 1e-3), ("legacy 1e-4", "legacy", 1e-4), ("converged", "converged", 1e-3),
         ("holdout", "holdout", 1e-3))
#: The acceleration section: small eps, where plain EM crawls (the held-out rule with and without SQUAREM).
SMALL_EPSILONS = (0.1, 0.5)
MECHS = (("dam", {}), ("huem", {}), ("sem-geoi", {}), ("mdsw", {"postprocess": "em"}))
D, EPSILON, SEED = 15, 3.5, 1000


def measure(datasets: tuple[str, ...], n: int, trials: int) -> dict:
    """(dataset, mechanism, rule) -> (W2 per trial, iterations per trial, seconds)."""
    out = {}
    for ds in datasets:
        for name, params in MECHS:
            mech = None
            for label, rule, tol in RULES:
                w, its, t0 = [], [], time.perf_counter()
                for t in range(trials):
                    rng = np.random.default_rng(SEED + t)
                    grid, users = claims.bin_points(ds, n, rng, D)
                    if mech is None:
                        mech = claims.make(name, grid, EPSILON, params)
                    reports = mech.perturb(users, rng)
                    with em_stopping_rule(rule, cell_tolerance=tol, accelerate=False):
                        est = mech.estimate(reports)
                    w.append(claims.w2(grid.histogram(users.cells), est.density))
                    its.append(int(est.info.get("iterations", 0)))
                out[(ds, name, label)] = (w, its, time.perf_counter() - t0)
                print(f"{ds:8s} {name:9s} {label:12s} W2 {np.mean(w):.4f}  iterations {its}", flush=True)
    return out


def measure_acceleration(dataset: str, n: int, trials: int, epsilons: tuple[float, ...]) -> dict:
    """(eps, mechanism, accelerated) -> (W2 per trial, EM evaluations per trial, seconds): the held-out rule."""
    out = {}
    for eps in epsilons:
        for name, params in MECHS:
            mech = None
            runs = {True: ([], [], 0.0), False: ([], [], 0.0)}
            for t in range(trials):
                rng = np.random.default_rng(SEED + t)
                grid, users = claims.bin_points(dataset, n, rng, D)
                if mech is None:
                    mech = claims.make(name, grid, eps, params)
                reports = mech.perturb(users, rng)
                truth = grid.histogram(users.cells)
                for acc in (True, False):
                    t0 = time.perf_counter()
                    with em_stopping_rule("holdout", accelerate=acc):
                        est = mech.estimate(reports)
                    w, its, sec = runs[acc]
                    w.append(claims.w2(truth, est.density))
                    its.append(int(est.info.get("iterations", 0)))
                    runs[acc] = (w, its, sec + time.perf_counter() - t0)
            for acc, value in runs.items():
                out[(eps, name, acc)] = value
            print(f"eps {eps} {name:9s} accelerated {np.mean(runs[True][0]):.4f} plain {np.mean(runs[False][0]):.4f}",
                  flush=True)
    return out


def render_acceleration(acc: dict, dataset: str, epsilons: tuple[float, ...]) -> list[str]:
    parts = [f"## Acceleration at small epsilon ({dataset})", "",
             "The held-out rule with SQUAREM cycles after 200 plain steps (the default) and with plain EM only; "
             "the same reports are estimated both ways. Refit steps = EM evaluations in the final fit on all "
             "reports (plain: the chosen iteration count); seconds = the whole estimate (held-out search and refit) "
             "summed over trials.", "",
             "| epsilon | mechanism | W2, accelerated | W2, plain | refit steps, accelerated | refit steps, plain "
             "| seconds, accelerated | seconds, plain |", "|---|---|---|---|---|---|---|---|"]
    lines = []
    for eps in epsilons:
        for name, _ in MECHS:
            (wa, ia, sa), (wp, ip, sp) = acc[(eps, name, True)], acc[(eps, name, False)]
            parts.append(f"| {eps:g} | {name} | {np.mean(wa):.4f} ± {np.std(wa):.4f} | {np.mean(wp):.4f} ± "
                         f"{np.std(wp):.4f} | {np.mean(ia):.0f} | {np.mean(ip):.0f} | {sa:.2f} | {sp:.2f} |")
            change = (np.mean(wa) - np.mean(wp)) / np.mean(wp)
            noise = max(np.std(wa), np.std(wp))
            within = abs(np.mean(wa) - np.mean(wp)) <= noise
            speed = sp / max(sa, 1e-9)
            lines.append(f"- eps = {eps:g}, {name}: accelerated W2 {change:+.0%} vs plain "
                         f"({'within' if within else 'beyond'} one sd over trials), "
                         + (f"{speed:.1f}x faster." if speed >= 1 else f"{1 / max(speed, 1e-9):.1f}x slower."))
    return parts + ["", "Generated from the table:", ""] + lines + [""]


def verdicts(res: dict, datasets: tuple[str, ...]) -> list[str]:
    lines = []
    labels = [lab for lab, _, _ in RULES]
    for ds in datasets:
        order = {lab: np.mean(res[(ds, "dam", lab)][0]) < np.mean(res[(ds, "sem-geoi", lab)][0]) for lab in labels}
        winners = {lab: ("DAM" if ok else "SEM-Geo-I") for lab, ok in order.items()}
        flips = len(set(winners.values())) > 1
        lines.append(f"- {ds}: DAM vs SEM-Geo-I, lower W2 under each rule: "
                     + ", ".join(f"{lab} {winners[lab]}" for lab in labels)
                     + (" -- **the rule decides the winner**." if flips else " -- the same under every rule."))
        for name, _ in MECHS:
            legacy = np.mean(res[(ds, name, "legacy 1e-3")][0])
            conv = np.mean(res[(ds, name, "converged")][0])
            change = (conv - legacy) / legacy
            effect = ("early stopping regularised it" if change > 0.05 else "little effect" if abs(change) <= 0.05
                      else "convergence helps")
            lines.append(f"  - {name}: converged W2 {conv:.4f} vs legacy 1e-3 {legacy:.4f} "
                         f"({change:+.0%}; {effect}).")
    return lines


def render(res: dict, datasets: tuple[str, ...], n: int, trials: int, quick: bool, seconds: float,
           acceleration: list[str] = ()) -> str:
    parts = ["# EM stopping rules: their effect on the DAM comparison", "",
             provenance_markdown(seeds=f"{SEED}..{SEED + trials - 1}", trials=str(trials), quick=quick).rstrip(), "",
             f"Generated by `bench/em_stopping.py`{' --quick' if quick else ''}: d = {D}, epsilon = {EPSILON}, "
             f"{n:,} points per trial, trial t seeded with {SEED} + t (data and reports; the same reports are "
             f"estimated under every rule). W2 exact, in units of the region side (mean ± sd). SEM-Geo-I is "
             f"calibrated to DAM's local privacy; MDSW uses plain EM at grid resolution. Converged = log-likelihood "
             f"change < {EM_TOLERANCE:g} x n per iteration (cap {MAX_EM_ITERATIONS:,} iterations); legacy = change < "
             f"tol x cells in nats; holdout = iteration count chosen on 20% held-out reports. The rule tables "
             f"run plain EM (no acceleration) so the rules are compared on one path; the last section measures "
             f"the default SQUAREM acceleration. {seconds:.0f} s in all.", ""]
    labels = [lab for lab, _, _ in RULES]
    for ds in datasets:
        parts += [f"## {ds}", "", "| mechanism | " + " | ".join(f"W2, {lab}" for lab in labels) + " | "
                  + " | ".join(f"iterations, {lab}" for lab in labels) + " |",
                  "|---|" + "---|" * (2 * len(labels))]
        for name, _ in MECHS:
            cells = [f"{np.mean(res[(ds, name, lab)][0]):.4f} ± {np.std(res[(ds, name, lab)][0]):.4f}"
                     for lab in labels]
            cells += [f"{np.mean(res[(ds, name, lab)][1]):.0f}" for lab in labels]
            parts.append(f"| {name} | " + " | ".join(cells) + " |")
        parts.append("")
    parts += ["## Verdicts (generated from the tables)", ""] + verdicts(res, datasets) + [""]
    return "\n".join(parts + list(acceleration))


# ---------------------------------------------------------------------------
# Planar Laplace at a fixed epsilon per km on a coarse and a fine grid (issue 28)
# ---------------------------------------------------------------------------
PLANAR_DATASET, PLANAR_EPSILON, PLANAR_SIDES, PLANAR_SEED, PLANAR_TRIALS = "minneapolis-stops", 1.0, (16, 64), 0, 3
PLANAR_REPLICAS = 40


def _cell_model():
    """A context in which planar Laplace's EM uses the cell-level server model (no sub-cells): the model before
    issue 28, kept here as the baseline."""
    import contextlib

    from ldpviz.mechanisms.dam import planar_laplace as pl

    @contextlib.contextmanager
    def block():
        saved = pl.SUBCELL_EPSILON
        pl.SUBCELL_EPSILON = float("inf")
        try:
            yield
        finally:
            pl.SUBCELL_EPSILON = saved
    return block()


def measure_planar(quick: bool) -> dict:
    """W2 of planar Laplace at d = 16 and 64 (same data, epsilon per km, seeds), with the baselines that explain
    the gap: the rules, the estimates scored on common grids, a noise-free estimate and the model's fit."""
    from ldpviz import experiment, mechanisms, metrics
    from ldpviz.data import datasets as ds_mod
    from ldpviz.experiment import Scenario
    from ldpviz.mechanisms.estimation import expectation_maximisation_batch

    data = ds_mod.load(PLANAR_DATASET)
    trials = 1 if quick else PLANAR_TRIALS
    base = Scenario(dataset=PLANAR_DATASET, mechanism="planar-laplace", epsilon=PLANAR_EPSILON,
                    seed=PLANAR_SEED, trials=trials)
    out: dict = {"trials": trials}
    coarse, fine = PLANAR_SIDES
    k = fine // coarse
    runs = {}
    for d in PLANAR_SIDES:
        runs[(d, "now")] = experiment.run(base.with_(grid_side=d), data)
        with _cell_model():
            runs[(d, "cell")] = experiment.run(base.with_(grid_side=d), data)
            for rule in ("converged", "legacy"):
                with em_stopping_rule(rule):
                    runs[(d, rule)] = experiment.run(base.with_(grid_side=d), data)
    out["w2"] = {key: [float(v) for v in r.metrics["w2_m"]] for key, r in runs.items()}
    out["iterations"] = {key: [int(e.info["iterations"]) for e in r.estimates] for key, r in runs.items()}
    out["subcells"] = {d: int(runs[(d, "now")].estimates[0].info["subcells_per_side"]) for d in PLANAR_SIDES}
    out["cell_m"] = {d: float(runs[(d, "now")].grid.cell_m) for d in PLANAR_SIDES}
    t_c, t_f = runs[(coarse, "now")].true_density, runs[(fine, "now")].true_density
    cm_c, cm_f = out["cell_m"][coarse], out["cell_m"][fine]

    def summed(x):
        return x.reshape(coarse, k, coarse, k).sum(axis=(1, 3))

    def spread(x):
        return np.kron(x, np.ones((k, k))) / (k * k)

    out["fine_summed_on_coarse"] = [float(metrics.w2(t_c, summed(e.density), cell_m=cm_c))
                                    for e in runs[(fine, "now")].estimates]
    for which in ("now", "cell"):
        out[f"coarse_spread_on_fine_{which}"] = [float(metrics.w2(t_f, spread(e.density), cell_m=cm_f))
                                                 for e in runs[(coarse, which)].estimates]
    out["coarse_truth_spread_on_fine"] = float(metrics.w2(t_f, spread(t_c), cell_m=cm_f))
    # noise-free: PLANAR_REPLICAS populations' worth of real reports at d = 16, and the model's own expected counts
    grid, users, _ = experiment.prepare_users(base.with_(grid_side=coarse), data)
    n = len(users.cells)
    replicas = 4 if quick else PLANAR_REPLICAS
    mech = mechanisms.create("planar-laplace", grid, PLANAR_EPSILON)
    real = sum(np.bincount(mech.per_user(users, np.random.default_rng([PLANAR_SEED, 99, r])), minlength=coarse ** 2)
               for r in range(replicas)).reshape(coarse, coarse).astype(float)
    for which in ("now", "cell"):
        if which == "cell":
            with _cell_model():
                m = mechanisms.create("planar-laplace", grid, PLANAR_EPSILON)
        else:
            m = mech
        s = m.subcells
        forward, adjoint, shape = m.em_maps()
        pos = m.positions(users) * s
        idx = np.minimum(pos.astype(np.int64), coarse * s - 1)
        truth_sub = np.bincount(idx[:, 1] * coarse * s + idx[:, 0], minlength=(coarse * s) ** 2).reshape(shape) / n
        expected = replicas * n * forward(truth_sub[None])[0]
        z = (real - expected) / np.sqrt(np.maximum(expected, 1e-12))
        out[f"fit_rms_z_{which}"] = float(np.sqrt(np.mean(z ** 2)))
        for label, counts in (("real", real), ("model", expected)):
            est, _ = expectation_maximisation_batch(counts[None], forward, adjoint, shape, smoothing=False,
                                                    rule="converged")
            dens = est[0].reshape(coarse, s, coarse, s).sum(axis=(1, 3))
            out[f"noise_free_{label}_{which}"] = float(metrics.w2(t_c, dens, cell_m=cm_c))
    out["replicas"] = replicas
    # the best any stopping rule could do: W2 along plain EM's path (now's model), at checkpoints
    from ldpviz.mechanisms.estimation import _step_batch
    checkpoints = (10, 20, 40, 80, 160, 320, 640, 1000)
    for d in PLANAR_SIDES:
        g, u, _ = experiment.prepare_users(base.with_(grid_side=d), data)
        m = mechanisms.create("planar-laplace", g, PLANAR_EPSILON)
        forward, adjoint, shape = m.em_maps()
        s = m.subcells
        truth = g.histogram(u.cells) / len(u.cells)
        best = []
        for t in range(trials):
            counts = m.statistic(m.collect(u, np.random.default_rng([PLANAR_SEED, t]))).counts
            counts = np.asarray(counts, dtype=float).reshape(1, d, d)
            f = np.full((1,) + shape, 1.0 / np.prod(shape))
            path = []
            for it in range(1, checkpoints[-1] + 1):
                f, _, _ = _step_batch(counts, counts.reshape(1, -1).sum(axis=1), forward, adjoint, f, False)
                if it in checkpoints:
                    dens = f[0].reshape(d, s, d, s).sum(axis=(1, 3))
                    path.append((float(metrics.w2(truth, dens, cell_m=g.cell_m)), it))
            best.append(min(path))
        out[f"oracle_{d}"] = best
    return out


def render_planar(p: dict) -> list[str]:
    coarse, fine = PLANAR_SIDES
    w = {key: float(np.mean(v)) for key, v in p["w2"].items()}
    its = {key: float(np.mean(v)) for key, v in p["iterations"].items()}
    mean = lambda key: float(np.mean(p[key]))  # noqa: E731
    sd = lambda v: float(np.std(v))  # noqa: E731
    rows = [("EM on sub-cells (now; s = {} at d = {}, {} at d = {})".format(p["subcells"][coarse], coarse,
                                                                             p["subcells"][fine], fine), "now"),
            ("cell-level model, held-out rule (before)", "cell"),
            ("cell-level model, converged", "converged"), ("cell-level model, legacy 1e-3", "legacy")]
    oracle = {d: [w2 for w2, _ in p[f"oracle_{d}"]] for d in PLANAR_SIDES}
    parts = [f"## Planar Laplace at a fixed epsilon per km: d = {coarse} against d = {fine} (issue 28)", "",
             f"{PLANAR_DATASET}, epsilon = {PLANAR_EPSILON:g} per km, scenario seed {PLANAR_SEED}, {p['trials']} "
             f"trials (trial t draws from the generator ({PLANAR_SEED}, t)), every user in the region; W2 exact, in "
             f"metres, each on its own grid (cells of {p['cell_m'][coarse]:.0f} m and {p['cell_m'][fine]:.0f} m), "
             "mean ± sd over trials; EM iterations = evaluations of the final fit, mean over trials.", "",
             f"| estimator | W2 m, d = {coarse} | W2 m, d = {fine} | ratio | iterations, d = {coarse} | "
             f"iterations, d = {fine} |", "|---|---|---|---|---|---|"]
    for label, key in rows:
        a, b = p["w2"][(coarse, key)], p["w2"][(fine, key)]
        parts.append(f"| {label} | {np.mean(a):.0f} ± {sd(a):.0f} | {np.mean(b):.0f} ± {sd(b):.0f} | "
                     f"{np.mean(a) / np.mean(b):.2f} | {its[(coarse, key)]:.0f} | {its[(fine, key)]:.0f} |")
    parts.append(f"| sub-cells, plain EM stopped where W2 is lowest (an oracle: the best any stopping rule could do; "
                 f"checked at 10, 20, 40, ..., 1,000 iterations) | {np.mean(oracle[coarse]):.0f} ± "
                 f"{sd(oracle[coarse]):.0f} | {np.mean(oracle[fine]):.0f} ± {sd(oracle[fine]):.0f} | "
                 f"{np.mean(oracle[coarse]) / np.mean(oracle[fine]):.2f} | "
                 f"{np.mean([i for _, i in p[f'oracle_{coarse}']]):.0f} | "
                 f"{np.mean([i for _, i in p[f'oracle_{fine}']]):.0f} |")
    parts += ["", "Baselines that explain the gap:", "",
              "| baseline | W2 m |", "|---|---|",
              f"| d = {fine} estimates summed into the d = {coarse} cells, scored on the d = {coarse} grid | "
              f"{mean('fine_summed_on_coarse'):.0f} ± {sd(p['fine_summed_on_coarse']):.0f} |",
              f"| d = {coarse} estimates (now) spread evenly over their d = {fine} sub-cells, scored on the d = {fine} "
              f"grid | {mean('coarse_spread_on_fine_now'):.0f} ± {sd(p['coarse_spread_on_fine_now']):.0f} |",
              f"| d = {coarse} estimates (cell-level model) spread the same way | "
              f"{mean('coarse_spread_on_fine_cell'):.0f} ± {sd(p['coarse_spread_on_fine_cell']):.0f} |",
              f"| the true d = {coarse} histogram spread the same way (the coarse grid's cell-centre floor on the "
              f"d = {fine} grid) | {p['coarse_truth_spread_on_fine']:.0f} |",
              f"| d = {coarse}, cell-level model: EM on {p['replicas']} populations' worth of real reports (almost no "
              f"noise) | {p['noise_free_real_cell']:.0f} |",
              f"| d = {coarse}, cell-level model: EM on the model's own expected counts (no noise, no misfit) | "
              f"{p['noise_free_model_cell']:.0f} |",
              f"| d = {coarse}, sub-cells: EM on the same {p['replicas']} populations' real reports | "
              f"{p['noise_free_real_now']:.0f} |",
              f"| d = {coarse}, sub-cells: EM on the model's own expected counts | {p['noise_free_model_now']:.0f} |",
              "", f"Fit of the server model to the {p['replicas']} populations' real reports at d = {coarse} (rms of "
                  f"(reports - expected) / sqrt(expected); about 1 when the model fits): cell-level "
                  f"{p['fit_rms_z_cell']:.2f}, sub-cells {p['fit_rms_z_now']:.2f}.", ""]
    before = w[(coarse, "cell")] / w[(fine, "cell")]
    now = w[(coarse, "now")] / w[(fine, "now")]
    floor = mean("fine_summed_on_coarse") / w[(fine, "now")]
    common = mean("coarse_spread_on_fine_now") / w[(fine, "now")]
    parts += ["Generated from the tables:", "",
              f"- Stopping: at d = {coarse} the held-out rule (sub-cells) gives {w[(coarse, 'now')]:.0f} m where the "
              f"oracle stop gives {np.mean(oracle[coarse]):.0f} m "
              f"({w[(coarse, 'now')] / np.mean(oracle[coarse]) - 1:+.0%}); at d = {fine} {w[(fine, 'now')]:.0f} m "
              f"against {np.mean(oracle[fine]):.0f} m ({w[(fine, 'now')] / np.mean(oracle[fine]) - 1:+.0%}). "
              "With the cell-level model the rules ranged from "
              f"{min(w[(coarse, k)] for k in ('cell', 'converged', 'legacy')):.0f} to "
              f"{max(w[(coarse, k)] for k in ('cell', 'converged', 'legacy')):.0f} m at d = {coarse}.",
              f"- The cell-level model misfits real reports at d = {coarse} (rms {p['fit_rms_z_cell']:.1f} standard "
              f"errors): without noise its EM (converged) gives {p['noise_free_real_cell']:.0f} m on real reports "
              f"against {p['noise_free_model_cell']:.0f} m on its own expected counts. On sub-cells the fit is "
              f"{p['fit_rms_z_now']:.1f} and W2 {w[(coarse, 'now')]:.0f} m "
              f"({(w[(coarse, 'now')] - w[(coarse, 'cell')]) / w[(coarse, 'cell')]:+.0%}).",
              f"- The rest is the grid W2 is read on: the d = {fine} estimates themselves, summed into the "
              f"d = {coarse} cells, read {mean('fine_summed_on_coarse'):.0f} m there, {floor:.2f}x their "
              f"{w[(fine, 'now')]:.0f} m on their own grid (a mass put in the neighbouring cell costs a whole cell "
              f"side). d = {coarse} now reads {w[(coarse, 'now')] / mean('fine_summed_on_coarse'):.2f}x that "
              "baseline.",
              f"- Issue 28's bound, W2 at d = {coarse} within 1.5x of d = {fine}, each on its own grid: "
              f"{before:.2f}x before, {now:.2f}x now -- "
              + ("met." if now <= 1.5 else f"not met, and no estimator of the d = {coarse} reports is expected to "
                 f"meet it: the finer reports' own estimate reads {floor:.2f}x on the coarse grid.")
              + f" Scored on the same (d = {fine}) grid: {common:.2f}x"
              + (" (within 1.5x)." if common <= 1.5 else "."),
              f"- **Which reading the goal is judged on: the common (d = {fine}) grid, {common:.2f}x -- "
              + ("met" if common <= 1.5 else "not met") + ".** "
              f"The bound asks whether a coarse grid loses accuracy at the same privacy; W2 read on each estimate's "
              f"own grid mixes that with the metric's resolution (on {p['cell_m'][coarse]:.0f} m cells a mass one "
              f"cell off costs {p['cell_m'][coarse]:.0f} m), which is why the d = {fine} estimate itself reads "
              f"{floor:.2f}x once summed into the d = {coarse} cells. Stopping is not the cause: the held-out rule "
              "is within "
              f"{max(abs(w[(g, 'now')] / np.mean(oracle[g]) - 1) for g in (coarse, fine)):.0%} "
              "of the oracle stop on both grids, so the rule is kept (no re-tuning). "
              "tests/mechanisms/dam/test_planar_laplace_grids.py checks both readings on one seeded trial.", ""]
    return parts


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="Normal only, 20,000 users, 1 trial")
    ap.add_argument("--out", default="docs", help="output directory (default docs/)")
    ap.add_argument("--planar-only", action="store_true",
                    help="only the planar Laplace section (replaced in place in DIR/em-stopping.md)")
    args = ap.parse_args(argv)
    datasets, n, trials = (("Normal",), 20_000, 1) if args.quick else (("Normal", "MNormal"), 100_000, 3)
    t0 = time.perf_counter()
    planar = render_planar(measure_planar(args.quick))
    print("\n".join(planar), file=sys.stderr, flush=True)
    if args.planar_only:
        out = Path(args.out)
        path = out / "em-stopping.md"
        text = path.read_text() if path.exists() else ""
        if planar[0] in text:
            text = text[:text.index(planar[0])].rstrip() + "\n"
        path.write_text(text.rstrip() + "\n\n" + "\n".join(planar))
        print(f"wrote {path}", file=sys.stderr)
        return 0
    res = measure(datasets, n, trials)
    epsilons = SMALL_EPSILONS[-1:] if args.quick else SMALL_EPSILONS
    acc = measure_acceleration(datasets[0], n, trials, epsilons)
    text = render(res, datasets, n, trials, args.quick, time.perf_counter() - t0,
                  render_acceleration(acc, datasets[0], epsilons) + ["", *planar])
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "em-stopping.md").write_text(text)
    print(f"wrote {out / 'em-stopping.md'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
