"""The privacy accountant: every total a person pays, composed in one place (issue 26).

Every step that touches a person's data registers a :class:`Charge`: what it is (a region-tile report, a
location report, a dummy report, a window a traffic reporter re-sends in, an OD pair, ...), how many times
the worst-off person and the median person pay it in one collection (counted from the data: points per
person, trips per person, windows), and its guarantee in its own privacy model:

* **LDP** (epsilon-local differential privacy): epsilon per report;
* **Geo-I** (epsilon-geo-indistinguishability): epsilon per km, plus the mechanism's slack in metres: one
  report satisfies P(r | x) <= e^(eps/km * (|x - x'| + slack)) P(r | x');
* **central DP**: epsilon for the published output (a trusted curator sees every raw location).

A :class:`Ledger` composes the charges of a person by one stated rule, the basic sequential composition
theorem (Dwork & Roth, "The Algorithmic Foundations of Differential Privacy", Thm 3.16): the log of the
largest ratio between the probabilities of everything one person sends, for two alternative sets of true
data, is at most the sum of each report's log-ratio bound. It holds for local randomisers, each a function
of the person's data and fresh randomness, and is tight for pure epsilon (a person who never moves). The
sum is taken per model and never silently across models:

* LDP and Geo-I both bound what the collector sees, so they add as log-ratios: a person whose positions
  each move by at most D km is protected at ``ldp + geo_per_km x (D + slack)``, the slack term being
  ``sum_i eps_i/km x slack_i`` (``Total.geo_slack_log``);
* a central-DP charge protects the published output only; against the curator it protects nothing, and
  against a reader of the output it adds to the local charges (whose reports the output is computed from).

Repeated collections multiply every charge by the number of repetitions (the same rule). The no-privacy
warning (:meth:`Ledger.warning`) is judged on the per-person total, per collection and over the repetitions.

Thresholds (docs/privacy-accounting.md): a total log-ratio above :data:`WEAK_LOG_RATIO` (5: one person's
reports can make one place e^5 ~ 148 times likelier than another; an attacker who gave a place 1% beforehand
can end near 60%; OpenDP's DP Wizard warns from epsilon 5 as well) is called *weak*; above
:data:`NO_PRIVACY_LOG_RATIO` (10: e^10 ~ 22,000 times; 1% becomes 99.5%) *practically no privacy*.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Sequence

from ldpviz import wording
from ldpviz.errors import require
from ldpviz.mechanisms.base import CENTRAL_DP, GEO_I, GEO_I_UNIT_M, LDP, NO_PRIVACY, UNIT_PERSON, UNIT_ROW

#: A per-person total log-ratio above this is weak privacy (DP Wizard's warning point, see the module docstring).
WEAK_LOG_RATIO = 5.0
#: A per-person total log-ratio above this is practically no privacy (e^10 ~ 22,000).
NO_PRIVACY_LOG_RATIO = 10.0

#: What a region charge is called in every ledger.
REGION_CHARGE = "region: one map-tile report (OLH) to choose the region"


def _number(value: float) -> str:
    """A figure for a sentence: up to 4 significant digits, no exponent below a million."""
    value = float(value)
    if value == int(value) and abs(value) < 1e6:
        return f"{int(value):d}"
    return f"{value:.4g}" if abs(value) >= 1e-3 else f"{value:.2g}"


#: e^x is written out up to x = 300 ln 10; beyond it (and where a float overflows) "more than 10^300".
LOG_RATIO_TEXT_LIMIT = 300.0 * math.log(10.0)


def ratio_text(log_ratio: float) -> str:
    """e^log_ratio in words, from its log so nothing overflows: '4.48', '22,026', 'about 82 million',
    '3.1 x 10^57', or 'more than 10^300' (:func:`ldpviz.wording.times`, the one rule for people)."""
    return wording.times(log_ratio)


def _length(metres: float) -> str:
    if metres >= 100_000:
        return f"{metres / 1000:,.0f} km"
    return f"{metres / 1000:.3g} km" if metres >= 1000 else f"{metres:.3g} m"


@dataclass(frozen=True)
class Charge:
    """One step that touches a person's data, and how often a person pays it in one collection."""

    what: str            #: what is sent, in words ("a location report (grr)", "region: one map-tile report ...")
    model: str           #: LDP, GEO_I, CENTRAL_DP or NO_PRIVACY (:mod:`ldpviz.mechanisms.base`)
    epsilon: float       #: per use, in the model's unit (Geo-I: per km)
    uses_worst: float    #: uses by the worst-off person (the largest total) in one collection, from the data
    uses_median: float   #: uses by the median person (the median total) in one collection
    basis: str = ""      #: why that many, in words ("the most points one person has: 25")
    slack_m: float = 0.0  #: Geo-I: metres the guarantee adds to every distance between real positions

    def __post_init__(self) -> None:
        require(self.model in (LDP, GEO_I, CENTRAL_DP, NO_PRIVACY), f"unknown privacy model {self.model!r}")
        require(math.isfinite(float(self.epsilon)) and float(self.epsilon) >= 0,
                f"a charge's epsilon must be a finite number >= 0, got {self.epsilon!r}")
        for name in ("uses_worst", "uses_median"):
            uses = float(getattr(self, name))
            require(math.isfinite(uses) and uses >= 0, f"a charge's {name} must be >= 0, got {uses!r}")
        require(math.isfinite(float(self.slack_m)) and float(self.slack_m) >= 0,
                f"a Geo-I slack must be >= 0 metres, got {self.slack_m!r}")

    def uses(self, person: str) -> float:
        require(person in ("worst", "median"), f"person must be 'worst' or 'median', got {person!r}")
        return float(self.uses_worst if person == "worst" else self.uses_median)

    def unit_text(self) -> str:
        if self.model == GEO_I:
            slack = f" (+ {_length(self.slack_m)} slack)" if self.slack_m > 0 else ""
            return f"{_number(self.epsilon)} per km{slack}"
        return _number(self.epsilon)

    def line(self, repeats: int = 1, unit: str = UNIT_PERSON) -> str:
        """'a location report (grr): ε-LDP 1, 25 per person (the most points one person has: 25) = 25'; the uses
        are counted per ``unit`` (the ledger's: a person, or a row in an event-level ledger)."""
        if self.model == NO_PRIVACY:
            return f"{self.what}: no privacy (the exact value is sent)"
        model = {LDP: "ε-LDP", GEO_I: "Geo-I ε", CENTRAL_DP: "central ε-DP"}[self.model]
        uses = float(self.uses_worst) * repeats
        rep = f" x {repeats} collections" if repeats > 1 else ""
        basis = f" ({self.basis})" if self.basis else ""
        total = self.epsilon * uses
        per_km = " per km" if self.model == GEO_I else ""
        return (f"{self.what}: {model} {self.unit_text()}, {_number(self.uses_worst)} per {_unit_noun(unit)}{rep}"
                f"{basis} = {_number(total)}{per_km}")


