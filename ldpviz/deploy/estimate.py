"""The server's side of a deployed collection: reports in, a checked, estimated heatmap out (issue 29).

:func:`estimate_reports` streams a reports file (JSON lines, or CSV with a header naming the spec's report
fields), checks every line against the spec (format, digest, domain), counts and names every rejection, and
estimates with the mechanism's own server half (``ldpviz.mechanisms.create(...).estimate``). Nothing valid is
dropped: a line is either accepted or counted under one reason.

Per-cell intervals (95%):

* mechanisms whose sufficient statistic is a report histogram (GRR, HR, DAM / DAM-NS / HUEM, planar Laplace,
  MDSW, SRR, the tile oracles) -- the bootstrap: the histogram resampled as a multinomial on the observed
  frequencies (equivalent to resampling the reports), re-estimated ``bootstrap`` times, percentiles 2.5 / 97.5
  of each cell's share;
* OLH and OUE (support counts) and UG over them -- the unbiased share +- 1.96 standard deviations, with the
  exact variance of USENIX'17 Thm. 2 at the estimated counts (:func:`ldpviz.mechanisms.fo.oracles.pure_variance`);
  UG's N x N intervals are spread to the grid's cells by area;
* OLH-H and SEM-Geo-I -- the bootstrap over the reports themselves (OLH-H's estimate is not a function of one
  additive histogram; a SEM-Geo-I report names k cells at once).

:func:`write_outputs` writes ``estimate.csv`` and ``estimate.geojson`` (share, low, high per cell),
``estimate.png`` and ``summary.json`` (counts, rejections by reason, ledger, interval method).
"""

from __future__ import annotations

import csv
import json
from array import array
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from ldpviz.errors import LdpvizInputError, require
from ldpviz.deploy import spec as specs
from ldpviz.mechanisms.base import Estimate, Mechanism

#: Longest report line read (an OUE report on a 1,024 x 1,024 grid is 262,144 hex characters plus the digest).
MAX_LINE_BYTES = 300_000
CHUNK_BYTES = 1 << 20
#: A loss above this share of lines is a warning, not a success.
LOSS_WARNING_SHARE = 0.05
DEFAULT_BOOTSTRAP = 40

# Rejection reasons (named in every summary)
MALFORMED = "malformed line (not a JSON object / not a CSV row of the header's fields)"
TOO_LONG = f"line longer than {MAX_LINE_BYTES:,} bytes"
NO_DIGEST = "no spec digest"
OTHER_SPEC = "from another spec (digest differs)"
MISSING = "a report field is missing"
EXTRA = "carries fields the spec does not name (never store such a report)"
BAD_VALUE = "a field is not a whole number / hex string of the right form"
OUT_OF_DOMAIN = "value outside the spec's domain"


@dataclass
class Collected:
    """What passed the checks, kept compactly, and what did not, by reason."""

    kind: str
    lines: int = 0
    blank: int = 0
    accepted: int = 0
    rejected: dict[str, int] = field(default_factory=dict)
    examples: dict[str, list[int]] = field(default_factory=dict)
    y: array = field(default_factory=lambda: array("q"))
    seeds: array = field(default_factory=lambda: array("Q"))
    buckets: array = field(default_factory=lambda: array("q"))
    bits: bytearray = field(default_factory=bytearray)

    def reject(self, reason: str, line_no: int) -> None:
        self.rejected[reason] = self.rejected.get(reason, 0) + 1
        ex = self.examples.setdefault(reason, [])
        if len(ex) < 5:
            ex.append(line_no)

    @property
    def n_rejected(self) -> int:
        return sum(self.rejected.values())


def iter_lines(source: Any) -> Iterator[tuple[int, bytes | None]]:
    """(line number, bytes) for every line of a path or a binary file object, streamed in 1 MB chunks; a line
    longer than MAX_LINE_BYTES is yielded once as None (and skipped to its end without being held in memory)."""
    if hasattr(source, "read"):
        source.seek(0)
        yield from _lines_of(source)
        return
    with open(source, "rb") as fh:
        yield from _lines_of(fh)


