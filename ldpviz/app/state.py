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
from urllib.parse import parse_qsl, urlencode

from ldpviz.data import datasets, trajectories
from ldpviz.decide import decision_flow
from ldpviz import mechanisms, metrics
from ldpviz.people.user_heatmaps import METHODS as PEOPLE_METHODS
from ldpviz.geo.domain import MAX_GRID_SIDE, Region
from ldpviz.errors import LdpvizInputError

#: The epsilon slider: fine steps at the low end where the privacy is, coarser above.
EPSILON_OPTIONS: tuple[float, ...] = tuple(
    [round(0.1 * k, 2) for k in range(1, 10)] + [round(1 + 0.25 * k, 2) for k in range(8)]
    + [round(3 + 0.5 * k, 2) for k in range(15)])
EPSILON_RANGE = (0.1, 10.0)
#: What a link (and so a page handing an answer to another) may set: any epsilon a mechanism accepts, so an answer
#: found off the slider's range (Geo-I's epsilon per km on cells of tens of km) still opens where it was found;
#: the slider then shows it among its steps.
EPSILON_LINK_RANGE = (mechanisms.base.EPSILON_MIN, mechanisms.base.EPSILON_MAX)
GRID_OPTIONS: tuple[int, ...] = (4, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256)
MAX_TRIALS_UI = 50
#: Trials a fresh session runs: the fewest that give every headline its 95% interval (Explore's readouts and
#: summary; ldpviz.app.ui.MIN_TRIALS_FOR_INTERVAL). docs/dashboard-benchmark.md measures the page at this default.
DEFAULT_TRIALS = 3
DEFAULT_USERS = 50_000
REGION_FIT = "fit to data"
REGION_BBOX = "bounds typed in"
AUDIT_SIDES: tuple[int, ...] = (4, 6, 8, 12, 16, 24)
BLACKBOX_SAMPLES: tuple[int, ...] = (500, 1_000, 2_000, 5_000, 20_000)
SWEEP_AXES = ("epsilon", "grid_side", "n_users")
DEFAULT_SWEEP_METRICS = ("w2_m", "aqe", "kl")
SIGMA_RANGE = (0.5, 4.0)
#: Range-query sizes for AQE (share of the region's area one query covers).
QUERY_RHO_OPTIONS: tuple[float, ...] = (0.005, 0.01, 0.05, 0.1, 0.25)
#: Compare's modes: rank at the sidebar's epsilon, the smallest epsilon for a target, the users needed.
COMPARE_MODES = ("at_epsilon", "target_epsilon", "users_needed")
#: A first target per goal-seek metric (the user types their own): a typical 'good enough' value. Changing the
#: metric resets the target to its metric's default.
TARGET_DEFAULTS = {"w2_m": 500.0, "aqe": 0.05, "kl": 0.1, "l1": 0.2}


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
#: The Trade-offs page's budget-over-time panel: collection intervals and period units (ldpviz.decide.budget).
BUDGET_UNITS = ("hour", "day", "week", "month", "quarter", "year")
#: Its link keys.
BUDGET_KEYS = {"budget_every": "bev", "budget_times": "btimes", "budget_period": "bper", "budget_unit": "bunit",
               "budget_from_total": "bfrom", "budget_total": "btot", "frontier": "fr"}


def default_mechanism() -> str:
    names = mechanisms.available()
    return "dam" if "dam" in names else ("grr" if "grr" in names else names[0])


#: How the Data page frames an upload without bounds (ldpviz.geo.region_choice.REGION_RULES, the paid rule first).
UPLOAD_RULES: tuple[str, ...] = ("private-tiles", "public-tiles")
#: The size of the box the Data page suggests for a file too large for one region.
SUGGEST_SIDE_KM = 6000.0


def parse_optional_bbox(text: str) -> tuple[float, float, float, float] | None:
    """Blank -> None; else :func:`parse_bbox`."""
    return parse_bbox(text) if str(text or "").strip() else None


