"""What a target can ask of the grid, and what the officer's privacy limit allows (issue 36).

* :func:`cell_note`: a W2 target much finer than a cell cannot be met at any sensible epsilon -- the map has
  no finer places than its cells -- so the page and ``ldpviz target`` say so beside the target.
* The officer's limit is "the largest epsilon per person I accept" in one collection (default
  :data:`DEFAULT_LIMIT`), judged on the accountant's ledger (:mod:`ldpviz.mechanisms.accounting`), never added
  up here: :func:`per_person` reads a ledger's per-collection total as one log-ratio (LDP: the sum of epsilons;
  Geo-I: between neighbouring cells, as the ledger's warning judges it; central DP: the published map's).
  :func:`epsilon_at_limit` is the mechanism's epsilon whose ledger reaches the limit (charges are linear in
  epsilon: the ledger is read at two settings, then checked at the answer).
* :func:`limit_summary`: where no mechanism meets the target within the limit, the answer leads with that and
  states, per mechanism, what the metric reaches at the limit (the inverse question, about one collection).
* :func:`rank_by_model`: LDP's epsilon per report and Geo-I's epsilon per km are different scales, so answers
  are ranked within a privacy model, the officer's accepted models in their order first.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Sequence

from ldpviz import wording
from ldpviz.mechanisms.accounting import Ledger
from ldpviz.mechanisms.base import CENTRAL_DP, EPSILON_MAX, EPSILON_MIN, GEO_I, GEO_I_UNIT, LDP

#: The officer's limit when none is given: the largest epsilon per person in one collection they accept.
DEFAULT_LIMIT = 5.0
#: A W2 target finer than this share of a cell side gets a note (the map's places are its cells).
CELL_FRACTION = 0.25
#: The order models are ranked in when the officer names none.
MODEL_ORDER = (LDP, GEO_I, CENTRAL_DP)
#: Headings of the ranked groups.
MODEL_HEADINGS = {LDP: "Local DP: ranked by ε per report",
                  GEO_I: f"Geo-indistinguishability: ranked by ε per {GEO_I_UNIT}",
                  CENTRAL_DP: "Central DP: ranked by ε of the published map"}


def cell_note(metric: str, target: float, cell_m: float) -> str | None:
    """A note when a distance target is finer than :data:`CELL_FRACTION` of a cell side, else None."""
    if not metric.endswith("_m") or not (target > 0 and cell_m > 0) or target >= CELL_FRACTION * cell_m:
        return None
    times = cell_m / target
    return (f"The target ({wording.length(target)}) is {wording.times_finer(times)} finer than a cell "
            f"({wording.length(cell_m)}): the map places people only to their cell, so no collection at a sensible "
            f"ε can meet it. Choose more cells, a smaller region or a target of at least about "
            f"{wording.length(CELL_FRACTION * cell_m)}.")


def per_person(ledger: Ledger) -> float:
    """The ledger's per-person total in one collection as one log-ratio: LDP epsilons, plus Geo-I between
    neighbouring cells (the ledger's ``reference_m``), or central DP's published map, whichever is larger."""
    total = ledger.per_collection("worst")
    if total.exposed:
        return math.inf
    return max(total.log_ratio(ledger.reference_m), total.central)


@dataclass(frozen=True)
class _Grid:
    cell_m: float


@dataclass(frozen=True)
class Setting:
    """What the accountant reads of a mechanism at some epsilon (name, model, epsilon, cell size, Geo-I slack),
    without building the mechanism (planar Laplace's kernel takes seconds on a fine grid)."""

    name: str
    privacy_model: str
    epsilon: float
    cell_m: float
    slack_m: float = 0.0

    @property
    def grid(self) -> _Grid:
        return _Grid(self.cell_m)

    @property
    def epsilon_per_cell(self) -> float:
        # Geo-I: the scenario's epsilon is per km (ldpviz.mechanisms.base.GEO_I_UNIT), the charge reads per cell
        return self.epsilon * self.cell_m / 1000.0 if self.privacy_model == GEO_I else self.epsilon

    def geo_slack_m(self) -> float:
        return self.slack_m

    def at(self, epsilon: float) -> "Setting":
        return Setting(self.name, self.privacy_model, float(epsilon), self.cell_m, self.slack_m)

    @classmethod
    def of(cls, mech: Any) -> "Setting":
        return cls(mech.name, mech.privacy_model, float(mech.epsilon), float(mech.grid.cell_m),
                   float(mech.geo_slack_m()))

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Setting":
        return cls(str(d["name"]), str(d["privacy_model"]), float(d["epsilon"]), float(d["cell_m"]),
                   float(d.get("slack_m", 0.0)))

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "privacy_model": self.privacy_model, "epsilon": self.epsilon,
                "cell_m": self.cell_m, "slack_m": self.slack_m}


def epsilon_at_limit(ledger_at: Callable[[Setting], Ledger], setting: Setting, limit: float) -> float | None:
    """The mechanism's epsilon (its own unit) at which ``ledger_at``'s per-person total in one collection is
    ``limit``, at most the searchable range's top; None where the fixed charges (a paid region) already exceed it
    or it is below the smallest epsilon a mechanism accepts.
    Charges are linear in epsilon: the total is read at epsilon 1 and 2, solved, and checked at the answer."""
    t1, t2 = per_person(ledger_at(setting.at(1.0))), per_person(ledger_at(setting.at(2.0)))
    slope, fixed = t2 - t1, 2 * t1 - t2
    if not (math.isfinite(slope) and slope > 0) or limit <= fixed:
        return None
    eps = min((limit - fixed) / slope, EPSILON_MAX)
    if eps < EPSILON_MIN or per_person(ledger_at(setting.at(eps))) > limit * (1 + 1e-9) + 1e-12:
        return None          # below the smallest epsilon a mechanism accepts (or the ledger is not linear)
    return float(eps)


def within(goal: Mapping[str, Any], limit_epsilon: float | None) -> bool:
    """The answer is reached at an epsilon the officer accepts."""
    return bool(goal.get("reached")) and limit_epsilon is not None and goal.get("epsilon") is not None and \
        float(goal["epsilon"]) <= float(limit_epsilon) * (1 + 1e-9)


def apply_limit(goal: Mapping[str, Any], limit: float, ledger_at: Callable[[Setting], Ledger]) -> dict[str, Any]:
    """``goal`` (a :meth:`ldpviz.decide.tradeoff.GoalResult.to_dict`) with the officer's ``limit``, the mechanism's
    epsilon at that limit (``limit_epsilon``, None when unknown or out of reach) and ``within_limit``;
    ``ledger_at`` builds the ledger a person pays at a setting (the page's flow ledger, the command's)."""
    row = dict(goal)
    setting = Setting.from_dict(goal["setting"]) if goal.get("setting") else None
    eps = epsilon_at_limit(ledger_at, setting, float(limit)) if setting is not None else None
    row.update(limit=float(limit), limit_epsilon=eps, within_limit=within(goal, eps), at_limit=None)
    return row


def needs_inverse(goals: Sequence[Mapping[str, Any]], turn: str = "epsilon") -> list[int]:
    """Which goals get the inverse question (what the metric reaches at the limit): all of them with a known
    epsilon at the limit, when none meets the target within it (the epsilon question only)."""
    if turn != "epsilon" or any(g.get("within_limit") for g in goals):
        return []
    return [i for i, g in enumerate(goals) if g.get("limit_epsilon") is not None]


def epsilon_text(epsilon: float, model: str) -> str:
    return f"{epsilon:.3g}" + (f" per {GEO_I_UNIT}" if model == GEO_I else "")


def metric_text(metric: str, value: float | None) -> str:
    """A metric's value for people: distances as '39.6 km', shares of everyone as '4.2%', others to 3 figures."""
    if value is None or not math.isfinite(float(value)):
        return "n/a"
    if metric.endswith("_m"):
        return wording.length(float(value))
    if metric == "aqe":
        return f"{float(value):.1%}"
    return f"{float(value):.3g}"


def at_limit_text(metric: str, reading: Mapping[str, Any], model: str) -> str:
    """'at ε 5: W2 45.2 km on average; one collection 38.1 to 52.3 km (95%); 0 of 10 met the target'."""
    if reading.get("note"):
        return f"at ε {epsilon_text(reading['epsilon'], model)}: {reading['note']}"
    return (f"at ε {epsilon_text(reading['epsilon'], model)}: {metric} {metric_text(metric, reading['mean'])} on "
            f"average; one collection {metric_text(metric, reading['low'])} to "
            f"{metric_text(metric, reading['high'])} ({reading['coverage']:.0%} of collections); "
            f"{reading['met']} of {reading['trials']} collections met the target"
            + (f" ({reading['start_note']})" if reading.get("start_note") else ""))


def limit_summary(goals: Sequence[Mapping[str, Any]], limit: float, metric: str, target: float,
                  cell_m: float | None = None, waiting: int = 0, noun: str = "person") -> dict[str, Any]:
    """What the answer leads with, given each goal's ``within_limit`` and (where not) ``at_limit`` reading:
    ``feasible`` (some mechanism meets the target within the limit), ``within`` (their names), ``lead`` (the
    sentence that opens the answer when none does, '' otherwise), ``lines`` (per mechanism, what the metric
    reaches at the limit) and ``cell_note``. ``waiting``: mechanisms not searched yet (the lead then speaks of
    those searched so far). ``noun``: whom the limit is per (the ledger's unit: "person", or "row" for a guarantee
    per report)."""
    inside = [g["mechanism"] for g in goals if g.get("within_limit")]
    note = cell_note(metric, target, cell_m) if cell_m else None
    lines = [f"{g['mechanism']} ({g['privacy_model']}) {at_limit_text(metric, g['at_limit'], g['privacy_model'])}"
             for g in goals if not g.get("within_limit") and g.get("at_limit")]
    lead = ""
    if goals and not inside:
        who = "No mechanism" if not waiting else f"No mechanism searched so far ({waiting} not yet)"
        lead = (f"{who} meets {metric} ≤ {metric_text(metric, target)} within your limit of ε {limit:g} per "
                f"{noun} in one collection." + (f" {note}" if note else "") +
                (" What each reaches at your limit (one collection):" if lines else
                 f" Your limit is below what any of them can be run at (the smallest ε is {EPSILON_MIN:g}, after "
                 "any charge for the region)."))
    return {"limit": float(limit), "feasible": bool(inside), "within": inside, "lead": lead, "lines": lines,
            "cell_note": note}


def rank_by_model(rows: Iterable[Mapping[str, Any]], models: Sequence[str] = MODEL_ORDER,
                  key: str = "epsilon") -> list[tuple[str, list[dict[str, Any]]]]:
    """Answers grouped by privacy model, the accepted ``models`` in their order first (any other model after, in
    :data:`MODEL_ORDER`), each group ranked by ``key`` (reached first; unreached after, in their order)."""
    rows = [dict(r) for r in rows]
    order = list(dict.fromkeys([*models, *MODEL_ORDER, *(r["privacy_model"] for r in rows)]))
    out = []
    for model in order:
        mine = [r for r in rows if r["privacy_model"] == model]
        if not mine:
            continue
        reached = sorted((r for r in mine if r.get("reached")), key=lambda r: (float(r[key]), r["mechanism"]))
        out.append((model, reached + [r for r in mine if not r.get("reached")]))
    return out


def top(groups: Sequence[tuple[str, Sequence[Mapping[str, Any]]]]) -> str | None:
    """The mechanism signed by default: the first reached answer of the first group that has one."""
    for _, rows in groups:
        for r in rows:
            if r.get("reached"):
                return str(r["mechanism"])
    return None
