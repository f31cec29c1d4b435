"""Session state, the URL mirror, the shared sidebar and error handling for every page.

The configuration dict lives in ``st.session_state["cfg"]`` (it survives page
switches, unlike widget state). Each widget is keyed ``w:<field>``, initialised
from the dict the first time it is drawn, and written back after; at the end of
the sidebar the dict is mirrored into ``st.query_params``, so a copied link
reopens the same view. A fresh session reads the link (:func:`init`).
"""

from __future__ import annotations

import contextlib
import math
import traceback
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import streamlit as st

from dashboard import compute, state
from ldpviz import datasets, mechanisms
from ldpviz.domain import Grid, Region
from ldpviz.errors import LdpvizInputError
from ldpviz.experiment import Scenario

PAGE_ICON = ":material/map:"


def setup_page(title: str) -> dict[str, Any]:
    """set_page_config + state initialisation; returns the config dict."""
    st.set_page_config(page_title=f"ldpviz · {title}", page_icon=PAGE_ICON, layout="wide")
    return init()


def init() -> dict[str, Any]:
    """The session's config: read from the link on first load, then kept in session state."""
    ss = st.session_state
    ss.setdefault("uploads", {})
    ss.setdefault("saved_regions", {})
    if "cfg" not in ss:
        query = {k: st.query_params.get(k) for k in st.query_params.keys()}
        cfg, warnings = state.decode(query, datasets.names() + list(ss["uploads"]))
        ss["cfg"] = cfg
        ss["link_warnings"] = warnings
    for warning in ss.pop("link_warnings", []):
        st.warning(warning, icon=":material/link_off:")
    return ss["cfg"]


def sync_url(cfg: dict[str, Any]) -> None:
    """Mirror the config into the URL (only when it changed, to avoid needless history entries)."""
    wanted = state.encode(cfg)
    current = {k: st.query_params.get(k) for k in st.query_params.keys()}
    if wanted != current:
        st.query_params.from_dict(wanted)


def bind(cfg: dict[str, Any], field: str, widget: Callable[..., Any], *args: Any, valid: Any = None,
         **kwargs: Any) -> Any:
    """Draw ``widget`` keyed ``w:<field>``, initialised from ``cfg[field]``, and store its value back.

    ``valid`` (a collection) resets a stale session value that is no longer an option.
    """
    key = f"w:{field}"
    if key not in st.session_state or (valid is not None and st.session_state[key] not in valid):
        st.session_state[key] = cfg.get(field)
    value = widget(*args, key=key, **kwargs)
    cfg[field] = value
    return value


@contextlib.contextmanager
def guard(what: str = "this view") -> Iterator[None]:
    """Show bad input as an error box with what to do, never as a traceback."""
    try:
        yield
    except LdpvizInputError as exc:
        st.error(f"**Cannot compute {what}:** {exc}\n\nChange the setting named above in the sidebar and the "
                 "page updates by itself.", icon=":material/error:")
        if "power of two" in str(exc):
            offer_power_of_two(what)
    except MemoryError:
        st.error(f"**{what} needs more memory than this server has.** Choose a smaller grid side d, fewer users "
                 "or fewer trials.", icon=":material/memory:")
    except Exception as exc:  # noqa: BLE001 -- a bug must not take the page down with a traceback
        if type(exc).__module__.startswith("streamlit"):
            raise  # st.stop / st.rerun control flow
        report_bug(exc)


def nearest_power_of_two(side: int) -> int:
    """The power of two among the grid-side options closest to ``side`` (on a log scale; ties go up)."""
    powers = [v for v in state.GRID_OPTIONS if v & (v - 1) == 0]
    return min(powers, key=lambda v: (abs(math.log2(v) - math.log2(max(side, 1))), -v))


def offer_power_of_two(what: str = "") -> None:
    """A button that moves the grid side to the nearest power of two (for dp-heatmap's quadtree)."""
    cfg = st.session_state.get("cfg", {})
    target = nearest_power_of_two(int(cfg.get("grid_side", 32)))

    def apply() -> None:
        cfg["grid_side"] = target
        st.session_state["w:grid_side"] = target

    st.button(f"Use d = {target} (the nearest power of two)", on_click=apply, key=f"fix:pow2:{what}",
              icon=":material/grid_on:")


# ---- sidebar ---------------------------------------------------------------------------------

@dataclass
class Data:
    name: str
    dataset: datasets.Dataset
    key: str
    region_arg: Any          #: what goes into Scenario.region (preset name or Region)
    region: Region
    upload_filename: str | None


