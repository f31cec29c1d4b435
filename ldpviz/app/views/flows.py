"""Flows: origin-destination flows and navigation with LDP location updates (L-SRR Sec. 4).

True vs estimated OD flows as arcs, the L1 and top-k readouts, the epsilon/2 + epsilon/2 budget
split, and the navigation panel (lambda, theta, lambda x epsilon, routes). Everything is computed
by ldpviz.flows.od / ldpviz.flows.navigation in one cached call; maps come from ldpviz.render.flow_maps.
Page-specific config keys: flows_dataset, flows_region, flows_mechanism, flows_estimator,
flows_grid, flows_theta, flows_cap (epsilon and seed are the shared ones).
"""

from typing import Any

import numpy as np
import pandas as pd
import streamlit as st

from ldpviz.app import controls, session, state, ui, uploads
from ldpviz.app.errors import guard
from ldpviz.data import datasets, trajectories
from ldpviz.decide import explain
from ldpviz.render import flow_maps as flowviz
from ldpviz.flows import navigation, od

THETAS = (0, 10, 20, 40, 60, 120)
#: Caps on location updates per trip, enforced on the phone; 0 means no cap.
CAPS = (0, 1, 2, 3, 5, 10)
NAV_GRID, NAV_TRIPS, NAV_DELAY_S = 16, 60, 20.0


@st.cache_data(max_entries=32, show_spinner="Collecting OD pairs and estimating flows ...")
def compute_flows(dataset: str, region: str, mechanism: str, estimator: str, epsilon: float, grid_side: int,
                  seed: int, theta: float, cap: int = 0,
                  _trips: trajectories.Trajectories | None = None) -> dict[str, Any]:
    """One OD run and one navigation simulation (the only computation on this page). ``_trips``: an uploaded
    trips file (its name, which carries a content fingerprint, keys the cache)."""
    source_data: Any = _trips if _trips is not None else dataset
    pairs, reg, source = od.load_od_pairs(source_data, region, None, seed)
    flows = od.run_od(pairs.origin_lon, pairs.origin_lat, pairs.dest_lon, pairs.dest_lat, reg, grid_side,
                      mechanism, epsilon, estimator=estimator, seed=seed, left_out=pairs.left_out,
                      person=pairs.person)
    nav = navigation.navigation_for_dataset(source_data, mechanism, epsilon, theta, NAV_GRID, region=region,
                                            n_trips=NAV_TRIPS, seed=seed, delay_s=NAV_DELAY_S,
                                            max_updates=cap or None)
    return {"flows": flows, "source": source, "nav": nav}


def source_label(name: str) -> str:
    """A readable name for a trips source: an upload, a bundled trajectory set, or points with synthetic trips."""
    if uploads.trip_label(name):
        return uploads.trip_label(name)
    if name in trajectories.names():
        return f"{trajectories.load(name).label} (real trips)"
    return f"{datasets.label(name)} (points; trips drawn by a gravity model)"


def presets_of(name: str) -> dict[str, Any]:
    held = uploads.trip_uploads().get(name)
    if held is not None:
        return held.presets
    return (trajectories.load(name) if name in trajectories.names() else datasets.load(name)).presets


def flow_csv(grid: Any, true: Any, estimate: Any) -> str:
    """Every OD pair with a true or estimated share (row = origin cell), largest true share first, as CSV."""
    true, estimate = np.asarray(true, dtype=float), np.asarray(estimate, dtype=float)
    origin, destination = np.nonzero((true > 0) | (estimate != 0))
    lon, lat = grid.cell_centers_lonlat()
    table = pd.DataFrame({"origin_cell": origin, "destination_cell": destination,
                          "origin_lon": lon[origin], "origin_lat": lat[origin],
                          "destination_lon": lon[destination], "destination_lat": lat[destination],
                          "true_share": true[origin, destination],
                          "estimated_share": estimate[origin, destination]})
    table = table.sort_values(["true_share", "estimated_share"], ascending=False, kind="stable")
    return table.to_csv(index=False, float_format="%.10g")


cfg = session.setup_page("Flows")
st.title("Flows: where people go, collected privately")
st.markdown("Each trip reports its **origin** and its **destination** separately, each with half the budget "
            "(ε/2 + ε/2 = ε per trip, L-SRR Sec. 4.1). The server pairs the two reports and estimates how many "
            "trips go from every cell to every other cell. Below, the navigation panel: drivers send their "
            "location only when they run late, and each update costs ε (L-SRR Sec. 4.2).")

