"""The officer's choices (steps 1-3): what they may choose, their link form (the settings rows), who is eligible."""

from __future__ import annotations

from typing import Any, Mapping

from ldpviz import mechanisms
from ldpviz.data import trajectories
from ldpviz.decide import feasibility, one_collection, tradeoff
from ldpviz.errors import LdpvizInputError
from ldpviz.experiment import Scenario
from ldpviz.mechanisms.base import CENTRAL_DP, EPSILON_MAX, EPSILON_MIN, GEO_I, LDP
from ldpviz.setting import FLOW_LINK, Setting, read_link, write_link


#: The privacy models an officer may accept, and how the page names them.
MODELS = {LDP: "Local DP (each phone randomises its own report)",
          GEO_I: "Geo-indistinguishability (local, protects more for nearby places than far ones)",
          CENTRAL_DP: "Central DP (a trusted server sees exact locations and publishes a noisy map)"}
MODEL_CODES = {LDP: "ldp", GEO_I: "geoi", CENTRAL_DP: "cdp"}
#: What a guarantee protects (the ledger's unit): one location report, or a person (all their reports).
UNITS = {"report": "one location report", "person": "a person (all their reports in a collection)"}
#: How often the collection runs, as collections per year (the sign-off's total over a year).
EVERY = {"once": 1, "yearly": 1, "quarterly": 4, "monthly": 12, "weekly": 52, "daily": 365}
#: Needs in plain words -> the goal seek's metric ({t}: the target as the officer typed it).
NEEDS = {"w2_m": "Where people are: the map's mass within {t} of where it truly is (W2 distance)",
         "aqe": "Counts in areas of 1% of the region, off by at most {t} of everyone (AQE)"}
#: The Decide page's first target per need. Its W2 (800 m) is not Compare's (500 m,
#: ldpviz.app.state.COMPARE_TARGET_DEFAULTS): each page keeps its own first value (the goal seeks timed in
#: docs/goal-seek-*.md ran at this one).
DECIDE_TARGET_DEFAULTS = {"w2_m": 800.0, "aqe": 0.05}
#: Step 4 answers either question: the epsilon needed at the users there are, or the users needed at an epsilon.
TURNS = ("epsilon", "users")
TEXT_MAX = 300


def _models(text: str, _context: Any = None) -> list[str]:
    codes = {v: k for k, v in MODEL_CODES.items()}
    models = [codes.get(c.strip()) for c in text.split(",") if c.strip()]
    if not models or None in models:
        raise LdpvizInputError(f"must be some of {', '.join(codes)}")
    return list(dict.fromkeys(models))     # the officer's order: it orders step 4's tables


def _write_models(cfg: Mapping[str, Any]) -> str | None:
    value = cfg.get("decide_models")
    return None if value is None or value == DEFAULTS["decide_models"] else ",".join(MODEL_CODES[m] for m in value)


def _pins(text: str, _context: Any = None) -> list[str]:
    names = [n for n in text.split(",") if n]
    unknown = [n for n in names if n not in mechanisms.available()]
    if unknown or len(names) > 2:
        raise LdpvizInputError("must be at most two mechanism names")
    return names


def _trips(text: str, _context: Any = None) -> str:
    if text and text not in trajectories.names() and not text.startswith("upload:"):
        raise LdpvizInputError(f"must be a trips data set ({', '.join(trajectories.names())}) or an "
                               "uploaded trips file")
    return text


def _chosen(text: str, _context: Any = None) -> str:
    if text and text not in mechanisms.available():
        raise LdpvizInputError("must be a mechanism name")
    return text


def _clip(text: str, _context: Any = None) -> str:
    return str(text)[:TEXT_MAX]


def _flow(field: str, key: str, default: Any, kind: type = str, what: str = "", low: float | None = None,
          high: float | None = None, **rest: Any) -> Setting:
    return Setting(field, key, default, kind, what, low, high, wording=FLOW_LINK, **rest)


