"""General-privacy Hadamard response (Acharya, Sun, Zhang AISTATS'19 Sec. 5): ldpviz.mechanisms.fo.hadamard."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from ldpviz import mechanisms
from ldpviz.geo.domain import Binned, Grid, Region
from ldpviz.mechanisms.fo import oracles as fo
from ldpviz.mechanisms.fo.hadamard import (hadamard_aggregate_histogram, hadamard_channel, hadamard_code,
                                        hadamard_estimate_counts, hadamard_histogram, hadamard_perturb,
                                        hadamard_variance)


def _max_ratio(P: np.ndarray) -> float:
    return float((P.max(axis=1) / P.min(axis=1)).max())


@pytest.mark.parametrize("variant", ["general", "high-privacy", "auto"])
@pytest.mark.parametrize("eps", [0.3, 1.0, 2.0, 3.0, 5.0])
@pytest.mark.parametrize("D", [1, 2, 7, 100, 300])
def test_channel_meets_epsilon_exactly(D, eps, variant):
    """Every column is a distribution and the largest ratio between two inputs is e^eps (to 1e-12)."""
    P = hadamard_channel(hadamard_code(D, eps, variant))
    np.testing.assert_allclose(P.sum(axis=0), 1.0, atol=1e-12)
    assert _max_ratio(P) <= math.exp(eps) + 1e-12
    if D > 1:
        assert _max_ratio(P) == pytest.approx(math.exp(eps), rel=1e-12)


@pytest.mark.parametrize("D,eps,B,b", [(100, 0.5, 1, 128), (100, 1.0, 2, 64), (100, 3.0, 16, 8),
                                       (100, 5.0, 128, 2), (2634, 5.0, 128, 32), (3, 5.0, 4, 2)])
def test_blocks_follow_the_paper(D, eps, B, b):
    """B = 2^floor(log2 min(e^eps, 2D)), b = 2^ceil(log2(D / B + 1)) (Acharya et al. Sec. 5)."""
    code = hadamard_code(D, eps, "general")
    assert (code.blocks, code.block_size) == (B, b)
    assert code.blocks * (code.block_size - 1) >= D


def test_high_privacy_variant_is_the_one_block_code():
    """variant='high-privacy' is exactly the tool's original HR (fo.hr_channel)."""
    for D, eps in [(9, 1.0), (100, 3.0)]:
        np.testing.assert_allclose(hadamard_channel(hadamard_code(D, eps, "high-privacy")),
                                   fo.hr_channel(D, eps), rtol=1e-12)


def test_auto_picks_the_smaller_variance():
    """'auto' keeps one block at eps = 1 (D = 100: the general code costs 5.6 vs 4.7 per user) and takes
    the paper's blocks at eps = 3, where its variance is below half the one-block code's."""
    u = np.ones(100)
    var = {(eps, v): hadamard_variance(u, hadamard_code(100, eps, v)).mean()
           for eps in (1.0, 3.0) for v in ("general", "high-privacy")}
    assert var[1.0, "high-privacy"] < var[1.0, "general"]
    assert var[3.0, "general"] < 0.5 * var[3.0, "high-privacy"]
    assert hadamard_code(100, 1.0).blocks == 1 and hadamard_code(100, 3.0).blocks == 16


@pytest.mark.parametrize("x", [0, 6, 99])
def test_sampler_follows_channel(x):
    """Reports of one value follow its channel column (chi-square p > 1e-3, seed 3), eps = 3, D = 100."""
    code = hadamard_code(100, 3.0, "general")
    rng = np.random.default_rng(3)
    observed = hadamard_histogram(hadamard_perturb(np.full(60_000, x), code, rng), code)
    assert stats.chisquare(observed, hadamard_channel(code)[:, x] * 60_000).pvalue > 1e-3


@pytest.mark.parametrize("eps", [1.0, 3.0, 5.0])
def test_variance_matches_theory_and_estimate_is_unbiased(eps):
    """Per-user path, general code, D = 100, n = 3,000 skewed users, 1,500 trials (seed 11): the empirical
    variance averaged over values is within 5% of hadamard_variance, and every value's mean estimate is
    within 4 standard errors of its true count (unbiasedness)."""
    D, n, trials = 100, 3000, 1500
    code = hadamard_code(D, eps, "general")
    rng = np.random.default_rng(11)
    values = np.minimum(rng.geometric(0.05, size=n) - 1, D - 1)
    truth = np.bincount(values, minlength=D)
    est = np.empty((trials, D))
    for t in range(trials):
        est[t] = hadamard_estimate_counts(hadamard_histogram(hadamard_perturb(values, code, rng), code), code)
    theory = hadamard_variance(truth, code)
    assert est.var(axis=0, ddof=1).mean() == pytest.approx(theory.mean(), rel=0.05)
    se = np.sqrt(theory / trials)
    assert np.all(np.abs(est.mean(axis=0) - truth) < 4 * se)


def test_aggregate_histogram_matches_per_user_in_distribution():
    """The aggregate path's histogram has the per-user path's mean (K outputs, 400 draws, seed 5): every
    output's mean count within 5 standard errors of n P[y, .] @ (counts / n)."""
    code = hadamard_code(40, 3.0, "general")
    rng = np.random.default_rng(5)
    counts = rng.integers(0, 60, size=40)
    draws = np.array([hadamard_aggregate_histogram(counts, code, rng) for _ in range(400)])
    assert np.all(draws.sum(axis=1) == counts.sum())
    expected = hadamard_channel(code) @ counts
    se = np.sqrt(expected / 400) + 1e-9
    assert np.all(np.abs(draws.mean(axis=0) - expected) < 5 * se)


def test_registered_hr_uses_the_general_code_at_large_epsilon():
    """'hr' at eps = 5 on 16 x 16 cells: B > 1 blocks; its channel is the code's and meets e^eps; the
    variance per user is below 0.1 (the one-block code's is above 1)."""
    grid = Grid(Region(0, 0, 1000), 16)
    m = mechanisms.create("hr", grid, 5.0)
    assert m.code.blocks > 1
    P = m.channel()
    assert _max_ratio(P) <= math.exp(5.0) + 1e-12
    assert hadamard_variance(np.ones(256), m.code).mean() / 256 < 0.1
    assert fo.hr_variance(256, 1, 5.0) / 256 > 1
    hp = mechanisms.create("hr", grid, 5.0, variant="high-privacy")
    np.testing.assert_allclose(hp.channel(), fo.hr_channel(256, 5.0), rtol=1e-12)


@pytest.mark.parametrize("path", ["per-user", "aggregate"])
def test_registered_hr_runs_both_paths(path):
    """Both paths give a distribution close to the truth at eps = 4 (L1 < 0.3, 20,000 users, seed 2)."""
    grid = Grid(Region(0, 0, 1000), 8)
    rng = np.random.default_rng(2)
    cells = np.minimum(rng.geometric(0.08, size=20_000) - 1, 63)
    est = mechanisms.create("hr", grid, 4.0, path=path).run(Binned(cells, np.zeros((len(cells), 2)), 0), rng)
    truth = grid.histogram(cells) / len(cells)
    assert np.abs(est.density - truth).sum() < 0.3
    assert est.info["blocks B"] > 1