@dataclass(frozen=True)
class Total:
    """A person's composed total, per privacy model (see the module docstring for the rule)."""

    ldp: float = 0.0             #: sum of LDP epsilons
    geo_per_km: float = 0.0      #: sum of Geo-I epsilons per km
    geo_slack_log: float = 0.0   #: sum of eps_i/km x slack_i: the Geo-I bound's additive log-ratio term
    central: float = 0.0         #: sum of central-DP epsilons (protects the published output only)
    exposed: bool = False        #: a step sends the exact value (no privacy)

    def log_ratio(self, distance_m: float) -> float:
        """The bound on the log-ratio of what the collector sees, for positions moved by at most
        ``distance_m`` (LDP + Geo-I; central DP protects nothing against the curator and is not in it)."""
        if self.exposed:
            return math.inf
        return self.ldp + self.geo_per_km * float(distance_m) / GEO_I_UNIT_M + self.geo_slack_log

    @property
    def geo_slack_m(self) -> float:
        """The Geo-I slack as one distance: the total bound is geo_per_km x (D + this)."""
        return self.geo_slack_log / self.geo_per_km * GEO_I_UNIT_M if self.geo_per_km > 0 else 0.0

    def local_text(self) -> str:
        """The local part (what the collector sees) without 'ε =': '14.5', '0.5 + 3.2 per km × (d + 19.9 km)'; ''
        where no local charge is paid."""
        parts = []
        if self.ldp > 0:
            parts.append(_number(self.ldp))
        if self.geo_per_km > 0:
            slack = f" + {_length(self.geo_slack_m)}" if self.geo_slack_log > 0 else ""
            parts.append(f"{_number(self.geo_per_km)} per km × (d{slack})" if slack else
                         f"{_number(self.geo_per_km)} per km × d")
        return " + ".join(parts)

    def text(self) -> str:
        """'ε = 14.5 (LDP)', 'ε = 0.5 + 3.2 per km × (d + 19.9 km)', ... (d: how far the person's positions move)."""
        if self.exposed:
            return "no privacy: a step sends the exact value"
        local = self.local_text()
        if self.central > 0:
            central = f"central ε-DP {_number(self.central)} for the published map"
            return f"ε = {local} against the collector; {central} (+ {local} for a reader of it)" if local \
                else f"{central}; nothing against the curator, who sees every exact location"
        if not local:
            return "ε = 0"
        model = "LDP" if self.geo_per_km == 0 else ("Geo-I" if self.ldp == 0 else "LDP + Geo-I")
        return f"ε = {local} ({model})"

    def ldp_only(self) -> float | None:
        """The total as one number where it is pure LDP (the JSON's single figure); None where Geo-I or central DP
        take part or a step sends the exact value (read the ledger's text instead)."""
        return None if (self.geo_per_km or self.central or self.exposed) else self.ldp

    def figure(self) -> float | None:
        """The total as one number in its own unit, for JSON: the ε of a pure LDP (or pure central-DP) total, the ε per
        km of a pure Geo-I one (its slack is :attr:`geo_slack_m`); None where models mix or the exact value is sent
        (one number would add ε-LDP and ε per km: read :meth:`text`)."""
        if self.exposed:
            return None
        parts = [v for v in (self.ldp, self.geo_per_km, self.central) if v > 0]
        if len(parts) > 1:
            return None
        return parts[0] if parts else 0.0

    def figure_unit(self) -> str:
        """The unit of :meth:`figure`: 'per km' for Geo-I, else ''."""
        return "per km" if self.geo_per_km > 0 and not self.ldp and not self.central else ""

    def headline(self) -> str:
        """A short figure for a metric box: '182' (LDP), '0.855/km + 3.54 km' (Geo-I), 'central 2' ..."""
        if self.exposed:
            return "no privacy"
        parts = [f"{self.ldp:.3g}"] if self.ldp > 0 else []
        if self.geo_per_km > 0:
            slack = f" (+{_length(self.geo_slack_m)})" if self.geo_slack_log > 0 else ""
            parts.append(f"{self.geo_per_km:.3g}/km{slack}")
        if self.central > 0:
            parts.append(f"central {self.central:.3g}")
        return " + ".join(parts) or "0"

    def to_dict(self) -> dict[str, Any]:
        return {"ldp_epsilon": self.ldp, "geo_i_epsilon_per_km": self.geo_per_km,
                "geo_i_slack_m": self.geo_slack_m, "central_epsilon": self.central, "exposed": self.exposed,
                "text": self.text()}


