"""Long runs: predicted from measured timings, announced, started by the user, timed, and stoppable.

Every run the dashboard finishes adds its quiet-machine seconds (its CPU time, which other processes on a
shared server do not inflate) to a server-wide record (:class:`Timings`). Before a run that is not in the
cache, :meth:`Timings.predict` scales the nearest measured run of the same mechanism and path by the
calibrated cost model (:mod:`ldpviz.experiment.runtime_model`), or uses that model alone. The load is never
counted in (issue 28): what a person does every minute -- the bundled default, and any setting predicted
under ``LONG_S`` seconds on a quiet machine -- runs at once however busy the server is. A longer run is
announced in words that say what will happen ("About 15-30 s: DAM at d = 128 with 5 trials"; a busy server
takes longer) and waits for a Start button; it then runs in a child process (so Stop, or any new setting,
ends it at once) while the page shows the elapsed time. Its result joins the cache of finished long runs.
"""

from __future__ import annotations

import math
import multiprocessing as mp
import os
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import streamlit as st

from ldpviz.data import datasets
from ldpviz import experiment
from ldpviz.experiment import runtime_model
from ldpviz.experiment import Result, Scenario

#: Runs predicted to take longer than this many quiet-machine seconds are announced and wait for the user (the
#: environment variable LDPVIZ_LONG_RUN_S overrides it; tests of the announcement set it).
LONG_S = float(os.environ.get("LDPVIZ_LONG_RUN_S", "10"))
#: Decide's searches that start without a click fit this many seconds together (run side by side); the rest
#: wait for Start. A setting of its own: the tests raise LONG_S so that nothing else waits for a click, not so
#: that every Decide page they open searches all 18 mechanisms.
DECIDE_QUICK_S = float(os.environ.get("LDPVIZ_DECIDE_QUICK_S", "10"))
#: CPU seconds that Decide's searches started without a click may use together (its opening's share of the server,
#: issue 36: at most 15 s in a fresh process with the page itself, which costs about 6 s there).
DECIDE_OPEN_CPU_S = float(os.environ.get("LDPVIZ_DECIDE_OPEN_CPU_S", "8"))
#: Before anything was measured on this server: seconds per user-trial and per cell-trial (a rough prior from
#: this repository's benchmarks on a 2-core machine; replaced by measured timings after the first run).
PRIOR_S_PER_USER, PRIOR_S_PER_CELL = 2e-6, 2e-5
MAX_RECORDS, MAX_KEPT_RESULTS = 256, 16


@dataclass(frozen=True)
class Measured:
    """One finished run, its seconds stored as on a quiet machine (its CPU seconds, see :meth:`Timings.record`)."""

    mechanism: str
    path: str                      #: the path requested ('auto', 'per-user', 'aggregate')
    n_users: int
    cells: int
    seconds_per_trial: float       #: perturb + estimate + metrics, idle-machine seconds
    fixed_seconds: float           #: prepare + setup (once per run), idle-machine seconds
    load: float                    #: 1-minute load average when it finished
    trials: int = 1                #: trials of that run (batched trials cost less than one run each)


