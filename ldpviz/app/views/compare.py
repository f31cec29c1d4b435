"""Compare: several mechanisms at the same epsilon, grid and data."""

import pandas as pd
import streamlit as st

from ldpviz.mechanisms.estimation import START_MAP_TEXT
from ldpviz.app import compute, controls, longrun, session, state, ui
from ldpviz.app.errors import guard
from ldpviz import experiment, mechanisms, metrics
from ldpviz.decide import explain, one_collection, privacy_scale, decision_report as report, tradeoff
from ldpviz.render import maps as viz
from ldpviz.geo.domain import Grid
from ldpviz.errors import LdpvizInputError, require
from ldpviz.experiment import runtime_model
from ldpviz.mechanisms.accounting import collection_ledger

MODES = {"at_epsilon": "Compare at ε", "target_epsilon": "Smallest ε found for a target",
         "users_needed": "Users needed for a target"}

MODEL_ORDER = (mechanisms.LDP, mechanisms.GEO_I, mechanisms.CENTRAL_DP, mechanisms.NO_PRIVACY)


def equivalent_epsilon(name: str, grid: Grid) -> str:
    """privacy_scale.common_terms' LDP-equivalent epsilon (the largest ratio over the region, as a log).

    Only Geo-I needs its mechanism built (its per-cell epsilon); the others' value follows from the model."""
    eps = float(cfg["epsilon"])
    model = mechanisms.get(name).privacy_model
    try:
        if model == mechanisms.GEO_I:
            value = privacy_scale.common_terms(compute.built_mechanism(name, grid.side, grid.region, eps, ()))[
                "ldp_equivalent_epsilon"]
        else:
            value = eps if model == mechanisms.LDP else float("inf")
    except LdpvizInputError:
        return "—"
    if value == float("inf"):
        return "∞ (no privacy)" if model == mechanisms.NO_PRIVACY else "∞ (trusted aggregator)"
    return f"{value:.3g}"


def weak_privacy(name: str, grid: Grid, eps: float) -> str | None:
    """privacy_scale.weak_privacy_warning for a mechanism at its default parameters, judged on its ledger (the
    region's epsilon0 included); None if it cannot be built."""
    try:
        mech = compute.built_mechanism(name, grid.side, grid.region, eps, ())
        return privacy_scale.weak_privacy_warning(mech, collection_ledger(mech, grid.region))
    except LdpvizInputError:
        return None


def show_weak_privacy(found: dict[str, str]) -> None:
    """One warning box naming every mechanism whose setting gives practically no privacy."""
    if found:
        st.warning("  \n".join(f"**{k}.** {v} Its accuracy here comes from barely randomising."
                               for k, v in found.items()), icon=":material/warning:")


