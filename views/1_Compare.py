"""Compare: several mechanisms at the same epsilon, grid and data."""

import pandas as pd
import streamlit as st

from dashboard import compute, controls, longrun, session, ui
from ldpviz import experiment, mechanisms, metrics, privacy_scale, viz

cfg = session.setup_page("Compare")
st.title("Compare mechanisms on the same data, ε and grid")

data = session.data_controls(cfg)
session.privacy_controls(cfg)
session.query_controls(cfg)
session.run_controls(cfg)

left, right = st.columns([3, 1])
chosen, by_name = session.mechanisms_multiselect(
    cfg, "compare", session.default_comparison(cfg["mechanism"]), where=left,
    help="Each runs with its default parameters at the ε, grid and users in the sidebar. The default picks one "
         "mechanism per family; add any other.")
metric_keys = list(metrics.METRIC_INFO)
metric = session.bind(cfg, "metric", right.selectbox, "Rank by", metric_keys, valid=metric_keys,
                      format_func=ui.metric_label)
session.sync_url(cfg)

if data is None or not chosen:
    st.info("Choose at least one mechanism to compare.")
    st.stop()

longrun.stopped_notice()
with session.guard("the comparison"):
    outcomes = compute.results_or_announce([session.scenario(cfg, data, mechanism=n) for n in chosen],
                                           f"this comparison of {len(chosen)} mechanisms",
                                           describe=lambda sc: by_name[sc.mechanism]["label"])
if outcomes is None:
    st.stop()
results = {n: r for n, r in zip(chosen, outcomes) if not isinstance(r, Exception)}
failed = {n: r for n, r in zip(chosen, outcomes) if isinstance(r, Exception)}
for name, exc in failed.items():
    with session.guard(by_name[name]["label"]):
        raise exc

if results:
    with session.guard("the comparison"):
        tidy = pd.DataFrame([row for r in results.values() for row in compute.sweep_rows(r)])
        table = experiment.summarise(tidy, ["mechanism"])
        ascending = ui.lower_is_better(metric)
        table = table.sort_values(metric, ascending=ascending).reset_index(drop=True)
        table["label"] = [by_name[n]["label"] for n in table["mechanism"]]
        table["model"] = [by_name[n]["privacy_model"] for n in table["mechanism"]]
        caveat = privacy_scale.like_for_like(set(table["model"]))
        lines = []
        for model, group in table.groupby("model", sort=False):   # best first within each privacy model
            best = group.iloc[0]
            line = f"**{best['label']}** ({ui.fmt_metric(metric, best[metric])})"
            if len(group) > 1 and int(cfg["trials"]) > 1:
                second = group.iloc[1]
                overlap = (best[f"{metric}_hi"] >= second[f"{metric}_lo"]) if ascending else \
                    (best[f"{metric}_lo"] <= second[f"{metric}_hi"])
                if overlap:
                    line += f", though its confidence interval overlaps {second['label']}'s"
            lines.append((session.model_tag(model), line, len(group)))
        if len(lines) == 1:
            msg = (f"Best for this data at ε = {cfg['epsilon']:g} by {ui.metric_label(metric)}: {lines[0][1]}.")
        else:
            msg = (f"Best within each privacy model at ε = {cfg['epsilon']:g} by {ui.metric_label(metric)}: "
                   + "; ".join(f"{tag}: {line}" for tag, line, _ in lines) + ".")
        if int(cfg["trials"]) == 1:
            msg += " With one trial there are no confidence intervals; raise Trials for them."
        st.success(msg, icon=":material/emoji_events:")
        if caveat:
            st.info(caveat + " No winner is named across models.", icon=":material/balance:")
        shown = [metric] + [k for k in ("w2_m", "aqe", "kl", "l1", "emd_l1_m") if k != metric]
        table["label"] = [controls.short_label(by_name[n]) for n in table["mechanism"]]   # short: cells stay whole
        display = ui.confidence_table(table, "label", shown).rename(columns={"label": "mechanism"})
        display.insert(1, "privacy", [session.model_tag(by_name[n]["privacy_model"]) for n in table["mechanism"]])
        display["seconds"] = table["seconds"].round(2)
        st.dataframe(display, hide_index=True)
        st.plotly_chart(viz.compare_figure(table, metric, ui.metric_label(metric), label_column="label",
                                           floor=ui.metric_floor(metric)),
                        key="fig:compare")

        st.subheader("Estimated densities")
        first = next(iter(results.values()))
        vmax = max(float(first.true_density.max()), *(float(r.estimate.density.max()) for r in results.values()))
        panels = [("Truth", None)] + [(by_name[n]["label"] + (" · central DP (trusted aggregator)" if
                                                             by_name[n]["privacy_model"] == mechanisms.CENTRAL_DP else ""),
                                       results[n]) for n in table["mechanism"]]
        for start in range(0, len(panels), 3):
            cols = st.columns(3)
            for col, (title, res) in zip(cols, panels[start:start + 3]):
                with col:
                    st.markdown(f"**{title}**")
                    if res is None:
                        deck = viz.density_deck(first.grid, first.true_density, vmax=vmax, height=300)
                    else:
                        deck = viz.estimate_deck(res.grid, res.estimate.density, res.estimate.partition,
                                                 vmax=vmax, height=300)
                        st.caption(f"{ui.metric_label(metric)} {ui.fmt_metric(metric, res.mean()[metric])}")
                    st.pydeck_chart(deck, height=300, key=f"map:{title}")
        st.html(viz.legend_html(vmax))
        st.download_button("Comparison (CSV)", table.to_csv(index=False), "ldpviz-compare.csv", "text/csv")
