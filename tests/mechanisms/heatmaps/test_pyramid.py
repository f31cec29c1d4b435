"""Pyramidal transform, per-level budgets and noise, and RECONSTRUCT (dp-heatmaps-sparse-emd.md Sec. 3-4)."""

from __future__ import annotations

import dataclasses
import inspect
import math

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import linprog

from ldpviz.mechanisms.heatmaps import pyramid
from ldpviz.errors import LdpvizInputError


def direct_transform(s: np.ndarray, first_level: int = 0) -> list[np.ndarray]:
    """Def. 3.1 by brute force: every level-i cell [a, a + 2^-i) x [b, b + 2^-i), points p in it."""
    delta = s.shape[0]
    top = int(math.log2(delta))
    out = []
    for level in range(first_level, top + 1):
        cells = 2 ** level
        y = np.zeros((cells, cells))
        for r in range(cells):
            for c in range(cells):
                lo_y, hi_y, lo_x, hi_x = r / cells, (r + 1) / cells, c / cells, (c + 1) / cells
                for pr in range(delta):
                    for pc in range(delta):
                        if lo_y <= pr / delta < hi_y and lo_x <= pc / delta < hi_x:
                            y[r, c] += s[pr, pc]
        out.append(y * 2.0 ** -level)
    return out


@pytest.mark.parametrize("delta", [1, 2, 4, 8])
def test_transform_matches_direct_computation(delta):
    """pyramid_transform and pyramid_matrix equal the brute-force Def. 3.1 on random inputs."""
    rng = np.random.default_rng(delta)
    s = rng.random((delta, delta))
    for first in range(0, int(math.log2(delta)) + 1):
        fast = pyramid.pyramid_transform(s, first)
        slow = direct_transform(s, first)
        assert len(fast) == len(slow)
        for a, b in zip(fast, slow):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
        stacked = np.concatenate([y.ravel() for y in slow])
        np.testing.assert_allclose(pyramid.pyramid_matrix(delta, first) @ s.ravel(), stacked, atol=1e-12)


def test_level_sums_row_col_convention():
    """Level-1 cell (r, c) holds rows r*B.. and columns c*B.. (row from the south, as densities)."""
    s = np.zeros((4, 4))
    s[3, 0] = 1.0                     # north-west fine cell
    np.testing.assert_array_equal(pyramid.level_sums(s, 1), [[0, 0], [1, 0]])


def test_non_power_of_two_refused_with_clear_message():
    with pytest.raises(LdpvizInputError, match=r"power of two \(e\.g\. 64, 128, 256\); got 100"):
        pyramid.require_power_of_two(100)


@pytest.mark.parametrize("width", list(range(1, 70)) + [100, 255, 256, 257, 1024])
def test_start_level_is_floor_log2_sqrt_w(width):
    expected = math.floor(math.log2(math.sqrt(width)) + 1e-12)
    assert pyramid.start_level(width, 30) == expected
    assert 4 ** pyramid.start_level(width, 30) <= width


@pytest.mark.parametrize("epsilon", [0.01, 0.5, 1.0, 3.7, 10.0, 50.0])
@pytest.mark.parametrize("top", [0, 1, 3, 6, 8, 9])
@pytest.mark.parametrize("width,gamma", [(20, 1 / math.sqrt(2)), (1, 0.8), (64, 0.5), (5, 1.0)])
def test_budgets_sum_to_epsilon_and_decay_by_gamma(epsilon, top, width, gamma):
    """Thm 3.1 / Sec. 4: eps_i = gamma^(i-q) eps / Z on levels q..l, summing to eps (basic composition)."""
    q, budgets = pyramid.level_budgets(epsilon, top, width, gamma)
    assert q == min(pyramid.start_level(width, top), top)
    assert len(budgets) == top - q + 1
    assert math.isclose(budgets.sum(), epsilon, rel_tol=1e-12)
    assert np.all(budgets > 0)
    np.testing.assert_allclose(budgets[1:] / budgets[:-1], gamma, rtol=1e-12)


