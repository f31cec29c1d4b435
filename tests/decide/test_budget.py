"""ldpviz.decide.budget: sequential composition over repeated collections."""

from __future__ import annotations

import math

import pytest

from ldpviz.decide import budget
from ldpviz.errors import LdpvizInputError


@pytest.mark.parametrize("every,period,unit,times,expected", [
    ("day", 1, "year", 1, 365), ("week", 1, "year", 1, 52), ("day", 4, "week", 1, 28),
    ("hour", 1, "day", 1, 24), ("week", 6, "month", 1, 26), ("day", 1, "month", 2, 60), ("month", 1, "year", 1, 12),
])
def test_collection_counts(every, period, unit, times, expected):
    assert budget.collections(every, period, unit, times_per=times) == expected


def test_compose_and_split_are_inverse():
    """Sequential composition adds epsilons; splitting a total evenly and composing gives the total back."""
    assert budget.compose(0.1, 365) == pytest.approx(36.5)
    for total, k in ((1.0, 7), (10.0, 365), (3.0, 1)):
        assert budget.compose(budget.split_budget(total, k), k) == pytest.approx(total)


def test_plan_from_per_collection_and_from_total():
    p = budget.plan(every="day", period=1, period_unit="year", per_collection_epsilon=0.5)
    assert p["collections"] == 365 and p["total_epsilon"] == pytest.approx(182.5)
    assert "365 collections" in p["sentence"] and "182" in p["sentence"]
    q = budget.plan(every="week", period=1, period_unit="year", total_epsilon=5.2, epsilon_unit="per km")
    assert q["per_collection_epsilon"] == pytest.approx(0.1) and "per km" in q["sentence"]
    assert q["max_ratio_total"] == pytest.approx(math.exp(5.2))
    tiny = budget.plan(every="hour", period=1, period_unit="year", total_epsilon=1.0)
    assert tiny["warnings"] and "below" in tiny["warnings"][0]


def test_advanced_composition_is_smaller_only_for_many_small_steps():
    """DRV bound: below k*eps for 1000 steps at 0.01, above it for 10 steps at 1."""
    assert budget.advanced_total(0.01, 1000, 1e-6) < budget.compose(0.01, 1000)
    assert budget.advanced_total(1.0, 10, 1e-6) > budget.compose(1.0, 10)


def test_bad_input_is_refused():
    with pytest.raises(LdpvizInputError, match="exactly one"):
        budget.plan(every="day", per_collection_epsilon=1.0, total_epsilon=2.0)
    with pytest.raises(LdpvizInputError, match="unit"):
        budget.collections("fortnight", 1, "year")
    with pytest.raises(LdpvizInputError, match="no whole collection"):
        budget.collections("year", 1, "month")
    with pytest.raises(LdpvizInputError, match="> 0"):
        budget.compose(-1.0, 3)
