"""pydeck layers and plotly figures built from core objects (no Streamlit here).

Maps are drawn as grid cells coloured on one shared scale, over the region's
outline and a light grid, so they read well even when basemap tiles cannot load.
Every deck takes ``basemap``: off (the default) the browser fetches nothing from a
map server; on, a token-free light basemap (CARTO's Positron style over
OpenStreetMap data) is drawn under the cells. Every cell's tooltip gives its
centre's latitude and longitude and its value with a unit.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pydeck as pdk
from pydeck.bindings.json_tools import default_serialize

from ldpviz.geo.domain import LOCAL, Grid, Region, rect_rings_lonlat, wrap_lon
from ldpviz.geo.partition import Partition

#: Sequential colour ramp (light yellow -> dark red), RGB.
RAMP = np.array([[255, 255, 204], [254, 217, 118], [253, 141, 60], [227, 26, 28], [128, 0, 38]], dtype=float)


def colours(values: np.ndarray, vmax: float, alpha: int = 200) -> np.ndarray:
    """RGBA per value on the shared ramp; values <= 0 are fully transparent."""
    values = np.asarray(values, dtype=float)
    t = np.clip(values / vmax if vmax > 0 else np.zeros_like(values), 0.0, 1.0) ** 0.5
    pos = t * (len(RAMP) - 1)
    lo = np.floor(pos).astype(int)
    hi = np.minimum(lo + 1, len(RAMP) - 1)
    frac = (pos - lo)[:, None]
    rgb = RAMP[lo] * (1 - frac) + RAMP[hi] * frac
    a = np.where(values > 0, alpha, 0)[:, None]
    return np.hstack([rgb, a]).round().astype(int)


#: The narrowest column a map is drawn in (a third of the main area at 1024 px with the sidebar open). A deck's
#: initial view cannot follow its column's width, so every map is framed to fit this width and its height.
NARROWEST_COLUMN_PX = 180
#: Grids finer than this are drawn without inner grid lines (they would hide the density as a grey mesh).
MAX_GRID_LINES = 64


def _mercator_y(lat: np.ndarray) -> np.ndarray:
    """Web-Mercator y in world units (the world is 1 wide at zoom 0), north positive."""
    return np.log(np.tan(np.pi / 4 + np.radians(np.asarray(lat, dtype=float)) / 2)) / (2 * np.pi)


def mercator_aspect(region: Region) -> float:
    """Height over width of the region's outline as deck.gl draws it (Web Mercator): 1 for a small square region
    (any latitude), below 1 for a continent whose northern edge Mercator stretches sideways, and so on."""
    ring = np.asarray(region.outline_lonlat(), dtype=float)
    return float(np.ptp(_mercator_y(ring[:, 1])) / max(np.ptp(ring[:, 0]) / 360.0, 1e-12))


def view_state(region: Region, height: float = 420.0, width: float = NARROWEST_COLUMN_PX) -> pdk.ViewState:
    """A view that frames the whole region in a ``width`` x ``height`` pixel map, with a margin.

    The region's outline (curved on continental regions, continuous across 180 degrees) is measured in
    deck.gl's Web-Mercator pixels (512 px for the world at zoom 0): the zoom makes its larger relative extent
    span 92% of the map, and the view is centred on the outline's middle, not on the region's centre, which a
    continent's Mercator stretch moves south of the middle.
    """
    ring = np.asarray(region.outline_lonlat(), dtype=float)
    x = ring[:, 0] / 360.0
    y = _mercator_y(ring[:, 1])
    span_x, span_y = max(float(np.ptp(x)) * 512.0, 1e-12), max(float(np.ptp(y)) * 512.0, 1e-12)
    zoom = float(np.clip(np.log2(0.92 * min(width / span_x, height / span_y)), 0, 20))
    mid_y = (y.min() + y.max()) / 2
    lat = float(np.degrees(2 * np.arctan(np.exp(2 * np.pi * mid_y)) - np.pi / 2))
    lon = float(wrap_lon((x.min() + x.max()) / 2 * 360.0))
    return pdk.ViewState(longitude=lon, latitude=lat, zoom=zoom, pitch=0)


#: The optional basemap: a provider and style that need no access token (CARTO's light "Positron" style).
BASEMAP_PROVIDER, BASEMAP_STYLE = "carto", pdk.map_styles.LIGHT
#: Where the basemap's style and tiles come from, and its attribution (for the pages' captions).
BASEMAP_HOST = "basemaps.cartocdn.com"
#: The style document the browser loads first for that basemap (the dashboard checks it can reach it).
BASEMAP_STYLE_URL = "https://basemaps.cartocdn.com/gl/positron-gl-style/style.json"
BASEMAP_CREDIT = "© CARTO, © OpenStreetMap contributors"


class CompactDeck(pdk.Deck):
    """A :class:`pydeck.Deck` whose JSON has no indentation: pydeck indents by two spaces, which made a d = 32
    city map 323 KB instead of 112 KB, and the page ships (and the browser parses) one such document per map
    (Compare draws five). The same JSON value, so the same map; also what ``to_html`` embeds."""

    def to_json(self) -> str:
        return json.dumps(self, sort_keys=True, default=default_serialize, separators=(",", ":"))


def deck(region: Region, layers: list[pdk.Layer], tooltip: str, height: int,
         width: float = NARROWEST_COLUMN_PX, basemap: bool = False) -> pdk.Deck:
    """A map of ``layers`` framed on ``region``.

    ``basemap`` False (the default): ``map_provider=None``, the browser fetches no tiles and no style.
    True: CARTO's light style (no token needed) under the layers; when it cannot load (offline) the
    layers still draw on the page's background, framed by the region outline.
    """
    provider = {"map_provider": BASEMAP_PROVIDER, "map_style": BASEMAP_STYLE} if basemap else {"map_provider": None}
    for i, layer in enumerate(layers):   # stable ids (pydeck draws random ones): the same map is the same JSON, so
        layer.id = f"{i}-{layer.type}"   # a page drawn again (Explore after its other trials) keeps its maps
    return CompactDeck(layers=layers, initial_view_state=view_state(region, height, width), **provider,
                    tooltip={"text": tooltip}, height=height)


#: The tooltip line every cell shows: where its centre is (records carry ``lat`` and ``lon``, see
#: :func:`centre_fields`).
WHERE = "centre: lat {lat}, lon {lon}"


def centre_fields(lon: np.ndarray, lat: np.ndarray) -> list[dict[str, float]]:
    """``{"lat", "lon"}`` per point for tooltips: degrees rounded to 1e-5 (about a metre), longitudes wrapped
    into [-180, 180) so a region across the antimeridian reads as a map would."""
    lon = np.round(wrap_lon(np.asarray(lon, dtype=float)), 5)
    lat = np.round(np.asarray(lat, dtype=float), 5)
    return [{"lat": float(a), "lon": float(o)} for a, o in zip(lat.ravel(), lon.ravel())]


def _rounded(path) -> list:
    """Coordinates rounded to 1e-6 degrees (10 cm): the page carries less JSON, the shape is unchanged."""
    return np.round(np.asarray(path, dtype=float), 6).tolist()


def frame_layers(grid: Grid, max_lines: int = MAX_GRID_LINES) -> list[pdk.Layer]:
    """The region outline and, up to ``max_lines`` cells a side, a light grid: the map's skeleton without tiles.

    Lines, outline and cells all take their vertices from the grid's drawing lattice
    (:meth:`Grid.lattice_lonlat`, the projected square inverse-projected), so they coincide at every scale.
    """
    paths = grid.line_paths_lonlat()
    lines = paths if grid.side <= max_lines else [paths[0], paths[grid.side], paths[grid.side + 1], paths[-1]]
    return [
        pdk.Layer("PathLayer", [{"path": _rounded(p)} for p in lines], get_path="path",
                  get_color=[120, 120, 120, 60], width_min_pixels=1),
        pdk.Layer("PathLayer", [{"path": _rounded(grid.outline_lonlat())}], get_path="path",
                  get_color=[40, 40, 40, 220], width_min_pixels=2),
    ]


def block_outline_layer(grid: Grid, labels: np.ndarray, color: tuple[int, ...] = (20, 20, 20, 200)) -> pdk.Layer:
    """Outlines of the blocks a ``(d, d)`` label array (``[row, col]``, row 0 south) groups cells into: a segment
    wherever two neighbouring cells carry different labels (e.g. the blocks SRR can tell apart)."""
    lab = np.asarray(labels)
    d = grid.side
    segments = []
    rows, cols = np.nonzero(lab[:, 1:] != lab[:, :-1])               # vertical edges at x = (c + 1) / d
    for r, c in zip(rows, cols):
        segments.append(((c + 1) / d, r / d, (c + 1) / d, (r + 1) / d))
    rows, cols = np.nonzero(lab[1:, :] != lab[:-1, :])               # horizontal edges at y = (r + 1) / d
    for r, c in zip(rows, cols):
        segments.append((c / d, (r + 1) / d, (c + 1) / d, (r + 1) / d))
    paths = []
    if segments:
        seg = np.asarray(segments, dtype=float)
        k = grid.points_per_edge                                      # follow the projected edge, as the cells do
        t = np.arange(k + 1) / k
        uv = seg[:, None, :2] + (seg[:, None, 2:] - seg[:, None, :2]) * t[None, :, None]
        lon, lat = grid.region.unit_to_lonlat(uv)
        paths = [{"path": p} for p in np.round(np.stack([lon, lat], axis=-1), 6).tolist()]
    return pdk.Layer("PathLayer", paths, get_path="path", get_color=list(color), width_min_pixels=2)


#: deck.gl accessor building a rectangle from a record's corners w, s, e, n: where the projection is linear in
#: lon/lat (local regions) a cell *is* that rectangle, and four numbers a cell keep the page small at d = 256.
RECT_POLYGON = "[[w, s], [e, s], [e, n], [w, n]]"  # pydeck prefixes "@@=" (an expression)


def _shape_fields(rings: np.ndarray, region: Region) -> list[dict]:
    """Per ring, what a record needs to draw it: ``w, s, e, n`` where the region's projection is linear in lon/lat
    (local; the 4-corner rings are then exact rectangles, SW first), else the ring itself as ``polygon``."""
    if region.projection == LOCAL and rings.shape[1] == 4:
        return [{"w": w, "s": s, "e": e, "n": n}
                for w, s, e, n in np.column_stack([rings[:, 0], rings[:, 2]]).tolist()]
    return [{"polygon": ring} for ring in rings.tolist()]


def record_ring(record: dict) -> list[list[float]]:
    """The open lon/lat ring a cell or rectangle record draws (inverse of :func:`_shape_fields`)."""
    if "polygon" in record:
        return record["polygon"]
    w, s, e, n = record["w"], record["s"], record["e"], record["n"]
    return [[w, s], [e, s], [e, n], [w, n]]


def cell_rings(grid: Grid) -> np.ndarray:
    """``(n_cells, 4k, 2)`` lon/lat rings of every cell as drawn (flat-index order), rounded to 1e-6 degrees.

    Each ring is the cell's projected square: its corners and, where the projection
    curves the edges (azimuthal equidistant), k - 1 more points per edge
    (:meth:`Grid.cell_rings_lonlat`). Longitudes are continuous across 180 degrees.
    """
    return np.round(grid.cell_rings_lonlat(), 6)


def density_records(grid: Grid, density: np.ndarray, vmax: float | None = None) -> list[dict]:
    """One record per non-empty cell: its polygon, share of users (%) and colour."""
    values = np.asarray(density, dtype=float).ravel()
    vmax = float(values.max()) if vmax is None else vmax
    rgba = colours(values, vmax)
    return _cell_records(grid, values, np.nonzero(values > 0)[0], rgba, lambda v: round(100 * float(v), 4))


def _cell_records(grid: Grid, values: np.ndarray, cells: np.ndarray, rgba: np.ndarray, show) -> list[dict]:
    """Records of ``cells``: the cell's shape (``w, s, e, n`` or ``polygon``, see :func:`record_ring` and
    :func:`cell_rings`), centre (lat, lon), ``share`` = show(value), colour, index."""
    cells = np.asarray(cells, dtype=np.int64)
    shapes = _shape_fields(cell_rings(grid)[cells], grid.region)
    lon, lat = grid.cell_centers_lonlat()
    where = centre_fields(lon[cells], lat[cells])
    return [{**shape, **at, "share": show(values[k]), "color": rgba[k].tolist(), "cell": int(k)}
            for k, shape, at in zip(cells, shapes, where)]


def density_deck(grid: Grid, density: np.ndarray, vmax: float | None = None, height: int = 420,
                 width: float = NARROWEST_COLUMN_PX, basemap: bool = False,
                 label: str = "{share}% of users") -> pdk.Deck:
    """A pydeck map of a density on the grid, with the frame layers and a tooltip (``label``: the value's line)."""
    layer = _polygon_layer(density_records(grid, density, vmax))
    return deck(grid.region, [*frame_layers(grid), layer], f"cell {{cell}}: {label}\n{WHERE}", height, width,
                basemap)


#: Diverging ramp for differences (blue = too little estimated, red = too much).
DIVERGING = np.array([[33, 102, 172], [146, 197, 222], [247, 247, 247], [244, 165, 130], [178, 24, 43]],
                     dtype=float)


def diverging_colours(values: np.ndarray, vabs: float, alpha: int = 210) -> np.ndarray:
    """RGBA per value on a symmetric blue-white-red ramp over [-vabs, vabs]; zero is transparent."""
    values = np.asarray(values, dtype=float)
    t = np.clip(0.5 + 0.5 * (values / vabs if vabs > 0 else np.zeros_like(values)), 0.0, 1.0)
    pos = t * (len(DIVERGING) - 1)
    lo = np.floor(pos).astype(int)
    hi = np.minimum(lo + 1, len(DIVERGING) - 1)
    frac = (pos - lo)[:, None]
    rgb = DIVERGING[lo] * (1 - frac) + DIVERGING[hi] * frac
    a = np.where(values != 0, alpha, 0)[:, None]
    return np.hstack([rgb, a]).round().astype(int)


def is_uniform_partition(partition: Partition | None, side: int) -> bool:
    """True when ``partition`` is (equivalent to) the plain ``side x side`` grid."""
    if partition is None:
        return True
    if len(partition) != side * side:
        return False
    return bool(np.allclose(partition.rects, Partition.uniform(np.zeros((side, side))).rects))


def partition_records(region: Region, partition: Partition, side: int, vmax: float) -> list[dict]:
    """One record per rectangle of an adaptive partition, coloured by its mass per grid-cell area.

    Mass per grid-cell area (mass / (area * d^2)) puts the rectangles on the same
    colour scale as a d x d density, so adaptive and uniform maps compare directly.
    """
    areas = partition.areas
    per_cell = np.where(areas > 0, partition.mass / np.where(areas > 0, areas, 1.0) / side ** 2, 0.0)
    rgba = colours(np.clip(per_cell, 0, None), vmax)
    shown = np.nonzero(per_cell > 0)[0]
    rects = partition.rects[shown]
    per_cell_edge = Grid(region, side).points_per_edge           # 1: the projection is linear, rectangles are exact
    widest = float(np.max(rects[:, 2:] - rects[:, :2], initial=0.0))
    k = 1 if per_cell_edge == 1 else min(64, per_cell_edge * max(1, int(np.ceil(side * widest))))
    shapes = _shape_fields(np.round(rect_rings_lonlat(region, rects, k), 6), region)
    lon, lat = region.unit_to_lonlat(np.column_stack([(rects[:, 0] + rects[:, 2]) / 2,
                                                      (rects[:, 1] + rects[:, 3]) / 2]))
    return [{**shape, **at, "share": round(100 * float(partition.mass[i]), 4), "color": rgba[i].tolist(),
             "cell": f"rect {i}"} for i, shape, at in zip(shown, shapes, centre_fields(lon, lat))]


def _polygon_layer(records: list[dict], line: bool = False) -> pdk.Layer:
    """Filled cell polygons from records with a ``polygon`` ring or rectangle corners (see :func:`record_ring`)."""
    accessor = "polygon" if records and "polygon" in records[0] else RECT_POLYGON
    return pdk.Layer("PolygonLayer", records, get_polygon=accessor, get_fill_color="color",
                     stroked=line, get_line_color=[60, 60, 60, 120], line_width_min_pixels=1 if line else 0,
                     pickable=True)


def highlight_layer(grid: Grid, cells: dict[int, list[int]]) -> pdk.Layer:
    """Outlines of some cells (flat index -> RGBA), e.g. a user's true cell and report."""
    rings = cell_rings(grid) if cells else None
    data = [{"path": [*rings[int(k)].tolist(), rings[int(k)][0].tolist()], "color": colour}
            for k, colour in cells.items() if 0 <= int(k) < grid.n_cells]
    return pdk.Layer("PathLayer", data, get_path="path", get_color="color", width_min_pixels=3)


def estimate_deck(grid: Grid, density: np.ndarray, partition: Partition | None = None, vmax: float | None = None,
                  height: int = 420, extra_layers: list[pdk.Layer] | None = None,
                  width: float = NARROWEST_COLUMN_PX, basemap: bool = False) -> pdk.Deck:
    """A map of an estimate: grid cells, or the adaptive partition's rectangles when it has one."""
    values = np.asarray(density, dtype=float)
    vmax = float(values.max()) if vmax is None else vmax
    if is_uniform_partition(partition, grid.side):
        layer = _polygon_layer(density_records(grid, values, vmax))
        tooltip = f"cell {{cell}}: {{share}}% of users\n{WHERE}"
    else:
        layer = _polygon_layer(partition_records(grid.region, partition, grid.side, vmax), line=True)
        tooltip = f"{{cell}}: {{share}}% of users\n{WHERE}"
    return deck(grid.region, [*frame_layers(grid), layer, *(extra_layers or [])], tooltip, height, width, basemap)


def difference_deck(grid: Grid, true_density: np.ndarray, estimate: np.ndarray, height: int = 420,
                    width: float = NARROWEST_COLUMN_PX, basemap: bool = False,
                    what: str = "estimate − truth") -> pdk.Deck:
    """``estimate`` minus ``true_density`` per cell on a symmetric diverging scale (red: too much); ``what``
    names the difference in the tooltip (e.g. 'current − pinned' for two estimates)."""
    diff = (np.asarray(estimate, dtype=float) - np.asarray(true_density, dtype=float)).ravel()
    vabs = float(np.abs(diff).max()) or 1.0
    records = _cell_records(grid, diff, np.nonzero(diff != 0)[0], diverging_colours(diff, vabs),
                            lambda v: round(100 * float(v), 4))
    return deck(grid.region, [*frame_layers(grid), _polygon_layer(records)],
                f"cell {{cell}}: {what} = {{share}} percentage points\n{WHERE}", height, width, basemap)


def output_grid(grid: Grid, n_outputs: int) -> Grid | None:
    """The grid a channel's outputs live on: the grid itself, or a centred, larger grid of the same cells.

    DAM-like mechanisms report on a grid grown by the disk radius on every side,
    so their output domain is (d + 2r)^2 cells. Returns None when the outputs are
    not a square grid around the region (then draw them as a bar chart).
    """
    if n_outputs == grid.n_cells:
        return grid
    side = int(round(np.sqrt(n_outputs)))
    if side * side != n_outputs or side < grid.side or (side - grid.side) % 2:
        return None
    region = grid.region
    return Grid(Region(region.center_lon, region.center_lat, grid.cell_m * side, region.name), side)


def picked_cell(event: object) -> int | None:
    """The flat cell index of the object a user clicked on a map (a Streamlit pydeck selection event), or None."""
    selection = getattr(event, "selection", None) if event is not None else None
    objects = selection.get("objects", {}) if isinstance(selection, dict) else {}
    for picked in objects.values():
        for obj in picked or []:
            if (isinstance(obj, dict) and isinstance(obj.get("cell"), (int, float))
                    and not isinstance(obj["cell"], bool)):
                return int(obj["cell"])
    return None


def column_deck(grid: Grid, values: np.ndarray, marks: dict[int, list[int]] | None = None,
                frame: Grid | None = None, height: int = 360, label: str = "probability",
                width: float = NARROWEST_COLUMN_PX, basemap: bool = False) -> pdk.Deck:
    """A probability vector over a grid's cells (a channel column, a posterior) as a map.

    ``frame`` draws the original region's outline too when ``grid`` is a larger output grid.
    """
    values = np.asarray(values, dtype=float).ravel()
    vmax = float(values.max()) or 1.0
    rgba = colours(values, vmax, alpha=220)
    records = _cell_records(grid, values, np.nonzero(values > 0)[0], rgba, lambda v: f"{v:.3g}")
    layers = [*frame_layers(grid), _polygon_layer(records)]
    if frame is not None and frame is not grid:
        layers.append(pdk.Layer("PathLayer", [{"path": _rounded(frame.outline_lonlat())}], get_path="path",
                                get_color=[20, 20, 160, 230], width_min_pixels=2))
    if marks:
        layers.append(highlight_layer(grid, marks))
    return deck(grid.region, layers, f"cell {{cell}}: {label} {{share}}\n{WHERE}", height, width, basemap)


def legend_html(vmax: float, label: str = "share of users per cell", diverging: bool = False) -> str:
    """A small colour bar (HTML) for the maps' shared scale."""
    ramp = DIVERGING if diverging else RAMP
    stops = ", ".join(f"rgb({r:.0f},{g:.0f},{b:.0f})" for r, g, b in ramp)
    top = _percent(100 * vmax)
    lo = f"-{top}" if diverging else "0%"
    return (f"<div style='font-size:0.8rem;display:flex;flex-wrap:wrap;align-items:center;gap:0.25rem 0.5rem'>"
            f"<span>{lo}</span><div style='flex:1 1 60px;max-width:180px;height:10px;"
            f"background:linear-gradient(to right, {stops});border:1px solid #999'></div><span>{top}</span>"
            f"<span style='flex-basis:100%'>{label}</span></div>")


def _percent(value: float) -> str:
    """Two significant digits, never in exponent form: 100%, 12%, 0.41%, 0.0035%."""
    if value >= 10:
        return f"{value:,.0f}%"
    digits = max(0, 1 - int(np.floor(np.log10(value)))) if value > 0 else 0
    return f"{value:.{digits}f}%"


# ---- plotly figures -------------------------------------------------------------------

#: One colour per mechanism on every chart and legend (plotly's Dark24, in registry order): a mechanism keeps its
#: colour across pages and charts whatever else is drawn beside it.
_MECHANISM_PALETTE = ("#2E91E5", "#E15F99", "#1CA71C", "#FB0D0D", "#DA16FF", "#222A2A", "#B68100", "#750D86",
                      "#EB663B", "#511CFB", "#00A08B", "#FB00D1", "#FC0080", "#B2828D", "#6C7C32", "#778AAE",
                      "#862A16", "#A777F1", "#620042", "#1616A7", "#DA60CA", "#6C4516", "#0D2A63", "#AF0038")


def mechanism_colour(name: str) -> str:
    """The colour of mechanism ``name`` (a registry name) on every chart; other names get a stable colour too."""
    from ldpviz import mechanisms

    names = mechanisms.available()
    if name in names:
        return _MECHANISM_PALETTE[names.index(name) % len(_MECHANISM_PALETTE)]
    return _MECHANISM_PALETTE[sum(name.encode("utf-8")) % len(_MECHANISM_PALETTE)]


#: Distances at or above this many metres are drawn in km on chart axes, as the readouts write them (ui.fmt_metres).
KM_FROM_M = 1000.0


def in_km(table: pd.DataFrame, columns: list[str], label: str) -> tuple[pd.DataFrame, str]:
    """``table`` with ``columns`` (metres) in km, and ``label`` with '(m)' as '(km)', when their largest value is at
    least :data:`KM_FROM_M`; else both unchanged. One rule for every chart axis (issue 27: metre axes reading
    100000)."""
    present = [c for c in columns if c in table]
    values = (pd.concat([pd.to_numeric(table[c], errors="coerce") for c in present]) if present
              else pd.Series([], dtype=float))
    if not len(values) or not (values.abs().max() >= KM_FROM_M):
        return table, label
    out = table.copy()
    for c in present:
        out[c] = pd.to_numeric(out[c], errors="coerce") / 1000.0
    return out, (label.replace("(m)", "(km)") if "(m)" in label else f"{label} (km)")


def sweep_figure(summary: pd.DataFrame, x: str, metric: str, *, group: str = "mechanism",
                 current: float | None = None, metric_label: str | None = None, x_label: str | None = None,
                 log_x: bool = False, floor: float | None = None,
                 mechanism_of: dict[str, str] | None = None) -> go.Figure:
    """One line per ``group`` of a :func:`ldpviz.experiment.summarise` table: mean with a CI band.

    ``summary`` needs columns ``x``, ``metric``, ``metric_lo``, ``metric_hi``, ``group``.
    ``current`` marks the current setting with a dashed vertical line. ``floor`` clips the band
    below (e.g. 0 for distances: a t-interval over few trials can dip below what is possible).
    Lines take their mechanism's colour (:func:`mechanism_colour`); ``mechanism_of`` maps a group value that is a
    display label to its registry name. Where ``summary`` has ``start_map_trials`` (summarise of rows with
    ``estimate_informative``), a point whose estimate stayed at the uniform starting map in some trial is circled
    with an X and says so on hover (issue 37.14).
    """
    if metric.endswith("_m"):
        summary, metric_label = in_km(summary, [metric, f"{metric}_lo", f"{metric}_hi"], metric_label or metric)
    fig = go.Figure()
    start_legend = True
    for name, part in summary.groupby(group, sort=False):
        part = part.sort_values(x)
        colour = mechanism_colour((mechanism_of or {}).get(str(name), str(name)))
        xs = part[x].tolist()
        lo, hi = part[f"{metric}_lo"].tolist(), part[f"{metric}_hi"].tolist()
        if floor is not None:
            lo = [max(v, floor) for v in lo]
        if np.any(np.asarray(hi) > np.asarray(lo)):
            rgb = tuple(int(colour[j:j + 2], 16) for j in (1, 3, 5))
            fig.add_trace(go.Scatter(x=xs + xs[::-1], y=hi + lo[::-1], fill="toself", line={"width": 0}, mode="lines",
                                     fillcolor=f"rgba({rgb[0]},{rgb[1]},{rgb[2]},0.18)", hoverinfo="skip",
                                     showlegend=False, legendgroup=str(name)))
        fig.add_trace(go.Scatter(x=xs, y=part[metric].tolist(), mode="lines+markers", name=str(name),
                                 line={"color": colour}, legendgroup=str(name)))
        flat = part[part["start_map_trials"] > 0] if "start_map_trials" in part else part.iloc[:0]
        if len(flat):
            from ldpviz.mechanisms.estimation import START_MAP_TEXT
            words = START_MAP_TEXT.replace("the map shown", "the estimate")
            trials = flat["trials"] if "trials" in flat else pd.Series(1, index=flat.index)
            fig.add_trace(go.Scatter(
                x=flat[x].tolist(), y=flat[metric].tolist(), mode="markers", name="stayed at the uniform start map",
                marker={"symbol": "circle-x-open", "size": 15, "color": colour, "line": {"width": 2}},
                legendgroup="start_map", showlegend=start_legend, hovertemplate="%{text}<extra></extra>",
                text=[f"{name}: {int(k)} of {int(t)} trial(s) stayed at the uniform starting map: {words}"
                      for k, t in zip(flat["start_map_trials"], trials)]))
            start_legend = False
    if current is not None:
        fig.add_vline(x=current, line_dash="dash", line_color="#444")
        # Placed by hand: plotly's vline annotation lands off the line on log axes (it needs log10(x) there).
        fig.add_annotation(x=float(np.log10(current)) if log_x and current > 0 else current, y=1, yref="paper",
                           text="current", showarrow=False, yanchor="bottom", font={"color": "#444"})
    fig.update_layout(xaxis_title=x_label or x, yaxis_title=metric_label or metric, height=340,
                      margin={"l": 10, "r": 10, "t": 30, "b": 10}, legend={"orientation": "h", "y": -0.25},
                      template="plotly_white")
    if log_x:
        ticks = sorted(set(summary[x].tolist()))
        fig.update_xaxes(type="log", tickvals=ticks, ticktext=[f"{t:g}" for t in ticks])
    return fig


def compare_figure(table: pd.DataFrame, metric: str, metric_label: str | None = None,
                   label_column: str = "mechanism", floor: float | None = None) -> go.Figure:
    """Horizontal bars of a metric per mechanism with confidence intervals (columns metric, _lo, _hi).

    ``floor`` clips the intervals below (0 for metrics that cannot be negative).
    """
    if metric.endswith("_m"):
        table, metric_label = in_km(table, [metric, f"{metric}_lo", f"{metric}_hi"], metric_label or metric)
    lo = table[f"{metric}_lo"] if floor is None else table[f"{metric}_lo"].clip(lower=floor)
    err_plus = (table[f"{metric}_hi"] - table[metric]).clip(lower=0)
    err_minus = (table[metric] - lo).clip(lower=0)
    colours = [mechanism_colour(n) for n in table["mechanism"]] if "mechanism" in table else "#d95f02"
    fig = go.Figure(go.Bar(x=table[metric], y=table[label_column], orientation="h", marker_color=colours,
                           error_x={"type": "data", "array": err_plus, "arrayminus": err_minus}))
    fig.update_layout(xaxis_title=metric_label or metric, height=max(200, 40 * len(table) + 80),
                      margin={"l": 10, "r": 10, "t": 20, "b": 10}, template="plotly_white",
                      yaxis={"autorange": "reversed"})
    return fig


def channel_bar_figure(column: np.ndarray, marks: dict[int, str] | None = None) -> go.Figure:
    """A channel column or posterior over outputs that are not a map grid, as bars."""
    column = np.asarray(column, dtype=float).ravel()
    fig = go.Figure(go.Bar(x=np.arange(len(column)), y=column, marker_color="#e31a1c"))
    for k, text in (marks or {}).items():
        fig.add_vline(x=k, line_dash="dot", annotation_text=text)
    fig.update_layout(xaxis_title="report", yaxis_title="probability", height=280, template="plotly_white",
                      margin={"l": 10, "r": 10, "t": 20, "b": 10})
    return fig


def frontier_figure(table: pd.DataFrame, metric: str, *, metric_label: str | None = None,
                    group: str = "mechanism", labels: dict[str, str] | None = None,
                    floor: float | None = 0.0) -> go.Figure:
    """The privacy-accuracy frontier of :func:`ldpviz.decide.tradeoff.frontier`: one curve per ``group``, one point per
    epsilon, x = the population-prior attacker's expected error (m; larger = more private), y = ``metric``
    (with its CI as error bars, clipped at ``floor``). Points without an attacker error (no explicit channel) are
    left out. Only each curve's smallest and largest epsilon are written on the chart (labels of every point
    pile up); every point's epsilon is in its hover text."""
    x_title = "attacker's expected error, population prior (m) → more private"
    if "attacker_error_m" in table:
        table, x_title = in_km(table, ["attacker_error_m"], x_title)
    if metric.endswith("_m"):
        table, metric_label = in_km(table, [metric, f"{metric}_lo", f"{metric}_hi"], metric_label or metric)
    x_unit = "km" if "(km)" in x_title else "m"
    fig = go.Figure()
    shown = table[table["attacker_error_m"].notna()] if "attacker_error_m" in table else table.iloc[0:0]
    for name, part in shown.groupby(group, sort=False):
        part = part.sort_values("epsilon")
        y = part[metric].astype(float)
        low_end = part[f"{metric}_lo"].astype(float)
        if floor is not None:
            low_end = low_end.clip(lower=floor)
        hi = (part[f"{metric}_hi"].astype(float) - y).clip(lower=0)
        lo = (y - low_end).clip(lower=0)
        eps = part["epsilon"].tolist()
        ends = {0, len(eps) - 1}
        fig.add_trace(go.Scatter(
            x=part["attacker_error_m"].astype(float).tolist(), y=y.tolist(), mode="lines+markers+text",
            name=(labels or {}).get(str(name), str(name)), line={"color": mechanism_colour(str(name))},
            text=[f"ε={e:g}" if i in ends else "" for i, e in enumerate(eps)], textposition="top center",
            customdata=eps, hovertemplate="ε = %{customdata:g}<br>attacker error %{x:,.3~r} " + x_unit + "<br>%{y:.4g}"
                                          "<extra>%{fullData.name}</extra>",
            error_y={"type": "data", "array": hi.fillna(0).tolist(), "arrayminus": lo.fillna(0).tolist(),
                     "visible": bool((hi.fillna(0) > 0).any())}))
    fig.update_layout(xaxis_title=x_title,
                      yaxis_title=(metric_label or metric) + " → less accurate", height=380,
                      margin={"l": 10, "r": 10, "t": 30, "b": 10}, legend={"orientation": "h", "y": -0.25},
                      template="plotly_white")
    return fig
