"""The CLI fuzz suite (issue 22, "Bad input on the command line"): every command takes the user's data the same
way, and hostile input -- corrupt archives, closed pipes, full disks, unwritable outputs, values that used to be
silently replaced -- ends in one line on stderr and a non-zero status, never a traceback."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from ldpviz.data import big_files as bigfile, datasets
from ldpviz.cli.commands import EXIT_BROKEN_PIPE, main
from ldpviz.cli.data_options import join_signed_values
from ldpviz.errors import LdpvizInputError

POINT_COMMANDS = ("run", "sweep", "target", "report")
TRIP_COMMANDS = ("od", "navigate")
#: The smallest arguments each command needs to get past its own checks (fast settings).
NEEDS = {"run": ["--grid", "4"], "sweep": ["--grid", "4", "--vary", "epsilon=1,2"],
         "target": ["--grid", "4", "--metric", "l1", "--at-most", "0.9", "--mechanism", "grr", "--trials", "3",
                    "--no-attacker"],
         "report": ["--grid", "4", "--mechanism", "grr", "--epsilon", "1", "--trials", "2", "--no-audit"],
         "od": ["--grid", "4", "--mechanism", "grr"], "navigate": ["--grid", "4", "--trips", "5"]}


def run_cli(*args, **kwargs):
    return subprocess.run([sys.executable, "-m", "ldpviz", *args], capture_output=True, text=True, timeout=300,
                          **kwargs)


def one_line_exit(argv, capsys, code=2):
    """Run main(argv); assert the exit code and one line on stderr without a traceback; return that line."""
    assert main(argv) == code
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    return err


@pytest.fixture
def points_csv(tmp_path):
    """300 points in Minneapolis and 20 in Chicago: a bbox around Minneapolis keeps 300 and drops 20."""
    rng = np.random.default_rng(5)
    lat = np.r_[rng.uniform(44.90, 45.03, 300), rng.uniform(41.80, 41.95, 20)]
    lon = np.r_[rng.uniform(-93.32, -93.20, 300), rng.uniform(-87.75, -87.60, 20)]
    path = tmp_path / "points.csv"
    path.write_text("lat,lon\n" + "\n".join(f"{a:.6f},{b:.6f}" for a, b in zip(lat, lon)) + "\n")
    return path


@pytest.fixture
def trips_csv(tmp_path):
    """60 people, one trip of 4 points each, inside Minneapolis, plus one row without a latitude."""
    rng = np.random.default_rng(6)
    rows = ["person,lat,lon"]
    for person in range(60):
        for _ in range(4):
            rows.append(f"p{person},{rng.uniform(44.90, 45.03):.6f},{rng.uniform(-93.32, -93.20):.6f}")
    rows.append("p60,,-93.25")
    path = tmp_path / "trips.csv"
    path.write_text("\n".join(rows) + "\n")
    return path


@pytest.fixture
def corrupt_gz(tmp_path):
    """A gzip whose deflate stream is damaged in the middle (zlib.error when unpacked)."""
    packed = bytearray(gzip.compress(b"lat,lon\n" + b"44.9,-93.2\n" * 5000))
    packed[30] ^= 0xFF
    path = tmp_path / "bad.csv.gz"
    path.write_bytes(bytes(packed))
    return path


MINNEAPOLIS = "-93.33,44.89,-93.19,45.05"


@pytest.fixture
def loud(monkeypatch):
    """Progress from the first moment (it normally starts after a second), so quick test runs show it."""
    from ldpviz.cli import data_options as cli_input
    monkeypatch.setattr(cli_input, "HEARTBEAT_DELAY", 0.0)


# ---------------------------------------------------------------- one way to give data, command by command
@pytest.mark.parametrize("command", POINT_COMMANDS + TRIP_COMMANDS)
def test_every_command_has_the_same_data_options(command, capsys):
    """--csv and --file are one option, --bbox is checked with one message, --region and --bbox exclude each
    other, and a missing file is named: the same on every command."""
    needs = NEEDS[command] + (["--out", "x.csv" if command == "sweep" else "x.html"]
                              if command in ("sweep", "report") else [])
    for option in ("--csv", "--file"):
        err = one_line_exit([command, option, "/nonexistent/where.csv", *needs], capsys)
        assert "where.csv" in err
    assert "--bbox" in one_line_exit([command, "--bbox", "1,2,3", *needs], capsys)
    assert "less than north" in one_line_exit([command, "--bbox", "-93.3,45.0,-93.2,44.9", *needs], capsys)
    assert "not both" in one_line_exit([command, "--region", "x", "--bbox", MINNEAPOLIS, *needs], capsys)
    with pytest.raises(SystemExit) as exc:      # argparse: a file and a dataset at once
        main([command, "--dataset", "gmm", "--csv", "a.csv", *needs])
    assert exc.value.code == 2 and "not allowed with" in capsys.readouterr().err


def test_run_file_and_bbox_rows_in_json(points_csv, capsys):
    """run: the bbox keeps the rows inside it, and --json carries the file's row counts by reason."""
    assert main(["run", "--file", str(points_csv), "--bbox", MINNEAPOLIS, "--grid", "4", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["rows"] == {"read": 320, "kept": 300, "dropped": {"outside the bbox": 20}}
    assert out["n_users"] == 300


def test_sweep_file_and_bbox(points_csv, tmp_path, capsys):
    out = tmp_path / "s.csv"
    assert main(["sweep", "--csv", str(points_csv), "--bbox", MINNEAPOLIS, "--grid", "4", "--vary", "epsilon=1,2",
                 "--out", str(out)]) == 0
    import pandas as pd
    df = pd.read_csv(out)
    assert len(df) == 2 and set(df["n_users"]) == {300}
    assert "Kept 300 of 320 rows" in capsys.readouterr().err


def test_target_takes_a_file(points_csv, capsys, loud):
    """target: the user's file with a bbox (issue 22.4), progress on stderr, row counts in --json."""
    assert main(["target", "--csv", str(points_csv), "--bbox", MINNEAPOLIS, *NEEDS["target"], "--json"]) == 0
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    assert out["dataset"] == "upload:points.csv" and out["rows"]["kept"] == 300
    assert out["results"][0]["mechanism"] == "grr"
    assert "target: grr answered (1/1)" in captured.err and "done in" in captured.err


def test_report_takes_a_file(points_csv, tmp_path, capsys, loud):
    out = tmp_path / "r.html"
    assert main(["report", "--file", str(points_csv), "--bbox", MINNEAPOLIS, *NEEDS["report"], "--out",
                 str(out)]) == 0
    assert out.read_text().startswith("<!DOCTYPE html>") and "points.csv" in out.read_text()
    assert "report: grr" in capsys.readouterr().err


@pytest.mark.parametrize("option", ["--file", "--csv"])
def test_od_takes_a_trip_file_and_a_bbox(option, trips_csv, capsys, loud):
    assert main(["od", option, str(trips_csv), "--bbox", MINNEAPOLIS, *NEEDS["od"], "--json"]) == 0
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    assert out["rows"]["read"] == 241 and out["rows"]["kept"] == 240 and out["rows"]["dropped"]
    assert "typed bounds" in out["region"] and out["n_users"] == 60
    assert "od: grr" in captured.err


def test_trip_columns_can_be_named(trips_csv, tmp_path, capsys):
    """A trip file whose person column has an unusual name: refused with the name asked for, read with
    --person-column."""
    renamed = tmp_path / "renamed.csv"
    renamed.write_text(trips_csv.read_text().replace("person,lat,lon", "rider,lat,lon", 1))
    assert "person" in one_line_exit(["od", "--file", str(renamed), *NEEDS["od"]], capsys)
    assert main(["od", "--file", str(renamed), "--person-column", "rider", "--bbox", MINNEAPOLIS, *NEEDS["od"],
                 "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["n_users"] == 60


def test_navigate_takes_a_trip_file(trips_csv, capsys, loud):
    assert main(["navigate", "--file", str(trips_csv), "--bbox", MINNEAPOLIS, *NEEDS["navigate"], "--json"]) == 0
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    assert out["dataset"] == "upload:trips.csv" and out["rows"]["kept"] == 240 and out["trips"] == 5
    assert "navigate: srr" in captured.err


# ---------------------------------------------------------------- corrupt archives
@pytest.mark.parametrize("command", POINT_COMMANDS + TRIP_COMMANDS)
def test_corrupt_gzip_is_one_line(command, corrupt_gz, tmp_path, capsys):
    """A gzip damaged mid-stream (zlib.error) is refused in one line by every command."""
    extra = ["--out", str(tmp_path / ("o.csv" if command == "sweep" else "o.html"))] if command in (
        "sweep", "report") else []
    err = one_line_exit([command, "--csv", str(corrupt_gz), *NEEDS[command], *extra], capsys)
    assert "cannot be unpacked" in err and "bad.csv.gz" in err


def test_corrupt_gzip_streamed_is_one_line(corrupt_gz, monkeypatch):
    """The chunked reader (files over CHUNK_BYTES) refuses the same file in one line too."""
    monkeypatch.setattr(datasets._files, "CHUNK_BYTES", 0)
    with pytest.raises(LdpvizInputError, match="cannot be unpacked"):
        datasets.load_file(corrupt_gz)


# ---------------------------------------------------------------- gzip bombs, refused while unpacking
def test_gzip_bomb_refused_by_ratio_while_unpacking(tmp_path, monkeypatch):
    """A gzip expanding past MAX_GZIP_RATIO is refused once GZIP_GUARD_BYTES are unpacked, on both paths,
    without unpacking it whole (the guard threshold is lowered so the test stays small)."""
    monkeypatch.setattr(bigfile, "GZIP_GUARD_BYTES", 1 << 20)
    path = tmp_path / "bomb.csv.gz"
    path.write_bytes(gzip.compress(b"lat,lon\n" + b"0" * 12_000_000))
    with pytest.raises(LdpvizInputError, match="decompression bomb"):
        datasets.load_file(path, max_bytes=10**9)                       # one-shot path
    monkeypatch.setattr(datasets._files, "CHUNK_BYTES", 0)
    with pytest.raises(LdpvizInputError, match="decompression bomb"):
        datasets.load_file(path, max_bytes=10**9)                       # streamed path
    genuine = tmp_path / "ok.csv.gz"                                    # a real coordinate file passes
    rng = np.random.default_rng(0)
    genuine.write_bytes(gzip.compress(("lat,lon\n" + "\n".join(
        f"{a:.6f},{b:.6f}" for a, b in zip(rng.uniform(44.9, 45, 60_000), rng.uniform(-93.3, -93.2, 60_000)))
    ).encode()))
    assert datasets.load_file(genuine, bbox=(-93.35, 44.85, -93.15, 45.05)).n == 60_000


def test_streamed_rows_refused_from_the_rate_read(tmp_path, monkeypatch):
    """A packed file of many rows is refused from the rows per share of the file read so far, before it is all
    read (MAX_ROWS lowered to keep the test small)."""
    monkeypatch.setattr(datasets._files, "CHUNK_BYTES", 0)
    monkeypatch.setattr(datasets._files, "MAX_ROWS", 1_500_000)
    rng = np.random.default_rng(1)
    block = "\n".join(f"{a:.4f},{b:.4f}" for a, b in zip(rng.uniform(44, 45, 100_000), rng.uniform(-94, -93, 100_000)))
    path = tmp_path / "many.csv.gz"
    path.write_bytes(gzip.compress(("lat,lon\n" + "\n".join([block] * 40) + "\n").encode(), compresslevel=1))
    seen = []
    with pytest.raises(LdpvizInputError, match="more than 1,500,000 rows: .* lines in its first"):
        datasets.load_file(path, chunk_rows=500_000, progress=lambda f, m: seen.append(m))
    assert not any("1,500,000" in m or "2," in m for m in seen)     # refused before 1.5 million rows were kept


# ---------------------------------------------------------------- closed pipes and full disks
def _close_failed(stream):
    """Close a stream whose writes failed: its buffer still holds the text and raises once more on close
    (in a real process main() points stdout at /dev/null instead)."""
    try:
        stream.close()
    except OSError:
        pass


@pytest.mark.parametrize("args", [["run", "--grid", "4", "--users", "500", "--json"], ["datasets", "--json"],
                                  ["sweep", "--grid", "4", "--users", "500", "--vary", "epsilon=1,2"],
                                  ["od", "--grid", "4", "--mechanism", "grr", "--json"],
                                  ["navigate", "--grid", "4", "--trips", "5", "--json"],
                                  ["target", *NEEDS["target"], "--users", "500", "--json"]])
def test_closed_pipe_in_process(args, monkeypatch, capsys):
    """Every printing command, its stdout a pipe whose reader has gone: status 141, nothing on stderr but
    progress (in-process: fast)."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    pipe = open(write_end, "w")
    monkeypatch.setattr(sys, "stdout", pipe)
    try:
        assert main(args) == EXIT_BROKEN_PIPE
    finally:
        monkeypatch.undo()
        _close_failed(pipe)
    err = capsys.readouterr().err
    assert "Traceback" not in err and "error" not in err


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("args", [["run", "--grid", "4", "--users", "500", "--json"], ["datasets", "--json"],
                                  ["sweep", "--grid", "4", "--users", "500", "--vary", "epsilon=1,2"],
                                  ["od", "--grid", "4", "--mechanism", "grr", "--json"],
                                  ["navigate", "--grid", "4", "--trips", "5", "--json"],
                                  ["target", *NEEDS["target"], "--users", "500", "--json"]])
def test_full_disk_in_process(args, monkeypatch, capsys):
    """Every printing command with stdout on a full disk: status 1 and one line naming it (in-process)."""
    full = open("/dev/full", "w")
    monkeypatch.setattr(sys, "stdout", full)
    try:
        assert main(args) == 1
    finally:
        monkeypatch.undo()
        _close_failed(full)
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == "ldpviz: error: cannot write the output: No space left on device"


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("command", ["sweep", "report"])
def test_out_on_a_full_disk(command, capsys):
    """--out /dev/full passes the up-front check (it is writable) and fails on writing: one line naming --out."""
    assert main([command, *NEEDS[command], "--users", "300", "--out", "/dev/full"]) == 2
    err = capsys.readouterr().err
    last = err.strip().splitlines()[-1]                  # after sweep's progress bar, on its own line
    assert "Traceback" not in err and "--out" in last and "No space left on device" in last


@pytest.mark.slow
@pytest.mark.parametrize("args", [["run", "--grid", "4", "--users", "500", "--json"]])
def test_closed_pipe_exits_quietly(args):
    """End to end: `ldpviz ... | head -c 10` with the reader gone: status 141 (128 + SIGPIPE), no BrokenPipeError
    trace."""
    proc = subprocess.Popen([sys.executable, "-m", "ldpviz", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()
    err = proc.stderr.read().decode()
    proc.wait(timeout=300)
    assert proc.returncode == EXIT_BROKEN_PIPE and "Traceback" not in err and "BrokenPipe" not in err


@pytest.mark.slow
@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("args", [["run", "--grid", "4", "--users", "500", "--json"],
                                  ["sweep", "--grid", "4", "--users", "500", "--vary", "epsilon=1", "--out",
                                   "/dev/full"],
                                  ["report", *NEEDS["report"], "--users", "500", "--out", "/dev/full"]])
def test_full_disk_is_one_line(args):
    """End to end, output to a full disk (/dev/full, as stdout or as --out): one line naming the failure, no
    traceback."""
    with open("/dev/full", "w") as full:
        proc = subprocess.run([sys.executable, "-m", "ldpviz", *args], stdout=full, stderr=subprocess.PIPE,
                              text=True, timeout=300)
    err = proc.stderr.strip().splitlines()
    assert proc.returncode in (1, 2) and "Traceback" not in proc.stderr
    assert "No space left on device" in err[-1] and err[-1].startswith("ldpviz: error:")


# ---------------------------------------------------------------- unwritable outputs, refused before the work
@pytest.mark.parametrize("command", ["sweep", "report"])
def test_unwritable_out_refused_before_the_work(command, tmp_path, capsys):
    """--out into a missing folder, onto a folder, or into a read-only folder: refused before anything runs
    (no progress on stderr)."""
    name = "o.csv" if command == "sweep" else "o.html"
    readonly = tmp_path / "ro"
    readonly.mkdir()
    readonly.chmod(0o500)
    cases = [(tmp_path / "missing" / name, "does not exist"), (tmp_path, "is a directory")]
    if not os.access(readonly, os.W_OK):       # root can write anywhere
        cases.append((readonly / name, "not writable"))
    for out, needle in cases:
        err = one_line_exit([command, *NEEDS[command], "--out", str(out)], capsys)
        assert needle in err and "--out" in err and "scenarios" not in err


# ---------------------------------------------------------------- no silent substitutions
@pytest.mark.parametrize("argv, needle", [
    (["target", "--epsilon", "0", "--at-most", "1", "--mechanism", "grr"], "--epsilon must be from 0.001"),
    (["run", "--partition-users", "0"], "--partition-users must be a number >= 1"),
    (["run", "--workers", "0"], "--workers"),
    (["navigate", "--threshold", "-1"], "--threshold must be a number >= 0"),
    (["navigate", "--speed", "0"], "--speed"),
    (["report", "--mechanism", "grr", "--epsilon", "1", "--r", "-1", "--out", "x.html"], "--r must be a number > 0"),
    (["report", "--mechanism", "grr", "--epsilon", "1", "--r", "nan", "--out", "x.html"], "--r"),
    (["sweep", "--vary", "epsilon=1,-1"], "--vary epsilon=-1: epsilon must be > 0"),
    (["sweep", "--vary", "grid=8,0"], "--vary grid_side=0"),
    (["sweep", "--vary", "epsilon=1", "--vary", "k=1,x", "--mechanism", "sem-geoi"], "has no parameter 'k'"),
    (["sweep", "--vary", "subset_size=2,x", "--mechanism", "sem-geoi"], "--vary subset_size=x"),
    (["od", "--users", "1000000000"], "the limit is"),
    (["od", "--dataset", "minneapolis-stops", "--users", "100000000", "--grid", "8"], "GiB"),
] + [([cmd, "--epsilon", "-inf"] + (["--at-most", "1", "--mechanism", "grr"] if cmd == "target" else [])
      + (["--mechanism", "grr", "--out", "x.html"] if cmd == "report" else []), "epsilon")
     for cmd in ("run", "sweep", "target", "report", "od", "navigate")])
def test_no_silent_substitution(argv, needle, capsys):
    """Values that used to be replaced (epsilon 0 -> 1, partition 0 -> none, threshold -1 -> all cells) or
    misread (-inf as an option) are refused in one line before any work."""
    if argv[0] == "sweep" and "--vary" in argv and "--vary epsilon=1" not in " ".join(argv) \
            and "--vary grid=" not in " ".join(argv):      # --grid beside --vary grid= is refused (issue 30.3)
        argv = argv + ["--grid", "4"]
    err = one_line_exit(argv, capsys)
    assert needle in err and "expected one argument" not in err and "scenarios" not in err


def test_signed_values_join():
    """-inf, -1e-3 and a west longitude stay values; flags stay flags."""
    options = {"--epsilon", "--bbox"}
    assert join_signed_values(["run", "--epsilon", "-inf"], options) == ["run", "--epsilon=-inf"]
    assert join_signed_values(["run", "--epsilon", "-1e-3"], options) == ["run", "--epsilon=-1e-3"]
    assert join_signed_values(["run", "--bbox", "-93.3,44.9,-93.2,45"], options) == ["run",
                                                                                     "--bbox=-93.3,44.9,-93.2,45"]
    assert join_signed_values(["run", "--epsilon", "--json"], options) == ["run", "--epsilon", "--json"]
    assert join_signed_values(["run", "--json", "-inf"], options) == ["run", "--json", "-inf"]


# ---------------------------------------------------------------- issue 30: nothing silently changed
CAPPED = "1,000,000,000 users were asked for but the region holds 51,920; all take part."


@pytest.mark.parametrize("command", ["run", "target"])
def test_capped_users_said_on_stdout_and_in_json(command, capsys, loud):
    """Every command that caps --users at the region's size says so the way `run` does, in text and in --json."""
    argv = [command, *NEEDS[command], "--users", "1000000000"]
    assert main(argv) == 0
    assert f"note: {CAPPED}" in capsys.readouterr().out
    assert main(argv + ["--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert CAPPED in out["notes"]
    taking_part = out["n_users"] if command == "run" else out["results"][0]["n_users"]
    assert taking_part == 51_920


def test_capped_users_said_by_sweep_report_and_trip_commands(tmp_path, capsys, loud):
    """sweep (CSV on stdout stays CSV: the note goes to stderr), report (its HTML), od and navigate (trips)."""
    assert main(["sweep", "--grid", "4", "--vary", "users=100,1000000000"]) == 0
    assert f"note: {CAPPED}" in capsys.readouterr().err
    out = tmp_path / "r.html"
    assert main(["report", *NEEDS["report"], "--users", "1000000000", "--out", str(out)]) == 0
    assert CAPPED in out.read_text()
    assert main(["od", "--grid", "4", "--mechanism", "grr", "--users", "100000", "--json"]) == 0
    od = json.loads(capsys.readouterr().out)
    held = int(od["notes"][0].split("holds ")[1].split(";")[0].replace(",", ""))   # OD pairs in the region
    assert od["notes"] == [f"100,000 trips were asked for but the region holds {held:,}; all take part."]
    assert od["n_users"] <= held < 100_000
    assert main(["navigate", "--dataset", "atlantic-storms", "--grid", "4", "--trips", "2000", "--json"]) == 0
    nav = json.loads(capsys.readouterr().out)
    assert nav["notes"] == [f"2,000 trips that change cell were asked for but the region holds {nav['trips']:,}; "
                            "all take part."]


@pytest.mark.parametrize("spec, needle", [("epsilon=1,", "empty value"), ("epsilon=", "empty value"),
                                          ("epsilon=1,,2", "empty value"), ("=1,2", "empty name")])
def test_sweep_refuses_an_empty_vary_value(spec, needle, capsys):
    """`--vary epsilon=1,` used to run one scenario and drop the empty value without a word."""
    err = one_line_exit(["sweep", "--grid", "4", "--vary", spec], capsys)
    assert needle in err and spec in err and "scenarios" not in err


def test_sweep_refuses_a_name_varied_twice(capsys):
    """The second --vary of a name used to replace the first silently."""
    err = one_line_exit(["sweep", "--grid", "4", "--vary", "epsilon=1", "--vary", "epsilon=2"], capsys)
    assert "already varied" in err


@pytest.mark.parametrize("argv, needle", [
    (["run", "--users", "5000", "--grid", "16", "--region-epsilon", "-1"], "--region-epsilon: epsilon must be > 0"),
    (["run", "--grid", "4", "--region-epsilon", "nan"], "--region-epsilon"),
    (["run", "--grid", "4", "--region-epsilon", "0.8"], "--region-epsilon acts only on a file"),
    (["run", "--grid", "4", "--region-rule", "public-tiles"], "--region-rule acts only on a file"),
    (["run", "--grid", "4", "--max-bytes", "99999999999999999999999"], "from 1 to 1,099,511,627,776 (1 TiB)"),
    (["run", "--grid", "4", "--max-bytes", "0"], "--max-bytes must be"),
    (["run", "--grid", "4", "--max-bytes", "1000"], "--max-bytes acts only on a file"),
    (["run", "--grid", "4", "--lat-column", "y"], "--lat-column acts only on a file"),
    (["run", "--grid", "4", "--users", "1000", "--partition-users", "500", "--region-epsilon", "1"],
     "--region-epsilon acts only on a file"),
    (["sweep", "--grid", "4", "--vary", "epsilon=1,2", "--lon-column", "x"], "--lon-column acts only on a file"),
    (["target", *NEEDS["target"], "--region-rule", "private-tiles"], "--region-rule acts only on a file"),
    (["target", "--grid", "4", "--metric", "l1", "--at-most", "0.9", "--mechanism", "grr", "--no-attacker",
      "--r", "100"], "--r is the attacker's distance; with --no-attacker it would do nothing"),
    (["target", "--grid", "4", "--metric", "l1", "--at-most", "0.9", "--mechanism", "grr", "--trials", "5",
      "--confidence", "1"], "--confidence must be from 0.5 to below 1"),
    (["report", *NEEDS["report"], "--max-bytes", "5", "--out", "x.html"], "--max-bytes acts only on a file"),
    (["od", *NEEDS["od"], "--person-column", "who"], "--person-column acts only on a file"),
    (["navigate", *NEEDS["navigate"], "--time-column", "t"], "--time-column acts only on a file"),
    (["od", *NEEDS["od"], "--max-bytes", "99999999999999999999999"], "(1 TiB)"),
])
def test_options_that_cannot_act_are_refused(argv, needle, capsys):
    """An option that would do nothing here, or a value out of range, is refused in one line before any work
    (`--region-epsilon -1` used to run and show region_epsilon 0.0 in the JSON)."""
    err = one_line_exit(argv, capsys)
    assert needle in err, err


def test_region_options_refused_where_the_region_is_given(points_csv, capsys):
    """With --bbox the box is the region: the rule choosing a file's region cannot act; public tiles spend no
    epsilon0, so --region-epsilon cannot act there either. Given where they act, they act and are stated."""
    err = one_line_exit(["run", "--grid", "4", "--csv", str(points_csv), f"--bbox={MINNEAPOLIS}",
                         "--region-epsilon", "1"], capsys)
    assert "with --bbox the region is the box" in err
    err = one_line_exit(["run", "--grid", "4", "--csv", str(points_csv), "--region-rule", "public-tiles",
                         "--region-epsilon", "1"], capsys)
    assert "public-tiles spends none" in err
    err = one_line_exit(["run", "--grid", "4", "--csv", str(points_csv), "--max-bytes", str(2**41)], capsys)
    assert "1 TiB" in err


def test_od_states_a_top_k_beyond_the_pairs_that_occur(capsys):
    """top-k precision over more pairs than occur used to rank fewer without a word."""
    assert main(["od", "--grid", "4", "--mechanism", "grr", "--users", "5", "--top-k", "100000", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert any(n.startswith("top-100000 was asked for but") for n in out["notes"]), out["notes"]


# ---------------------------------------------------------------- issue 30.4: a clean stop
def _serving(port: int) -> bool:
    import socket
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex(("127.0.0.1", port)) == 0


def _streamlit_on(port: int) -> list[int]:
    """Processes whose command line runs streamlit on ``port`` (an orphan would be one)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                argv = fh.read().split(b"\0")
        except OSError:
            continue
        if b"streamlit" in b" ".join(argv) and str(port).encode() in argv:
            found.append(int(pid))
    return found


@pytest.mark.slow
@pytest.mark.xdist_group("browser")    # starts a dashboard server, as the browser tests do: one at a time
@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads /proc to find an orphaned server")
def test_app_stopped_with_sigterm_leaves_nothing_running():
    """`ldpviz app` stopped as a service manager stops it (SIGTERM to its process): nothing is left listening on
    the port and no streamlit process is left (the launcher used to keep Streamlit as a child it never told)."""
    import signal
    import time
    import urllib.request

    from ldpviz.app import serve

    port = serve.free_port()
    proc = subprocess.Popen([sys.executable, "-m", "ldpviz", "app", "--port", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=serve.ROOT,
                            env={**os.environ, "PYTHONPATH": str(serve.ROOT)})
    try:
        deadline = time.monotonic() + 90
        healthy = False
        while time.monotonic() < deadline and proc.poll() is None and not healthy:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=1) as resp:
                    healthy = resp.status == 200
            except OSError:
                time.sleep(0.2)
        assert healthy, f"the dashboard did not come up: {proc.stderr.read().decode(errors='replace')[-2000:]}"
        assert _streamlit_on(port), "no streamlit process found serving the port"
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and (_serving(port) or _streamlit_on(port)):
            time.sleep(0.2)
        assert not _serving(port), f"something still listens on port {port} after SIGTERM"
        assert not _streamlit_on(port), f"streamlit processes left after SIGTERM: {_streamlit_on(port)}"
    finally:
        for pid in _streamlit_on(port) + ([proc.pid] if proc.poll() is None else []):
            try:
                os.kill(pid, 9)
            except OSError:
                pass


# ---------------------------------------------------------------- issue 30.5: big synthetic sets in bounded memory
def _limited(gib: float):
    """preexec_fn: an address-space limit (as ``ulimit -v``) for the child."""
    import resource

    def apply():
        size = int(gib * 2**30)
        resource.setrlimit(resource.RLIMIT_AS, (size, size))
    return apply


def test_big_synthetic_run_is_chunked_over_the_same_points(monkeypatch, capsys):
    """Above the chunked threshold `run` draws, bins and perturbs chunk by chunk; the points are generate()'s
    (same true density, exactly) and the output says how it ran (small chunks stand in for 1M-point ones)."""
    from ldpviz import experiment
    from ldpviz.data import synthetic
    from ldpviz.experiment import chunked

    monkeypatch.setattr(synthetic, "CHUNK", 700)
    monkeypatch.setattr(chunked, "CHUNKED_ABOVE", 2_000)
    assert main(["run", "--dataset", "normal:n=5000", "--grid", "8", "--users", "9000", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["n_users"] == 5000
    assert any("chunk by chunk (8 chunks of up to 700 points)" in n for n in out["notes"]), out["notes"]
    assert "9,000 users were asked for but the region holds 5,000; all take part." in out["notes"]
    scenario = experiment.Scenario(dataset="normal:n=5000", mechanism="grr", epsilon=1.0, grid_side=8)
    assert chunked.applies(scenario) and not chunked.applies(scenario.with_(mechanism="privag"))
    assert not chunked.applies(scenario.with_(n_users=100))          # a subsample needs every point: in memory
    whole = experiment.run(scenario, synthetic.generate("normal", 5000))
    np.testing.assert_array_equal(chunked.run(scenario).true_density, whole.true_density)


def test_big_synthetic_set_that_cannot_fit_is_refused_up_front():
    """A mechanism that needs every point in memory (privag: two rounds) on 20M points under a 1.5 GiB
    address-space limit: refused in one line stating the memory it needs, not an ArrayMemoryError."""
    proc = subprocess.run([sys.executable, "-m", "ldpviz", "run", "--mechanism", "privag", "--dataset",
                           "normal:n=20000000"], capture_output=True, text=True, timeout=300,
                          preexec_fn=_limited(1.5))
    assert proc.returncode == 2, proc.stderr[-2000:]
    err = proc.stderr.strip()
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    assert "needs about 1.9 GiB (100 bytes a point)" in err
    assert "address-space limit of 1.5 GiB" in err or "memory available on this machine" in err   # the tighter


@pytest.mark.slow
def test_big_synthetic_run_fits_a_small_address_space():
    """`run --dataset normal:n=11000000` (just above the chunked threshold) under a 1.5 GiB address-space limit:
    the in-memory path needs about 1 GiB for the points alone plus the interpreter, the chunked one a bounded
    amount whatever n (the 100M run's peak is measured in bench/bench_loading.py, docs/data-loading.md)."""
    proc = subprocess.run([sys.executable, "-m", "ldpviz", "run", "--dataset", "normal:n=11000000", "--json"],
                          capture_output=True, text=True, timeout=600, preexec_fn=_limited(1.5))
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout)
    assert out["n_users"] == 11_000_000 and any("chunk by chunk (11 chunks" in n for n in out["notes"])


def test_data_options_not_given_resolve_to_the_defaults_their_help_states():
    """--max-bytes, --region-rule and --region-epsilon default to None (not given, so option_checks can refuse
    them where they cannot act); what None resolves to is what each help text says."""
    import argparse

    from ldpviz.cli import data_options, option_checks
    from ldpviz.mechanisms.fo.private_region import DEFAULT_REGION_EPSILON, PRIVATE_TILES

    p = argparse.ArgumentParser()
    data_options.add_data_arguments(p)
    args = p.parse_args([])
    assert (args.max_bytes, args.region_rule, args.region_epsilon) == (None, None, None)
    assert option_checks.file_limits(args, data_options.DEFAULT_MAX_BYTES) == (
        data_options.DEFAULT_MAX_BYTES, PRIVATE_TILES, DEFAULT_REGION_EPSILON)
    helps = {a.dest: a.help for a in p._actions}
    assert f"default {data_options.DEFAULT_MAX_BYTES // 2**20:,} MiB" in helps["max_bytes"]
    assert f"(default {DEFAULT_REGION_EPSILON:g})" in helps["region_epsilon"]
    assert f"'{PRIVATE_TILES}' (default)" in helps["region_rule"]


@pytest.mark.parametrize("argv, needle", [
    (["--epsilon", "3", "--vary", "epsilon=1,2"], "--epsilon 3.0 would do nothing: --vary epsilon sets it"),
    (["--grid", "8", "--vary", "grid=4,8"], "--grid 8 would do nothing: --vary grid sets it"),
    (["--seed", "3", "--vary", "seed=1,2"], "--seed 3 would do nothing"),
    (["--users", "300", "--vary", "users=100,200"], "--users 300 would do nothing"),
    (["--mechanism", "sem-geoi", "--param", "k=2", "--vary", "k=1,3"], "--param k=2 would do nothing"),
])
def test_sweep_refuses_an_option_its_vary_replaces(argv, needle, capsys):
    """`sweep --epsilon 3 --vary epsilon=1,2` ran epsilon 1 and 2 and dropped the 3 without a word."""
    err = one_line_exit(["sweep", *argv], capsys)
    assert needle in err and "scenarios" not in err


# ---------------------------------------------------------------- issue 39: the last hostile cases
#: Each command's required options (the empty-value walk puts the option under test after them).
REQUIRED = {"target": ["--at-most", "1"], "report": ["--mechanism", "grr", "--epsilon", "1", "--out", "x.html"],
            "deploy": ["--mechanism", "grr", "--epsilon", "1", "--out", "dep"],
            "estimate": ["--spec", "c.json", "--reports", "r.csv"]}


def _value_options():
    """(command, option, action) for every option of every command that takes text (not a number or a flag)."""
    from ldpviz.cli.commands import _subcommands, build_parser
    for name, sub in _subcommands(build_parser()).items():
        for action in sub._actions:
            if action.option_strings and action.nargs != 0 and action.type in (None, str):
                yield name, action.option_strings[0], action


@pytest.mark.parametrize("command, option", [(c, o) for c, o, _ in _value_options()])
def test_every_text_option_refuses_an_empty_value(command, option, capsys):
    """`run --bbox ''` and `run --csv ''` ran the bundled dataset without a word; `app --address ''` served on
    every interface. Every text option of every command refuses an empty (or blank) value before any work,
    through argparse's choices or in one line; only an option whose own default is empty takes it as that."""
    action = next(a for c, o, a in _value_options() if (c, o) == (command, option))
    for empty in ("", "  "):
        argv = [command, *REQUIRED.get(command, []), option, empty]
        if action.default == "":
            continue                                   # --repeats-basis: empty is its default (no reason given)
        if action.choices:
            with pytest.raises(SystemExit) as exc:
                main(argv)
            assert exc.value.code == 2 and "invalid choice" in capsys.readouterr().err
        else:
            err = one_line_exit(argv, capsys)
            assert err == f"ldpviz: error: {option} is empty; give a value or leave the option out (an empty value " \
                          "never stands for the default)"


@pytest.mark.parametrize("command, needs", [("run", []), ("sweep", ["--vary", "epsilon=1,2"]),
                                            ("od", []), ("navigate", []), ("target", REQUIRED["target"]),
                                            ("report", REQUIRED["report"]), ("estimate", REQUIRED["estimate"])])
def test_every_seed_option_refuses_a_negative_seed_the_same_way(command, needs, capsys):
    """`od --seed -1 --json` reached numpy as a traceback; every --seed is one argparse type (one message)."""
    with pytest.raises(SystemExit) as exc:
        main([command, *needs, "--seed", "-1"])
    err = capsys.readouterr().err.strip()
    assert exc.value.code == 2 and len(err.splitlines()) == 1
    assert "argument --seed: must be a whole number >= 0 (random generators take no negative seed), got '-1'" in err
    from ldpviz.cli.commands import _subcommands, build_parser
    seeds = {name for name, sub in _subcommands(build_parser()).items()
             for a in sub._actions if "--seed" in a.option_strings}
    assert seeds == {"run", "sweep", "od", "navigate", "target", "report", "estimate"}


@pytest.mark.parametrize("command, needs, low", [("run", [], 1), ("sweep", ["--vary", "epsilon=1,2"], 1),
                                                 ("od", [], 1), ("target", REQUIRED["target"], 3),
                                                 ("report", REQUIRED["report"], 2)])
def test_every_trials_option_is_capped_by_the_one_limit(command, needs, low, capsys):
    """`od --trials 101` ran 210 s where run and sweep stop at 100: one cap (ldpviz.limits) for every command,
    and the core's od_trials refuses beyond it too."""
    from ldpviz import experiment, limits
    assert experiment.MAX_TRIALS is limits.MAX_TRIALS == 100
    for value in (str(low - 1), "101"):
        with pytest.raises(SystemExit) as exc:
            main([command, *needs, "--trials", value])
        assert exc.value.code == 2
        assert f"--trials: must be a whole number from {low} to 100" in capsys.readouterr().err
    from ldpviz.flows import od
    with pytest.raises(LdpvizInputError, match="from 1 to 100"):
        od.od_trials("atlantic-storms", "grr", 1.0, 4, trials=101)


@pytest.mark.parametrize("argv, needle", [
    (["--delay", "1e308"], "give a delay of at most"), (["--speed", "1e-300"], "give a higher speed")])
def test_navigate_refuses_route_times_that_overflow(argv, needle, capsys):
    """`navigate --delay 1e308` was an IndexError: Dijkstra's route times overflowed to infinity, every goal
    looked unreachable and the route walk indexed scipy's -9999 'no predecessor'. Route times are bounded where a
    float still counts whole seconds; the largest delay allowed still runs."""
    assert main(["navigate", *NEEDS["navigate"], *argv]) == 2
    full = capsys.readouterr().err
    err = full.strip().splitlines()[-1]                  # after the heartbeat's line, if the run took a second
    assert "Traceback" not in full and err.startswith("ldpviz: error: route times too large to count")
    assert needle in err
    from ldpviz.flows import navigation
    largest = float(err.split("at most ")[1].split(" s")[0]) if "at most" in err else None
    if largest is not None:
        assert main(["navigate", *NEEDS["navigate"], "--delay", f"{largest * 0.99:g}", "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["trips"] == 5
    assert navigation.MAX_ROUTE_S == 2.0**53


@pytest.mark.parametrize("address, needle", [("999.1.1.1", "is not an address this machine can listen on"),
                                             ("not an address", "is not an address this machine can listen on"),
                                             ("192.0.2.1", "cannot listen there")])
def test_app_refuses_an_address_it_cannot_serve_before_printing_a_url(address, needle, capsys):
    """`app --address 999.1.1.1` printed its URL and then died in a socket.gaierror traceback; 192.0.2.1 (a
    documentation address, on no interface here) could not be bound either. Refused in one line, no URL."""
    err = one_line_exit(["app", "--address", address, "--port", "8599"], capsys)
    assert needle in err and "serving" not in err and "http://" not in err


def test_app_refuses_a_port_in_use(capsys):
    import socket
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        err = one_line_exit(["app", "--port", str(port)], capsys)
    assert f"something already listens on 127.0.0.1:{port}" in err


def test_closed_stdout_in_process(monkeypatch, capsys):
    """stdout closed by the shell (`>&-`: Python's sys.stdout is None): print() dropped the JSON without a word
    and the flush raised AttributeError. Status 1 and one line; a command printing nothing on stdout runs."""
    monkeypatch.setattr(sys, "stdout", None)
    assert main(["datasets", "--json"]) == 1
    assert capsys.readouterr().err == "ldpviz: error: cannot write the output: standard output is closed\n"
    monkeypatch.setattr(sys, "stdout", None)
    with pytest.raises(SystemExit) as exc:             # argparse's refusals still go to stderr
        main(["run", "--epsilon", "x"])
    assert exc.value.code == 2 and "invalid float value" in capsys.readouterr().err


def test_closed_stdout_end_to_end():
    """`ldpviz run --json >&-`: one line on stderr, status 1, no traceback."""
    proc = subprocess.run([sys.executable, "-m", "ldpviz", "run", "--grid", "4", "--users", "500", "--json"],
                          stderr=subprocess.PIPE, text=True, timeout=300, preexec_fn=lambda: os.close(1))
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == "ldpviz: error: cannot write the output: standard output is closed"
    assert "Traceback" not in proc.stderr


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("argv", [["run", "--help"], ["--help"], ["target", "--help"]])
def test_help_on_a_full_disk(argv):
    """`ldpviz run --help > /dev/full` exited 0 having written nothing (argparse swallows the failed write):
    status 1 and one line, as for any other output."""
    with open("/dev/full", "w") as full:
        proc = subprocess.run([sys.executable, "-m", "ldpviz", *argv], stdout=full, stderr=subprocess.PIPE,
                              text=True, timeout=120)
    assert proc.returncode == 1
    assert proc.stderr == "ldpviz: error: cannot write the output: No space left on device\n"


def test_help_into_a_closed_pipe_in_process(monkeypatch, capsys):
    read_end, write_end = os.pipe()
    os.close(read_end)
    pipe = open(write_end, "w")
    monkeypatch.setattr(sys, "stdout", pipe)
    try:
        assert main(["run", "--help"]) == EXIT_BROKEN_PIPE
    finally:
        monkeypatch.undo()
        _close_failed(pipe)
    assert capsys.readouterr().err == ""


def test_duplicate_column_names_are_refused_naming_them(trips_csv, points_csv, tmp_path, capsys):
    """A trips file with two `person` columns ran on the first without a word (pandas renames the second
    'person.1'); points files with a second lat or lon, and Parquet files, the same. Unnamed columns (trailing
    separators) may repeat."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    twice = tmp_path / "twice.csv"
    twice.write_text(trips_csv.read_text().replace("person,lat,lon\n", "person,lat,lon,person\n", 1)
                     .replace("\n", ",x\n").replace("person,lat,lon,person,x\n", "person,lat,lon,person\n", 1))
    err = one_line_exit(["od", "--file", str(twice), *NEEDS["od"]], capsys)
    assert "'twice.csv' names the column 'person' more than once" in err
    lats = tmp_path / "lats.csv"
    lats.write_text(points_csv.read_text().replace("lat,lon\n", "lat,lon,lat\n", 1).replace("\n", ",1\n")
                    .replace("lat,lon,lat,1\n", "lat,lon,lat\n", 1))
    assert "names the column 'lat' more than once" in one_line_exit(["run", "--csv", str(lats), "--grid", "4"],
                                                                       capsys)
    table = pa.table([pa.array(["a", "b"]), pa.array([44.95, 44.96]), pa.array([-93.25, -93.2]),
                      pa.array(["c", "d"]), pa.array([1.0, 2.0])], names=["person", "lat", "lon", "person", "lon"])
    pq.write_table(table, tmp_path / "twice.parquet")
    err = one_line_exit(["od", "--file", str(tmp_path / "twice.parquet"), *NEEDS["od"]], capsys)
    assert "names the columns 'person', 'lon' more than once" in err
    err = one_line_exit(["run", "--file", str(tmp_path / "twice.parquet"), "--grid", "4"], capsys)
    assert "names the columns 'person', 'lon' more than once" in err
    trailing = tmp_path / "trailing.csv"
    trailing.write_text(points_csv.read_text().replace("\n", ",,\n"))
    assert main(["run", "--csv", str(trailing), "--bbox", MINNEAPOLIS, "--grid", "4", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["n_users"] == 300


def test_duplicate_column_names_differing_in_case_or_spaces_are_refused(trips_csv, points_csv, tmp_path, capsys):
    """Column lookup ignores case and surrounding spaces, so the duplicate check does too (issue 39.9): a trips file
    headed `person;trip;lat;lon;Person` ran on 'person' without a word, a points file `lat,lon,LAT` on 'lat' with
    only a note. Both are refused naming both spellings, for trips and points, CSV and Parquet, every command."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    body = trips_csv.read_text().splitlines()[1:]
    semi = tmp_path / "semi.csv"
    semi.write_text("person;trip;lat;lon;Person\n" + "".join(
        f"{person};t1;{lat};{lon};other\n" for person, lat, lon in (row.split(",") for row in body)))
    want = "names the column 'person' (as 'person' and 'Person') more than once; column names are matched ignoring"
    for command in ("od", "navigate"):
        err = one_line_exit([command, "--file", str(semi), *NEEDS[command]], capsys)
        assert f"'semi.csv' {want}" in err, err
    lats = tmp_path / "lats.csv"
    lats.write_text(points_csv.read_text().replace("lat,lon\n", "lat,lon, LAT \n", 1).replace("\n", ",1\n")
                    .replace("lat,lon, LAT ,1\n", "lat,lon, LAT \n", 1))
    for command in ("run", "sweep", "report"):
        out = ["--out", str(tmp_path / "r.html")] if command == "report" else []
        err = one_line_exit([command, "--csv", str(lats), *NEEDS[command], *out], capsys)
        assert "names the column 'lat' (as 'lat' and 'LAT') more than once; column names are matched" in err, err
    table = pa.table([pa.array([44.95, 44.96]), pa.array([-93.25, -93.2]), pa.array([1.0, 2.0])],
                     names=["lat", "Lon", "lon"])
    pq.write_table(table, tmp_path / "case.parquet")
    err = one_line_exit(["run", "--file", str(tmp_path / "case.parquet"), "--grid", "4"], capsys)
    assert "names the column 'Lon' (as 'Lon' and 'lon') more than once" in err, err
    distinct = tmp_path / "distinct.csv"                 # different names that merely contain another are fine
    distinct.write_text(points_csv.read_text().replace("lat,lon\n", "lat,lon,latitude_note\n", 1)
                        .replace("\n", ",1\n").replace("lat,lon,latitude_note,1\n", "lat,lon,latitude_note\n", 1))
    assert main(["run", "--csv", str(distinct), "--bbox", MINNEAPOLIS, "--grid", "4", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["n_users"] == 300


def test_sweep_interrupted_on_its_own_line(monkeypatch, capsys):
    """Ctrl+C during a sweep: 'interrupted' starts its own line, not the end of the progress bar."""
    from ldpviz import experiment

    def interrupted(scenario, vary, *, progress, **kwargs):
        progress(1, 3)
        raise KeyboardInterrupt
    monkeypatch.setattr(experiment, "sweep", interrupted)
    assert main(["sweep", "--grid", "4", "--vary", "epsilon=1,2,3"]) == 130
    assert capsys.readouterr().err.endswith("1/3 scenarios\nldpviz: interrupted\n")


@pytest.mark.slow
def test_target_stops_at_once_on_ctrl_c():
    """Ctrl+C on `ldpviz target` with two goal seeks on threads: the process used to wait 11.5 s for the running
    seeks (Python joins a pool's threads at exit). It now leaves without them: well before either seek could
    finish (each takes tens of seconds here), with status 130 and one line."""
    import signal
    import time
    # Ctrl+C's default action restored in the child: a process started in the background by a non-interactive shell
    # (`make test &`) inherits SIGINT ignored, and Python then installs no handler for it
    proc = subprocess.Popen([sys.executable, "-m", "ldpviz", "target", "--metric", "w2_m", "--at-most", "300",
                             "--mechanism", "dam", "--mechanism", "planar-laplace", "--grid", "16"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    seen = ""
    while "2 at a time" not in seen:                   # the heartbeat: both seeks are running
        seen += proc.stderr.read(1)
        assert proc.poll() is None, seen
    proc.send_signal(signal.SIGINT)
    t0 = time.monotonic()
    err = proc.stderr.read()
    proc.wait(timeout=120)
    waited = time.monotonic() - t0
    assert proc.returncode == 130 and err.endswith("ldpviz: interrupted\n") and "Traceback" not in err
    assert waited < 5.0, f"took {waited:.1f} s to stop"


def test_printed_commands_quote_every_path(tmp_path, capsys):
    """`deploy --out 'dep$(...)'` printed its `ldpviz estimate` follow-up with the path bare: pasted into a shell
    it would run the `$(...)`. Printed commands are formatted by one helper (ldpviz.shell.command_line); the printed
    line, run by a shell, gets the path as one word and runs nothing else."""
    from ldpviz.shell import command_line
    assert command_line(["ldpviz", "run", "--bbox=-93.3,44.9,-93.2,45", "--csv", "my data.csv"]) == \
        "ldpviz run --bbox=-93.3,44.9,-93.2,45 --csv 'my data.csv'"
    out = tmp_path / "dep$(touch pwned) x"
    assert main(["deploy", "--mechanism", "grr", "--epsilon", "1", "--grid", "4", f"--bbox={MINNEAPOLIS}",
                 "--out", str(out)]) == 0
    line = next(s for s in capsys.readouterr().out.splitlines() if "estimate with:" in s).split("estimate with: ")[1]
    import shlex
    assert shlex.split(line) == ["ldpviz", "estimate", "--spec", str(out / "collection.json"), "--reports", "REPORTS",
                                 "--out", "RESULT"]
    shell = subprocess.run(["bash", "-c", f"{shlex.quote(sys.executable)} -m {line}"], cwd=tmp_path,
                           capture_output=True, text=True, timeout=300,
                           env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert not (tmp_path / "pwned").exists()
    assert shell.returncode == 2 and "REPORTS" in shell.stderr and "Traceback" not in shell.stderr, shell.stderr
