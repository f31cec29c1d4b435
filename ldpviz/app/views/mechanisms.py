"""Mechanisms: what each one does, its formula and reference, its channel, and one user's journey."""

import inspect

import numpy as np
import pandas as pd
import streamlit as st

from ldpviz.app import compute, controls, session, ui
from ldpviz.app.errors import guard
from ldpviz.evidence import citations
from ldpviz.decide import explain
from ldpviz.decide.cell_distances import mean_distance_from_square
from ldpviz import mechanisms
from ldpviz.render import maps as viz
from ldpviz.geo.domain import Grid
from ldpviz.errors import LdpvizInputError

CHANNEL_SIDES = (4, 6, 8, 10, 12, 16, 20, 24, 32)

cfg = session.setup_page("Mechanisms")
st.title("Mechanisms: how each one randomises a location")

data = controls.data_controls(cfg, show_users=False)
controls.privacy_controls(cfg)
st.sidebar.header("Mechanism")
name = controls.mechanism_picker(cfg)
cls = mechanisms.get(name)
sides = sorted(set(CHANNEL_SIDES) | {int(cfg.get("channel_side") or 12)})
side = session.bind(cfg, "channel_side", st.sidebar.select_slider, "Grid side for the channel pictures", sides,
                    valid=sides, help="Channels are drawn on a small grid (up to 32 × 32) so they stay readable.")
grid = Grid(data.region, int(side)) if data is not None else None
with guard("the mechanism parameters"):
    params = controls.param_controls(cfg, name, grid)
    controls.show_resolved_defaults()
basemap = controls.map_controls(cfg)
session.sync_url(cfg)

row = next(r for r in mechanisms.describe() if r["name"] == name)
st.header(cls.label)
st.markdown(f"**{controls.model_tag(row['privacy_model'])}** · {row['family']}")
if row["summary"]:
    st.markdown(row["summary"])
st.markdown(f"**Reference:** {citations.readable(row['reference'])}")
with st.expander("How it works: the formulas (from the implementation's documentation)", expanded=False):
    st.code(inspect.cleandoc(cls.__doc__ or "No documentation."), language="text")
if row["params"]:
    st.markdown("**Parameters**")
    st.dataframe(pd.DataFrame([{"name": p["name"], "type": p["type"],
                                "default": "computed" if p["default"] is None else str(p["default"]),
                                "range / choices": (", ".join(map(str, p["choices"])) if p["choices"] else
                                                    f"{p['minimum'] if p['minimum'] is not None else ''} … "
                                                    f"{p['maximum'] if p['maximum'] is not None else ''}"),
                                "meaning": p["help"]} for p in row["params"]]), hide_index=True)

if data is None:
    st.stop()

