"""`ldpviz estimate` and `ldpviz deploy` (issue 29): bad input is a clear message or a counted rejection, never a
traceback, and no report that matches the spec is lost; reports made by client.js round-trip to the simulator's
accuracy."""

from __future__ import annotations

import json
import os
import random
import resource

import numpy as np
import pytest
from scipy import stats

from ldpviz import metrics
from ldpviz.cli.commands import main
from ldpviz.data import datasets
from ldpviz.errors import LdpvizInputError
from ldpviz.experiment import Scenario, run
from ldpviz.geo.domain import Grid, Region
from ldpviz.deploy import bundle, client as pyclient, estimate as deployed, spec as specs

from tests.deploy.deploy_helpers import node_reports

BOX = Region.from_bbox(-93.33, 44.89, -93.19, 45.05, name="box")


def _setup(tmp_path, name="grr", d=8, eps=2.0, n=2000, seed=0):
    mech = specs.deployable_mechanism(name, Grid(BOX, d), eps, {})
    spec = specs.build_spec(mech)
    spec_path = specs.write_spec(spec, tmp_path / "collection.json")
    client = pyclient.Client(spec, random.Random(seed).getrandbits)
    uv = np.random.default_rng(seed).random((n, 2))
    reports = [client.report_unit(u, v) for u, v in uv]
    return spec, spec_path, reports


def _write(path, reports, extra_lines=()):
    with open(path, "w") as fh:
        for r in reports:
            fh.write(json.dumps(r) + "\n")
        for line in extra_lines:
            fh.write(line + "\n")
    return path