def _lines_of(fh: Any) -> Iterator[tuple[int, bytes | None]]:
    buf = bytearray()
    skipping = False
    line_no = 0
    while True:
        chunk = fh.read(CHUNK_BYTES)
        if not chunk:
            break
        start = 0
        while True:
            nl = chunk.find(b"\n", start)
            if nl < 0:
                if not skipping:
                    buf += chunk[start:]
                    if len(buf) > MAX_LINE_BYTES:
                        skipping = True
                        buf.clear()
                break
            if skipping:
                line_no += 1
                yield line_no, None
                skipping = False
            else:
                buf += chunk[start:nl]
                line_no += 1
                if len(buf) > MAX_LINE_BYTES:
                    yield line_no, None
                else:
                    yield line_no, bytes(buf)
                buf.clear()
            start = nl + 1
    if skipping:
        yield line_no + 1, None
    elif buf:
        yield line_no + 1, bytes(buf)


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit() and value.strip().isascii():
        return int(value.strip())
    return None


class Checker:
    """The spec's report rules: fields, digest, domain."""

    def __init__(self, spec: dict) -> None:
        self.digest = spec["digest"]
        c = spec["client"]
        self.kind = c["kind"]
        self.fields = list(spec["report"]["fields"])
        self.payload = [f for f in self.fields if f != "spec"]
        d = int(spec["region"]["grid_side"])
        if self.kind in ("grr", "curator"):
            self.y_ok = range(int(c["D"])).__contains__
        elif self.kind == "hr":
            self.y_ok = range(int(c["blocks"]) * int(c["block_size"])).__contains__
        elif self.kind == "disk":
            self.y_ok = frozenset(int(v) for v in c["mask"]).__contains__
        elif self.kind == "planar-laplace":
            self.y_ok = range(d * d).__contains__
        elif self.kind == "staircase":
            self.y_ok = range(len(c["lo"])).__contains__
        elif self.kind == "subset":
            self.k, self.n_cells = int(c["k"]), int(c["n"])
        elif self.kind == "square-wave":
            B = int(c["out_buckets"])
            self.y_ok = range(2 * B if c["split"] == "users" else B * B).__contains__
        elif self.kind in ("olh", "olh-h"):
            self.seed_max = (int(c["prime"]) - 1) * int(c["prime"])
            self.g = int(c["g"])
            self.levels = len(c.get("level_sizes") or [None])
        elif self.kind == "oue":
            self.D = int(c["D"])
            self.nbytes = (self.D + 7) // 8
            self.pad_mask = (1 << (8 * self.nbytes - self.D)) - 1

    def add(self, rec: dict, out: Collected, line_no: int) -> None:
        if "spec" not in rec or rec["spec"] in ("", None):
            return out.reject(NO_DIGEST, line_no)
        if rec["spec"] != self.digest:
            return out.reject(OTHER_SPEC, line_no)
        if any(f not in rec or rec[f] in ("", None) for f in self.payload):
            return out.reject(MISSING, line_no)
        if len(rec) != len(self.fields):
            return out.reject(EXTRA, line_no)
        if self.kind in ("olh", "olh-h"):
            seed, bucket = _int(rec["seed"]), _int(rec["bucket"])
            level = _int(rec["level"]) if self.kind == "olh-h" else 0
            if seed is None or bucket is None or level is None:
                return out.reject(BAD_VALUE, line_no)
            if not (0 <= seed < self.seed_max and 0 <= bucket < self.g and 0 <= level < self.levels):
                return out.reject(OUT_OF_DOMAIN, line_no)
            out.seeds.append(seed)
            out.buckets.append(bucket)
            if self.kind == "olh-h":
                out.y.append(level)
        elif self.kind == "subset":
            cells = rec["cells"]
            if isinstance(cells, str):
                cells = [_int(t) for t in cells.split()]
            if not isinstance(cells, list) or any(_int(v) is None for v in cells):
                return out.reject(BAD_VALUE, line_no)
            cells = [_int(v) for v in cells]
            if len(cells) != self.k or any(b <= a for a, b in zip(cells, cells[1:])) or \
                    not all(0 <= v < self.n_cells for v in cells):
                return out.reject(OUT_OF_DOMAIN, line_no)
            out.y.extend(cells)
        elif self.kind == "oue":
            text = rec["bits"]
            if not isinstance(text, str) or len(text) != 2 * self.nbytes:
                return out.reject(BAD_VALUE, line_no)
            try:
                raw = bytes.fromhex(text)
            except ValueError:
                return out.reject(BAD_VALUE, line_no)
            if raw[-1] & self.pad_mask:
                return out.reject(OUT_OF_DOMAIN, line_no)
            out.bits += raw
        else:
            y = _int(rec["y"])
            if y is None:
                return out.reject(BAD_VALUE, line_no)
            if not self.y_ok(y):
                return out.reject(OUT_OF_DOMAIN, line_no)
            out.y.append(y)
        out.accepted += 1


