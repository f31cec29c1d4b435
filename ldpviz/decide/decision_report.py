"""A decision report: one self-contained HTML file to attach to a data-protection impact assessment.

:func:`build_report` runs a scenario (several trials) and writes everything an officer
needs to file in one page that opens offline and prints cleanly: the scenario and the
data's provenance, the guarantee in words and on the common scale
(:mod:`ldpviz.decide.privacy_scale`), true / estimated / difference (and spread) maps as
embedded PNGs (:mod:`ldpviz.render.png`), every metric with a 95% confidence interval and
what good and poor look like (:mod:`ldpviz.decide.explain`), the attacker's error
(:mod:`ldpviz.decide.attacker`), the mechanism's quick audit verdict (:mod:`ldpviz.evidence.audit`), a
reproduction snippet, the date and the version. No external resource is referenced: no
scripts, fonts, stylesheets or images from the network.
"""

from __future__ import annotations

import datetime as _dt
import html
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
from ldpviz.geo.domain import Region, bounds_text
from ldpviz.mechanisms.fo.private_region import PRIVATE_TILES, PUBLIC_TILES
from ldpviz.shell import command_line
from ldpviz.wording import length

#: The quick audit: a 4 x 4 grid over a nominal 10 km square, this many samples per input.
AUDIT_SIDE = 4
AUDIT_SAMPLES = 20_000
MAP_WIDTH = 420

