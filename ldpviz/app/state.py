"""The dashboard's configuration and its round trip through the URL query parameters.

One plain dict (:func:`defaults`) holds everything a page needs to rebuild a
view: dataset, region, mechanism and its parameters, epsilon, grid side, users,
seed, trials, and the page-specific choices (mechanisms compared, sweep axis...).
:func:`decode` reads query parameters into that dict, validating every value
and collecting a warning for each one it had to ignore; :func:`encode` writes it
back, leaving out values equal to their defaults so links stay short.

No Streamlit here: the pages hold the dict in ``st.session_state`` and mirror it
into ``st.query_params`` (see :mod:`ldpviz.app.session`).
"""

from __future__ import annotations

import math
from typing import Any, Mapping
from urllib.parse import parse_qsl

from ldpviz.app import settings
from ldpviz.app.settings import (  # noqa: F401  (the pages read these as state.NAME)
    BLACKBOX_SAMPLES, BUDGET_UNITS, COMPARE_MODES, DEFAULT_SWEEP_METRICS, DEFAULT_TRIALS, DEFAULT_USERS,
    MAX_TRIALS_UI, PEOPLE_GRIDS, PEOPLE_MAX_K, PEOPLE_SOURCES, REGION_BBOX, REGION_FIT, SETTING, SIGMA_RANGE,
    UPLOAD_RULES, default_mechanism, lost_upload, parse_bbox)
from ldpviz.data import datasets
from ldpviz.decide import decision_flow
from ldpviz import mechanisms
from ldpviz.geo.domain import Region
from ldpviz.errors import LdpvizInputError
from ldpviz.setting import read_link, write_link

#: The epsilon slider: fine steps at the low end where the privacy is, coarser above.
EPSILON_OPTIONS: tuple[float, ...] = tuple(
    [round(0.1 * k, 2) for k in range(1, 10)] + [round(1 + 0.25 * k, 2) for k in range(8)]
    + [round(3 + 0.5 * k, 2) for k in range(15)])
EPSILON_RANGE = (EPSILON_OPTIONS[0], EPSILON_OPTIONS[-1])
#: What a link (and so a page handing an answer to another) may set: any epsilon a mechanism accepts, so an answer
#: found off the slider's range (Geo-I's epsilon per km on cells of tens of km) still opens where it was found;
#: the slider then shows it among its steps.
EPSILON_LINK_RANGE = (SETTING["epsilon"].low, SETTING["epsilon"].high)
GRID_OPTIONS: tuple[int, ...] = (4, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256)
AUDIT_SIDES: tuple[int, ...] = (4, 6, 8, 12, 16, 24)
SWEEP_AXES = ("epsilon", "grid_side", "n_users")
#: Range-query sizes for AQE (share of the region's area one query covers).
QUERY_RHO_OPTIONS: tuple[float, ...] = (0.005, 0.01, 0.05, 0.1, 0.25)
#: Compare's first target per goal-seek metric (the user types their own): a typical 'good enough' value. Changing
#: the metric resets the target to its metric's default. Its W2 (500 m) is not the Decide page's (800 m,
#: ldpviz.decide.decision_flow.DECIDE_TARGET_DEFAULTS).
COMPARE_TARGET_DEFAULTS = {"w2_m": 500.0, "aqe": 0.05, "kl": 0.1, "l1": 0.2}


def epsilon_for_use(epsilon: float) -> float:
    """A goal seek's epsilon rounded *up* to 3 significant figures for the sidebar (rounding down could lose the
    target it met)."""
    if not (math.isfinite(epsilon) and epsilon > 0):
        raise LdpvizInputError(f"epsilon must be a number above 0, got {epsilon!r}")
    unit = 10.0 ** (math.floor(math.log10(epsilon)) - 2)
    up = math.ceil(round(epsilon / unit, 9)) * unit
    return float(f"{up:.3g}")
DEFAULT_SWEEP_VALUES = {"epsilon": "0.25, 0.5, 1, 2, 4, 8", "grid_side": "8, 16, 32, 64",
                        "n_users": "1000, 5000, 20000, 50000"}
