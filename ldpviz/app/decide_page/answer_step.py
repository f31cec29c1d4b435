"""Decide, step 4 · The answer: the question (ε needed, or users needed at a fixed ε) and the officer's limit, every
eligible mechanism's goal seek (scheduled by :mod:`ldpviz.app.seeks`), the answers ranked within each privacy
model, what each reaches at the limit when none meets the target within it, and two pinned maps."""

from __future__ import annotations

from typing import Any

import streamlit as st

from ldpviz import mechanisms
from ldpviz.app import compute, longrun, seeks, session, state, ui
from ldpviz.app.decide_page.links import in_depth
from ldpviz.app.decide_page.types import Answers, DecideState
from ldpviz.decide import decision_flow as flow, explain, feasibility, one_collection, tradeoff
from ldpviz.experiment import runtime_model
from ldpviz.geo.domain import Grid
from ldpviz.render import maps as viz


def answer_table(ranked: list[dict], turn: str, cfg: dict[str, Any]) -> list[dict]:
    """Step 4's table (one privacy model): rank within the model, ε (or users) needed, within the officer's limit,
    the chance one collection misses, the attacker, the ledger."""
    return [{"rank": str(r["rank"]) if r.get("rank") else "—", "mechanism": r["mechanism"], "model": r["privacy_model"],
             ("ε needed" if turn == "epsilon" else "users needed"):
                 flow.epsilon_text(r) if turn == "epsilon" else (f"{r['n_users']:,}" if r["reached"]
                                                                 else "not reached"),
             "within your limit": flow.limit_text(r),
             "chance one collection misses (at most)": one_collection.chance_text(r["miss_chance_max"])
                 if r["reached"] else "—",
             "attacker off by": ui.fmt_metres(r["attacker_error_m"]) if r.get("attacker_error_m") is not None
                 else (f"— ({r['attacker_note']})" if r.get("attacker_note") else "—"),
             f"ε per {flow.unit_noun(cfg)}, one collection": r.get("ledger_one_headline") or "—",
             f"ε per {flow.unit_noun(cfg)} over a year": r.get("ledger_year_headline") or "—",
             "note": r["message"],
             "warnings": "; ".join(x for x in (r.get("scan_warning"), r.get("ledger_warning") or r.get("warning"))
                                   if x)}
            for r in ranked]


def answer_tables(ranked: list[dict], turn: str, cfg: dict[str, Any], slot=None) -> None:
    """One table per privacy model under its heading (ε per report and ε per km are different scales)."""
    box = slot.container() if slot is not None else st.container()
    for n, (heading, rows) in enumerate(flow.groups(ranked)):
        box.markdown(f"**{heading}**")
        box.dataframe(answer_table(rows, turn, cfg), hide_index=True,
                      **({} if slot is not None else {"key": f"decide:answers:{n}"}))