_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif;color:#1a1a1a;
max-width:60rem;margin:1.5rem auto;padding:0 1rem;line-height:1.45;font-size:15px}
h1{font-size:1.6rem;margin-bottom:.2rem}h2{font-size:1.2rem;border-bottom:1px solid #ccc;padding-bottom:.2rem;
margin-top:1.8rem}.meta{color:#555;font-size:.9rem}
table{border-collapse:collapse;margin:.5rem 0;font-size:.9rem}th,td{border:1px solid #ccc;padding:.25rem .5rem;
text-align:left;vertical-align:top}th{background:#f3f3f3}td.num{text-align:right;font-variant-numeric:tabular-nums}
.maps{display:flex;flex-wrap:wrap;gap:.8rem}.maps figure{margin:0;flex:0 1 420px}.maps img{max-width:100%;height:auto;
border:1px solid #ddd}figcaption{font-size:.85rem;color:#444}
.verdict{padding:.4rem .6rem;border-left:4px solid #888;background:#f7f7f7}.pass{border-color:#1b9e77}
.fail{border-color:#d7301f}pre{background:#f5f5f5;padding:.6rem;overflow-x:auto;font-size:.85rem;white-space:pre-wrap}
.note{color:#555;font-size:.88rem}
@media print{body{max-width:none;margin:0;font-size:11pt}h2{break-after:avoid}
figure,table,.verdict,pre{break-inside:avoid}.maps figure{flex:0 1 48%}a{color:inherit;text-decoration:none}}
"""


def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _num(value: Any, digits: int = 4) -> str:
    """A number for people, never in exponent form ('39,600', '0.0421', '0.000012')."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "—"
    v = float(value)
    if abs(v) >= 10 ** digits:
        return f"{v:,.0f}"
    text = f"{v:.{digits}g}"
    return text if "e" not in text else f"{v:.12f}".rstrip("0").rstrip(".")


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        try:
            return _jsonable(value.item())
        except (TypeError, ValueError):
            return str(value)
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)


def _table(header: list[str], rows: list[list[Any]], numeric: set[int] = frozenset()) -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in header) if any(header) else ""
    body = "".join("<tr>" + "".join(f"<td class='num'>{_e(c)}</td>" if i in numeric else f"<td>{_e(c)}</td>"
                                    for i, c in enumerate(row)) + "</tr>" for row in rows)
    thead = f"<thead><tr>{head}</tr></thead>" if head else ""
    return f"<table>{thead}<tbody>{body}</tbody></table>"


def _figure(png: bytes, caption: str, alt: str) -> str:
    return (f"<figure><img src='{render.data_uri(png)}' alt='{_e(alt)}'>"
            f"<figcaption>{_e(caption)}</figcaption></figure>")


def is_upload(dataset: datasets.Dataset | None, name: str) -> bool:
    """Whether the scenario's data is a user's file (``upload:...``), not a bundled data set."""
    return name.startswith("upload:") or (dataset is not None and dataset.report is not None)


def data_arguments(scenario: experiment.Scenario, dataset: datasets.Dataset | None = None) -> list[str]:
    """The ``ldpviz`` options that load the scenario's data and frame its region as the scenario did.

    A bundled data set is ``--dataset NAME``; a user's file is ``--csv FILE`` (its name as uploaded, with the
    columns read) and its framing: ``--bbox=W,S,E,N`` for a typed or accepted box, else the region rule and its
    epsilon0 (``--dataset upload:...`` names a file only this session held: the command line cannot load it).
    """
    region = scenario.region
    if is_upload(dataset, scenario.dataset):
        filename = dataset.label if dataset is not None else scenario.dataset.split(":")[-1]
        args = ["--csv", filename]
        if dataset is not None and dataset.report is not None:
            args += ["--lat-column", dataset.report.lat_column, "--lon-column", dataset.report.lon_column]
        if isinstance(region, Region) and region.bounds is not None:
            return args + bbox_arguments(region)
        if isinstance(region, Region) and region.epsilon_spent > 0:
            return args + ["--region-rule", PRIVATE_TILES, "--region-epsilon", f"{region.epsilon_spent:g}"]
        return args + ["--region-rule", PUBLIC_TILES]
    args = ["--dataset", scenario.dataset]
    if isinstance(region, str):
        return args + ["--region", region]
    if isinstance(region, Region) and region.bounds is not None:
        return args + bbox_arguments(region)
    return args


def bbox_arguments(region: Region) -> list[str]:
    """``--bbox=W,S,E,N``, with ``--bbox-from suggestion`` when the box was the one ldpviz suggested from the rows
    (:func:`ldpviz.geo.region_choice.origin`): the command then states the provenance the page stated."""
    from ldpviz.geo import region_choice
    from ldpviz.geo.region_suggestion import FROM_SUGGESTION
    args = [f"--bbox={bounds_text(region.bounds)}"]
    if region_choice.origin(region) == region_choice.ORIGIN_SUGGESTION:
        args += ["--bbox-from", FROM_SUGGESTION]
    return args


#: The name prefix of points taken from trips, one per person (:func:`ldpviz.decide.decision_flow.trips_points`).
TRIPS_PREFIX = experiment.ONE_POINT_PER_PERSON_PREFIX


def is_trips(name: str) -> bool:
    """Whether a scenario's data are one point per person taken from trips (Decide's step 1 with trips)."""
    return str(name).startswith(TRIPS_PREFIX)


def _trips_reproduction(scenario: experiment.Scenario, dataset: datasets.Dataset | None) -> tuple[str, str]:
    """``ldpviz report`` reads points, so trips reproduce through the API: the trips read with the same loader,
    one point per person with the same seed, the same scenario."""
    source = scenario.dataset[len(TRIPS_PREFIX):]
    from ldpviz.data import trajectories
    region = scenario.region
    if source in trajectories.names():
        load = f"trips = trajectories.load({source!r})"
    else:
        filename = dataset.label if dataset is not None else source.split(":")[-1]
        load = ("from ldpviz.mechanisms.fo.private_region import upload_frame\n"
                f"trips = trajectories.load_trajectory_file({filename!r}{python_framing(region)})   # your file")
    py = (f"from ldpviz import Scenario, run\nfrom ldpviz.data import trajectories\n"
          f"from ldpviz.decide import decision_flow\nfrom ldpviz.geo.domain import Region\n{load}\n"
          f"points = decision_flow.trips_points(trips, seed={scenario.seed})   # one point per person\n"
          f"result = run(Scenario(dataset=points.name, mechanism={scenario.mechanism!r}, "
          f"epsilon={scenario.epsilon!r}, grid_side={scenario.grid_side}, region={region!r}, "
          f"params={dict(scenario.params)!r}, n_users={scenario.n_users!r}, seed={scenario.seed}, "
          f"trials={scenario.trials}), points)\nprint(result.summary())")
    return "(ldpviz report reads points; these trips are reproduced with the Python below)", py


def _reproduction(scenario: experiment.Scenario, r_m: float,
                  dataset: datasets.Dataset | None = None) -> tuple[str, str]:
    if is_trips(scenario.dataset):
        return _trips_reproduction(scenario, dataset)
    args = ["ldpviz", "report", *data_arguments(scenario, dataset), "--mechanism", scenario.mechanism,
            "--epsilon", f"{scenario.epsilon:g}", "--grid", str(scenario.grid_side), "--seed", str(scenario.seed),
            "--trials", str(scenario.trials), "--r", f"{r_m:g}"]
    if scenario.n_users is not None:
        args += ["--users", str(scenario.n_users)]
    for key, value in scenario.params:
        args += ["--param", f"{key}={value}"]
    args += ["--out", "report.html"]
    if is_upload(dataset, scenario.dataset):
        filename = dataset.label if dataset is not None else scenario.dataset.split(":")[-1]
        load = ("from ldpviz.data import datasets\n"
                "from ldpviz.mechanisms.fo.private_region import upload_frame\n"
                f"data = datasets.load_file({filename!r}" + python_framing(scenario.region) + ")   # your file\n")
        py = (f"from ldpviz import Scenario, run\n{load}"
              f"result = run(Scenario(dataset=data.name, mechanism={scenario.mechanism!r}, "
              f"epsilon={scenario.epsilon!r}, grid_side={scenario.grid_side}, region=data.default_region, "
              f"params={dict(scenario.params)!r}, n_users={scenario.n_users!r}, seed={scenario.seed}, "
              f"trials={scenario.trials}), data)\nprint(result.summary())")
        return command_line(args), py
    py = (f"from ldpviz import Scenario, run\n"
          f"result = run(Scenario(dataset={scenario.dataset!r}, mechanism={scenario.mechanism!r}, "
          f"epsilon={scenario.epsilon!r}, grid_side={scenario.grid_side}, region={scenario.region!r}, "
          f"params={dict(scenario.params)!r}, n_users={scenario.n_users!r}, seed={scenario.seed}, "
          f"trials={scenario.trials}))\nprint(result.summary())")
    return command_line(args), py


def deploy_refusal(region: Any) -> str:
    """'' when a collection may be sent over ``region``; else why ``ldpviz deploy`` refuses it: a region read from
    the users' data without paying for it (the suggested box, public tiles) would make every phone's plan depend on
    that data (:func:`ldpviz.deploy.spec.check_deployable`)."""
    from ldpviz.geo import region_choice
    if not isinstance(region, Region) or region_choice.origin(region) not in (region_choice.ORIGIN_SUGGESTION,
                                                                             region_choice.ORIGIN_DATA):
        return ""
    return (f"the region was {region.data_use}; a collection sent to every phone must not depend on the users' "
            "data, so ldpviz deploy refuses it. Decide the bounds yourself (type them, e.g. the same box once you "
            "have checked it against public knowledge of the area), use a preset, or let the paid private map "
            "tiles choose the region (charged in the ledger)")


def deploy_command(scenario: experiment.Scenario, region: Any, presets: dict | None = None,
                   dataset: datasets.Dataset | None = None) -> str | None:
    """The ``ldpviz deploy`` command of the decided collection (issue 29), or None when there is none to print: a
    region read from the data unpaid (:func:`deploy_refusal` says why), or trips whose region only their file can
    frame. A user's file gets the same data options as every printed command (``--csv FILE --bbox=W,S,E,N``, or its
    paid private tiles), a bundled data set its preset or box."""
    if deploy_refusal(region):
        return None
    args = ["ldpviz", "deploy", "--mechanism", scenario.mechanism, "--epsilon", f"{scenario.epsilon:g}",
            "--grid", str(scenario.grid_side)]
    preset = scenario.region if isinstance(scenario.region, str) else next(
        (name for name, r in (presets or {}).items() if r == region), None)
    if is_trips(scenario.dataset):          # no --dataset names trips taken one point per person: the box only
        if getattr(region, "bounds", None) is None:
            return None
        args += bbox_arguments(region)
    elif is_upload(dataset, scenario.dataset):
        args += data_arguments(scenario.with_(region=region), dataset)
    elif preset is not None:
        args += ["--dataset", scenario.dataset, "--region", preset]
    elif getattr(region, "bounds", None) is not None:
        args += bbox_arguments(region)
    else:
        return None
    for key, value in scenario.params:
        args += ["--param", f"{key}={value}"]
    return command_line([*args, "--out", "bundle/"])


def _deploy_section(scenario: experiment.Scenario, region: Any, presets: dict,
                    dataset: datasets.Dataset | None = None) -> str:
    mech = mechanisms.get(scenario.mechanism)
    command = deploy_command(scenario, region, presets, dataset)
    if mech.privacy_model == mechanisms.CENTRAL_DP:
        what = ("This is central DP: phones send their true cell to a trusted curator, who adds the noise once. The "
                "bundle holds the curator's side only (collection.json and a README); there is no phone client.")
    elif not mech.has_client:
        what = ("This mechanism has no single phone report (several rounds, or a domain built from the users' data), "
                "so it cannot be deployed as one collection; the command says why.")
    else:
        what = ("The bundle holds collection.json (the mechanism, epsilon, the ledger of what each person pays, the "
                "region, grid and domain, digested), client.js and client.py (one true location in, one report out, "
                "exactly this channel), an example page and a README for the engineers; 'ldpviz estimate' reads the "
                "reports back (docs/deploy.md).")
    refusal = deploy_refusal(region)
    cmd = (f"<pre>{_e(command)}</pre>" if command else
           f"<p class=\"note\">No deploy command: {_e(refusal)}.</p>" if refusal else
           "<p class=\"note\">This region was not typed or chosen from a preset; give its bounds with --bbox.</p>")
    return f"<p>{_e(what)}</p>{cmd}"


def python_framing(region: Any) -> str:
    """The load_file arguments that frame a file as ``region`` was framed (its box, or the region rule)."""
    if isinstance(region, Region) and region.bounds is not None:
        return f", bbox={region.bounds!r}" + (f", bbox_data_use={region.data_use!r}" if region.data_use else "")
    if isinstance(region, Region) and region.epsilon_spent > 0:
        return f", frame=upload_frame({PRIVATE_TILES!r}, {region.epsilon_spent!r})"
    return f", frame=upload_frame({PUBLIC_TILES!r})"


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
            f"<p class='note'>Which audit ran: the black-box audit of ldpviz.evidence.audit on a {AUDIT_SIDE} x {AUDIT_SIDE} "
            f"grid over a nominal 10 km square, {res.n_samples:,} samples per input, {len(res.pairs)} pairs of "
            f"inputs, {res.confidence:.0%} confidence, seed {res.seed} ({res.seconds:.1f} s). It certifies a lower "
            f"bound on the privacy loss from the mechanism's client code; passing means no violation was found, "
            f"not a proof.</p>{notes}")


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


def metric_value(metric: str, value: Any) -> str:
    """A metric's value as a reader reads it: distances in m or km ('70.2 km', '930 m'), others to 4 figures."""
    if value is None or not isinstance(value, (int, float)) or not math.isfinite(float(value)):
        return "—"
    if metric.endswith("_m"):
        return length(float(value))
    return _num(value)


def sentence(text: Any) -> str:
    """A message as a sentence: its first letter capitalised and a full stop at the end ('' stays '')."""
    text = str(text or "").strip()
    if not text:
        return ""
    return text[:1].upper() + text[1:] + ("" if text.endswith((".", "!", "?")) else ".")


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
