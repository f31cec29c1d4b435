"""Regions from a neighbourhood to a continent, across the antimeridian, chosen without users' data.

Issue 14 items 1-2 and issue 15.1. Data are made here: Fiji-like earthquake
longitudes (165 to 188), a continental-US-like file, a national file used with a
city bbox.
"""

import numpy as np
import pandas as pd
import pytest

from ldpviz.data import datasets
from ldpviz.geo import region_choice as regions
from ldpviz.mechanisms.fo import private_region
from ldpviz.mechanisms.fo.private_region import upload_frame
from ldpviz.data.datasets import load_file, wrap_longitudes
from ldpviz.geo.domain import AEQD, LOCAL, MAX_REGION_SIDE_M, Grid, Region, lon_span
from ldpviz.errors import LdpvizInputError

MINNEAPOLIS_BBOX = (-93.33, 44.89, -93.19, 45.05)
#: The explicit public-tile rule (unpaid, labelled not private), for tests of framing and projection.
PUBLIC = upload_frame("public-tiles")


def haversine(lon1, lat1, lon2, lat2):
    lon1, lat1, lon2, lat2 = map(np.radians, (lon1, lat1, lon2, lat2))
    a = np.sin((lat2 - lat1) / 2) ** 2 + np.cos(lat1) * np.cos(lat2) * np.sin((lon2 - lon1) / 2) ** 2
    return 2 * 6_371_008.8 * np.arcsin(np.sqrt(a))


def write_csv(tmp_path, name, lon, lat):
    path = tmp_path / name
    pd.DataFrame({"latitude": lat, "longitude": lon}).to_csv(path, index=False)
    return path


def fiji(n=2000, seed=1):
    rng = np.random.default_rng(seed)
    return rng.uniform(165.0, 188.0, n), rng.uniform(-30.0, -10.0, n)


def contiguous_us(n=5000, seed=2):
    rng = np.random.default_rng(seed)
    return rng.uniform(-124.7, -67.0, n), rng.uniform(24.6, 49.3, n)


# ---------------------------------------------------------------- antimeridian
def test_fiji_file_is_wrapped_counted_and_framed_across_180(tmp_path):
    """Longitudes 165..188: the ones above 180 are wrapped and counted, none dropped, one region holds all."""
    lon, lat = fiji()
    ds = load_file(write_csv(tmp_path, "quakes.csv", lon, lat), frame=PUBLIC)
    above = int((lon > 180).sum())
    assert ds.report.rows_kept == 2000 and ds.report.dropped == {}
    assert ds.report.changed == {"longitude wrapped": above} and above > 500
    assert f"{above:,} longitudes in (180, 540]" in " ".join(ds.report.notes)
    assert "wrapped" in ds.report.summary()
    assert np.all(np.abs(ds.lon) <= 180)
    region = ds.default_region
    assert region.contains(ds.lon, ds.lat).all()
    assert region.side_m < 4_000_000          # a crossing region, not a 360-degree one
    fit = Region.fit(ds.lon, ds.lat)
    assert fit.contains(ds.lon, ds.lat).all() and fit.side_m < 3_000_000 and fit.center_lon > 170


def test_fiji_file_unwrapped_drops_and_counts_the_rows_past_180(tmp_path):
    """wrap_longitudes=False (the Data page's unticked box): the rows past 180 are dropped under their own
    reason, every other row kept, nothing changed."""
    lon, lat = fiji()
    ds = load_file(write_csv(tmp_path, "quakes.csv", lon, lat), wrap_longitudes=False, frame=PUBLIC)
    above = int((lon > 180).sum())
    assert ds.report.dropped == {"longitude past 180, not wrapped": above}
    assert ds.report.rows_kept == 2000 - above and ds.report.changed == {}
    assert "wrapping was turned off" in ds.report.summary()
    with pytest.raises(LdpvizInputError, match="wrap_longitudes"):
        load_file(write_csv(tmp_path, "q2.csv", lon, lat), wrap_longitudes="no")


