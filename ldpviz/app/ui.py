"""Page building blocks shared by several pages: readouts, plain-language summary, exports."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pandas as pd
import streamlit as st

from ldpviz.app import browser, compute, state
from ldpviz.decide import attacker, attacker_monte_carlo as attacker_mc, explain
from ldpviz.render import export, maps as viz, png as render
from ldpviz import mechanisms, metrics
from ldpviz.geo.domain import Grid, Region
from ldpviz.decide.attacker import default_r_m, r_note, share_text
from ldpviz.errors import LdpvizInputError
from ldpviz.experiment import Result, Scenario

#: The live readouts on Explore, in order.
READOUTS = ("w2_m", "aqe", "kl", "l1", "emd_l1_m")


#: Where a map sits: the whole main column, half of it (two maps side by side) or a third (three maps).
MAP_SLOTS = ("full", "half", "third")
#: The width a map is framed to, per slot on a desktop: the column's width at 1024 px with the sidebar open
#: (measured in Chromium: 564, 274 and 177 px), the narrowest a desktop shows it. A deck's zoom cannot follow its
#: column (it is set here, not in the browser), so the region is framed to that width and the map is made as tall
#: as the region then is: wider windows show blank space beside the region, never 100 px above and below.
DESKTOP_WIDTHS = {"full": 560, "half": 274, "third": 177}
#: On a phone Streamlit stacks columns: every map is the screen's width (358 px at 390 px).
PHONE_WIDTH = 356
#: Blank pixels kept above and below the region (with the 4% margin of :func:`ldpviz.render.maps.view_state`).
MAP_PAD_PX = 16


#: Main-area width at a 1024 px window minus the full-width column there (sidebar, padding): 1024 - 564.
_CHROME_PX = 460
#: Gap between two columns (Streamlit's default) in px.
_COLUMN_GAP_PX = 16


#: Below this window width Streamlit stacks columns (its small-screen breakpoint): every map is the column's width.
STACKED_BELOW_PX = 640
#: Main-area padding on a small screen (1 rem each side, plus the scroll bar's allowance): 390 - 356.
_NARROW_CHROME_PX = 34


def column_widths(window_px: int | None) -> dict[str, int]:
    """Column widths per map slot for a window ``window_px`` wide (the sidebar open on a desktop): the measured
    :data:`DESKTOP_WIDTHS` at 1024 px or for an unknown width, wider columns on wider windows, and on a window
    narrower than 1024 px the narrower columns it really has (issue 27: a 390 px window without a phone's
    User-Agent was framed for 560 px and clipped the outline): stacked full-width columns below
    :data:`STACKED_BELOW_PX`, else the 1024 px layout shrunk by the missing width. A map framed narrower than its
    column leaves blank beside it; one framed wider is cut, so a guess errs narrow."""
    if not window_px or window_px == 1024:
        return dict(DESKTOP_WIDTHS)
    if window_px < STACKED_BELOW_PX:
        width = max(200, int(window_px) - _NARROW_CHROME_PX)
        return {slot: width for slot in DESKTOP_WIDTHS}
    if window_px < 1024:
        content = max(window_px - _CHROME_PX, 3 * 120 + 2 * _COLUMN_GAP_PX)
        return {"full": content - 4, "half": (content - _COLUMN_GAP_PX) // 2,
                "third": (content - 2 * _COLUMN_GAP_PX) // 3}
    content = window_px - _CHROME_PX
    found = {"full": content - 4, "half": (content - _COLUMN_GAP_PX) // 2,
             "third": (content - 2 * _COLUMN_GAP_PX) // 3}
    return {slot: max(DESKTOP_WIDTHS[slot], int(found[slot])) for slot in DESKTOP_WIDTHS}


def window_width() -> int | None:
    """The browser window's width (:func:`ldpviz.app.browser.known_width`), or None."""
    return browser.known_width()


