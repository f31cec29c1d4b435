"""The ``ldpviz`` command line: list datasets and mechanisms, run a scenario, sweep.

Bad arguments exit with status 2 and one line naming the argument; no traceback.

This module stays light (argparse, the registry's names, the checks of ε): the compute core (numpy's heavy
friends scipy.stats, numba, pandas, the metrics) is imported inside the command that uses it, so ``--help``
and a refusal answer at once, and a subcommand's options are added only when that subcommand is used
(:class:`_Parser`). tests/cli/test_cli_light.py holds that property.
"""

from __future__ import annotations

import argparse
import errno
import json
import os
import sys
from typing import TYPE_CHECKING, Any, Callable, Sequence

from ldpviz import wording
from ldpviz.cli import data_options as cli_input, option_checks
from ldpviz.cli.data_options import join_signed_values  # noqa: F401 (public)
from ldpviz.errors import LdpvizInputError, require
from ldpviz.mechanisms.base import validate_epsilon

if TYPE_CHECKING:
    from ldpviz import experiment
    from ldpviz.geo.domain import Region


class _Parser(argparse.ArgumentParser):
    """One-line errors; and options added when the parser is first used (:meth:`defer`), so building the
    whole command line imports nothing a subcommand that is not run needs."""

    def defer(self, fill: Callable[[argparse.ArgumentParser], None]) -> None:
        """Call ``fill(self)`` (adding this parser's options) before it parses or prints its help."""
        self.__dict__.setdefault("_fills", []).append(fill)

    def fill(self) -> None:
        fills = self.__dict__.get("_fills", [])
        while fills:
            fills.pop(0)(self)

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        self.fill()
        return super().parse_known_args(args, namespace)

    def format_help(self) -> str:
        self.fill()
        return super().format_help()

    def format_usage(self) -> str:
        self.fill()
        return super().format_usage()

    def _print_message(self, message: str, file: Any = None) -> None:
        """Help and usage on stdout, written and flushed here: argparse's own swallows a failed write, so
        ``ldpviz run --help > /dev/full`` exited 0 having written nothing (main() reports the error)."""
        if message:
            stream = sys.stdout if file is None else file
            stream.write(message)
            stream.flush()

    def exit(self, status: int = 0, message: str | None = None) -> None:  # type: ignore[override]
        if message and sys.stderr is not None:       # an error: on stderr, if the shell left it open
            try:
                sys.stderr.write(message)
                sys.stderr.flush()
            except OSError:
                pass
        sys.exit(status)

    def error(self, message: str) -> None:  # one line, no usage dump
        self.exit(2, f"ldpviz: error: {message} (see 'ldpviz {self.prog.split()[-1]} --help')\n"
                  if " " in self.prog else f"ldpviz: error: {message} (see 'ldpviz --help')\n")


def _scenario_and_data(args: argparse.Namespace) -> tuple[experiment.Scenario, cli_input.UserData]:
    from ldpviz import experiment
    user = cli_input.load_data(args)
    scenario = experiment.Scenario(dataset=user.name, mechanism=args.mechanism, epsilon=args.epsilon,
                                   grid_side=args.grid, region=user.region, params=option_checks.params(args.param),
                                   n_users=args.users, seed=args.seed, trials=args.trials)
    return scenario, user


def _with_rows(out: dict[str, Any], user: cli_input.UserData | None) -> dict[str, Any]:
    """``--json`` output with the file's row counts (read, kept, dropped by reason) when a file was given."""
    rows = user.rows() if user is not None else None
    return {**out, "rows": rows} if rows is not None else out


def _cells(metres: float) -> str:
    """A cell side for people: metres up to 10 km, kilometres beyond ('277 km', not '277,148 m')."""
    return f"{metres / 1000:,.3g} km" if metres >= 10_000 else f"{metres:,.0f} m"


def _jsonable(value: Any) -> Any:
    import numpy as np
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, (np.floating, float)):
        return float(value)
    if isinstance(value, np.integer):
        return int(value)
    return value


