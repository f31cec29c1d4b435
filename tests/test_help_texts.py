"""Help texts state the defaults the code uses (issue 22): a number or a default named in a parameter's or a
command option's help is the one the code runs with."""

from __future__ import annotations

import argparse
import re

import pytest

from ldpviz import mechanisms
from ldpviz.cli.commands import build_parser
from ldpviz.mechanisms.dam import square_wave
from ldpviz.mechanisms.grids import decompositions
from ldpviz.mechanisms.srr import pldp, staircase


def _params():
    for name in mechanisms.available():
        for p in mechanisms.get(name).params:
            yield name, p


@pytest.mark.parametrize("name,param", [pytest.param(n, p, id=f"{n}.{p.name}") for n, p in _params()])
def test_a_choice_called_default_is_the_default(name, param):
    """"'x' (default)" in a help text names the parameter's real default."""
    named = re.findall(r"'([^']+)' \(default\)", param.help)
    assert all(value == param.default for value in named), (name, param.name, named, param.default)


@pytest.mark.parametrize("mechanism,param,constant", [
    ("mdsw", "postprocess", f"{square_wave.FINE_BUCKETS:,}"),
    ("ug", "cells_per_side", f"{decompositions.MAX_GRID_CELLS:,}"),
    ("pldp", "projection_dim", f"{pldp.MAX_PROJECTION_ENTRIES:,}"),
    ("srr", "domain", f"{staircase.MAX_GRID_DOMAIN_SIZE}"),
    ("srr", "level", f"{staircase.MAX_DOMAIN_SIZE}"),
])
def test_numbers_in_help_come_from_the_code(mechanism, param, constant):
    help_text = next(p.help for p in mechanisms.get(mechanism).params if p.name == param)
    assert constant in help_text


def test_mdsw_help_no_longer_claims_1024_buckets_by_default():
    help_text = next(p.help for p in mechanisms.get("mdsw").params if p.name == "postprocess")
    assert "'ems-fine' (default) = SW-EMS at 256 buckets" in help_text.replace(f"{square_wave.FINE_BUCKETS:,}", "256")


#: "(default 10)", "(default 1,000,000;", "(default 2 GiB;" -- a number, optionally in GiB, then ) ; or :
_NUMERIC_DEFAULT = r"\(default ([\d,]+(?:\.\d+)?)( GiB)?[);:]"


def _options():
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for command, subparser in sub.choices.items():
        for action in subparser._actions:
            yield command, action


@pytest.mark.parametrize("command,action", [pytest.param(c, a, id=f"{c}.{a.dest}") for c, a in _options()
                                            if a.help and re.search(_NUMERIC_DEFAULT, a.help)])
def test_cli_numeric_defaults_match_the_help(command, action):
    """"(default 10)" in an option's help is argparse's default for that option (or what None resolves to,
    stated as such in the help)."""
    number, unit = re.search(_NUMERIC_DEFAULT, action.help).groups()
    stated = float(number.replace(",", "")) * (2 ** 30 if unit else 1)
    if action.default is None:
        pytest.skip(f"{command} --{action.dest}: default resolved in code")
    assert stated == float(action.default), (command, action.dest, stated, action.default)
