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


def test_report_carries_explores_guarantee_unit_and_coverage_lines_word_for_word():
    """One function (experiment.guarantee_lines) makes the guarantee (with its privacy unit), the notes and the
    coverage lines; the report holds each of them verbatim, and so does Explore on the same scenario (AppTest)."""
    import html as _html
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    from ldpviz import experiment
    scenario = Scenario(dataset="normal", mechanism="grr", epsilon=1.0, grid_side=8, n_users=3000, seed=0, trials=2)
    result = experiment.run(scenario)
    lines = experiment.guarantee_lines(result)
    page = report.build_report(scenario, result=result, audit=False)
    assert "per row (event-level)" in lines.guarantee and lines.coverage and lines.notes
    for line in [lines.guarantee, *lines.notes, *lines.coverage, lines.COVERAGE_TITLE]:
        assert _html.escape(line, quote=True) in page, line
    at = AppTest.from_file(str(Path(__file__).resolve().parents[2] / "app.py"), default_timeout=120)
    for key, value in {"ds": "normal", "users": "3000", "d": "8", "mech": "grr", "trials": "2", "eps": "1",
                       "seed": "0"}.items():
        at.query_params[key] = value
    at.run()
    assert not at.exception
    assert " ".join([lines.guarantee, *lines.notes]) in [c.value for c in at.caption]
    assert "\n".join(f"- {c}" for c in lines.coverage) in [m.value for m in at.markdown]


def test_report_states_n_as_the_tool_knows_it(tmp_path):
    """An upload's report counts rows, says it cannot tell people apart, and never says each point is one user."""
    from ldpviz.data import datasets
    rows = ["lat,lon"] + [f"{44.9 + 0.001 * (i % 97):.4f},{-93.3 + 0.001 * (i % 89):.4f}" for i in range(500)]
    path = tmp_path / "pts.csv"
    path.write_text("\n".join(rows) + "\n")
    data = datasets.load_file(path, bbox=(-93.35, 44.85, -93.15, 45.05))
    scenario = Scenario(dataset=data.name, mechanism="grr", epsilon=1.0, grid_side=4, seed=0, trials=2)
    page = report.build_report(scenario, dataset=data, audit=False)
    assert "each point is one" not in page and "one user who sends" not in page
    assert "500 rows in the data set; n = 500 rows inside the region take part" in page
    assert "cannot tell from the file whether two rows belong to the same person" in page


def test_report_names_r_and_warns_beyond_meaningful_privacy(page):
    """The attacker's r is the region's default (1% of its side), named with its unit; a setting above
    epsilon = 10 carries the same warning as the goal seek, and epsilon = 2 does not."""
    assert "1% of the region&#x27;s" in page or "1% of the region's" in page
    assert "practically no privacy" not in page.lower()
    html = report.build_report(SMALL.with_(epsilon=12.0), audit=False)
    assert "practically no privacy" in html.lower() and "162,755 times" in html


def test_report_states_typed_bounds_and_the_region_epsilon(tmp_path):
    """Typed bounds: the report's region row names the box and its rows; a paid region adds its epsilon0."""
    import numpy as np
    import pandas as pd

    from ldpviz.data import datasets
    from ldpviz.geo import region_choice
    from ldpviz.mechanisms.fo.private_region import upload_frame

    box = (-93.33, 44.95, -93.19, 44.98)
    html = report.build_report(SMALL.with_(region=region_choice.stated_region(box), n_users=None), audit=False)
    assert "typed bounds -93.33,44.95,-93.19,44.98 (" in html and "rows inside); the grid covers" in html
    rng = np.random.default_rng(7)
    path = tmp_path / "city.csv"
    pd.DataFrame({"lat": rng.uniform(44.89, 45.05, 6000), "lon": rng.uniform(-93.33, -93.19, 6000)}).to_csv(path)
    data = datasets.load_file(path, frame=upload_frame())
    paid = report.build_report(SMALL.with_(dataset=data.name, n_users=None), dataset=data, audit=False)
    assert "Choosing the region spent ε0 = 0.5 per row" in paid and "0.5 + 2 = 2.5 in total" in paid


