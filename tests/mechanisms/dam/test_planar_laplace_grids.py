"""Planar Laplace at a fixed epsilon per km on a coarse and a fine grid (issue 28, docs/em-stopping.md).

The goal "W2 at d = 16 within 1.5x of d = 64" is judged on a common grid: W2 read on its own grid charges a
coarse estimate a whole 1.25 km cell side for every misplaced mass, so even the d = 64 estimate summed into
the d = 16 cells reads ~1.7x its own-grid W2 (bench/em_stopping.py). Two properties, one seeded trial each:

* on the d = 64 grid (the d = 16 estimate spread evenly over each cell's 4 x 4 sub-cells), W2 at d = 16 is
  within 1.5x of W2 at d = 64;
* on the d = 16 grid, the d = 16 estimate is within 10% of the d = 64 estimate summed into the same cells (the
  best the finer reports do there). EM on the cell-level server model (no sub-cells) misses this bound
  (1.18x on this seed), so it fails if the sub-cell model of planar_laplace.SUBCELL_EPSILON is lost.
"""

from __future__ import annotations

import numpy as np
import pytest

from ldpviz import experiment, mechanisms, metrics
from ldpviz.data import datasets
from ldpviz.experiment import Scenario

COARSE, FINE = 16, 64


@pytest.fixture(scope="module")
def estimates():
    data = datasets.load("minneapolis-stops")
    base = Scenario(dataset="minneapolis-stops", mechanism="planar-laplace", epsilon=1.0, seed=0, trials=1)
    out = {}
    for d in (COARSE, FINE):
        grid, users, _ = experiment.prepare_users(base.with_(grid_side=d), data)
        mech = mechanisms.create("planar-laplace", grid, 1.0)
        est = mech.run_trials(users, [np.random.default_rng([0, 0])]).estimates[0]
        out[d] = (grid, grid.histogram(users.cells) / len(users.cells), est.density)
    return out


def test_coarse_grid_within_1_5x_of_fine_on_a_common_grid(estimates):
    k = FINE // COARSE
    g_fine, truth_fine, est_fine = estimates[FINE]
    _, _, est_coarse = estimates[COARSE]
    spread = np.kron(est_coarse, np.ones((k, k))) / (k * k)
    w_fine = metrics.w2(truth_fine, est_fine, cell_m=g_fine.cell_m)
    w_coarse = metrics.w2(truth_fine, spread, cell_m=g_fine.cell_m)
    assert w_coarse <= 1.5 * w_fine, (w_coarse, w_fine)


def test_coarse_estimate_as_good_as_the_fine_one_on_the_coarse_grid(estimates):
    k = FINE // COARSE
    g_coarse, truth_coarse, est_coarse = estimates[COARSE]
    _, _, est_fine = estimates[FINE]
    summed = est_fine.reshape(COARSE, k, COARSE, k).sum(axis=(1, 3))
    w_coarse = metrics.w2(truth_coarse, est_coarse, cell_m=g_coarse.cell_m)
    w_summed = metrics.w2(truth_coarse, summed, cell_m=g_coarse.cell_m)
    assert w_coarse <= 1.1 * w_summed, (w_coarse, w_summed)
