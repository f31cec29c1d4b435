"""Decide: from "I have this file" to a signed decision, in five steps on one page (issue 27).

The steps' logic lives in :mod:`ldpviz.decide.decision_flow` (choices, eligibility, ledger, the record) and the
goal seek in :mod:`ldpviz.decide.tradeoff`; every choice is in the one state layer and the link.
"""

from urllib.parse import urlencode

import streamlit as st

from ldpviz.app import compute, controls, longrun, session, state, ui, uploads
from ldpviz import mechanisms
from ldpviz.data import datasets, trajectories
from ldpviz.decide import decision_flow as flow, explain, feasibility, one_collection, tradeoff
from ldpviz.errors import LdpvizInputError, clause
from ldpviz.experiment import runtime_model
from ldpviz.mechanisms import estimation
from ldpviz.geo import region_choice
from ldpviz.geo.domain import Grid
from ldpviz.render import maps as viz
from ldpviz.decide import decision_report
from ldpviz.decide.decision_report import deploy_command
from ldpviz.deploy import bundle

MAX_UPLOAD_BYTES = 1024 * 2**20


def answer(turn: str, metric: str, target: float, probability: float, epsilon: float, scenario, dataset,
           time_limit_s: float | None = None) -> dict:
    """One mechanism's answer (the same call ``ldpviz target`` makes); thread-safe, no Streamlit calls.
    ``time_limit_s``: stop (:class:`estimation.Stopped`) a search started without a click once it has used that
    many seconds of its thread's CPU (what it costs the server, however busy)."""
    base = scenario if turn == "epsilon" else scenario.with_(epsilon=epsilon)
    with estimation.stop_after(time_limit_s, cpu=True):
        return tradeoff.goal_seek(turn, base, metric, target, dataset=dataset, probability=probability).to_dict()


@st.cache_resource
def overran() -> longrun.Seen:
    """Searches started without a click that ran past their time (their keys): they wait for Start next time
    (bounded: the oldest forgotten would start by itself once more)."""
    return longrun.Seen(1024)


def answer_table(ranked: list[dict], turn: str) -> list[dict]:
    """Step 4's table (one privacy model): rank within the model, ε (or users) needed, within the officer's limit,
    the chance one collection misses, the attacker, the ledger."""
    return [{"rank": str(r["rank"]) if r.get("rank") else "—", "mechanism": r["mechanism"], "model": r["privacy_model"],
             ("ε needed" if turn == "epsilon" else "users needed"):
                 flow.epsilon_text(r) if turn == "epsilon" else (f"{r['n_users']:,}" if r["reached"]
                                                                 else "not reached"),
             "within your limit": flow.limit_text(r),
             "chance one collection misses (at most)": one_collection.chance_text(r["miss_chance_max"])
                 if r["reached"] else "—",
             "attacker off by": ui.fmt_metres(r["attacker_error_m"]) if r.get("attacker_error_m") is not None
                 else (f"— ({r['attacker_note']})" if r.get("attacker_note") else "—"),
             f"ε per {flow.unit_noun(cfg)}, one collection": r.get("ledger_one_headline") or "—",
             f"ε per {flow.unit_noun(cfg)} over a year": r.get("ledger_year_headline") or "—",
             "note": r["message"],
             "warnings": "; ".join(x for x in (r.get("scan_warning"), r.get("ledger_warning") or r.get("warning"))
                                   if x)}
            for r in ranked]


def answer_tables(ranked: list[dict], turn: str, slot=None) -> None:
    """One table per privacy model under its heading (ε per report and ε per km are different scales)."""
    box = slot.container() if slot is not None else st.container()
    for n, (heading, rows) in enumerate(flow.groups(ranked)):
        box.markdown(f"**{heading}**")
        box.dataframe(answer_table(rows, turn), hide_index=True,
                      **({} if slot is not None else {"key": f"decide:answers:{n}"}))


def in_depth(page: str, label: str, **chosen) -> None:
    """A link to the page that shows a step in depth, carrying every choice (and ``chosen`` over them: the
    mechanism and ε an answer found). Explore is the dashboard's root page (ldpviz.app.router.PAGES: no path)."""
    path = "" if page == "Explore" else page
    st.markdown(f"[{label} →](./{path}?{urlencode(state.encode({**cfg, **chosen}))})")


cfg = session.setup_page("Decide")
ss = st.session_state
st.title("Decide how to collect the locations")
st.caption("Five steps from your file to a signed decision about the one collection you will run. Every choice is "
           "kept in the link: reload, share it or go back and forward and the steps stay as you left them.")

