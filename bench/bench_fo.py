"""Benchmark: frequency oracles against pure-ldp, both paths of every mechanism at 1M users, the path cost model.

pure-ldp is NOT a runtime dependency of ldpviz; it is a peer measured here only.
Install it where this Python finds it (its OLH needs xxhash < 2), e.g. into a side directory:

    pip install --target /tmp/peer pure-ldp==1.2.0 'xxhash<2' bitarray --no-deps
    PYTHONPATH=.:/tmp/peer python bench/bench_fo.py [--quick] [--out DIR]   # writes DIR/fo-benchmark.md

Without it the peer columns say so and the rest runs. What is measured, on one machine in one run:

1. GRR, OLH, OUE, HR, ours on the per-user path (client + server halves) vs pure-ldp's DE, LH with
   use_olh=True, UE with use_oue=True and Hadamard Response: wall time for the whole population, in
   *paired, interleaved* runs (pair t runs ours then the peer, or the peer then ours, alternating), so
   each pair shares the machine's momentary load; reported as the median of the pairs and its min-max.
   Accuracy parity: mean squared error of the unbiased counts against the truth, over the analytical MSE.
2. Every mechanism with an aggregate path (frequency oracles, DAM family, UG, PrivAG, AAG) at 1,000,000
   users on a 64 x 64 grid: run() on path 'per-user', 'aggregate' and 'auto', interleaved in rotating
   order in every repetition; the median and min-max of each, and of the paired ratio per-user / aggregate.
   For mechanisms with a separate client half, collect() (the client half or its aggregate) is timed too.
3. The path cost model (ldpviz.mechanisms.path_cost): both paths of every oracle on a grid of (users,
   cells), the coefficients refitted from these times next to the ones the code uses, and how often the
   code's choice was the faster path.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import sys
import time
from typing import Any

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from ldpviz.geo.domain import Grid, Region  # noqa: E402
from ldpviz import mechanisms  # noqa: E402
from ldpviz.mechanisms.fo import oracles as fo
from ldpviz.mechanisms import path_cost  # noqa: E402
from ldpviz.evidence.reproduce import provenance_markdown  # noqa: E402

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
    def identity(x):  # our values are already 0-based indices
        return x

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


def timed(fn, *args) -> tuple[float, Any]:
    t = time.perf_counter()
    out = fn(*args)
    return time.perf_counter() - t, out


def spread(values: list[float], fmt: str = "{:.3g}") -> str:
    """'median [min-max]' of a list of numbers."""
    v = np.asarray(values, dtype=float)
    return f"{fmt.format(np.median(v))} [{fmt.format(v.min())}-{fmt.format(v.max())}]"


def peer_available() -> bool:
    try:
        _import_pure_ldp_oracles()
        return True
    except ImportError:
        return False


# ---- 1. oracles vs pure-ldp, paired -------------------------------------------------------------

def bench_oracles(n: int, domain_size: int, epsilon: float, pairs: int, peer_users: dict[str, int]) -> list[dict]:
    values = population(n, domain_size, SEED)
    truth = np.bincount(values, minlength=domain_size).astype(float)
    have_peer = peer_available()
    rows = []
    for oracle in fo.ORACLES:
        m = peer_users.get(oracle, n)
        sub = values[:m]
        sub_truth = np.bincount(sub, minlength=domain_size).astype(float)
        ours_t, peer_t, ratio, ours_mse, peer_mse = [], [], [], [], []
        for t in range(pairs):
            order = ("ours", "peer") if t % 2 == 0 else ("peer", "ours")
            for who in order:
                if who == "ours":
                    sec, est = timed(ours, oracle, values, domain_size, epsilon, SEED + t)
                    ours_t.append(sec)
                    ours_mse.append(np.mean((est - truth) ** 2))
                elif have_peer:
                    sec, est = timed(peer, oracle, sub, domain_size, epsilon, SEED + 100 + t)
                    peer_t.append(sec * n / m)
                    peer_mse.append(np.mean((est - sub_truth) ** 2))
            if have_peer:
                ratio.append(peer_t[-1] / ours_t[-1])
        row = {"oracle": oracle, "ours": ours_t, "ours_mse": float(np.mean(ours_mse)),
               "theory_mse": float(np.mean(fo.oracle_variance(oracle, n, truth, domain_size, epsilon)))}
        if have_peer:
            row.update({"peer": peer_t, "ratio": ratio, "peer_users": m, "peer_mse": float(np.mean(peer_mse)),
                        "peer_theory_mse": float(np.mean(fo.oracle_variance(oracle, m, sub_truth, domain_size,
                                                                           epsilon)))})
        rows.append(row)
        print({k: v for k, v in row.items()}, flush=True)
    return rows


# ---- 2. every mechanism with an aggregate path, both paths --------------------------------------

PATH_MECHANISMS = ("grr", "olh", "oue", "hr", "dam", "dam-ns", "huem", "ug", "privag", "aag")
PATHS = ("per-user", "aggregate", "auto")


def clustered_users(n: int, grid: Grid) -> Any:
    rng = np.random.default_rng(SEED)
    k = n // 4
    pts = np.concatenate([rng.normal((0.3, 0.3), 0.05, (k, 2)), rng.normal((0.7, 0.6), 0.12, (k, 2)),
                          rng.normal((0.5, 0.85), 0.03, (k, 2)), rng.uniform(0, 1, (n - 3 * k, 2))])
    return grid.bin_unit(np.clip(pts, 0, 1))


def bench_paths(n: int, side: int, epsilon: float, reps: int) -> list[dict]:
    grid = Grid(Region(0.0, 0.0, 10_000.0), side)
    users = clustered_users(n, grid)
    rows = []
    for name in PATH_MECHANISMS:
        mechs = {p: mechanisms.create(name, grid, epsilon, path=p) for p in PATHS}
        run_s = {p: [] for p in PATHS}
        collect_s = {p: [] for p in PATHS}
        used = {}
        separate = mechs["auto"].has_client
        for r in range(reps):
            order = PATHS[r % 3:] + PATHS[:r % 3]
            for p in order:
                mech = mechs[p]
                rng = np.random.default_rng([SEED, r])
                if separate:
                    a, reports = timed(mech.collect, users, rng)
                    b, est = timed(mech.estimate, reports)
                    collect_s[p].append(a)
                    run_s[p].append(a + b)
                else:
                    sec, est = timed(mech.run, users, rng)
                    run_s[p].append(sec)
                used[p] = est.info.get("path", "?")
        rows.append({"mechanism": name, "run": run_s, "collect": collect_s if separate else None, "used": used,
                     "ratio": [u / a for u, a in zip(run_s["per-user"], run_s["aggregate"])],
                     "collect_ratio": ([u / a for u, a in zip(collect_s["per-user"], collect_s["aggregate"])]
                                       if separate else None)})
        print(name, {p: spread(v) for p, v in run_s.items()}, used, flush=True)
    return rows


# ---- 3. the path cost model -----------------------------------------------------------------------

def bench_cost_model(users: list[int], cells: list[int], max_entries: float, reps: int) -> list[dict]:
    rows = []
    for oracle in fo.ORACLES:
        for n in users:
            for D in cells:
                values = np.random.default_rng(0).integers(0, D, n)
                row = {"oracle": oracle, "n": n, "D": D}
                paths = [p for p in ("per-user", "aggregate")
                         if not (p == "per-user" and oracle in ("olh", "oue") and n * D > max_entries)]
                secs: dict[str, list[float]] = {p: [] for p in paths}
                for r in range(reps):          # interleaved, alternating which path goes first
                    for path in (paths if r % 2 == 0 else paths[::-1]):
                        secs[path].append(timed(fo.oracle_counts, oracle, values, D, 1.0,
                                                np.random.default_rng(r), path)[0])
                for path in paths:
                    row[path] = min(secs[path])          # the cost model is fitted to minima
                if len(paths) == 2:
                    row["ratio"] = [u / a for u, a in zip(secs["per-user"], secs["aggregate"])]
                rows.append(row)
    return rows


def bench_disk_cost(sides: list[int], epsilons: list[float], users: list[int], reps: int) -> list[dict]:
    """DAM's disk channel: sample() + bincount against aggregate() for skewed true counts, ``reps`` interleaved
    pairs (the minimum of each path and the paired ratios)."""
    rows = []
    for side in sides:
        for eps in epsilons:
            chan = mechanisms.create("dam", Grid(Region(0.0, 0.0, 10_000.0), side), eps).chan
            for n in users:
                w = np.random.default_rng(0).random(side * side) ** 3
                counts = np.random.default_rng(1).multinomial(n, w / w.sum())
                cells = np.repeat(np.arange(side * side), counts)
                size = chan.out_side ** 2
                per_s, agg_s = [], []
                for r in range(reps):          # interleaved, alternating which path goes first
                    for path in (("per-user", "aggregate") if r % 2 == 0 else ("aggregate", "per-user")):
                        if path == "per-user":
                            per_s.append(timed(lambda g: np.bincount(chan.sample(cells, g), minlength=size),
                                               np.random.default_rng(r))[0])
                        else:
                            agg_s.append(timed(chan.aggregate, counts, np.random.default_rng(r))[0])
                choice = path_cost.choose_disk_path(n, float(chan.bump_draws(counts).sum()), chan.n_outputs)
                rows.append({"d": side, "eps": eps, "n": n, "per-user": min(per_s), "aggregate": min(agg_s),
                             "ratio": [u / a for u, a in zip(per_s, agg_s)], "choice": choice})
    return rows


def fit_costs(rows: list[dict]) -> dict:
    """Non-negative least squares on relative error of t = c0 + c_n n + c_D D + c_nD n D, per (oracle, path)."""
    from scipy.optimize import nnls

    out = {}
    for oracle in fo.ORACLES:
        for path in ("per-user", "aggregate"):
            pts = [(r["n"], r["D"], r[path]) for r in rows if r["oracle"] == oracle and path in r]
            if len(pts) < 4:
                continue
            A = np.array([[1.0, n, D, n * D] for n, D, _ in pts])
            y = np.array([t for *_, t in pts])
            coef, _ = nnls(A / y[:, None], np.ones_like(y))
            out[(oracle, path)] = tuple(float(c) for c in coef)
    return out


# ---- report -----------------------------------------------------------------------------------------

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


def write_report(path: str, oracle_rows: list[dict], path_rows: list[dict], cost_rows: list[dict],
                 disk_rows: list[dict], args: argparse.Namespace) -> None:
    have_peer = "peer" in oracle_rows[0]
    lines = ["# Frequency oracles: speed against pure-ldp, both paths of every mechanism, the path cost model", "",
             provenance_markdown(seeds=f"{SEED} (population), {SEED}.. (trials), {SEED + 100}.. (peer trials)",
                                 trials=f"{args.pairs} interleaved pairs against the peer; {args.reps} rotating "
                                        f"repetitions of every path; cost grid min of {args.cost_reps}",
                                 quick=args.quick),
             f"Generated by `bench/bench_fo.py` on {datetime.date.today().isoformat()}"
             f"{' (quick run)' if args.quick else ''}.", "",
             f"Machine: {machine()}.", "",
             "Times are wall seconds on a machine shared with other jobs (load average above), so a single "
             "figure says little; every comparison below is made *within pairs or rounds run back to back* and "
             "given as the median with its min-max over the pairs, never as one ratio of two unpaired runs.", "",
             "## 1. Per-user oracles against pure-ldp", "",
             f"Data: {args.users:,} users over {args.cells:,} cells, a seeded Zipf-like population "
             f"(seed {SEED}), epsilon = {args.epsilon:g}; our per-user path (client and server halves). "
             + ("Peer: pure-ldp 1.2.0 (xxhash 1.4). Where the peer ran on fewer users (its OLH server loops over "
                "users x cells in Python), its time is scaled linearly to the full population and its MSE is "
                "compared on the users it saw." if have_peer else
                "pure-ldp is not installed here, so the peer columns are empty (see the script's docstring)."),
             "", "| oracle | ours (s) | pure-ldp (s) | paired speed-up pure-ldp / ours | ours MSE / theory | "
             "pure-ldp MSE / theory | peer users |", "|---|---|---|---|---|---|---|"]
    for r in oracle_rows:
        ours_norm = r["ours_mse"] / r["theory_mse"]
        if have_peer:
            lines.append(f"| {r['oracle']} | {spread(r['ours'])} | {spread(r['peer'])} | "
                         f"{spread(r['ratio'], '{:,.0f}')}x | {ours_norm:.3f} | "
                         f"{r['peer_mse'] / r['peer_theory_mse']:.3f} | {r['peer_users']:,} |")
        else:
            lines.append(f"| {r['oracle']} | {spread(r['ours'])} | - | - | {ours_norm:.3f} | - | - |")
    lines += ["", f"Median [min-max] over {args.pairs} pairs; MSE averaged over the pairs.", ""]

    n_users = len(clustered_users(args.path_users, Grid(Region(0.0, 0.0, 10_000.0), args.path_side)).cells)
    lines += [f"## 2. Both paths of every mechanism with an aggregate path ({n_users:,} users, "
              f"{args.path_side} x {args.path_side} grid)", "",
              f"Synthetic clustered population (three Gaussian clusters and a uniform background, seed {SEED}), "
              f"epsilon = {args.epsilon:g}, default parameters (UG, PrivAG, AAG on OLH). Each of {args.reps} "
              "repetitions runs the three paths back to back in rotating order. 'run' is the whole protocol "
              "(client half or its aggregate, then the server's estimate: EM for the DAM family); 'collect' is the "
              "client half alone (or the aggregate draw that replaces it), for mechanisms that have a separate one. "
              "'auto path' is what the cost model chose.", "",
              "| mechanism | run per-user (s) | run aggregate (s) | run auto (s) | auto path | paired run ratio "
              "per-user / aggregate | collect per-user (s) | collect aggregate (s) | paired collect ratio |",
              "|---|---|---|---|---|---|---|---|---|"]
    for r in path_rows:
        c = r["collect"]
        lines.append(f"| {r['mechanism']} | {spread(r['run']['per-user'])} | {spread(r['run']['aggregate'])} | "
                     f"{spread(r['run']['auto'])} | {r['used']['auto']} | {spread(r['ratio'], '{:,.3g}')}x | "
                     + (f"{spread(c['per-user'])} | {spread(c['aggregate'])} | "
                        f"{spread(r['collect_ratio'], '{:,.3g}')}x |"
                        if c else "- | - | - |"))
    under = [r["mechanism"] for r in path_rows if np.median(r["run"]["auto"]) < 1.0]
    over = [r for r in path_rows if np.median(r["run"]["auto"]) >= 1.0]
    summary = (f"On path 'auto', {len(under)} of {len(path_rows)} mechanisms ran the whole protocol in under 1 s "
               f"(median)")
    if over:
        parts = []
        for r in over:
            if r["collect"]:
                parts.append(f"{r['mechanism']} ({np.median(r['run']['auto']):.2f} s, of which collect "
                             f"{np.median(r['collect']['auto']):.2f} s: the rest is the server's estimate)")
            else:
                parts.append(f"{r['mechanism']} ({np.median(r['run']['auto']):.2f} s)")
        summary += "; not: " + ", ".join(parts)
    slower = [r for r in path_rows if np.median(r["ratio"]) < 1.0]
    if not slower:
        verdict = "The aggregate path was faster than the per-user path (median paired ratio > 1) for every mechanism."
    else:
        verdict = ("The aggregate path was slower than the per-user path (median paired run ratio < 1) for: "
                   + ", ".join(f"{r['mechanism']} (auto chose {r['used']['auto']}, median "
                               f"{np.median(r['run']['auto']):.3g} s against per-user "
                               f"{np.median(r['run']['per-user']):.3g} s)" for r in slower) + ".")
    lines += ["", summary + ".", "", verdict, ""]

    fitted = fit_costs(cost_rows)
    agree = total = 0
    for r in cost_rows:
        if "ratio" in r:
            total += 1
            faster = "aggregate" if np.median(r["ratio"]) > 1 else "per-user"
            agree += path_cost.choose_path(r["oracle"], r["n"], r["D"]) == faster
    lines += ["## 3. The path cost model", "",
              "Both paths of every oracle (client and server, epsilon = 1; "
              f"{args.cost_reps} interleaved pairs: the minimum of each path, which the coefficients are fitted to, "
              "and the median [min-max] of the paired ratio per-user / aggregate, which decides the faster path) for "
              f"users n in {', '.join(f'{n:,}' for n in args.cost_users)} and cells D in "
              f"{', '.join(f'{d:,}' for d in args.cost_cells)} (OLH and OUE per-user skipped above "
              f"{args.cost_max_entries:,.0f} users x cells). The code's coefficients "
              f"(`ldpviz/mechanisms/path_cost.py`, measured on: {path_cost.MEASURED_ON}) chose the faster path in "
              f"{agree} of {total} configurations measured here. The model is "
              "t = c0 + c_n n + c_D D + c_nD n D seconds.", "",
              "| oracle | path | c0 | c_n | c_D | c_nD | refitted now: c0 | c_n | c_D | c_nD |",
              "|---|---|---|---|---|---|---|---|---|---|"]
    for key, coef in path_cost.COEFFICIENTS.items():
        now = fitted.get(key)
        lines.append(f"| {key[0]} | {key[1]} | " + " | ".join(f"{c:.3g}" for c in coef) + " | "
                     + (" | ".join(f"{c:.3g}" for c in now) if now else "- | - | - | -") + " |")
    lines += ["",
              "| oracle | users | cells | per-user (s, min) | aggregate (s, min) | paired ratio per-user / aggregate "
              "| faster (median ratio) | model's choice |", "|---|---|---|---|---|---|---|---|"]
    for r in cost_rows:
        pu = f"{r['per-user']:.4f}" if "per-user" in r else "skipped"
        ratio = f"{spread(r['ratio'], '{:,.3g}')}x" if "ratio" in r else "-"
        faster = ("aggregate" if np.median(r["ratio"]) > 1 else "per-user") if "ratio" in r else "-"
        lines.append(f"| {r['oracle']} | {r['n']:,} | {r['D']:,} | {pu} | {r['aggregate']:.4f} | {ratio} | {faster} | "
                     f"{path_cost.choose_path(r['oracle'], r['n'], r['D'])} |")
    right = sum(r["choice"] == ("aggregate" if np.median(r["ratio"]) > 1 else "per-user") for r in disk_rows)
    lines += ["", "DAM's disk channel (also DAM-NS and HUEM; `path_cost.choose_disk_path`, coefficients "
              f"{path_cost.DISK_COEFFICIENTS}): the client half (sample + bincount) against the exact aggregate "
              f"(`DiskChannel.aggregate`), skewed true counts, {args.cost_reps} interleaved pairs (minimum of each "
              f"path; the faster path by the median paired ratio). The model chose the faster path in {right} of "
              f"{len(disk_rows)} configurations.", "",
              "| d | epsilon | users | per-user (s, min) | aggregate (s, min) | paired ratio per-user / aggregate | "
              "model's choice |", "|---|---|---|---|---|---|---|"]
    for r in disk_rows:
        lines.append(f"| {r['d']} | {r['eps']:g} | {r['n']:,} | {r['per-user']:.4f} | {r['aggregate']:.4f} | "
                     f"{spread(r['ratio'], '{:,.3g}')}x | {r['choice']} |")
    lines.append("")
    with open(path, "w") as fh:
        fh.write("\n".join(lines))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, two pairs/repetitions")
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "docs"),
                        help="output directory (default docs/)")
    parser.add_argument("--users", type=int, default=100_000)
    parser.add_argument("--cells", type=int, default=1024)
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--pairs", type=int, default=5, help="interleaved pairs against the peer")
    parser.add_argument("--peer-olh-users", type=int, default=10_000,
                        help="users given to pure-ldp's OLH (its server is a Python loop over users x cells)")
    parser.add_argument("--path-users", type=int, default=1_000_000)
    parser.add_argument("--path-side", type=int, default=64)
    parser.add_argument("--reps", type=int, default=3, help="rotating repetitions of the three paths")
    parser.add_argument("--cost-reps", type=int, default=3)
    args = parser.parse_args()
    args.cost_users, args.cost_cells, args.cost_max_entries = [10_000, 100_000, 1_000_000], [16, 256, 4096], 1e8
    args.disk_sides, args.disk_users = [16, 64], [100_000, 1_000_000, 10_000_000]
    if args.quick:
        args.users, args.pairs, args.peer_olh_users = 10_000, 2, 1_000
        args.path_users, args.path_side, args.reps, args.cost_reps = 20_000, 16, 2, 1
        args.cost_users, args.cost_cells, args.cost_max_entries = [1_000, 10_000], [16, 256], 1e7
        args.disk_sides, args.disk_users = [8], [10_000, 100_000]
    oracle_rows = bench_oracles(args.users, args.cells, args.epsilon, args.pairs, {"olh": args.peer_olh_users})
    path_rows = bench_paths(args.path_users, args.path_side, args.epsilon, args.reps)
    cost_rows = bench_cost_model(args.cost_users, args.cost_cells, args.cost_max_entries, args.cost_reps)
    disk_rows = bench_disk_cost(args.disk_sides, [1.0, 3.0], args.disk_users, args.cost_reps)
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "fo-benchmark.md")
    write_report(path, oracle_rows, path_rows, cost_rows, disk_rows, args)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