def test_bbox_with_west_greater_than_east_crosses_180():
    """W > E is a valid box across the antimeridian; its region holds 179 E and 179 W, not 0."""
    region = Region.from_bbox(170.0, -25.0, -170.0, -10.0)
    assert region.center_lon == pytest.approx(180.0) or region.center_lon == pytest.approx(-180.0)
    inside = region.contains(np.array([179.0, -179.0, 175.0, 0.0]), np.array([-18.0, -18.0, -18.0, -18.0]))
    assert inside.tolist() == [True, True, True, False]
    w, s, e, n = region.bbox
    assert e > 180 > w                        # continuous longitudes for maps: no seam
    polys = Grid(region, 4).cell_polygons_lonlat()
    assert max(abs(p[1][0] - p[0][0]) for p in polys) < 10     # no cell spans the globe


def test_lon_span_takes_the_short_way_round():
    assert lon_span(np.array([170.0, 179.0, -179.0, -172.0])) == (170.0, -172.0)
    assert lon_span(np.array([-93.3, -93.2])) == (-93.3, -93.2)


def test_wrap_longitudes_public_function():
    """The Data page's helper: wraps (180, 540], counts those and the rows still out of range."""
    frame = pd.DataFrame({"Lat": [1.0, 2, 3, 4, 5], "Lon": [170.0, 188.0, 540.0, 541.0, -181.0]})
    out, n_wrapped, n_bad = wrap_longitudes(frame)
    assert (n_wrapped, n_bad) == (2, 2)
    assert out["Lon"].tolist() == [170.0, -172.0, 180.0, 541.0, -181.0]
    assert frame["Lon"].tolist()[1] == 188.0          # input untouched
    text = pd.DataFrame({"lat": ["1"], "lng": ["200"]})
    out, n_wrapped, n_bad = wrap_longitudes(text)
    assert (n_wrapped, n_bad) == (1, 0) and float(out["lng"].iloc[0]) == -160.0
    with pytest.raises(LdpvizInputError, match="no longitude column"):
        wrap_longitudes(pd.DataFrame({"a": [1]}))


# ---------------------------------------------------------------- continental extents
def test_continental_file_uses_an_equidistant_projection_with_stated_error(tmp_path):
    """A US-wide file frames in one region <= 6,500 km; projected distances match great circles within the
    region's stated scale error (the local approximation would be off by tens of percent)."""
    lon, lat = contiguous_us()
    ds = load_file(write_csv(tmp_path, "us.csv", lon, lat), frame=PUBLIC)
    region = ds.default_region
    assert region.projection == AEQD and region.side_m <= MAX_REGION_SIDE_M
    assert region.contains(ds.lon, ds.lat).all()
    assert 0.01 < region.scale_error < 0.1
    rng = np.random.default_rng(3)
    i, j = rng.integers(0, len(lon), (2, 400))
    x, y = region.to_metres(lon, lat)
    planar = np.hypot(x[i] - x[j], y[i] - y[j])
    ok = i != j
    ratio = planar[ok] / haversine(lon[i], lat[i], lon[j], lat[j])[ok]
    assert np.all(np.abs(ratio - 1) <= region.scale_error + 0.004)   # + sphere vs ellipsoid
    # round trip and unit coordinates
    lo, la = region.to_lonlat(x, y)
    assert np.allclose(lo, lon, atol=1e-7) and np.allclose(la, lat, atol=1e-7)


def test_small_regions_keep_the_local_projection():
    """City regions are unchanged (local projection, error < 0.5%): the bundled presets and benches still hold."""
    assert Region(-93.265, 44.971, 20_000.0).projection == LOCAL
    assert Region(-93.265, 44.971, 20_000.0).scale_error < 0.005
    assert Region(10.0, 50.0, 1_000_000.0).projection == AEQD


def test_national_file_with_a_city_bbox(tmp_path):
    """The bbox filters rows before framing; kept and dropped rows are counted; the region is the bbox."""
    lon, lat = contiguous_us(20_000)
    rng = np.random.default_rng(4)
    city_lon, city_lat = rng.uniform(-93.3, -93.2, 300), rng.uniform(44.9, 45.04, 300)
    path = write_csv(tmp_path, "nation.csv", np.concatenate([lon, city_lon]), np.concatenate([lat, city_lat]))
    inside_random = int(datasets.in_bbox(lon, lat, MINNEAPOLIS_BBOX).sum())
    ds = load_file(path, bbox=MINNEAPOLIS_BBOX)
    assert ds.report.rows_kept == 300 + inside_random
    assert ds.report.dropped == {"outside the bbox": 20_000 - inside_random}
    assert "outside the bbox" in ds.report.summary()
    region = ds.default_region
    assert region.projection == LOCAL and region.data_use == "" and region.contains(ds.lon, ds.lat).all()
    assert region == regions.stated_region(MINNEAPOLIS_BBOX)
    assert region.bounds == MINNEAPOLIS_BBOX and region.name == "typed bounds -93.33,44.89,-93.19,45.05"


