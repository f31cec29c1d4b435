"""Regions (lon/lat squares in planar metres) and d x d grids over them.

A :class:`Region` is a square of side ``side_m`` metres centred on a lon/lat
point, as in the DAM paper (Sec. VII-A: square areas of side L) and the grid
paper (a square domain split into cells). Regions run from a few metres to a
continent (:data:`MAX_REGION_SIDE_M`), and may straddle the antimeridian.

Two projections, both centred on the region, carry lon/lat to metres:

* **local** (small regions): the equirectangular projection about the centre::

      x = R cos(lat0) (lon - lon0),   y = R (lat - lat0)      (radians, R = 6 371 008.8 m)

  Its scale error in x at latitude offset dlat is |cos(lat)/cos(lat0) - 1| ~
  tan(lat0) dlat (dlat in radians), e.g. 0.16% at the edge of a 20 km region at
  45 degrees north. It is used only where that error stays within
  :data:`LOCAL_MAX_SCALE_ERROR` over the whole region.
* **azimuthal equidistant** (everything larger): pyproj's ``aeqd`` on the WGS 84
  ellipsoid centred on the region. Distances from the centre are exact; the
  largest scale error, at the corners, is c / sin(c) - 1 on a sphere (c the
  angular distance to the corner): 0.8% for a 2,000 km region, 7.8% at 6,000 km.

Every region reports its projection (:attr:`Region.projection`) and its largest
scale error against the WGS 84 ellipsoid (:attr:`Region.scale_error`: for aeqd
pyproj's Tissot factors at the corners and edge midpoints; for the local
projection its own error plus the sphere's, up to 0.6% at the equator), so
distances in metres (W2, EMD) come with their accuracy (``bench/regions_report.py``
measures them against geodesic distances).

Positions inside the region are also expressed in *unit coordinates*
``u = (x + L/2) / L`` in [0, 1] (east) and ``v`` likewise (north). Mechanisms
work in unit coordinates and cell indices; metres only enter for reporting.
Longitudes returned by the inverse maps are continuous around the centre, so
across the antimeridian they may exceed 180 (e.g. 181 for 179 W); maps draw
them without a seam.

A :class:`Grid` splits the region into ``d x d`` cells (the DAM paper's
d = L / g). Cell ``(row, col)`` has ``row`` counted from the south edge and
``col`` from the west edge; the flat index is ``row * d + col`` and a density is
a ``(d, d)`` array indexed ``[row, col]``.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from ldpviz.errors import require

EARTH_RADIUS_M = 6_371_008.8
#: Memory guard: grids with more cells than this are refused with a clear message.
MAX_GRID_SIDE = 1024
#: Largest region side: a continent (the contiguous United States needs a 5,900 km square).
MAX_REGION_SIDE_M = 6_500_000.0
#: The local (equirectangular) projection is used only while its scale error stays below this.
LOCAL_MAX_SCALE_ERROR = 0.005
LOCAL = "local equirectangular"
AEQD = "azimuthal equidistant (WGS 84)"


def wrap_lon(lon: np.ndarray | float) -> np.ndarray:
    """Longitudes wrapped into [-180, 180) (180 itself stays 180)."""
    lon = np.asarray(lon, dtype=float)
    return np.where(lon == 180.0, 180.0, (lon + 180.0) % 360.0 - 180.0)


def in_bounds(lon: np.ndarray, lat: np.ndarray, bounds: tuple[float, float, float, float]) -> np.ndarray:
    """Points inside a W, S, E, N box (edges included); W > E means the box crosses 180."""
    west, south, east, north = (float(v) for v in bounds)
    west, east = float(wrap_lon(west)), float(wrap_lon(east))
    lon = wrap_lon(lon)
    lat = np.asarray(lat, dtype=float)
    in_lon = (lon >= west) & (lon <= east) if west <= east else (lon >= west) | (lon <= east)
    return in_lon & (lat >= south) & (lat <= north)


def bounds_text(bounds: tuple[float, float, float, float]) -> str:
    """'W,S,E,N' with at most 6 decimals (0.1 m) and no trailing zeros, e.g. '-80.5,38.5,-70.5,43.5'."""
    return ",".join(f"{float(v) + 0.0:.6f}".rstrip("0").rstrip(".") for v in bounds)


def local_scale_error(center_lat: float, side_m: float) -> float:
    """Largest relative scale error of the equirectangular projection over a square region.

    x is scaled by cos(lat0) everywhere, the ground by cos(lat): the error is the
    largest |cos(lat) / cos(lat0) - 1| over the region's latitudes (y is exact).
    """
    half = math.degrees(side_m / 2.0 / EARTH_RADIUS_M)
    lats = np.clip(np.array([center_lat - half, center_lat + half]), -89.999, 89.999)
    c0 = math.cos(math.radians(center_lat))
    ratio = np.cos(np.radians(lats)) / c0
    if (center_lat - half) * (center_lat + half) < 0:   # the equator, where cos peaks, is inside
        ratio = np.append(ratio, 1.0 / c0)
    return float(max(np.abs(ratio - 1.0).max(), np.abs(1.0 / ratio - 1.0).max()))   # either direction


def sphere_error(center_lat: float, side_m: float) -> float:
    """Largest relative difference between R and WGS 84's radii of curvature (meridian M, prime vertical N) over
    the region's latitudes."""
    a, e2 = 6_378_137.0, 0.00669437999014
    half = math.degrees(side_m / 2.0 / EARTH_RADIUS_M)
    lats = np.radians(np.clip(np.linspace(center_lat - half, center_lat + half, 9), -90, 90))
    w = 1.0 - e2 * np.sin(lats) ** 2
    ratio = np.concatenate([a * (1 - e2) / w ** 1.5, a / np.sqrt(w)]) / EARTH_RADIUS_M
    return float(max(np.abs(ratio - 1).max(), np.abs(1 / ratio - 1).max()))


