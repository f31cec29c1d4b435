"""Explore (the landing page): true and estimated densities side by side, live readouts, summary, exports.

Everything computed comes from ldpviz (Scenario -> Result) through ldpviz.app.compute; the
figures are built in ldpviz.render.maps. A run predicted to take long is announced first (ldpviz.app.longrun);
any other draws its first trial's maps at once and fills in the intervals when the other trials finish.
"""

import time

import numpy as np
import streamlit as st

from ldpviz.app import compute, controls, longrun, pin, session, state, ui
from ldpviz.app.errors import guard
from ldpviz.decide import explain, privacy_scale, decision_report as report
from ldpviz import experiment, mechanisms
from ldpviz.render import maps as viz
from ldpviz.geo.domain import Grid
from ldpviz.mechanisms.heatmaps.dp_heatmap import heatmap

cfg = session.setup_page("Explore")
st.title("Explore: what private collection does to a map")

data = controls.data_controls(cfg)
controls.privacy_controls(cfg)
controls.query_controls(cfg)
st.sidebar.header("Mechanism")
mechanism = controls.mechanism_picker(cfg)
geo_note = st.sidebar.empty()   # filled once the mechanism says what its ε is per km
run_params = {}
with guard("the mechanism parameters"):
    grid = Grid(data.region, int(cfg["grid_side"])) if data is not None else None
    run_params = controls.param_controls(cfg, mechanism, grid)
controls.run_controls(cfg)
basemap = controls.map_controls(cfg)
session.sync_url(cfg)

if data is None:
    st.stop()