def collect(spec: dict, reports: Any, max_bytes: int | None = None) -> Collected:
    """Read and check every line of ``reports`` (a path, or a binary file object such as an upload; JSON lines or
    CSV with a header); see the module docstring."""
    if hasattr(reports, "read"):
        path = reports
        size = getattr(reports, "size", None)
        if size is None:
            size = len(reports.getbuffer()) if hasattr(reports, "getbuffer") else 1
    else:
        path = Path(reports)
        if not path.exists():
            raise LdpvizInputError(f"reports file {str(path)!r} not found")
        if path.is_dir():
            raise LdpvizInputError(f"{str(path)!r} is a folder; give the reports file")
        size = path.stat().st_size
    if max_bytes is not None and size > max_bytes:
        raise LdpvizInputError(f"the reports file is {size:,} bytes, above the limit of {max_bytes:,} "
                               f"(--max-bytes); nothing was read. Raise the limit or split the file")
    require(size > 0, f"the reports file {_name(reports)!r} is empty: no reports to estimate from")
    checker = Checker(spec)
    out = Collected(checker.kind)
    header: list[str] | None = None
    fmt: str | None = None
    try:
        for line_no, raw in iter_lines(path):
            out.lines += 1
            if raw is None:
                out.reject(TOO_LONG, line_no)
                continue
            try:
                text = raw.decode("utf-8").strip()
            except UnicodeDecodeError:
                out.reject(MALFORMED, line_no)
                continue
            if not text or text.strip("\x00") == "":
                out.blank += 1
                continue
            if fmt is None:
                fmt = "json" if text.startswith("{") else "csv"
                if fmt == "csv":
                    try:
                        header = next(csv.reader([text]))
                    except csv.Error:
                        header = []
                    header = [h.strip() for h in header]
                    if "spec" not in header or not set(checker.payload) <= set(header):
                        raise LdpvizInputError(
                            f"the reports file is neither JSON lines nor a CSV whose header names the spec's report "
                            f"fields ({', '.join(checker.fields)}); its first line is {text[:80]!r}")
                    continue
            if fmt == "json":
                try:
                    rec = json.loads(text)
                except (ValueError, RecursionError):
                    out.reject(MALFORMED, line_no)
                    continue
                if not isinstance(rec, dict):
                    out.reject(MALFORMED, line_no)
                    continue
            else:
                try:
                    row = next(csv.reader([text]))
                except csv.Error:
                    out.reject(MALFORMED, line_no)
                    continue
                if len(row) != len(header):
                    out.reject(MALFORMED, line_no)
                    continue
                rec = {h: v.strip() for h, v in zip(header, row)}
            checker.add(rec, out, line_no)
    except OSError as err:
        raise LdpvizInputError(f"cannot read the reports file {_name(reports)!r}: {err.strerror or err}") from None
    return out


def _name(reports: Any) -> str:
    return str(getattr(reports, "name", reports))


def _lost_text(out: Collected) -> str:
    parts = [f"{n:,} {reason}" for reason, n in sorted(out.rejected.items(), key=lambda kv: -kv[1])]
    return "; ".join(parts) if parts else "none"