def the_answer(state_: DecideState) -> Answers:
    """Draw step 4: the question, the seeks (the quick ones at once, the rest on Start), the ranked answers and
    the pinned maps; return the answers with each reached mechanism built once. Stops the page when no model is
    accepted; re-runs it when a seek started without a click ran past its limit."""
    cfg, ss = state_.cfg, state_.session
    src, protection, need = state_.source, state_.protection, state_.need
    region, eligible, why_not, models = src.region, protection.eligible, protection.why_not, protection.models
    metric, target, side, probability = need.metric, need.target, need.side, need.probability
    st.header("4 · The answer")
    turn = session.bind(cfg, "decide_turn", st.segmented_control, "Question", list(flow.TURNS),
                        valid=list(flow.TURNS), required=True,
                        format_func={"epsilon": "ε needed with the users there are",
                                     "users": "Users needed at a fixed ε"}.get)
    if turn == "users":
        session.bind(cfg, "decide_epsilon", st.number_input, "ε (fixed)", format="%g",
                     **state.SETTING["decide_epsilon"].widget_bounds())
    limit = session.bind(cfg, "decide_limit", st.number_input, "The largest ε per person in one collection I accept",
                         format="%g", **state.SETTING["decide_limit"].widget_bounds(),
                         help="Judged on the ledger (the region, reports per person); Geo-I between neighbouring "
                              "cells. Where no mechanism meets the target within it, the answer says so first and "
                              "what each reaches at it.")
    session.sync_url(cfg)
    if not eligible:
        st.info("Accept at least one privacy model in step 2.")
        st.stop()
    n_users = int(cfg["n_users"]) if src.inside > int(cfg["n_users"] or 0) > 0 else None
    grid = Grid(region, int(side))
    scenarios = [flow.scenario(src.name, region, m, int(side), n_users, int(cfg["seed"])) for m in eligible]
    asked = seeks.Seeks(scenarios, src.key, turn, metric, float(target), float(probability),
                        float(cfg["decide_epsilon"]))
    plan = seeks.schedule(asked, ss.setdefault("decide:started", set()))
    if plan.later:     # the long rest (many mechanisms, a fine grid, many users) starts when the officer says so
        names_later = [eligible[k] for k in plan.later]
        if longrun.announce(f"{explain.plural(len(plan.later), 'more mechanism')} ({', '.join(names_later)})",
                            runtime_model.side_by_side_seconds([plan.seek_s[k] for k in plan.later], plan.threads),
                            "the runs timed so far", "decide:" + str(hash(tuple(asked.keys[k] for k in plan.later))),
                            asked.unreached_s(plan.later, plan.threads)):
            plan.start_all(asked)
        else:
            for k in plan.later:
                why_not[eligible[k]] = "not searched yet: its search waits for Start in step 4"
    limits = plan.limits()
    now = [k for k in plan.pending if k in limits]
    table_slot, status = st.empty(), st.empty()
    data_arg = compute.dataset_arg(src.name) or src.data
    answered: dict[int, dict] = {}      # scenario index -> the answer's row (goal seek, ledger at its answer)
    built: dict[str, mechanisms.Mechanism] = {}     # each reached answer's mechanism, built once

    def take(k: int, goal: dict) -> None:
        mech = (mechanisms.create(eligible[k], grid, float(goal["epsilon"])) if goal.get("reached") else None)
        answered[k] = flow.answer(goal, mech, region, cfg, src.people)
        if mech is not None:
            built[eligible[k]] = mech

    for k in range(len(scenarios)):          # held already: shown at once, no thread
        if asked.held(k):
            take(k, compute.held_goal_seek(asked.keys[k], asked.search(k, data_arg)))
    pending = [k for k in now if k not in answered]
    if pending:
        status.caption(f"Searching {explain.plural(len(pending), 'mechanism')}, "
                       f"{tradeoff.seek_threads(len(pending))} at a time; each answer shows as it is found ...")
    stopped = []
    for done in seeks.side_by_side(asked, plan, pending, limits, data_arg, take,
                                   poll=compute.seek_poll(status, len(pending))):
        if done.error is not None:
            why_not[eligible[done.index]] = f"cannot run here: {done.error}"
        if done.stopped:
            stopped.append(done.index)
        left = sum(1 for i in pending if i not in answered and i not in stopped and eligible[i] not in why_not)
        if left:
            answer_tables(flow.rank([answered[i] for i in sorted(answered)], turn, models), turn, cfg, table_slot)
            status.caption(f"{explain.plural(left, 'mechanism')} still searching ...")
    if stopped:       # predicted quick but not: they join the ones that wait for Start (named there)
        st.rerun()
    rows = flow.with_limit([answered[k] for k in sorted(answered)], region, cfg, src.people)   # eligible order
    inverse = feasibility.needs_inverse(rows, turn)
    if inverse:        # none meets the target within the limit: what each reaches there (one collection)
        status.caption(f"No mechanism meets the target within ε {float(limit):g}: reading what each reaches "
                       "there ...")
        inverse_scenarios = [scenarios[eligible.index(rows[i]["mechanism"])] for i in inverse]
        keys = [repr(("decide-limit", sc, src.key, metric, float(target), rows[i]["limit_epsilon"]))
                for sc, i in zip(inverse_scenarios, inverse)]
        readings = [reading(sc, metric, float(target), rows[i]["limit_epsilon"], data_arg)
                    for sc, i in zip(inverse_scenarios, inverse)]
        for i, at_limit in zip(inverse, seeks.readings_at_limit(keys, readings)):
            rows[i]["at_limit"] = at_limit
    ranked = flow.rank(rows, turn, models)
    ss["decide_answers"] = ranked          # the answers as shown (tests compare them with `ldpviz target`)
    status.empty()
    summary = feasibility.limit_summary(ranked, float(limit), metric, float(target), region.side_m / int(side),
                                        waiting=len(plan.later), noun=flow.unit_noun(cfg))
    if summary["lead"]:
        st.error(summary["lead"] + "\n" + "\n".join(f"- {line}" for line in summary["lines"]),
                 icon=":material/block:")
    table_slot.empty()
    answer_tables(ranked, turn, cfg)
    st.caption(f"Met = {tradeoff.rule_text(float(probability))}. ε is the smallest found on a scan (x2 apart, refined "
               "to 5%), not a proven smallest. The attacker knows the population density and sees one report.")
    for r in ranked:
        for key_ in ("scan_warning", "ledger_warning"):
            if r.get(key_):
                st.warning(f"**{r['mechanism']}:** {r[key_]}", icon=":material/warning:")
    with st.expander(f"Why not the other {len(why_not)} mechanisms"):
        st.markdown("\n".join(f"- **{n}**: {w}" for n, w in why_not.items()) or "None left out.")
    reached = [r["mechanism"] for r in ranked if r["reached"]]
    answers = Answers(turn=turn, limit=limit, n_users=n_users, grid=grid, ranked=ranked, reached=reached,
                      later=plan.later, mechanisms=built)
    pinned_maps(state_, answers)
    in_depth_link(state_, answers)
    return answers


