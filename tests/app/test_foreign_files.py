"""Files ldpviz has never seen (issue 36): a national file, one across the antimeridian, a small file, a trips file
and a dense city, generated here (never shipped). Each goes through Decide (data -> answer -> sign -> deploy) in
AppTest, Compare's goal seek and Explore's link on the same upload; every command the pages and the signed report
print is run as printed, with the file written under the printed name, and must agree with the page.

Small grids, few users and easy targets: the point is the path an officer's own file takes, not accuracy."""

from __future__ import annotations

import html as html_lib
import io
import json
import re
import shlex
import zipfile
from pathlib import Path
from unittest import mock
from urllib.parse import parse_qsl, urlsplit

import numpy as np
import pandas as pd
import pytest
from streamlit.runtime.media_file_manager import MediaFileManager
from streamlit.testing.v1 import AppTest

from ldpviz.cli.commands import main
from ldpviz.mechanisms.base import UNIT_PERSON
from tests.foreign_files import antimeridian, city, national, small, trips, write

ROOT = Path(__file__).resolve().parents[2]
VIEWS = ROOT / "ldpviz/app/views"


# ---- the pages ---------------------------------------------------------------------------------------------------

class _Manager(MediaFileManager):
    """The media manager AppTest creates, remembered so a download (deferred or not) can be read back."""
    last = None

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        _Manager.last = self


def run(at: AppTest, start: bool = True) -> AppTest:
    with mock.patch("streamlit.testing.v1.app_test.MediaFileManager", _Manager):
        at.run()
        for _ in range(3 if start else 0):   # the long-run notice: start it, as an officer would
            start = [b for b in at.button if b.key and b.key.startswith("longrun:start")]
            if not start:
                break
            start[0].click()
            at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def page(name: str, **query: str) -> AppTest:
    at = AppTest.from_file(str(VIEWS / name), default_timeout=900)
    for key, value in query.items():
        at.query_params[key] = value
    return at


def download(at: AppTest, label: str) -> bytes:
    button = next(b for b in at.get("download_button") if b.label == label)
    if button.proto.deferred_file_id:
        url = _Manager.last.execute_deferred(button.proto.deferred_file_id)
    else:
        url = button.proto.url
    return _Manager.last._storage.get_file(url.rsplit("/", 1)[-1].split(".")[0]).content


def texts(at: AppTest) -> str:
    return " ".join(x.value for kind in ("markdown", "caption", "info", "warning", "success")
                    for x in getattr(at, kind))


def links(at: AppTest) -> dict[str, str]:
    """The 'in depth' links of the page: label -> href."""
    return {m.group(1): m.group(2) for md in at.markdown for m in re.finditer(r"\[([^\]]+) →\]\(([^)]+)\)", md.value)}


def cli(command: str, capsys) -> tuple[int, str, str]:
    """Run a printed ``ldpviz ...`` command as printed (``--json`` output parsed by the caller)."""
    argv = shlex.split(command)
    assert argv[0] == "ldpviz", command
    capsys.readouterr()
    code = main(argv[1:])
    out = capsys.readouterr()
    return code, out.out, out.err


# The Decide settings every case shares: the page opens on a synthetic set, Geo-I accepted (two mechanisms), d = 8,
# 1,000 users, an easy W2 target (so every case reaches it quickly), planar Laplace signed (it has a phone client),
# a purpose, an owner, a retention.
DECIDE = dict(ds="normal", d="8", dcm="geoi", dcmet="w2_m", users="1000", mech="planar-laplace",
              dcpur="traffic planning",
              dcown="the officer", dcret="30 days")


def decide_points(tmp_path: Path, frame: pd.DataFrame, name: str, bounds: str = "", accept: bool = False,
                  target: float = 1e6) -> AppTest:
    """Decide with ``frame`` uploaded as ``name`` (``bounds`` typed first; ``accept`` the suggested box)."""
    at = page("decide.py", dct=f"{target:g}", **DECIDE)
    run(at, start=False)       # the page as it opens, before the file
    if bounds:
        at.text_input[0].set_value(bounds)
    at.file_uploader[0].set_value((name, frame.to_csv(index=False).encode(), "text/csv"))
    run(at)
    if accept:
        at.button(key="decide:suggest").click()
        run(at)
    return at


