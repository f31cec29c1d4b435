"""Flows: origin-destination flows and navigation with LDP location updates (L-SRR Sec. 4).

True vs estimated OD flows as arcs, the L1 and top-k readouts, the epsilon/2 + epsilon/2 budget
split, and the navigation panel (lambda, theta, lambda x epsilon, routes). Everything is computed
by ldpviz.flows.od / ldpviz.flows.navigation in one cached call; maps come from ldpviz.render.flow_maps.
Page-specific config keys: flows_dataset, flows_region, flows_mechanism, flows_estimator,
flows_grid, flows_theta (epsilon and seed are the shared ones).
"""

from typing import Any

import numpy as np
import pandas as pd
import streamlit as st

from ldpviz.app import session, state, ui
from ldpviz.data import datasets, trajectories
from ldpviz.decide import explain
from ldpviz.render import flow_maps as flowviz
from ldpviz.flows import navigation, od

GRID_SIDES = (4, 8, 16)
THETAS = (0, 10, 20, 40, 60, 120)
NAV_GRID, NAV_TRIPS, NAV_DELAY_S = 16, 60, 20.0


@st.cache_data(max_entries=32, show_spinner="Collecting OD pairs and estimating flows ...")
def compute_flows(dataset: str, region: str, mechanism: str, estimator: str, epsilon: float, grid_side: int,
                  seed: int, theta: float) -> dict[str, Any]:
    """One OD run and one navigation simulation (the only computation on this page)."""
    pairs, reg, source = od.load_od_pairs(dataset, region, None, seed)
    flows = od.run_od(pairs.origin_lon, pairs.origin_lat, pairs.dest_lon, pairs.dest_lat, reg, grid_side,
                      mechanism, epsilon, estimator=estimator, seed=seed, left_out=pairs.left_out)
    nav = navigation.navigation_for_dataset(dataset, mechanism, epsilon, theta, NAV_GRID, region=region,
                                            n_trips=NAV_TRIPS, seed=seed, delay_s=NAV_DELAY_S)
    return {"flows": flows, "source": source, "nav": nav}


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

st.sidebar.header("Trips")
names = trajectories.names() + datasets.names()
cfg.setdefault("flows_dataset", names[0])
dataset = session.bind(cfg, "flows_dataset", st.sidebar.selectbox, "Dataset", names, valid=names,
                       help="Trajectory data give real trips; for point data the trips are synthetic (a gravity "
                            "model on the points).")
presets = list((trajectories.load(dataset) if dataset in trajectories.names() else datasets.load(dataset)).presets)
cfg.setdefault("flows_region", presets[0])
region = session.bind(cfg, "flows_region", st.sidebar.selectbox, "Region", presets, valid=presets)
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
cfg.setdefault("flows_grid", 8)
grid_side = int(session.bind(cfg, "flows_grid", st.sidebar.select_slider, "Grid side d", GRID_SIDES,
                             valid=GRID_SIDES, help="d × d cells, so (d × d)² OD pairs. At d = 16 (65,536 pairs) "
                                  "the Lasso estimator takes seconds (docs/od-benchmark.md: at most ~10 s for 1,000,000 trips on a loaded machine)."))
st.sidebar.header("Navigation")
cfg.setdefault("flows_theta", 40)
theta = session.bind(cfg, "flows_theta", st.sidebar.select_slider, "Delay threshold θ (seconds)", THETAS,
                     valid=THETAS, help="A driver sends a location update when running θ seconds late.")
basemap = session.map_controls(cfg)
session.sync_url(cfg)

eps = float(cfg["epsilon"])
with session.guard("the OD flows"):
    out = compute_flows(dataset, region, mechanism, estimator, eps, grid_side, int(cfg["seed"]), float(theta))
    res, nav = out["flows"], out["nav"]
    s = res.summary()
    c1, c2, c3, c4 = st.columns(4)
    c1.metric("Trips", f"{s['n_users']:,}", help=explain.readout_help("trips"))
    c2.metric("Budget split", f"{eps / 2:g} + {eps / 2:g}",
              help=explain.readout_help("budget_split", "Here ε/2 for the origin, ε/2 for the destination."))
    c3.metric("L1 over OD pairs", f"{s['l1']:.3f}", help=explain.readout_help("od_l1"))
    c4.metric(f"Top-{s['top_k']} precision", f"{s['top_k_precision']:.0%}",
              help=explain.readout_help("top_k_precision", f"Here k = {s['top_k']}."))
    st.caption(f"Guarantee: {res.guarantee}")
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
                                        "from the south-west corner (the numbering of the grid exports).", on_click="ignore")

    st.header("Navigation with location updates")
    n = nav.summary()
    c1, c2, c3, c4 = st.columns(4)
    c1.metric("Updates per trip λ", f"{n['mean_updates']:.2f}",
              help=explain.readout_help("updates_per_trip", f"Largest: {n['max_updates']}."))
    c2.metric("Total privacy λ·ε", f"{n['mean_total_epsilon']:.2f}",
              help=explain.readout_help("trip_total_epsilon", f"Largest: {n['max_total_epsilon']:.2f}."))
    c3.metric("Route difference", f"{n['rel_levenshtein']:.1%}", help=explain.readout_help("route_difference"))
    c4.metric("Extra trip time", f"{n['trip_time_deviation_s']:.0f} s",
              help=explain.readout_help("extra_trip_time", f"Here {n['trip_time_deviation_rel']:.1%} over the "
                                                           "fastest route on true congestion."))
    st.caption(f"Guarantee: {nav.guarantee} Simulation: {NAV_TRIPS} trips on a {NAV_GRID} × {NAV_GRID} road grid, "
               f"θ = {theta} s, +{NAV_DELAY_S:g} s per congested cell.")
    if nav.example:
        full = ui.map_size("full", nav.grid.region)
        st.pydeck_chart(flowviz.route_deck(nav.grid, nav.congestion_true, nav.example, basemap=basemap, **full),
                        height=full["height"])
        st.caption("One trip: blue = fastest route on the true congestion, red = the route driven with private "
                   "updates; shaded cells are truly congested.")
