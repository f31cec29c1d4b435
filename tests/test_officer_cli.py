"""ldpviz target / ldpviz report on the command line."""

from __future__ import annotations

import json

import pytest

from ldpviz.cli import main


def test_target_json_per_mechanism(capsys):
    code = main(["target", "--grid", "8", "--users", "2000", "--metric", "l1", "--at-most", "0.6", "--mechanism", "grr",
                 "--mechanism", "planar-laplace", "--trials", "3", "--json"])
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    assert out["mode"] == "epsilon" and [r["mechanism"] for r in out["results"]] == ["grr", "planar-laplace"]
    for r in out["results"]:
        assert r["reached"] and r["mean"] <= 0.6 and r["ci_low"] <= r["mean"] <= r["ci_high"]
    assert out["results"][1]["epsilon_unit"] == "per km"
    assert out["results"][0]["attacker_error_m"] > 0


def test_target_users_mode_and_unreachable(capsys):
    assert main(["target", "--grid", "8", "--metric", "l1", "--at-most", "0.5", "--epsilon", "3", "--mechanism", "grr",
                 "--trials", "2", "--no-attacker"]) == 0
    assert "users at epsilon = 3" in capsys.readouterr().out
    assert main(["target", "--grid", "8", "--metric", "l1", "--at-most", "0.0001", "--epsilon", "0.05",
                 "--mechanism", "grr", "--trials", "2", "--no-attacker"]) == 0
    assert "more users than the data holds" in capsys.readouterr().out


def test_target_json_fast(capsys):
    assert main(["target", "--grid", "8", "--users", "2000", "--metric", "aqe", "--at-most", "0.3", "--mechanism", "grr",
                 "--trials", "2", "--json"]) == 0
    (r,) = json.loads(capsys.readouterr().out)["results"]
    assert r["reached"] and r["mean"] <= 0.3 and r["epsilon_unit"] == "" and r["attacker_within_r"] is not None


@pytest.mark.parametrize("argv,needle", [
    (["target", "--at-most", "1"], "--mechanism"),
    (["target", "--at-most", "-1", "--mechanism", "grr"], "--at-most"),
    (["target", "--at-most", "1", "--mechanism", "nope"], "unknown mechanism"),
    (["target", "--at-most", "1", "--mechanism", "grr", "--users", "10", "--epsilon", "1"], "not both"),
    (["target", "--at-most", "1", "--mechanism", "grr", "--trials", "1"], "--trials"),
    (["report", "--mechanism", "grr", "--epsilon", "1", "--trials", "1", "--out", "x.html"], "--trials"),
])
def test_bad_arguments_exit_2_with_one_line(argv, needle, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert needle in err and "\n" not in err and "Traceback" not in err


def test_report_writes_a_file(tmp_path, capsys):
    out = tmp_path / "r.html"
    assert main(["report", "--mechanism", "grr", "--epsilon", "1", "--grid", "8", "--users", "1000", "--trials", "2",
                 "--no-audit", "--out", str(out)]) == 0
    assert out.read_text().startswith("<!DOCTYPE html>")
    assert main(["report", "--mechanism", "grr", "--epsilon", "1", "--grid", "8", "--users", "1000", "--trials", "2",
                 "--no-audit", "--out", str(tmp_path / "missing" / "r.html")]) == 2
    assert "--out" in capsys.readouterr().err
