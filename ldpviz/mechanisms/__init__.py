"""The mechanism registry: every mechanism, found by its registry name.

Each family lives in its own subpackage here (``dam/``, ``fo/``, ``grids/``, ``srr/``, ``heatmaps/``)
with the helpers it needs beside it; its classes register themselves with :func:`register`. The table
:data:`MECHANISMS` declares every built-in mechanism, one line each (registry name, module, class), in the
order :func:`available` lists them: adding a family means adding its subpackage and its lines there.
:func:`get` and :func:`create` import only the module declaring the name asked for (a command's start-up
does not pay for every family's kernels), :func:`available` and :func:`describe` every listed module.

>>> from ldpviz import mechanisms
>>> mechanisms.available()[:2]          # doctest: +SKIP
['exact', 'grr']
>>> mech = mechanisms.create("grr", grid, epsilon=1.0)   # doctest: +SKIP
"""

from __future__ import annotations

import importlib
import threading
from typing import Any

from ldpviz.geo.domain import Grid
from ldpviz.errors import LdpvizInputError
from ldpviz.mechanisms.base import (CENTRAL_DP, GEO_I, LDP, NO_PRIVACY, Estimate, Mechanism, Param,
                                    validate_epsilon)

_FO, _DAM, _GRIDS = "ldpviz.mechanisms.fo.oracles", "ldpviz.mechanisms.dam", "ldpviz.mechanisms.grids.decompositions"
_HEAT, _SRR = "ldpviz.mechanisms.heatmaps.dp_heatmap", "ldpviz.mechanisms.srr"

#: every built-in mechanism: (registry name, module that declares it, class), in the order available() lists them
MECHANISMS: tuple[tuple[str, str, str], ...] = (
    ("exact", _FO, "Exact"),
    ("grr", _FO, "GRR"),
    ("olh", _FO, "OLH"),
    ("oue", _FO, "OUE"),
    ("hr", _FO, "HR"),
    ("dam", f"{_DAM}.disk_area", "DAM"),
    ("dam-ns", f"{_DAM}.disk_area", "DAMNonShrink"),
    ("huem", f"{_DAM}.disk_area", "HUEM"),
    ("planar-laplace", f"{_DAM}.planar_laplace", "PlanarLaplace"),
    ("sem-geoi", f"{_DAM}.sem_geoi", "SEMGeoI"),
    ("mdsw", f"{_DAM}.square_wave", "MDSW"),
    ("ug", _GRIDS, "UG"),
    ("privag", _GRIDS, "PrivAG"),
    ("aag", _GRIDS, "AAG"),
    ("dp-heatmap", _HEAT, "DPHeatmap"),
    ("laplace", _HEAT, "LaplaceHeatmap"),
    ("laplace-top", _HEAT, "LaplaceTop"),
    ("srr", f"{_SRR}.staircase", "SRR"),
    ("olh-h", f"{_SRR}.olh_h", "OLHH"),
    ("pldp", f"{_SRR}.pldp", "PLDP"),
    ("grr-tiles", f"{_SRR}.tile_baselines", "GRRTiles"),
    ("hr-tiles", f"{_SRR}.tile_baselines", "HRTiles"),
)
_WHERE: dict[str, tuple[str, str]] = {name: (module, cls) for name, module, cls in MECHANISMS}

_REGISTRY: dict[str, type[Mechanism]] = {}
_LOADED = False
_LOCK = threading.RLock()


def register(cls: type[Mechanism]) -> type[Mechanism]:
    """Class decorator: add a mechanism to the registry under ``cls.name`` (the built-in ones are also listed
    in :data:`MECHANISMS`; a class registered only here, a plug-in's or a test's, is listed after them)."""
    if cls.name in _REGISTRY and _REGISTRY[cls.name] is not cls:
        raise RuntimeError(f"two mechanisms registered as {cls.name!r}")
    _REGISTRY[cls.name] = cls
    return cls


def _import(name: str) -> type[Mechanism]:
    """Import the module the table names for ``name`` and return its class (registered by that import)."""
    module, cls_name = _WHERE[name]
    cls = getattr(importlib.import_module(module), cls_name)
    if _REGISTRY.get(name) is not cls:
        raise RuntimeError(f"MECHANISMS lists {name!r} as {module}.{cls_name}, which registers "
                           f"{getattr(cls, 'name', None)!r}")
    return cls


def _load_all() -> None:
    global _LOADED
    if _LOADED:
        return
    with _LOCK:
        if not _LOADED:
            for name, _, _ in MECHANISMS:
                _import(name)
            _LOADED = True


def available() -> list[str]:
    """Registry names of every mechanism: the table's, in its order, then any registered besides."""
    _load_all()
    return [name for name, _, _ in MECHANISMS] + [name for name in list(_REGISTRY) if name not in _WHERE]


def get(name: str) -> type[Mechanism]:
    """The mechanism class registered as ``name`` (clear error for unknown names); imports only the module that
    declares it when the registry does not hold it yet."""
    if name in _REGISTRY:
        return _REGISTRY[name]
    if name not in _WHERE:
        raise LdpvizInputError(f"unknown mechanism {name!r}; available: {', '.join(available())}")
    with _LOCK:
        return _import(name)


def create(name: str, grid: Grid, epsilon: float, **params: Any) -> Mechanism:
    """Construct (and validate) the mechanism ``name`` on ``grid`` at ``epsilon``."""
    return get(name)(grid, epsilon, **params)


def describe() -> list[dict[str, Any]]:
    """One dict per mechanism: name, label, family, privacy model, reference, parameters."""
    rows = []
    for name in available():
        cls = _REGISTRY[name]
        rows.append({
            "name": name, "label": cls.label, "family": cls.family,
            "privacy_model": cls.privacy_model, "reference": cls.reference, "summary": cls.summary,
            "has_channel": cls.has_channel, "privacy_unit": cls.privacy_unit,
            "params": [{"name": p.name, "type": p.kind.__name__, "default": p.default, "help": p.help,
                        "minimum": p.minimum, "maximum": p.maximum, "choices": p.choices}
                       for p in cls.params],
        })
    return rows


__all__ = ["MECHANISMS", "register", "available", "get", "create", "describe", "Mechanism", "Param", "Estimate",
           "LDP", "CENTRAL_DP", "GEO_I", "NO_PRIVACY", "validate_epsilon"]
