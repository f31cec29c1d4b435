"""The privacy officer's commands: ``ldpviz target`` (goal seek) and ``ldpviz report`` (decision report).

Registered on the main parser by :func:`add_commands` (see :mod:`ldpviz.cli.commands`).

``ldpviz target --metric w2_m --at-most 500 --mechanism dam --mechanism grr`` prints, per
mechanism, the smallest epsilon *found on a scan* at which ONE collection meets the target with
probability >= 95% (``--probability``), with the confidence of that statement (``--confidence``;
:func:`ldpviz.decide.tradeoff.target_epsilon`: a tolerance bound over fresh collections), the chance
that one collection misses, the mean's interval as a second reading, how many values were scanned,
a warning where the metric is not monotone, and a warning when the answer is beyond meaningful
privacy; adding ``--epsilon E`` asks the other question: how many users are needed at that epsilon,
under the same rule.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from typing import Any

from ldpviz import wording
from ldpviz.cli import data_options as cli_input, option_checks
from ldpviz.cli.privacy_warning import print_privacy_warning, privacy_warning
from ldpviz.errors import require
from ldpviz.mechanisms.base import EPSILON_MAX, EPSILON_MIN, GEO_I, GEO_I_UNIT


def _add_scenario_arguments(p: argparse.ArgumentParser) -> None:
    cli_input.add_data_arguments(p)
    p.add_argument("--grid", type=int, default=32, help="grid side d (d x d cells)")
    p.add_argument("--seed", type=option_checks.seed, default=0)


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
    from ldpviz import experiment, mechanisms     # the compute core: imported when a command runs, not for --help
    from ldpviz.data import datasets
    from ldpviz.decide import tradeoff
    from ldpviz.experiment import runtime_model
    require(args.mechanism, "target needs at least one --mechanism")
    require(args.at_most is not None and math.isfinite(args.at_most) and args.at_most > 0,
            f"--at-most must be a number > 0, got {args.at_most!r}")
    require(args.epsilon is None or args.users is None,
            "give --users (find the smallest epsilon for that many users) or --epsilon (find the users needed "
            "at that epsilon), not both")
    for flag, value in (("--probability", args.probability), ("--confidence", args.confidence)):
        require(math.isfinite(value) and 0.5 <= value < 1, f"{flag} must be from 0.5 to below 1, got {value!r}")
    require(args.epsilon is None or (math.isfinite(args.epsilon) and EPSILON_MIN <= args.epsilon <= EPSILON_MAX),
            f"--epsilon must be from {EPSILON_MIN:g} to {EPSILON_MAX:g}, got {args.epsilon!r}")
    require(math.isfinite(args.limit) and 0 < args.limit <= EPSILON_MAX,
            f"--limit must be an epsilon above 0 and at most {EPSILON_MAX:g}, got {args.limit!r}")
    require(args.users is None or args.users >= 1, f"--users must be at least 1, got {args.users!r}")
    require(1 <= args.reports <= 10_000, f"--reports must be from 1 to 10000, got {args.reports!r}")
    require(args.r is None or (math.isfinite(args.r) and args.r > 0), f"--r must be a distance > 0 m, got {args.r!r}")
    require(args.r is None or not args.no_attacker,          # options that cannot act are refused (issue 30.3)
            "--r is the attacker's distance; with --no-attacker it would do nothing")
    for name in args.mechanism:
        mechanisms.get(name)
    if args.epsilon is not None:     # 0, -1, nan, inf are refused, never replaced by a default
        mechanisms.validate_epsilon(args.epsilon)
    user = cli_input.load_data(args)
    data = user.data if user.data is not None else datasets.load(user.name)
    mode = "users" if args.epsilon is not None else "epsilon"
    trials = args.trials or tradeoff.DEFAULT_TRIALS
    t0 = time.perf_counter()
    results = []
    lines = []
    rule = dict(trials=trials, probability=args.probability, confidence=args.confidence)

    def seek(name: str):
        base = experiment.Scenario(dataset=user.name, mechanism=name,
                                   epsilon=1.0 if args.epsilon is None else args.epsilon,   # 1: where the search starts
                                   grid_side=args.grid, region=user.region, n_users=args.users, seed=args.seed,
                                   trials=trials)
        return lambda: tradeoff.goal_seek(mode, base, args.metric, args.at_most, dataset=data,
                                          attacker=not args.no_attacker, r_m=args.r, **rule)

    n_seen = min(args.users or data.n, data.n)       # each seek's predicted seconds, as the pages predict them
    costs = [runtime_model.goal_seek_seconds(name, n_seen, args.grid ** 2, trials, path=runtime_model.path_of({}))
             for name in args.mechanism]
    found_by_index: dict[int, Any] = {}
    with cli_input.Heartbeat("target") as beat:      # one seek per core, the longest predicted first
        beat.step(f"target: {len(args.mechanism)} mechanisms, {tradeoff.seek_threads(len(args.mechanism))} at a time")
        for i, future in tradeoff.seeks_side_by_side([seek(name) for name in args.mechanism], costs):
            found_by_index[i] = future.result()
            beat.step(f"target: {args.mechanism[i]} answered ({len(found_by_index)}/{len(args.mechanism)})")
    from ldpviz.decide import decision_flow, feasibility
    from ldpviz.geo.domain import Grid, Region
    region_obj = user.region if isinstance(user.region, Region) else data.resolve_region(user.region)
    cell_m = Grid(region_obj, args.grid).cell_m
    flow_cfg = {"decide_reports": args.reports, "decide_unit": args.unit}   # Decide's step 2, as the page asks it
    noun = decision_flow.unit_noun(flow_cfg)

    def ledger_at(setting):          # what a person (or row) pays in one collection: the ledger Decide judges on
        return decision_flow.ledger_for(setting, region_obj, flow_cfg)

    for i, name in enumerate(args.mechanism):        # JSON results in the order asked, whichever finished first
        found = found_by_index[i]
        row = feasibility.apply_limit(found.to_dict(), args.limit, ledger_at)
        row["epsilon_unit"] = f"per {GEO_I_UNIT}" if found.privacy_model == GEO_I else ""
        eps_found = row.get("epsilon")
        if row.get("reached") and row.get("setting"):    # the ledger the limit was judged on (Decide's), at the answer
            flow_ledger = ledger_at(feasibility.Setting.from_dict(row["setting"]))
            row["ledger"] = flow_ledger.to_dict()
            row["ledger_warning"] = flow_ledger.warning() or None
        # tradeoff's warning is privacy_scale.weak_privacy_warning at the answer (the one source of the text); the
        # ledger's own warning first where it judges more than one report (as Decide's table shows it)
        row["privacy_warning"] = ((row.get("ledger_warning") or row.get("warning") or None)
                                  if row.get("reached") and eps_found else None)
        if args.json:                                   # the text lines carry it as WARNING: ...
            print_privacy_warning(row["privacy_warning"], name)
        results.append(row)
    inverse = feasibility.needs_inverse(results, mode)
    if inverse:                                       # none meets the target within the limit: what each reaches there
        def at_limit(i: int):
            base = experiment.Scenario(dataset=user.name, mechanism=results[i]["mechanism"], epsilon=1.0,
                                       grid_side=args.grid, region=user.region, n_users=args.users, seed=args.seed,
                                       trials=trials)
            return lambda: tradeoff.reading_at(base, args.metric, args.at_most, results[i]["limit_epsilon"],
                                               trials=trials, dataset=data)
        with cli_input.Heartbeat("target") as beat:
            beat.step(f"target: what {len(inverse)} mechanisms reach at the limit epsilon {args.limit:g}")
            for j, future in tradeoff.seeks_side_by_side([at_limit(i) for i in inverse]):
                results[inverse[j]]["at_limit"] = future.result()
    summary = feasibility.limit_summary(results, args.limit, args.metric, args.at_most, cell_m, noun=noun)
    key = "epsilon" if mode == "epsilon" else "n_users"
    grouped = feasibility.rank_by_model(results, feasibility.MODEL_ORDER, key)
    if summary["lead"]:
        lines += [summary["lead"]] + [f"  {line}" for line in summary["lines"]] + [""]
    elif summary["cell_note"]:
        lines += [f"Note: {summary['cell_note']}", ""]
    for model, rows in grouped:                      # ranked within a privacy model: different scales
        lines.append(f"{feasibility.MODEL_HEADINGS.get(model, model)}:")
        for k, row in enumerate(rows):
            mark = f"{k + 1}." if row.get("reached") else "-"
            over = ("" if row.get("within_limit") or not row.get("reached") else
                    f"\n{'':<17}beyond your limit of epsilon {args.limit:g} per {noun} in one collection")
            lines.append(f"{mark:<3}{_line(row, mode, args.metric)}{over}")
            if row.get("reached") and row.get("ledger"):       # what one pays at the answer (the accountant)
                lines.append(f"  privacy: {row['ledger']['sentence']}")
    notes = _capped_notes(args.users, results) if mode == "epsilon" else []
    if not args.json:
        print("\n".join(lines + [f"  note: {note}" for note in notes]))
    region = user.region.name if hasattr(user.region, "name") else user.region
    out = {"mode": mode, "dataset": user.name, "region": region, "grid": args.grid, "metric": args.metric,
           "at_most": args.at_most, "seed": args.seed, "reading": "one collection", "cell_m": cell_m,
           "limit": args.limit, "limit_unit": noun, "reports": args.reports, "unit": args.unit,
           "feasible": summary["feasible"], "lead": summary["lead"],
           "at_limit_lines": summary["lines"], "cell_note": summary["cell_note"],
           "groups": [{"model": m, "heading": feasibility.MODEL_HEADINGS.get(m, m),
                       "ranked": [r["mechanism"] for r in rows]} for m, rows in grouped],
           "probability": args.probability, "confidence": args.confidence, "trials": trials,
           "rule": tradeoff.rule_text(args.probability, args.confidence, trials),
           "results": results, "notes": notes, "seconds": time.perf_counter() - t0}
    rows = user.rows()
    if rows is not None:
        out["rows"] = rows
    if args.json:
        print(json.dumps(_jsonable(out)))
    else:
        print(f"(reached = {out['rule']}; the mean's 95% interval is the second reading; {out['seconds']:.1f} s; "
              f"attacker: population prior, the data set's density standing in for a census)")
    return 0


def _capped_notes(asked: int | None, results: list[dict[str, Any]]) -> list[str]:
    """``run``'s sentence when --users asked for more users than the region holds (all of them take part)."""
    held = [int(r["n_users"]) for r in results if r.get("n_users") is not None]
    return [wording.capped(asked, max(held))] if asked is not None and held and asked > max(held) else []


