"""The privacy officer's commands: ``ldpviz target`` (goal seek) and ``ldpviz report`` (decision report).

Registered on the main parser by :func:`add_commands` (see :mod:`ldpviz.cli.commands`).

``ldpviz target --metric w2_m --at-most 500 --mechanism dam --mechanism grr`` prints,
per mechanism, the smallest epsilon whose mean metric over the trials is at most the
target; adding ``--epsilon E`` asks the other question: how many users are needed at
that epsilon.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from typing import Any

from ldpviz.data import datasets
from ldpviz import experiment, mechanisms
from ldpviz.errors import LdpvizInputError, require
from ldpviz.mechanisms.base import GEO_I, GEO_I_UNIT


def _add_scenario_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dataset", default="minneapolis-stops", help="bundled dataset name")
    p.add_argument("--region", help="region preset of the dataset (see 'ldpviz datasets')")
    p.add_argument("--grid", type=int, default=32, help="grid side d (d x d cells)")
    p.add_argument("--seed", type=int, default=0)


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        return _jsonable(value.item())
    return value


def cmd_target(args: argparse.Namespace) -> int:
    from ldpviz.decide import tradeoff
    require(args.mechanism, "target needs at least one --mechanism")
    require(args.at_most is not None and math.isfinite(args.at_most) and args.at_most > 0,
            f"--at-most must be a number > 0, got {args.at_most!r}")
    require(args.epsilon is None or args.users is None,
            "give --users (find the smallest epsilon for that many users) or --epsilon (find the users needed "
            "at that epsilon), not both")
    require(args.trials is None or 2 <= args.trials <= experiment.MAX_TRIALS,
            f"--trials must be from 2 to {experiment.MAX_TRIALS} (a confidence interval needs two), got {args.trials!r}")
    for name in args.mechanism:
        mechanisms.get(name)
    data = datasets.load(args.dataset)
    mode = "users" if args.epsilon is not None else "epsilon"
    t0 = time.perf_counter()
    results = []
    for name in args.mechanism:
        base = experiment.Scenario(dataset=args.dataset, mechanism=name, epsilon=args.epsilon or 1.0,
                                   grid_side=args.grid, region=args.region, n_users=args.users, seed=args.seed,
                                   trials=args.trials or tradeoff.DEFAULT_TRIALS)
        if mode == "epsilon":
            found = tradeoff.target_epsilon(base, args.metric, args.at_most, n_users=args.users, dataset=data,
                                            attacker=not args.no_attacker)
        else:
            found = tradeoff.users_needed(base, args.metric, args.at_most, dataset=data,
                                          attacker=not args.no_attacker)
        row = found.to_dict()
        row["epsilon_unit"] = f"per {GEO_I_UNIT}" if found.privacy_model == GEO_I else ""
        results.append(row)
        if not args.json:
            print(_line(row, mode))
    out = {"mode": mode, "dataset": args.dataset, "region": args.region, "grid": args.grid, "metric": args.metric,
           "at_most": args.at_most, "seed": args.seed, "results": results, "seconds": time.perf_counter() - t0}
    if args.json:
        print(json.dumps(_jsonable(out)))
    else:
        print(f"({out['seconds']:.1f} s; attacker: population prior, the data set's density standing in for a census)")
    return 0


def _line(row: dict[str, Any], mode: str) -> str:
    name = f"{row['mechanism']:<16}"
    ci = (f"{row['metric']} = {row['mean']:.4g} (95% CI {row['ci_low']:.4g} to {row['ci_high']:.4g}, "
          f"{row['trials']} trials)") if row["mean"] is not None else ""
    if not row["reached"]:
        return f"{name} {row['message']}"
    precision = (f" (monte carlo, standard error {row['attacker_error_se_m']:,.0f} m)"
                 if str(row.get("attacker_method", "")).startswith("monte carlo") else "")
    attacker = (f"; attacker off by {row['attacker_error_m']:,.0f} m{precision}" if row["attacker_error_m"] is not None
                else (f"; attacker: {row['attacker_note']}" if row["attacker_note"] else ""))
    unit = f" {row['epsilon_unit']}" if row["epsilon_unit"] else ""
    if mode == "epsilon":
        return f"{name} epsilon = {row['epsilon']:.3g}{unit}: {ci}{attacker}"
    return f"{name} {row['n_users']:,} users at epsilon = {row['epsilon']:g}{unit}: {ci}{attacker}"


def cmd_report(args: argparse.Namespace) -> int:
    from ldpviz.decide import decision_report as report
    require(args.out, "report needs --out FILE.html")
    require(2 <= args.trials <= experiment.MAX_TRIALS,
            f"--trials must be from 2 to {experiment.MAX_TRIALS} (confidence intervals need two), got {args.trials!r}")
    params: dict[str, Any] = {}
    for pair in args.param:
        if "=" not in pair:
            raise LdpvizInputError(f"--param expects key=value, got {pair!r}")
        key, value = pair.split("=", 1)
        params[key.strip()] = value.strip()
    scenario = experiment.Scenario(dataset=args.dataset, mechanism=args.mechanism, epsilon=args.epsilon,
                                   grid_side=args.grid, region=args.region, params=params, n_users=args.users,
                                   seed=args.seed, trials=args.trials)
    html = report.build_report(scenario, audit=not args.no_audit, r_m=args.r)
    try:
        with open(args.out, "w", encoding="utf-8") as fh:
            fh.write(html)
    except OSError as err:
        raise LdpvizInputError(f"--out: cannot write {args.out!r}: {err.strerror}") from None
    print(f"wrote {args.out} ({len(html) / 1024:,.0f} KiB)", file=sys.stderr)
    return 0


def add_commands(sub: Any) -> None:
    """Add ``target`` and ``report`` to the main parser's subcommands."""
    from ldpviz.decide.tradeoff import TARGET_METRICS
    tp = sub.add_parser("target", help="goal seek: the smallest epsilon (or number of users) reaching a target "
                                       "accuracy, per mechanism")
    _add_scenario_arguments(tp)
    tp.add_argument("--metric", choices=TARGET_METRICS, default="w2_m", help="accuracy metric (lower is better)")
    tp.add_argument("--at-most", type=float, required=True, dest="at_most", metavar="X",
                    help="target: the mean metric over the trials must be at most X (W2 in metres)")
    tp.add_argument("--mechanism", action="append", default=[], help="mechanism name, repeatable")
    tp.add_argument("--users", type=int, help="number of users (seeded subsample) when solving for epsilon")
    tp.add_argument("--epsilon", type=float,
                    help="solve for the number of users needed at this epsilon instead of for epsilon")
    tp.add_argument("--trials", type=int, help="trials per evaluation (default 5)")
    tp.add_argument("--no-attacker", action="store_true", dest="no_attacker",
                    help="skip the attacker's error at the answer (faster)")
    tp.add_argument("--json", action="store_true", help="print one JSON object")
    tp.set_defaults(fn=cmd_target)

    rp = sub.add_parser("report", help="write a self-contained HTML decision report for one setting")
    _add_scenario_arguments(rp)
    rp.add_argument("--mechanism", required=True, help="mechanism name (see 'ldpviz mechanisms')")
    rp.add_argument("--epsilon", type=float, required=True, help="privacy budget epsilon (Geo-I: per km)")
    rp.add_argument("--param", action="append", default=[], metavar="KEY=VALUE", help="mechanism parameter")
    rp.add_argument("--users", type=int, help="number of users (seeded subsample)")
    rp.add_argument("--trials", type=int, default=10, help="trials for the confidence intervals (default 10)")
    rp.add_argument("--r", type=float, default=500.0, help="distance r (m) for 'attacker within r metres'")
    rp.add_argument("--no-audit", action="store_true", dest="no_audit", help="skip the quick audit")
    rp.add_argument("--out", required=True, help="HTML file to write")
    rp.set_defaults(fn=cmd_report)
