"""Plain-language explanations, generated from the numbers: epsilon with worked examples, metrics with units.

Pages, the CLI and the decision report call these so that every place says the same
thing. Nothing here is typed-in results: each sentence is computed from its arguments.

Epsilon's worked example is the posterior-odds reading of differential privacy
(Kasiviswanathan & Smith, "On the 'semantics' of differential privacy", 2014): if an
observer thought two places equally likely before seeing a report, an epsilon-LDP
report can move them to at most e^eps : 1, i.e. a belief of at most
e^eps / (1 + e^eps) in either place.
"""

from __future__ import annotations

import math
from typing import Any

from ldpviz.errors import require
from ldpviz.wording import length, times, number, plural  # noqa: F401 -- the pages' wording helpers, re-exported
from ldpviz.mechanisms.base import CENTRAL_DP, GEO_I, GEO_I_UNIT, GEO_I_UNIT_M, LDP, NO_PRIVACY
from ldpviz.metrics import METRIC_INFO
from ldpviz.decide.privacy_scale import ratio_text

#: Unit, and what good and poor values look like, per metric (METRIC_INFO holds label and help).
METRIC_GUIDE: dict[str, dict[str, str]] = {
    "w2_m": {"unit": "metres",
             "good": "well under one cell side: the estimated map puts people where they are, to the grid's sharpness",
             "poor": "a sizeable share of the region's side: the map is blurred or shifted at city scale"},
    "w2_cells": {"unit": "cells", "good": "below 1 cell: mass stays in or next to its cell",
                 "poor": "many cells: hot spots move or spread over whole districts"},
    "sliced_w2_m": {"unit": "metres", "good": "well under one cell side", "poor": "a sizeable share of the region"},
    "emd_l1_m": {"unit": "metres (street distance)", "good": "well under one cell side",
                 "poor": "a sizeable share of the region"},
    "aqe": {"unit": "relative error of counts (0.1 = 10%)",
            "good": "below 0.1: range counts (how many people in this rectangle?) are within about 10%",
            "poor": "above 0.5: counts are off by half or more; do not publish small-area counts"},
    "kl": {"unit": "nats", "good": "below 0.1: the estimate rarely puts little mass where many people are",
           "poor": "above 1: places with people are missing from the estimate"},
    "l1": {"unit": "share of people misplaced x 2 (0 to 2)",
           "good": "below 0.2: fewer than 10% of people are counted in the wrong cell",
           "poor": "above 1: more than half of the people are counted in the wrong cell"},
    "mse": {"unit": "squared share per cell", "good": "small next to the squared mean share 1/d^4",
            "poor": "comparable to the squared mean share: cell values are mostly noise"},
    "pearson": {"unit": "correlation (-1 to 1)", "good": "above 0.9: busy and quiet cells are where they should be",
                "poor": "below 0.5: the pattern of the map is largely lost"},
    "similarity": {"unit": "overlap of the two maps (0 to 1)", "good": "above 0.9: 90% of the mass overlaps",
                   "poor": "below 0.5: less than half of the mass overlaps"},
}


def _times(log_ratio: float) -> str:
    """e^log_ratio in words, from its log (never overflows: 'more than 10^300' beyond)."""
    return ratio_text(log_ratio)


def _belief(log_ratio: float) -> str:
    """The 50/50 prior's largest posterior after a report with this log-ratio: 'p% / (1-p)%' (logistic, stable)."""
    p = 1.0 / (1.0 + math.exp(-log_ratio)) if log_ratio > -700 else 0.0
    return f"{p:.0%} / {1 - p:.0%}"


def exp_ratio_text(exponent: float) -> str:
    """e^exponent in words: the number up to a million, else its power of ten ('about 10^158', not 'more than a
    million' for e^365)."""
    if exponent < math.log(1e12):       # '4.48', '22,026', 'about 82 million' (ldpviz.wording.times)
        return times(exponent)
    return f"about 10^{int(exponent / math.log(10))}"


def _length(metres: float) -> str:
    return length(metres)


