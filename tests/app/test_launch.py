"""The dashboard's launch command: its options equal the checkout's config, and serving a page builds no AST.

Why the second matters: CPython 3.11 counts the AST constructor's recursion per interpreter, not per thread, so two
threads running ``ast.parse`` at once can fail with ``SystemError: AST constructor recursion depth mismatch``
(CPython gh-106905). Streamlit's "magic" parses every page on its first run; CI met the race as a landing page that
never drew. With magic off the server builds no AST while it serves.
"""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

import pytest

from ldpviz.app import launch

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted((ROOT / "ldpviz" / "app" / "views").glob("*.py")) + [launch.SCRIPT]


def _flags(argv: list[str]) -> dict[str, str]:
    """``--section.option value`` pairs of a streamlit command."""
    options = argv[argv.index(str(launch.SCRIPT)) + 1:]
    return {options[i][2:]: options[i + 1] for i in range(0, len(options), 2)}


def _config() -> dict[str, str]:
    """``.streamlit/config.toml`` flattened to ``section.option`` -> the flag's spelling of the value."""
    data = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text(encoding="utf-8"))
    spell = lambda v: str(v).lower() if isinstance(v, bool) else str(v)      # noqa: E731
    return {f"{section}.{key}": spell(value) for section, options in data.items() for key, value in options.items()}


def test_launch_flags_equal_the_checkout_config():
    """An installed wheel started from any folder gets exactly the checkout's settings (and the port it asks for)."""
    flags = _flags(launch.streamlit_command(8123, "127.0.0.1"))
    assert flags.pop("server.port") == "8123"
    assert flags == _config()
    assert flags["runner.magicEnabled"] == "false"


def test_no_page_relies_on_magic():
    """Turning magic off changes no page: magic would wrap no bare expression in any of them."""
    from streamlit.runtime.scriptrunner import magic

    for page in PAGES:
        source = page.read_text(encoding="utf-8")
        magicked = ast.unparse(magic.add_magic(source, str(page)))
        calls = magicked.count(f"{magic.MAGIC_MODULE_NAME}.")
        assert calls == 0, f"{page.name}: magic would display {calls} bare expression(s)"


@pytest.fixture
def launch_options():
    """Streamlit's config as the launch command sets it; restored afterwards."""
    from streamlit import config

    flags = _flags(launch.streamlit_command())
    saved = config.get_option("runner.magicEnabled")
    config.set_option("runner.magicEnabled", flags["runner.magicEnabled"] == "true")
    try:
        yield config
    finally:
        config.set_option("runner.magicEnabled", saved)


def _compile_every_page(monkeypatch) -> list[str]:
    """Compile every page through Streamlit's script cache and return the pages that built an AST."""
    from streamlit.runtime.scriptrunner.script_cache import ScriptCache

    parsed: list[str] = []
    real = ast.parse

    def counting(source, filename="<unknown>", *args, **kwargs):
        parsed.append(str(filename))
        return real(source, filename, *args, **kwargs)

    monkeypatch.setattr(ast, "parse", counting)
    cache = ScriptCache()
    for page in PAGES:
        cache.get_bytecode(str(page))
    return parsed


def test_serving_a_page_builds_no_ast(launch_options, monkeypatch):
    """With the launch options no page compile calls ``ast.parse``; with magic on (the check can fail) every one
    does."""
    assert _compile_every_page(monkeypatch) == []
    launch_options.set_option("runner.magicEnabled", True)
    assert len(_compile_every_page(monkeypatch)) == len(PAGES)