def defaults() -> dict[str, Any]:
    """The configuration a fresh session starts from."""
    return {
        "dataset": datasets.names()[0], "region": None, "bbox": None,
        "mechanism": default_mechanism(), "epsilon": 1.0, "grid_side": 32, "params": {},
        "n_users": DEFAULT_USERS, "seed": 0, "trials": DEFAULT_TRIALS,
        "compare": [], "metric": "w2_m", "vary": "epsilon", "values": "", "sweep_mechanisms": [],
        "cell": None, "show_difference": False, "channel_side": 12,
        "audit_side": 8, "heatmap_filter": False, "sigma": 1.0, "blackbox": True, "blackbox_n": 2_000,
        "sweep_metrics": list(DEFAULT_SWEEP_METRICS), "draw": 0,
        "query_rho": 0.01, "show_spread": False, "compare_mode": COMPARE_MODES[0], "target": 0.0,
        "budget_every": "day", "budget_times": 1, "budget_period": 1.0, "budget_unit": "year",
        "budget_from_total": False, "budget_total": 10.0, "frontier": False,
        # Explore's pinned setting (:func:`pin_query`: the link form of its scenario, or None) and the optional
        # basemap under every map (off: no request leaves this server).
        "pin": None, "basemap": False,
        # The Flows page's choices (validated by the page against its options).
        "flows_dataset": None, "flows_region": None, "flows_mechanism": "srr", "flows_estimator": "lasso",
        "flows_grid": None, "flows_theta": 40, "flows_cap": 0,   # flows_grid None: follow the shared d; flows_cap: updates per trip, 0 = no cap
        # The People page's choices (validated here and again by the page against its options).
        "people_source": PEOPLE_SOURCES[0], "people_region": None, "people_method": "dp-heatmap",
        "people_grid": None, "people_shuffle": False, "people_k": 5,
        # Kept in the session only (not in a link): the text of typed bounds (its parsed form is 'bbox'),
        # the Data page's column names, the mechanism Compare's decision report is for.
        "bbox_text": "", "lat_column": "", "lon_column": "", "wrap_lon": True, "report_mechanism": None,
        # The Data page's framing of an upload: bounds typed (W,S,E,N text; blank = the rule), else the rule
        # (private tiles paid with epsilon0 per row, or public tiles, not private).
        "upload_bounds": "", "upload_rule": UPLOAD_RULES[0], "upload_epsilon0": 0.5,
        # The Decide page's steps (ldpviz.decide.decision_flow: defaults, link keys and their checks).
        **{k: (list(v) if isinstance(v, list) else v) for k, v in decision_flow.DEFAULTS.items()},
    }


#: Page grid sides (None = follow the shared d where the page allows it): Flows' OD grid, People's heatmap grid,
#: with the side each page uses when the shared d is not one of its options.
FLOWS_GRIDS: tuple[int, ...] = (4, 8, 16)
FLOWS_GRID_FALLBACK = 8
PEOPLE_GRID_FALLBACK = 16

#: The Flows page's fields and their link keys.
FLOWS_KEYS = {"flows_dataset": "fds", "flows_region": "freg", "flows_mechanism": "fmech",
              "flows_estimator": "fest", "flows_grid": "fd", "flows_theta": "ftheta", "flows_cap": "fcap"}


#: The People page: trajectory sources (the bundled ones and DAM App. D's walks over the Minneapolis stops),
#: grid sides (powers of two, as dp-heatmap needs), the largest k of DP k-median, and the link keys.
PEOPLE_SOURCES: tuple[str, ...] = (*trajectories.names(), "minneapolis-walks")
PEOPLE_GRIDS: tuple[int, ...] = (8, 16, 32, 64)
PEOPLE_MAX_K = 12
PEOPLE_KEYS = {"people_source": "pds", "people_region": "preg", "people_method": "pmeth",
               "people_grid": "pd", "people_shuffle": "pshuf", "people_k": "pk"}


def known_datasets(uploads: Mapping[str, Any] = ()) -> list[str]:
    """Names a link may select: the bundled datasets and this session's uploads."""
    return datasets.names() + list(uploads)


# ---- parsing helpers ---------------------------------------------------------------------

def _number(text: str, kind: type, low: float, high: float, what: str) -> Any:
    try:
        value = float(text)
    except (TypeError, ValueError):
        raise LdpvizInputError(f"{what} must be a number, got {text!r}") from None
    if not math.isfinite(value) or not low <= value <= high:
        raise LdpvizInputError(f"{what} must be between {low:g} and {high:g}, got {text!r}")
    if kind is int:
        if value != int(value):
            raise LdpvizInputError(f"{what} must be a whole number, got {text!r}")
        return int(value)
    return value


