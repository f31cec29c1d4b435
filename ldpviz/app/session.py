"""The one state layer: what the user chose, its mirror in the URL, and the widgets bound to it.

Everything a user sets lives in one plain dict, ``st.session_state["cfg"]`` (see
:mod:`ldpviz.app.state` for its fields and URL form). Widgets never own a value:

* :func:`bind` seeds the widget's key from the dict *before* the widget is drawn,
  on every run, and copies a change back into the dict in the widget's
  ``on_change`` callback (which Streamlit runs before the next script run). A
  page switch, where Streamlit drops the state of widgets it did not draw, so
  loses nothing: the next page re-seeds its widgets from the dict.
* Pages that change a setting in code (a map click, Save region, a fix-it button)
  write the dict and call ``st.rerun()``; they never write a widget key after the
  widget exists.
* :func:`sync_url` mirrors the dict into the address bar after the widgets; a
  fresh session (a reload, a copied link) reads it back (:func:`init`), and an
  address the user changed themselves (back/forward, an edited link) wins over
  the session's dict.

Uploads live beside the dict (``uploads``), and in a bounded, in-memory server
store keyed by a content fingerprint (:mod:`ldpviz.app.uploads`), so that a
reload or a link on this server reopens them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import streamlit as st

from ldpviz.app import browser, state, uploads

#: Session keys outside the config dict.
CFG, URL_WRITTEN = "cfg", "url_written"
#: Set by a widget's on_change (and set_and_rerun): this run was started by the user changing a setting.
WIDGET_CHANGED = "_widget_changed"


def setup_page(title: str) -> dict[str, Any]:
    """set_page_config + state initialisation; returns the config dict."""
    st.set_page_config(page_title=f"ldpviz · {title}", page_icon=PAGE_ICON, layout="wide")
    browser.page_assets()
    ss = st.session_state
    ss["_page_switched"] = ss.get("_page") != title   # the first run of a page after another page's
    ss["_page"] = title
    ss[DRAWN_BEFORE] = ss.get(DRAWN_NOW, set())       # the bound widgets the previous run drew (see keep)
    ss[DRAWN_NOW] = set()
    return init()


#: Session keys: the bound widgets drawn by the previous run and by this one (:func:`keep`).
DRAWN_BEFORE, DRAWN_NOW = "_widgets_drawn_before", "_widgets_drawn_now"


#: The favicon, served by this server (a Material icon or an emoji would be fetched from a third-party host).
PAGE_ICON = str(Path(__file__).with_name("icon.png"))


class _KeysRead(dict):
    """A link's query that remembers which keys the decoder looked at (the others are unknown to it)."""

    def __init__(self, query: dict[str, str]) -> None:
        super().__init__(query)
        self.keys_read: set[str] = set()

    def __getitem__(self, key: str) -> str:
        self.keys_read.add(key)
        return super().__getitem__(key)

    def get(self, key: str, default: Any = None) -> Any:
        self.keys_read.add(key)
        return super().get(key, default)

    def __contains__(self, key: object) -> bool:
        self.keys_read.add(str(key))
        return super().__contains__(key)


#: Longest link value read (characters): the longest a page writes, a pinned setting, is a few hundred. A 200 kB
#: value used to end in the server's bare "400" page (the server now reads such a link: ldpviz.app.entry.
#: streamlit_server) and would be quoted whole in a warning; it is ignored with a short one.
MAX_LINK_VALUE = 4096
#: Longest link parameter name read (the longest a page writes is a mechanism parameter's, p.NAME).
MAX_LINK_KEY = 64


def _too_long(key: str, value: str) -> str:
    """The warning for a link parameter too long to read, quoting neither in full."""
    shown = key if len(key) <= MAX_LINK_KEY else f"{key[:20]}..."
    what = "name" if len(key) > MAX_LINK_KEY else "value"
    size = len(key) if what == "name" else len(value)
    limit = MAX_LINK_KEY if what == "name" else MAX_LINK_VALUE
    return (f"link parameter '{shown}' ignored: its {what} is {size:,} characters long, more than the "
            f"{limit:,} any setting of this dashboard takes (a link cut or pasted twice?)")