def _compose(charges: Sequence[Charge], person: str, repeats: int) -> Total:
    ldp = geo = slack = central = 0.0
    exposed = False
    for c in charges:
        uses = c.uses(person) * repeats
        if uses == 0:
            continue
        if c.model == LDP:
            ldp += c.epsilon * uses
        elif c.model == GEO_I:
            geo += c.epsilon * uses
            slack += c.epsilon * uses * c.slack_m / GEO_I_UNIT_M
        elif c.model == CENTRAL_DP:
            central += c.epsilon * uses
        else:
            exposed = True
    return Total(ldp, geo, slack, central, exposed)


@dataclass(frozen=True)
class Ledger:
    """The charges one person pays, composed (sequential composition, per model): see the module docstring."""

    charges: tuple[Charge, ...]
    unit: str = UNIT_PERSON               #: what the total protects
    repeats: int = 1                      #: how many times the whole collection runs
    repeats_basis: str = ""               #: where that number came from ("daily for a year")
    reference_m: float = 0.0              #: Geo-I: the distance the warning judges (a neighbouring cell's)
    notes: tuple[str, ...] = field(default_factory=tuple)   #: what the totals do not cover

    def __post_init__(self) -> None:
        require(isinstance(self.repeats, int) and self.repeats >= 1,
                f"repeats must be a whole number >= 1, got {self.repeats!r}")
        object.__setattr__(self, "charges", tuple(self.charges))

    def total(self, person: str = "worst") -> Total:
        """The per-person total over every repetition."""
        return _compose(self.charges, person, self.repeats)

    def per_collection(self, person: str = "worst") -> Total:
        """The per-person total of one collection."""
        return _compose(self.charges, person, 1)

    def repeated(self, repeats: int, basis: str = "") -> "Ledger":
        """The same ledger over ``repeats`` collections (e.g. daily for a year: 365)."""
        return replace(self, repeats=int(repeats), repeats_basis=basis)

    def with_charge(self, charge: Charge) -> "Ledger":
        return replace(self, charges=self.charges + (charge,))

    def lines(self) -> list[str]:
        """One plain-words line per charge (the worst-off person), repetitions included."""
        return [c.line(self.repeats, self.unit) for c in self.charges]

    def sentence(self) -> str:
        """The per-person total in words: what every page, command and report prints."""
        worst, median = self.total("worst"), self.total("median")
        over = (f" over {self.repeats} collections ({self.repeats_basis})" if self.repeats > 1 and self.repeats_basis
                else f" over {self.repeats} collections" if self.repeats > 1 else " in one collection")
        event = " (event-level: a person with m rows pays m times)" if self.unit == UNIT_ROW else ""
        text = f"Total per {_unit_noun(self.unit)}{event}{over}: {worst.text()}"
        if median != worst:
            text += f"; the median {_unit_noun(self.unit)}: {median.text()}"
        if len(self.charges) > 1 or self.repeats > 1 or any(c.uses_worst != 1 for c in self.charges):
            text += " (sequential composition of: " + "; ".join(self.lines()) + ")"
        return text + "."

    def judged(self) -> tuple[Total, str]:
        """The total the warning judges and its name: the largest one shown (over every repetition where there
        are several; a repeated total is never below one collection's), e.g. 'the total per person over 2
        collections'."""
        noun = _unit_noun(self.unit)
        if self.repeats > 1:
            basis = f" ({self.repeats_basis})" if self.repeats_basis else ""
            return self.total("worst"), f"the total per {noun} over {self.repeats} collections{basis}"
        return self.per_collection("worst"), f"the total per {noun} in one collection"

    def warning(self) -> str | None:
        """The weak- or no-privacy warning on the largest per-person total shown (:meth:`judged`: over the
        repetitions where there are several), naming the total it judged; None where it is within
        :data:`WEAK_LOG_RATIO` (thresholds: the module docstring)."""
        total, named = self.judged()
        local = total.log_ratio(self.reference_m)
        worst = max(local, total.central)
        if total.exposed or worst <= WEAK_LOG_RATIO:
            return None
        head = "Practically no privacy" if worst > NO_PRIVACY_LOG_RATIO else "Weak privacy"
        advice = (f"Above about {_number(WEAK_LOG_RATIO)} the guarantee is weak, and above about "
                  f"{_number(NO_PRIVACY_LOG_RATIO)} it protects practically nothing")
        single = len(self.charges) == 1 and self.repeats == 1 and self.charges[0].uses_worst == 1
        if single and total.geo_per_km > 0:
            cell = self.reference_m
            return (f"{head} (judged on {named}): at epsilon = {total.geo_per_km:.3g} per km on cells of "
                    f"{_length(cell)}, one report can make a person's cell {ratio_text(local)} times likelier "
                    f"(e^{local:,.3g}) than the neighbouring cell, so the report all but reveals the cell (accuracy "
                    f"figures such as W2 = 0 m or an attacker's error of 0 m say the same). {advice}: keep epsilon "
                    "per km x cell side in km (plus any slack) below it, with a smaller epsilon or smaller cells.")
        if single:
            what = "the published map" if total.central > local else "one report"
            return (f"{head} (judged on {named}): epsilon = {_number(worst)} lets {what} make one location "
                    f"{ratio_text(worst)} times likelier (e^{_number(worst)}) than another. {advice}; choose a "
                    "smaller epsilon.")
        where = (f" between positions {_length(self.reference_m)} apart (neighbouring cells)"
                 if total.geo_per_km > 0 and self.reference_m > 0 else "")
        what = "the published map" if total.central > local else f"one {_unit_noun(self.unit)}'s reports"
        fewer = "fewer collections, " if self.repeats > 1 else ""
        return (f"{head}: {named} is {total.text()}{where}, so {what} can make one place "
                f"{ratio_text(worst)} times likelier (e^{worst:.3g}) than another. {advice}; choose a smaller epsilon, "
                f"{fewer}or fewer reports per {_unit_noun(self.unit)}.")

    def to_dict(self) -> dict[str, Any]:
        """The JSON form: every line, the totals of the worst-off and the median person, the warning."""
        return {"unit": self.unit, "repeats": self.repeats, "repeats_basis": self.repeats_basis,
                "charges": [{"what": c.what, "model": c.model, "epsilon": c.epsilon, "uses_worst": c.uses_worst,
                             "uses_median": c.uses_median, "basis": c.basis, "slack_m": c.slack_m}
                            for c in self.charges],
                "lines": self.lines(), "per_collection": self.per_collection("worst").to_dict(),
                "total": self.total("worst").to_dict(), "median_total": self.total("median").to_dict(),
                "sentence": self.sentence(), "warning": self.warning(), "notes": list(self.notes)}


