"""ldpviz.render.png: PNG maps drawn on the server (no browser, no network)."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from ldpviz.render import png as render, maps as viz
from ldpviz.geo.domain import Grid, Region
from ldpviz.errors import LdpvizInputError

REGION = Region(-93.27, 44.97, 4000.0, "test")


def decode(png: bytes) -> np.ndarray:
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB"))


@pytest.mark.parametrize("side", [4, 16, 64, 256])
def test_png_is_valid_and_sized_by_layout(side):
    grid = Grid(REGION, side)
    png = render.density_png(grid, np.ones((side, side)) / side ** 2, title="t", legend="share", width=640)
    img = decode(png)
    geo = render.layout(side, 640, "t")
    assert img.shape == (geo.height, geo.width, 3)
    assert geo.width == 640 and geo.map_px <= 640 and geo.map_px % side == 0


@pytest.mark.parametrize("side,row,col", [(4, 0, 3), (4, 3, 0), (16, 2, 11), (256, 200, 17)])
def test_single_hot_cell_lands_in_its_block_north_up(side, row, col):
    """Row 0 is the south edge (ldpviz.geo.domain), so a hot cell in row r is drawn d-1-r blocks from the top."""
    grid = Grid(REGION, side)
    density = np.zeros((side, side))
    density[row, col] = 1.0
    img = decode(render.density_png(grid, density, width=640))
    geo = render.layout(side, 640)
    left, top, right, bottom = geo.cell_box(row, col)
    hot = render._over_white(viz.colours(np.array([1.0]), 1.0))[0]
    centre = img[(top + bottom) // 2, (left + right) // 2]
    assert (centre == hot).all()
    # every other cell centre is background (empty cells are transparent on the pydeck map too)
    for r in range(side):
        for c in range(side):
            if (r, c) != (row, col) and (side <= 16 or (abs(r - row) <= 1 and abs(c - col) <= 1)):
                l_, t_, r_, b_ = geo.cell_box(r, c)
                assert (img[(t_ + b_) // 2, (l_ + r_) // 2] == 255).all()


def test_blocks_are_crisp_at_fine_grids():
    """At d = 256 no cell borders are drawn: a cell's whole block has the cell's colour (nearest neighbour)."""
    side = 256
    grid = Grid(REGION, side)
    density = np.random.default_rng(1).random((side, side))
    img = decode(render.density_png(grid, density, width=640))
    geo = render.layout(side, 640)
    assert geo.cell_px == 2
    for row, col in [(0, 0), (100, 37), (255, 255)]:
        left, top, right, bottom = geo.cell_box(row, col)
        block = img[top:bottom, left:right].reshape(-1, 3)
        assert (block == block[0]).all()


def test_diverging_uses_both_colours():
    """A difference map with one cell too high and one too low shows red and blue at their blocks."""
    grid = Grid(REGION, 8)
    diff = np.zeros((8, 8))
    diff[1, 1], diff[6, 6] = 0.02, -0.02
    img = decode(render.density_png(grid, diff, diverging=True, legend="estimate - truth"))
    geo = render.layout(8, 640)

    def centre(r, c):
        l_, t_, r_, b_ = geo.cell_box(r, c)
        return img[(t_ + b_) // 2, (l_ + r_) // 2].astype(int)
    red, blue = centre(1, 1), centre(6, 6)
    assert red[0] > red[2] + 50          # red end of the ramp
    assert blue[2] > blue[0] + 50        # blue end
    assert (centre(3, 3) == 255).all()   # zero difference stays blank


def test_bad_input_is_refused_with_a_message():
    grid = Grid(REGION, 4)
    with pytest.raises(LdpvizInputError, match="4 x 4"):
        render.density_png(grid, np.ones(5))
    with pytest.raises(LdpvizInputError, match="missing"):
        render.density_png(grid, np.full((4, 4), np.nan))
    with pytest.raises(LdpvizInputError, match="width"):
        render.density_png(grid, np.ones((4, 4)), width=10)


def test_fine_grid_wider_than_requested_gets_one_pixel_per_cell():
    geo = render.layout(1024, 640)
    assert geo.cell_px == 1 and geo.width == 1024 + 2 * render.MARGIN


def test_data_uri_round_trips():
    png = render.density_png(Grid(REGION, 4), np.eye(4))
    uri = render.data_uri(png)
    assert uri.startswith("data:image/png;base64,")
    import base64
    assert base64.b64decode(uri.split(",", 1)[1]) == png
