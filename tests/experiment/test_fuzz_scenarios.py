"""Property-based fuzzing of the whole Scenario -> Result path for every registered mechanism.

For any epsilon in [0.01, 20], grid side d, mechanism parameters within their
declared ranges, and awkward populations (one user, a few, all identical,
collinear, packed inside one cell, none in the region), ``experiment.run``
either returns a valid Result (finite metrics, every estimate a distribution on
the d x d grid) or raises LdpvizInputError with a message -- never anything
else. The mechanism list comes from the registry, so new families are fuzzed
without touching this file. Users are capped at a few hundred to bound runtime.
"""

from __future__ import annotations

import contextlib
import math
import resource

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ldpviz import experiment, mechanisms
from ldpviz.data.datasets import Dataset
from ldpviz.geo.domain import Region
from ldpviz.errors import LdpvizInputError

NAMES = mechanisms.available()
REGION = Region(10.0, 50.0, 4_000.0, "fuzz square")
SHAPES = ("random", "identical", "collinear", "inside one cell", "outside the region", "corners and edges")
FUZZ = settings(max_examples=10, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def population(shape: str, n: int, d: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """lon/lat of ``n`` points of the given awkward shape inside (or outside) REGION."""
    rng = np.random.default_rng(seed)
    if shape == "random":
        uv = rng.random((n, 2))
    elif shape == "identical":
        uv = np.tile(rng.random(2), (n, 1))
    elif shape == "collinear":
        t = rng.random(n)
        uv = np.column_stack([t, 0.2 + 0.6 * t])
    elif shape == "inside one cell":                   # a patch smaller than one cell
        uv = (rng.integers(0, d, 2) + 0.25 + 0.5 * rng.random((n, 2))) / d
    elif shape == "outside the region":
        uv = 2.0 + rng.random((n, 2))
    else:                                              # exactly on the borders and corners
        uv = rng.choice([0.0, 1.0, 0.5], size=(n, 2))
    lon, lat = REGION.unit_to_lonlat(uv)
    return np.asarray(lon, float), np.asarray(lat, float)


def dataset(shape: str, n: int, d: int, seed: int) -> Dataset:
    lon, lat = population(shape, n, d, seed)
    return Dataset(name=f"fuzz-{shape}", label="fuzz", description="fuzz population", lon=lon, lat=lat,
                   presets={REGION.name: REGION}, synthetic=True)


@st.composite
def parameters(draw: st.DrawFn, name: str, full_range: bool = False) -> dict:
    """Values for a random subset of the mechanism's declared parameters, within their declared ranges.

    By default numbers stay within a moderate span above the minimum (8x the default above it, or 32 above the
    minimum when the default is computed or 0); ``full_range`` uses the whole declared range.
    """
    out = {}
    for p in mechanisms.get(name).params:
        if not draw(st.booleans()):
            continue
        if p.choices is not None:
            out[p.name] = draw(st.sampled_from(p.choices))
        elif p.kind is bool:
            out[p.name] = draw(st.booleans())
        elif p.kind in (int, float):
            low = p.minimum if p.minimum is not None else (0 if p.default is None else min(0, p.default))
            high = p.maximum if p.maximum is not None else max(10 * abs(p.default or 1), low + 10)
            if not full_range:
                span = low + (8 * abs(p.default) if isinstance(p.default, (int, float)) and p.default else 32)
                high = min(high, span)
            high = min(high, low + 1e6)
            value = draw(st.floats(low, high, allow_nan=False, allow_infinity=False))
            if p.kind is int:
                value = min(max(int(round(value)), math.ceil(low)), math.floor(high))
            out[p.name] = value
    return out


#: Address-space cap while a fuzz case runs: a runaway allocation fails the case with MemoryError
#: instead of taking the machine down (the whole suite runs in a few hundred MB).
MEMORY_CAP_BYTES = 8 * 2**30


@contextlib.contextmanager
def memory_cap(limit: int = MEMORY_CAP_BYTES):
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    capped = limit if hard == resource.RLIM_INFINITY else min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (capped, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def check_outcome(scenario: experiment.Scenario, data: Dataset) -> None:
    """A valid Result or an LdpvizInputError with a message; anything else fails the test."""
    try:
        with memory_cap():
            result = experiment.run(scenario, data)
    except LdpvizInputError as err:
        assert str(err).strip(), "LdpvizInputError without a message"
        return
    d = scenario.grid_side
    numeric = result.metrics.drop(columns=["trial"]).select_dtypes("number")
    bad = numeric.columns[~np.isfinite(numeric.to_numpy(float)).all(axis=0)].tolist()
    assert not bad, f"non-finite metrics {bad} for {scenario}"
    assert np.isclose(result.true_density.sum(), 1.0)
    for est in result.estimates:
        assert est.density.shape == (d, d)
        assert np.all(np.isfinite(est.density)) and est.density.min() >= 0, scenario
        assert np.isclose(est.density.sum(), 1.0, atol=1e-9), (scenario, est.density.sum())
        # the partition may hold raw (unprojected) masses, e.g. the adaptive grids' unbiased estimates
        assert np.all(np.isfinite(est.partition.mass)), scenario


def _scenario(name: str, data: st.DataObject, max_side: int, max_users: int,
              full_range: bool = False) -> tuple[experiment.Scenario, Dataset]:
    epsilon = data.draw(st.floats(0.01, 20.0), label="epsilon")
    side = data.draw(st.integers(1, max_side), label="d")
    shape = data.draw(st.sampled_from(SHAPES), label="shape")
    n_points = data.draw(st.sampled_from([1, 2, 3, 7, 40, max_users]), label="points")
    n_users = data.draw(st.one_of(st.none(), st.integers(1, max_users)), label="n_users")
    params = data.draw(parameters(name, full_range), label="params")
    seed = data.draw(st.integers(0, 2**31), label="seed")
    scenario = experiment.Scenario(dataset="fuzz", mechanism=name, epsilon=epsilon, grid_side=side,
                                   region=REGION, params=params, n_users=n_users, seed=seed,
                                   trials=data.draw(st.integers(1, 2), label="trials"))
    return scenario, dataset(shape, n_points, side, seed)


@pytest.mark.parametrize("name", NAMES)
@FUZZ
@given(data=st.data())
def test_any_scenario_gives_result_or_input_error(name: str, data: st.DataObject) -> None:
    """Small grids (d <= 24), at most 300 users: every case ends in a valid Result or LdpvizInputError."""
    check_outcome(*_scenario(name, data, max_side=24, max_users=300))


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=4, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_large_grids_give_result_or_input_error(name: str, data: st.DataObject) -> None:
    """Grids up to d = 256 (65,536 cells): a valid Result or a clear refusal (e.g. 'grid too big')."""
    scenario, ds = _scenario(name, data, max_side=256, max_users=200)
    scenario = scenario.with_(grid_side=data.draw(st.integers(100, 256), label="large d"))
    check_outcome(scenario, ds)


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=6, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_full_parameter_ranges_give_result_or_input_error(name: str, data: st.DataObject) -> None:
    """Parameters anywhere in their declared ranges (e.g. the largest radius): a Result or a clear refusal,
    within the memory cap."""
    check_outcome(*_scenario(name, data, max_side=16, max_users=100, full_range=True))


def _extreme_cases() -> list:
    return [pytest.param(name, epsilon, id=f"{epsilon:g}-{name}") for name in NAMES for epsilon in (0.01, 20.0, 50.0)]


@pytest.mark.parametrize("name,epsilon", _extreme_cases())
def test_extreme_epsilon_is_finite(name: str, epsilon: float) -> None:
    """The edges of the epsilon range (e^eps up to e^50) give no overflow or NaN."""
    scenario = experiment.Scenario(dataset="fuzz", mechanism=name, epsilon=epsilon, grid_side=8, region=REGION,
                                   seed=1)
    check_outcome(scenario, dataset("random", 200, 8, 1))


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("epsilon", [0.0, -1.0, math.nan, math.inf, 1e-9, 51.0, "one"])
def test_invalid_epsilon_is_an_input_error(name: str, epsilon) -> None:
    scenario = experiment.Scenario(dataset="fuzz", mechanism=name, epsilon=epsilon, grid_side=4, region=REGION)
    with pytest.raises(LdpvizInputError):
        experiment.run(scenario, dataset("random", 20, 4, 0))


@pytest.mark.parametrize("name", NAMES)
def test_unknown_and_out_of_range_parameters_are_input_errors(name: str) -> None:
    data = dataset("random", 20, 4, 0)
    bad = [{"no_such_parameter": 1}]
    for p in mechanisms.get(name).params:
        if p.choices is not None:
            bad.append({p.name: "not-a-choice"})
        elif p.kind in (int, float):
            bad.append({p.name: "abc"})
            bad.append({p.name: math.nan})
            if p.minimum is not None:
                bad.append({p.name: p.minimum - 1})
            if p.maximum is not None:
                bad.append({p.name: p.maximum + 1})
    for params in bad:
        scenario = experiment.Scenario(dataset="fuzz", mechanism=name, grid_side=4, region=REGION, params=params)
        with pytest.raises(LdpvizInputError):
            experiment.run(scenario, data)


@pytest.mark.parametrize("side", [0, -3, 1025, 2.5, "8", True])
def test_invalid_grid_side_is_an_input_error(side) -> None:
    scenario = experiment.Scenario(dataset="fuzz", mechanism="grr", grid_side=side, region=REGION)
    with pytest.raises(LdpvizInputError):
        experiment.run(scenario, dataset("random", 20, 4, 0))


def test_empty_region_is_an_input_error_with_message() -> None:
    scenario = experiment.Scenario(dataset="fuzz", mechanism="grr", grid_side=4, region=REGION)
    with pytest.raises(LdpvizInputError, match="contains none"):
        experiment.run(scenario, dataset("outside the region", 50, 4, 0))


@pytest.mark.parametrize("field,value", [("n_users", 0), ("n_users", -5), ("trials", 0), ("trials", 10_000),
                                         ("seed", -1), ("n_users", 2.5)])
def test_invalid_scenario_fields_are_input_errors(field: str, value) -> None:
    with pytest.raises(LdpvizInputError):
        experiment.Scenario(dataset="fuzz", mechanism="grr", **{field: value})


def test_one_point_against_a_dam_estimate_on_174_squared_cells_is_solved_despite_round_off():
    """A case the large-grid fuzz test found (DAM at epsilon 4.94 with EMS, one point, d = 174): the supplies and
    demands, each summing to 1, round differently over 30,276 cells and left 1.01e-12 on the network simplex's
    artificial root, just over a fixed 1e-12, so the run raised instead of giving W2. The tolerance now grows with
    the nodes, and the value must equal the closed form for one source point (all mass travels to it:
    W2^2 = sum_j q_j |x0 - x_j|^2)."""
    scenario = experiment.Scenario(dataset="fuzz", mechanism="dam", epsilon=4.9375, grid_side=174, region=REGION,
                                   params={"radius": 0.0, "postprocess": "ems"}, seed=0, trials=1)
    result = experiment.run(scenario, dataset("random", 1, 1, 0))
    p, q = result.true_density, result.estimates[0].density
    assert np.count_nonzero(p) == 1 and np.count_nonzero(q) > 10_000
    r0, c0 = np.unravel_index(int(np.argmax(p)), p.shape)
    rows, cols = np.indices(p.shape)
    closed_form = math.sqrt(float((q * ((rows - r0) ** 2 + (cols - c0) ** 2)).sum()))
    assert result.metrics["w2_cells"].iloc[0] == pytest.approx(closed_form, rel=1e-9)
