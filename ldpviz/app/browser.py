"""What every page adds to the browser page itself: a table style, history collapsing, the basemap check.

Three small pieces that need the browser (no Python API reaches them):

* **Wide tables** scroll sideways inside their own box, with a shadow at the edge that still has columns to
  show (a CSS-only cue: the shadow scrolls away once the edge is reached); a data frame whose columns run past
  its right edge is marked "more columns →" until it is scrolled to the end.
* **One history entry per settled change.** Streamlit writes the address with ``history.pushState`` after every
  script run that changed it, so stepping a slider adds one Back step per step. The script below turns a
  push into ``replaceState`` while the previous address on the same page has not settled (the app has not yet
  been idle for :data:`SETTLE_MS` since it was written): a burst of changes leaves one entry, holding where the
  user settled, however slow the runs. A page switch always pushes.
* **The window's width** goes into a cookie (``ldpviz_vw``) that :func:`ldpviz.app.ui.map_size` reads when a
  session starts; on a first visit (no cookie yet) the page sets it and loads itself once more
  (:func:`report_width`), so that visit too is framed to its real columns (issue 27).
* **The basemap offline.** With the basemap on, the browser asks the basemap's host for its style once; if that
  fails (no internet, a blocked host) the note says the tiles could not load. With the basemap off nothing is
  fetched and nothing is checked.
"""

from __future__ import annotations

import json

import streamlit as st

from ldpviz.render import maps as viz

#: An address is settled (later changes get their own history entry) once the page has been idle this long (ms).
SETTLE_MS = 600

_CSS = """<style>
/* Wide tables: scroll sideways inside their box; a shadow marks the side with more columns. */
div[data-testid="stTable"], div[data-testid="stMarkdownContainer"] table {
  display: block; overflow-x: auto; max-width: 100%;
  background:
    linear-gradient(to right, white 30%, rgba(255,255,255,0)) left center / 40px 100% no-repeat local,
    linear-gradient(to left, white 30%, rgba(255,255,255,0)) right center / 40px 100% no-repeat local,
    radial-gradient(farthest-side at 0 50%, rgba(0,0,0,.25), rgba(0,0,0,0)) left center / 14px 100% no-repeat scroll,
    radial-gradient(farthest-side at 100% 50%, rgba(0,0,0,.25), rgba(0,0,0,0)) right center / 14px 100% no-repeat \
scroll;
}
/* Data frames scroll inside their grid: keep its scroll bars visible, and mark a frame with columns out of
   sight on the right (the class is set by the page script below while that is so). */
div[data-testid="stDataFrame"] .dvn-scroller { scrollbar-width: thin; scrollbar-color: #999 transparent; }
div[data-testid="stDataFrame"].ldpviz-more-right { position: relative; }
div[data-testid="stDataFrame"].ldpviz-more-right::after {
  content: "more columns →"; position: absolute; top: 0; right: 0; bottom: 0; width: 7rem; pointer-events: none;
  display: flex; align-items: flex-start; justify-content: flex-end; padding: 0.3rem 0.4rem 0 0;
  font-size: 0.7rem; color: #444; \
background: linear-gradient(to right, rgba(255,255,255,0), rgba(255,255,255,0.95) 60%);
}
div[data-testid="stElementContainer"]:has(> div > #ldpviz-history) { display: none; }
div[data-testid="stElementContainer"]:has(> div > #ldpviz-first-visit) { display: none; }
</style>"""

_HISTORY_JS = """<div id="ldpviz-history"></div><script>
(function () {
  const w = window;
  // The window's width, for the server's next session: a deck's zoom is set there, to fit the map's column.
  const remember = () => { document.cookie = "ldpviz_vw=" + Math.round(w.innerWidth) + "; path=/; SameSite=Strict"; };
  remember();
  if (w.__ldpvizHistory) return;
  w.__ldpvizHistory = true;
  w.addEventListener("resize", remember);
  const push = w.history.pushState.bind(w.history);
  // The newest entry is "settling" until the app has been idle (its script run finished) for SETTLE_MS.
  let settling = false, idleSince = null, path = null;
  const idle = () => {
    const app = document.querySelector('[data-testid="stApp"]');
    const state = app && app.getAttribute("data-test-script-state");
    return state === null || state === undefined ? true : state === "notRunning";
  };
  // Wide data frames: say so while columns are out of sight on the right.
  w.setInterval(() => {
    document.querySelectorAll('div[data-testid="stDataFrame"]').forEach((frame) => {
      const scroller = frame.querySelector(".dvn-scroller");
      const more = !!scroller && scroller.scrollLeft + scroller.clientWidth < scroller.scrollWidth - 2;
      frame.classList.toggle("ldpviz-more-right", more);
    });
  }, 500);
  w.setInterval(() => {
    if (!settling) return;
    if (!idle()) { idleSince = null; return; }
    idleSince = idleSince === null ? Date.now() : idleSince;
    if (Date.now() - idleSince >= SETTLE_MS) settling = false;
  }, 200);
  w.history.pushState = function (state, title, url) {
    const target = new URL(url === undefined || url === null ? w.location.href : String(url), w.location.href);
    const replace = settling && path === target.pathname && target.pathname === w.location.pathname;
    settling = true; idleSince = null; path = target.pathname;
    w.__ldpvizHistoryLog = (w.__ldpvizHistoryLog || []).concat([[replace ? "replace" : "push", target.search]]);
    return replace ? w.history.replaceState(state, title, url) : push(state, title, url);
  };
})();
</script>"""

