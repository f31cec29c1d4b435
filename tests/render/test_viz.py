"""ldpviz.render.maps: maps and charts built from core objects, checked without a browser."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from ldpviz.render import maps as viz
from ldpviz.geo.domain import Grid, Region
from ldpviz.geo.partition import Partition

REGION = Region(-93.27, 44.97, 4000.0, "test")


def layer_data(deck, kind: str) -> list[list[dict]]:
    return [layer.data for layer in deck.layers if layer.type == kind]


def test_colours_share_one_scale_and_hide_empty_cells():
    rgba = viz.colours(np.array([0.0, 0.5, 1.0, 2.0]), vmax=1.0)
    assert rgba[0, 3] == 0 and (rgba[1:, 3] > 0).all()
    assert (rgba[2] == rgba[3]).all()          # values above vmax saturate
    assert (rgba[2, :3] == viz.RAMP[-1]).all()


def test_view_frames_the_region():
    """The region's outline, in deck.gl's Web-Mercator pixels at the chosen zoom, spans 92% of the map in its
    tighter dimension and fits in the other, for a street-sized, a city-sized, a continental and a cross-180 region;
    the view is centred on the outline."""
    for region in (Region(10.0, 50.0, 500.0), Region(10.0, 50.0, 20_000.0), Region(-98.0, 39.0, 6_000_000.0),
                   Region.from_bbox(170.0, -25.0, -170.0, -10.0)):
        for height, width in ((340, 1000), (440, 280), (300, 300)):
            view = viz.view_state(region, height=height, width=width)
            ring = np.asarray(region.outline_lonlat())
            scale = 512 * 2 ** view.zoom
            px_w = np.ptp(ring[:, 0]) / 360 * scale
            px_h = np.ptp(viz._mercator_y(ring[:, 1])) * scale
            assert max(px_w / width, px_h / height) == pytest.approx(0.92, rel=1e-6)
            mid_x = (ring[:, 0].min() + ring[:, 0].max()) / 2
            assert abs(((view.longitude - mid_x + 180) % 360) - 180) < 1e-6
            assert ring[:, 1].min() < view.latitude < ring[:, 1].max()


def test_maps_fetch_no_basemap_and_fine_grids_drop_grid_lines():
    """No basemap style (the browser fetches nothing); beyond MAX_GRID_LINES cells a side only the outline is drawn."""
    coarse, fine = Grid(REGION, viz.MAX_GRID_LINES), Grid(REGION, 2 * viz.MAX_GRID_LINES)
    for grid in (coarse, fine):
        deck = viz.density_deck(grid, np.ones((grid.side, grid.side)) / grid.n_cells)
        spec = json.loads(deck.to_json())
        assert spec["mapStyle"] == "__MAP_STYLE__" and "mapProvider" not in spec
    def lines(g):
        return len(layer_data(viz.density_deck(g, np.ones((g.side, g.side))), "PathLayer")[0])

    assert lines(coarse) == 2 * (viz.MAX_GRID_LINES + 1)
    assert lines(fine) == 2 * 2


def test_density_map_draws_nonempty_cells_with_frame():
    grid = Grid(REGION, 4)
    density = np.zeros((4, 4))
    density[0, 1], density[3, 3] = 0.25, 0.75
    deck = viz.density_deck(grid, density)
    polys = layer_data(deck, "PolygonLayer")[0]
    assert sorted(r["cell"] for r in polys) == [1, 15]
    assert {r["cell"]: r["share"] for r in polys} == {1: 25.0, 15: 75.0}
    paths = layer_data(deck, "PathLayer")
    assert len(paths[0]) == 2 * 5              # 5 vertical + 5 horizontal grid lines
    outline = np.array(paths[1][0]["path"])
    corners = np.array(REGION.outline_lonlat())      # a local region: the outline's corners are the region's
    for corner in corners[:4]:
        assert np.abs(outline - corner).sum(axis=1).min() < 1e-5
    assert deck.map_provider is None   # no basemap: nothing fetched from a tile or style server


def test_estimate_map_uses_the_adaptive_partition():
    """A non-uniform partition is drawn as its rectangles, coloured by mass per grid-cell area."""
    grid = Grid(REGION, 4)
    rects = np.array([[0, 0, 0.5, 1], [0.5, 0, 1, 0.5], [0.5, 0.5, 1, 1]], dtype=float)
    part = Partition(rects, np.array([0.5, 0.25, 0.25]))
    assert not viz.is_uniform_partition(part, 4)
    assert viz.is_uniform_partition(Partition.uniform(np.ones((4, 4)) / 16), 4)
    deck = viz.estimate_deck(grid, part.to_grid(4), part, vmax=1 / 16)
    polys = layer_data(deck, "PolygonLayer")[0]
    assert len(polys) == 3
    # Every rectangle holds 1/16 of the mass per grid cell: all the same (top) colour.
    assert len({tuple(r["color"]) for r in polys}) == 1
    west, south, east, north = REGION.bbox
    assert viz.record_ring(polys[0])[0] == pytest.approx([west, south], abs=1e-6)
    assert deck.layers[-1].get_polygon == "@@=" + viz.RECT_POLYGON      # local: exact rectangles, 4 numbers a cell
    assert viz.record_ring(polys[0])[2] == pytest.approx([REGION.unit_to_lonlat(np.array([0.5, 1.0]))[0], north],
                                                         abs=1e-6)


def test_difference_map_is_symmetric():
    grid = Grid(REGION, 2)
    truth = np.array([[0.5, 0.5], [0.0, 0.0]])
    est = np.array([[0.25, 0.5], [0.25, 0.0]])
    deck = viz.difference_deck(grid, truth, est)
    recs = {r["cell"]: r for r in layer_data(deck, "PolygonLayer")[0]}
    assert set(recs) == {0, 2}                 # unchanged cells are not drawn
    assert recs[0]["share"] == -25.0 and recs[2]["share"] == 25.0
    assert recs[0]["color"][:3] == viz.DIVERGING[0].astype(int).tolist()
    assert recs[2]["color"][:3] == viz.DIVERGING[-1].astype(int).tolist()


def test_output_grid_handles_grown_output_domains():
    grid = Grid(REGION, 8)
    assert viz.output_grid(grid, 64) is grid
    grown = viz.output_grid(grid, 12 * 12)     # DAM-like: the grid grown by 2 cells on every side
    assert grown.side == 12 and grown.cell_m == pytest.approx(grid.cell_m)
    assert (grown.region.center_lon, grown.region.center_lat) == (REGION.center_lon, REGION.center_lat)
    assert viz.output_grid(grid, 81) is None   # 9 x 9: not centred on whole cells
    assert viz.output_grid(grid, 7) is None


def test_column_map_marks_cells():
    grid = Grid(REGION, 3)
    values = np.arange(9) / 36
    deck = viz.column_deck(grid, values, marks={4: [255, 0, 0, 255]})
    assert len(layer_data(deck, "PolygonLayer")[0]) == 8
    highlight = layer_data(deck, "PathLayer")[-1]
    assert np.allclose(highlight[0]["path"], grid.cell_polygons_lonlat()[4], atol=1e-6)
    ring = viz.cell_rings(grid)[4]
    assert highlight[0]["path"][0] == pytest.approx(ring[0].tolist(), abs=1e-6)
    assert highlight[0]["path"][2] == pytest.approx(ring[2].tolist(), abs=1e-6)


def test_sweep_figure_has_bands_and_current_marker():
    summary = pd.DataFrame({"mechanism": ["A", "A", "B", "B"], "epsilon": [0.5, 2, 0.5, 2],
                            "w2_m": [400, 100, 300, 200], "w2_m_lo": [350, 90, 300, 200],
                            "w2_m_hi": [450, 110, 300, 200]})
    fig = viz.sweep_figure(summary, "epsilon", "w2_m", current=1.0, log_x=True)
    names = [t.name for t in fig.data]
    assert names.count("A") == 1 and names.count("B") == 1
    bands = [t for t in fig.data if t.fill == "toself"]
    assert len(bands) == 1                     # B has no spread, so no band
    assert list(bands[0].y) == [450, 110, 90, 350]
    assert any(shape.x0 == 1.0 for shape in fig.layout.shapes)
    assert fig.layout.xaxis.type == "log"
    label = next(a for a in fig.layout.annotations if a.text == "current")
    assert label.x == pytest.approx(0.0)       # log10(1.0): on the line, not off to the side
    floored = viz.sweep_figure(summary, "epsilon", "w2_m", floor=360.0)
    band = next(t for t in floored.data if t.fill == "toself")
    assert list(band.y)[2:] == [360.0, 360.0]  # the lower edge is clipped at the floor


def test_compare_figure_clips_at_floor():
    table = pd.DataFrame({"mechanism": ["A"], "w2_m": [100.0], "w2_m_lo": [-50.0], "w2_m_hi": [250.0]})
    assert list(viz.compare_figure(table, "w2_m").data[0].error_x.arrayminus) == pytest.approx([150.0])
    assert list(viz.compare_figure(table, "w2_m", floor=0.0).data[0].error_x.arrayminus) == pytest.approx([100.0])


def test_compare_figure_error_bars():
    table = pd.DataFrame({"mechanism": ["A", "B"], "kl": [0.1, 0.3], "kl_lo": [0.05, 0.3], "kl_hi": [0.2, 0.3]})
    fig = viz.compare_figure(table, "kl")
    bar = fig.data[0]
    assert list(bar.error_x.array) == pytest.approx([0.1, 0.0])
    assert list(bar.error_x.arrayminus) == pytest.approx([0.05, 0.0])


def test_legend_states_the_scale():
    html = viz.legend_html(0.0123)
    assert "1.2%" in html and "0%" in html
    assert "-1.2%" in viz.legend_html(0.0123, diverging=True)


def test_frontier_figure_one_curve_per_mechanism_one_point_per_epsilon():
    """frontier_figure draws a curve per mechanism with one point per epsilon (x = attacker error, y = metric),
    leaving out mechanisms without an attacker error."""
    import pandas as pd
    from ldpviz.render import maps as viz
    table = pd.DataFrame({"mechanism": ["a", "a", "b", "b", "c"], "epsilon": [2.0, 1.0, 1.0, 2.0, 1.0],
                          "w2_m": [10.0, 20.0, 30.0, 15.0, 5.0], "w2_m_lo": [9.0, 18, 28, 14, 4],
                          "w2_m_hi": [11.0, 22, 32, 16, 6], "attacker_error_m": [100.0, 200.0, 300.0, 150.0, None]})
    fig = viz.frontier_figure(table, "w2_m", labels={"a": "Alpha"})
    assert [t.name for t in fig.data] == ["Alpha", "b"]
    assert list(fig.data[0].x) == [200.0, 100.0] and list(fig.data[0].y) == [20.0, 10.0]   # sorted by epsilon
    assert list(fig.data[0].text) == ["ε=1", "ε=2"]


def test_block_outline_layer_draws_one_segment_per_boundary_edge():
    """Two blocks split down the middle of a 4 x 4 grid share 4 vertical unit edges (a boundary), an L-shaped
    third block adds its own; equal labels everywhere draw nothing."""
    from ldpviz.geo.domain import Grid, Region
    grid = Grid(Region(10.0, 50.0, 4000.0), 4)
    halves = np.zeros((4, 4), int)
    halves[:, 2:] = 1
    assert len(viz.block_outline_layer(grid, halves).data) == 4
    halves[0, 0] = 2                        # one corner cell: 1 vertical + 1 horizontal edge more
    assert len(viz.block_outline_layer(grid, halves).data) == 6
    assert len(viz.block_outline_layer(grid, np.zeros((4, 4), int)).data) == 0


def test_one_colour_per_mechanism_on_every_chart():
    """A mechanism has the same colour on the sweep, the frontier and the comparison bars, whatever else is drawn
    (issue 22); frontier text labels only its curve's ends (every epsilon stays in the hover); intervals of
    non-negative metrics never reach below zero."""
    import pandas as pd

    from ldpviz.render import maps as viz
    rows = [{"mechanism": m, "epsilon": e, "w2_m": 10.0 / e, "w2_m_lo": -5.0, "w2_m_hi": 12.0 / e,
             "attacker_error_m": 100.0 * e}
            for m in ("grr", "dam") for e in (0.5, 1.0, 2.0, 4.0)]
    table = pd.DataFrame(rows)
    sweep = viz.sweep_figure(table, "epsilon", "w2_m", floor=0.0)
    sweep_alone = viz.sweep_figure(table[table.mechanism == "dam"], "epsilon", "w2_m", floor=0.0)
    frontier = viz.frontier_figure(table, "w2_m")
    bars = viz.compare_figure(table.groupby("mechanism", as_index=False).first(), "w2_m", label_column="mechanism",
                              floor=0.0)
    line = {t.name: t.line.color for t in sweep.data if t.mode == "lines+markers"}
    assert line["dam"] == viz.mechanism_colour("dam") != viz.mechanism_colour("grr") == line["grr"]
    assert [t.line.color for t in sweep_alone.data if t.mode == "lines+markers"] == [line["dam"]]
    assert {t.name: t.line.color for t in frontier.data} == line
    assert list(bars.data[0].marker.color) == [viz.mechanism_colour(m) for m in ("dam", "grr")]
    texts = [t for t in frontier.data[0].text]
    assert texts[0] and texts[-1] and not any(texts[1:-1])
    for trace in frontier.data:
        assert min(y - lo for y, lo in zip(trace.y, trace.error_y.arrayminus)) >= 0
    bands = [t for t in sweep.data if t.fill == "toself"]
    assert min(min(t.y) for t in bands) >= 0


# ---- cells drawn as projected squares (issue 21.3) -----------------------------------------------------------

CONTINENT = Region(-98.0, 39.0, 6_000_000.0, "6,000 km")
FIJI = Region.from_bbox(170.0, -25.0, -170.0, -10.0, "Fiji")


def _inside(points: np.ndarray, ring: np.ndarray) -> np.ndarray:
    """Even-odd point-in-polygon test of ``points`` (n, 2) against a closed ``ring`` (m, 2)."""
    x, y = points[:, 0:1], points[:, 1:2]
    x0, y0, x1, y1 = ring[:-1, 0], ring[:-1, 1], ring[1:, 0], ring[1:, 1]
    crosses = ((y0 > y) != (y1 > y)) & (x < x0 + (y - y0) * (x1 - x0) / np.where(y1 != y0, y1 - y0, 1.0))
    return crosses.sum(axis=1) % 2 == 1


@pytest.mark.parametrize("region", [CONTINENT, FIJI], ids=["6000km", "fiji"])
@pytest.mark.parametrize("side", [4, 16])
def test_drawn_cells_are_the_projected_squares(region, side):
    """Every vertex the maps draw for a cell lies inside the drawn outline (tested in the region's projected
    metres, after the lon/lat rounding the page uses), neighbouring cells share their edges vertex for vertex,
    every cell's centre lies in its own polygon, and each drawn straight piece strays from the true (projected)
    cell edge by under 1% of a cell: so cells, light grid and outline coincide, also across 180 degrees."""
    grid = Grid(region, side)
    assert region.projection == "azimuthal equidistant (WGS 84)" and grid.points_per_edge > 1
    deck = viz.density_deck(grid, np.ones((side, side)) / side ** 2)
    records = sorted(layer_data(deck, "PolygonLayer")[0], key=lambda r: r["cell"])
    rings = np.array([r["polygon"] for r in records])                       # (n_cells, 4k, 2) lon/lat
    lines, outline = layer_data(deck, "PathLayer")
    outline = np.array(outline[0]["path"])
    half = region.side_m / 2
    ox, oy = region.to_metres(outline[:, 0], outline[:, 1])
    assert np.abs(np.maximum(np.abs(ox), np.abs(oy)) - half).max() < 1.0    # the outline is the projected square
    x, y = region.to_metres(rings[..., 0].ravel(), rings[..., 1].ravel())
    shrunk = np.column_stack([x, y]) * (1 - 1e-6)                           # boundary points count as inside
    assert _inside(shrunk, np.column_stack([ox, oy])).all()
    # Across 180 degrees longitudes stay continuous: no cell jumps across the map.
    assert np.ptp(rings[..., 0], axis=1).max() < 90
    # Neighbours share edges: a cell's east edge is its eastern neighbour's west edge, reversed; same north/south.
    k = grid.points_per_edge
    for r in range(side):
        for c in range(side):
            here = rings[r * side + c]
            if c + 1 < side:
                east = rings[r * side + c + 1]
                assert np.array_equal(np.vstack([here[k:2 * k], here[2 * k:2 * k + 1]]),
                                      np.vstack([east[3 * k:], east[:1]])[::-1])
            if r + 1 < side:
                north = rings[(r + 1) * side + c]
                assert np.array_equal(np.vstack([here[2 * k:3 * k], here[3 * k:3 * k + 1]]),
                                      np.vstack([north[:k + 1]])[::-1])
    # Centres inside their own cell (in metres).
    lon_c, lat_c = grid.cell_centers_lonlat()
    cx, cy = region.to_metres(lon_c, lat_c)
    for i in range(grid.n_cells):
        rx, ry = region.to_metres(rings[i, :, 0], rings[i, :, 1])
        ring_m = np.column_stack([np.append(rx, rx[0]), np.append(ry, ry[0])])
        assert _inside(np.array([[cx[i], cy[i]]]), ring_m).all()
    # Each drawn piece (straight in lon/lat) stays near the projected straight edge it stands for.
    closed = np.concatenate([rings, rings[:, :1]], axis=1)
    mid = (closed[:, 1:] + closed[:, :-1]) / 2
    mx, my = region.to_metres(mid[..., 0].ravel(), mid[..., 1].ravel())
    ex, ey = region.to_metres(closed[..., 0].ravel(), closed[..., 1].ravel())
    ex, ey = ex.reshape(closed.shape[:2]), ey.reshape(closed.shape[:2])
    true_mid_x, true_mid_y = (ex[:, 1:] + ex[:, :-1]) / 2, (ey[:, 1:] + ey[:, :-1]) / 2
    stray = np.hypot(mx - true_mid_x.ravel(), my - true_mid_y.ravel())
    assert stray.max() < 0.01 * grid.cell_m


def test_old_rectangles_would_spill_outside_a_continental_region():
    """The check above can fail: lon/lat rectangles from the centre lines (the former drawing) put corners of a
    6,000 km region's corner cells outside its projected square, by hundreds of kilometres."""
    grid = Grid(CONTINENT, 4)
    edges = np.arange(5) / 4
    lon_e, _ = CONTINENT.unit_to_lonlat(np.column_stack([edges, np.full(5, 0.5)]))
    _, lat_e = CONTINENT.unit_to_lonlat(np.column_stack([np.full(5, 0.5), edges]))
    x, y = CONTINENT.to_metres(np.array([lon_e[0]]), np.array([lat_e[-1]]))      # north-west corner
    assert max(abs(float(x[0])), abs(float(y[0]))) - grid.region.side_m / 2 > 100_000


