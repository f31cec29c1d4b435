"""The registry imports one mechanism's module when one is asked for, and still lists every mechanism in the
same order; the light quantiles (scipy.special) equal scipy.stats' bit for bit (issue 28: a command's start-up)."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
from scipy import stats

from ldpviz import mechanisms
from ldpviz.decide import one_collection as oc
from ldpviz.experiment import mean_ci


def _fresh(code: str) -> dict:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_source_scan_finds_every_registered_mechanism_in_its_module():
    """The names read from the sources (no import) are exactly the registry's, each in the module that
    registers it."""
    mechanisms.available()
    assert mechanisms._where() == {name: cls.__module__ for name, cls in mechanisms._REGISTRY.items()}


def test_one_mechanism_imports_its_module_only_and_the_order_is_unchanged():
    """A fresh process asking for GRR imports no other family (no DAM kernels, no grids, no SRR); the list of
    every mechanism after some were asked for first is the list a fresh process gives."""
    code = ("import sys, json; from ldpviz import mechanisms; first = {args}\n"
            "for n in first: mechanisms.get(n)\n"
            "loaded = sorted(m for m in sys.modules if m.startswith('ldpviz.mechanisms.'))\n"
            "print(json.dumps({{'loaded': loaded, 'order': mechanisms.available()}}))")
    alone = _fresh(code.format(args="['grr']"))
    assert "ldpviz.mechanisms.fo.oracles" in alone["loaded"]
    assert not any(m.startswith(("ldpviz.mechanisms.dam", "ldpviz.mechanisms.grids", "ldpviz.mechanisms.srr",
                                 "ldpviz.mechanisms.heatmaps")) for m in alone["loaded"]), alone["loaded"]
    plain = _fresh(code.format(args="[]"))
    for first in (["srr", "grr", "dam"], ["hr-tiles", "planar-laplace", "ug"]):
        assert _fresh(code.format(args=repr(first)))["order"] == plain["order"] == alone["order"]


def test_the_walk_order_builds_no_ast(monkeypatch):
    """Listing mechanisms after some were asked for reads the imports from bytecode, never ``ast.parse``: the
    dashboard's pages run on threads and CPython 3.11 cannot build ASTs on two at once (tests/test_launch.py).
    The order is the order of the modules' imports: a module comes after every ldpviz module it imports."""
    import ast
    import pkgutil

    walk = [m.name for m in sorted(pkgutil.walk_packages(mechanisms.__path__, prefix="ldpviz.mechanisms."),
                                   key=lambda m: m.name)]
    parsed, real = [], ast.parse
    monkeypatch.setattr(ast, "parse", lambda *args, **kwargs: parsed.append(args[1:2]) or real(*args, **kwargs))
    order = mechanisms._import_order(walk)
    monkeypatch.undo()
    assert parsed == []
    assert sorted(order) == sorted(set(order)) and set(walk) <= set(order)
    rank = {module: i for i, module in enumerate(order)}
    assert rank["ldpviz.mechanisms.estimation"] < rank["ldpviz.mechanisms.fo.oracles"]
    assert rank["ldpviz.mechanisms.dam.kernels"] < rank["ldpviz.mechanisms.dam.disk_area"]

def test_light_quantiles_equal_scipy_stats():
    """k_factor, the miss chance and the mean's t interval read scipy.special; they equal what scipy.stats'
    norm, t and nct give, bit for bit."""
    for n in (3, 10, 20, 50):
        z = stats.norm.ppf(0.95)
        assert oc.k_factor(n) == float(stats.nct.ppf(0.95, df=n - 1, nc=z * np.sqrt(n)) / np.sqrt(n))
    v = np.random.default_rng(1).normal(5.0, 1.0, 10)
    r = oc.read(v, 8.0, True)
    half = float(stats.t.ppf(0.975, 9) * np.std(v, ddof=1) / np.sqrt(10))
    assert (r.ci_low, r.ci_high) == (float(np.mean(v)) - half, float(np.mean(v)) + half)
    assert r.miss_chance == float(stats.norm.sf((8.0 - np.mean(v)) / np.std(v, ddof=1)))
    mean, lo, hi = mean_ci(v, 0.9)
    half = float(stats.t.ppf(0.95, 9)) * float(v.std(ddof=1)) / np.sqrt(10)
    assert (lo, hi) == (mean - half, mean + half)