def _dataset_label(name: str, load: bool = True) -> str:
    """'Uploaded: file.csv', the dataset's label when it is loaded (``load``), else its registry name."""
    uploads = st.session_state.get("uploads", {})
    if name in uploads:
        return f"Uploaded: {uploads[name].label}"
    if not load:
        return name
    try:
        data = compute.load_bundled(name)
    except (LdpvizInputError, FileNotFoundError):
        return name
    return f"{data.label}{' (synthetic)' if data.synthetic else ''}"


def data_controls(cfg: dict[str, Any], show_users: bool = True) -> Data | None:
    """Dataset, region (preset, saved, fit-to-data, typed bounds) and number of users."""
    st.sidebar.header("Data")
    names = datasets.names() + list(st.session_state["uploads"])
    # A pure lookup (format_func must not read session state); only the selected dataset is loaded for its
    # label, the others show their registry names, so a cold start does not generate every synthetic set.
    labels = {n: _dataset_label(n, load=(n == cfg.get("dataset"))) for n in names}
    name = bind(cfg, "dataset", st.sidebar.selectbox, "Dataset", names, valid=names, format_func=labels.get,
                help="Bundled real data, the papers' synthetic sets, or a file you uploaded on the Data page.")
    try:
        data, key = compute.get_dataset(name)
    except (LdpvizInputError, FileNotFoundError) as exc:
        st.sidebar.error(f"Dataset {name!r} cannot be loaded: {exc}")
        return None
    saved = st.session_state["saved_regions"].get(name, {})
    options = list(data.presets) + [r for r in saved if r not in data.presets] + [state.REGION_FIT, state.REGION_BBOX]
    if cfg.get("region") not in options:
        cfg["region"] = options[0]
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
        w, s, e, n = cfg.get("bbox") or data.default_region.bbox
        text = st.sidebar.text_input("Bounds W, S, E, N (degrees)", f"{w:.5f}, {s:.5f}, {e:.5f}, {n:.5f}",
                                     key=f"w:bbox:{name}")
        try:
            cfg["bbox"] = state.parse_bbox(text)
            region_arg = region = Region.from_bbox(*cfg["bbox"], name="typed bounds")
        except LdpvizInputError as exc:
            st.sidebar.error(f"{exc}. Keeping the dataset's default region.")
            region_arg, region = next(iter(data.presets)), data.default_region
    if show_users:
        bind(cfg, "n_users", st.sidebar.number_input, "Number of users (0 = everyone in the region)",
             min_value=0, max_value=50_000_000, step=5_000,
             help="A seeded random sample of the people in the region takes part; more users, less noise.")
    st.sidebar.caption(f"{data.n:,} points · region side {region.side_m / 1000:,.2f} km")
    return Data(name, data, key, region_arg, region, upload_filename)


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
              "and EMD readouts take seconds per run (up to about a minute at d = 128 on a small machine).")


#: How each privacy model reads in lists: central DP is spelled out (a trusted aggregator, not local privacy).
MODEL_TAGS = {mechanisms.LDP: "LDP", mechanisms.GEO_I: "Geo-I",
              mechanisms.CENTRAL_DP: "central DP (trusted aggregator)", mechanisms.NO_PRIVACY: "no privacy"}


MODEL_MEANING = {
    mechanisms.LDP: "each phone randomises its own report before sending it; no one sees true locations.",
    mechanisms.GEO_I: "each phone randomises its report; nearby places are hard to tell apart, far ones less so.",
    mechanisms.CENTRAL_DP: "phones send exact locations to a trusted server, which adds noise to the published map.",
    mechanisms.NO_PRIVACY: "reports are the true locations (a reference point, not a private mechanism).",
}


def model_tag(privacy_model: str) -> str:
    return MODEL_TAGS.get(privacy_model, privacy_model)


def _mechanism_label(row: dict[str, Any]) -> str:
    return f"{row['label']} · {model_tag(row['privacy_model'])}"


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

    def family_changed() -> None:
        first = next(r["name"] for r in rows if r["family"] == st.session_state["w:family"])
        cfg["mechanism"] = first
        st.session_state["w:mechanism"] = first

    st.session_state["w:family"] = by_name[cfg["mechanism"]]["family"]
    family = where.selectbox("Family", families, key="w:family", on_change=family_changed,
                             help="Mechanisms come in families from the papers; central-DP heatmaps assume a "
                                  "trusted server that sees exact locations.")
    names = [r["name"] for r in rows if r["family"] == family]
    chosen = bind(cfg, "mechanism", where.selectbox, "Mechanism", names, valid=names,
                  format_func=lambda n: _mechanism_label(by_name[n]),
                  help="The tag after · is the privacy model (LDP: each phone randomises its own report; central "
                       "DP (trusted aggregator): a server that sees exact locations adds noise to the published "
                       "map; Geo-I: privacy that decays with distance).")
    model = by_name[chosen]["privacy_model"]
    where.caption(f"Privacy model: **{model_tag(model)}** — {MODEL_MEANING.get(model, '')}")
    return chosen