def _unit_noun(unit: str) -> str:
    return {UNIT_ROW: "row", UNIT_PERSON: "person"}.get(unit, unit.replace("one ", ""))


def unit_noun(ledger: Ledger) -> str:
    """What one line of ``ledger`` is counted per, in one word: 'person', 'row' (event-level), 'trip'."""
    return _unit_noun(ledger.unit)


# ------------------------------------------------------------------ builders every shell uses


def report_charge(mech: Any, uses_worst: float = 1, uses_median: float | None = None, basis: str = "",
                  what: str | None = None) -> Charge:
    """The charge of ``mech``'s report, in its own model: LDP/central epsilon, or Geo-I epsilon per km with
    its slack (what the mechanism's stated guarantee says, e.g. SEM-Geo-I's calibrated eps')."""
    model = mech.privacy_model
    what = what or f"a location report ({mech.name})"
    median = uses_worst if uses_median is None else uses_median
    if model == GEO_I:
        per_km = float(mech.epsilon_per_cell) * GEO_I_UNIT_M / float(mech.grid.cell_m)
        return Charge(what, GEO_I, per_km, uses_worst, median, basis, float(mech.geo_slack_m()))
    if model == NO_PRIVACY:
        return Charge(what, NO_PRIVACY, 0.0, uses_worst, median, basis)
    return Charge(what, model, float(mech.epsilon), uses_worst, median, basis)