def parse_bbox(text: str) -> tuple[float, float, float, float]:
    """'W,S,E,N' in degrees -> a validated tuple (raises LdpvizInputError with the reason)."""
    parts = [p for p in str(text).replace(";", ",").split(",") if p.strip()]
    if len(parts) != 4:
        raise LdpvizInputError(f"bounds must be four numbers west,south,east,north in degrees, got {text!r}")
    w, s, e, n = (_number(p.strip(), float, -180, 180, "a bound") for p in parts)
    Region.from_bbox(w, s, e, n)  # validates order and size
    return (w, s, e, n)


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
            raise LdpvizInputError(f"sweep values must be numbers separated by commas; {part!r} is not a number") from None
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

def lost_upload(name: str, released: bool = False, budget: str = "") -> str:
    """Why the upload ``name`` (``upload:<fingerprint>:<file name>``) is not there, and what to do: the server no
    longer holds it, or this session ``released`` it to keep its uploads within ``budget`` (issue 39)."""
    filename = name.split(":", 2)[-1]
    if released:
        return (f"your earlier file '{filename}' was released to keep the server's memory bounded (a session "
                f"holds {budget or 'a limited amount'} of uploads, the most recently used first); upload it again "
                "to use it")
    return (f"the uploaded file '{filename}' is no longer held by this server (uploads are kept in memory only, for "
            "a day or until the server restarts); upload it again on the Data page")


