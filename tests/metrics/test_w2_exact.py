"""The certified exact W2 solver (ldpviz.metrics.w2_exact, issue 23): its distance transform, its optimum against
POT's dense network simplex, its bounds, its time budget and its place in metrics' ``method="auto"``."""

from __future__ import annotations

import math

import numpy as np
import ot
import pytest
from scipy.ndimage import gaussian_filter

from ldpviz import metrics
from ldpviz.metrics import envelope, w2_exact
from ldpviz.metrics.network_simplex import TransportSimplex


def dense_w2_sq(p: np.ndarray, q: np.ndarray) -> float:
    """POT's ot.emd2 on the full cost matrix between cell centres (squared cells): the reference."""
    d = p.shape[0]
    r, c = np.divmod(np.arange(d * d), d)
    M = (r[:, None] - r[None, :]) ** 2 + (c[:, None] - c[None, :]) ** 2
    return float(ot.emd2(p.ravel() / p.sum(), q.ravel() / q.sum(), M.astype(float), numItermax=10**9))


def blobs(d: int, rng: np.random.Generator) -> np.ndarray:
    y, x = np.mgrid[0:d, 0:d] + 0.5
    out = np.zeros((d, d))
    for _ in range(4):
        m, s = rng.uniform(0.2 * d, 0.8 * d, 2), rng.uniform(0.04 * d, 0.12 * d)
        out += rng.uniform(0.5, 1.5) * np.exp(-((x - m[0]) ** 2 + (y - m[1]) ** 2) / (2 * s * s))
    return out / out.sum()


def grr_estimate(true: np.ndarray, n: int, eps: float, rng: np.random.Generator) -> np.ndarray:
    """Generalised randomized response over the d^2 cells, debiased and clipped at 0: an LDP estimate whose
    noise spreads mass over the whole grid."""
    k = true.size
    cells = rng.choice(k, size=n, p=true.ravel() / true.sum())
    e = math.exp(eps)
    keep = rng.random(n) < e / (e + k - 1)
    reports = np.where(keep, cells, (cells + rng.integers(1, k, n)) % k)
    counts = np.bincount(reports, minlength=k).astype(float)
    pk, qk = e / (e + k - 1), 1.0 / (e + k - 1)
    return np.clip((counts - n * qk) / (pk - qk), 0.0, None).reshape(true.shape)


def pairs(d: int, seed: int):
    rng = np.random.default_rng([seed, d])
    t = blobs(d, rng)
    sparse = np.where(rng.random((d, d)) < 0.2, rng.pareto(1.5, (d, d)) + 0.01, 0.0)
    yield "random", rng.random((d, d)), rng.random((d, d))
    yield "near-copy", t, gaussian_filter(t, 1.0)
    yield "sparse near-copy", sparse, gaussian_filter(sparse, 1.0)
    yield "ldp-noisy", t, grr_estimate(t, 20 * d * d, 2.0, rng)


def test_distance_transform_matches_brute_force():
    """sq_distance_transform gives min_y |x - y|^2 + f(y) and a minimising y for every x, with +inf cells
    excluded (and -1 / +inf where every cell is), on non-square grids too; the numpy fallback agrees."""
    rng = np.random.default_rng(0)
    for shape in ((1, 1), (5, 9), (12, 12)):
        f = rng.normal(0, 30, shape)
        f[rng.random(shape) < 0.4] = np.inf
        g, arg = w2_exact.sq_distance_transform(f)
        ys = np.indices(shape).reshape(2, -1).T
        full = ((ys[:, None, :] - ys[None, :, :]) ** 2).sum(-1) + f.ravel()[None, :]
        best = full.min(axis=1)
        assert np.allclose(g.ravel(), best, rtol=0, atol=1e-9) or np.all(np.isinf(best))
        finite = np.isfinite(best)
        assert np.allclose(full[np.flatnonzero(finite), arg.ravel()[finite]], best[finite], atol=1e-9)
        g2, arg2 = envelope._transform_numpy(f)
        assert np.array_equal(np.isfinite(g2), np.isfinite(g)) and np.allclose(g2[finite.reshape(shape)],
                                                                                 g[finite.reshape(shape)])
    g, arg = w2_exact.sq_distance_transform(np.full((3, 4), np.inf))
    assert np.all(np.isinf(g)) and np.all(arg == -1)


