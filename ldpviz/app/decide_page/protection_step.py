"""Decide, step 2 · Who is protected: the unit the guarantee protects, reports per person, how often the collection
runs, and the privacy models accepted (which leave the eligible mechanisms)."""

from __future__ import annotations

import streamlit as st

from ldpviz.app import session, state
from ldpviz.app.decide_page.links import in_depth
from ldpviz.app.decide_page.types import DecideState, Protection
from ldpviz.decide import decision_flow as flow, explain


def who_is_protected(state_: DecideState) -> Protection:
    """Draw step 2 and return the models accepted, the eligible mechanisms and why the others are left out."""
    cfg, source = state_.cfg, state_.source
    st.header("2 · Who is protected")
    c1, c2, c3 = st.columns(3)
    if source.trips is None:
        session.bind(cfg, "decide_unit", c1.radio, "The guarantee protects", list(flow.UNITS), valid=list(flow.UNITS),
                     format_func=flow.UNITS.get)
    else:        # a trips file names its people: the guarantee protects a person, whatever was chosen for points
        c1.radio("The guarantee protects", [flow.UNITS["person"]], disabled=True, key="w:decide_unit_trips",
                 help="A trips file names each point's person, so the guarantee protects a person (all their trips).")
    session.bind(cfg, "decide_reports", c2.number_input, "Reports per person per collection", step=1,
                 **state.SETTING["decide_reports"].widget_bounds(),
                 help="Each report pays ε; the ledger adds them up per person.")
    session.bind(cfg, "decide_every", c3.selectbox, "How often the collection runs", list(flow.EVERY),
                 valid=list(flow.EVERY), help="The ledger's total over a year composes every collection.")
    models = session.bind(cfg, "decide_models", st.multiselect, "Privacy models you accept", list(flow.MODELS),
                          format_func=lambda m: flow.MODELS[m])
    eligible, why_not = flow.eligible(models)
    st.caption(f"{explain.plural(len(eligible), 'mechanism')} eligible; {len(why_not)} left out (why: in step 4).")
    in_depth(cfg, "Mechanisms", "What each mechanism protects, on the Mechanisms page")
    return Protection(models=models, eligible=eligible, why_not=why_not)
