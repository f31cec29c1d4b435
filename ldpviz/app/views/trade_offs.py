"""Trade-offs: sweeps over epsilon, d, the number of users or any mechanism parameter, with confidence bands;
the privacy-accuracy frontier (ldpviz.decide.tradeoff.frontier) and the budget over time (ldpviz.decide.budget.plan)."""

import math

import pandas as pd
import streamlit as st

from ldpviz.app import compute, controls, longrun, session, state, ui
from ldpviz.app.errors import guard
from ldpviz.decide import budget, explain, tradeoff
from ldpviz import experiment, mechanisms, metrics
from ldpviz.render import maps as viz
from ldpviz.errors import LdpvizInputError
from ldpviz.mechanisms.accounting import collection_ledger, setting_text
from ldpviz.mechanisms.base import UNIT_PERSON


cfg = session.setup_page("Trade-offs")
st.title("Trade-offs: accuracy against ε, grid side and parameters")

data = controls.data_controls(cfg)
controls.privacy_controls(cfg)
controls.query_controls(cfg)
controls.run_controls(cfg)

chosen, by_name = controls.mechanisms_multiselect(cfg, "sweep_mechanisms", [cfg["mechanism"]])

# Sweepable axes: epsilon, d, and every numeric parameter of the chosen mechanisms.
axes = {"epsilon": "ε (privacy budget)", "grid_side": "grid side d", "n_users": "number of users"}
param_kind = {}
for name in chosen:
    for p in by_name[name]["params"]:
        if p["type"] in ("int", "float") and not p["choices"]:
            axes.setdefault(p["name"], f"parameter: {p['name']}")
            param_kind[p["name"]] = int if p["type"] == "int" else float
c1, c2, c3 = st.columns([1, 2, 2])
vary = session.bind(cfg, "vary", c1.selectbox, "Vary", list(axes), valid=list(axes), format_func=axes.get)
prev_vary = st.session_state.get("sweep_prev_vary")
if (prev_vary is not None and prev_vary != vary) or not cfg.get("values"):
    default_values = state.DEFAULT_SWEEP_VALUES.get(vary)
    if default_values is None:
        spec = next(p for n in chosen for p in by_name[n]["params"] if p["name"] == vary)
        base = spec["default"] if spec["default"] is not None else 1
        default_values = ", ".join(f"{v:g}" for v in sorted({base * m for m in (0.5, 1, 2, 4)}))
    cfg["values"] = default_values
st.session_state["sweep_prev_vary"] = vary
values_text = session.bind(cfg, "values", c2.text_input, "Values (comma-separated)")
metric_keys = list(metrics.METRIC_INFO)
cfg["sweep_metrics"] = [k for k in cfg.get("sweep_metrics") or [] if k in metric_keys]
shown = session.bind(cfg, "sweep_metrics", c3.multiselect, "Metrics", metric_keys, format_func=ui.metric_label)
session.sync_url(cfg)

sweep_box, frontier_box, budget_box = st.container(), st.container(), st.container()


def budget_panel() -> None:
    """How often data are collected and what it adds up to (ldpviz.decide.budget.plan, sequential composition)."""
    st.subheader("Budget over time")
    model = by_name[chosen[0]]["privacy_model"] if chosen else mechanisms.LDP
    unit = "per km" if model == mechanisms.GEO_I else ""
    b1, b2, b3, b4 = st.columns(4)
    times = session.bind(cfg, "budget_times", b1.number_input, "Collections", step=1,
                         **state.SETTING["budget_times"].widget_bounds())
    every = session.bind(cfg, "budget_every", b2.selectbox, "per", state.BUDGET_UNITS, valid=state.BUDGET_UNITS)
    period = session.bind(cfg, "budget_period", b3.number_input, "for", format="%g",
                          **state.SETTING["budget_period"].widget_bounds())
    period_unit = session.bind(cfg, "budget_unit", b4.selectbox, "period unit", state.BUDGET_UNITS,
                               valid=state.BUDGET_UNITS, format_func=lambda u: f"{u}(s)")
    from_total = session.bind(cfg, "budget_from_total", st.toggle, "Start from a total budget",
                              help="Off: the sidebar's ε is spent at every collection and the total is what "
                                   "they add up to. On: give the total for the whole period; the ε per "
                                   "collection is derived.")
    label = ("Total ε per km for one person over the period (Geo-I; a paid region's ε0 is LDP, stated beside it)"
             if unit else "Total ε for one person over the period (the region's ε0 included)")
    total = (session.bind(cfg, "budget_total", st.number_input, label,
                          format="%g", **state.SETTING["budget_total"].widget_bounds()) if from_total else None)
    with guard("the budget over time", where="above"):
        ledger = None
        if chosen and data is not None:       # what one collection charges (region's ε0 included): the accountant
            mech = compute.built_mechanism(chosen[0], int(cfg["grid_side"]), data.region, float(cfg["epsilon"]), ())
            ledger = collection_ledger(mech, data.region, unit=UNIT_PERSON, reports_basis="one report per person per "
                                       "collection", region_basis="each person reports their map tile once")
            if from_total and not math.isclose(ledger.charges[-1].epsilon, float(cfg["epsilon"]), rel_tol=1e-9):
                st.info(f"{chosen[0]}'s slider is not the ε it is charged ({setting_text(mech)}), so a total cannot be "
                        "split into a slider value; give the ε per collection instead.")
                return
        found = budget.plan(every=every, period=float(period), period_unit=period_unit, times_per=int(times),
                            per_collection_epsilon=None if from_total else float(cfg["epsilon"]),
                            total_epsilon=float(total) if from_total else None, epsilon_unit=unit, ledger=ledger)
        k1, k2, k3 = st.columns(3)
        k1.metric("Collections", f"{found['collections']:,}", help=explain.readout_help("collections"))
        k2.metric("Charged per collection", found["per_collection_text"],
                  help=explain.readout_help("epsilon_per_collection"))
        k3.metric("Total ε (one person, whole period)", found["total_text"],
                  help=explain.readout_help("total_epsilon"))
        st.markdown(found["sentence"])
        for warning in found["warnings"]:
            st.warning(warning[0].upper() + warning[1:] + ".")
        per = round(found["per_collection_epsilon"], 3)
        if from_total and state.EPSILON_RANGE[0] <= per <= state.EPSILON_RANGE[1] and per != cfg["epsilon"]:
            paid = "; the region's ε0 is charged besides" if ledger is not None and len(ledger.charges) > 1 else ""
            if st.button(f"Use ε = {per:g} per report in the sidebar{paid}", key="budget:use"):
                session.set_and_rerun(epsilon=per)
        st.caption("Protects all of one person's reports over the period; totals add up by sequential "
                   "composition (Dwork & Roth, Thm 3.16), exact for a person who stays put.")


