"""Options that cannot apply are refused, and values out of range too, before any work (issue 30.3).

Every command takes its data the same way (:func:`ldpviz.cli.data_options.add_data_arguments`); some of those
options only act on a file given with ``--csv``/``--file``: the column names, ``--max-bytes``, and the choice of
the region of a file without ``--bbox`` (``--region-rule``, ``--region-epsilon``). Given where they cannot act
(a bundled dataset, a stated box, a partitioned run) they used to be accepted and ignored, and
``--region-epsilon -1`` showed as 0 in the JSON. They are refused in one line that says why, as ``--region`` with
a file already was: a refusal costs one retry, while a warning on stderr is lost in scripts and the JSON would
have to carry every ignored option of every command. Their defaults are therefore ``None`` (not given) and are
filled in by :func:`file_limits`.
"""

from __future__ import annotations

import argparse

from typing import Any, Callable, Sequence

from ldpviz.errors import LdpvizInputError, require
from ldpviz.limits import MAX_TRIALS
from ldpviz.mechanisms.base import validate_epsilon

# The region rules' names and default budget, as ldpviz.mechanisms.fo.private_region defines them (a test pins
# them equal): importing that module loads scipy.stats and the frequency oracles, which a command's --help or
# refusal should not wait for; its upload_frame is imported where a file is read.
PRIVATE_TILES = "private-tiles"
PUBLIC_TILES = "public-tiles"
REGION_RULES = (PRIVATE_TILES, PUBLIC_TILES)
DEFAULT_REGION_EPSILON = 0.5

#: Largest ``--max-bytes``: 1 TiB. The limit guards the disk and the time a read takes (big point files are read
#: in chunks); a file beyond a terabyte is not something to wait for on one machine.
MAX_FILE_BYTES = 2**40
FILE_ONLY = "acts only on a file given with --csv/--file"


def check_data_options(args: argparse.Namespace, *, partitioned: bool = False) -> None:
    """Refuse a data option that cannot act here, or a value out of its range (one line naming the option)."""
    if args.max_bytes is not None:
        value = args.max_bytes
        require(isinstance(value, int) and 1 <= value <= MAX_FILE_BYTES,
                f"--max-bytes must be a whole number of bytes from 1 to {MAX_FILE_BYTES:,} (1 TiB), got {value!r}")
    if args.region_epsilon is not None:
        try:
            validate_epsilon(args.region_epsilon)
        except LdpvizInputError as exc:
            raise LdpvizInputError(f"--region-epsilon: {exc}") from None
    given = [f"--{name.replace('_', '-')}" for name in ("lat_column", "lon_column", "person_column", "trip_column",
                                                        "seq_column", "time_column")
             if getattr(args, name, None) is not None]
    if not args.csv:
        given += [o for o, v in (("--max-bytes", args.max_bytes), ("--region-rule", args.region_rule),
                                 ("--region-epsilon", args.region_epsilon)) if v is not None]
        require(not given, f"{given[0]} {FILE_ONLY}; with --dataset {args.dataset} it would do nothing"
                if given else "")
        return
    if partitioned:
        unused = [o for o, v in (("--max-bytes", args.max_bytes), ("--region-rule", args.region_rule),
                                 ("--region-epsilon", args.region_epsilon)) if v is not None]
        require(not unused, f"{unused[0]} does nothing in a partitioned run (Parquet read in partitions, the "
                            "region fixed by --bbox); leave it out" if unused else "")
        return
    if args.bbox:
        unused = [o for o, v in (("--region-rule", args.region_rule), ("--region-epsilon", args.region_epsilon))
                  if v is not None]
        require(not unused, f"{unused[0]} chooses the region of a file without --bbox; with --bbox the region is the "
                            "box, so it would do nothing" if unused else "")
    require(args.region_epsilon is None or (args.region_rule or PRIVATE_TILES) == PRIVATE_TILES,
            f"--region-epsilon is the budget of the private-tiles rule; --region-rule {PUBLIC_TILES} spends none, "
            "so it would do nothing")