def mechanisms_multiselect(cfg: dict[str, Any], field: str, default: list[str], where: Any = None,
                           help: str | None = None) -> tuple[list[str], dict[str, dict[str, Any]]]:
    """Several mechanisms, labelled with their privacy model, kept in ``cfg[field]`` (and so in the URL).

    Names the registry no longer lists are dropped from the link and the widget. Returns the
    chosen names and the registry rows by name.
    """
    where = where or st
    by_name = {r["name"]: r for r in mechanism_rows()}
    key = f"w:{field}"
    chosen = [n for n in cfg.get(field) or [] if n in by_name] or default
    st.session_state.setdefault(key, chosen)
    st.session_state[key] = [n for n in st.session_state[key] if n in by_name]
    chosen = where.multiselect("Mechanisms", list(by_name), key=key,
                               format_func=lambda n: _mechanism_label(by_name[n]), help=help)
    cfg[field] = chosen
    return chosen, by_name


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
        if p.kind is bool:
            st.session_state.setdefault(key, bool(current))
            value = st.sidebar.checkbox(label, key=key, help=p.help)
        elif p.choices:
            choices = list(p.choices)
            if st.session_state.get(key) not in choices:
                st.session_state[key] = current if current in choices else choices[0]
            value = st.sidebar.selectbox(label, choices, key=key, help=p.help)
        elif p.kind in (int, float):
            if p.default is None:
                auto = st.sidebar.checkbox(f"{label}: automatic", value=current is None, key=key + ":auto",
                                           help=p.help)
                if auto:
                    stored.pop(p.name, None)
                    auto_names.append(p.name)
                    continue
            step = 1 if p.kind is int else (0.05 if p.name == "radius_factor" else None)
            init = current if current is not None else (p.minimum if p.minimum is not None else 1)
            st.session_state.setdefault(key, p.kind(init))
            value = st.sidebar.number_input(
                label, key=key, help=p.help, step=step,
                min_value=p.kind(p.minimum) if p.minimum is not None else None,
                max_value=p.kind(p.maximum) if p.maximum is not None else None)
        else:
            st.session_state.setdefault(key, "" if current is None else str(current))
            value = st.sidebar.text_input(label, key=key, help=p.help)
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
            f"{fmt_m(radius['optimal_m'])}**; in use: **{radius['used_cells']:.2f} cells = "
            f"{fmt_m(radius['used_m'])}**" + (" (the explicit radius above; the factor is ignored)." if explicit
                                                else "."))
    shown = [f"{n.replace('_', ' ')} = **{resolved[n]:g}**" for n in auto_names
             if isinstance(resolved.get(n), (int, float)) and not isinstance(resolved.get(n), bool)]
    if shown and auto_slot is not None:
        auto_slot.caption("Chosen automatically: " + ", ".join(shown) + ".")


def fmt_m(metres: float) -> str:
    return f"{metres / 1000:,.2f} km" if metres >= 1000 else f"{metres:,.0f} m"


def run_controls(cfg: dict[str, Any]) -> None:
    st.sidebar.header("Repetitions")
    bind(cfg, "seed", st.sidebar.number_input, "Seed", min_value=0, max_value=2**32 - 1, step=1,
         help="The same seed gives the same noise, so runs are reproducible.")
    bind(cfg, "trials", st.sidebar.slider, "Trials", 1, state.MAX_TRIALS_UI,
         help="Repeat the random perturbation; with more than one trial the readouts show mean ± spread.")


def scenario(cfg: dict[str, Any], data: Data, mechanism: str | None = None,
             params: dict[str, Any] | None = None, **changes: Any) -> Scenario:
    """The Scenario of the current configuration (optionally for another mechanism)."""
    return Scenario(dataset=data.name, mechanism=mechanism or cfg["mechanism"], epsilon=float(cfg["epsilon"]),
                    grid_side=int(cfg["grid_side"]), region=data.region_arg, params=params or {},
                    n_users=int(cfg["n_users"]) or None, seed=int(cfg["seed"]), trials=int(cfg["trials"]),
                    **changes)


def report_bug(exc: BaseException) -> None:
    """Anything not LdpvizInputError is a bug: say so plainly, with the details folded away."""
    st.error("Something went wrong inside ldpviz (a bug, not your input). Try another setting; the details "
             "below help the developers.", icon=":material/bug_report:")
    with st.expander("Details"):
        st.code("".join(traceback.format_exception_only(type(exc), exc)))
