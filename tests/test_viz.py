"""ldpviz.render.maps: maps and charts built from core objects, checked without a browser."""

from __future__ import annotations

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
    """The region's side spans 92% of the map's smaller dimension at the chosen zoom (deck.gl 512-px tiles)."""
    for side in (500.0, 20_000.0, 500_000.0):
        region = Region(10.0, 50.0, side)
        for height, width, fitted in ((340, 1000, 340), (440, 280, 280)):
            zoom = viz.view_state(region, height=height, width=width).zoom
            metres_per_pixel = 40_075_000 * np.cos(np.radians(50.0)) / (512 * 2 ** zoom)
            assert side / metres_per_pixel == pytest.approx(0.92 * fitted, rel=1e-6)


def test_maps_fetch_no_basemap_and_fine_grids_drop_grid_lines():
    """No basemap style (the browser fetches nothing); beyond MAX_GRID_LINES cells a side only the outline is drawn."""
    coarse, fine = Grid(REGION, viz.MAX_GRID_LINES), Grid(REGION, 2 * viz.MAX_GRID_LINES)
    for grid in (coarse, fine):
        deck = viz.density_deck(grid, np.ones((grid.side, grid.side)) / grid.n_cells)
        assert '"mapStyle": "__MAP_STYLE__"' in deck.to_json() and "mapProvider" not in deck.to_json()
    lines = lambda g: len(layer_data(viz.density_deck(g, np.ones((g.side, g.side))), "PathLayer")[0])
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
    assert paths[1][0]["path"] == REGION.outline_lonlat()
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
    assert (polys[0]["w"], polys[0]["s"]) == pytest.approx((west, south), abs=1e-6)
    assert deck.layers[-1].get_polygon == "@@=" + viz.RECT_POLYGON


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
    assert highlight[0]["path"] == grid.cell_polygons_lonlat()[4]
    w, s, e, n = viz.cell_bounds(grid)[4]
    assert highlight[0]["path"][0] == pytest.approx([w, s], abs=1e-6)
    assert highlight[0]["path"][2] == pytest.approx([e, n], abs=1e-6)


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
