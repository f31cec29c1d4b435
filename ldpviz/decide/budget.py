"""Privacy budget over time: repeated collections add up (sequential composition).

If a person answers k collections, each epsilon_i-LDP (or epsilon_i-Geo-I), the k
reports together are (epsilon_1 + ... + epsilon_k)-LDP (Geo-I: per km) -- the basic
sequential composition theorem (Dwork & Roth, "The Algorithmic Foundations of
Differential Privacy", Theorem 3.16; it holds for local randomisers alike because each
report is a function of the person's data and fresh randomness). The unit protected
becomes *all of one person's reports over the period*. It is tight for pure epsilon
(a person who never moves and answers k times), so this module uses it as the
headline; :func:`advanced_total` gives the (epsilon, delta) bound of Dwork, Rothblum &
Vadhan (Dwork & Roth Theorem 3.20) for comparison, which is smaller only for many
collections at small epsilon and costs a failure probability delta.

Calendar: a month is 30.4375 days and a year 365.25 days (averages), so "daily for a
year" is 365 collections (whole collections only: the count is rounded down).
"""

from __future__ import annotations

import math
from typing import Any

from ldpviz.errors import require
from ldpviz.decide.explain import exp_ratio_text
from ldpviz.mechanisms.base import EPSILON_MAX, EPSILON_MIN

#: Length of each calendar unit in days.
UNIT_DAYS: dict[str, float] = {"hour": 1 / 24, "day": 1.0, "week": 7.0, "month": 30.4375, "quarter": 91.3125,
                               "year": 365.25}


def _days(amount: float, unit: str, what: str) -> float:
    require(unit in UNIT_DAYS, f"{what} unit must be one of {', '.join(UNIT_DAYS)}, got {unit!r}")
    require(isinstance(amount, (int, float)) and math.isfinite(amount) and amount > 0,
            f"{what} must be a number > 0, got {amount!r}")
    return float(amount) * UNIT_DAYS[unit]


def collections(every: str = "day", period: float = 1.0, period_unit: str = "year", *, times_per: int = 1) -> int:
    """How many collections ``times_per`` per ``every`` make in ``period`` ``period_unit``s (rounded down).

    ``collections("day", 1, "year") == 365``; ``collections("week", 6, "month") == 26``.
    """
    require(isinstance(times_per, int) and times_per >= 1, f"times per {every} must be a whole number >= 1, "
                                                            f"got {times_per!r}")
    span = _days(period, period_unit, "period")
    step = _days(1.0, every, "collection interval")
    count = int(math.floor(span / step * times_per + 1e-9))
    require(count >= 1, f"a period of {period:g} {period_unit}(s) holds no whole collection every {every}")
    return count


def compose(per_collection_epsilon: float, n_collections: int) -> float:
    """Total epsilon of ``n_collections`` reports at ``per_collection_epsilon`` each (sequential composition)."""
    require(isinstance(per_collection_epsilon, (int, float)) and math.isfinite(per_collection_epsilon)
            and per_collection_epsilon > 0, f"per-collection epsilon must be > 0, got {per_collection_epsilon!r}")
    require(isinstance(n_collections, int) and n_collections >= 1,
            f"number of collections must be a whole number >= 1, got {n_collections!r}")
    return float(per_collection_epsilon) * n_collections


def split_budget(total_epsilon: float, n_collections: int) -> float:
    """The per-collection epsilon that spends ``total_epsilon`` evenly over ``n_collections``."""
    require(isinstance(total_epsilon, (int, float)) and math.isfinite(total_epsilon) and total_epsilon > 0,
            f"total epsilon must be > 0, got {total_epsilon!r}")
    require(isinstance(n_collections, int) and n_collections >= 1,
            f"number of collections must be a whole number >= 1, got {n_collections!r}")
    return float(total_epsilon) / n_collections


