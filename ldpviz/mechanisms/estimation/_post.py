"""Deadlines, cancelling and the projections of an unbiased estimate to a distribution (clip, Norm-Sub)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np


class Stopped(RuntimeError):
    """A computation ran past the time its caller allowed (:func:`stop_after`); nothing it made is kept."""


_DEADLINE = threading.local()


@contextmanager
def stop_after(seconds: float | None, cpu: bool = False) -> Iterator[None]:
    """Within the block, on this thread only, EM (and any caller of :func:`check_time`) raises :class:`Stopped`
    once ``seconds`` have passed: a page can start a computation predicted short without a runaway one holding
    a shared server (issue 28). ``cpu``: seconds of this thread's CPU time (``time.thread_time``: what the
    computation costs the server, whatever else runs) instead of wall time. None: no limit of its own (an
    enclosing block's limit still applies). Blocks nest; the inner limit applies inside."""
    before = getattr(_DEADLINE, "at", None), getattr(_DEADLINE, "clock", time.perf_counter)
    if seconds is not None:
        clock = time.thread_time if cpu else time.perf_counter
        _DEADLINE.at, _DEADLINE.clock = clock() + float(seconds), clock
    try:
        yield
    finally:
        _DEADLINE.at, _DEADLINE.clock = before


class Cancelled(RuntimeError):
    """A computation whose caller no longer wants it (its inputs changed: a new file, new bounds, a new target):
    raised by :func:`check_time` once the event of :func:`cancel_on` is set; nothing it made is kept."""


@contextmanager
def cancel_on(event: threading.Event | None) -> Iterator[None]:
    """Within the block, on this thread only, EM (and any caller of :func:`check_time`) raises :class:`Cancelled`
    as soon as ``event`` is set: checked between EM iterations and between collections, so a superseded search
    stops within milliseconds of an EM step, not at its end (issue 36). None: never cancelled. Blocks nest."""
    before = getattr(_DEADLINE, "cancel", None)
    _DEADLINE.cancel = event
    try:
        yield
    finally:
        _DEADLINE.cancel = before


def check_time() -> None:
    """Raise :class:`Cancelled` when this thread's :func:`cancel_on` event is set, :class:`Stopped` when it is
    inside :func:`stop_after` and its time is up."""
    cancel = getattr(_DEADLINE, "cancel", None)
    if cancel is not None and cancel.is_set():
        raise Cancelled("cancelled: its inputs changed")
    at = getattr(_DEADLINE, "at", None)
    if at is not None and getattr(_DEADLINE, "clock", time.perf_counter)() > at:
        raise Stopped("stopped: it took longer than the time allowed")


def norm_sub(counts: np.ndarray, total: float | None = None) -> np.ndarray:
    """Norm-Sub projection of ``counts`` onto {x >= 0, sum x = total} (NDSS'20, Sec. 4)."""
    c = np.asarray(counts, dtype=float)
    flat = c.ravel()
    total = float(flat.sum()) if total is None else float(total)
    if total <= 0 or flat.size == 0:
        return np.full_like(c, total / max(c.size, 1) if total > 0 else 0.0)
    # Euclidean projection onto the simplex scaled to `total` (sort-based, exact).
    u = np.sort(flat)[::-1]
    css = np.cumsum(u) - total
    k = np.arange(1, flat.size + 1)
    rho = np.nonzero(u - css / k > 0)[0][-1]
    delta = css[rho] / (rho + 1.0)
    return np.maximum(c - delta, 0.0)


def to_distribution(values: np.ndarray, method: str = "clip") -> np.ndarray:
    """A non-negative array of the same shape summing to 1 (uniform if nothing positive remains)."""
    v = np.nan_to_num(np.asarray(values, dtype=float), nan=0.0, posinf=0.0, neginf=0.0)
    if method == "norm-sub":
        v = norm_sub(v, max(v.sum(), 0.0) or None)
    elif method != "clip":
        raise ValueError(f"unknown projection {method!r}; use 'clip' or 'norm-sub'")
    v = np.clip(v, 0.0, None)
    s = v.sum()
    if not np.isfinite(s) or s <= 0:
        return np.full(v.shape, 1.0 / v.size)
    return v / s