def epsilon_plain(epsilon: float, model: str = LDP, *, distances_m: tuple[float, ...] = (500.0, 1000.0, 5000.0),
                  slack_m: float = 0.0) -> str:
    """Epsilon in plain language with worked numbers (e^eps and the 50/50 belief it allows).

    Geo-I: ``slack_m`` is the mechanism's stated snapping slack (:meth:`Mechanism.geo_slack_m`), added to every
    distance. Every ratio is computed as a log, so any epsilon and distance is written out (up to
    'more than 10^300')."""
    require(isinstance(epsilon, (int, float)) and math.isfinite(epsilon) and epsilon > 0,
            f"epsilon must be a number > 0, got {epsilon!r}")
    if model == LDP:
        return (f"epsilon = {epsilon:g} means that one report makes no location more than "
                f"{_times(epsilon)} times likelier (e^{epsilon:g}) than any other. Worked example: someone who thought "
                "two places equally likely (50% / 50%) before seeing the report can believe at most "
                f"{_belief(epsilon)} after it. Smaller epsilon: stronger privacy and noisier maps.")
    if model == GEO_I:
        parts = []
        for d in distances_m:
            log_ratio = epsilon * (d + slack_m) / GEO_I_UNIT_M
            parts.append(f"{_length(d)} apart: at most {_times(log_ratio)} times ({_belief(log_ratio)})")
        slack = (f" x (distance + a snapping slack of {_length(slack_m)}) in km" if slack_m > 0 else
                 " x distance in km")
        return (f"epsilon = {epsilon:g} per {GEO_I_UNIT} means that one report makes a place at most "
                f"e^({epsilon:g}{slack}) times likelier than another: places " + "; ".join(parts) +
                ". Nearby places stay hard to tell apart; distant ones much less so.")
    if model == CENTRAL_DP:
        return (f"epsilon = {epsilon:g} (central DP) means the published map changes its probability by at most "
                f"{_times(epsilon)} times whether or not any one person is in the data. The aggregator sees every "
                f"exact location: this protects against readers of the map, not against the aggregator.")
    require(model == NO_PRIVACY, f"unknown privacy model {model!r}")
    return "No privacy: the reports are the true locations; epsilon has no meaning here."


def metric_explanation(metric: str) -> dict[str, Any]:
    """Label, unit, direction, definition (help) and what good and poor values look like, for one metric."""
    require(metric in METRIC_INFO, f"unknown metric {metric!r}; choose one of {', '.join(METRIC_INFO)}")
    info, guide = METRIC_INFO[metric], METRIC_GUIDE.get(metric, {})
    return {"metric": metric, "label": info["label"], "unit": guide.get("unit", ""),
            "lower_is_better": info["lower_is_better"], "help": info["help"],
            "good": guide.get("good", ""), "poor": guide.get("poor", "")}


def metric_readout(metric: str, value: float, *, cell_m: float | None = None,
                   region_side_m: float | None = None) -> str:
    """One sentence reading a value: the value with its unit, and for distances its size in cells and region."""
    e = metric_explanation(metric)
    require(isinstance(value, (int, float)) and math.isfinite(value), f"{metric} value must be a finite number")
    if metric in ("w2_m", "sliced_w2_m", "emd_l1_m"):
        text = f"{e['label']} = {_length(value)}: on average the estimate moves people {_length(value)}"
        extra = []
        if cell_m:
            extra.append(f"{value / cell_m:.2g} cell sides of {_length(cell_m)}")
        if region_side_m:
            extra.append(f"{value / region_side_m:.1%} of the region's {_length(region_side_m)} side")
        return text + (f" ({', '.join(extra)})." if extra else ".")
    direction = "lower is better" if e["lower_is_better"] else "higher is better"
    return f"{e['label']} = {value:.3g} ({e['unit']}; {direction}). Good: {e['good']}. Poor: {e['poor']}."