#: The Trade-offs page's budget link keys.
BUDGET_KEYS = settings.keys("budget_every", "budget_times", "budget_period", "budget_unit", "budget_from_total",
                            "budget_total", "frontier")
#: The size of the box the Data page suggests for a file too large for one region.
SUGGEST_SIDE_KM = 6000.0


def parse_optional_bbox(text: str) -> tuple[float, float, float, float] | None:
    """Blank -> None; else :func:`parse_bbox`."""
    return parse_bbox(text) if str(text or "").strip() else None


def defaults() -> dict[str, Any]:
    """The configuration a fresh session starts from."""
    return {s.field: s.initial() for s in settings.SETTINGS}


#: Page grid sides (None = follow the shared d where the page allows it): Flows' OD grid, People's heatmap grid,
#: with the side each page uses when the shared d is not one of its options.
FLOWS_GRIDS: tuple[int, ...] = (4, 8, 16)
FLOWS_GRID_FALLBACK = 8
PEOPLE_GRID_FALLBACK = 16

#: The Flows page's fields and their link keys.
FLOWS_KEYS = settings.keys("flows_dataset", "flows_region", "flows_mechanism", "flows_estimator", "flows_grid",
                           "flows_theta", "flows_cap")
#: The People page's fields and their link keys.
PEOPLE_KEYS = settings.keys("people_source", "people_region", "people_method", "people_grid", "people_shuffle",
                            "people_k")


def known_datasets(uploads: Mapping[str, Any] = ()) -> list[str]:
    """Names a link may select: the bundled datasets and this session's uploads."""
    return datasets.names() + list(uploads)


# ---- parsing helpers ---------------------------------------------------------------------

def parse_values(text: str, kind: type = float) -> list[Any]:
    """'0.5, 1, 2' -> [0.5, 1.0, 2.0] (a sweep's values); raises LdpvizInputError on junk."""
    out = []
    for part in str(text).replace(";", ",").split(","):
        part = part.strip()
        if not part:
            continue
        try:
            value = float(part)
        except ValueError:
            raise LdpvizInputError(f"sweep values must be numbers separated by commas; {part!r} is not a "
                                   "number") from None
        if not math.isfinite(value):
            raise LdpvizInputError(f"sweep values must be finite numbers, got {part!r}")
        if kind is int:
            if value != int(value):
                raise LdpvizInputError(f"this sweep needs whole numbers, got {part!r}")
            value = int(value)
        if value not in out:
            out.append(value)
    if not out:
        raise LdpvizInputError("give at least one value to sweep over, e.g. 0.5, 1, 2, 4")
    if len(out) > 20:
        raise LdpvizInputError(f"at most 20 sweep values at a time, got {len(out)}")
    return sorted(out)


def param_specs(mechanism: str) -> dict[str, Any]:
    """name -> Param of a registered mechanism."""
    return {p.name: p for p in mechanisms.get(mechanism).params}


# ---- URL <-> config -------------------------------------------------------------------------

def decode(query: Mapping[str, str], known_datasets: list[str] | None = None, released: Mapping[str, str] | None = None,
           budget: str = "") -> tuple[dict[str, Any], list[str]]:
    """Query parameters -> (config, warnings). Every bad value is dropped with a warning, never raised.
    ``released``: uploads this session released (:func:`lost_upload` names them), ``budget`` its upload budget."""
    cfg = defaults()
    warnings: list[str] = []
    known = known_datasets or datasets.names()
    context = settings.LinkContext(known, released or {}, budget, warnings, lambda text: _read_pin(text, known))
    read = read_link(settings.SETTINGS, query, cfg, warnings, context)
    if "sigma" in read and "hf" not in query:    # a filter width turns the filter on, unless the link says off
        cfg["heatmap_filter"] = True
    specs = param_specs(cfg["mechanism"])
    params: dict[str, Any] = {}
    for key, value in query.items():
        if not key.startswith("p."):
            continue
        name = key[2:]
        if name not in specs:
            warnings.append(f"link parameter '{key}' ignored: {cfg['mechanism']} has no parameter {name!r}")
            continue
        try:
            params[name] = specs[name].validate(value)
        except LdpvizInputError as exc:
            warnings.append(f"link parameter '{key}' ignored: {exc}")
    if params:
        cfg["params"] = {cfg["mechanism"]: params}
    return cfg, warnings