with budget_box:
    budget_panel()
session.sync_url(cfg)

if data is None or not chosen:
    st.info("Choose at least one mechanism.")
    st.stop()


def frontier_panel() -> None:
    """Metric against the population-prior attacker's error, one curve per mechanism, one point per ε."""
    st.subheader("Privacy–accuracy frontier")
    on = session.bind(cfg, "frontier", st.toggle, "Draw the privacy–accuracy frontier",
                      help="For each mechanism and ε: accuracy against how far off an attacker's best guess of one "
                           "person's location is (the attacker knows the population density; the data set's own "
                           "density stands in for a census). Runs every ε of the sweep (or the default ε values).")
    session.sync_url(cfg)
    if not on:
        return
    with guard("the frontier", where="above or in the sidebar"):
        eps = (state.parse_values(values_text) if vary == "epsilon"
               else state.parse_values(state.DEFAULT_SWEEP_VALUES["epsilon"]))
        for v in eps:
            mechanisms.validate_epsilon(v)
        metric = next((k for k in shown if k in tradeoff.TARGET_METRICS), "w2_m")
        base = controls.scenario(cfg, data, mechanism=chosen[0])
        seconds = sum(compute.predicted_seconds(base.with_(mechanism=n))[0] for n in chosen) * len(eps)
        if not compute.approved_if_long(f"the frontier of {len(chosen)} mechanism(s) at {len(eps)} ε values",
                                        seconds, "the runs timed so far",
                                        f"frontier:{metric}:{eps}:{chosen}:{base!r}"):
            return
        _, key = compute.get_dataset(base.dataset)
        with st.spinner("Computing the frontier ..."):
            plans = {n: ui.attacker_plan(n, base.grid_side) for n in chosen}
            table = compute.frontier(base, tuple(chosen), tuple(eps), metric, (base.n_users,),
                                     tuple(plans[n][0] for n in chosen), key, compute.dataset_arg(base.dataset))
        if "attacker_error_m" not in table:
            table["attacker_error_m"] = None
        labels = {n: f"{controls.model_tag(by_name[n]['privacy_model'])} · {by_name[n]['label']}" for n in chosen}
        st.plotly_chart(viz.frontier_figure(table, metric, metric_label=ui.metric_label(metric), labels=labels,
                                            floor=ui.metric_floor(metric)),
                        key="fig:frontier")
        notes = table["attacker_note"] if "attacker_note" in table else pd.Series([""] * len(table))
        missing = sorted({f"{labels[n]}: {plans[n][1] or note or 'not available'}"
                          for n, a, note in zip(table["mechanism"], table["attacker_error_m"], notes.fillna(""))
                          if pd.isna(a)})
        st.caption(f"{ui.metric_label(metric)}: mean and 95% CI over {cfg['trials']} trial(s). Up and left is worse on "
                   "both counts: a mechanism whose curve lies below and to the right of another's is better at every "
                   "trade." + (f" Not drawn (no attacker error: {'; '.join(missing)})." if missing else ""))
        st.download_button("Frontier (CSV)", table.to_csv(index=False), "ldpviz-frontier.csv", "text/csv",
                           key="dl:frontier", on_click="ignore")