def test_partition_and_exports_use_the_projected_cells():
    """Adaptive rectangles on a continent follow the projection too; the GeoJSON export carries the same rings
    as the map and the CSV's extent encloses them."""
    import json

    from ldpviz.render import export

    grid = Grid(FIJI, 4)
    part = Partition(np.array([[0, 0, 0.5, 1], [0.5, 0, 1, 1]], dtype=float), np.array([0.5, 0.5]))
    rect = viz.record_ring(viz.partition_records(FIJI, part, 4, vmax=1 / 16)[0])
    xs, ys = FIJI.to_metres(np.array(rect)[:, 0], np.array(rect)[:, 1])
    assert len(rect) > 4 and np.abs(xs + FIJI.side_m / 2).min() < 1 and np.abs(np.abs(ys) - FIJI.side_m / 2).min() < 1
    layers = {"share": np.full(16, 1 / 16)}
    features = json.loads(export.grid_geojson(grid, layers))["features"]
    ring = np.array(features[5]["geometry"]["coordinates"][0])
    assert np.array_equal(ring[:-1], viz.cell_rings(grid)[5]) and np.array_equal(ring[0], ring[-1])
    table = export.grid_table(grid, layers)
    assert table.loc[5, "west"] == ring[:, 0].min() and table.loc[5, "north"] == ring[:, 1].max()
    assert table.east.max() > 180 > table.west.min()                       # continuous across 180 degrees