# ---- 1. Your data ------------------------------------------------------------------------------------------------
st.header("1 · Your data")
file = st.file_uploader("Upload points (CSV or Parquet; latitude and longitude in degrees), or pick a dataset below",
                        type=["csv", "txt", "tsv", "gz", "parquet", "pq"], key="w:decide_upload")
uploads.show_released(st)
held = ss["uploads"].get(cfg.get("dataset"))
if held is not None and not str(cfg.get("upload_bounds") or "").strip() and held.default_region.bounds is not None:
    cfg["upload_bounds"] = uploads.bbox_text(held.default_region.bounds)   # a reload or a link: its box
bounds_text = session.bind(cfg, "upload_bounds", st.text_input, "Bounds of your file W, S, E, N in degrees (blank: "
                           "the paid private map tiles choose the region)", placeholder="e.g. -5.2, 41.3, 9.6, 51.1",
                           help="Only the rows inside the box are studied (as `--bbox` on the command line); typed "
                                "bounds read no data. Blank: every row reports its map tile with ε0 = "
                                f"{cfg['upload_epsilon0']:g}, added to each person's total.")
if file is not None:
    try:
        bounds = state.parse_optional_bbox(bounds_text)
        attempt = (getattr(file, "file_id", file.name), bounds)
        if ss.get("decide_attempt") != attempt:
            ss["decide_attempt"] = attempt
            points = uploads.read_points((attempt[0], "", "", True), file, filename=file.name,
                                         max_bytes=MAX_UPLOAD_BYTES, wrap_longitudes=True)
            suggested = (ss.get("decide_suggestion") or {}).get("box")   # the box suggested from these rows, if any
            loaded = uploads.frame(points, bounds, state.UPLOAD_RULES[0], float(cfg["upload_epsilon0"]),
                                   suggested=suggested)     # bounds equal to it are stated as read from the rows
            ss.pop("decide_suggestion", None)
            session.set_and_rerun(dataset=loaded.name, region=next(iter(loaded.presets)), decide_trips="")
    except datasets.NeedsBounds as exc:       # too few for the private tiles, or too wide: a box, before any search
        box, inside = uploads.suggestion(exc.points, state.SUGGEST_SIDE_KM)
        ss["decide_suggestion"] = {"box": box, "inside": inside, "total": exc.points.lon.size, "why": str(exc),
                                   "filename": file.name, "needed": getattr(exc, "needed", 0)}
    except LdpvizInputError as exc:
        st.error(f"**{file.name} could not be used:** {clause(exc)}. The dataset below stays selected.",
                 icon=":material/error:")
if file is None:
    ss.pop("decide_suggestion", None)      # the file was removed: nothing waits for its box
if ss.get("decide_suggestion"):      # the same step as the Data page's: what to do, the box, the reason
    sug = ss["decide_suggestion"]
    uploads.bounds_step(st, filename=sug["filename"], why=sug["why"], box=sug["box"], inside=sug["inside"],
                        total=sug["total"], key="decide:suggest", field="Bounds of your file",
                        on_accept=lambda text: cfg.update(upload_bounds=text), needed=sug["needed"])
    st.stop()       # the steps below are for this file: nothing is searched until it has its box (issue 36)

if str(cfg.get("decide_trips") or "").startswith(uploads.PREFIX):
    held_trips = uploads.held_trips(cfg["decide_trips"])      # a reload or a link: the server may still hold it
    box = held_trips.default_region.bounds if held_trips is not None else None
    if box is not None and not ss.get("w:trip_bounds:decide"):
        ss["w:trip_bounds:decide"] = uploads.bbox_text(box)  # its typed box stays in the field, as for points
uploads.trip_uploader(st.expander("Or upload trips (one row per point: person, trip, seq, lon, lat)",
                                   expanded=bool(cfg.get("decide_trips", "").startswith(uploads.PREFIX))), "decide")
trip_names = trajectories.names() + list(uploads.trip_uploads())
just = ss.get("trip_message")
if just and just[0] == "success" and ss.get("decide_trip_selected") != just[1] and just[1] in trip_names:
    ss["decide_trip_selected"] = just[1]           # a trips file just loaded: select it (once)
    session.set_and_rerun(decide_trips=just[1], region=None)
uploads.show_trip_message(st, cfg.get("decide_trips") or None)
waiting = ss.get("trip_message")
if waiting and waiting[0] == "bounds" and waiting[1].get("page") == "decide":
    st.stop()       # the trips just uploaded need a box first: nothing is searched until then (issue 36)