@pytest.mark.parametrize("name", ["grr", "olh", "oue", "dam", "srr"])
def test_every_bad_line_is_counted_and_no_valid_report_is_lost(tmp_path, name):
    spec, spec_path, reports = _setup(tmp_path, name)
    other = specs.build_spec(specs.deployable_mechanism(name, Grid(BOX, 8), 1.0, {}))
    good = reports[:1500]
    field = spec["report"]["fields"][-1]
    bad = {
        deployed.MALFORMED: ["{not json", "[1, 2]", '"a string"'],
        deployed.OTHER_SPEC: [json.dumps({**good[0], "spec": other["digest"]})],
        deployed.NO_DIGEST: [json.dumps({k: v for k, v in good[0].items() if k != "spec"})],
        deployed.MISSING: [json.dumps({"spec": spec["digest"]})],
        deployed.EXTRA: [json.dumps({**good[0], "lat": 44.97, "lon": -93.26})],
        deployed.BAD_VALUE: [json.dumps({**good[0], field: "12x"}), json.dumps({**good[0], field: 1.5})],
        deployed.OUT_OF_DOMAIN: [json.dumps({**good[0], field: 10 ** 9}) if field != "bits" else
                                 json.dumps({**good[0], field: "ff" * len(bytes.fromhex(good[0]["bits"]))})],
    }
    if name == "oue":
        bad[deployed.OUT_OF_DOMAIN] = [json.dumps({**good[0], "bits": "ff" * (len(good[0]["bits"]) // 2)})] \
            if spec["client"]["D"] % 8 else []
        bad[deployed.BAD_VALUE].append(json.dumps({**good[0], "bits": "zz" * (len(good[0]["bits"]) // 2)}))
    lines = [line for group in bad.values() for line in group]
    mixed = _write(tmp_path / "mixed.jsonl", good, lines + ["", "   "])
    clean = _write(tmp_path / "clean.jsonl", good)
    a = deployed.estimate_reports(spec_path, mixed, bootstrap=5)
    b = deployed.estimate_reports(spec_path, clean, bootstrap=5)
    assert a.collected.accepted == len(good)
    assert a.collected.blank == 2
    for reason, group in bad.items():
        assert a.collected.rejected.get(reason, 0) == len(group), reason
    assert np.allclose(a.density, b.density)
    assert a.warnings == []          # 10 of 1,510 lines: below the 5% warning


def test_a_large_loss_is_a_warning(tmp_path):
    spec, spec_path, reports = _setup(tmp_path)
    path = _write(tmp_path / "r.jsonl", reports[:100], ["{bad"] * 50)
    result = deployed.estimate_reports(spec_path, path, bootstrap=5)
    assert result.warnings and "50 of 150" in result.warnings[0]


def test_csv_reports_with_a_header(tmp_path):
    spec, spec_path, reports = _setup(tmp_path, "olh")
    path = tmp_path / "r.csv"
    with open(path, "w") as fh:
        fh.write("spec,seed,bucket\n")
        for r in reports:
            fh.write(f"{r['spec']},{r['seed']},{r['bucket']}\n")
        fh.write(f"{spec['digest']},1\n")                   # wrong number of columns
    result = deployed.estimate_reports(spec_path, path, bootstrap=5)
    assert result.collected.accepted == len(reports)
    assert result.collected.rejected == {deployed.MALFORMED: 1}


def test_empty_file_digest_mismatch_and_size_cap_are_clear_errors(tmp_path, capsys):
    spec, spec_path, reports = _setup(tmp_path)
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    assert main(["estimate", "--spec", str(spec_path), "--reports", str(empty)]) == 2
    assert "empty" in capsys.readouterr().err
    only_bad = _write(tmp_path / "bad.jsonl", [], ["{bad", "[]"])
    assert main(["estimate", "--spec", str(spec_path), "--reports", str(only_bad)]) == 2
    err = capsys.readouterr().err
    assert "no valid reports" in err and "2 malformed" in err
    good = _write(tmp_path / "good.jsonl", reports)
    assert main(["estimate", "--spec", str(spec_path), "--reports", str(good), "--max-bytes", "100"]) == 2
    assert "above the limit" in capsys.readouterr().err
    tampered = json.loads(spec_path.read_text())
    tampered["client"]["keep"] += 1
    bad_spec = tmp_path / "tampered.json"
    bad_spec.write_text(json.dumps(tampered))
    assert main(["estimate", "--spec", str(bad_spec), "--reports", str(good)]) == 2
    err = capsys.readouterr().err
    assert "changed after it was made" in err and "Traceback" not in err
    assert main(["estimate", "--spec", str(tmp_path / "nope.json"), "--reports", str(good)]) == 2
    assert "not found" in capsys.readouterr().err


def test_a_line_too_long_is_one_counted_rejection(tmp_path):
    spec, spec_path, reports = _setup(tmp_path)
    path = _write(tmp_path / "r.jsonl", reports[:10], ["x" * (deployed.MAX_LINE_BYTES + 5)])
    with open(path, "a") as fh:
        fh.write(json.dumps(reports[10]) + "\n")
    result = deployed.estimate_reports(spec_path, path, bootstrap=5)
    assert result.collected.accepted == 11
    assert result.collected.rejected == {deployed.TOO_LONG: 1}


@pytest.mark.slow
def test_a_1_gb_file_streams_in_bounded_memory(tmp_path):
    """A real 1 GiB reports file (sparse: valid reports, a 1 GiB run of NUL bytes, more valid reports) is streamed:
    every valid report is kept, the NUL run is one counted rejection, and memory stays far below the file's size."""
    spec, spec_path, reports = _setup(tmp_path, n=3000)
    path = tmp_path / "big.jsonl"
    with open(path, "w") as fh:
        for r in reports[:1500]:
            fh.write(json.dumps(r) + "\n")
        fh.seek(fh.tell() + (1 << 30))
        fh.write("\n")
        for r in reports[1500:]:
            fh.write(json.dumps(r) + "\n")
    assert os.path.getsize(path) > 1 << 30
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    result = deployed.estimate_reports(spec_path, path, bootstrap=5)
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert result.collected.accepted == 3000
    assert result.collected.rejected == {deployed.TOO_LONG: 1}
    assert grown_mb < 200


def test_cli_deploy_then_estimate_writes_every_file(tmp_path, capsys):
    out = tmp_path / "bundle"
    assert main(["deploy", "--mechanism", "dam", "--epsilon", "2", "--grid", "8",
                 "--bbox=-93.33,44.89,-93.19,45.05", "--out", str(out), "--zip", str(tmp_path / "b.zip")]) == 0
    text = capsys.readouterr().out
    assert "each person pays" in text and "ldpviz estimate --spec" in text
    assert {p.name for p in out.iterdir()} == {"collection.json", "client.js", "client.py", "README.md",
                                               "example.html"}
    spec = specs.load_spec(out / "collection.json")
    client = pyclient.Client(spec, randbits=random.Random(0).getrandbits)   # seeded: the test is reproducible
    rng = np.random.default_rng(0)
    lon, lat = rng.uniform(-93.33, -93.19, 500), rng.uniform(44.89, 45.05, 500)
    reports = [client.report(a, b) for a, b in zip(lon, lat)]
    assert None not in reports
    path = _write(tmp_path / "r.jsonl", reports)
    assert main(["estimate", "--spec", str(out / "collection.json"), "--reports", str(path),
                 "--out", str(tmp_path / "res"), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["accepted"] == 500 and summary["rejected"] == 0
    assert {p.name for p in (tmp_path / "res").iterdir()} == {"estimate.csv", "estimate.geojson", "estimate.png",
                                                              "summary.json"}
    import pandas as pd
    table = pd.read_csv(tmp_path / "res" / "estimate.csv")
    assert np.isclose(table["estimated_share"].sum(), 1.0)
    assert np.all(table["low_95"] <= table["estimated_share"] + 1e-12)


def test_cli_deploy_refuses_clearly(tmp_path, capsys):
    for args, message in ((["--mechanism", "exact"], "no privacy"), (["--mechanism", "privag"],
                                                                     "no single phone-side report"),
                          (["--mechanism", "dam"], None)):
        argv = ["deploy", *args, "--epsilon", "1", "--out", str(tmp_path / "x")]
        if message is None:
            assert main(argv) == 2
            assert "give the region" in capsys.readouterr().err
        else:
            assert main([*argv, "--bbox=-93.33,44.89,-93.19,45.05"]) == 2
            assert message in capsys.readouterr().err


def test_central_dp_bundle_is_the_curator_side_only(tmp_path):
    from ldpviz import mechanisms
    paths = bundle.write_bundle(mechanisms.create("dp-heatmap", Grid(BOX, 8), 1.0), out_dir=tmp_path)
    assert set(paths) == {"collection.json", "README.md"}
    assert "trusted curator" in paths["README.md"].read_text()
    spec = specs.load_spec(paths["collection.json"])
    cells = np.random.default_rng(0).integers(0, 64, 3000)
    path = _write(tmp_path / "cells.jsonl", [{"spec": spec["digest"], "y": int(c)} for c in cells])
    result = deployed.estimate_reports(spec, path, bootstrap=5)
    assert result.collected.accepted == 3000 and np.isclose(result.density.sum(), 1.0)


def test_bundle_zip_holds_the_same_files():
    import io
    import zipfile
    from ldpviz import mechanisms
    data = bundle.bundle_zip(mechanisms.create("grr", Grid(BOX, 8), 1.0))
    names = set(zipfile.ZipFile(io.BytesIO(data)).namelist())
    assert names == {f"ldpviz-collection/{n}" for n in ("collection.json", "client.js", "client.py", "README.md",
                                                           "example.html")}


ROUND_TRIP = [("grr", 2.0), ("olh", 2.0), ("oue", 2.0), ("hr", 2.0), ("dam", 2.0), ("planar-laplace", 1.0),
              ("srr", 2.0), ("mdsw", 2.0), ("olh-h", 2.0)]


@pytest.mark.slow
@pytest.mark.parametrize("name,eps", ROUND_TRIP)
def test_round_trip_client_js_to_ldpviz_estimate(name, eps, tmp_path):
    """The Downtown stops, each turned into a report by client.js (node, from lon/lat), estimated by
    ``ldpviz estimate``: W2, AQE and KL fall within the simulator's 99.9% prediction interval for one collection
    (mean +- t s sqrt(1 + 1/T) over T = 12 trials of the same scenario)."""
    from ldpviz import mechanisms
    per_user = {"path": "per-user"} if any(p.name == "path" for p in mechanisms.get(name).params) else {}
    scenario = Scenario(dataset="minneapolis-stops", mechanism=name, epsilon=eps, grid_side=16,
                        region="Downtown", params=per_user, trials=12, seed=3)
    sim = run(scenario)
    data = datasets.load("minneapolis-stops")
    region = data.resolve_region("Downtown")
    grid = Grid(region, 16)
    inside = region.contains(data.lon, data.lat)
    lon, lat = data.lon[inside], data.lat[inside]
    mech = specs.deployable_mechanism(name, grid, eps, {})
    spec = specs.build_spec(mech)
    reports = node_reports(spec, tmp_path, [[float(a), float(b)] for a, b in zip(lon, lat)], 1, seed=11,
                           mode="lonlat")
    assert all(r is not None for r in reports)
    path = _write(tmp_path / "reports.jsonl", reports)
    specs.write_spec(spec, tmp_path / "collection.json")
    assert main(["estimate", "--spec", str(tmp_path / "collection.json"), "--reports", str(path),
                 "--out", str(tmp_path / "res"), "--bootstrap", "5"]) == 0
    result = deployed.estimate_reports(tmp_path / "collection.json", path, bootstrap=5)
    users = grid.bin_lonlat(lon, lat)
    truth = grid.histogram(users.cells) / len(users.cells)
    assert np.allclose(truth, sim.true_density)
    got = metrics.evaluate(truth, result.estimate, cell_m=grid.cell_m, n_users=len(users.cells),
                           true_points=users.unit, queries=metrics.random_queries(scenario.query_rho, seed=3))
    T = scenario.trials
    t = stats.t.ppf(1 - 0.0005, T - 1)
    for metric in ("w2_m", "aqe", "kl"):
        values = sim.metrics[metric].to_numpy(float)
        half = t * values.std(ddof=1) * np.sqrt(1 + 1 / T)
        assert abs(got[metric] - values.mean()) <= half, (metric, got[metric], values.mean(), half)


def test_estimate_needs_a_spec_with_reports_field_names(tmp_path):
    spec, spec_path, reports = _setup(tmp_path)
    path = tmp_path / "r.csv"
    path.write_text("a,b\n1,2\n")
    with pytest.raises(LdpvizInputError, match="header names"):
        deployed.estimate_reports(spec_path, path)


def test_the_spec_carries_the_accountants_ledger(tmp_path, capsys):
    """The ledger is the accountant's (issue 26): k reports per person and repeats compose there, the README
    and the command print its sentence, and a setting with practically no privacy is warned about."""
    from ldpviz.mechanisms import accounting
    mech = specs.deployable_mechanism("grr", Grid(BOX, 8), 1.5, {})
    ledger = specs.collection_ledger_for(mech, reports_per_person=3, repeats=2, repeats_basis="twice a year")
    spec = specs.build_spec(mech, ledger)
    assert ledger.total().ldp == pytest.approx(9.0)            # 3 reports x 2 collections x 1.5
    assert spec["ledger"]["total"]["ldp_epsilon"] == pytest.approx(9.0)
    assert spec["ledger"]["sentence"] == ledger.sentence()
    assert spec["ledger"] == json.loads(json.dumps(accounting.collection_ledger(
        mech, BOX, reports_worst=3, reports_median=3, reports_basis=ledger.charges[0].basis, repeats=2,
        repeats_basis="twice a year", unit=ledger.unit,
        region_basis="each person reports one map tile once").to_dict()))
    readme = bundle.readme_text(spec)
    assert ledger.sentence() in readme
    assert main(["deploy", "--mechanism", "grr", "--epsilon", "12", "--grid", "8", "--bbox=-93.33,44.89,-93.19,45.05",
                 "--out", str(tmp_path / "b")]) == 0
    captured = capsys.readouterr()
    assert "no privacy" in captured.err.lower()
    assert "no privacy" in (tmp_path / "b" / "README.md").read_text().lower()


def test_hostile_lines_are_counted_not_raised(tmp_path):
    """Deep nesting, huge numbers, NUL bytes and non-UTF-8 bytes are counted rejections, in JSON lines and CSV."""
    spec, spec_path, reports = _setup(tmp_path)
    path = tmp_path / "r.jsonl"
    with open(path, "wb") as fh:
        for r in reports[:50]:
            fh.write((json.dumps(r) + "\n").encode())
        fh.write(b"[" * 100_000 + b"\n")
        fh.write(json.dumps({**reports[0], "y": 1e400}).replace("Infinity", "1e400").encode() + b"\n")
        fh.write(b'{"spec": "\x00\x00", "y": 1}\n')
        fh.write(b"\xff\xfe\x00garbage\n")
    result = deployed.estimate_reports(spec_path, path, bootstrap=5)
    assert result.collected.accepted == 50 and result.collected.n_rejected == 4
    csv_path = tmp_path / "r.csv"
    with open(csv_path, "wb") as fh:
        fh.write(b"spec,y\n")
        for r in reports[:50]:
            fh.write(f"{r['spec']},{r['y']}\n".encode())
        fh.write(b"a\x00b,1\n")
    result = deployed.estimate_reports(spec_path, csv_path, bootstrap=5)
    assert result.collected.accepted == 50 and result.collected.n_rejected == 1


def test_an_interval_always_holds_its_own_estimate_and_says_when_it_was_widened():
    """A percentile bootstrap of a shrinking estimator can sit beside the estimate (seen with DAM at 500 reports on
    8 x 8 cells): the readout widens such cells to the estimate and counts them, never prints a value outside its
    interval."""
    from ldpviz.deploy.estimate import _containing
    est = np.array([0.10, 0.20, 0.30, 0.40])
    low, high, widened = _containing(est, np.array([0.05, 0.25, 0.1, 0.41]), np.array([0.2, 0.3, 0.29, 0.5]))
    assert widened == 3
    assert np.all(low <= est) and np.all(est <= high)
    assert low.tolist() == [0.05, 0.20, 0.1, 0.40] and high.tolist() == [0.2, 0.3, 0.30, 0.5]


# ---------------------------------------------------------------------------------------------------------------
# The input's format and the vectorised reader (issue 37 items 11-13, issue 38 item 5)
# ---------------------------------------------------------------------------------------------------------------

def _same(a, b):
    """Two Collected are the same account: every count, reason, example line and accepted value, in file order."""
    for name in ("lines", "blank", "accepted", "rejected", "examples"):
        assert getattr(a, name) == getattr(b, name), name
    assert bytes(a.y) == bytes(b.y) and bytes(a.seeds) == bytes(b.seeds) and bytes(a.buckets) == bytes(b.buckets)


def _hostile_mix(spec, reports, rng):
    """Valid reports in several layouts with every kind of bad line between them, as JSON-lines text."""
    field = spec["report"]["fields"][-1]
    other = "sha256:" + "0" * 64
    bad = ["{not json", "[1, 2]", '"a string"', json.dumps({**reports[0], "spec": other}),
           json.dumps({k: v for k, v in reports[0].items() if k != "spec"}), json.dumps({"spec": spec["digest"]}),
           json.dumps({**reports[0], "lat": 44.97}), json.dumps({**reports[0], field: "12x"}),
           json.dumps({**reports[0], field: 1.5}), json.dumps({**reports[0], field: 10 ** 9}),
           json.dumps({**reports[0], field: -3}), json.dumps({**reports[0], field: True}),
           json.dumps(reports[0], separators=(",", ":"))[:-1] + ',"' + field + '":7}',     # a repeated key
           json.dumps(reports[0], separators=(",", ":")).replace(":", ": "),           # valid, another layout
           json.dumps(reports[0], separators=(",", ":")) + "   ",                        # valid, trailing blanks
           json.dumps(reports[0], separators=(",", ":")).replace('":', '":0'),         # leading zeros: malformed
           json.dumps({**reports[0], field: 10 ** 25}), json.dumps({**reports[0], field: str(reports[0][field])}),
           "", "   ", "\x00\x00"]
    lines = []
    for i, r in enumerate(reports):
        lines.append(json.dumps(r, separators=(",", ":")))
        if rng.random() < 0.02:
            lines.append(bad[int(rng.integers(len(bad)))])
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("name", ["grr", "olh", "dam", "olh-h", "mdsw"])
def test_the_vectorised_reader_gives_the_line_by_line_account(tmp_path, name, monkeypatch):
    """On a file mixing valid reports with every kind of bad line (and small 4 kB blocks, so many block edges and a
    template learnt mid-block), the vectorised reader's account equals the line-by-line reader's exactly: counts,
    reasons, example line numbers and every accepted value in file order; and most lines took the fast path."""
    monkeypatch.setattr(deployed._reader, "CHUNK_BYTES", 4096)         # where the reader reads it
    spec, spec_path, reports = _setup(tmp_path, name, n=3000)
    text = _hostile_mix(spec, reports, np.random.default_rng(1))
    for suffix, data in (("lf", text), ("crlf", text.replace("\n", "\r\n"))):
        path = tmp_path / f"mix-{suffix}.jsonl"
        path.write_text(data)
        fast = deployed.collect(spec, path)
        slow = deployed.collect(spec, path, fast=False)
        _same(fast, slow)
        assert fast.accepted >= 3000 and fast.fast_lines > 0.9 * fast.accepted and slow.fast_lines == 0
        assert fast.rejected[deployed.REPEATED] >= 1 and fast.rejected[deployed.MALFORMED] >= 1


@pytest.mark.parametrize("name", ["grr", "olh"])
def test_the_vectorised_reader_reads_csv_the_same(tmp_path, name, monkeypatch):
    monkeypatch.setattr(deployed._reader, "CHUNK_BYTES", 4096)         # where the reader reads it
    spec, spec_path, reports = _setup(tmp_path, name, n=2000)
    fields = spec["report"]["fields"]
    rows = [",".join(str(r[f]) for f in fields) for r in reports]
    rows[100:100] = [f"{spec['digest']},1", "garbage,,", json.dumps(reports[0]), f"{spec['digest']}," + ",".join(
        ["007"] * (len(fields) - 1)), f"{spec['digest']}, " + ", ".join(["5"] * (len(fields) - 1))]
    path = tmp_path / "r.csv"
    path.write_text(",".join(fields) + "\n" + "\n".join(rows) + "\n")
    fast, slow = deployed.collect(spec, path), deployed.collect(spec, path, fast=False)
    _same(fast, slow)
    assert fast.accepted == 2002 + (len(fields) == 2) and fast.fast_lines >= 1900     # "digest,1" is a GRR row


def test_a_byte_order_mark_is_read(tmp_path):
    """A CSV saved by a spreadsheet starts with the UTF-8 BOM: every report is read, nothing rejected; JSON too."""
    spec, spec_path, reports = _setup(tmp_path)
    path = tmp_path / "bom.csv"
    path.write_bytes(b"\xef\xbb\xbf" + ("spec,y\n" + "".join(f"{r['spec']},{r['y']}\n" for r in reports)).encode())
    result = deployed.estimate_reports(spec_path, path, bootstrap=5)
    assert result.collected.accepted == len(reports) and result.collected.rejected == {}
    jpath = tmp_path / "bom.jsonl"
    jpath.write_bytes(b"\xef\xbb\xbf" + "".join(json.dumps(r) + "\n" for r in reports).encode())
    assert deployed.collect(spec, jpath).accepted == len(reports)


def test_one_garbage_first_line_does_not_refuse_the_file(tmp_path):
    """The format is decided on the first line that is a JSON object or a CSV header naming the fields: garbage
    before it is counted malformed and every valid report after it is kept (JSON lines and CSV)."""
    spec, spec_path, reports = _setup(tmp_path)
    path = _write(tmp_path / "r.jsonl", [], ["garbage line", "another, one"] +
                  [json.dumps(r) for r in reports])
    out = deployed.collect(spec, path)
    assert out.accepted == len(reports) and out.rejected == {deployed.MALFORMED: 2}
    assert out.examples[deployed.MALFORMED] == [1, 2]
    csv_path = tmp_path / "r.csv"
    csv_path.write_text("exported by the backend\nspec,y\n" + "".join(f"{r['spec']},{r['y']}\n" for r in reports))
    out = deployed.collect(spec, csv_path)
    assert out.accepted == len(reports) and out.rejected == {deployed.MALFORMED: 1}


def test_repeated_names_are_refused_counted_and_named(tmp_path, capsys):
    """A CSV header naming a column twice (spec,y,y) and a JSON line naming a key twice ("y":5,"y":7): which value is
    the report's is ambiguous, so they are counted under their own reason, never resolved to the last one."""
    spec, spec_path, reports = _setup(tmp_path)
    path = tmp_path / "dup.csv"
    path.write_text("spec,y,y\n" + "".join(f"{r['spec']},{r['y']},{r['y']}\n" for r in reports[:50]))
    out = deployed.collect(spec, path)
    assert out.accepted == 0 and out.rejected == {deployed.REPEATED: 51}
    assert main(["estimate", "--spec", str(spec_path), "--reports", str(path)]) == 2
    err = capsys.readouterr().err
    assert "51 a field named twice" in err and "Traceback" not in err
    jpath = _write(tmp_path / "dup.jsonl", reports[:50], [f'{{"spec":"{spec["digest"]}","y":5,"y":7}}'])
    out = deployed.collect(spec, jpath)
    assert out.accepted == 50 and out.rejected == {deployed.REPEATED: 1} and out.examples[deployed.REPEATED] == [51]


def test_json_lines_under_a_csv_header_are_malformed(tmp_path):
    """A CSV header followed by JSON lines: the JSON lines are malformed rows of that CSV, not 'from another spec'."""
    spec, spec_path, reports = _setup(tmp_path)
    path = _write(tmp_path / "r.csv", [], ["spec,y"] + [f"{r['spec']},{r['y']}" for r in reports[:10]] +
                  [json.dumps(r) for r in reports[10:40]])
    out = deployed.collect(spec, path)
    assert out.accepted == 10 and out.rejected == {deployed.MALFORMED: 30}


def test_olh_support_counts_summed_while_reading_give_the_same_estimate(tmp_path, monkeypatch):
    """OLH over the grid's cells keeps running support counts (flushed every SUPPORT_FLUSH reports, here 300) instead
    of every report: the estimate, its intervals and the account equal those from all reports held at once."""
    monkeypatch.setattr(deployed._account, "SUPPORT_FLUSH", 300)       # where Collected reads it
    spec, spec_path, reports = _setup(tmp_path, "olh", n=2000)
    path = _write(tmp_path / "r.jsonl", reports, ["{bad"])
    streamed = deployed.estimate_reports(spec_path, path, bootstrap=5)
    assert streamed.collected.support is not None and len(streamed.collected.seeds) == 0
    held = deployed.collect(spec, path)
    assert held.support is None and held.accepted == streamed.collected.accepted == 2000
    mech = specs.mechanism_from_spec(spec)
    direct = mech.estimate(deployed.reports_object(mech, spec, held))
    assert np.array_equal(direct.density, streamed.density)
    assert np.array_equal(np.asarray(direct.raw), np.asarray(streamed.estimate.raw))


def test_the_reader_relearns_a_layout_that_changes(tmp_path, monkeypatch):
    """A first line in one layout (spaced JSON) and the rest in another (compact): after one block mostly read line by
    line, the layout is learnt again and the rest is read by the vectorised path; the account is the reference's."""
    monkeypatch.setattr(deployed._reader, "CHUNK_BYTES", 4096)         # where the reader reads it
    spec, spec_path, reports = _setup(tmp_path, "grr", n=3000)
    path = _write(tmp_path / "r.jsonl", [], [json.dumps(reports[0])] +
                  [json.dumps(r, separators=(",", ":")) for r in reports[1:]])
    fast, slow = deployed.collect(spec, path), deployed.collect(spec, path, fast=False)
    _same(fast, slow)
    assert fast.accepted == 3000 and fast.fast_lines > 2500
