"""Server-side PNG maps of a density on a grid: no browser, no network, no tiles.

Used where a pydeck map cannot go: the HTML decision report (:mod:`ldpviz.decide.decision_report`,
maps embedded as data URIs) and the dashboard's image exports. The colours are the
pydeck maps' own (:func:`ldpviz.render.maps.colours` / :func:`ldpviz.render.maps.diverging_colours`),
composited over white exactly as the browser shows their translucent cells, so a PNG
and the live map of the same density look the same.

The image is drawn in the region's own projected plane (:mod:`ldpviz.geo.domain`: the local or the azimuthal
equidistant projection), where the region is a square and every cell a square, so it needs no reprojection at
any scale or across 180 degrees; the pydeck maps draw the same cells inverse-projected to lon/lat
(:func:`ldpviz.render.maps.cell_rings`).

Layout (top to bottom): the title, the d x d map with north up (grid row 0 is the
*south* edge, see :mod:`ldpviz.geo.domain`, so rows are drawn last to first), a colour
bar with its min/max labels, the legend text, and a scale note (cell side and
region side in m/km; wrapped on narrow images). Each cell is a block of whole pixels (nearest-neighbour
upscaling), so the map is crisp at d = 4 and at d = 256; thin cell borders are drawn
only up to d = 64, beyond which they would hide the data.
"""

from __future__ import annotations

import base64
import io
from dataclasses import dataclass

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from ldpviz.render import maps as viz
from ldpviz.geo.domain import Grid
from ldpviz.errors import require
from ldpviz.wording import length

#: Cell borders are drawn for grids of at most this side (and cells of at least 4 pixels).
MAX_SIDE_WITH_LINES = 64
MARGIN = 16
TITLE_PX = 18
TEXT_PX = 13
BAR_HEIGHT = 14
BACKGROUND = (255, 255, 255)
OUTLINE = (40, 40, 40)
CELL_LINE = (200, 200, 200)


@dataclass(frozen=True)
class Layout:
    """Where the map sits in the image: its top-left pixel, the pixels per cell, the image size."""

    x0: int
    y0: int
    cell_px: int
    side: int
    width: int
    height: int

    @property
    def map_px(self) -> int:
        return self.cell_px * self.side

    def cell_box(self, row: int, col: int) -> tuple[int, int, int, int]:
        """(left, top, right, bottom) pixels of grid cell (row, col); row 0 is the south edge."""
        left = self.x0 + col * self.cell_px
        top = self.y0 + (self.side - 1 - row) * self.cell_px
        return left, top, left + self.cell_px, top + self.cell_px


