"""The sidebar every page shares: data and region, ε and d, the mechanism and its parameters, repetitions.

Every widget here is bound to the session's config through :func:`ldpviz.app.session.bind`
(or :func:`~ldpviz.app.session.keep`), so its value survives page switches and reloads.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import streamlit as st

from ldpviz.app import browser, compute, state
from ldpviz.app.ui import fmt_metres
from ldpviz.app.session import bind, cfg as session_cfg, keep
from ldpviz.data import datasets, synthetic
from ldpviz.decide import explain
from ldpviz import mechanisms
from ldpviz.geo import region_choice as regions
from ldpviz.render import maps as viz
from ldpviz.geo.domain import Grid, Region, wrap_lon
from ldpviz.errors import LdpvizInputError, clause
from ldpviz.experiment import Scenario


@dataclass
class Data:
    name: str
    dataset: datasets.Dataset
    key: str
    region_arg: Any          #: what goes into Scenario.region (preset name or Region)
    region: Region
    upload_filename: str | None


def dataset_label(name: str, load: bool = True) -> str:
    """'Uploaded: file.csv', the dataset's label when it is loaded (``load``), else its registry name."""
    uploads = st.session_state.get("uploads", {})
    if name in uploads:
        held = uploads[name]
        twins = [n for n, d in uploads.items() if d.label == held.label]
        if len(twins) > 1:        # the same file framed twice: say which is which, never two identical entries
            return f"Uploaded: {held.label} · {held.n:,} rows, {held.default_region.name}"
        return f"Uploaded: {held.label}"
    if not load:      # the registry's label: never the internal id ('szipf', 'gmm')
        return datasets.label(name) + (" (synthetic)" if name in synthetic.BUILDERS else "")
    try:
        data = compute.load_bundled(name)
    except (LdpvizInputError, FileNotFoundError):
        return name
    return f"{data.label}{' (synthetic)' if data.synthetic else ''}"


def _region_lost(linked: str, name: str, shown: str) -> str:
    """Why the link's region is not shown: a saved region of an uploaded file this server no longer holds (after a
    restart, as the link's upload itself), or a region this session does not know."""
    owners = [ds for ds, saved in st.session_state["saved_regions"].items() if linked in saved and ds != name]
    lost = [ds for ds in owners if ds.startswith("upload:") and ds not in st.session_state["uploads"]]
    if lost:
        return (f"The link's saved region {linked!r} was drawn on the uploaded file '{lost[0].split(':', 2)[-1]}', "
                "which this server no longer holds (uploads and the regions saved on them are kept in memory only, "
                f"for a day or until the server restarts); showing {dataset_label(name)}'s {shown!r} instead. Upload "
                f"the file again on the Data page: {linked!r} returns to its Region list.")
    return (f"The link's region {linked!r} is not one of {dataset_label(name)}'s regions (it may have been saved in "
            f"another session); showing {shown!r} instead.")


