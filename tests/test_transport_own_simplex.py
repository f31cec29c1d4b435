"""The dense and multiscale exact solvers of ``ldpviz.metrics.transport`` (our network simplex) give POT's
optimum: W2 and EMD-L1 equal ``ot.emd2`` on the full cost matrix to 1e-9, on random dense and sparse grids up to
d = 48 (fixed seeds), and the plans they return are feasible (their marginals are the inputs)."""

from __future__ import annotations

import numpy as np
import ot
import pytest

from ldpviz.metrics import transport as tr


def _pot(p: np.ndarray, q: np.ndarray, metric: str) -> float:
    d = p.shape[0]
    ia, ib = np.flatnonzero(p.ravel() > 0), np.flatnonzero(q.ravel() > 0)
    M = tr._pair_cost(ia[:, None], ib[None, :], d, metric)
    return float(ot.emd2(p.ravel()[ia], q.ravel()[ib], M, numItermax=10 ** 9))


def _case(d: int, density: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    p = rng.random((d, d)) ** 3 * (rng.random((d, d)) < density)
    q = rng.random((d, d)) ** 3 * (rng.random((d, d)) < density)
    p.flat[0] += 1e-3                                      # never empty
    q.flat[-1] += 1e-3
    return p / p.sum(), q / q.sum()


@pytest.mark.parametrize("metric", ["sqeuclidean", "cityblock"])
@pytest.mark.parametrize("d, density, seed", [(3, 1.0, 0), (8, 1.0, 1), (17, 0.3, 2), (24, 1.0, 3), (33, 0.5, 4),
                                              (48, 0.15, 5)])
def test_dense_and_multiscale_equal_pot(metric, d, density, seed):
    p, q = _case(d, density, seed)
    want = _pot(p, q, metric)
    for solve in (tr._emd_dense, tr._ot_multiscale):
        cost, i, j, mass = solve(p, q, metric)
        assert cost == pytest.approx(want, rel=1e-9, abs=1e-12), solve.__name__
        assert np.all(mass > 0)
        assert float(tr._pair_cost(i, j, d, metric) @ mass) == pytest.approx(cost, rel=1e-12, abs=1e-15)
        np.testing.assert_allclose(np.bincount(i, mass, d * d), p.ravel(), atol=1e-12)
        np.testing.assert_allclose(np.bincount(j, mass, d * d), q.ravel(), atol=1e-12)


def test_above_the_own_dense_limit_pot_answers(monkeypatch):
    """Above OWN_DENSE_MAX_PAIRS the dense solve is POT's (less memory there): the same optimum."""
    p, q = _case(12, 1.0, 6)
    own = tr._emd_dense(p, q, "cityblock")[0]
    monkeypatch.setattr(tr, "OWN_DENSE_MAX_PAIRS", 10)
    assert tr._emd_dense(p, q, "cityblock")[0] == pytest.approx(own, rel=1e-12)
    assert tr._emd_dense(p, q, "cityblock", want_plan=False)[0] == pytest.approx(own, rel=1e-12)


@pytest.mark.parametrize("metric", ["sqeuclidean", "cityblock"])
def test_pairs_added_to_a_live_solve_reach_pots_optimum(metric):
    """SparsePairs (the candidate pairs both certified solvers grow): a solve started on every other pair, then
    given all pairs again (duplicates included), adds exactly the missing ones, keeps its keys sorted and
    distinct, and continues from its basis to POT's optimum (1e-9) with a feasible plan."""
    from ldpviz.metrics.sparse_pairs import SparsePairs
    p, q = _case(7, 0.7, 11)
    prob = SparsePairs(p, q, lambda x, y: tr._pair_cost(x, y, 7, metric), max_cost=2.0 * 36)
    every = prob.all_keys()
    sx = prob.start(every[::2])
    sx.run()
    assert prob.add(np.concatenate([every, every[::3]])) == len(every) - len(every[::2])
    assert np.array_equal(prob.keys, every)
    assert prob.add(every) == 0
    assert sx.run() and sx.artificial_flow <= 1e-12
    assert sx.cost_value == pytest.approx(_pot(p, q, metric), abs=1e-9)
    rows, cols, mass = prob.plan()
    np.testing.assert_allclose(np.bincount(rows, mass, minlength=49), p.ravel(), atol=1e-12)
    np.testing.assert_allclose(np.bincount(cols, mass, minlength=49), q.ravel(), atol=1e-12)
