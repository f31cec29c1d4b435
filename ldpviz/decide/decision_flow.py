"""The guided decision (the Decide page's steps), without Streamlit: choices, who is eligible, the answer, the record.

Five steps, as DP Wizard's Select -> Define -> Download, for location LDP (issue 27):

1. *Your data*: a dataset (bundled, synthetic or an upload) and its region (typed bounds or a preset);
2. *Who is protected*: the unit, reports per person per collection, how often the collection repeats, and the
   privacy models the officer accepts (:func:`eligible` says why each other mechanism is left out);
3. *What the map must show*: a need in plain words (:data:`NEEDS`) with its metric, a target and the grid;
4. *The answer*: per eligible mechanism the goal seek (:func:`answer`: :func:`ldpviz.decide.tradeoff.target_epsilon`
   on :func:`scenario`, the same scenario ``ldpviz target`` builds, so the same inputs and seed give the same
   answer), its ledger (:mod:`ldpviz.mechanisms.accounting`), ranked by the epsilon it needs (:func:`rank`);
   "users needed at a fixed epsilon" is the same step turned around;
5. *Sign*: :func:`record_sections`, the flow's part of the signed decision -- every choice, the answer and the
   alternatives, the ledger, what is not covered, a sign-off block, the link and the command that reproduce it --
   which :func:`ldpviz.decide.decision_report.build_report` wraps around the decision report of the chosen
   mechanism at its answer (maps, the interval, the attacker, the audit): one document.

Step 1 takes points or trips: trips give one point per person per collection (:func:`trips_points`), the unit is
then a person and the ledger the accountant's per-person ledger (:func:`ledger_for`).

The choices live in the dashboard's one state layer (:mod:`ldpviz.app.state` calls :func:`encode` / :func:`decode`
for the keys below), so a reload, a shared link and back/forward keep every step.
"""

from __future__ import annotations

import html
from typing import Any, Mapping

from ldpviz import mechanisms
from ldpviz.data import trajectories
from ldpviz.data.dataset_types import Dataset
from ldpviz.decide import decision_report, feasibility, one_collection, tradeoff
from ldpviz.errors import LdpvizInputError
from ldpviz.experiment import Scenario
from ldpviz.geo import region_choice
from ldpviz.mechanisms import accounting
from ldpviz.mechanisms.base import (CENTRAL_DP, EPSILON_MAX, EPSILON_MIN, GEO_I, GEO_I_UNIT, LDP, UNIT_PERSON,
                                    UNIT_ROW)
from ldpviz.setting import FLOW_LINK, Setting, read_link, write_link
from ldpviz.shell import command_line
from ldpviz.wording import length

#: The privacy models an officer may accept, and how the page names them.
MODELS = {LDP: "Local DP (each phone randomises its own report)",
          GEO_I: "Geo-indistinguishability (local, protects more for nearby places than far ones)",
          CENTRAL_DP: "Central DP (a trusted server sees exact locations and publishes a noisy map)"}
MODEL_CODES = {LDP: "ldp", GEO_I: "geoi", CENTRAL_DP: "cdp"}
#: What a guarantee protects (the ledger's unit): one location report, or a person (all their reports).
UNITS = {"report": "one location report", "person": "a person (all their reports in a collection)"}
#: How often the collection runs, as collections per year (the sign-off's total over a year).
EVERY = {"once": 1, "yearly": 1, "quarterly": 4, "monthly": 12, "weekly": 52, "daily": 365}
#: Needs in plain words -> the goal seek's metric ({t}: the target as the officer typed it).
NEEDS = {"w2_m": "Where people are: the map's mass within {t} of where it truly is (W2 distance)",
         "aqe": "Counts in areas of 1% of the region, off by at most {t} of everyone (AQE)"}
#: The Decide page's first target per need. Its W2 (800 m) is not Compare's (500 m,
#: ldpviz.app.state.COMPARE_TARGET_DEFAULTS): each page keeps its own first value (the goal seeks timed in
#: docs/goal-seek-*.md ran at this one).
DECIDE_TARGET_DEFAULTS = {"w2_m": 800.0, "aqe": 0.05}
#: Step 4 answers either question: the epsilon needed at the users there are, or the users needed at an epsilon.
TURNS = ("epsilon", "users")
TEXT_MAX = 300