def cmd_datasets(args: argparse.Namespace) -> int:
    from ldpviz.data import datasets, trajectories
    if getattr(args, "json", False):
        rows = [{**row, "kind": "points"} for row in datasets.describe()] + trajectories.describe()
        print(json.dumps(_jsonable(rows)))
        return 0
    for row in datasets.describe():
        kind = "synthetic" if row["synthetic"] else "real"
        print(f"{row['name']:<20} {row['n']:>9,} points  {kind:<9}  {row['label']}")
        print(f"{'':<20} regions: {', '.join(row['presets'])}")
    for row in trajectories.describe():
        print(f"{row['name']:<20} {row['n']:>9,} points  {'trajectories':<9}  {row['label']} "
              f"({row['n_people']:,} people, {row['n_trips']:,} trips)")
        print(f"{'':<20} regions: {', '.join(row['presets'])}")
    print("Synthetic sets at any size up to 100,000,000 points: NAME:n=N, e.g. --dataset normal:n=10000000")
    return 0


def cmd_mechanisms(args: argparse.Namespace) -> int:
    from ldpviz import mechanisms
    for row in mechanisms.describe():
        print(f"{row['name']:<16} {row['privacy_model']:<10} {row['family']}: {row['label']}")
        for p in row["params"]:
            default = "auto" if p["default"] is None else p["default"]
            print(f"{'':<16}   {p['name']} ({p['type']}, default {default}): {p['help']}")
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    cli_input.require_number(args.partition_users, "--partition-users", minimum=1)
    cli_input.require_number(args.workers, "--workers", minimum=1)
    validate_epsilon(args.epsilon)                   # before the compute core is imported or a file read
    from ldpviz import mechanisms
    mechanisms.get(args.mechanism)                   # the registry: lighter than the metrics behind experiment
    from ldpviz import experiment
    from ldpviz.cli.privacy_warning import print_privacy_warning
    user = None
    if args.scheduler is not None or args.partition_users is not None or args.workers is not None:
        if args.region and args.bbox:                            # one scenario in partitions
            raise LdpvizInputError("give either --region or --bbox, not both")
        option_checks.check_data_options(args, partitioned=True)
        result = _run_partitioned(args, cli_input.bbox_region(args.bbox, cli_input.bbox_data_use(args))
                                  if args.bbox else None, option_checks.params(args.param))
        scenario = result.scenario
    else:
        from ldpviz.experiment import chunked                     # NAME:n=N above 10M points: chunk by chunk
        scenario, user = _scenario_and_data(args)
        big = user.data is None and chunked.applies(scenario)
        result = chunked.run(scenario) if big else experiment.run(scenario, user.data)
    summary = result.summary()
    warning = result.ledger.warning()          # judged on the ledger's per-row total (region included)
    print_privacy_warning(warning)
    if args.json:
        print(json.dumps(_jsonable({**_with_rows(summary, user), "privacy_warning": warning})))
        return 0
    print(f"{scenario.mechanism} at epsilon = {scenario.epsilon:g} on {result.n_users:,} users, "
          f"d = {scenario.grid_side} ({_cells(result.grid.cell_m)} cells), {result.guarantee}")
    print(f"  privacy: {result.ledger.sentence()}")
    for key in ("w2_m", "w2_cells", "aqe", "kl", "l1", "emd_l1_m", "similarity"):
        if key in summary:
            print(f"  {key:<12} {summary[key]:.6g}")
    print(f"  {'seconds':<12} {summary['seconds']:.3f}")
    for note in result.notes:
        print(f"  note: {note}")
    for item in result.coverage:
        print(f"  scope: {item}")
    return 0


