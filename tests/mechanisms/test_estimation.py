"""The shared EM/EMS estimator's stopping rules (ldpviz.mechanisms.estimation, issue 15 item 7)."""

from __future__ import annotations

import numpy as np
import pytest

from ldpviz.mechanisms import estimation
from ldpviz.mechanisms.estimation import em_stopping_rule, expectation_maximisation


def _problem(n: int = 200_000, seed: int = 3):
    """A smoothing channel on 30 values (each input reported as itself or a neighbour) and a bumpy truth."""
    k = 30
    P = np.zeros((k, k))
    for x in range(k):
        for y in range(max(0, x - 3), min(k, x + 4)):
            P[y, x] = 1.0
    P /= P.sum(axis=0, keepdims=True)
    truth = np.exp(-((np.arange(k) - 10) ** 2) / 8.0) + 0.5 * np.exp(-((np.arange(k) - 22) ** 2) / 4.0)
    truth /= truth.sum()
    counts = np.random.default_rng(seed).multinomial(n, P @ truth).astype(float)
    return counts, (lambda f: P @ f), (lambda r: P.T @ r), truth


def test_converged_rule_reaches_the_likelihood_maximum():
    """'converged': a further 500 EM iterations raise the log-likelihood by less than 1e-6 per report."""
    counts, fwd, adj, _ = _problem()
    f, info = expectation_maximisation(counts, fwd, adj, (30,), smoothing=False, rule="converged")
    assert info["converged"] and info["stopping"] == "converged"
    g, more = expectation_maximisation(counts, fwd, adj, (30,), smoothing=False, rule="converged",
                                       initial=f, max_iterations=500)
    assert (more["loglik"] - info["loglik"]) / counts.sum() < 1e-6


def test_holdout_rule_stops_no_later_than_convergence_and_is_deterministic():
    """'holdout' picks its iteration count on held-out reports (fixed seed): the same counts give the same
    estimate, it runs no more iterations than 'converged', and its L1 error is no worse than converged
    EM's here (seed 3, 200,000 reports)."""
    counts, fwd, adj, truth = _problem()
    a, ia = expectation_maximisation(counts, fwd, adj, (30,), smoothing=False, rule="holdout")
    b, _ = expectation_maximisation(counts, fwd, adj, (30,), smoothing=False, rule="holdout")
    c, ic = expectation_maximisation(counts, fwd, adj, (30,), smoothing=False, rule="converged")
    np.testing.assert_array_equal(a, b)
    assert ia["stopping"] == "holdout" and 1 <= ia["iterations"] <= ic["iterations"]
    assert np.abs(a - truth).sum() <= np.abs(c - truth).sum() + 1e-12


def test_rule_context_and_unknown_rules():
    """em_stopping_rule sets the default inside its block only; unknown rules are refused."""
    counts, fwd, adj, _ = _problem(20_000)
    with em_stopping_rule("legacy", cell_tolerance=1e-3):
        _, info = expectation_maximisation(counts, fwd, adj, (30,), smoothing=False)
        assert info["stopping"] == "legacy"
    assert estimation._RULE["rule"] == "holdout"
    with pytest.raises(ValueError, match="unknown EM stopping rule"):
        expectation_maximisation(counts, fwd, adj, (30,), rule="forever")
    with pytest.raises(ValueError, match="unknown EM stopping rule"):
        with em_stopping_rule("forever"):
            pass


def test_accelerated_holdout_matches_plain_em_when_the_optimum_comes_early():
    """SQUAREM starts after PLAIN_WARMUP plain steps, so a held-out optimum within them (here 17 iterations,
    seed 3, 200,000 reports) gives plain EM's estimate exactly."""
    counts, fwd, adj, _ = _problem()
    a, ia = expectation_maximisation(counts, fwd, adj, (30,), smoothing=False, rule="holdout", accelerate=True)
    b, ib = expectation_maximisation(counts, fwd, adj, (30,), smoothing=False, rule="holdout", accelerate=False)
    assert ia["acceleration"] == "SQUAREM" and "acceleration" not in ib
    assert ia["steps"] == ib["iterations"] < estimation.PLAIN_WARMUP
    np.testing.assert_allclose(a, b, rtol=0, atol=1e-15)


def _slow_problem(n: int = 3_000, seed: int = 5):
    """A channel that smooths over 21 of 40 values, few reports: plain EM crawls (the small-eps regime)."""
    k = 40
    P = np.zeros((k, k))
    for x in range(k):
        P[max(0, x - 10):x + 11, x] = 1.0
    P += 0.2
    P /= P.sum(axis=0, keepdims=True)
    truth = np.exp(-((np.arange(k) - 12) ** 2) / 6.0) + np.exp(-((np.arange(k) - 30) ** 2) / 6.0)
    truth /= truth.sum()
    counts = np.random.default_rng(seed).multinomial(n, P @ truth).astype(float)
    return counts, (lambda f: P @ f), (lambda r: P.T @ r), truth


