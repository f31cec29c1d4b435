"""``ldpviz deploy`` and ``ldpviz estimate``: hand the decided collection to engineers, and read its reports back
(issue 29; docs/deploy.md)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ldpviz.cli import option_checks
from ldpviz.errors import LdpvizInputError, require
from ldpviz.shell import command_line


def add_commands(sub: Any) -> None:
    """Add ``deploy`` and ``estimate`` to the main parser's subcommands."""
    p = sub.add_parser("deploy", help="write the collection bundle: collection.json, client.js, client.py, an "
                                      "example page and the engineers' README")
    p.add_argument("--mechanism", required=True, help="mechanism name (see 'ldpviz mechanisms')")
    p.add_argument("--epsilon", type=float, required=True, help="privacy budget epsilon of one report")
    p.add_argument("--grid", type=int, default=32, help="grid side d (d x d cells)")
    from ldpviz.cli.data_options import add_data_arguments
    # the same data options as every command (issue 36): --dataset NAME --region PRESET, --bbox W,S,E,N (with
    # --bbox-from: a box suggested from the rows is refused, with the reason), or --csv FILE framed by the paid
    # private tiles (--region-rule, --region-epsilon), which the ledger then charges
    add_data_arguments(p, dataset_help="bundled dataset whose --region preset to use")
    p.add_argument("--param", action="append", default=[], metavar="KEY=VALUE", help="mechanism parameter")
    p.add_argument("--expected-users", type=int, help="planned number of reports (UG fixes its grid from it)")
    p.add_argument("--reports-per-person", type=int, default=1,
                   help="how many times each phone calls the client per collection (default 1); the ledger pays it")
    p.add_argument("--repeats", type=int, default=1, help="how many times the collection runs (default 1)")
    p.add_argument("--repeats-basis", default="", help="why that many, in words (e.g. 'daily for a year')")
    p.add_argument("--out", required=True, help="folder to write the bundle into")
    p.add_argument("--zip", help="also write the bundle as this zip file")
    p.set_defaults(fn=cmd_deploy)
    e = sub.add_parser("estimate", help="check collected reports against collection.json and estimate the heatmap "
                                        "with per-cell intervals")
    e.add_argument("--spec", required=True, help="the collection.json the phones used")
    e.add_argument("--reports", required=True, help="reports file: JSON lines, or CSV with a header of the fields")
    e.add_argument("--out", help="folder for estimate.csv, estimate.geojson, estimate.png, summary.json")
    e.add_argument("--bootstrap", type=int, default=40, help="bootstrap resamples for the intervals (default 40)")
    e.add_argument("--max-bytes", type=int, help="refuse a reports file larger than this many bytes (no limit by "
                                                 "default; the file is streamed either way)")
    e.add_argument("--seed", type=option_checks.seed, default=0, help="seed of the bootstrap resampling")
    e.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    e.set_defaults(fn=cmd_estimate)


def _region(args: argparse.Namespace):
    """The collection's region from the shared data options: a typed box, a preset, or a file's region (its typed
    or suggested box, or the paid private tiles). Where it came from travels with it (``Region.data_use``,
    ``epsilon_spent``); :func:`ldpviz.deploy.spec.check_deployable` refuses one read from the data unpaid."""
    from ldpviz.cli.data_options import load_data
    require(args.bbox or args.region is not None or args.csv,
            "give the region: --bbox W,S,E,N (typed bounds), --region PRESET of --dataset, or --csv FILE (its region "
            "chosen by the paid private map tiles); a region fitted to the users' data cannot be sent to phones")
    user = load_data(args)
    if args.csv and not args.bbox:
        return user.data.default_region
    if isinstance(user.region, str):
        from ldpviz.data import datasets
        return datasets.load(args.dataset).resolve_region(user.region)
    return user.region


def cmd_deploy(args: argparse.Namespace) -> int:
    from ldpviz import mechanisms
    from ldpviz.deploy import bundle
    from ldpviz.geo.domain import Grid
    from ldpviz.mechanisms.base import CENTRAL_DP
    mechanisms.validate_epsilon(args.epsilon)
    require(args.expected_users is None or args.expected_users >= 1, "--expected-users must be at least 1")
    grid = Grid(_region(args), args.grid)
    mech = mechanisms.create(args.mechanism, grid, args.epsilon, **option_checks.params(args.param)) \
        if mechanisms.get(args.mechanism).privacy_model == CENTRAL_DP else None
    target = mech if mech is not None else _deployable(args, grid)
    out = Path(args.out)
    require(args.repeats >= 1, f"--repeats must be at least 1, got {args.repeats}")
    from ldpviz.deploy.spec import collection_ledger_for
    ledger = collection_ledger_for(target, reports_per_person=args.reports_per_person, repeats=args.repeats,
                                   repeats_basis=args.repeats_basis)
    paths = bundle.write_bundle(target, ledger=ledger, out_dir=out, expected_users=args.expected_users)
    spec = json.loads(paths["collection.json"].read_text(encoding="utf-8"))
    print(f"wrote {len(paths)} files to {out}/: {', '.join(sorted(paths))}")
    print(f"  one report: {bundle.report_guarantee(spec)}")
    sentence = spec["ledger"].get("sentence")
    if sentence:
        print(f"  each person pays (a phone is one person): {sentence}")
    if spec["client"]["kind"] == "curator":
        print("  central DP: the trusted curator's side only (phones send true cells to the curator; no phone client)")
    print(f"  spec digest (build it into the app: createClient(spec, {{expectedDigest}})): {spec['digest']}")
    estimate = command_line(["ldpviz", "estimate", "--spec", out / "collection.json", "--reports", "REPORTS",
                             "--out", "RESULT"])
    print(f"  estimate with: {estimate}")
    if spec["ledger"].get("warning"):
        print(f"ldpviz: warning: {spec['ledger']['warning']}", file=sys.stderr)
    if args.zip:
        Path(args.zip).write_bytes(bundle.bundle_zip(target, ledger=ledger, expected_users=args.expected_users))
        print(f"  zip: {args.zip}")
    return 0


def _deployable(args: argparse.Namespace, grid):
    from ldpviz.deploy import spec as specs
    return specs.deployable_mechanism(args.mechanism, grid, args.epsilon, option_checks.params(args.param),
                                      args.expected_users)


def cmd_estimate(args: argparse.Namespace) -> int:
    from ldpviz.deploy import estimate as deployed
    require(args.max_bytes is None or args.max_bytes >= 1, f"--max-bytes must be >= 1, got {args.max_bytes}")
    if args.out and Path(args.out).exists() and not Path(args.out).is_dir():
        raise LdpvizInputError(f"--out {args.out!r} is a file; give a folder")
    result = deployed.estimate_reports(args.spec, args.reports, bootstrap=args.bootstrap, seed=args.seed,
                                       max_bytes=args.max_bytes)
    paths = deployed.write_outputs(result, args.out) if args.out else {}
    if args.json:
        print(json.dumps({**result.summary(), "files": {k: str(v) for k, v in paths.items()}}, default=str))
    else:
        for line in deployed.summary_text(result):
            print(line)
        if paths:
            print(f"  wrote {', '.join(p.name for p in paths.values())} to {args.out}/")
    for warning in result.warnings:
        print(f"ldpviz: warning: {warning}", file=sys.stderr)
    return 0
