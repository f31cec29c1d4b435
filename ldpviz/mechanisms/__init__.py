"""The mechanism registry: every mechanism, found by its registry name.

Each family lives in its own subpackage here (``dam/``, ``fo/``, ``grids/``, ``srr/``, ``heatmaps/``)
with the helpers it needs beside it, and registers its classes with :func:`register`; every module
below this package is imported automatically, so adding a family means adding a subpackage and
nothing else. :func:`get` and :func:`create` import only the module declaring the name asked for (found
by reading the sources), :func:`available` and :func:`describe` every module.

>>> from ldpviz import mechanisms
>>> mechanisms.available()[:2]          # doctest: +SKIP
['exact', 'grr']
>>> mech = mechanisms.create("grr", grid, epsilon=1.0)   # doctest: +SKIP
"""

from __future__ import annotations

import dis
import importlib
import pkgutil
import re
import threading
from pathlib import Path
from typing import Any

from ldpviz.geo.domain import Grid
from ldpviz.errors import LdpvizInputError
from ldpviz.mechanisms.base import (CENTRAL_DP, GEO_I, LDP, NO_PRIVACY, Estimate, Mechanism, Param,
                                    validate_epsilon)

_REGISTRY: dict[str, type[Mechanism]] = {}
_LOADED = False
#: every registry name in the order a walk of the package registers them (what available() lists)
_ORDER: list[str] = []
_LOCK = threading.RLock()


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
    with _LOCK:
        if _LOADED:
            return
        early = bool(_REGISTRY)
        order = [m.name for m in sorted(pkgutil.walk_packages(__path__, prefix=f"{__name__}."), key=lambda m: m.name)]
        for module in order:
            importlib.import_module(module)
        names = list(_REGISTRY)
        if early:     # a get() imported some modules first: list them in the order a walk alone registers them
            rank = {module: i for i, module in enumerate(_import_order(order))}
            names.sort(key=lambda name: rank.get(_REGISTRY[name].__module__, len(rank)))   # stable: a module's
        _ORDER[:] = names                                                                 # classes keep their order
        _LOADED = True


def _import_order(walk: list[str]) -> list[str]:
    """The order in which importing ``walk`` one by one first imports each module of this package: a module's
    top-level imports from this package run before its own body (read from the sources, not imported)."""
    root, seen, out = Path(__file__).parent, set(), []

    def source(module: str) -> Path | None:
        parts = module.split(".")[1:]                      # drop "ldpviz"
        rel = Path(*parts[1:]) if len(parts) > 1 else Path()
        for path in (root / rel.with_suffix(".py") if parts[1:] else None, root / rel / "__init__.py"):
            if path is not None and path.is_file():
                return path
        return None

    def visit(module: str) -> None:
        if module in seen or not module.startswith(__name__):
            return
        seen.add(module)
        path = source(module)
        if path is None:
            return
        for imported, names in _from_imports(path):
            if imported.startswith(__name__):
                visit(imported)
                for name in names:                           # "from package import submodule"
                    if source(f"{imported}.{name}") is not None:
                        visit(f"{imported}.{name}")
        out.append(module)

    for module in walk:
        visit(module)
    return out


def _from_imports(path: Path) -> list[tuple[str, tuple[str, ...]]]:
    """``(module, names)`` of each absolute ``from module import names`` that importing ``path`` runs (its body's,
    not its functions'), in order, read from the bytecode compiled from its source. Not from an AST: CPython 3.11
    cannot build ASTs on two threads at once (``ast.parse`` fails with "AST constructor recursion depth mismatch",
    CPython gh-106905), and the dashboard lists mechanisms on its pages' threads."""
    code = compile(path.read_text(encoding="utf-8"), str(path), "exec", dont_inherit=True)
    steps = list(dis.get_instructions(code))
    found = []
    for before_level, before_names, step in zip(steps, steps[1:], steps[2:]):
        if step.opname == "IMPORT_NAME" and before_level.argval == 0 and isinstance(before_names.argval, tuple):
            found.append((step.argval, before_names.argval))
    return found


#: ``name = "grr"`` inside a class that ``@register`` decorates (how every mechanism declares its name)
_DECLARED = re.compile(r'^@register\s*\nclass\s+\w+\b[^\n]*:\n(?:[ \t]+[^\n]*\n|[ \t]*\n)*?[ \t]+name\s*(?::[^=\n]*)?='
                       r'\s*["\']([^"\']+)["\']', re.M)
_WHERE: dict[str, str] | None = None


def _where() -> dict[str, str]:
    """Registry name -> the module declaring it, read from the sources without importing them, so creating one
    mechanism imports its own module only (a command's start-up does not pay for every family's kernels). A name
    this scan misses is still found: :func:`get` then imports every module, as before."""
    global _WHERE
    if _WHERE is None:
        where: dict[str, str] = {}
        root = Path(__file__).parent
        for path in sorted(root.rglob("*.py")):
            try:
                text = path.read_text(encoding="utf-8")
            except OSError:
                continue
            if "@register" not in text:
                continue
            module = ".".join((__name__, *path.relative_to(root).with_suffix("").parts))
            for name in _DECLARED.findall(text):
                where.setdefault(name, module)
        _WHERE = where
    return _WHERE


def available() -> list[str]:
    """Registry names of every mechanism, in registration order."""
    _load_all()
    listed = set(_ORDER)
    return _ORDER + [name for name in list(_REGISTRY) if name not in listed]   # registered later (plug-ins, tests)


def get(name: str) -> type[Mechanism]:
    """The mechanism class registered as ``name`` (clear error for unknown names); imports only the module that
    declares it when the registry does not hold it yet."""
    if name in _REGISTRY:
        return _REGISTRY[name]
    module = _where().get(name)
    if module is not None:
        importlib.import_module(module)
        if name in _REGISTRY:
            return _REGISTRY[name]
    _load_all()
    if name not in _REGISTRY:
        raise LdpvizInputError(f"unknown mechanism {name!r}; available: {', '.join(available())}")
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
