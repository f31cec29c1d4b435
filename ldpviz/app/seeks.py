"""Decide's goal seeks, scheduled (issues 27, 36): which mechanisms' seeks are held already, which start without a
click within the page's CPU budget, which wait for Start, each one's CPU limit, and running them side by side on
threads while the page polls. The page draws what this returns; nothing here draws.

One seek per eligible mechanism, for one question on one dataset (:class:`Seeks`); :func:`schedule` splits them
(:class:`Schedule`); :func:`side_by_side` runs the ones that start and says how each ended (:class:`Done`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

import streamlit as st

from ldpviz.app import compute, longrun
from ldpviz.data import datasets
from ldpviz.decide import decision_flow as flow, tradeoff
from ldpviz.errors import LdpvizInputError
from ldpviz.experiment import Scenario, runtime_model
from ldpviz.mechanisms import estimation


def answer(turn: str, metric: str, target: float, probability: float, epsilon: float, scenario: Scenario,
           dataset: datasets.Dataset | None, time_limit_s: float | None = None) -> dict[str, Any]:
    """One mechanism's answer (the same call ``ldpviz target`` makes); thread-safe, no Streamlit calls.
    ``time_limit_s``: stop (:class:`estimation.Stopped`) a search started without a click once it has used that
    many seconds of its thread's CPU (what it costs the server, however busy)."""
    base = scenario if turn == "epsilon" else scenario.with_(epsilon=epsilon)
    with estimation.stop_after(time_limit_s, cpu=True):
        return tradeoff.goal_seek(turn, base, metric, target, dataset=dataset, probability=probability).to_dict()


@st.cache_resource
def overran() -> longrun.Seen:
    """Searches started without a click that ran past their time (their keys): they wait for Start next time
    (bounded: the oldest forgotten would start by itself once more)."""
    return longrun.Seen(1024)


@dataclass(frozen=True)
class Seeks:
    """Step 4's goal seeks: one per scenario (an eligible mechanism's), all for one question on one dataset."""
    scenarios: list[Scenario]
    dataset_key: str
    turn: str
    metric: str
    target: float
    probability: float
    epsilon: float                      # the fixed ε of the users question (read by it only)
    keys: list[str] = field(init=False)  # each seek's key in compute.held_goal_seek

    def __post_init__(self) -> None:
        question = (self.turn, self.metric, self.target, self.probability,
                    self.epsilon if self.turn == "users" else 0.0)
        object.__setattr__(self, "keys", [repr(("decide", sc, self.dataset_key, question)) for sc in self.scenarios])

    def held(self, k: int) -> bool:
        """Whether this server holds seek k's answer (read back at once, no thread)."""
        return self.keys[k] in compute.goal_seeks_held()

    def search(self, k: int, dataset: datasets.Dataset | None,
               time_limit_s: float | None = None) -> Callable[[], dict[str, Any]]:
        """Seek k, as a call for a seek thread (or for reading back a held answer)."""
        return lambda: answer(self.turn, self.metric, self.target, self.probability, self.epsilon,
                              self.scenarios[k], dataset, time_limit_s)

    def unreached_s(self, ks: list[int], n_threads: int) -> float | None:
        """The seeks' predicted wall time if no ε reaches the target (their scans alone); None for the users
        question."""
        if self.turn == "users":
            return None
        return runtime_model.side_by_side_seconds(
            [compute.goal_seek_seconds(self.scenarios[k], tradeoff.DEFAULT_TRIALS, "scan") for k in ks], n_threads)

    def predicted_s(self, k: int) -> float:
        """Seek k's predicted quiet-machine seconds if some ε reaches the target (:func:`compute.goal_seek_seconds`,
        with the target's depth for the data)."""
        return compute.goal_seek_seconds(self.scenarios[k], tradeoff.DEFAULT_TRIALS,
                                         w2_target_m=compute.w2_target(self.turn, self.metric, self.target))


@dataclass
class Schedule:
    """Which seeks run on this page run: ``now`` (without a click, within the CPU budget, or started by Start),
    ``later`` (waiting for Start); ``seek_s``: each pending seek's predicted seconds."""
    pending: list[int]                  # not held by this server
    every_s: dict[int, float]           # every seek's predicted seconds, held or not
    seek_s: dict[int, float]            # the pending ones', at least their quick limit once stopped
    threads: int
    by_click: list[int]                 # started by Start (in this session): no CPU limit
    now: list[int]
    later: list[int]
    #: The keys Start was pressed for in this session (the session's own set, updated by :func:`start_all`).
    clicked: set[str]

    def start_all(self, seeks: Seeks) -> None:
        """Start was pressed: every pending seek runs until answered, through any re-run."""
        self.clicked.update(seeks.keys[k] for k in self.pending)
        self.by_click, self.later = list(self.pending), []

    def limits(self) -> dict[int, float | None]:
        """The seeks that run now and each one's CPU limit in seconds (None: started by Start, no limit)."""
        limits: dict[int, float | None] = flow.quick_limits({k: self.seek_s[k] for k in self.now
                                                             if k not in self.by_click},
                                                            longrun.DECIDE_OPEN_CPU_S)
        limits.update({k: None for k in self.by_click})
        return limits