def _run_partitioned(args: argparse.Namespace, region: Region | None, params: dict[str, Any]) -> experiment.Result:
    """``ldpviz run --scheduler ADDRESS|local [--workers K] [--partition-users N]`` (no scheduler: serial), by
    :func:`ldpviz.experiment.partitioned.run_partitioned`.

    Synthetic data: ``--users`` is how many users to generate. A file: a Parquet
    file or directory (``--csv``) read as a dask.dataframe, with ``--bbox`` fixing
    the region before any row is read.
    """
    from ldpviz import experiment
    from ldpviz.experiment import executors as parallel, partitioned

    require(args.workers is None or args.scheduler == "local",
            "--workers sets the size of a local cluster: use it with --scheduler local (a remote cluster has the "
            "workers it was started with)")
    size = args.partition_users or partitioned.DEFAULT_PARTITION_USERS
    if args.csv:
        require(str(args.csv).lower().rstrip("/").endswith((".parquet", ".pq", ".parq")) or os.path.isdir(args.csv),
                f"--csv {args.csv}: a partitioned run reads Parquet (a file or a directory of files); convert the "
                "CSV to Parquet first, or run without --scheduler/--partition-users")
        require(region is not None, "--bbox is required to split a file: the region must be fixed before the "
                                    "data is read in partitions")
        source: Any = partitioned.ParquetSource(args.csv, lat_column=args.lat_column, lon_column=args.lon_column)
        name = str(args.csv)
    else:
        require(args.users is not None, "--users is required to generate a synthetic dataset in partitions")
        source = partitioned.SyntheticSource(partitioned.synthetic_sampler(args.dataset), int(args.users),
                                             int(args.seed), int(size), f"{args.users:,} users of {args.dataset}")
        name = args.dataset
        if region is None:
            region = partitioned.synthetic_region(args.region)
    scenario = experiment.Scenario(dataset=name, mechanism=args.mechanism, epsilon=args.epsilon, grid_side=args.grid,
                                   region=region, params=params, n_users=args.users, seed=args.seed,
                                   trials=args.trials)
    bar = cli_input.ProgressBar("partitions")
    if not args.scheduler:
        return partitioned.run_partitioned(scenario, source, region, progress=bar).result
    with parallel.dask_client(args.scheduler, args.workers) as client:
        return partitioned.run_partitioned(scenario, source, region, executor=client, progress=bar).result


def _vary(specs: Sequence[str]) -> dict[str, list[Any]]:
    vary: dict[str, list[Any]] = {}
    for spec in specs:
        if "=" not in spec:
            raise LdpvizInputError(f"--vary expects name=v1,v2,..., got {spec!r}")
        key, values = spec.split("=", 1)
        key = {"grid": "grid_side", "d": "grid_side", "users": "n_users"}.get(key.strip(), key.strip())
        items = [v.strip() for v in values.split(",")]
        if not key or "" in items:                    # 'epsilon=1,' or 'epsilon=1,,2': nothing is dropped unsaid
            raise LdpvizInputError(f"--vary {spec!r} has an empty {'name' if not key else 'value'}; give "
                                   "name=v1,v2,... with a value between every two commas")
        if key in vary:
            raise LdpvizInputError(f"--vary {spec!r}: {key} is already varied; give its values once, "
                                   f"as {key}=v1,v2,...")
        vary[key] = [option_checks.number(v) for v in items]
    if not vary:
        raise LdpvizInputError("sweep needs at least one --vary name=v1,v2,...")
    return vary


def cmd_sweep(args: argparse.Namespace) -> int:
    cli_input.check_output_file(args.out)
    cli_input.require_number(args.workers, "--workers", minimum=1)
    validate_epsilon(args.epsilon)
    vary = _vary(args.vary)
    option_checks.check_vary_overrides(args, vary, vars(build_parser().parse_args(["sweep"])),
                                       option_checks.params(args.param))
    from ldpviz import experiment
    scenario, user = _scenario_and_data(args)
    for sc in experiment.expand(scenario, vary):      # every value checked before the first run
        try:
            experiment.check_scenario(sc)
        except LdpvizInputError as exc:
            changed = ", ".join(f"{k}={v}" for k, v in zip(vary, _combo(sc, vary)))
            raise LdpvizInputError(f"--vary {changed}: {exc}") from None
    data = user.data

    bar = cli_input.ProgressBar("scenarios")
    from ldpviz.experiment import executors as parallel
    try:
        with parallel.executor_for(args.workers, args.scheduler) as executor:
            df = experiment.sweep(scenario, vary, dataset=data, executor=executor, progress=bar)
    finally:                                          # Ctrl+C or an error: its line starts after the bar
        bar.end()
    held = int(df["n_users"].max()) if "n_users" in df and len(df) else None
    for asked in sorted({int(v) for v in vary.get("n_users", [scenario.n_users]) if v is not None}):
        if held is not None and asked > held:        # the CSV's n_users column has the users who took part
            print(f"note: {wording.capped(asked, held)}", file=sys.stderr)
    # rows whose estimate never left its uniform start say so, as run's note does (issue 37.14)
    varied = [c for c in dict.fromkeys(["mechanism", *(k if k in df.columns else f"param_{k}" for k in vary)])
              if c in df.columns]
    start = experiment.start_map_sweep_note(experiment.summarise(df, varied), varied, unit="row") if len(df) else None
    if start:
        print(f"note: {start} The CSV says so per row: estimate_informative, start_map_trials, start_map.",
              file=sys.stderr)
    if args.out:
        cli_input.write_text(args.out, df.to_csv(index=False))
        print(f"wrote {len(df)} rows to {args.out}", file=sys.stderr)
    else:
        df.to_csv(sys.stdout, index=False)
    return 0