def current_query() -> dict[str, str]:
    return {k: st.query_params.get(k) for k in st.query_params.keys()}


def init() -> dict[str, Any]:
    """The session's config: read from the link on first load, then kept in session state.

    Afterwards the link is read again only when the address differs from the one this
    layer last wrote and is not empty: the user went back or forward, or edited it. A
    page switch (which may clear the address's query) keeps the session's config.
    """
    ss = st.session_state
    ss.setdefault("uploads", {})
    ss.setdefault("saved_regions", {})
    query = current_query()
    fresh = CFG not in ss
    # A run started by a widget change (its on_change set the flag) is the user working the widgets, not
    # navigating: a differing address then is one the browser had not yet updated (the run that wrote the
    # newer one was interrupted by this change), and adopting it would undo the change.
    by_widget = ss.pop(WIDGET_CHANGED, False)
    if by_widget or (ss.get("_page_switched") and not fresh):
        ss.pop("link_warnings", None)    # the user has moved on; until then every run shows the link's warnings
    if fresh or (query and query != ss.get(URL_WRITTEN) and not by_widget):
        written = query
        fits = {k: len(k) <= MAX_LINK_KEY and len(v) <= MAX_LINK_VALUE for k, v in query.items()}
        long_warnings = [_too_long(k, v) for k, v in query.items() if not fits[k]]
        query = {k: v for k, v in query.items() if fits[k]}
        for name in uploads.names_in(query):     # a link to an upload this server still holds
            held = uploads.get(name)
            if held is not None:
                uploads.hold(held)
        read = _KeysRead(query)
        cfg, warnings = state.decode(read, state.known_datasets(ss["uploads"]), uploads.released(),
                                     uploads.session_budget_text())
        for ds, (name, region) in state.decode_saved_region(read).items():
            ss["saved_regions"].setdefault(ds, {})[name] = region
        unread = [k for k in query if k not in read.keys_read and not k.startswith("p.")]
        if unread:          # issue 27: never drop a link's parameter silently
            warnings.append(f"link parameter{'s' if len(unread) > 1 else ''} "
                            f"{', '.join(repr(k) for k in unread)} ignored: not a setting of this dashboard "
                            "(a typo, or a link from another version?)")
        ss[CFG] = cfg
        ss[URL_WRITTEN] = written
        warnings = long_warnings + warnings
        ss["link_region"] = cfg.get("region") if "region" in query else None
        ss["link_warnings"] = warnings
    _released_selections(ss[CFG], by_widget)
    # Shown on every run until the user changes a setting or the page: a run the page or the browser starts by
    # itself (a redraw, a warm cache's second run) used to drop them, so a link's problems went unsaid.
    shown = ss["link_warnings_shown"] = list(ss.get("link_warnings", []))
    for warning in shown:
        st.warning(warning, icon=":material/link_off:")
    for notice in ss.get(RELEASED_NOTICES, []):
        st.warning(notice, icon=":material/memory:")
    return ss[CFG]


#: Session key: what :func:`_released_selections` says, kept until the user next works a widget.
RELEASED_NOTICES = "released_notices"


def _released_selections(config: dict[str, Any], by_widget: bool) -> None:
    """A setting that names an upload this session released (issue 39: its uploads are bounded in bytes) goes back
    to its default, and the file is named on every page until the user next works a widget: never silently."""
    ss = st.session_state
    if by_widget:
        ss.pop(RELEASED_NOTICES, None)
    released = uploads.released()
    held = {**ss.get("uploads", {}), **ss.get("trip_uploads", {})}
    defaults = state.defaults()
    for key, value in list(config.items()):
        if isinstance(value, str) and value in released and value not in held:
            config[key] = defaults.get(key)
            notice = state.lost_upload(value, True, uploads.session_budget_text())
            notice = notice[0].upper() + notice[1:] + "."
            notices = ss.setdefault(RELEASED_NOTICES, [])
            if notice not in notices:
                notices.append(notice)


def redraw() -> None:
    """Run the page again at once with what it showed (Explore, when its other trials have finished); the link's
    warnings are shown again (:func:`init` keeps them until the user moves on)."""
    st.rerun()


