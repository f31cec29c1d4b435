"""The ldpviz command line: JSON output, listings and one-line error exits."""

import json
import subprocess
import sys

import pytest

from ldpviz.cli import main


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