def _combo(sc: experiment.Scenario, vary: dict[str, list[Any]]) -> list[Any]:
    own = {"epsilon": sc.epsilon, "grid_side": sc.grid_side, "n_users": sc.n_users, "seed": sc.seed,
           "trials": sc.trials, "mechanism": sc.mechanism}
    return [own[k] if k in own else sc.param_dict.get(k) for k in vary]


def cmd_od(args: argparse.Namespace) -> int:
    from ldpviz.flows import od
    if args.users is not None:
        od.check_od_users(args.users)                 # before any file or pair is read
    validate_epsilon(args.epsilon)
    user = cli_input.load_data(args, cli_input.TRAJECTORIES)
    data: Any = user.data if user.data is not None else user.name
    with cli_input.Heartbeat(f"od: {args.mechanism} + {args.estimator}, {args.trials} trial(s)"):
        out = od.od_trials(data, args.mechanism, args.epsilon, args.grid, region=user.region,
                           estimator=args.estimator, trials=args.trials, seed=args.seed, n_users=args.users,
                           top_k=args.top_k, params=option_checks.params(args.param))
    from ldpviz.cli.privacy_warning import print_privacy_warning
    print_privacy_warning(out["ledger"]["warning"])   # the accountant's warning on the per-person total, on stderr
    if args.json:
        print(json.dumps(_jsonable(_with_rows(out, user))))
        return 0
    print(f"OD flows, {out['mechanism']} + {out['estimator']} on {out['n_users']:,} trips, grid {out['grid']} x "
          f"{out['grid']} ({out['od_pairs']:,} OD pairs), {out['trials']} trial(s)")
    print(f"  {out['guarantee']}")
    ledger = out["ledger"]            # the accountant's per-person total (region included): never summed here
    print(f"  privacy: {ledger['sentence']}")
    print(f"  l1 {out['l1']:.4f}   top-{out['top_k']} precision {out['top_k_precision']:.2f}")
    for reason, count in out["left_out"].items():
        print(f"  left out: {count:,} {reason}")
    for note in out.get("notes", []):
        print(f"  note: {note}")
    return 0