def data_controls(cfg: dict[str, Any], show_users: bool = True) -> Data | None:
    """Dataset, region (preset, saved, fit-to-data, typed bounds) and number of users."""
    st.sidebar.header("Data")
    names = datasets.names() + list(st.session_state["uploads"])
    # A pure lookup (format_func must not read session state); only the selected dataset is loaded for its
    # label, the others show their registry names, so a cold start does not generate every synthetic set.
    labels = {n: dataset_label(n, load=(n == cfg.get("dataset"))) for n in names}
    name = bind(cfg, "dataset", st.sidebar.selectbox, "Dataset", names, valid=names, format_func=labels.get,
                help="Bundled real data, the papers' synthetic sets, or a file you uploaded on the Data page.")
    try:
        data, key = compute.get_dataset(name)
    except (LdpvizInputError, FileNotFoundError) as exc:
        st.sidebar.error(f"Dataset {name!r} cannot be loaded: {exc}")
        return None
    saved = st.session_state["saved_regions"].get(name, {})
    options = list(data.presets) + [r for r in saved if r not in data.presets] + [state.REGION_FIT, state.REGION_BBOX]
    linked = st.session_state.pop("link_region", None)
    if linked is not None and linked not in options:
        message = _region_lost(linked, name, options[0])
        # kept with the link's warnings: the page's next runs show it again (session.init), until the user moves on
        st.session_state["link_warnings"] = [*st.session_state.get("link_warnings", []), message]
        st.warning(message, icon=":material/link_off:")
    choice = bind(cfg, "region", st.sidebar.selectbox, "Region", options, valid=options,
                  help="A preset square of the dataset, one you saved on the Data page, the square that fits "
                       "all points, or bounds you type in (west, south, east, north in degrees).")
    upload_filename = data.label if compute.is_upload(name) else None
    if choice in data.presets:
        region_arg, region = choice, data.presets[choice]
    elif choice in saved:
        region_arg = region = saved[choice]
    elif choice == state.REGION_FIT:
        region_arg = region = compute.fit_region(key, data)
    else:
        region_arg, region = _typed_bounds(cfg, data)
    if show_users:
        bind(cfg, "n_users", st.sidebar.number_input, "Number of users (0 = everyone in the region)",
             **state.SETTING["n_users"].widget_bounds(), step=5_000,
             help="A seeded random sample of the people in the region takes part; more users, less noise.")
    if region.bounds is not None:
        inside = int(region.contains(data.lon, data.lat).sum())
        st.sidebar.caption(f"{region.typed_bounds} ({inside:,} of {explain.plural(data.n, 'row')} inside) · the grid "
                           f"covers the {fmt_metres(region.side_m)} square around the box")
    else:
        st.sidebar.caption(f"{explain.plural(data.n, 'point')} · region side {fmt_metres(region.side_m)}")
    return Data(name, data, key, region_arg, region, upload_filename)


def bbox_text(west: float, south: float, east: float, north: float) -> str:
    """Bounds as the text box shows them, in the form it accepts: longitudes wrapped into [-180, 180] (a region
    across 180 degrees has continuous longitudes, e.g. east 195.35, which the box reads as west > east: -164.65),
    latitudes within [-90, 90]."""
    w, e = (float(wrap_lon(v)) for v in (west, east))
    s, n = max(float(south), -90.0), min(float(north), 90.0)
    return ", ".join(f"{round(v, 5):.10g}" for v in (w, s, e, n))   # 5 decimals (about a metre), no trailing zeros


def region_bbox_text(region: Region) -> str:
    """Bounds for the text box that the box accepts and that come closest to ``region``.

    The box enclosing the region comes first; a continental region's enclosing box can need a square larger than
    any region (its corners are far apart in lon/lat), so then the box through its centre lines is offered, shrunk
    about the centre until it is accepted.
    """
    if region.bounds is not None:           # typed bounds: the box itself
        candidates = [tuple(region.bounds)]
    else:
        candidates = [region.bbox]
    edges = np.array([[0.0, 0.5], [1.0, 0.5], [0.5, 0.0], [0.5, 1.0]])
    for scale in (1.0, 0.9, 0.8, 0.7, 0.6, 0.5):
        lon, lat = region.unit_to_lonlat(0.5 + (edges - 0.5) * scale)
        candidates.append((lon[0], lat[2], lon[1], lat[3]))
    for box in candidates:
        text = bbox_text(*box)
        try:
            state.parse_bbox(text)
        except LdpvizInputError:
            continue
        return text
    return ""


def _typed_bounds(cfg: dict[str, Any], data: datasets.Dataset) -> tuple[Any, Region]:
    """The 'bounds typed in' region: a text box kept in the config (its parsed form goes into the link)."""
    if not cfg.get("bbox_text"):
        cfg["bbox_text"] = (bbox_text(*cfg["bbox"]) if cfg.get("bbox") else region_bbox_text(data.default_region))
    text = bind(cfg, "bbox_text", st.sidebar.text_input, "Bounds W, S, E, N (degrees)")
    try:
        cfg["bbox"] = state.parse_bbox(text)
        region = regions.stated_region(cfg["bbox"])   # the box's rows only, on the grid of its square
        return region, region
    except LdpvizInputError as exc:
        st.sidebar.error(f"{clause(exc)}. Keeping the dataset's default region until the bounds are fixed.")
        return next(iter(data.presets)), data.default_region


