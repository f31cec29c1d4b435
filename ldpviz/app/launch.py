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

import errno
import socket
import sys
from pathlib import Path

from ldpviz.errors import LdpvizInputError

#: The Streamlit script (it only calls :func:`ldpviz.app.router.main`).
SCRIPT = Path(__file__).resolve().parent / "entry" / "dashboard.py"
#: ``python -m streamlit`` with a larger limit on a request's head (a long link reaches the page and its message).
SERVER_MODULE = "ldpviz.app.entry.streamlit_server"
DEFAULT_ADDRESS = "127.0.0.1"   # this machine only; 0.0.0.0 shares it on the network on purpose (README)
DEFAULT_PORT = 8501
#: The Data page reads uploads in chunks up to 1 GB (ldpviz/app/views/data.py MAX_UPLOAD_BYTES).
MAX_UPLOAD_MB = 1024


def streamlit_command(port: int = DEFAULT_PORT, address: str = DEFAULT_ADDRESS, *,
                      extra: list[str] | None = None) -> list[str]:
    """The argv that serves the dashboard on ``address:port`` with this project's settings."""
    return [sys.executable, "-m", SERVER_MODULE, "run", str(SCRIPT),
            "--server.port", str(port), "--server.address", address, "--server.headless", "true",
            "--server.runOnSave", "false", "--server.maxUploadSize", str(MAX_UPLOAD_MB),
            "--browser.gatherUsageStats", "false", "--client.toolbarMode", "minimal",
            "--theme.base", "light", "--runner.magicEnabled", "false", *(extra or [])]


def check_address(address: str, port: int) -> None:
    """Refuse an address the server cannot listen on, in one line, before anything is printed or started.

    An empty one is refused too: Tornado reads it as every interface (0.0.0.0) and the dashboard was shared on
    the network under the URL "http://:PORT"; sharing is asked for by typing 0.0.0.0. A name or number that is
    not an address of this machine (``999.1.1.1``, ``not an address``) used to end in a ``socket.gaierror``
    traceback after the URL was printed; a port already in use is named too. The check binds the address as the
    server will (``SO_REUSEADDR``, as Tornado does) and lets it go at once.
    """
    if not address.strip():
        raise LdpvizInputError("--address is empty; give 127.0.0.1 (this machine only, the default) or 0.0.0.0 "
                               "(every interface: anyone who can reach the machine can use it)")
    try:
        found = socket.getaddrinfo(address, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (socket.gaierror, UnicodeError) as exc:
        reason = exc.strerror if isinstance(exc, socket.gaierror) else str(exc)
        raise LdpvizInputError(f"--address {address!r} is not an address this machine can listen on ({reason}); "
                               "give 127.0.0.1 (this machine only) or 0.0.0.0 (every interface)") from None
    family, kind, proto, _, where = found[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(where)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise LdpvizInputError(f"--port {port}: something already listens on {address}:{port}; give "
                                       "another --port") from None
            raise LdpvizInputError(f"--address {address!r}: cannot listen there ({exc.strerror or exc}); give "
                                   "127.0.0.1 (this machine only) or 0.0.0.0 (every interface)") from None
