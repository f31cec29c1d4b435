"""ldpviz.decide.attacker_monte_carlo: the Bayesian attacker by Monte Carlo over reports with exact per-report
posteriors."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from ldpviz import mechanisms
from ldpviz.decide.attacker import EXACT, POPULATION, UNIFORM, attack, attack_many, attackers, availability
from ldpviz.decide.attacker_monte_carlo import report_likelihood
from ldpviz.geo.domain import Grid
from ldpviz.mechanisms.base import CENTRAL_DP
from ldpviz.mechanisms.fo.oracles import (OUEReports, olh_hash_channel, olh_perturb, oue_perturb,
                                          oue_probabilities, oue_report_likelihood, olh_report_likelihood)

from test_attacker import REGION, population  # the same test region and population as the exact attacker's

#: Mean distance from a position uniform in a square to its centre, in sides: (sqrt 2 + ln(1 + sqrt 2)) / 6.
RIGHT_CELL = 0.3825978582


FIGURES = (("best_guess_error_m", "best_guess_error_se_m"), ("within_r", "within_r_se"),
           ("posterior_draw_error_m", "posterior_draw_error_se_m"))


@pytest.mark.parametrize("eps", [3.0, 5.0])
def test_monte_carlo_agrees_with_the_exact_attacker_on_grr(eps):
    """GRR has an explicit channel: the Monte Carlo attacker (the same code path OUE and OLH take, GRR's
    reports and likelihood rows) lies within 3 standard errors of the exact sums, for every figure and both
    priors (seed 0)."""
    g = Grid(REGION, 8)
    pop = population(8)
    mech = mechanisms.create("grr", g, eps)
    exact = attack_many(mech, [POPULATION, UNIFORM], population=pop, r_m=1000.0)
    mech.has_channel = False                       # force the Monte Carlo path on the same mechanism
    mc = attack_many(mech, [POPULATION, UNIFORM], population=pop, r_m=1000.0)
    for e, m in zip(exact, mc):
        assert e.method == EXACT and m.method.startswith("monte carlo") and m.n_reports >= 2000
        assert m.no_report_error_m == pytest.approx(e.no_report_error_m)
        for value, se in FIGURES:
            assert getattr(m, se) > 0
            assert abs(getattr(m, value) - getattr(e, value)) <= 3 * getattr(m, se), value


def test_oue_likelihood_matches_brute_force_enumeration():
    """OUE on 4 cells: P(y | x) enumerated over all 16 bit vectors sums to 1 for every x, matches the
    empirical frequency of oue_perturb's reports, and is proportional (per report) to oue_report_likelihood."""
    D, eps = 4, 1.3
    p, q = oue_probabilities(eps)
    vectors = np.array(list(itertools.product([0, 1], repeat=D)), dtype=bool)
    brute = np.array([[np.prod([(p if v == x else q) if y[v] else (1 - p if v == x else 1 - q) for v in range(D)])
                       for x in range(D)] for y in vectors])
    np.testing.assert_allclose(brute.sum(axis=0), 1.0, rtol=1e-12)
    lik = oue_report_likelihood(OUEReports(np.packbits(vectors, axis=1), D), eps)
    ratio = brute / lik
    np.testing.assert_allclose(ratio, ratio[:, :1] * np.ones((1, D)), rtol=1e-12)
    rng = np.random.default_rng(1)
    n = 40_000
    x = 2
    reps = oue_perturb(np.full(n, x), D, eps, rng)
    bits = np.unpackbits(reps.packed, axis=1, count=D)
    codes = bits @ (1 << np.arange(D - 1, -1, -1))
    freq = np.bincount(codes, minlength=16) / n
    assert np.all(np.abs(freq - brute[:, x]) <= 4 * np.sqrt(brute[:, x] * (1 - brute[:, x]) / n) + 1e-9)


def test_olh_likelihood_is_the_per_hash_channel():
    """For every report <seed, bucket>, the OLH likelihood row equals row ``bucket`` of the channel of that
    seed's hash function (olh_hash_channel, enumerating every bucket), which sums to 1 over buckets."""
    D, eps = 6, 1.0
    rng = np.random.default_rng(2)
    reps = olh_perturb(rng.integers(0, D, 30), D, eps, rng)
    lik = olh_report_likelihood(reps, eps, D)
    for i in range(30):
        P = olh_hash_channel(int(reps.seeds[i]), D, eps, reps.g)
        np.testing.assert_allclose(P.sum(axis=0), 1.0)
        np.testing.assert_allclose(lik[i], P[reps.buckets[i]])


@pytest.mark.parametrize("name", ["oue", "olh"])
def test_error_vanishes_at_large_epsilon_and_is_the_no_report_error_at_tiny_epsilon(name):
    """At eps = 0.01 a report says almost nothing: the best guess is the no-report guess (within 0.1%). At
    eps = 50 OLH's report names the cell (error: the mean distance from a position in the cell to its centre,
    RIGHT_CELL of a side, measured from exact positions); OUE's own bit is set only with p = 1/2 whatever eps
    (USENIX'17 Sec. 4.3), and without it the report is uninformative, so its error tends to the mean of the
    no-report error and the right-cell error (within 3 SE), not to the right-cell error."""
    g = Grid(REGION, 8)
    pop = population(8)
    tiny = attack(mechanisms.create(name, g, 0.01), population=pop)
    assert tiny.best_guess_error_m == pytest.approx(tiny.no_report_error_m, rel=1e-3)
    big = attack(mechanisms.create(name, g, 50.0), population=pop, r_m=0.7072 * g.cell_m)   # r covers a cell
    if name == "olh":
        assert big.best_guess_error_m == pytest.approx(RIGHT_CELL * g.cell_m, rel=0.01) and big.within_r > 0.999
    else:
        expected = (big.no_report_error_m + RIGHT_CELL * g.cell_m) / 2
        assert abs(big.best_guess_error_m - expected) <= 3 * big.best_guess_error_se_m


