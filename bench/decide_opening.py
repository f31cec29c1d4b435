"""What opening the Decide page costs, and what a superseded search costs after its inputs changed (issue 36).

Each measurement runs in a fresh Python process (imports, data, compiled kernels' on-disk cache as a server has
them), opening Decide with its defaults (the bundled city, every LDP and Geo-I mechanism) through Streamlit's
AppTest: the CPU seconds of the whole process (``time.process_time``: imports, the page, the seek threads) for
the first visitor, then for a second visitor in the same process (a later visitor of the same server). Goals:
at most 15 s of CPU in a fresh process, under 1 s for later visitors.

Superseded search: four goal seeks on the bundled city side by side (``tradeoff.seeks_side_by_side``, as the page
runs them); after 3 s the caller moves on (a page re-run: a new file, bounds or target). Reported: how long (wall)
and how much CPU until every running seek has stopped, which never started, and the CPU the process burned in
the 5 s after (goal: the seeks stop within a second, and nothing runs after).

    python bench/decide_opening.py                 # writes docs/decide-opening.md (3 fresh processes)
    python bench/decide_opening.py --quick --out /tmp/o      # one process each
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ldpviz.evidence.reproduce import provenance_markdown  # noqa: E402

OPEN = r"""
import json, os, sys, time, threading, collections
c0, w0 = time.process_time(), time.perf_counter()
from streamlit.testing.v1 import AppTest
page = sys.argv[1]
by_thread = collections.Counter()
run = threading.Thread.run
def counted(self):
    try:
        return run(self)
    finally:
        by_thread["seek threads" if self.name.startswith("ldpviz-seek") else "page thread"] += time.thread_time()
threading.Thread.run = counted
out = {"imports": time.process_time() - c0}
for visit in ("first", "second"):
    by_thread.clear()
    c, w = time.process_time(), time.perf_counter()
    at = AppTest.from_file(page, default_timeout=1800)
    at.run()
    out[visit] = {"cpu": time.process_time() - c, "wall": time.perf_counter() - w, "threads": dict(by_thread),
                  "answers": [a["mechanism"] for a in at.session_state["decide_answers"]],
                  "waiting": sum("more mechanism" in i.value for i in at.info), "errors": len(at.exception)}
out["process_first"] = out["imports"] + out["first"]["cpu"]
out["load"] = os.getloadavg()[0]
print(json.dumps(out))
"""

SUPERSEDED = r"""
import json, os, time, threading
from ldpviz.data import datasets
from ldpviz.decide import tradeoff
from ldpviz.experiment import Scenario
from ldpviz.mechanisms import estimation
data = datasets.load("minneapolis-stops")
ended, began = {}, {}
def seek(name):
    base = Scenario(dataset=data.name, mechanism=name, epsilon=1.0, grid_side=32, seed=2026)
    def run():
        began[name] = time.perf_counter()
        try:
            return tradeoff.target_epsilon(base, "w2_m", 200.0, dataset=data)
        finally:
            ended[name] = time.perf_counter()
    return run
class Moved(Exception):
    pass
started = time.perf_counter()
def poll():
    if time.perf_counter() - started > 3.0:
        raise Moved()
names = ["dam", "planar-laplace", "oue", "olh"]
try:
    for _ in tradeoff.seeks_side_by_side([seek(n) for n in names], poll=poll):
        pass
except Moved:
    pass
moved = time.perf_counter()
c = time.process_time()
while any(n in began and n not in ended for n in names) and time.perf_counter() - moved < 30:
    time.sleep(0.01)
cpu_to_stop = time.process_time() - c
time.sleep(5.0)
cpu_after = time.process_time() - c - cpu_to_stop
print(json.dumps({"answered_before_the_change": [n for n in names if n in ended and ended[n] < moved],
                  "stopped": [n for n in names if n in ended and ended[n] >= moved],
                  "stopped_within_s": max((ended[n] - moved for n in ended if ended[n] >= moved), default=0.0),
                  "cpu_to_stop": cpu_to_stop, "never_started": [n for n in names if n not in began],
                  "still_running": [n for n in names if n in began and n not in ended],
                  "cpu_in_5s_after": cpu_after, "load": os.getloadavg()[0]}))
"""


def fresh(code: str, *args: str) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, cwd=ROOT,
                          check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "docs"))
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="one fresh process per measurement")
    args = ap.parse_args(argv)
    if args.quick:
        args.repeats = 1
    before = os.getloadavg()
    opens = [fresh(OPEN, str(ROOT / "ldpviz/app/views/decide.py")) for _ in range(args.repeats)]
    superseded = [fresh(SUPERSEDED) for _ in range(args.repeats)]
    after = os.getloadavg()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "decide-opening.json").write_text(json.dumps({"opens": opens, "superseded": superseded}, indent=1))
    (out / "decide-opening.md").write_text(report(opens, superseded, before, after, args.repeats))
    return 0


def report(opens: list[dict], superseded: list[dict], before: tuple, after: tuple, repeats: int) -> str:
    lines = ["# Opening the Decide page, and a superseded search", "",
             provenance_markdown(trials=f"{repeats} fresh processes per measurement"),
             f"- Load (1, 5, 15 min) before: {before[0]:.1f}, {before[1]:.1f}, {before[2]:.1f}; after: "
             f"{after[0]:.1f}, {after[1]:.1f}, {after[2]:.1f} (a 2-core machine shared with other work: CPU seconds "
             "are the measure; wall seconds show what a person waited on this machine)",
             "- Generated by `python bench/decide_opening.py`", "",
             "## Opening (goal: at most 15 s of CPU in a fresh process, under 1 s for later visitors)", "",
             "| process | first visitor, whole process CPU (s) | of which seek threads (s) | first visitor wall (s) | "
             "answers shown | second visitor CPU (s) | second visitor wall (s) |", "|---|---|---|---|---|---|---|"]
    for i, o in enumerate(opens, 1):
        f, s = o["first"], o["second"]
        lines.append(f"| {i} | {o['process_first']:.1f} | {f['threads'].get('seek threads', 0.0):.1f} | "
                     f"{f['wall']:.1f} | {', '.join(f['answers']) or 'none'} | {s['cpu']:.2f} | {s['wall']:.2f} |")
    lines += ["", "The first visitor sees the answers of the quick group (chosen from predictions, each stopped at "
              "its CPU limit) and a Start button for the rest; a later visitor reads the held answers and starts no "
              "search.", "",
              "## A superseded search (goal: stops within a second, no CPU after)", "",
              "On a loaded machine a thread gets a small share of a core, so the wall time to the next check "
              "stretches; the CPU the process spent from the change until every running seek had stopped is the "
              "measure of what the superseded search still cost.", "",
              "| process | answered before the change | stopped | never started | still running | stopped within "
              "(s wall) | CPU until stopped (s) | CPU in the 5 s after (s) | load |",
              "|---|---|---|---|---|---|---|---|---|"]
    for i, s in enumerate(superseded, 1):
        lines.append(f"| {i} | {', '.join(s['answered_before_the_change']) or 'none'} | "
                     f"{', '.join(s['stopped']) or 'none'} | {', '.join(s['never_started']) or 'none'} | "
                     f"{', '.join(s['still_running']) or 'none'} | {s['stopped_within_s']:.2f} | "
                     f"{s['cpu_to_stop']:.2f} | {s['cpu_in_5s_after']:.2f} | {s['load']:.1f} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