def test_noise_scale_is_sensitivity_over_level_epsilon():
    """Each level's Laplace scale is 1 / eps_i and the released noise has that scale (fixed seed)."""
    delta, epsilon = 64, 1.0
    rng = np.random.default_rng(7)
    s = np.zeros((delta, delta))
    s.flat[rng.choice(delta * delta, 50)] += 1.0
    truth = pyramid.pyramid_transform(s, pyramid.start_level(20, 6))
    m = pyramid.measure(s, epsilon, np.random.default_rng(8), width=20)
    np.testing.assert_allclose(m.noise_scale, 1.0 / m.level_epsilon, rtol=1e-14)
    assert math.isclose(m.epsilon, epsilon, rel_tol=1e-12)
    # Pool many draws: noise nu_i = 2^i (y'_i - y_i) must be Laplace(1/eps_i): E|nu| = b, Var = 2 b^2.
    draws = [pyramid.measure(s, epsilon, np.random.default_rng(100 + k), width=20) for k in range(200)]
    for j, level in enumerate(range(m.first_level, m.top + 1)):
        noise = np.concatenate([((d.noisy[j] - truth[j]) * 2.0 ** level).ravel() for d in draws])
        b = m.noise_scale[j]
        # |nu| / b is Exp(1): standard error of its mean is 1 / sqrt(N); allow 4 standard errors.
        tol = 4.0 / math.sqrt(noise.size)
        assert abs(np.mean(np.abs(noise)) / b - 1) < tol, (level, np.mean(np.abs(noise)), b)
        assert abs(np.mean(noise)) / b < 4.0 * math.sqrt(2.0 / noise.size)


def _log_density(m: pyramid.Measurements, aggregate: np.ndarray) -> float:
    """log P(measurements | aggregate) under the declared Laplace scales (up to the common constant)."""
    truth = pyramid.pyramid_transform(aggregate, m.first_level)
    total = 0.0
    for j, level in enumerate(range(m.first_level, m.top + 1)):
        total -= np.abs((m.noisy[j] - truth[j]) * 2.0 ** level).sum() / m.noise_scale[j]
    return total


def test_privacy_loss_of_neighbouring_datasets_at_most_epsilon():
    """Adding one user (any distribution of l1 norm 1) moves the output log-density by <= eps,
    and a point-mass user far from the released values attains eps (the budget is used, not wasted)."""
    rng = np.random.default_rng(3)
    delta, epsilon = 16, 1.3
    worst = 0.0
    for trial in range(40):
        s = np.zeros((delta, delta))
        s.flat[rng.choice(delta * delta, 30)] += 1.0
        user = rng.random((delta, delta)) ** 4 if trial % 2 else np.eye(1, delta * delta, rng.integers(
            delta * delta)).reshape(delta, delta)
        user /= user.sum()
        m = pyramid.measure(s, epsilon, rng, width=int(rng.integers(1, 40)))
        loss = abs(_log_density(m, s + user) - _log_density(m, s))
        worst = max(worst, loss)
        assert loss <= epsilon + 1e-9
    # Attained: every measured cell holding the new user's point lies below the truth.
    s = np.zeros((delta, delta))
    user = np.zeros((delta, delta))
    user[5, 9] = 1.0
    m = pyramid.measure(s, epsilon, rng, width=20)
    shifted = dataclasses.replace(m, noisy=tuple(y - 10.0 for y in m.noisy))
    assert math.isclose(abs(_log_density(shifted, s + user) - _log_density(shifted, s)), epsilon, rel_tol=1e-9)


def test_reconstruct_reads_only_the_noisy_measurements():
    """Post-processing: RECONSTRUCT's inputs are the released measurements and w, nothing else; the
    released object carries no field of the true data; same measurements -> same output."""
    assert list(inspect.signature(pyramid.reconstruct).parameters) == ["measurements", "width"]
    assert {f.name for f in dataclasses.fields(pyramid.Measurements)} == {
        "delta", "first_level", "level_epsilon", "noise_scale", "noisy"}
    s = np.zeros((32, 32))
    s[3:6, 10:12] = 2.0
    m = pyramid.measure(s, 1.0, np.random.default_rng(0))
    other = np.zeros((32, 32))           # different truth, same release
    assert other.sum() != s.sum()
    first = pyramid.reconstruct(m).estimate
    np.testing.assert_array_equal(first, pyramid.reconstruct(m).estimate)


@pytest.mark.parametrize("delta,k,width", [(16, 1, 20), (16, 5, 20), (64, 3, 20), (64, 12, 20), (128, 7, 20),
                                           (64, 8, 8), (256, 4, 20)])
