"""Aggregate paths of the client mechanisms outside fo.py (tile oracles, OLH-H, PLDP, SEM-Geo-I; planar Laplace
has none): the server's statistic has the per-user path's distribution, 'auto' picks by size, and the estimate
names the path."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ldpviz import mechanisms
from ldpviz.geo.domain import Binned, Grid, Region
from ldpviz.errors import LdpvizInputError
from ldpviz.mechanisms.srr import pldp
from ldpviz.mechanisms.fo.oracles import ReportHistogram
from ldpviz.mechanisms.fo.hadamard import hadamard_histogram
from ldpviz.mechanisms.dam.sem_geoi import SubsetTables

RUNS = 300


def _users(side: int, n: int, seed: int = 3) -> Binned:
    """n users over a side x side grid with skewed cell weights (exact cell centres as positions)."""
    w = 1.0 / np.arange(1, side * side + 1) ** 1.2
    cells = np.random.default_rng(seed).choice(side * side, size=n, p=w / w.sum())
    rows, cols = np.divmod(cells, side)
    return Binned(cells.astype(np.int64), np.column_stack([(cols + 0.5) / side, (rows + 0.5) / side]), 0)


def _check_same_distribution(agg: np.ndarray, per: np.ndarray, expected: np.ndarray, var_rel: float = 0.15) -> None:
    """Each path's mean within 4.5 SE of ``expected`` per output, the paths' means within 4.5 SE of each other,
    and their per-output variances equal within ``var_rel`` on average."""
    runs = len(agg)
    for sample in (agg, per):
        se = sample.std(axis=0, ddof=1) / np.sqrt(runs)
        assert np.all(np.abs(sample.mean(axis=0) - expected) < 4.5 * se + 1e-9)
    se_diff = np.sqrt(agg.var(axis=0, ddof=1) / runs + per.var(axis=0, ddof=1) / runs)
    assert np.all(np.abs(agg.mean(axis=0) - per.mean(axis=0)) < 4.5 * se_diff + 1e-9)
    assert agg.var(axis=0).mean() == pytest.approx(per.var(axis=0).mean(), rel=var_rel)


@pytest.mark.parametrize("name", ["grr-tiles", "hr-tiles"])
def test_tile_oracle_histograms_agree_in_distribution(name):
    """Report histograms over the grid domain (4 x 4 = 16 locations, n = 1,500, eps = 1), 300 seeded draws per
    path: each path's mean count per output is within 4.5 SE of sum_x n_x Q[y, x] from the oracle's own channel,
    the paths agree in mean (4.5 SE) and in variance (15% on average)."""
    grid = Grid(Region(0.0, 0.0, 1000.0), 4)
    users = _users(4, 1_500)
    agg_mech = mechanisms.create(name, grid, 1.0, path="aggregate")
    per_mech = mechanisms.create(name, grid, 1.0, path="per-user")
    domain = per_mech.build_domain(users)
    counts = np.bincount(per_mech.positions(domain, users), minlength=domain.size)
    channel = per_mech.domain_channel(domain.size)
    expected = channel @ counts

    def per_hist(seed: int) -> np.ndarray:
        reports = per_mech.perturb(users, np.random.default_rng([12, seed])).reports
        if name == "grr-tiles":
            return np.bincount(reports, minlength=channel.shape[0])
        from ldpviz.mechanisms.fo.hadamard import hadamard_code
        return hadamard_histogram(reports, hadamard_code(domain.size, 1.0, per_mech.variant))

    agg = np.array([agg_mech.perturb(users, np.random.default_rng([11, s])).reports.counts for s in range(RUNS)])
    per = np.array([per_hist(s) for s in range(RUNS)])
    assert np.all(agg.sum(axis=1) == len(users.cells))
    _check_same_distribution(agg, per, expected)


def test_olh_h_estimates_agree_in_distribution():
    """OLH-H leaf estimates (raw, after constrained inference) on a 4 x 4 grid domain, n = 2,000, eps = 1, 200
    seeded runs per path: each path's mean per leaf is within 4.5 SE of the true frequency, and the paths'
    per-leaf variances agree within 20% on average (the aggregate draws the same per-level OLH statistic)."""
    grid = Grid(Region(0.0, 0.0, 1000.0), 4)
    users = _users(4, 2_000)
    runs = 200
    out = {}
    for path, salt in (("aggregate", 21), ("per-user", 22)):
        mech = mechanisms.create("olh-h", grid, 1.0, path=path)
        out[path] = np.array([mech.run(users, np.random.default_rng([salt, s])).raw for s in range(runs)])
        assert mech.run(users, np.random.default_rng(0)).info["path"] == path
    domain = mech.build_domain(users)
    truth = np.bincount(mech.positions(domain, users), minlength=domain.size) / len(users.cells)
    for sample in out.values():
        se = sample.std(axis=0, ddof=1) / np.sqrt(runs)
        assert np.all(np.abs(sample.mean(axis=0) - truth) < 4.5 * se)
    assert out["aggregate"].var(axis=0).mean() == pytest.approx(out["per-user"].var(axis=0).mean(), rel=0.2)


def test_pldp_row_sums_agree_with_theory():
    """PCEP row sums r_j for one fixed public sign matrix (m = 8 rows, 16 locations, n = 2,000, eps = 1), 400
    seeded draws per path: mean within 4.5 SE of E[r_j] = sum_x n_x sign[j, x] (2 keep - 1) / m, and each path's
    variance within 15% of the exact sum_x n_x (1/m - ((2 keep - 1) / m)^2) on average."""
    m, D, n, eps, runs = 8, 16, 2_000, 1.0, 400
    signs = pldp.projection_signs(m, D, 7)
    counts = np.random.default_rng(5).multinomial(n, np.arange(1, D + 1) / np.arange(1, D + 1).sum())
    positions = np.repeat(np.arange(D), counts)
    bias = 2 * math.exp(eps) / (math.exp(eps) + 1) - 1
    mean = signs.astype(float) @ counts * bias / m
    var = counts.sum() * 1.0 / m - (signs.astype(float) ** 2 @ counts) * (bias / m) ** 2
    agg = np.array([pldp.pcep_row_sums_aggregate(counts, signs, eps, np.random.default_rng([31, s]))
                    for s in range(runs)])
    per = []
    for s in range(runs):
        rows, reported = pldp.pcep_perturb(positions, signs, eps, np.random.default_rng([32, s]))
        per.append(np.bincount(rows, weights=reported, minlength=m))
    per = np.array(per)
    _check_same_distribution(agg, per, mean)
    for sample in (agg, per):
        assert sample.var(axis=0).mean() == pytest.approx(var.mean(), rel=0.15)


@pytest.mark.parametrize("k", [1, 5])
def test_sem_membership_histogram_agrees_in_distribution(k):
    """SEM-Geo-I membership histogram (how often each cell is named) on 4 x 4 cells, eps' = 0.8 per cell, subset
    size k, n = 400, 300 seeded draws per path: totals are exactly n k, each path's mean per cell is within 4.5 SE
    of sum_x n_x P(v in S | x), and the paths agree in mean and in variance (15% on average)."""
    tables = SubsetTables(4, 0.8, k)
    counts = np.random.default_rng(0).multinomial(400, np.arange(1, 17) / np.arange(1, 17).sum())
    cells = np.repeat(np.arange(16), counts)
    agg = np.array([tables.aggregate_membership(counts, np.random.default_rng([41, s])) for s in range(RUNS)])
    per = np.array([np.bincount(tables.sample(cells, np.random.default_rng([42, s])).ravel().astype(np.int64),
                                minlength=16) for s in range(RUNS)])
    assert np.all(agg.sum(axis=1) == 400 * k)
    _check_same_distribution(agg, per, tables.member @ counts)


def test_planar_laplace_has_no_aggregate_path_over_exact_positions():
    """Planar Laplace perturbs exact positions, so no exact aggregate draw exists: 'aggregate' and 'auto' run the
    per-user client half (the same histogram as per-user reports for the same seed), and the estimate's info
    says so ('path' per-user, a 'path note', and the server model)."""
    grid = Grid(Region(0.0, 0.0, 1000.0), 4)
    users = _users(4, 2_000)
    per = mechanisms.create("planar-laplace", grid, 2.0, path="per-user")
    for path in ("aggregate", "auto"):
        mech = mechanisms.create("planar-laplace", grid, 2.0, path=path)
        assert mech.path_for(users) == "per-user"
        hist = mech.collect(users, np.random.default_rng(4))
        counts = hist.counts if isinstance(hist, ReportHistogram) else np.bincount(hist, minlength=16)
        np.testing.assert_array_equal(counts, np.bincount(per.collect(users, np.random.default_rng(4)), minlength=16))
        info = mech.run(users, np.random.default_rng(0)).info
        assert info["path"] == "per-user" and info["path requested"] == path
        assert "no exact aggregate" in info["path note"] and "uniform within" in info["server model"]
    assert "path note" not in per.run(users, np.random.default_rng(0)).info


@pytest.mark.parametrize("name,side,small_side,params", [
    ("grr-tiles", 64, 64, {}), ("hr-tiles", 64, 64, {}), ("olh-h", 64, 2, {}), ("pldp", 64, 64, {}),
    ("srr", 64, 64, {}),
    ("sem-geoi", 16, 16, {"calibration": "raw", "subset_size": 4}),
])
def test_auto_picks_aggregate_for_a_million_users_and_per_user_for_a_few(name, side, small_side, params):
    """'auto' takes the aggregate path for 1,000,000 users (d = 64; SEM-Geo-I, whose aggregate
    pays only with crowded cells, at d = 16, SEM-Geo-I's grids stop at 32) and the per-user path for 20 users
    (OLH-H on a 2 x 2 grid: its per-user server evaluates every user's hash on every node, a cost in D alone, so
    at d = 64 the aggregate is predicted faster for any n, as for OLH); the estimate's info names both paths."""
    grid = Grid(Region(0.0, 0.0, 10_000.0), side)
    mech = mechanisms.create(name, grid, 1.0, **params)
    assert mech.path_for(_users(side, 1_000_000, seed=1)) == "aggregate"
    small_grid = Grid(Region(0.0, 0.0, 10_000.0), small_side)
    small_mech = mechanisms.create(name, small_grid, 1.0, **params)
    small = _users(small_side, 20, seed=2)
    assert small_mech.path_for(small) == "per-user"
    est = small_mech.run(small, np.random.default_rng(0))
    assert est.info["path"] == "per-user" and est.info["path requested"] == "auto"
    forced = mechanisms.create(name, small_grid, 1.0, path="aggregate", **params)
    assert forced.run(small, np.random.default_rng(0)).info["path"] == "aggregate"


def test_path_parameter_is_validated():
    """A path other than auto, per-user or aggregate is refused with a clear message naming the choices."""
    grid = Grid(Region(0.0, 0.0, 1000.0), 4)
    with pytest.raises(LdpvizInputError, match="path"):
        mechanisms.create("olh-h", grid, 1.0, path="fast")


def test_aggregate_statistic_is_a_report_histogram_where_the_server_reads_one():
    """SEM-Geo-I and planar Laplace hand the server a ReportHistogram on the aggregate path, so their additive
    statistic() (what a cluster run reduces) accepts it unchanged."""
    grid = Grid(Region(0.0, 0.0, 1000.0), 4)
    users = _users(4, 500)
    for name, params, path in (("planar-laplace", {}, "per-user"),
                               ("sem-geoi", {"calibration": "raw", "subset_size": 3}, "aggregate")):
        mech = mechanisms.create(name, grid, 1.0, path="aggregate", **params)
        stat = mech.statistic(mech.collect(users, np.random.default_rng(1)))
        assert isinstance(stat, ReportHistogram) and stat.n == 500 and stat.path == path


@pytest.mark.parametrize("eps", [1.0, 4.0])
def test_srr_histograms_agree_in_distribution(eps):
    """SRR report histograms over the 4 x 4 grid domain (n = 1,500), 300 seeded draws per path: each path's mean
    per position is within 4.5 SE of sum_x n_x Q[y, x] from the plan's staircase channel, and the paths agree in
    mean (4.5 SE) and variance (15% on average): the mixture-of-uniform-ranges aggregate is the channel."""
    grid = Grid(Region(0.0, 0.0, 1000.0), 4)
    users = _users(4, 1_500)
    agg_mech = mechanisms.create("srr", grid, eps, path="aggregate")
    per_mech = mechanisms.create("srr", grid, eps, path="per-user")
    domain = per_mech.build_domain(users)
    plan = per_mech.plan(domain)
    counts = np.bincount(per_mech.positions(domain, users), minlength=domain.size)
    agg = np.array([agg_mech.collect(users, np.random.default_rng([61, s])).counts for s in range(RUNS)])
    per = np.array([np.bincount(per_mech.collect(users, np.random.default_rng([62, s])).positions,
                                minlength=domain.size) for s in range(RUNS)])
    assert np.all(agg.sum(axis=1) == len(users.cells))
    _check_same_distribution(agg, per, plan.channel() @ counts)


def test_uniform_range_histogram_matches_direct_draws():
    """Draws uniform on overlapping ranges of [0, 13) (a size that is not a power of two), 2,000 seeded runs: the
    total is exact, each position's mean is within 4.5 SE of sum_i c_i / |range_i| over the ranges holding it, and
    the variances agree with drawing every value one by one within 10% on average."""
    from ldpviz.mechanisms.srr.range_draws import uniform_range_histogram
    size, runs = 13, 2_000
    lo, hi, c = np.array([0, 3, 5, 12, 0]), np.array([13, 9, 6, 13, 7]), np.array([50, 30, 20, 10, 40])
    expected = np.zeros(size)
    for a, b, k in zip(lo, hi, c):
        expected[a:b] += k / (b - a)
    agg = np.array([uniform_range_histogram(lo, hi, c, size, np.random.default_rng([71, s])) for s in range(runs)])
    direct = []
    for s in range(runs):
        r = np.random.default_rng([72, s])
        direct.append(np.bincount(np.concatenate([r.integers(a, b, k) for a, b, k in zip(lo, hi, c)]), minlength=size))
    assert np.all(agg.sum(axis=1) == c.sum())
    _check_same_distribution(agg, np.array(direct), expected, var_rel=0.1)


@pytest.mark.parametrize("eps,variant", [(3.0, "general"), (1.0, "general"), (0.5, "high-privacy")])
def test_hadamard_aggregate_agrees_with_per_user_in_distribution(eps, variant):
    """Hadamard response report histograms (40 values, counts 0..59 so that both the one-by-one and the
    multinomial branch of the aggregate run where s is small), 300 seeded draws per path: means within 4.5 SE of
    the code's channel, and the paths agree in mean and in variance (15% on average)."""
    from ldpviz.mechanisms.fo.hadamard import (hadamard_aggregate_histogram, hadamard_channel, hadamard_code,
                                               hadamard_perturb)
    code = hadamard_code(40, eps, variant)
    counts = np.random.default_rng(5).integers(0, 60, size=40)
    values = np.repeat(np.arange(40), counts)
    agg = np.array([hadamard_aggregate_histogram(counts, code, np.random.default_rng([81, s])) for s in range(RUNS)])
    per = np.array([np.bincount(hadamard_perturb(values, code, np.random.default_rng([82, s])), minlength=code.outputs)
                    for s in range(RUNS)])
    assert np.all(agg.sum(axis=1) == counts.sum())
    _check_same_distribution(agg, per, hadamard_channel(code) @ counts)


@pytest.mark.parametrize("name", ["grr-tiles", "hr-tiles", "olh-h", "srr", "pldp"])
def test_reports_page_says_the_aggregate_path_sent_a_tally(name):
    """What the server received, in words (ldpviz.experiment.report_description.describe), says 'tally' for the
    aggregate path's statistic of every location-domain mechanism, and counts the users."""
    from ldpviz.experiment.report_description import describe
    grid = Grid(Region(0.0, 0.0, 1000.0), 4)
    users = _users(4, 300)
    mech = mechanisms.create(name, grid, 1.0, path="aggregate")
    text = describe(mech, mech.collect(users, np.random.default_rng(0)), 300)["what phones sent"]
    assert "tally" in text and "300 reports" in text