def reading(scenario, metric: str, target: float, epsilon: float, dataset):
    """What ``scenario`` reaches at ``epsilon`` (the officer's limit), as a call for a seek thread."""
    return lambda: tradeoff.reading_at(scenario, metric, target, epsilon, dataset=dataset)


def pinned_maps(state_: DecideState, answers: Answers) -> None:
    """Pin two answers to compare their maps: one collection each, at its answer, on one colour scale."""
    cfg, src, need = state_.cfg, state_.source, state_.need
    reached, ranked, turn = answers.reached, answers.ranked, answers.turn
    if reached:
        session.bind(cfg, "decide_pins", st.multiselect, "Pin two to compare their maps", reached,
                     max_selections=2, default=None)
    pins = [p for p in (cfg.get("decide_pins") or []) if p in reached]
    if len(pins) == 2:       # one collection each, at its answer, on one colour scale
        pinned = []
        for pin in pins:
            r = next(x for x in ranked if x["mechanism"] == pin)
            sc = flow.scenario(src.name, src.region, pin, int(need.side),
                               r["n_users"] if turn == "users" else answers.n_users,
                               int(cfg["seed"])).with_(epsilon=float(r["epsilon"]), trials=1)
            pinned.append((pin, r, compute.cached_run(sc, src.key, compute.dataset_arg(src.name) or src.data)))
        vmax = max(float(res.estimate.density.max()) for _, _, res in pinned) or 1.0
        for col, (pin, r, res) in zip(st.columns(2), pinned):
            with col:
                st.markdown(f"**{pin}** at ε {flow.epsilon_text(r)}")
                px = ui.map_size("half", src.region)
                st.pydeck_chart(viz.estimate_deck(res.grid, res.estimate.density, res.estimate.partition,
                                                  vmax=vmax, **px),
                                height=px["height"], key=f"decide:map:{pin}")
                st.caption(f"{ui.metric_label(need.metric)} of this collection: "
                           f"{ui.fmt_metric(need.metric, res.mean()[need.metric])}")


def in_depth_link(state_: DecideState, answers: Answers) -> None:
    """The link to Explore: the mechanism step 5 signs, at its answer (or one mechanism in depth)."""
    cfg, ranked = state_.cfg, answers.ranked
    signs = flow.signed(ranked, cfg.get("decide_chosen"))      # the one step 5 signs (the officer's, else the top)
    shown = next((r for r in ranked if r["reached"] and r["mechanism"] == signs), None)
    if shown is None:
        in_depth(cfg, "Explore", "One mechanism in depth on the Explore page")
    elif answers.turn == "users":    # a link carries any ε a mechanism accepts (state.EPSILON_LINK_RANGE), as step 4's
        in_depth(cfg, "Explore", f"{shown['mechanism']} in depth on the Explore page, with the users found",
                 mechanism=shown["mechanism"], n_users=int(shown["n_users"]), epsilon=float(cfg["decide_epsilon"]))
    else:      # at the ε found, rounded up as Compare's 'Use ε' does (so the target stays met)
        eps = min(state.epsilon_for_use(float(shown["epsilon"])), state.EPSILON_LINK_RANGE[1])
        in_depth(cfg, "Explore", f"{shown['mechanism']} in depth on the Explore page at ε = {eps:g}",
                 mechanism=shown["mechanism"], epsilon=eps)
