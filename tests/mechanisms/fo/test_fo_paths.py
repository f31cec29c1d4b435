"""Per-user and aggregate paths of the frequency oracles: same distribution, chosen automatically, reported."""

from __future__ import annotations

import numpy as np
import pytest

from ldpviz import mechanisms
from ldpviz.geo.domain import Binned, Grid, Region
from ldpviz.errors import LdpvizInputError
from ldpviz.mechanisms.fo import oracles as fo
from ldpviz.mechanisms import path_cost


def _counts(D: int, n: int, seed: int = 3) -> np.ndarray:
    weights = 1.0 / np.arange(1, D + 1) ** 1.2
    return np.random.default_rng(seed).multinomial(n, weights / weights.sum())


def _per_user_histogram(oracle: str, counts: np.ndarray, eps: float, rng: np.random.Generator) -> np.ndarray:
    values = np.repeat(np.arange(counts.size), counts)
    reports = fo.oracle_perturb(oracle, values, counts.size, eps, rng, path="per-user")
    return fo.oracle_statistic(oracle, reports, counts.size).counts


@pytest.mark.parametrize("oracle,channel", [("grr", fo.grr_channel), ("hr", fo.hr_channel)])
@pytest.mark.parametrize("eps", [0.5, 3.0])
def test_report_histograms_agree_in_distribution(oracle, channel, eps):
    """Over 300 seeded draws per path of the report histogram for fixed true counts (D = 12, n = 2,000):
    every output's mean count under each path is within 4.5 standard errors of its exact expectation
    sum_v n_v P[y | v] from the oracle's channel, the two paths' means are within 4.5 SE of each other, and
    the per-output variances agree within 15% on average (the histogram is the server's sufficient statistic)."""
    D, n, runs = 12, 2_000, 300
    counts = _counts(D, n)
    expected = channel(D, eps) @ counts
    sample = {"aggregate": np.array([fo.oracle_perturb(oracle, np.repeat(np.arange(D), counts), D, eps,
                                                       np.random.default_rng([21, s]), path="aggregate").counts
                                     for s in range(runs)]),
              "per-user": np.array([_per_user_histogram(oracle, counts, eps, np.random.default_rng([22, s]))
                                    for s in range(runs)])}
    for hist in sample.values():
        assert np.all(hist.sum(axis=1) == n)
        se = hist.std(axis=0, ddof=1) / np.sqrt(runs)
        assert np.all(np.abs(hist.mean(axis=0) - expected) < 4.5 * se + 1e-9)
    a, b = sample["aggregate"], sample["per-user"]
    se_diff = np.sqrt(a.var(axis=0, ddof=1) / runs + b.var(axis=0, ddof=1) / runs)
    assert np.all(np.abs(a.mean(axis=0) - b.mean(axis=0)) < 4.5 * se_diff + 1e-9)
    assert a.var(axis=0).mean() == pytest.approx(b.var(axis=0).mean(), rel=0.15)


@pytest.mark.parametrize("oracle", fo.ORACLES)
def test_estimates_agree_in_mean_and_variance_with_theory(oracle):
    """Per-cell unbiased counts over 300 seeded runs per path (D = 64, n = 3,000, eps = 1): each path's mean
    is within 4.5 SE of the truth in every cell and its variance, averaged over cells, is within 12% of the
    analytical variance (USENIX'17 Thm. 2; HR: hr_variance), so both paths estimate with the same error."""
    D, n, runs, eps = 64, 3_000, 300, 1.0
    counts = _counts(D, n, seed=5)
    values = np.repeat(np.arange(D), counts)
    theory = fo.oracle_variance(oracle, n, counts, D, eps).mean()
    for path, salt in (("aggregate", 31), ("per-user", 32)):
        est = np.array([fo.oracle_counts(oracle, values, D, eps, np.random.default_rng([salt, s]), path=path)
                        for s in range(runs)])
        se = est.std(axis=0, ddof=1) / np.sqrt(runs)
        assert np.all(np.abs(est.mean(axis=0) - counts) < 4.5 * se), path
        assert est.var(axis=0, ddof=1).mean() == pytest.approx(theory, rel=0.12), path


def test_hr_aggregate_draws_in_bounded_chunks():
    """The HR aggregate path splits its informed users into chunks of about 4M; the total stays n."""
    counts = np.zeros(8, dtype=np.int64)
    counts[2] = 9_000_000   # one value holding more than a chunk
    counts[5] = 10
    hist = fo.hr_aggregate_histogram(counts, 2.0, np.random.default_rng(0))
    assert hist.counts.sum() == hist.n == 9_000_010


