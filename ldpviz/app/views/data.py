"""Data: upload CSV/Parquet, see what was kept and dropped, preview on a map, save regions.

An upload is kept in this server's memory only (ldpviz.app.uploads), never written to disk or sent anywhere.
"""

import numpy as np
import pandas as pd
import pydeck as pdk
import streamlit as st

from ldpviz.app import controls, session, state, ui, uploads
from ldpviz.app.errors import guard
from ldpviz.data import datasets
from ldpviz.decide import explain
from ldpviz.render import maps as viz
from ldpviz.geo.domain import MAX_REGION_SIDE_M, Grid, Region
from ldpviz.errors import LdpvizInputError

PREVIEW_SIDE = 64
#: Dropping more than this share of an upload's rows is a warning, not a success.
DROP_WARNING_SHARE = 0.05


#: An upload may be this large (server.maxUploadSize in .streamlit/config.toml says the same to the browser).
MAX_UPLOAD_BYTES = 1024 * 2**20
#: Fewer users per cell than this, on average over the region, and the page suggests a coarser grid.
MIN_USERS_PER_CELL = 5


def suggest_grid(n_users: int, side: int) -> None:
    """When the region's users are too few for the grid (under MIN_USERS_PER_CELL a cell), offer a coarser d."""
    if n_users >= MIN_USERS_PER_CELL * side * side:
        return
    fitting = [d for d in state.GRID_OPTIONS if n_users >= MIN_USERS_PER_CELL * d * d]
    if not fitting:
        st.warning(f"Only {explain.plural(n_users, 'person', 'people')} {'is' if n_users == 1 else 'are'} in this "
                   f"region: too few for any grid (each cell would hold fewer than {MIN_USERS_PER_CELL} on average), "
                   "so every map will be mostly noise. Choose a larger region or add data.", icon=":material/grid_off:")
        return
    best = max(fitting)
    st.warning(f"{n_users:,} people in this region over {side} × {side} = {side * side:,} cells is "
               f"{n_users / side ** 2:.1f} per cell on average; with fewer than {MIN_USERS_PER_CELL} per cell the "
               f"noise drowns the map. d = {best} gives {n_users / best ** 2:.0f} per cell.",
               icon=":material/grid_on:")
    st.button(f"Use d = {best}", on_click=lambda: session.cfg().update(grid_side=best), key="fix:grid")


#: The region rules as the Data page names them.
RULE_LABELS = {"private-tiles": "Private map tiles (costs ε0 per row, added to ε)",
               "public-tiles": "Public tiles (not private: an outlier row moves it)"}


bbox_text = uploads.bbox_text


def upload_verdict(loaded: datasets.Dataset) -> tuple[str, str]:
    """('success' | 'warning', message) for a loaded file: a large loss of rows, or any changed row, is a warning
    that says what to do."""
    report = loaded.report
    lost = (report.rows_read - report.rows_kept - report.dropped.get("outside the bbox", 0)) if report else 0
    share = lost / report.rows_read if report and report.rows_read else 0.0
    kept = f"Loaded **{loaded.label}**: {explain.plural(loaded.n, 'point')}"
    region = loaded.default_region
    if region.bounds is not None:
        kept += (f" inside {region.typed_bounds} ({report.dropped.get('outside the bbox', 0):,} rows outside "
                 "the box left out)" + (f"; the box is {region.data_use}" if region.data_use else ""))
    else:
        kept += f"; region: {region.name}, {region.data_use}"
    changed = {r: n for r, n in (getattr(report, "changed", None) or {}).items() if n}
    if changed:
        kept += " (" + ", ".join(f"{n:,} rows changed: {r}" for r, n in changed.items()) + ")"
    unwrapped = report.dropped.get("longitude past 180, not wrapped", 0) if report else 0
    if share > DROP_WARNING_SHARE or changed or unwrapped:
        reasons = ", ".join(f"{n:,} {r}" for r, n in report.dropped.items())
        loss = (f", but **{lost:,} of {report.rows_read:,} rows ({share:.0%}) were dropped** ({reasons})"
                if share > DROP_WARNING_SHARE else "")
        advice = []
        if share > DROP_WARNING_SHARE and lost > unwrapped:
            advice.append("Check the coordinate columns and their units (degrees, WGS 84) in the report below; if "
                          "that is not what you meant, fix the file and upload it again.")
        if changed.get("longitude wrapped"):
            advice.append("Longitudes past 180° were wrapped (e.g. 188° became -172°); to drop those rows instead, "
                          "untick 'Wrap longitudes' above.")
        elif unwrapped:
            advice.append(f"{unwrapped:,} rows have a longitude in (180°, 540°] and were dropped because wrapping "
                          "is off; tick 'Wrap longitudes' above to keep them.")
        advice = " ".join(advice)
        return ("warning", f"{kept}{loss}. {advice} Until then the pages use the rows as kept. It is the selected "
                           "dataset on every page.")
    dropped = f" ({lost:,} rows dropped, listed below)" if lost else ""
    return ("success", f"{kept}{dropped}. It is now the selected dataset on every page.")

