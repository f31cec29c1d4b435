"""Start the dashboard: the one ``streamlit run`` command used by ``ldpviz app``, ``make run`` and the tests.

No Streamlit import here (the command runs it in a new process). The options repeat the checkout's
``.streamlit/config.toml`` as flags, so an installed wheel started from any folder behaves the same.

Streamlit's "magic" is off (no page relies on it): with it on, every page's first run builds a Python AST
(``ast.parse``), and CPython 3.11 keeps that constructor's recursion count per interpreter, not per thread, so two
threads building ASTs at once can fail with ``SystemError: AST constructor recursion depth mismatch`` (CPython
gh-106905; it reached this project's CI as a page that never drew). Without magic a page compiles from source and
the server builds no AST while it serves.
"""

from __future__ import annotations

import sys
from pathlib import Path

#: The Streamlit script (it only calls :func:`ldpviz.app.router.main`).
SCRIPT = Path(__file__).resolve().parent / "entry" / "dashboard.py"
DEFAULT_ADDRESS = "127.0.0.1"   # this machine only; 0.0.0.0 shares it on the network on purpose (README)
DEFAULT_PORT = 8501
#: The Data page reads uploads in chunks up to 1 GB (ldpviz/app/views/4_Data.py MAX_UPLOAD_BYTES).
MAX_UPLOAD_MB = 1024


def streamlit_command(port: int = DEFAULT_PORT, address: str = DEFAULT_ADDRESS, *,
                      extra: list[str] | None = None) -> list[str]:
    """The argv that serves the dashboard on ``address:port`` with this project's settings."""
    return [sys.executable, "-m", "streamlit", "run", str(SCRIPT),
            "--server.port", str(port), "--server.address", address, "--server.headless", "true",
            "--server.runOnSave", "false", "--server.maxUploadSize", str(MAX_UPLOAD_MB),
            "--browser.gatherUsageStats", "false", "--client.toolbarMode", "minimal",
            "--theme.base", "light", "--runner.magicEnabled", "false", *(extra or [])]
