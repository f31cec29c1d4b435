"""Time ``ldpviz target`` (goal seek) on the bundled city, and check how often ONE collection meets the target.

For each mechanism, :func:`ldpviz.decide.tradeoff.target_epsilon` finds the smallest epsilon found on a scan at
which one collection meets the W2 target with probability >= 95% (95% confidence; a one-sided normal tolerance
bound over 10 fresh collections; issue 27), then the population-prior attacker's error there. The report then
runs ``--check`` more collections at the answer on streams neither the search nor its fresh decision used
(``default_rng([seed, t, 2])``) and counts how many meet the target: the reading the officer cares about. It gives
the epsilon, the tolerance bound, the chance one collection misses, the mean's 95% CI (the second reading),
the collections simulated, the scan, and wall (``perf_counter``) and CPU (``process_time``) seconds with the
machine's load (the machine may be shared). Speed goals (issue 28): 4 mechanisms <= 10 s, every eligible LDP
mechanism (``--all``) <= 30 s, the first answer <= 3 s, on a quiet 2-core machine.

    python bench/target_mode.py                  # writes docs/target-mode.md (d = 32, all users)
    python bench/target_mode.py --all            # also times every LDP mechanism, and each LDP / Geo-I seek alone
    python bench/target_mode.py --quick --out /tmp/t   # smoke run: d = 8, 5,000 users, 20 checks
    python bench/target_mode.py --command [--hog 2]   # only the section on `ldpviz target` as typed (issue 38)

``--command`` measures the command a user types, ``ldpviz target --mechanism planar-laplace --at-most 1000`` on
the bundled city, as a fresh process (wall, and the child's CPU from ``getrusage``), interleaved with the same seek
in a process that imported, loaded the data and ran a warm-up seek first (the "alone" rows above), and replaces
only its own section of DIR/target-mode.md. ``--hog N`` runs the same pairs again with N busy processes (the
machine loaded on purpose) and reports both readings with the load average.

The seeks run as the Decide page and ``ldpviz target`` run them: side by side, one per core
(:func:`ldpviz.decide.tradeoff.seeks_side_by_side`). The speed section has a baseline measured in the same run:
the same seeks one after another (the path before), and whether the answers are identical. ``--all`` also times
every LDP and Geo-I seek alone and reports its cost in one-trial runs of its mechanism (seconds over
:func:`ldpviz.experiment.runtime_model.predict` at one trial). The table the pages' time predictions read is
measured by ``bench/goal_seek_runs.py`` (CPU seconds, per grid side and outcome).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ldpviz.decide import tradeoff  # noqa: E402
from ldpviz.experiment import Scenario  # noqa: E402
from ldpviz.evidence.reproduce import provenance_markdown  # noqa: E402

MECHANISMS = ("grr", "dam", "planar-laplace", "oue")
DATASET = "minneapolis-stops"
TARGET_S = 10.0


def _eps(found) -> str:
    if not found.reached:
        return "not reached"
    return f"{found.epsilon:.3g}" + (" per km" if found.privacy_model == "Geo-I" else "")


def _answer(found) -> dict:
    """A goal seek's answer without its costs (what must not change when only the speed does)."""
    return {k: v for k, v in found.to_dict().items() if k not in ("seconds", "runs", "evaluations")}


#: One process's share of the seeks, for the processes comparison: import, load the data, the same uncounted
#: warm-up seek as the threads had, then its seeks one after another; prints the seconds of seeking and answers.
PROCESS_SHARE = r"""
import json, sys, time
from ldpviz.data import datasets
from ldpviz.decide import tradeoff
from ldpviz.experiment import Scenario
names, warm, dataset, grid, users, seed, target = json.loads(sys.argv[1])
data = datasets.load(dataset)
def call(name):
    base = Scenario(dataset=dataset, mechanism=name, epsilon=1.0, grid_side=grid, n_users=users, seed=seed)
    return tradeoff.target_epsilon(base, "w2_m", target, n_users=users, dataset=data)
call(warm)
t = time.perf_counter()
answers = {name: call(name).epsilon for name in names}
print(json.dumps({"seconds": time.perf_counter() - t, "answers": answers}))
"""


