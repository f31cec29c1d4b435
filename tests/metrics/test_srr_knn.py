"""k-NN list quality (L-SRR Sec. 6.3): exact estimate scores perfectly; noise lowers precision."""

import numpy as np

from ldpviz.metrics.knn import knn_quality


def test_exact_estimate_is_perfect():
    counts = np.random.default_rng(0).poisson(3.0, size=(12, 12)).astype(float)
    q = knn_quality(counts, counts / counts.sum(), k=25)
    assert q["precision"] == 1.0 and q["recall"] == 1.0 and q["nmse"] == 0.0


def test_worse_estimates_score_worse():
    """A uniform estimate of a clustered population has lower precision and larger NMSE than a close one."""
    rng = np.random.default_rng(1)
    counts = np.zeros((16, 16))
    np.add.at(counts, (rng.integers(3, 6, 400), rng.integers(10, 13, 400)), 1)
    close = counts + rng.random(counts.shape) * 0.2
    uniform = np.ones_like(counts)
    good, bad = knn_quality(counts, close), knn_quality(counts, uniform)
    assert good["precision"] > bad["precision"]
    assert good["nmse"] < bad["nmse"]


def test_hand_example():
    """Two users in one cell, k = 1: each one's neighbour is the other; an estimate moving one away fails."""
    counts = np.zeros((4, 4))
    counts[0, 0] = 2
    est = np.zeros((4, 4))
    est[0, 0] = est[3, 3] = 1
    q = knn_quality(counts, est, k=1)
    assert q["recall"] == 0.0
    assert q["nmse"] > 0.5
