"""PLDP / PCEP (Chen et al. ICDE'16 at the root level): eps-LDP channel, sampler, unbiasedness."""

import math

import numpy as np
import pytest
from scipy import stats

from ldpviz import mechanisms
from ldpviz.geo.domain import Grid, Region
from ldpviz.errors import LdpvizInputError
from ldpviz.mechanisms.srr import pldp


@pytest.mark.parametrize("eps", [0.5, 1.0, 4.0])
def test_channel_is_epsilon_ldp(eps):
    """Columns sum to 1 and max_y P(y|x)/P(y|x') <= e^eps."""
    signs = pldp.projection_signs(7, 20, 0)
    P = pldp.pcep_channel(signs, eps)
    np.testing.assert_allclose(P.sum(axis=0), 1.0, atol=1e-12)
    assert (P.max(axis=1) / P.min(axis=1)).max() <= math.exp(eps) * (1 + 1e-9)


def test_sampler_follows_channel():
    """Reports from one input follow the declared channel: chi-square p > 1e-3 (fixed seed)."""
    signs = pldp.projection_signs(5, 12, 1)
    P = pldp.pcep_channel(signs, 1.0)
    rng = np.random.default_rng(2)
    for x in (0, 7):
        rows, s = pldp.pcep_perturb(np.full(50_000, x), signs, 1.0, rng)
        observed = np.bincount(2 * rows + (s > 0), minlength=10)
        assert stats.chisquare(observed, P[:, x] * 50_000).pvalue > 1e-3


def test_unbiased_over_projection():
    """Averaged over projection matrices, the count estimate matches the truth."""
    rng = np.random.default_rng(3)
    d, n = 10, 4000
    x = rng.integers(0, d, n)
    true = np.bincount(x, minlength=d)
    draws = []
    for t in range(200):
        signs = pldp.projection_signs(16, d, t)
        rows, s = pldp.pcep_perturb(x, signs, 2.0, rng)
        draws.append(pldp.pcep_estimate_counts(rows, s, signs, 2.0))
    draws = np.array(draws)
    z = (draws.mean(axis=0) - true) / (draws.std(axis=0) / np.sqrt(len(draws)))
    assert np.abs(z).max() < 4.0


def test_pldp_runs():
    grid = Grid(Region(-93.26, 44.97, 10_000), 8)
    users = grid.bin_unit(np.clip(np.random.default_rng(4).normal(0.5, 0.2, (5000, 2)), 0, 1))
    est = mechanisms.create("pldp", grid, 1.0).run(users, np.random.default_rng(5))
    assert est.density.sum() == pytest.approx(1.0) and est.info["projection_dim"] >= 1


def test_projection_is_bounded_and_signs_are_blockwise_identical():
    """The public matrix never exceeds MAX_PROJECTION_ENTRIES: the default m is capped (eps = 0.01 asks for
    ~10^5 rows), an explicit projection_dim beyond the cap is refused; block-wise generation is the same matrix."""
    grid = Grid(Region(0, 0, 1000), 64)
    users = grid.bin_unit(np.random.default_rng(0).random((500, 2)))
    est = mechanisms.create("pldp", grid, 0.01).run(users, np.random.default_rng(1))
    assert est.info["projection_dim"] * est.info["domain_size"] <= pldp.MAX_PROJECTION_ENTRIES
    assert est.info["projection_dim_capped"] and est.density.sum() == pytest.approx(1.0)
    with pytest.raises(LdpvizInputError, match="projection_dim"):
        mechanisms.create("pldp", grid, 1.0, projection_dim=pldp.MAX_PROJECTION_DIM).run(users,
                                                                                         np.random.default_rng(1))
    full = np.where(np.random.default_rng(7).random((3000, 700)) < 0.5, -1, 1).astype(np.int8)
    np.testing.assert_array_equal(pldp.projection_signs(3000, 700, 7), full)
