"""Errors on a page: bad input as a plain sentence with what to do, a bug as one sentence plus details.

Nothing reaches the user as a traceback: :func:`guard` wraps a block of a page,
:func:`run_page` the whole page (app.py runs every page through it). The server
log keeps the traceback of every bug.
"""

from __future__ import annotations

import contextlib
import logging
import math
import traceback
from typing import Iterator

import streamlit as st

from ldpviz.app import state
from ldpviz.errors import LdpvizInputError

LOG = logging.getLogger("ldpviz.dashboard")


@contextlib.contextmanager
def guard(what: str = "this view", where: str = "in the sidebar") -> Iterator[None]:
    """Show bad input as an error box with what to do, never as a traceback.

    ``where`` says where the setting to change is ("in the sidebar", "above").
    """
    try:
        yield
    except LdpvizInputError as exc:
        st.error(f"**Cannot compute {what}:** {exc}\n\nChange the setting named above {where} and the "
                 "page updates by itself.", icon=":material/error:")
        if "power of two" in str(exc):
            offer_power_of_two(what)
    except MemoryError:
        st.error(f"**{what[0].upper() + what[1:]} needs more memory than this server has.** Choose a smaller grid "
                 "side d, fewer users or fewer trials.", icon=":material/memory:")
    except Exception as exc:  # noqa: BLE001 -- a bug must not take the page down with a traceback
        report_bug(exc)       # (st.stop and st.rerun raise BaseException subclasses: they pass through)


def run_page(page) -> None:
    """Run a page (``st.navigation(...)``'s choice); anything unexpected becomes a plain sentence."""
    try:
        page.run()
    except LdpvizInputError as exc:
        st.error(f"**This page cannot be drawn with these settings:** {exc}", icon=":material/error:")
    except Exception as exc:  # noqa: BLE001
        report_bug(exc)


def report_bug(exc: BaseException) -> None:
    """Anything not LdpvizInputError is a bug: say so plainly, details folded away, traceback in the server log."""
    LOG.error("unexpected error on a dashboard page", exc_info=exc)
    st.error("Something went wrong inside ldpviz (a bug, not your input). Try another setting; the details "
             "below help the developers.", icon=":material/bug_report:")
    with st.expander("Details"):
        st.code("".join(traceback.format_exception_only(type(exc), exc)))


def nearest_power_of_two(side: int) -> int:
    """The power of two among the grid-side options closest to ``side`` (on a log scale; ties go up)."""
    powers = [v for v in state.GRID_OPTIONS if v & (v - 1) == 0]
    return min(powers, key=lambda v: (abs(math.log2(v) - math.log2(max(side, 1))), -v))


def offer_power_of_two(what: str = "") -> None:
    """A button that moves the grid side to the nearest power of two (for dp-heatmap's quadtree)."""
    from ldpviz.app import session
    target = nearest_power_of_two(int(session.cfg().get("grid_side", 32)))
    st.button(f"Use d = {target} (the nearest power of two)", on_click=lambda: session.cfg().update(grid_side=target),
              key=f"fix:pow2:{what}", icon=":material/grid_on:")