#: What a pinned setting keeps: the fields that make Explore's Scenario (display choices are shared with the current).
PIN_FIELDS = ("dataset", "region", "bbox", "mechanism", "epsilon", "grid_side", "params", "n_users", "seed",
              "trials", "query_rho")


def pin_query(cfg: Mapping[str, Any], saved_regions: Mapping[str, Mapping[str, Region]] | None = None
              ) -> dict[str, str]:
    """The scenario part of ``cfg`` in its link form (:func:`encode` of :data:`PIN_FIELDS` only): what a pin keeps,
    in session state and, urlencoded, in the ``pin`` link parameter."""
    return encode({**defaults(), **{f: cfg.get(f) for f in PIN_FIELDS}}, saved_regions)


def pin_config(pin: Mapping[str, str], known_datasets: list[str] | None = None,
               released: Mapping[str, str] | None = None, budget: str = "") -> tuple[dict[str, Any], list[str]]:
    """A pin's query (:func:`pin_query`) -> (config, warnings), as :func:`decode` reads a link."""
    return decode(pin, known_datasets, released, budget)


def _read_pin(text: str, known_datasets: list[str]) -> dict[str, str]:
    """The ``pin`` link parameter: an urlencoded :func:`pin_query`; kept only when every value in it is valid."""
    pairs = parse_qsl(str(text), keep_blank_values=True)
    if not pairs:
        raise LdpvizInputError(f"the pinned setting must be link parameters such as 'eps=0.5&mech=grr', got {text!r}")
    query = dict(pairs)
    unknown = sorted(set(query) - _PIN_KEYS - {k for k in query if k.startswith("p.")})
    if unknown:
        raise LdpvizInputError(f"the pinned setting has unknown part(s) {', '.join(unknown)}")
    _, warnings = decode(query, known_datasets)
    if warnings:
        raise LdpvizInputError("; ".join(w.replace("link parameter", "its") for w in warnings))
    return query


#: The link keys a pin may hold (a saved region's ``rc`` with its region).
_PIN_KEYS = {SETTING[f].key for f in PIN_FIELDS if SETTING[f].key} | {"rc"}


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def decode_saved_region(query: Mapping[str, str]) -> dict[str, tuple[str, Region]]:
    """A saved region carried by a link (``region=NAME&rc=LON,LAT,SIDE_M``): {dataset: (name, Region)}."""
    text, name = query.get("rc"), query.get("region")
    if not text or not name:
        return {}
    try:
        lon, lat, side = (float(v) for v in str(text).split(","))
        region = Region(lon, lat, side, str(name))
    except (ValueError, LdpvizInputError):
        return {}
    return {str(query.get("ds") or defaults()["dataset"]): (str(name), region)}


def encode(cfg: Mapping[str, Any], saved_regions: Mapping[str, Mapping[str, Region]] | None = None) -> dict[str, str]:
    """Config -> query parameters (strings), leaving out values equal to the defaults.

    A region the user saved (``saved_regions[dataset][name]``) travels with its centre and side (``rc``), so a
    link or a reload recreates it.
    """
    out = write_link(settings.DASHBOARD, cfg)
    saved = (saved_regions or {}).get(cfg.get("dataset"), {})
    if cfg.get("region") in saved:
        r = saved[cfg["region"]]
        out["rc"] = f"{r.center_lon:.6f},{r.center_lat:.6f},{r.side_m:.1f}"
    out.update(decision_flow.encode(cfg))
    mech = cfg.get("mechanism")
    specs = param_specs(mech) if mech in mechanisms.available() else {}
    for name, value in (cfg.get("params") or {}).get(mech, {}).items():
        if name in specs and value != specs[name].default:
            out[f"p.{name}"] = _fmt(value)
    return out