def build_parser(lazy: bool = False) -> argparse.ArgumentParser:
    """The whole command line; ``lazy``: a subcommand's deferred options are added when it is used (main)."""
    parser = _Parser(prog="ldpviz", description="Private spatial distribution estimation: run and compare "
                                                "mechanisms on location data.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    ds = sub.add_parser("datasets", help="list bundled datasets (points and trajectories) and their region presets")
    ds.add_argument("--json", action="store_true", help="print one JSON list (each dataset with its kind)")
    ds.set_defaults(fn=cmd_datasets)
    sub.add_parser("mechanisms", help="list mechanisms, privacy models and parameters").set_defaults(
        fn=cmd_mechanisms)
    for name, fn, helptext in (("run", cmd_run, "run one scenario"),
                               ("sweep", cmd_sweep, "run a grid of scenarios to CSV")):
        p = sub.add_parser(name, help=helptext)
        cli_input.add_data_arguments(p)
        p.add_argument("--mechanism", default="grr", help="mechanism name (see 'ldpviz mechanisms')")
        p.add_argument("--epsilon", type=float, default=1.0, help="privacy budget epsilon > 0")
        p.add_argument("--grid", type=int, default=32, help="grid side d (d x d cells)")
        p.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                       help="mechanism parameter, repeatable")
        p.add_argument("--users", type=int, help="number of users (seeded subsample)")
        p.add_argument("--seed", type=option_checks.seed, default=0)
        p.add_argument("--trials", type=option_checks.trials(), default=1)
        if name == "run":
            p.add_argument("--json", action="store_true", help="print one JSON object")
            p.add_argument("--scheduler", help="split the users into partitions and perturb them on a Dask cluster: "
                                                "its scheduler address (tcp://host:8786) or 'local'; the result equals "
                                                "the serial partitioned run; needs pip install 'ldpviz[cluster]'")
            p.add_argument("--workers", type=int, help="worker processes of --scheduler local (default: CPU count)")
            p.add_argument("--partition-users", type=int,
                           help="users per partition (default 1,000,000); without --scheduler the partitions run "
                                "here, one after the other (the serial reference of a cluster run)")
        else:
            p.add_argument("--vary", action="append", default=[], metavar="NAME=V1,V2",
                           help="parameter to vary: epsilon, grid, users, seed or a mechanism parameter")
            p.add_argument("--out", help="CSV file to write (default: stdout)")
            p.add_argument("--workers", type=int, default=1, help="local worker processes")
            p.add_argument("--scheduler", help="Dask scheduler address (tcp://host:8786) to run the sweep on a "
                                                "cluster; needs pip install 'ldpviz[cluster]'")
        p.set_defaults(fn=fn)
    _add_flow_commands(sub)
    from ldpviz.cli import officer as officer_cli
    officer_cli.add_commands(sub)
    from ldpviz.cli import deploy_commands
    deploy_commands.add_commands(sub)
    rp = sub.add_parser("reproduce", help="regenerate every benchmark and report (bench/*.py) into docs/")
    rp.defer(lambda p: _reproduce_module().add_arguments(p))   # its module asks git for the commit when imported
    rp.set_defaults(fn=lambda args: _reproduce_module().run_from_args(args))
    ap = sub.add_parser("app", help="start the dashboard on the bundled data (http://127.0.0.1:8501 by default)")
    ap.add_argument("--port", type=int, default=8501, help="port to listen on (default 8501)")
    ap.add_argument("--address", default="127.0.0.1",
                    help="address to listen on (default 127.0.0.1: this machine only; 0.0.0.0 shares it on your "
                         "network, where anyone who can reach the machine can use it)")
    ap.set_defaults(fn=cmd_app)
    if not lazy:
        for command in _subcommands(parser).values():
            command.fill()
    return parser


def _reproduce_module() -> Any:
    from ldpviz.evidence import reproduce
    return reproduce


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, Any]:
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices


def cmd_app(args: argparse.Namespace) -> int:
    """Serve the dashboard until interrupted (the same command as ``make run`` and the browser tests).

    This process becomes the server (``os.execv``), so a SIGTERM or SIGINT sent to ``ldpviz app`` by a service
    manager, a container runtime or a test reaches Streamlit itself and nothing is left serving the port
    (a child started with ``subprocess.call`` was orphaned, issue 30.4)."""
    from ldpviz.app import launch
    if not 0 < args.port < 65536:
        raise LdpvizInputError(f"--port must be between 1 and 65535, got {args.port}")
    launch.check_address(args.address, args.port)    # before the URL is printed: a bad one is refused, not served
    print(f"ldpviz: serving the dashboard on http://{args.address}:{args.port} (Ctrl+C stops it)", file=sys.stderr)
    command = launch.streamlit_command(args.port, args.address)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(command[0], command)
    return 1                                           # not reached: execv returns only by raising