def page_grid(cfg: dict[str, Any], field: str, allowed: tuple[int, ...], fallback: int, label: str,
              help: str = "") -> int:
    """A page's own grid side that follows the shared d where it is one of ``allowed`` (``cfg[field]`` None),
    or the side picked on the page; a caption under it says which, and a button goes back to following."""
    shared = int(cfg["grid_side"])
    own = cfg.get(field)
    own = int(own) if own in allowed else None
    value = own if own is not None else (shared if shared in allowed else fallback)

    def store(new: Any) -> None:
        session_cfg()[field] = int(new)

    st.sidebar.select_slider(label, list(allowed), **keep(f"w:{field}", value, store), help=help)
    if own is None and shared in allowed:
        st.sidebar.caption(f"Follows the shared grid side d = {shared} (Explore, Compare).")
    elif own is None:
        st.sidebar.caption(f"The shared grid side d = {shared} is not offered here (only "
                           f"{', '.join(map(str, allowed))}), so this page uses {fallback}.")
    else:
        st.sidebar.caption(f"Set on this page; the shared grid side is d = {shared}.")
        if shared in allowed and shared != own:
            st.sidebar.button(f"Follow the shared d = {shared}", key=f"follow:{field}",
                              on_click=lambda: session_cfg().update({field: None}))
    return value


def privacy_controls(cfg: dict[str, Any]) -> None:
    """Epsilon (fine steps at the low end) and the grid side d."""
    st.sidebar.header("Privacy and grid")
    eps_options = sorted(set(state.EPSILON_OPTIONS) | {float(cfg["epsilon"])})
    bind(cfg, "epsilon", st.sidebar.select_slider, "Privacy budget ε", eps_options, valid=eps_options,
         format_func=lambda v: f"{v:g}",
         help="Smaller ε = stronger privacy and noisier maps. 0.1 is very strict, 1 is common, 10 is weak.")
    grid_options = sorted(set(state.GRID_OPTIONS) | {int(cfg["grid_side"])})
    bind(cfg, "grid_side", st.sidebar.select_slider, "Grid side d (d × d cells)", grid_options, valid=grid_options,
         help="Finer grids show more detail but spread the noise over more cells. Beyond d = 64 the exact W2 "
              "and EMD readouts take seconds per run; a long run is announced before it starts.")


def query_controls(cfg: dict[str, Any]) -> None:
    """The range-query size rho behind the AQE readout (Scenario.query_rho)."""
    options = sorted(set(state.QUERY_RHO_OPTIONS) | {float(cfg["query_rho"])})
    bind(cfg, "query_rho", st.sidebar.select_slider, "Query size ρ (share of the area, for AQE)", options,
         valid=options, format_func=lambda v: f"{100 * v:g}%",
         help="AQE scores random rectangular range queries each covering this share of the region's area: "
              "small queries ask about a neighbourhood, large ones about a district.")


#: How each privacy model reads in lists: central DP is spelled out (a trusted aggregator, not local privacy).
MODEL_TAGS = {mechanisms.LDP: "LDP", mechanisms.GEO_I: "Geo-I",
              mechanisms.CENTRAL_DP: "central DP (trusted aggregator)", mechanisms.NO_PRIVACY: "no privacy"}
#: The same, short enough to lead a label in a narrow box (the caption under the box spells it out).
SHORT_TAGS = {**MODEL_TAGS, mechanisms.CENTRAL_DP: "central DP"}

MODEL_MEANING = {
    mechanisms.LDP: "each phone randomises its own report before sending it; no one sees true locations.",
    mechanisms.GEO_I: "each phone randomises its report; nearby places are hard to tell apart, far ones less so.",
    mechanisms.CENTRAL_DP: "phones send exact locations to a trusted server (a trusted aggregator), which adds "
                           "noise to the published map.",
    mechanisms.NO_PRIVACY: "reports are the true locations (a reference point, not a private mechanism).",
}


def model_tag(privacy_model: str) -> str:
    return MODEL_TAGS.get(privacy_model, privacy_model)