def map_size(slot: str, region: Region | None = None) -> dict[str, int]:
    """``{"width": framed px, "height": px}`` for a map of ``region`` in ``slot`` (:data:`MAP_SLOTS`).

    A browser that says it is a phone (``Mobile`` in its User-Agent) gets :data:`PHONE_WIDTH` for every slot,
    since its columns are stacked; a desktop its columns' widths from the window's width when the browser has
    reported it (:func:`column_widths`), else :data:`DESKTOP_WIDTHS`. The height follows the region's shape as
    drawn (:func:`ldpviz.render.maps.mercator_aspect`): the region fills the framed width, between half and one and a
    half times that width tall.
    """
    if slot not in DESKTOP_WIDTHS:
        raise ValueError(f"map slot must be one of {MAP_SLOTS}, got {slot!r}")
    try:
        agent = str(st.context.headers.get("User-Agent") or "")
    except Exception:   # no browser (AppTest, bare mode): a desktop
        agent = ""
    known = window_width()
    if "Mobile" in agent:           # a phone stacks its columns: the screen's width when known, else PHONE_WIDTH
        width = min(PHONE_WIDTH, column_widths(known)["full"]) if known and known < STACKED_BELOW_PX else PHONE_WIDTH
    else:
        width = column_widths(known)[slot]
    aspect = viz.mercator_aspect(region) if region is not None else 1.0
    height = int(np.clip(round(0.92 * width * aspect + 2 * MAP_PAD_PX), 0.5 * width, 1.5 * width))
    return {"width": width, "height": height}


def fmt_metres(value: float) -> str:
    if not np.isfinite(value):
        return "n/a"
    if abs(value) >= 100_000:
        return f"{value / 1000:,.0f} km"
    if abs(value) >= 10_000:
        return f"{value / 1000:.1f} km"
    if abs(value) >= 1000:
        return f"{value / 1000:,.2f} km"
    return f"{value:,.0f} m" if abs(value) >= 10 else f"{value:.1f} m"


def fmt_metric(key: str, value: float) -> str:
    if key.endswith("_m"):
        return fmt_metres(value)
    if not np.isfinite(value):
        return "n/a"
    return f"{value:.3g}" if abs(value) < 1000 else f"{value:,.0f}"


def metric_label(key: str) -> str:
    return metrics.METRIC_INFO.get(key, {}).get("label", key)


def metric_name(key: str) -> str:
    """The metric's label without its unit ('W2', not 'W2 (m)'): for headers and labels whose values are written by
    :func:`fmt_metric`, which carry their own unit (m or km), so 'W2 (m) 69.5 km' cannot happen."""
    label = metric_label(key)
    return label[:-4] if label.endswith(" (m)") else label


def lower_is_better(key: str) -> bool:
    return bool(metrics.METRIC_INFO.get(key, {}).get("lower_is_better", True))


def short_name(mechanism: str) -> str:
    label = mechanisms.get(mechanism).label
    return label.split(" (")[0]


#: Short readout names (the full name, unit and meaning are in each readout's help).
SHORT_LABELS = {"w2_m": "W2", "aqe": "AQE", "kl": "KL", "l1": "L1", "emd_l1_m": "EMD"}


#: Fewest trials for which a readout carries its 95% interval; Explore's default (ldpviz.app.state).
MIN_TRIALS_FOR_INTERVAL = 3
#: A difference map whose largest cell is at most this share of users is round-off: "identical", not drawn.
IDENTICAL_SHARE = 1e-12


def data_key(scenario: Scenario, dataset_key: str, region: Region) -> str:
    """What a readout's change is measured against: the data (name and content) and the region in use. Change
    arrows appear only between settings with the same key (issue 22: Fiji -> US north-east is no 'change')."""
    return f"{scenario.dataset}|{dataset_key}|{region!r}"


