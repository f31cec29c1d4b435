"""The experiment runner: Scenario -> Result, sweeps and summaries."""

import numpy as np
import pandas as pd
import pytest

from ldpviz.data import datasets
from ldpviz import experiment
from ldpviz.errors import LdpvizInputError
from ldpviz.experiment import Scenario

SMALL = Scenario(dataset="minneapolis-stops", mechanism="grr", epsilon=2.0, grid_side=8, n_users=3000, seed=3)


def test_same_scenario_same_result():
    """Determinism: the same scenario and seed give identical estimates and metrics."""
    a, b = experiment.run(SMALL), experiment.run(SMALL)
    np.testing.assert_array_equal(a.estimate.density, b.estimate.density)
    pd.testing.assert_frame_equal(a.metrics, b.metrics)


def test_different_seed_different_estimate():
    a, b = experiment.run(SMALL), experiment.run(SMALL.with_(seed=4))
    assert not np.array_equal(a.estimate.density, b.estimate.density)


def test_exact_mechanism_has_zero_error():
    """With no privacy the estimate is the truth: W2 = 0, KL = 0, L1 = 0."""
    r = experiment.run(SMALL.with_(mechanism="exact"))
    m = r.mean()
    assert m["w2_m"] == pytest.approx(0, abs=1e-6) and m["l1"] == pytest.approx(0, abs=1e-12)
    assert m["kl"] == pytest.approx(0, abs=1e-6)  # only the documented 1e-10 floor


def test_result_contents_and_subsample():
    r = experiment.run(SMALL.with_(trials=3))
    assert r.n_users == 3000 and len(r.metrics) == 3 and len(r.estimates) == 3
    assert r.true_density.sum() == pytest.approx(1)
    assert set(r.timings) >= {"perturb", "estimate", "metrics", "total"}
    assert any("sample of 3,000" in n for n in r.notes)
    s = r.summary()
    assert s["w2_m"] > 0 and s["trials"] == 3


def test_points_outside_region_are_reported():
    """A sub-area preset leaves points out, and the Result says how many."""
    from ldpviz.data import datasets
    ds = datasets.load("minneapolis-stops")
    preset = list(ds.presets)[1]
    r = experiment.run(SMALL.with_(region=preset, n_users=None))
    assert r.n_outside > 0 and r.n_users + r.n_outside == ds.n
    assert any("outside the region" in n for n in r.notes)


def test_empty_region_is_a_clear_error():
    from ldpviz.geo.domain import Region
    with pytest.raises(LdpvizInputError, match="contains none"):
        experiment.run(SMALL.with_(region=Region(0.0, 60.0, 1000.0)))


def test_unknown_preset_and_bad_fields():
    with pytest.raises(LdpvizInputError, match="no region preset"):
        experiment.run(SMALL.with_(region="atlantis"))
    with pytest.raises(LdpvizInputError, match="trials"):
        Scenario(trials=0)
    with pytest.raises(LdpvizInputError, match="users"):
        Scenario(n_users=0)


def test_with_routes_mechanism_params():
    s = SMALL.with_(projection="norm-sub", epsilon=3.0)
    assert s.param_dict == {"projection": "norm-sub"} and s.epsilon == 3.0
    assert hash(s) != hash(SMALL)


def test_sweep_is_tidy_and_error_falls_with_epsilon():
    """One row per (scenario, trial); mean W2 of GRR at eps=8 is below that at eps=0.5."""
    df = experiment.sweep(SMALL.with_(trials=2), {"epsilon": [0.5, 8.0]})
    assert len(df) == 4 and set(df["epsilon"]) == {0.5, 8.0}
    summary = experiment.summarise(df, ["epsilon"])
    assert {"w2_m", "w2_m_lo", "w2_m_hi", "trials"} <= set(summary.columns)
    lo, hi = summary.set_index("epsilon").loc[[0.5, 8.0], "w2_m"]
    assert hi < lo
    row = summary.iloc[0]
    assert row["w2_m_lo"] <= row["w2_m"] <= row["w2_m_hi"]