def goal_seek_table(table: pd.DataFrame, mode: str, metric: str, target: float, trials: int) -> None:
    """The goal seek's answers (ldpviz.decide.tradeoff: reached = with 95% confidence), their warnings, and a button per
    answer that opens Explore at it."""
    unit = ui.metric_label(metric)
    by_eps = mode == "target_epsilon"

    def cell(value, fmt) -> str:
        return "—" if value is None or pd.isna(value) else fmt(value)

    within = [cell(w, lambda v: f"{v:.1%}") for w in table["attacker_within_r"]]
    r_m = next((r for r in table.get("attacker_r_m", pd.Series(dtype=float)) if r is not None and not pd.isna(r)),
               None)
    out = pd.DataFrame({
        "mechanism": [controls.short_label(by_name[n]) for n in table["mechanism"]],
        "privacy": [controls.model_tag(m) for m in table["privacy_model"]],
        # an answer at the floor of the search meets the target at any ε: the target asks for nothing (issue 27)
        "one collection meets it": [("at any ε (met at the search floor)" if by_eps and r and e is not None
                                     and not pd.isna(e) and e <= mechanisms.base.EPSILON_MIN * (1 + 1e-9) else
                                     "yes" if r else "no") for r, e in zip(table["reached"], table["epsilon"])],
        "chance one misses (at most)": [cell(q, one_collection.chance_text) for q in table["miss_chance_max"]],
        # the value the 'Use ε' button opens (rounded up to 3 significant figures), never another rounding of it
        ("ε found" if by_eps else "ε (fixed)"): [cell(e, lambda v: (f"{state.epsilon_for_use(v):g}" if by_eps else
                                                                     f"{v:.3g}")
                                                      + (" per km" if m == mechanisms.GEO_I else ""))
                                                 for e, m in zip(table["epsilon"], table["privacy_model"])],
        ("users (fixed)" if by_eps else "users needed"): [cell(n, lambda v: f"{int(v):,}") for n in table["n_users"]],
        ui.metric_name(metric): [cell(m, lambda v: ui.fmt_metric(metric, v)) for m in table["mean"]],
        "mean's 95% CI": [(f"[{ui.fmt_metric(metric, lo)}, {ui.fmt_metric(metric, hi)}]" if lo is not None
                           and not pd.isna(lo) else "—") for lo, hi in zip(table["ci_low"], table["ci_high"])],
        "fresh collections": table["trials"], "collections simulated": table["runs"],
        "attacker error (population prior)": [cell(a, ui.fmt_metres) for a in table["attacker_error_m"]],
        (f"attacker within {ui.fmt_metres(r_m)}" if r_m else "attacker within r"): within,
        "note": ["; ".join(x for x in (m, w, n) if x)
                 for m, w, n in zip(table["message"], table["scan_warning"], table["attacker_note"])],
    })
    out = out.sort_values("privacy", kind="stable")
    goal = (f"the smallest ε found at which one collection gives {unit} ≤ {target:g} "
            f"({int(cfg['n_users']):,} users)" if by_eps else
            f"the fewest users found for which one collection gives {unit} ≤ {target:g} at ε = {cfg['epsilon']:g} "
            "(at most everyone in the region: more would invent data)")
    ranges = "; ".join(sorted(set(table["search_range"])))
    r_note = next((n for n in table.get("attacker_r_note", pd.Series(dtype=object)) if isinstance(n, str) and n), "")
    st.markdown(f"For each mechanism, {goal}. **Meets it**: {tradeoff.rule_text()}; the mean's interval is a second "
                f"reading. Searched: {ranges} (a scan, so 'smallest found', not a proven smallest). The attacker knows "
                "the population density (the data set's own density stands in for a census) and sees one report at the "
                "answer" + (f"; 'within' uses r = {ui.fmt_metres(r_m)}" + (f" ({r_note})" if r_note else "")
                            + ", scored against people's positions inside their cells" if r_m else "") + ".")
    st.dataframe(out, hide_index=True)
    for name, warning in zip(table["mechanism"], table["warning"]):
        if warning:
            st.warning(f"**{by_name[name]['label']}.** {warning}", icon=":material/warning:")
    caveat = privacy_scale.like_for_like(set(table["privacy_model"]))
    if caveat:
        st.info(caveat, icon=":material/balance:")
    reached = table[table["reached"]]
    if len(reached):
        st.markdown("**Open an answer in Explore**" + ("" if by_eps else " (at the sidebar's ε, with the users found)"))
        cols = st.columns(min(4, len(reached)))
        for i, (_, row) in enumerate(reached.iterrows()):
            label = controls.short_label(by_name[row["mechanism"]])
            col = cols[i % len(cols)]
            if by_eps:
                eps = state.epsilon_for_use(float(row["epsilon"]))
                if not state.EPSILON_LINK_RANGE[0] <= eps <= state.EPSILON_LINK_RANGE[1]:
                    col.caption(f"{label}: ε = {eps:g} is outside the dashboard's range "
                                f"{state.EPSILON_LINK_RANGE[0]:g}-{state.EPSILON_LINK_RANGE[1]:g}.")
                    continue
                if col.button(f"Use ε = {eps:g} · {label}", key=f"goal:use:{row['mechanism']}",
                              help="Opens Explore with this mechanism at this ε (rounded up, so the target stays "
                                   "met)."):
                    # the answer's own collections come along: Explore's interval is then over as many (issue 27),
                    # and the answer with its reading, for Explore's report and JSON (ui.goal_for)
                    st.session_state[ui.GOAL_KEY] = {**ui.goal_row(row), "epsilon_used": eps}
                    session.open_page("explore.py", mechanism=row["mechanism"], epsilon=eps,
                                      trials=min(int(row["trials"]), state.MAX_TRIALS_UI))
            elif col.button(f"Use {int(row['n_users']):,} users · {label}", key=f"goal:use:{row['mechanism']}",
                            help="Opens Explore with this mechanism and this number of users."):
                st.session_state[ui.GOAL_KEY] = ui.goal_row(row)
                session.open_page("explore.py", mechanism=row["mechanism"], n_users=int(row["n_users"]),
                                  trials=min(int(row["trials"]), state.MAX_TRIALS_UI))
    st.download_button("Target search (CSV)", table.to_csv(index=False), "ldpviz-target.csv", "text/csv",
                       on_click="ignore")


