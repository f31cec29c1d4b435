"""Grids as data: true, estimated and difference maps as CSV rows or GeoJSON cell polygons.

One row (feature) per cell, with its row and column (row 0 is the southern edge,
column 0 the western), its corners in degrees (WGS 84) and one column (property)
per layer, e.g. ``true_share``, ``estimated_share``, ``difference``. Nothing here
loads anything from the network; the files open in any spreadsheet or GIS.
"""

from __future__ import annotations

import json
from typing import Mapping

import numpy as np
import pandas as pd

from ldpviz.geo.domain import Grid
from ldpviz.errors import require
from ldpviz.render.maps import cell_bounds


def grid_table(grid: Grid, layers: Mapping[str, np.ndarray]) -> pd.DataFrame:
    """One row per cell: cell, row, col, west, south, east, north, centre lon/lat and every layer's value."""
    bounds = cell_bounds(grid)                    # the same cell edges as the maps
    rows, cols = np.divmod(np.arange(grid.n_cells), grid.side)
    table = pd.DataFrame({"cell": np.arange(grid.n_cells), "row": rows, "col": cols, "west": bounds[:, 0],
                          "south": bounds[:, 1], "east": bounds[:, 2], "north": bounds[:, 3]})
    table["center_lon"] = (table["west"] + table["east"]) / 2
    table["center_lat"] = (table["south"] + table["north"]) / 2
    for name, values in layers.items():
        values = np.asarray(values, dtype=float).reshape(-1)
        require(values.size == grid.n_cells, f"layer {name!r} has {values.size} values for {grid.n_cells} cells")
        table[name] = values
    return table


def grid_csv(grid: Grid, layers: Mapping[str, np.ndarray]) -> str:
    """:func:`grid_table` as CSV text (coordinates to 7 decimals, ~1 cm)."""
    return grid_table(grid, layers).to_csv(index=False, float_format="%.10g")


def grid_geojson(grid: Grid, layers: Mapping[str, np.ndarray], properties: Mapping[str, object] | None = None) -> str:
    """A GeoJSON FeatureCollection: one Polygon per cell ([lon, lat], counter-clockwise), the layers as properties.

    ``properties`` (e.g. the scenario) go into the collection's ``metadata`` member.
    """
    table = grid_table(grid, layers)
    names = list(layers)
    features = []
    for rec in table.itertuples(index=False):
        w, s, e, n = (round(float(v), 7) for v in (rec.west, rec.south, rec.east, rec.north))
        props = {"cell": int(rec.cell), "row": int(rec.row), "col": int(rec.col)}
        props.update({name: float(getattr(rec, name)) for name in names})
        features.append({"type": "Feature", "properties": props,
                         "geometry": {"type": "Polygon", "coordinates": [[[w, s], [e, s], [e, n], [w, n], [w, s]]]}})
    collection = {"type": "FeatureCollection", "features": features}
    if properties:
        collection["metadata"] = dict(properties)
    return json.dumps(collection, separators=(",", ":"), default=str)