@pytest.mark.parametrize("bbox, pattern", [
    ((-93.33, 45.05, -93.19, 44.89), "south .* must be less than north"),
    ((-93.33, 44.89, -93.33, 45.05), "no width"),
    ((-93.33, 44.89, -93.19, 44.89), "no height"),
    ((-93.19, 44.89, -93.33, 45.05), "crosses the antimeridian.*swap west and east"),
    ((-93.0, 44.0, -93.1, float("nan")), "finite"),
    ((-600.0, 44.0, -93.1, 45.0), "longitude must be in"),
    ((-130.0, 10.0, -60.0, 60.0), "at most 6,500 km"),
    ((-180.0, 10.0, 180.0, 20.0), "at most 6,500 km"),
])
def test_bad_bboxes_get_one_clear_message(bbox, pattern):
    with pytest.raises(LdpvizInputError, match=pattern):
        Region.from_bbox(*bbox)


# ---------------------------------------------------------------- 15.1: data-independent regions
def test_region_chosen_without_exact_points_does_not_move():
    """Issue 15.1: a region chosen without reading exact points does not move when one user moves inside it.

    The stated bbox reads nothing. The public-tile region reads only which coarse tiles are occupied, so
    moving a user anywhere inside the region among occupied tiles leaves it bit-identical; the fitted
    region moves with its extreme user.
    """
    rng = np.random.default_rng(5)
    lon, lat = rng.uniform(-94.0, -92.5, 3000), rng.uniform(44.5, 45.5, 3000)
    tile = regions.public_tile_region(lon, lat)
    fit = Region.fit(lon, lat)
    extreme = int(np.argmax(lat))
    moved_lat = lat.copy()
    moved_lat[extreme] = 45.0                       # the northernmost user moves south, inside the region
    assert regions.public_tile_region(lon, moved_lat) == tile
    assert Region.fit(lon, moved_lat) != fit
    for k in rng.integers(0, 3000, 20):             # any user, anywhere among the occupied tiles
        lo, la = lon.copy(), lat.copy()
        lo[k], la[k] = rng.uniform(-94.0, -92.5), rng.uniform(44.5, 45.5)
        assert regions.public_tile_region(lo, la) == tile
    assert tile.data_use and "level-8" in tile.data_use and "not private" in fit.data_use
    assert regions.stated_region(MINNEAPOLIS_BBOX).data_use == ""
    for bad in ("abc", (1, 2, 3), None, ("-93", "x", "1", "2")):
        with pytest.raises(LdpvizInputError, match="four numbers"):
            regions.stated_region(bad)
    typed = regions.region_covers(regions.stated_region(MINNEAPOLIS_BBOX))
    assert "read no users' data" in typed and "cannot tell where the box came from" in typed   # issue 26
    assert "without reading" not in typed
    suggested = regions.region_covers(regions.stated_region(MINNEAPOLIS_BBOX, data_use="the box ldpviz suggested"))
    assert suggested == "Not covered by epsilon: the region was the box ldpviz suggested."
    assert regions.region_covers(tile).startswith("Not covered by epsilon")


