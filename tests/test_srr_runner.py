"""SRR, OLH-H, PLDP and the tile baselines end to end: runner, CLI, metrics re-export."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ldpviz import experiment, metrics
from ldpviz.domain import Binned, Grid, Region
from ldpviz.mechanisms import create
from ldpviz.mechanisms.fo import grr_channel, hr_channel

ROOT = Path(__file__).resolve().parents[1]
MECHANISMS = ["srr", "olh-h", "pldp", "grr-tiles", "hr-tiles"]


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_runner_gives_finite_metrics_and_a_distribution(mechanism):
    """experiment.run on a small scenario: every metric finite, density a distribution (sums to 1)."""
    result = experiment.run(experiment.Scenario(dataset="normal", mechanism=mechanism, epsilon=2.0,
                                                grid_side=8, n_users=3000, seed=3, trials=2))
    assert np.all(np.isfinite(result.metrics.drop(columns="trial").to_numpy(dtype=float)))
    for est in result.estimates:
        assert est.density.shape == (8, 8)
        assert np.all(est.density >= 0)
        assert est.density.sum() == pytest.approx(1.0, abs=1e-9)


@pytest.mark.slow
@pytest.mark.parametrize("mechanism", ["srr", "olh-h", "pldp"])
def test_cli_run_json(mechanism):
    """`python -m ldpviz run --mechanism X --json` prints one JSON summary with finite L1 in [0, 2]."""
    out = subprocess.run([sys.executable, "-m", "ldpviz", "run", "--mechanism", mechanism, "--json",
                          "--region", "Downtown", "--grid", "8", "--users", "2000"],
                         cwd=ROOT, capture_output=True, text=True, timeout=120,
                         env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    summary = json.loads(out.stdout)
    assert summary["mechanism"] == mechanism
    assert 0.0 <= summary["l1"] <= 2.0


def test_knn_quality_importable_from_metrics():
    """The lead's re-export: ldpviz.metrics.knn_quality is the k-NN metric of ldpviz.knn."""
    from ldpviz.knn import knn_quality
    assert metrics.knn_quality is knn_quality
    counts = np.array([[5.0, 0.0], [0.0, 5.0]])
    assert metrics.knn_quality(counts, counts, k=3)["precision"] == pytest.approx(1.0)


@pytest.mark.parametrize("mechanism,channel", [("grr-tiles", grr_channel), ("hr-tiles", hr_channel)])
def test_tile_baselines_follow_their_oracle(mechanism, channel):
    """grr-tiles / hr-tiles: reports on D tiles follow the oracle's channel (chi-square p > 1e-3, seed 7),
    whose max ratio is e^eps; the estimate is unbiased enough to find the one occupied-heavy tile."""
    from scipy import stats
    grid = Grid(Region(0.0, 0.0, 1000.0), 4)
    mech = create(mechanism, grid, 1.5, domain="grid")
    d = grid.n_cells
    P = channel(d, 1.5)
    assert (P.max(axis=1) / P.min(axis=1)).max() <= np.exp(1.5) * (1 + 1e-9)
    rng = np.random.default_rng(7)
    n = 40_000
    reports = mech.perturb_positions(np.full(n, 5), d, rng)
    observed = np.bincount(reports, minlength=P.shape[0])
    assert stats.chisquare(observed, P[:, 5] * n).pvalue > 1e-3
    cells = np.where(rng.random(n) < 0.5, 5, rng.integers(0, d, n))
    rows, cols = np.divmod(cells, 4)
    unit = np.column_stack([(cols + 0.5) / 4, (rows + 0.5) / 4])
    est = mech.run(Binned(cells.astype(np.int64), unit, 0), rng)
    assert int(np.argmax(est.density)) == 5