cfg = session.setup_page("Compare")
st.title("Compare mechanisms on the same data, ε and grid")

data = controls.data_controls(cfg)
controls.privacy_controls(cfg)
controls.query_controls(cfg)
controls.run_controls(cfg)
basemap = controls.map_controls(cfg)

left, right = st.columns([3, 1])
chosen, by_name = controls.mechanisms_multiselect(
    cfg, "compare", controls.default_comparison(cfg["mechanism"]), where=left,
    help="Each runs with its default parameters at the ε, grid and users in the sidebar. The default picks one "
         "mechanism per family; add any other.")
mode = session.bind(cfg, "compare_mode", st.segmented_control, "Mode", list(MODES), valid=list(MODES),
                    format_func=MODES.get, required=True,
                    help="Compare at the sidebar's ε; or, for a target accuracy, find each mechanism's smallest ε "
                         "found (at the sidebar's users) or the fewest users it needs (at the sidebar's ε) for one "
                         "collection to meet it with probability 95%.")
metric_keys = list(metrics.METRIC_INFO) if mode == "at_epsilon" else list(tradeoff.TARGET_METRICS)
metric = session.bind(cfg, "metric", right.selectbox, "Rank by" if mode == "at_epsilon" else "Target metric",
                      metric_keys, valid=metric_keys, format_func=ui.metric_label,
                      help=explain.readout_help(cfg["metric"]) if cfg.get("metric") in metric_keys else None)
if mode != "at_epsilon":
    session.reset_when_changed(cfg, "metric", "target", state.COMPARE_TARGET_DEFAULTS[metric])
    if not cfg.get("target"):
        cfg["target"] = state.COMPARE_TARGET_DEFAULTS[metric]
    target = session.bind(cfg, "target", st.number_input, f"Target: {ui.metric_label(metric)} at most",
                          min_value=state.SETTING["target"].low, format="%g",
                          help="The accuracy you need from the one collection you will run: met when one "
                               "collection meets it with probability at least 95% (95% confidence, decided on fresh "
                               "collections; the mean alone is not enough). Each mechanism is scanned for the "
                               "smallest ε, or the fewest users, found to meet it. "
                               "Changing the metric resets this to the metric's default.")
session.sync_url(cfg)

if data is None or not chosen:
    st.info("Choose at least one mechanism to compare.")
    st.stop()