if cfg.get("decide_trips") and cfg["decide_trips"] not in trip_names:
    st.warning(f"The trips file {cfg['decide_trips'].split(':')[-1]!r} is no longer held by this server (uploads "
               "are kept in memory only): upload it again above. The first dataset is selected meanwhile.",
               icon=":material/warning:")
    cfg["decide_trips"] = ""

names = datasets.names() + list(ss["uploads"])
sources = names + [flow.TRIPS_PREFIX + t for t in trip_names]


def source_label(source: str) -> str:
    if source.startswith(flow.TRIPS_PREFIX):
        t = source[len(flow.TRIPS_PREFIX):]
        return uploads.trip_label(t) or f"Trips: {trajectories.load(t).label}"
    return controls.dataset_label(source, load=(source == cfg.get("dataset")))


def pick_source(source: str) -> None:
    chosen = session.cfg()
    if source.startswith(flow.TRIPS_PREFIX):
        chosen["decide_trips"] = source[len(flow.TRIPS_PREFIX):]
    else:
        chosen.update(decide_trips="", dataset=source)


current = flow.TRIPS_PREFIX + cfg["decide_trips"] if cfg.get("decide_trips") else cfg.get("dataset")
current = current if current in sources else sources[0]
labels = {n: source_label(n) for n in sources}
c1, c2 = st.columns(2)
source = c1.selectbox("Dataset (points, or trips)", sources, format_func=labels.get,
                      **session.keep("w:decide_source", current, pick_source))
trips = None
if source.startswith(flow.TRIPS_PREFIX):      # trips: one point per person per collection (flow.trips_points)
    trip_name = source[len(flow.TRIPS_PREFIX):]
    cfg["decide_trips"] = trip_name
    trips = uploads.trip_uploads().get(trip_name) or trajectories.load(trip_name)
    data = compute.derive(flow.trips_points(trips, int(cfg["seed"])))
    key, name = data.key, data.name
else:
    cfg["decide_trips"] = ""
    name = cfg["dataset"] = source
    try:
        data, key = compute.get_dataset(name)
    except (LdpvizInputError, FileNotFoundError) as exc:
        st.error(f"Dataset {name!r} cannot be loaded: {exc}")
        st.stop()
options = list(data.presets) + [state.REGION_BBOX]
choice = session.bind(cfg, "region", c2.selectbox, "Region", options, valid=options,
                      help="A preset of the dataset (for an upload: the box you typed or the paid tiles), or "
                           "bounds you type in.")
if choice == state.REGION_BBOX:
    if not cfg.get("bbox_text"):
        cfg["bbox_text"] = controls.region_bbox_text(data.default_region)
    typed = session.bind(cfg, "bbox_text", st.text_input, "Bounds W, S, E, N (degrees)")
    try:
        cfg["bbox"] = state.parse_bbox(typed)
        region = region_choice.stated_region(cfg["bbox"])
    except LdpvizInputError as exc:
        st.error(f"These bounds cannot be used: {exc}")
        st.stop()
else:
    region = data.presets[choice]
upload_name = data.label if trips is None and compute.is_upload(name) else None
inside = int(region.contains(data.lon, data.lat).sum())
report = trips.report if trips is not None else data.report
kept = (f"{report.rows_kept:,} of {report.rows_read:,} rows kept, {report.rows_read - report.rows_kept:,} dropped "
        f"({', '.join(f'{n:,} {r}' for r, n in report.dropped.items() if n) or 'none'})" if report is not None
        else f"{data.n:,} rows")
rows_text = (flow.trips_rows_text(trips, region) if trips is not None else f"{kept}; {inside:,} inside the region")
people = int(inside) if trips is not None else None     # trips: the ledger is per person (accounting.person_ledger)
st.markdown(f"**{labels.get(name, name)}** · {rows_text} · region: {region.name} "
            f"({ui.fmt_metres(region.side_m)} square){'; ' + region.data_use if region.data_use else ''}")
lost = (report.rows_read - report.rows_kept - report.dropped.get("outside the bbox", 0)) if report else 0
if report is not None and report.rows_read and lost / report.rows_read > 0.05:
    st.warning(f"{lost:,} of the file's {report.rows_read:,} rows ({lost / report.rows_read:.0%}) were dropped for "
               f"reasons other than your bounds: {rows_text}. Check the file on the Data page.",
               icon=":material/warning:")