def test_report_likelihood_dispatcher_shape_and_monotone_in_epsilon():
    """The dispatcher returns (reports, cells); the population-prior error does not grow with epsilon."""
    g = Grid(REGION, 8)
    pop = population(8)
    mech = mechanisms.create("oue", g, 1.0)
    rng = np.random.default_rng(3)
    people = g.bin_unit(rng.random((10, 2)))
    assert report_likelihood(mech, mech.attack_reports(people, rng, people)).shape == (10, 64)
    errors = [attack(mechanisms.create("olh", g, e), population=pop).best_guess_error_m for e in (0.5, 2.0, 6.0)]
    assert errors[0] >= errors[1] >= errors[2]


def test_availability_for_every_local_mechanism():
    """Every LDP / Geo-I mechanism has an attacker (exact or Monte Carlo); central DP has none."""
    g = Grid(REGION, 8)
    for name in mechanisms.available():
        mech = mechanisms.create(name, g, 1.0)
        ok, why = availability(mech)
        assert ok == (mech.privacy_model != CENTRAL_DP), (name, why)


def test_attackers_sentence_states_the_method_and_precision():
    """The page/report entry point names the Monte Carlo method, its reports and seed, and its standard error."""
    g = Grid(REGION, 8)
    out = attackers(mechanisms.create("oue", g, 2.0), population(8) * 5000)
    assert out["available"]
    pop = out["population"]
    assert pop.method == "monte carlo (2,000 reports, seed 0)" or pop.method.startswith("monte carlo (")
    assert "standard error" in out["sentence"] and pop.to_dict()["best_guess_error_se_m"] > 0


def test_rect_cell_shares_are_area_fractions():
    """Each cell's shares over a tiling sum to 1; a rectangle covering half a cell gets share 1/2 there."""
    from ldpviz.mechanisms.grids.decompositions import TwoLevelGrid, aag_grid
    from ldpviz.geo.partition import rect_cell_shares
    rng = np.random.default_rng(4)
    for tiling in (TwoLevelGrid.uniform(3), aag_grid(rng.random((3, 3)), np.array([2, 3, 2, 4, 2, 2, 3, 2, 5]))):
        S = rect_cell_shares(tiling.rects(), 8).toarray()
        np.testing.assert_allclose(S.sum(axis=0), 1.0, rtol=1e-12)
    S = rect_cell_shares(np.array([[0.0, 0.0, 0.75, 0.5]]), 2).toarray()
    np.testing.assert_allclose(S[0], [1.0, 0.5, 0.0, 0.0])


def test_spreading_coarse_likelihoods_reproduces_the_exact_attacker():
    """UG with N = d and GRR as its oracle is GRR on the grid: its Monte Carlo attacker (oracle likelihoods
    spread to cells by area) lies within 3 SE of the exact GRR attacker; likewise SRR's likelihood rows on the
    public grid domain (relabelled to cells) against SRR's exact channel (seed 0)."""
    g = Grid(REGION, 8)
    pop = population(8)
    exact = attack(mechanisms.create("grr", g, 4.0), population=pop, r_m=1000.0)
    mc = attack(mechanisms.create("ug", g, 4.0, cells_per_side=8, oracle="grr"), population=pop, r_m=1000.0,
                n_users=10_000)
    srr = mechanisms.create("srr", g, 4.0)
    srr_exact = attack(srr, population=pop, r_m=1000.0)
    srr.has_channel = False
    srr_mc = attack(srr, population=pop, r_m=1000.0)
    for e, m in ((exact, mc), (srr_exact, srr_mc)):
        assert m.method.startswith("monte carlo")
        for value, se in FIGURES:
            assert abs(getattr(m, value) - getattr(e, value)) <= 3 * getattr(m, se), value


@pytest.mark.parametrize("name,params", [("ug", {}), ("privag", {}), ("aag", {}), ("olh-h", {}), ("pldp", {}),
                                         ("srr", {"domain": "occupied"})])
def test_every_family_learns_with_epsilon(name, params):
    """At eps = 0.01 a report barely moves the posterior (best guess within 3 SE + 0.5% of the no-report
    error); at eps = 8 the population-prior attacker does clearly better than without the report (> 5 SE)."""
    g = Grid(REGION, 8)
    pop = population(8)
    tiny = attack(mechanisms.create(name, g, 0.01, **params), population=pop, n_users=20_000)
    assert abs(tiny.best_guess_error_m - tiny.no_report_error_m) <= 3 * tiny.best_guess_error_se_m + \
        0.005 * tiny.no_report_error_m
    big = attack(mechanisms.create(name, g, 8.0, **params), population=pop, n_users=20_000)
    assert big.no_report_error_m - big.best_guess_error_m > 5 * big.best_guess_error_se_m
    assert big.within_r > big.no_report_within_r


def test_monte_carlo_cost_is_bounded_by_grid_size():
    """Beyond the Monte Carlo attacker's grid cap the page entry point says so in one sentence (no attempt)."""
    from ldpviz.decide.attacker_monte_carlo import MC_MAX_CELLS
    side = int(np.sqrt(MC_MAX_CELLS)) * 2
    g = Grid(REGION, side)
    out = attackers(mechanisms.create("oue", g, 1.0), np.ones((side, side)))
    assert not out["available"] and "computed up to" in out["reason"] and out["population"] is None