#: Readouts that are not map metrics (those are in METRIC_INFO / METRIC_GUIDE): the attacker, budgets over time,
#: flows, navigation, people and cost. ``direction`` says which way is better (or more private).
READOUT_GUIDE: dict[str, dict[str, str]] = {
    "rows_read": {
        "label": "Rows read", "unit": "rows", "direction": "all of the file's data rows",
        "help": "Every data row of the uploaded file (the header excluded), before any check.",
        "good": "the number of rows you expected the file to hold",
        "poor": "fewer than expected: the file was cut short or the delimiter was misread"},
    "rows_kept": {
        "label": "Rows kept", "unit": "rows (one location each)", "direction": "closer to rows read is better",
        "help": "Rows with a valid latitude and longitude in degrees, used by every page (wrapped longitudes "
                "included and counted in the table below).",
        "good": "all or nearly all rows read",
        "poor": "more than 5% fewer than read: see the table for why, and fix the file or the column names"},
    "rows_dropped": {
        "label": "Rows dropped", "unit": "rows", "direction": "smaller is better",
        "help": "Rows left out, each counted once under the first check it failed (see the table below).",
        "good": "0, or a few malformed rows you know about",
        "poor": "more than 5% of the rows: usually swapped or projected coordinates, or the wrong columns"},
    "attacker_error_m": {
        "label": "Attacker's expected error", "unit": "metres", "direction": "larger is more private",
        "help": "How far an attacker's best guess of one person's location is from where they are, on average over "
                "everyone, when the attacker knows the mechanism and the population density (between cell "
                "centres). Its chance of landing within r of a person (r: 1% of the region's side unless chosen) "
                "is scored against people's positions inside their cells, so naming a large cell is not 'within r'.",
        "good": "several cell sides or more: one report does not pin a person to their block",
        "poor": "under one cell side: one report gives away the person's cell"},
    "guess_error_m": {
        "label": "Attacker's best guess is off by", "unit": "metres", "direction": "larger is more private",
        "help": "For this one user and report: the distance from the true cell to the cell the server now finds "
                "most likely (one example; the expected error averages over everyone).",
        "good": "several cell sides: the most likely cell is elsewhere",
        "poor": "0 m: the server's best guess is the true cell"},
    "posterior_true_cell": {
        "label": "Posterior on the true cell", "unit": "probability, 0 to 100%", "direction": "lower is more private",
        "help": "The server's belief, after this one report, that the user is in their true cell.",
        "good": "close to the cell's prior share: the report taught the server little",
        "poor": "near 100%: one report reveals the cell"},
    "report_ratio": {
        "label": "Max / min report probability", "unit": "ratio, 1 or more", "direction": "lower is more private",
        "help": "The most likely report this location can send, divided by the least likely (reports of probability "
                "zero left out). For two-level mechanisms (GRR, DAM) it is e^ε.",
        "good": "near 1: every report is about as likely, so a report says little about the location",
        "poor": "in the tens or more: the likely reports point at the location"},
    "collections": {
        "label": "Collections", "unit": "count per person over the period", "direction": "fewer is more private",
        "help": "How many times one person's location is collected; each collection spends its ε again "
                "(sequential composition).",
        "good": "few: the total stays close to one collection's ε",
        "poor": "hundreds at a fixed ε per collection: the total grows with every one"},
    "epsilon_per_collection": {
        "label": "Charged per collection", "unit": "ε for one person per collection",
        "direction": "lower is more private",
        "help": "What one collection charges a person: the report's ε, plus the region's ε0 where the region was "
                "paid from the users' data (charged at every collection). The sidebar's ε is the report's alone.",
        "good": "1 or below: one report moves a 50/50 guess to at most 73/27",
        "poor": "5 or more: a report can make one place over 100 times likelier than another"},
    "total_epsilon": {
        "label": "Total ε", "unit": "ε for one person over the whole period (the sum)",
        "direction": "lower is more private",
        "help": "What all of one person's reports in the period add up to (sequential composition).",
        "good": "a few units or below over the whole period",
        "poor": "10 or more: all of a person's reports together locate them well"},
    "trips": {
        "label": "Trips", "unit": "count", "direction": "more is more accurate",
        "help": "Origin-destination trips that took part, one report pair each.",
        "good": "tens of thousands: the noise averages out over the many OD pairs",
        "poor": "a few hundred: single flows are mostly noise"},
    "budget_split": {
        "label": "Budget split", "unit": "ε for the origin + ε for the destination",
        "direction": "lower is more private",
        "help": "A trip reports two locations; the trip's ε is split between them (sequential composition).",
        "good": "a total of 1 or below per trip", "poor": "a total of 5 or more per trip"},
    "od_l1": {
        "label": "L1 over OD pairs", "unit": "share of trips misplaced x 2 (0 to 2)", "direction": "lower is better",
        "help": "Sum over origin-destination pairs of |true - estimated| share of trips.",
        "good": "below 0.2: fewer than 10% of trips are on the wrong pair",
        "poor": "above 1: more than half of the trips are on the wrong pair"},
    "top_k_precision": {
        "label": "Top-k precision", "unit": "share, 0 to 100%", "direction": "higher is better",
        "help": "Of the k largest true flows, the share that are also among the estimate's k largest.",
        "good": "above 80%: the main corridors are found", "poor": "below 30%: the main corridors are missed"},
    "updates_per_trip": {
        "label": "Updates per trip", "unit": "count (λ)", "direction": "fewer is more private",
        "help": "Location updates a car sends on one trip; each spends ε.",
        "good": "a handful", "poor": "dozens: the trip's total ε grows with every update"},
    "trip_total_epsilon": {
        "label": "Total privacy per trip", "unit": "ε per trip (λ x ε)", "direction": "lower is more private",
        "help": "Updates per trip times the ε of each (sequential composition).",
        "good": "a few units or below", "poor": "10 or more: the trip's reports together reveal the route"},
    "route_difference": {
        "label": "Route difference", "unit": "share of the fastest route's length", "direction": "lower is better",
        "help": "Levenshtein distance between the route driven on private congestion and the fastest route on "
                "true congestion, relative to the latter's length.",
        "good": "below 10%: drivers take nearly the best route", "poor": "above 50%: routes are largely different"},
    "extra_trip_time": {
        "label": "Extra trip time", "unit": "seconds per trip", "direction": "lower is better",
        "help": "Time lost against the fastest route on true congestion.",
        "good": "a few percent of the trip", "poor": "a quarter of the trip or more"},
    "people": {
        "label": "People", "unit": "count", "direction": "more is more accurate",
        "help": "People whose trajectories make the heatmap (the privacy unit is one person).",
        "good": "thousands or more: the noise is small next to the crowd",
        "poor": "a few dozen: the noise dominates the map"},
    "messages_per_person": {
        "label": "Messages per person", "unit": "count", "direction": "fewer is cheaper",
        "help": "Messages each phone sends to the shuffler.",
        "good": "a handful", "poor": "hundreds: a cost in data and battery for every phone"},
    "bits_per_person": {
        "label": "Bits per person", "unit": "bits", "direction": "fewer is cheaper",
        "help": "What each phone uploads.", "good": "a few kilobits", "poor": "megabits"},
    "measured_epsilon": {
        "label": "Measured ε (worst case)", "unit": "ε: the log of the largest probability ratio",
        "direction": "at most the claim is a pass",
        "help": "Computed exactly from the mechanism's channel: the largest log(P[report | x] / P[report | x']) over "
                "reports and pairs of true cells.",
        "good": "at or below the claimed ε: the guarantee holds on this grid",
        "poor": "above the claimed ε: the mechanism leaks more than it says (FAIL)"},
    "ratio_over_bound": {
        "label": "Max ratio / e^ε", "unit": "ratio", "direction": "1 or below is a pass",
        "help": "The largest probability ratio measured, divided by the e^ε the guarantee allows.",
        "good": "1 or below (1 exactly: the bound is tight)", "poor": "above 1: the guarantee is broken (FAIL)"},
    "run_time": {
        "label": "Run time", "unit": "seconds", "direction": "lower is better",
        "help": "Perturb, estimate and score, per trial.",
        "good": "under a second: move the sliders freely", "poor": "tens of seconds: a long run is announced first"},
}


def readout_help(key: str, detail: str = "") -> str:
    """The help text of one readout (a map metric or a :data:`READOUT_GUIDE` entry): its name, unit and direction,
    what it measures, and what good and poor values look like; ``detail`` (this value's specifics) goes before
    good and poor. The one source of every readout's help on every page."""
    if key in METRIC_INFO:
        e = metric_explanation(key)
        direction = "lower is better" if e["lower_is_better"] else "higher is better"
    else:
        require(key in READOUT_GUIDE, f"unknown readout {key!r}; choose one of "
                                      f"{', '.join([*METRIC_INFO, *READOUT_GUIDE])}")
        e = READOUT_GUIDE[key]
        direction = e["direction"]
    text = f"**{e['label']}** ({e['unit']}; {direction}). {e['help']}"
    if detail:
        text += f" {detail}"
    return text + f"\n\nGood: {e['good']}.  \nPoor: {e['poor']}."
