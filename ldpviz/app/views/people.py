"""People: many locations per person (dp-heatmaps paper; DAM paper App. D).

(a) A user-level central-DP heatmap: every person's points normalised to weight 1, then
dp-heatmap (Alg. 1-2) or a Laplace baseline, optionally in the shuffle model (App. F), beside
the true per-person-normalised density, with W2 and EMD readouts; (b) DP k-median centres
from the DP coreset (App. A) as markers on that map; (c) DAM and LDPTrace on the points of the
trajectories (App. D) with their privacy units. Everything is computed by ldpviz.people.user_heatmaps
and ldpviz.people.trajectory_mechanisms in one cached call.
Page-specific config keys (ldpviz.app.state.PEOPLE_KEYS): people_source, people_region,
people_method, people_grid, people_shuffle, people_k (epsilon and seed are the shared ones).
"""

from typing import Any

import numpy as np
import pandas as pd
import pydeck as pdk
import streamlit as st

from ldpviz.app import controls, session, state, ui, uploads
from ldpviz.app.errors import guard
from ldpviz.app.ui import fmt_metres
from ldpviz.data import datasets, trajectories, trajectory_generator as trajgen
from ldpviz.decide import explain
from ldpviz.render import export, maps as viz
from ldpviz import metrics
from ldpviz.people import trajectory_mechanisms as tm
from ldpviz.people import user_heatmaps as uh
from ldpviz.geo.domain import Grid
from ldpviz.flows import od

#: DAM App. D's generator over the Minneapolis stops: this many synthetic people (2 to 200 points each).
WALKS = 300
CENTRE_COLOUR = [255, 140, 0, 230]
TRAJECTORY_UNITS = {
    "dam-points": "one location: a person with L points is protected at L·ε (sequential composition)",
    "dam-sample": "one trajectory: each person reports one of their points, chosen at random, at ε",
    "ldptrace": "one trajectory: the length, start, end and moves share ε",
}


def presets_of(source: str) -> dict[str, Any]:
    held = uploads.trip_uploads().get(source)
    if held is not None:
        return held.presets
    if source in trajectories.names():
        return trajectories.load(source).presets
    return datasets.load("minneapolis-stops").presets


def most_trips(source: str, trips: trajectories.Trajectories | None = None) -> int:
    """The most trips one person makes in the source (``trips``: an uploaded file; the synthetic walks: one each)."""
    if trips is not None or source in trajectories.names():
        found = od.trips_per_person((trips if trips is not None else trajectories.load(source)).trip_person)
        return found[0] if found else 1
    return 1


def per_person_line(source: str, trips: trajectories.Trajectories | None = None) -> str:
    """How this page counts a person: it joins a person's trips into one sequence (totals: the ledgers)."""
    k = most_trips(source, trips)
    return (f"Per person: this page joins each person's trips into one trajectory (the most trips by one person "
            f"here is {k}), so 'one trajectory' is one person; each row's total per person is the accountant's "
            "ledger (above). Run per trip instead, a person with k trips would pay k times.")


def source_label(source: str) -> str:
    if uploads.trip_label(source):
        return uploads.trip_label(source)
    if source == "minneapolis-walks":
        return "Minneapolis random walks (DAM App. D)"
    return trajectories.load(source).label


def people_frame(source: str, seed: int, trips: trajectories.Trajectories | None = None) -> tuple[pd.DataFrame, str]:
    """A ``person, seq, lon, lat`` table of the chosen source (``trips``: an uploaded file) and a sentence on where
    it comes from."""
    if trips is not None or source in trajectories.names():
        t = trips if trips is not None else trajectories.load(source)
        frame = pd.DataFrame({"person": t.person, "lon": t.lon, "lat": t.lat})
        frame["seq"] = frame.groupby("person", sort=False).cumcount()
        return frame, t.label
    frame = trajgen.minneapolis_trajectories(seed=seed, n_trajectories=WALKS)
    return frame, (f"{WALKS} synthetic people: DAM App. D's seeded random walk (2 to 200 points each) over the "
                   f"cells of the {frame.attrs.get('source', 'Minneapolis stops')}")


