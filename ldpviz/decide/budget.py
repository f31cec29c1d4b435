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
from ldpviz.mechanisms import accounting
from ldpviz.mechanisms.base import EPSILON_MAX, EPSILON_MIN, GEO_I, LDP

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
    """Total epsilon of ``n_collections`` reports at ``per_collection_epsilon`` each: the accountant's sequential
    composition (:func:`ldpviz.mechanisms.accounting.single_report_ledger`, repeated)."""
    require(isinstance(per_collection_epsilon, (int, float)) and math.isfinite(per_collection_epsilon)
            and per_collection_epsilon > 0, f"per-collection epsilon must be > 0, got {per_collection_epsilon!r}")
    require(isinstance(n_collections, int) and n_collections >= 1,
            f"number of collections must be a whole number >= 1, got {n_collections!r}")
    return accounting.single_report_ledger(per_collection_epsilon).repeated(n_collections).total().ldp


def split_budget(total_epsilon: float, n_collections: int) -> float:
    """The per-collection epsilon that spends ``total_epsilon`` evenly over ``n_collections`` (the accountant's
    :func:`~ldpviz.mechanisms.accounting.spend_total` on one report)."""
    require(isinstance(total_epsilon, (int, float)) and math.isfinite(total_epsilon) and total_epsilon > 0,
            f"total epsilon must be > 0, got {total_epsilon!r}")
    require(isinstance(n_collections, int) and n_collections >= 1,
            f"number of collections must be a whole number >= 1, got {n_collections!r}")
    spent = accounting.spend_total(accounting.single_report_ledger(1.0), total_epsilon, n_collections)
    return spent.charges[-1].epsilon


def advanced_total(per_collection_epsilon: float, n_collections: int, delta: float = 1e-6) -> float:
    """Advanced composition (Dwork & Roth Thm 3.20), for comparison: the accountant's
    :func:`~ldpviz.mechanisms.accounting.advanced_composition`."""
    compose(per_collection_epsilon, n_collections)  # validates
    return accounting.advanced_composition(per_collection_epsilon, n_collections, delta)


def plan(*, every: str = "day", period: float = 1.0, period_unit: str = "year", times_per: int = 1,
         per_collection_epsilon: float | None = None, total_epsilon: float | None = None,
         epsilon_unit: str = "", ledger: Any = None) -> dict[str, Any]:
    """A budget over time, from either the per-collection epsilon or the total budget (exactly one), composed by
    the accountant (:mod:`ldpviz.mechanisms.accounting`).

    ``ledger``: what one collection charges a person (the region's epsilon0, the mechanism's reports in their own
    model; built at ``per_collection_epsilon`` when that is given); default one report at that epsilon (Geo-I per
    km when ``epsilon_unit`` is 'per km'). From a total, the accountant solves for the report's epsilon
    (:func:`~ldpviz.mechanisms.accounting.spend_total`): the region's epsilon0 is paid every collection too, and a
    Geo-I total is per km with the region's LDP part beside it, never added in.

    Returns ``collections``, ``per_collection_epsilon`` (the report's epsilon in one collection: what the sidebar
    sets), ``total_epsilon`` (the total in one number where one model, else None), ``per_collection_text`` and
    ``total_text`` (the ledger's figures), ``max_ratio_total`` (e^ the judged total log-ratio), the ``ledger``,
    ``warnings`` and a plain ``sentence``. None of the figures is added up here.
    """
    require((per_collection_epsilon is None) != (total_epsilon is None),
            "give exactly one of the per-collection epsilon and the total budget")
    n = collections(every, period, period_unit, times_per=times_per)
    model = GEO_I if epsilon_unit else LDP
    how_often = f"{times_per} times a {every}" if times_per > 1 else f"every {every}"
    span = f"{how_often} for {period:g} {period_unit}{'s' if period != 1 else ''}"
    if ledger is None:
        ledger = accounting.single_report_ledger(per_collection_epsilon or 1.0, model)
    if per_collection_epsilon is not None:
        compose(float(per_collection_epsilon), n)                     # validates
        over = ledger.repeated(n, span)
    else:
        require(isinstance(total_epsilon, (int, float)) and math.isfinite(total_epsilon) and total_epsilon > 0,
                f"total epsilon must be > 0, got {total_epsilon!r}")
        over = accounting.spend_total(ledger, float(total_epsilon), n, span)
        if over is None:
            fixed = ledger.repeated(n, span)
            fixed = accounting.Ledger(fixed.charges[:-1], unit=fixed.unit, repeats=n, repeats_basis=span)
            text = (f"Collecting {span} is {n:,} collections. The other charges alone ({fixed.total().text()}: "
                    f"{'; '.join(fixed.lines())}) already spend the total of {float(total_epsilon):g}"
                    f"{f' {epsilon_unit}' if epsilon_unit else ''}, so nothing is left for the reports.")
            return {"every": every, "times_per": times_per, "period": float(period), "period_unit": period_unit,
                    "collections": n, "per_collection_epsilon": 0.0, "total_epsilon": None,
                    "per_collection_text": "nothing left", "total_text": fixed.total().headline(),
                    "epsilon_unit": epsilon_unit, "max_ratio_total": math.inf,
                    "protects": "all of one person's reports over the period",
                    "warnings": ["the total is spent before any report: allow a larger total or collect less often"],
                    "sentence": text, "ledger": fixed.to_dict()}
    per = float(over.charges[-1].epsilon)
    one, every_total = over.per_collection(), over.total()
    warnings = []
    if per < EPSILON_MIN:
        warnings.append(f"the per-collection epsilon {per:.3g} is below {EPSILON_MIN:g}, the smallest a mechanism "
                        "accepts; collect less often or allow a larger total")
    if per > EPSILON_MAX:
        warnings.append(f"the per-collection epsilon {per:.3g} is above {EPSILON_MAX:g}: no meaningful privacy")
    warning = over.warning()
    if warning:
        warnings.append(warning[0].lower() + warning[1:].rstrip("."))
    judged = max(every_total.log_ratio(over.reference_m), every_total.central)
    apart = (f" for places {accounting.length_text(over.reference_m)} apart" if every_total.geo_per_km > 0 else "")
    sentence = (f"Collecting {span} is {n:,} collections. Each charges a person {one.text()}; over the period "
                f"they add up to {every_total.text()} for one person's reports (sequential composition)")
    sentence += (": nothing is protected." if every_total.exposed else
                 f": together they can make one location up to {accounting.ratio_text(judged)} times likelier "
                 f"(e^{judged:.3g}) than another{apart}.")
    return {"every": every, "times_per": times_per, "period": float(period), "period_unit": period_unit,
            "collections": n, "per_collection_epsilon": per, "total_epsilon": every_total.figure(),
            "per_collection_text": one.headline(), "total_text": every_total.headline(),
            "epsilon_unit": epsilon_unit, "max_ratio_total": math.exp(judged) if judged < 700 else math.inf,
            "protects": "all of one person's reports over the period", "warnings": warnings,
            "sentence": sentence, "ledger": over.to_dict()}
