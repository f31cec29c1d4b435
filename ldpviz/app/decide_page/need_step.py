"""Decide, step 3 · What the map must show: the need (W2 or AQE) and its target, the grid, and the share of
collections that must meet it."""

from __future__ import annotations

import streamlit as st

from ldpviz.app import session, state, ui
from ldpviz.app.decide_page.links import in_depth
from ldpviz.app.decide_page.types import DecideState, Need
from ldpviz.decide import decision_flow as flow, feasibility


def what_the_map_must_show(state_: DecideState) -> Need:
    """Draw step 3 and return the need: metric, target, grid side and probability."""
    cfg, region = state_.cfg, state_.source.region
    st.header("3 · What the map must show")
    c1, c2, c3 = st.columns([2, 1, 1])
    metric = session.bind(cfg, "decide_metric", c1.radio, "The need", list(flow.NEEDS), valid=list(flow.NEEDS),
                          format_func=lambda m: flow.NEEDS[m].format(t="x m" if m == "w2_m" else "x"))
    session.reset_when_changed(cfg, "decide_metric", "decide_target", flow.DECIDE_TARGET_DEFAULTS[metric])
    target = session.bind(cfg, "decide_target", c2.number_input, f"x = ({ui.metric_label(metric)} at most)",
                          min_value=0.0001, format="%g")
    grid_options = [d for d in state.GRID_OPTIONS if d <= 64]
    side = session.bind(cfg, "grid_side", c3.selectbox, "Cells (grid d × d)", grid_options, valid=grid_options,
                        format_func=lambda d: f"{d} × {d}")        # labels fixed: a region change must not reset it
    c3.caption(f"cells of {ui.fmt_metres(region.side_m / int(side))}")
    c2.caption(f"beside cells of {ui.fmt_metres(region.side_m / int(side))}" if metric.endswith("_m") else
               "of everyone; areas of 1% of the region")
    probability = session.bind(cfg, "decide_probability", c2.number_input, "Share of collections that must meet it",
                               step=0.01, format="%.3g", **state.SETTING["decide_probability"].widget_bounds())
    st.markdown(f"**The need:** {flow.need_text(metric, float(target))}, in "
                f"{probability:.0%} of collections (one collection is what you will run).")
    fine = feasibility.cell_note(metric, float(target), region.side_m / int(side))
    if fine:
        st.warning(fine, icon=":material/grid_on:")
    in_depth(cfg, "Compare", "Every metric side by side on the Compare page")
    return Need(metric=metric, target=target, side=side, probability=probability)