@st.cache_data(max_entries=32, show_spinner="Normalising each person's points and running the mechanisms ...")
def compute_people(source: str, region_name: str, method: str, epsilon: float, side: int, shuffle: bool, k: int,
                   seed: int, _trips: trajectories.Trajectories | None = None) -> dict[str, Any]:
    """The page's only computation: heatmap, k-median centres and the trajectory comparison. ``_trips``: an
    uploaded trips file (its fingerprinted name keys the cache)."""
    frame, label = people_frame(source, seed, _trips)
    grid = Grid((_trips.presets if _trips is not None else presets_of(source))[region_name], side)
    dists = uh.person_distributions(frame, grid)
    true = dists.aggregate() / dists.n_people
    rng = np.random.default_rng(seed)
    result = uh.user_level_heatmap(dists, method, epsilon, rng, shuffle=uh.ShuffleSpec() if shuffle else None)
    flat = np.full_like(true, 1.0 / true.size)      # the zero-information answer: every cell alike
    readouts = {"w2": metrics.w2(true, result.density, cell_m=grid.cell_m),
                "emd": metrics.emd_l1(true, result.density, cell_m=grid.cell_m),
                "w2_flat": metrics.w2(true, flat, cell_m=grid.cell_m)}
    centres = uh.dp_kmedian_centres(dists, grid, k, epsilon, np.random.default_rng([seed, 1]))
    sequences, _ = trajgen.to_cells(frame, grid)
    person_points = tm.person_density(sequences, side)
    lengths = [len(seq) for seq in sequences]
    region = grid.region
    ledgers = {name: tm.trajectory_ledger(name, epsilon, lengths, region) for name in tm.MECHANISMS}
    comparison = []
    for i, name in enumerate(tm.MECHANISMS):
        points_true, est, dropped = tm.run_on_trajectories(frame, grid, name, epsilon,
                                                           np.random.default_rng([seed, 2, i]))
        comparison.append({"mechanism": name,
                           "W2 to the points (km)": metrics.w2(points_true, est.density, cell_m=grid.cell_m) / 1000,
                           "W2 to the person-averaged points (km)": metrics.w2(person_points, est.density,
                                                                              cell_m=grid.cell_m) / 1000,
                           "privacy unit": TRAJECTORY_UNITS[name],
                           "total per person (worst)": ledgers[name].total().text()})
    return {"grid": grid, "true": true, "result": result, "readouts": readouts, "centres": centres,
            "summary": dists.summary(), "label": label, "comparison": pd.DataFrame(comparison),
            "dropped": dropped, "longest": int(dists.points.max()), "ledgers": ledgers,
            "heatmap_ledger": uh.heatmap_ledger(epsilon, region)}


def centre_layer(centres: uh.KMedianResult, grid: Grid) -> pdk.Layer:
    """The k DP centres as markers (radius a third of a cell)."""
    records = [{"lon": float(lon), "lat": float(lat), "centre": i + 1}
               for i, (lon, lat) in enumerate(centres.centres_lonlat)]
    return pdk.Layer("ScatterplotLayer", records, id="kmedian-centres", get_position=["lon", "lat"],
                     get_radius=grid.cell_m / 3, radius_min_pixels=5, get_fill_color=CENTRE_COLOUR,
                     get_line_color=[0, 0, 0, 255], stroked=True, line_width_min_pixels=1, pickable=True)


cfg = session.setup_page("People")
st.title("People: many locations per person")
st.markdown("Here every person contributes **many** locations (a storm's track, a walk through the city). "
            "The heatmap treats each person's points as one distribution of weight 1, so adding or removing "
            "a whole person changes every count by at most 1 (dp-heatmaps paper, Sec. 2.2 and Thm 3.1). "
            "Every guarantee below names what it protects: one location, one trajectory or one person.")

session.trip_upload_step(cfg, "people", "people_source", "people_region")

st.sidebar.header("People")
sources = list(state.PEOPLE_SOURCES) + list(uploads.trip_uploads())
source = session.bind(cfg, "people_source", st.sidebar.selectbox, "Trajectories", sources, valid=sources,
                      format_func=source_label, help="Bundled tracks, DAM App. D's random walks, or your own "
                                                      "trips file (upload it above).")
region_names = list(presets_of(source))
region_name = session.bind(cfg, "people_region", st.sidebar.selectbox, "Region", region_names, valid=region_names)
region_use = presets_of(source)[region_name].data_use
if region_use:
    st.sidebar.caption(f"Region '{region_name}': {region_use}.")
st.sidebar.header("Privacy")
eps_options = sorted(set(state.EPSILON_OPTIONS) | {float(cfg["epsilon"])})
epsilon = float(session.bind(cfg, "epsilon", st.sidebar.select_slider, "Privacy budget ε", eps_options,
                             valid=eps_options, format_func=lambda v: f"{v:g}",
                             help="Per person for the heatmap and the centres; the unit of each trajectory "
                                  "mechanism is stated in its row."))
methods = list(uh.METHODS)
method = session.bind(cfg, "people_method", st.sidebar.selectbox, "Heatmap algorithm", methods, valid=methods,
                      help="dp-heatmap: the paper's Alg. 1-2; laplace: noise on every cell; laplace-top: "
                           "laplace keeping the top 1% cells.")
shuffle = bool(session.bind(cfg, "people_shuffle", st.sidebar.toggle, "Shuffle model (App. F)",
                            disabled=method != "dp-heatmap",
                            help="No trusted aggregator: each person adds a share of the noise and sends "
                                 "split messages through a shuffler. dp-heatmap only."))
if method != "dp-heatmap":
    st.sidebar.caption(f"Shuffle model off: App. F gives the shuffle protocol for dp-heatmap's noisy level sums "
                       f"only; {method} has no shuffled version here, so it runs with a trusted aggregator "
                       "(central DP).")
shuffle = shuffle and method == "dp-heatmap"
side = controls.page_grid(cfg, "people_grid", state.PEOPLE_GRIDS, state.PEOPLE_GRID_FALLBACK,
                          "Heatmap grid side d", help="A power of two (dp-heatmap's pyramid needs one).")
