"""Frequency oracles GRR, OLH, OUE, HR: privacy, unbiasedness, variance, aggregate paths."""

import math

import numpy as np
import pytest
import scipy.linalg
from scipy import stats

from ldpviz import mechanisms
from ldpviz.geo.domain import Binned, Grid, Region
from ldpviz.errors import LdpvizInputError
from ldpviz.mechanisms.fo import oracles as fo

EPSILONS = [0.5, 1.0, 3.0]


def _population(domain_size: int, n: int) -> np.ndarray:
    """A skewed population: value v held by a share proportional to v + 1."""
    weights = np.arange(1, domain_size + 1, dtype=float)
    counts = np.floor(weights / weights.sum() * n).astype(int)
    counts[0] += n - counts.sum()
    return np.repeat(np.arange(domain_size), counts)


# ---- building blocks ------------------------------------------------------------

def test_fwht_matches_sylvester_hadamard():
    x = np.random.default_rng(1).normal(size=32)
    np.testing.assert_allclose(fo.fwht(x), scipy.linalg.hadamard(32) @ x, atol=1e-10)


@pytest.mark.parametrize("domain_size", [1, 3, 7, 8, 100])
def test_hr_output_size_is_smallest_power_of_two_above_domain(domain_size):
    K = fo.hr_output_size(domain_size)
    assert K > domain_size and K & (K - 1) == 0 and K // 2 <= domain_size


def test_olh_buckets_rule():
    assert fo.olh_buckets(1.0) == round(math.e + 1) == 4
    assert fo.olh_buckets(0.1) == 2
    assert fo.olh_buckets(5.0) == round(math.exp(5) + 1)
    assert fo.olh_buckets(40.0) == fo.OLH_MAX_BUCKETS


def test_olh_support_counts_equal_brute_force():
    """The incremental uint32 support counting equals evaluating every user's hash on every value."""
    rng = np.random.default_rng(3)
    D = 37
    for eps in (0.5, 2.0, 6.0):
        reports = fo.olh_perturb(rng.integers(0, D, 3000), D, eps, rng)
        brute = (fo.olh_hash(reports.seeds[:, None], np.arange(D)[None, :], reports.g)
                 == reports.buckets[:, None]).sum(axis=0)
        np.testing.assert_array_equal(fo.olh_support_counts(reports, D, chunk=700), brute)


def test_olh_hash_family_is_universal():
    """Two distinct values collide under a random member with probability 1/g (binomial test, p > 1e-3)."""
    rng = np.random.default_rng(4)
    g = 5
    seeds = rng.integers(0, (fo.OLH_PRIME - 1) * fo.OLH_PRIME, size=200_000, dtype=np.uint64)
    collide = fo.olh_hash(seeds, np.full(len(seeds), 11), g) == fo.olh_hash(seeds, np.full(len(seeds), 12), g)
    assert stats.binomtest(int(collide.sum()), len(seeds), 1 / g).pvalue > 1e-3
    buckets = np.bincount(fo.olh_hash(seeds, np.full(len(seeds), 11), g), minlength=g)
    assert stats.chisquare(buckets).pvalue > 1e-3


# ---- privacy -----------------------------------------------------------------------

def _max_ratio(P: np.ndarray) -> float:
    return float((P.max(axis=1) / P.min(axis=1)).max())


@pytest.mark.parametrize("eps", [0.1, 1.0, 5.0])
@pytest.mark.parametrize("domain_size", [1, 2, 5, 16, 33])
def test_grr_and_hr_channels_are_epsilon_ldp(eps, domain_size):
    """Columns sum to 1 and max_y P(y|x)/P(y|x') <= e^eps (exact channel)."""
    for P in (fo.grr_channel(domain_size, eps), fo.hr_channel(domain_size, eps)):
        np.testing.assert_allclose(P.sum(axis=0), 1.0, atol=1e-12)
        assert _max_ratio(P) <= math.exp(eps) * (1 + 1e-9)
    # HR uses its full privacy budget whenever there are two values.
    if domain_size >= 2:
        assert _max_ratio(fo.hr_channel(domain_size, eps)) == pytest.approx(math.exp(eps))


