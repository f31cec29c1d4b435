"""The foundation's two mechanisms: exact and GRR on grid cells."""

import math

import numpy as np
import pytest
from scipy import stats

from ldpviz import mechanisms
from ldpviz.geo.domain import Grid, Region
from ldpviz.errors import LdpvizInputError


@pytest.fixture
def grid():
    return Grid(Region(0, 0, 1000), 4)


def test_registry_lists_foundation_mechanisms():
    names = mechanisms.available()
    assert "exact" in names and "grr" in names
    rows = {r["name"]: r for r in mechanisms.describe()}
    assert rows["grr"]["privacy_model"] == "LDP"


@pytest.mark.parametrize("eps", [0.1, 1.0, 5.0, 20.0])
@pytest.mark.parametrize("side", [1, 2, 5])
def test_grr_channel_is_epsilon_ldp(eps, side):
    """Columns sum to 1 and max_y P(y|x)/P(y|x') <= e^eps."""
    m = mechanisms.create("grr", Grid(Region(0, 0, 1000), side), eps)
    P = m.channel()
    np.testing.assert_allclose(P.sum(axis=0), 1.0, atol=1e-12)
    ratio = (P.max(axis=1) / P.min(axis=1)).max()
    assert ratio <= math.exp(eps) * (1 + 1e-9)


def test_grr_sampler_follows_channel(grid):
    """Reports from one true cell follow the declared channel: chi-square p > 1e-3."""
    m = mechanisms.create("grr", grid, 1.0)
    from ldpviz.geo.domain import Binned
    cells = np.full(40_000, 5)
    reports = m.perturb(Binned(cells, np.zeros((len(cells), 2)), 0), np.random.default_rng(0))
    observed = np.bincount(reports, minlength=grid.n_cells)
    expected = m.channel()[:, 5] * len(cells)
    assert stats.chisquare(observed, expected).pvalue > 1e-3


def test_grr_is_unbiased(grid):
    """Mean unbiased count over 200 seeded runs is within 4 standard errors of the truth."""
    from ldpviz.geo.domain import Binned
    m = mechanisms.create("grr", grid, 1.0)
    cells = np.repeat(np.arange(grid.n_cells), np.arange(grid.n_cells) * 10)
    users = Binned(cells, np.zeros((len(cells), 2)), 0)
    truth = np.bincount(cells, minlength=grid.n_cells)
    runs = np.array([m.estimate_counts(m.perturb(users, np.random.default_rng(s))) for s in range(200)])
    se = runs.std(axis=0, ddof=1) / np.sqrt(len(runs))
    assert np.all(np.abs(runs.mean(axis=0) - truth) < 4 * se + 1e-9)


def test_exact_reports_are_true_cells(grid):
    from ldpviz.geo.domain import Binned
    m = mechanisms.create("exact", grid, 1.0)
    cells = np.array([0, 3, 3, 15])
    est = m.run(Binned(cells, np.zeros((4, 2)), 0), np.random.default_rng(0))
    assert est.density[0, 3] == pytest.approx(0.5) and est.density.sum() == pytest.approx(1)


@pytest.mark.parametrize("eps", [0, -1, float("nan"), "abc", 1e6])
def test_bad_epsilon_is_refused_with_message(grid, eps):
    with pytest.raises(LdpvizInputError, match="epsilon"):
        mechanisms.create("grr", grid, eps)


def test_unknown_mechanism_and_parameter(grid):
    with pytest.raises(LdpvizInputError, match="unknown mechanism"):
        mechanisms.create("nope", grid, 1.0)
    with pytest.raises(LdpvizInputError, match="no parameter 'radius'"):
        mechanisms.create("grr", grid, 1.0, radius=3)
    with pytest.raises(LdpvizInputError, match="projection"):
        mechanisms.create("grr", grid, 1.0, projection="bogus")


def test_effective_params_fill_computed_defaults():
    """effective_params() reports the value a mechanism computed for a None default (DAM's radius)."""
    grid = Grid(Region(0, 0, 1000), 15)
    dam = mechanisms.create("dam", grid, 3.5)
    assert dam.param_values["radius"] is None
    assert dam.effective_params()["radius"] == pytest.approx(3.499, abs=1e-3)  # eq. (12), L = 15 cells
    half = mechanisms.create("dam", grid, 3.5, radius_factor=0.5)
    assert half.effective_params()["radius"] == pytest.approx(3.499 / 2, abs=1e-3)
    assert mechanisms.create("grr", grid, 1.0).effective_params() == {"projection": "clip", "path": "auto"}
