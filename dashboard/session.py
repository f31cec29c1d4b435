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
    except MemoryError:
        st.error(f"**{what} needs more memory than this server has.** Choose a smaller grid side d, fewer users "
                 "or fewer trials.", icon=":material/memory:")
    except Exception as exc:  # noqa: BLE001 -- a bug must not take the page down with a traceback
        if type(exc).__module__.startswith("streamlit"):
            raise  # st.stop / st.rerun control flow
        report_bug(exc)


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
         help="Finer grids show more detail but spread the noise over more cells.")


def _mechanism_label(row: dict[str, Any]) -> str:
    return f"{row['label']} · {row['privacy_model']}"


def mechanism_rows() -> list[dict[str, Any]]:
    """The registry, grouped by family (families in first-registration order)."""
    rows = mechanisms.describe()
    order = {f: i for i, f in enumerate(dict.fromkeys(r["family"] for r in rows))}
    return sorted(rows, key=lambda r: (order[r["family"]], r["label"]))


def mechanism_picker(cfg: dict[str, Any], where: Any = None) -> str:
    """A selectbox of every registered mechanism, grouped by family, labelled with its privacy model."""
    where = where or st.sidebar
    rows = mechanism_rows()
    by_name = {r["name"]: r for r in rows}
    names = [r["name"] for r in rows]

    def fmt(name: str) -> str:
        r = by_name[name]
        return f"{_mechanism_label(r)} · {r['family']}"

    return bind(cfg, "mechanism", where.selectbox, "Mechanism", names, valid=names, format_func=fmt,
                help="Grouped by family; the tag after · is the privacy model (LDP: each phone randomises "
                     "its own report; central DP: a trusted server adds the noise; Geo-I: privacy that "
                     "decays with distance).")


def param_controls(cfg: dict[str, Any], mechanism: str, grid: Grid | None) -> dict[str, Any]:
    """One widget per registry parameter (defaults and help from the registry). Returns non-default values."""
    specs = mechanisms.get(mechanism).params
    stored = cfg.setdefault("params", {}).setdefault(mechanism, {})
    radius = compute.radius_param(mechanism)
    values: dict[str, Any] = {}
    if not specs:
        return values
    st.sidebar.header("Mechanism parameters")
    for p in specs:
        key = f"w:p:{mechanism}:{p.name}"
        current = stored.get(p.name, p.default)
        if radius is not None and p.name == radius.name:
            continue
        label = p.name.replace("_", " ")
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
                    continue
            step = 1 if p.kind is int else None
            init = current if current is not None else (p.minimum if p.minimum is not None else 1)
            st.session_state.setdefault(key, p.kind(init))
            value = st.sidebar.number_input(
                label, key=key, help=p.help, step=step,
                min_value=p.kind(p.minimum) if p.minimum is not None else None,
                max_value=p.kind(p.maximum) if p.maximum is not None else None)
        else:
            st.session_state.setdefault(key, "" if current is None else str(current))
            value = st.sidebar.text_input(label, key=key, help=p.help)
        stored[p.name] = value
        if value != p.default:
            values[p.name] = value
    if radius is not None and grid is not None:
        values.update(radius_controls(cfg, mechanism, radius, grid, values))
    return values


def radius_controls(cfg: dict[str, Any], mechanism: str, p: Any, grid: Grid, others: dict[str, Any]) -> dict[str, Any]:
    """The radius: the mechanism's optimal value (metres and cells) times a 'multiple of optimal'."""
    optimal = compute.optimal_radius(mechanism, grid.side, grid.region, float(cfg["epsilon"]),
                                     tuple(sorted(others.items())))
    multiple = bind(cfg, "radius_multiple", st.sidebar.number_input, f"{p.name.replace('_', ' ')}: multiple of optimal",
                    min_value=0.05, max_value=20.0, step=0.25, help=p.help)
    if optimal is None:
        st.sidebar.caption(f"{p.name}: the mechanism's own default (it does not report the value).")
        return {}
    value = multiple * optimal
    if p.kind is int:
        value = max(int(p.minimum) if p.minimum is not None else 0, int(round(value)))
    st.sidebar.caption(f"Optimal {p.name}: **{optimal:g} cells = {optimal * grid.cell_m:,.0f} m**; "
                       f"used: {value:g} cells = {value * grid.cell_m:,.0f} m.")
    return {} if math.isclose(multiple, 1.0) else {p.name: value}


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