@pytest.mark.parametrize("oracle", fo.ORACLES)
def test_statistic_of_reports_gives_the_same_estimate_and_merges(oracle):
    """Estimating from the reports or from their statistic gives identical counts; the statistics of two
    halves of the users add up to the statistic of all of them."""
    D = 20
    values = np.random.default_rng(1).integers(0, D, 1_000)
    reports = fo.oracle_perturb(oracle, values, D, 1.0, np.random.default_rng(2))
    stat = fo.oracle_statistic(oracle, reports, D)
    assert stat.path == "per-user" and stat.n == 1_000
    np.testing.assert_array_equal(fo.oracle_estimate(oracle, reports, D, 1.0), fo.oracle_estimate(oracle, stat, D, 1.0))
    r1 = fo.oracle_perturb(oracle, values[:400], D, 1.0, np.random.default_rng(3))
    r2 = fo.oracle_perturb(oracle, values[400:], D, 1.0, np.random.default_rng(4))
    agg = fo.oracle_perturb(oracle, values[400:], D, 1.0, np.random.default_rng(4), path="aggregate")
    merged = fo.merge_statistics([fo.oracle_statistic(oracle, r1, D), fo.oracle_statistic(oracle, r2, D)])
    field = "counts" if oracle in ("grr", "hr") else "support"
    np.testing.assert_array_equal(getattr(merged, field), getattr(fo.oracle_statistic(oracle, r1, D), field)
                                  + getattr(fo.oracle_statistic(oracle, r2, D), field))
    assert merged.n == 1_000 and merged.path == "per-user"
    assert fo.merge_statistics([fo.oracle_statistic(oracle, r1, D), agg]).path == "mixed"
    with pytest.raises(LdpvizInputError, match="nothing to merge"):
        fo.merge_statistics([])


def test_cost_model_routes_by_users_times_cells():
    """The measured model sends OLH and OUE to the aggregate path whenever users outnumber a handful, GRR
    and HR to it at 1M users over 4,096 cells, and keeps GRR per-user for few users over many cells."""
    for oracle in fo.ORACLES:
        assert path_cost.choose_path(oracle, 1_000_000, 4096) == "aggregate"
        assert path_cost.choose_path(oracle, 1_000_000, 64) == "aggregate"
    assert path_cost.choose_path("olh", 1_000, 4096) == "aggregate"
    assert path_cost.choose_path("grr", 10_000, 4096) == "per-user"
    assert path_cost.choose_path("hr", 10_000, 4096) == "per-user"
    with pytest.raises(LdpvizInputError, match="no cost model"):
        path_cost.predicted_seconds("rappor", "aggregate", 10, 10)


@pytest.mark.parametrize("name", ["grr", "olh", "oue", "hr"])
def test_mechanism_says_which_path_it_used(name):
    """'auto' is the default; run() reports the path it took; perturb() stays the per-user client half
    (what the privacy audit draws); either path can be forced."""
    grid = Grid(Region(0, 0, 1000), 4)
    cells = np.random.default_rng(0).integers(0, 16, 200_000)
    users = Binned(cells, np.zeros((len(cells), 2)), 0)
    mech = mechanisms.create(name, grid, 1.0)
    assert mech.path == "auto" and mech.path_for(200_000) == "aggregate"
    est = mech.run(users, np.random.default_rng(1))
    assert est.info["path"] == "aggregate" and est.info["path requested"] == "auto"
    assert not isinstance(mech.perturb(users, np.random.default_rng(1)), (fo.ReportHistogram, fo.SupportCounts))
    forced = mechanisms.create(name, grid, 1.0, path="per-user").run(users, np.random.default_rng(1))
    assert forced.info["path"] == "per-user" and forced.info["path requested"] == "per-user"


def test_grid_decompositions_report_their_paths():
    """UG, PrivAG and AAG choose the oracle path per round and say which they used."""
    grid = Grid(Region(0, 0, 1000), 16)
    users = grid.bin_unit(np.random.default_rng(4).random((50_000, 2)))
    for name in ("ug", "privag", "aag"):
        est = mechanisms.create(name, grid, 1.0).run(users, np.random.default_rng(0))
        assert est.info["path"] in ("per-user", "aggregate") and est.info["path requested"] == "auto"
        forced = mechanisms.create(name, grid, 1.0, path="per-user").run(users, np.random.default_rng(0))
        assert forced.info["path"] == "per-user"
    est = mechanisms.create("privag", grid, 1.0, path="aggregate").run(users, np.random.default_rng(0))
    assert est.info["first-phase path"] == est.info["path"] == "aggregate"


