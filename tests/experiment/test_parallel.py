"""Scale-out of sweeps (ldpviz.experiment.executors): local processes and a Dask cluster give the serial results.

The Dask tests start their own loopback-only cluster (127.0.0.1, no dashboard)
and are skipped when the optional ``distributed`` package is missing.
"""

from __future__ import annotations

import builtins
import io
import contextlib

import pandas as pd
import pytest

from ldpviz.cli import commands as cli
from ldpviz import experiment
from ldpviz.experiment import executors as parallel
from ldpviz.errors import LdpvizInputError

BASE = experiment.Scenario(dataset="uniform", mechanism="grr", epsilon=1.0, grid_side=8, n_users=3_000, seed=4,
                           trials=2)
VARY = {"epsilon": [0.5, 2.0], "grid_side": [4, 8]}


def _without_timing(df: pd.DataFrame) -> pd.DataFrame:
    return df.drop(columns=[c for c in df.columns if c == "seconds"]).reset_index(drop=True)


@pytest.fixture(scope="module")
def serial() -> pd.DataFrame:
    return experiment.sweep(BASE, VARY)


@pytest.fixture(scope="module")
def dask_cluster():
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                       dashboard_address=None)
    try:
        yield cluster
    finally:
        cluster.close()


@pytest.mark.parametrize("address,expected", [("tcp://10.0.0.5:8786", "tcp://10.0.0.5:8786"),
                                              ("scheduler.lab:8786", "tcp://scheduler.lab:8786"),
                                              (" local ", "local"), ("tls://h:1", "tls://h:1")])
def test_scheduler_addresses_accepted(address: str, expected: str) -> None:
    assert parallel.validate_scheduler(address) == expected


@pytest.mark.parametrize("address", ["", "http://h:8786", "tcp://", "tcp://a b:1", "8786", None])
def test_bad_scheduler_addresses_are_input_errors(address) -> None:
    with pytest.raises(LdpvizInputError):
        parallel.validate_scheduler(address)


@pytest.mark.parametrize("workers", [0, -1, 1000, 2.5, True])
def test_bad_worker_counts_are_input_errors(workers) -> None:
    with pytest.raises(LdpvizInputError):
        with parallel.executor_for(workers=workers):
            pass


def test_missing_dask_is_a_clear_error(monkeypatch) -> None:
    """Without the optional extra, --scheduler says what to install."""
    real_import = builtins.__import__

    def no_distributed(name, *args, **kwargs):
        if name == "distributed" or name.startswith("distributed."):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_distributed)
    with pytest.raises(LdpvizInputError, match=r"ldpviz\[cluster\]"):
        with parallel.executor_for(scheduler="tcp://127.0.0.1:8786"):
            pass


@pytest.mark.slow
def test_unreachable_scheduler_is_a_clear_error(monkeypatch) -> None:
    pytest.importorskip("distributed")
    monkeypatch.setattr(parallel, "CONNECT_TIMEOUT_S", 2.0)
    with pytest.raises(LdpvizInputError, match="could not reach"):
        with parallel.executor_for(scheduler="tcp://127.0.0.1:9"):
            pass


def test_serial_when_one_worker() -> None:
    with parallel.executor_for(workers=1) as executor:
        assert executor is None


def test_local_processes_match_serial(serial: pd.DataFrame) -> None:
    """Same seeds, same table: two worker processes reproduce the serial sweep exactly."""
    with parallel.executor_for(workers=2) as executor:
        df = experiment.sweep(BASE, VARY, executor=executor)
    pd.testing.assert_frame_equal(_without_timing(df), _without_timing(serial))


@pytest.mark.slow
def test_dask_cluster_matches_serial(serial: pd.DataFrame, dask_cluster) -> None:
    """A Dask cluster (2 loopback worker processes) reproduces the serial sweep exactly."""
    with parallel.executor_for(scheduler=dask_cluster.scheduler_address) as executor:
        df = experiment.sweep(BASE, VARY, executor=executor)
    pd.testing.assert_frame_equal(_without_timing(df), _without_timing(serial))


@pytest.mark.slow
def test_cli_sweep_on_dask_matches_local(dask_cluster, tmp_path) -> None:
    """`ldpviz sweep --scheduler ADDRESS` writes the same CSV as the local run."""
    args = ["sweep", "--dataset", "uniform", "--grid", "8", "--users", "2000", "--trials", "2", "--seed", "1",
            "--vary", "epsilon=0.5,4"]
    local, remote = tmp_path / "local.csv", tmp_path / "dask.csv"
    with contextlib.redirect_stderr(io.StringIO()):
        assert cli.main(args + ["--out", str(local)]) == 0
        assert cli.main(args + ["--out", str(remote), "--scheduler", dask_cluster.scheduler_address]) == 0
    pd.testing.assert_frame_equal(_without_timing(pd.read_csv(remote)), _without_timing(pd.read_csv(local)))


def test_cli_bad_scheduler_exits_2(capsys) -> None:
    code = cli.main(["sweep", "--dataset", "uniform", "--vary", "epsilon=1,2", "--scheduler", "http://x"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "scheduler" in err and "Traceback" not in err
