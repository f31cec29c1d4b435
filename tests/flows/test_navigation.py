"""Traffic-aware navigation with LDP location updates (ldpviz.flows.navigation, L-SRR Sec. 4.2 / App. C.1)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from ldpviz.flows import navigation as N
from ldpviz.cli.commands import main
from ldpviz import mechanisms
from ldpviz.geo.domain import Grid, Region
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
    assert low.summary()["mean_total_epsilon"] is None          # exact sends the true value: no epsilon to state
    assert high.updates.mean() <= low.updates.mean()
    srr = _run("srr", eps=2.0, theta=0.0)
    assert srr.summary()["mean_total_epsilon"] == pytest.approx(srr.updates.mean() * 2.0)   # by hand: mean lambda x eps
    assert "within lambda x 2 for that trip" in srr.guarantee and "Privacy unit: one trip" in srr.guarantee
    assert low.guarantee.startswith("no privacy")


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


def test_worst_trip_is_the_headline_and_mean_is_beside_it(capsys):
    """Navigation's worst case: the stated total is the largest lambda x epsilon over trips, not the mean.

    Seeded SRR at epsilon 0.5, theta 0 on the jammed city: trips differ in their number of updates, so
    the worst trip is strictly above the mean; the CLI text names the worst first and the JSON carries both.
    """
    res = _run("srr", eps=0.5, theta=0.0, seed=1)
    s = res.summary()
    assert res.updates.max() > res.updates.mean()
    assert s["max_total_epsilon"] == pytest.approx(res.updates.max() * 0.5)
    assert s["mean_total_epsilon"] == pytest.approx(res.updates.mean() * 0.5)
    assert main(["navigate", "--grid", "8", "--trips", "30", "--theta", "0", "--delay", "30",
                 "--epsilon", "0.5", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert main(["navigate", "--grid", "8", "--trips", "30", "--theta", "0", "--delay", "30", "--epsilon", "0.5"]) == 0
    text = capsys.readouterr().out
    line = next(t for t in text.splitlines() if "total privacy per trip" in t)
    assert line.index("worst trip") < line.index("mean")
    assert f"worst trip {out['max_total_epsilon']:g} ({out['max_updates']} updates)" in line
    assert out["trip_total_text"] == f"{out['max_updates'] * 0.5:g}" == f"{out['max_total_epsilon']:g}"


def test_client_side_cap_bounds_every_trip_and_the_reporters():
    """A cap of 1 update, enforced by the client: no trip exceeds 1 x epsilon (uncapped, some do), the trips
    that wanted more are counted, and the reporters' windows (W) never exceed the cap."""
    free = _run("srr", eps=0.5, theta=0.0, seed=1)
    capped = _run("srr", eps=0.5, theta=0.0, seed=1, max_updates=1)
    assert free.updates.max() > 1
    s = capped.summary()
    assert capped.updates.max() <= 1 and s["max_total_epsilon"] <= 0.5
    assert s["capped_trips"] > 0 and s["update_cap"] == 1
    assert s["reporter_windows"] <= 1
    assert "at most 1 updates per trip, so every trip is within 1 x 0.5" in capped.guarantee
    assert "no cap on updates per trip" in free.guarantee
    with pytest.raises(LdpvizInputError, match="cap on updates"):
        _run("srr", max_updates=-1)


def test_traffic_reporters_are_charged_every_window():
    """Reporters re-send in every window: W = windows collected = the most updates of any trip, and each
    reporter is charged W reports, stated in the guarantee, the summary and the ledger."""
    res = _run("srr", eps=0.5, theta=0.0, seed=1)
    s = res.summary()
    w = s["reporter_windows"]
    assert w == res.settings["windows_collected"] == res.updates.max() > 1
    assert s["reporter_total_epsilon"] == pytest.approx(w * 0.5)
    assert f"with W = {w} windows a reporter pays {w} reports" in res.guarantee
    traffic = next(c for c in res.ledger.charges if c.what.startswith("a traffic report"))
    assert traffic.uses_worst == w and traffic.epsilon == 0.5