def cmd_navigate(args: argparse.Namespace) -> int:
    from ldpviz.flows import navigation
    cli_input.require_number(args.threshold, "--threshold", minimum=0)
    cli_input.require_number(args.delay, "--delay", minimum=0)
    cli_input.require_number(args.theta, "--theta", minimum=0)
    cli_input.require_number(args.speed, "--speed", above=0)
    validate_epsilon(args.epsilon)
    user = cli_input.load_data(args, cli_input.TRAJECTORIES)
    data: Any = user.data if user.data is not None else user.name
    with cli_input.Heartbeat(f"navigate: {args.mechanism}, {args.trips} trips"):
        res = navigation.navigation_for_dataset(data, args.mechanism, args.epsilon, args.theta, args.grid,
                                                region=user.region, n_trips=args.trips, seed=args.seed,
                                                speed_mps=args.speed, delay_s=args.delay, threshold=args.threshold,
                                                params=option_checks.params(args.param), max_updates=args.max_updates)
    out = {"dataset": user.name, **res.summary(),
           "region": res.settings["region"], "trips_left_out": res.settings["trips_left_out"]}
    from ldpviz.cli.privacy_warning import print_privacy_warning
    print_privacy_warning(out["ledger"]["warning"])   # the accountant's warning on the per-person total, on stderr
    if args.json:
        print(json.dumps(_jsonable(_with_rows(out, user))))
        return 0
    unit = f" {out['epsilon_unit']}" if out["epsilon_unit"] else ""
    cap = "no cap" if out["update_cap"] is None else f"capped at {out['update_cap']} per trip on the phone"
    print(f"navigation with {out['mechanism']} location updates (epsilon setting {out['epsilon_slider']:g}; each "
          f"update costs {out['epsilon_per_update']:.4g}{unit}), "
          f"theta = {out['theta_s']:g} s, {out['trips']} trips on a {out['grid']} x {out['grid']} grid ({cap})")
    print(f"  {out['guarantee']}")
    print(f"  {out['region']}")
    print(f"  total privacy per trip lambda x epsilon (the accountant's): worst trip {out['trip_total_text']} "
          f"({out['max_updates']} updates), mean {out['mean_trip_total_text']} "
          f"({out['mean_updates']:.2f} updates)"
          + (f"; {out['capped_trips']} trips hit the cap" if out["update_cap"] is not None else ""))
    ledger = out["ledger"]            # the accountant's per-person total: never summed here
    print(f"  privacy: {ledger['sentence']}")
    print(f"  relative Levenshtein distance to the fastest true route {out['rel_levenshtein']:.3f}; trip time "
          f"deviation {out['trip_time_deviation_s']:.1f} s ({100 * out['trip_time_deviation_rel']:.1f}%)")
    for reason, count in out["trips_left_out"].items():
        print(f"  left out: {count:,} {reason}")
    for note in out["notes"]:
        print(f"  note: {note}")
    return 0



def _add_flow_commands(sub: Any) -> None:
    """``od`` and ``navigate``: the trajectory-input LBS of L-SRR Sec. 4."""
    p = sub.add_parser("od", help="origin-destination flows under LDP (L-SRR Sec. 4.1)")
    cli_input.add_data_arguments(p, kind=cli_input.TRAJECTORIES, default_dataset="atlantic-storms",
                                 dataset_help="trajectory dataset, or a point dataset (gravity-model OD pairs)")
    p.add_argument("--mechanism", default="srr", help="srr, grr, hr, olh-h or pldp")
    p.add_argument("--epsilon", type=float, default=2.0, help="budget per OD pair (epsilon/2 per end)")
    p.add_argument("--grid", type=int, default=8, help="grid side d (d x d cells, (d x d)^2 OD pairs)")
    p.add_argument("--estimator", default="lasso", help="lasso (paper), em (maximum likelihood) or unbiased")
    p.add_argument("--trials", type=option_checks.trials(), default=1)
    p.add_argument("--seed", type=option_checks.seed, default=0)
    p.add_argument("--users", type=int, help="number of trips (seeded subsample, or synthetic pairs)")
    p.add_argument("--top-k", type=int, default=10, help="k of the top-k flow precision")
    p.add_argument("--param", action="append", default=[], metavar="KEY=VALUE", help="mechanism parameter")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(fn=cmd_od)
    p = sub.add_parser("navigate", help="traffic-aware navigation with LDP location updates (L-SRR Sec. 4.2)")
    cli_input.add_data_arguments(p, kind=cli_input.TRAJECTORIES,
                                 dataset_help="dataset: its points are the traffic, its OD pairs the trips")
    p.add_argument("--mechanism", default="srr", help="client-side LDP or Geo-I mechanism of each location update "
                                                      "(see 'ldpviz mechanisms'); central-DP ones are refused")
    p.add_argument("--epsilon", type=float, default=1.0, help="budget of ONE location update")
    p.add_argument("--theta", type=float, default=40.0, help="delay threshold theta in seconds: update when "
                                                              "the trip runs this much behind its prediction")
    p.add_argument("--grid", type=int, default=32, help="grid side d: the road grid (d x d cells)")
    p.add_argument("--trips", type=int, default=100, help="number of simulated trips")
    p.add_argument("--speed", type=float, default=10.0, help="free-flow speed, m/s")
    p.add_argument("--delay", type=float, help="seconds added per congested cell (default: a cell's free-flow time)")
    p.add_argument("--threshold", type=float, help="users in a cell above which it is congested "
                                                   "(default: twice the mean per cell)")
    p.add_argument("--max-updates", type=int, help="cap on location updates per trip, enforced on the phone "
                                                   "(default: no cap); bounds every trip at cap x epsilon")
    p.add_argument("--seed", type=option_checks.seed, default=0)
    p.add_argument("--param", action="append", default=[], metavar="KEY=VALUE", help="mechanism parameter")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(fn=cmd_navigate)