def identical(a: np.ndarray, b: np.ndarray) -> bool:
    """True when two maps of shares differ nowhere by more than round-off (:data:`IDENTICAL_SHARE`)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return a.shape == b.shape and float(np.max(np.abs(a - b), initial=0.0)) <= IDENTICAL_SHARE


def interval(result: Result, key: str) -> tuple[float, float, float] | None:
    """(mean, low, high) of a metric over the result's trials, a 95% t interval clipped at zero for metrics that
    cannot be negative (``Result.metric_ci``); None with fewer than :data:`MIN_TRIALS_FOR_INTERVAL` trials."""
    if key not in result.metrics.columns or len(result.metrics) < MIN_TRIALS_FOR_INTERVAL:
        return None
    mean, low, high = result.metric_ci(key)
    return (mean, low, high) if np.isfinite(low) and np.isfinite(high) else None


def no_spread(ci: tuple[float, float, float]) -> bool:
    """True when every trial gave the same value (a mechanism without noise): no interval to show."""
    mean, low, high = ci
    return high - low <= 1e-9 * max(abs(mean), 1e-12)


def fmt_interval(key: str, ci: tuple[float, float, float]) -> str:
    """'934 m ± 120 m', 'lo – hi' when the interval was clipped at zero, the value alone when it has no spread."""
    mean, low, high = ci
    if no_spread(ci):
        return fmt_metric(key, mean)
    half = high - mean
    if mean - low < half * (1 - 1e-9):   # clipped at zero: say where it runs
        return f"{fmt_metric(key, low)} – {fmt_metric(key, high)}"
    return f"{fmt_metric(key, mean)} ± {fmt_metric(key, half)}"


def fmt_range(key: str, ci: tuple[float, float, float]) -> str:
    """'0.93–1.29 km': the interval as a range, the unit once when both ends share it."""
    low, high = fmt_metric(key, ci[1]), fmt_metric(key, ci[2])
    for unit in (" km", " m"):
        if low.endswith(unit) and high.endswith(unit):
            return f"{low[:-len(unit)]}–{high}"
    return f"{low}–{high}"


def readouts(result: Result, previous: dict[str, float] | None, seconds: float, cached: bool,
             other_data: bool = False, pending: int = 0, no_privacy: bool = False) -> None:
    """st.metric per headline metric (two rows of three, so labels and values fit a narrow screen): the mean over
    trials with its 95% interval (three trials or more), and the change since the previous setting. ``previous``
    must be None unless it was measured on the same data and region (:func:`data_key`); ``other_data`` says the
    previous setting used other data or another region (the caption then says why no arrows are shown);
    ``pending``: trials still running after this first one (the caption says the intervals follow);
    ``no_privacy``: this setting gives practically no privacy (:func:`gives_no_privacy`), so a gain in accuracy
    is not progress: its arrows are grey and say so (issue 27)."""
    means = result.mean()
    keys = [k for k in READOUTS if k in means]
    approximate = result.approximate_readouts() if hasattr(result, "approximate_readouts") else {}
    slots = [c for _ in range(2) for c in st.columns(3)]
    trials = len(result.metrics)
    for col, key in zip(slots, keys):
        value = means[key]
        delta = None
        if previous and key in previous and np.isfinite(previous[key]) and np.isfinite(value):
            change = value - previous[key]
            delta = f"{'+' if change >= 0 else '-'}{fmt_metric(key, abs(change))}"
            if no_privacy:
                delta += ", at no privacy"
        approx = approximate.get(key)
        ci = interval(result, key)
        shown = fmt_interval(key, ci) if ci else fmt_metric(key, value)
        what = (f"Mean over {trials} trials ± the half-width of its 95% confidence interval (t interval"
                + (", clipped at zero: this metric cannot be negative" if key in metrics.NONNEGATIVE_METRICS else "")
                + f"): {fmt_metric(key, ci[1])} to {fmt_metric(key, ci[2])}. " if ci else
                f"One value from {trials} trial(s): no interval (it needs {MIN_TRIALS_FOR_INTERVAL} or more trials). ")
        col.metric(SHORT_LABELS.get(key, metric_label(key)), ("≈ " if approx else "") + shown,
                   delta=delta, delta_color="off" if no_privacy else ("inverse" if lower_is_better(key) else "normal"),
                   help=explain.readout_help(key, approx.note(metric_label(key), 'm') if approx else "")
                   + "\n\n" + what.strip())
    slots[len(keys)].metric("Run time", f"{result.timings['total']:.2f} s",
                            delta="from cache" if cached else None, delta_color="off", delta_arrow="off",
                            help=explain.readout_help(
                                "run_time",
                                f"This run ({trials} trial(s)): perturb {result.timings['perturb']:.2f} s, "
                                f"estimate {result.timings['estimate']:.2f} s, metrics "
                                f"{result.timings['metrics']:.2f} s per trial; page waited {seconds:.2f} s."))
    notes = []
    if "w2_m" in means:
        notes.append(f"W2 is {100 * means['w2_m'] / result.region.side_m:.2g}% of the region's side")
    if "aqe" in means:
        notes.append(f"AQE over random range queries covering {100 * result.scenario.query_rho:g}% of the area")
    if trials >= MIN_TRIALS_FOR_INTERVAL:
        notes.append(f"each readout is the mean of {trials} trials ± its 95% confidence interval (t interval, clipped "
                     f"at zero); {MIN_TRIALS_FOR_INTERVAL} trials is the floor for an interval and the default")
    elif pending:
        notes.append(f"the first of {trials + pending} trials: the intervals follow when the other {pending} finish")
    else:
        notes.append(f"{trials} trial(s): no interval is shown; {MIN_TRIALS_FOR_INTERVAL} trials is the floor for "
                     "one (raise Trials in the sidebar)")
    if other_data:
        notes.append("no change arrows: the previous setting used other data or another region")
    elif previous and no_privacy:
        notes.append("grey arrows: any better accuracy comes at practically no privacy, which is no progress")
    text = " · ".join(notes)
    st.caption(text[:1].upper() + text[1:] + ".")


#: Fewer users per cell than this, on average over the region, and the map is mostly noise (the Data page's rule).
FEW_USERS_PER_CELL = 5


def few_users_warning(n_users: int, side: int) -> str | None:
    """A warning when a map rests on too few users for its grid (issue 27: Explore was silent about 1 user), with
    the numbers that show it; None otherwise."""
    cells = side * side
    if n_users >= FEW_USERS_PER_CELL * cells:
        return None
    if n_users <= 1:
        return (f"**Estimates from {explain.plural(n_users, 'user')} say nothing** about where people are: every "
                "readout and map here is one person's report and the noise around it. Choose more users (sidebar) "
                "or a region that holds more people.")
    return (f"**Mostly noise:** {explain.plural(n_users, 'user')} over {side} × {side} = {cells:,} cells is "
            f"{n_users / cells:.2g} per cell on average; below {FEW_USERS_PER_CELL} per cell the noise drowns the map. "
            "Choose more users, a larger region or a smaller grid side d.")


def gives_no_privacy(mechanism: str, weak_warning: str | None) -> bool:
    """Whether a setting gives practically no privacy: the no-privacy reference, or a setting that carries
    :func:`ldpviz.decide.privacy_scale.weak_privacy_warning` at its "practically no privacy" level (passed in,
    computed once by the page; a merely weak setting, between 5 and 10, still counts its gains)."""
    return (bool(weak_warning) and weak_warning.startswith("Practically no privacy")) or \
        mechanisms.get(mechanism).privacy_model == mechanisms.NO_PRIVACY


#: Local privacy is computed on the page only up to these grid sides (larger grids say so instead).
LP_MAX_SIDE_DISK = 32      #: DAM family: its full channel (~3 s at d = 32 on a shared 2-core machine, ~35 s at 48)
LP_MAX_CELLS_DENSE = 1024  #: any explicit channel: the dense formula, O(outputs x cells^2)
LP_MAX_SIDE_OWN = 16       #: mechanisms with their own Monte Carlo estimate (SEM-Geo-I)


def attacker_plan(mechanism: str, grid_side: int) -> tuple[bool, str]:
    """(affordable, reason): whether the attacker's error (local privacy) is computed for this setting."""
    cls = mechanisms.get(mechanism)
    if cls.privacy_model == mechanisms.CENTRAL_DP:
        return False, "central DP releases no individual report, so there is no single-report attacker"
    if hasattr(cls, "local_privacy_cells"):
        ok = grid_side <= LP_MAX_SIDE_OWN
        return ok, "" if ok else (f"the attacker's error is computed up to d = {LP_MAX_SIDE_OWN} for "
                                  f"{short_name(mechanism)}")
    if compute.has_radius(mechanism):
        ok = grid_side <= LP_MAX_SIDE_DISK
        return ok, "" if ok else (f"the attacker's error is computed up to d = {LP_MAX_SIDE_DISK} (it takes seconds "
                                  "beyond)")
    # the Monte Carlo attacker (ldpviz.decide.attacker_monte_carlo): exact posteriors of sampled reports
    if not cls.has_channel:
        ok = attacker_mc.supports_monte_carlo(cls) and grid_side * grid_side <= attacker_mc.MC_MAX_CELLS
        return ok, "" if ok else ("the attacker's error is computed up to d = "
                                  f"{int(np.sqrt(attacker_mc.MC_MAX_CELLS))} for {short_name(mechanism)} (by Monte "
                                  "Carlo over sampled reports)")
    ok = grid_side * grid_side <= LP_MAX_CELLS_DENSE
    return ok, "" if ok else (f"the attacker's error is computed up to {LP_MAX_CELLS_DENSE:,} cells for "
                              f"{short_name(mechanism)} (d = {int(np.sqrt(LP_MAX_CELLS_DENSE))})")