COMMAND_SECTION = "## The command as typed: `ldpviz target` in a fresh process (issue 38)"
COMMAND_MECHANISM = "planar-laplace"
#: The same seek in a warmed process: import, load, a warm-up seek (grr, uncounted), then the seek timed.
WARM_SEEK = r"""
import json, sys, time
from ldpviz.data import datasets
from ldpviz.decide import tradeoff
from ldpviz.experiment import Scenario
name, dataset, grid, users, target = json.loads(sys.argv[1])
data = datasets.load(dataset)
def call(m):
    base = Scenario(dataset=dataset, mechanism=m, epsilon=1.0, grid_side=grid, n_users=users, seed=0)
    return tradeoff.target_epsilon(base, "w2_m", target, n_users=users, dataset=data)
call("grr")
t, c = time.perf_counter(), time.process_time()
found = call(name)
print(json.dumps({"wall": time.perf_counter() - t, "cpu": time.process_time() - c, "epsilon": found.epsilon}))
"""


def _child(argv: list[str]) -> tuple[float, float, str]:
    """Wall and CPU (user + system of the finished child) seconds of a fresh process, and its stdout."""
    import resource
    import subprocess
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=ROOT, check=True)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), done.stdout


def command_section(out: Path, repeats: int, hogs: int, quick: bool) -> None:
    """``ldpviz target --mechanism planar-laplace`` as typed (fresh process) against the same seek warmed, interleaved
    ``repeats`` times, quiet (as the machine is) and with ``hogs`` busy processes; replaces COMMAND_SECTION."""
    import statistics
    import subprocess
    grid, users, target = (8, 5000, 3000.0) if quick else (32, None, 1000.0)
    typed = ["ldpviz", "target", "--mechanism", COMMAND_MECHANISM, "--at-most", f"{target:g}"]
    if quick:
        typed += ["--grid", str(grid), "--users", str(users)]
    readings = {}
    for label, n_hogs in (("as found", 0),) + ((("with hogs", hogs),) if hogs else ()):
        hog_procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n_hogs)]
        try:
            time.sleep(2.0 if n_hogs else 0.0)
            rows = []
            for rep in range(repeats):
                load0 = os.getloadavg()[0]
                cw, cc, _ = _child([sys.executable, "-m", *typed, "--json"])
                ww, wc, text = _child([sys.executable, "-c", WARM_SEEK,
                                       json.dumps([COMMAND_MECHANISM, DATASET, grid, users, target])])
                warm = json.loads(text.strip().splitlines()[-1])
                rows.append({"cmd_wall": cw, "cmd_cpu": cc, "seek_wall": warm["wall"], "seek_cpu": warm["cpu"],
                             "proc_cpu": wc, "load": (load0 + os.getloadavg()[0]) / 2})
                print(f"{label} [{rep + 1}/{repeats}] command {cw:.1f} s wall {cc:.1f} s CPU; warmed seek "
                      f"{warm['wall']:.1f} s wall {warm['cpu']:.1f} s CPU; load {rows[-1]['load']:.1f}",
                      file=sys.stderr)
        finally:
            for h in hog_procs:
                h.kill()
                h.wait()
        readings[label] = ({k: statistics.median(r[k] for r in rows) for k in rows[0]}, n_hogs)
    lines = [COMMAND_SECTION, "",
             provenance_markdown(seeds="0 (the command's default)", trials=f"median of {repeats} fresh processes "
                                 "per reading", quick=quick),
             f"Generated by `bench/target_mode.py --command{f' --hog {hogs}' if hogs else ''}`: the command "
             f"`{' '.join(typed)}` as a fresh process (start-up, data loading and every seek included; CPU is the "
             "child's user + system time), interleaved with the same seek in a process that had imported, loaded "
             "the data and run an uncounted warm-up seek (how the seek-alone rows above are measured).", "",
             "| reading | load (1 min) | command: wall s | command: CPU s | warmed seek: wall s | warmed seek: CPU s "
             "| command CPU / warmed seek CPU |", "|---|---|---|---|---|---|---|"]
    for label, (m, n_hogs) in readings.items():
        lines.append(f"| {label}{f' ({n_hogs} busy processes added)' if n_hogs else ''} | {m['load']:.1f} | "
                     f"{m['cmd_wall']:.1f} | {m['cmd_cpu']:.1f} | {m['seek_wall']:.1f} | {m['seek_cpu']:.1f} | "
                     f"{m['cmd_cpu'] / m['seek_cpu']:.2f} |")
    m, _ = readings["as found"]
    lines += ["", f"At load {m['load']:.1f} on {os.cpu_count()} cores the command took {m['cmd_wall']:.1f} s wall for "
                  f"{m['cmd_cpu']:.1f} s of CPU: {m['cmd_wall'] / m['cmd_cpu']:.1f}x its CPU, the rest waiting for a "
                  f"core. Its CPU is {m['cmd_cpu'] - m['seek_cpu']:.1f} s more than the warmed seek's "
                  f"{m['seek_cpu']:.1f} s: start-up, data loading and the first calls' compiled kernels "
                  f"({m['cmd_cpu'] / m['seek_cpu']:.2f}x). A wall-clock figure from this machine is therefore a "
                  "reading of its load as much as of the code: the seek-alone rows above are the work on a quiet "
                  "machine (load below 1.5), and the command as typed adds its start-up to them."]
    if "with hogs" in readings:
        h, n_hogs = readings["with hogs"]
        lines += ["", f"With {n_hogs} busy processes added (load {h['load']:.1f}) the command took "
                      f"{h['cmd_wall']:.1f} s wall and {h['cmd_cpu']:.1f} s CPU "
                      f"({h['cmd_cpu'] / m['cmd_cpu']:.2f}x the CPU as found, {h['cmd_wall'] / m['cmd_wall']:.2f}x "
                      "the wall): load stretches the wall far more than the CPU."]
    path = out / "target-mode.md"
    text = path.read_text() if path.exists() else "# Target mode (goal seek): one collection, speed and answers\n"
    lines += _against_main_run(text.split(COMMAND_SECTION)[0], m)
    if COMMAND_SECTION in text:
        text = text[:text.index(COMMAND_SECTION)].rstrip() + "\n"
    path.write_text(text.rstrip() + "\n\n" + "\n".join(lines) + "\n")
    print(f"wrote {path}")


