"""Step 5, sign: the command that reproduces the answer and the flow's part of the signed record."""

from __future__ import annotations

import html
from typing import Any, Mapping

from ldpviz.data import trajectories
from ldpviz.data.dataset_types import Dataset
from ldpviz.decide import decision_report, feasibility, one_collection, tradeoff
from ldpviz.experiment import Scenario
from ldpviz.geo import region_choice
from ldpviz.shell import command_line
from ldpviz.wording import length
from ldpviz.decide.decision_flow._choices import DEFAULTS, EVERY, UNITS
from ldpviz.decide.decision_flow._answer import (TRIPS_UNIT_TEXT, epsilon_text, groups, limit_text, need_text, rank,
                                                 unit_of)


# ---- step 5: sign ---------------------------------------------------------------------------------------------

def command(cfg: Mapping[str, Any], mechanisms_: list[str], region: Any = None,
            dataset: Dataset | None = None) -> str:
    """The ``ldpviz target`` command that reproduces step 4. Its data options are the ones every printed command
    uses (:func:`ldpviz.decide.decision_report.data_arguments`): ``--dataset NAME --region PRESET`` or
    ``--bbox=W,S,E,N``; for a user's file ``--csv FILE`` and its framing (``--bbox=W,S,E,N``, with
    ``--bbox-from suggestion`` for the box read from the rows, or the paid private tiles and their epsilon0).
    ``region``: the preset's name, or the Region (defaults to the config's preset)."""
    where = region if region is not None else cfg.get("region")
    sc = Scenario(dataset=str(cfg["dataset"]), mechanism=mechanisms_[0] if mechanisms_ else "grr", epsilon=1.0,
                  grid_side=int(cfg["grid_side"]), region=where, seed=int(cfg.get("seed", 0)))
    parts = ["ldpviz", "target", *decision_report.data_arguments(sc, dataset)]
    parts += ["--grid", str(int(cfg["grid_side"])), "--metric", str(cfg["decide_metric"]),
              "--at-most", f"{float(cfg['decide_target']):g}"]
    if cfg.get("n_users"):
        parts += ["--users", str(int(cfg["n_users"]))]
    if cfg.get("decide_turn") == "users":
        parts += ["--epsilon", f"{float(cfg['decide_epsilon']):g}"]
    if float(cfg.get("decide_probability", one_collection.PROBABILITY)) != one_collection.PROBABILITY:
        parts += ["--probability", f"{float(cfg['decide_probability']):g}"]
    if float(cfg.get("decide_limit", feasibility.DEFAULT_LIMIT)) != feasibility.DEFAULT_LIMIT:
        parts += ["--limit", f"{float(cfg['decide_limit']):g}"]
    if int(cfg.get("decide_reports", 1)) != 1:     # the limit is judged on the same ledger as the page's
        parts += ["--reports", str(int(cfg["decide_reports"]))]
    if unit_of(cfg) != "person":
        parts += ["--unit", unit_of(cfg)]
    parts += ["--seed", str(int(cfg.get("seed", 0)))]
    for name in mechanisms_:
        parts += ["--mechanism", name]
    return command_line([*parts, "--json"])


def trips_command(cfg: Mapping[str, Any], mechanisms_: list[str], trips: trajectories.Trajectories, region: Any,
                  preset: str | None) -> str:
    """The Python that reproduces step 4 on trips (``ldpviz target`` reads points): the trips file read with the
    same loader and checks, one point per person (:func:`trips_points`, same seed), the same goal seek."""
    seed, side = int(cfg.get("seed", 0)), int(cfg["grid_side"])
    if trips.name in trajectories.names():
        load = f"trips = trajectories.load({trips.name!r})"
    else:        # the file framed as on the page: its box (and where the box came from) or its paid tiles
        load = ("from ldpviz.mechanisms.fo.private_region import upload_frame\n"
                f"trips = trajectories.load_trajectory_file({trips.label!r}"
                f"{decision_report.python_framing(trips.default_region)})   # your file")
    where = f"trips.presets[{preset!r}]" if preset else (
        f"region_choice.stated_region({tuple(region.bounds)!r}, data_use={region.data_use!r})"
        if getattr(region, "bounds", None) is not None else "trips.default_region")
    users = int(cfg["n_users"]) if cfg.get("n_users") else None
    lines = ["from ldpviz.data import trajectories", "from ldpviz.decide import decision_flow, tradeoff",
             "from ldpviz.geo import region_choice", load,
             f"points = decision_flow.trips_points(trips, seed={seed})   # one point per person per collection",
             f"region = {where}"]
    for name in mechanisms_:
        sc = f"decision_flow.scenario(points.name, region, {name!r}, {side}, {users!r}, {seed})"
        if cfg.get("decide_turn") == "users":
            call = (f"tradeoff.users_needed({sc}.with_(epsilon={float(cfg['decide_epsilon'])!r}), "
                    f"{cfg['decide_metric']!r}, {float(cfg['decide_target'])!r}, dataset=points, "
                    f"probability={float(cfg.get('decide_probability', 0.95))!r})")
        else:
            call = (f"tradeoff.target_epsilon({sc}, {cfg['decide_metric']!r}, {float(cfg['decide_target'])!r}, "
                    f"n_users={users!r}, dataset=points, probability={float(cfg.get('decide_probability', 0.95))!r})")
        lines.append(f"print({name!r}, {call}.epsilon)")
    return "\n".join(lines)