def test_reconstruct_recovers_sparse_input_without_noise(delta, k, width):
    """Noise-free measurements of a k-sparse s (k <= w) are recovered exactly (Sec. 3.3, Lemma 3.2 with nu = 0)."""
    rng = np.random.default_rng(delta * 100 + k)
    for _ in range(5):
        s = np.zeros((delta, delta))
        s.flat[rng.choice(delta * delta, k, replace=False)] = rng.integers(1, 40, k)
        top = int(math.log2(delta))
        q = pyramid.start_level(width, top)
        m = pyramid.Measurements(delta, q, np.ones(top - q + 1), np.ones(top - q + 1),
                                 tuple(pyramid.pyramid_transform(s, q)))
        rec = pyramid.reconstruct(m, width)
        np.testing.assert_allclose(rec.estimate, s, atol=1e-7)
        assert rec.objective < 1e-7


def _selection(m: pyramid.Measurements, width: int) -> list[set[tuple[int, int]]]:
    """Algorithm 2 lines 3-7, written independently with Python sets (ties broken by a stable sort)."""
    sel = [{(r, c) for r in range(2 ** m.first_level) for c in range(2 ** m.first_level)}]
    for j in range(1, len(m.noisy)):
        cand = sorted({(2 * r + a, 2 * c + b) for r, c in sel[-1] for a in (0, 1) for b in (0, 1)})
        cand.sort(key=lambda rc: -m.noisy[j][rc])
        sel.append(set(cand[:width]))
    return sel


def _full_lp(m: pyramid.Measurements, width: int) -> tuple[float, np.ndarray, sp.csr_matrix, np.ndarray]:
    """argmin_{s >= 0} ||y_hat - P s||_1 over all Delta^2 cells and every measured row (no reduction)."""
    sel = _selection(m, width)
    y_hat = []
    for j, chosen in enumerate(sel):
        y = np.zeros_like(m.noisy[j])
        for rc in chosen:
            y[rc] = m.noisy[j][rc]
        y_hat.append(y.ravel())
    y_hat = np.concatenate(y_hat)
    P = pyramid.pyramid_matrix(m.delta, m.first_level)
    rows, cells = P.shape
    eye = sp.identity(rows, format="csr")
    # variables [s, t]; t >= y - P s, t >= P s - y
    A_ub = sp.vstack([sp.hstack([-P, -eye]), sp.hstack([P, -eye])], format="csr")
    b_ub = np.concatenate([-y_hat, y_hat])
    cost = np.concatenate([np.zeros(cells), np.ones(rows)])
    res = linprog(cost, A_ub=A_ub, b_ub=b_ub, bounds=(0, None), method="highs")
    assert res.status == 0
    return float(res.fun), y_hat, P, res.x[:cells]


@pytest.mark.parametrize("delta,width,epsilon,seed", [(8, 3, 1.0, 0), (16, 5, 0.7, 1), (16, 20, 2.0, 2),
                                                      (32, 6, 1.0, 3), (16, 1000, 1.0, 4), (2, 20, 1.0, 5)])
def test_reduced_lp_matches_full_lp(delta, width, epsilon, seed):
    """The O(w l)-variable LP of Sec. 4 has the same optimum as the full LP over all cells, and its
    grid output attains that optimum in the full formulation."""
    rng = np.random.default_rng(seed)
    s = np.zeros((delta, delta))
    s.flat[rng.choice(delta * delta, max(1, delta * delta // 6))] += rng.integers(1, 5)
    m = pyramid.measure(s, epsilon, rng, width=width)
    rec = pyramid.reconstruct(m, width)
    full_opt, y_hat, P, _ = _full_lp(m, width)
    assert math.isclose(rec.objective, full_opt, rel_tol=1e-7, abs_tol=1e-7)
    attained = np.abs(y_hat - P @ rec.estimate.ravel()).sum()
    assert math.isclose(attained, full_opt, rel_tol=1e-7, abs_tol=1e-7)
    assert rec.estimate.min() >= 0


def test_reconstruct_keeps_w_per_level():
    """|S_i| = min(w, |T_i|): the kept measurements count is the selection's size."""
    delta, width = 64, 20
    s = np.random.default_rng(0).random((delta, delta))
    m = pyramid.measure(s, 1.0, np.random.default_rng(1), width=width)
    rec = pyramid.reconstruct(m, width)
    assert rec.selected == sum(len(x) for x in _selection(m, width))
    assert rec.selected == 16 + width * (6 - 2)
