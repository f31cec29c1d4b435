"""Benchmark: our frequency oracles against pure-ldp, and the grid decompositions at 1M users.

pure-ldp is NOT a runtime dependency of ldpviz; it is a peer measured here only.
Install it into the virtualenv first (its OLH needs xxhash < 2):

    /work/venv/bin/pip install pure-ldp==1.2.0 'xxhash<2'

Run from the repository root:

    PYTHONPATH=. /work/venv/bin/python bench/bench_fo.py [--quick] [--out DIR]   # writes DIR/fo-benchmark.md

What is measured, in one run on the same data and epsilon:

* GRR, OLH, OUE, HR, ours (per-user path, client + server halves) vs pure-ldp's
  DE (direct encoding = GRR), LH with use_olh=True, UE with use_oue=True and
  Hadamard Response (its high-privacy variant at epsilon <= 1, the same scheme
  as ours): wall time for the whole population (privatise every user,
  aggregate, estimate every cell), throughput ratio, and mean squared error of
  the unbiased counts over all cells against the truth (accuracy parity: the
  two MSEs within 10% of each other), with the analytical MSE beside them.
* UG, PrivAG, AAG (OLH, per-user path) on 1,000,000 users: wall time of run().
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from ldpviz.domain import Grid, Region  # noqa: E402
from ldpviz import mechanisms  # noqa: E402
from ldpviz.mechanisms import fo  # noqa: E402
from ldpviz.reproduce import provenance_markdown  # noqa: E402

SEED = 20240601


def population(n: int, domain_size: int, seed: int) -> np.ndarray:
    """A skewed categorical population: Zipf-like weights 1/(rank+1)^1.1 over shuffled values."""
    rng = np.random.default_rng(seed)
    weights = 1.0 / np.arange(1, domain_size + 1) ** 1.1
    weights = weights[rng.permutation(domain_size)]
    return rng.choice(domain_size, size=n, p=weights / weights.sum())


def ours(oracle: str, values: np.ndarray, domain_size: int, epsilon: float, seed: int) -> np.ndarray:
    return fo.oracle_counts(oracle, values, domain_size, epsilon, np.random.default_rng(seed))


def _import_pure_ldp_oracles():
    """Import pure-ldp's four oracles without its package __init__.

    ``pure_ldp.frequency_oracles/__init__.py`` also imports RAPPOR, which needs
    scikit-learn; RAPPOR is not benchmarked, so the subpackages are imported on
    their own (registering a bare parent package) when scikit-learn is absent.
    """
    import importlib
    import importlib.util
    import types
    try:
        import sklearn  # noqa: F401
    except ImportError:
        import pure_ldp
        name = "pure_ldp.frequency_oracles"
        if name not in sys.modules:
            package = types.ModuleType(name)
            package.__path__ = [os.path.join(os.path.dirname(pure_ldp.__file__), "frequency_oracles")]
            sys.modules[name] = package
    mods = {k: importlib.import_module(f"pure_ldp.frequency_oracles.{k}")
            for k in ("direct_encoding", "local_hashing", "unary_encoding", "hadamard_response")}
    return mods


def peer(oracle: str, values: np.ndarray, domain_size: int, epsilon: float, seed: int) -> np.ndarray:
    """pure-ldp 1.2.0, used as its documentation shows: privatise per user, aggregate, estimate_all."""
    import random

    mods = _import_pure_ldp_oracles()
    DEClient, DEServer = mods["direct_encoding"].DEClient, mods["direct_encoding"].DEServer
    LHClient, LHServer = mods["local_hashing"].LHClient, mods["local_hashing"].LHServer
    UEClient, UEServer = mods["unary_encoding"].UEClient, mods["unary_encoding"].UEServer
    HadamardResponseClient = mods["hadamard_response"].HadamardResponseClient
    HadamardResponseServer = mods["hadamard_response"].HadamardResponseServer
    random.seed(seed)
    np.random.seed(seed % (2 ** 32))
    identity = (lambda x: x)  # our values are already 0-based indices
    if oracle == "grr":
        client, server = DEClient(epsilon, domain_size, index_mapper=identity), \
            DEServer(epsilon, domain_size, index_mapper=identity)
    elif oracle == "olh":
        client, server = LHClient(epsilon, domain_size, use_olh=True, index_mapper=identity), \
            LHServer(epsilon, domain_size, use_olh=True, index_mapper=identity)
    elif oracle == "oue":
        client, server = UEClient(epsilon, domain_size, use_oue=True, index_mapper=identity), \
            UEServer(epsilon, domain_size, use_oue=True, index_mapper=identity)
    else:
        server = HadamardResponseServer(epsilon, domain_size, index_mapper=identity)
        client = HadamardResponseClient(epsilon, domain_size, server.get_hash_funcs(), index_mapper=identity)
    for v in values.tolist():
        server.aggregate(client.privatise(v))
    return np.asarray(server.estimate_all(range(domain_size), suppress_warnings=True), dtype=float)


def timed(fn, *args) -> tuple[float, np.ndarray]:
    t = time.perf_counter()
    out = fn(*args)
    return time.perf_counter() - t, out


def bench_oracles(n: int, domain_size: int, epsilon: float, trials: int, peer_trials: dict[str, int],
                  peer_users: dict[str, int]) -> list[dict]:
    values = population(n, domain_size, SEED)
    truth = np.bincount(values, minlength=domain_size).astype(float)
    rows = []
    for oracle in fo.ORACLES:
        our_t, our_mse = [], []
        for t in range(trials):
            sec, est = timed(ours, oracle, values, domain_size, epsilon, SEED + t)
            our_t.append(sec)
            our_mse.append(np.mean((est - truth) ** 2))
        theory = float(np.mean(fo.oracle_variance(oracle, n, truth, domain_size, epsilon)))
        row = {"oracle": oracle, "ours_s": float(np.median(our_t)), "ours_mse": float(np.mean(our_mse)),
               "theory_mse": theory, "ours_trials": trials}
        try:
            import pure_ldp  # noqa: F401
        except ImportError:
            row["peer"] = "pure-ldp not installed"
            rows.append(row)
            continue
        m = peer_users.get(oracle, n)
        sub = values[:m]
        sub_truth = np.bincount(sub, minlength=domain_size).astype(float)
        p_t, p_mse = [], []
        for t in range(peer_trials.get(oracle, 1)):
            sec, est = timed(peer, oracle, sub, domain_size, epsilon, SEED + 100 + t)
            p_t.append(sec * n / m)
            p_mse.append(np.mean((est - sub_truth) ** 2))
        row.update({"peer_s": float(np.median(p_t)), "peer_users": m, "peer_trials": len(p_t),
                    "peer_mse": float(np.mean(p_mse)),
                    "peer_theory_mse": float(np.mean(fo.oracle_variance(oracle, m, sub_truth, domain_size, epsilon)))})
        rows.append(row)
        print(row, flush=True)
    return rows


def bench_grids(n: int, epsilon: float, trials: int) -> list[dict]:
    rng = np.random.default_rng(SEED)
    k = n // 4
    pts = np.concatenate([rng.normal((0.3, 0.3), 0.05, (k, 2)), rng.normal((0.7, 0.6), 0.12, (k, 2)),
                          rng.normal((0.5, 0.85), 0.03, (k, 2)), rng.uniform(0, 1, (n - 3 * k, 2))])
    grid = Grid(Region(0.0, 0.0, 10_000.0), 64)
    users = grid.bin_unit(np.clip(pts, 0, 1))
    rows = []
    for name in ("ug", "privag", "aag"):
        for path in ("per-user", "aggregate"):
            mech = mechanisms.create(name, grid, epsilon, path=path)
            secs, info = [], {}
            for t in range(trials):
                sec, est = timed(mech.run, users, np.random.default_rng([SEED, t]))
                secs.append(sec)
                info = est.info
            rows.append({"mechanism": name, "path": path, "seconds": float(np.median(secs)),
                         "cells": info["cells"], "users": len(users.cells)})
            print(rows[-1], flush=True)
    return rows


def machine() -> str:
    cpu = platform.processor() or "unknown CPU"
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return (f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()}, numpy {np.__version__}, "
            f"{platform.system()} {platform.release()}; load average at the end of the run "
            f"{', '.join(f'{x:.1f}' for x in os.getloadavg())} (the machine is shared, so times are noisy; both "
            "sides were measured in the same run)")


def write_report(path: str, oracle_rows: list[dict], grid_rows: list[dict], args: argparse.Namespace) -> None:
    lines = ["# Frequency oracles and grid decompositions: speed and accuracy against pure-ldp", "",
             provenance_markdown(seeds=f"{SEED} (population), {SEED}.. (trials), {SEED + 100}.. (peer trials)",
                                 trials=f"{args.trials} ours, peer per oracle as in the table; grids "
                                        f"{args.grid_trials}", quick=args.quick),
             f"Generated by `bench/bench_fo.py` on {datetime.date.today().isoformat()}"
             f"{' (quick run)' if args.quick else ''}.", "",
             f"Machine: {machine()}.", "",
             f"Data: {args.users:,} users over {args.cells:,} cells, a seeded Zipf-like population "
             f"(seed {SEED}), epsilon = {args.epsilon:g}. Peer: pure-ldp 1.2.0 (xxhash 1.4), installed only "
             "for this benchmark (`pip install pure-ldp==1.2.0 'xxhash<2'`).", "",
             "Times are wall seconds for the whole population: every user privatises, the server aggregates "
             "and estimates every cell. Where the peer ran on fewer users (its OLH server loops over users x "
             "cells in Python), its time is scaled linearly to the full population (it is linear in users) and "
             "its MSE is compared on the users it saw, with that subset's analytical MSE. MSE is the mean over "
             "cells of (estimated count - true count)^2; 'theory' is the analytical variance (Wang et al. "
             "USENIX'17; HR: hr_variance).", "",
             "| oracle | ours (s) | pure-ldp (s) | speed-up | ours MSE / theory | pure-ldp MSE / theory | "
             "MSE ratio ours / pure-ldp (normalised) | peer users x trials |",
             "|---|---|---|---|---|---|---|---|"]
    for r in oracle_rows:
        if "peer_s" not in r:
            lines.append(f"| {r['oracle']} | {r['ours_s']:.3f} | {r.get('peer', '-')} | | "
                         f"{r['ours_mse'] / r['theory_mse']:.3f} | | | |")
            continue
        ours_norm = r["ours_mse"] / r["theory_mse"]
        peer_norm = r["peer_mse"] / r["peer_theory_mse"]
        lines.append(f"| {r['oracle']} | {r['ours_s']:.3f} | {r['peer_s']:.3g} | {r['peer_s'] / r['ours_s']:,.0f}x | "
                     f"{ours_norm:.3f} | {peer_norm:.3f} | {ours_norm / peer_norm:.3f} | "
                     f"{r['peer_users']:,} x {r['peer_trials']} |")
    lines += ["", f"Our figures: median time and mean MSE over {oracle_rows[0]['ours_trials']} trials.", "",
              "## Grid decompositions on 1,000,000 users", "",
              f"Synthetic clustered population (three Gaussian clusters and a uniform background, seed {SEED}), "
              f"epsilon = {args.epsilon:g}, OLH, default parameters, evaluation grid 64 x 64; median of "
              f"{args.grid_trials} runs of `run()` (both phases, user split, support counting, partition).", "",
              "| mechanism | oracle path | seconds | adaptive cells |", "|---|---|---|---|"]
    for r in grid_rows:
        lines.append(f"| {r['mechanism']} | {r['path']} | {r['seconds']:.2f} | {r['cells']:,} |")
    lines.append("")
    with open(path, "w") as fh:
        fh.write("\n".join(lines))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="10,000 users, 2 trials, 100,000 grid users")
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "docs"),
                        help="output directory (default docs/)")
    parser.add_argument("--users", type=int, default=100_000)
    parser.add_argument("--cells", type=int, default=1024)
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--peer-olh-users", type=int, default=10_000,
                        help="users given to pure-ldp's OLH (its server is a Python loop over users x cells)")
    parser.add_argument("--grid-users", type=int, default=1_000_000)
    parser.add_argument("--grid-trials", type=int, default=3)
    args = parser.parse_args()
    if args.quick:
        args.users, args.trials, args.peer_olh_users = 10_000, 2, 1_000
        args.grid_users, args.grid_trials = 100_000, 1
    oracle_rows = bench_oracles(args.users, args.cells, args.epsilon, args.trials,
                                peer_trials={"grr": 3, "oue": 1, "hr": 3, "olh": 1},
                                peer_users={"olh": args.peer_olh_users})
    grid_rows = bench_grids(args.grid_users, args.epsilon, args.grid_trials)
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "fo-benchmark.md")
    write_report(path, oracle_rows, grid_rows, args)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