@functools.lru_cache(maxsize=64)
def _aeqd(center_lon: float, center_lat: float):
    """(forward, inverse) pyproj transformers of the azimuthal equidistant projection at a centre."""
    from pyproj import CRS, Transformer

    crs = CRS.from_proj4(f"+proj=aeqd +lat_0={center_lat!r} +lon_0={center_lon!r} +datum=WGS84 +units=m +no_defs")
    return (Transformer.from_crs("EPSG:4326", crs, always_xy=True),
            Transformer.from_crs(crs, "EPSG:4326", always_xy=True))


@functools.lru_cache(maxsize=64)
def _aeqd_scale_error(center_lon: float, center_lat: float, side_m: float) -> float:
    from pyproj import Proj

    h = side_m / 2.0
    xs = np.array([-h, 0.0, h, -h, h, -h, 0.0, h, h / 2])
    ys = np.array([-h, -h, -h, 0.0, 0.0, h, h, h, h / 2])
    lon, lat = _aeqd(center_lon, center_lat)[1].transform(xs, ys)
    f = Proj(f"+proj=aeqd +lat_0={center_lat!r} +lon_0={center_lon!r} +datum=WGS84").get_factors(lon, lat)
    scales = np.concatenate([np.asarray(f.tissot_semimajor), np.asarray(f.tissot_semiminor)])
    return float(np.nanmax(np.abs(scales - 1.0)))


def in_bbox(lon: np.ndarray, lat: np.ndarray, bbox: tuple[float, float, float, float]) -> np.ndarray:
    """Rows inside a W, S, E, N box (edges included); W > E means the box crosses 180."""
    west, south, east, north = (float(v) for v in bbox)
    west, east = float(wrap_lon(west)), float(wrap_lon(east))
    lon = wrap_lon(lon)
    in_lon = (lon >= west) & (lon <= east) if west <= east else (lon >= west) | (lon <= east)
    return in_lon & (lat >= south) & (lat <= north)


def lon_span(lon: np.ndarray) -> tuple[float, float]:
    """(west, east) of the shortest arc holding every longitude; west > east when it crosses 180.

    The arc is the circle minus its largest gap between consecutive longitudes,
    so points at 179 E and 179 W give (179, -179), not (-179, 179).
    """
    lon = np.unique(wrap_lon(np.asarray(lon, dtype=float).ravel()))
    require(lon.size > 0, "cannot find the extent of an empty set of longitudes")
    if lon.size == 1:
        return float(lon[0]), float(lon[0])
    gaps = np.diff(np.concatenate([lon, [lon[0] + 360.0]]))
    i = int(np.argmax(gaps))
    if i == lon.size - 1:          # the largest gap wraps past 180: an ordinary west-to-east span
        return float(lon[0]), float(lon[-1])
    return float(lon[i + 1]), float(lon[i])