def schedule(seeks: Seeks, clicked: set[str]) -> Schedule:
    """Split the seeks not held into those that start now and those that wait for Start.

    Seeks the officer started (``clicked``: Start's keys) run until answered, without a limit, through any re-run
    (a stopped quick seek, a widget): one click answers every remaining mechanism. The rest: the quick ones start at
    once within a CPU budget (flow.quick_limits: opening the page costs a bounded share of the server), the others
    wait for Start."""
    pending = [k for k in range(len(seeks.keys)) if not seeks.held(k)]
    every_s = {k: seeks.predicted_s(k) for k in range(len(seeks.scenarios))}
    seek_s = {k: every_s[k] for k in pending}
    for k in pending:     # stopped before when started without a click: it takes at least its limit
        if seeks.keys[k] in overran():
            seek_s[k] = flow.quick_limit(seek_s[k])
    threads = tradeoff.seek_threads(len(pending))
    by_click = [k for k in pending if seeks.keys[k] in clicked]
    # The quick group is chosen from every eligible mechanism, answered or not, so it is the same on every run of
    # this question: a re-run (or the next visitor) starts only what is left of it, never the next-quickest ones in
    # turn (which cascaded: 107 s of CPU before any input, issue 36).
    quick = flow.quick_group(every_s, min(longrun.DECIDE_OPEN_CPU_S, longrun.DECIDE_QUICK_S * threads))
    now = [k for k in quick if k in seek_s and seeks.keys[k] not in overran() and k not in by_click]
    later = [k for k in pending if k not in now and k not in by_click]
    return Schedule(pending=pending, every_s=every_s, seek_s=seek_s, threads=threads, by_click=by_click, now=now,
                    later=later, clicked=clicked)


@dataclass(frozen=True)
class Done:
    """How one seek ended: answered (``found`` took its goal), ``error`` (it cannot run here), or ``stopped`` (it
    ran past its CPU limit: remembered in :func:`overran`, it waits for Start next time)."""
    index: int
    error: LdpvizInputError | None = None
    stopped: bool = False


def side_by_side(seeks: Seeks, schedule_: Schedule, pending: list[int], limits: dict[int, float | None],
                 dataset: datasets.Dataset | None, found: Callable[[int, dict[str, Any]], None],
                 poll: Callable[[], None] | None = None) -> Iterator[Done]:
    """Run the ``pending`` seeks, one per core, the longest first, and yield each as it ends. ``found(k, goal)``
    takes an answer (its answer is held: :func:`compute.held_goal_seek`); an input error of the seek or of
    ``found`` ends it as ``error``. ``poll`` (:func:`compute.seek_poll`) shows the time so far, and through it a
    re-run (a new file, bounds, target) interrupts this loop at once: the seeks then stop at their next EM
    iteration (:func:`tradeoff.seeks_side_by_side`)."""
    costs = [schedule_.seek_s.get(k) for k in pending]
    calls = [seeks.search(k, dataset, limits[k]) for k in pending]
    for j, future in tradeoff.seeks_side_by_side(calls, costs, poll=poll):
        k = pending[j]
        try:
            found(k, compute.held_goal_seek(seeks.keys[k], seeks.search(k, dataset), _found=future.result()))
        except LdpvizInputError as exc:
            yield Done(k, error=exc)
            continue
        except estimation.Stopped:
            overran().add(seeks.keys[k])
            yield Done(k, stopped=True)
            continue
        yield Done(k)


def readings_at_limit(keys: list[str], readings: list[Callable[[], dict[str, Any]]]) -> list[dict[str, Any]]:
    """What each mechanism reaches at the officer's limit (the inverse question, one collection), held under
    ``keys`` like the seeks: the held ones read back, the rest read side by side on the seek threads."""
    out: list[Any] = [None] * len(keys)
    todo = [j for j, key in enumerate(keys) if key not in compute.goal_seeks_held()]
    for j in range(len(keys)):
        if j not in todo:
            out[j] = compute.held_goal_seek(keys[j], readings[j])
    for j, future in tradeoff.seeks_side_by_side([readings[j] for j in todo]):
        jj = todo[j]
        out[jj] = compute.held_goal_seek(keys[jj], readings[jj], _found=future.result())
    return out