cfg = session.setup_page("Data")
st.title("Data: bring your own points")
st.markdown("Upload a CSV or Parquet file with one row per person and latitude/longitude columns in degrees "
            "(WGS 84). The file is kept in this server's memory only: never written to disk or sent anywhere. "
            "A reload, or a link opened on this server, finds it again until the server stops (at most a day). "
            f"A session holds {uploads.session_budget_text()} of uploads: beyond that your least recently used "
            "file is released, and named here.")

file = st.file_uploader("CSV or Parquet file", type=["csv", "txt", "tsv", "gz", "parquet", "pq"], key="w:upload")
uploads.show_released(st)
c1, c2 = st.columns(2)
lat_col = session.bind(cfg, "lat_column", c1.text_input, "Latitude column (blank = find it)")
lon_col = session.bind(cfg, "lon_column", c2.text_input, "Longitude column (blank = find it)")
wrap = session.bind(cfg, "wrap_lon", st.checkbox, "Wrap longitudes past 180° into [-180°, 180°] (subtract 360°)",
                    help="Data across the antimeridian (near Fiji, Kamchatka, the Aleutians) often writes 172° W as "
                         "188°. Wrapped, such rows are kept and counted as changed; unwrapped, they are dropped and "
                         "counted. Either way the report below says how many.")
ss = st.session_state
st.markdown("**Region of the file.** The region defines the grid sent to every phone, so it must not be read "
            "from people's exact points for free.")
cleared = uploads.clear_bounds_for_a_new_file(file, "upload_file_seen", cfg.get("upload_bounds", ""))
if cleared:
    cfg["upload_bounds"] = ""
    ss["upload_bounds_cleared"] = cleared
bounds_text = session.bind(cfg, "upload_bounds", st.text_input, "Bounds W, S, E, N in degrees (blank: use the "
                           "rule below)", placeholder="e.g. -80.5, 38.5, -70.5, 43.5",
                           help="Only the rows inside this box are studied, exactly the rows `ldpviz run --csv "
                                "FILE --bbox W,S,E,N` keeps; the grid covers the square around the box. West > "
                                "east crosses 180°. Typed bounds read no data.")
if ss.get("upload_bounds_cleared") and not str(bounds_text).strip():
    st.caption(f"The bounds typed for the previous file ({ss['upload_bounds_cleared']}) were cleared for this one: "
               "a new file starts from its own region.")
r1, r2 = st.columns([3, 1])
rule = session.bind(cfg, "upload_rule", r1.radio, "Without bounds, frame the file by", state.UPLOAD_RULES,
                    valid=state.UPLOAD_RULES, horizontal=True, format_func=RULE_LABELS.get,
                    disabled=bool(str(bounds_text).strip()),
                    help="Private map tiles: every row reports its ~156 km map tile under ε0-LDP and the region "
                         "frames the tiles many rows report; ε0 adds to the mechanism's ε and every guarantee "
                         "states the total. Public tiles: the square around every occupied tile, unpaid, so one "
                         "outlier row can move it (not private).")
