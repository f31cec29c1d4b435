"""Decide: from "I have this file" to a signed decision, in steps on one page (issue 27), as functions over one
typed state (issue 40; DP Wizard's panels over its ``AppState``).

:func:`page` draws the page: each step is a function of :class:`~ldpviz.app.decide_page.types.DecideState` that
draws its widgets and returns what the next steps need (:mod:`.data_step`, :mod:`.protection_step`,
:mod:`.need_step`, :mod:`.answer_step`, :mod:`.sign_step`, :mod:`.deploy_step`). The steps' logic lives in
:mod:`ldpviz.decide.decision_flow` (choices, eligibility, ledger, the record), the goal seek in
:mod:`ldpviz.decide.tradeoff` and its scheduling in :mod:`ldpviz.app.seeks`; every choice is in the one state layer
and the link. ``ldpviz/app/views/decide.py`` only calls :func:`page`.
"""

from __future__ import annotations

import streamlit as st

from ldpviz.app import session
from ldpviz.app.decide_page.answer_step import the_answer
from ldpviz.app.decide_page.data_step import your_data
from ldpviz.app.decide_page.deploy_step import deploy
from ldpviz.app.decide_page.need_step import what_the_map_must_show
from ldpviz.app.decide_page.protection_step import who_is_protected
from ldpviz.app.decide_page.sign_step import sign
from ldpviz.app.decide_page.types import Answers, DecideState, Need, Protection, Signed, Source


def page() -> None:
    """One run of the Decide page: the title, then the steps in order, each on what the ones before returned."""
    state_ = DecideState(cfg=session.setup_page("Decide"), session=st.session_state)
    st.title("Decide how to collect the locations")
    st.caption("Five steps from your file to a signed decision about the one collection you will run. Every choice "
               "is kept in the link: reload, share it or go back and forward and the steps stay as you left them.")
    state_.source = your_data(state_)
    state_.protection = who_is_protected(state_)
    state_.need = what_the_map_must_show(state_)
    state_.answers = the_answer(state_)
    state_.signed = sign(state_)
    deploy(state_)


__all__ = ["page", "DecideState", "Source", "Protection", "Need", "Answers", "Signed", "your_data",
           "who_is_protected", "what_the_map_must_show", "the_answer", "sign", "deploy"]