if trips is not None:
    st.caption(f"**The unit is a person.** {flow.TRIPS_UNIT_TEXT[:1].upper()}{flow.TRIPS_UNIT_TEXT[1:]}. "
               "The region's tile (where it is paid for) is charged once per person.")
    in_depth("People", "People and their trips in depth on the People page")
else:
    in_depth("Data", "Rows, bounds and the map of your data on the Data page")

# ---- 2. Who is protected ---------------------------------------------------------------------------------------
st.header("2 · Who is protected")
c1, c2, c3 = st.columns(3)
if trips is None:
    session.bind(cfg, "decide_unit", c1.radio, "The guarantee protects", list(flow.UNITS), valid=list(flow.UNITS),
                 format_func=flow.UNITS.get)
else:        # a trips file names its people: the guarantee protects a person, whatever was chosen for points
    c1.radio("The guarantee protects", [flow.UNITS["person"]], disabled=True, key="w:decide_unit_trips",
             help="A trips file names each point's person, so the guarantee protects a person (all their trips).")
session.bind(cfg, "decide_reports", c2.number_input, "Reports per person per collection", min_value=1,
             max_value=10_000, step=1, help="Each report pays ε; the ledger adds them up per person.")
session.bind(cfg, "decide_every", c3.selectbox, "How often the collection runs", list(flow.EVERY),
             valid=list(flow.EVERY), help="The ledger's total over a year composes every collection.")
models = session.bind(cfg, "decide_models", st.multiselect, "Privacy models you accept", list(flow.MODELS),
                      format_func=lambda m: flow.MODELS[m])
eligible, why_not = flow.eligible(models)
st.caption(f"{explain.plural(len(eligible), 'mechanism')} eligible; {len(why_not)} left out (why: in step 4).")
in_depth("Mechanisms", "What each mechanism protects, on the Mechanisms page")

# ---- 3. What the map must show -----------------------------------------------------------------------------------
st.header("3 · What the map must show")
c1, c2, c3 = st.columns([2, 1, 1])
metric = session.bind(cfg, "decide_metric", c1.radio, "The need", list(flow.NEEDS), valid=list(flow.NEEDS),
                      format_func=lambda m: flow.NEEDS[m].format(t="x m" if m == "w2_m" else "x"))
session.reset_when_changed(cfg, "decide_metric", "decide_target", flow.TARGET_DEFAULTS[metric])
target = session.bind(cfg, "decide_target", c2.number_input, f"x = ({ui.metric_label(metric)} at most)",
                      min_value=0.0001, format="%g")
grid_options = [d for d in state.GRID_OPTIONS if d <= 64]
side = session.bind(cfg, "grid_side", c3.selectbox, "Cells (grid d × d)", grid_options, valid=grid_options,
                    format_func=lambda d: f"{d} × {d}")        # labels fixed: a region change must not reset it
c3.caption(f"cells of {ui.fmt_metres(region.side_m / int(side))}")
c2.caption(f"beside cells of {ui.fmt_metres(region.side_m / int(side))}" if metric.endswith("_m") else
           f"of everyone; areas of 1% of the region")
probability = session.bind(cfg, "decide_probability", c2.number_input, "Share of collections that must meet it",
                           min_value=0.5, max_value=0.999, step=0.01, format="%.3g")
st.markdown(f"**The need:** {flow.need_text(metric, float(target))}, in "
            f"{probability:.0%} of collections (one collection is what you will run).")
fine = feasibility.cell_note(metric, float(target), region.side_m / int(side))
if fine:
    st.warning(fine, icon=":material/grid_on:")
in_depth("Compare", "Every metric side by side on the Compare page")

# ---- 4. The answer -----------------------------------------------------------------------------------------------
st.header("4 · The answer")
turn = session.bind(cfg, "decide_turn", st.segmented_control, "Question", list(flow.TURNS), valid=list(flow.TURNS),
                    required=True, format_func={"epsilon": "ε needed with the users there are",
                                                "users": "Users needed at a fixed ε"}.get)
if turn == "users":
    session.bind(cfg, "decide_epsilon", st.number_input, "ε (fixed)", min_value=0.001, max_value=50.0,
                 format="%g")
limit = session.bind(cfg, "decide_limit", st.number_input, "The largest ε per person in one collection I accept",
                     min_value=0.001, max_value=50.0, format="%g",
                     help="Judged on the ledger (the region, reports per person); Geo-I between neighbouring "
                          "cells. Where no mechanism meets the target within it, the answer says so first and what "
                          "each reaches at it.")
