"""The package's shape (docs/architecture.md): no import cycles, imports run down the layers, the core
never imports Streamlit, and at most 12 modules sit directly in ``ldpviz/``.

Every ``import`` counts, including those inside functions: a cycle hidden in a function is still a cycle.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "ldpviz"

#: Layers from the bottom up: a module may import its own subpackage and any layer below it, never above.
#: The modules directly in ``ldpviz/`` (errors, the lazy root, ``__main__``) are outside the layers; ``cli`` is
#: the outermost shell (``ldpviz app`` starts the dashboard through :mod:`ldpviz.app.launch`).
LAYERS = [
    {"geo"},
    {"data"},
    {"mechanisms"},
    {"metrics"},
    {"render"},
    {"experiment"},
    {"flows", "people", "evidence"},
    {"decide"},
    {"deploy"},
    {"app"},
    {"cli"},
]
RANK = {name: i for i, layer in enumerate(LAYERS) for name in layer}


def module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in PACKAGE.rglob("*.py") if "views" not in p.parts and "entry" not in p.parts}


def imports_of(path: Path, known: set[str]) -> set[str]:
    """The ldpviz modules ``path`` imports (a ``from pkg import submodule`` names the submodule)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] == "ldpviz")
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0 \
                and node.module.split(".")[0] == "ldpviz":
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                found.add(sub if sub in known else node.module)
    return {m for m in found if m in known}


def graph() -> dict[str, set[str]]:
    mods = modules()
    return {name: imports_of(path, set(mods)) - {name} for name, path in mods.items()}


def cycles(g: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in g[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(g):
        if v not in index:
            visit(v)
    return out


def layer(module: str) -> str | None:
    """The subpackage a module belongs to (None for the modules directly in ``ldpviz/``)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 2 or (len(parts) == 2 and (PACKAGE / parts[1]).is_dir()) else None


def test_no_import_cycles():
    assert cycles(graph()) == []


def test_cycle_detector_can_fail():
    """The detector itself finds a planted two-module cycle (so the test above can fail)."""
    assert cycles({"a": {"b"}, "b": {"a"}, "c": set()}) == [["a", "b"]]


def test_imports_run_down_the_layers():
    upward = []
    for module, targets in graph().items():
        mine = layer(module)
        if mine is None:
            continue
        for target in targets:
            theirs = layer(target)
            if theirs is None or theirs == mine:
                continue
            assert mine in RANK and theirs in RANK, f"{module} -> {target}: subpackage missing from LAYERS"
            if RANK[theirs] > RANK[mine] or (RANK[theirs] == RANK[mine]):
                upward.append(f"{module} -> {target}")
    assert upward == []


def test_every_subpackage_has_a_layer():
    subpackages = {p.parent.name for p in PACKAGE.glob("*/__init__.py")}
    assert subpackages <= set(RANK), subpackages - set(RANK)


def test_at_most_twelve_modules_at_the_top():
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(top) <= 12, top


def test_only_the_app_imports_streamlit():
    offenders = []
    for name, path in modules().items():
        if layer(name) == "app":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            if any(n.split(".")[0] == "streamlit" for n in names):
                offenders.append(name)
    assert offenders == []


@pytest.mark.parametrize("entry", ["ldpviz", "ldpviz.cli.commands"])
def test_importing_the_core_loads_no_streamlit(entry):
    """Importing every core module (everything but ldpviz.app) leaves streamlit out of sys.modules."""
    core = sorted(m for m in modules() if layer(m) != "app" and m != "ldpviz.__main__")
    code = ("import importlib, sys\n"
            f"for m in {core!r}: importlib.import_module(m)\n"
            "print('streamlit' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                         cwd=PACKAGE.parent)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"
