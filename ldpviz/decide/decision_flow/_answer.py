"""Step 4, the answer: trips as one point per person, the ledger, each mechanism's answer within the officer's limit,
the seeks that start without a click, the ranking within a privacy model."""

from __future__ import annotations

from typing import Any, Mapping

from ldpviz.data import trajectories
from ldpviz.data.dataset_types import Dataset
from ldpviz.decide import decision_report, feasibility
from ldpviz.geo import region_choice
from ldpviz.mechanisms import accounting
from ldpviz.mechanisms.base import GEO_I, GEO_I_UNIT, UNIT_PERSON, UNIT_ROW
from ldpviz.wording import length
from ldpviz.decide.decision_flow._choices import EVERY, NEEDS


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
