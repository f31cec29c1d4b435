"""Regions (lon/lat squares in local planar metres) and d x d grids over them.

A :class:`Region` is a square of side ``side_m`` metres centred on a lon/lat
point, as in the DAM paper (Sec. VII-A: square areas of side L) and the grid
paper (a square domain split into cells). Coordinates are projected with the
equirectangular projection about the region centre::

    x = R cos(lat0) (lon - lon0),   y = R (lat - lat0)      (radians, R = 6 371 008.8 m)

At city scale this is accurate to well under 0.1%: the relative scale error in
x at latitude offset dlat is |cos(lat)/cos(lat0) - 1| ~ tan(lat0) * dlat, e.g.
0.09% for a 20 km region at 45 degrees north (dlat = 0.09 degrees). The
tests measure this against the haversine distance.

Positions inside the region are also expressed in *unit coordinates*
``u = (x + L/2) / L`` in [0, 1] (east) and ``v`` likewise (north). Mechanisms
work in unit coordinates and cell indices; metres only enter for reporting.

A :class:`Grid` splits the region into ``d x d`` cells (the DAM paper's
d = L / g). Cell ``(row, col)`` has ``row`` counted from the south edge and
``col`` from the west edge; the flat index is ``row * d + col`` and a density is
a ``(d, d)`` array indexed ``[row, col]``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ldpviz.errors import require

EARTH_RADIUS_M = 6_371_008.8
#: Memory guard: grids with more cells than this are refused with a clear message.
MAX_GRID_SIDE = 1024


@dataclass(frozen=True)
class Region:
    """A square region of side ``side_m`` metres centred at (``center_lon``, ``center_lat``)."""

    center_lon: float
    center_lat: float
    side_m: float
    name: str = ""

    def __post_init__(self) -> None:
        for label, value in (("center_lon", self.center_lon), ("center_lat", self.center_lat),
                             ("side_m", self.side_m)):
            require(isinstance(value, (int, float, np.floating, np.integer)) and math.isfinite(value),
                    f"region {label} must be a finite number, got {value!r}")
        require(-180.0 <= self.center_lon <= 180.0, f"region centre longitude must be in [-180, 180], got {self.center_lon}")
        require(-85.0 <= self.center_lat <= 85.0, f"region centre latitude must be in [-85, 85], got {self.center_lat}")
        require(1.0 <= self.side_m <= 2_000_000.0,
                f"region side must be between 1 m and 2000 km, got {self.side_m:g} m")

    # ---- construction -------------------------------------------------
    @classmethod
    def from_bbox(cls, west: float, south: float, east: float, north: float, name: str = "") -> "Region":
        """The smallest square region centred on a lon/lat box that contains it.

        The papers work on square regions, so a non-square box is grown along
        its shorter side (:meth:`bbox_note` tells the user by how much).
        """
        for label, value in (("west", west), ("south", south), ("east", east), ("north", north)):
            require(math.isfinite(value), f"bbox {label} must be a finite number, got {value!r}")
        require(west < east, f"bbox west ({west}) must be less than east ({east})")
        require(south < north, f"bbox south ({south}) must be less than north ({north})")
        require(-90 <= south and north <= 90, "bbox latitudes must be within [-90, 90]")
        lat0 = (south + north) / 2.0
        lon0 = (west + east) / 2.0
        width = math.radians(east - west) * EARTH_RADIUS_M * math.cos(math.radians(lat0))
        height = math.radians(north - south) * EARTH_RADIUS_M
        return cls(lon0, lat0, max(width, height), name)

    @classmethod
    def fit(cls, lon: np.ndarray, lat: np.ndarray, margin: float = 0.01, name: str = "fit to data",
            min_side_m: float = 100.0) -> "Region":
        """The square region that holds every point, grown by ``margin`` of its side.

        Identical or nearly identical points get a square of ``min_side_m`` metres.
        """
        lon = np.asarray(lon, dtype=float)
        lat = np.asarray(lat, dtype=float)
        require(len(lon) > 0, "cannot fit a region to an empty set of points")
        require(bool(np.all(np.isfinite(lon)) and np.all(np.isfinite(lat))),
                "cannot fit a region to points with missing coordinates")
        west, east = float(lon.min()), float(lon.max())
        south, north = float(lat.min()), float(lat.max())
        lat0 = (south + north) / 2.0
        width = math.radians(east - west) * EARTH_RADIUS_M * math.cos(math.radians(lat0))
        height = math.radians(north - south) * EARTH_RADIUS_M
        side = max(max(width, height) * (1 + 2 * margin), min_side_m)
        return cls((west + east) / 2.0, lat0, side, name)

    # ---- projection -----------------------------------------------------
    def to_metres(self, lon: np.ndarray, lat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Equirectangular projection about the centre: metres east and north of it."""
        lon = np.asarray(lon, dtype=float)
        lat = np.asarray(lat, dtype=float)
        dlon = (lon - self.center_lon + 180.0) % 360.0 - 180.0
        x = np.radians(dlon) * EARTH_RADIUS_M * math.cos(math.radians(self.center_lat))
        y = np.radians(lat - self.center_lat) * EARTH_RADIUS_M
        return x, y

    def to_lonlat(self, x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Inverse of :meth:`to_metres`."""
        x = np.asarray(x, dtype=float)
        y = np.asarray(y, dtype=float)
        lon = self.center_lon + np.degrees(x / (EARTH_RADIUS_M * math.cos(math.radians(self.center_lat))))
        lat = self.center_lat + np.degrees(y / EARTH_RADIUS_M)
        return lon, lat

    def to_unit(self, lon: np.ndarray, lat: np.ndarray) -> np.ndarray:
        """Unit coordinates ``(n, 2)``: (0, 0) is the south-west corner, (1, 1) the north-east."""
        x, y = self.to_metres(lon, lat)
        return np.column_stack([x / self.side_m + 0.5, y / self.side_m + 0.5])

    def unit_to_lonlat(self, uv: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        uv = np.asarray(uv, dtype=float)
        return self.to_lonlat((uv[..., 0] - 0.5) * self.side_m, (uv[..., 1] - 0.5) * self.side_m)

    @property
    def bbox(self) -> tuple[float, float, float, float]:
        """(west, south, east, north) in degrees."""
        lon, lat = self.unit_to_lonlat(np.array([[0.0, 0.0], [1.0, 1.0]]))
        return float(lon[0]), float(lat[0]), float(lon[1]), float(lat[1])

    def contains(self, lon: np.ndarray, lat: np.ndarray) -> np.ndarray:
        uv = self.to_unit(lon, lat)
        return np.all((uv >= 0.0) & (uv <= 1.0), axis=1)

    def outline_lonlat(self) -> list[list[float]]:
        """Closed polygon of the region's border, for maps."""
        w, s, e, n = self.bbox
        return [[w, s], [e, s], [e, n], [w, n], [w, s]]


@dataclass(frozen=True)
class Binned:
    """Points binned on a grid: what survived clipping and what was dropped."""

    cells: np.ndarray        #: flat cell index per kept point, int64
    unit: np.ndarray         #: (n, 2) unit coordinates of kept points, in [0, 1]
    n_outside: int           #: points dropped because they lie outside the region


@dataclass(frozen=True)
class Grid:
    """``side x side`` square cells over a :class:`Region`."""

    region: Region
    side: int

    def __post_init__(self) -> None:
        require(isinstance(self.side, (int, np.integer)) and not isinstance(self.side, bool),
                f"grid side d must be a whole number, got {self.side!r}")
        require(self.side >= 1, f"grid side d must be at least 1, got {self.side}")
        require(self.side <= MAX_GRID_SIDE,
                f"grid side d = {self.side} is too large: at most {MAX_GRID_SIDE} "
                f"({MAX_GRID_SIDE}x{MAX_GRID_SIDE} cells) fits the memory budget")

    @property
    def n_cells(self) -> int:
        return self.side * self.side

    @property
    def cell_m(self) -> float:
        """Cell side g in metres (DAM paper: d = L / g)."""
        return self.region.side_m / self.side

    def bin_unit(self, uv: np.ndarray) -> Binned:
        """Bin unit coordinates; points outside [0, 1]^2 are dropped and counted.

        A point on the far (east or north) edge belongs to the last cell.
        """
        uv = np.asarray(uv, dtype=float).reshape(-1, 2)
        inside = np.all(np.isfinite(uv) & (uv >= 0.0) & (uv <= 1.0), axis=1)
        kept = uv[inside]
        idx = np.minimum((kept * self.side).astype(np.int64), self.side - 1)
        cells = idx[:, 1] * self.side + idx[:, 0]
        return Binned(cells=cells, unit=kept, n_outside=int((~inside).sum()))

    def bin_lonlat(self, lon: np.ndarray, lat: np.ndarray) -> Binned:
        return self.bin_unit(self.region.to_unit(lon, lat))

    def histogram(self, cells: np.ndarray) -> np.ndarray:
        """Counts per cell as a ``(side, side)`` float array indexed ``[row, col]``."""
        return np.bincount(np.asarray(cells, dtype=np.int64), minlength=self.n_cells).astype(float).reshape(
            self.side, self.side)

    def cell_centers_unit(self) -> np.ndarray:
        """``(n_cells, 2)`` unit coordinates of every cell centre, in flat-index order."""
        c = (np.arange(self.side) + 0.5) / self.side
        cols, rows = np.meshgrid(c, c)
        return np.column_stack([cols.ravel(), rows.ravel()])

    def cell_centers_m(self) -> np.ndarray:
        """``(n_cells, 2)`` cell centres in metres from the south-west corner."""
        return self.cell_centers_unit() * self.region.side_m

    def cell_centers_lonlat(self) -> tuple[np.ndarray, np.ndarray]:
        return self.region.unit_to_lonlat(self.cell_centers_unit())

    def cell_polygons_lonlat(self) -> list[list[list[float]]]:
        """Each cell's corners (closed ring) in lon/lat, in flat-index order."""
        edges = np.arange(self.side + 1) / self.side
        lon_e, _ = self.region.unit_to_lonlat(np.column_stack([edges, np.zeros_like(edges)]))
        _, lat_e = self.region.unit_to_lonlat(np.column_stack([np.zeros_like(edges), edges]))
        polys = []
        for r in range(self.side):
            for c in range(self.side):
                w, e, s, n = lon_e[c], lon_e[c + 1], lat_e[r], lat_e[r + 1]
                polys.append([[w, s], [e, s], [e, n], [w, n], [w, s]])
        return polys