def check_decided(at: AppTest, tmp_path: Path, frame: pd.DataFrame, name: str, capsys, monkeypatch,
                  origin: str) -> dict:
    """Sign and deploy: the record states the region's origin, the target command and the report's commands run
    as printed and agree with the page; the deploy bundle (or the refusal) follows the region's origin."""
    assert not at.error, [e.value for e in at.error]
    answers = at.session_state["decide_answers"]
    assert any(a["reached"] for a in answers), answers
    monkeypatch.chdir(tmp_path)
    frame.to_csv(tmp_path / name, index=False)          # the file under the name the commands print
    target = next(c.value for c in at.code if c.value.startswith("ldpviz target"))
    assert f"--csv {name}" in target and "upload:" not in target, target
    code, out, _ = cli(target, capsys)
    assert code == 0, target
    by_name = {r["mechanism"]: r["epsilon"] for r in json.loads(out)["results"]}
    assert by_name == {a["mechanism"]: a["epsilon"] for a in answers}, (by_name, answers)

    signed = download(at, "Download the signed decision (HTML)").decode("utf-8")
    commands = [html_lib.unescape(p) for p in re.findall(r"<pre>(ldpviz .*?)</pre>", signed, re.S)]
    assert commands and all("upload:" not in c for c in commands), commands
    for command in commands:
        if command.startswith("ldpviz report"):
            command = command.replace("--out report.html", f"--out {tmp_path / 'report.html'}")
        if command.startswith("ldpviz deploy"):
            command = command.replace("--out bundle/", f"--out {tmp_path / 'bundle-report'}")
        code, out, err = cli(command, capsys)
        assert code == 0, (command, err)
    deploy = [c.value for c in at.code if c.value.startswith("ldpviz deploy")]
    refused = [i.value for i in at.info if i.value.startswith("No phone bundle")]
    if origin in ("suggestion", "data"):
        assert "Not covered by epsilon: the region was" in signed and "read no users' data" not in signed
        assert "suggested bounds" in signed or origin == "data"
        assert not deploy and refused and "must not depend on the users' data" in refused[0], refused
        assert not any(c.startswith("ldpviz deploy") for c in commands)
        assert "No deploy command: the region was" in signed
        return {"signed": signed}
    assert deploy and not refused, (deploy, refused)
    code, out, err = cli(deploy[0].replace("--out bundle/", f"--out {tmp_path / 'bundle'}"), capsys)
    assert code == 0, (deploy[0], err)
    spec = json.loads((tmp_path / "bundle" / "collection.json").read_text())
    assert spec["region"]["origin"] == origin
    page_zip = zipfile.ZipFile(io.BytesIO(download(at, "Download the collection bundle (ZIP)")))
    page_spec = json.loads(page_zip.read(next(f for f in page_zip.namelist() if f.endswith("collection.json"))))
    assert page_spec["region"]["origin"] == origin
    assert page_spec["region"]["bounds"] == spec["region"]["bounds"]
    assert page_spec["region"]["epsilon_spent"] == spec["region"]["epsilon_spent"]
    if origin == "private-tiles":       # paid: charged in the ledger of the bundle and of the page
        for ledger in (spec["ledger"], page_spec["ledger"]):
            assert any(c["epsilon"] == spec["region"]["epsilon_spent"] for c in ledger["charges"]), ledger
    return {"signed": signed}