session.sync_url(cfg)
if not eligible:
    st.info("Accept at least one privacy model in step 2.")
    st.stop()
n_users = int(cfg["n_users"]) if inside > int(cfg["n_users"] or 0) > 0 else None
grid = Grid(region, int(side))
scenarios = [flow.scenario(name, region, m, int(side), n_users, int(cfg["seed"])) for m in eligible]
question = (turn, metric, float(target), float(probability), float(cfg["decide_epsilon"]) if turn == "users" else 0.0)
seek_keys = [repr(("decide", sc, key, question)) for sc in scenarios]      # held by compute.held_goal_seek
pending = [k for k, seek_key in enumerate(seek_keys) if seek_key not in compute.goal_seeks_held()]
every_s = {k: compute.goal_seek_seconds(scenarios[k], tradeoff.DEFAULT_TRIALS) for k in range(len(scenarios))}
seek_s = {k: every_s[k] for k in pending}
for k in pending:     # stopped before when started without a click: it takes at least its limit
    if seek_keys[k] in overran():
        seek_s[k] = flow.quick_limit(seek_s[k])
threads = tradeoff.seek_threads(len(pending))
# Seeks the officer started (Start) run until answered, without a limit, through any re-run (a stopped quick seek, a
# widget): one click answers every remaining mechanism. The rest: the quick ones start at once within a CPU budget
# (flow.quick_limits: opening the page costs a bounded share of the server), the others wait for Start.
clicked = ss.setdefault("decide:started", set())
by_click = [k for k in pending if seek_keys[k] in clicked]
# The quick group is chosen from every eligible mechanism, answered or not, so it is the same on every run of this
# question: a re-run (or the next visitor) starts only what is left of it, never the next-quickest ones in turn
# (which cascaded: 107 s of CPU before any input, issue 36).
quick = flow.quick_group(every_s, min(longrun.DECIDE_OPEN_CPU_S, longrun.DECIDE_QUICK_S * threads))
now = [k for k in quick if k in seek_s and seek_keys[k] not in overran() and k not in by_click]
later = [k for k in pending if k not in now and k not in by_click]


def unreached_s(ks: list[int], n_threads: int) -> float | None:
    """The seeks' predicted wall time if no ε reaches the target (their scans alone); None for the users question."""
    if turn == "users":
        return None
    return runtime_model.side_by_side_seconds(
        [compute.goal_seek_seconds(scenarios[k], tradeoff.DEFAULT_TRIALS, "scan") for k in ks], n_threads)


if later:     # the long rest (many mechanisms, a fine grid, many users) starts when the officer says so
    names_later = [eligible[k] for k in later]
    if longrun.announce(f"{explain.plural(len(later), 'more mechanism')} ({', '.join(names_later)})",
                        runtime_model.side_by_side_seconds([seek_s[k] for k in later], threads),
                        "the runs timed so far", "decide:" + str(hash(tuple(seek_keys[k] for k in later))),
                        unreached_s(later, threads)):
        clicked.update(seek_keys[k] for k in pending)
        by_click, later = list(pending), []
    else:
        for k in later:
            why_not[eligible[k]] = "not searched yet: its search waits for Start in step 4"
limits: dict[int, float | None] = flow.quick_limits({k: seek_s[k] for k in now if k not in by_click},
                                                    longrun.DECIDE_OPEN_CPU_S)
limits.update({k: None for k in by_click})
now = [k for k in pending if k in limits]
table_slot, status = st.empty(), st.empty()
data_arg = compute.dataset_arg(name) or data
question_args = (metric, float(target), float(probability), float(cfg["decide_epsilon"]))
answered: dict[int, dict] = {}      # scenario index -> the answer's row (goal seek, ledger at its answer)


def take(k: int, goal: dict) -> None:
    mech = (mechanisms.create(eligible[k], grid, float(goal["epsilon"])) if goal.get("reached") else None)
    answered[k] = flow.answer(goal, mech, region, cfg, people)


def search(k: int, time_limit_s: float | None = None):
    """Scenario k's goal seek, as a call for a seek thread (or for reading back a held answer)."""
    return lambda: answer(turn, *question_args, scenarios[k], data_arg, time_limit_s)


for k, seek_key in enumerate(seek_keys):          # held already: shown at once, no thread
    if seek_key in compute.goal_seeks_held():
        take(k, compute.held_goal_seek(seek_key, search(k)))
