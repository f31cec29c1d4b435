"""Traffic-aware navigation with LDP location updates (ldpviz.flows.navigation, L-SRR Sec. 4.2 / App. C.1)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from ldpviz.flows import navigation as N
from ldpviz.cli import main
from ldpviz.geo.domain import Region
from ldpviz.errors import LdpvizInputError

REGION = Region(0.0, 0.0, 4_000.0, "test square")


def _city(seed: int = 0):
    """Background traffic plus a dense jam in the middle band; trips cross the band west to east."""
    rng = np.random.default_rng(seed)
    uv = np.vstack([rng.random((4_000, 2)), np.column_stack([rng.uniform(0.4, 0.6, 6_000), rng.random(6_000)])])
    lon, lat = REGION.unit_to_lonlat(uv)
    o = np.column_stack([rng.uniform(0.0, 0.2, 300), rng.random(300)])
    d = np.column_stack([rng.uniform(0.8, 1.0, 300), rng.random(300)])
    (olon, olat), (dlon, dlat) = REGION.unit_to_lonlat(o), REGION.unit_to_lonlat(d)
    return lon, lat, olon, olat, dlon, dlat


def _run(mech="exact", eps=1.0, theta=0.0, **kw):
    lon, lat, olon, olat, dlon, dlat = _city()
    return N.simulate_navigation(lon, lat, olon, olat, dlon, dlat, REGION, 10, mech, eps, theta,
                                 n_trips=40, delay_s=20.0, **kw)


def test_levenshtein():
    assert N.levenshtein([1, 2, 3], [1, 2, 3]) == 0
    assert N.levenshtein([1, 2, 3], [1, 3]) == 1
    assert N.levenshtein([], [4, 5]) == 2
    assert N.levenshtein([1, 2, 3, 4], [4, 3, 2, 1]) == 4


def test_exact_congestion_needs_at_most_one_update():
    """With the true congestion (no privacy) a re-planned trip is never late again: lambda <= 1."""
    res = _run("exact", theta=0.0)
    assert res.updates.max() <= 1 and res.updates.sum() > 0
    assert (res.time_deviation_s >= -1e-9).all()


def test_large_theta_means_no_updates_and_no_privacy_cost():
    """theta above any possible delay: no location is ever sent (lambda = 0, total epsilon 0)."""
    res = _run("srr", theta=1e9)
    s = res.summary()
    assert s["max_updates"] == 0 and s["mean_total_epsilon"] == 0.0 and s["settings"]["windows_collected"] == 0


def test_no_congestion_means_the_free_flow_route_is_best():
    """Nobody is congested (threshold above n): zero deviation and no updates."""
    res = _run("grr", theta=0.0, threshold=1e9)
    assert res.updates.max() == 0 and np.allclose(res.time_deviation_s, 0.0)


def test_budget_accounting_and_theta_monotone():
    """Total privacy bound is lambda x epsilon; fewer updates at a larger theta (exact congestion, same trips)."""
    low, high = _run("exact", eps=2.0, theta=0.0), _run("exact", eps=2.0, theta=60.0)
    assert low.summary()["mean_total_epsilon"] == pytest.approx(low.updates.mean() * 2.0)
    assert high.updates.mean() <= low.updates.mean()
    assert "(lambda x 2)-LDP" in low.guarantee and "Privacy unit: one trip" in low.guarantee


def test_private_updates_cost_time():
    """SRR at a small epsilon recommends slower routes on average than the exact congestion (seeded)."""
    exact, noisy = _run("exact", theta=0.0), _run("srr", eps=0.5, theta=0.0, seed=1)
    assert noisy.time_deviation_s.mean() >= exact.time_deviation_s.mean()


def test_bad_input_is_named():
    lon, lat, olon, olat, dlon, dlat = _city()
    with pytest.raises(LdpvizInputError, match="grid side"):
        N.simulate_navigation(lon, lat, olon, olat, dlon, dlat, REGION, 1, "srr", 1.0, 10.0)
    with pytest.raises(LdpvizInputError, match="theta"):
        N.simulate_navigation(lon, lat, olon, olat, dlon, dlat, REGION, 8, "srr", 1.0, -1.0)
    with pytest.raises(LdpvizInputError, match="trips must be"):
        N.simulate_navigation(lon, lat, olon, olat, dlon, dlat, REGION, 8, "srr", 1.0, 1.0, n_trips=0)


def test_cli_navigate_json(capsys):
    assert main(["navigate", "--dataset", "minneapolis-stops", "--grid", "8", "--trips", "10", "--theta", "20",
                 "--delay", "10", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["trips"] == 10 and {"mean_updates", "mean_total_epsilon", "rel_levenshtein",
                                   "trip_time_deviation_s", "guarantee"} <= set(out)
    assert main(["navigate", "--theta", "-3"]) == 2