def region_charge(region: Any, uses_worst: float = 1, uses_median: float | None = None,
                  basis: str = "each person reports one map tile") -> Charge | None:
    """The region's epsilon0 (a paid private-tile region), or None where the region spent nothing."""
    e0 = float(getattr(region, "epsilon_spent", 0.0) or 0.0)
    if e0 <= 0:
        return None
    return Charge(REGION_CHARGE, LDP, e0, uses_worst, uses_worst if uses_median is None else uses_median, basis)


def collection_ledger(mech: Any, region: Any = None, *, reports_worst: float = 1, reports_median: float = 1,
                      reports_basis: str = "", region_uses_worst: float = 1, region_uses_median: float = 1,
                      region_basis: str = "each row reports its map tile once", repeats: int = 1,
                      repeats_basis: str = "", unit: str = UNIT_ROW, notes: Sequence[str] = ()) -> Ledger:
    """The ledger of one collection of ``mech`` over ``region``: the region's epsilon0 where it was paid for,
    then the mechanism's reports (``reports_worst`` / ``reports_median`` per person; 1 for point data, where a
    row is the unit)."""
    charges = []
    reg = region_charge(region, region_uses_worst, region_uses_median, region_basis) if region is not None else None
    if reg is not None:
        charges.append(reg)
    charges.append(report_charge(mech, reports_worst, reports_median, reports_basis))
    reference = float(mech.grid.cell_m) if mech.privacy_model == GEO_I else 0.0
    return Ledger(tuple(charges), unit=unit, repeats=int(repeats), repeats_basis=repeats_basis,
                  reference_m=reference, notes=tuple(notes))