def population_density(dataset: Any, grid: Grid) -> np.ndarray:
    """Every user of ``dataset`` in the region, binned on ``grid``: the attackers' census stand-in (the same
    density the decision report and the Trade-offs frontier use, so every page names the same attacker)."""
    return grid.histogram(grid.bin_lonlat(dataset.lon, dataset.lat).cells)


@st.cache_data(max_entries=128, show_spinner=False)
def attacker_errors_cells(mechanism: str, grid_side: int, region: Region, epsilon: float, params: tuple,
                          population: np.ndarray) -> tuple[float | None, float | None, float | None, str, str]:
    """ldpviz.decide.attacker.attackers in cell sides: (population-prior error, uniform-prior error, the
    population-prior attacker's chance of a guess within attacker.default_r_m (1% of the region's side), why not,
    how it was computed: "" when exact, else the Monte Carlo's size and standard error in cell sides as "N|SE")."""
    try:
        mech = compute.built_mechanism(mechanism, grid_side, region, epsilon, params)
        found = attacker.attackers(mech, population)
    except (LdpvizInputError, NotImplementedError, MemoryError) as err:
        return None, None, None, str(err), ""
    if not found["available"]:
        return None, None, None, found["reason"], ""
    cell = mech.grid.cell_m
    pop = found["population"]
    how = "" if pop.method == attacker.EXACT else f"{pop.n_reports}|{pop.best_guess_error_se_m / cell}"
    return (pop.best_guess_error_m / cell, found["uniform"].best_guess_error_m / cell, pop.within_r, "", how)


