"""Maps of OD flows and navigation routes (pydeck, no Streamlit): arcs from origin to destination cells.

Used by the Flows page; the data come from :mod:`ldpviz.flows.od` (``ODResult``) and
:mod:`ldpviz.flows.navigation` (``NavigationResult``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pydeck as pdk

from ldpviz.geo.domain import Grid
from ldpviz.render.maps import NARROWEST_COLUMN_PX, CompactDeck, frame_layers, view_state

TRUE_COLOUR = [33, 102, 172]
ESTIMATE_COLOUR = [215, 48, 39]
#: Truly congested cells on the navigation map.
CONGESTED_COLOUR = [253, 174, 97, 150]


def top_flows(grid: Grid, flows: np.ndarray, k: int) -> pd.DataFrame:
    """The ``k`` largest OD pairs of a (cells x cells) distribution with their cell centres in lon/lat."""
    flat = np.asarray(flows, dtype=float).ravel()
    k = int(min(k, int((flat > 0).sum())))
    order = np.argsort(-flat, kind="stable")[:k]
    o, d = np.divmod(order, grid.n_cells)
    lon, lat = grid.cell_centers_lonlat()
    return pd.DataFrame({"origin_cell": o, "destination_cell": d, "share": flat[order],
                         "origin_lon": lon[o], "origin_lat": lat[o], "dest_lon": lon[d], "dest_lat": lat[d]})


def flow_table(grid: Grid, true: np.ndarray, estimate: np.ndarray, k: int) -> pd.DataFrame:
    """Top-k true flows with their estimated share, and whether each is in the estimate's top k."""
    top = top_flows(grid, true, k)
    est_top = set(map(tuple, top_flows(grid, estimate, k)[["origin_cell", "destination_cell"]].to_numpy()))
    top["estimated share"] = np.asarray(estimate)[top.origin_cell, top.destination_cell]
    top["in estimated top k"] = [(o, d) in est_top for o, d in zip(top.origin_cell, top.destination_cell)]
    return top.rename(columns={"share": "true share"})[
        ["origin_cell", "destination_cell", "true share", "estimated share", "in estimated top k"]]


def _provider(basemap: bool) -> dict:
    """The deck's map arguments: no basemap (nothing fetched) unless asked, as :func:`ldpviz.render.maps.deck`."""
    from ldpviz.render import maps as viz
    return {"map_provider": viz.BASEMAP_PROVIDER, "map_style": viz.BASEMAP_STYLE} if basemap else {"map_provider": None}


def arc_deck(grid: Grid, flows: np.ndarray, k: int = 40, colour: list[int] | None = None,
             height: int = 420, basemap: bool = False, width: float = NARROWEST_COLUMN_PX) -> pdk.Deck:
    """ArcLayer of the ``k`` largest flows (width by share; a flow within one cell shows as a dot)."""
    df = top_flows(grid, flows, k)
    vmax = float(df.share.max()) if len(df) else 1.0
    df["width"] = 1.0 + 9.0 * np.sqrt(df.share / vmax) if vmax > 0 else 1.0
    rgb = colour or TRUE_COLOUR
    moving, staying = df[df.origin_cell != df.destination_cell], df[df.origin_cell == df.destination_cell]
    layers = frame_layers(grid) + [
        pdk.Layer("ArcLayer", moving.to_dict("records"), get_source_position=["origin_lon", "origin_lat"],
                  get_target_position=["dest_lon", "dest_lat"], get_source_color=rgb + [160],
                  get_target_color=rgb + [255], get_width="width", pickable=True),
        pdk.Layer("ScatterplotLayer", staying.to_dict("records"), get_position=["origin_lon", "origin_lat"],
                  get_radius=grid.cell_m / 4, get_fill_color=rgb + [200], pickable=True),
    ]
    return CompactDeck(layers=layers, initial_view_state=view_state(grid.region, height, width), height=height,
                    tooltip={"text": "share {share}"}, **_provider(basemap))


def route_deck(grid: Grid, congested: np.ndarray, routes: dict[str, list[int]], height: int = 420,
               basemap: bool = False, width: float = NARROWEST_COLUMN_PX) -> pdk.Deck:
    """Congested cells (shaded orange, as the grid's cell polygons) and routes as cell-centre paths: 'driven'
    (red, wide) under 'best' (blue, narrow), so both show where they coincide."""
    lon, lat = grid.cell_centers_lonlat()
    cells = np.flatnonzero(np.asarray(congested, dtype=float).ravel())
    polygons = grid.cell_polygons_lonlat()
    shaded = [{"polygon": polygons[c], "name": "truly congested cell"} for c in cells]
    layers = frame_layers(grid) + [
        pdk.Layer("PolygonLayer", shaded, get_polygon="polygon", get_fill_color=CONGESTED_COLOUR,
                  get_line_color=[180, 90, 0, 200], line_width_min_pixels=1, pickable=True)]
    for name, colour, share, least_px in (("driven", ESTIMATE_COLOUR, 0.4, 7), ("best", TRUE_COLOUR, 0.15, 3)):
        if name in routes:                                            # 'driven' first, 'best' drawn on top
            path = {"name": "fastest route (true congestion)" if name == "best" else "route driven (private updates)",
                    "path": [[float(lon[c]), float(lat[c])] for c in routes[name]]}
            layers.append(pdk.Layer("PathLayer", [path], get_path="path", get_color=colour,
                                    get_width=grid.cell_m * share, width_min_pixels=least_px, pickable=True))
    return CompactDeck(layers=layers, initial_view_state=view_state(grid.region, height, width), height=height,
                    tooltip={"text": "{name}"}, **_provider(basemap))