def uses_ledger(charge: Charge, uses_worst: float, uses_median: float | None = None, *, unit: str = UNIT_PERSON,
                basis: str = "", reference_m: float = 0.0) -> Ledger:
    """The ledger of one charge paid ``uses_worst`` times (the median: ``uses_median``), e.g. the lambda location
    updates of the worst trip (``unit`` 'one trip') or the W windows of a traffic reporter: the only way a count
    times an epsilon is made outside this module."""
    median = uses_worst if uses_median is None else uses_median
    return Ledger((replace(charge, uses_worst=float(uses_worst), uses_median=float(median),
                           basis=basis or charge.basis),), unit=unit, reference_m=reference_m)


def _model_part(total: Total, model: str) -> float:
    """The part of ``total`` in ``model`` (LDP: its ε, with the region's ε0; Geo-I: its ε per km; central DP)."""
    return {LDP: total.ldp, GEO_I: total.geo_per_km, CENTRAL_DP: total.central}.get(model, 0.0)


def spend_total(ledger: Ledger, total: float, repeats: int, basis: str = "") -> Ledger | None:
    """``ledger`` (one collection; its last charge the mechanism's report) over ``repeats`` collections, with the
    report's epsilon set so the total in the report's model is exactly ``total`` (sequential composition solved
    for the report: ``repeats x (fixed + uses x eps) = total``, the region's ε0 among the fixed charges); None when
    the other charges alone already spend it. Geo-I: ``total`` is per km (the region's LDP ε0, another model, is
    stated beside it, never added in)."""
    require(math.isfinite(float(total)) and float(total) > 0, f"a total budget must be a number > 0, got {total!r}")
    require(isinstance(repeats, int) and repeats >= 1, f"repeats must be a whole number >= 1, got {repeats!r}")
    report = ledger.charges[-1]
    require(report.model in (LDP, GEO_I, CENTRAL_DP) and report.uses_worst > 0,
            "the last charge of the ledger must be a report with a privacy model to spend a total on")
    fixed = _model_part(_compose(ledger.charges[:-1], "worst", repeats), report.model)
    left = float(total) - fixed
    if left <= 0:
        return None
    charge = replace(report, epsilon=left / (report.uses_worst * repeats))
    return replace(ledger, charges=ledger.charges[:-1] + (charge,), repeats=int(repeats), repeats_basis=basis)


def single_report_ledger(epsilon: float, model: str = LDP, unit: str = UNIT_PERSON) -> Ledger:
    """The ledger of one report at ``epsilon`` in ``model`` (no region, no slack): a budget without a mechanism
    (Geo-I judged between places 1 km apart)."""
    return Ledger((Charge("a report", model, float(epsilon), 1, 1),), unit=unit,
                  reference_m=GEO_I_UNIT_M if model == GEO_I else 0.0)


def length_text(metres: float) -> str:
    """A distance in words: '598 m', '3.2 km', '1,200 km'."""
    return _length(metres)


def advanced_composition(epsilon: float, repeats: int, delta: float = 1e-6) -> float:
    """Advanced composition (Dwork & Roth Thm 3.20), for comparison only: ``repeats`` epsilon-DP steps are
    (eps', delta)-DP with eps' = sqrt(2 k ln(1/delta)) eps + k eps (e^eps - 1). ldpviz's totals use the basic
    theorem (tight for pure epsilon); this is smaller only for many collections at small epsilon."""
    require(0 < delta < 1, f"delta must be in (0, 1), got {delta!r}")
    require(isinstance(repeats, int) and repeats >= 1, f"repeats must be a whole number >= 1, got {repeats!r}")
    k, eps = repeats, float(epsilon)
    return math.sqrt(2 * k * math.log(1 / delta)) * eps + k * eps * math.expm1(eps)