def _line(row: dict[str, Any], mode: str, metric: str = "") -> str:
    from ldpviz.decide.feasibility import metric_text
    from ldpviz.decide.one_collection import chance_text
    name = f"{row['mechanism']:<16}"
    if not row["reached"]:
        return f"{name} {row['message']}" + (f"\n{'':<17}WARNING: {row['scan_warning']}" if row.get("scan_warning")
                                               else "")
    one = (f"one collection meets {row['metric']} <= {row['target']:g} with probability >= {row['probability']:.0%} "
           f"({row['confidence']:.0%} confidence; chance one misses at most {chance_text(row['miss_chance_max'])}, "
           f"{row['misses']} of {row['trials']} fresh collections missed)")
    mean = (f"; mean {metric_text(metric, row['mean'])} (95% CI {metric_text(metric, row['ci_low'])} to "
            f"{metric_text(metric, row['ci_high'])}: the mean "
            f"{'meets' if row['mean_met'] else 'does not meet'} it)") if row["mean"] is not None else ""
    precision = (f" (monte carlo, standard error {wording.length(row['attacker_error_se_m'])})"
                 if str(row.get("attacker_method", "")).startswith("monte carlo") else "")
    within = ""
    if row.get("attacker_within_r") is not None and row.get("attacker_r_m"):
        note = f" ({row['attacker_r_note']})" if row.get("attacker_r_note") else ""
        within = f", within {wording.length(row['attacker_r_m'])}{note} {row['attacker_within_r']:.1%} of the time"
    attacker = (f"; attacker off by {wording.length(row['attacker_error_m'])}{precision}{within}"
                if row["attacker_error_m"] is not None
                else (f"; attacker: {row['attacker_note']}" if row["attacker_note"] else ""))
    unit = f" {row['epsilon_unit']}" if row["epsilon_unit"] else ""
    how = f"\n{'':<17}{row['message']} ({row['runs']} collections simulated)"
    warning = "".join(f"\n{'':<17}WARNING: {row[key]}" for key in ("scan_warning", "warning") if row.get(key))
    if mode == "epsilon":
        return f"{name} epsilon = {row['epsilon']:.3g}{unit}: {one}{mean}{attacker}{how}{warning}"
    return f"{name} {row['n_users']:,} users at epsilon = {row['epsilon']:g}{unit}: {one}{mean}{attacker}{how}{warning}"