def _against_main_run(main: str, m: dict) -> list[str]:
    """Sentences comparing this run's warmed seek with the main report's seek-alone row of the same mechanism (its
    speed table: wall, CPU), and the code under ldpviz/ of the two runs."""
    import re
    import subprocess
    row = re.search(rf"^\| {re.escape(COMMAND_MECHANISM)} \| ([0-9.]+) \| ([0-9.]+) \| [0-9]+ \|$", main, re.M)
    commit = re.search(r"^- Code: commit ([0-9a-f]{7,40})", main, re.M)
    load = re.search(r"Load average \(1 min\) before / after: ([0-9.]+) / ([0-9.]+)", main)
    if not row:
        return []
    wall, cpu = float(row.group(1)), float(row.group(2))
    out = ["", f"The report's own seek-alone row for {COMMAND_MECHANISM} above took {wall:.2f} s wall and {cpu:.2f} s "
               f"CPU" + (f" (load {load.group(1)} / {load.group(2)})" if load else "") + f"; the same seek warmed here "
               f"took {m['seek_cpu']:.1f} s CPU, {m['seek_cpu'] / cpu:.1f}x that, at load {m['load']:.1f}: on a shared "
               "machine the CPU seconds of the same work can grow with the load as well (caches and cores shared "
               "with the other work), not only the wall seconds."]
    machine = re.search(r"^- Machine: ([^,]+),", main, re.M)
    from ldpviz.evidence.reproduce import machine as this_machine
    now = this_machine()["processor"]
    if machine and machine.group(1) != now:
        out[-1] += f" The machine differs too: the main run's processor was {machine.group(1)}, this run's {now}."
    if commit:
        diff = subprocess.run(["git", "-C", str(ROOT), "diff", "--stat", commit.group(1), "--", "ldpviz"],
                              capture_output=True, text=True)
        files = [x for x in diff.stdout.splitlines() if "|" in x]
        out[-1] += (f" The main run's code was commit {commit.group(1)}; ldpviz/ differs from it now in "
                    f"{len(files)} file{'s' if len(files) != 1 else ''}"
                    + (f" ({', '.join(x.split('|')[0].strip() for x in files)})" if files else "") + ".")
    return out