def compare_and_explore(at: AppTest) -> None:
    """Compare's goal seek on the same upload (opened from Decide's link) answers with 'Use ε' buttons, and
    Decide's Explore link opens the root page at the answer's mechanism and ε, without a warning."""
    hrefs = links(at)
    explore = next(h for label, h in hrefs.items() if "on the Explore page" in label)
    assert explore.startswith("./?"), explore          # Explore is the root page (router.PAGES)
    query = dict(parse_qsl(urlsplit(explore).query))
    chosen = next(a for a in at.session_state["decide_answers"] if a["mechanism"] == query["mech"])
    from ldpviz.decide import decision_flow
    signs = decision_flow.signed(at.session_state["decide_answers"], at.session_state["cfg"].get("decide_chosen"))
    assert query["mech"] == signs, (query["mech"], signs)      # the one step 5 signs, not Explore's last mechanism
    assert float(query["eps"]) >= chosen["epsilon"] and float(query["eps"]) <= chosen["epsilon"] * 1.01
    ex = page("explore.py", **query)
    run(ex)
    assert not ex.warning or not any("ignored" in w.value for w in ex.warning), [w.value for w in ex.warning]
    shown = ex.session_state["cfg"]
    assert shown["dataset"] == query["ds"] and shown["epsilon"] == float(query["eps"])

    compare = next(h for label, h in hrefs.items() if "Compare page" in label)
    query = dict(parse_qsl(urlsplit(compare).query))
    cmp = page("compare.py", **{**query, "cmode": "target_epsilon", "cmp": "planar-laplace", "metric": "w2_m",
                                  "tgt": query.get("dct", "1e6")})
    run(cmp)
    assert not cmp.error, [e.value for e in cmp.error]
    assert any(b.label.startswith("Use ε") for b in cmp.button), [b.label for b in cmp.button]


# ---- the matrix --------------------------------------------------------------------------------------------------

@pytest.mark.slow
def test_national_file_suggested_box_is_stated_as_read_from_the_data(tmp_path, capsys, monkeypatch):
    """A national file: the page asks for a box and suggests one; accepted, every statement says the region was
    read from the rows (page, signed report, JSON, ledger note), the printed commands carry --bbox-from suggestion
    and run, and deploy is refused with the reason instead of printing a command that would fail."""
    frame = national(np.random.default_rng(0))
    at = decide_points(tmp_path, frame, "us.csv")
    step = next(i.value for i in at.info if "Next step: choose the area of us.csv" in i.value)
    assert "4,000 of 4,200 rows" in step
    assert not at.dataframe and not any(h.value.startswith("4 ·") for h in at.header), "no search before the box"
    at.button(key="decide:suggest").click()
    run(at)
    assert "suggested bounds -124,25,-67,49" in texts(at)
    done = check_decided(at, tmp_path, frame, "us.csv", capsys, monkeypatch, "suggestion")
    assert "--bbox-from suggestion" in next(c.value for c in at.code if c.value.startswith("ldpviz target"))
    pick = next(a for a in at.session_state["decide_answers"] if a["mechanism"] == "planar-laplace")
    assert any("not covered by ε: the region was the box" in n for n in pick["ledger"]["notes"])
    assert "where it came from: the box ldpviz suggested from the file's rows" in html_lib.unescape(done["signed"])
    compare_and_explore(at)


@pytest.mark.slow
def test_antimeridian_file_with_typed_bounds(tmp_path, capsys, monkeypatch):
    """Points on both sides of 180 degrees, bounds typed across it (W > E): the commands carry the box and run, the
    deploy bundle's region is the typed box, origin 'typed'."""
    frame = antimeridian(np.random.default_rng(1))
    at = decide_points(tmp_path, frame, "fiji.csv", bounds="176, -20, -176, -15")
    assert "typed bounds 176,-20,-176,-15" in texts(at)
    check_decided(at, tmp_path, frame, "fiji.csv", capsys, monkeypatch, "typed")
    compare_and_explore(at)