with frontier_box:
    frontier_panel()

with sweep_box, guard("the sweep", where="above or in the sidebar"):
    kind = int if vary in ("grid_side", "n_users") else param_kind.get(vary, float)
    values = state.parse_values(values_text, kind)
    if vary == "epsilon":
        for v in values:
            mechanisms.validate_epsilon(v)
    if vary == "n_users":
        for v in values:
            if v < 1:
                raise LdpvizInputError(f"the number of users must be at least 1, got {v}")
    current = {"epsilon": float(cfg["epsilon"]), "grid_side": int(cfg["grid_side"]),
               "n_users": int(cfg["n_users"]) or None}.get(vary)
    if current is None:
        current = cfg.get("params", {}).get(cfg["mechanism"], {}).get(vary)
    if current is None:   # the parameter's registry default, when it is a number
        current = next((p["default"] for n in chosen for p in by_name[n]["params"]
                        if p["name"] == vary and isinstance(p["default"], (int, float))), None)
    scenarios, skipped = [], []
    for name in chosen:
        own = {p["name"] for p in by_name[name]["params"]}
        if vary not in axes or (vary not in ("epsilon", "grid_side", "n_users") and vary not in own):
            skipped.append(by_name[name]["label"])
            continue
        base = controls.scenario(cfg, data, mechanism=name)
        scenarios += experiment.expand(base, {vary: values})
    if skipped:
        st.caption(f"Not swept (no parameter '{vary}'): {', '.join(skipped)}.")
    n_runs = len(scenarios) * int(cfg["trials"])
    st.caption(f"{explain.plural(len(scenarios), 'setting')} × {explain.plural(int(cfg['trials']), 'trial')} = "
               f"{explain.plural(n_runs, 'run')}; each setting is cached, "
               f"so revisiting a sweep is instant. Current setting: {axes[vary]} = "
               f"{current if current is not None else 'default'}.")
    longrun.stopped_notice()

    def setting(sc) -> str:
        return f"{by_name[sc.mechanism]['label']} at {vary} = {getattr(sc, vary, sc.param_dict.get(vary))}"

    outcomes = compute.results_or_announce(scenarios, f"this sweep of {n_runs} runs", describe=setting)
    if outcomes is None:
        st.stop()
    tidy_rows, errors = [], []
    for sc, outcome in zip(scenarios, outcomes):
        if isinstance(outcome, LdpvizInputError):
            errors.append(f"{setting(sc)}: {outcome}")
        elif isinstance(outcome, Exception):
            raise outcome
        else:
            tidy_rows += compute.sweep_rows(outcome)
    for err in errors[:5]:
        st.error(err)
    if not tidy_rows:
        st.stop()
    tidy = pd.DataFrame(tidy_rows)
    x = vary if vary in ("epsilon", "grid_side", "n_users") else f"param_{vary}"
    summary = experiment.summarise(tidy, ["mechanism", x])
    shown_as = {n: f"{controls.model_tag(by_name[n]['privacy_model'])} · {by_name[n]['label']}"
                for n in summary["mechanism"].unique()}       # labelled by privacy model: ε differs between models
    summary["mechanism"] = [shown_as[n] for n in summary["mechanism"]]
    log_x = vary in ("epsilon", "n_users") and max(values) / min(values) >= 10
    cols = st.columns(2)
    for i, key in enumerate(shown):
        fig = viz.sweep_figure(summary, x, key, current=current, metric_label=ui.metric_label(key),
                               x_label=axes[vary], log_x=log_x, floor=ui.metric_floor(key),
                               mechanism_of={label: n for n, label in shown_as.items()})
        cols[i % 2].plotly_chart(fig, key=f"fig:{key}")
    # points whose estimate never left its uniform start are marked on the curves and named here (issue 37.14)
    start_map = experiment.start_map_sweep_note(summary, ["mechanism", x], {x: axes[vary]})
    if start_map:
        st.warning(f"**Not an estimate (circled ✕ on the curves):** {start_map}", icon=":material/blur_on:")
    if int(cfg["trials"]) == 1:
        st.caption("Bands are 95% confidence intervals over trials; raise Trials in the sidebar to see them.")
    d1, d2 = st.columns(2)
    d1.download_button("Every run (CSV)", tidy.to_csv(index=False), "ldpviz-sweep-runs.csv", "text/csv",
                       on_click="ignore")
    d2.download_button("Means and confidence intervals (CSV)", summary.to_csv(index=False),
                       "ldpviz-sweep-summary.csv", "text/csv", on_click="ignore")
    with st.expander("Reproduce with the ldpviz API"):
        base = controls.scenario(cfg, data, mechanism=chosen[0])
        st.code(compute.python_snippet(base, data.upload_filename).replace(
            "result = run(scenario", "from ldpviz import sweep, summarise\n"
            f"runs = sweep(scenario, {{{vary!r}: {values!r}}}").replace(
            "print(result.metrics.mean(numeric_only=True))", f"print(summarise(runs, ['mechanism', {x!r}]))"),
            language="python")