def decode(query: Mapping[str, str], known_datasets: list[str] | None = None, released: Mapping[str, str] | None = None,
           budget: str = "") -> tuple[dict[str, Any], list[str]]:
    """Query parameters -> (config, warnings). Every bad value is dropped with a warning, never raised.
    ``released``: uploads this session released (:func:`lost_upload` names them), ``budget`` its upload budget."""
    cfg = defaults()
    warnings: list[str] = []
    known_datasets = known_datasets or datasets.names()
    released = released or {}

    def take(key: str, parse) -> None:
        if key not in query:
            return
        try:
            parse(query[key])
        except LdpvizInputError as exc:
            warnings.append(f"link parameter '{key}' ignored: {exc}")

    def set_dataset(v: str) -> None:
        if v.startswith("upload:") and v not in known_datasets:
            raise LdpvizInputError(lost_upload(v, released.get(v) is not None, budget))
        if v not in known_datasets:
            raise LdpvizInputError(f"unknown dataset {v!r}")
        cfg["dataset"] = v

    def set_mechanism(v: str) -> None:
        mechanisms.get(v)
        cfg["mechanism"] = v

    def set_epsilon(v: str) -> None:
        cfg["epsilon"] = _number(v, float, *EPSILON_LINK_RANGE, "epsilon")

    def set_grid(v: str) -> None:
        cfg["grid_side"] = _number(v, int, 2, MAX_GRID_SIDE, "grid side d")

    def set_users(v: str) -> None:
        cfg["n_users"] = _number(v, int, 0, 50_000_000, "number of users")

    def set_seed(v: str) -> None:
        cfg["seed"] = _number(v, int, 0, 2**32 - 1, "seed")

    def set_trials(v: str) -> None:
        cfg["trials"] = _number(v, int, 1, MAX_TRIALS_UI, "trials")

    def set_bbox(v: str) -> None:
        cfg["bbox"] = parse_bbox(v)

    def set_compare(v: str) -> None:
        names = [n for n in v.split(",") if n]
        unknown = [n for n in names if n not in mechanisms.available()]
        if unknown:
            warnings.append(f"link parameter 'cmp': unknown mechanism(s) {', '.join(unknown)} left out")
        cfg["compare"] = [n for n in names if n in mechanisms.available()]

    def set_sweep_mechs(v: str) -> None:
        cfg["sweep_mechanisms"] = [n for n in v.split(",") if n in mechanisms.available()]

    def set_metric(v: str) -> None:
        if v not in metrics.METRIC_INFO:
            raise LdpvizInputError(f"unknown metric {v!r}")
        cfg["metric"] = v

    def set_channel_side(v: str) -> None:
        cfg["channel_side"] = _number(v, int, 2, 32, "channel grid side")

    def set_audit_side(v: str) -> None:
        cfg["audit_side"] = _number(v, int, 2, 32, "audit grid side")

    def set_sigma(v: str) -> None:
        cfg["sigma"] = _number(v, float, *SIGMA_RANGE, "Gaussian filter sigma")
        cfg["heatmap_filter"] = True

    def set_blackbox_n(v: str) -> None:
        n = _number(v, int, 1, 10**6, "black-box samples")
        if n not in BLACKBOX_SAMPLES:
            raise LdpvizInputError(f"black-box samples must be one of {', '.join(map(str, BLACKBOX_SAMPLES))}")
        cfg["blackbox_n"] = n

    def set_draw(v: str) -> None:
        cfg["draw"] = _number(v, int, 0, 10_000, "draw number")

    def set_sweep_metrics(v: str) -> None:
        names = [n for n in v.split(",") if n]
        unknown = [n for n in names if n not in metrics.METRIC_INFO]
        if unknown:
            warnings.append(f"link parameter 'mets': unknown metric(s) {', '.join(unknown)} left out")
        cfg["sweep_metrics"] = [n for n in names if n in metrics.METRIC_INFO]

    def set_cell(v: str) -> None:
        parts = str(v).split(",")
        if len(parts) != 2:
            raise LdpvizInputError(f"cell must be two whole numbers 'row,col', got {v!r}")
        row, col = (_number(p, int, 0, MAX_GRID_SIDE - 1, "cell") for p in parts)
        cfg["cell"] = (row, col)

    def set_query_rho(v: str) -> None:
        cfg["query_rho"] = _number(v, float, 0.0001, 1.0, "query size rho")

    def set_compare_mode(v: str) -> None:
        if v not in COMPARE_MODES:
            raise LdpvizInputError(f"compare mode must be one of {', '.join(COMPARE_MODES)}, got {v!r}")
        cfg["compare_mode"] = v

    def set_target(v: str) -> None:
        cfg["target"] = _number(v, float, 0.0, 1e9, "target")

    def set_budget(field: str, v: str) -> None:
        if field in ("budget_every", "budget_unit"):
            if v not in BUDGET_UNITS:
                raise LdpvizInputError(f"must be one of {', '.join(BUDGET_UNITS)}, got {v!r}")
            cfg[field] = v
        elif field in ("budget_from_total", "frontier"):
            cfg[field] = v == "1"
        elif field == "budget_times":
            cfg[field] = _number(v, int, 1, 1000, "collections per interval")
        elif field == "budget_period":
            cfg[field] = _number(v, float, 0.001, 1000, "period")
        else:
            cfg[field] = _number(v, float, 0.001, 100_000, "total epsilon")

    for field, key in BUDGET_KEYS.items():
        take(key, lambda v, f=field: set_budget(f, v))
    take("rho", set_query_rho)
    take("cmode", set_compare_mode)
    take("tgt", set_target)
    take("ds", set_dataset)
    take("mech", set_mechanism)
    take("eps", set_epsilon)
    take("d", set_grid)
    take("users", set_users)
    take("seed", set_seed)
    take("trials", set_trials)
    take("bbox", set_bbox)
    take("cmp", set_compare)
    take("smech", set_sweep_mechs)
    take("metric", set_metric)
    take("cell", set_cell)
    take("cd", set_channel_side)
    take("ad", set_audit_side)
    take("sigma", set_sigma)
    take("bbn", set_blackbox_n)
    take("draw", set_draw)
    take("mets", set_sweep_metrics)
    for field, key in FLOWS_KEYS.items():
        if key in query:
            value = str(query[key])
            if field in ("flows_grid", "flows_theta", "flows_cap"):
                try:
                    value = _number(value, int, 0, 10_000, key)
                except LdpvizInputError as exc:
                    warnings.append(f"link parameter '{key}' ignored: {exc}")
                    continue
            cfg[field] = value
    _decode_people(query, cfg, warnings)
    decision_flow.decode(query, cfg, warnings)    # the Decide page's steps (their keys live with the flow)
    if "hf" in query:
        cfg["heatmap_filter"] = query.get("hf") == "1"
    if "bb" in query:
        cfg["blackbox"] = query.get("bb") != "0"
    if "region" in query:
        cfg["region"] = str(query["region"])   # checked against the dataset's presets by the sidebar
    if "vary" in query:
        cfg["vary"] = str(query["vary"])       # checked against the chosen mechanisms by the page
    if "vals" in query:
        cfg["values"] = str(query["vals"])
    take("pin", lambda v: _set_pin(cfg, v, known_datasets))
    cfg["basemap"] = query.get("basemap") == "1"
    cfg["show_difference"] = query.get("diff") == "1"
    cfg["show_spread"] = query.get("spread") == "1"
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