@pytest.mark.parametrize("name", ["dam", "huem"])
def test_disk_channel_aggregate_histogram_agrees_with_per_user(name):
    """DAM and HUEM: over 400 seeded draws per path of the report histogram over the output box (d = 5,
    eps = 2, true counts 0..2,000 per cell, so both the one-by-one and the multinomial branches run), every
    output's mean is within 4.5 SE of its exact expectation P @ counts from the dense channel, and the summed
    per-output variances of the two paths agree within 10%."""
    grid = Grid(Region(0, 0, 1000), 5)
    mech = mechanisms.create(name, grid, 2.0)
    chan = mech.chan
    counts = np.zeros(25, dtype=np.int64)
    counts[[1, 2, 3, 4, 12]] = [3, 100, 7, 2_000, 40]
    expected = np.zeros(chan.out_side ** 2)
    expected[chan.mask_cells] = chan.dense() @ counts
    runs = 400
    cells = np.repeat(np.arange(25), counts)
    agg = np.array([chan.aggregate(counts, np.random.default_rng([41, s])) for s in range(runs)])
    per = np.array([np.bincount(chan.sample(cells, np.random.default_rng([42, s])), minlength=chan.out_side ** 2)
                    for s in range(runs)])
    for hist in (agg, per):
        assert np.all(hist.sum(axis=1) == counts.sum())
        se = hist.std(axis=0, ddof=1) / np.sqrt(runs)
        assert np.all(np.abs(hist.mean(axis=0) - expected) < 4.5 * se + 1e-9)
    assert agg.var(axis=0).sum() == pytest.approx(per.var(axis=0).sum(), rel=0.10)


def test_dam_chooses_and_reports_its_path():
    """DAM: 'auto' takes the aggregate histogram for many users on a small grid and says so; the estimate
    from the histogram equals the one from the same reports; the forced per-user path stays available."""
    grid = Grid(Region(0, 0, 1000), 8)
    users = grid.bin_unit(np.random.default_rng(5).random((300_000, 2)))
    mech = mechanisms.create("dam", grid, 2.0)
    est = mech.run(users, np.random.default_rng(0))
    assert est.info["path"] == "aggregate" and est.info["path requested"] == "auto"
    per = mechanisms.create("dam", grid, 2.0, path="per-user")
    reports = per.collect(users, np.random.default_rng(0))
    np.testing.assert_array_equal(per.estimate(reports).density, per.estimate(per.statistic(reports)).density)
    assert per.estimate(reports).info["path"] == "per-user"


def test_experiment_result_notes_the_path():
    """experiment.run says in its notes which path the reports took."""
    from ldpviz import experiment
    result = experiment.run(experiment.Scenario(dataset="uniform", mechanism="oue", grid_side=8, seed=1))
    assert any("aggregate path (requested: auto" in n for n in result.notes)
    result = experiment.run(experiment.Scenario(dataset="uniform", mechanism="oue", grid_side=8, seed=1,
                                                params={"path": "per-user"}))
    assert any("per-user path (requested: per-user" in n for n in result.notes)


@pytest.mark.parametrize("name,params", [("planar-laplace", {}), ("mdsw", {}), ("mdsw", {"split": "budget"}),
                                         ("sem-geoi", {"subset_size": 2}), ("dam", {}), ("exact", {})])
def test_histogram_statistic_gives_the_same_estimate(name, params):
    """Mechanisms whose server reads only report counts estimate identically from the reports and from their
    histogram (what a partitioned run reduces), and the histogram counts every user once."""
    grid = Grid(Region(0, 0, 1000), 6)
    users = grid.bin_unit(np.random.default_rng(3).random((4_000, 2)))
    mech = mechanisms.create(name, grid, 2.0, **params)
    reports = mech.perturb(users, np.random.default_rng(4))
    stat = mech.statistic(reports)
    assert stat.n == 4_000 and stat.path == "per-user"
    a, b = mech.estimate(reports), mech.estimate(stat)
    np.testing.assert_array_equal(a.density, b.density)
    assert a.info["reports"] == b.info["reports"] == 4_000
    with pytest.raises(LdpvizInputError, match="report histogram over"):
        fo.report_histogram(fo.ReportHistogram(np.zeros(3, dtype=np.int64), 0), 4)
