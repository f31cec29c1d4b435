"""The dashboard's router: st.navigation over the pages in ``views/`` (Decide first, Explore the landing page).

Not in ``pages/``: Streamlit auto-discovers that folder, and a link straight to a page would then
open with its own file-name navigation instead of this one. Every page runs through
:func:`ldpviz.app.errors.run_page`, so nothing unexpected reaches the user as a traceback.
Started by ``ldpviz app`` (:mod:`ldpviz.app.launch`) or, from a checkout, ``streamlit run app.py``.
"""

from __future__ import annotations

import threading
from pathlib import Path

import streamlit as st

from ldpviz.app import errors, session

VIEWS = Path(__file__).resolve().parent / "views"
#: (file in views/, title, url path); Explore is the default page at the root address. The files have importable
#: names (``ldpviz.app.views.trade_offs``); the titles and url paths are the pages' public names, the ones links and
#: the sidebar carry, and stay as they were when the files were named ``0_Decide.py``, ``2_Trade-offs.py``, ...
PAGES = [
    ("decide.py", "Decide", "Decide"),      # first: the guided decision (issue 27)
    ("explore.py", "Explore", None),
    ("compare.py", "Compare", "Compare"),
    ("trade_offs.py", "Trade-offs", "Trade-offs"),
    ("mechanisms.py", "Mechanisms", "Mechanisms"),
    ("data.py", "Data", "Data"),
    ("privacy_audit.py", "Privacy audit", "Privacy_audit"),
    ("flows.py", "Flows", "Flows"),
    ("people.py", "People", "People"),
]
#: The default page's own url path: the one Streamlit inferred from its old file name ``0_Explore.py``. Streamlit
#: derives a page's identity (its script hash) from it, so it is kept, although the page is served at the root.
DEFAULT_URL_PATH = "Explore"


def _warm_metrics() -> None:
    from ldpviz import metrics       # numba's kernels, compiled or loaded from its cache, off the first page's path
    metrics.warm_up()


#: Once per server process (this module is imported once): the metrics' numba kernels warm up in the background,
#: so a person never waits for numba on a first page (``make install`` also compiles them into numba's cache).
_WARM = threading.Thread(target=_warm_metrics, name="ldpviz-warm-metrics", daemon=True)
_WARM.start()


def main() -> None:
    """Run one pass of the dashboard script (Streamlit calls the entry script on every rerun)."""
    # The favicon is set once here, served by this server. No page icons: Streamlit makes a Material icon the
    # page's favicon and fetches it from a third-party host.
    st.set_page_config(page_title="ldpviz", page_icon=session.PAGE_ICON, layout="wide")
    pages = [st.Page(str(VIEWS / file), title=title, default=url is None, url_path=url or DEFAULT_URL_PATH)
             for file, title, url in PAGES]
    errors.run_page(st.navigation(pages))
