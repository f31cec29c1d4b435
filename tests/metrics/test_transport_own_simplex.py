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


def _assert_tree_consistent(s) -> None:
    """Every tree array of a TransportSimplex describes the same spanning tree: the thread is a preorder of the
    parent pointers (reverse thread its inverse), subtree sizes and subtree ends match it, every tree arc joins a
    node and its parent in the stated direction, and the potentials price every tree arc at 0."""
    from ldpviz.metrics.network_simplex import _TREE
    n, root = s.N + 1, s.N
    order = [root]
    x = s.thread[root]
    while x != root and len(order) <= n:
        order.append(int(x))
        x = s.thread[x]
    assert len(order) == n and sorted(order) == list(range(n))
    assert all(s.rev_thread[s.thread[x]] == x for x in range(n))
    pos = np.empty(n, int)
    pos[order] = np.arange(n)
    size = np.ones(n, int)
    for x in reversed(order[1:]):
        size[s.parent[x]] += size[x]
    np.testing.assert_array_equal(s.succ[:n], size)
    for x in range(n):
        assert s.last_succ[x] == order[pos[x] + size[x] - 1]
        if x == root:
            continue
        par, e = s.parent[x], s.pred[x]
        assert pos[par] < pos[x] < pos[par] + size[par]
        assert s.state[e] == _TREE and {s.tail[e], s.head[e]} == {x, par} and s.up[x] == (s.tail[e] == x)
        assert s.cost[e] + s.pi[s.tail[e]] - s.pi[s.head[e]] == pytest.approx(0.0, abs=1e-9)


@pytest.mark.parametrize("seed", range(12))
def test_tree_stays_consistent_after_every_pivot(seed):
    """The pivot re-links the thread only at the stem and shifts potentials on the smaller side of the tree
    (issue 38): checked against the definitions after every single pivot, on random transport problems (dense
    and sparse arcs, random and whole-number masses, random crash orders, so that there are pivots to make), each
    ending at POT's optimum where all pairs are present."""
    from ldpviz.metrics.network_simplex import TransportSimplex
    rng = np.random.default_rng([38, seed])
    n1, n2 = (int(k) for k in rng.integers(6, 25, 2))
    if seed % 3 == 0:                                   # ties and degenerate pivots
        a, b = rng.integers(1, 4, n1).astype(float), rng.integers(1, 4, n2).astype(float)
    else:
        a, b = rng.random(n1), rng.random(n2)
    b *= a.sum() / b.sum()
    ti, hj = (g.ravel() for g in np.meshgrid(np.arange(n1), np.arange(n2), indexing="ij"))
    keep = np.ones(ti.size, bool) if seed % 2 == 0 else rng.random(ti.size) < 0.6
    cost = rng.integers(0, 20, ti.size).astype(float)
    s = TransportSimplex(a, b, ti[keep], hj[keep], cost[keep], max_cost=20.0, order_key=rng.random(int(keep.sum())))
    _assert_tree_consistent(s)
    pivots = 0
    while not s.run(max_pivots=1):
        pivots += 1
        _assert_tree_consistent(s)
    _assert_tree_consistent(s)
    assert pivots > 0
    if keep.all():
        assert s.cost_value == pytest.approx(ot.emd2(a, b, cost.reshape(n1, n2)), rel=1e-9, abs=1e-12)
