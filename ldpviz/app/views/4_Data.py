"""Data: upload CSV/Parquet, see what was kept and dropped, preview on a map, save regions.

An upload is kept in this server's memory only (ldpviz.app.uploads), never written to disk or sent anywhere.
"""

import numpy as np
import pandas as pd
import pydeck as pdk
import streamlit as st

from ldpviz.app import controls, session, state, ui, uploads
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
        st.warning(f"Only {explain.plural(n_users, 'person', 'people')} {'is' if n_users == 1 else 'are'} in this region: too few for any grid (each cell would hold fewer "
                   f"than {MIN_USERS_PER_CELL} on average), so every map will be mostly noise. Choose a larger "
                   "region or add data.", icon=":material/grid_off:")
        return
    best = max(fitting)
    st.warning(f"{n_users:,} people in this region over {side} × {side} = {side * side:,} cells is "
               f"{n_users / side ** 2:.1f} per cell on average; with fewer than {MIN_USERS_PER_CELL} per cell the "
               f"noise drowns the map. d = {best} gives {n_users / best ** 2:.0f} per cell.",
               icon=":material/grid_on:")
    st.button(f"Use d = {best}", on_click=lambda: session.cfg().update(grid_side=best), key="fix:grid")


def upload_verdict(loaded: datasets.Dataset) -> tuple[str, str]:
    """('success' | 'warning', message) for a loaded file: a large loss of rows, or any changed row, is a warning
    that says what to do."""
    report = loaded.report
    lost = report.rows_read - report.rows_kept if report else 0
    share = lost / report.rows_read if report and report.rows_read else 0.0
    kept = f"Loaded **{loaded.label}**: {explain.plural(loaded.n, 'point')}"
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
            "A reload, or a link opened on this server, finds it again until the server stops (at most a day).")

file = st.file_uploader("CSV or Parquet file", type=["csv", "txt", "tsv", "gz", "parquet", "pq"], key="w:upload")
c1, c2 = st.columns(2)
lat_col = session.bind(cfg, "lat_column", c1.text_input, "Latitude column (blank = find it)")
lon_col = session.bind(cfg, "lon_column", c2.text_input, "Longitude column (blank = find it)")
wrap = session.bind(cfg, "wrap_lon", st.checkbox, "Wrap longitudes past 180° into [-180°, 180°] (subtract 360°)",
                    help="Data across the antimeridian (near Fiji, Kamchatka, the Aleutians) often writes 172° W as "
                         "188°. Wrapped, such rows are kept and counted as changed; unwrapped, they are dropped and "
                         "counted. Either way the report below says how many.")
ss = st.session_state
if file is not None:
    attempt = (getattr(file, "file_id", file.name), lat_col.strip(), lon_col.strip(), bool(wrap))
    if ss.get("upload_attempt") != attempt:
        ss["upload_attempt"] = attempt
        bar = st.progress(0.0, text=f"Reading {file.name} ...")
        try:
            loaded = datasets.load_file(file, filename=file.name, lat_column=lat_col.strip() or None,
                                        lon_column=lon_col.strip() or None, max_bytes=MAX_UPLOAD_BYTES,
                                        wrap_longitudes=bool(wrap),
                                        progress=lambda f, m: bar.progress(min(max(f, 0.0), 1.0), text=m))
        except LdpvizInputError as exc:
            bar.empty()
            ss["upload_message"] = ("error", f"**{file.name} could not be used:** {exc}\n\nThe previous data "
                                              f"({controls.dataset_label(cfg['dataset'])}) stays selected.")
        else:
            bar.empty()
            loaded = uploads.keep(loaded)
            ss["upload_message"] = upload_verdict(loaded)
            session.set_and_rerun(dataset=loaded.name, region=next(iter(loaded.presets)))
kind, message = ss.get("upload_message", (None, None))
if kind:
    {"error": st.error, "warning": st.warning, "success": st.success}[kind](
        message, icon={"error": ":material/error:", "warning": ":material/warning:",
                       "success": ":material/check_circle:"}[kind])

data = session.data_controls(cfg, show_users=False)
basemap = session.map_controls(cfg)
session.sync_url(cfg)
if data is None:
    st.stop()

report = data.dataset.report
if kind == "error":      # the last upload failed: no report of the previous file under the new file's name
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

with session.guard("the preview"):
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
    st.caption(f"Region '{region.name or 'custom'}': {explain.plural(len(binned.cells), 'point')} inside, {binned.n_outside:,} "
               f"outside. Blue outlines: the dataset's other regions. " + session.basemap_caption(basemap))
    suggest_grid(len(binned.cells), int(cfg["grid_side"]))

    st.subheader("Save a region")
    st.markdown("Type the square you want to study; it joins the Region list in the sidebar on every page.")
    with st.form("region"):
        c1, c2, c3, c4 = st.columns(4)
        rname = c1.text_input("Name", "My area")
        lon = c2.number_input("Centre longitude", -180.0, 180.0, float(region.center_lon), format="%.5f")
        lat = c3.number_input("Centre latitude", -85.0, 85.0, float(region.center_lat), format="%.5f")
        side_km = c4.number_input("Side (km)", 0.01, MAX_REGION_SIDE_M / 1000, round(region.side_m / 2000, 3),
                                  format="%.3f")
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