k = int(session.bind(cfg, "people_k", st.sidebar.slider, "k-median centres k", 1, state.PEOPLE_MAX_K,
                     help="DP k-median (App. A): k centres found on the DP coreset."))
basemap = controls.map_controls(cfg)
session.sync_url(cfg)

with guard("the user-level heatmap"):
    out = compute_people(source, region_name, method, epsilon, side, shuffle, k, int(cfg["seed"]),
                         _trips=uploads.trip_uploads().get(source))
    grid, res, centres = out["grid"], out["result"], out["centres"]
    st.caption(f"{out['label']}: {out['summary']} The longest has {out['longest']:,} points.")

    st.header("Heatmap of people (central DP)")
    c1, c2, c3, c4 = st.columns(4)
    c1.metric("People", f"{res.info['people']:,}", help=explain.readout_help("people"))
    c2.metric("Privacy unit", "one person", help=uh.PRIVACY_UNIT)
    c3.metric("W2", fmt_metres(out["readouts"]["w2"]),
              help=explain.readout_help("w2_m", "Here between the true per-person-normalised density and the "
                                                "estimate."))
    c4.metric("EMD", fmt_metres(out["readouts"]["emd"]),
              help=explain.readout_help("emd_l1_m", "The metric of the dp-heatmaps paper."))
    if out["readouts"]["w2"] >= out["readouts"]["w2_flat"]:   # the noise floor dominates: say so, with the numbers
        st.warning(f"**This heatmap says nothing yet.** With {res.info['people']:,} people at ε = {epsilon:g} on "
                   f"{side} × {side} cells, its W2 ({fmt_metres(out['readouts']['w2'])}) is no better than a flat map "
                   f"that spreads everyone evenly ({fmt_metres(out['readouts']['w2_flat'])}): the noise dominates. "
                   "More people, a larger ε or a coarser grid would help.", icon=":material/blur_on:")
    if shuffle:
        s1, s2 = st.columns(2)
        s1.metric("Messages per person", f"{res.info['messages_per_person']:,}",
                  help=explain.readout_help("messages_per_person",
                                            f"Here {res.info['shares_per_coordinate']} shares per coordinate."))
        s2.metric("Bits per person", f"{res.info['bits_per_person']:,}", help=explain.readout_help("bits_per_person"))
    st.caption(f"Guarantee: {res.guarantee}.")
    ui.show_ledger(out["heatmap_ledger"], "the map and the centres")
    if region_use and not presets_of(source)[region_name].epsilon_spent:   # a paid region is in the ledger
        st.caption(f"Not covered by ε: the region '{region_name}' was {region_use}.")
    vmax = float(max(out["true"].max(), res.density.max()))
    left, right = st.columns(2)
    left.subheader("True (each person weight 1)")
    px = ui.map_size("half", grid.region)
    left.pydeck_chart(viz.density_deck(grid, out["true"], vmax, basemap=basemap, **px), height=px["height"])
    right.subheader(f"Estimated ({method}{', shuffle model' if shuffle else ''})")
    deck = viz.density_deck(grid, res.density, vmax, basemap=basemap, **px)
    deck.layers.append(centre_layer(centres, grid))
    right.pydeck_chart(deck, height=px["height"])
    st.html(viz.legend_html(vmax, "share of the people's weight per cell (each person weighs 1 in total)"))
    right.caption(f"Orange: the {k} DP k-median centres (App. A). Guarantee: {centres.guarantee}; they use ε "
                  "again: the ledger above adds both"
                  + (" (the centres are measured centrally, not in the shuffle model)." if shuffle else "."))
    st.download_button("Estimated grid (CSV)", export.grid_csv(grid, {"true_share": out["true"],
                                                                      "estimated_share": res.density}),
                       "ldpviz-people-grid.csv", "text/csv", on_click="ignore")

    st.header("Trajectories: DAM against LDPTrace (DAM paper App. D)")
    st.markdown("Each mechanism estimates the distribution of **all points** of the trajectories; W2 against "
                "the true point distribution. They protect different things: read the privacy unit of each row.")
    st.dataframe(out["comparison"], hide_index=True,
                 column_config={c: st.column_config.NumberColumn(format="%.1f km") for c in
                                ("W2 to the points (km)", "W2 to the person-averaged points (km)")})
    st.caption("'The points': every point counts once (App. D's D_T), what dam-points and LDPTrace estimate. "
               "'Person-averaged': each person's points weigh 1 in total, what dam-sample estimates.")
    for row in out["comparison"].itertuples(index=False):
        st.caption(f"Guarantee of {row.mechanism}: ε = {epsilon:g}-LDP; privacy unit: "
                   f"{TRAJECTORY_UNITS[row.mechanism]}. {out['ledgers'][row.mechanism].sentence()}")
    st.caption(per_person_line(source, uploads.trip_uploads().get(source)))
    dropped = out["dropped"]
    st.caption(f"Points outside the region: {dropped['points_outside']:,}; people without a point inside: "
               f"{dropped['people_without_points']:,} (left out of the comparison, not moved).")