def _models(text: str, _context: Any = None) -> list[str]:
    codes = {v: k for k, v in MODEL_CODES.items()}
    models = [codes.get(c.strip()) for c in text.split(",") if c.strip()]
    if not models or None in models:
        raise LdpvizInputError(f"must be some of {', '.join(codes)}")
    return list(dict.fromkeys(models))     # the officer's order: it orders step 4's tables


def _write_models(cfg: Mapping[str, Any]) -> str | None:
    value = cfg.get("decide_models")
    return None if value is None or value == DEFAULTS["decide_models"] else ",".join(MODEL_CODES[m] for m in value)


def _pins(text: str, _context: Any = None) -> list[str]:
    names = [n for n in text.split(",") if n]
    unknown = [n for n in names if n not in mechanisms.available()]
    if unknown or len(names) > 2:
        raise LdpvizInputError("must be at most two mechanism names")
    return names


def _trips(text: str, _context: Any = None) -> str:
    if text and text not in trajectories.names() and not text.startswith("upload:"):
        raise LdpvizInputError(f"must be a trips data set ({', '.join(trajectories.names())}) or an "
                               "uploaded trips file")
    return text


def _chosen(text: str, _context: Any = None) -> str:
    if text and text not in mechanisms.available():
        raise LdpvizInputError("must be a mechanism name")
    return text


def _clip(text: str, _context: Any = None) -> str:
    return str(text)[:TEXT_MAX]


def _flow(field: str, key: str, default: Any, kind: type = str, what: str = "", low: float | None = None,
          high: float | None = None, **rest: Any) -> Setting:
    return Setting(field, key, default, kind, what, low, high, wording=FLOW_LINK, **rest)


#: The Decide page's choices: config field, link key, default, bounds or choices (in the dashboard's one config dict
#: and its link: :mod:`ldpviz.app.settings`). Text the officer types is cut to TEXT_MAX characters.
SETTINGS: tuple[Setting, ...] = (
    _flow("decide_unit", "dcu", "person", choices=tuple(UNITS)),
    _flow("decide_reports", "dcr", 1, int, "reports per person", 1, 10_000),
    _flow("decide_every", "dce", "once", choices=tuple(EVERY)),
    _flow("decide_models", "dcm", [LDP, GEO_I], list, read=_models, write=_write_models, refused=("ldp,nope", "")),
    _flow("decide_metric", "dcmet", "w2_m", choices=tuple(NEEDS)),
    _flow("decide_target", "dct", DECIDE_TARGET_DEFAULTS["w2_m"], float, "target", 1e-9, 1e9),
    _flow("decide_turn", "dcturn", "epsilon", choices=TURNS),
    _flow("decide_epsilon", "dceps", 1.0, float, "epsilon", EPSILON_MIN, EPSILON_MAX),
    _flow("decide_pins", "dcpin", [], list, read=_pins, refused=("grr,olh,oue", "no such mechanism")),
    _flow("decide_probability", "dcp", one_collection.PROBABILITY, float, "probability", 0.5, 0.999),
    _flow("decide_purpose", "dcpur", "", read=_clip),
    _flow("decide_owner", "dcown", "", read=_clip),
    _flow("decide_retention", "dcret", "", read=_clip),
    _flow("decide_trips", "dctr", "", read=_trips, refused=("no-such-trips", "trips.csv")),
    # the officer's limit: the largest epsilon per person in one collection they accept (issue 36), and the
    # mechanism they sign ("": the top of the first table, :func:`signed`)
    _flow("decide_limit", "dclim", feasibility.DEFAULT_LIMIT, float, "the largest epsilon per person",
          EPSILON_MIN, EPSILON_MAX),
    _flow("decide_chosen", "dcsign", "", read=_chosen, refused=("no-such-mechanism", "grr,olh")),
)
#: The Decide page's choices by field, their defaults and their link keys.
SETTING = {s.field: s for s in SETTINGS}
DEFAULTS: dict[str, Any] = {s.field: s.default for s in SETTINGS}
KEYS = {s.field: s.key for s in SETTINGS}
#: Link keys of the shared choices the flow reads (the dataset, region, grid, users and seed are the dashboard's).
SHARED = ("dataset", "region", "bbox", "grid_side", "n_users", "seed")


def decode(query: Mapping[str, str], cfg: dict[str, Any], warnings: list[str]) -> None:
    """Read the flow's link keys into ``cfg``; a bad value is left at its default with a warning."""
    read_link(SETTINGS, query, cfg, warnings)