with guard(f"the channel of {cls.label}"):
    try:
        mech = mechanisms.create(name, grid, float(cfg["epsilon"]), **params)
    except LdpvizInputError:   # a grid this mechanism refuses (dp-heatmap: not a power of two)
        if cls.has_channel:
            raise
        mech = None
    if mech is not None:
        st.info(f"Guarantee: {mech.guarantee()}.", icon=":material/shield:")
    if mech is None or not mech.has_channel:   # the instance decides: L-SRR's channel needs the public domain
        if cls.privacy_model == mechanisms.CENTRAL_DP:
            why = ("it is central DP (trusted aggregator): users send exact locations to a trusted server, which "
                   "adds the noise to the published map, so no single user's report exists")
        elif not (mech or cls).has_client:
            why = ("it runs as a whole protocol over all users (several rounds, a location domain built from the "
                   "users' data, or public randomness drawn for each collection), so there is no single-user "
                   "journey to show")
        else:
            why = ("its reports (hashes or bit vectors) are too many to list as a cell-to-report table, so there "
                   "is no channel picture or posterior to draw")
        st.warning(f"{cls.label} has no explicit per-user channel to draw here: {why}. Its effect on a whole map "
                   "is on the Explore page; the Privacy audit page lists its guarantee.", icon=":material/info:")
        st.stop()

    P = compute.cached_channel(name, grid.side, grid.region, float(cfg["epsilon"]), tuple(sorted(params.items())))
    if P.ndim != 2 or P.shape[1] != grid.n_cells:
        st.error(f"The channel of {cls.label} has shape {P.shape}, expected (reports, {grid.n_cells}); it "
                 "cannot be drawn.")
        st.stop()

    st.subheader("One user's journey")
    st.markdown("Pick where the user really is (sliders, or click a coloured cell on the first map). Their phone "
                "draws one report from the channel; the server, knowing the channel and the population's "
                "density, works out where the user probably was (Bayes' rule).")
    cell = cfg.get("cell") or (grid.side // 2, grid.side // 2)
    cfg["cell"] = cell = (min(int(cell[0]), grid.side - 1), min(int(cell[1]), grid.side - 1))

    def store_axis(axis: int):
        def store(value: int) -> None:
            old = session.cfg()["cell"]
            session.cfg()["cell"] = (int(value), old[1]) if axis == 0 else (old[0], int(value))
        return store

    c1, c2, c3 = st.columns(3)
    row_i = c1.slider("Row (from the south)", 0, grid.side - 1, **session.keep("w:cell_row", cell[0], store_axis(0)))
    col_i = c2.slider("Column (from the west)", 0, grid.side - 1, **session.keep("w:cell_col", cell[1], store_axis(1)))
    draw = session.bind(cfg, "draw", c3.number_input, "Draw number", 0, 10_000,
                        help="Each number is a different random report from the same channel.")
    session.sync_url(cfg)
    x = int(row_i) * grid.side + int(col_i)

    hist = grid.histogram(grid.bin_lonlat(data.dataset.lon, data.dataset.lat).cells).ravel()
    prior = hist / hist.sum() if hist.sum() > 0 else np.full(grid.n_cells, 1.0 / grid.n_cells)
    column = P[:, x]
    rng = np.random.default_rng([int(cfg["seed"]), x, int(draw)])
    y = int(rng.choice(len(column), p=column / column.sum()))
    joint = P[y, :] * prior
    posterior = joint / joint.sum() if joint.sum() > 0 else np.full(grid.n_cells, 1.0 / grid.n_cells)
    out_grid = viz.output_grid(grid, P.shape[0])

    RED, BLUE = [200, 0, 0, 255], [0, 70, 200, 255]
    px = ui.map_size("third", grid.region)
    m1, m2, m3 = st.columns(3)
    with m1:
        st.markdown("**1 · True location** (red), over the population density")
        event = st.pydeck_chart(viz.column_deck(grid, prior, marks={x: RED}, label="share", basemap=basemap, **px),
                                height=px["height"], key="map:prior", on_select="rerun", selection_mode="single-object")
    with m2:
        st.markdown("**2 · The channel P(report | true cell)** and the report sent (blue)")
        if out_grid is not None:
            marks = {x + 0: RED} if out_grid is grid else {}
            st.pydeck_chart(viz.column_deck(out_grid, column, marks={**marks, y: BLUE}, frame=grid, basemap=basemap,
                                            **px), height=px["height"], key="map:channel")
            if out_grid is not grid:
                st.caption(f"Reports live on a larger {out_grid.side} × {out_grid.side} grid around the region "
                           "(blue outline).")
        else:
            st.plotly_chart(viz.channel_bar_figure(column, {y: "report"}), key="fig:channel")
            st.caption(f"{P.shape[0]} possible reports; they are not map cells, so they are drawn as bars.")
    with m3:
        st.markdown("**3 · The server's posterior** over where the user was (true cell in red)")
        st.pydeck_chart(viz.column_deck(grid, posterior, marks={x: RED}, label="posterior", basemap=basemap, **px),
                        height=px["height"],
                        key="map:posterior")
    # from a position anywhere in the true cell to each guessed centre: the attacker's one way of measuring (issue 27)
    rows, cols = np.divmod(np.arange(grid.n_cells), grid.side)
    tr, tc = divmod(x, grid.side)
    dist = mean_distance_from_square((rows - tr).astype(float), (cols - tc).astype(float)) * grid.cell_m
    best = int(np.argmax(posterior))
    k1, k2, k3, k4 = st.columns(4)
    k1.metric("Posterior on the true cell", f"{posterior[x]:.1%}",
              help=explain.readout_help("posterior_true_cell", f"Prior share of that cell: {prior[x]:.1%}."))
    k2.metric("Attacker's best guess is off by", ui.fmt_metres(float(dist[best])),
              help=explain.readout_help("guess_error_m"))
    k3.metric("Expected error of a posterior guess", ui.fmt_metres(float(posterior @ dist)),
              help=explain.readout_help("guess_error_m", "Here averaged over the server's posterior for this report: "
                                                         "the distance a guess drawn from it is off by."))
    ratio = column.max() / column[column > 0].min() if np.any(column > 0) else np.nan
    k4.metric("Max / min report probability", explain.number(float(ratio)),
              help=explain.readout_help("report_ratio",
                                        f"Here e^ε = {explain.number(float(np.exp(float(cfg['epsilon']))))}."))

    pop_err, uni_err, why = ui.attacker_errors_m(name, grid, float(cfg["epsilon"]), params,
                                                 hist.reshape(grid.side, grid.side))
    if pop_err is not None:
        a1, a2 = st.columns(2)
        a1.metric("Attacker's expected error, over everyone (population prior)", ui.fmt_metres(pop_err),
                  help=explain.readout_help("attacker_error_m", "The data set's own density stands in for a census. "
                                            "The same attacker as Explore's sentence and the Privacy audit table."))
        a2.metric("… assuming people could be anywhere (uniform prior)", ui.fmt_metres(uni_err),
                  help=explain.readout_help("attacker_error_m", "This attacker assumes a uniform prior instead "
                                            "(people could be anywhere), so it guesses worse where people cluster."))
    else:
        st.caption(f"Attacker's expected error over everyone: not computed ({why}).")

    picked = viz.picked_cell(event)
    if picked != st.session_state.get("last_pick"):   # a new click (a selection persists across runs)
        st.session_state["last_pick"] = picked
        if picked is not None and picked != x:
            session.set_and_rerun(cell=(picked // grid.side, picked % grid.side))
