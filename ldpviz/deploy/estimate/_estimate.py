"""The estimate from the accepted reports, its per-cell intervals (bootstrap or variance), and its output files."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ldpviz.mechanisms.estimation import start_map_text, stayed_at_start
from ldpviz.errors import LdpvizInputError, require
from ldpviz.deploy import spec as specs
from ldpviz.mechanisms.base import Estimate, Mechanism
from ldpviz.mechanisms.path_cost import PER_USER
from ldpviz.deploy.estimate._account import Collected
from ldpviz.deploy.estimate._reader import _lost_text, _name, collect


#: A loss above this share of lines is a warning, not a success.
LOSS_WARNING_SHARE = 0.05
DEFAULT_BOOTSTRAP = 40


def reports_object(mech: Mechanism, spec: dict, out: Collected) -> Any:
    """The accepted reports in the form the mechanism's server half takes."""
    from ldpviz.mechanisms.fo.oracles import OLHReports, OUEReports
    kind, name = out.kind, mech.name
    if kind == "olh-h":
        from ldpviz.mechanisms.srr.olh_h import OLHHReports
        from ldpviz.mechanisms.srr.staircase import grid_domain
        return OLHHReports(grid_domain(mech.grid), np.frombuffer(out.y, dtype=np.int64),
                           np.frombuffer(out.seeds, dtype=np.uint64),
                           np.frombuffer(out.buckets, dtype=np.int64), int(spec["client"]["g"]))
    if kind == "olh" and out.support is not None:
        from ldpviz.mechanisms.fo.oracles import SupportCounts
        inner = SupportCounts(out.support, out.accepted, PER_USER)
    elif kind == "olh":
        inner = OLHReports(np.frombuffer(out.seeds, dtype=np.uint64),
                           np.frombuffer(out.buckets, dtype=np.int64), int(spec["client"]["g"]))
    elif kind == "oue":
        D = int(spec["client"]["D"])
        inner = OUEReports(np.frombuffer(bytes(out.bits), dtype=np.uint8).reshape(-1, (D + 7) // 8).copy(), D)
    elif kind == "subset":
        inner = np.frombuffer(out.y, dtype=np.int64).reshape(-1, int(spec["client"]["k"]))
    else:
        inner = np.frombuffer(out.y, dtype=np.int64)
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
            # an EM estimate that never left its uniform start says so (issue 37.14; None: it left it, or no test)
            "estimate_informative": not stayed_at_start(self.estimate.info),
            "start_map": start_map_text(self.estimate.info),
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
    out = collect(spec, reports, max_bytes, stream_support=True)
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
    if s["start_map"]:
        lines.append(f"  NOT AN ESTIMATE: {s['start_map']}")
    if s["rejected"]:
        lines.append(f"  rejected {s['rejected']:,} lines: {_lost_text(result.collected)}")
    else:
        lines.append("  rejected: none")
    return lines
