"""Goal seeks side by side (tradeoff.seeks_side_by_side, issue 28): the answers equal one seek after another,
whatever the threads, and the order they start in gives a first answer soon and starts the longest early."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from ldpviz.decide import tradeoff
from ldpviz.errors import LdpvizInputError
from ldpviz.experiment import Scenario


def test_start_order_serial_is_shortest_first_and_threads_alternate_longest_and_shortest():
    costs = [3.0, 0.5, 9.0, None, 4.0]
    assert tradeoff.start_order(costs, 1) == [3, 1, 0, 4, 2]
    assert tradeoff.start_order(costs, 2) == [2, 3, 4, 1, 0]
    assert tradeoff.start_order([], 2) == []
    assert sorted(tradeoff.start_order(costs, 3)) == list(range(5))


def test_seek_threads_are_bounded_by_seeks_cores_and_the_cap():
    assert tradeoff.seek_threads(1) == 1
    assert 1 <= tradeoff.seek_threads(100) <= tradeoff.MAX_SEEK_THREADS


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_every_seek_yields_once_with_its_own_result_or_error(threads):
    names: list[str] = []

    def call(k):
        def run():
            names.append(threading.current_thread().name)
            if k == 2:
                raise LdpvizInputError("cannot run here")
            return k * k
        return run

    got = dict(tradeoff.seeks_side_by_side([call(k) for k in range(5)], costs=[1, 2, 3, 4, 5], threads=threads))
    assert sorted(got) == list(range(5))
    assert {k: f.result() for k, f in got.items() if k != 2} == {0: 0, 1: 1, 3: 9, 4: 16}
    with pytest.raises(LdpvizInputError, match="cannot run here"):
        got[2].result()
    on_pool = sum(name.startswith("ldpviz-seek") for name in names)
    assert on_pool == (5 if threads > 1 else 0)


@pytest.mark.slow
def test_answers_side_by_side_equal_one_after_another():
    """Same answers, not just close: every seek draws from its own seeded streams, and the FFT work arrays are
    per thread (two EM seeks and two frequency oracles at once, d = 16)."""
    names = ("dam", "planar-laplace", "grr", "oue")

    def seek(name):
        base = Scenario(dataset="minneapolis-stops", mechanism=name, epsilon=1.0, grid_side=16, n_users=20000,
                        seed=3)
        return lambda: tradeoff.target_epsilon(base, "w2_m", 1500.0, n_users=20000, attacker=False)

    def answer(found):
        return {k: v for k, v in found.to_dict().items() if k not in ("seconds", "runs", "evaluations")}

    alone = [answer(seek(name)()) for name in names]
    together = dict(tradeoff.seeks_side_by_side([seek(name) for name in names], costs=[5, 9, 1, 1], threads=2))
    assert [answer(together[i].result()) for i in range(len(names))] == alone


def test_a_time_limit_stops_a_seek_and_no_limit_answers():
    """time_limit_s: a seek past its time raises estimation.Stopped (between collections and inside EM);
    None lets it answer. The check sits in EM's loop, so a stacked EM cannot run on past the limit."""
    from ldpviz.mechanisms import estimation
    base = Scenario(dataset="normal", mechanism="planar-laplace", epsilon=1.0, grid_side=8, n_users=2000, seed=0)
    with pytest.raises(estimation.Stopped):
        tradeoff.target_epsilon(base, "w2_m", 1500.0, n_users=2000, attacker=False, time_limit_s=0.0)
    assert tradeoff.target_epsilon(base, "w2_m", 1500.0, n_users=2000, attacker=False).epsilon is not None
    counts = np.ones((1, 4, 4))
    ident = lambda f: f    # noqa: E731 -- the identity channel: EM would run its steps
    with estimation.stop_after(0.0), pytest.raises(estimation.Stopped):
        estimation.expectation_maximisation_batch(counts, ident, ident, (4, 4))


