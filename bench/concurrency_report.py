"""Several browser sessions at once against one dashboard server -> docs/concurrency.md.

Starts ``streamlit run app.py`` on a loopback port, opens N sessions in headless
Chromium (separate browser contexts, i.e. separate Streamlit sessions), each on a
different dataset, and moves every session's epsilon slider a different number
of steps, round-robin, without waiting in between, so the server works on
several sessions at the same time. Checks: no exception box on any page, each
page keeps its own dataset and ends at its own epsilon (no cross-talk), and the
server's resident memory (sampled from /proc) after a second identical pass,
when everything is cached, stays close to the first (bounded by the caches).
Usage: ``python bench/concurrency_report.py [--quick] [--out DIR]``;
``tests/app/test_concurrency.py`` runs the same harness.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
import urllib.parse
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from ldpviz.app import serve  # noqa: E402
CHROMIUM = serve.CHROMIUM
CHROMIUM_ARGS = serve.CHROMIUM_ARGS
DATASETS = ["normal", "uniform", "szipf", "mnormal", "gmm", "normal", "uniform", "szipf"]


def bounded_text() -> str:
    """What the server keeps and its bounds (issue 39), from the settings themselves."""
    from ldpviz.app import compute, uploads
    return ("What the server keeps is bounded. Every server-wide cache in ldpviz/app has a size limit "
            f"(st.cache_data and st.cache_resource with max_entries, e.g. {compute.MAX_RESULTS} results for an "
            "hour; the held goal seeks and finished runs as bounded LRUs). What one session holds of its uploads, "
            "points and trips files together, is bounded in bytes: "
            f"{uploads.SESSION_UPLOAD_MB:g} MB (ldpviz/app/uploads.py; the environment variable "
            "LDPVIZ_SESSION_UPLOAD_MB changes it). Beyond it the least recently used upload is released (never "
            "the one just uploaded or asked for), and the page that asks for it says so and to upload it again. "
            "The store every "
            f"session shares, so that a reload or a link finds an upload again, keeps at most {uploads.MAX_HELD} "
            f"files and {uploads.SERVER_UPLOAD_MB:g} MB (LDPVIZ_SERVER_UPLOAD_MB), each for at most "
            f"{uploads.MAX_AGE_S // 3600} hours. The sessions above upload nothing (they use synthetic datasets), "
            "so these upload bounds are not measured in the table: tests/app/test_upload_budget.py checks them.")


def rss_mb(pid: int) -> float:
    """Resident memory of a process and its children, MB (from /proc)."""
    total = 0
    pids = [pid]
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        pids += [int(c) for c in children]
    except OSError:
        pass
    for p in pids:
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            pass
    return total / 1024


def start_server() -> tuple[subprocess.Popen, str]:
    return serve.start()


def _wait_idle(page: Any, timeout_ms: int = 120_000) -> None:
    serve.wait_until_idle(page, timeout_ms)


def _errors(page: Any) -> list[str]:
    main = page.locator('[data-testid="stMain"]')
    out = [main.inner_text()[:500]] if page.locator('[data-testid="stException"]').count() else []
    if "Something went wrong inside ldpviz" in main.inner_text():
        out.append("bug box")
    return out


def _move_epsilon(page: Any) -> None:
    slider = page.locator('[data-testid="stSidebar"] input[aria-label^="Privacy budget"]').first
    slider.wait_for(state="attached", timeout=60_000)
    slider.focus()
    slider.press("ArrowRight")


def _query(page: Any) -> dict[str, str]:
    return {k: v[0] for k, v in urllib.parse.parse_qs(urllib.parse.urlparse(page.url).query).items()}


def run(sessions: int = 5, rounds: int = 3, users: int = 5000, grid: int = 16) -> dict[str, Any]:
    """Drive ``sessions`` pages for two passes of ``rounds`` slider moves; return the measurements."""
    from playwright.sync_api import sync_playwright

    proc, url = start_server()
    out: dict[str, Any] = {"sessions": sessions, "rounds": rounds, "users": users, "grid": grid, "errors": [],
                           "rss_mb": {"idle": rss_mb(proc.pid)}}
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            for pass_no in (1, 2):
                contexts = [browser.new_context(viewport={"width": 1300, "height": 900}) for _ in range(sessions)]
                pages = [c.new_page() for c in contexts]
                start = time.perf_counter()
                for i, page in enumerate(pages):
                    page.goto(f"{url}/?ds={DATASETS[i % len(DATASETS)]}&users={users}&d={grid}&eps=1", timeout=180_000)
                for page in pages:
                    page.locator('[data-testid="stMain"] h1').first.wait_for(timeout=120_000)
                    _wait_idle(page)
                for step in range(rounds):            # session i moves i + 1 steps in total (cross-talk check)
                    for i, page in enumerate(pages):
                        if step <= i:
                            _move_epsilon(page)
                    for page in pages:
                        _wait_idle(page)
                        out["errors"] += _errors(page)
                for i, page in enumerate(pages[rounds:], start=rounds):   # finish the longer sequences
                    for _ in range(i + 1 - rounds):
                        _move_epsilon(page)
                        _wait_idle(page)
                final = [_query(page) for page in pages]
                for i, page in enumerate(pages):
                    out["errors"] += _errors(page)
                out[f"pass{pass_no}_seconds"] = time.perf_counter() - start
                out[f"pass{pass_no}_queries"] = final
                out["rss_mb"][f"after pass {pass_no}"] = rss_mb(proc.pid)
                for c in contexts:
                    c.close()
            time.sleep(10)                            # the sessions have left: what the server keeps
            out["rss_mb"]["10 s after the sessions closed"] = rss_mb(proc.pid)
            browser.close()
    finally:
        serve.stop(proc)
    return out


def check(result: dict[str, Any]) -> list[str]:
    """Problems found (empty when all is well): errors, cross-talk, unbounded memory."""
    problems = [f"page error: {e}" for e in result["errors"]]
    for pass_no in (1, 2):
        queries = result[f"pass{pass_no}_queries"]
        for i, q in enumerate(queries):
            if q.get("ds") != DATASETS[i % len(DATASETS)]:
                problems.append(f"pass {pass_no}: session {i} shows dataset {q.get('ds')!r}")
        eps = [float(q.get("eps", "nan")) for q in queries]
        if not all(a < b for a, b in zip(eps, eps[1:])):
            problems.append(f"pass {pass_no}: sessions moved 1..{len(eps)} steps but ended at epsilons {eps}")
    rss = result["rss_mb"]
    if rss["after pass 2"] > 1.25 * rss["after pass 1"] + 100:
        problems.append(f"memory grew from {rss['after pass 1']:.0f} MB to {rss['after pass 2']:.0f} MB on a "
                        "repeated, cached pass")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="3 sessions, 2 rounds, small scenarios")
    parser.add_argument("--out", default="docs", help="output directory (default: docs/)")
    parser.add_argument("--baseline", action="store_true",
                        help="also run the same load on a server with glibc's default malloc arenas "
                             "(LDPVIZ_MALLOC_ARENAS=0), for comparison")
    args = parser.parse_args(argv)
    from ldpviz.evidence.reproduce import provenance_markdown

    code = serve.exit_code_without_browser("concurrency_report")   # the rule of tests/browser/test_e2e.py
    if code is not None:
        return code
    sessions, rounds = (3, 2) if args.quick else (8, 3)
    import os
    from ldpviz.app.entry.streamlit_server import MALLOC_ARENAS
    load_before = os.getloadavg()
    baseline = None
    if args.baseline:
        os.environ["LDPVIZ_MALLOC_ARENAS"] = "0"
        baseline = run(sessions=sessions, rounds=rounds, users=3000 if args.quick else 20_000)
    os.environ.pop("LDPVIZ_MALLOC_ARENAS", None)
    result = run(sessions=sessions, rounds=rounds, users=3000 if args.quick else 20_000)
    load_after = os.getloadavg()
    problems = check(result)
    rss = result["rss_mb"]
    lines = ["# Concurrent dashboard sessions", "",
             provenance_markdown(seeds="dashboard defaults (seed 0)", trials="dashboard default", quick=args.quick),
             f"{sessions} browser sessions (separate Chromium contexts) against one `streamlit run app.py` server, "
             f"each on its own dataset ({', '.join(DATASETS[:sessions])}) with {result['users']:,} users on a "
             f"{result['grid']}x{result['grid']} grid. Session i moves its epsilon slider i + 1 steps, round-robin "
             "without waiting, so the server works on several sessions at once. The whole run is done twice "
             "(the second pass finds everything in the caches).", "",
             "| measurement | value |", "|---|---:|",
             f"| pass 1 (cold caches), seconds | {result['pass1_seconds']:.1f} |",
             f"| pass 2 (warm caches), seconds | {result['pass2_seconds']:.1f} |"]
    lines += [f"| server memory (RSS) {k}, MB | {v:.0f} |" for k, v in rss.items()]
    if baseline is not None:
        lines[-len(rss) - 4] = "| measurement | this server | glibc's default malloc arenas |"
        lines[-len(rss) - 3] = "|---|---:|---:|"
        lines[-len(rss) - 2] += f" {baseline['pass1_seconds']:.1f} |"
        lines[-len(rss) - 1] += f" {baseline['pass2_seconds']:.1f} |"
        for i, k in enumerate(rss):
            lines[-len(rss) + i] += f" {baseline['rss_mb'][k]:.0f} |"
    lines += ["", f"The server caps glibc's malloc arenas at {MALLOC_ARENAS} "
              "(ldpviz/app/entry/streamlit_server.py): every session's script runs on its own thread, and with "
              "glibc's default (8 arenas per core) memory the sessions freed stayed with the process."
              + (" The right-hand column is the same load on a server with the default arenas, run first."
                 if baseline is not None else ""),
              "", bounded_text(),
              "", f"Machine load (1-minute average) before and after: {load_before[0]:.1f}, {load_after[0]:.1f} "
              f"({os.cpu_count()} cores; above {os.cpu_count()} other work was running)."]
    lines += ["", f"Final epsilon per session (pass 1): "
              f"{', '.join(q.get('eps', '?') for q in result['pass1_queries'])}; "
              "strictly increasing as required (no cross-talk).", "",
              "Problems: " + ("none." if not problems else "; ".join(problems))]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "concurrency.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {out / 'concurrency.md'}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
