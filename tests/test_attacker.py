"""ldpviz.decide.attacker: the one Bayesian attacker (population prior) and the uniform-prior one beside it."""

from __future__ import annotations

import numpy as np
import pytest

from ldpviz import mechanisms
from ldpviz.decide.attacker import POPULATION, UNIFORM, attack, attackers
from ldpviz.decide.cell_distances import rows_times_distance as _rows_times_distance
from ldpviz.geo.domain import Grid, Region
from ldpviz.errors import LdpvizInputError
from ldpviz.mechanisms.dam.local_privacy import cell_distances, local_privacy

REGION = Region(-93.27, 44.97, 6000.0, "test")


def population(side: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    r, c = np.mgrid[0:side, 0:side]
    dens = np.exp(-((r - side * 0.3) ** 2 + (c - side * 0.7) ** 2) / (side * 0.8)) + 0.05 * rng.random((side, side))
    return dens / dens.sum()


@pytest.mark.parametrize("name", ["grr", "dam", "planar-laplace"])
def test_uniform_posterior_draw_is_the_dam_papers_lp(name):
    """With the uniform prior and people spread uniformly, the posterior-draw error is eq. (16) exactly."""
    g = Grid(REGION, 8)
    mech = mechanisms.create(name, g, 1.0)
    a = attack(mech, UNIFORM)
    assert a.posterior_draw_error_m == pytest.approx(local_privacy(mech), rel=1e-9)


def brute_force(P: np.ndarray, belief: np.ndarray, people: np.ndarray, side: int, cell_m: float, r_m: float):
    """Enumerate every (x, y): the best guess minimises the posterior expected distance; the aiming guess
    maximises the posterior mass within r."""
    D = cell_distances(side)
    near = D * cell_m <= r_m + 1e-9
    err = within = 0.0
    for y in range(P.shape[0]):
        post = P[y] * belief
        guess = int(np.argmin(post @ D))
        aim = int(np.argmax(post @ near))
        for x in range(len(people)):
            w = people[x] * P[y, x]
            err += w * D[x, guess]
            within += w * near[x, aim]
    return err * cell_m, within


@pytest.mark.parametrize("name,eps", [("grr", 2.0), ("planar-laplace", 1.0), ("dam", 1.5)])
def test_best_guess_and_within_r_match_brute_force(name, eps):
    side = 5
    g = Grid(REGION, side)
    mech = mechanisms.create(name, g, eps)
    pop = population(side)
    P = mech.channel()
    for prior, belief in ((POPULATION, pop.ravel()), (UNIFORM, np.full(side * side, 1 / side ** 2))):
        a = attack(mech, prior, population=pop, r_m=1500.0)
        err, within = brute_force(P, belief, pop.ravel(), side, g.cell_m, 1500.0)
        assert a.best_guess_error_m == pytest.approx(err, rel=1e-9)
        assert a.within_r == pytest.approx(within, rel=1e-9)


def test_fft_route_matches_dense_product():
    side = 36
    J = np.random.default_rng(2).random((7, side * side))
    np.testing.assert_allclose(_rows_times_distance(J, side), J @ cell_distances(side), rtol=1e-9, atol=1e-8)
    near = (cell_distances(side) <= 3.5).astype(float)
    np.testing.assert_allclose(_rows_times_distance(J, side, 3.5), J @ near, rtol=1e-9, atol=1e-8)


def test_population_attacker_is_never_worse_and_report_helps():
    """Scored on the same people, the Bayes-optimal (population-prior) guess beats the uniform belief;
    a report at a large epsilon brings the guess closer than the prior alone."""
    g = Grid(REGION, 8)
    pop = population(8, seed=3)
    for eps in (0.5, 4.0):
        both = attackers(mechanisms.create("grr", g, eps), pop)
        assert both["available"]
        assert both["population"].best_guess_error_m <= both["uniform"].best_guess_error_m + 1e-9
        assert both["population"].within_r >= both["uniform"].within_r - 1e-12
        assert "population density" in both["sentence"] and "uniform prior" in both["sentence"]
    strong = attack(mechanisms.create("grr", g, 6.0), POPULATION, population=pop)
    assert strong.best_guess_error_m < 0.5 * strong.no_report_error_m
    assert strong.within_r > strong.no_report_within_r


def test_no_privacy_is_exact_and_central_dp_is_named():
    g = Grid(REGION, 6)
    a = attack(mechanisms.create("exact", g, 1.0), POPULATION, population=population(6), r_m=0.0)
    assert a.best_guess_error_m == pytest.approx(0.0, abs=1e-9) and a.within_r == pytest.approx(1.0)
    both = attackers(mechanisms.create("laplace", g, 1.0), population(6))
    assert not both["available"] and "central DP" in both["reason"]
    with pytest.raises(LdpvizInputError, match="not available"):
        attack(mechanisms.create("laplace", g, 1.0), UNIFORM)
    with pytest.raises(LdpvizInputError, match="population density"):
        attack(mechanisms.create("grr", g, 1.0), POPULATION)
