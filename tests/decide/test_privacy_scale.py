"""ldpviz.decide.privacy_scale: every guarantee stated on one scale."""

from __future__ import annotations

import math

import pytest

from ldpviz import mechanisms
from ldpviz.geo.domain import Grid, Region
from ldpviz.errors import LdpvizInputError
from ldpviz.decide.privacy_scale import common_terms, like_for_like, region_diagonal_m

REGION = Region(-93.27, 44.97, 8000.0, "test")


def test_ldp_ratio_is_e_to_the_epsilon():
    t = common_terms("grr", Grid(REGION, 8), 1.5)
    assert t["model"] == "LDP" and t["max_ratio"] == pytest.approx(math.exp(1.5))
    assert t["ldp_equivalent_epsilon"] == 1.5 and not t["trusted_aggregator"]
    assert "4.48 times" in t["sentence"]


def test_geo_i_common_terms_do_not_change_with_d():
    """Planar Laplace at 0.5 per km: the ratio at r and across the region (same centre-to-centre span)
    depend on distances only, not on d; the LDP-equivalent epsilon is epsilon x diagonal."""
    terms = [common_terms("planar-laplace", Grid(REGION, d), 0.5, r_m=2000.0) for d in (4, 16)]
    for t in terms:
        assert t["epsilon"] == pytest.approx(0.5) and t["epsilon_unit"] == "per km"
        assert t["ratio_at_r"] == pytest.approx(math.exp(1.0))
        assert t["ldp_equivalent_epsilon"] == pytest.approx(0.5 * t["region_diagonal_m"] / 1000)
    g = Grid(REGION, 16)
    assert region_diagonal_m(g) == pytest.approx(math.sqrt(2) * 15 * 500.0)


def test_geo_i_claim_matches_the_channel():
    """The Geo-I max ratio over the region equals the channel's worst ratio bound (never exceeded)."""
    g = Grid(REGION, 6)
    mech = mechanisms.create("planar-laplace", g, 0.8)
    P = mech.channel()
    worst = float((P[:, :, None] / P[:, None, :]).max())
    t = common_terms(mech)
    assert worst <= t["max_ratio"] * (1 + 1e-9)
    assert worst > t["max_ratio"] ** 0.7          # and the claim is not vacuous


def test_central_dp_trusts_the_aggregator_and_is_flagged():
    t = common_terms("laplace", Grid(REGION, 8), 1.0)
    assert t["trusted_aggregator"] and math.isinf(t["ldp_equivalent_epsilon"])
    assert "trusted" in t["sentence"]
    assert like_for_like(["LDP", "central DP"]) and "trusts the aggregator" in like_for_like(["LDP", "central DP"])
    assert like_for_like(["LDP", "LDP"]) is None


def test_bad_r_is_refused():
    with pytest.raises(LdpvizInputError, match="r_m"):
        common_terms("grr", Grid(REGION, 4), 1.0, r_m=-1.0)