pending = [k for k in now if k not in answered]
if pending:
    status.caption(f"Searching {explain.plural(len(pending), 'mechanism')}, "
                   f"{tradeoff.seek_threads(len(pending))} at a time; each answer shows as it is found ...")
costs = [seek_s.get(k) for k in pending]
calls = [search(k, limits[k]) for k in pending]
stopped = []
# One seek per core, the longest first. The poll shows the time so far, and through it a re-run (a new file, bounds,
# target) interrupts this loop at once: the seeks then stop at their next EM iteration (tradeoff.seeks_side_by_side).
for j, future in tradeoff.seeks_side_by_side(calls, costs, poll=compute.seek_poll(status, len(pending))):
    k = pending[j]
    try:
        take(k, compute.held_goal_seek(seek_keys[k], search(k), _found=future.result()))
    except LdpvizInputError as exc:
        why_not[eligible[k]] = f"cannot run here: {exc}"
    except estimation.Stopped:
        overran().add(seek_keys[k])
        stopped.append(k)
    left = sum(1 for i in pending if i not in answered and i not in stopped and eligible[i] not in why_not)
    if left:
        answer_tables(flow.rank([answered[i] for i in sorted(answered)], turn, models), turn, table_slot)
        status.caption(f"{explain.plural(left, 'mechanism')} still searching ...")
if stopped:       # predicted quick but not: they join the ones that wait for Start (named there)
    st.rerun()
rows = flow.with_limit([answered[k] for k in sorted(answered)], region, cfg, people)   # eligible order
inverse = feasibility.needs_inverse(rows, turn)
if inverse:        # none meets the target within the limit: what each reaches there (one collection)
    status.caption(f"No mechanism meets the target within ε {float(limit):g}: reading what each reaches there ...")
    inv_keys = [repr(("decide-limit", scenarios[eligible.index(rows[i]["mechanism"])], key, metric,
                      float(target), rows[i]["limit_epsilon"])) for i in inverse]

    def at_limit(i: int):
        sc = scenarios[eligible.index(rows[i]["mechanism"])]
        return lambda: tradeoff.reading_at(sc, metric, float(target), rows[i]["limit_epsilon"], dataset=data_arg)

    todo = [j for j, k_ in enumerate(inv_keys) if k_ not in compute.goal_seeks_held()]
    for j in range(len(inverse)):
        if j not in todo:
            rows[inverse[j]]["at_limit"] = compute.held_goal_seek(inv_keys[j], at_limit(inverse[j]))
    for j, future in tradeoff.seeks_side_by_side([at_limit(inverse[j]) for j in todo]):
        jj = todo[j]
        rows[inverse[jj]]["at_limit"] = compute.held_goal_seek(inv_keys[jj], at_limit(inverse[jj]),
                                                               _found=future.result())
ranked = flow.rank(rows, turn, models)
ss["decide_answers"] = ranked          # the answers as shown (tests compare them with `ldpviz target`)
status.empty()
summary = feasibility.limit_summary(ranked, float(limit), metric, float(target), region.side_m / int(side),
                                    waiting=len(later), noun=flow.unit_noun(cfg))
if summary["lead"]:
    st.error(summary["lead"] + "\n" + "\n".join(f"- {line}" for line in summary["lines"]), icon=":material/block:")
table_slot.empty()
answer_tables(ranked, turn)
st.caption(f"Met = {tradeoff.rule_text(float(probability))}. ε is the smallest found on a scan (x2 apart, refined "
           "to 5%), not a proven smallest. The attacker knows the population density and sees one report.")
for r in ranked:
    for key_ in ("scan_warning", "ledger_warning"):
        if r.get(key_):
            st.warning(f"**{r['mechanism']}:** {r[key_]}", icon=":material/warning:")
with st.expander(f"Why not the other {len(why_not)} mechanisms"):
    st.markdown("\n".join(f"- **{n}**: {w}" for n, w in why_not.items()) or "None left out.")
reached = [r["mechanism"] for r in ranked if r["reached"]]
pins = session.bind(cfg, "decide_pins", st.multiselect, "Pin two to compare their maps", reached,
                    max_selections=2, default=None) if reached else []