def advanced_total(per_collection_epsilon: float, n_collections: int, delta: float = 1e-6) -> float:
    """Advanced composition (Dwork & Roth Thm 3.20): k eps-DP steps are (eps', delta)-DP with
    eps' = sqrt(2 k ln(1/delta)) eps + k eps (e^eps - 1)."""
    require(0 < delta < 1, f"delta must be in (0, 1), got {delta!r}")
    k, eps = n_collections, per_collection_epsilon
    compose(eps, k)  # validates
    return math.sqrt(2 * k * math.log(1 / delta)) * eps + k * eps * math.expm1(eps)


def plan(*, every: str = "day", period: float = 1.0, period_unit: str = "year", times_per: int = 1,
         per_collection_epsilon: float | None = None, total_epsilon: float | None = None,
         epsilon_unit: str = "", ledger: Any = None) -> dict[str, Any]:
    """A budget over time, from either the per-collection epsilon or the total budget (exactly one).

    Returns ``collections``, ``per_collection_epsilon``, ``total_epsilon``,
    ``max_ratio_total`` (e^total: how much likelier one person's reports over the
    period can make one location than another) and a plain ``sentence``. A
    per-collection epsilon outside the mechanisms' range [0.001, 50] is flagged in
    ``warnings`` (a mechanism will refuse it).
    """
    require((per_collection_epsilon is None) != (total_epsilon is None),
            "give exactly one of the per-collection epsilon and the total budget")
    n = collections(every, period, period_unit, times_per=times_per)
    if per_collection_epsilon is not None:
        per = float(per_collection_epsilon)
        total = compose(per, n)
    else:
        total = float(total_epsilon)
        per = split_budget(total, n)
    warnings = []
    if per < EPSILON_MIN:
        warnings.append(f"the per-collection epsilon {per:.3g} is below {EPSILON_MIN:g}, the smallest a mechanism "
                        "accepts; collect less often or allow a larger total")
    if per > EPSILON_MAX:
        warnings.append(f"the per-collection epsilon {per:.3g} is above {EPSILON_MAX:g}: no meaningful privacy")
    unit = f" {epsilon_unit}" if epsilon_unit else ""
    how_often = f"{times_per} times a {every}" if times_per > 1 else f"every {every}"
    ratio = math.exp(total) if total < 700 else math.inf
    ratio_text = exp_ratio_text(total)
    if ledger is not None and per_collection_epsilon is not None:
        # What one collection charges a person (region, reports, SEM-Geo-I's epsilon' ...) comes from the
        # accountant; this only repeats it n times.
        over = ledger.repeated(n, f"{how_often} for {period:g} {period_unit}{'s' if period != 1 else ''}")
        one, every_total = over.per_collection(), over.total()
        sentence = (f"Collecting {how_often} for {period:g} {period_unit}{'s' if period != 1 else ''} is {n:,} "
                    f"collections. Each charges a person {one.text()}; over the period they add up to "
                    f"{every_total.text()} for one person's reports (sequential composition).")
        warning = over.warning()
        return {"every": every, "times_per": times_per, "period": float(period), "period_unit": period_unit,
                "collections": n, "per_collection_epsilon": one.ldp + one.geo_per_km + one.central,
                "total_epsilon": every_total.ldp + every_total.geo_per_km + every_total.central,
                "per_collection_text": one.headline(), "total_text": every_total.headline(),
                "epsilon_unit": epsilon_unit,
                "max_ratio_total": ratio, "protects": "all of one person's reports over the period",
                "warnings": warnings + ([warning[0].lower() + warning[1:].rstrip(".")] if warning else []),
                "sentence": sentence, "ledger": over.to_dict()}
    sentence = (f"Collecting {how_often} for {period:g} {period_unit}{'s' if period != 1 else ''} is {n:,} collections. "
                f"At epsilon = {per:.3g}{unit} each, they add up to epsilon = {total:.3g}{unit} for one person's "
                f"reports over the period (sequential composition): together they can make one location up to "
                f"e^{total:.3g} = {ratio_text} times likelier than another.")
    return {"every": every, "times_per": times_per, "period": float(period), "period_unit": period_unit,
            "collections": n, "per_collection_epsilon": per, "total_epsilon": total, "epsilon_unit": epsilon_unit,
            "max_ratio_total": ratio, "protects": "all of one person's reports over the period",
            "warnings": warnings, "sentence": sentence}
