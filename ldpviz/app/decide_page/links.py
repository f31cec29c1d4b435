"""The links from a Decide step to the page that shows it in depth."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

import streamlit as st

from ldpviz.app import state


def in_depth(cfg: dict[str, Any], page: str, label: str, **chosen: Any) -> None:
    """A link to the page that shows a step in depth, carrying every choice (and ``chosen`` over them: the
    mechanism and ε an answer found). Explore is the dashboard's root page (ldpviz.app.router.PAGES: no path)."""
    path = "" if page == "Explore" else page
    st.markdown(f"[{label} →](./{path}?{urlencode(state.encode({**cfg, **chosen}))})")