def mechanism_label(row: dict[str, Any]) -> str:
    """'LDP · Disk Area Mechanism (DAM)': the privacy model first, so a narrow box never hides it."""
    return f"{SHORT_TAGS.get(row['privacy_model'], row['privacy_model'])} · {row['label']}"


def mechanism_rows() -> list[dict[str, Any]]:
    """The registry, grouped by family (families in first-registration order)."""
    rows = mechanisms.describe()
    model_rank = {mechanisms.LDP: 0, mechanisms.GEO_I: 0, mechanisms.CENTRAL_DP: 1, mechanisms.NO_PRIVACY: 2}
    families: dict[str, int] = {}
    for r in rows:   # a family's rank: its most local member (LDP/Geo-I first, central DP, then references)
        families[r["family"]] = min(families.get(r["family"], 9), model_rank.get(r["privacy_model"], 3))
    order = {f: (rank, f) for f, rank in families.items()}
    return sorted(rows, key=lambda r: (order[r["family"]], r["label"]))


def mechanism_picker(cfg: dict[str, Any], where: Any = None) -> str:
    """Family, then mechanism: every registered mechanism, each labelled with its privacy model."""
    where = where or st.sidebar
    rows = mechanism_rows()
    by_name = {r["name"]: r for r in rows}
    if cfg.get("mechanism") not in by_name:
        cfg["mechanism"] = state.default_mechanism()
    families = list(dict.fromkeys(r["family"] for r in rows))

    def family_changed(family: str) -> None:
        if by_name[session_cfg()["mechanism"]]["family"] != family:
            session_cfg()["mechanism"] = next(r["name"] for r in rows if r["family"] == family)

    family = where.selectbox("Family", families, **keep("w:family", by_name[cfg["mechanism"]]["family"],
                                                        family_changed),
                             help="Mechanisms come in families from the papers; central-DP heatmaps assume a "
                                  "trusted server that sees exact locations.")
    names = [r["name"] for r in rows if r["family"] == family]
    chosen = bind(cfg, "mechanism", where.selectbox, "Mechanism", names, valid=names,
                  format_func=lambda n: mechanism_label(by_name[n]),
                  help="The tag before · is the privacy model (LDP: each phone randomises its own report; central "
                       "DP: a trusted server that sees exact locations adds noise to the published map; Geo-I: "
                       "privacy that decays with distance).")
    model = by_name[chosen]["privacy_model"]
    where.caption(f"Privacy model: **{model_tag(model)}** — {MODEL_MEANING.get(model, '')}")
    return chosen


def mechanisms_multiselect(cfg: dict[str, Any], field: str, default: list[str], where: Any = None,
                           help: str | None = None) -> tuple[list[str], dict[str, dict[str, Any]]]:
    """Several mechanisms, labelled with their privacy model, kept in ``cfg[field]`` (and so in the URL).

    Names the registry no longer lists are dropped. Returns the chosen names and the registry rows by name.
    """
    where = where or st
    by_name = {r["name"]: r for r in mechanism_rows()}
    if not cfg.get(field):
        cfg[field] = list(default)
    cfg[field] = [n for n in cfg[field] if n in by_name]
    chosen = bind(cfg, field, where.multiselect, "Mechanisms", list(by_name),
                  format_func=lambda n: f"{SHORT_TAGS.get(by_name[n]['privacy_model'])} · {short_label(by_name[n])}",
                  help=help)
    return list(chosen), by_name


def short_label(row: dict[str, Any]) -> str:
    """'DAM' from 'DAM (Disk Area Mechanism)': chips and table cells stay short."""
    return row["label"].split(" (")[0]


#: Compare's default picks: one representative per family, in this order of preference.
REPRESENTATIVES = ("dam", "grr", "aag", "srr", "dp-heatmap")
MAX_DEFAULT_COMPARE = 4


