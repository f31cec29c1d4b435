"""Datasets: bundled real points, the papers' synthetic sets, and uploaded files.

Every dataset is a :class:`Dataset`: one lon/lat point per user plus named
square regions (``presets``) to study, the first being the whole view.

* ``minneapolis-stops`` -- 51,920 stops by the Minneapolis Police Department in
  2017 (``MplsStops`` of the carData R package, from Minneapolis Open Data),
  read from ``ldpviz/data/minneapolis_stops.parquet`` (built by
  ``data/make_minneapolis.py``; see ``data/README.md``). Nothing is downloaded.
* ``normal``, ``szipf``, ``mnormal`` -- the synthetic sets of the DAM paper
  (../shared/papers/dam-disk-area-mechanism.md, Sec. VII-A).
* ``gmm`` -- a uniform mixture of random 2-D Gaussians as in the DP heatmaps
  paper (../shared/papers/dp-heatmaps-sparse-emd.md, App. E.3).
* ``uniform`` -- uniform points, the featureless baseline.

Synthetic points live in a planar native domain (e.g. [-5, 5]^2). They are
mapped linearly onto a nominal 10 km x 10 km square centred on lon 0, lat 0
("Null Island", the GIS placeholder for "no real place"), so every dataset goes
through the same map, region and grid code. Native points outside the native
domain are redrawn (rejection sampling), so each set has exactly its documented
size; for the DAM paper's normals this affects about one point in a million.

:func:`load_file` reads a user's CSV or Parquet file, finds the coordinate
columns, drops unusable rows (counted by reason in a :class:`LoadReport`) and
raises :class:`~ldpviz.errors.LdpvizInputError` with a plain message for every
file it cannot use. The pieces below this module: :mod:`ldpviz.data.dataset_types` (Dataset,
LoadReport), :mod:`ldpviz.data.synthetic` (the synthetic sets) and :mod:`ldpviz.data.file_formats`
(columns, dialects, schemas) with :mod:`ldpviz.data.big_files` (chunked reading).

The parts, one job each: ``_bundled`` (the bundled and synthetic sets by name), ``_files`` (a user's CSV or
Parquet file read into points: columns found, rows screened and counted, big files streamed); this face
re-exports every name they define (tests that shrink ``CHUNK_BYTES`` or ``MAX_ROWS`` patch ``_files``, where
they are read).
"""

from __future__ import annotations

from ldpviz.data.dataset_types import Dataset, LoadReport, check_seed, content_key
from ldpviz.data.file_formats import LAT_NAMES, LON_NAMES
from ldpviz.data.synthetic import MNORMAL_COMPONENTS, SYNTHETIC_SIDE_M, gaussian_mixture
from ldpviz.geo.domain import Region, wrap_lon
from ldpviz.data.datasets._bundled import (DATA_DIR, MINNEAPOLIS_FILE, _minneapolis, _BUILDERS, names, LABELS, label,
                                           load, _load_sized, _load_cached, describe)
from ldpviz.data.datasets._files import (_MISSING_TOKENS, ReadPoints, NeedsBounds, load_file, read_points, frame_points,
                                         _refuse_projected_rows, CHUNK_BYTES, MAX_ROWS, _read_small, _Screen, in_bbox,
                                         wrap_longitudes, _read_source, _gunzip, _read_parquet, _decode, _read_csv,
                                         _csv_rows, _DECIMAL_COMMA, _to_numbers)

__all__ = ["Dataset", "LoadReport", "content_key", "gaussian_mixture", "MNORMAL_COMPONENTS", "SYNTHETIC_SIDE_M",
           "LAT_NAMES", "LON_NAMES", "names", "load", "describe", "load_file", "in_bbox", "wrap_longitudes"]
