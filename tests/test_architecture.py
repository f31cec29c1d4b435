"""The package's shape (docs/architecture.md): no import cycles, imports run down the layers, the doc's import
table is the code's import graph between subpackages, the core never imports Streamlit, and at most 12 modules
sit directly in ``ldpviz/``.

Every ``import`` counts, including those inside functions: a cycle hidden in a function is still a cycle.
"""

from __future__ import annotations

import ast
import re
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


DOC = PACKAGE.parent / "docs" / "architecture.md"
_TABLE = re.compile(r"<!-- import-table: start -->\n(.*?)<!-- import-table: end -->", re.S)


def documented_imports(text: str) -> dict[str, set[str]]:
    """The import table of docs/architecture.md: importing subpackage -> the subpackages it imports."""
    found = _TABLE.search(text)
    assert found, "docs/architecture.md has no import table between its <!-- import-table --> markers"
    table: dict[str, set[str]] = {}
    for row in found.group(1).splitlines():
        cells = [c.strip() for c in row.strip().strip("|").split("|")]
        names = [re.findall(r"`(\w+)`", c) for c in cells]
        if len(cells) == 2 and len(names[0]) == 1:
            table[names[0][0]] = set(names[1])
    return table


def subpackage_imports() -> dict[tuple[str, str], str]:
    """Every import from one subpackage into another (the pages in ``app/views`` included), with one module
    import that makes it."""
    mods = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    arrows: dict[tuple[str, str], str] = {}
    for name, path in sorted(mods.items()):
        mine = layer(name)
        for target in sorted(imports_of(path, set(mods))):
            theirs = layer(target)
            if mine is not None and theirs is not None and theirs != mine:
                arrows.setdefault((mine, theirs), f"{name} imports {target}")
    return arrows


def import_table_differences(code: dict[tuple[str, str], str], doc: dict[str, set[str]],
                             subpackages: set[str]) -> list[str]:
    """What to change in docs/architecture.md's import table so that it is the code's import graph."""
    documented = {(a, b) for a, targets in doc.items() for b in targets}
    out = [f"add `{b}` to the row of `{a}` (arrow {a} -> {b}: {code[(a, b)]})"
           for a, b in sorted(set(code) - documented)]
    out += [f"remove `{b}` from the row of `{a}` (arrow {a} -> {b}: no module of {a} imports {b})"
            for a, b in sorted(documented - set(code))]
    out += [f"add a row for `{name}`" for name in sorted(subpackages - set(doc))]
    out += [f"remove the row of `{name}` (no such subpackage)" for name in sorted(set(doc) - subpackages)]
    return out


def test_the_import_table_is_the_import_graph():
    """Every arrow in docs/architecture.md's import table exists in the code, and every import between two
    subpackages in the code is in the table (and every subpackage has its row)."""
    subpackages = {p.parent.name for p in PACKAGE.glob("*/__init__.py")}
    problems = import_table_differences(subpackage_imports(), documented_imports(DOC.read_text(encoding="utf-8")),
                                        subpackages)
    assert not problems, "docs/architecture.md, import table:\n" + "\n".join(problems)


def test_the_import_table_check_can_fail():
    """A planted missing arrow, a planted extra arrow and a missing row are each named."""
    doc = documented_imports("<!-- import-table: start -->\n| subpackage | imports |\n|---|---|\n"
                             "| `geo` | |\n| `data` | `geo`, `mechanisms` |\n<!-- import-table: end -->\n")
    assert doc == {"geo": set(), "data": {"geo", "mechanisms"}}
    problems = import_table_differences({("data", "geo"): "x", ("geo", "data"): "ldpviz.geo.a imports ldpviz.data.b"},
                                        doc, {"geo", "data", "mechanisms"})
    assert problems == ["add `data` to the row of `geo` (arrow geo -> data: ldpviz.geo.a imports ldpviz.data.b)",
                        "remove `mechanisms` from the row of `data` (arrow data -> mechanisms: no module of data "
                        "imports mechanisms)",
                        "add a row for `mechanisms`"]


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


# ---------------------------------------------------------- no epsilon total outside the accountant (issue 37.7)
#: A name that carries a privacy epsilon (epsilon, eps, e0, epsilon0, eps_len, total_epsilon, ...).
_EPS_NAME = re.compile(r"(?:^|_)(?:eps|epsilon\w*|e0|epsilon0)(?:_|$)|epsilon", re.I)
#: Multiplying an epsilon by one of these converts its unit (per km -> per cell, x a distance) or splits it (a share):
#: a channel's own arithmetic, never a composition.
_UNIT_NAME = re.compile(r"cell_m|_m$|^m$|metres|km|GEO_I_UNIT|side_m|distance|dist|slack|radius|share|fraction|half|"
                        r"scale|^d$|^r$|log|ratio", re.I)