def default_comparison(current: str) -> list[str]:
    """A small default selection for Compare: the current mechanism plus one mechanism per other family."""
    rows = mechanism_rows()
    family = {r["name"]: r["family"] for r in rows}
    picks = [current] if current in family else []
    candidates = [n for n in REPRESENTATIVES if n in family]
    candidates += [r["name"] for r in rows if r["privacy_model"] != mechanisms.NO_PRIVACY]
    for name in candidates:
        if len(picks) >= MAX_DEFAULT_COMPARE:
            break
        if family[name] not in {family[p] for p in picks}:
            picks.append(name)
    return picks


def overrides_resolved_defaults(mechanism: str) -> bool:
    """True when the mechanism reports values for parameters left at a computed default."""
    cls = mechanisms.get(mechanism)
    return cls.resolved_defaults is not mechanisms.Mechanism.resolved_defaults


def _param_store(mechanism: str, name: str, manual: Any = None, auto: bool = False):
    """A store for one mechanism parameter in the config.

    ``auto``: the store of the 'automatic' checkbox of a computed default; unticking it sets ``manual``.
    """
    def store(value: Any) -> None:
        params = session_cfg().setdefault("params", {}).setdefault(mechanism, {})
        if auto:
            if value:
                params.pop(name, None)
            else:
                params[name] = manual
        else:
            params[name] = value
    return store


def param_controls(cfg: dict[str, Any], mechanism: str, grid: Grid | None) -> dict[str, Any]:
    """One widget per registry parameter (defaults and help from the registry). Returns non-default values.

    Parameters left at a computed default show the value the mechanism chose (``effective_params``);
    the DAM family's ``radius_factor`` shows the optimal radius b (eq. 12) in cells and metres beside it.
    """
    specs = mechanisms.get(mechanism).params
    stored = cfg.setdefault("params", {}).setdefault(mechanism, {})
    st.session_state.pop("_resolved_pending", None)
    values: dict[str, Any] = {}
    if not specs:
        return values
    st.sidebar.header("Mechanism parameters")
    radius_slot = None
    auto_names: list[str] = []
    for p in specs:
        key = f"w:p:{mechanism}:{p.name}"
        current = stored.get(p.name, p.default)
        label = p.name.replace("_", " ")
        if p.name == "radius_factor":
            label = "radius factor (multiple of the optimal radius b)"
        store = _param_store(mechanism, p.name)
        if p.kind is bool:
            value = bool(current)
            st.sidebar.checkbox(label, **keep(key, value, store), help=p.help)
        elif p.choices:
            choices = list(p.choices)
            value = current if current in choices else choices[0]
            st.sidebar.selectbox(label, choices, **keep(key, value, store), help=p.help)
        elif p.kind in (int, float):
            init = current if current is not None else (p.minimum if p.minimum is not None else 1)
            value = p.kind(init)
            if p.default is None:
                auto_store = _param_store(mechanism, p.name, manual=value, auto=True)
                st.sidebar.checkbox(f"{label}: automatic", **keep(key + ":auto", current is None, auto_store),
                                    help=p.help)
                if current is None:
                    auto_names.append(p.name)
                    continue
            step = 1 if p.kind is int else (0.05 if p.name == "radius_factor" else None)
            st.sidebar.number_input(
                label, **keep(key, value, store), help=p.help, step=step,
                min_value=p.kind(p.minimum) if p.minimum is not None else None,
                max_value=p.kind(p.maximum) if p.maximum is not None else None)
        else:
            value = "" if current is None else str(current)
            st.sidebar.text_input(label, **keep(key, value, store), help=p.help)
        if p.name == "radius_factor":
            radius_slot = st.sidebar.empty()
        stored[p.name] = value
        if value != p.default:
            values[p.name] = value
    if grid is None:
        return values
    epsilon = float(cfg["epsilon"])
    auto_names = [n for n in auto_names if n != "radius"]
    auto_slot = st.sidebar.empty() if auto_names and overrides_resolved_defaults(mechanism) else None
    if radius_slot is not None or auto_slot is not None:
        # Filled by show_resolved_defaults() once the page's main result is on screen: building a mechanism
        # costs a setup (SEM-Geo-I calibrates against DAM; DAM at small epsilon builds a large disk), and
        # the readouts must not wait for a caption.
        st.session_state["_resolved_pending"] = (radius_slot, auto_slot, mechanism, grid, epsilon,
                                                 tuple(sorted(values.items())), tuple(auto_names))
    return values