#: The officer's choices from file to signed report, in order, when every one is set (the README states the count;
#: tests/app/test_decide_page.py checks it). The download is the action that ends the flow, not a choice.
CHOICES = ("the file", "its bounds", "the unit protected", "reports per person per collection",
           "how often it is collected", "the privacy models accepted", "the need (metric)", "the target",
           "the cell size", "the purpose", "the owner", "the retention")
#: The choices that have no default: the rest may be left as the page sets them (the mechanism chosen defaults to the
#: top-ranked one, the share of collections to 95%).
REQUIRED = ("the file", "its bounds", "the target", "the purpose", "the owner", "the retention")


def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _rows(rows: list[tuple[str, str]]) -> str:
    return "<table>" + "".join(f"<tr><th>{_e(a)}</th><td>{_e(b)}</td></tr>" for a, b in rows) + "</table>"


def record_sections(cfg: Mapping[str, Any], *, data_label: str, rows_text: str, region_text: str, cell_text: str,
                    answers: list[dict[str, Any]], chosen: str | None, why_not: Mapping[str, str], link: str,
                    cli: str, signed_by: str = "") -> tuple[str, str]:
    """The Decide flow's part of the signed decision report (:func:`ldpviz.decide.decision_report.build_report`
    puts ``head`` first and ``tail`` last): ``head`` every choice, the answer and the alternatives, the flow's
    ledger and what is not covered; ``tail`` the sign-off block, the link that reopens the flow and the command
    that reproduces the answer. HTML fragments, no external resource."""
    turn = cfg.get("decide_turn", "epsilon")
    metric, target = cfg["decide_metric"], float(cfg["decide_target"])
    pick = next((r for r in answers if r["mechanism"] == chosen), None)
    choices = _record_choices(cfg, turn, metric, target, data_label, rows_text, region_text, cell_text)
    verdict, ledger_html, year_total = _record_answer(pick, metric, target)
    lead, alt_rows = _record_alternatives(cfg, answers, turn, metric, target)
    left_out = "".join(f"<li>{_e(n)}: {_e(w)}</li>" for n, w in why_not.items())
    not_covered = [
        "The tolerance bound assumes the metric varies like a normal variable from one collection to the next; "
        "the test suite checks the share of fresh collections meeting the target by simulation.",
        "The answer is the smallest epsilon found on a scan (x2 apart, refined to 5%), not a proven smallest.",
        "Accuracy is simulated on this data with one report per person; a different population, another region or "
        "more reports per person change it.",
        "The attacker sees one report and knows the population density; side information (home, work, other "
        "data sets) is not modelled.",
        "The totals cover the charges listed and the schedule stated in step 2; any other use of the same people's "
        "data adds to them.",
    ] + list((pick or {}).get("ledger", {}) and (pick["ledger"].get("notes") or []))
    sign = [("Purpose", cfg.get("decide_purpose") or "(not given)"),
            ("Owner", cfg.get("decide_owner") or "(not given)"),
            ("How often collected", cfg["decide_every"]),
            ("Retention", cfg.get("decide_retention") or "(not given)"),
            ("Total epsilon per person over a year", year_total),
            ("Signed", signed_by or "________________________  date ____________")]
    head = f"""<h2>Decision: every choice</h2>{_rows(choices)}
<h2>Decision: the answer</h2>{lead}{verdict}
<h2>Decision: the ledger (what each person pays on the schedule of step 2)</h2>{ledger_html}
<h2>Decision: alternatives, ranked within each privacy model by the \
{'epsilon' if turn == 'epsilon' else 'users'} they need</h2>
<table><tr><th>rank</th><th>mechanism</th><th>epsilon</th><th>users</th><th>within your limit</th>
<th>chance one collection misses (at most)</th><th>attacker off by</th>\
<th>total per {_e(unit_noun(cfg))}, one collection</th></tr>{alt_rows}</table>
<h3>Left out, and why not</h3><ul>{left_out or '<li>none</li>'}</ul>
<h2>Decision: what this does not cover</h2><ul>{''.join(f'<li>{_e(t)}</li>' for t in not_covered)}</ul>
"""
    tail = f"""<h2>Sign-off</h2>{_rows(sign)}
<h2>Reopen and reproduce the decision</h2>
<p>Reopen the whole flow: <a href="{_e(link)}">{_e(link)}</a></p>
<p>Command that reproduces the answer:</p><pre>{_e(cli)}</pre>
"""
    return head, tail