def cmd_report(args: argparse.Namespace) -> int:
    from ldpviz import experiment, mechanisms
    from ldpviz.data import datasets
    from ldpviz.decide import decision_report as report
    from ldpviz.geo.domain import Grid, Region
    require(args.out, "report needs --out FILE.html")
    cli_input.check_output_file(args.out)
    cli_input.require_number(args.r, "--r", above=0)
    require(args.r is None or (math.isfinite(args.r) and args.r > 0), f"--r must be a distance > 0 m, got {args.r!r}")
    params = option_checks.params(args.param, numbers=False)
    mechanisms.get(args.mechanism)
    mechanisms.validate_epsilon(args.epsilon)
    user = _report_data(args)
    scenario = experiment.Scenario(dataset=user.name, mechanism=args.mechanism, epsilon=args.epsilon,
                                   grid_side=args.grid, region=user.region, params=params, n_users=args.users,
                                   seed=args.seed, trials=args.trials)
    with cli_input.Heartbeat(f"report: {args.mechanism}, {args.trials} trials"
                             + ("" if args.no_audit else " and a quick audit")):
        html = report.build_report(scenario, dataset=user.data, audit=not args.no_audit, r_m=args.r)
    data = user.data if user.data is not None else datasets.load(user.name)
    region = user.region if isinstance(user.region, Region) else data.resolve_region(user.region)
    print_privacy_warning(privacy_warning(args.mechanism, Grid(region, args.grid), args.epsilon, params, region,
                                          dataset=user.name))
    cli_input.write_text(args.out, html)
    print(f"wrote {args.out} ({len(html) / 1024:,.0f} KiB)", file=sys.stderr)
    return 0


