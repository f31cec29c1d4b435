"""What every ``ldpviz`` command shares: the user's data, checked outputs, progress and signed numbers.

* :func:`add_data_arguments` gives a command ``--dataset`` or ``--csv``/``--file``
  (the same option), ``--lat-column``, ``--lon-column`` (and for trips ``--person-column``,
  ``--trip-column``, ``--seq-column``, ``--time-column``), ``--max-bytes``,
  ``--region`` or ``--bbox`` (with ``--bbox-from``: where the box came from), with one set of
  rules and messages; :func:`load_data` is the one loader call behind them (points through
  :func:`ldpviz.data.datasets.load_file`, trips through
  :func:`ldpviz.data.trajectories.load_trajectory_file`).
* :func:`check_output_file` refuses an output path before the work starts.
* :class:`Heartbeat` keeps stderr alive during long commands; :class:`ProgressBar` counts the
  scenarios of ``sweep`` and the partitions of a partitioned ``run``.
* :func:`join_signed_values` keeps values such as ``-93.3,44.9,...`` and ``-inf``
  as values: argparse would read them as options.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any, Sequence

from ldpviz.cli import option_checks
from ldpviz.geo.domain import Region
from ldpviz.errors import LdpvizInputError, RegionTooLargeError, require
from ldpviz.geo.region_suggestion import FROM_SUGGESTION, SUGGESTED_DATA_USE
from ldpviz.cli.option_checks import (DEFAULT_REGION_EPSILON, PRIVATE_TILES, PUBLIC_TILES,  # noqa: F401 (the
                                      REGION_RULES)                                # rules, light; see there)

POINTS = "points"
TRAJECTORIES = "trajectories"
#: Default largest file: big point files are read in chunks, so the limit is about disk, not memory.
DEFAULT_MAX_BYTES = 2 * 2**30
#: Trip files are read at once (rows keep their order within a trip), so their limit is lower.
DEFAULT_MAX_TRIP_BYTES = 256 * 2**20
#: ``--bbox-from``: a box the user gives (provenance unknown to ldpviz) or one ldpviz suggested from the rows.
BBOX_TYPED = "typed"
BBOX_SOURCES = (BBOX_TYPED, FROM_SUGGESTION)


def add_data_arguments(p: argparse.ArgumentParser, *, kind: str = POINTS, default_dataset: str = "minneapolis-stops",
                       dataset_help: str = "bundled dataset name (see 'ldpviz datasets')") -> None:
    """``--dataset`` | ``--csv``/``--file``, the column overrides, ``--max-bytes`` and ``--region`` | ``--bbox``."""
    source = p.add_mutually_exclusive_group()
    source.add_argument("--dataset", default=default_dataset, help=dataset_help)
    what = ("points: CSV or Parquet with lat/lon columns" if kind == POINTS else
            "trips: CSV or Parquet with person, lat, lon (optional trip, and seq or time to order the points by) "
            "columns")
    source.add_argument("--csv", "--file", dest="csv", metavar="FILE",
                        help=f"your own file instead of --dataset ({what}; .gz is unpacked)")
    p.add_argument("--lat-column", help="latitude column of the file (auto-detected by default)")
    p.add_argument("--lon-column", help="longitude column of the file (auto-detected by default)")
    if kind == TRAJECTORIES:
        for role in ("person", "trip", "time"):
            p.add_argument(f"--{role}-column", help=f"{role} column of the file (auto-detected by default)")
        p.add_argument("--seq-column", help="column giving each point's place in its trip (seq, sequence, step, ...; "
                                            "auto-detected by default); without one the points are ordered by the "
                                            "time column, else kept in file order")
    default = DEFAULT_MAX_BYTES if kind == POINTS else DEFAULT_MAX_TRIP_BYTES
    p.add_argument("--max-bytes", type=int,            # None: not given (option_checks refuses it without a file)
                   help=f"largest file accepted, in bytes (default {default // 2**20:,} MiB, at most 1 TiB)")
    p.add_argument("--region", help="region preset of the dataset (see 'ldpviz datasets')")
    p.add_argument("--bbox", metavar="W,S,E,N",
                   help="region as W,S,E,N in degrees (W > E crosses 180): only the rows inside it take part (a file's "
                        "rows outside it are dropped and counted before framing); the grid covers the square around it")
    p.add_argument("--bbox-from", choices=BBOX_SOURCES, default=BBOX_TYPED,
                   help="where --bbox came from: 'typed' (default; ldpviz cannot tell, so the result says a box "
                        "read from the data is not covered) or 'suggestion' (the box ldpviz suggested from the rows: "
                        "the result says the region depends on the users' data; the suggestion prints this flag)")
    p.add_argument("--region-rule", choices=REGION_RULES,
                   help="region of a file without --bbox: 'private-tiles' (default) frames the map tiles many rows "
                        "report under --region-epsilon LDP, which adds to --epsilon (both stated); 'public-tiles' "
                        "frames every occupied public tile, unpaid and NOT private")
    p.add_argument("--region-epsilon", type=float,
                   help="LDP budget per row spent choosing the private-tile region (default "
                        f"{DEFAULT_REGION_EPSILON:g});"
                        " the guarantee states the total epsilon0 + epsilon")


def bbox_numbers(text: str) -> tuple[float, float, float, float]:
    """``W,S,E,N`` -> four floats, or a one-line error naming ``--bbox``."""
    try:
        w, s, e, n = (float(v) for v in str(text).split(","))
    except ValueError:
        raise LdpvizInputError(f"--bbox expects four numbers W,S,E,N (degrees), got {text!r}") from None
    return w, s, e, n


def bbox_data_use(args: argparse.Namespace) -> str:
    """How --bbox was read from the users' data: the suggestion's wording with ``--bbox-from suggestion``, else ''
    (a box the user gives: ldpviz cannot know where it came from, and the guarantee says so)."""
    source = getattr(args, "bbox_from", BBOX_TYPED) or BBOX_TYPED
    require(source == BBOX_TYPED or getattr(args, "bbox", None),
            f"--bbox-from {source} says where a --bbox came from; give the --bbox too")
    return SUGGESTED_DATA_USE if source == FROM_SUGGESTION else ""


def bbox_region(text: str, data_use: str = "") -> Region:
    """The region of --bbox: the box itself (rows outside it are out), on the grid of the square around it;
    ``data_use`` says how it was read from the rows (``--bbox-from suggestion``)."""
    from ldpviz.geo import region_choice
    try:
        return region_choice.stated_region(bbox_numbers(text), data_use=data_use)
    except LdpvizInputError as exc:
        raise LdpvizInputError(f"--bbox: {exc}") from None


@dataclass
class UserData:
    """What a command works on: a dataset name (or a loaded file's name), the loaded file, and the region."""

    name: str
    data: Any            #: a datasets.Dataset or trajectories.Trajectories the user gave, else None
    region: Region | str | None

    def rows(self) -> dict[str, Any] | None:
        """The file's row counts for ``--json`` (read, kept, dropped and changed by reason), or None."""
        report = getattr(self.data, "report", None)
        if report is None:
            return None
        out: dict[str, Any] = {"read": int(report.rows_read), "kept": int(report.rows_kept),
                               "dropped": {k: int(v) for k, v in report.dropped.items() if v}}
        if getattr(report, "changed", None):
            out["changed"] = {k: int(v) for k, v in report.changed.items() if v}
        if getattr(report, "checks", None):
            out["checks"] = {k: int(v) for k, v in report.checks.items() if v}
        if getattr(report, "columns", None):
            out["columns"] = dict(report.columns)
        if hasattr(report, "order_text"):      # trips: the column their points were ordered by (None: file order)
            out["order"] = {"column": report.order or None, "text": report.order_text()}
        return out


def load_data(args: argparse.Namespace, kind: str = POINTS) -> UserData:
    """The one loader behind :func:`add_data_arguments`; prints the file's row counts to stderr."""
    from ldpviz.mechanisms.fo.private_region import upload_frame
    require(not (args.bbox and args.region), "give either --region or --bbox, not both")
    option_checks.check_data_options(args)
    use = bbox_data_use(args)
    region: Region | str | None = bbox_region(args.bbox, use) if args.bbox else args.region
    if not args.csv:
        return UserData(args.dataset, None, region)
    require(args.region is None, "--region names a preset of a bundled dataset; with a file, give --bbox")
    max_bytes, rule, epsilon0 = option_checks.file_limits(args, DEFAULT_MAX_BYTES if kind == POINTS
                                                          else DEFAULT_MAX_TRIP_BYTES)
    if kind == POINTS:
        from ldpviz.data import datasets
        try:
            data = datasets.load_file(args.csv, lat_column=args.lat_column, lon_column=args.lon_column,
                                      bbox=bbox_numbers(args.bbox) if args.bbox else None, max_bytes=max_bytes,
                                      frame=upload_frame(rule, epsilon0), bbox_data_use=use)
        except RegionTooLargeError as exc:
            hint = f" To study those rows, add {exc.suggestion.as_option()}" if exc.suggestion is not None else ""
            raise LdpvizInputError(f"{exc}{hint}") from None
    else:
        from ldpviz.data import trajectories
        try:   # --bbox drops (and counts) the rows outside it before the file is framed, as for points
            data = trajectories.load_trajectory_file(args.csv, lat_column=args.lat_column, lon_column=args.lon_column,
                                                     person_column=args.person_column, trip_column=args.trip_column,
                                                     time_column=args.time_column, max_bytes=max_bytes,
                                                     seq_column=args.seq_column,
                                                     bbox=bbox_numbers(args.bbox) if args.bbox else None,
                                                     frame=upload_frame(rule, epsilon0), bbox_data_use=use)
        except RegionTooLargeError as exc:
            hint = f" To study those rows, add {exc.suggestion.as_option()}" if exc.suggestion is not None else ""
            raise LdpvizInputError(f"{exc}{hint}") from None
        region = data.default_region          # the stated bbox, or the rule for uploaded files
    print(data.report.summary(), file=sys.stderr)
    if not args.bbox:
        print(f"Region ({rule}): {data.default_region.data_use}.", file=sys.stderr)
    elif use:
        print(f"Region (--bbox-from {args.bbox_from}): {use}.", file=sys.stderr)
    return UserData(data.name, data, region)


def check_output_file(path: str | None, option: str = "--out") -> None:
    """Refuse an output file that cannot be written, before any work: a directory, or a missing or
    read-only folder. (A full disk shows only when writing; main() reports that in one line too.)"""
    if path is None:
        return
    require(str(path).strip() != "", f"{option} needs a file name")
    require(not os.path.isdir(path), f"{option}: {path!r} is a directory; give a file name inside it")
    folder = os.path.dirname(os.path.abspath(path))
    require(os.path.isdir(folder), f"{option}: cannot write {path!r}: the folder {folder!r} does not exist")
    if os.path.exists(path):
        require(os.access(path, os.W_OK), f"{option}: cannot write {path!r}: permission denied")
    else:
        require(os.access(folder, os.W_OK | os.X_OK), f"{option}: cannot write {path!r}: the folder is not writable")


def write_text(path: str, text: str, option: str = "--out") -> None:
    """Write ``text`` to ``path``; a failure (disk full, ...) is one line naming ``option``."""
    try:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
    except OSError as err:
        raise LdpvizInputError(f"{option}: cannot write {path!r}: {err.strerror or err}") from None


def require_number(value: Any, option: str, *, minimum: float | None = None, above: float | None = None) -> None:
    """A finite number >= ``minimum`` (or > ``above``), else one line naming ``option``."""
    if value is None:
        return
    ok = isinstance(value, (int, float)) and math.isfinite(value)
    ok = ok and (minimum is None or value >= minimum) and (above is None or value > above)
    bound = f">= {minimum:g}" if minimum is not None else (f"> {above:g}" if above is not None else "finite")
    require(ok, f"{option} must be a number {bound}, got {value!r}")


#: Seconds a command runs before :class:`Heartbeat` starts writing (quick commands stay quiet).
HEARTBEAT_DELAY = 1.0


class Heartbeat:
    """``label: 12 s`` on stderr, refreshed every ``interval`` seconds once a step has run
    :data:`HEARTBEAT_DELAY` seconds, as ``sweep``'s progress bar does for scenarios.

    ``step(text)`` changes the label (e.g. ``target: dam (2/3)``). Written on one line with ``\\r`` and
    ended with a newline (``done in ...`` on success), so it never glues itself to later output.
    """

    def __init__(self, label: str, interval: float = 1.0, stream: Any = None) -> None:
        self.label = label
        self.interval = interval
        self.stream = stream if stream is not None else sys.stderr
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._t0 = time.perf_counter()
        self._written = False
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _write(self, end: str = "", text: str | None = None) -> None:
        with self._lock:
            try:
                shown = text or f"{self.label}: {time.perf_counter() - self._t0:,.0f} s"
                print(f"\r{shown}", end=end, file=self.stream, flush=True)
                self._written = True
            except (OSError, ValueError):
                self._stop.set()

    def _run(self) -> None:
        if self._stop.wait(HEARTBEAT_DELAY):
            return
        while not self._stop.is_set():
            self._write()
            self._stop.wait(self.interval)

    def step(self, label: str) -> None:
        self.label = label
        if self._written or time.perf_counter() - self._t0 >= HEARTBEAT_DELAY:
            self._write()

    def __enter__(self) -> "Heartbeat":
        self._thread.start()
        return self

    def __exit__(self, exc_type: Any, *exc: Any) -> None:
        self._stop.set()
        self._thread.join()
        if not self._written:
            return
        if exc_type is None:
            self._write("\n", f"{self.label}: done in {time.perf_counter() - self._t0:,.1f} s")
        else:
            self._write("\n", f"{self.label}: stopped after {time.perf_counter() - self._t0:,.1f} s")


class ProgressBar:
    """``[#########.....................] 3/10 scenarios`` on stderr, drawn over itself with ``\\r``, of every
    command that counts its work (``sweep``: scenarios; ``run`` in partitions: partitions). Called as the compute
    core's ``progress(done, total)``; the last item ends the line. :meth:`end` ends a line still open (an error or
    Ctrl+C part way), so what follows starts on its own line."""

    WIDTH = 30

    def __init__(self, unit: str) -> None:
        self.unit = unit
        self.open = False          # drawn and not yet ended

    def __call__(self, done: int, total: int) -> None:
        filled = int(self.WIDTH * done / total)
        print(f"\r[{'#' * filled}{'.' * (self.WIDTH - filled)}] {done}/{total} {self.unit}", end="",
              file=sys.stderr, flush=True)
        self.open = done < total
        if done == total:
            print(file=sys.stderr)

    def end(self) -> None:
        if self.open:
            print(file=sys.stderr)
            self.open = False


#: A value that starts like a negative number: argparse reads ``-inf`` or ``-93.3,44.9,...`` as an option.
_NEGATIVE_VALUE = re.compile(r"^-(\d|\.\d|inf(inity)?\b|nan\b)", re.IGNORECASE)


def value_options(parser: argparse.ArgumentParser) -> set[str]:
    """Every option string, of the parser and its subcommands, that takes a value."""
    out: set[str] = set()
    stack = [parser]
    while stack:
        current = stack.pop()
        for action in current._actions:
            if action.option_strings and action.nargs != 0:
                out.update(s for s in action.option_strings if s.startswith("--"))
            choices = getattr(action, "choices", None)
            if isinstance(choices, dict):
                stack.extend(p for p in choices.values() if isinstance(p, argparse.ArgumentParser))
    return out


def join_signed_values(argv: Sequence[str], options: Sequence[str] | set[str] = ("--bbox",)) -> list[str]:
    """``--bbox -93.33,44.89,...`` -> ``--bbox=-93.33,44.89,...`` (and ``--epsilon -inf`` -> ``--epsilon=-inf``).

    argparse treats a token starting with '-' that is not a plain negative number
    as an option, so a west longitude first in a bbox, or ``-inf``, failed with
    "expected one argument". Only a value option followed by a token that starts
    like a number is joined; the value is then checked as any other.
    """
    wanted = set(options)
    out: list[str] = []
    args = list(argv)
    i = 0
    while i < len(args):
        token = args[i]
        if token in wanted and i + 1 < len(args) and _NEGATIVE_VALUE.match(args[i + 1]):
            out.append(f"{token}={args[i + 1]}")
            i += 2
            continue
        out.append(token)
        i += 1
    return out