session.trip_upload_step(cfg, "flows", "flows_dataset", "flows_region")

st.sidebar.header("Trips")
names = trajectories.names() + list(uploads.trip_uploads()) + datasets.names()
cfg.setdefault("flows_dataset", names[0])
dataset = session.bind(cfg, "flows_dataset", st.sidebar.selectbox, "Dataset", names, valid=names,
                       format_func=source_label,
                       help="Trajectory data give real trips (your own file: upload it above); for point data "
                            "the trips are synthetic (a gravity model on the points).")
presets = list(presets_of(dataset))
cfg.setdefault("flows_region", presets[0])
region = session.bind(cfg, "flows_region", st.sidebar.selectbox, "Region", presets, valid=presets)
region_use = presets_of(dataset)[region].data_use
if region_use:
    st.sidebar.caption(f"Region '{region}': {region_use}.")
st.sidebar.header("Collection")
eps_options = sorted(set(state.EPSILON_OPTIONS) | {float(cfg["epsilon"])})
session.bind(cfg, "epsilon", st.sidebar.select_slider, "Privacy budget ε per trip", eps_options, valid=eps_options,
             format_func=lambda v: f"{v:g}", help="Split in two: ε/2 for the origin, ε/2 for the destination. "
                                                  "In the navigation panel: ε per location update.")
mechs = list(od.OD_MECHANISMS)
cfg.setdefault("flows_mechanism", "srr")
mechanism = session.bind(cfg, "flows_mechanism", st.sidebar.selectbox, "Mechanism (both ends)", mechs, valid=mechs)
cfg.setdefault("flows_estimator", "lasso")
estimator = session.bind(cfg, "flows_estimator", st.sidebar.selectbox, "Estimator", list(od.ESTIMATORS),
                         valid=list(od.ESTIMATORS),
                         help="lasso: the paper's sparse regression; em: maximum likelihood; unbiased: the "
                              "mechanisms' own unbiased estimate (a baseline).")
grid_side = controls.page_grid(cfg, "flows_grid", state.FLOWS_GRIDS, state.FLOWS_GRID_FALLBACK, "OD grid side d",
                              help="d × d cells, so (d × d)² OD pairs: at most 16 here. At d = 16 (65,536 pairs) "
                                   "the Lasso estimator takes seconds (at most ~10 s for 1,000,000 trips on a "
                                   "loaded machine).")
st.sidebar.header("Navigation")
cfg.setdefault("flows_theta", state.SETTING["flows_theta"].default)
theta = session.bind(cfg, "flows_theta", st.sidebar.select_slider, "Delay threshold θ (seconds)", THETAS,
                     valid=THETAS, help="A driver sends a location update when running θ seconds late.")
cfg.setdefault("flows_cap", state.SETTING["flows_cap"].default)
cap = int(session.bind(cfg, "flows_cap", st.sidebar.select_slider, "Cap on updates per trip", CAPS, valid=CAPS,
                       format_func=lambda v: "none" if v == 0 else str(v),
                       help="Enforced on the phone: after this many updates a trip keeps its plan and sends "
                            "nothing more, so no trip exceeds cap × ε."))
basemap = controls.map_controls(cfg)
session.sync_url(cfg)

