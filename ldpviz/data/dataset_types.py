"""The types every loader returns: :class:`Dataset` (one lon/lat point per user and its region presets)
and :class:`LoadReport` (what a file's loading kept, dropped and changed, counted by reason).
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ldpviz.errors import LdpvizInputError, require
from ldpviz.geo.domain import Region


_REASON_PHRASE = {
    "malformed row": "with more fields than the header",
    "missing coordinate": "with a missing coordinate",
    "non-numeric coordinate": "with a non-numeric coordinate",
    "latitude out of range": "with latitude outside [-90, 90]",
    "longitude out of range": "with longitude outside [-180, 540] (values in (180, 540] are wrapped)",
    "longitude past 180, not wrapped": "with a longitude in (180, 540], kept out because wrapping was turned off",
    "outside the bbox": "outside the bbox",
}


_CHANGE_PHRASE = {
    "longitude wrapped": "with a longitude in (180, 540] wrapped to [-180, 180] (value - 360)",
}


@dataclass(frozen=True)
class LoadReport:
    """What :func:`load_file` read, kept and dropped (reason -> count), and from which columns."""

    rows_read: int
    rows_kept: int
    dropped: dict[str, int]
    lat_column: str
    lon_column: str
    notes: tuple[str, ...] = ()   #: how the file was interpreted (encoding, delimiter, decimal commas)
    changed: dict[str, int] = field(default_factory=dict)   #: kept rows whose values were altered, by reason

    def summary(self) -> str:
        """One sentence for the user, followed by any notes."""
        text = (f"Kept {self.rows_kept:,} of {self.rows_read:,} rows "
                f"(latitude from '{self.lat_column}', longitude from '{self.lon_column}')")
        parts = [f"{count:,} {_REASON_PHRASE.get(reason, f'({reason})')}"
                 for reason, count in self.dropped.items() if count]
        if parts:
            listed = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
            text += f"; dropped {listed}"
        changes = [f"{count:,} {_CHANGE_PHRASE.get(reason, f'({reason})')}"
                   for reason, count in self.changed.items() if count]
        if changes:
            text += f"; changed {', '.join(changes)}"
        return " ".join([text + "."] + [f"Note: {note}" for note in self.notes])


def content_key(name: str, *parts: bytes) -> str:
    """A stable sha1 of a dataset's name and content, for caches (points and trajectories alike)."""
    h = hashlib.sha1(name.encode("utf-8"))
    h.update(b"\0")
    for part in parts:
        h.update(part)
    return h.hexdigest()


@dataclass(frozen=True, eq=False)
class Dataset:
    """Points (one per user) and the square regions worth looking at.

    ``lon`` and ``lat`` are read-only float64 arrays; ``presets`` is ordered and
    its first region is the default whole view.
    """

    name: str
    label: str
    description: str
    lon: np.ndarray
    lat: np.ndarray
    presets: dict[str, Region]
    synthetic: bool
    report: LoadReport | None = None

    def __post_init__(self) -> None:
        lon = np.array(self.lon, dtype=np.float64).reshape(-1)
        lat = np.array(self.lat, dtype=np.float64).reshape(-1)
        require(lon.shape == lat.shape, f"dataset {self.name!r}: {lon.size} longitudes but {lat.size} latitudes")
        require(bool(np.all(np.isfinite(lon)) and np.all(np.isfinite(lat))),
                f"dataset {self.name!r} has non-finite coordinates")
        require(len(self.presets) > 0, f"dataset {self.name!r} needs at least one region preset")
        lon.setflags(write=False)
        lat.setflags(write=False)
        object.__setattr__(self, "lon", lon)
        object.__setattr__(self, "lat", lat)
        object.__setattr__(self, "presets", dict(self.presets))

    @property
    def n(self) -> int:
        return int(self.lon.size)

    @property
    def default_region(self) -> Region:
        return next(iter(self.presets.values()))

    def resolve_region(self, region: str | Region | None) -> Region:
        """A Region from one of this dataset's preset names, a Region, or None (the default view)."""
        if region is None:
            return self.default_region
        if isinstance(region, Region):
            return region
        if region in self.presets:
            return self.presets[region]
        raise LdpvizInputError(f"dataset {self.name!r} has no region preset {region!r}; "
                               f"presets: {', '.join(self.presets)}")

    @functools.cached_property
    def key(self) -> str:
        """Stable content hash (sha1 of the name and the coordinate bytes), for caches."""
        return content_key(self.name, self.lon.tobytes(), self.lat.tobytes())


def check_seed(seed: Any) -> int:
    require(isinstance(seed, (int, np.integer)) and not isinstance(seed, bool) and seed >= 0,
            f"seed must be a whole number >= 0, got {seed!r}")
    return int(seed)
