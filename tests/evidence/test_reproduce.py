"""`ldpviz reproduce`: discovers bench scripts, enforces the --quick/--out convention, records provenance."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

from ldpviz.evidence import reproduce
from ldpviz.errors import LdpvizInputError

GOOD = """
import argparse, pathlib
p = argparse.ArgumentParser(); p.add_argument("--quick", action="store_true"); p.add_argument("--out", default="docs")
a = p.parse_args(); out = pathlib.Path(a.out); out.mkdir(parents=True, exist_ok=True)
(out / "good-report.md").write_text("# Good report\\nquick=%s\\n" % a.quick)
"""
NO_FLAGS = "print('I ignore the convention')\n"
FAILS = """
import argparse
p = argparse.ArgumentParser(); p.add_argument("--quick", action="store_true"); p.add_argument("--out")
p.parse_args(); raise SystemExit(3)
"""


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    bench = tmp_path / "bench"
    bench.mkdir()
    for name, body in (("a_good", GOOD), ("b_no_flags", NO_FLAGS), ("c_fails", FAILS), ("_helper",
                                                                                        "raise SystemExit(9)")):
        (bench / f"{name}.py").write_text(textwrap.dedent(body))
    return tmp_path


def test_runs_every_script_and_reports_status(repo: Path) -> None:
    runs, manifest = reproduce.reproduce(quick=True, out=repo / "out", repo=repo, echo=False)
    status = {r.name: r.status for r in runs}
    assert status["a_good"] == "ok"
    assert status["b_no_flags"].startswith("skipped") and "--quick" in status["b_no_flags"]
    assert status["c_fails"] == "failed (exit 3)"
    assert "_helper" not in status                      # helpers are not run
    assert (repo / "out" / "good-report.md").read_text().splitlines()[1] == "quick=True"
    text = manifest.read_text()
    assert "Machine:" in text and "quick smoke run" in text and "[good-report.md](good-report.md)" in text
    assert next(r for r in runs if r.name == "a_good").outputs == ["good-report.md"]


def test_cli_exit_code_and_only(repo: Path, monkeypatch, capsys) -> None:
    monkeypatch.setenv("LDPVIZ_REPO", str(repo))
    assert reproduce.main(["--quick", "--only", "a_good", "--out", str(repo / "o")]) == 0
    assert reproduce.main(["--quick", "--out", str(repo / "o")]) == 1
    assert reproduce.main(["--only", "nope"]) == 2
    assert "no bench script named nope" in capsys.readouterr().err


def test_full_run_defaults_to_docs_and_refreshes_index(repo: Path) -> None:
    docs = repo / "docs"
    docs.mkdir()
    (docs / "index.md").write_text(f"# Evidence\n\nHand-written differences.\n\n{reproduce.INDEX_BEGIN}\nold\n"
                                   f"{reproduce.INDEX_END}\n\nFooter.\n")
    (repo / "bench" / "b_no_flags.py").unlink()
    (repo / "bench" / "c_fails.py").unlink()
    runs, _ = reproduce.reproduce(quick=False, repo=repo, echo=False)
    assert [r.status for r in runs] == ["ok"]
    index = (docs / "index.md").read_text()
    assert "Hand-written differences." in index and "Footer." in index and "old" not in index
    assert "- [Good report](good-report.md)" in index and "(reproduce.md)" in index


def test_quick_never_writes_docs_by_default(repo: Path) -> None:
    (repo / "bench" / "b_no_flags.py").unlink()
    reproduce.reproduce(quick=True, repo=repo, only=["a_good"], echo=False)
    assert (repo / "build" / "reproduce-quick" / "good-report.md").is_file()
    assert not (repo / "docs").exists()


def test_installed_without_bench_gives_clear_message(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("LDPVIZ_REPO", raising=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(reproduce, "__file__", str(tmp_path / "site-packages" / "ldpviz" / "reproduce.py"))
    with pytest.raises(LdpvizInputError, match="source checkout"):
        reproduce.find_repo()


@pytest.mark.slow
def test_this_repository_bench_scripts_follow_the_convention() -> None:
    """Every bench/*.py of this checkout accepts --quick and --out (bench/README.md)."""
    repo = reproduce.find_repo()
    broken = {s.name: why for s in reproduce.discover(repo) for ok, why in [reproduce.follows_convention(s, repo)]
              if not ok}
    assert broken == {}


def test_this_repository_bench_scripts_state_provenance() -> None:
    """Every bench/*.py heads its report with provenance_markdown (bench/README.md rule 5).

    The end-to-end ``ldpviz reproduce --quick`` run of these scripts takes minutes (browser benchmarks
    included), so it is not a pytest test: CI runs it as ``make reproduce-quick``.
    """
    repo = reproduce.find_repo()
    scripts = reproduce.discover(repo)
    assert scripts
    missing = [s.name for s in scripts if "provenance_markdown(" not in s.read_text(encoding="utf-8")]
    assert missing == []


def test_summary_blocks_are_filled_from_the_scripts_numbers(tmp_path: Path) -> None:
    """A generated summary block in any docs/*.md is replaced by the JSON summary's sentences; other text and
    blocks without a summary file stay as they are."""
    from ldpviz.evidence import summaries
    docs = tmp_path / "docs"
    docs.mkdir()
    summaries.write_summary(docs, "grids-claims.md", "Grid decompositions", ["3 of 4 checks hold."],
                            {"held": 3, "checks": 4}, unit="one location")
    text = (f"# Index\n\nKept.\n\n{summaries.begin_marker('grids-claims')}\n- old: 24 of 36 checks hold\n"
            f"{summaries.end_marker('grids-claims')}\n\n{summaries.begin_marker('none')}\nuntouched\n"
            f"{summaries.end_marker('none')}\nFooter.\n")
    (docs / "index.md").write_text(text)
    (docs / "design.md").write_text(f"x\n{summaries.begin_marker('grids-claims')}\n"
                                    f"{summaries.end_marker('grids-claims')}\n")
    changed = summaries.refresh_summaries(docs)
    index = (docs / "index.md").read_text()
    assert sorted(p.name for p in changed) == ["design.md", "index.md"]
    assert "24 of 36" not in index and "Kept." in index and "Footer." in index and "untouched" in index
    assert ("- **Grid decompositions** ([grids-claims.md](grids-claims.md)). Privacy unit: one location. "
            "3 of 4 checks hold.") in index
    assert "3 of 4 checks hold." in (docs / "design.md").read_text()
    assert summaries.read_summary(docs, "grids-claims")["numbers"] == {"held": 3, "checks": 4}
    assert summaries.refresh_summaries(docs) == []          # idempotent


def test_docs_summaries_agree_with_their_reports(tmp_path: Path) -> None:
    """In the repository's docs/: every generated summary sentence appears in the report it summarises, and
    every summary block (docs/index.md, design notes) already holds exactly its summary (refreshing a copy
    changes nothing), so the index cannot say one count while the report says another."""
    import shutil
    from ldpviz.evidence import summaries
    docs = reproduce.find_repo() / "docs"
    found = sorted(docs.glob("*" + summaries.SUFFIX))
    for path in found:
        summary = summaries.read_summary(docs, path.name[: -len(summaries.SUFFIX)])
        report = (docs / summary["report"]).read_text(encoding="utf-8")
        missing = [s for s in summary["sentences"] if s not in report]
        assert not missing, f"{summary['report']} lacks its summary sentences: {missing}"
    copy = tmp_path / "docs"
    shutil.copytree(docs, copy)
    assert summaries.refresh_summaries(copy) == [], "docs/ summary blocks are stale: run ldpviz reproduce"


def test_provenance_names_the_commit_a_run_started_at_when_head_moved(monkeypatch) -> None:
    """A long bench run that spans a merge names the commit whose code it loaded (at import), not only the HEAD
    at the time it writes its report; when HEAD did not move, the line is the plain commit."""
    now = reproduce.git_commit(reproduce.find_repo())
    monkeypatch.setattr(reproduce, "COMMIT_AT_START", now)
    assert f"- Code: commit {now}\n" in reproduce.provenance_markdown()
    monkeypatch.setattr(reproduce, "COMMIT_AT_START", "abc1234")
    assert f"- Code: commit abc1234 when the run started ({now} when this report was written)" in \
        reproduce.provenance_markdown()


def test_every_claims_bench_names_its_privacy_unit():
    """Each report a bench script summarises has its privacy unit in summaries.UNITS, so every docs/index.md
    bullet names the unit of what it compares (issue 22); a summary without one is refused."""
    import re
    from pathlib import Path

    import pytest as _pytest

    from ldpviz.errors import LdpvizInputError
    from ldpviz.evidence import summaries
    bench = Path(__file__).resolve().parents[2] / "bench"
    reports = set()
    for path in bench.glob("*.py"):
        text = path.read_text()
        for call in re.finditer(r"write_summary\(", text):
            reports.update(re.findall(r'"([\w-]+\.md)"', text[call.start():call.start() + 300])[:1])
    assert len(reports) >= 8 and reports <= set(summaries.UNITS), reports - set(summaries.UNITS)
    with _pytest.raises(LdpvizInputError, match="privacy unit"):
        summaries.write_summary(Path("/tmp"), "x.md", "X", ["s."], unit=" ")
    assert "Privacy unit: one trip" in summaries.render({"report": "flows-claims.md", "area": "A", "sentences": ["s."]})


def test_provenance_states_the_load_beside_the_commit():
    """Every bench report's provenance carries the machine's load (issue 38: a shared machine's seconds are the
    load's as much as the code's), at the run's start and when the report was written."""
    text = reproduce.provenance_markdown()
    (line,) = [x for x in text.splitlines() if x.startswith("- Load: ")]
    assert "when the run started" in line and f"on {os.cpu_count()} cores" in line


def test_scripts_side_by_side_keep_their_own_outputs_and_order(repo: Path) -> None:
    """--jobs 2 (CI's smoke run): the same statuses in the same order as one at a time, and each script's outputs
    are its own files, moved into the output folder (no private folder left behind)."""
    bench = repo / "bench"
    (bench / "d_good.py").write_text(textwrap.dedent(GOOD.replace("good-report", "other-report")))
    one, _ = reproduce.reproduce(quick=True, out=repo / "one", repo=repo, echo=False)
    two, manifest = reproduce.reproduce(quick=True, out=repo / "two", repo=repo, echo=False, jobs=2)
    assert [(r.name, r.status) for r in two] == [(r.name, r.status) for r in one]
    outputs = {r.name: r.outputs for r in two}
    assert outputs["a_good"] == ["good-report.md"] and outputs["d_good"] == ["other-report.md"]
    assert (repo / "two" / "good-report.md").is_file() and (repo / "two" / "other-report.md").is_file()
    assert not [p for p in (repo / "two").iterdir() if p.name.endswith(".run")]
    assert "[other-report.md](other-report.md)" in manifest.read_text()