eps = float(cfg["epsilon"])
with guard("the OD flows"):
    out = compute_flows(dataset, region, mechanism, estimator, eps, grid_side, int(cfg["seed"]), float(theta), cap,
                        _trips=uploads.trip_uploads().get(dataset))
    res, nav = out["flows"], out["nav"]
    s = res.summary()
    c1, c2, c3, c4 = st.columns(4)
    c1.metric("Trips", f"{s['n_users']:,}", help=explain.readout_help("trips"))
    c2.metric("Budget split", f"{eps / 2:g} + {eps / 2:g}",
              help=explain.readout_help("budget_split", "Here ε/2 for the origin, ε/2 for the destination."))
    c3.metric("L1 over OD pairs", f"{s['l1']:.3f}", help=explain.readout_help("od_l1"))
    c4.metric(f"Top-{s['top_k']} precision", f"{s['top_k_precision']:.0%}",
              help=explain.readout_help("top_k_precision", f"Here k = {s['top_k']}."))
    flat = od.flat_l1(res.true)
    if s["l1"] >= flat:       # the noise floor dominates: say so, with the numbers that show it
        st.warning(f"**This estimate says nothing yet.** With {s['n_users']:,} trips at ε = {eps:g} over "
                   f"{res.true.size:,} OD pairs ({res.grid.side} × {res.grid.side} cells), its L1 ({s['l1']:.3f}) is "
                   f"no better than spreading the trips evenly over every pair ({flat:.3f}): the noise dominates. "
                   "More trips, a larger ε or a coarser OD grid would help.", icon=":material/blur_on:")
    st.caption(f"Guarantee: {res.guarantee}")
    if region_use and not presets_of(dataset)[region].epsilon_spent:    # a paid region is in the ledger
        st.caption(f"Not covered by ε: the region '{region}' was {region_use}.")
    ui.show_ledger(res.ledger, "one OD collection")
    st.caption(f"Trips: {out['source']}. " + "; ".join(f"left out {n:,} {why}" for why, n in s["left_out"].items()))
    left, right = st.columns(2)
    left.subheader("True flows")
    px = ui.map_size("half", res.grid.region)
    left.pydeck_chart(flowviz.arc_deck(res.grid, res.true, colour=flowviz.TRUE_COLOUR, basemap=basemap, **px),
                      height=px["height"])
    right.subheader(f"Estimated flows ({mechanism} + {estimator})")
    right.pydeck_chart(flowviz.arc_deck(res.grid, res.estimate, colour=flowviz.ESTIMATE_COLOUR, basemap=basemap,
                                        **px), height=px["height"])
    with st.expander(f"The {s['top_k']} largest true flows"):
        st.dataframe(flowviz.flow_table(res.grid, res.true, res.estimate, s["top_k"]), hide_index=True)
    st.download_button("Flow table (CSV)", flow_csv(res.grid, res.true, res.estimate), "ldpviz-flows.csv",
                       "text/csv", help="Every OD pair with a true or estimated share; cells numbered row by row "
                                        "from the south-west corner (the numbering of the grid exports).",
                                        on_click="ignore")

    st.header("Navigation with location updates")
    n = nav.summary()
    c1, c2, c3, c4 = st.columns(4)
    c1.metric("Updates per trip λ", f"{n['mean_updates']:.2f}",
              help=explain.readout_help("updates_per_trip", f"Largest: {n['max_updates']}."))
    c2.metric("Total privacy λ·ε (worst trip)", f"{n['trip_total_text']} (mean {n['mean_trip_total_text']})",
              help=explain.readout_help("trip_total_epsilon", "The worst trip's total is the guarantee; the mean "
                                                              "is what an average trip spends."))
    c3.metric("Route difference", f"{n['rel_levenshtein']:.1%}", help=explain.readout_help("route_difference"))
    extra_s = n["trip_time_deviation_s"]
    c4.metric("Extra trip time", f"{extra_s:,.0f} s",
              help=explain.readout_help("extra_trip_time", f"Here {100 * n['trip_time_deviation_rel']:.2g}% of "
                                                           "the fastest route's time on true congestion."))
    st.caption(f"Extra trip time {extra_s:,.0f} s is {100 * n['trip_time_deviation_rel']:.2g}% of an average trip "
               f"(mean over trips of extra time / fastest time): each {nav.grid.cell_m / 1000:,.3g} km cell takes "
               f"{nav.settings['cell_s'] / 60:,.3g} min at {nav.settings['speed_mps']:g} m/s and a congested one "
               f"+{NAV_DELAY_S:g} s.")
    st.caption(f"Guarantee: {nav.guarantee} {nav.settings['region']} Simulation: {NAV_TRIPS} trips on a {NAV_GRID} × "
               f"{NAV_GRID} road grid, θ = {theta} s, +{NAV_DELAY_S:g} s per congested cell.")
    ui.show_ledger(nav.ledger, "navigation (traffic reports and location updates)")
    if nav.example:
        full = ui.map_size("full", nav.grid.region)
        st.pydeck_chart(flowviz.route_deck(nav.grid, nav.congestion_true, nav.example, basemap=basemap, **full),
                        height=full["height"])
        same = nav.example["driven"] == nav.example["best"]
        congested = int(nav.congestion_true.sum())
        st.caption("One trip (the first simulated): "
                   + ("the route driven with private updates is the fastest route on true congestion, drawn in "
                      "blue over the red one" if same else
                      "blue = the fastest route on true congestion, red = the route driven with private updates")
                   + (f"; the {congested} orange cells are truly congested (more than twice the average users)."
                      if congested else "; no cell is congested on the true data."))
