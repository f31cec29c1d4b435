"""SRR, OLH-H, PLDP and the tile baselines end to end: runner, CLI, metrics re-export."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ldpviz import experiment, metrics
from ldpviz.geo.domain import Binned, Grid, Region
from ldpviz.mechanisms import create, get
from ldpviz.mechanisms.fo.oracles import grr_channel
from ldpviz.mechanisms.fo.hadamard import hadamard_channel, hadamard_code

ROOT = Path(__file__).resolve().parents[3]
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
    """The lead's re-export: ldpviz.metrics.knn_quality is the k-NN metric of ldpviz.metrics.knn."""
    from ldpviz.metrics.knn import knn_quality
    assert metrics.knn_quality is knn_quality
    counts = np.array([[5.0, 0.0], [0.0, 5.0]])
    assert metrics.knn_quality(counts, counts, k=3)["precision"] == pytest.approx(1.0)


def _hr_auto_channel(size: int, epsilon: float) -> np.ndarray:
    return hadamard_channel(hadamard_code(size, epsilon))


@pytest.mark.parametrize("mechanism,channel", [("grr-tiles", grr_channel), ("hr-tiles", _hr_auto_channel)])
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


@pytest.mark.parametrize("mechanism", ["srr", "grr-tiles", "hr-tiles"])
def test_public_domain_channel_over_cells_is_ldp_and_followed(mechanism):
    """With the public grid domain the client half is the phone's: its channel over the grid's cells has
    columns summing to 1 and max ratio <= e^eps, and reports drawn by perturb() for users in one cell follow
    that column (chi-square p > 1e-3, seed 11)."""
    from scipy import stats
    grid = Grid(Region(0.0, 0.0, 1000.0), 4)
    for eps in (0.5, 2.0):
        P = create(mechanism, grid, eps).channel()
        np.testing.assert_allclose(P.sum(axis=0), 1.0, atol=1e-12)
        assert (P.max(axis=1) / P.min(axis=1)).max() <= np.exp(eps) * (1 + 1e-9)
    mech = create(mechanism, grid, 1.2)
    assert mech.has_client and mech.has_channel
    P = mech.channel()
    n, x = 30_000, 6
    rows, cols = divmod(x, 4)
    users = Binned(np.full(n, x, dtype=np.int64), np.tile([(cols + 0.5) / 4, (rows + 0.5) / 4], (n, 1)), 0)
    out = mech.perturb(users, np.random.default_rng(11))
    reported = out.positions if mechanism == "srr" else out.reports
    domain_cells = out.plan.domain.cells if mechanism == "srr" else out.domain.cells
    labels = domain_cells[reported] if P.shape[0] == grid.n_cells else reported   # locations -> their cells
    observed = np.bincount(labels, minlength=P.shape[0])
    assert stats.chisquare(observed, P[:, x] * n).pvalue > 1e-3


def test_occupied_domain_instances_have_no_client_half():
    """domain='occupied' is built from the users' true tiles: that instance has no client half or channel."""
    grid = Grid(Region(0.0, 0.0, 1000.0), 4)
    for name in ("srr", "grr-tiles", "hr-tiles", "olh-h"):
        mech = create(name, grid, 1.0, domain="occupied")
        assert not mech.has_client and not mech.has_channel
        assert create(name, grid, 1.0).has_client


@pytest.mark.parametrize("mechanism", ["srr", "olh-h", "pldp", "grr-tiles", "hr-tiles"])
def test_run_is_perturb_then_estimate(mechanism):
    """The halves compose to the protocol: on the per-user path run() equals estimate(perturb()) for the same
    seed, and on every path (auto may draw the aggregate) run() equals estimate(collect())."""
    grid = Grid(Region(0.0, 0.0, 1000.0), 8)
    rng = np.random.default_rng(3)
    cells = rng.integers(0, 64, 2_000)
    rows, cols = np.divmod(cells, 8)
    users = Binned(cells, np.column_stack([(cols + 0.5) / 8, (rows + 0.5) / 8]), 0)
    has_paths = any(p.name == "path" for p in get(mechanism).params)
    mech = create(mechanism, grid, 1.0, **({"path": "per-user"} if has_paths else {}))
    whole = mech.run(users, np.random.default_rng(5))
    halves = mech.estimate(mech.perturb(users, np.random.default_rng(5)))
    np.testing.assert_array_equal(whole.density, halves.density)
    for path in ("auto", "aggregate") if has_paths else ():
        mech = create(mechanism, grid, 1.0, path=path)
        whole = mech.run(users, np.random.default_rng(5))
        np.testing.assert_array_equal(whole.density, mech.estimate(mech.collect(users,
                                                                                np.random.default_rng(5))).density)