def encode(cfg: Mapping[str, Any]) -> dict[str, str]:
    """The flow's link keys, leaving out defaults."""
    return write_link(SETTINGS, cfg)


# ---- step 2: who is eligible ---------------------------------------------------------------------------------

def eligible(models: list[str]) -> tuple[list[str], dict[str, str]]:
    """(mechanisms that fit the accepted models, {mechanism left out: why not}), in registry order."""
    keep, why = [], {}
    for name in mechanisms.available():
        cls = mechanisms.get(name)
        model = cls.privacy_model
        if model not in MODELS:
            why[name] = "gives no privacy (a reference: the exact map)"
        elif model not in models:
            why[name] = f"{model}: a privacy model you did not accept in step 2"
        else:
            keep.append(name)
    return keep, why


def scenario(dataset: str, region: Any, mechanism: str, grid_side: int, n_users: int | None, seed: int) -> Scenario:
    """The goal seek's scenario, built exactly as ``ldpviz target`` builds it (epsilon 1 is where a search starts;
    trials are the rule's own), so the page and the command answer the same question the same way."""
    return Scenario(dataset=dataset, mechanism=mechanism, epsilon=1.0, grid_side=int(grid_side), region=region,
                    n_users=n_users or None, seed=int(seed), trials=tradeoff.DEFAULT_TRIALS)


# ---- step 4: the answer --------------------------------------------------------------------------------------

# ---- step 1 with trips: one point per person per collection ------------------------------------------------

#: How the page names a trips source among the datasets (cfg['decide_trips'] holds the name after it).
TRIPS_PREFIX = decision_report.TRIPS_PREFIX
#: What the answer is computed on when the data are trips (the page and the record say it).
TRIPS_UNIT_TEXT = ("trips: the guarantee protects a person (all their trips). Each person reports one of their points "
                   "per collection, chosen uniformly at random (as Flows' traffic reporters and People's dam-sample), "
                   "so the map is of people, one point each, and the accuracy is simulated on those points")


def trips_points(trips: trajectories.Trajectories, seed: int = 0) -> Dataset:
    """The points one collection sees from ``trips``: one point per person, uniformly among their points, seeded
    (:func:`ldpviz.data.trajectories.one_point_per_person`, what Flows' traffic reporters send). Its presets are the
    trips' regions; ``report`` is None (the trips' own report counts the file's rows)."""
    lon, lat = trajectories.one_point_per_person(trips.person, trips.lon, trips.lat, seed)
    return Dataset(name=f"{TRIPS_PREFIX}{trips.name}", label=trips.label,
                   description=(f"{trips.description} Decide uses one point per person per collection: "
                                f"{lon.size:,} people, {trips.n_trips:,} trips, {trips.n_points:,} points."),
                   lon=lon, lat=lat, presets=trips.presets, synthetic=False, report=None)


def trips_rows_text(trips: trajectories.Trajectories, region: Any) -> str:
    """Rows kept and dropped (named, from the trips' report), people, trips and points, and who is in the region."""
    people = trips_points(trips)
    inside = int(region.contains(people.lon, people.lat).sum())
    report = trips.report
    if report is not None:
        dropped = ", ".join(f"{n:,} {r}" for r, n in report.dropped.items() if n) or "none"
        kept = (f"{report.rows_kept:,} of {report.rows_read:,} rows kept, {report.rows_read - report.rows_kept:,} "
                f"dropped ({dropped}); ")
    else:
        kept = ""
    return (f"{kept}{trips.n_people:,} people, {trips.n_trips:,} trips, {trips.n_points:,} points; one point per "
            f"person: {inside:,} people inside the region")


def unit_of(cfg: Mapping[str, Any]) -> str:
    """The unit step 2 protects: a trips source always protects a person (its people are named in the file)."""
    return "person" if cfg.get("decide_trips") else str(cfg.get("decide_unit", "person"))