def test_region_spent_from_a_stated_budget():
    """15.1, third option: a region chosen under epsilon0-LDP frames where most rows are, does not move when a
    user moves inside their tile (same seed), and its guarantee adds epsilon0 to the mechanism's epsilon."""
    rng = np.random.default_rng(8)
    metros = np.array([[-74.0, 40.7], [-118.2, 34.05], [-87.6, 41.9], [-95.4, 29.8], [-122.3, 47.6]])
    home = metros[rng.integers(0, 5, 48_000)] + rng.normal(0, 0.3, (48_000, 2))
    spread_lon, spread_lat = contiguous_us(12_000)          # 20% spread thinly over the country
    lon, lat = np.concatenate([home[:, 0], spread_lon]), np.concatenate([home[:, 1], spread_lat])
    region = private_region.private_tile_region(lon, lat, epsilon0=1.0, seed=3)
    assert region.epsilon_spent == 1.0 and "1-LDP" in region.data_use
    assert region.contains(home[:, 0], home[:, 1]).mean() > 0.99 and region.side_m <= MAX_REGION_SIDE_M
    moved = lat.copy()
    moved[0] = lat[0] + 1e-3                      # a user moves within their ~600 km tile
    from ldpviz.geo import quadkey
    same_tile = np.all(np.array(quadkey.lonlat_to_tile_xy(lon[:1], moved[:1], 6))
                       == np.array(quadkey.lonlat_to_tile_xy(lon[:1], lat[:1], 6)))
    assert same_tile and private_region.private_tile_region(lon, moved, epsilon0=1.0, seed=3) == region
    covers = regions.region_covers(region)      # the figure is the ledger's alone (issue 37.4): no second total here
    assert "ε0 = 1 per row is a line of the ledger" in covers and "+ epsilon" not in covers


def test_private_region_keeps_noise_tiles_with_probability_at_most_alpha():
    """20,000 rows spread over the contiguous US at epsilon0 = 0.1 (about 500 per level-6 tile against a threshold
    near 13,000) carry almost no signal: over 200 seeds a region (a tile kept) appears at most 6 times (Bonferroni
    bound alpha = 1%: P[Binomial(200, 0.01) > 6] < 0.5%); otherwise one clear message. (Fewer rows than the
    threshold are refused before any report is read: the next test.)"""
    lon, lat = contiguous_us(20_000)
    accepted = 0
    for seed in range(200):
        try:
            private_region.private_tile_region(lon, lat, epsilon0=0.1, seed=seed)
            accepted += 1
        except LdpvizInputError as exc:
            assert "no map tile holds enough of the 20,000 rows" in str(exc)
    assert accepted <= 6


def test_too_few_rows_for_the_private_tiles_is_refused_with_the_count_needed():
    """Issue 36: 50 rows at epsilon0 = 0.1 (or 200 people at 0.5) cannot clear the threshold even all in one tile,
    so the rule refuses before reading a report, saying how many it needs (a noise tile was framed before: 200
    people, 0 inside); every seed gives the same refusal."""
    from ldpviz.errors import TooFewToFrame
    lon, lat = contiguous_us(50)
    needed = set()
    for seed in range(20):
        with pytest.raises(TooFewToFrame) as err:
            private_region.private_tile_region(lon, lat, epsilon0=0.1, seed=seed)
        assert err.value.have == 50 and err.value.needed > 50
        needed.add(err.value.needed)
        assert f"need at least {err.value.needed:,} rows in one tile" in str(err.value)
    assert len(needed) == 1


# ---------------------------------------------------------------- 20.6: an upload's default region is paid for
def city_with_outlier(tmp_path, outlier: bool):
    rng = np.random.default_rng(7)
    lon, lat = rng.uniform(-93.33, -93.19, 6000), rng.uniform(44.89, 45.05, 6000)
    if outlier:
        lon, lat = np.append(lon, -90.0), np.append(lat, 46.5)    # one row about 300 km away
    return write_csv(tmp_path, f"city{int(outlier)}.csv", lon, lat)


def test_one_outlier_row_no_longer_moves_the_default_region(tmp_path):
    """Default rule (private tiles, epsilon0 paid): one far row leaves the region unchanged and outside it; the
    explicit public-tile rule still moves (and says it is not private)."""
    plain = load_file(city_with_outlier(tmp_path, False), frame=upload_frame()).default_region
    with_outlier = load_file(city_with_outlier(tmp_path, True), frame=upload_frame()).default_region
    same = (plain.center_lon, plain.center_lat, plain.side_m) == (with_outlier.center_lon, with_outlier.center_lat,
                                                                   with_outlier.side_m)
    assert same and not with_outlier.contains(np.array([-90.0]), np.array([46.5]))[0]
    assert plain.epsilon_spent == private_region.DEFAULT_REGION_EPSILON and "LDP" in plain.data_use
    public = [load_file(city_with_outlier(tmp_path, o), frame=PUBLIC).default_region
              for o in (False, True)]
    assert public[1].side_m > 2 * public[0].side_m
    assert all("not private" in r.name and "not private" in r.data_use and r.epsilon_spent == 0 for r in public)
    with pytest.raises(LdpvizInputError, match="region rule must be one of"):
        private_region.upload_region(np.zeros(3), np.zeros(3), "fit")