epsilon0 = session.bind(cfg, "upload_epsilon0", r2.number_input, "ε0 for the region (per row)", step=0.05,
                        **state.SETTING["upload_epsilon0"].widget_bounds(),
                        disabled=rule != state.UPLOAD_RULES[0] or bool(
                            str(bounds_text).strip()))
bounds_ok = True
try:
    bounds = state.parse_optional_bbox(bounds_text)
except LdpvizInputError as exc:     # nothing is loaded until the bounds are fixed (never the rule instead)
    st.error(f"**These bounds cannot be used:** {exc}. Nothing is loaded until they are fixed.",
             icon=":material/error:")
    bounds, bounds_ok = None, False
read_key = ((getattr(file, "file_id", file.name), lat_col.strip(), lon_col.strip(), bool(wrap))
            if file is not None else None)
frame_key = (read_key or (ss.get("upload_attempt") or (None,))[0], bounds, rule,
             float(epsilon0) if rule == state.UPLOAD_RULES[0] else None)
points = None
if bounds_ok and (file is not None or (uploads.held_points() is not None
                                       and ss.get("upload_attempt") != frame_key)):
    if ss.get("upload_attempt") != frame_key:
        ss["upload_attempt"] = frame_key
        suggested = ss.pop("upload_suggestion", None)
        bar = st.progress(0.0, text=f"Reading {file.name if file is not None else 'the file'} ...")
        try:
            points = (uploads.read_points(read_key, file, filename=file.name, lat_column=lat_col.strip() or None,
                                          lon_column=lon_col.strip() or None, max_bytes=MAX_UPLOAD_BYTES,
                                          wrap_longitudes=bool(wrap),
                                          progress=lambda f, m: bar.progress(min(max(f, 0.0), 1.0), text=m))
                      if file is not None else uploads.held_points())
            loaded = uploads.frame(points, bounds, rule, float(epsilon0), suggested[0] if suggested else None,
                                   state.SUGGEST_SIDE_KM)
        except datasets.NeedsBounds as exc:
            bar.empty()
            ss["upload_suggestion"] = uploads.suggestion(exc.points, state.SUGGEST_SIDE_KM) + (exc.points.lon.size,)
            ss["upload_message"] = ("bounds", (exc.points.filename, f"{exc}"))
        except LdpvizInputError as exc:
            bar.empty()
            name = file.name if file is not None else (points.filename if points is not None else "the file")
            if bounds is not None and points is not None and "inside the bbox" in str(exc):
                # the box holds none of the rows (often the previous file's box): offer the file's own box
                ss["upload_suggestion"] = uploads.suggestion(points, state.SUGGEST_SIDE_KM) + (points.lon.size,)
                ss["upload_message"] = ("bounds", (name, f"The bounds {bbox_text(bounds)} hold none of the rows of "
                                                         f"{name}. {exc}"))
            else:
                ss["upload_message"] = ("error", f"**{name} could not be used:** {exc}\n\nThe previous data "
                                                  f"({controls.dataset_label(cfg['dataset'])}) stays selected.")
        else:
            bar.empty()
            kind_, text_ = upload_verdict(loaded)
            if ss.pop("upload_bounds_cleared", None):
                text_ = "The bounds typed for the previous file were cleared for this one. " + text_
            ss["upload_message"] = (kind_, text_)
            session.set_and_rerun(dataset=loaded.name, region=next(iter(loaded.presets)))
kind, message = ss.get("upload_message", (None, None))
if kind == "bounds":      # a step, not an error: the file only needs a box
    box, inside, total = ss.get("upload_suggestion") or (None, 0, 0)
    uploads.bounds_step(st, filename=message[0], why=message[1], box=box, inside=inside, total=total,
                        key="fix:bounds", field="Bounds W, S, E, N",
                        on_accept=lambda text: session.cfg().update(upload_bounds=text))
    st.caption(f"Until then the previous data ({controls.dataset_label(cfg['dataset'])}) stays selected.")
elif kind:
    {"error": st.error, "warning": st.warning, "success": st.success}[kind](
        message, icon={"error": ":material/error:", "warning": ":material/warning:",
                       "success": ":material/check_circle:"}[kind])

