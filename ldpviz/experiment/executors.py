"""Executors for sweeps: serial, local worker processes, or an existing Dask cluster.

Sweeps are embarrassingly parallel: :func:`ldpviz.experiment.sweep` submits one
task per scenario to any :class:`concurrent.futures.Executor` and gathers the
results in submission order. Every trial draws its randomness from
``(seed, trial)`` only, so the table is identical whichever executor ran it.

* ``workers <= 1`` and no scheduler: no executor (run in this process).
* ``workers > 1``: a local :class:`~concurrent.futures.ProcessPoolExecutor`.
* ``scheduler="tcp://host:8786"``: the ``concurrent.futures`` executor of a
  ``distributed.Client`` connected to that Dask scheduler, so a research team
  can run paper-size grids on a cluster they already run. ``scheduler="local"``
  starts a throw-away local Dask cluster (loopback only) with ``workers``
  processes, handy to try the cluster path on one machine.

Dask is optional (``pip install ldpviz[cluster]``); without it, asking for a
scheduler is an input error that says what to install. The workers need the
same ``ldpviz`` installed (or importable) as the client.
"""

from __future__ import annotations

import contextlib
import os
import re
from concurrent.futures import Executor, ProcessPoolExecutor
from typing import Any, Iterator

from ldpviz.errors import LdpvizInputError, require

#: Seconds to wait for a Dask scheduler before giving up with a clear message.
CONNECT_TIMEOUT_S = 10.0
MAX_LOCAL_WORKERS = 256
_ADDRESS = re.compile(r"^(tcp|tls|ucx|inproc|ws|wss)://[^\s/:]+(:\d{1,5})?/?$")


def validate_scheduler(address: str) -> str:
    """A Dask scheduler address such as ``tcp://10.0.0.5:8786`` (or ``local``); clear error otherwise."""
    require(isinstance(address, str) and address.strip() != "",
            f"--scheduler needs an address such as tcp://host:8786, got {address!r}")
    address = address.strip()
    if address == "local":
        return address
    if "://" not in address and re.fullmatch(r"[^\s/:]+:\d{1,5}", address):
        address = "tcp://" + address
    require(bool(_ADDRESS.match(address)),
            f"--scheduler expects a Dask scheduler address like tcp://host:8786 (or 'local'), got {address!r}")
    return address


def _require_distributed() -> None:
    try:
        import distributed  # noqa: F401
    except ImportError:
        raise LdpvizInputError("running on a Dask cluster needs the optional 'distributed' package: "
                               "pip install 'ldpviz[cluster]' (or: pip install 'dask[distributed]')") from None


@contextlib.contextmanager
def dask_client(address: str, workers: int | None = None, processes: bool = True) -> Iterator[Any]:
    """A ``distributed.Client`` connected to ``address`` (``local``: a new loopback cluster of ``workers``
    single-threaded workers, processes or, with ``processes=False``, threads of this process)."""
    address = validate_scheduler(address)
    _require_distributed()
    from distributed import Client, LocalCluster

    cluster = None
    try:
        if address == "local":
            where = {"host": "127.0.0.1"} if processes else {}   # threads talk in-process (inproc://)
            cluster = LocalCluster(n_workers=max(1, workers or os.cpu_count() or 1), threads_per_worker=1,
                                   processes=processes, dashboard_address=None, **where)
            client = Client(cluster)
        else:
            try:
                client = Client(address, timeout=CONNECT_TIMEOUT_S)
            except (OSError, TimeoutError) as exc:
                raise LdpvizInputError(f"could not reach the Dask scheduler at {address} within "
                                       f"{CONNECT_TIMEOUT_S:g} s ({type(exc).__name__}); is it running and "
                                       "reachable from here?") from None
        try:
            yield client
        finally:
            client.close()
    finally:
        if cluster is not None:
            cluster.close()


@contextlib.contextmanager
def dask_executor(address: str, workers: int | None = None) -> Iterator[Executor]:
    """The executor of a Dask client connected to ``address`` (``local``: a new loopback cluster)."""
    with dask_client(address, workers) as client:
        yield client.get_executor()


@contextlib.contextmanager
def executor_for(workers: int | None = 1, scheduler: str | None = None) -> Iterator[Executor | None]:
    """The executor a sweep should use: None (serial), local processes, or a Dask cluster's.

    Use as ``with executor_for(workers=4) as ex: experiment.sweep(..., executor=ex)``;
    processes and cluster connections are released on exit.
    """
    if workers is not None:
        require(isinstance(workers, int) and not isinstance(workers, bool) and 1 <= workers <= MAX_LOCAL_WORKERS,
                f"--workers must be a whole number from 1 to {MAX_LOCAL_WORKERS}, got {workers!r}")
    if scheduler is not None:
        with dask_executor(scheduler, workers) as executor:
            yield executor
        return
    if workers is None or workers <= 1:
        yield None
        return
    pool = ProcessPoolExecutor(workers)
    try:
        yield pool
    finally:
        pool.shutdown(cancel_futures=True)