def test_private_region_epsilon_is_added_to_the_guarantee(tmp_path):
    """The region's epsilon0 is stated in the guarantee and the coverage, and summed in the JSON summary; for
    Geo-I the total is epsilon0 + epsilon x distance (no single number)."""
    from ldpviz import experiment
    ds = load_file(city_with_outlier(tmp_path, False), frame=upload_frame("private-tiles", 0.8))
    result = experiment.run(experiment.Scenario(dataset=ds.name, mechanism="grr", epsilon=1.0, grid_side=8), ds)
    assert "ε0 + ε = 0.8 + 1 = 1.8 in total" in result.guarantee
    summary = result.summary()
    assert summary["region_epsilon"] == 0.8 and summary["total_epsilon"] == pytest.approx(1.8)
    assert any("ε0 = 0.8 per row is a line of the ledger" in line for line in result.coverage)
    geo = experiment.run(experiment.Scenario(dataset=ds.name, mechanism="planar-laplace", epsilon=1.0,
                                             grid_side=8), ds)
    assert "ε = 0.8 + 1 per km × d (LDP + Geo-I)" in geo.guarantee and geo.summary()["total_epsilon"] is None
    assert geo.summary()["ledger"]["total"]["ldp_epsilon"] == pytest.approx(0.8)
    public = load_file(city_with_outlier(tmp_path, False), frame=PUBLIC)
    plain = experiment.run(experiment.Scenario(dataset=public.name, grid_side=8), public)
    assert "in total" not in plain.guarantee and plain.summary()["region_epsilon"] == 0


def test_cli_states_the_region_rule_and_its_epsilon(tmp_path, capsys):
    from ldpviz.cli import commands as cli
    import json
    path = city_with_outlier(tmp_path, True)
    assert cli.main(["run", "--csv", str(path), "--grid", "8", "--json"]) == 0
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    assert out["region_epsilon"] == 0.5 and out["total_epsilon"] == 1.5 and out["n_outside_region"] >= 1
    assert "Region (private-tiles): chosen under 0.5-LDP" in captured.err
    assert cli.main(["run", "--csv", str(path), "--grid", "8", "--region-rule", "public-tiles"]) == 0
    text = capsys.readouterr().out
    assert "not private" in text and "in total" not in text


# ---------------------------------------------------------------- 21.2: the region is the box the user gave
def test_typed_bounds_keep_exactly_the_rows_inside_the_box(tmp_path):
    """A wide box grows to a square holding rows outside the box; the run keeps only the box's rows, the same
    rows and n as loading the file with that bbox (ldpviz run --csv --bbox)."""
    from ldpviz import experiment
    lon, lat = contiguous_us(20_000)
    path = write_csv(tmp_path, "nation.csv", lon, lat)
    box = (-80.5, 38.5, -70.5, 43.5)
    whole = load_file(path, frame=PUBLIC)
    region = regions.stated_region(box)
    in_box = int(datasets.in_bbox(lon, lat, box).sum())
    in_square = int(Region.from_bbox(*box).contains(lon, lat).sum())
    assert in_square > in_box > 0
    result = experiment.run(experiment.Scenario(dataset=whole.name, grid_side=8, region=region), whole)
    cut = load_file(path, bbox=box)
    assert result.n_users == in_box == cut.n
    assert any(f"typed bounds -80.5,38.5,-70.5,43.5 ({in_box:,} rows inside)" in line for line in result.coverage)
    assert int(region.contains(lon, lat).sum()) == in_box


def test_read_points_within_a_box_equals_reading_with_the_box(tmp_path):
    """The Data page applies a box to rows already read; the rows, counts and report equal load_file's."""
    lon, lat = fiji()
    path = write_csv(tmp_path, "quakes.csv", lon, lat)
    box = (175.0, -25.0, -175.0, -12.0)
    direct = load_file(path, bbox=box)
    later = datasets.frame_points(datasets.read_points(path).within(box), bbox=box)
    assert np.array_equal(direct.lon, later.lon) and np.array_equal(direct.lat, later.lat)
    assert direct.report == later.report and direct.default_region == later.default_region