def attacker_within_r(mechanism: str, grid: Grid, epsilon: float, params: Any,
                      population: np.ndarray) -> float | None:
    """The population-prior attacker's probability of placing a person within attacker.default_r_m (or None);
    read from the same cache as :func:`attacker_errors_m` (call that first: it checks the cost)."""
    if not attacker_plan(mechanism, grid.side)[0]:
        return None
    items = tuple(sorted(dict(params).items())) if isinstance(params, dict) else tuple(sorted(params))
    return attacker_errors_cells(mechanism, grid.side, grid.region, float(epsilon), items,
                                 np.asarray(population, dtype=float))[2]


def attacker_errors_m(mechanism: str, grid: Grid, epsilon: float, params: Any,
                      population: np.ndarray) -> tuple[float | None, float | None, str]:
    """(population-prior attacker's expected error in metres, uniform-prior one, why not) -- only when affordable.

    The one attacker of every page (:func:`ldpviz.decide.attacker.attackers`): the headline believes the population
    density (``population``: :func:`population_density`, a census stand-in); the uniform-prior one sits beside it.
    """
    ok, why = attacker_plan(mechanism, grid.side)
    if not ok:
        return None, None, why
    items = tuple(sorted(dict(params).items())) if isinstance(params, dict) else tuple(sorted(params))
    pop, uni, _, why, _ = attacker_errors_cells(mechanism, grid.side, grid.region, float(epsilon), items,
                                                np.asarray(population, dtype=float))
    if pop is None:
        return None, None, why or f"the attacker's error is not available for {short_name(mechanism)} on this grid"
    return pop * grid.cell_m, uni * grid.cell_m, ""


