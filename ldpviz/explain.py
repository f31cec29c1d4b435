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
from ldpviz.mechanisms.base import CENTRAL_DP, GEO_I, GEO_I_UNIT, GEO_I_UNIT_M, LDP, NO_PRIVACY
from ldpviz.metrics import METRIC_INFO

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


def _times(ratio: float) -> str:
    if not math.isfinite(ratio) or ratio >= 1e9:
        return "more than a billion"
    return f"{ratio:,.0f}" if ratio >= 100 else f"{ratio:.3g}"


def _length(metres: float) -> str:
    return f"{metres / 1000:.3g} km" if metres >= 1000 else f"{metres:.3g} m"


def epsilon_plain(epsilon: float, model: str = LDP, *, distances_m: tuple[float, ...] = (500.0, 1000.0, 5000.0)) -> str:
    """Epsilon in plain language with worked numbers (e^eps and the 50/50 belief it allows)."""
    require(isinstance(epsilon, (int, float)) and math.isfinite(epsilon) and epsilon > 0,
            f"epsilon must be a number > 0, got {epsilon!r}")
    if model == LDP:
        r = math.exp(epsilon)
        return (f"epsilon = {epsilon:g} means that one report makes no location more than e^{epsilon:g} = {_times(r)} "
                f"times likelier than any other. Worked example: someone who thought two places equally likely "
                f"(50% / 50%) before seeing the report can believe at most {r / (1 + r):.0%} / {1 / (1 + r):.0%} "
                f"after it. Smaller epsilon: stronger privacy and noisier maps.")
    if model == GEO_I:
        parts = []
        for d in distances_m:
            r = math.exp(epsilon * d / GEO_I_UNIT_M)
            parts.append(f"{_length(d)} apart: at most {_times(r)} times ({r / (1 + r):.0%} / {1 / (1 + r):.0%})")
        return (f"epsilon = {epsilon:g} per {GEO_I_UNIT} means that one report makes a place at most "
                f"e^({epsilon:g} x distance in km) times likelier than another: places " + "; ".join(parts) +
                ". Nearby places stay hard to tell apart; distant ones much less so.")
    if model == CENTRAL_DP:
        r = math.exp(epsilon)
        return (f"epsilon = {epsilon:g} (central DP) means the published map changes its probability by at most "
                f"{_times(r)} times whether or not any one person is in the data. The aggregator sees every exact "
                f"location: this protects against readers of the map, not against the aggregator.")
    require(model == NO_PRIVACY, f"unknown privacy model {model!r}")
    return "No privacy: the reports are the true locations; epsilon has no meaning here."


def metric_explanation(metric: str) -> dict[str, Any]:
    """Label, unit, direction, definition (help) and what good and poor values look like, for one metric."""
    require(metric in METRIC_INFO, f"unknown metric {metric!r}; choose one of {', '.join(METRIC_INFO)}")
    info, guide = METRIC_INFO[metric], METRIC_GUIDE.get(metric, {})
    return {"metric": metric, "label": info["label"], "unit": guide.get("unit", ""),
            "lower_is_better": info["lower_is_better"], "help": info["help"],
            "good": guide.get("good", ""), "poor": guide.get("poor", "")}


def metric_readout(metric: str, value: float, *, cell_m: float | None = None, region_side_m: float | None = None) -> str:
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
