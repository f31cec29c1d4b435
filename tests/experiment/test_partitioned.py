"""One scenario split into partitions (ldpviz.experiment.partitioned): a Dask cluster gives exactly the serial
result."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ldpviz.cli import commands as cli
from ldpviz.experiment import partitioned
from ldpviz.geo.domain import Region
from ldpviz.errors import LdpvizInputError
from ldpviz.experiment import Scenario

distributed = pytest.importorskip("distributed")

WHOLE = partitioned.synthetic_region()


@pytest.fixture(scope="module")
def client():
    """A small in-process Dask cluster (2 single-threaded workers)."""
    from ldpviz.experiment import executors as parallel
    with parallel.dask_client("local", 2, processes=False) as c:
        yield c


def _same(a: partitioned.PartitionedRun, b: partitioned.PartitionedRun) -> None:
    assert len(a.result.estimates) == len(b.result.estimates)
    for x, y in zip(a.result.estimates, b.result.estimates):
        np.testing.assert_array_equal(x.raw, y.raw)
        np.testing.assert_array_equal(x.density, y.density)
        assert x.info == y.info
    np.testing.assert_array_equal(a.result.true_density, b.result.true_density)
    pd.testing.assert_frame_equal(a.result.metrics, b.result.metrics)


@pytest.mark.parametrize("mechanism,params", [("grr", {}), ("olh", {}), ("oue", {}), ("hr", {}),
                                              ("grr", {"path": "per-user"}), ("olh", {"path": "per-user"}),
                                              ("exact", {}), ("dam", {"path": "aggregate"}),
                                              ("huem", {"path": "per-user"}), ("planar-laplace", {}),
                                              ("mdsw", {}), ("mdsw", {"split": "budget"}), ("sem-geoi",
                                                                                            {"subset_size": 2})])
def test_cluster_run_equals_serial_run(client, mechanism, params):
    """Same seed, same partitions: the Dask run's estimates, truth and metrics equal the serial run's exactly
    (every partition's stream is SeedSequence([seed, trial]).spawn(P)[i]; statistics are integer sums)."""
    source = partitioned.SyntheticSource(partitioned.synthetic_sampler("mnormal"), 30_000, seed=4,
                                         partition_users=7_000)
    scenario = Scenario(dataset="mnormal", mechanism=mechanism, epsilon=1.5, grid_side=8, seed=11, trials=2,
                        params=params)
    serial = partitioned.run_partitioned(scenario, source, WHOLE)
    cluster = partitioned.run_partitioned(scenario, source, WHOLE, executor=client)
    _same(serial, cluster)
    assert serial.result.n_users == 30_000 and len(serial.partitions) == 5
    assert [p.n_users for p in serial.partitions] == [6_000] * 5
    assert serial.result.estimates[0].info.get("partitions") == 5
    if "path" in params:
        assert serial.result.estimate.info["path"] == params["path"]


def test_seed_and_partitioning_drive_the_result():
    """A different seed gives a different estimate; the data of a partition depends only on (seed, index)."""
    source = partitioned.SyntheticSource(partitioned.synthetic_sampler("uniform"), 4_000, seed=1, partition_users=1_000)
    a = partitioned.run_partitioned(Scenario(dataset="uniform", mechanism="grr", grid_side=4, seed=0), source, WHOLE)
    b = partitioned.run_partitioned(Scenario(dataset="uniform", mechanism="grr", grid_side=4, seed=1), source, WHOLE)
    assert not np.array_equal(a.result.estimate.raw, b.result.estimate.raw)
    np.testing.assert_array_equal(source.load(1_000, 2)[0], source.load(1_000, 2)[0])
    assert not np.array_equal(source.load(1_000, 2)[0], source.load(1_000, 3)[0])


def test_synthetic_samplers_follow_their_laws():
    """The per-partition samplers draw the bundled sets' laws: Normal's sample correlation is 0.5 (+-0.02) and
    its mean 0; SZipf's mean is 1/ln 2 - 1 = 0.4427 (+-0.01) in native units; every point is in the square."""
    rng = np.random.default_rng(0)
    lon, lat = partitioned.synthetic_sampler("normal")(50_000, rng)
    uv = WHOLE.to_unit(lon, lat)
    xy = uv * 10.0 - 5.0
    assert np.corrcoef(xy.T)[0, 1] == pytest.approx(0.5, abs=0.02)
    assert np.abs(xy.mean(axis=0)).max() < 0.03
    lon, lat = partitioned.synthetic_sampler("szipf")(50_000, rng)
    assert WHOLE.to_unit(lon, lat).mean() == pytest.approx(1 / np.log(2) - 1, abs=0.01)
    for name in partitioned.SYNTHETIC_SAMPLERS:
        uv = WHOLE.to_unit(*partitioned.synthetic_sampler(name)(5_000, rng))
        assert np.all((uv >= 0) & (uv <= 1))
    with pytest.raises(LdpvizInputError, match="cannot be generated per partition"):
        partitioned.synthetic_sampler("minneapolis-stops")


def test_parquet_partitions_on_the_cluster_equal_serial(client, tmp_path):
    """A directory of three Parquet files read as a dask.dataframe: equal results both ways; rows with a
    missing or impossible coordinate and points outside the region are counted, not silently dropped."""
    rng = np.random.default_rng(3)
    region = Region(10.0, 50.0, 20_000.0, "box")
    folder = tmp_path / "points"
    folder.mkdir()
    for k in range(3):
        lon, lat = region.unit_to_lonlat(rng.random((2_000, 2)) * 0.8 + 0.1)
        frame = pd.DataFrame({"longitude": lon, "latitude": lat, "other": "x"})
        frame.loc[0, "latitude"] = np.nan           # missing
        frame.loc[1, "latitude"] = 95.0             # impossible
        frame.loc[2, "longitude"] = 11.0            # far east of the 20 km box
        frame.to_parquet(folder / f"part{k}.parquet")
    source = partitioned.ParquetSource(str(folder))
    scenario = Scenario(dataset="file", mechanism="olh", epsilon=2.0, grid_side=8, seed=3, trials=1)
    serial = partitioned.run_partitioned(scenario, source, region)
    cluster = partitioned.run_partitioned(scenario, source, region, executor=client)
    _same(serial, cluster)
    assert serial.result.n_users == 3 * 1_997 and serial.result.n_outside == 3
    assert sum(p.n_invalid for p in serial.partitions) == 6
    assert any("6 rows had a missing or impossible coordinate" in n for n in serial.result.notes)


def test_parquet_with_wrong_types_is_refused(tmp_path):
    path = tmp_path / "bad.parquet"
    pd.DataFrame({"lat": ["a", "b"], "lon": [1.0, 2.0]}).to_parquet(path)
    with pytest.raises(LdpvizInputError, match="column 'lat' holds"):
        partitioned.ParquetSource(str(path))
    pd.DataFrame({"a": [1.0], "b": [2.0]}).to_parquet(tmp_path / "nocols.parquet")
    with pytest.raises(LdpvizInputError, match="no latitude/longitude columns"):
        partitioned.ParquetSource(str(tmp_path / "nocols.parquet"))


@pytest.mark.parametrize("name,params,message", [
    ("dp-heatmap", {}, "central-DP aggregator"), ("privag", {}, "two rounds"), ("aag", {}, "two rounds"),
    ("pldp", {}, "sign matrix"), ("srr", {"domain": "occupied"}, "built from the users' own data"),
    ("ug", {"path": "aggregate"}, "no client half"), ("ug", {}, "additive statistic")])
def test_mechanisms_that_cannot_be_split_say_why(name, params, message):
    source = partitioned.SyntheticSource(partitioned.synthetic_sampler("uniform"), 1_000, partition_users=500)
    with pytest.raises(LdpvizInputError, match=message):
        partitioned.run_partitioned(Scenario(dataset="uniform", mechanism=name, grid_side=4, params=params),
                                    source, WHOLE)


def test_partition_sizes():
    assert partitioned.partition_sizes(10, 3) == [3, 3, 2, 2]
    assert partitioned.partition_sizes(100_000_000, 1_000_000) == [1_000_000] * 100
    with pytest.raises(LdpvizInputError, match="more than"):
        partitioned.partition_sizes(10 ** 9, 1)


def test_cli_partitioned_run_and_bad_input(tmp_path, capsys):
    """`ldpviz run --partition-users` runs the serial partitioned run; bad combinations exit 2 with one line."""
    assert cli.main(["run", "--dataset", "normal", "--users", "20000", "--partition-users", "5000",
                     "--mechanism", "hr", "--grid", "8", "--json"]) == 0
    out = capsys.readouterr().out
    assert '"n_users": 20000' in out and "4 partitions (serially, here)" in out
    assert cli.main(["run", "--dataset", "normal", "--partition-users", "5000"]) == 2
    assert "--users is required" in capsys.readouterr().err
    csv = tmp_path / "p.csv"
    csv.write_text("lat,lon\n1,2\n")
    assert cli.main(["run", "--csv", str(csv), "--scheduler", "local", "--bbox", "1,1,3,3"]) == 2
    assert "reads Parquet" in capsys.readouterr().err
    pd.DataFrame({"lat": [1.0], "lon": [2.0]}).to_parquet(tmp_path / "p.parquet")
    assert cli.main(["run", "--csv", str(tmp_path / "p.parquet"), "--partition-users", "10"]) == 2
    assert "--bbox is required" in capsys.readouterr().err
    assert cli.main(["run", "--dataset", "normal", "--users", "100", "--scheduler", "nowhere:xx"]) == 2
    assert "scheduler" in capsys.readouterr().err
    assert cli.main(["run", "--dataset", "normal", "--users", "100", "--workers", "2"]) == 2
    assert "--workers sets the size of a local cluster" in capsys.readouterr().err


def test_missing_dask_gives_a_clear_message(monkeypatch):
    import builtins
    real = builtins.__import__

    def no_dask(name, *args, **kwargs):
        if name == "dask" or name.startswith("dask."):
            raise ImportError(name)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_dask)
    with pytest.raises(LdpvizInputError, match=r"pip install 'ldpviz\[cluster\]'"):
        partitioned.require_dask("reading a Parquet file in partitions")