def attacker_method_note(mechanism: str, grid: Grid, epsilon: float, params: Any, population: np.ndarray) -> str:
    """'' when the attacker is exact (an explicit channel), else e.g. 'Monte Carlo over 2,000 reports, standard
    error 12 m' (read from the cache :func:`attacker_errors_m` filled; call that first)."""
    if not attacker_plan(mechanism, grid.side)[0]:
        return ""
    items = tuple(sorted(dict(params).items())) if isinstance(params, dict) else tuple(sorted(params))
    how = attacker_errors_cells(mechanism, grid.side, grid.region, float(epsilon), items,
                                np.asarray(population, dtype=float))[4]
    if not how:
        return ""
    n, se = how.split("|")
    return f"Monte Carlo over {int(n):,} sampled reports, standard error {fmt_metres(float(se) * grid.cell_m)}"


def attacker_error_m(mechanism: str, grid: Grid, epsilon: float, params: Any,
                     population: np.ndarray) -> tuple[float | None, str]:
    """(the population-prior attacker's expected error in metres, or None; why not)."""
    pop, _, why = attacker_errors_m(mechanism, grid, epsilon, params, population)
    return pop, why


def summary_sentence(result: Result, attacker: tuple[float | None, float | None, str] | None = None,
                     within_r: float | None = None, epsilon_text: str | None = None, attacker_note: str = "",
                     pending: int = 0) -> str:
    """'At ε = 1, DAM's estimate is on average 240 m from the truth; an attacker ... 1.3 km.'

    ``pending``: trials still running after this first one (the sentence says its interval follows).

    ``attacker_note``: how the attacker was computed when not exactly (:func:`attacker_method_note`).
    ``attacker`` is the result of :func:`attacker_errors_m` (None: not computed yet); ``within_r`` the
    population-prior attacker's chance of a guess within ldpviz.decide.attacker.default_r_m of the person's position
    (1% of the region's side, named); ``epsilon_text`` the
    'ε = ...' in the mechanism's own unit (Geo-I: per km, from privacy_scale.common_terms).
    """
    s = result.scenario
    means = result.mean()
    name = short_name(s.mechanism)
    where = (f"With no privacy ({name}, the reference), the estimate"
             if mechanisms.get(s.mechanism).privacy_model == mechanisms.NO_PRIVACY
             else f"At {epsilon_text or f'ε = {s.epsilon:g}'}, {name}'s estimate")
    ci = interval(result, "w2_m")
    if ci and no_spread(ci):
        text = (f"{where} is on average **{fmt_metres(ci[0])}** from the truth (W2 distance over "
                f"{explain.plural(result.n_users, 'user')}; the same in each of the {len(result.metrics)} trials: no "
                "spread)")
    elif ci:
        text = (f"{where} is on average **{fmt_range('w2_m', ci)}** from the truth (W2 distance over "
                f"{explain.plural(result.n_users, 'user')}; the 95% interval of the mean over {len(result.metrics)} "
                "trials)")
    elif pending:
        text = (f"{where} is on average **{fmt_metres(means.get('w2_m', np.nan))}** "
                f"from the truth (W2 distance over {explain.plural(result.n_users, 'user')}, the first of "
                f"{len(result.metrics) + pending} trials: its interval follows)")
    else:
        text = (f"{where} is on average **{fmt_metres(means.get('w2_m', np.nan))}** "
                f"from the truth (W2 distance over {explain.plural(result.n_users, 'user')}, "
                f"{explain.plural(len(result.metrics), 'trial')}: "
                f"no interval below {MIN_TRIALS_FOR_INTERVAL} trials)")
    if attacker is None:
        return text + "; computing how far off an attacker's guess of one person's location is ..."
    pop, uni, why = attacker
    if pop is not None:
        return text + (f"; an attacker's best guess of one person's location, knowing the population density "
                       f"(the data set's own density stands in for a census), is off by **{fmt_metres(pop)}** from "
                       f"their exact position on average"
                       + (f" and lands within {fmt_metres(default_r_m(result.grid))} "
                          f"({r_note(result.grid, default_r_m(result.grid))}) of them {share_text(within_r)} of the "
                          "time"
                          if within_r is not None else "")
                       + f" (an attacker assuming a uniform spread: {fmt_metres(uni)}"
                       + (f"; both by {attacker_note}" if attacker_note else "") + ").")
    return text + (f". ({why[0].upper() + why[1:]}.)" if why else ".")


