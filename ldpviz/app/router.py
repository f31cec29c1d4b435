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
#: (file in views/, title, url path); Explore is the default page at the root address.
PAGES = [
    ("0_Decide.py", "Decide", "Decide"),      # first: the guided decision (issue 27)
    ("0_Explore.py", "Explore", None),
    ("1_Compare.py", "Compare", "Compare"),
    ("2_Trade-offs.py", "Trade-offs", "Trade-offs"),
    ("3_Mechanisms.py", "Mechanisms", "Mechanisms"),
    ("4_Data.py", "Data", "Data"),
    ("5_Privacy_audit.py", "Privacy audit", "Privacy_audit"),
    ("6_Flows.py", "Flows", "Flows"),
    ("7_People.py", "People", "People"),
]


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
    pages = [st.Page(str(VIEWS / file), title=title, default=url is None, **({"url_path": url} if url else {}))
             for file, title, url in PAGES]
    errors.run_page(st.navigation(pages))
