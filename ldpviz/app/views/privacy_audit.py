"""Privacy audit: for every mechanism, the claimed guarantee against what its channel measures.

Channels are measured exactly on a small audit grid (default 8 x 8: a guarantee claimed for every
grid must hold on this one too), one cached row per mechanism, with a progress bar while rows
are computed. The black-box audit (ldpviz.evidence.audit, sampled reports) runs only when switched on.
"""

import math

import pandas as pd
import streamlit as st

from ldpviz.app import compute, controls, session, state, ui
from ldpviz.decide import explain, privacy_scale
from ldpviz import mechanisms
from ldpviz.geo.domain import Grid

cfg = session.setup_page("Privacy audit")
st.title("Privacy audit: does each mechanism keep its promise?")
st.markdown("For every registered mechanism at the ε in the sidebar: the guarantee it claims, the worst case measured "
            "from its channel (the table of report probabilities), and how far off an attacker's best guess "
            "of one person's location is. A channel passes when no report is more than e^ε times likelier "
            "from one location than from another (Geo-I: e^(ε·distance), ε per km). Central-DP mechanisms assume a "
            "trusted aggregator that sees exact locations: there is no per-user report to audit.")

data = controls.data_controls(cfg, show_users=False)
controls.privacy_controls(cfg)
sides = sorted(set(state.AUDIT_SIDES) | {int(cfg["audit_side"])})
side = int(session.bind(cfg, "audit_side", st.sidebar.select_slider, "Audit grid side", sides, valid=sides,
                        help="Channels are measured exactly on this small grid (a guarantee claimed for every grid "
                             "must hold here too). Larger grids take longer; some channels are only built for "
                             "small grids."))
blackbox = compute.blackbox_available()
if blackbox:
    st.sidebar.header("Black-box audit")
    run_blackbox = session.bind(cfg, "blackbox", st.sidebar.toggle, "Run the black-box audit",
                                help="Samples reports from pairs of hard-to-separate locations and certifies a "
                                     "lower bound on each mechanism's ε. Slower; results cached.")
    n_samples = session.bind(cfg, "blackbox_n", st.sidebar.select_slider, "Samples per location",
                             state.BLACKBOX_SAMPLES, valid=state.BLACKBOX_SAMPLES,
                             help="More samples give a tighter bound and take longer.")
else:
    run_blackbox, n_samples = False, 0
session.sync_url(cfg)
if data is None:
    st.stop()

eps = float(cfg["epsilon"])
grid = Grid(data.region, side)
st.caption(f"Audit grid: {side} × {side} cells of {ui.fmt_metres(grid.cell_m)} over the sidebar's region (the maps on "
           f"other pages use d = {cfg['grid_side']}). Every mechanism runs with its default parameters.")

population = ui.population_density(data.dataset, grid)
described = controls.mechanism_rows()
rows = []
bar = st.progress(0.0, text="Measuring channels ...")
for i, r in enumerate(described):
    bar.progress(i / len(described), text=f"Measuring {r['label']} ({i + 1} of {len(described)}) ...")
    audit = compute.audit_row(r["name"], side, data.region, eps)
    measured = audit["measured"]
    entry = {"mechanism": r["label"], "privacy model": controls.model_tag(r["privacy_model"]),
             "claimed guarantee": audit["guarantee"],
             "claimed ε (as measured)": (None if audit.get("claimed") is None else round(audit["claimed"], 6)),
             "measured ε (worst case)": (None if measured is None else
                                         compute.UNDETERMINED if math.isnan(measured) else
                                         (math.inf if math.isinf(measured) else round(measured, 6))),
             "max ratio / e^ε": (None if measured is None or r["privacy_model"] in (mechanisms.GEO_I,
                                                                                     mechanisms.NO_PRIVACY) else
                                 compute.UNDETERMINED if math.isnan(measured) else
                                 (math.inf if math.isinf(measured) else
                                  privacy_scale.ratio_text(measured - audit["claimed"]))),
             "verdict": audit["verdict"] + (f": {audit['why']}" if audit.get("why") else "")}
    pop, uni, why = ui.attacker_errors_m(r["name"], grid, eps, (), population)
    entry["attacker error (population prior)"] = ui.fmt_metres(pop) if pop is not None else "—"
    entry["attacker error (uniform prior)"] = ui.fmt_metres(uni) if uni is not None else "—"
    seconds = audit["seconds"]
    if run_blackbox:
        bar.progress(i / len(described), text=f"Black-box audit of {r['label']} ({i + 1} of {len(described)}) ...")
        bb = compute.blackbox_row(r["name"], side, data.region, eps, int(n_samples), int(cfg["seed"]))
        entry["black-box lower bound ε"] = None if bb["lower_bound"] is None else round(bb["lower_bound"], 4)
        entry["black-box verdict"] = bb["status"]
        seconds += bb["seconds"]
    entry["seconds"] = round(seconds, 3)
    rows.append(entry)