#: Where arithmetic on an epsilon is a mechanism's own channel, not a total: (module path, function) -> why.
#: ``ldpviz/mechanisms/`` is the mechanisms' layer (their channels) and holds the accountant itself.
_CHANNEL_ARITHMETIC = {
    ("people/trajectory_mechanisms.py", "budgets"): "LDPTrace splits its one epsilon among its reports (Sec. 4)",
    ("flows/od_lasso_solver.py",
     "nonnegative_kron_qp"): "eps_active is the solver's active-set tolerance, not a privacy epsilon",
    ("deploy/client.py", "square_wave_radius"): "the Square Wave's radius b from its epsilon (Li et al. SIGMOD'20), "
                                                "a channel parameter the phone re-derives",
    ("deploy/client.py", "disk_shares"): "HUEM's ring levels e^((1 - (k - 1)/r) eps) (DAM paper App. A), channel "
                                         "weights the phone re-derives from the signed epsilon",
}


def _name_of(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Subscript):
        key = node.slice
        return key.value if isinstance(key, ast.Constant) and isinstance(key.value, str) else _name_of(node.value)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("float", "int", "abs") \
            and node.args:
        return _name_of(node.args[0])
    return ""


def epsilon_arithmetic(source: str) -> list[tuple[int, str, str]]:
    """(line, enclosing function, what) for every place ``source`` composes epsilons by hand: adds one (+, +=,
    sum()), or multiplies one by anything but a constant, a distance or a share (a count: uses, trips, windows).
    A name bound from an epsilon (``per = float(charge.epsilon)``) carries it."""
    tree = ast.parse(source)
    tainted: set[str] = set()

    def eps(node: ast.AST) -> bool:
        name = _name_of(node)
        return (isinstance(node, ast.Name) and node.id in tainted) or bool(name and _EPS_NAME.search(name))

    def plain(node: ast.AST) -> bool:
        if isinstance(node, ast.Constant) or (isinstance(node, ast.UnaryOp) and isinstance(node.operand, ast.Constant)):
            return True
        if isinstance(node, ast.BinOp):
            return plain(node.left) and plain(node.right)
        return bool(_UNIT_NAME.search(_name_of(node) or "\0"))

    for _ in range(3):
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                value = node.value
                if eps(value) or (isinstance(value, ast.IfExp) and (eps(value.body) or eps(value.orelse))):
                    tainted.add(node.targets[0].id)
    found = []

    def visit(node: ast.AST, function: str) -> None:
        for child in ast.iter_child_nodes(node):
            where = child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else function
            what = None
            if isinstance(child, ast.BinOp) and isinstance(child.op, ast.Add) and (eps(child.left) or eps(child.right)):
                what = "adds an epsilon"
            elif isinstance(child, ast.BinOp) and isinstance(child.op, ast.Mult) and (
                    (eps(child.left) and not plain(child.right)) or (eps(child.right) and not plain(child.left))):
                what = "multiplies an epsilon by a count"
            elif isinstance(child, ast.AugAssign) and isinstance(child.op, (ast.Add, ast.Mult)) \
                    and (eps(child.target) or eps(child.value)):
                what = "accumulates an epsilon"
            elif isinstance(child, ast.Call) and _name_of(child.func) in ("sum", "fsum"):
                args = [*child.args, *([child.func.value] if isinstance(child.func, ast.Attribute) else [])]
                if any(eps(n) for a in args for n in ast.walk(a)):
                    what = "sums epsilons"
            if what:
                found.append((child.lineno, where, what))
            visit(child, where)

    visit(tree, "")
    return found


def test_no_epsilon_total_outside_the_accountant():
    """Every total a person pays is composed by ldpviz/mechanisms/accounting.py (docs/privacy-accounting.md): no
    module above the mechanisms' layer (pages included) adds epsilons or multiplies one by a count."""
    bad = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel.startswith("mechanisms/"):
            continue
        for line, function, what in epsilon_arithmetic(path.read_text(encoding="utf-8")):
            if (rel, function) not in _CHANNEL_ARITHMETIC:
                bad.append(f"ldpviz/{rel}:{line} ({function or 'module'}) {what}")
    assert not bad, "compose these through ldpviz.mechanisms.accounting (a Ledger):\n" + "\n".join(bad)


def test_the_epsilon_check_can_fail():
    """Planted hand totals are caught (the ones issue 37 found, in their shapes); a unit conversion is not."""
    planted = '''
def worst(lam, per, e0, epsilon, charges, reports_per_person):
    worst_trip = lam.max() * per                       # navigation's old worst trip (per bound from an epsilon)
    total = e0 + float(epsilon)                        # region_choice's old total_epsilon_sentence
    people = sum(c.epsilon * c.uses for c in charges)  # a ledger by hand
    run = 0.0
    for c in charges:
        run += c.epsilon
    return epsilon * reports_per_person, total, people, worst_trip, run
'''
    assert {what for _, _, what in epsilon_arithmetic(planted.replace("per, e0", "e0").replace(
        "lam.max() * per", "lam.max() * epsilon"))} == {"multiplies an epsilon by a count", "adds an epsilon",
                                                          "sums epsilons", "accumulates an epsilon"}
    assert len(epsilon_arithmetic("per = float(charge.epsilon)\nworst = per * trips\n")) == 1   # carried by a name
    assert epsilon_arithmetic("per_cell = epsilon * cell_m / 1000\nhalf = epsilon / 2\n") == []