_BASEMAP_JS = """<div id="ldpviz-basemap-status" style="font-size:0.85rem"></div><script>
(function () {
  const show = (text, colour) => {
    const el = document.getElementById("ldpviz-basemap-status");
    if (el) { el.textContent = text; el.style.color = colour; }
  };
  fetch(STYLE_URL, {mode: "no-cors", cache: "no-store"})
    .then(() => show("Basemap: loaded from HOST.", "#555"))
    .catch(() => show("The basemap could not load from HOST (no internet connection, or the host is blocked): "
                      + "the maps show the cells and the region's outline without streets.", "#b00020"));
})();
</script>"""


def page_assets() -> None:
    """The table style, the history script (it installs itself once per tab) and the width report."""
    st.html(_CSS)
    st.sidebar.html(_HISTORY_JS.replace("SETTLE_MS", str(SETTLE_MS)), unsafe_allow_javascript=True)
    report_width()


#: Session-state key of a window width reported in this session (px); unused while the cookie does the job.
WIDTH_KEY = "ldpviz_window_px"

#: A first visit (no width cookie when the session started): the page keeps the width in the cookie and loads
#: itself once more, at the address it was opened at, so this very visit is framed to its real columns and the
#: link is read again with its warnings. Once per tab (sessionStorage), never a
#: loop: with cookies blocked the page simply stays framed for the narrowest desktop.
_FIRST_VISIT_JS = """<div id="ldpviz-first-visit"></div><script>
(function () {
  const w = window;
  if (w.sessionStorage.getItem("ldpviz_vw_reloaded")) return;
  w.sessionStorage.setItem("ldpviz_vw_reloaded", "1");
  document.cookie = "ldpviz_vw=" + Math.round(w.innerWidth) + "; path=/; SameSite=Strict";
  // Load the address the tab was opened at, not the current one: the first run may already have rewritten the
  // link (dropping what it could not use), and a reload of that lost the link's warnings.
  const opened = w.performance && w.performance.getEntriesByType
    ? (w.performance.getEntriesByType("navigation")[0] || {}).name : null;
  if (document.cookie.indexOf("ldpviz_vw=") >= 0) {
    if (opened) w.location.replace(opened); else w.location.reload();
  }
})();
</script>"""


def known_width() -> int | None:
    """The window's width as the server knows it: reported in this session (:func:`report_width`), else the
    ``ldpviz_vw`` cookie read when the session started, else None."""
    try:
        reported = st.session_state.get(WIDTH_KEY)
        if reported:
            return int(reported)
        value = st.context.cookies.get("ldpviz_vw")
        return int(value) if value and str(value).isdigit() and 320 <= int(value) <= 10_000 else None
    except Exception:   # noqa: BLE001 -- no browser (AppTest, bare mode)
        return None


def report_width() -> None:
    """On a first visit (the session started without the width cookie), set it and load the page once more
    (issue 27: the cookie alone framed the first visit for a narrower column until a reload)."""
    if known_width() is None:
        st.sidebar.html(_FIRST_VISIT_JS, unsafe_allow_javascript=True)


def basemap_check() -> None:
    """Under the basemap switch, while it is on: whether the browser can reach the basemap's host."""
    st.sidebar.html(_BASEMAP_JS.replace("STYLE_URL", json.dumps(viz.BASEMAP_STYLE_URL))
                    .replace("HOST", viz.BASEMAP_HOST), unsafe_allow_javascript=True)