with guard("this scenario"):
    scenario = controls.scenario(cfg, data, params=run_params)
    longrun.stopped_notice()
    started = time.perf_counter()
    with st.spinner("Perturbing, estimating and scoring ..."):
        result, complete = compute.first_result(scenario, compute.run_label(ui.short_name(mechanism), scenario))
    if result is None:
        st.stop()
    waited = time.perf_counter() - started
    # From a cache, unless its trials were run just now (the redraw after the first trial's maps)
    cached = waited < 0.5 * result.timings["total"] and st.session_state.pop("explore:finished", None) != repr(scenario)

    # Change arrows compare with the previous setting only on the same data and region (issue 22).
    ss = st.session_state
    here = ui.data_key(scenario, compute.get_dataset(scenario.dataset)[1], result.region)
    last = ss.get("explore_last")
    if last is None or last[0] != repr(scenario):
        ss["explore_prev"] = (last[1], last[2]) if last else None
    ss["explore_last"] = (repr(scenario), result.mean(), here)   # the first trial's means, then all trials'
    prev = ss.get("explore_prev")
    same_data = prev is not None and prev[1] == here
    weak = None
    with guard("the privacy check of this setting"):
        weak = privacy_scale.weak_privacy_warning(compute.built_mechanism(
            scenario.mechanism, scenario.grid_side, result.region, float(scenario.epsilon),
            tuple(sorted(dict(scenario.params).items()))), result.ledger)   # the per-row total (region included)
    pending = 0 if complete else int(scenario.trials) - 1   # trials still to run after the first one shown
    ui.readouts(result, prev[0] if same_data else None, waited, cached, other_data=prev is not None and not same_data,
                pending=pending, no_privacy=ui.gives_no_privacy(scenario.mechanism, weak))
    start_map = result.start_map_note()      # an EM estimate that never left its start says so (issue 37.14)
    if start_map:
        st.warning(f"**Not an estimate.** {start_map}", icon=":material/blur_on:")
    few = ui.few_users_warning(result.n_users, result.grid.side)
    if few:
        st.warning(few, icon=":material/group_off:")
    more_trials = st.empty()    # while the other trials run, a spinner; then the page redraws with the intervals
    # The attacker clause comes last (local privacy can take a second): readouts and maps first.
    sentence = st.empty()
    sentence.markdown(ui.summary_sentence(result, pending=pending))
    lines = experiment.guarantee_lines(result)     # the same lines, word for word, as the decision report
    central = bool(lines.model_prefix)
    st.caption((f"**{lines.model_prefix}** " if lines.model_prefix else "") + " ".join([lines.guarantee, *lines.notes]))
    if weak:
        st.warning(weak, icon=":material/warning:")
    target_line = ui.target_line(cfg, result)
    if target_line:          # opened from a goal seek: the target it answered, read on this collection
        st.info(target_line, icon=":material/flag:")
    if result.ledger is not None and len(result.ledger.charges) > 1:   # a paid region: what a row pays in all
        ui.show_ledger(result.ledger, "this collection")
    if scenario.mechanism == "srr":
        resolution = compute.srr_resolution_sentence(scenario.mechanism, scenario.grid_side, result.grid.region,
                                                     scenario.epsilon, scenario.params)
        if resolution:
            st.info(f"**Effective resolution.** {resolution}", icon=":material/grid_view:")

    est = result.estimate
    t1, t2, t3, t4 = st.columns(4)
    diff = session.bind(cfg, "show_difference", t1.toggle, "Difference map (estimate − truth)")
    many = len(result.metrics) >= 2
    spread_on = session.bind(cfg, "show_spread", t3.toggle, "Spread over trials", disabled=not many,
                             help="A third map: how much each cell's estimate varies between trials (standard "
                                  "deviation of the estimated share). Needs 2 or more trials (sidebar)."
                             ) and many
    if cfg.get("pin"):
        t4.button("Unpin", on_click=pin.unpin, key="pin:off", icon=":material/keep_off:",
                  help="Forget the pinned setting (the comparison below goes away).")
    else:
        t4.button("Pin this setting", on_click=pin.pin_current, key="pin:on", icon=":material/keep:",
                  help="Keep this setting, then change anything in the sidebar: the page shows the pinned and the "
                       "current setting side by side (both maps, the readouts and their difference, and a map of the "
                       "difference). The pin stays when you switch pages and is kept in the link.")
    sigma = 0.0
    if central:
        smooth = session.bind(cfg, "heatmap_filter", t2.toggle, "Gaussian filter (heatmap paper's display)",
                              help="Shows both maps as heatmaps H_p^σ (heatmap paper Sec. 2.3): each cell's mass "
                                   "spread by a Gaussian of σ cells. Display only; the metrics use the raw maps.")
        if smooth:
            sigma = float(session.bind(cfg, "sigma", t2.slider, "σ (cells)", *state.SIGMA_RANGE, step=0.5))
    session.sync_url(cfg)
    true_density, est_density = result.true_density, est.density
    if sigma > 0:
        true_density, est_density = heatmap(true_density, sigma), heatmap(est_density, sigma)
    difference = est_density - true_density
    vmax = float(max(true_density.max(), est_density.max()))
    vabs = float(np.abs(difference).max()) or 1.0
    # The difference map joins the two maps (a third column) rather than replacing the estimate.
    px = ui.map_size("third" if diff else "half", result.grid.region)
    size = {**px, "basemap": basemap}
    filtered = f" (Gaussian filter, σ = {sigma:g} cells)" if sigma > 0 else ""
    columns = st.columns(3 if diff else 2)
    # Three maps get short bold titles (subheaders wrap in a third of the page and would push one map lower).
    title = (lambda text: st.markdown(f"**{text}**")) if diff else st.subheader
    with columns[0]:
        title("True density")
        st.pydeck_chart(viz.density_deck(result.grid, true_density, vmax=vmax, **size), height=px["height"],
                        key="map:true")
        st.html(viz.legend_html(vmax))
    with columns[1]:
        adaptive = not (sigma > 0 or viz.is_uniform_partition(est.partition, result.grid.side))
        title("Estimated density" + (f" ({len(est.partition)} adaptive rectangles)" if adaptive else ""))
        deck = (viz.density_deck(result.grid, est_density, vmax=vmax, **size) if sigma > 0 else
                viz.estimate_deck(result.grid, est_density, est.partition, vmax=vmax, **size))
        blocks = (compute.srr_blocks(scenario.mechanism, scenario.grid_side, result.grid.region,
                                     scenario.epsilon, scenario.params) if scenario.mechanism == "srr" else None)
        if blocks is not None:
            deck.layers.append(viz.block_outline_layer(result.grid, blocks))
        st.pydeck_chart(deck, height=px["height"], key="map:est")
        st.html(viz.legend_html(vmax))
        if blocks is not None:
            st.caption(f"Dark outlines: the {len(np.unique(blocks[blocks >= 0]))} blocks SRR can tell apart at "
                       "this ε (its effective resolution); within a block it learns only the total.")
    if diff and ui.identical(true_density, est_density):
        with columns[2]:
            title("Estimate − truth")
            largest = float(np.abs(difference).max())
            st.info("**Identical.** The estimate equals the truth in every cell"
                    + (f" (the largest difference, {largest:.1g} of the users, is round-off)" if largest else "")
                    + ", so there is no difference to draw.", icon=":material/check_circle:")
    elif diff:
        with columns[2]:
            title("Estimate − truth")
            st.pydeck_chart(viz.difference_deck(result.grid, true_density, est_density, **size),
                            height=px["height"], key="map:diff")
            st.html(viz.legend_html(vabs, "estimate − truth, share of users per cell", diverging=True))
    if spread_on:
        spread = result.cell_spread("sd")
        smax = float(spread.max()) or 1.0
        st.subheader(f"Spread over {len(result.metrics)} trials")
        half = ui.map_size("half", result.grid.region)
        st.columns(2)[0].pydeck_chart(
            viz.density_deck(result.grid, spread, vmax=smax, basemap=basemap, **half,
                             label="standard deviation {share} percentage points"),
            height=half["height"], key="map:spread")
        st.html(viz.legend_html(smax, "standard deviation of a cell's estimated share over trials"))
    st.caption(f"{result.grid.side} × {result.grid.side} cells of {ui.fmt_metres(result.grid.cell_m)}{filtered}; the "
               "maps share one colour scale and one view; the outline" + (" and light grid frame" if result.grid.side <=
                                                                     viz.MAX_GRID_LINES else " frames")
               + " the region. Hover a cell for its centre's latitude and longitude. "
               + controls.basemap_caption(basemap))
    if not complete:   # the other trials now, before the slower parts below (the attacker); then the page again
        with more_trials.container(), st.spinner(f"Running trials 2-{scenario.trials} for the intervals ..."):
            compute.finish_trials(scenario)
        st.session_state["explore:finished"] = repr(scenario)
        session.redraw()
    third = ui.map_size("third", result.grid.region)
    fill_pinned_attacker = pin.section(scenario, result, sigma, basemap, (third["height"], third["width"]))
    if lines.coverage:
        with st.expander(lines.COVERAGE_TITLE):
            st.markdown("\n".join(f"- {line}" for line in lines.coverage))
    if result.received:
        with st.expander("What the server received"):
            st.markdown("\n".join(f"- **{k[0].upper() + k[1:]}:** {v}" for k, v in result.received.items()))
    model = mechanisms.get(scenario.mechanism).privacy_model
    epsilon_text = None   # the summary's 'ε = ...' in the mechanism's own unit (Geo-I: per km)
    with st.expander("What ε means here, and the guarantee on one scale", icon=":material/shield:"), \
            guard("the guarantee in common terms"):
        mech = compute.built_mechanism(scenario.mechanism, scenario.grid_side, result.region,
                                       float(scenario.epsilon), tuple(sorted(dict(scenario.params).items())))
        terms = privacy_scale.common_terms(mech)
        if model != mechanisms.NO_PRIVACY:
            st.markdown(explain.epsilon_plain(float(terms["epsilon"]), model, slack_m=terms.get("slack_m", 0.0)))
        st.markdown(terms["sentence"])
        if model == mechanisms.GEO_I:
            per_km, given = float(terms["epsilon"]), float(scenario.epsilon)
            same = abs(per_km - given) <= 1e-9 * max(1.0, given)
            epsilon_text = (f"ε = {given:g} per km" if same else
                            f"ε = {given:g} (calibrated to ε' = {per_km:.3g} per km on this grid)")
            geo_note.caption(f"{ui.short_name(scenario.mechanism)} is Geo-indistinguishable: "
                             + (f"its ε = {given:g} is per km of distance (e^(ε × km) between two places)." if same
                                else f"the slider's ε = {given:g} is calibrated to ε' = {per_km:.3g} per km of "
                                     "distance on this grid (see 'What ε means here'): ε' is the guarantee, and it "
                                     "does not fall steadily with the slider."))
            st.caption(f"Geo-I's ε is per km of distance: ε = {per_km:.3g} per km as the mechanism "
                       f"applies it on this grid (e^ε per cell side: {terms['ratio_neighbour_cells_text']}).")

    shown_maps = {"True density" + filtered: (true_density, False, vmax),
                  "Estimated density" + filtered: (est_density, False, vmax)}
    if diff:
        shown_maps["Difference: estimate − truth" + filtered] = (difference, True, vabs)
    goal = ui.goal_for(cfg, scenario)      # opened from a goal seek: the report states its target and answer
    target_metric, target_value = ui.report_target(cfg)
    if many:
        st.download_button(
            "Decision report (HTML)",
            lambda: report.build_report(scenario, dataset=data.dataset, result=result, goal=goal,
                                        metric=target_metric, target=target_value),
            "ldpviz-decision-report.html", "text/html", key="dl:report", icon=":material/description:",
            help="One self-contained page for a decision: the setting, its guarantee in plain words, accuracy with "
                 "confidence intervals, the attacker, a quick audit and how to reproduce it.", on_click="ignore")
    elif complete:
        st.caption("The decision report (HTML) needs 2 or more trials for its confidence intervals: raise "
                   "Trials in the sidebar.")
    ui.export_section(cfg, result, {"layers": {"true_share": true_density, "estimated_share": est_density,
                                               "difference": difference}, "maps": shown_maps},
                      data.upload_filename, report.target_reading(goal, result, target_metric, target_value))
    controls.show_resolved_defaults()   # builds the mechanism once; the attacker clause reuses it
    population = ui.population_density(data.dataset, result.grid)
    found = ui.attacker_errors_m(scenario.mechanism, result.grid, scenario.epsilon, scenario.params, population)
    sentence.markdown(ui.summary_sentence(result, found, within_r=ui.attacker_within_r(
        scenario.mechanism, result.grid, scenario.epsilon, scenario.params, population), epsilon_text=epsilon_text,
        attacker_note=ui.attacker_method_note(scenario.mechanism, result.grid, scenario.epsilon, scenario.params,
                                              population), pending=pending))
    if fill_pinned_attacker is not None:
        fill_pinned_attacker(found[0])
controls.show_resolved_defaults()
