"""Data: upload CSV/Parquet, see what was kept and dropped, preview on a map, save regions.

An upload is kept in this server's memory only (dashboard.uploads), never written to disk or sent anywhere.
"""

import numpy as np
import pandas as pd
import pydeck as pdk
import streamlit as st

from dashboard import controls, session, uploads
from ldpviz import datasets, viz
from ldpviz.domain import Grid, Region
from ldpviz.errors import LdpvizInputError

PREVIEW_SIDE = 64
#: Dropping more than this share of an upload's rows is a warning, not a success.
DROP_WARNING_SHARE = 0.05


def upload_verdict(loaded: datasets.Dataset) -> tuple[str, str]:
    """('success' | 'warning', message) for a loaded file: a large loss of rows is a warning with what to do."""
    report = loaded.report
    lost = report.rows_read - report.rows_kept if report else 0
    share = lost / report.rows_read if report and report.rows_read else 0.0
    kept = f"Loaded **{loaded.label}**: {loaded.n:,} points"
    if share > DROP_WARNING_SHARE:
        reasons = ", ".join(f"{n:,} {r}" for r, n in report.dropped.items())
        return ("warning", f"{kept}, but **{lost:,} of {report.rows_read:,} rows ({share:.0%}) were dropped** "
                           f"({reasons}). Check the coordinate columns and their units (degrees, WGS 84) below, fix "
                           "the file and upload it again; until then the map shows only the rows kept. It is the "
                           "selected dataset on every page.")
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
ss = st.session_state
if file is not None:
    attempt = (getattr(file, "file_id", file.name), lat_col.strip(), lon_col.strip())
    if ss.get("upload_attempt") != attempt:
        ss["upload_attempt"] = attempt
        try:
            loaded = datasets.load_file(file, filename=file.name, lat_column=lat_col.strip() or None,
                                        lon_column=lon_col.strip() or None)
        except LdpvizInputError as exc:
            ss["upload_message"] = ("error", f"**The file could not be used:** {exc}\n\nThe previous data "
                                              f"({controls.dataset_label(cfg['dataset'])}) stays selected.")
        else:
            loaded = uploads.keep(loaded)
            ss["upload_message"] = upload_verdict(loaded)
            session.set_and_rerun(dataset=loaded.name, region=next(iter(loaded.presets)))
kind, message = ss.get("upload_message", (None, None))
if kind:
    {"error": st.error, "warning": st.warning, "success": st.success}[kind](
        message, icon={"error": ":material/error:", "warning": ":material/warning:",
                       "success": ":material/check_circle:"}[kind])

data = session.data_controls(cfg, show_users=False)
session.sync_url(cfg)
if data is None:
    st.stop()

report = data.dataset.report
if report is not None:
    st.subheader("Validation report")
    k1, k2, k3 = st.columns(3)
    k1.metric("Rows read", f"{report.rows_read:,}")
    k2.metric("Rows kept", f"{report.rows_kept:,}")
    k3.metric("Rows dropped", f"{report.rows_read - report.rows_kept:,}")
    st.caption(report.summary())
    if report.dropped:
        st.dataframe(pd.DataFrame({"reason": list(report.dropped), "rows": list(report.dropped.values())}),
                     hide_index=True)
else:
    st.subheader(data.dataset.label)
    st.caption(data.dataset.description)

with session.guard("the preview"):
    st.subheader("Preview")
    region = data.region
    grid = Grid(region, PREVIEW_SIDE)
    binned = grid.bin_lonlat(data.dataset.lon, data.dataset.lat)
    density = grid.histogram(binned.cells) / max(len(binned.cells), 1)
    deck = viz.density_deck(grid, density, height=460)
    saved = st.session_state["saved_regions"].get(data.name, {})
    outlines = [{"path": r.outline_lonlat(), "name": n} for n, r in {**data.dataset.presets, **saved}.items()
                if r != region]
    deck.layers.append(pdk.Layer("PathLayer", outlines, get_path="path", get_color=[0, 90, 200, 200],
                                 width_min_pixels=2, pickable=True))
    st.pydeck_chart(deck, height=460, key="map:preview")
    st.caption(f"Region '{region.name or 'custom'}': {len(binned.cells):,} points inside, {binned.n_outside:,} "
               f"outside. Blue outlines: the dataset's other regions.")

    st.subheader("Save a region")
    st.markdown("Type the square you want to study; it joins the Region list in the sidebar on every page.")
    with st.form("region"):
        c1, c2, c3, c4 = st.columns(4)
        rname = c1.text_input("Name", "My area")
        lon = c2.number_input("Centre longitude", -180.0, 180.0, float(region.center_lon), format="%.5f")
        lat = c3.number_input("Centre latitude", -85.0, 85.0, float(region.center_lat), format="%.5f")
        side_km = c4.number_input("Side (km)", 0.01, 2000.0, round(region.side_m / 2000, 3), format="%.3f")
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
