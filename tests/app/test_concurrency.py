"""Five browser sessions at once against one dashboard server: no errors, no cross-talk, bounded memory.

Runs the harness of bench/concurrency_report.py (which also writes docs/concurrency.md).
Skips without Debian's Chromium or Playwright, unless LDPVIZ_REQUIRE_BROWSER=1.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.xdist_group("browser")]
ROOT = Path(__file__).resolve().parents[2]


def _harness():
    spec = importlib.util.spec_from_file_location("concurrency_report", ROOT / "bench" / "concurrency_report.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_five_sessions_at_once() -> None:
    """5 sessions move sliders on different datasets: no exception, each keeps its own state, memory bounded."""
    harness = _harness()
    missing = [what for what, ok in (("app.py", (ROOT / "app.py").is_file()),
                                     (harness.CHROMIUM, Path(harness.CHROMIUM).exists()),
                                     ("playwright", importlib.util.find_spec("playwright") is not None)) if not ok]
    if missing:
        if os.environ.get("LDPVIZ_REQUIRE_BROWSER") == "1":
            pytest.fail(f"missing {', '.join(missing)}")
        pytest.skip(f"missing {', '.join(missing)}")
    result = harness.run(sessions=5, rounds=2, users=2000, grid=8)
    assert harness.check(result) == []
    assert result["rss_mb"]["after pass 2"] < 2048, result["rss_mb"]
