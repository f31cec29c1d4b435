"""The decision report: build_report and its numbered sections (scenario to deploy)."""

from __future__ import annotations

import datetime as _dt
import json
import math
from typing import Any, Mapping

from ldpviz import __version__, experiment, mechanisms
from ldpviz.decide import explain
from ldpviz.evidence import citations
from ldpviz.data import datasets
from ldpviz.render import png as render
from ldpviz.decide.attacker import attackers, r_note, resolve_r_m
from ldpviz.errors import LdpvizInputError, require
from ldpviz.mechanisms import accounting
from ldpviz.decide.explain import epsilon_plain, metric_explanation, metric_readout
from ldpviz.metrics import METRIC_INFO
from ldpviz.decide.privacy_scale import common_terms
from ldpviz.wording import length
from ldpviz.decide.decision_report._html import _CSS, _e, _figure, _jsonable, _num, _table, metric_value
from ldpviz.decide.decision_report._commands import _deploy_section, _reproduction
from ldpviz.decide.decision_report._readings import _protects, _target_html, rows_sentence, target_reading


#: The quick audit: a 4 x 4 grid over a nominal 10 km square, this many samples per input.
AUDIT_SIDE = 4
AUDIT_SAMPLES = 20_000
MAP_WIDTH = 420


def _audit_section(scenario: experiment.Scenario, run_audit: bool) -> str:
    if not run_audit:
        return "<p class='verdict'>No audit was run for this report (it was switched off).</p>"
    from ldpviz.evidence import audit
    try:
        res = audit.audit_mechanism(scenario.mechanism, AUDIT_SIDE, scenario.epsilon, n_samples=AUDIT_SAMPLES,
                                    seed=scenario.seed, params=dict(scenario.params))
    except LdpvizInputError as err:
        return f"<p class='verdict'>The quick audit could not run for this setting: {_e(err)}</p>"
    cls = "pass" if res.status == audit.PASSED else ("fail" if res.status == audit.FAILED else "")
    notes = "".join(f"<p class='note'>{_e(n)}</p>" for n in res.notes)
    return (f"<p class='verdict {cls}'><strong>{_e(res.status)}</strong>: {_e(res.summary())}</p>"
            f"<p class='note'>Which audit ran: the black-box audit of ldpviz.evidence.audit on a "
            f"{AUDIT_SIDE} x {AUDIT_SIDE} "
            f"grid over a nominal 10 km square, {res.n_samples:,} samples per input, {len(res.pairs)} pairs of "
            f"inputs, {res.confidence:.0%} confidence, seed {res.seed} ({res.seconds:.1f} s). It certifies a lower "
            f"bound on the privacy loss from the mechanism's client code; passing means no violation was found, "
            f"not a proof.</p>{notes}")