def cfg() -> dict[str, Any]:
    """The session's config dict (for callbacks, which must not hold on to an old one)."""
    return st.session_state[CFG]


def sync_url(config: dict[str, Any]) -> None:
    """Mirror the config into the URL (only when it changed, to avoid needless history entries)."""
    wanted = state.encode(config, st.session_state.get("saved_regions", {}))
    if wanted != current_query():
        st.query_params.from_dict(wanted)
    st.session_state[URL_WRITTEN] = wanted


def keep(key: str, value: Any, store: Callable[[Any], None]) -> dict[str, Any]:
    """Seed widget ``key`` with ``value`` and return the widget kwargs that send changes to ``store``.

    The low-level form of :func:`bind`, for values that are not one config field (a
    mechanism parameter, one coordinate of a cell).
    """
    ss = st.session_state
    # Seed on a page's first run (a widget of the same key on another page left a value Streamlit does not
    # give the new widget), when the key is gone, or when code changed the setting. Never otherwise: writing
    # the value the widget already has would send it back to the browser and undo a fast second change.
    # Also when the previous run did not draw it (a run that stopped early: Decide's box step stops the page before
    # steps 2-5). The browser then dropped the widget, and draws it anew from what this run sends; Streamlit may
    # still hold its old value server-side, and sends the widget's default unless the value is written here (issue
    # 36: in Chromium, steps 2-3 came back at the widgets' minimums while the config still held the link's values).
    drawn = ss.get(DRAWN_NOW)
    if (ss.get("_page_switched", True) or key not in ss or ss[key] != value
            or key not in ss.get(DRAWN_BEFORE, ())):
        ss[key] = value
    if drawn is not None:
        drawn.add(key)

    def changed() -> None:
        st.session_state[WIDGET_CHANGED] = True
        store(st.session_state[key])

    return {"key": key, "on_change": changed}


def bind(config: dict[str, Any], field: str, widget: Callable[..., Any], *args: Any, valid: Any = None,
         key: str | None = None, **kwargs: Any) -> Any:
    """Draw ``widget`` for ``config[field]``: seeded from the dict, changes written back to it.

    ``valid`` (a collection) replaces a value that is no longer an option by the first option.
    """
    value = config.get(field)
    if valid is not None and value not in valid:
        value = config[field] = next(iter(valid))

    def store(new: Any) -> None:
        cfg()[field] = new

    widget(*args, **keep(key or f"w:{field}", value, store), **kwargs)
    return config[field]


def set_and_rerun(**changes: Any) -> None:
    """Change settings from code (a map click, a button) and draw the page again with them."""
    cfg().update(changes)
    st.session_state[WIDGET_CHANGED] = True
    st.rerun()


def trip_upload_step(config: dict[str, Any], page: str, source_key: str, region_key: str) -> None:
    """The Flows and People pages' trips upload: the uploader, the outcome while its file is the selected source
    (``config[source_key]``), and a file just loaded selected with its own region (``region_key`` cleared)."""
    just_loaded = uploads.trip_uploader(st, page)
    uploads.show_trip_message(st, config.get(source_key))
    if just_loaded:
        set_and_rerun(**{source_key: just_loaded, region_key: None})


def reset_when_changed(config: dict[str, Any], watched: str, field: str, default: Any) -> None:
    """Set ``config[field]`` to ``default`` when ``config[watched]`` changed since the last run that called this
    (a target follows its metric); on the first run a value from a link is kept."""
    key = f"_prev:{watched}:{field}"
    previous = st.session_state.get(key)
    if previous is not None and previous != config.get(watched):
        config[field] = default
    st.session_state[key] = config.get(watched)


def open_page(view: str, **changes: Any) -> None:
    """Change settings from code and open the page ``view`` (a file in ``views/``, e.g. "explore.py") with
    them: Compare's "Use ε = …" opens Explore at the answer. The path is absolute, so it matches the page the
    router registered whichever script started the server."""
    cfg().update(changes)
    st.session_state[WIDGET_CHANGED] = True
    st.switch_page(str(Path(__file__).resolve().parent / "views" / view))