def share_by_cost(costs: list[float], parts: int) -> list[list[int]]:
    """Seeks dealt to ``parts`` processes, longest predicted first, each to the least loaded so far."""
    shares: list[list[int]] = [[] for _ in range(max(1, parts))]
    load = [0.0] * len(shares)
    for i in sorted(range(len(costs)), key=lambda k: -float(costs[k] or 0.0)):
        j = load.index(min(load))
        shares[j].append(i)
        load[j] += float(costs[i] or 0.0)
    return [s for s in shares if s]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smoke run: d = 8, 5,000 users, 20 checks")
    ap.add_argument("--all", action="store_true", help="also time every eligible LDP mechanism (issue 28's 30 s)")
    ap.add_argument("--check", type=int, default=100, help="fresh collections checked at each answer (default 100)")
    ap.add_argument("--out", default=str(ROOT / "docs"), help="output directory (default docs/)")
    ap.add_argument("--no-baseline", action="store_true",
                    help="skip the baseline (the same 4 seeks one after another, the path before)")
    ap.add_argument("--target", type=float, default=1000.0, help="W2 target in metres (default 1000)")
    ap.add_argument("--command", action="store_true",
                    help="only the section on `ldpviz target --mechanism planar-laplace` as typed (fresh processes)")
    ap.add_argument("--hog", type=int, default=0, help="--command: also measure with this many busy processes")
    ap.add_argument("--repeats", type=int, default=3, help="--command: fresh processes per reading (default 3)")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.command:
        command_section(out, 1 if args.quick else args.repeats, args.hog, args.quick)
        return 0
    grid, users, seed = (8, 5000, 0) if args.quick else (32, None, 0)
    check = 20 if args.quick else args.check
    target = args.target * (3.0 if args.quick else 1.0)   # coarse grid: W2 cannot be as small

    from ldpviz.data import datasets
    from ldpviz.experiment import runtime_model
    data = datasets.load(DATASET)
    n_seen = min(users or data.n, data.n)

    def call(name):
        base = Scenario(dataset=DATASET, mechanism=name, epsilon=1.0, grid_side=grid, n_users=users, seed=seed)
        return lambda: tradeoff.target_epsilon(base, "w2_m", target, n_users=users, dataset=data)

    def one_run(name):
        return runtime_model.predict(name, runtime_model.path_of({}), n_seen, grid * grid, 1)

    def side_by_side(names):
        """The product path: one seek per core, answers as they finish."""
        got, wall0, cpu0, first = {}, time.perf_counter(), time.process_time(), None
        costs = [one_run(n) for n in names]
        for i, future in tradeoff.seeks_side_by_side([call(n) for n in names], costs):
            got[i] = (future.result(), time.perf_counter() - wall0)
            first = first or (names[i], got[i][1])
            print(f"{names[i]}: epsilon {got[i][0].epsilon}, answered after {got[i][1]:.1f} s", file=sys.stderr)
        rows = [(got[i][0], got[i][1], None) for i in range(len(names))]
        return rows, time.perf_counter() - wall0, time.process_time() - cpu0, first

    def one_after_another(names):
        rows, wall0, cpu0 = [], time.perf_counter(), time.process_time()
        for name in names:
            w, c = time.perf_counter(), time.process_time()
            found = call(name)()
            rows.append((found, time.perf_counter() - w, time.process_time() - c))
            print(f"{name} alone: {rows[-1][1]:.1f} s wall", file=sys.stderr)
        return rows, time.perf_counter() - wall0, time.process_time() - cpu0

    one_after_another(MECHANISMS[:1])  # warm-up, not counted: data load and compiled kernels are paid first
    load_before = os.getloadavg()
    rows, wall, cpu, first = side_by_side(MECHANISMS)
    load_after = os.getloadavg()
    baseline = None
    if not args.no_baseline:     # the same seeks one after another (the path before), in this run
        base_rows, base_wall, base_cpu = one_after_another(MECHANISMS)
        same = all(_answer(a) == _answer(b) for (a, _, _), (b, _, _) in zip(rows, base_rows))
        baseline = (base_rows, base_wall, base_cpu, same, os.getloadavg())
    processes = None
    if not args.no_baseline:     # the same seeks as separate processes: what the GIL costs the threads
        import subprocess
        seek_cost = [one_run(n) * runtime_model.goal_seek_runs(tradeoff.DEFAULT_TRIALS, n) for n in MECHANISMS]
        shares = share_by_cost(seek_cost, tradeoff.seek_threads(len(MECHANISMS)))
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        wall0 = time.perf_counter()
        procs = [subprocess.Popen([sys.executable, "-c", PROCESS_SHARE,
                                   json.dumps([[MECHANISMS[i] for i in share], MECHANISMS[0], DATASET, grid, users,
                                               seed, target])], stdout=subprocess.PIPE, text=True, env=env)
                 for share in shares]
        outs = [json.loads(p.communicate()[0].strip().splitlines()[-1]) for p in procs]
        launch_wall = time.perf_counter() - wall0
        by_name = {f.mechanism: f.epsilon for f, _, _ in rows}
        same_proc = all(by_name[n] == e for o in outs for n, e in o["answers"].items())
        processes = ([[MECHANISMS[i] for i in share] for share in shares], [o["seconds"] for o in outs],
                     launch_wall, same_proc, os.getloadavg())
        print(f"as processes: {max(o['seconds'] for o in outs):.1f} s of seeking, {launch_wall:.1f} s from launch",
              file=sys.stderr)
    checks = {}
    for found, _, _ in rows:
        if found.reached:
            ev = tradeoff.Evaluator(Scenario(dataset=DATASET, mechanism=found.mechanism, epsilon=1.0, grid_side=grid,
                                             n_users=users, seed=seed), "w2_m")
            values = ev.values(found.epsilon, users, check, stream=2)
            checks[found.mechanism] = (int((values <= target).sum()), values)
    everything = alone = None
    if args.all:
        from ldpviz.decide import decision_flow
        names, _ = decision_flow.eligible(["LDP"])
        la = os.getloadavg()
        all_rows, all_wall, all_cpu, all_first = side_by_side(names)
        everything = (names, all_rows, all_wall, all_cpu, all_first, la, os.getloadavg())
        alone_names, _ = decision_flow.eligible(["LDP", "Geo-I"])
        la = os.getloadavg()
        alone_rows, _, _ = one_after_another(alone_names)
        ratios = {f.mechanism: w / one_run(f.mechanism) for f, w, _ in alone_rows if one_run(f.mechanism)}
        median = float(sorted(ratios.values())[len(ratios) // 2]) if ratios else None
        alone = (alone_rows, ratios, median, la, os.getloadavg())

    lines = ["# Target mode (goal seek): one collection, speed and answers", "",
             provenance_markdown(seeds=f"{seed} (search: default_rng([{seed}, t]); fresh decision: "
                                       f"default_rng([{seed}, t, 1]); this check: default_rng([{seed}, t, 2]))",
                                 trials=f"{tradeoff.DEFAULT_TRIALS} per decision, {check} per check",
                                 quick=args.quick), "",
             f"Generated by `bench/target_mode.py`{' --quick' if args.quick else ''}{' --all' if args.all else ''}. "
             f"Data: {DATASET}, whole city, d = {grid}, {'all users' if users is None else f'{users:,} users'}; "
             f"target: W2 at most {target:g} m. Rule: {tradeoff.rule_text()}. Search: a scan of epsilon 0.001 to 50, "
             f"x2 apart, one collection per value, the rule where it met, refined to {tradeoff.EPS_RTOL:.0%}. "
             f"Attacker: population prior (the data set's own density standing in for a census), best guess. "
             f"Load average (1 min) before / after: {load_before[0]:.1f} / {load_after[0]:.1f} on "
             f"{os.cpu_count()} cores.", "",
             "## How often one collection meets the target", "",
             f"| mechanism | model | epsilon found | of {check} new collections meeting W2 <= {target:g} m | "
             "tolerance bound (m) | chance one misses, at most | mean W2 (m), 95% CI (the second reading) | "
             "values scanned | collections simulated | attacker off by (m) | answered after s |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for found, w, c in rows:
        attacker = f"{found.attacker_error_m:,.0f}" if found.attacker_error_m is not None else \
            f"— ({found.attacker_note})" if found.attacker_note else "—"
        met = f"{checks[found.mechanism][0]} ({checks[found.mechanism][0] / check:.0%})" \
            if found.mechanism in checks else "—"
        bound = f"{found.bound:,.0f}" if found.bound is not None else "—"
        from ldpviz.decide.one_collection import chance_text
        lines.append(f"| {found.mechanism} | {found.privacy_model} | {_eps(found)} | {met} | {bound} | "
                     f"{chance_text(found.miss_chance_max)} | {found.mean:,.0f} ({found.ci_low:,.0f} to "
                     f"{found.ci_high:,.0f}) | {found.scanned} | {found.runs} | {attacker} | {w:.1f} |")
    warnings = [f"- {found.mechanism}: {found.scan_warning}" for found, _, _ in rows if found.scan_warning]
    met_all = [checks[m][0] / check for m in checks]
    busy = load_before[0] > 1.5 or load_after[0] > 1.5
    lines += ["", f"At the epsilon found, between {min(met_all):.0%} and {max(met_all):.0%} of {check} new "
                  f"collections per mechanism met the target (the rule promises at least 95% with 95% confidence; a "
                  f"share of {check} has a standard error of about {100 * (0.95 * 0.05 / check) ** 0.5:.1f} points "
                  "at 95%)." if met_all else "",
              "", "Where the scan saw the metric turn (met, then missed at a larger epsilon):", ""]
    lines += warnings or ["- none of these mechanisms"]
    threads = tradeoff.seek_threads(len(MECHANISMS))
    lines += ["", "## Speed", "",
              f"The {len(rows)} goal seeks side by side ({threads} at a time, as the Decide page and `ldpviz target` "
              f"run them) took {wall:.1f} s wall-clock and {cpu:.1f} s CPU "
              f"({'within' if wall <= TARGET_S else 'over'} issue 28's {TARGET_S:g} s); the first answer "
              f"({first[0]}) came after {first[1]:.1f} s ({'within' if first[1] <= 3 else 'over'} 3 s)"
              + (f". The machine was not quiet (load {load_before[0]:.1f} / {load_after[0]:.1f} on "
                 f"{os.cpu_count()} cores): wall time here is not the quiet-machine figure" if busy else "") + ".",
              "", "The answered-after column of the first table is when each answer came, counted from the start."]
    if baseline:
        base_rows, base_wall, base_cpu, same, lb = baseline
        lines += ["", f"Baseline in the same run: the same {len(rows)} seeks one after another (the path before; "
                      f"after one uncounted warm-up seek; load after {lb[0]:.1f}): {base_wall:.1f} s wall, "
                      f"{base_cpu:.1f} s CPU. Side by side: {wall:.1f} s wall ({wall / base_wall:.2f}x), {cpu:.1f} s "
                      f"CPU; answers {'identical field for field' if same else 'DIFFERENT (a bug)'}.", "",
                  "| mechanism | alone: wall s | alone: CPU s | collections |", "|---|---|---|---|"]
        lines += [f"| {b.mechanism} | {bw:.2f} | {bc:.2f} | {b.runs} |" for b, bw, bc in base_rows]
    if processes:
        shares, seconds, launch_wall, same_proc, lp = processes
        longest = max(bw for _, bw, _ in baseline[0]) if baseline else None
        lines += ["", f"The same {len(rows)} seeks as {len(shares)} processes instead of threads (not how the product "
                      f"runs them; what the threads lose to each other): each process imported ldpviz, loaded the "
                      f"data, ran the same uncounted warm-up seek, then its share one after another ("
                      + "; ".join(", ".join(sh) for sh in shares)
                      + f"). The slower process's seeking took {max(seconds):.1f} s "
                      f"({launch_wall:.1f} s from launch, start-up included; load after {lp[0]:.1f}) against "
                      f"{wall:.1f} s as threads"
                      + (f" and {longest:.1f} s for the longest seek alone" if longest else "")
                      + f"; answers {'the same' if same_proc else 'DIFFERENT (a bug)'}."
                      + (f" The threads' extra {wall - max(seconds):.1f} s is their EM loops waiting on each other for "
                         "the GIL: between the calls that release it (FFTs, numba solvers, large numpy operations) are "
                         "many small Python and numpy steps." if max(seconds) < 0.9 * wall else
                         " Processes were not faster here: the threads lost nothing measurable to the GIL.")]
    if everything:
        names, all_rows, all_wall, all_cpu, all_first, la, lb = everything
        lines += ["", f"Every LDP mechanism ({len(names)}) side by side took {all_wall:.1f} s wall and {all_cpu:.1f} s "
                      f"CPU ({'within' if all_wall <= 30 else 'over'} issue 28's 30 s; first answer {all_first[0]} "
                      f"after {all_first[1]:.1f} s; load {la[0]:.1f} / {lb[0]:.1f}):", "",
                  "| mechanism | epsilon found | collections simulated | answered after s |", "|---|---|---|---|"]
        lines += [f"| {f.mechanism} | {_eps(f)} | {f.runs} | {w:.1f} |" for f, w, _ in all_rows]
    if alone:
        alone_rows, ratios, median, la, lb = alone
        lines += ["", "### What a goal seek costs, for the pages' time predictions", "",
                  f"Each LDP and Geo-I seek alone (load {la[0]:.1f} / {lb[0]:.1f}), over the run-time model's "
                  "prediction of one run of its mechanism at one trial (runtime-calibration.md), wall seconds at a "
                  f"W2 target of {target:g} m (median {median:.0f} runs). The pages' table is measured in CPU "
                  "seconds, per grid side and per outcome, by `bench/goal_seek_runs.py` (docs/goal-seek-runs.md).",
                  "",
                  "| mechanism | alone: wall s | one run predicted s | seek / one run |", "|---|---|---|---|"]
        lines += [f"| {f.mechanism} | {w:.2f} | {w / ratios[f.mechanism]:.3f} | {ratios[f.mechanism]:.1f} |"
                  if f.mechanism in ratios else f"| {f.mechanism} | {w:.2f} | — | — |" for f, w, _ in alone_rows]
    lines += ["", "Notes: a collection missing the target at a scanned value fails the rule there at once (with 10 "
                  "collections the tolerance factor k = 2.91 exceeds (n-1)/sqrt(n) = 2.85, so one value beyond the "
                  "target puts the bound beyond it: Samuelson's inequality), so the scan costs one collection where "
                  "it fails and 10 where it may meet. The fresh decision reruns 10 collections on streams the search "
                  "never used, stepping up where they do not meet it, so the answer is not the search's lucky draw. "
                  "Most of the time goes to the EM estimators (DAM, planar Laplace) and to W2 at large epsilon."]
    path = out / "target-mode.md"
    kept = ""
    if path.exists() and COMMAND_SECTION in path.read_text():      # the --command section is its own run's
        old = path.read_text()
        kept = "\n" + old[old.index(COMMAND_SECTION):]
    path.write_text("\n".join(lines) + "\n" + kept)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