def build_report(scenario: experiment.Scenario, *, dataset: datasets.Dataset | None = None, audit: bool = True,
                 r_m: float | None = None, result: experiment.Result | None = None,
                 goal: Mapping[str, Any] | None = None, metric: str | None = None, target: float | None = None,
                 decision: tuple[str, str] | None = None, decision_json: Mapping[str, Any] | None = None,
                 ledger: accounting.Ledger | None = None) -> str:
    """The decision report for ``scenario`` as one self-contained HTML string.

    ``scenario.trials`` (at least 2) sets the confidence intervals and the spread map;
    ``dataset`` overrides loading by name (uploads); ``result`` reuses a run already made
    (it must be of ``scenario``); ``audit=False`` skips the quick audit (the report then
    says so); ``r_m`` is the distance for "the attacker's guess lands within r metres" (default: 1% of the
    region's side, :func:`ldpviz.decide.attacker.default_r_m`). ``goal`` (a goal seek's answer) or ``metric``
    and ``target``: the target this setting answers, stated with its one-collection reading
    (:func:`target_reading`). ``decision``: the Decide flow's (head, tail) HTML
    (:func:`ldpviz.decide.decision_flow.record_sections`): the report is then the signed decision, its
    choices first and the sign-off last; ``ledger``: the decision's own ledger (its unit, reports per person and
    schedule, :func:`ldpviz.decide.decision_flow.ledger_for`), stated instead of one report per row once, so the
    report names one unit and one schedule. The numbers stated are also given as JSON (the last section,
    ``<pre id="ldpviz-report-json">``, no script).
    """
    require(scenario.trials >= 2, "the report needs at least 2 trials for its confidence intervals")
    dataset = dataset if dataset is not None else datasets.load(scenario.dataset)
    if result is None:
        result = experiment.run(scenario, dataset)
    require(result.scenario == scenario, "the result given is not of this scenario")
    reading = target_reading(goal, result, metric, target)     # before `metric` names the rows of section 5
    grid, region = result.grid, result.region
    mech = mechanisms.create(scenario.mechanism, grid, scenario.epsilon, **scenario.param_dict)
    decided = ledger is not None
    if ledger is None:
        ledger = result.ledger if result.ledger is not None else accounting.collection_ledger(mech, region)
    population = grid.histogram(grid.bin_lonlat(dataset.lon, dataset.lat).cells)
    r_m = resolve_r_m(grid, r_m)
    attack = attackers(mech, population, r_m=r_m, n_users=scenario.n_users)
    now = _dt.datetime.now(_dt.timezone.utc)

    from ldpviz.evidence.reproduce import _safe_repo, git_commit
    repo = _safe_repo()
    commit = git_commit(repo) if repo else "unknown"

    target_html = f"<h2>The target and the answer</h2>{_target_html(reading)}" if reading else ""
    head, tail = decision if decision else ("", "")
    embedded = json.dumps(_jsonable({"scenario": {**result.summary(), "ledger": ledger.to_dict()}, "target": reading,
                                     "decision": decision_json,
                                     "ledger": ledger.to_dict()}))
    warning = (f"<p class='verdict fail'><strong>Warning:</strong> {_e(ledger.warning())}</p>"
               if ledger.warning() else "")
    lines = experiment.guarantee_lines(result)      # word for word what Explore shows
    title = (("Signed decision" if decision else "Decision report") +
             f": {mech.label} at {accounting.setting_text(mech)}")
    sections = [
        _scenario_section(scenario, dataset, result, mech),
        _provenance_section(dataset, result, lines, ledger.unit if decided else None),
        _guarantee_section(mech, grid, ledger, lines, decided),
        _maps_section(scenario, result),
        _accuracy_section(scenario, result),
        _attacker_section(attack, grid, r_m),
        f"<h2>7. Audit of the mechanism</h2>\n{_audit_section(scenario, audit)}",
        _reproduce_section(scenario, r_m, dataset, commit),
        f"<h2>9. Deploy</h2>\n{_deploy_section(scenario, result.region, dataset.presets, dataset)}",
    ]
    body = "\n\n".join(sections)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{_e(title)}</title><style>{_CSS}</style></head><body>