def test_report_ends_with_a_deploy_command_that_runs(page, tmp_path, capsys):
    """Section 9 names the 'ldpviz deploy' command of the decided collection, and that command writes the bundle."""
    import shlex

    from ldpviz.cli.commands import main
    assert "9. Deploy" in page
    command = re.search(r"<h2>9\. Deploy</h2>.*?<pre>(.*?)</pre>", page, re.S).group(1)
    args = shlex.split(__import__("html").unescape(command))
    assert args[:2] == ["ldpviz", "deploy"]
    args[args.index("--out") + 1] = str(tmp_path / "bundle")
    assert main(args[1:]) == 0, capsys.readouterr().err
    assert (tmp_path / "bundle" / "client.js").exists()


def _printed_command(html: str) -> tuple[str, str]:
    """The report's 'Reproduce' command line and Python snippet, unescaped."""
    import html as html_lib
    blocks = re.findall(r"<pre>(.*?)</pre>", html.split("<h2>8. Reproduce</h2>")[1], re.S)
    return html_lib.unescape(blocks[0]), html_lib.unescape(blocks[1])


@pytest.mark.parametrize("framing", ["bbox", "private-tiles"])
def test_reproduce_command_of_an_upload_runs(tmp_path, framing):
    """Issue 27: the report of an uploaded file printed `--dataset upload:...`, which exits 2. It now prints
    `--csv FILE` with the framing the dashboard used (`--bbox=W,S,E,N`, or the region rule and its epsilon0), and
    that command, run in the file's folder as printed (subprocess; plus --no-audit to keep the test short), writes
    a report on the same rows; the Python snippet runs too."""
    import os
    import shlex
    import subprocess
    import sys

    import numpy as np
    import pandas as pd

    from ldpviz.data import datasets
    from ldpviz.mechanisms.fo.private_region import upload_frame

    rng = np.random.default_rng(3)
    path = tmp_path / "my trips.csv"
    pd.DataFrame({"latitude": rng.uniform(44.90, 45.0, 3000),
                  "longitude": rng.uniform(-93.33, -93.19, 3000)}).to_csv(path, index=False)
    if framing == "bbox":
        data = datasets.load_file(path, bbox=(-93.3, 44.92, -93.2, 44.99))
    else:
        data = datasets.load_file(path, frame=upload_frame())
    # the dashboard fingerprints an upload's name (ldpviz.app.uploads): the command must not depend on it
    import dataclasses
    data = dataclasses.replace(data, name=f"upload:0123456789abcdef:{data.label}")
    scenario = SMALL.with_(dataset=data.name, region=data.default_region, n_users=None, grid_side=4)
    html = report.build_report(scenario, dataset=data, audit=False)
    cli, py = _printed_command(html)
    assert "upload:" not in cli and "--csv 'my trips.csv'" in cli
    assert ("--bbox=-93.3,44.92,-93.2,44.99" in cli) == (framing == "bbox")
    assert ("--region-rule private-tiles --region-epsilon 0.5" in cli) == (framing != "bbox")
    args = shlex.split(cli)
    assert args[0] == "ldpviz"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run([sys.executable, "-m", "ldpviz", *args[1:], "--no-audit"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    again = (tmp_path / "report.html").read_text()
    n_line = re.search(r"n = [\d,]+ rows inside the region take part", html).group(0)
    assert n_line in again
    cwd = os.getcwd()
    try:
        os.chdir(tmp_path)
        exec(compile(py.replace("print(result.summary())", "assert result.n_users > 0"), "snippet", "exec"), {})
    finally:
        os.chdir(cwd)


def test_reproduce_command_of_typed_bounds_on_bundled_data_names_the_box():
    """A typed box on a bundled data set is reproduced with --bbox (it used to be left out)."""
    from ldpviz.geo import region_choice
    scenario = SMALL.with_(region=region_choice.stated_region((-93.33, 44.95, -93.19, 44.98)))
    assert "--dataset minneapolis-stops --bbox=-93.33,44.95,-93.19,44.98" in report._reproduction(scenario, 60.0)[0]
