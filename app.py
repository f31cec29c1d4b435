"""ldpviz dashboard — the router and the Explore page (the landing page).

True and estimated densities side by side, live accuracy readouts, and a plain
summary. Everything computed comes from ldpviz (Scenario -> Result) through
dashboard.compute.cached_run; the figures are built in ldpviz.viz. The other pages
live in views/ and are listed in the navigation at the bottom of this file (not in
pages/: Streamlit auto-discovers that folder, and a link straight to a page would
then open with its own file-name navigation instead of this one).
"""

import time

import numpy as np
import streamlit as st

from dashboard import compute, errors, session, state, ui
from ldpviz import mechanisms, viz
from ldpviz.domain import Grid
from ldpviz.mechanisms.heatmap import heatmap

def explore() -> None:
    """True and estimated densities side by side, live readouts, plain summary, exports."""
    cfg = session.setup_page("Explore")
    st.title("Explore: what private collection does to a map")

    data = session.data_controls(cfg)
    session.privacy_controls(cfg)
    st.sidebar.header("Mechanism")
    mechanism = session.mechanism_picker(cfg)
    run_params = {}
    with session.guard("the mechanism parameters"):
        grid = Grid(data.region, int(cfg["grid_side"])) if data is not None else None
        run_params = session.param_controls(cfg, mechanism, grid)
    session.run_controls(cfg)
    session.sync_url(cfg)

    if data is None:
        st.stop()

    with session.guard("this scenario"):
        scenario = session.scenario(cfg, data, params=run_params)
        started = time.perf_counter()
        with st.spinner("Perturbing, estimating and scoring ..."):
            result = compute.run_scenario(scenario)
        waited = time.perf_counter() - started
        cached = waited < 0.5 * result.timings["total"]

        ss = st.session_state
        last = ss.get("explore_last")
        if last is None or last[0] != repr(scenario):
            ss["explore_prev"] = last[1] if last else None
            ss["explore_last"] = (repr(scenario), result.mean())
        previous = ss.get("explore_prev")

        ui.readouts(result, previous, waited, cached)
        # The attacker clause comes last (local privacy can take a second): readouts and maps first.
        sentence = st.empty()
        sentence.markdown(ui.summary_sentence(result))
        central = mechanisms.get(scenario.mechanism).privacy_model == mechanisms.CENTRAL_DP
        st.caption(("**Central DP (trusted aggregator).** " if central else "")
                   + f"{result.guarantee}. " + " ".join(result.notes))

        est = result.estimate
        est_density = est.density
        t1, t2 = st.columns(2)
        diff = session.bind(cfg, "show_difference", t1.toggle, "Show the difference map (estimate − truth)")
        sigma = 0.0
        if central:
            smooth = session.bind(cfg, "heatmap_filter", t2.toggle, "Gaussian filter (the heatmap paper's display)",
                                  help="Shows both maps as heatmaps H_p^σ (heatmap paper Sec. 2.3): each cell's mass "
                                       "spread by a Gaussian of σ cells. Display only; the metrics use the raw maps.")
            if smooth:
                sigma = float(session.bind(cfg, "sigma", t2.slider, "σ (cells)", *state.SIGMA_RANGE, step=0.5))
        true_density = result.true_density
        if sigma > 0:
            true_density, est_density = heatmap(true_density, sigma), heatmap(est_density, sigma)
        session.sync_url(cfg)
        vmax = float(max(true_density.max(), est_density.max()))
        true_deck = viz.density_deck(result.grid, true_density, vmax=vmax)
        est_deck = (viz.density_deck(result.grid, est_density, vmax=vmax) if sigma > 0 else
                    viz.estimate_deck(result.grid, est_density, est.partition, vmax=vmax))
        left, right = st.columns(2)
        with left:
            st.subheader("True density")
            st.pydeck_chart(true_deck, height=440, key="map:true")
        with right:
            if diff:
                st.subheader("Difference: estimate − truth")
                diff_deck = viz.difference_deck(result.grid, true_density, est_density)
                st.pydeck_chart(diff_deck, height=440, key="map:diff")
            else:
                label = "Estimated density" + ("" if sigma > 0 or viz.is_uniform_partition(est.partition, result.grid.side)
                                               else f" ({len(est.partition)} adaptive rectangles)")
                st.subheader(label)
                st.pydeck_chart(est_deck, height=440, key="map:est")
        if diff:
            vabs = float(np.abs(est_density - true_density).max())
            st.html(viz.legend_html(vabs, "estimate − truth, share of users per cell", diverging=True))
        else:
            st.html(viz.legend_html(vmax))
        st.caption(f"{result.grid.side} × {result.grid.side} cells of {result.grid.cell_m:,.0f} m; both maps share "
                   "one colour scale and one view. No basemap is needed: the outline and light grid frame the region.")
        if est.info:
            with st.expander("What the server received"):
                st.json({k: (v if isinstance(v, (int, float, str, bool)) else str(v)) for k, v in est.info.items()})
        ui.export_section(cfg, result, {"true": true_deck, "estimate": est_deck}, data.upload_filename)
        session.show_resolved_defaults()   # builds the mechanism once; the attacker clause reuses it
        sentence.markdown(ui.summary_sentence(result, ui.attacker_error_m(
            scenario.mechanism, result.grid, scenario.epsilon, scenario.params)))
    session.show_resolved_defaults()


PAGES = [
    st.Page(explore, title="Explore", icon=":material/map:", default=True),
    st.Page("views/1_Compare.py", title="Compare", icon=":material/compare:", url_path="Compare"),
    st.Page("views/2_Trade-offs.py", title="Trade-offs", icon=":material/show_chart:", url_path="Trade-offs"),
    st.Page("views/3_Mechanisms.py", title="Mechanisms", icon=":material/shuffle:", url_path="Mechanisms"),
    st.Page("views/4_Data.py", title="Data", icon=":material/upload_file:", url_path="Data"),
    st.Page("views/5_Privacy_audit.py", title="Privacy audit", icon=":material/verified_user:",
            url_path="Privacy_audit"),
]
errors.run_page(st.navigation(PAGES))