class Timings:
    """Measured runs of this server (thread-safe, bounded), and predictions from them and the calibration.

    A prediction (:meth:`predict`) takes, in order: the nearest measured run of the same mechanism and path,
    scaled to the new size by the calibrated cost model's shape (:mod:`ldpviz.experiment.runtime_model`; linearly in
    users x cells where the mechanism was not calibrated); else the calibrated model itself; else the nearest
    run of another mechanism, scaled linearly (conservative); else a rough prior. Every prediction is in
    quiet-machine seconds: the load of the moment is not in it.
    """

    def __init__(self) -> None:
        self._records: list[Measured] = []
        self._lock = threading.Lock()

    def record(self, result: Result, cpu_seconds: float | None = None, load: float | None = None) -> None:
        """Add a finished run. Its quiet-machine seconds: ``cpu_seconds``, the CPU time of the thread that ran it
        (other sessions' work is not in it), but at least the wall time divided by the load's slowdown (work in
        helper threads is not in a thread's CPU time) and at most the wall time. Its phases keep their shares."""
        t = result.timings
        load = runtime_model.current_load() if load is None else float(load)
        wall = max(float(t.get("total", 0.0)), 1e-9)
        quiet = wall / runtime_model.slowdown(load)
        if cpu_seconds is not None:
            quiet = min(max(float(cpu_seconds), quiet), wall)
        scale = quiet / wall
        m = Measured(result.scenario.mechanism, runtime_model.path_of(result.scenario.params),
                     max(int(result.n_users), 1), result.grid.n_cells,
                     (t.get("perturb", 0.0) + t.get("estimate", 0.0) + t.get("metrics", 0.0)) * scale,
                     (t.get("prepare", 0.0) + t.get("setup", 0.0)) * scale, load, max(int(result.scenario.trials), 1))
        with self._lock:
            self._records.append(m)
            del self._records[:-MAX_RECORDS]

    def predict(self, mechanism: str, n_users: int, cells: int, trials: int, path: str = "auto"
                ) -> tuple[float, str]:
        """(quiet-machine seconds, what it rests on) for ``trials`` trials of ``mechanism`` on ``path`` at
        ``n_users`` x ``cells``. The second part is for tests and logs; pages say what will happen instead."""
        with self._lock:
            records = list(self._records)
        n_users, cells = max(int(n_users), 1), max(int(cells), 1)
        cal = runtime_model.calibration()
        same = [r for r in records if r.mechanism == mechanism and r.path == path]
        if same:
            near = min(same, key=lambda r: _distance(r, n_users, cells))
            shape = cal.idle_seconds(mechanism, path, n_users, cells, trials) if cal else None
            if shape is not None:
                at_near = cal.idle_seconds(mechanism, path, near.n_users, near.cells, near.trials)
                measured = near.fixed_seconds + near.trials * near.seconds_per_trial
                return (measured * shape / max(at_near, 1e-9),
                        "measured runs of this mechanism on this server, scaled by its calibrated cost model")
            scale = (n_users / near.n_users) * (cells / near.cells)
            return ((near.fixed_seconds + trials * near.seconds_per_trial * scale),
                    "measured runs of this mechanism on this server")
        calibrated = runtime_model.predict(mechanism, path, n_users, cells, trials)
        if calibrated is not None:
            return calibrated, f"the calibrated cost model of {mechanism}"
        if records:
            near = min(records, key=lambda r: _distance(r, n_users, cells))
            scale = (n_users / near.n_users) * (cells / near.cells)
            return ((near.fixed_seconds + trials * near.seconds_per_trial * scale),
                    "measured runs of other mechanisms on this server")
        return (trials * (PRIOR_S_PER_USER * n_users + PRIOR_S_PER_CELL * cells),
                "a rough prior (nothing measured on this server yet)")


def _distance(r: Measured, n_users: int, cells: int) -> float:
    return abs(math.log(r.n_users / n_users)) + abs(math.log(r.cells / cells))


class Seen:
    """Keys of runs this server has finished (bounded): those are in a cache and need no announcement."""

    def __init__(self, size: int = 1024) -> None:
        self._keys: OrderedDict[str, None] = OrderedDict()
        self._size = size
        self._lock = threading.Lock()

    def add(self, key: str) -> None:
        with self._lock:
            self._keys[key] = None
            while len(self._keys) > self._size:
                self._keys.popitem(last=False)

    def __contains__(self, key: str) -> bool:
        with self._lock:
            return key in self._keys


class Kept:
    """Finished long runs by key (bounded LRU), so revisiting one is instant."""

    def __init__(self) -> None:
        self._items: OrderedDict[str, Result] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str) -> Result | None:
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
            return self._items.get(key)

    def put(self, key: str, result: Result) -> None:
        with self._lock:
            self._items[key] = result
            while len(self._items) > MAX_KEPT_RESULTS:
                self._items.popitem(last=False)


@st.cache_resource(show_spinner=False)
def timings() -> Timings:
    return Timings()


@st.cache_resource(show_spinner=False)
def kept() -> Kept:
    return Kept()


@st.cache_resource(show_spinner=False)
def seen() -> Seen:
    return Seen()


def key(scenario: Scenario, dataset_key: str) -> str:
    return f"{scenario!r}|{dataset_key}"