@pytest.mark.parametrize("d", [32, pytest.param(64, marks=pytest.mark.slow)])
def test_certified_solver_equals_dense_network_simplex(d):
    """On random, near-copy (1-cell blur), sparse near-copy and LDP-noisy (GRR, eps = 2) pairs the certified
    solver's W2^2 equals POT's dense emd2 to 1e-9 squared cells, is certified, and its bounds hold the exact
    value: lower <= exact <= upper (to round-off)."""
    for name, p, q in pairs(d, seed=d):
        p, q = metrics._pair(p, q)
        exact = dense_w2_sq(p, q)
        r = w2_exact.solve(p, q)
        assert r.certified, name
        assert r.upper == pytest.approx(exact, abs=1e-9), name
        assert r.lower <= exact + 1e-9 and exact <= r.upper + 1e-9, name
        assert r.upper - r.lower <= 1e-9 * max(1.0, exact), name


def test_odd_sides_tiny_supports_and_identical_maps():
    """Odd sides (the coarse level pads a row and column), single-cell supports and identical maps solve to
    the dense optimum; identical maps give 0."""
    rng = np.random.default_rng(3)
    for d in (17, 33):
        p, q = rng.random((d, d)) ** 4, gaussian_filter(rng.random((d, d)) ** 4, 1.0)
        p, q = metrics._pair(p, q)
        assert w2_exact.solve(p, q).upper == pytest.approx(dense_w2_sq(p, q), abs=1e-9)
        assert w2_exact.solve(p, p).upper == pytest.approx(0.0, abs=1e-12)
    a, b = np.zeros((40, 40)), np.zeros((40, 40))
    a[3, 4], b[30, 36] = 1.0, 1.0
    assert w2_exact.solve(a, b).upper == pytest.approx(27 ** 2 + 32 ** 2)


def test_repair_rounds_fix_a_start_that_misses_the_optimum(monkeypatch):
    """With the local arcs off (radius 0) and the coarse level forced to a poor plan (and no duals to order the
    crash), the first restricted optimum is not the global one; the certificate must catch it and the repair
    arcs, added to the live solve, must reach POT's optimum (the certificate can fail)."""
    d = 40
    rng = np.random.default_rng(7)
    p, q = metrics._pair(rng.random((d, d)), rng.random((d, d)))
    exact = dense_w2_sq(p, q)

    def poor_coarse(pc, qc, radius, deadline, stats):     # a feasible but far from optimal coarse plan
        plan = ot.emd(pc.ravel() / pc.sum(), qc.ravel() / qc.sum(),
                      np.ones((pc.size, qc.size)) - np.eye(pc.size, qc.size, k=5))
        r, c = np.nonzero(plan > 0)
        zero = np.zeros(pc.size)
        return r, c, plan[r, c], 0.0, 0.0, True, (zero, zero)

    monkeypatch.setattr(w2_exact, "_coarse_level", poor_coarse)
    monkeypatch.setattr(w2_exact, "_DENSE_MAX_PAIRS", 0)
    stats: dict = {}
    r = w2_exact.solve(p, q, radius=0, stats=stats)
    assert stats["levels"][d]["rounds"] > 1
    assert r.certified and r.upper == pytest.approx(exact, rel=1e-12, abs=1e-9)


def test_certificate_rejects_a_planted_non_optimal_plan():
    """The optimum over a planted arc set that misses the global optimum (the north-west-corner staircase in
    row-major cell order: feasible, its only plan) is rejected: the certificate names violating arcs not held
    yet, its lower bound holds POT's optimum, and the plan's cost is above it; a plan over all arcs passes."""
    d = 12
    rng = np.random.default_rng(4)
    p, q = metrics._pair(rng.random((d, d)) + 0.1, rng.random((d, d)) + 0.1)
    exact = dense_w2_sq(p, q)
    prob = w2_exact._Problem(p, q)
    ca, cb = np.cumsum(prob.a), np.cumsum(prob.b)
    i = j = 0
    staircase = []
    while i < len(ca) and j < len(cb):
        staircase.append(i * len(prob.ib) + j)
        if ca[i] < cb[j]:
            i += 1
        else:
            j += 1
    prob.start(np.array(staircase, dtype=np.int64), None)
    assert prob.simplex.run() and prob.simplex.artificial_flow <= 1e-12
    cost = prob.simplex.cost_value
    u, v = prob.simplex.duals()
    lower, new, n_bad = prob.certificate(u, v)
    assert cost > exact + 1e-6 and n_bad > 0 and lower <= exact + 1e-9
    assert prob.add(new) > 0
    full = w2_exact._Problem(p, q)
    full.start(full.all_keys(), None)
    assert full.simplex.run()
    lower, new, n_bad = full.certificate(*full.simplex.duals())
    assert n_bad == 0 and full.simplex.cost_value == pytest.approx(exact, rel=1e-12, abs=1e-9)
    assert lower == pytest.approx(exact, rel=1e-12, abs=1e-9)