def test_acceleration_reaches_a_higher_likelihood_with_fewer_evaluations():
    """Where plain EM crawls, SQUAREM (same 'converged' rule, same evaluation budget of 2,000) ends at a
    log-likelihood no lower than plain EM's, using at most half its EM evaluations (seed 5)."""
    counts, fwd, adj, _ = _slow_problem()
    a, ia = expectation_maximisation(counts, fwd, adj, (40,), smoothing=False, rule="converged",
                                     accelerate=True, max_iterations=2_000)
    b, ib = expectation_maximisation(counts, fwd, adj, (40,), smoothing=False, rule="converged",
                                     accelerate=False, max_iterations=2_000)
    assert ia["loglik"] >= ib["loglik"] - 1e-6
    assert ia["iterations"] <= ib["iterations"] / 2, (ia["iterations"], ib["iterations"])


def test_large_domain_schedule_takes_fewer_evaluations_for_as_good_an_estimate(monkeypatch):
    """Issue 38.4: on a large output domain (LARGE_EM_CELLS, here lowered so the 40-value problem counts as one)
    held-out EM starts SQUAREM after LARGE_PLAIN_WARMUP steps and counts its patience in plain-EM-equivalent
    progress: at most half the forward maps of the standard schedule, whose held-out optimum lies past its 200
    plain steps here, for an L1 error within 5% of its (seed 6, 30,000 reports, where plain EM crawls). Below the
    threshold the standard schedule runs unchanged."""
    from ldpviz.mechanisms.estimation import _em
    counts, fwd, adj, truth = _slow_problem(30_000, 6)
    maps = []

    def counted(f):
        maps.append(1)
        return fwd(f)

    def run():
        maps.clear()
        out = expectation_maximisation(counts, counted, adj, (40,), smoothing=False, rule="holdout")
        return (*out, len(maps))

    a, ia, standard = run()
    monkeypatch.setattr(_em, "LARGE_EM_CELLS", counts.size)
    b, ib, large = run()
    monkeypatch.setattr(_em, "LARGE_EM_CELLS", counts.size + 1)
    c, _, _ = run()
    np.testing.assert_array_equal(a, c)                                  # the standard schedule, bit for bit
    assert ia["steps"] > estimation.PLAIN_WARMUP > ib["steps"] > estimation.LARGE_PLAIN_WARMUP
    assert large <= standard / 2, (large, standard)
    err_a, err_b = np.abs(a - truth).sum(), np.abs(b - truth).sum()
    assert err_b <= 1.05 * err_a, (err_b, err_a)


def test_large_domain_step_bound_applies_only_to_large_domains(monkeypatch):
    """The large-domain SQUAREM step bound (LARGE_SQUAREM_STEP_SHARE) is what a large domain's cycles read: the
    estimate changes with it there (the wider bound taking fewer evaluations on this slow problem), and the
    standard schedule below the threshold is the same bit for bit
    whatever it is (seed 6, 30,000 reports)."""
    from ldpviz.mechanisms.estimation import _em
    counts, fwd, adj, _ = _slow_problem(30_000, 6)

    def run():
        return expectation_maximisation(counts, fwd, adj, (40,), smoothing=False, rule="holdout")

    standard, _ = run()
    monkeypatch.setattr(_em, "LARGE_SQUAREM_STEP_SHARE", 0.5)
    np.testing.assert_array_equal(run()[0], standard)
    monkeypatch.setattr(_em, "LARGE_EM_CELLS", counts.size)
    wide, info_wide = run()
    monkeypatch.setattr(_em, "LARGE_SQUAREM_STEP_SHARE", estimation.SQUAREM_STEP_SHARE)
    narrow, info_narrow = run()
    assert not np.array_equal(wide, narrow)
    assert info_wide["iterations"] < info_narrow["iterations"], (info_wide, info_narrow)


def test_large_domain_schedule_never_applies_at_d_128_and_does_at_d_256():
    """DAM's radius at the paper's optimum keeps every output box at d <= 128 under LARGE_EM_CELLS down to the
    smallest epsilon, so the grids the claims documents run keep the standard schedule; DAM at d = 256, epsilon 1
    (the speed gate's run) is a large domain."""
    from ldpviz import mechanisms
    from ldpviz.geo.domain import Grid, Region
    from ldpviz.mechanisms.base import EPSILON_MIN
    region = Region(-93.2, 45.0, 20_000.0)
    small = mechanisms.create("dam", Grid(region, 128), EPSILON_MIN)
    assert small.chan.out_side ** 2 < estimation.LARGE_EM_CELLS
    assert mechanisms.create("dam", Grid(region, 256), 1.0).chan.out_side ** 2 >= estimation.LARGE_EM_CELLS
