"""``streamlit run`` with a larger limit on a request's head and fewer malloc arenas: the one process ``ldpviz app``
and the tests serve from.

Streamlit serves through uvicorn, whose h11 parser refuses a request line and headers over 16 KiB with a bare
``400 Invalid HTTP request received.``: a link with a 200 kB value showed the browser that text instead of the
dashboard (issue 39.13). Here the limit is :data:`MAX_REQUEST_HEAD_BYTES` (2 MiB, the longest address Chromium
sends), so such a link reaches the page, which refuses the long value with a message
(:data:`ldpviz.app.session.MAX_LINK_VALUE`). Only the default of uvicorn's ``h11_max_incomplete_event_size`` is
raised; where a uvicorn version has no such option, nothing is changed.

Memory: every session's script runs on its own thread, and glibc gives each thread that allocates at once its own
malloc arena (up to 8 per core), whose freed pages it keeps. Under 8 concurrent sessions the server grew from 70 MB
to 1.1 GB and stayed at 870 MB with everything freed but not returned. :func:`limit_malloc_arenas` caps the arenas
at :data:`MALLOC_ARENAS` (as ``MALLOC_ARENA_MAX`` would), before any thread starts; docs/concurrency.md measures it
(bench/concurrency_report.py).
"""

from __future__ import annotations

import inspect

#: Largest request line plus headers the server reads (uvicorn's own default is 16 KiB).
MAX_REQUEST_HEAD_BYTES = 2 * 2**20


#: malloc arenas of the server process (glibc's default: 8 per core).
MALLOC_ARENAS = 2
_M_ARENA_MAX = -8      # glibc's mallopt parameter number for M_ARENA_MAX (malloc.h)


def limit_malloc_arenas(arenas: int = MALLOC_ARENAS) -> bool:
    """Cap glibc's malloc arenas (``mallopt(M_ARENA_MAX, arenas)``); False where the C library is not glibc."""
    import ctypes
    import ctypes.util

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return bool(libc.gnu_get_libc_version and libc.mallopt(_M_ARENA_MAX, int(arenas)))
    except (OSError, AttributeError):
        return False


def raise_request_head_limit() -> bool:
    """Make :data:`MAX_REQUEST_HEAD_BYTES` uvicorn's default head limit; False where uvicorn has no such option."""
    import uvicorn

    original = uvicorn.Config.__init__
    if "h11_max_incomplete_event_size" not in inspect.signature(original).parameters:
        return False

    def init(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        if kwargs.get("h11_max_incomplete_event_size") is None:
            kwargs["h11_max_incomplete_event_size"] = MAX_REQUEST_HEAD_BYTES
        original(self, *args, **kwargs)

    uvicorn.Config.__init__ = init  # type: ignore[method-assign]
    return True


if __name__ == "__main__":
    import os
    arenas = int(os.environ.get("LDPVIZ_MALLOC_ARENAS", MALLOC_ARENAS))   # 0: glibc's default (a baseline)
    if arenas > 0:
        limit_malloc_arenas(arenas)
    raise_request_head_limit()
    from streamlit.web.cli import main
    main(prog_name="streamlit")