@pytest.mark.parametrize("eps", [0.1, 1.0, 5.0])
def test_oue_is_epsilon_ldp_per_bit_and_per_report(eps):
    """Per bit, and over whole reports: only the two differing bits matter, ratio (1-q)/q = e^eps."""
    B = fo.oue_bit_channel(eps)
    np.testing.assert_allclose(B.sum(axis=0), 1.0)
    p, q = fo.oue_probabilities(eps)
    # Exhaustive over a 4-value domain: all 16 reports, all pairs of inputs.
    D = 4
    reports = np.array([[(r >> j) & 1 for j in range(D)] for r in range(1 << D)])
    probs = np.empty((1 << D, D))
    for x in range(D):
        own = np.where(np.arange(D) == x, p, q)
        probs[:, x] = np.prod(np.where(reports == 1, own, 1 - own), axis=1)
    np.testing.assert_allclose(probs.sum(axis=0), 1.0)
    assert _max_ratio(probs) <= math.exp(eps) * (1 + 1e-9)
    assert _max_ratio(probs) == pytest.approx(math.exp(eps))


@pytest.mark.parametrize("eps", [0.1, 1.0, 5.0])
def test_olh_per_hash_function_channel_is_epsilon_ldp(eps):
    """For every fixed hash function the channel value -> bucket has ratio <= e^eps (eq. 2)."""
    rng = np.random.default_rng(5)
    g = fo.olh_buckets(eps)
    for seed in rng.integers(0, (fo.OLH_PRIME - 1) * fo.OLH_PRIME, size=5, dtype=np.uint64):
        P = fo.olh_hash_channel(int(seed), 20, eps, g)
        np.testing.assert_allclose(P.sum(axis=0), 1.0, atol=1e-12)
        assert _max_ratio(P) <= math.exp(eps) * (1 + 1e-9)


def test_hr_sampler_follows_channel():
    """Reports from three input values follow hr_channel: chi-square p > 1e-3."""
    rng = np.random.default_rng(6)
    D, eps = 12, 1.0
    P = fo.hr_channel(D, eps)
    for x in (0, 5, 11):
        reports = fo.hr_perturb(np.full(50_000, x), D, eps, rng)
        observed = np.bincount(reports, minlength=P.shape[0])
        assert stats.chisquare(observed, P[:, x] * len(reports)).pvalue > 1e-3


def test_olh_sampler_follows_per_hash_channel():
    """Given the user's hash, the bucket is H(x) w.p. p and each other bucket w.p. q (chi-square p > 1e-3)."""
    rng = np.random.default_rng(7)
    eps = 1.5
    r = fo.olh_perturb(np.full(60_000, 9), 50, eps, rng)
    offset = (r.buckets - fo.olh_hash(r.seeds, np.full(len(r.seeds), 9), r.g)) % r.g
    p, q = fo.olh_probabilities(eps, r.g)
    expected = np.array([p] + [q] * (r.g - 1)) * len(offset)
    assert stats.chisquare(np.bincount(offset, minlength=r.g), expected).pvalue > 1e-3


def test_oue_sampler_bit_frequencies():
    """Own bit set w.p. 1/2, others w.p. q (binomial tests, p > 1e-3)."""
    rng = np.random.default_rng(8)
    eps, D, n = 1.0, 10, 40_000
    r = fo.oue_perturb(np.full(n, 3), D, eps, rng)
    support = fo.oue_support_counts(r)
    _, q = fo.oue_probabilities(eps)
    assert stats.binomtest(int(support[3]), n, 0.5).pvalue > 1e-3
    assert stats.binomtest(int(support[np.arange(D) != 3].sum()), n * (D - 1), q).pvalue > 1e-3


# ---- unbiasedness and variance ------------------------------------------------------

@pytest.mark.parametrize("oracle", fo.ORACLES)
@pytest.mark.parametrize("eps", [0.5, 2.0])
def test_oracle_is_unbiased_and_variance_matches_theory(oracle, eps):
    """Over 400 seeded runs: mean within 4.5 SE of the truth per value, and the empirical variance
    (averaged over the 16 values) within 10% of the analytical variance (USENIX'17; HR: hr_variance)."""
    D, n, runs = 16, 1500, 400
    values = _population(D, n)
    truth = np.bincount(values, minlength=D)
    est = np.array([fo.oracle_counts(oracle, values, D, eps, np.random.default_rng([11, s]))
                    for s in range(runs)])
    se = est.std(axis=0, ddof=1) / math.sqrt(runs)
    assert np.all(np.abs(est.mean(axis=0) - truth) < 4.5 * se)
    theory = fo.oracle_variance(oracle, n, truth, D, eps)
    assert est.var(axis=0, ddof=1).mean() == pytest.approx(theory.mean(), rel=0.10)