def layout(side: int, width: int = 640, title: str = "") -> Layout:
    """The image geometry for a ``side`` x ``side`` map in an image about ``width`` pixels wide.

    Every cell gets the same whole number of pixels (at least one), so an image
    for a grid finer than the requested width is widened to ``side + 2 * MARGIN``.
    """
    require(isinstance(width, (int, np.integer)) and 64 <= width <= 4096,
            f"image width must be a whole number of pixels from 64 to 4096, got {width!r}")
    cell_px = max(1, (int(width) - 2 * MARGIN) // side)
    map_px = cell_px * side
    img_w = max(int(width), map_px + 2 * MARGIN)
    x0 = (img_w - map_px) // 2
    y0 = MARGIN + (TITLE_PX + 8 if title else 0)
    height = y0 + map_px + 10 + BAR_HEIGHT + 4 + 4 * (TEXT_PX + 5) + MARGIN   # labels, legend, 2 note lines
    return Layout(x0, y0, cell_px, side, img_w, height)


def _font(size: int) -> ImageFont.ImageFont | ImageFont.FreeTypeFont:
    try:
        return ImageFont.load_default(size=size)     # scalable built-in font (Pillow >= 10.1 with FreeType)
    except (TypeError, OSError):                     # pragma: no cover - old Pillow / no FreeType
        return ImageFont.load_default()


def _over_white(rgba: np.ndarray) -> np.ndarray:
    """Composite RGBA (0-255) over white, as a browser draws the pydeck map's translucent cells."""
    rgba = np.asarray(rgba, dtype=float)
    a = rgba[..., 3:4] / 255.0
    return (rgba[..., :3] * a + 255.0 * (1.0 - a)).round().astype(np.uint8)


def _length(metres: float) -> str:
    return length(metres)


def _value_label(value: float, as_percent: bool) -> str:
    return f"{100 * value:.3g}%" if as_percent else f"{value:.3g}"


def density_png(grid: Grid, density: np.ndarray, *, vmax: float | None = None, diverging: bool = False,
                title: str = "", legend: str = "", width: int = 640, as_percent: bool = True) -> bytes:
    """A PNG map of ``density`` (a ``(d, d)`` array indexed ``[row, col]``, or its flat form).

    ``vmax`` fixes the top of the colour scale (share maps of one page share it);
    by default it is the largest value (the largest absolute value when
    ``diverging``, whose scale runs from -vmax to +vmax, blue to red).
    ``legend`` names what the colours measure; ``as_percent`` labels values as
    percentages (shares of users), else as plain numbers.
    """
    side = grid.side
    values = np.asarray(density, dtype=float)
    require(values.size == side * side,
            f"the density has {values.size} values but the grid has {side} x {side} = {side * side} cells")
    values = values.reshape(side, side)
    require(bool(np.all(np.isfinite(values))), "the density to draw has missing or infinite values")
    require(vmax is None or (np.isfinite(vmax) and vmax >= 0), f"vmax must be a finite number >= 0, got {vmax!r}")
    top = float(np.abs(values).max() if diverging else values.max()) if vmax is None else float(vmax)
    top = top if top > 0 else 1.0

    geo = layout(side, width, title)
    flat = values[::-1].ravel()                      # north (last row) first: image rows run top-down
    rgba = viz.diverging_colours(flat, top) if diverging else viz.colours(flat, top)
    cells = _over_white(rgba).reshape(side, side, 3)
    block = np.repeat(np.repeat(cells, geo.cell_px, axis=0), geo.cell_px, axis=1)

    image = Image.new("RGB", (geo.width, geo.height), BACKGROUND)
    image.paste(Image.fromarray(block, "RGB"), (geo.x0, geo.y0))
    draw = ImageDraw.Draw(image)
    x1, y1 = geo.x0 + geo.map_px, geo.y0 + geo.map_px
    if side <= MAX_SIDE_WITH_LINES and geo.cell_px >= 4:
        for k in range(1, side):
            off = k * geo.cell_px
            draw.line([(geo.x0 + off, geo.y0), (geo.x0 + off, y1 - 1)], fill=CELL_LINE)
            draw.line([(geo.x0, geo.y0 + off), (x1 - 1, geo.y0 + off)], fill=CELL_LINE)
    draw.rectangle([geo.x0 - 1, geo.y0 - 1, x1, y1], outline=OUTLINE)

    small, big = _font(TEXT_PX), _font(TITLE_PX)
    if title:
        draw.text((geo.x0, MARGIN), title, fill=(0, 0, 0), font=big)
    _colour_bar(image, draw, geo, top, diverging, legend, as_percent, small)
    region = grid.region
    note = [f"North up. Cell {_length(grid.cell_m)} x {_length(grid.cell_m)};",
            f"region {_length(region.side_m)} across ({side} x {side} cells)."]
    if draw.textlength(" ".join(note), font=small) <= geo.width - geo.x0 - 4:
        note = [" ".join(note)]
    y = geo.y0 + geo.map_px + 10 + BAR_HEIGHT + 4 + 2 * (TEXT_PX + 5)
    for k, line in enumerate(note):
        draw.text((geo.x0, y + k * (TEXT_PX + 5)), line, fill=(60, 60, 60), font=small)

    out = io.BytesIO()
    image.save(out, format="PNG", optimize=True)
    return out.getvalue()


def _colour_bar(image: Image.Image, draw: ImageDraw.ImageDraw, geo: Layout, top: float, diverging: bool, legend: str,
                as_percent: bool, font: ImageFont.ImageFont | ImageFont.FreeTypeFont) -> None:
    """The shared scale under the map: a ramp from min to max with labels at both ends."""
    bar_w = max(32, min(geo.map_px, 320))
    y = geo.y0 + geo.map_px + 10
    lo = -top if diverging else 0.0
    samples = np.linspace(lo, top, bar_w)
    if not diverging:
        samples = np.maximum(samples, 1e-12 * top)   # the ramp's bottom colour, not "empty cell"
    else:
        samples = np.where(samples == 0, 1e-12 * top, samples)
    rgba = viz.diverging_colours(samples, top) if diverging else viz.colours(samples, top)
    strip = np.repeat(_over_white(rgba)[None, :, :], BAR_HEIGHT, axis=0)
    left = geo.x0
    image.paste(Image.fromarray(strip, "RGB"), (left, y))
    draw.rectangle([left - 1, y - 1, left + bar_w, y + BAR_HEIGHT], outline=(150, 150, 150))
    ty = y + BAR_HEIGHT + 4
    draw.text((left, ty), _value_label(lo, as_percent), fill=(0, 0, 0), font=font)
    hi_label = _value_label(top, as_percent)
    hi_w = draw.textlength(hi_label, font=font)
    draw.text((left + bar_w - hi_w, ty), hi_label, fill=(0, 0, 0), font=font)
    if legend:
        room = geo.width - left - 4
        while legend and draw.textlength(legend, font=font) > room:   # never draw past the image's edge
            legend = legend[:-2] + "…" if len(legend) > 2 else ""
        draw.text((left, ty + TEXT_PX + 5), legend, fill=(60, 60, 60), font=font)


def data_uri(png: bytes) -> str:
    """A ``data:image/png;base64,...`` URI: the PNG inline, for self-contained HTML."""
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")
