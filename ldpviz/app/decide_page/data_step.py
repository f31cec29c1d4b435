"""Decide, step 1 · Your data: a file of points (its bounds, or the paid private tiles), a trips file, or a bundled
dataset, and the region studied."""

from __future__ import annotations

import streamlit as st

from ldpviz.app import compute, controls, session, state, ui, uploads
from ldpviz.app.decide_page.links import in_depth
from ldpviz.app.decide_page.types import DecideState, Source
from ldpviz.data import datasets, trajectories
from ldpviz.decide import decision_flow as flow
from ldpviz.errors import LdpvizInputError, clause
from ldpviz.geo import region_choice

MAX_UPLOAD_BYTES = 1024 * 2**20


def your_data(state_: DecideState) -> Source:
    """Draw step 1 and return the points and region chosen. Stops the page while a file waits for its box."""
    cfg, ss = state_.cfg, state_.session
    st.header("1 · Your data")
    upload_points(cfg, ss)
    trip_names = upload_trips(cfg, ss)
    names = datasets.names() + list(ss["uploads"])
    sources = names + [flow.TRIPS_PREFIX + t for t in trip_names]

    def source_label(source: str) -> str:
        if source.startswith(flow.TRIPS_PREFIX):
            t = source[len(flow.TRIPS_PREFIX):]
            return uploads.trip_label(t) or f"Trips: {trajectories.load(t).label}"
        return controls.dataset_label(source, load=(source == cfg.get("dataset")))

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
    kept = (f"{report.rows_kept:,} of {report.rows_read:,} rows kept, {report.rows_read - report.rows_kept:,} "
            f"dropped ({', '.join(f'{n:,} {r}' for r, n in report.dropped.items() if n) or 'none'})"
            if report is not None else f"{data.n:,} rows")
    rows_text = (flow.trips_rows_text(trips, region) if trips is not None else f"{kept}; {inside:,} inside the region")
    people = int(inside) if trips is not None else None    # trips: the ledger is per person (accounting.person_ledger)
    st.markdown(f"**{labels.get(name, name)}** · {rows_text} · region: {region.name} "
                f"({ui.fmt_metres(region.side_m)} square){'; ' + region.data_use if region.data_use else ''}")
    lost = (report.rows_read - report.rows_kept - report.dropped.get("outside the bbox", 0)) if report else 0
    if report is not None and report.rows_read and lost / report.rows_read > 0.05:
        st.warning(f"{lost:,} of the file's {report.rows_read:,} rows ({lost / report.rows_read:.0%}) were dropped "
                   f"for reasons other than your bounds: {rows_text}. Check the file on the Data page.",
                   icon=":material/warning:")
    if trips is not None:
        st.caption(f"**The unit is a person.** {flow.TRIPS_UNIT_TEXT[:1].upper()}{flow.TRIPS_UNIT_TEXT[1:]}. "
                   "The region's tile (where it is paid for) is charged once per person.")
        in_depth(cfg, "People", "People and their trips in depth on the People page")
    else:
        in_depth(cfg, "Data", "Rows, bounds and the map of your data on the Data page")
    return Source(name=name, key=key, data=data, trips=trips, labels=labels, choice=choice, region=region,
                  upload_name=upload_name, inside=inside, rows_text=rows_text, people=people)


def upload_points(cfg: dict, ss) -> None:
    """The points uploader and its bounds; a file too wide (or too small) for the private tiles gets a suggested
    box first, and the page stops until it has one."""
    file = st.file_uploader("Upload points (CSV or Parquet; latitude and longitude in degrees), or pick a dataset "
                            "below", type=["csv", "txt", "tsv", "gz", "parquet", "pq"], key="w:decide_upload")
    uploads.show_released(st)
    held = ss["uploads"].get(cfg.get("dataset"))
    if held is not None and not str(cfg.get("upload_bounds") or "").strip() and held.default_region.bounds is not None:
        cfg["upload_bounds"] = uploads.bbox_text(held.default_region.bounds)   # a reload or a link: its box
    bounds_text = session.bind(cfg, "upload_bounds", st.text_input, "Bounds of your file W, S, E, N in degrees "
                               "(blank: the paid private map tiles choose the region)",
                               placeholder="e.g. -5.2, 41.3, 9.6, 51.1",
                               help="Only the rows inside the box are studied (as `--bbox` on the command line); "
                                    "typed bounds read no data. Blank: every row reports its map tile with ε0 = "
                                    f"{cfg['upload_epsilon0']:g}, added to each person's total.")
    if file is not None:
        try:
            bounds = state.parse_optional_bbox(bounds_text)
            attempt = (getattr(file, "file_id", file.name), bounds)
            if ss.get("decide_attempt") != attempt:
                ss["decide_attempt"] = attempt
                points = uploads.read_points((attempt[0], "", "", True), file, filename=file.name,
                                             max_bytes=MAX_UPLOAD_BYTES, wrap_longitudes=True)
                suggested = (ss.get("decide_suggestion") or {}).get("box")   # the box suggested from these rows
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


def upload_trips(cfg: dict, ss) -> list[str]:
    """The trips uploader (a file just loaded is selected once; the page stops while it waits for a box); the
    names of the trips files offered."""
    if str(cfg.get("decide_trips") or "").startswith(uploads.PREFIX):
        held_trips = uploads.held_trips(cfg["decide_trips"])      # a reload or a link: the server may still hold it
        box = held_trips.default_region.bounds if held_trips is not None else None
        if box is not None and not ss.get("w:trip_bounds:decide"):
            ss["w:trip_bounds:decide"] = uploads.bbox_text(box)  # its typed box stays in the field, as for points
    uploads.trip_uploader(st.expander("Or upload trips (one row per point: person, trip, seq, lon, lat)",
                                       expanded=bool(cfg.get("decide_trips", "").startswith(uploads.PREFIX))),
                          "decide")
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
        st.warning(f"The trips file {cfg['decide_trips'].split(':')[-1]!r} is no longer held by this server "
                   "(uploads are kept in memory only): upload it again above. The first dataset is selected "
                   "meanwhile.", icon=":material/warning:")
        cfg["decide_trips"] = ""
    return trip_names


def pick_source(source: str) -> None:
    """The source selectbox's change: a trips file, or a points dataset (which clears the trips)."""
    chosen = session.cfg()
    if source.startswith(flow.TRIPS_PREFIX):
        chosen["decide_trips"] = source[len(flow.TRIPS_PREFIX):]
    else:
        chosen.update(decide_trips="", dataset=source)