#: Column names that mark a file as trips of named people for ``ldpviz report`` (the trip loader's, less the
#: generic 'id' and 'name', which a points file often has for its rows).
REPORT_PERSON_NAMES = ("person", "person_id", "user", "user_id", "uid", "userid", "individual", "vehicle",
                       "vehicle_id", "taxi_id", "driver", "storm")


def _person_column(args: argparse.Namespace) -> str | None:
    """The file's person column (``--person-column``, else one named as od and navigate find it), or None."""
    if not args.csv:
        return None
    if args.person_column:
        return args.person_column
    from ldpviz.data.file_formats import find_column
    try:
        if str(args.csv).lower().endswith((".parquet", ".pq")):
            import pyarrow.parquet as pq
            columns = list(pq.read_schema(args.csv).names)
        else:
            import pandas as pd
            columns = [str(c) for c in pd.read_csv(args.csv, nrows=0, compression="infer").columns]
    except Exception:               # unreadable here: the points loader gives the clear message
        return None
    idx = find_column(columns, None, REPORT_PERSON_NAMES)
    return None if idx is None else columns[idx]


def _report_data(args: argparse.Namespace) -> Any:
    """The report's data: points, or for a file with a person column (as od and navigate read it) the trips,
    one point per person chosen at random (seeded, as Decide and navigate's traffic reporters), so the ledger is
    per person (issue 37.6)."""
    person = _person_column(args)
    if person is None:
        return cli_input.load_data(args)
    from ldpviz.decide.decision_flow import trips_points
    for role in ("trip_column", "time_column", "seq_column"):
        setattr(args, role, None)
    args.person_column = person
    trips = cli_input.load_data(args, cli_input.TRAJECTORIES)
    points = trips_points(trips.data, args.seed)
    print(f"Person column '{person}': one point per person ({trips.data.n_people:,} people), as Decide, od and "
          "navigate read trips; the ledger is per person.", file=sys.stderr)
    return cli_input.UserData(points.name, points, trips.region)


def add_commands(sub: Any) -> None:
    """Add ``target`` and ``report`` to the main parser's subcommands (target's options when it is used: they
    name the goal seek's constants, whose module imports the compute core)."""
    tp = sub.add_parser("target", help="goal seek: per mechanism, the smallest epsilon found on a scan (or the "
                                       "fewest users) at which ONE collection meets a target accuracy with "
                                       "probability >= 95%%, decided on fresh collections")
    tp.set_defaults(fn=cmd_target)
    (tp.defer if hasattr(tp, "defer") else lambda fill: fill(tp))(_target_options)
    rp = sub.add_parser("report", help="write a self-contained HTML decision report for one setting")
    _report_options(rp)


