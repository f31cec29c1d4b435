"""Privacy audit: for every mechanism, the claimed guarantee against what its channel measures."""

import importlib
import importlib.util
import math

import numpy as np
import pandas as pd
import streamlit as st

from dashboard import compute, session, ui
from ldpviz import mechanisms
from ldpviz.errors import LdpvizInputError

AUDIT_SIDES = (4, 8, 12, 16, 24, 32)

cfg = session.setup_page("Privacy audit")
st.title("Privacy audit: does each mechanism keep its promise?")
st.markdown("For every registered mechanism at the ε below: the guarantee it claims, the worst case measured "
            "from its channel (the table of report probabilities), and how far off an attacker's best guess "
            "of one person's location is. A channel passes when no report is more than e^ε times likelier "
            "from one location than from another (Geo-I: e^(ε·distance)).")

data = session.data_controls(cfg, show_users=False)
session.privacy_controls(cfg)
session.sync_url(cfg)
if data is None:
    st.stop()

eps = float(cfg["epsilon"])
side = min(int(cfg["grid_side"]), max(AUDIT_SIDES))
if side != int(cfg["grid_side"]):
    st.caption(f"Channels are measured on a {side} × {side} grid (the current d = {cfg['grid_side']} is larger "
               "than the audit's memory budget).")

has_audit = importlib.util.find_spec("ldpviz.audit") is not None


def audited_lower_bound(name: str) -> float | None:
    """The black-box audit's lower bound on epsilon (ldpviz.audit), when that module exists."""
    audit = importlib.import_module("ldpviz.audit")
    for fname in ("lower_bound", "audit_lower_bound", "epsilon_lower_bound", "audit"):
        fn = getattr(audit, fname, None)
        if callable(fn):
            try:
                out = fn(mechanisms.create(name, compute.Grid(data.region, min(side, 8)), eps))
            except (LdpvizInputError, TypeError, NotImplementedError):
                return None
            value = out.get("lower_bound") if isinstance(out, dict) else getattr(out, "lower_bound", out)
            try:
                return float(value)
            except (TypeError, ValueError):
                return None
    return None


run_audit = has_audit and st.toggle("Also run the black-box audit (samples reports; slower)", key="w:blackbox")
rows = []
bar = st.progress(0.0, text="Measuring channels ...")
described = session.mechanism_rows()
for i, r in enumerate(described):
    entry = {"mechanism": r["label"], "privacy model": r["privacy_model"]}
    try:
        audit = compute.audit_row(r["name"], side, data.region, eps)
    except LdpvizInputError as exc:
        entry.update({"claimed guarantee": "—", "verdict": f"not available here: {exc}"})
        rows.append(entry)
        continue
    measured = audit["measured"]
    entry["claimed guarantee"] = audit["guarantee"]
    entry["measured ε (worst case)"] = (None if measured is None else (math.inf if math.isinf(measured) else round(measured, 6)))
    entry["max ratio / e^ε"] = (None if measured is None or r["privacy_model"] == mechanisms.GEO_I else
                                (math.inf if math.isinf(measured) else round(math.exp(measured - eps), 6)))
    entry["verdict"] = {"pass": "✅ pass", "FAIL": "❌ FAIL"}.get(audit["verdict"], audit["verdict"])
    attacker = ui.attacker_error_m(r["name"], side, data.region, eps, ())
    entry["attacker error"] = ui.fmt_metres(attacker) if attacker is not None else "—"
    if run_audit:
        lb = audited_lower_bound(r["name"])
        entry["audited lower bound ε"] = None if lb is None else round(lb, 4)
    rows.append(entry)
    bar.progress((i + 1) / len(described), text=f"{i + 1} of {len(described)} mechanisms measured")
bar.empty()
table = pd.DataFrame(rows)
fails = table[table["verdict"] == "❌ FAIL"]
if len(fails):
    st.error(f"{len(fails)} mechanism(s) exceed their claimed ε: {', '.join(fails['mechanism'])}.",
             icon=":material/gpp_bad:")
else:
    st.success(f"Every mechanism with a measurable channel keeps its claimed guarantee at ε = {eps:g} "
               f"(bound e^ε = {math.exp(eps):.3g}).", icon=":material/verified_user:")
st.dataframe(table, hide_index=True)
st.caption("Measured ε = max over reports of log(max P / min P) across true cells, computed exactly from each "
           "mechanism's channel with its default parameters on the grid above; 'max ratio / e^ε' ≤ 1 means the "
           "guarantee holds. Attacker error: expected distance between a person's cell and an attacker's best "
           "guess from their report (ldpviz.metrics.local_privacy), where available."
           + ("" if has_audit else " A black-box audit column appears once ldpviz.audit is installed."))
st.download_button("Audit (CSV)", table.to_csv(index=False), "ldpviz-audit.csv", "text/csv")