<h1>{_e(title)}</h1>
{warning}
<p class="meta">Generated {now:%Y-%m-%d %H:%M} UTC by ldpviz {_e(__version__)} (commit {_e(commit)}).
Data set: {_e(dataset.label)}.</p>
{target_html}
{head}
{body}
{tail}
<details><summary>The numbers stated here, as JSON</summary><pre id="ldpviz-report-json">{_e(embedded)}</pre></details>
</body></html>
"""


def _scenario_section(scenario: experiment.Scenario, dataset: datasets.Dataset, result: experiment.Result,
                      mech: Any) -> str:
    """Section 1: the data set, region, grid, rows, mechanism, parameters, epsilon, trials and seed."""
    grid, region = result.grid, result.region
    params = mech.effective_params()
    scenario_rows = [
        ["Data set", f"{dataset.label} ({dataset.name})"],
        ["Region", f"{experiment.region_line(region, result.n_users)}; centred at "
                   f"{region.center_lat:.4f}, {region.center_lon:.4f}"],
        ["Grid", f"{grid.side} x {grid.side} cells of {length(grid.cell_m)}"],
        ["Rows taking part (n)", f"{result.n_users:,}" + (f" ({result.n_outside:,} rows outside the region left out)"
                                                           if result.n_outside else "")],
        ["Mechanism", f"{mech.label} ({mech.name}); {mech.privacy_model}; {citations.readable(mech.reference)}"],
        ["Parameters", ", ".join(f"{k} = {explain.number(v)}" for k, v in params.items()) or "none"],
        ["Epsilon", accounting.setting_text(mech)],
        ["Trials, seed", f"{scenario.trials} trials, seed {scenario.seed}"],
    ]
    return f"""<h2>1. Scenario</h2>
{_table(["", ""], scenario_rows)}"""


def _provenance_section(dataset: datasets.Dataset, result: experiment.Result, lines: Any, unit: str | None) -> str:
    """Section 2: what the data set is and the rows that take part (``unit``: a signed decision's ledger unit)."""
    notes = "".join(f"<li>{_e(n)}</li>" for n in lines.notes)
    return f"""<h2>2. Data provenance</h2>
<p>{_e(dataset.description)}</p>
<p class="note">{_e(rows_sentence(dataset, result, unit))}</p>{f'<ul class="note">{notes}</ul>' if notes else ''}"""


def _ledger_html(ledger: accounting.Ledger, decided: bool) -> tuple[str, str]:
    """Section 3's ledger and the note on repeated collections ('' for a signed decision: its schedule is its own,
    stated once above)."""
    noun = accounting.unit_noun(ledger)
    ledger_html = (f"<h3>What each {noun} pays (the ledger)</h3><ul class='ledger'>" +
                   "".join(f"<li>{_e(line)}</li>" for line in ledger.lines()) +
                   f"</ul><p><strong>{_e(ledger.sentence())}</strong></p>")
    if decided:        # the decision's ledger is stated once, above; its schedule is its own, no made-up one
        ledger_html = (f"<h3>What each {noun} pays (the ledger)</h3><p>As in “Decision: the ledger” above: "
                       f"{_e(ledger.per_collection().text())} in one collection"
                       + (f", {_e(ledger.total().text())} over {ledger.repeats} collections" if ledger.repeats > 1
                          else "") + ".</p>")
        repeat_note = ""
    else:
        yearly = ledger.repeated(365, "daily for a year")
        repeat_note = (f"<p class=\"note\">Repeated collections add up: collecting daily for a year (365 collections) "
                       f"gives a total per {noun} of {_e(yearly.total().text())} (sequential composition; see "
                       "ldpviz.mechanisms.accounting).</p>")
    return ledger_html, repeat_note


def _guarantee_section(mech: Any, grid: Any, ledger: accounting.Ledger, lines: Any, decided: bool) -> str:
    """Section 3: the guarantee in words (as Explore states it), on the common scale, and the ledger."""
    terms = common_terms(mech)
    model = mech.privacy_model
    scale_rows = [["Privacy model", model], ["Protects", _protects(ledger)],
                  ["Largest probability ratio between two places (one report)", terms["max_ratio_text"]],
                  ["LDP-equivalent epsilon over this region", _num(terms["ldp_equivalent_epsilon"])]]
    if "ratio_at_r" in terms:
        scale_rows.insert(2, [f"Ratio between places {length(terms['r_m'])} apart", terms["ratio_at_r_text"]])
        scale_rows.insert(3, [f"Ratio between neighbouring cells ({length(grid.cell_m)} apart)",
                              terms["ratio_neighbour_cells_text"]])
        if terms.get("slack_m"):
            scale_rows.insert(4, ["Snapping slack added to every distance", length(terms["slack_m"])])
    coverage = "".join(f"<li>{_e(c)}</li>" for c in lines.coverage)
    prefix = f"<strong>{_e(lines.model_prefix)}</strong> " if lines.model_prefix else ""
    total = accounting.region_total_sentence(ledger)
    region_total = f"<p><strong>{_e(total[0].upper() + total[1:])}.</strong></p>" if total else ""
    ledger_html, repeat_note = _ledger_html(ledger, decided)
    return f"""<h2>3. The guarantee</h2>
<p class="guarantee">{prefix}<strong>{_e(lines.guarantee)}</strong></p>{region_total}
<h3>{_e(lines.COVERAGE_TITLE)}</h3>
<ul class="coverage">{coverage}</ul>
<p>{_e(terms['sentence'])}</p>
<p>{_e(epsilon_plain(terms['epsilon'], model, slack_m=terms.get('slack_m', 0.0)))}</p>
{_table(["On the common scale", ""], scale_rows)}
{ledger_html}
{repeat_note}"""


def _maps_section(scenario: experiment.Scenario, result: experiment.Result) -> str:
    """Section 4: the true and estimated densities on one colour scale, their difference and the spread."""
    grid = result.grid
    est = result.estimate.density
    vmax = float(max(result.true_density.max(), est.max())) or 1.0
    diff = est - result.true_density
    legend = "share of users per cell"
    maps = [
        _figure(render.density_png(grid, result.true_density, vmax=vmax, title="True density", legend=legend,
                                   width=MAP_WIDTH), "What the users' true locations give (never leaves the phones "
                                   "under LDP).", "map of the true density"),
        _figure(render.density_png(grid, est, vmax=vmax, title="Estimated density (trial 1)", legend=legend,
                                   width=MAP_WIDTH), "What the server estimates from the private reports, on the "
                                   "same colour scale.", "map of the estimated density"),
        _figure(render.density_png(grid, diff, diverging=True, title="Estimate minus truth",
                                   legend="red: too much, blue: too little", width=MAP_WIDTH),
                "Where the estimate puts too many (red) or too few (blue) people.", "map of the difference"),
        _figure(render.density_png(grid, result.cell_spread("sd"), title=f"Spread over {scenario.trials} trials",
                                   legend="standard deviation of a cell's share", width=MAP_WIDTH),
                "How much each cell's estimate varies from one collection to another.", "map of the spread"),
    ]
    start = result.start_map_note()          # an EM estimate that never left its start says so (issue 37.14)
    start_html = (f"<p class='verdict fail'><strong>Not an estimate:</strong> {_e(start)}</p>" if start else "")
    return f"""<h2>4. Maps</h2>
{start_html}<div class="maps">{''.join(maps)}</div>"""


def _accuracy_section(scenario: experiment.Scenario, result: experiment.Result) -> str:
    """Section 5: every metric with its 95% confidence interval and what good and poor look like."""
    metric_rows = []
    for metric in METRIC_INFO:
        if metric not in result.metrics.columns:
            continue
        mean, lo, hi = result.metric_ci(metric)
        info = metric_explanation(metric)
        metric_rows.append([info["label"], metric_value(metric, mean) if metric.endswith("_m") else _num(mean),
                            f"{metric_value(metric, lo)} to {metric_value(metric, hi)}" if metric.endswith("_m")
                            else f"{_num(lo)} to {_num(hi)}", "distance" if metric.endswith("_m") else info["unit"],
                            "lower" if info["lower_is_better"] else "higher", info["good"], info["poor"]])
    w2_mean = result.metric_ci("w2_m")[0] if "w2_m" in result.metrics.columns else None
    grid, region = result.grid, result.region
    readout = (f"<p>{_e(metric_readout('w2_m', w2_mean, cell_m=grid.cell_m, region_side_m=region.side_m))}</p>"
               if w2_mean is not None and math.isfinite(w2_mean) else "")
    return f"""<h2>5. Accuracy ({scenario.trials} trials, 95% confidence intervals)</h2>
{readout}
{_table(["metric", "mean", "95% CI", "unit", "better", "good", "poor"], metric_rows, {1, 2})}"""


def _attacker_section(attack: Mapping[str, Any], grid: Any, r_m: float) -> str:
    """Section 6: the Bayesian attacker's error on one person's report, with and without it."""
    r_text = length(r_m) + (f" ({r_note(grid, r_m)})" if r_note(grid, r_m) else "")
    if attack["available"]:
        def pm(value: str, se: str, a) -> str:
            return value if a.method == "exact" else f"{value} ± {se}"

        rows = [[a.prior_label, pm(length(a.best_guess_error_m), length(a.best_guess_error_se_m), a),
                 pm(f"{a.within_r:.1%}", f"{a.within_r_se:.1%}", a), length(a.no_report_error_m),
                 f"{a.no_report_within_r:.1%}"] for a in (attack["population"], attack["uniform"])]
        pop = attack["population"]
        how = ("Computed exactly from the mechanism's channel." if pop.method == "exact" else
               f"Computed by {_e(pop.method)}: people drawn from the population, one report each from the "
               "mechanism's own client code, each report's posterior exact; ± is one standard error.")
        attack_html = (f"<p>{_e(attack['sentence'])}</p>" +
                       _table(["attacker", "best guess off by", f"within {length(r_m)}", "without the report",
                               f"within {length(r_m)} without the report"], rows, {1, 2, 3, 4}) +
                       "<p class='note'>The attacker knows the mechanism, sees one person's report and makes the "
                       "guess that minimises the expected distance (Bayes' rule; Shokri et al. S&amp;P'11). "
                       "Both the errors and 'within " + _e(r_text) + "' are measured from people's exact positions "
                       "inside their cells (spread uniformly) to the attacker's guess (a cell centre), so a right "
                       "cell is still off by 0.38 of a cell side on average and counts as 'within' only for the part "
                       "of it within r. Modelling choice: the population prior is the data "
                       "set's own density, standing in for a census. " + how + "</p>")
    else:
        attack_html = f"<p>{_e(attack['sentence'])}</p>"
    return f"""<h2>6. What an attacker learns about one person</h2>
{attack_html}"""


def _reproduce_section(scenario: experiment.Scenario, r_m: float, dataset: datasets.Dataset, commit: str) -> str:
    """Section 8: the command line and the Python that give the same numbers."""
    cli, py = _reproduction(scenario, r_m, dataset)
    return f"""<h2>8. Reproduce</h2>
<p>Command line:</p><pre>{_e(cli)}</pre>
<p>Python:</p><pre>{_e(py)}</pre>
<p class="note">Same version, scenario and seed give the same numbers (the audit and maps included).
ldpviz {_e(__version__)}, commit {_e(commit)}.</p>"""
