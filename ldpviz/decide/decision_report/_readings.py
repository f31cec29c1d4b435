"""What a report states in words: the rows that take part, what the totals protect, the target and its answer."""

from __future__ import annotations

from typing import Any, Mapping

from ldpviz import experiment
from ldpviz.data import datasets
from ldpviz.mechanisms import accounting
from ldpviz.metrics import METRIC_INFO
from ldpviz.decide.decision_report._html import _e, metric_value, sentence
from ldpviz.decide.decision_report._commands import is_trips


def _protects(ledger: Any) -> str:
    """What the report's totals protect, in the ledger's unit (issue 37.6: never 'per person' beside a per-row
    ledger)."""
    from ldpviz.mechanisms.base import UNIT_ROW
    if ledger.unit == UNIT_ROW:
        return ("one row (one location) in one collection: event-level; a person with m rows pays m times (the "
                "ledger counts per row, as ldpviz cannot tell which rows are one person's)")
    return f"{ledger.unit}: all of their reports in one collection (the ledger counts them)"


def rows_sentence(dataset: datasets.Dataset, result: experiment.Result, unit: str | None = None) -> str:
    """n as the tool knows it: rows in the file and rows that take part, never a claim about people. ``unit``: the
    unit a signed decision protects (its ledger's); a person there is stated as the officer's statement."""
    if is_trips(dataset.name):
        return (f"{dataset.n:,} people, one point each, taken from their trips; n = {result.n_users:,} of them inside "
                "the region take part, each sending one report. Each row here is one person, so what is said per "
                "row below is per person, in one collection (the decision above composes the reports and "
                "repeats of step 2).")
    kind = "synthetic rows" if dataset.synthetic else "rows"
    text = (f"{dataset.n:,} {kind} in the data set; n = {result.n_users:,} rows inside the region take part, each "
            "sending one report.")
    if unit == accounting.UNIT_PERSON:
        text += (" The decision (step 2) states that the unit is a person, each sending one row per collection: "
                 "what this report says per person is per row of the file.")
    elif dataset.report is not None or dataset.name.startswith("upload:"):
        text += (" ldpviz cannot tell from the file whether two rows belong to the same person, so the guarantee "
                 "(section 3) protects one row, not one person.")
    return text


def target_reading(goal: Mapping[str, Any] | None, result: experiment.Result, metric: str | None = None,
                   target: float | None = None) -> dict[str, Any] | None:
    """The goal seek this setting answers, as the report states it (issue 27: the report reached from a goal seek
    never mentioned the target): the target, the answer and its one-collection reading (``goal``: a
    :meth:`ldpviz.decide.tradeoff.GoalResult.to_dict`, or None when only ``metric`` and ``target`` are known), and
    how this report's own collections read against it. None when no target is given."""
    metric = (goal or {}).get("metric") or metric
    target = (goal or {}).get("target") if (goal or {}).get("target") is not None else target
    if not metric or target is None or not float(target) > 0:
        return None
    target = float(target)
    lower = bool(METRIC_INFO.get(metric, {}).get("lower_is_better", True))
    out: dict[str, Any] = {"metric": metric, "target": target, "sense": "at_most" if lower else "at_least"}
    if metric in result.metrics.columns:
        values = result.metrics[metric].to_numpy(dtype=float)
        out["report_collections"] = int(values.size)
        out["report_met"] = int((values <= target).sum() if lower else (values >= target).sum())
    if goal:
        for key in ("mechanism", "privacy_model", "reached", "epsilon", "n_users", "probability", "confidence",
                    "miss_chance_max", "misses", "trials", "mean", "ci_low", "ci_high", "message", "scan_warning",
                    "rule", "epsilon_used"):
            if key in goal:
                out[key] = goal[key]
    return out


def _target_html(t: Mapping[str, Any]) -> str:
    from ldpviz.decide.one_collection import chance_text
    sign = "≤" if t["sense"] == "at_most" else "≥"
    label = METRIC_INFO.get(t["metric"], {}).get("label", t["metric"])
    parts = [f"<p><strong>Target: {_e(label)} {sign} {t['target']:g}</strong>"
             + (f" in at least {t['probability']:.0%} of single collections ({t['confidence']:.0%} confidence)"
                if t.get("probability") is not None and t.get("confidence") is not None else "") + ".</p>"]
    if t.get("epsilon") is not None:
        used = t.get("epsilon_used")
        parts.append(
            f"<p>The goal seek's answer for {_e(t.get('mechanism', ''))}: epsilon {t['epsilon']:.4g}"
            + (f" (this report uses {float(used):g}, rounded up so the target stays met)" if used is not None
               and abs(float(used) - float(t['epsilon'])) > 1e-12 else "")
            + f". One collection misses the target with a chance of at most "
            f"{_e(chance_text(t.get('miss_chance_max')))} ({t.get('misses', 0)} of {t.get('trials', 0)} fresh "
            "collections missed); second reading: the mean over them is "
            f"{metric_value(t['metric'], t.get('mean'))} (95% interval {metric_value(t['metric'], t.get('ci_low'))} "
            f"to {metric_value(t['metric'], t.get('ci_high'))}). "
            f"{_e(sentence(t.get('message', '')))}</p>")
        if t.get("scan_warning"):
            parts.append(f"<p class='verdict fail'><strong>Warning:</strong> {_e(t['scan_warning'])}</p>")
    elif t.get("reached") is False:
        parts.append(f"<p class='verdict fail'>The goal seek did not reach the target: {_e(t.get('message', ''))}</p>")
    if t.get("report_collections"):
        parts.append(f"<p class='note'>This report's own {t['report_collections']} collections (section 5): "
                     f"{t['report_met']} of {t['report_collections']} meet the target. Few collections say little "
                     "about one collection; the goal seek's reading above is over its fresh collections.</p>")
    return "".join(parts)