def _child(scenario: Scenario, dataset: datasets.Dataset | None, conn: Any) -> None:
    """In the child process: run the scenario and send back the result (or the error)."""
    try:
        conn.send(("ok", experiment.run(scenario, dataset)))
    except BaseException as exc:  # noqa: BLE001 -- reported to the page, which decides how to show it
        conn.send(("error", exc))
    finally:
        conn.close()


def run_in_child(scenario: Scenario, dataset: datasets.Dataset | None, predicted_s: float, label: str) -> Result:
    """Run in a child process, showing the elapsed time and a Stop button; any rerun ends the child at once."""
    ctx = mp.get_context("spawn")
    receive, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(scenario, dataset, send), daemon=True)
    slot = st.empty()                     # one placeholder: emptied at the end, so no empty bordered box stays
    box = slot.container(border=True)
    bar = box.progress(0.0, text=f"Starting {label} ...")
    # One key per child: a comparison runs several long scenarios in one script run (a shared key would clash).
    seq = st.session_state["longrun:seq"] = st.session_state.get("longrun:seq", 0) + 1
    box.button("Stop this run", key=f"longrun:stop:{seq}", icon=":material/stop_circle:",
               on_click=lambda: st.session_state.__setitem__("longrun:stop", True))
    started = time.perf_counter()
    st.session_state["longrun:running"] = (label, started)
    proc.start()
    send.close()
    try:
        while not receive.poll(0.25):
            if not proc.is_alive():
                break
            elapsed = time.perf_counter() - started
            bar.progress(min(elapsed / max(runtime_model.seconds_range(predicted_s)[1], 1e-9), 0.99),
                         text=f"Running {label}: {elapsed:.0f} s so far of "
                              f"{runtime_model.fmt_range(predicted_s)} (longer while the server is busy)")
        if not receive.poll(0):
            raise RuntimeError(f"the run of {label} ended without a result (exit code {proc.exitcode})")
        status, payload = receive.recv()
    finally:
        st.session_state.pop("longrun:running", None)
        if proc.is_alive():
            proc.terminate()
        proc.join(timeout=5)
        receive.close()
    slot.empty()
    if status == "error":
        raise payload
    return payload


def stopped_notice() -> None:
    """After Stop: say what was stopped and after how long (the run's settings are kept)."""
    if st.session_state.pop("longrun:stop", False):
        label, started = st.session_state.pop("longrun:last", (None, None))
        if label:
            st.info(f"Stopped {label}. Its settings are kept; start it again, or change a setting.",
                    icon=":material/stop_circle:")


def announcement(label: str, predicted_s: float, unreached_s: float | None = None) -> str:
    """What a long run will do, in words: 'About 15-30 s: DAM at d = 128 with 5 trials. ...'. ``unreached_s``: a
    goal seek's time when no epsilon reaches its target (the scan alone), said beside the main prediction."""
    when = runtime_model.fmt_range(predicted_s)
    other = ""
    if unreached_s is not None and runtime_model.fmt_range(unreached_s) != when:
        other = (f" If no ε reaches the target, the search ends after its scan: "
                 f"{runtime_model.fmt_range(unreached_s)}.")
    return (f"**{when[0].upper() + when[1:]}: {label}** on a quiet server; a busy one takes longer.{other} Start it "
            "when you are ready; you can stop it while it runs, and a finished run is kept, so coming back to these "
            "settings is instant.")


def announce(label: str, predicted_s: float, basis: str, run_key: str, unreached_s: float | None = None) -> bool:
    """A long run's :func:`announcement` with a Start button; True once the user started it. ``basis`` (what
    the prediction rests on) is not shown: the words say what will happen, not how it was predicted."""
    approved = st.session_state.setdefault("longrun:approved", set())
    if run_key in approved:
        return True
    slot = st.empty()                     # the notice and its Start button go away once started
    with slot.container():
        st.info(announcement(label, predicted_s, unreached_s), icon=":material/hourglass_top:")
        started = st.button(f"Start ({runtime_model.fmt_range(predicted_s)[len('about '):]})", type="primary",
                            key=f"longrun:start:{run_key}", icon=":material/play_arrow:")
    if started:
        slot.empty()
        approved.add(run_key)
        st.session_state["longrun:last"] = (label, time.time())
        return True
    return False


def fmt_seconds(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.0f} min" if seconds < 5400 else f"{seconds / 3600:.1f} h"
