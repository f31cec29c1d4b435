"""Start and stop the dashboard on a free loopback port (browser tests and benchmarks).

One place for the exact ``streamlit run`` command, so the e2e tests, the
dashboard benchmark and the concurrency report all measure the same server.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import IO, Any

from ldpviz.app import launch

ROOT = Path(__file__).resolve().parents[2]   # a checkout's root (the server's working folder)
#: Debian's Chromium and the flags this offline machine needs (no background networking).
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]


def browser_missing() -> str | None:
    """Why a headless browser cannot be driven here (no Debian Chromium, no Playwright), or None if it can."""
    if not Path(CHROMIUM).exists():
        return f"{CHROMIUM} not found (install Debian's chromium package)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright is not installed (pip install -e '.[test]')"
    return None


def exit_code_without_browser(script: str) -> int | None:
    """For the browser benchmarks: None when a browser can be driven; otherwise say why on stderr and
    return the exit code: 1 with LDPVIZ_REQUIRE_BROWSER=1 (as in CI and the e2e tests), else 0 (skipped,
    no report written)."""
    missing = browser_missing()
    if missing is None:
        return None
    if os.environ.get("LDPVIZ_REQUIRE_BROWSER") == "1":
        print(f"{script}: FAILED: {missing} (LDPVIZ_REQUIRE_BROWSER=1)", file=sys.stderr)
        return 1
    print(f"{script}: SKIPPED, no report written: {missing} (set LDPVIZ_REQUIRE_BROWSER=1 to make this a "
          "failure)", file=sys.stderr)
    return 0


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(port: int | None = None, output: int | IO[Any] | None = subprocess.DEVNULL,
          timeout_s: float = 60.0) -> tuple[subprocess.Popen, str]:
    """Launch the dashboard (:func:`ldpviz.app.launch.streamlit_command`) headless on loopback and wait until
    /_stcore/health answers.

    Returns the process and its base URL; raises RuntimeError (with the server's output when it
    was captured with ``subprocess.PIPE``) if it does not come up within ``timeout_s``.
    """
    port = free_port() if port is None else port
    proc = subprocess.Popen(
        launch.streamlit_command(port, "127.0.0.1", extra=["--server.fileWatcherType", "none"]),
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=output, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=1) as resp:
                if resp.status == 200:
                    return proc, url
        except OSError:
            time.sleep(0.05)
    proc.kill()
    log = proc.stdout.read().decode(errors="replace") if output is subprocess.PIPE and proc.stdout else ""
    raise RuntimeError(f"streamlit did not start within {timeout_s:g} s" + (f":\n{log}" if log else ""))


def stop(proc: subprocess.Popen) -> None:
    """Terminate the server, killing it if it does not exit within 10 s."""
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()


#: Streamlit's own end-to-end hook: the app root carries the script-run and connection states.
APP_IDLE = ('[data-testid="stApp"][data-test-script-state="notRunning"]'
            '[data-test-connection-state="CONNECTED"]')


def wait_until_idle(page: Any, timeout_ms: int = 60_000, settle_ms: int = 700) -> None:
    """Block until the page's script run has finished and stays finished for ``settle_ms``.

    Reads the ``data-test-script-state`` attribute Streamlit sets on its app root (the hook its own
    e2e suite waits on), not the 'Running...' status text, which is hidden when the widget is
    minimised. A page that reruns itself right after a first paint is waited for too. Raises
    TimeoutError if the app is not idle within ``timeout_ms``.
    """
    deadline = time.monotonic() + timeout_ms / 1000
    page.wait_for_timeout(250)   # a rerun triggered just before this call has had time to start
    while True:
        remaining_ms = int((deadline - time.monotonic()) * 1000)
        if remaining_ms <= 0:
            raise TimeoutError(f"the dashboard was still running after {timeout_ms / 1000:g} s")
        page.wait_for_selector(APP_IDLE, state="attached", timeout=remaining_ms)
        page.wait_for_timeout(settle_ms)
        if page.locator(APP_IDLE).count():
            return
