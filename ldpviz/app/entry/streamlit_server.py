"""``streamlit run`` with a larger limit on a request's head, the one process ``ldpviz app`` and the tests serve from.

Streamlit serves through uvicorn, whose h11 parser refuses a request line and headers over 16 KiB with a bare
``400 Invalid HTTP request received.``: a link with a 200 kB value showed the browser that text instead of the
dashboard (issue 39.13). Here the limit is :data:`MAX_REQUEST_HEAD_BYTES` (2 MiB, the longest address Chromium
sends), so such a link reaches the page, which refuses the long value with a message
(:data:`ldpviz.app.session.MAX_LINK_VALUE`). Only the default of uvicorn's ``h11_max_incomplete_event_size`` is
raised; where a uvicorn version has no such option, nothing is changed.
"""

from __future__ import annotations

import inspect
import sys

#: Largest request line plus headers the server reads (uvicorn's own default is 16 KiB).
MAX_REQUEST_HEAD_BYTES = 2 * 2**20


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
    raise_request_head_limit()
    from streamlit.web.cli import main
    main(prog_name="streamlit")