pins = [p for p in (cfg.get("decide_pins") or []) if p in reached]
if len(pins) == 2:       # one collection each, at its answer, on one colour scale
    pinned = []
    for pin in pins:
        r = next(x for x in ranked if x["mechanism"] == pin)
        sc = flow.scenario(name, region, pin, int(side), r["n_users"] if turn == "users" else n_users,
                           int(cfg["seed"])).with_(epsilon=float(r["epsilon"]), trials=1)
        pinned.append((pin, r, compute.cached_run(sc, key, compute.dataset_arg(name) or data)))
    vmax = max(float(res.estimate.density.max()) for _, _, res in pinned) or 1.0
    for col, (pin, r, res) in zip(st.columns(2), pinned):
        with col:
            st.markdown(f"**{pin}** at ε {flow.epsilon_text(r)}")
            px = ui.map_size("half", region)
            st.pydeck_chart(viz.estimate_deck(res.grid, res.estimate.density, res.estimate.partition,
                                              vmax=vmax, **px),
                            height=px["height"], key=f"decide:map:{pin}")
            st.caption(f"{ui.metric_label(metric)} of this collection: {ui.fmt_metric(metric, res.mean()[metric])}")
signs = flow.signed(ranked, cfg.get("decide_chosen"))      # the one step 5 signs (the officer's, else the top)
shown = next((r for r in ranked if r["reached"] and r["mechanism"] == signs), None)
if shown is None:
    in_depth("Explore", "One mechanism in depth on the Explore page")
elif turn == "users":    # a link carries any ε a mechanism accepts (state.EPSILON_LINK_RANGE), as step 4's does
    in_depth("Explore", f"{shown['mechanism']} in depth on the Explore page, with the users found",
             mechanism=shown["mechanism"], n_users=int(shown["n_users"]), epsilon=float(cfg["decide_epsilon"]))
else:      # at the ε found, rounded up as Compare's 'Use ε' does (so the target stays met)
    eps = min(state.epsilon_for_use(float(shown["epsilon"])), state.EPSILON_LINK_RANGE[1])
    in_depth("Explore", f"{shown['mechanism']} in depth on the Explore page at ε = {eps:g}",
             mechanism=shown["mechanism"], epsilon=eps)

# ---- 5. Sign -----------------------------------------------------------------------------------------------------
st.header("5 · Sign")
if not reached and later:      # not an answer: some mechanisms have not been searched yet
    st.info(f"No answer yet: {explain.plural(len(later), 'mechanism')} wait for Start in step 4.")
    st.stop()
if not reached:
    st.info("No eligible mechanism reaches the target: loosen the target, accept another model, or add users.")
    st.stop()
c1, c2 = st.columns(2)
top = flow.signed(ranked)
top_heading = next(r["model_heading"] for r in ranked if r["mechanism"] == top)
session.bind(cfg, "decide_chosen", c1.selectbox, "Mechanism signed", [""] + reached, valid=[""] + reached,
             format_func=lambda m: m or f"{top}: the top of the first table ({top_heading.split(':')[0]})",
             help="The top of the first table (your accepted models in their order) unless you choose another.")
chosen = flow.signed(ranked, cfg.get("decide_chosen"))
cfg["mechanism"] = chosen
session.bind(cfg, "decide_purpose", c2.text_input, "Purpose of the collection")
c1, c2 = st.columns(2)
session.bind(cfg, "decide_owner", c1.text_input, "Owner (who answers for it)")
session.bind(cfg, "decide_retention", c2.text_input, "Retention (how long the data is kept)")
pick = next(r for r in ranked if r["mechanism"] == chosen)
st.markdown(f"**The signed decision is for {chosen}** ({pick['privacy_model']}, ε {flow.epsilon_text(pick)}"
            f"{'' if cfg.get('decide_chosen') else ', the top of the first table'}).")
with st.container(border=True):
    st.markdown(f"**What each person pays with {chosen}** (the accountant's ledger)")
    st.markdown("\n".join(f"- {line}" for line in pick["ledger"]["lines"]))
    st.markdown(pick["ledger_one"] + ("" if pick["ledger_sentence"] == pick["ledger_one"]
                                      else f"  \n{pick['ledger_sentence']}"))
session.sync_url(cfg)
base_url = str(getattr(st.context, "url", "") or "").split("?")[0]
link = f"{base_url}?{urlencode(state.encode(cfg))}"
region_arg = choice if choice != state.REGION_BBOX and not upload_name else region   # a preset by name, else the Region
used = {**cfg, "n_users": n_users, "decide_limit": float(limit)}   # the users the answer ran on: the data's
if trips is None:
    cli = flow.command(used, eligible, region_arg, data)
else:        # `ldpviz target` reads points; trips reproduce through the API, one point per person as here
    cli = flow.trips_command(used, eligible, trips, region, choice if choice != state.REGION_BBOX else None)
