"""Trade-offs: sweeps over epsilon, d, or any mechanism parameter, with confidence bands."""

import pandas as pd
import streamlit as st

from dashboard import compute, longrun, session, state, ui
from ldpviz import experiment, mechanisms, metrics, viz
from ldpviz.errors import LdpvizInputError


cfg = session.setup_page("Trade-offs")
st.title("Trade-offs: accuracy against ε, grid side and parameters")

data = session.data_controls(cfg)
session.privacy_controls(cfg)
session.query_controls(cfg)
session.run_controls(cfg)

chosen, by_name = session.mechanisms_multiselect(cfg, "sweep_mechanisms", [cfg["mechanism"]])

# Sweepable axes: epsilon, d, and every numeric parameter of the chosen mechanisms.
axes = {"epsilon": "ε (privacy budget)", "grid_side": "grid side d"}
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

if data is None or not chosen:
    st.info("Choose at least one mechanism.")
    st.stop()

with session.guard("the sweep", where="above or in the sidebar"):
    kind = int if vary == "grid_side" else param_kind.get(vary, float)
    values = state.parse_values(values_text, kind)
    if vary == "epsilon":
        for v in values:
            mechanisms.validate_epsilon(v)
    current = {"epsilon": float(cfg["epsilon"]), "grid_side": int(cfg["grid_side"])}.get(vary)
    if current is None:
        current = cfg.get("params", {}).get(cfg["mechanism"], {}).get(vary)
    if current is None:   # the parameter's registry default, when it is a number
        current = next((p["default"] for n in chosen for p in by_name[n]["params"]
                        if p["name"] == vary and isinstance(p["default"], (int, float))), None)
    scenarios, skipped = [], []
    for name in chosen:
        own = {p["name"] for p in by_name[name]["params"]}
        if vary not in axes or (vary not in ("epsilon", "grid_side") and vary not in own):
            skipped.append(by_name[name]["label"])
            continue
        base = session.scenario(cfg, data, mechanism=name)
        scenarios += experiment.expand(base, {vary: values})
    if skipped:
        st.caption(f"Not swept (no parameter '{vary}'): {', '.join(skipped)}.")
    n_runs = len(scenarios) * int(cfg["trials"])
    st.caption(f"{len(scenarios)} settings × {cfg['trials']} trials = {n_runs} runs; each setting is cached, "
               f"so revisiting a sweep is instant. Current setting: {axes[vary]} = {current if current is not None else 'default'}.")
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
    x = vary if vary in ("epsilon", "grid_side") else f"param_{vary}"
    summary = experiment.summarise(tidy, ["mechanism", x])
    summary["mechanism"] = [by_name[n]["label"] for n in summary["mechanism"]]
    log_x = vary == "epsilon" and max(values) / min(values) >= 10
    cols = st.columns(2)
    for i, key in enumerate(shown):
        fig = viz.sweep_figure(summary, x, key, current=current, metric_label=ui.metric_label(key),
                               x_label=axes[vary], log_x=log_x, floor=ui.metric_floor(key))
        cols[i % 2].plotly_chart(fig, key=f"fig:{key}")
    if int(cfg["trials"]) == 1:
        st.caption("Bands are 95% confidence intervals over trials; raise Trials in the sidebar to see them.")
    d1, d2 = st.columns(2)
    d1.download_button("Every run (CSV)", tidy.to_csv(index=False), "ldpviz-sweep-runs.csv", "text/csv")
    d2.download_button("Means and confidence intervals (CSV)", summary.to_csv(index=False),
                       "ldpviz-sweep-summary.csv", "text/csv")
    with st.expander("Reproduce with the ldpviz API"):
        base = session.scenario(cfg, data, mechanism=chosen[0])
        st.code(compute.python_snippet(base, data.upload_filename).replace(
            "result = run(scenario", "from ldpviz import sweep, summarise\n"
            f"runs = sweep(scenario, {{{vary!r}: {values!r}}}").replace(
            "print(result.metrics.mean(numeric_only=True))", f"print(summarise(runs, ['mechanism', {x!r}]))"),
            language="python")
