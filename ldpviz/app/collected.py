"""Data -> Collected reports: open what a deployed collection sent back (issue 29).

The officer uploads the ``collection.json`` the phones used and the reports file; the estimate runs here with the
mechanism's own server half, exactly as ``ldpviz estimate`` does (:mod:`ldpviz.deploy.estimate`), and the page
shows the map, the per-cell intervals, every rejected line by reason, and the ledger. Both files stay in this
server's memory only.
"""

from __future__ import annotations

import json

import pandas as pd
import streamlit as st

from ldpviz.app import ui
from ldpviz.app.errors import guard
from ldpviz.deploy import estimate as deployed
from ldpviz.deploy import spec as specs
from ldpviz.errors import LdpvizInputError
from ldpviz.render import export
from ldpviz.render import maps as viz

#: Bootstrap resamples for the page's intervals (the command's default).
BOOTSTRAP = 40


def _estimate(spec_file, reports_file) -> deployed.DeployedEstimate:
    """The estimate of an uploaded pair, remembered per pair of uploads for this session."""
    key = (getattr(spec_file, "file_id", spec_file.name), getattr(reports_file, "file_id", reports_file.name))
    memo = st.session_state.setdefault("collected_estimates", {})
    if key not in memo:
        try:
            spec = json.loads(spec_file.getvalue().decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise LdpvizInputError(f"{spec_file.name} is not a JSON collection spec ({exc})") from None
        spec = specs.verify_spec(spec, spec_file.name)
        memo.clear()                      # one result at a time: uploads can be large
        memo[key] = deployed.estimate_reports(spec, reports_file, bootstrap=BOOTSTRAP)
    return memo[key]


def show_collected_reports(basemap: bool = False) -> None:
    """The "Collected reports" section of the Data page."""
    st.subheader("Collected reports")
    st.markdown("Open what a deployed collection sent back: the `collection.json` the phones used (from `ldpviz "
                "deploy`) and the reports file (JSON lines or CSV). The estimate runs here, with the mechanism's "
                "own server half, as `ldpviz estimate` does; both files stay in this server's memory only.")
    c1, c2 = st.columns(2)
    spec_file = c1.file_uploader("collection.json", type=["json"], key="w:collected_spec")
    reports_file = c2.file_uploader("Reports", type=["jsonl", "ndjson", "json", "csv", "txt"],
                                    key="w:collected_reports")
    if spec_file is None or reports_file is None:
        st.caption("Upload both files to see the estimated map.")
        return
    with guard("the collected reports' estimate", where="(the uploaded files)"):
        with st.spinner("Checking every report and estimating ..."):
            result = _estimate(spec_file, reports_file)
        summary = result.summary()
        k1, k2, k3 = st.columns(3)
        k1.metric("Lines read", f"{summary['lines']:,}")
        k2.metric("Valid reports", f"{summary['accepted']:,}")
        k3.metric("Rejected", f"{summary['rejected']:,}")
        for warning in result.warnings:
            st.warning(warning, icon=":material/warning:")
        if summary["rejected"]:
            st.table(pd.DataFrame([{"reason": r, "lines": n, "first line numbers": ", ".join(
                map(str, summary["rejected_examples_line_numbers"].get(r, [])))}
                for r, n in summary["rejected_by_reason"].items()]).set_index("reason"))
        st.markdown(f"**{result.mechanism.label}**: {summary['guarantee']}.")
        sentence = summary["ledger"].get("sentence") if isinstance(summary["ledger"], dict) else None
        if sentence:
            st.markdown(f"**What each person paid:** {sentence}")
        grid = result.mechanism.grid
        px = ui.map_size("full", grid.region)
        deck = viz.density_deck(grid, result.density, basemap=basemap, **px)
        st.pydeck_chart(deck, height=px["height"], key="map:collected")
        st.caption(f"Estimated share of people per cell from {summary['accepted']:,} reports; intervals: "
                   f"{summary['interval']}.")
        layers = {"estimated_share": result.density.ravel(), "low_95": result.low, "high_95": result.high}
        st.download_button("Estimate with intervals (CSV)", export.grid_csv(grid, layers),
                           file_name="estimate.csv", mime="text/csv", key="dl:collected", on_click="ignore")