def file_limits(args: argparse.Namespace, default_max_bytes: int) -> tuple[int, str, float]:
    """``(max_bytes, region_rule, region_epsilon)`` with the defaults filled in for options not given."""
    return (default_max_bytes if args.max_bytes is None else int(args.max_bytes),
            args.region_rule or PRIVATE_TILES,
            DEFAULT_REGION_EPSILON if args.region_epsilon is None else float(args.region_epsilon))


def check_no_empty_values(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Refuse an option given an empty value (``--bbox ''``, ``--csv ''``, ``--address ''``, an empty
    ``--param``): for most options empty read as "not given" and the bundled data or every interface was used
    without a word. Every value option of the command is checked, repeatable ones item by item; an empty value
    equal to the option's own default (e.g. ``--repeats-basis ''``) is that default."""
    for action in parser._actions:
        if not action.option_strings or action.nargs == 0:
            continue
        value = getattr(args, action.dest, None)
        items = value if isinstance(value, list) else [value]
        if any(isinstance(item, str) and not item.strip() for item in items) and value != action.default:
            raise LdpvizInputError(f"{action.option_strings[0]} is empty; give a value or leave the option out "
                                   "(an empty value never stands for the default)")


def seed(text: str) -> int:
    """``--seed`` of every command (an argparse type): a whole number >= 0, as numpy's generators take it; -1
    used to reach numpy as a traceback in ``od``."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number >= 0, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be a whole number >= 0 (random generators take no negative seed), "
                                         f"got {text!r}")
    return value


def trials(minimum: int = 1, why: str = "") -> Callable[[str], int]:
    """``--trials`` of every command (an argparse type): a whole number from ``minimum`` to
    :data:`ldpviz.limits.MAX_TRIALS`, the one cap; ``why`` says why the minimum is what it is."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or not minimum <= value <= MAX_TRIALS:
            raise argparse.ArgumentTypeError(f"must be a whole number from {minimum} to {MAX_TRIALS}"
                                             f"{f' ({why})' if why else ''}, got {text!r}")
        return value
    parse.__name__ = "trials"        # argparse names the type in its own messages
    return parse


def number(text: str) -> Any:
    """``text`` as a whole number, else a number, else the text itself (a ``--param`` or ``--vary`` value)."""
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text


def params(pairs: Sequence[str], numbers: bool = True) -> dict[str, Any]:
    """``--param KEY=VALUE`` of every command, as a dict: key and value stripped, the value read as a number where it
    is one (:func:`number`). ``numbers=False`` keeps every value as text, as ``report`` reads them (the mechanism's
    declared parameter types read them later)."""
    out: dict[str, Any] = {}
    for pair in pairs:
        if "=" not in pair:
            raise LdpvizInputError(f"--param expects key=value, got {pair!r}")
        key, value = pair.split("=", 1)
        out[key.strip()] = number(value.strip()) if numbers else value.strip()
    return out


#: sweep's --vary names and the options they replace in every scenario.
_VARIED_OPTION = {"epsilon": "--epsilon", "grid_side": "--grid", "n_users": "--users", "seed": "--seed",
                  "trials": "--trials", "mechanism": "--mechanism"}


def check_vary_overrides(args: argparse.Namespace, vary: dict, defaults: dict, params: dict) -> None:
    """Refuse an option that ``--vary`` replaces in every scenario (``--epsilon 3 --vary epsilon=1,2`` ran 1 and 2
    and dropped the 3 without a word): given away from its default, or a ``--param`` of a varied name."""
    for name in vary:
        option = _VARIED_OPTION.get(name)
        if option is not None:
            dest = option[2:]
            require(getattr(args, dest) == defaults.get(dest),
                    f"{option} {getattr(args, dest)} would do nothing: --vary {dest} sets it in every scenario")
        else:
            require(name not in params, f"--param {name}={params.get(name)} would do nothing: --vary {name} sets it "
                                        "in every scenario")
