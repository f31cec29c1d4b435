"""pydeck layers and plotly figures built from core objects (no Streamlit here).

Maps are drawn as grid cells coloured on one shared scale, over the region's
outline and a light grid, so they read well even when basemap tiles cannot load.
"""

from __future__ import annotations

import numpy as np
import pydeck as pdk

from ldpviz.domain import Grid, Region

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


def view_state(region: Region) -> pdk.ViewState:
    """A view that frames the region (zoom from its side length)."""
    zoom = float(np.clip(np.log2(40_075_000 * np.cos(np.radians(region.center_lat)) / region.side_m) - 1.2, 1, 20))
    return pdk.ViewState(longitude=region.center_lon, latitude=region.center_lat, zoom=zoom, pitch=0)


def frame_layers(grid: Grid, max_lines: int = 64) -> list[pdk.Layer]:
    """The region outline and a light grid: the map's skeleton without tiles."""
    region = grid.region
    w, s, e, n = region.bbox
    step = max(1, grid.side // max_lines)
    edges = np.arange(0, grid.side + 1, step) / grid.side
    lon_e, _ = region.unit_to_lonlat(np.column_stack([edges, np.zeros_like(edges)]))
    _, lat_e = region.unit_to_lonlat(np.column_stack([np.zeros_like(edges), edges]))
    lines = [{"path": [[x, s], [x, n]]} for x in lon_e] + [{"path": [[w, y], [e, y]]} for y in lat_e]
    return [
        pdk.Layer("PathLayer", lines, get_path="path", get_color=[120, 120, 120, 60], width_min_pixels=1),
        pdk.Layer("PathLayer", [{"path": region.outline_lonlat()}], get_path="path",
                  get_color=[40, 40, 40, 220], width_min_pixels=2),
    ]


def density_records(grid: Grid, density: np.ndarray, vmax: float | None = None) -> list[dict]:
    """One record per non-empty cell: polygon, share of users (%) and colour."""
    values = np.asarray(density, dtype=float).ravel()
    vmax = float(values.max()) if vmax is None else vmax
    rgba = colours(values, vmax)
    polys = grid.cell_polygons_lonlat()
    return [{"polygon": polys[k], "share": round(100 * float(values[k]), 4), "color": rgba[k].tolist(),
             "cell": int(k)} for k in np.nonzero(values > 0)[0]]


def density_deck(grid: Grid, density: np.ndarray, vmax: float | None = None, height: int = 420) -> pdk.Deck:
    """A pydeck map of a density on the grid, with the frame layers and a tooltip."""
    layer = pdk.Layer("PolygonLayer", density_records(grid, density, vmax), get_polygon="polygon",
                      get_fill_color="color", stroked=False, pickable=True)
    return pdk.Deck(layers=[*frame_layers(grid), layer], initial_view_state=view_state(grid.region),
                    map_style=None, tooltip={"text": "cell {cell}: {share}% of users"}, height=height)
