"""The mechanism registry: every mechanism, found by its registry name.

Each family lives in its own subpackage here (``dam/``, ``fo/``, ``grids/``, ``srr/``, ``heatmaps/``)
with the helpers it needs beside it, and registers its classes with :func:`register`; every module
below this package is imported automatically, so adding a family means adding a subpackage and
nothing else.

>>> from ldpviz import mechanisms
>>> mechanisms.available()[:2]          # doctest: +SKIP
['exact', 'grr']
>>> mech = mechanisms.create("grr", grid, epsilon=1.0)   # doctest: +SKIP
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any

from ldpviz.geo.domain import Grid
from ldpviz.errors import LdpvizInputError
from ldpviz.mechanisms.base import (CENTRAL_DP, GEO_I, LDP, NO_PRIVACY, Estimate, Mechanism, Param,
                                    validate_epsilon)

_REGISTRY: dict[str, type[Mechanism]] = {}
_LOADED = False


def register(cls: type[Mechanism]) -> type[Mechanism]:
    """Class decorator: add a mechanism to the registry under ``cls.name``."""
    if cls.name in _REGISTRY and _REGISTRY[cls.name] is not cls:
        raise RuntimeError(f"two mechanisms registered as {cls.name!r}")
    _REGISTRY[cls.name] = cls
    return cls


def _load_all() -> None:
    global _LOADED
    if _LOADED:
        return
    for module in sorted(pkgutil.walk_packages(__path__, prefix=f"{__name__}."), key=lambda m: m.name):
        importlib.import_module(module.name)
    _LOADED = True


def available() -> list[str]:
    """Registry names of every mechanism, in registration order."""
    _load_all()
    return list(_REGISTRY)


def get(name: str) -> type[Mechanism]:
    """The mechanism class registered as ``name`` (clear error for unknown names)."""
    _load_all()
    if name not in _REGISTRY:
        raise LdpvizInputError(f"unknown mechanism {name!r}; available: {', '.join(_REGISTRY)}")
    return _REGISTRY[name]


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


__all__ = ["register", "available", "get", "create", "describe", "Mechanism", "Param", "Estimate",
           "LDP", "CENTRAL_DP", "GEO_I", "NO_PRIVACY", "validate_epsilon"]