bar.empty()
table = pd.DataFrame(rows)
first = ["mechanism", "privacy model", "verdict", "claimed ε (as measured)", "measured ε (worst case)",
         "max ratio / e^ε", "attacker error (population prior)", "attacker error (uniform prior)"]
table = table[first + [c for c in table.columns if c not in first]]
fails = table[table["verdict"] == compute.FAIL]
undetermined = table[table["verdict"].str.startswith(compute.UNDETERMINED)]
measured_n = int((table["verdict"] == compute.PASS).sum())
if len(fails):
    st.error(f"{len(fails)} mechanism(s) exceed their claimed ε: {', '.join(fails['mechanism'])}.",
             icon=":material/gpp_bad:")
elif measured_n:
    st.success(f"{measured_n} mechanism(s) with a measurable private channel keep their claimed guarantee at "
               f"ε = {eps:g} on the {side} × {side} audit grid; the verdict column says why the other "
               f"{len(table) - measured_n} are not measured or not determined here.",
               icon=":material/verified_user:")
if len(undetermined):
    st.warning(f"Channel check undetermined for {', '.join(undetermined['mechanism'])}: on this region the guarantee "
               "allows probability ratios beyond 10^300, so report probabilities underflow in floating point and "
               "the worst case cannot be measured (neither a pass nor a violation).", icon=":material/help:")
if run_blackbox and "black-box verdict" in table:
    broken = table[table["black-box verdict"] == "failed"]
    audited = int(table["black-box verdict"].str.startswith(("passed", "no violation")).sum())
    if len(broken):
        st.error(f"The black-box audit certifies a privacy loss above the claim for: {', '.join(broken['mechanism'])}.",
                 icon=":material/gpp_bad:")
    else:
        exact = (f" This does not overrule the exact channel check above, which fails for "
                 f"{', '.join(fails['mechanism'])}." if len(fails) else "")
        st.info(f"Black-box audit ({int(n_samples):,} sampled reports per location, seed {cfg['seed']}): the "
                f"{audited} mechanisms audited from their client reports show no certified privacy loss above their "
                "claim (no violation found, not a proof; central-DP and multi-round mechanisms have no single client "
                f"report to sample).{exact}", icon=":material/science:")
# Empty cells read "—" (not measured here, see the verdict), never "None".
# Every cell is text, so a column that mixes numbers and "—" still converts to Arrow cleanly.
st.dataframe(table.apply(lambda col: col.map(lambda v: "—" if pd.isna(v) else (f"{v:.6g}" if isinstance(v, float)
                                                                                 else str(v)))),
             hide_index=True, column_config={
    column: st.column_config.Column(help=explain.readout_help(key)) for column, key in (
        ("measured ε (worst case)", "measured_epsilon"), ("max ratio / e^ε", "ratio_over_bound"),
        ("attacker error (population prior)", "attacker_error_m"),
        ("attacker error (uniform prior)", "attacker_error_m"))
    if column in table})
st.caption("Measured ε = max over reports of log(max P / min P) across true cells, computed exactly from each "
           "mechanism's channel with its default parameters on the audit grid; 'max ratio / e^ε' ≤ 1 means the "
           "guarantee holds (Geo-I: the largest log-ratio per cell side of distance, compared with the slider's ε per "
           "km times the cell side in km: the 'claimed ε (as measured)' column). Attacker error: expected "
           "distance between a person's cell and the best guess of a Bayesian attacker who sees one report and "
           "knows the population density (the data set's own density on the audit grid stands in for a census: a "
           "slightly stronger attacker than real census tables; Shokri et al. S&P'11). Beside it, "
           "an attacker assuming people could be anywhere (uniform prior, the DAM paper's assumption, eq. 15–16)."
           + (" Black-box lower bound: a certified lower bound on ε from sampled reports; it "
              "must not exceed the claim." if blackbox else
              " A black-box audit (sampled reports) appears when this installation includes the black-box auditor."))
st.download_button("Audit (CSV)", table.to_csv(index=False), "ldpviz-audit.csv", "text/csv", on_click="ignore")