@pytest.mark.parametrize("oracle", fo.ORACLES)
def test_aggregate_path_agrees_with_per_user_in_distribution(oracle):
    """The estimate of two cells under both paths: two-sample KS p > 1e-3, and equal variances within 15%."""
    D, n, runs, eps = 9, 800, 400, 1.0
    values = _population(D, n)
    per_user = np.array([fo.oracle_counts(oracle, values, D, eps, np.random.default_rng([12, s]))
                         for s in range(runs)])
    aggregate = np.array([fo.oracle_counts(oracle, values, D, eps, np.random.default_rng([13, s]),
                                           path="aggregate") for s in range(runs)])
    for cell in (0, D - 1):
        assert stats.ks_2samp(per_user[:, cell], aggregate[:, cell]).pvalue > 1e-3
    assert aggregate.var(axis=0).mean() == pytest.approx(per_user.var(axis=0).mean(), rel=0.15)


def test_grr_aggregate_histogram_keeps_totals():
    rng = np.random.default_rng(14)
    counts = np.array([0, 5, 100, 7])
    hist = fo.grr_aggregate_histogram(counts, 1.0, rng)
    assert hist.counts.sum() == counts.sum() == hist.n


# ---- mechanisms on the grid ------------------------------------------------------------

@pytest.mark.parametrize("name", ["grr", "olh", "oue", "hr"])
@pytest.mark.parametrize("path", ["per-user", "aggregate"])
def test_mechanisms_run_on_a_grid(name, path):
    grid = Grid(Region(0, 0, 1000), 6)
    cells = _population(grid.n_cells, 5000)
    users = Binned(cells, np.zeros((len(cells), 2)), 0)
    m = mechanisms.create(name, grid, 2.0, path=path, projection="norm-sub")
    est = m.run(users, np.random.default_rng(0))
    assert est.density.shape == (6, 6) and est.density.sum() == pytest.approx(1.0)
    assert np.all(est.density >= 0) and est.raw.shape == (6, 6)
    assert est.info["reports"] == 5000
    truth = grid.histogram(cells) / len(cells)
    assert np.abs(est.density - truth).sum() < 0.5


def test_registry_lists_oracles():
    rows = {r["name"]: r for r in mechanisms.describe()}
    for name in ("exact", "grr", "olh", "oue", "hr"):
        assert name in rows
    assert rows["hr"]["has_channel"] and rows["grr"]["has_channel"]


def test_hr_mechanism_channel_matches_function():
    m = mechanisms.create("hr", Grid(Region(0, 0, 1000), 3), 1.0, variant="high-privacy")
    np.testing.assert_allclose(m.channel(), fo.hr_channel(9, 1.0), rtol=1e-12)


def test_bad_values_and_oracles_are_refused():
    rng = np.random.default_rng(0)
    with pytest.raises(LdpvizInputError, match="values must lie"):
        fo.hr_perturb(np.array([0, 5]), 5, 1.0, rng)
    with pytest.raises(LdpvizInputError, match="unknown frequency oracle"):
        fo.oracle_counts("rappor", np.array([0]), 2, 1.0, rng)
    with pytest.raises(LdpvizInputError, match="path"):
        mechanisms.create("olh", Grid(Region(0, 0, 1000), 2), 1.0, path="fast")


def test_compiled_olh_support_counts_equal_numpys():
    """The numba support-count loop (ldpviz.mechanisms.fo.olh_kernel) gives exactly the numpy loop's counts: random
    seeds and buckets over several (D, g), including g = 2 and a block boundary (n not a multiple of 1,024)."""
    from ldpviz.mechanisms.fo.oracles import OLH_PRIME, OLHReports, olh_support_counts
    rng = np.random.default_rng(5)
    for n, D, g in ((5000, 300, 8), (3001, 64, 2), (2049, 17, 1000)):
        seeds = rng.integers(0, (OLH_PRIME - 1) * OLH_PRIME, n, dtype=np.uint64)
        reports = OLHReports(seeds, rng.integers(0, g, n), g)
        assert np.array_equal(olh_support_counts(reports, D, compiled=True),
                              olh_support_counts(reports, D, compiled=False))