def _drop_stdout() -> None:
    """After stdout failed (closed pipe, full disk), point it at /dev/null so the exit flush raises nothing
    (the recipe of the Python docs, "Note on SIGPIPE")."""
    if sys.stdout is not sys.__stdout__:
        return                                         # captured (tests): nothing to silence
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


#: Exit status of a command whose reader went away (128 + SIGPIPE), as ``yes | head`` gives.
EXIT_BROKEN_PIPE = 141


class _ClosedStdout:
    """Stands in for a standard output the shell closed (``ldpviz run --json >&-``): Python then sets
    ``sys.stdout`` to None, print() drops every line without a word and the exit flush raised AttributeError.
    Writing to it fails as writing to a closed file does; a command that prints nothing still runs."""

    def write(self, text: str) -> int:
        raise OSError(errno.EBADF, "standard output is closed")

    def flush(self) -> None:
        pass

    def fileno(self) -> int:
        raise OSError(errno.EBADF, "standard output is closed")


def _output_failed(err: OSError) -> int:
    """The exit status for a failed write to stdout, saying why on stderr (when it is open)."""
    if isinstance(err, BrokenPipeError):               # e.g. | head -c 10: the reader has all it wanted
        _drop_stdout()
        return EXIT_BROKEN_PIPE
    _drop_stdout()
    _say(f"ldpviz: error: cannot write the output: {err.strerror or err}")
    return 1


def _say(line: str) -> None:
    """One line on stderr; nothing when the shell closed it (``2>&-``)."""
    if sys.stderr is not None:
        try:
            print(line, file=sys.stderr)
        except OSError:
            pass


def main(argv: Sequence[str] | None = None) -> int:
    """Run one ``ldpviz`` command line; the exit status (2: refused, 1: output failed, 130: Ctrl+C)."""
    try:
        return _main(argv)
    except KeyboardInterrupt:                          # also while a command's options and modules load
        _say("ldpviz: interrupted")
        if argv is None:                               # this process's own command line, not a call from Python
            _leave_without_waiting(130)
        return 130


def _leave_without_waiting(code: int) -> None:
    """End the process now when worker threads still run (``target``'s goal seeks): at exit Python joins them,
    so Ctrl+C took 11.5 s to stop ``target``, and a daemon thread torn down inside C++ code aborts the process
    instead. The threads hold nothing to save (results only, never a file), so the streams are flushed and the
    process leaves with ``os._exit``."""
    import threading
    if not any(t.is_alive() and not t.daemon for t in threading.enumerate() if t is not threading.current_thread()):
        return
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):
            pass
    os._exit(code)


def _main(argv: Sequence[str] | None) -> int:
    if sys.stdout is None:
        sys.stdout = _ClosedStdout()                   # type: ignore[assignment]
    parser = build_parser(lazy=True)
    argv = sys.argv[1:] if argv is None else argv
    command = _subcommands(parser).get(next((a for a in argv if not a.startswith("-")), ""))
    if command is not None:
        command.fill()                                 # its options, before negative values are joined to them
    try:
        args = parser.parse_args(join_signed_values(argv, cli_input.value_options(parser)))
    except OSError as err:                             # --help (or usage) could not be written
        return _output_failed(err)
    try:
        option_checks.check_no_empty_values(_subcommands(parser)[args.command], args)
        code = args.fn(args)
        sys.stdout.flush()                             # a closed pipe or full disk shows here, not at exit
        return code
    except LdpvizInputError as err:
        _say(f"ldpviz: error: {err}")
        return 2
    except OSError as err:                             # writing the output failed (disk full, I/O error), or a file
        if err.filename:
            _say(f"ldpviz: error: {err.filename!r}: {err.strerror or err}")
            return 1
        return _output_failed(err)


if __name__ == "__main__":
    sys.exit(main())