def test_synthetic_region_presets():
    assert partitioned.synthetic_region("Centre").side_m == WHOLE.side_m / 2
    with pytest.raises(LdpvizInputError, match="no region preset"):
        partitioned.synthetic_region("Downtown")


def test_streams_are_the_spawned_children():
    """The perturbation stream of partition i is SeedSequence([seed, trial]).spawn(P)[i], and the data stream
    SeedSequence([seed, DATA_KEY]).spawn(P)[i], as documented."""
    job = partitioned.Job(WHOLE, 4, "grr", 1.0, (), 9, 2, 6)
    for trial, index in ((0, 0), (1, 5)):
        child = np.random.SeedSequence([9, trial]).spawn(6)[index]
        assert job.rng(trial, index).random() == np.random.default_rng(child).random()
    source = partitioned.SyntheticSource(partitioned.synthetic_sampler("uniform"), 600, seed=4, partition_users=100)
    child = np.random.SeedSequence([4, partitioned.DATA_KEY]).spawn(6)[3]
    expected = partitioned.synthetic_sampler("uniform")(100, np.random.default_rng(child))
    np.testing.assert_array_equal(source.load(100, 3)[0], expected[0])
    with pytest.raises(LdpvizInputError, match="partition 6 is not one of 6"):
        job.rng(0, 6)