def test_small_file_is_a_clear_stop_that_asks_for_a_box(tmp_path, capsys):
    """150 rows, blank bounds: the page says how many rows the private tiles need and asks for a box before any
    search; the command line refuses the same file with the same count and the suggested --bbox."""
    frame = small(np.random.default_rng(2))
    at = decide_points(tmp_path, frame, "small.csv")
    step = next(i.value for i in at.info if "Next step: choose the area of small.csv" in i.value)
    needed = int(re.search(r"need at least ([\d,]+) rows", step).group(1).replace(",", ""))
    assert needed > 150 and "this file has 150 rows in all" in step
    assert not at.dataframe and not any(h.value.startswith("4 ·") for h in at.header), "no search before the box"
    path = write(frame, tmp_path, "small.csv")
    code, _, err = cli(f"ldpviz target --csv {path} --grid 8 --metric w2_m --at-most 1000 --mechanism grr", capsys)
    assert code == 2 and f"need at least {needed:,} rows" in err and "--bbox-from suggestion" in err, err


@pytest.mark.slow
def test_dense_city_framed_by_the_paid_private_tiles(tmp_path, capsys, monkeypatch):
    """A dense city, blank bounds: the private tiles frame it, paid with epsilon0; the ledger charges it, the
    commands carry the rule and its epsilon0 and run, and the deploy bundle frames the same region from the file."""
    frame = city(np.random.default_rng(3))
    at = decide_points(tmp_path, frame, "city.csv")
    assert "Private tiles" in texts(at)
    target = next(c.value for c in at.code if c.value.startswith("ldpviz target"))
    assert "--region-rule private-tiles --region-epsilon 0.5" in target
    pick = next(a for a in at.session_state["decide_answers"] if a["mechanism"] == "planar-laplace")
    assert any(c["epsilon"] == 0.5 and c["basis"] for c in pick["ledger"]["charges"]), pick["ledger"]
    check_decided(at, tmp_path, frame, "city.csv", capsys, monkeypatch, "private-tiles")
    compare_and_explore(at)


@pytest.mark.slow
def test_small_trips_file_asks_for_a_box_then_answers_per_person(tmp_path, capsys, monkeypatch):
    """200 people x 15 points, blank bounds: too few people for the private tiles, said with the count needed
    before any search; the suggested box accepted, the answer is per person, the Python printed runs and gives the
    page's answer, the signed report says the box was read from the data and deploy is refused with the reason."""
    frame = trips(np.random.default_rng(4))
    at = page("decide.py", dct="1e6", **DECIDE)
    run(at, start=False)
    uploader = next(u for u in at.file_uploader if "trips" in u.label.lower())
    uploader.set_value(("trips.csv", frame.to_csv(index=False).encode(), "text/csv"))
    run(at)
    step = next(i.value for i in at.info if "Next step: choose the area of trips.csv" in i.value)
    needed = int(re.search(r"need at least ([\d,]+) people", step).group(1).replace(",", ""))
    assert needed > 200 and "this file has 200 people in all" in step, step
    assert not at.dataframe and not any(h.value.startswith("4 ·") for h in at.header), "no search before the box"
    at.button(key="fix:trip_bounds:decide").click()
    run(at)
    assert not at.error, [e.value for e in at.error]
    answers = at.session_state["decide_answers"]
    assert at.session_state["cfg"]["decide_trips"].startswith("upload:")
    assert all(a["ledger"]["unit"] == UNIT_PERSON for a in answers if a["reached"])
    monkeypatch.chdir(tmp_path)
    write(frame, tmp_path, "trips.csv")
    code = next(c.value for c in at.code if c.value.startswith("from ldpviz.data import trajectories"))
    assert "bbox_data_use=" in code
    got = {}
    exec(code, {"print": lambda name, eps: got.__setitem__(name, eps)})
    assert got == {a["mechanism"]: a["epsilon"] for a in answers}
    signed = download(at, "Download the signed decision (HTML)").decode("utf-8")
    assert "Not covered by epsilon: the region was" in signed and "read no users' data" not in signed
    assert "No deploy command: the region was" in signed
    py = html_lib.unescape(next(p for p in re.findall(r"<pre>(.*?)</pre>", signed, re.S)
                                if p.startswith("from ldpviz import Scenario")))
    ns: dict = {}
    exec(py.replace("print(result.summary())", ""), ns)
    assert ns["result"].region.data_use
    refused = [i.value for i in at.info if i.value.startswith("No phone bundle")]
    assert refused and "must not depend on the users' data" in refused[0]