def test_fine_continental_cells_stay_polygons():
    """At d = 256 a 6,000 km region's cells get one piece per edge, yet are still drawn as their four projected
    corners, not as lon/lat rectangles (only the local projection makes a cell a rectangle)."""
    grid = Grid(CONTINENT, 256)
    assert grid.points_per_edge == 1
    density = np.zeros((256, 256))
    density[255, 0] = 1.0                                                   # the north-west corner cell
    record = layer_data(viz.density_deck(grid, density), "PolygonLayer")[0][0]
    ring = np.array(viz.record_ring(record))
    assert "polygon" in record and np.allclose(ring, grid.cell_rings_lonlat()[255 * 256], atol=1e-6)
    assert abs(ring[0, 0] - ring[3, 0]) > 1e-3                              # west edge slants in lon/lat


def test_decks_ship_compact_json_with_the_same_value():
    """The page ships each map's JSON: without pydeck's indentation it is the same value at about a third of the
    size (a 32 x 32 density map)."""
    import json

    import pydeck as pdk

    from ldpviz.geo.domain import Grid, Region
    from ldpviz.render import maps

    grid = Grid(Region(-93.3, 44.9, 20_000.0), 32)
    deck = maps.estimate_deck(grid, np.random.default_rng(0).dirichlet(np.ones(1024)).reshape(32, 32))
    compact, indented = deck.to_json(), pdk.Deck.to_json(deck)
    assert json.loads(compact) == json.loads(indented)
    assert len(compact) < 0.5 * len(indented) and "\n" not in compact