data = controls.data_controls(cfg, show_users=False)
basemap = controls.map_controls(cfg)
session.sync_url(cfg)
if data is None:
    st.stop()

report = data.dataset.report
if kind in ("error", "bounds"):      # the last upload failed: no report of the previous file under the new name
    st.subheader("Validation report")
    st.caption(f"None for the file that could not be used (see above). The selected data is still "
               f"{controls.dataset_label(data.name)}.")
elif report is not None:
    st.subheader("Validation report")
    k1, k2, k3 = st.columns(3)
    k1.metric("Rows read", f"{report.rows_read:,}", help=explain.readout_help("rows_read"))
    k2.metric("Rows kept", f"{report.rows_kept:,}", help=explain.readout_help("rows_kept"))
    k3.metric("Rows dropped", f"{report.rows_read - report.rows_kept:,}", help=explain.readout_help("rows_dropped"))
    st.caption(report.summary())
    rows = ([{"what happened": "dropped", "reason": r, "rows": n} for r, n in report.dropped.items() if n]
            + [{"what happened": "kept, changed", "reason": r, "rows": n}
               for r, n in (getattr(report, "changed", None) or {}).items() if n])
    if rows:
        st.dataframe(pd.DataFrame(rows), hide_index=True)
else:
    st.subheader(data.dataset.label)
    st.caption(data.dataset.description)

with guard("the preview"):
    st.subheader("Preview")
    region = data.region
    grid = Grid(region, PREVIEW_SIDE)
    binned = grid.bin_lonlat(data.dataset.lon, data.dataset.lat)
    density = grid.histogram(binned.cells) / max(len(binned.cells), 1)
    px = ui.map_size("full", region)                     # a full-width map, framed to the column (not a thumbnail)
    deck = viz.density_deck(grid, density, basemap=basemap, **px)
    saved = st.session_state["saved_regions"].get(data.name, {})
    outlines = [{"path": r.outline_lonlat(), "name": n} for n, r in {**data.dataset.presets, **saved}.items()
                if r != region]
    deck.layers.append(pdk.Layer("PathLayer", outlines, get_path="path", get_color=[0, 90, 200, 200],
                                 width_min_pixels=2, pickable=True))
    st.pydeck_chart(deck, height=px["height"], key="map:preview")
    st.caption(f"Region '{region.name or 'custom'}': {explain.plural(len(binned.cells), 'point')} inside, "
               f"{binned.n_outside:,} outside. Blue outlines: the dataset's other regions. "
               + controls.basemap_caption(basemap))
    suggest_grid(len(binned.cells), int(cfg["grid_side"]))

    st.subheader("Save a region")
    st.markdown("Type the square you want to study; it joins the Region list in the sidebar on every page.")
    with st.form("region"):
        c1, c2, c3, c4 = st.columns(4)
        rname = c1.text_input("Name", "My area")
        lon = c2.number_input("Centre longitude", -180.0, 180.0, float(region.center_lon), format="%.5f")
        lat = c3.number_input("Centre latitude", -85.0, 85.0, float(region.center_lat), format="%.5f")
        half_km = region.side_m / 2000            # a square half the region's side, to 3 significant digits
        decimals = max(0, min(3, 2 - int(np.floor(np.log10(max(half_km, 0.01))))))
        side_km = c4.number_input("Side (km)", 0.01, MAX_REGION_SIDE_M / 1000, round(half_km, decimals),
                                  format=f"%.{decimals}f")
        save = st.form_submit_button("Save region")
    if save:
        name = rname.strip()
        if not name:
            st.error("Give the region a name.")
        else:
            try:
                new = Region(float(lon), float(lat), float(side_km) * 1000, name)
            except LdpvizInputError as exc:
                st.error(f"**This region cannot be saved:** {exc}")
            else:
                st.session_state["saved_regions"].setdefault(data.name, {})[name] = new
                session.set_and_rerun(region=name)   # selected on every page; the preview above shows it

from ldpviz.app.collected import show_collected_reports  # noqa: E402 (issue 29: the section sits at the end)
show_collected_reports(basemap)
