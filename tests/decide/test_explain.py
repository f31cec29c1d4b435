"""ldpviz.decide.explain: plain-language text computed from the numbers."""

from __future__ import annotations

import math

import pytest

from ldpviz.decide import explain
from ldpviz.errors import LdpvizInputError
from ldpviz.metrics import METRIC_INFO


def test_epsilon_worked_numbers_follow_e_to_the_epsilon():
    """e^1 = 2.72 and the 50/50 belief moves to at most e/(1+e) = 73%."""
    text = explain.epsilon_plain(1.0)
    assert "2.72 times" in text and "73% / 27%" in text
    assert f"{math.exp(3):.3g}" in explain.epsilon_plain(3.0)
    geo = explain.epsilon_plain(0.5, "Geo-I", distances_m=(1000.0, 4000.0))
    assert "per km" in geo and f"{math.exp(0.5):.3g} times" in geo and f"{math.exp(2.0):.3g} times" in geo
    assert "aggregator sees" in explain.epsilon_plain(1.0, "central DP")


def test_every_metric_has_a_unit_and_good_and_poor():
    for metric in METRIC_INFO:
        e = explain.metric_explanation(metric)
        assert e["unit"] and e["good"] and e["poor"] and e["help"]


def test_distance_readout_in_cells_and_region():
    text = explain.metric_readout("w2_m", 1250.0, cell_m=625.0, region_side_m=20_000.0)
    assert "1.25 km" in text and "2 cell sides" in text and "6.2% of the region" in text


def test_bad_input():
    with pytest.raises(LdpvizInputError):
        explain.epsilon_plain(-1.0)
    with pytest.raises(LdpvizInputError, match="unknown metric"):
        explain.metric_explanation("nope")