def test_only_client_side_mechanisms_protect_updates(capsys):
    """Central DP is refused with a clear message; Geo-I states its own guarantee, not an 'epsilon-LDP report'."""
    with pytest.raises(LdpvizInputError, match="central-DP"):
        _run("dp-heatmap")
    assert main(["navigate", "--mechanism", "dp-heatmap", "--grid", "8", "--trips", "5"]) == 2
    assert "central-DP" in capsys.readouterr().err
    geo = _run("planar-laplace", eps=1.0, theta=0.0)
    from ldpviz import mechanisms
    from ldpviz.geo.domain import Grid
    own = mechanisms.create("planar-laplace", Grid(REGION, 10), 1.0).guarantee()
    assert own in geo.guarantee and "geo-indistinguishable report" in geo.guarantee
    assert "epsilon-LDP report" not in geo.guarantee and "lambda x 1 per km" in geo.guarantee


def test_navigate_bbox_is_the_region(capsys):
    """--bbox is the region (stated, reads no data) and is said so; bad and conflicting bboxes are clear errors."""
    assert main(["navigate", "--bbox", "-93.33,44.89,-93.19,45.05", "--grid", "8", "--trips", "5", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert "Region 'typed bounds -93.33,44.89,-93.19,45.05'" in out["region"] and "read no users' data" in out["region"]
    assert main(["navigate", "--bbox", "1,2,3"]) == 2
    assert main(["navigate", "--bbox", "-93.3,44.9,-93.2,45.0", "--region", "Whole city"]) == 2


def test_per_person_total_adds_a_persons_trips():
    """A person with several trips is at the sum of their trips' lambda x epsilon: with every trip made by one of
    three people, the stated largest person total equals the largest per-person sum of the simulated updates."""
    lon, lat, olon, olat, dlon, dlat = _city()
    person = np.array([f"p{i % 3}" for i in range(len(olon))])
    res = N.simulate_navigation(lon, lat, olon, olat, dlon, dlat, REGION, 10, "srr", 0.5, 0.0, n_trips=40,
                                delay_s=20.0, seed=1, trip_person=person)
    s = res.summary()
    assert s["persons_known"] and s["max_trips_per_person"] >= 14          # 40 trips over 3 people
    assert s["worst_person_epsilon"] > s["max_total_epsilon"]
    synthetic = _run("srr", eps=0.5, theta=0.0, seed=1)
    assert "a synthetic driver may also report traffic" in synthetic.guarantee
    # the ledger (every row of the city a reporter, anonymous: a driver charged as also reporting): W windows plus
    # the person's summed updates, times 0.5; a person's trips add up (more than any one trip's updates)
    drives = res.ledger.charges[-1].uses_worst
    total = res.ledger.total().ldp
    assert total == pytest.approx(0.5 * (s["reporter_windows"] + drives))
    assert res.updates.max() < drives <= res.updates.sum()
    assert s["worst_person_epsilon"] == pytest.approx(total) and s["worst_person_total"]["ldp_epsilon"] == total


def test_person_totals_sum_each_persons_trips():
    """person_totals: a with 3 trips (1 + 2 + 0 updates), b with 1 trip (4 updates) at eps 0.5: a has the most trips;
    the ledger gives b the largest total (2.0)."""
    assert N.person_totals(np.array(["a", "b", "a", "a"])) == {"max_trips_per_person": 3, "people": 2}
    mech = mechanisms.create("srr", Grid(REGION, 8), 0.5)
    ledger = N.navigation_ledger(mech, REGION, 0, None, np.array(["a", "b", "a", "a"]), np.array([1, 4, 2, 0]))
    assert ledger.total().ldp == pytest.approx(2.0)        # b: 4 updates x 0.5 (a: 3 x 0.5), no windows
