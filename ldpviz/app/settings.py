"""Every dashboard setting declared once (issue 40): config field, link key, default, kind, bounds or choices.

:func:`ldpviz.app.state.defaults`, :func:`~ldpviz.app.state.decode` and :func:`~ldpviz.app.state.encode` are loops
over :data:`SETTINGS`; widgets read their bounds from :data:`SETTING` (``state.SETTING[field].widget_bounds()``).
Bounds come from the core's constants where it has them (ε from :mod:`ldpviz.mechanisms.base`, the grid side from
:mod:`ldpviz.geo.domain`, users and seed from :mod:`ldpviz.limits`). The rows are in the order a link writes them;
the Decide page's rows are :data:`ldpviz.decide.decision_flow.SETTINGS`. A mechanism's own parameters are its
:class:`~ldpviz.mechanisms.base.Param` (``p.NAME`` in a link), a saved region's centre and side travel as ``rc``
(:func:`ldpviz.app.state.decode_saved_region`). No Streamlit here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping
from urllib.parse import urlencode

from ldpviz import mechanisms, metrics
from ldpviz.data import datasets, trajectories
from ldpviz.decide import decision_flow
from ldpviz.errors import LdpvizInputError
from ldpviz.geo.domain import MAX_GRID_SIDE, Region
from ldpviz.limits import MAX_SEED, MAX_USERS
from ldpviz.mechanisms.base import EPSILON_MAX, EPSILON_MIN
from ldpviz.people.user_heatmaps import METHODS as PEOPLE_METHODS
from ldpviz.setting import Setting

MAX_TRIALS_UI = 50
#: Trials a fresh session runs: the fewest that give every headline its 95% interval (Explore's readouts and
#: summary; ldpviz.app.ui.MIN_TRIALS_FOR_INTERVAL). docs/dashboard-benchmark.md measures the page at this default.
DEFAULT_TRIALS = 3
DEFAULT_USERS = 50_000
#: The smallest grid side a link may set. The core takes d = 1 (one cell, a map that shows nothing); the
#: dashboard's own sides start at 4.
LINK_MIN_GRID_SIDE = 2
REGION_FIT = "fit to data"
REGION_BBOX = "bounds typed in"
BLACKBOX_SAMPLES: tuple[int, ...] = (500, 1_000, 2_000, 5_000, 20_000)
DEFAULT_SWEEP_METRICS = ("w2_m", "aqe", "kl")
SIGMA_RANGE = (0.5, 4.0)
#: Compare's modes: rank at the sidebar's epsilon, the smallest epsilon for a target, the users needed.
COMPARE_MODES = ("at_epsilon", "target_epsilon", "users_needed")
#: The Trade-offs page's budget-over-time panel: collection intervals and period units (ldpviz.decide.budget).
BUDGET_UNITS = ("hour", "day", "week", "month", "quarter", "year")
#: How the Data page frames an upload without bounds (ldpviz.geo.region_choice.REGION_RULES, the paid rule first).
UPLOAD_RULES: tuple[str, ...] = ("private-tiles", "public-tiles")
#: The People page: trajectory sources (the bundled ones and DAM App. D's walks over the Minneapolis stops),
#: grid sides (powers of two, as dp-heatmap needs) and the largest k of DP k-median.
PEOPLE_SOURCES: tuple[str, ...] = (*trajectories.names(), "minneapolis-walks")
PEOPLE_GRIDS: tuple[int, ...] = (8, 16, 32, 64)
PEOPLE_MAX_K = 12


def default_mechanism() -> str:
    names = mechanisms.available()
    return "dam" if "dam" in names else ("grr" if "grr" in names else names[0])


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


_BOUND = Setting("bound", None, 0.0, float, "a bound", -180, 180)
_CELL = Setting("cell", None, 0, int, "cell", 0, MAX_GRID_SIDE - 1)


def parse_bbox(text: str) -> tuple[float, float, float, float]:
    """'W,S,E,N' in degrees -> a validated tuple (raises LdpvizInputError with the reason)."""
    parts = [p for p in str(text).replace(";", ",").split(",") if p.strip()]
    if len(parts) != 4:
        raise LdpvizInputError(f"bounds must be four numbers west,south,east,north in degrees, got {text!r}")
    w, s, e, n = (_BOUND.number(p.strip()) for p in parts)
    Region.from_bbox(w, s, e, n)  # validates order and size
    return (w, s, e, n)


@dataclass
class LinkContext:
    """What :func:`ldpviz.app.state.decode` hands the readers below: the datasets a link may name, the uploads
    this session released and its upload budget, its warnings (a list keeps what it knows and says what it left
    out), and how to read a pinned setting (a link inside the link, read by the same decoder)."""

    known_datasets: list[str]
    released: Mapping[str, str]
    budget: str
    warnings: list[str]
    read_pin: Callable[[str], dict[str, str]]


def _dataset(text: str, context: LinkContext) -> str:
    if text.startswith("upload:") and text not in context.known_datasets:
        raise LdpvizInputError(lost_upload(text, context.released.get(text) is not None, context.budget))
    if text not in context.known_datasets:
        raise LdpvizInputError(f"unknown dataset {text!r}")
    return text


def _mechanism(text: str, _context: Any = None) -> str:
    mechanisms.get(text)
    return text


def _metric(text: str, _context: Any = None) -> str:
    if text not in metrics.METRIC_INFO:
        raise LdpvizInputError(f"unknown metric {text!r}")
    return text


def _known(known: Callable[[], Any], key: str, noun: str) -> Callable[[str, Any], list[str]]:
    """A comma-separated list keeping the names ``known()`` holds; the others are left out, said when ``noun``."""
    def read(text: str, context: LinkContext | None) -> list[str]:
        names = [n for n in text.split(",") if n]
        unknown = [n for n in names if n not in known()]
        if unknown and noun and context is not None:
            context.warnings.append(f"link parameter '{key}': unknown {noun}(s) {', '.join(unknown)} left out")
        return [n for n in names if n in known()]
    return read


def _cell(text: str, _context: Any = None) -> tuple[int, int]:
    parts = str(text).split(",")
    if len(parts) != 2:
        raise LdpvizInputError(f"cell must be two whole numbers 'row,col', got {text!r}")
    row, col = (_CELL.number(p) for p in parts)
    return (row, col)


def _write_cell(cfg: Mapping[str, Any]) -> str | None:
    return None if cfg.get("cell") is None else f"{cfg['cell'][0]},{cfg['cell'][1]}"


def _write_bbox(cfg: Mapping[str, Any]) -> str | None:
    if cfg.get("region") == REGION_BBOX and cfg.get("bbox"):
        return ",".join(f"{v:.6f}" for v in cfg["bbox"])
    return None


def _blackbox_n(text: str, _context: Any = None) -> int:
    n = SETTING["blackbox_n"].number(text)
    if n not in BLACKBOX_SAMPLES:
        raise LdpvizInputError(f"black-box samples must be one of {', '.join(map(str, BLACKBOX_SAMPLES))}")
    return n


def _write_sigma(cfg: Mapping[str, Any]) -> str | None:
    """The filter's width travels with the filter switched on, and only then."""
    return f"{float(cfg.get('sigma') or SETTING['sigma'].default):g}" if cfg.get("heatmap_filter") else None


