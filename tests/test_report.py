"""ldpviz.decide.decision_report: the self-contained HTML decision report."""

from __future__ import annotations

import base64
import re
from html.parser import HTMLParser

import pytest

from ldpviz.decide import decision_report as report
from ldpviz.errors import LdpvizInputError
from ldpviz.experiment import Scenario

SMALL = Scenario(dataset="minneapolis-stops", mechanism="grr", epsilon=2.0, grid_side=8, n_users=2000, seed=1,
                 trials=2)


class _Refs(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.refs: list[tuple[str, str, str]] = []

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if name in ("src", "href", "srcset", "poster", "data", "action") and value is not None:
                self.refs.append((tag, name, value))


@pytest.fixture(scope="module")
def page() -> str:
    return report.build_report(SMALL)


def test_report_has_no_external_resource(page):
    """Every src/href is an inline data URI; no @import, no url() to the network, no scripts."""
    parser = _Refs()
    parser.feed(page)
    assert parser.refs, "the maps should be referenced"
    for tag, name, value in parser.refs:
        assert value.startswith("data:"), (tag, name, value[:60])
    assert "@import" not in page and "<script" not in page.lower() and "<link" not in page.lower()
    assert not re.search(r"url\(\s*['\"]?(https?:)?//", page)
    assert not re.search(r"(src|href)\s*=\s*['\"]?\s*(https?:)?//", page, re.I)


def test_report_embeds_four_png_maps(page):
    uris = re.findall(r"src='data:image/png;base64,([A-Za-z0-9+/=]+)'", page)
    assert len(uris) == 4                      # true, estimate, difference, spread
    for uri in uris:
        assert base64.b64decode(uri)[:8] == b"\x89PNG\r\n\x1a\n"


def test_report_states_guarantee_metrics_attacker_audit_and_reproduction(page):
    for text in ("epsilon-LDP with epsilon = 2", "7.39 times", "95% CI", "W2 (m)", "population density",
                 "uniform prior", "passed", "ldpviz report --dataset minneapolis-stops --mechanism grr",
                 "@media print", "Minneapolis police stops", "ldpviz 0.1.0"):
        assert text in page, text


def test_report_for_central_dp_says_the_attacker_is_not_computed():
    html = report.build_report(SMALL.with_(mechanism="laplace"), audit=False)
    assert "central DP" in html and "not computed" in html and "No audit was run" in html


def test_report_needs_two_trials():
    with pytest.raises(LdpvizInputError, match="2 trials"):
        report.build_report(SMALL.with_(trials=1))