def _record_choices(cfg: Mapping[str, Any], turn: str, metric: str, target: float, data_label: str,
                    rows_text: str, region_text: str, cell_text: str) -> list[tuple[str, str]]:
    """The record's 'every choice' rows, step by step."""
    return [
        ("1. Data", f"{data_label} ({rows_text})"),
        ("1. Region", region_text),
        ("2. Unit protected", UNITS[unit_of(cfg)] + ("; " + TRIPS_UNIT_TEXT if cfg.get("decide_trips") else "")),
        ("2. Reports per person per collection", str(cfg["decide_reports"])),
        ("2. How often collected", f"{cfg['decide_every']} ({EVERY[cfg['decide_every']]} collection"
                                   f"{'s' if EVERY[cfg['decide_every']] != 1 else ''} a year)"),
        ("2. Privacy models accepted", ", ".join(cfg["decide_models"])),
        ("3. The need", need_text(metric, target)),
        ("3. Metric and target", f"{metric} <= {target:g}"),
        ("3. Cells", cell_text),
        ("4. Question", "the smallest epsilon found at the users there are" if turn == "epsilon" else
         f"the fewest users found at epsilon {float(cfg['decide_epsilon']):g}"),
        ("4. Rule", tradeoff.rule_text(float(cfg.get("decide_probability", 0.95)))),
        ("4. The largest ε per person in one collection accepted",
         f"{float(cfg.get('decide_limit', feasibility.DEFAULT_LIMIT)):g} (Geo-I: between neighbouring cells)"),
        ("4. Seed", str(cfg.get("seed", 0))),
    ]


def _record_answer(pick: Mapping[str, Any] | None, metric: str, target: float) -> tuple[str, str, str]:
    """The chosen answer's verdict, its ledger and its total over a year (a warning and 'not decided' when no
    mechanism was chosen or the chosen one did not reach the target)."""
    if pick is None or not pick.get("reached"):
        return ("<p class='warn'><strong>No mechanism chosen, or the chosen one did not reach the target.</strong></p>",
                "", "not decided")
    verdict = (f"<p class='answer'><strong>Chosen: {_e(pick['mechanism'])} at epsilon {_e(epsilon_text(pick))}"
               + (f" with {int(pick['n_users']):,} users" if pick.get("n_users") else "") + "</strong>. "
               f"One collection meets {_e(metric)} ≤ {_e(decision_report.metric_value(metric, target))} with "
               f"probability at least "
               f"{pick['probability']:.0%} ({pick['confidence']:.0%} confidence): the chance that one collection "
               f"misses it is at most {_e(one_collection.chance_text(pick.get('miss_chance_max')))} "
               f"({pick.get('misses', 0)} of {pick['trials']} fresh collections missed). Second reading: the "
               f"mean over those collections is {_e(decision_report.metric_value(metric, pick['mean']))} (95% "
               f"interval {_e(decision_report.metric_value(metric, pick['ci_low']))} to "
               f"{_e(decision_report.metric_value(metric, pick['ci_high']))}). "
               f"{_e(decision_report.sentence(pick['message']))}</p>")
    if pick.get("attacker_error_m") is not None:
        verdict += (f"<p>An attacker who knows the population density and sees one report is off by "
                    f"{_e(length(pick['attacker_error_m']))} on average.</p>")
    for key in ("scan_warning", "warning", "ledger_warning"):
        if pick.get(key):
            verdict += f"<p class='warn'><strong>Warning:</strong> {_e(pick[key])}</p>"
    ledger = pick.get("ledger") or {}
    one, over = pick.get("ledger_one", ""), pick.get("ledger_sentence", "")
    ledger_html = ("<ul>" + "".join(f"<li>{_e(line)}</li>" for line in ledger.get("lines", [])) + "</ul>"
                   f"<p><strong>{_e(one)}</strong></p>"
                   + (f"<p><strong>{_e(over)}</strong></p>" if over and over != one else ""))
    year_total = ledger.get("total", {}).get("text") or pick.get("ledger_sentence", "")
    return verdict, ledger_html, year_total


