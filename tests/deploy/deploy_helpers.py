"""Shared helpers of the deploy tests: run client.js under node, and compare a client's reports with the Python
channel (issue 29: the same channel in every language)."""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from ldpviz.deploy import client as pyclient
from ldpviz.deploy import spec as specs

ROOT = Path(__file__).resolve().parents[2]
CLIENT_JS = ROOT / "ldpviz" / "deploy" / "client.js"
HARNESS = ROOT / "tests" / "deploy" / "deploy_node" / "reports.mjs"
NODE = shutil.which("node") or shutil.which("nodejs")

#: The G-tests' fixed significance level, and the power they must have against a 1% shift.
ALPHA = 1e-3
POWER = 0.8
SHIFT = 0.01


def need_node() -> str:
    """node's path; skip without it, or fail when LDPVIZ_REQUIRE_NODE=1 (CI installs Debian's nodejs)."""
    if NODE is None:
        if os.environ.get("LDPVIZ_REQUIRE_NODE") == "1":
            pytest.fail("LDPVIZ_REQUIRE_NODE=1 but node is not installed (apt-get install nodejs)")
        pytest.skip("node is not installed (CI installs Debian's nodejs)")
    return NODE


def node_reports(spec: dict, tmp: Path, inputs: list, repeats: int, seed: int | None, mode: str = "unit") -> list:
    """Run client.js in one node process: ``repeats`` reports per input; JSON-decoded (None for null)."""
    node = need_node()
    spec_path = tmp / "collection.json"
    specs.write_spec(spec, spec_path)
    job = tmp / "job.json"
    job.write_text(json.dumps({"client": str(CLIENT_JS), "spec": str(spec_path), "mode": mode, "inputs": inputs,
                               "repeats": repeats, "seed": seed}))
    out = subprocess.run([node, str(HARNESS), str(job)], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    return [json.loads(line) for line in out.stdout.splitlines()]


def python_reports(spec: dict, inputs: list, repeats: int, seed: int) -> list:
    client = pyclient.Client(spec, random.Random(seed).getrandbits)
    return [client.report_unit(u, v) for (u, v) in inputs for _ in range(repeats)]


def g_test(observed: np.ndarray, expected_p: np.ndarray, min_expected: float = 5.0) -> tuple[float, int]:
    """G-test p-value and degrees of freedom, bins with fewer than ``min_expected`` expected reports pooled."""
    n = observed.sum()
    e = expected_p * n
    small = e < min_expected
    obs = np.append(observed[~small], observed[small].sum())
    exp = np.append(e[~small], e[small].sum())
    keep = exp > 0
    assert obs[~keep].sum() == 0, "reports where the Python channel has probability 0"
    obs, exp = obs[keep], exp[keep]
    with np.errstate(divide="ignore", invalid="ignore"):
        g = 2.0 * np.sum(np.where(obs > 0, obs * np.log(obs / exp), 0.0))
    df = max(len(obs) - 1, 1)
    return float(stats.chi2.sf(g, df)), df


def focused_split(p: np.ndarray) -> np.ndarray:
    """The outputs that carry the signal: the likeliest ones, up to half the mass (at least one)."""
    order = np.argsort(-p, kind="stable")
    cum = np.cumsum(p[order])
    k = max(1, int(np.searchsorted(cum, 0.5)) + 1)
    high = np.zeros(p.size, bool)
    high[order[:k]] = True
    return high


def focused_power(p: np.ndarray, n: int) -> float:
    """Power of the two-bin (likeliest outputs vs the rest) G-test at ALPHA against a 1% shift: SHIFT of the report
    mass moved from the likeliest outputs to the others."""
    m = float(p[focused_split(p)].sum())
    lam = n * SHIFT ** 2 * (1.0 / m + 1.0 / (1.0 - m))
    return float(stats.ncx2.sf(stats.chi2.isf(ALPHA, 1), 1, lam))


def check_channel(ids: np.ndarray, p: np.ndarray, label: str, alpha: float = ALPHA) -> None:
    """The reports ``ids`` (indices into ``p``) follow ``p``: the two-bin focused test (with its power against a 1%
    shift checked at ALPHA) and the full pooled G-test, each at ``alpha``."""
    ids = np.asarray(ids, dtype=np.int64)
    n = len(ids)
    assert focused_power(p, n) >= POWER, f"{label}: {n} reports give too little power"
    ALPHA_HERE = alpha
    counts = np.bincount(ids, minlength=p.size)
    assert counts.size == p.size, f"{label}: a report outside the channel's outputs"
    high = focused_split(p)
    p2, _ = g_test(np.array([counts[high].sum(), counts[~high].sum()]), np.array([p[high].sum(), p[~high].sum()]))
    assert p2 > ALPHA_HERE, \
        f"{label}: likeliest-outputs share {counts[high].sum() / n:.4f} vs {p[high].sum():.4f} (p={p2:.2g})"
    pf, df = g_test(counts, p)
    assert pf > ALPHA_HERE, f"{label}: full G-test p = {pf:.2g} over {df} bins"
