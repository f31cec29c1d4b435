"""Load time and peak memory of big uploads and synthetic sets vs rows (issue 14.3).

For each size, write a CSV and a Parquet file of US-wide points with a few bad
rows planted (one in 100,000 each: a missing latitude, a non-numeric longitude,
a latitude of 95, a longitude of 600, and one longitude in (180, 540] that is
wrapped; the CSV also gets one row with an extra field per million rows), then load each file with
:func:`ldpviz.data.datasets.load_file` in a fresh process under ``/usr/bin/time -v``: the report gives the load
seconds measured inside the process, the process's peak resident memory (``Maximum resident set
size``, which includes Python, numpy and pandas themselves: the "baseline" row
loads nothing), and the rows kept, dropped and changed, which must match what
was planted. Synthetic sets (:func:`ldpviz.data.synthetic.generate`) are measured the
same way, both whole (``generate``) and streamed one chunk at a time
(``chunks``, at ten times the largest size: 100 million points in the full run), and ``ldpviz run`` on the
largest size (all points in memory) and on ten times it (chunk by chunk, under a 6 GiB address-space limit).

    python bench/bench_loading.py                    # 1e5, 1e6, 1e7 rows -> docs/data-loading.md
    python bench/bench_loading.py --quick --out /tmp/x   # 1e4, 1e5 rows
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ldpviz.evidence.reproduce import provenance_markdown  # noqa: E402

TARGET_GB = 2.0
#: The 100M-point run is measured under this address-space limit (``ulimit -v``): it used to fail there.
RUN_LIMIT_GIB = 6.0
#: What README states for `ldpviz run` on a synthetic set above 10M points (chunk by chunk), whatever N.
CHUNKED_RUN_TARGET_GB = 1.0


def _path(res: dict) -> str:
    return "chunk by chunk" if res.get("chunked") else "all points in memory"

BAD_EVERY = 100_000
SEED = 0

_CHILD = """
import json, sys, time
t0 = time.perf_counter()
kind, arg, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
if kind == "baseline":
    import numpy, pandas, pyarrow.parquet, ldpviz.data.datasets
    out = {"rows_kept": 0}
elif kind == "stream":
    from ldpviz.data import synthetic
    kept = 0
    for lon, lat in synthetic.chunks(arg, n, seed=0):
        kept += int(((lon > 0) | (lon <= 0)).sum())
    out = {"rows_kept": kept}
elif kind == "run":
    import contextlib, io
    from ldpviz.cli.commands import main
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        code = main(["run", "--dataset", f"{arg}:n={n}", "--json"])
    if code != 0:
        sys.exit(code)
    res = json.loads(buf.getvalue())
    out = {"rows_kept": res["n_users"], "chunked": any("chunk by chunk" in x for x in res["notes"])}
elif kind == "synthetic":
    from ldpviz.data import synthetic
    ds = synthetic.generate(arg, n, seed=0)
    out = {"rows_kept": ds.n}
else:
    from ldpviz.data.datasets import load_file
    from ldpviz.mechanisms.fo.private_region import upload_frame
    # loading speed: the public-tile rule (no epsilon0 spent), as before the paid default; the rule is tested elsewhere
    ds = load_file(arg, max_bytes=8 * 2**30, frame=upload_frame("public-tiles"))
    r = ds.report
    out = {"rows_kept": r.rows_kept, "rows_read": r.rows_read, "dropped": r.dropped, "changed": r.changed,
           "region_km": ds.default_region.side_m / 1000}