def random_grid_pair(d: int, rng: np.random.Generator, kind: str):
    """Grid pairs of several shapes: dense, sparse supports, empty rows, equal maps, uniform (degenerate)."""
    if kind == "dense":
        return rng.random((d, d)), rng.random((d, d))
    if kind == "sparse":
        return (np.where(rng.random((d, d)) < 0.15, rng.random((d, d)), 0.0) + (np.arange(d * d) == 0).reshape(d, d),
                np.where(rng.random((d, d)) < 0.15, rng.random((d, d)), 0.0) + (np.arange(d * d) == 1 % (d * d))
                .reshape(d, d))
    if kind == "zero-rows":
        p, q = rng.random((d, d)), rng.random((d, d))
        p[rng.random(d) < 0.5] = 0.0
        q[:, rng.random(d) < 0.5] = 0.0
        p[0, 0] += 1.0
        q[-1, -1] += 1.0
        return p, q
    if kind == "equal":
        p = rng.random((d, d)) ** 3
        return p, p.copy()
    if kind == "uniform":                                   # every mass equal: a degenerate basis
        p = np.ones((d, d))
        q = np.zeros((d, d))
        q[: max(1, d // 2)] = 2.0
        return p, q
    raise ValueError(kind)


@pytest.mark.parametrize("d", [1, 2, 3, 5, 8, 16, 24, 33, pytest.param(48, marks=pytest.mark.slow),
                               pytest.param(64, marks=pytest.mark.slow)])
def test_exact_w2_equals_pot_dense_on_random_grids(d):
    """Seeded random pairs of five shapes (dense, sparse supports, zero rows and columns, equal maps, uniform
    masses with a degenerate basis) at sides 1 to 64: the certified W2^2 equals POT's dense ot.emd2 to 1e-9
    (relative to max(1, value)), and is certified."""
    rng = np.random.default_rng([28, d])
    for kind in ("dense", "sparse", "zero-rows", "equal", "uniform"):
        p, q = metrics._pair(*random_grid_pair(d, rng, kind))
        exact = dense_w2_sq(p, q)
        r = w2_exact.solve(p, q)
        assert r.certified, (kind, d)
        assert abs(r.upper - exact) <= 1e-9 * max(1.0, exact), (kind, d, r.upper, exact)
        if kind == "equal":
            assert r.upper == pytest.approx(0.0, abs=1e-12)


def test_network_simplex_warm_start_equals_cold_solve():
    """Arcs added to a solved instance (in three batches) give the same optimum as one cold solve over all of
    them and as POT's ot.emd2, on seeded random transport problems (integer costs, some masses equal); the plan
    has the right marginals and the duals price every arc non-negatively (0 on the plan)."""
    rng = np.random.default_rng(2028)
    for trial in range(60):
        n1, n2 = int(rng.integers(1, 25)), int(rng.integers(1, 25))
        a, b = rng.random(n1), rng.random(n2)
        if trial % 3 == 0:
            a, b = np.round(4 * a) + 1, np.round(4 * b) + 1
        a, b = a / a.sum(), b / b.sum()
        C = rng.integers(0, 60, (n1, n2)).astype(float)
        t, h = np.divmod(np.arange(n1 * n2), n2)
        ref = float(ot.emd2(a, b, C))
        cold = TransportSimplex(a, b, t, h, C.ravel())
        assert cold.run()
        order = rng.permutation(n1 * n2)
        first = order[: max(1, n1 * n2 // 3)]
        # the first batch must admit a feasible plan: add a north-west-corner path
        nw_t, nw_h, i, j = [], [], 0, 0
        while i < n1 and j < n2:
            nw_t.append(i), nw_h.append(j)
            if (i + 1) * n2 + j < n1 * n2 and (i < n1 - 1 and (j == n2 - 1 or rng.random() < 0.5)):
                i += 1
            else:
                j += 1
        first = np.union1d(first, np.array(nw_t) * n2 + np.array(nw_h))
        warm = TransportSimplex(a, b, t[first], h[first], C.ravel()[first], max_cost=C.max())
        assert warm.run()
        rest = np.setdiff1d(np.arange(n1 * n2), first)
        for chunk in np.array_split(rest, 3):
            warm.add_arcs(t[chunk], h[chunk], C.ravel()[chunk])
            assert warm.run()
        for s in (cold, warm):
            assert abs(s.cost_value - ref) <= 1e-12 * max(1.0, ref), trial
            pt, ph, pm = s.plan()
            assert np.allclose(np.bincount(pt, pm, minlength=n1), a) and np.allclose(np.bincount(ph, pm, minlength=n2),
                                                                                     b)
            u, v = s.duals()
            assert (C - u[:, None] - v[None, :]).min() >= -1e-9
            assert np.allclose(C[pt, ph] - u[pt] - v[ph], 0.0)


def test_time_budget_returns_valid_bounds_uncertified():
    """A spent time budget stops the solver: the result is not certified, and whatever it returns still
    brackets the exact value (lower <= exact <= upper), so metrics can narrow BFM's interval with it."""
    d = 48
    rng = np.random.default_rng(11)
    t = blobs(d, rng)
    p, q = metrics._pair(t, grr_estimate(t, 10 * d * d, 1.0, rng))
    exact = dense_w2_sq(p, q)
    r = w2_exact.solve(p, q, time_budget=1e-9)
    assert not r.certified
    assert r.lower <= exact + 1e-9 and exact <= r.upper + 1e-9


def test_auto_uses_the_certified_solver_and_falls_back_with_both_intervals(monkeypatch):
    """metrics' 'auto' gives the certified exact W2 (method 'certified', equal to the dense optimum); when the
    solver is not certified in time it falls back to BFM whose interval still holds the exact value, narrowed
    by the solver's bounds; method='certified' alone reports its own uncertified bounds with a note."""
    d = 32
    rng = np.random.default_rng(5)
    t = blobs(d, rng)
    q = gaussian_filter(t, 1.0)
    exact = math.sqrt(dense_w2_sq(*metrics._pair(t, q)))
    r = metrics.w2_readout(t, q, cell_m=10.0)
    assert r.method == "certified" and r.exact and r.value == pytest.approx(10 * exact, abs=1e-8)

    def never(p, q, **kw):
        return w2_exact.ExactW2(lower=0.9 * exact ** 2, upper=1.1 * exact ** 2, certified=False, rounds=1,
                                arcs=0, seconds=0.0)

    monkeypatch.setattr(metrics.w2_exact, "solve", never)
    fb = metrics.w2_readout(t, q)
    assert fb.method == "bfm" and not fb.exact and fb.lower <= exact <= fb.upper
    assert fb.lower >= math.sqrt(0.9) * exact - 1e-12 and fb.upper <= math.sqrt(1.1) * exact + 1e-12
    own = metrics.w2_readout(t, q, method="certified", time_budget=1.0)
    assert own.method == "certified" and not own.exact and own.lower <= exact <= own.upper
    assert "not yet certified" in own.note("W2", "cells")


def test_auto_on_large_grids_certifies_near_copies_and_keeps_bfm_far_from_the_truth(monkeypatch):
    """Above AUTO_CERTIFY_ALWAYS_SIDE, 'auto' answers a pair far apart (W2 well over 3 cells) with BFM at once,
    and a near-copy (a 1-cell blur, where BFM reads low) with the exact certified solver. (The budget is raised
    so that the rule, not the machine's load, decides: 'auto' budgets wall-clock seconds.)"""
    from ldpviz import metrics
    monkeypatch.setattr(metrics.transport, "AUTO_W2_BUDGET_S", 600.0)
    d = metrics.AUTO_CERTIFY_ALWAYS_SIDE * 2
    rng = np.random.default_rng(5)
    y, x = np.mgrid[0:d, 0:d]
    p = np.exp(-((x - 0.3 * d) ** 2 + (y - 0.4 * d) ** 2) / (2 * (0.08 * d) ** 2)) + 0.05 * rng.random((d, d))
    p /= p.sum()
    far = np.roll(p, d // 4, axis=1)
    blur = (p + np.roll(p, 1, 0) + np.roll(p, -1, 0) + np.roll(p, 1, 1) + np.roll(p, -1, 1)) / 5
    assert metrics.w2_readout(p, far, method="auto").method == "bfm"
    near = metrics.w2_readout(p, blur, method="auto")
    assert near.method == "certified" and near.exact


def test_w2_progressive_gives_bfm_first_then_the_exact_value():
    """metrics.w2_progressive (issue 28) yields BFM's readout first, labelled approximate with an interval holding
    the exact value, then the exact one equal to POT's dense optimum (in metres with cell_m); small supports
    yield the exact value only; a spent budget yields BFM narrowed by the solver's bounds, still approximate."""
    d = 24
    rng = np.random.default_rng(9)
    t = blobs(d, rng)
    q = grr_estimate(t, 30 * d * d, 3.0, rng)
    exact = math.sqrt(dense_w2_sq(*metrics._pair(t, q)))
    first, second = list(metrics.w2_progressive(t, q, cell_m=10.0))
    assert first.method == "bfm" and not first.exact and "approximate" in first.note("W2", "m")
    assert first.lower <= 10 * exact + 1e-9 <= first.upper + 2e-9
    assert second.exact and second.value == pytest.approx(10 * exact, rel=1e-12)
    small = np.zeros((d, d))
    small[3:6, 3:6] = 1.0
    only = list(metrics.w2_progressive(small, np.roll(small, 2, axis=1)))
    assert len(only) == 1 and only[0].exact and only[0].value == pytest.approx(2.0)
    late = list(metrics.w2_progressive(t, q, time_budget=1e-9))
    assert not late[-1].exact and late[-1].lower <= exact + 1e-9 <= late[-1].upper + 2e-9


def test_refined_coarse_plan_is_a_feasible_forest_the_crash_reproduces():
    """plan_refine spreads a coarse optimal plan over the children: the fine plan meets both fine marginals (to
    round-off), uses only children of coarse plan arcs, is a forest (a basic plan), and a crash taking its arcs
    in leaf order starts with no mass on the artificial root (the warm start of issue 28). Seeded blobs, a
    far shift, and odd sides."""
    from ldpviz.metrics import plan_refine
    rng = np.random.default_rng(282)
    for d in (16, 17, 24):
        t = blobs(d, rng)
        for p, q in ((t, gaussian_filter(t, 1.0)), (t, np.roll(np.roll(t, 5, 0), -4, 1)),
                     (rng.random((d, d)) * (rng.random((d, d)) < 0.3), rng.random((d, d)))):
            p, q = metrics._pair(p, q)
            pc, qc = w2_exact.coarsen_2x2(p), w2_exact.coarsen_2x2(q)
            dc = pc.shape[0]
            r, c = np.divmod(np.arange(dc * dc), dc)
            M = ((r[:, None] - r[None, :]) ** 2 + (c[:, None] - c[None, :]) ** 2).astype(float)
            plan = ot.emd(pc.ravel(), qc.ravel(), M, numItermax=10**8)
            ci, cj = np.nonzero(plan > 0)
            fi, fj, fm = plan_refine.refine_plan(d, ci, cj, plan[ci, cj], p, q)
            assert np.allclose(np.bincount(fi, fm, minlength=d * d), p.ravel(), atol=1e-14)
            assert np.allclose(np.bincount(fj, fm, minlength=d * d), q.ravel(), atol=1e-14)
            coarse = lambda x: (x // d // 2) * dc + (x % d) // 2  # noqa: E731
            assert plan[coarse(fi), coarse(fj)].min() > 0
            # a forest: edges = nodes - components
            nodes = np.unique(np.concatenate([fi, d * d + fj]))
            uf = {int(x): int(x) for x in nodes}

            def find(x):
                while uf[x] != x:
                    x = uf[x]
                return x
            for a, b in zip(fi, d * d + fj):
                ra, rb = find(int(a)), find(int(b))
                assert ra != rb, "the refined plan has a cycle"
                uf[ra] = rb
            ia, ib = np.flatnonzero(p.ravel() > 0), np.flatnonzero(q.ravel() > 0)
            pa, pb = np.full(d * d, -1), np.full(d * d, -1)
            pa[ia], pb[ib] = np.arange(len(ia)), np.arange(len(ib))
            la, lb = pa[fi], pb[fj]
            lo = plan_refine.leaf_order(len(ia) + len(ib), la, len(ia) + lb)
            key = np.zeros(len(fi))
            key[lo] = np.arange(len(lo))
            cost = ((fi // d - fj // d) ** 2 + (fi % d - fj % d) ** 2).astype(float)
            sx = TransportSimplex(p.ravel()[ia], q.ravel()[ib], la, lb, cost, order_key=key)
            assert sx.artificial_flow <= 1e-12
            assert sx.cost_value == pytest.approx(float(fm @ cost), rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("d", [24, 40])
def test_warm_started_levels_equal_pot_where_mass_moves_far(d):
    """The warm-started coarse-to-fine path (coarse plan refined, 2 x 2 children only) against POT's dense
    emd2 to 1e-9, forcing the sparse levels (no dense shortcut): blobs moved far (a third of the grid), a
    one-cell source against a spread target, unequal supports (a sparse source, a full target), a target with
    zero rows and columns, and two shifted Gaussians."""
    rng = np.random.default_rng([2801, d])
    y, x = np.mgrid[0:d, 0:d] + 0.5
    t = blobs(d, rng)
    one = np.zeros((d, d))
    one[d // 3, 2 * d // 3] = 1.0
    sparse = np.where(rng.random((d, d)) < 0.1, rng.random((d, d)), 0.0)
    holes = rng.random((d, d))
    holes[::3] = 0.0
    holes[:, 1::4] = 0.0
    g = lambda cx, cy: np.exp(-((x - cx) ** 2 + (y - cy) ** 2) / (2 * (0.1 * d) ** 2))  # noqa: E731
    cases = {"far shift": (t, np.roll(np.roll(t, d // 3, 0), d // 4, 1)),
             "one cell": (one, gaussian_filter(t, 2.0)),
             "spread to one cell": (t, one),
             "unequal supports": (sparse, rng.random((d, d))),
             "zero rows": (rng.random((d, d)), holes),
             "shifted gaussians": (g(0.35 * d, 0.4 * d), g(0.35 * d + 0.15 * d, 0.4 * d + 0.2 * d))}
    import ldpviz.metrics.w2_exact as we
    old = we._DENSE_MAX_PAIRS, we._BASE_SIDE
    try:
        we._DENSE_MAX_PAIRS, we._BASE_SIDE = 0, 4
        for name, (p, q) in cases.items():
            p, q = metrics._pair(p, q)
            exact = dense_w2_sq(p, q)
            st: dict = {}
            r = w2_exact.solve(p, q, stats=st)
            assert len(st["levels"]) >= 3, name          # the warm-started levels ran
            assert r.certified, name
            assert abs(r.upper - exact) <= 1e-9 * max(1.0, exact), (name, r.upper, exact)
            assert r.lower <= exact + 1e-9, name
    finally:
        we._DENSE_MAX_PAIRS, we._BASE_SIDE = old


def full_support_blur(d: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Issue 38's full-support near-copy, the pair bench/w2_speed.py times (one construction for both)."""
    import importlib.util
    from pathlib import Path
    path = Path(__file__).resolve().parents[2] / "bench" / "w2_speed.py"
    spec = importlib.util.spec_from_file_location("w2_speed", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.full_support_blur(d, seed)


@pytest.mark.parametrize("d, seed", [(20, 0), (27, 1), (32, 2), pytest.param(45, 3, marks=pytest.mark.slow)])
def test_full_support_near_copy_equals_pot_dense(d, seed):
    """Full-support pairs (a smooth mixture on every cell and its 1-cell blur) solved coarse to fine by the
    pivot rule and tree update of issue 38: the certified W2^2 and both bounds equal POT's dense ot.emd2 to 1e-9
    (relative to max(1, value)), and the finest level ran the sparse simplex (not the all-pairs base case)."""
    p, q = full_support_blur(d, seed)
    assert np.all(p > 0) and np.all(q > 0)
    exact = dense_w2_sq(p, q)
    r = w2_exact.solve(p, q)
    assert r.certified
    assert r.arcs < (d * d) ** 2 / 4
    for value in (r.upper, r.lower):
        assert abs(value - exact) <= 1e-9 * max(1.0, exact), (d, value, exact)