def export_section(cfg: dict[str, Any], result: Result, shown: dict[str, Any], upload_filename: str | None,
                   target: dict[str, Any] | None = None) -> None:
    """Downloads: configuration (JSON), results (CSV), the grids (CSV, GeoJSON), the maps shown (PNG, rendered on
    the server), and a reproducing Python snippet. Nothing exported loads anything from the network.

    ``shown`` holds what the page draws: ``layers`` (name -> (d, d) array: true, estimate or difference, filtered
    when the page filters) and ``maps`` (title -> (array, diverging)) in the order they are on screen.
    ``target``: the goal seek this setting answers (:func:`ldpviz.decide.decision_report.target_reading`), in the
    configuration JSON as the report states it.
    """
    with st.expander("Export and reproduce", icon=":material/download:"):
        st.caption("The address bar holds the whole configuration: copy the link to reopen this view "
                   "(an uploaded file is found again while this server holds it).")
        config = {"query": state.encode(cfg, st.session_state.get("saved_regions", {})),
                  "scenario": _jsonable(result.summary())}
        if target:
            config["target"] = _jsonable(target)
        grid, layers = result.grid, shown["layers"]
        c1, c2, c3, c4 = st.columns(4)
        # Callables: the files are built when clicked, not on every rerun (keeps slider moves fast).
        c1.download_button("Configuration (JSON)", lambda: json.dumps(config, indent=2), "ldpviz-config.json",
                           "application/json", key="dl:json", on_click="ignore")
        c2.download_button("Metrics per trial (CSV)", lambda: compute.result_table(result).to_csv(index=False),
                           "ldpviz-results.csv", "text/csv", key="dl:csv", on_click="ignore")
        c3.download_button("Grids (CSV)", lambda: export.grid_csv(grid, layers), "ldpviz-grids.csv", "text/csv",
                           key="dl:grids-csv", help="One row per cell: its corners in degrees and "
                                                    + ", ".join(layers) + ".", on_click="ignore")
        c4.download_button("Grids (GeoJSON)", lambda: export.grid_geojson(grid, layers, config["scenario"]),
                           "ldpviz-grids.geojson", "application/geo+json", key="dl:grids-geojson",
                           help="One polygon per cell with " + ", ".join(layers) + " as properties.", on_click="ignore")
        cols = st.columns(max(len(shown["maps"]), 1))
        for col, (title, (values, diverging, vmax)) in zip(cols, shown["maps"].items()):
            slug = title.lower().split(":")[0].replace(" ", "-")
            col.download_button(f"Map: {title} (PNG)", lambda v=values, t=title, dv=diverging, vm=vmax:
                render.density_png(
                grid, v, vmax=vm, diverging=dv, title=t,
                legend="estimate − truth, share of users per cell" if dv else "share of users per cell"),
                f"ldpviz-map-{slug}.png", "image/png", key=f"dl:png:{slug}", on_click="ignore")
        st.markdown("Reproduce this run with the ldpviz API:")
        st.code(compute.python_snippet(result.scenario, upload_filename), language="python")


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, (np.floating,)):
        return float(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)


def metric_floor(key: str) -> float | None:
    """0 for error metrics (distances, divergences cannot be negative), None for scores like correlation."""
    return 0.0 if lower_is_better(key) else None


def confidence_table(df: pd.DataFrame, by: str, metric_keys: list[str]) -> pd.DataFrame:
    """Readable 'mean [lo, hi]' columns from a summarise() table (intervals clipped at impossible values)."""
    out = pd.DataFrame({by: df[by]})
    for key in metric_keys:
        if key in df:
            floor = metric_floor(key)
            out[metric_name(key)] = [
                f"{fmt_metric(key, m)} [{fmt_metric(key, lo if floor is None else max(lo, floor))}, "
                f"{fmt_metric(key, hi)}]" if hi > lo else fmt_metric(key, m)
                for m, lo, hi in zip(df[key], df[f"{key}_lo"], df[f"{key}_hi"])]
    return out