def ledger_for(mech: Any, region: Any, cfg: Mapping[str, Any], people: int | None = None) -> accounting.Ledger:
    """One collection's ledger for the flow's unit and reports per person, repeated as often as step 2 says over
    a year (the sign-off's 'total epsilon per person over a year').

    ``people``: the data are trips of this many people: the accountant's per-person ledger
    (:func:`ldpviz.mechanisms.accounting.person_ledger`): the region's tile once per person (where it was paid
    for) and the reports each person sends, composed there, never added up here."""
    import numpy as np

    reports = int(cfg.get("decide_reports", 1))
    unit = UNIT_PERSON if unit_of(cfg) == "person" else UNIT_ROW
    every = cfg.get("decide_every", "once")
    per_year = EVERY[every]
    basis = f"{reports} report{'s' if reports != 1 else ''} per person per collection (step 2)"
    notes = [] if reports == 1 else [
        f"the accuracy was simulated with one report per person; {reports} reports per person are charged here"]
    if region is not None and region_choice.origin(region) in (region_choice.ORIGIN_SUGGESTION,
                                                               region_choice.ORIGIN_DATA):
        notes.append(f"not covered by ε: the region was {region.data_use}")     # read from the rows, unpaid
    if people is not None:
        ones = np.ones(max(int(people), 1))
        parts = []
        tiles = accounting.region_charge(region, 1, 1, "each person reports the tile of one of their points, once")
        if tiles is not None:
            parts.append((tiles, ones))
        parts.append((accounting.report_charge(mech, what=f"a location report ({mech.name}) of one of the person's "
                                                          "points", basis=basis), reports * ones))
        ledger = accounting.person_ledger(parts, unit=UNIT_PERSON, notes=notes, reference_m=float(
            mech.grid.cell_m) if mech.privacy_model == GEO_I else 0.0)
        return ledger.repeated(per_year, f"collected {every} for a year" if every != "once" else "")
    return accounting.collection_ledger(
        mech, region, reports_worst=reports, reports_median=reports, reports_basis=basis,
        repeats=per_year, repeats_basis=f"collected {every} for a year" if every != "once" else "",
        unit=unit, notes=notes)


def answer(goal: Mapping[str, Any], mech: Any, region: Any, cfg: Mapping[str, Any],
           people: int | None = None) -> dict[str, Any]:
    """A goal seek's JSON (:meth:`GoalResult.to_dict`) with the flow's ledger at its answer (None when unreached);
    ``people``: trips of this many people (:func:`ledger_for`)."""
    row = dict(goal)
    if mech is not None:
        ledger = ledger_for(mech, region, cfg, people)
        row["ledger"] = ledger.to_dict()
        row["ledger_sentence"] = ledger.sentence()
        row["ledger_one"] = ledger.repeated(1).sentence()
        row["ledger_warning"] = ledger.warning()
        row["ledger_one_headline"] = ledger.per_collection().headline()
        row["ledger_year_headline"] = ledger.total().headline()
    else:
        row["ledger"] = None
    return row


def with_limit(rows: list[dict[str, Any]], region: Any, cfg: Mapping[str, Any],
               people: int | None = None) -> list[dict[str, Any]]:
    """Each answer with the officer's limit (step 4's "largest epsilon per person in one collection I accept"),
    judged on the flow's own ledger (:func:`ledger_for`: the region, reports per person, the unit):
    :func:`ldpviz.decide.feasibility.apply_limit`."""
    limit = float(cfg.get("decide_limit", feasibility.DEFAULT_LIMIT))
    return [feasibility.apply_limit(r, limit, lambda s: ledger_for(s, region, cfg, people)) for r in rows]


def limit_text(row: Mapping[str, Any]) -> str:
    """Step 4's column: whether the answer is within the officer's limit ('yes', 'no: needs 18.2 > 5')."""
    if not row.get("reached"):
        return "—"
    if row.get("within_limit"):
        return "yes"
    eps = row.get("limit_epsilon")
    return "no" + (f": your limit allows ε {feasibility.epsilon_text(eps, row['privacy_model'])}" if eps else "")


def start_now(predicted_s: Mapping[int, float], threads: int, budget_s: float) -> list[int]:
    """Step 4's seeks that start without a click: shortest predicted first while the group's wall time, run
    ``threads`` at a time, stays within ``budget_s`` (at least the shortest one, so a first answer always comes
    without a click); the rest wait for Start (issue 28: what a person does every minute never waits)."""
    from ldpviz.experiment.runtime_model import side_by_side_seconds
    chosen: list[int] = []
    for k in sorted(predicted_s, key=lambda i: (float(predicted_s[i] or 0.0), i)):
        if chosen and side_by_side_seconds([predicted_s[i] or 0.0 for i in chosen + [k]], threads) > budget_s:
            break
        chosen.append(k)
    return chosen