def show_resolved_defaults() -> None:
    """The values chosen for parameters left automatic (``Mechanism.effective_params``), in the sidebar."""
    pending = st.session_state.pop("_resolved_pending", None)
    if pending is None:
        return
    radius_slot, auto_slot, mechanism, grid, epsilon, params, auto_names = pending
    try:
        resolved = compute.effective_params(mechanism, grid.side, grid.region, epsilon, params)
        radius = compute.radius_summary(mechanism, grid, epsilon, dict(params)) if radius_slot else None
    except LdpvizInputError:
        return
    if radius is not None:
        explicit = dict(params).get("radius") is not None
        radius_slot.caption(
            f"Optimal radius b (eq. 12 of the DAM paper): **{radius['optimal_cells']:.2f} cells = "
            f"{fmt_metres(radius['optimal_m'])}**; in use: **{radius['used_cells']:.2f} cells = "
            f"{fmt_metres(radius['used_m'])}**" + (" (the explicit radius above; the factor is ignored)." if explicit
                                                else "."))
    shown = [f"{n.replace('_', ' ')} = **{resolved[n]:g}**" for n in auto_names
             if isinstance(resolved.get(n), (int, float)) and not isinstance(resolved.get(n), bool)]
    if shown and auto_slot is not None:
        auto_slot.caption("Chosen automatically: " + ", ".join(shown) + ".")


def map_controls(cfg: dict[str, Any]) -> bool:
    """The optional basemap under every map (off by default: with it off, no request leaves this server)."""
    st.sidebar.header("Maps")
    on = bool(bind(cfg, "basemap", st.sidebar.toggle, "Basemap (loads tiles from the internet)",
                   help=f"Draws streets and place names under the cells, from {viz.BASEMAP_HOST} ("
                        f"{viz.BASEMAP_CREDIT}; no account or token needed). Your browser then asks that server "
                        "for the map area you look at. Offline the cells and the region's outline still draw."))
    if on:
        st.sidebar.caption(f"Tiles come from CARTO ({viz.BASEMAP_HOST}) and need an internet connection.")
        browser.basemap_check()
    return on


def basemap_caption(on: bool) -> str:
    """One sentence for under a page's maps: what is drawn beneath the cells and where it comes from."""
    if on:
        return (f"Basemap: {viz.BASEMAP_CREDIT}, loaded by your browser from {viz.BASEMAP_HOST} (offline the cells "
                "and outline still draw without it).")
    return "No basemap is drawn (nothing is fetched from a map server; switch it on under Maps in the sidebar)."


def run_controls(cfg: dict[str, Any]) -> None:
    st.sidebar.header("Repetitions")
    bind(cfg, "seed", st.sidebar.number_input, "Seed", **state.SETTING["seed"].widget_bounds(), step=1,
         help="The same seed gives the same noise, so runs are reproducible.")
    bind(cfg, "trials", st.sidebar.slider, "Trials", state.SETTING["trials"].low, state.SETTING["trials"].high,
         help=f"Repeat the random perturbation (each trial draws fresh noise for every user). Readouts show the "
              f"mean and its 95% interval from {state.DEFAULT_TRIALS} trials on ({state.DEFAULT_TRIALS} is the "
              "default and the floor for an interval); more trials narrow it and cost proportionally more time.")


def scenario(cfg: dict[str, Any], data: Data, mechanism: str | None = None,
             params: dict[str, Any] | None = None, **changes: Any) -> Scenario:
    """The Scenario of the current configuration (optionally for another mechanism)."""
    return Scenario(dataset=data.name, mechanism=mechanism or cfg["mechanism"], epsilon=float(cfg["epsilon"]),
                    grid_side=int(cfg["grid_side"]), region=data.region_arg, params=params or {},
                    n_users=int(cfg["n_users"]) or None, seed=int(cfg["seed"]), trials=int(cfg["trials"]),
                    **{"query_rho": float(cfg.get("query_rho") or 0.01), **changes})