def show_ledger(ledger: Any, what: str) -> None:
    """What each person pays (the accountant's ledger, :mod:`ldpviz.mechanisms.accounting`): the headline total
    with the median person's beside it, then one line per charge. Never adds anything up itself."""
    if ledger is None:
        return
    worst, median = ledger.total("worst"), ledger.total("median")
    unit = "person" if "person" in ledger.unit else "row"
    head = f"**What each {unit} pays for {what}:** {worst.text()}"
    if median != worst:
        head += f" (the median {unit}: {median.text()})"
    st.markdown(head)
    st.markdown("\n".join(f"- {line}" for line in ledger.lines()))


#: Where Compare's "Use ε" leaves the goal seek's answer (its reading) for Explore's report and JSON.
GOAL_KEY = "goal_answer"


def goal_row(row: Any) -> dict[str, Any]:
    """A goal seek's answer (a row of Compare's table) as plain values: what Explore's report states."""
    keys = ("mechanism", "privacy_model", "metric", "target", "reached", "epsilon", "n_users", "probability",
            "confidence", "miss_chance_max", "misses", "trials", "mean", "ci_low", "ci_high", "message",
            "scan_warning", "rule", "sense")
    out = {}
    for k in keys:
        if k in row:
            v = row[k]
            out[k] = v.item() if hasattr(v, "item") else v
    return out


def goal_for(cfg: dict, scenario: Scenario) -> dict[str, Any] | None:
    """The goal seek answer Explore was opened with, while Explore still shows it (same mechanism and epsilon,
    or users): the report and the JSON then state the target, the answer and its one-collection reading. None
    once the setting moved on (the target alone is then stated: :func:`target_line`)."""
    goal = st.session_state.get(GOAL_KEY)
    if not goal or cfg.get("compare_mode") == "at_epsilon" or goal.get("mechanism") != scenario.mechanism:
        return None
    if goal.get("metric") != cfg.get("metric") or float(goal.get("target") or 0) != float(cfg.get("target") or 0):
        return None
    if "epsilon_used" in goal:
        return goal if abs(float(goal["epsilon_used"]) - float(scenario.epsilon)) <= 1e-12 else None
    return goal if scenario.n_users is not None and int(goal.get("n_users") or -1) == int(scenario.n_users) else None


def report_target(cfg: dict) -> tuple[str | None, float | None]:
    """(metric, target) of Compare's goal seek while one is set (else (None, None)): the report states it."""
    target = float(cfg.get("target") or 0.0)
    if cfg.get("compare_mode") == "at_epsilon" or target <= 0:
        return None, None
    return cfg.get("metric"), target


def target_line(cfg: dict, result: Result) -> str | None:
    """Explore opened from Compare's goal seek (a target set there): the target and how this setting's collections
    read against it, per collection and for the mean, so the interval shown is never silent about it."""
    metric, target = cfg.get("metric"), float(cfg.get("target") or 0.0)
    if cfg.get("compare_mode") == "at_epsilon" or target <= 0 or metric not in result.metrics.columns:
        return None
    values = result.metrics[metric].to_numpy(dtype=float)
    lower = lower_is_better(metric)
    met = int((values <= target).sum() if lower else (values >= target).sum())
    sign = "≤" if lower else "≥"
    line = (f"Target from Compare's goal seek: {metric_name(metric)} {sign} {fmt_metric(metric, target)}. Here "
            f"{met} of {len(values)} collections meet it (each trial is one collection); the goal seek's answer "
            "was decided on fresh collections with the probability and confidence it states.")
    goal = goal_for(cfg, result.scenario)
    if goal and goal.get("epsilon") is not None and goal.get("probability") is not None:
        from ldpviz.decide.one_collection import chance_text
        line += (f" Its answer: ε {float(goal['epsilon']):.3g} found; one collection meets the target with probability "
                 f"at least {float(goal['probability']):.0%} ({float(goal.get('confidence') or 0.95):.0%} confidence), "
                 f"missing it with a chance of at most {chance_text(goal.get('miss_chance_max'))}. The decision "
                 "report states it.")
    return line
