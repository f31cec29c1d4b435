"""Several goal seeks side by side on threads: how many, in which order, and the wait that can be cancelled."""

from __future__ import annotations

import os
import threading
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, as_completed, wait
from typing import Any, Callable, Iterator, Sequence


#: Threads for goal seeks run side by side: at most one per core this process may use, and at most this many.
MAX_SEEK_THREADS = 4


def seek_threads(n_seeks: int) -> int:
    """How many of ``n_seeks`` independent goal seeks run at once: one per core this process may use (its CPU
    affinity, as a container or ``taskset`` sets it), at most :data:`MAX_SEEK_THREADS`, at most one per seek."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):      # not Linux
        cores = os.cpu_count() or 1
    return max(1, min(int(n_seeks), cores, MAX_SEEK_THREADS))


def start_order(costs: Sequence[float | None], threads: int) -> list[int]:
    """The order seeks start in. One thread: shortest predicted first (the first answer comes soonest; the
    total is the same). Several: longest, shortest, second longest, second shortest, ... -- the first threads
    start the longest seek (which would otherwise finish last) and the shortest (a first answer within
    seconds), and the rest alternate as threads free up. An unknown cost (None) counts as 0."""
    by_cost = sorted(range(len(costs)), key=lambda i: float(costs[i] or 0.0))
    if threads <= 1:
        return by_cost
    order, lo, hi = [], 0, len(by_cost) - 1
    while lo <= hi:
        order.append(by_cost[hi])
        hi -= 1
        if lo <= hi:
            order.append(by_cost[lo])
            lo += 1
    return order


#: How often :func:`seeks_side_by_side` calls its ``poll`` while it waits for an answer (seconds).
POLL_S = 0.25


def seeks_side_by_side(seeks: Sequence[Callable[[], Any]], costs: Sequence[float] | None = None,
                       threads: int | None = None, poll: Callable[[], None] | None = None,
                       cancel: threading.Event | None = None) -> Iterator[tuple[int, Future]]:
    """Run independent goal seeks (:func:`target_epsilon` / :func:`users_needed` calls, one per mechanism) on
    threads and yield ``(index, future)`` as each finishes; ``future.result()`` returns its answer or raises
    its error. ``costs`` (predicted seconds, e.g. :func:`ldpviz.experiment.runtime_model.predict`) set the
    order (:func:`start_order`): a first answer soon, and no long seek started late.

    Threads, not processes: the seeks' heavy parts release the GIL (numpy's BLAS and FFTs, the numba solvers
    are ``nogil``; the FFT work arrays are per thread), with no process start-up or copy of the data. They do
    not run fully in parallel: the EM loops between those calls are many small Python and numpy steps, so two
    threads wait on each other for the GIL: docs/target-mode.md times four seeks as threads, as processes and
    one after another in one run (bench/target_mode.py; about 30% over the longest seek alone as threads, 10%
    as processes, on 2 cores).
    Every seek draws from its own seeded streams, so the answers are the same as one after another (tested).

    Cancellation (issue 36): when the caller stops early (it closes the generator, or ``poll`` raises, as a
    page's re-run does for a new file, bounds or target), seeks not started are dropped and those running stop
    at their next EM iteration or collection (:func:`ldpviz.mechanisms.estimation.cancel_on`: they raise
    :class:`~ldpviz.mechanisms.estimation.Cancelled` on their thread, which nobody reads), so a superseded search
    burns no more CPU. ``poll`` is called every :data:`POLL_S` seconds while waiting (a page passes a call that
    lets its framework interrupt it); ``cancel`` (optional) is the event set then, for a caller that wants to
    cancel from elsewhere too. With ``poll`` the seeks always run on worker threads, even one at a time, so the
    caller's thread stays free to notice a change.
    """
    from ldpviz.mechanisms.estimation import cancel_on
    threads = seek_threads(len(seeks)) if threads is None else max(1, int(threads))
    order = list(range(len(seeks))) if costs is None else start_order(costs, threads)
    cancel = cancel if cancel is not None else threading.Event()

    def guarded(call: Callable[[], Any]) -> Callable[[], Any]:
        def run() -> Any:
            with cancel_on(cancel):
                return call()
        return run

    if poll is None and (threads == 1 or len(seeks) <= 1):
        try:
            for i in order:
                done: Future = Future()
                try:
                    done.set_result(guarded(seeks[i])())
                except Exception as exc:         # the caller decides: .result() raises it as a direct call would
                    done.set_exception(exc)
                yield i, done
        finally:
            cancel.set()
        return
    pool = ThreadPoolExecutor(threads, thread_name_prefix="ldpviz-seek")
    try:
        futures = {pool.submit(guarded(seeks[i])): i for i in order}
        if poll is None:
            for future in as_completed(futures):
                yield futures[future], future
            return
        waiting = set(futures)
        while waiting:
            finished, waiting = wait(waiting, timeout=POLL_S, return_when=FIRST_COMPLETED)
            for future in sorted(finished, key=lambda f: order.index(futures[f])):
                yield futures[future], future
            if waiting:
                poll()
    finally:
        cancel.set()                              # running seeks stop at their next EM iteration
        pool.shutdown(wait=False, cancel_futures=True)