def counts_per_person(person: Sequence[Any]) -> tuple[int, float]:
    """(most, median) rows per person in ``person`` (one label per row); (0, 0) for none."""
    import numpy as np

    labels = np.asarray(person).astype(str)
    if labels.size == 0:
        return 0, 0.0
    _, counts = np.unique(labels, return_counts=True)
    return int(counts.max()), float(np.median(counts))


def region_total_sentence(ledger: Ledger) -> str:
    """'' where no region charge is in ``ledger``; else the per-row total the guarantee carries: the region's
    epsilon0 plus the mechanism's report (sequential composition), read from the ledger."""
    region = next((c for c in ledger.charges if c.what == REGION_CHARGE), None)
    if region is None:
        return ""
    total = ledger.per_collection("worst")
    e0 = region.epsilon * region.uses_worst
    if total.geo_per_km > 0 or total.central > 0:
        return (f"choosing the region spent ε0 = {e0:g} (LDP) per {_unit_noun(ledger.unit)}, so between two positions "
                f"d apart a {_unit_noun(ledger.unit)} is protected at {total.text()} in total (sequential "
                "composition)")
    report = total.ldp - e0
    return (f"choosing the region spent ε0 = {e0:g} per {_unit_noun(ledger.unit)}, so each "
            f"{_unit_noun(ledger.unit)} is protected at ε0 + ε = {e0:g} + {report:g} = {total.ldp:g} in total "
            "(sequential composition)")


def setting_text(mech: Any) -> str:
    """What the epsilon a person chose means for ``mech``: 'epsilon = 1', 'epsilon = 1 per km', or, where the
    slider is not the Geo-I epsilon itself (SEM-Geo-I calibrated to an LDP level), both numbers."""
    if mech.privacy_model != GEO_I:
        return f"epsilon = {float(mech.epsilon):g}"
    per_km = float(mech.epsilon_per_cell) * GEO_I_UNIT_M / float(mech.grid.cell_m)
    slack = float(mech.geo_slack_m())
    slack_text = f" + {_length(slack)} slack" if slack > 0 else ""
    if math.isclose(per_km, float(mech.epsilon), rel_tol=1e-9):
        return f"epsilon = {per_km:g} per km{slack_text}"
    return f"slider epsilon = {float(mech.epsilon):g} (Geo-I epsilon' = {per_km:.3g} per km{slack_text})"


def person_ledger(parts: Sequence[tuple[Charge, Any]], *, unit: str = UNIT_PERSON, reference_m: float = 0.0,
                  notes: Sequence[str] = ()) -> Ledger:
    """A ledger from per-person counts: ``parts`` pairs each charge (its ``uses_*`` ignored) with the number of
    times every person paid it (arrays aligned on the same people). The worst-off person is the one with the
    largest total (log-ratio at ``reference_m``), the median person the one with the median total; every line
    then shows that person's own counts, so the total is a total one real person paid."""
    import numpy as np

    require(len(parts) > 0, "a ledger needs at least one charge")
    uses = [np.asarray(u, dtype=float) for _, u in parts]
    require(len({u.shape for u in uses}) == 1 and uses[0].ndim == 1 and uses[0].size > 0,
            "per-person counts must be aligned arrays over the same (non-empty) set of people")
    weight = np.zeros_like(uses[0])
    for (c, _), u in zip(parts, uses):
        per_use = (c.epsilon * ((reference_m or GEO_I_UNIT_M) + c.slack_m) / GEO_I_UNIT_M if c.model == GEO_I
                   else c.epsilon)
        weight += (per_use if c.model != NO_PRIVACY else 1e9) * u
    order = np.argsort(weight, kind="stable")
    worst, median = int(order[-1]), int(order[(len(order) - 1) // 2])
    charges = tuple(replace(c, uses_worst=float(u[worst]), uses_median=float(u[median]))
                    for (c, _), u in zip(parts, uses))
    return Ledger(charges, unit=unit, reference_m=reference_m, notes=tuple(notes))