def _target_options(tp: argparse.ArgumentParser) -> None:
    from ldpviz.decide.one_collection import CONFIDENCE, PROBABILITY
    from ldpviz.decide.feasibility import DEFAULT_LIMIT
    from ldpviz.decide.tradeoff import DEFAULT_TRIALS, TARGET_METRICS
    _add_scenario_arguments(tp)
    tp.add_argument("--metric", choices=TARGET_METRICS, default="w2_m", help="accuracy metric (lower is better)")
    tp.add_argument("--at-most", type=float, required=True, dest="at_most", metavar="X",
                    help="target: one collection's metric must be at or below X (W2 in metres) with probability "
                         ">= --probability")
    tp.add_argument("--mechanism", action="append", default=[], help="mechanism name, repeatable")
    tp.add_argument("--users", type=int, help="number of users (seeded subsample) when solving for epsilon")
    tp.add_argument("--epsilon", type=float,
                    help="solve for the number of users needed at this epsilon instead of for epsilon")
    tp.add_argument("--trials", type=option_checks.trials(3, "a tolerance bound needs three"),
                    help=f"collections per decision, on the search's streams and on fresh ones "
                         f"(default {DEFAULT_TRIALS})")
    tp.add_argument("--probability", type=float, default=PROBABILITY,
                    help="share of single collections that must meet the target (default %(default)s)")
    tp.add_argument("--confidence", type=float, default=CONFIDENCE,
                    help="confidence of that statement (one-sided normal tolerance bound; default %(default)s)")
    tp.add_argument("--r", type=float, help="distance r (m) for 'the attacker lands within r of the person' "
                                           "(default: 1%% of the region's side)")
    tp.add_argument("--limit", type=float, default=DEFAULT_LIMIT, metavar="EPSILON",
                    help="the largest epsilon per person (per row with --unit report) in one collection you accept, "
                         "judged on the ledger: the region and --reports (Geo-I: between neighbouring cells; "
                         "default %(default)s): where no mechanism meets the target within it, the answer says so "
                         "first and what each reaches at it")
    tp.add_argument("--reports", type=int, default=1, metavar="N",
                    help="reports per person per collection, each paying epsilon (Decide's step 2; default 1): the "
                         "ledger and the --limit count them; the accuracy is simulated with one report per person")
    from ldpviz.decide.decision_flow import UNITS
    tp.add_argument("--unit", choices=list(UNITS), default="person",
                    help="what the guarantee protects (Decide's step 2): 'person' (all their reports in a "
                         "collection; default) or 'report' (one location report, the ledger per row)")
    tp.add_argument("--no-attacker", action="store_true", dest="no_attacker",
                    help="skip the attacker's error at the answer (faster)")
    tp.add_argument("--json", action="store_true", help="print one JSON object")


def _report_options(rp: argparse.ArgumentParser) -> None:
    _add_scenario_arguments(rp)
    rp.add_argument("--mechanism", required=True, help="mechanism name (see 'ldpviz mechanisms')")
    rp.add_argument("--epsilon", type=float, required=True, help="privacy budget epsilon (Geo-I: per km)")
    rp.add_argument("--param", action="append", default=[], metavar="KEY=VALUE", help="mechanism parameter")
    rp.add_argument("--users", type=int, help="number of users (seeded subsample)")
    rp.add_argument("--trials", type=option_checks.trials(2, "confidence intervals need two"), default=10,
                    help="trials for the confidence intervals (default 10)")
    rp.add_argument("--r", type=float, help="distance r (m) for 'the attacker lands within r of the person' "
                                           "(default: 1%% of the region's side)")
    rp.add_argument("--no-audit", action="store_true", dest="no_audit", help="skip the quick audit")
    rp.add_argument("--person-column", help="the file's person column (auto-detected: person, user, ...): the "
                                            "report then takes one point per person and its ledger is per person")
    rp.add_argument("--out", required=True, help="HTML file to write")
    rp.set_defaults(fn=cmd_report)
