"""Synthetic sets at any n (issue 14.3): seeded, chunked, prefix-consistent, right distribution."""

import numpy as np
import pytest

from ldpviz.data import datasets, synthetic
from ldpviz import experiment
from ldpviz.errors import LdpvizInputError


@pytest.mark.parametrize("name", list(synthetic.DOMAINS))
def test_same_seed_same_points_and_prefix_property(name, monkeypatch):
    """Same seed -> same data; the first m points of a larger set are the m-point set; another seed differs."""
    monkeypatch.setattr(synthetic, "CHUNK", 1000)
    big = synthetic.generate(name, 3500, seed=4)
    again = synthetic.generate(name, 3500, seed=4)
    small = synthetic.generate(name, 1200, seed=4)
    assert np.array_equal(big.lon, again.lon) and np.array_equal(big.lat, again.lat)
    assert np.array_equal(big.lon[:1200], small.lon) and np.array_equal(big.lat[:1200], small.lat)
    assert not np.array_equal(synthetic.generate(name, 1200, seed=5).lon, small.lon)
    assert big.default_region.contains(big.lon, big.lat).all() and big.n == 3500
    lo, la = synthetic.chunk(name, 3500, 3, seed=4)          # any chunk alone, e.g. on a worker
    assert np.array_equal(lo, big.lon[3000:]) and lo.size == 500


def test_normal_has_the_papers_correlation():
    """Normal(0, 0, 1, 1, rho = 0.5): sample correlation of native coordinates within 0.01 at 200k points."""
    ds = synthetic.generate("normal", 200_000, seed=1)
    uv = ds.default_region.to_unit(ds.lon, ds.lat) * 10 - 5
    assert np.corrcoef(uv[:, 0], uv[:, 1])[0, 1] == pytest.approx(0.5, abs=0.01)
    assert uv.std(axis=0) == pytest.approx([1, 1], abs=0.01)


def test_sized_names_load_and_run():
    ds = datasets.load("uniform:n=2500", seed=2)
    assert ds.name == "uniform:n=2500" and ds.n == 2500
    result = experiment.run(experiment.Scenario(dataset="szipf:n=3000", mechanism="grr", grid_side=8))
    assert result.n_users == 3000
    with pytest.raises(LdpvizInputError, match="from 1 to 100,000,000"):
        datasets.load("normal:n=100000001")
    with pytest.raises(LdpvizInputError, match="no synthetic generator"):
        synthetic.generate("nope", 10)