#: The Decide page's choices: config field, link key, default, bounds or choices (in the dashboard's one config dict
#: and its link: :mod:`ldpviz.app.settings`). Text the officer types is cut to TEXT_MAX characters.
SETTINGS: tuple[Setting, ...] = (
    _flow("decide_unit", "dcu", "person", choices=tuple(UNITS)),
    _flow("decide_reports", "dcr", 1, int, "reports per person", 1, 10_000),
    _flow("decide_every", "dce", "once", choices=tuple(EVERY)),
    _flow("decide_models", "dcm", [LDP, GEO_I], list, read=_models, write=_write_models, refused=("ldp,nope", "")),
    _flow("decide_metric", "dcmet", "w2_m", choices=tuple(NEEDS)),
    _flow("decide_target", "dct", DECIDE_TARGET_DEFAULTS["w2_m"], float, "target", 1e-9, 1e9),
    _flow("decide_turn", "dcturn", "epsilon", choices=TURNS),
    _flow("decide_epsilon", "dceps", 1.0, float, "epsilon", EPSILON_MIN, EPSILON_MAX),
    _flow("decide_pins", "dcpin", [], list, read=_pins, refused=("grr,olh,oue", "no such mechanism")),
    _flow("decide_probability", "dcp", one_collection.PROBABILITY, float, "probability", 0.5, 0.999),
    _flow("decide_purpose", "dcpur", "", read=_clip),
    _flow("decide_owner", "dcown", "", read=_clip),
    _flow("decide_retention", "dcret", "", read=_clip),
    _flow("decide_trips", "dctr", "", read=_trips, refused=("no-such-trips", "trips.csv")),
    # the officer's limit: the largest epsilon per person in one collection they accept (issue 36), and the
    # mechanism they sign ("": the top of the first table, :func:`signed`)
    _flow("decide_limit", "dclim", feasibility.DEFAULT_LIMIT, float, "the largest epsilon per person",
          EPSILON_MIN, EPSILON_MAX),
    _flow("decide_chosen", "dcsign", "", read=_chosen, refused=("no-such-mechanism", "grr,olh")),
)
#: The Decide page's choices by field, their defaults and their link keys.
SETTING = {s.field: s for s in SETTINGS}
DEFAULTS: dict[str, Any] = {s.field: s.default for s in SETTINGS}
KEYS = {s.field: s.key for s in SETTINGS}
#: Link keys of the shared choices the flow reads (the dataset, region, grid, users and seed are the dashboard's).
SHARED = ("dataset", "region", "bbox", "grid_side", "n_users", "seed")


def decode(query: Mapping[str, str], cfg: dict[str, Any], warnings: list[str]) -> None:
    """Read the flow's link keys into ``cfg``; a bad value is left at its default with a warning."""
    read_link(SETTINGS, query, cfg, warnings)


def encode(cfg: Mapping[str, Any]) -> dict[str, str]:
    """The flow's link keys, leaving out defaults."""
    return write_link(SETTINGS, cfg)


# ---- step 2: who is eligible ---------------------------------------------------------------------------------

def eligible(models: list[str]) -> tuple[list[str], dict[str, str]]:
    """(mechanisms that fit the accepted models, {mechanism left out: why not}), in registry order."""
    keep, why = [], {}
    for name in mechanisms.available():
        cls = mechanisms.get(name)
        model = cls.privacy_model
        if model not in MODELS:
            why[name] = "gives no privacy (a reference: the exact map)"
        elif model not in models:
            why[name] = f"{model}: a privacy model you did not accept in step 2"
        else:
            keep.append(name)
    return keep, why


def scenario(dataset: str, region: Any, mechanism: str, grid_side: int, n_users: int | None, seed: int) -> Scenario:
    """The goal seek's scenario, built exactly as ``ldpviz target`` builds it (epsilon 1 is where a search starts;
    trials are the rule's own), so the page and the command answer the same question the same way."""
    return Scenario(dataset=dataset, mechanism=mechanism, epsilon=1.0, grid_side=int(grid_side), region=region,
                    n_users=n_users or None, seed=int(seed), trials=tradeoff.DEFAULT_TRIALS)
