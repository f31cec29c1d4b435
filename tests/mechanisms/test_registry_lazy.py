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


def test_the_table_is_exactly_what_the_package_registers():
    """Importing every module of the package registers exactly the names of mechanisms.MECHANISMS, each the
    class the table names in the module it names (a mechanism added without its table line fails here)."""
    import importlib
    import pkgutil

    for module in pkgutil.walk_packages(mechanisms.__path__, prefix="ldpviz.mechanisms."):
        importlib.import_module(module.name)
    built_in = {name: cls for name, cls in mechanisms._REGISTRY.items() if cls.__module__.startswith("ldpviz.")}
    assert [name for name, _, _ in mechanisms.MECHANISMS] == mechanisms.available()[:len(mechanisms.MECHANISMS)]
    assert {name: getattr(importlib.import_module(module), cls) for name, module, cls in mechanisms.MECHANISMS} \
        == built_in


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


def test_listing_the_mechanisms_builds_no_ast(monkeypatch):
    """Listing mechanisms reads the table, never ``ast.parse``: the dashboard's pages run on threads and
    CPython 3.11 cannot build ASTs on two at once (tests/app/test_launch.py)."""
    import ast

    parsed, real = [], ast.parse
    monkeypatch.setattr(ast, "parse", lambda *args, **kwargs: parsed.append(args[1:2]) or real(*args, **kwargs))
    names = mechanisms.available()
    assert parsed == [] and names[:2] == ["exact", "grr"] and len(names) == len(set(names))


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


def test_em_start_map_test_reads_scipy_special_and_equals_scipy_stats():
    """Every EM estimate tests its reports against the start (estimation.reports_fit_start): its chi-square tail and
    normal quantile are scipy.stats' own functions from scipy.special (importing scipy.stats cost a fresh process
    about a second of each DAM run, issue 38.4), so a DAM estimate in a fresh process imports no scipy.stats, and
    the two functions equal scipy.stats' bit for bit."""
    code = ("import sys, json, numpy as np\nfrom ldpviz import mechanisms\nfrom ldpviz.geo.domain import Grid, Region\n"
            "m = mechanisms.create('dam', Grid(Region(-93.2, 45.0, 20000.0), 16), 1.0)\n"
            "counts = np.random.default_rng(0).multinomial(5000, np.full(m.chan.out_side ** 2, 1.0)"
            " / m.chan.out_side ** 2)\n"
            "from ldpviz.mechanisms.fo.oracles._common import ReportHistogram\n"
            "m.estimate(ReportHistogram(counts, 5000))\n"
            "print(json.dumps({'stats': 'scipy.stats' in sys.modules}))")
    assert _fresh(code) == {"stats": False}
    from scipy import special
    rng = np.random.default_rng(4)
    df, x = rng.uniform(0.1, 5e5, 2000), rng.uniform(0.0, 1.0, 2000)
    x *= 2.0 * df
    np.testing.assert_array_equal(special.chdtrc(df, x), stats.chi2.sf(x, df))
    p = stats.chi2.sf(x, df)
    p = p[p > 0]
    np.testing.assert_array_equal(-special.ndtri(p), stats.norm.isf(p))