@dataclass(frozen=True)
class Region:
    """A square region of side ``side_m`` metres centred at (``center_lon``, ``center_lat``).

    ``data_use`` says how users' data was used to choose the region; empty means
    not at all (a stated box, a preset or a public tile), which is what a region
    broadcast to phones needs (issue 15.1). Anything else is shown with every
    guarantee: as not covered by epsilon, or, when ``epsilon_spent`` > 0, as
    chosen under that much local privacy (which adds to the mechanism's epsilon).

    ``bounds`` (W, S, E, N degrees), when set, is the box the user gave: the grid
    covers the square around it, but only points inside the box belong to the
    region (:meth:`contains`, :meth:`Grid.bin_lonlat`), so the rows kept, the n
    reported and the guarantee are the box's, as ``ldpviz run --csv --bbox`` keeps.
    """

    center_lon: float
    center_lat: float
    side_m: float
    name: str = ""
    data_use: str = ""
    epsilon_spent: float = 0.0   #: LDP budget each row spent to choose the region (0: none spent)
    bounds: tuple[float, float, float, float] | None = None   #: the box the user gave (W, S, E, N), if any

    def __post_init__(self) -> None:
        if self.bounds is not None:
            require(len(self.bounds) == 4 and all(isinstance(v, (int, float, np.floating, np.integer))
                                                  and math.isfinite(v) for v in self.bounds),
                    f"region bounds must be four finite numbers W, S, E, N, got {self.bounds!r}")
            object.__setattr__(self, "bounds", tuple(float(v) for v in self.bounds))
        for label, value in (("center_lon", self.center_lon), ("center_lat", self.center_lat),
                             ("side_m", self.side_m)):
            require(isinstance(value, (int, float, np.floating, np.integer)) and math.isfinite(value),
                    f"region {label} must be a finite number, got {value!r}")
        require(-180.0 <= self.center_lon <= 180.0,
                f"region centre longitude must be in [-180, 180], got {self.center_lon}")
        require(-85.0 <= self.center_lat <= 85.0, f"region centre latitude must be in [-85, 85], got {self.center_lat}")
        require(isinstance(self.epsilon_spent, (int, float, np.floating, np.integer))
                and math.isfinite(self.epsilon_spent) and self.epsilon_spent >= 0,
                f"region epsilon_spent must be a finite number >= 0, got {self.epsilon_spent!r}")
        require(1.0 <= self.side_m <= MAX_REGION_SIDE_M,
                f"region side must be between 1 m and {MAX_REGION_SIDE_M / 1000:,.0f} km, got {self.side_m:g} m")

    # ---- construction -------------------------------------------------
    @classmethod
    def from_bbox(cls, west: float, south: float, east: float, north: float, name: str = "",
                  data_use: str = "") -> "Region":
        """The smallest square region centred on a lon/lat box that contains it.

        ``west > east`` means the box crosses the antimeridian (180 degrees), e.g.
        (170, -25, -170, -10) around Fiji; longitudes in (180, 540] are read as
        their wrapped values. The papers work on square regions, so a non-square
        box is grown along its shorter side.
        """
        for label, value in (("west", west), ("south", south), ("east", east), ("north", north)):
            require(isinstance(value, (int, float, np.floating, np.integer)) and math.isfinite(value),
                    f"bbox {label} must be a finite number, got {value!r}")
        for label, value in (("west", west), ("east", east)):
            require(-180.0 <= value <= 540.0, f"bbox {label} longitude must be in [-180, 180] (or up to 540, "
                                              f"read as its value - 360), got {value}")
        require(-90 <= south <= 90 and -90 <= north <= 90, f"bbox latitudes must be within [-90, 90], got "
                                                           f"south {south}, north {north}")
        require(south != north, f"bbox south and north are both {south}: the box has no height")
        require(south < north, f"bbox south ({south}) must be less than north ({north}); the order is W,S,E,N")
        w, e = float(wrap_lon(west)), float(wrap_lon(east))
        require(w != e and west != east, f"bbox west and east are both {west}: the box has no width")
        width_deg = e - w if w < e else (e - w) % 360.0
        crossing = w > e
        lon0 = float(wrap_lon(w + width_deg / 2.0))
        lat0 = (south + north) / 2.0
        hint = (f" West > east means the box crosses the antimeridian (180 degrees) and is {width_deg:.4g} degrees "
                f"wide; if you meant the box from {e:g} to {w:g}, swap west and east." if crossing and width_deg > 180
                else "")
        require(-85.0 <= lat0 <= 85.0, f"the bbox centre latitude {lat0:g} is beyond 85 degrees; polar "
                                       "regions are not supported")
        side = _square_side(w, width_deg, south, north, lon0, lat0)
        require(side <= MAX_REGION_SIDE_M, f"the bbox needs a square of {side / 1000:,.0f} km; regions can be at "
                                           f"most {MAX_REGION_SIDE_M / 1000:,.0f} km across (a continent).{hint}")
        return cls(lon0, lat0, max(side, 1.0), name, data_use)

    @classmethod
    def fit(cls, lon: np.ndarray, lat: np.ndarray, margin: float = 0.01, name: str = "fit to data",
            min_side_m: float = 100.0) -> "Region":
        """The square region that holds every point, grown by ``margin`` of its side.

        Identical or nearly identical points get a square of ``min_side_m`` metres.
        Points across the antimeridian get a region across it. The region depends
        on the exact extreme points, so it is labelled as not private
        (:attr:`data_use`); a grid broadcast to phones should not use it.
        """
        lon = np.asarray(lon, dtype=float)
        lat = np.asarray(lat, dtype=float)
        require(len(lon) > 0, "cannot fit a region to an empty set of points")
        require(bool(np.all(np.isfinite(lon)) and np.all(np.isfinite(lat))),
                "cannot fit a region to points with missing coordinates")
        west, east = lon_span(lon)
        south, north = float(lat.min()), float(lat.max())
        width_deg = (east - west) % 360.0
        lon0 = float(wrap_lon(west + width_deg / 2.0))
        lat0 = (south + north) / 2.0
        side = max(_square_side(west, width_deg, south, north, lon0, lat0) * (1 + 2 * margin), min_side_m)
        use = ("fit to the users' exact points: the smallest square holding every point, so its edges reveal "
               "the extreme users' coordinates (not private)")
        return cls(lon0, lat0, side, name, use)

    # ---- projection -----------------------------------------------------
    @property
    def projection(self) -> str:
        """Which projection carries lon/lat to metres here: :data:`LOCAL` or :data:`AEQD`."""
        return LOCAL if local_scale_error(self.center_lat, self.side_m) <= LOCAL_MAX_SCALE_ERROR else AEQD

    @property
    def scale_error(self) -> float:
        """Largest relative scale error of the projection over the region against WGS 84 (0.01 = 1%).

        For the local projection this is its own error (:func:`local_scale_error`)
        plus the sphere's, whose radius R differs from the ellipsoid's radii of
        curvature (:func:`sphere_error`, up to 0.6% at the equator).
        """
        if self.projection == LOCAL:
            return local_scale_error(self.center_lat, self.side_m) + sphere_error(self.center_lat, self.side_m)
        return _aeqd_scale_error(float(self.center_lon), float(self.center_lat), float(self.side_m))

    def to_metres(self, lon: np.ndarray, lat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Metres east and north of the centre (projection: :attr:`projection`)."""
        lon = np.asarray(lon, dtype=float)
        lat = np.asarray(lat, dtype=float)
        if self.projection == AEQD:
            x, y = _aeqd(float(self.center_lon), float(self.center_lat))[0].transform(wrap_lon(lon), lat)
            return np.asarray(x, dtype=float), np.asarray(y, dtype=float)
        dlon = (lon - self.center_lon + 180.0) % 360.0 - 180.0
        x = np.radians(dlon) * EARTH_RADIUS_M * math.cos(math.radians(self.center_lat))
        y = np.radians(lat - self.center_lat) * EARTH_RADIUS_M
        return x, y

    def to_lonlat(self, x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Inverse of :meth:`to_metres`; longitudes continuous around the centre (may pass 180)."""
        x = np.asarray(x, dtype=float)
        y = np.asarray(y, dtype=float)
        if self.projection == AEQD:
            lon, lat = _aeqd(float(self.center_lon), float(self.center_lat))[1].transform(x, y)
            lon = self.center_lon + wrap_lon(np.asarray(lon, dtype=float) - self.center_lon)
            return lon, np.asarray(lat, dtype=float)
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
        """(west, south, east, north) in degrees enclosing the region; east may pass 180 across it."""
        ring = np.asarray(self.outline_lonlat())
        return (float(ring[:, 0].min()), float(ring[:, 1].min()), float(ring[:, 0].max()),
                float(ring[:, 1].max()))

    def contains(self, lon: np.ndarray, lat: np.ndarray) -> np.ndarray:
        """Points inside the square and, when the region has :attr:`bounds`, inside that box."""
        uv = self.to_unit(lon, lat)
        inside = np.all((uv >= 0.0) & (uv <= 1.0), axis=1)
        return inside & in_bounds(lon, lat, self.bounds) if self.bounds is not None else inside

    def to_unit_in_bounds(self, lon: np.ndarray, lat: np.ndarray) -> np.ndarray:
        """:meth:`to_unit`, with points outside :attr:`bounds` (if any) set to NaN (outside the region)."""
        uv = self.to_unit(lon, lat)
        if self.bounds is not None:
            uv[~in_bounds(lon, lat, self.bounds)] = np.nan
        return uv

    @property
    def typed_bounds(self) -> str:
        """'typed bounds W,S,E,N' for a region with :attr:`bounds` ('suggested bounds W,S,E,N' when the box was read
        from the rows, :attr:`data_use`), else ''."""
        if self.bounds is None:
            return ""
        return f"{'suggested' if self.data_use else 'typed'} bounds {bounds_text(self.bounds)}"

    def outline_lonlat(self) -> list[list[float]]:
        """Closed polygon of the region's border, for maps (densified where the projection curves it)."""
        k = 1 if self.projection == LOCAL else 16
        t = np.arange(k) / k
        u = np.concatenate([t, np.ones(k), 1 - t, np.zeros(k), [0.0]])
        v = np.concatenate([np.zeros(k), t, np.ones(k), 1 - t, [0.0]])
        lon, lat = self.unit_to_lonlat(np.column_stack([u, v]))
        return [[float(a), float(b)] for a, b in zip(lon, lat)]


def _square_side(west: float, width_deg: float, south: float, north: float, lon0: float, lat0: float) -> float:
    """Side of the square centred at (lon0, lat0) that holds the lon/lat box, in the region's projection.

    Small boxes use the local formula (width at the centre latitude); where that
    square would be projected with the azimuthal equidistant projection, the box's
    densified border is projected and the square made to hold it.
    """
    width = math.radians(width_deg) * EARTH_RADIUS_M * math.cos(math.radians(lat0))
    height = math.radians(north - south) * EARTH_RADIUS_M
    side = max(width, height)
    if local_scale_error(lat0, side) <= LOCAL_MAX_SCALE_ERROR:
        return side
    t = np.linspace(0.0, 1.0, 257)
    lon = np.concatenate([west + width_deg * t, np.full_like(t, west + width_deg), west + width_deg * t,
                          np.full_like(t, west)])
    lat = np.concatenate([np.full_like(t, south), south + (north - south) * t, np.full_like(t, north),
                          south + (north - south) * t])
    x, y = _aeqd(float(lon0), float(lat0))[0].transform(wrap_lon(lon), lat)
    return float(2.0 * max(np.abs(x).max(), np.abs(y).max()) * (1 + 1e-9))


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
        """Bin lon/lat points; points outside the region (its square, and its :attr:`Region.bounds` if set) are
        dropped and counted."""
        return self.bin_unit(self.region.to_unit_in_bounds(lon, lat))

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

    # ---- drawing: cells as the projected squares they are ----------------------------------
    @property
    def points_per_edge(self) -> int:
        """Straight lon/lat segments drawn per cell edge so drawn cells follow the projected squares.

        The local projection is linear in lon/lat, so a cell is exactly a lon/lat
        rectangle (1). Under the azimuthal equidistant projection a straight edge
        in metres curves in lon/lat; it is drawn with a vertex at least every
        :data:`DRAW_SEGMENT_M` metres, at most :data:`MAX_DRAW_LATTICE` vertices
        along the region's side.
        """
        if self.region.projection == LOCAL:
            return 1
        return int(np.clip(math.ceil(self.cell_m / DRAW_SEGMENT_M), 1, max(1, MAX_DRAW_LATTICE // self.side)))

    def lattice_lonlat(self) -> tuple[np.ndarray, np.ndarray]:
        """(lon, lat) of the drawing lattice, each ``(m + 1, m + 1)`` with m = side x :attr:`points_per_edge`.

        Indexed ``[i, j]``: i counts lattice lines from the south edge, j from the
        west edge; cell corners are every :attr:`points_per_edge`-th point. Every
        drawn cell, grid line and outline takes its vertices from this one lattice,
        so they coincide exactly (shared edges are the same floats).
        """
        return _drawing_lattice(self)

    def cell_rings_lonlat(self) -> np.ndarray:
        """``(n_cells, 4k, 2)`` open rings (lon, lat), counter-clockwise from each cell's south-west corner.

        k = :attr:`points_per_edge`; flat-index order. The corners and edge points
        are the projected square's, inverse-projected (:attr:`lattice_lonlat`).
        """
        k, d = self.points_per_edge, self.side
        lon, lat = self.lattice_lonlat()
        t = np.arange(k)
        di = np.concatenate([np.zeros(k), t, np.full(k, k), k - t]).astype(np.int64)      # south, east, north, west
        dj = np.concatenate([t, np.full(k, k), k - t, np.zeros(k)]).astype(np.int64)
        rows, cols = np.divmod(np.arange(d * d), d)
        ii = rows[:, None] * k + di[None, :]
        jj = cols[:, None] * k + dj[None, :]
        return np.stack([lon[ii, jj], lat[ii, jj]], axis=-1)

    def cell_polygons_lonlat(self) -> list[list[list[float]]]:
        """Each cell's closed ring in lon/lat (corners and edge points, see :meth:`cell_rings_lonlat`)."""
        rings = self.cell_rings_lonlat()
        rings = np.concatenate([rings, rings[:, :1]], axis=1)
        return rings.tolist()

    def line_paths_lonlat(self) -> list[list[list[float]]]:
        """The ``2 (side + 1)`` grid lines (west to east edges first, then south to north), as lon/lat paths."""
        k = self.points_per_edge
        lon, lat = self.lattice_lonlat()
        idx = np.arange(self.side + 1) * k
        columns = [np.column_stack([lon[:, j], lat[:, j]]).tolist() for j in idx]     # constant u
        rows = [np.column_stack([lon[i, :], lat[i, :]]).tolist() for i in idx]        # constant v
        return columns + rows

    def outline_lonlat(self) -> list[list[float]]:
        """The region's border as a closed ring through the drawing lattice's edge points (coincides with the cells)."""
        lon, lat = self.lattice_lonlat()
        m = lon.shape[0] - 1
        i = np.concatenate([np.zeros(m), np.arange(m), np.full(m, m), m - np.arange(m), [0]]).astype(np.int64)
        j = np.concatenate([np.arange(m), np.full(m, m), m - np.arange(m), np.zeros(m), [0]]).astype(np.int64)
        return np.column_stack([lon[i, j], lat[i, j]]).tolist()


#: Under the azimuthal equidistant projection, cell edges are drawn with a vertex at least every this many metres.
DRAW_SEGMENT_M = 50_000.0
#: The drawing lattice has at most this many segments along the region's side (memory and page size).
MAX_DRAW_LATTICE = 512


@functools.lru_cache(maxsize=16)
def _drawing_lattice(grid: Grid) -> tuple[np.ndarray, np.ndarray]:
    m = grid.side * grid.points_per_edge
    t = np.arange(m + 1) / m
    u, v = np.meshgrid(t, t)                        # [i (north), j (east)]
    lon, lat = grid.region.unit_to_lonlat(np.stack([u, v], axis=-1))
    lon, lat = np.asarray(lon, dtype=float), np.asarray(lat, dtype=float)
    lon.setflags(write=False)
    lat.setflags(write=False)
    return lon, lat


def rect_rings_lonlat(region: Region, rects: np.ndarray, points_per_edge: int = 1) -> np.ndarray:
    """``(n, 4k, 2)`` open lon/lat rings of rectangles given in unit coordinates ``(x0, y0, x1, y1)``.

    Each edge is split into ``points_per_edge`` = k straight pieces, counter-clockwise
    from the south-west corner (for an adaptive partition's rectangles on a map).
    """
    rects = np.asarray(rects, dtype=float).reshape(-1, 4)
    k = int(points_per_edge)
    require(k >= 1, f"points per edge must be at least 1, got {k}")
    t = np.arange(k) / k
    fu = np.concatenate([t, np.ones(k), 1 - t, np.zeros(k)])
    fv = np.concatenate([np.zeros(k), t, np.ones(k), 1 - t])
    u = rects[:, :1] + (rects[:, 2:3] - rects[:, :1]) * fu[None, :]
    v = rects[:, 1:2] + (rects[:, 3:4] - rects[:, 1:2]) * fv[None, :]
    lon, lat = region.unit_to_lonlat(np.stack([u, v], axis=-1))
    return np.stack([lon, lat], axis=-1)
