"""Explore's pinned setting: keep one scenario and compare the current one with it, side by side.

The pin is the scenario part of the config in its link form (:func:`ldpviz.app.state.pin_query`),
held in the config dict (``cfg["pin"]``), so it survives page switches, and in the link
(``pin=``), so it survives a reload. Its result comes from the same cached compute as the
current setting's (:func:`ldpviz.app.compute.result_or_announce`): a pinned setting that has
not changed costs nothing extra.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import streamlit as st

from ldpviz.app import compute, state, ui, uploads
from ldpviz.app.session import cfg as session_cfg
from ldpviz.decide import explain, privacy_scale
from ldpviz.geo import region_choice as regions
from ldpviz.render import maps as viz
from ldpviz.mechanisms.heatmaps.dp_heatmap import heatmap
from ldpviz.errors import LdpvizInputError, clause
from ldpviz.experiment import Result, Scenario


def pin_current() -> None:
    """(A button's callback) pin the session's current scenario."""
    config = session_cfg()
    config["pin"] = state.pin_query(config, st.session_state.get("saved_regions", {}))


def unpin() -> None:
    """(A button's callback) forget the pinned scenario."""
    session_cfg()["pin"] = None


def _region_arg(pinned: dict[str, Any], data: Any, key: str, pin: dict[str, str]) -> Any:
    """What the sidebar would pass as Scenario.region for the pin's region (see controls.data_controls)."""
    name, choice = pinned["dataset"], pinned.get("region")
    saved = dict(st.session_state.get("saved_regions", {}).get(name, {}))
    for ds, (region_name, region) in state.decode_saved_region(pin).items():
        if ds == name:
            saved.setdefault(region_name, region)
    if choice is None or choice in data.presets:
        return choice if choice is not None else next(iter(data.presets))
    if choice in saved:
        return saved[choice]
    if choice == state.REGION_FIT:
        return compute.fit_region(key, data)
    if choice == state.REGION_BBOX and pinned.get("bbox"):
        return regions.stated_region(pinned["bbox"])
    raise LdpvizInputError(f"the pinned region {choice!r} is not one of this dataset's regions in this session")


def scenario(pin: dict[str, str]) -> Scenario:
    """The pinned Scenario, built as the sidebar builds the current one (so an unchanged pin is a cache hit)."""
    pinned, warnings = state.pin_config(pin, state.known_datasets(st.session_state.get("uploads", {})),
                                        uploads.released(), uploads.session_budget_text())
    if warnings:
        raise LdpvizInputError("; ".join(warnings))
    data, key = compute.get_dataset(pinned["dataset"])
    mechanism = pinned["mechanism"]
    specs = state.param_specs(mechanism)
    params = {k: v for k, v in (pinned.get("params") or {}).get(mechanism, {}).items()
              if k in specs and v != specs[k].default}
    return Scenario(dataset=pinned["dataset"], mechanism=mechanism, epsilon=float(pinned["epsilon"]),
                    grid_side=int(pinned["grid_side"]), region=_region_arg(pinned, data, key, pin), params=params,
                    n_users=int(pinned["n_users"]) or None, seed=int(pinned["seed"]), trials=int(pinned["trials"]),
                    query_rho=float(pinned.get("query_rho") or 0.01))


def describe(sc: Scenario) -> str:
    """'GRR, ε = 0.5, 16 × 16 cells' and the mechanism's non-default parameters (the rest: :func:`differences`)."""
    parts = [ui.short_name(sc.mechanism), f"ε = {sc.epsilon:g}", f"{sc.grid_side} × {sc.grid_side} cells"]
    parts += [f"{k.replace('_', ' ')} = {explain.number(v)}" for k, v in sorted(dict(sc.params).items())]
    return ", ".join(parts)


def differences(pinned: Scenario, current: Scenario) -> list[str]:
    """Which scenario fields differ between the pin and the current setting ('ε 0.5 → 1', ...)."""
    names = {"dataset": "dataset", "region": "region", "mechanism": "mechanism", "epsilon": "ε",
             "grid_side": "d", "params": "parameters", "n_users": "users", "seed": "seed", "trials": "trials",
             "query_rho": "ρ"}
    out = []
    for field, label in names.items():
        a, b = getattr(pinned, field), getattr(current, field)
        if repr(a) != repr(b):
            if field == "region":
                show = lambda v: getattr(v, "name", None) or repr(v)   # noqa: E731
            elif field == "n_users":
                show = lambda v: "everyone in the region" if v is None else f"{v:,}"   # noqa: E731
            elif field == "params":
                show = lambda v: explain.number(dict(v))   # noqa: E731
            else:
                show = lambda v: f"{v:g}" if isinstance(v, float) else str(v)   # noqa: E731
            out.append(f"{label} {show(a)} → {show(b)}")
    return out


#: The readouts compared, in order, and the attacker's row label.
COMPARED = ("w2_m", "aqe", "kl")
ATTACKER_ROW = "attacker_error_m"


PRIVACY_ROW = "Privacy loss between neighbouring cells (ln of the largest ratio; lower = more private)"


def readout_table(pinned: Result, current: Result, attackers: tuple[float | None, float | None] | None,
                  fmt: Any, privacy: tuple[float, float] | None = None, comparable: bool = True) -> pd.DataFrame:
    """Pinned, current and current − pinned for W2, AQE, KL and the population-prior attacker's error.

    ``attackers`` is (pinned, current) in metres, None entries where not available, or None while they are being
    computed; ``fmt(key, value)`` formats. ``privacy`` is (pinned, current) privacy loss between neighbouring
    cells (:func:`ldpviz.decide.privacy_scale.neighbour_log_ratio`): it comes first, and where the current setting
    is less private an accuracy row never reads plain "better" ("better, at less privacy"), nor plain "worse" where
    it is more private.
    The last column says which setting is better on each row (lower error; for the attacker, larger is more
    private), so the difference reads without knowing each metric's direction. With ``comparable`` False (other
    data or another region, issue 22) both columns stay empty: the two values are not a change.
    """
    rows = []
    trade = ""
    if privacy is not None:
        a, b = (float(v) for v in privacy)
        row = _row(PRIVACY_ROW, a, b, privacy_scale_text(a), privacy_scale_text(b),
                   privacy_scale_text(abs(b - a)), lower_better=True, words=("more private", "less private"))
        rows.append(row)
        trade = {"less private": "less", "more private": "more"}.get(row["Current is"], "")
    pm, cm = pinned.mean(), current.mean()
    for key in COMPARED:
        if key not in pm or key not in cm:
            continue
        e = explain.metric_explanation(key)
        a, b = float(pm[key]), float(cm[key])
        row = _row(f"{ui.SHORT_LABELS.get(key, e['label'])} ({e['unit']})", a, b, fmt(key, a), fmt(key, b),
                   fmt(key, abs(b - a)), lower_better=e["lower_is_better"])
        if trade == "less" and row["Current is"] == "better":
            row["Current is"] = "better, at less privacy"
        elif trade == "more" and row["Current is"] == "worse":
            row["Current is"] = "worse, for more privacy"
        rows.append(row)
    a, b = attackers or (None, None)
    missing = "computing …" if attackers is None else "not available"
    label = "Attacker's error (metres; larger = more private)"
    if a is not None and b is not None:
        rows.append(_row(label, a, b, fmt("x_m", a), fmt("x_m", b), fmt("x_m", abs(b - a)), lower_better=False,
                         words=("more private", "less private")))
    else:
        rows.append({"Readout": label, "Pinned": fmt("x_m", a) if a is not None else missing,
                     "Current": fmt("x_m", b) if b is not None else missing, "Current − pinned": "",
                     "Current is": ""})
    if not comparable:
        for row in rows:
            row["Current − pinned"], row["Current is"] = "", ""
    return pd.DataFrame(rows)


def privacy_scale_text(log_ratio: float) -> str:
    """A privacy loss (a log-ratio) as a number, and beyond ~700 (where its ratio overflows) still readable."""
    return "unbounded" if not np.isfinite(log_ratio) else f"{log_ratio:,.3g}"


def _row(label: str, a: float, b: float, fa: str, fb: str, fd: str, lower_better: bool,
         words: tuple[str, str] = ("better", "worse")) -> dict[str, str]:
    change = b - a
    if not (np.isfinite(a) and np.isfinite(b)):
        verdict = ""
    elif abs(change) <= 1e-12 * max(abs(a), abs(b), 1.0):
        verdict = "the same"
    else:
        improved = (change < 0) == lower_better
        verdict = words[0] if improved else words[1]
    sign = "" if not np.isfinite(change) or change == 0 else ("+" if change > 0 else "−")
    return {"Readout": label, "Pinned": fa, "Current": fb, "Current − pinned": f"{sign}{fd}", "Current is": verdict}


def section(current_sc: Scenario, current: Result, sigma: float, basemap: bool,
            map_px: tuple[int, int] = (260, 200)) -> Any:
    """Draw 'Pinned setting vs current' on Explore: readouts side by side with the difference, both estimated maps
    on one colour scale, and the map of current − pinned. Returns a function that adds the attacker's row once
    the current setting's attacker error is known (``fill(current_attacker_m)``), or None when nothing is shown."""
    pin = session_cfg().get("pin")
    if not pin:
        return None
    st.subheader("Pinned setting vs current", anchor="pinned")
    try:
        pinned_sc = scenario(pin)
    except (LdpvizInputError, FileNotFoundError) as exc:
        st.warning(f"The pinned setting cannot be shown: {clause(exc)}. Unpin it, or pin the current setting instead.",
                   icon=":material/keep_off:")
        return None
    with st.spinner("Computing the pinned setting ..."):
        pinned = compute.result_or_announce(pinned_sc, f"the pinned setting ({describe(pinned_sc)})")
    if pinned is None:
        return None
    changed = differences(pinned_sc, current_sc)
    st.caption(f"**Pinned:** {describe(pinned_sc)} · **Current:** {describe(current_sc)}"
               + (f" · changed: {'; '.join(changed)}." if changed else "."))
    if not changed:
        st.info("The current setting is the pinned one. Change ε, the grid, the mechanism or anything else in the "
                "sidebar to compare it with the pin.", icon=":material/keep:")
    privacy = _privacy(pinned_sc, pinned, current_sc, current)
    comparable = (pinned_sc.dataset == current_sc.dataset and repr(pinned.region) == repr(current.region))
    table_slot = st.empty()
    table_slot.table(readout_table(pinned, current, None, ui.fmt_metric, privacy, comparable).set_index("Readout"))
    if not comparable:
        st.caption("The pinned and the current setting use different data or regions, so their readouts stand side "
                   "by side without a difference: a change in W2 across places measures the places, not the setting.")
    for label, sc, res in (("Pinned", pinned_sc, pinned), ("Current", current_sc, current)):
        weak = _weak(sc, res)
        if weak:
            st.warning(f"**{label} setting:** {weak}", icon=":material/warning:")
    st.caption("Means over each setting's trials. The attacker is the page's one attacker: a Bayesian who knows the "
               "mechanism and the population density and guesses one person's location from one report.")

    def shown(res: Result) -> np.ndarray:
        return heatmap(res.estimate.density, sigma) if sigma > 0 else res.estimate.density

    p_map, c_map = shown(pinned), shown(current)
    same_grid = pinned.grid.side == current.grid.side and repr(pinned.grid.region) == repr(current.grid.region)
    vmax = float(max(p_map.max(), c_map.max())) or 1.0
    height, width = map_px
    cols = st.columns(3)
    for col, title, res, values, key in ((cols[0], "Pinned estimate", pinned, p_map, "map:pinned"),
                                         (cols[1], "Current estimate", current, c_map, "map:current")):
        with col:
            st.markdown(f"**{title}**")
            partition = None if sigma > 0 else res.estimate.partition
            col.pydeck_chart(viz.estimate_deck(res.grid, values, partition, vmax=vmax, height=height, width=width,
                                               basemap=basemap), height=height, key=key)
    with cols[2]:
        st.markdown("**Difference: current − pinned**")
        if same_grid and ui.identical(p_map, c_map):
            st.info("**Identical.** The two estimated maps are the same in every cell (no difference beyond "
                    "round-off), so there is nothing to draw.", icon=":material/check_circle:")
        elif same_grid:
            st.pydeck_chart(viz.difference_deck(current.grid, p_map, c_map, height=height, width=width,
                                                basemap=basemap, what="current − pinned"),
                            height=height, key="map:pindiff")
        else:
            st.info(f"No cell-by-cell difference: the pinned map has {pinned.grid.side} × {pinned.grid.side} cells of "
                    f"{ui.fmt_metres(pinned.grid.cell_m)} over {pinned.region.name or 'its region'}, the current one "
                    f"{current.grid.side} × {current.grid.side} cells of {ui.fmt_metres(current.grid.cell_m)} over "
                    f"{current.region.name or 'its region'}. Compare the readouts instead.",
                    icon=":material/grid_off:")
    st.html(viz.legend_html(vmax, "both estimates, share of users per cell")
            + (viz.legend_html(float(np.abs(c_map - p_map).max()) or 1.0, "current − pinned, share of users per cell",
                               diverging=True) if same_grid and not ui.identical(p_map, c_map) else ""))

    def fill(current_attacker_m: float | None) -> None:
        data, _ = compute.get_dataset(pinned_sc.dataset)
        population = ui.population_density(data, pinned.grid)
        pinned_attacker_m, _ = ui.attacker_error_m(pinned_sc.mechanism, pinned.grid, pinned_sc.epsilon,
                                                   pinned_sc.params, population)
        table_slot.table(readout_table(pinned, current, (pinned_attacker_m, current_attacker_m),
                                       ui.fmt_metric, privacy, comparable).set_index("Readout"))
    return fill


def _mechanism(sc: Scenario, res: Result) -> Any:
    return compute.built_mechanism(sc.mechanism, sc.grid_side, res.region, float(sc.epsilon),
                                   tuple(sorted(dict(sc.params).items())))


def _privacy(pinned_sc: Scenario, pinned: Result, current_sc: Scenario, current: Result) -> tuple[float, float] | None:
    """(pinned, current) privacy loss between neighbouring cells, or None where a mechanism cannot be built."""
    try:
        return (privacy_scale.neighbour_log_ratio(_mechanism(pinned_sc, pinned)),
                privacy_scale.neighbour_log_ratio(_mechanism(current_sc, current)))
    except LdpvizInputError:
        return None


def _weak(sc: Scenario, res: Result) -> str | None:
    try:
        return privacy_scale.weak_privacy_warning(_mechanism(sc, res), res.ledger)
    except LdpvizInputError:
        return None