def _pin(text: str, context: LinkContext) -> dict[str, str]:
    return context.read_pin(text)


def _write_pin(cfg: Mapping[str, Any]) -> str | None:
    return urlencode(sorted(dict(cfg["pin"]).items())) if cfg.get("pin") else None


def _flows_number(field: str, key: str, default: int | None) -> Setting:
    return Setting(field, key, default, int, key, 0, 10_000)


_MECHANISMS = ("no-such-mechanism", "grr;olh")

#: The dashboard's settings in the order a link writes them (the Decide page's last).
SETTINGS: tuple[Setting, ...] = (
    Setting("dataset", "ds", None, read=_dataset, factory=lambda: datasets.names()[0],
            refused=("no-such-dataset", "upload:0:gone.csv")),
    Setting("mechanism", "mech", None, read=_mechanism, factory=default_mechanism, refused=_MECHANISMS),
    Setting("epsilon", "eps", 1.0, float, "epsilon", EPSILON_MIN, EPSILON_MAX),
    Setting("grid_side", "d", 32, int, "grid side d", LINK_MIN_GRID_SIDE, MAX_GRID_SIDE),
    Setting("n_users", "users", DEFAULT_USERS, int, "number of users", 0, MAX_USERS),
    Setting("seed", "seed", 0, int, "seed", 0, MAX_SEED),
    Setting("trials", "trials", DEFAULT_TRIALS, int, "trials", 1, MAX_TRIALS_UI),
    Setting("metric", "metric", "w2_m", read=_metric, refused=("no-such-metric", "")),
    Setting("vary", "vary", "epsilon"),                 # checked against the chosen mechanisms by the page
    Setting("values", "vals", ""),
    Setting("channel_side", "cd", 12, int, "channel grid side", 2, 32),
    Setting("audit_side", "ad", 8, int, "audit grid side", 2, 32),
    Setting("blackbox_n", "bbn", 2_000, int, "black-box samples", 1, 10**6, choices=BLACKBOX_SAMPLES,
            read=_blackbox_n, refused=("3", "not-a-number")),
    Setting("draw", "draw", 0, int, "draw number", 0, 10_000),
    Setting("query_rho", "rho", 0.01, float, "query size rho", 0.0001, 1.0),
    Setting("compare_mode", "cmode", COMPARE_MODES[0], what="compare mode", choices=COMPARE_MODES),
    Setting("target", "tgt", 0.0, float, "target", 0.0, 1e9),
    Setting("region", "region", None),                  # checked against the dataset's presets by the sidebar
    Setting("bbox", "bbox", None, read=lambda text, _c: parse_bbox(text), write=_write_bbox,
            refused=("0,0,200,1", "1,2,3")),
    Setting("compare", "cmp", [], list, read=_known(mechanisms.available, "cmp", "mechanism"), refused=_MECHANISMS),
    Setting("sweep_mechanisms", "smech", [], list, read=_known(mechanisms.available, "smech", ""),
            refused=_MECHANISMS),
    Setting("cell", "cell", None, read=_cell, write=_write_cell, refused=(f"0,{MAX_GRID_SIDE}", "1")),
    # The Flows page's choices (validated by the page against its options); flows_grid None: follow the shared d;
    # flows_cap: updates per trip, 0 = no cap.
    Setting("flows_dataset", "fds", None, blank=True), Setting("flows_region", "freg", None, blank=True),
    Setting("flows_mechanism", "fmech", "srr", blank=True), Setting("flows_estimator", "fest", "lasso", blank=True),
    _flows_number("flows_grid", "fd", None), _flows_number("flows_theta", "ftheta", 40),
    _flows_number("flows_cap", "fcap", 0),
    # The People page's choices (validated here and again by the page against its options).
    Setting("people_source", "pds", PEOPLE_SOURCES[0], choices=PEOPLE_SOURCES, blank=True),
    Setting("people_region", "preg", None, blank=True),
    Setting("people_method", "pmeth", "dp-heatmap", choices=tuple(PEOPLE_METHODS), blank=True),
    Setting("people_grid", "pd", None, int, choices=PEOPLE_GRIDS),
    Setting("people_shuffle", "pshuf", False, bool, choices=("0", "1")),
    Setting("people_k", "pk", 5, int, "k (centres)", 1, PEOPLE_MAX_K),
    # Explore's pinned setting (the link form of its scenario, or None) and the optional basemap under every map
    # (off: no request leaves this server).
    Setting("pin", "pin", None, read=_pin, write=_write_pin, refused=("eps=999", "")),
    Setting("basemap", "basemap", False, bool),
    Setting("show_difference", "diff", False, bool),
    Setting("show_spread", "spread", False, bool),
    Setting("budget_every", "bev", "day", choices=BUDGET_UNITS, blank=True),
    Setting("budget_times", "btimes", 1, int, "collections per interval", 1, 1000),
    Setting("budget_period", "bper", 1.0, float, "period", 0.001, 1000.0),
    Setting("budget_unit", "bunit", "year", choices=BUDGET_UNITS, blank=True),
    Setting("budget_from_total", "bfrom", False, bool),
    Setting("budget_total", "btot", 10.0, float, "total epsilon", 0.001, 100_000.0),
    Setting("frontier", "fr", False, bool),
    Setting("heatmap_filter", "hf", False, bool),       # a link's sigma turns it on unless hf says otherwise
    Setting("sigma", "sigma", 1.0, float, "Gaussian filter sigma", *SIGMA_RANGE, write=_write_sigma),
    Setting("blackbox", "bb", True, bool),
    Setting("sweep_metrics", "mets", list(DEFAULT_SWEEP_METRICS), list,
            read=_known(lambda: metrics.METRIC_INFO, "mets", "metric"), refused=("no-such-metric", "w2_m;aqe")),
    # Kept in the session only (not in a link): the mechanisms' parameters (``p.NAME`` in a link), the text of
    # typed bounds (its parsed form is 'bbox'), the Data page's column names, the mechanism Compare's decision
    # report is for, and the Data page's framing of an upload: bounds typed (W,S,E,N text; blank = the rule),
    # else the rule (private tiles paid with epsilon0 per row, or public tiles, not private).
    Setting("params", None, {}, dict),
    Setting("bbox_text", None, ""), Setting("lat_column", None, ""), Setting("lon_column", None, ""),
    Setting("wrap_lon", None, True, bool), Setting("report_mechanism", None, None),
    Setting("upload_bounds", None, ""), Setting("upload_rule", None, UPLOAD_RULES[0], choices=UPLOAD_RULES),
    Setting("upload_epsilon0", None, 0.5, float, "ε0", 0.05, 5.0),
    # The Decide page's steps (their defaults, link keys and checks live with the flow).
    *decision_flow.SETTINGS,
)
#: Each setting by its config field.
SETTING: dict[str, Setting] = {s.field: s for s in SETTINGS}
#: The rows :func:`ldpviz.app.state.encode` writes before a saved region's ``rc``; the Decide flow's follow it.
DASHBOARD: tuple[Setting, ...] = tuple(s for s in SETTINGS if s.field not in decision_flow.SETTING)


def keys(*fields: str) -> dict[str, str]:
    """field -> link key of ``fields``."""
    return {f: SETTING[f].key for f in fields}