def test_sweep_with_process_executor_matches_serial():
    """Parallel sweeps give the same numbers: randomness derives from (seed, trial) only."""
    from concurrent.futures import ProcessPoolExecutor
    vary = {"epsilon": [1.0, 4.0]}
    serial = experiment.sweep(SMALL, vary)
    with ProcessPoolExecutor(2) as pool:
        parallel = experiment.sweep(SMALL, vary, executor=pool)
    cols = ["epsilon", "w2_m", "kl", "aqe"]
    pd.testing.assert_frame_equal(serial[cols], parallel[cols])


def test_cell_spread_is_the_trials_per_cell_sd_and_ci():
    """cell_spread: the per-cell sample sd over trials, and the t CI width 2 t s / sqrt(k); one trial is refused."""
    r = experiment.run(SMALL.with_(trials=4))
    stack = np.stack([e.density for e in r.estimates])
    sd = r.cell_spread("sd")
    assert sd.shape == (8, 8) and (sd > 0).any()
    np.testing.assert_allclose(sd, stack.std(axis=0, ddof=1))
    from scipy import stats
    np.testing.assert_allclose(r.cell_spread("ci"), 2 * stats.t.ppf(0.975, 3) * sd / 2.0)
    with pytest.raises(LdpvizInputError, match="at least 2 trials"):
        experiment.run(SMALL).cell_spread()
    mean, lo, hi = r.metric_ci("w2_m")
    assert lo < mean < hi and mean == pytest.approx(r.metrics["w2_m"].mean())


def test_approximate_transport_readout_is_flagged(monkeypatch):
    """Issue 15.14: every Result says how W2 and EMD were computed; an approximate one (BFM, forced here by
    lowering the thresholds) is flagged in Result.readouts and in a note giving the interval in metres."""
    from ldpviz import metrics
    r = experiment.run(SMALL)
    assert len(r.readouts) == 1 and r.readouts[0]["w2_m"].exact and r.approximate_readouts() == {}
    assert not any("approximate" in n for n in r.notes)
    monkeypatch.setattr(metrics.transport, "AUTO_EXACT_MAX_PAIRS", 0)
    monkeypatch.setattr(metrics.transport, "AUTO_W2_BUDGET_S", 0.0)
    monkeypatch.setattr(metrics.transport, "SUPPORT_EXACT_MAX_PAIRS", 0)
    r = experiment.run(SMALL)
    flagged = r.approximate_readouts()
    assert set(flagged) == {"w2_m"} and flagged["w2_m"].method == "bfm"
    w2 = r.metrics["w2_m"].iloc[0]
    assert flagged["w2_m"].value == pytest.approx(w2) and flagged["w2_m"].lower <= w2 <= flagged["w2_m"].upper
    assert any(n.startswith("W2 (m) is approximate") for n in r.notes)


def test_query_size_rho_reaches_the_aqe():
    """Scenario.query_rho (default 1%) sets the range-query size of AQE: a run's AQE equals the core eq. 8-9
    AQE on the raw partition with random_queries(rho, seed = scenario seed), and a bad rho is refused."""
    from ldpviz import metrics
    for rho in (0.01, 0.05):
        scenario = SMALL.with_(mechanism="ug", query_rho=rho, params={"cells_per_side": 4})
        result = experiment.run(scenario)
        queries = metrics.random_queries(rho, seed=scenario.seed)
        pts = experiment.prepare_users(scenario, datasets.load(scenario.dataset))[1].unit
        expect = metrics.aqe(pts, result.estimate.partition, n_users=result.n_users, queries=queries)
        assert result.metrics["aqe"].iloc[0] == pytest.approx(expect, rel=1e-12)
    assert Scenario().query_rho == 0.01
    with pytest.raises(LdpvizInputError, match="rho"):
        Scenario(query_rho=0.0)
