"""ldpviz target / ldpviz report on the command line."""

from __future__ import annotations

import json

import pytest

from ldpviz.cli.commands import main


def test_target_json_per_mechanism(capsys):
    code = main(["target", "--grid", "8", "--users", "2000", "--metric", "l1", "--at-most", "0.6", "--mechanism", "grr",
                 "--mechanism", "planar-laplace", "--trials", "3", "--json"])
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    assert out["mode"] == "epsilon" and [r["mechanism"] for r in out["results"]] == ["grr", "planar-laplace"]
    for r in out["results"]:
        assert r["reached"] and r["bound"] <= 0.6 and r["ci_low"] <= r["mean"] <= r["ci_high"]
        assert r["reading"] == "one collection" and r["probability"] == 0.95 and 0 <= r["miss_chance_max"] <= 0.05
        assert r["message"].startswith("smallest found on a scan of") and r["scanned"] == len(r["scan"])
        assert r["trials"] >= 3 and r["runs"] >= r["trials"] and r["search_range"].startswith("epsilon 0.001 to 50")
    assert out["confidence"] == 0.95 and "one collection" in out["rule"] and "fresh" in out["rule"]
    assert out["results"][1]["epsilon_unit"] == "per km"
    assert out["results"][0]["attacker_error_m"] > 0


def test_target_users_mode_and_unreachable(capsys):
    assert main(["target", "--grid", "8", "--metric", "l1", "--at-most", "0.5", "--epsilon", "3", "--mechanism", "grr",
                 "--trials", "3", "--no-attacker"]) == 0
    assert "users at epsilon = 3" in capsys.readouterr().out
    assert main(["target", "--grid", "8", "--metric", "l1", "--at-most", "0.0001", "--epsilon", "0.05",
                 "--mechanism", "grr", "--trials", "3", "--no-attacker"]) == 0
    assert "more users than the data holds" in capsys.readouterr().out


def test_target_json_fast(capsys):
    assert main(["target", "--grid", "8", "--users", "2000", "--metric", "aqe", "--at-most", "0.3", "--mechanism",
                 "grr",
                 "--trials", "3", "--json"]) == 0
    (r,) = json.loads(capsys.readouterr().out)["results"]
    assert r["reached"] and r["bound"] <= 0.3 and r["epsilon_unit"] == "" and r["attacker_within_r"] is not None


@pytest.mark.parametrize("argv,needle", [
    (["target", "--at-most", "1"], "--mechanism"),
    (["target", "--at-most", "-1", "--mechanism", "grr"], "--at-most"),
    (["target", "--at-most", "1", "--mechanism", "nope"], "unknown mechanism"),
    (["target", "--at-most", "1", "--mechanism", "grr", "--users", "10", "--epsilon", "1"], "not both"),
    (["target", "--at-most", "1", "--mechanism", "grr", "--trials", "1"], "--trials"),
    (["report", "--mechanism", "grr", "--epsilon", "1", "--trials", "1", "--out", "x.html"], "--trials"),
    (["target", "--at-most", "1", "--mechanism", "grr", "--epsilon", "0"], "--epsilon"),
    (["target", "--at-most", "1", "--mechanism", "grr", "--probability", "1"], "--probability"),
    (["target", "--at-most", "1", "--mechanism", "grr", "--confidence", "0.2"], "--confidence"),
    (["target", "--at-most", "1", "--mechanism", "grr", "--r", "-1"], "--r"),
    (["report", "--mechanism", "grr", "--epsilon", "1", "--r", "-1", "--out", "x.html"], "--r"),
])
def test_bad_arguments_exit_2_with_one_line(argv, needle, capsys):
    try:
        code = main(argv)
    except SystemExit as exc:        # --trials is checked by argparse (one type for every command, issue 39.8)
        code = exc.code
    assert code == 2
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


def test_target_text_says_confidence_trials_range_and_warns_beyond_meaningful_privacy(capsys):
    """The text answer states the one-collection rule with its confidence, the fresh collections at the answer and
    the collections simulated, the scan and its range, the attacker's r with where it comes from, and a warning
    for an answer above epsilon = 10."""
    assert main(["target", "--grid", "8", "--users", "2000", "--metric", "l1", "--at-most", "0.001",
                 "--mechanism", "grr", "--seed", "5"]) == 0
    out = capsys.readouterr().out
    assert "one collection meets l1 <= 0.001 with probability >= 95% (95% confidence" in out
    assert "of 10 fresh collections missed" in out and "collections simulated" in out
    assert "smallest found on a scan of" in out and "(epsilon 0.001 to 50, x2 apart)" in out
    assert "WARNING: Practically no privacy" in out and "smallest epsilon" not in out
    assert "of the region's" in out and "side)" in out
