"""Links no page wrote (issue 39.12, 39.13), opened in a real browser on a real server: a 200 kB value reaches the
page and is refused there in one sentence (it used to give the server's bare "400 Invalid HTTP request"), and a
saved region drawn on an upload the server no longer holds (after a restart) is named when the page falls back to
the whole city. Screenshots: build/screenshots/journey-hostile-*.png."""

from __future__ import annotations

from urllib.parse import urlencode

import pytest

from test_journey import Walk

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.xdist_group("browser")]
SMALL = {"ds": "normal", "users": "3000", "d": "8"}


def test_a_200_kb_link_value_is_refused_on_the_page(server, browser):
    walk = Walk(browser, server)
    try:
        walk.page.goto(f"{server}/?{urlencode({**SMALL, 'eps': '9' * 200_000})}")
        walk.idle()
        text = walk.main_text()
        assert "link parameter 'eps' ignored: its value is 200,000 characters long" in text, text[:1500]
        assert "Invalid HTTP request" not in walk.page.content()
        assert "eps" not in walk.query()                  # the link is rewritten without it; the rest is kept
        assert walk.query()["users"] == "3000"
        walk.check_clean("a 200 kB link value")
        walk.shot("hostile-long-link-value")
    finally:
        walk.close()


def test_a_saved_region_of_a_lost_upload_is_named(server, browser):
    walk = Walk(browser, server)
    try:
        lost = {"ds": "upload:0123abcd:my trips.csv", "region": "My area", "rc": "-93.25,44.95,3000.0"}
        walk.page.goto(f"{server}/?{urlencode({**SMALL, **lost})}")
        walk.idle()
        text = walk.main_text()
        assert "the uploaded file 'my trips.csv' is no longer held by this server" in text, text[:1500]
        assert "The link's saved region 'My area' was drawn on the uploaded file 'my trips.csv'" in text
        assert "'Whole city' instead" in text
        walk.check_clean("a saved region of a lost upload")
        walk.shot("hostile-lost-saved-region")
    finally:
        walk.close()
