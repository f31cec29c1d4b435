"""The ldpviz command line: JSON output, listings and one-line error exits."""

import json
import subprocess
import sys

import numpy as np
import pytest

from ldpviz.cli.commands import main


def run_cli(*args):
    proc = subprocess.run([sys.executable, "-m", "ldpviz", *args], capture_output=True, text=True, timeout=300)
    return proc.returncode, proc.stdout, proc.stderr


def test_run_exact_json_reports_zero_w2():
    """The issue's acceptance check: exact on the bundled data at d = 32 gives w2_m = 0."""
    code, out, err = run_cli("run", "--dataset", "minneapolis-stops", "--mechanism", "exact", "--grid", "32",
                             "--json")
    assert code == 0, err
    data = json.loads(out)
    for key in ("w2_m", "w2_cells", "aqe", "kl", "l1", "n_users", "grid", "epsilon", "mechanism", "seconds"):
        assert key in data
    assert data["w2_m"] == pytest.approx(0, abs=1e-6) and data["grid"] == 32


def test_run_grr_json_reports_positive_w2(capsys):
    assert main(["run", "--mechanism", "grr", "--grid", "32", "--users", "5000", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["w2_m"] > 0 and data["mechanism"] == "grr" and data["n_users"] == 5000


def test_listings(capsys):
    assert main(["datasets"]) == 0
    out = capsys.readouterr().out
    assert "minneapolis-stops" in out and "szipf" in out
    assert main(["mechanisms"]) == 0
    out = capsys.readouterr().out
    assert "grr" in out and "LDP" in out and "projection" in out


@pytest.mark.parametrize("args, needle", [
    (["run", "--epsilon", "-1"], "epsilon must be > 0"),
    (["run", "--epsilon", "abc"], "--epsilon"),
    (["run", "--mechanism", "nope"], "unknown mechanism"),
    (["run", "--grid", "0"], "grid side"),
    (["run", "--grid", "100000"], "too large"),
    (["run", "--dataset", "nope"], "nope"),
    (["run", "--region", "atlantis"], "no region preset"),
    (["run", "--bbox", "1,2,3"], "--bbox"),
    (["run", "--param", "radius"], "key=value"),
    (["run", "--csv", "/nonexistent/file.csv"], "file.csv"),
    (["sweep", "--vary", "epsilon"], "--vary"),
])
def test_bad_arguments_exit_2_with_one_line(args, needle, capsys):
    """Bad arguments: exit status 2, one line on stderr naming the problem, no traceback."""
    with pytest.raises(SystemExit) as exc:
        code = main(args)
        raise SystemExit(code)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_sweep_writes_csv(tmp_path):
    out = tmp_path / "r.csv"
    code, _, err = run_cli("sweep", "--mechanism", "grr", "--grid", "8", "--users", "2000",
                           "--vary", "epsilon=0.5,4", "--trials", "2", "--out", str(out))
    assert code == 0, err
    import pandas as pd
    df = pd.read_csv(out)
    assert len(df) == 4 and "w2_m" in df.columns
    assert "2/2" in err  # progress bar reached the end


def _national_csv(path, n=20_000, seed=7):
    """A US-wide file with a few hundred points in Minneapolis (issue 14's national file with a city bbox)."""
    rng = np.random.default_rng(seed)
    lon = np.concatenate([rng.uniform(-124.7, -67.0, n), rng.uniform(-93.3, -93.2, 400)])
    lat = np.concatenate([rng.uniform(24.6, 49.3, n), rng.uniform(44.9, 45.04, 400)])
    path.write_text("lat,lon\n" + "\n".join(f"{a:.6f},{b:.6f}" for a, b in zip(lat, lon)) + "\n")
    return path


def test_readme_bbox_command_line_exactly(tmp_path, monkeypatch):
    """Issue 14.1: the README's command line, a west longitude first, runs; the bbox filters rows before
    framing (a national file would not frame) and the kept/dropped counts are printed."""
    _national_csv(tmp_path / "my_points.csv")
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli("run", "--csv", "my_points.csv", "--bbox", "-93.33,44.89,-93.19,45.05",
                             "--mechanism", "grr", "--epsilon", "2")
    assert code == 0, err
    assert "Kept " in err and "outside the bbox" in err
    assert "grr at epsilon = 2" in out and "per row (event-level)" in out
    assert "scope: The exact number of users" in out


def test_bbox_forms_and_errors(capsys):
    """--bbox=VALUE and --bbox VALUE both work; bad boxes exit 2 with one line naming --bbox."""
    from ldpviz.cli.commands import join_signed_values
    assert join_signed_values(["run", "--bbox", "-93.3,44.9,-93.2,45"]) == ["run", "--bbox=-93.3,44.9,-93.2,45"]
    assert join_signed_values(["run", "--bbox", "--json"]) == ["run", "--bbox", "--json"]
    assert main(["run", "--bbox", "-93.30,44.93,-93.22,45.00", "--users", "2000", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["n_users"] == 2000
    assert main(["run", "--bbox", "-93.30,45.00,-93.22,44.93"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--bbox" in err and "less than north" in err
    assert main(["run", "--bbox", "-93.22,44.93,-93.30,45.00"]) == 2
    assert "swap west and east" in capsys.readouterr().err