out["seconds"] = time.perf_counter() - t0
print(json.dumps(out))
"""


def write_files(n: int, folder: Path) -> tuple[Path, Path, dict[str, int]]:
    """A CSV and a Parquet file of ``n`` US-wide rows with bad rows planted; returns the planted counts."""
    csv_path, pq_path = folder / f"points_{n}.csv", folder / f"points_{n}.parquet"
    rng = np.random.default_rng(SEED)
    planted = {"missing coordinate": 0, "non-numeric coordinate": 0, "latitude out of range": 0,
               "longitude out of range": 0, "longitude wrapped": 0}
    malformed = 0
    import pyarrow as pa
    import pyarrow.parquet as pq
    writer = None
    step = 1_000_000
    with open(csv_path, "w") as fh:
        fh.write("id,lat,lon\n")
        for start in range(0, n, step):
            k = min(step, n - start)
            lat = np.round(rng.uniform(24.6, 49.3, k), 6).astype(str).astype(object)
            lon = np.round(rng.uniform(-124.7, -67.0, k), 6).astype(str).astype(object)
            bad = np.arange(k)[(np.arange(start, start + k) % BAD_EVERY) == 7]
            for i in bad:
                lat[i] = ""
                lon[min(i + 1, k - 1)] = "12O.5"
                lat[min(i + 2, k - 1)] = "95"
                lon[min(i + 3, k - 1)] = "600"
                lon[min(i + 4, k - 1)] = "250.5"
            for key, off in (("missing coordinate", 0), ("non-numeric coordinate", 1), ("latitude out of range", 2),
                             ("longitude out of range", 3), ("longitude wrapped", 4)):
                planted[key] += int(sum(1 for i in bad if i + off < k))
            frame = pd.DataFrame({"id": np.arange(start, start + k), "lat": lat, "lon": lon})
            frame.to_csv(fh, header=False, index=False)
            fh.write(f"{start},44.9,-93.2,an extra field\n")      # one malformed CSV row per million
            malformed += 1
            table = pa.table({"id": frame["id"].to_numpy(), "lat": frame["lat"].astype(str).to_numpy(),
                              "lon": frame["lon"].astype(str).to_numpy()})
            if writer is None:
                writer = pq.ParquetWriter(pq_path, table.schema)
            writer.write_table(table)
    writer.close()
    return csv_path, pq_path, planted, malformed


def measure(kind: str, arg: str, n: int, limit_gib: float | None = None) -> dict:
    """Run one load in a fresh process under /usr/bin/time -v (and an address-space limit of ``limit_gib``, as
    ``ulimit -v``); its JSON plus the peak RSS in MB."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-c", _CHILD, kind, arg, str(n)]
    timed = Path("/usr/bin/time").exists()

    def limit() -> None:
        if limit_gib is not None:
            import resource
            resource.setrlimit(resource.RLIMIT_AS, (int(limit_gib * 2**30), int(limit_gib * 2**30)))
    proc = subprocess.run((["/usr/bin/time", "-v"] if timed else []) + cmd, capture_output=True, text=True,
                          env=env, timeout=3600, preexec_fn=limit)
    if proc.returncode != 0:
        raise RuntimeError(f"{kind} {arg}: {proc.stderr[-2000:]}")
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    peak = re.search(r"Maximum resident set size \(kbytes\): (\d+)", proc.stderr)
    out["peak_mb"] = int(peak.group(1)) / 1024 if peak else float("nan")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (1e4, 1e5 rows)")
    parser.add_argument("--out", default=str(ROOT / "docs"), help="output directory (default docs/)")
    parser.add_argument("--sizes", type=int, nargs="*", help="row counts (default 1e5 1e6 1e7; quick 1e4 1e5)")
    args = parser.parse_args()
    sizes = args.sizes or ([10_000, 100_000] if args.quick else [100_000, 1_000_000, 10_000_000])
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    rows, checks = [], []
    load_start = os.getloadavg()[0]
    base = measure("baseline", "-", 0)
    rows.append({"what": "baseline (imports only)", "rows": 0, "file_mb": 0.0, **base})
    with tempfile.TemporaryDirectory() as tmp:
        for n in sizes:
            t0 = time.perf_counter()
            csv_path, pq_path, planted, malformed = write_files(n, Path(tmp))
            print(f"wrote {n:,} rows in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
            for label, path in (("CSV", csv_path), ("Parquet", pq_path)):
                res = measure("file", str(path), n)
                rows.append({"what": label, "rows": n, "file_mb": path.stat().st_size / 2**20, **res})
                got = {**res["dropped"], **res["changed"]}
                want = {**({"malformed row": malformed} if label == "CSV" else {}), **planted}
                want = {k: v for k, v in want.items() if v}
                checks.append((label, n, got == want, want, got))
                print(f"{label} {n:,}: {res['seconds']:.1f} s, {res['peak_mb']:.0f} MB", file=sys.stderr)
            path.unlink(missing_ok=True)
            csv_path.unlink(missing_ok=True)
        for n in sizes:
            res = measure("synthetic", "normal", n)
            rows.append({"what": "synthetic normal", "rows": n, "file_mb": 0.0, **res})
        stream_n = 10 * max(sizes)
        res = measure("stream", "normal", stream_n)
        rows.append({"what": "synthetic normal, streamed in chunks (synthetic.chunks)", "rows": stream_n,
                     "file_mb": 0.0, **res})
        for n in sizes:
            res = measure("run", "normal", n)
            rows.append({"what": f"`ldpviz run` (grr, d = 32) on normal:n=N, {_path(res)}", "rows": n,
                         "file_mb": 0.0, **res})
        res = measure("run", "normal", stream_n, RUN_LIMIT_GIB)
        rows.append({"what": f"`ldpviz run` (grr, d = 32) on normal:n=N, {_path(res)}, under a "
                             f"{RUN_LIMIT_GIB:g} GiB address-space limit", "rows": stream_n, "file_mb": 0.0,
                     "limited": True, **res})
    report = render(rows, checks, args.quick, sizes, (load_start, os.getloadavg()[0]))
    path = out_dir / "data-loading.md"
    path.write_text(report)
    print(f"wrote {path}")
    return 0


def render(rows: list[dict], checks: list[tuple], quick: bool, sizes: list[int],
           load: tuple[float, float] = (float("nan"), float("nan"))) -> str:
    lines = ["# Loading big files and synthetic sets: time and peak memory vs rows", "",
             provenance_markdown(seeds=str(SEED), trials="1 per size (one fresh process each)", quick=quick),
             "Written by `bench/bench_loading.py`. Each load runs in a fresh Python process under "
             "`/usr/bin/time -v`; *peak MB* is that process's maximum resident set size, interpreter and "
             "libraries included (see the baseline row). *Seconds* is measured inside the process, imports "
             "included. Files above 64 MB are read in chunks of 1,000,000 rows (`ldpviz/data/big_files.py`). Every "
             f"file has bad rows planted (one of each kind per {BAD_EVERY:,} rows, and in CSV one row with an "
             "extra field per million); the loader's counts must match them. The `ldpviz run` rows run the whole "
             "command (`ldpviz run --dataset normal:n=N --json`) in the child: up to 10,000,000 points with every "
             "point in memory, above that chunk by chunk (`ldpviz/experiment/chunked.py`). Load average (1 min): "
             f"{load[0]:.1f} at the start, {load[1]:.1f} at the end; the machine is shared, so *seconds* are noisy, "
             "while *peak MB* depends on the code alone.", "",
             "| what | rows | file MB | seconds | peak MB | rows kept | dropped / changed |",
             "|---|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        counts = ", ".join(f"{k}: {v:,}" for k, v in {**r.get("dropped", {}), **r.get("changed", {})}.items())
        lines.append(f"| {r['what']} | {r['rows']:,} | {r['file_mb']:,.0f} | {r['seconds']:.2f} | "
                     f"{r['peak_mb']:,.0f} | {r['rows_kept']:,} | {counts or '-'} |")
    lines += ["", "## Counts of bad rows", ""]
    for label, n, ok, planted, got in checks:
        lines.append(f"- {label}, {n:,} rows: {'counts match the planted rows' if ok else 'MISMATCH'} "
                     f"(planted {planted}, reported {got}).")
    biggest = max(sizes)
    top = [r for r in rows if r["rows"] == biggest and r["what"] in ("CSV", "Parquet")]
    lines += ["", "## Summary", ""]
    for r in top:
        verdict = "within" if r["peak_mb"] / 1024 <= TARGET_GB else "over"
        lines.append(f"- {r['what']} at {biggest:,} rows: loaded in {r['seconds']:.1f} s with a peak of "
                     f"{r['peak_mb'] / 1024:.2f} GB, {verdict} the {TARGET_GB:g} GB target.")
    from ldpviz.data.synthetic import BYTES_PER_POINT
    runs = [r for r in rows if r["what"].startswith("`ldpviz run`")]
    held = [r for r in runs if not r.get("chunked") and not r.get("limited")]
    if len(held) >= 2:       # the slope between the two largest in-memory runs: what each further point costs
        a, b = held[-2], held[-1]
        per_point = (b["peak_mb"] - a["peak_mb"]) * 2**20 / (b["rows"] - a["rows"])
        verdict = "within" if per_point <= BYTES_PER_POINT else "over"
        lines.append(f"- `ldpviz run` with every point in memory: {per_point:,.0f} bytes a point (peak from "
                     f"{a['rows']:,} to {b['rows']:,} points), {verdict} the {BYTES_PER_POINT} bytes a point the "
                     "memory check (`ldpviz.data.synthetic.check_memory`) assumes before a set is drawn.")
    for r in runs:
        if r.get("chunked"):
            verdict = "within" if r["peak_mb"] / 1024 <= CHUNKED_RUN_TARGET_GB else "over"
            lines.append(f"- `ldpviz run` on {r['rows']:,} synthetic points, chunk by chunk: {r['seconds']:.0f} s "
                         f"with a peak of {r['peak_mb'] / 1024:.2f} GB, {verdict} the {CHUNKED_RUN_TARGET_GB:g} GB "
                         "the README states for any number of points.")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