def _record_alternatives(cfg: Mapping[str, Any], answers: list[dict[str, Any]], turn: str, metric: str,
                         target: float) -> tuple[str, str]:
    """The alternatives ranked within each privacy model, as table rows, and the lead on the officer's limit
    ('' when no row was checked against it)."""
    def alt_row(r: Mapping[str, Any]) -> str:
        return (f"<tr><td>{_e(r.get('rank') or '—')}</td><td>{_e(r['mechanism'])}</td><td>{_e(epsilon_text(r))}</td>"
                f"<td>{_e(format(r['n_users'], ',') if r.get('n_users') else '')}</td>"
                f"<td>{_e(limit_text(r) if 'within_limit' in r else '')}</td>"
                f"<td>{_e(one_collection.chance_text(r.get('miss_chance_max')) if r.get('reached') else '')}</td>"
                f"<td>{_e('' if r.get('attacker_error_m') is None else length(r['attacker_error_m']))}</td>"
                f"<td>{_e(r.get('ledger_one', '') if r.get('reached') else r.get('message', ''))}</td></tr>")

    ranked = answers if all("model_heading" in r for r in answers) else rank(list(answers), turn,
                                                                              cfg.get("decide_models") or ())
    alt_rows = "".join(
        f"<tr><th colspan='8'>{_e(heading)}</th></tr>" + "".join(alt_row(r) for r in rows)
        for heading, rows in groups(ranked))
    limit = float(cfg.get("decide_limit", feasibility.DEFAULT_LIMIT))
    summary = (feasibility.limit_summary(ranked, limit, metric, target, noun=unit_noun(cfg))
               if any("within_limit" in r for r in ranked) else None)
    lead = (f"<p class='warn'><strong>{_e(summary['lead'])}</strong></p><ul>"
            + "".join(f"<li>{_e(line)}</li>" for line in summary["lines"]) + "</ul>") if summary and summary["lead"] \
        else ""
    return lead, alt_rows


def unit_noun(cfg: Mapping[str, Any]) -> str:
    return "person" if unit_of(cfg) == "person" else "row"      # the ledger's own noun (accounting)


def record_json(cfg: Mapping[str, Any], answers: list[dict[str, Any]], chosen: str | None,
                region: Any = None) -> dict[str, Any]:
    """The flow's choices and answers as JSON (embedded in the signed report beside its own numbers), with the
    region's provenance (:func:`ldpviz.geo.region_choice.origin`) when ``region`` is given."""
    keep = ("mechanism", "privacy_model", "reached", "epsilon", "n_users", "probability", "confidence",
            "miss_chance_max", "misses", "trials", "mean", "ci_low", "ci_high", "message", "scan_warning",
            "attacker_error_m", "rank", "model_heading", "limit", "limit_epsilon", "within_limit", "at_limit")
    return {"choices": {k: cfg.get(k) for k in DEFAULTS if k != "decide_pins"} | {
                k: cfg.get(k) for k in ("dataset", "region", "bbox", "grid_side", "n_users", "seed")},
            "unit": unit_of(cfg), "chosen": chosen,
            **({"region_origin": region_choice.origin(region), "region_data_use": region.data_use,
                "region_epsilon0": float(region.epsilon_spent)} if region is not None else {}),
            "answers": [{k: r.get(k) for k in keep} | {"ledger_total": (r.get("ledger") or {}).get("total")}
                        for r in answers]}