def reports_object(mech: Mechanism, spec: dict, out: Collected) -> Any:
    """The accepted reports in the form the mechanism's server half takes."""
    from ldpviz.mechanisms.fo.oracles import OLHReports, OUEReports
    kind, name = out.kind, mech.name
    if kind == "olh-h":
        from ldpviz.mechanisms.srr.olh_h import OLHHReports
        from ldpviz.mechanisms.srr.staircase import grid_domain
        return OLHHReports(grid_domain(mech.grid), np.frombuffer(out.y, dtype=np.int64).copy(),
                           np.frombuffer(out.seeds, dtype=np.uint64).copy(),
                           np.frombuffer(out.buckets, dtype=np.int64).copy(), int(spec["client"]["g"]))
    if kind == "olh":
        inner = OLHReports(np.frombuffer(out.seeds, dtype=np.uint64).copy(),
                           np.frombuffer(out.buckets, dtype=np.int64).copy(), int(spec["client"]["g"]))
    elif kind == "oue":
        D = int(spec["client"]["D"])
        inner = OUEReports(np.frombuffer(bytes(out.bits), dtype=np.uint8).reshape(-1, (D + 7) // 8).copy(), D)
    elif kind == "subset":
        inner = np.frombuffer(out.y, dtype=np.int64).copy().reshape(-1, int(spec["client"]["k"]))
    else:
        inner = np.frombuffer(out.y, dtype=np.int64).copy()
    if name == "ug":
        from ldpviz.mechanisms.grids.decompositions import UGReports
        return UGReports(int(spec["client"]["side"]), False, out.accepted, inner)
    if name == "srr":
        from ldpviz.mechanisms.srr.staircase import SrrReports, grid_domain
        return SrrReports(mech.plan(grid_domain(mech.grid)), inner)
    if name in ("grr-tiles", "hr-tiles"):
        from ldpviz.mechanisms.srr.staircase import grid_domain
        from ldpviz.mechanisms.srr.tile_baselines import DomainReports
        return DomainReports(grid_domain(mech.grid), inner)
    return inner


@dataclass
class DeployedEstimate:
    """An estimate from collected reports, its intervals, and the account of every line."""

    spec: dict
    mechanism: Mechanism
    estimate: Estimate
    low: np.ndarray
    high: np.ndarray
    interval_method: str
    collected: Collected
    warnings: list[str]

    @property
    def density(self) -> np.ndarray:
        return self.estimate.density

    def summary(self) -> dict:
        c = self.collected
        return {
            "spec": self.spec["digest"], "mechanism": self.mechanism.name, "epsilon": self.spec["epsilon"],
            "epsilon_unit": self.spec["epsilon_unit"], "guarantee": self.spec["mechanism"]["guarantee"],
            "lines": c.lines, "blank_lines": c.blank, "accepted": c.accepted, "rejected": c.n_rejected,
            "rejected_by_reason": dict(c.rejected), "rejected_examples_line_numbers": c.examples,
            "interval": self.interval_method, "warnings": self.warnings, "ledger": self.spec["ledger"],
            "region": self.spec["region"]["name"], "grid_side": self.spec["region"]["grid_side"],
        }


def _histogram_bootstrap(mech: Mechanism, reports: Any, B: int, rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    """Percentile intervals from B multinomial resamples of the report histogram."""
    from ldpviz.mechanisms.fo.oracles import ReportHistogram
    from ldpviz.mechanisms.srr.staircase import SrrHistogram, SrrReports
    from ldpviz.mechanisms.srr.tile_baselines import DomainReports
    if mech.name == "ug":
        from ldpviz.mechanisms.grids.decompositions import UGReports
        inner = np.asarray(reports.reports, dtype=np.int64)
        size = _ug_outputs(mech, reports.side)
        counts = np.bincount(inner, minlength=size)
        make = lambda c: UGReports(reports.side, False, int(c.sum()), ReportHistogram(c, int(c.sum())))  # noqa: E731
    elif isinstance(reports, SrrReports):
        counts = np.bincount(reports.positions, minlength=reports.plan.domain.size)
        make = lambda c: SrrHistogram(reports.plan, c, int(c.sum()))  # noqa: E731
    elif isinstance(reports, DomainReports):
        size = mech.domain_channel(reports.domain.size).shape[0]
        counts = np.bincount(reports.reports, minlength=size)
        make = lambda c: DomainReports(reports.domain, ReportHistogram(c, int(c.sum())))  # noqa: E731
    else:
        hist = mech.statistic(reports)
        counts = np.asarray(hist.counts, dtype=np.int64)
        make = lambda c: ReportHistogram(c, int(c.sum()))  # noqa: E731
    n = int(counts.sum())
    p = counts / n
    draws = np.stack([mech.estimate(make(rng.multinomial(n, p))).density.ravel() for _ in range(B)])
    return np.percentile(draws, 2.5, axis=0), np.percentile(draws, 97.5, axis=0)


def _containing(estimate: np.ndarray, low: np.ndarray, high: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """``[low, high]`` widened where needed so that every cell's interval holds its own estimate, and how many were.

    A percentile bootstrap of a shrinking estimator (EM stopped early, clipping) is centred on the resamples'
    mean, which can miss the estimate itself; a readout must never print a value outside its own interval, so
    such cells are widened to the estimate and counted (said in the interval's method)."""
    est = np.asarray(estimate, float).ravel()
    low, high = np.asarray(low, float).ravel(), np.asarray(high, float).ravel()
    outside = int(np.count_nonzero((est < low) | (est > high)))
    return np.minimum(low, est), np.maximum(high, est), outside


def _report_bootstrap(mech: Mechanism, reports: Any, B: int, rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    """Percentile intervals from B resamples of the reports themselves (OLH-H: its estimate is not a function of
    one additive histogram)."""
    from dataclasses import replace
    n = len(reports.levels) if hasattr(reports, "levels") else len(reports)
    draws = []
    for _ in range(B):
        idx = rng.integers(0, n, n)
        again = reports[idx] if isinstance(reports, np.ndarray) else \
            replace(reports, levels=reports.levels[idx], seeds=reports.seeds[idx], buckets=reports.buckets[idx])
        draws.append(mech.estimate(again).density.ravel())
    return np.percentile(draws, 2.5, axis=0), np.percentile(draws, 97.5, axis=0)


def _ug_outputs(mech: Mechanism, side: int) -> int:
    """How many distinct reports UG's oracle (GRR or HR) has on its N x N grid."""
    if mech.oracle == "hr":
        from ldpviz.mechanisms.fo.hadamard import hadamard_code
        return hadamard_code(side * side, mech.epsilon, "high-privacy").outputs
    return side * side


def _oracle_interval(mech: Mechanism, est: Estimate, n: int, spec: dict) -> tuple[np.ndarray, np.ndarray]:
    """Unbiased share +- 1.96 sd (USENIX'17 Thm. 2 at the estimated counts)."""
    from ldpviz.mechanisms.fo.oracles import olh_support_probabilities, oue_probabilities, pure_variance
    c = spec["client"]
    eps = float(spec["epsilon"])
    p, q = olh_support_probabilities(eps, int(c["g"])) if c["kind"] == "olh" else oue_probabilities(eps)
    if mech.name == "ug":
        from ldpviz.mechanisms.grids.decompositions import TwoLevelGrid
        from ldpviz.geo.partition import Partition
        raw = est.info.get("ug_raw")
        N = int(c["side"])
        counts = np.asarray(raw, dtype=float)
        sd = np.sqrt(pure_variance(n, np.maximum(counts, 0.0), p, q))
        rects = TwoLevelGrid.uniform(N).rects()
        low = Partition(rects, np.maximum((counts - 1.96 * sd) / n, 0.0)).to_grid(mech.grid.side)
        high = Partition(rects, np.minimum((counts + 1.96 * sd) / n, 1.0)).to_grid(mech.grid.side)
        return low.ravel(), high.ravel()
    counts = np.asarray(est.raw, dtype=float).ravel()
    sd = np.sqrt(pure_variance(n, np.maximum(counts, 0.0), p, q))
    return np.maximum((counts - 1.96 * sd) / n, 0.0), np.minimum((counts + 1.96 * sd) / n, 1.0)


def estimate_reports(spec: dict | str | Path, reports: str | Path, *, bootstrap: int = DEFAULT_BOOTSTRAP,
                     seed: int = 0, max_bytes: int | None = None) -> DeployedEstimate:
    """Check and estimate a reports file against its spec (see the module docstring)."""
    spec = specs.load_spec(spec) if isinstance(spec, (str, Path)) else specs.verify_spec(spec)
    require(isinstance(bootstrap, int) and 2 <= bootstrap <= 10_000,
            f"--bootstrap must be a whole number from 2 to 10,000, got {bootstrap!r}")
    mech = specs.mechanism_from_spec(spec)
    out = collect(spec, reports, max_bytes)
    if out.accepted == 0:
        raise LdpvizInputError(f"no valid reports in {_name(reports)!r}: {out.lines:,} lines, rejected: "
                               f"{_lost_text(out)}")
    obj = reports_object(mech, spec, out)
    rng = np.random.default_rng(seed)
    if out.kind == "curator":
        return _curator_release(spec, mech, obj, out, bootstrap)
    est = mech.estimate(obj)
    if out.kind in ("olh-h", "subset"):
        low, high = _report_bootstrap(mech, obj, bootstrap, rng)
        method = f"95%: bootstrap percentiles, {bootstrap} resamples of the reports (with replacement)"
    elif out.kind in ("olh", "oue"):
        if mech.name == "ug":
            from ldpviz.mechanisms.fo.oracles import oracle_estimate
            est.info["ug_raw"] = oracle_estimate(mech.oracle, obj.reports, obj.side ** 2, mech.epsilon)
        low, high = _oracle_interval(mech, est, out.accepted, spec)
        est.info.pop("ug_raw", None)
        method = "95%: unbiased share +- 1.96 sd, exact variance (USENIX'17 Thm. 2) at the estimated counts"
    else:
        low, high = _histogram_bootstrap(mech, obj, bootstrap, rng)
        method = f"95%: bootstrap percentiles, {bootstrap} multinomial resamples of the report histogram"
    warnings = []
    low, high, widened = _containing(est.density.ravel(), low, high)
    if widened:
        method += (f"; in {widened:,} of {low.size:,} cells the estimate lay outside the bootstrap's percentiles "
                   f"(the estimator's shrinkage shifts its resamples), and those intervals were widened to reach it")
    total = out.accepted + out.n_rejected
    if out.n_rejected and out.n_rejected > LOSS_WARNING_SHARE * total:
        warnings.append(f"{out.n_rejected:,} of {total:,} report lines ({100 * out.n_rejected / total:.1f}%) were "
                        f"rejected: {_lost_text(out)}. The estimate uses the {out.accepted:,} valid reports only.")
    return DeployedEstimate(spec, mech, est, np.asarray(low).ravel(), np.asarray(high).ravel(), method, out,
                            warnings)


def _curator_release(spec: dict, mech: Mechanism, cells: np.ndarray, out: Collected, bootstrap: int
                     ) -> DeployedEstimate:
    """Central DP: the curator runs the mechanism once on the true cells (noise from a generator seeded by the
    operating system's cryptographic source). Intervals are post-processing of the release: the mechanism re-run on
    users drawn from the released distribution, so they cost no further privacy."""
    import secrets
    from ldpviz.geo.domain import Binned
    grid = mech.grid
    centres = grid.cell_centers_unit()
    rng = np.random.default_rng(secrets.randbits(128))
    est = mech.run(Binned(cells=cells, unit=centres[cells], n_outside=0), rng)
    p = np.clip(est.density.ravel(), 0.0, None)
    p = p / p.sum() if p.sum() > 0 else np.full(p.size, 1.0 / p.size)
    sims = []
    for _ in range(bootstrap):
        fake = rng.choice(p.size, size=len(cells), p=p)
        sims.append(mech.run(Binned(cells=fake, unit=centres[fake], n_outside=0), rng).density.ravel())
    low, high = np.percentile(sims, 2.5, axis=0), np.percentile(sims, 97.5, axis=0)
    method = (f"95%: {bootstrap} re-runs of the mechanism on users drawn from the released distribution "
              "(post-processing: no further privacy spent)")
    low, high, widened = _containing(est.density.ravel(), low, high)
    if widened:
        method += f"; {widened:,} cells' intervals widened to reach the release itself"
    return DeployedEstimate(spec, mech, est, low, high, method, out, [])


def write_outputs(result: DeployedEstimate, out_dir: str | Path) -> dict[str, Path]:
    """estimate.csv, estimate.geojson, estimate.png, summary.json in ``out_dir`` (created)."""
    from ldpviz.render import export, png
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    grid = result.mechanism.grid
    layers = {"estimated_share": result.density.ravel(), "low_95": result.low, "high_95": result.high}
    paths = {"csv": out_dir / "estimate.csv", "geojson": out_dir / "estimate.geojson",
             "png": out_dir / "estimate.png", "summary": out_dir / "summary.json"}
    paths["csv"].write_text(export.grid_csv(grid, layers), encoding="utf-8")
    meta = {"spec": result.spec["digest"], "mechanism": result.mechanism.name, "accepted": result.collected.accepted,
            "interval": result.interval_method}
    paths["geojson"].write_text(export.grid_geojson(grid, layers, meta), encoding="utf-8")
    title = f"{result.mechanism.label}: {result.collected.accepted:,} reports"
    paths["png"].write_bytes(png.density_png(grid, result.density, title=title, legend="estimated share"))
    paths["summary"].write_text(json.dumps(result.summary(), indent=1, default=str) + "\n", encoding="utf-8")
    return paths


def summary_text(result: DeployedEstimate) -> list[str]:
    """The lines the command prints."""
    s = result.summary()
    lines = [f"estimated {s['mechanism']} from {s['accepted']:,} valid reports ({s['lines']:,} lines read)",
             f"  {s['guarantee']}",
             f"  intervals: {s['interval']}"]
    sentence = s["ledger"].get("sentence") if isinstance(s["ledger"], dict) else None
    if sentence:
        lines.append(f"  each person pays: {sentence}")
    if s["rejected"]:
        lines.append(f"  rejected {s['rejected']:,} lines: {_lost_text(result.collected)}")
    else:
        lines.append("  rejected: none")
    return lines