def _set_pin(cfg: dict[str, Any], text: str, known_datasets: list[str]) -> None:
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
    cfg["pin"] = query


#: The link keys a pin may hold.
_PIN_KEYS = {"ds", "region", "bbox", "rc", "mech", "eps", "d", "users", "seed", "trials", "rho"}


def _decode_people(query: Mapping[str, str], cfg: dict[str, Any], warnings: list[str]) -> None:
    """The People page's link keys (:data:`PEOPLE_KEYS`); a bad value is dropped with a warning."""
    def choice(options: tuple) -> Any:
        def parse(text: str) -> Any:
            match = [o for o in options if str(o) == text]
            if not match:
                raise LdpvizInputError(f"must be one of {', '.join(map(str, options))}, got {text!r}")
            return match[0]
        return parse

    parsers = {"people_source": choice(PEOPLE_SOURCES), "people_region": str,
               "people_method": choice(tuple(PEOPLE_METHODS)), "people_grid": choice(PEOPLE_GRIDS),
               "people_shuffle": choice(("0", "1")),
               "people_k": lambda v: _number(v, int, 1, PEOPLE_MAX_K, "k (centres)")}
    for field, key in PEOPLE_KEYS.items():
        if key not in query:
            continue
        try:
            value = parsers[field](str(query[key]))
        except LdpvizInputError as exc:
            warnings.append(f"link parameter '{key}' ignored: {exc}")
            continue
        cfg[field] = value == "1" if field == "people_shuffle" else value


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
    base = defaults()
    out: dict[str, str] = {}
    simple = {"dataset": "ds", "mechanism": "mech", "epsilon": "eps", "grid_side": "d", "n_users": "users",
              "seed": "seed", "trials": "trials", "metric": "metric", "vary": "vary",
              "values": "vals", "channel_side": "cd", "audit_side": "ad", "blackbox_n": "bbn", "draw": "draw",
              "query_rho": "rho", "compare_mode": "cmode", "target": "tgt"}
    for field, key in simple.items():
        if cfg.get(field) != base[field] and cfg.get(field) not in (None, ""):
            out[key] = _fmt(cfg[field])
    if cfg.get("region"):
        out["region"] = str(cfg["region"])
    if cfg.get("region") == REGION_BBOX and cfg.get("bbox"):
        out["bbox"] = ",".join(f"{v:.6f}" for v in cfg["bbox"])
    if cfg.get("compare"):
        out["cmp"] = ",".join(cfg["compare"])
    if cfg.get("sweep_mechanisms"):
        out["smech"] = ",".join(cfg["sweep_mechanisms"])
    if cfg.get("cell") is not None:
        out["cell"] = f"{cfg['cell'][0]},{cfg['cell'][1]}"
    for field, key in FLOWS_KEYS.items():
        if cfg.get(field) is not None and cfg.get(field) != base[field]:
            out[key] = _fmt(cfg[field])
    for field, key in PEOPLE_KEYS.items():
        if cfg.get(field) is not None and cfg.get(field) != base[field]:
            out[key] = ("1" if cfg[field] else "0") if field == "people_shuffle" else _fmt(cfg[field])
    if cfg.get("pin"):
        out["pin"] = urlencode(sorted(dict(cfg["pin"]).items()))
    if cfg.get("basemap"):
        out["basemap"] = "1"
    if cfg.get("show_difference"):
        out["diff"] = "1"
    if cfg.get("show_spread"):
        out["spread"] = "1"
    for field, key in BUDGET_KEYS.items():
        if field in cfg and cfg[field] != base[field]:
            out[key] = ("1" if cfg[field] else "0") if isinstance(base[field], bool) else _fmt(cfg[field])
    if cfg.get("heatmap_filter"):
        out["hf"] = "1"
        out["sigma"] = _fmt(float(cfg.get("sigma") or base["sigma"]))
    if cfg.get("blackbox") is False:
        out["bb"] = "0"
    if list(cfg.get("sweep_metrics") or []) != base["sweep_metrics"]:
        out["mets"] = ",".join(cfg.get("sweep_metrics") or [])
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
