"""Decide, step 5 · Sign: the mechanism signed (the top of the first table unless the officer chooses another),
the purpose, owner and retention, what each person pays, and the signed decision: the HTML report, the link that
reopens the flow and the command that reproduces the answer."""

from __future__ import annotations

import functools
from typing import Any
from urllib.parse import urlencode

import streamlit as st

from ldpviz.app import compute, session, state, ui
from ldpviz.app.decide_page.types import DecideState, Signed
from ldpviz.decide import decision_flow as flow, decision_report, explain
from ldpviz.geo import region_choice


def sign(state_: DecideState) -> Signed:
    """Draw step 5 and return the mechanism signed, its answer and the mechanism step 4 built. Stops the page when
    there is nothing to sign yet."""
    cfg, src, need, answers = state_.cfg, state_.source, state_.need, state_.answers
    ranked, reached, region = answers.ranked, answers.reached, src.region
    st.header("5 · Sign")
    if not reached and answers.later:      # not an answer: some mechanisms have not been searched yet
        st.info(f"No answer yet: {explain.plural(len(answers.later), 'mechanism')} wait for Start in step 4.")
        st.stop()
    if not reached:
        st.info("No eligible mechanism reaches the target: loosen the target, accept another model, or add users.")
        st.stop()
    c1, c2 = st.columns(2)
    top = flow.signed(ranked)
    top_heading = next(r["model_heading"] for r in ranked if r["mechanism"] == top)
    session.bind(cfg, "decide_chosen", c1.selectbox, "Mechanism signed", [""] + reached, valid=[""] + reached,
                 format_func=lambda m: m or f"{top}: the top of the first table ({top_heading.split(':')[0]})",
                 help="The top of the first table (your accepted models in their order) unless you choose another.")
    chosen = flow.signed(ranked, cfg.get("decide_chosen"))
    cfg["mechanism"] = chosen
    session.bind(cfg, "decide_purpose", c2.text_input, "Purpose of the collection")
    c1, c2 = st.columns(2)
    session.bind(cfg, "decide_owner", c1.text_input, "Owner (who answers for it)")
    session.bind(cfg, "decide_retention", c2.text_input, "Retention (how long the data is kept)")
    pick = next(r for r in ranked if r["mechanism"] == chosen)
    st.markdown(f"**The signed decision is for {chosen}** ({pick['privacy_model']}, ε {flow.epsilon_text(pick)}"
                f"{'' if cfg.get('decide_chosen') else ', the top of the first table'}).")
    with st.container(border=True):
        st.markdown(f"**What each person pays with {chosen}** (the accountant's ledger)")
        st.markdown("\n".join(f"- {line}" for line in pick["ledger"]["lines"]))
        st.markdown(pick["ledger_one"] + ("" if pick["ledger_sentence"] == pick["ledger_one"]
                                          else f"  \n{pick['ledger_sentence']}"))
    signed = Signed(chosen=chosen, pick=pick, mechanism=answers.mechanisms[chosen])
    session.sync_url(cfg)
    base_url = str(getattr(st.context, "url", "") or "").split("?")[0]
    link = f"{base_url}?{urlencode(state.encode(cfg))}"
    # a preset by name, else the Region
    region_arg = src.choice if src.choice != state.REGION_BBOX and not src.upload_name else region
    used = {**cfg, "n_users": answers.n_users, "decide_limit": float(answers.limit)}   # the users the answer ran on
    if src.trips is None:
        cli = flow.command(used, state_.protection.eligible, region_arg, src.data)
    else:        # `ldpviz target` reads points; trips reproduce through the API, one point per person as here
        cli = flow.trips_command(used, state_.protection.eligible, src.trips, region,
                                 src.choice if src.choice != state.REGION_BBOX else None)
    side = need.side
    sections = flow.record_sections(cfg, data_label=src.label, rows_text=src.rows_text,
                                    region_text=f"{region.name} ({ui.fmt_metres(region.side_m)} square); where it "
                                                f"came from: {region_choice.origin_text(region)}",
                                    cell_text=f"{side} × {side} cells of {ui.fmt_metres(region.side_m / int(side))}",
                                    answers=ranked, chosen=chosen, why_not=state_.protection.why_not, link=link,
                                    cli=cli)
    decision_json = flow.record_json(cfg, ranked, chosen, region)
    signed_data = compute.dataset_arg(src.name) or src.data   # read now: the button builds the report outside this run
    st.download_button("Download the signed decision (HTML)",
                       functools.partial(signed_report, state_, signed, sections, decision_json, signed_data),
                       "ldpviz-decision.html", "text/html",
                       on_click="ignore", type="primary", key="decide:download",
                       help="The decision report of the chosen mechanism at its answer (maps, the interval, the "
                            "attacker, the audit, what is not covered) with every choice above, the target, the "
                            "answer and the alternatives, and the sign-off block: one page that opens offline.")
    st.markdown("**Reopen this whole flow:**")
    st.code(link, language=None)
    if src.trips is None:
        st.markdown("**Reproduce the answer on the command line:**")
        st.code(cli, language="bash")
    else:
        st.markdown("**Reproduce the answer with the ldpviz API** (`ldpviz target` reads points; this reads the trips "
                    "and takes one point per person, as above):")
        st.code(cli, language="python")
    return signed


def signed_report(state_: DecideState, signed: Signed, sections: str, decision_json: str, dataset: Any) -> str:
    """The signed decision: the decision report (maps, the interval, the attacker, the audit, what is not covered)
    of the chosen mechanism at its answer, over as many collections as the answer's fresh decision, with the flow's
    choices, the target and the alternatives first and the sign-off last (built when the button is pressed). The
    ledger is the signed mechanism's, as step 4 built it."""
    cfg, src, pick = state_.cfg, state_.source, signed.pick
    n_users = int(pick["n_users"]) if state_.answers.turn == "users" else state_.answers.n_users
    sc = flow.scenario(src.name, src.region, signed.chosen, int(state_.need.side), n_users,
                       int(cfg["seed"])).with_(epsilon=float(pick["epsilon"]), trials=max(2, int(pick["trials"])))
    result = compute.cached_run(sc, src.key, dataset)
    return decision_report.build_report(sc, dataset=dataset, result=result, goal=pick, decision=sections,
                                        decision_json=decision_json,
                                        ledger=flow.ledger_for(signed.mechanism, src.region, cfg, src.people))