def test_goal_seek_asks_either_question_and_refuses_another():
    """tradeoff.goal_seek: "epsilon" is target_epsilon at the scenario's users, "users" is users_needed at its
    epsilon (the same answers as calling them), anything else a clear input error."""
    base = Scenario(dataset="normal", mechanism="grr", epsilon=2.0, grid_side=8, n_users=2000, seed=0)
    want = tradeoff.target_epsilon(base, "w2_m", 1500.0, n_users=2000, attacker=False).epsilon
    assert tradeoff.goal_seek("epsilon", base, "w2_m", 1500.0, attacker=False).epsilon == want
    want = tradeoff.users_needed(base, "w2_m", 1500.0, attacker=False).n_users
    assert tradeoff.goal_seek("users", base, "w2_m", 1500.0, attacker=False).n_users == want
    with pytest.raises(LdpvizInputError, match="'epsilon' or 'users'"):
        tradeoff.goal_seek("sideways", base, "w2_m", 1500.0)


class _Rerun(Exception):
    """What a page's framework raises in ``poll`` when its inputs changed."""


def _seek_until_cancelled(ended: dict, k: int):
    """A stand-in seek: 'EM iterations' of 10 ms, each checking for cancellation, for at most 30 s."""
    import time as _time
    from ldpviz.mechanisms import estimation

    def run():
        started = _time.perf_counter()
        try:
            while _time.perf_counter() - started < 30:
                estimation.check_time()
                _time.sleep(0.01)
            return "finished"
        except estimation.Cancelled:
            ended[k] = _time.perf_counter()
            raise
    return run


@pytest.mark.parametrize("threads", [1, 2])
def test_a_superseded_search_stops_within_a_second(threads):
    """Issue 36: when the caller's inputs change (``poll`` raises, as a page re-run does), every running seek
    raises Cancelled at its next check, within a second, and seeks not started never start."""
    import time as _time
    ended: dict[int, float] = {}
    polls = []

    def poll():
        polls.append(_time.perf_counter())
        if len(polls) >= 2:
            raise _Rerun()

    gen = tradeoff.seeks_side_by_side([_seek_until_cancelled(ended, k) for k in range(4)], costs=[1, 1, 1, 1],
                                      threads=threads, poll=poll)
    with pytest.raises(_Rerun):
        for _ in gen:
            pass
    stopped_at = polls[-1]
    deadline = _time.perf_counter() + 5
    while len(ended) < threads and _time.perf_counter() < deadline:
        _time.sleep(0.01)
    assert len(ended) == threads, "a running seek went on after its caller moved on"
    assert max(ended.values()) - stopped_at < 1.0
    _time.sleep(0.2)
    assert len(ended) == threads, "a seek that had not started ran after the caller moved on"


def test_closing_the_generator_cancels_a_real_goal_seek():
    """A planar Laplace goal seek (EM on every scan value) stops within a second of the caller closing the
    generator, by Cancelled from inside EM or between collections."""
    import time as _time
    from ldpviz.mechanisms import estimation
    base = Scenario(dataset="normal", mechanism="planar-laplace", epsilon=1.0, grid_side=32, seed=0)
    outcome: dict[str, object] = {}

    def seek():
        try:
            return tradeoff.target_epsilon(base, "w2_m", 1.0, attacker=False)
        except estimation.Cancelled:
            outcome["cancelled"] = _time.perf_counter()
            raise

    polls = []

    def poll():
        polls.append(_time.perf_counter())
        if len(polls) * tradeoff.POLL_S >= 1.0:
            raise _Rerun()

    with pytest.raises(_Rerun):
        for _ in tradeoff.seeks_side_by_side([seek], threads=1, poll=poll):
            pass
    deadline = _time.perf_counter() + 10
    while "cancelled" not in outcome and _time.perf_counter() < deadline:
        _time.sleep(0.01)
    assert "cancelled" in outcome
    assert float(outcome["cancelled"]) - polls[-1] < 1.0