#: A search started without a click may always run this long before it is stopped (:func:`quick_limit`): long
#: enough for a quick seek to finish though predictions miss by 2-3x on a loaded server, short enough that a few
#: of them fit the page's opening budget (``longrun.DECIDE_OPEN_CPU_S``).
QUICK_LIMIT_FLOOR_S = 3.0


def quick_limit(predicted_s: float) -> float:
    """How long a seek started without a click may run before it is stopped and waits for Start instead:
    three times its prediction (predictions are within 2x where calibrated), at least
    :data:`QUICK_LIMIT_FLOOR_S`. A seek far past that is one the model did not foresee (planar Laplace at
    large epsilon per cell with a handful of users runs EM on a fine latent grid for minutes)."""
    return max(3.0 * float(predicted_s or 0.0), QUICK_LIMIT_FLOOR_S)


def quick_group(predicted_s: Mapping[int, float], budget_s: float) -> list[int]:
    """The seeks that start without a click: shortest predicted first while their limits (:func:`quick_limit`)
    add up to at most ``budget_s`` CPU seconds, and at least the shortest (a first answer always comes). Chosen
    from every eligible mechanism, answered or not, so the group is the same on every run of a question."""
    chosen: list[int] = []
    spent = 0.0
    for k in sorted(predicted_s, key=lambda i: (float(predicted_s[i] or 0.0), i)):
        cost = quick_limit(predicted_s[k])
        if chosen and spent + cost > budget_s:
            break
        chosen.append(k)
        spent += cost
    return chosen


def quick_limits(predicted_s: Mapping[int, float], budget_s: float) -> dict[int, float]:
    """CPU seconds each seek started without a click may use (:func:`quick_limit` each), scaled down so that
    together they stay within ``budget_s``: opening the page costs the server at most that, whatever the
    predictions missed (issue 36: 107 s of CPU before any input)."""
    limits = {k: quick_limit(p) for k, p in predicted_s.items()}
    total = sum(limits.values())
    scale = min(1.0, float(budget_s) / total) if total > 0 else 1.0
    return {k: v * scale for k, v in limits.items()}


def rank(rows: list[dict[str, Any]], turn: str = "epsilon", models: list[str] | tuple[str, ...] = ()) \
        -> list[dict[str, Any]]:
    """Ranked within each privacy model (:func:`ldpviz.decide.feasibility.rank_by_model`: epsilon per report and
    epsilon per km are different scales), the accepted ``models`` in their order first; in each group reached
    first, by the epsilon (or users) needed, unreached after. Each row gets ``rank`` (1, 2, ... within its model;
    None when unreached) and ``model_heading``."""
    key = "epsilon" if turn == "epsilon" else "n_users"
    out = []
    for model, group in feasibility.rank_by_model(rows, models or feasibility.MODEL_ORDER, key):
        for i, r in enumerate(group):
            r["rank"] = i + 1 if r.get("reached") else None
            r["model_heading"] = feasibility.MODEL_HEADINGS.get(model, model)
            out.append(r)
    return out


def groups(ranked: list[dict[str, Any]]) -> list[tuple[str, list[dict[str, Any]]]]:
    """:func:`rank`'s rows as (heading, rows) in order: one table per privacy model."""
    out: list[tuple[str, list[dict[str, Any]]]] = []
    for r in ranked:
        if not out or out[-1][0] != r["model_heading"]:
            out.append((r["model_heading"], []))
        out[-1][1].append(r)
    return out


def signed(ranked: list[dict[str, Any]], chosen: str | None = None) -> str | None:
    """The mechanism the signed decision is for: the officer's ``chosen`` where it reached the target, else the
    top of the first table (:func:`rank`) that has a reached answer."""
    reached = [r["mechanism"] for r in ranked if r.get("reached")]
    if chosen in reached:
        return chosen
    return reached[0] if reached else None


def epsilon_text(row: Mapping[str, Any]) -> str:
    if row.get("epsilon") is None:
        return "not reached"
    unit = f" per {GEO_I_UNIT}" if row.get("privacy_model") == GEO_I else ""
    return f"{row['epsilon']:.3g}{unit}"


def need_text(metric: str, target: float) -> str:
    return NEEDS[metric].format(t=length(target) if metric != "aqe" else f"{target:.1%}")


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
    choices = [
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
    if pick is not None and pick.get("reached"):
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
    else:
        verdict = ("<p class='warn'><strong>No mechanism chosen, or the chosen one did not reach the "
                   "target.</strong></p>")
        ledger_html, year_total = "", "not decided"
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