if mode != "at_epsilon":
    with guard("the target search", where="above"):
        require(float(target) > 0, "the target must be a number above 0")
        trials = tradeoff.DEFAULT_TRIALS   # the one-collection rule sets its own count (not the sidebar's trials)
        seeks = [controls.scenario(cfg, data, mechanism=n).with_(trials=trials) for n in chosen]
        seek_s = [compute.goal_seek_seconds(sc, trials, w2_target_m=compute.w2_target(mode, metric, target))
                  for sc in seeks]
        what = "smallest ε found" if mode == "target_epsilon" else "users needed"
        if not compute.approved_if_long(f"the {what} search for {explain.plural(len(chosen), 'mechanism')}",
                                        runtime_model.side_by_side_seconds(seek_s, tradeoff.seek_threads(len(seeks))),
                                        "the runs timed so far",
                                        f"goal:{mode}:{metric}:{target}:" + "|".join(map(repr, seeks)),
                                        runtime_model.side_by_side_seconds(
                                            [compute.goal_seek_seconds(sc, trials, "scan") for sc in seeks],
                                            tradeoff.seek_threads(len(seeks))) if mode == "target_epsilon" else None):
            st.stop()
        keys = [compute.goal_seek_key(mode, sc, metric, target, data.key) for sc in seeks]
        # the data object itself goes to the seek threads (they have no session to look an upload up in: issue 36)
        calls = [lambda sc=sc: compute.goal_answer(mode, sc, metric, float(target), data.dataset) for sc in seeks]
        held = {i for i in range(len(seeks)) if keys[i] in compute.goal_seeks_held()}
        todo = [i for i in range(len(seeks)) if i not in held]
        found: dict[int, dict] = {}
        with st.spinner(f"Searching the {what} for {explain.plural(len(seeks), 'mechanism')} (one collection, "
                        f"95%), {tradeoff.seek_threads(len(todo))} at a time ..."):
            for i in held:         # answered before on this server: read back
                found[i] = compute.held_goal_seek(keys[i], calls[i])
            waiting = st.empty()         # the time so far; a re-run (new inputs) stops the seeks through it
            for j, future in tradeoff.seeks_side_by_side([calls[i] for i in todo], [seek_s[i] for i in todo],
                                                         poll=compute.seek_poll(waiting, len(todo))):
                i = todo[j]
                try:
                    found[i] = compute.held_goal_seek(keys[i], calls[i], _found=future.result())
                except LdpvizInputError as exc:
                    st.error(f"{by_name[seeks[i].mechanism]['label']}: {exc}")
            waiting.empty()
        rows = [found[i] for i in sorted(found)]
        if not rows:
            st.stop()
        goal_seek_table(pd.DataFrame(rows), mode, metric, float(target), trials)
    st.stop()

longrun.stopped_notice()
with guard("the comparison"):
    outcomes = compute.results_or_announce([controls.scenario(cfg, data, mechanism=n) for n in chosen],
                                           f"this comparison of {explain.plural(len(chosen), 'mechanism')}",
                                           describe=lambda sc: by_name[sc.mechanism]["label"])
if outcomes is None:
    st.stop()
results = {n: r for n, r in zip(chosen, outcomes) if not isinstance(r, Exception)}
failed = {n: r for n, r in zip(chosen, outcomes) if isinstance(r, Exception)}
for name, exc in failed.items():
    with guard(by_name[name]["label"]):
        raise exc