sections = flow.record_sections(cfg, data_label=labels.get(name, name), rows_text=rows_text,
                                region_text=f"{region.name} ({ui.fmt_metres(region.side_m)} square); where it came "
                                            f"from: {region_choice.origin_text(region)}",
                                cell_text=f"{side} × {side} cells of {ui.fmt_metres(region.side_m / int(side))}",
                                answers=ranked, chosen=chosen, why_not=why_not, link=link, cli=cli)
decision_json = flow.record_json(cfg, ranked, chosen, region)


signed_data = compute.dataset_arg(name) or data     # read now: the button builds the report outside this run


def signed_report() -> str:
    """The signed decision: the decision report (maps, the interval, the attacker, the audit, what is not covered)
    of the chosen mechanism at its answer, over as many collections as the answer's fresh decision, with the flow's
    choices, the target and the alternatives first and the sign-off last (built when the button is pressed)."""
    sc = flow.scenario(name, region, chosen, int(side), int(pick["n_users"]) if turn == "users" else n_users,
                       int(cfg["seed"])).with_(epsilon=float(pick["epsilon"]), trials=max(2, int(pick["trials"])))
    result = compute.cached_run(sc, key, signed_data)
    mech = mechanisms.create(chosen, Grid(region, int(side)), float(pick["epsilon"]))
    return decision_report.build_report(sc, dataset=signed_data, result=result, goal=pick,
                               decision=sections, decision_json=decision_json,
                               ledger=flow.ledger_for(mech, region, cfg, people))


st.download_button("Download the signed decision (HTML)", signed_report, "ldpviz-decision.html", "text/html",
                   on_click="ignore", type="primary", key="decide:download",
                   help="The decision report of the chosen mechanism at its answer (maps, the interval, the attacker, "
                        "the audit, what is not covered) with every choice above, the target, the answer and the "
                        "alternatives, and the sign-off block: one page that opens offline.")
st.markdown("**Reopen this whole flow:**")
st.code(link, language=None)
if trips is None:
    st.markdown("**Reproduce the answer on the command line:**")
    st.code(cli, language="bash")
else:
    st.markdown("**Reproduce the answer with the ldpviz API** (`ldpviz target` reads points; this reads the trips "
                "and takes one point per person, as above):")
    st.code(cli, language="python")

# ---- 6. Deploy ---------------------------------------------------------------------------------------------------
st.header("6 · Deploy")
st.caption("What your engineers build the collection from: collection.json (the mechanism, ε, the region with its "
           "projection, the grid and domain, the ledger above and a digest of all of it), client.js and client.py "
           "(what each phone runs on one true location: exact sampling, the platform's cryptographic random source), "
           "a README and the command that estimates the map from the reports that come back (docs/deploy.md).")


@st.cache_data(max_entries=16, show_spinner="Writing the collection bundle ...")
def collection_zip(mechanism: str, epsilon: float, side: int, _region, region_key: str, ledger_cfg: tuple,
                   expected: int, people: int | None) -> bytes:
    """The deploy bundle (ldpviz.deploy.bundle) of the chosen mechanism at its answer, with the flow's ledger."""
    mech = mechanisms.create(mechanism, Grid(_region, side), epsilon)
    return bundle.bundle_zip(mech, _region, flow.ledger_for(mech, _region, dict(ledger_cfg), people),
                             expected_users=expected)


ledger_cfg = tuple((k, cfg.get(k)) for k in ("decide_reports", "decide_unit", "decide_every", "decide_trips"))
try:
    zipped = collection_zip(chosen, float(pick["epsilon"]), int(side), region, repr(region), ledger_cfg,
                            int(n_users or inside), people)
    st.download_button("Download the collection bundle (ZIP)", zipped, f"ldpviz-collection-{chosen}.zip",
                       "application/zip", on_click="ignore", key="decide:deploy")
    command = deploy_command(flow.scenario(name, region, chosen, int(side), n_users, int(cfg["seed"])).with_(
        epsilon=float(pick["epsilon"])), region,
        {choice: region} if choice != state.REGION_BBOX and trips is None else None, data)
    if command:
        st.markdown("**The same bundle on the command line:**")
        st.code(command, language="bash")
except LdpvizInputError as exc:
    refused = decision_report.deploy_refusal(region)     # the reason `ldpviz deploy` gives, in its words
    st.info(f"No phone bundle for {chosen}: {refused or clause(exc)}.", icon=":material/info:")