if results:
    with guard("the comparison"):
        tidy = pd.DataFrame([row for r in results.values() for row in compute.sweep_rows(r)])
        table = experiment.summarise(tidy, ["mechanism"])
        ascending = ui.lower_is_better(metric)
        table = table.sort_values(metric, ascending=ascending).reset_index(drop=True)
        order = {m: i for i, m in enumerate(MODEL_ORDER)}
        table = table.sort_values("mechanism", key=lambda col: [order.get(by_name[n]["privacy_model"], 9)
                                                                for n in col], kind="stable").reset_index(drop=True)
        table["label"] = [by_name[n]["label"] for n in table["mechanism"]]
        table["model"] = [by_name[n]["privacy_model"] for n in table["mechanism"]]
        caveat = privacy_scale.like_for_like(set(table["model"]))
        # a mechanism whose map never left its uniform start is not an estimate: never ranked (issue 37.14)
        flat = [n for n, r in results.items() if r.start_map_trials() and all(r.start_map_trials())]
        if flat:
            st.warning("Not ranked: " + ", ".join(by_name[n]["label"] for n in flat) + f": {START_MAP_TEXT} in "
                       "every trial.", icon=":material/blur_on:")
        ranked = table[~table["mechanism"].isin(flat)].reset_index(drop=True)
        lines = []
        for model, group in ranked.groupby("model", sort=False):   # best first within each privacy model
            best = group.iloc[0]
            line = f"**{best['label']}** ({ui.fmt_metric(metric, best[metric])})"
            if len(group) > 1 and int(cfg["trials"]) > 1:
                second = group.iloc[1]
                overlap = (best[f"{metric}_hi"] >= second[f"{metric}_lo"]) if ascending else \
                    (best[f"{metric}_lo"] <= second[f"{metric}_hi"])
                if overlap:
                    line += f", though its confidence interval overlaps {second['label']}'s"
            lines.append((controls.model_tag(model), line, len(group)))
        if not lines:
            msg = "No mechanism's estimate left its uniform start at these settings, so none is named best."
        elif len(lines) == 1:
            msg = (f"Best for this data at ε = {cfg['epsilon']:g} by {ui.metric_label(metric)}: {lines[0][1]}.")
        else:
            msg = (f"Best within each privacy model at ε = {cfg['epsilon']:g} by {ui.metric_label(metric)}: "
                   + "; ".join(f"{tag}: {line}" for tag, line, _ in lines) + ".")
        if int(cfg["trials"]) == 1:
            msg += " With one trial there are no confidence intervals; raise Trials for them."
        st.success(msg, icon=":material/emoji_events:")
        grid = Grid(data.region, int(cfg["grid_side"]))
        show_weak_privacy({by_name[n]["label"]: w for n in table["mechanism"]
                           if (w := weak_privacy(n, grid, float(cfg["epsilon"])))})
        if caveat:
            st.info(caveat + " No winner is named across models.", icon=":material/balance:")
        shown = [metric] + [k for k in ("w2_m", "aqe", "kl", "l1", "emd_l1_m") if k != metric]
        table["label"] = [controls.short_label(by_name[n]) for n in table["mechanism"]]   # short: cells stay whole
        display = ui.confidence_table(table, "label", shown).rename(columns={"label": "mechanism"})
        display.insert(1, "privacy", [controls.model_tag(by_name[n]["privacy_model"]) for n in table["mechanism"]])
        grid = Grid(data.region, int(cfg["grid_side"]))
        display.insert(2, "LDP-equivalent ε", [equivalent_epsilon(n, grid) for n in table["mechanism"]])
        display["seconds"] = table["seconds"].round(2)
        st.dataframe(display, hide_index=True)
        st.plotly_chart(viz.compare_figure(table, metric, ui.metric_label(metric), label_column="label",
                                           floor=ui.metric_floor(metric)),
                        key="fig:compare")

        st.subheader("Estimated densities")
        first = next(iter(results.values()))
        vmax = max(float(first.true_density.max()), *(float(r.estimate.density.max()) for r in results.values()))
        panels = [("Truth", None)] + [(by_name[n]["label"] + (" · central DP (trusted aggregator)"
                                                              if by_name[n]["privacy_model"] == mechanisms.CENTRAL_DP
                                                              else ""),
                                       results[n]) for n in table["mechanism"]]
        px = ui.map_size("third", first.grid.region)
        for start in range(0, len(panels), 3):
            cols = st.columns(3, vertical_alignment="bottom")   # titles may wrap; the maps (last) line up
            for col, (title, res) in zip(cols, panels[start:start + 3]):
                with col:
                    st.markdown(f"**{title}**")
                    if res is None:
                        deck = viz.density_deck(first.grid, first.true_density, vmax=vmax, basemap=basemap, **px)
                        # every map has a line above it
                        st.caption(f"{explain.plural(first.n_users, 'user')}, before any noise")
                    else:
                        deck = viz.estimate_deck(res.grid, res.estimate.density, res.estimate.partition,
                                                 vmax=vmax, basemap=basemap, **px)
                        st.caption(f"{ui.metric_name(metric)} {ui.fmt_metric(metric, res.mean()[metric])}")
                    st.pydeck_chart(deck, height=px["height"], key=f"map:{title}")
        st.html(viz.legend_html(vmax))
        r1, r2 = st.columns([2, 1])
        r1.download_button("Comparison (CSV)", table.to_csv(index=False), "ldpviz-compare.csv", "text/csv",
                           on_click="ignore")
        if int(cfg["trials"]) >= 2:
            options = list(table["mechanism"])
            pick = session.bind(cfg, "report_mechanism", r2.selectbox, "Decision report for", options, valid=options,
                                format_func=lambda n: by_name[n]["label"])
            picked = results[pick]
            r2.download_button("Decision report (HTML)", lambda: report.build_report(
                picked.scenario, dataset=data.dataset, result=picked), f"ldpviz-decision-report-{pick}.html",
                "text/html", key="dl:compare-report", icon=":material/description:", on_click="ignore")
        else:
            r2.caption("The decision report (HTML) needs 2 or more trials for its confidence intervals.")
