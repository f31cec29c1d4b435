"""Black-box privacy audit of every registered mechanism -> docs/audit.md.

Runs :func:`ldpviz.evidence.audit.audit_mechanism` for every mechanism in the registry on
several grids and epsilons, plus deliberately broken mechanisms (which the same
audit must flag), and writes one Markdown report with the certified lower bounds
next to the claims. Usage: ``python bench/audit_report.py [--quick] [--out DIR]``.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from ldpviz.evidence import audit
from ldpviz import mechanisms
from ldpviz.errors import LdpvizInputError
from ldpviz.mechanisms.fo.oracles import GRR
from ldpviz.mechanisms.dam.planar_laplace import PlanarLaplace
from ldpviz.mechanisms.dam.sem_geoi import SEMGeoI
from ldpviz.evidence.reproduce import provenance_markdown
from ldpviz.evidence.summaries import write_summary


class GRRBinaryFormula(GRR):
    """Broken on purpose: binary randomised response's keep probability e^eps/(e^eps+1) used for D cells."""

    name = "broken: GRR with the binary keep probability"


class GRRWrongExponent(GRR):
    """Broken on purpose: probabilities computed with e^(1.5 eps), a 50% budget overrun."""

    name = "broken: GRR with e^(1.5 eps)"


def _binary_setup(self: GRR) -> None:
    GRR.setup(self)
    e = math.exp(self.epsilon)
    self.p, self.q = e / (e + 1), 1 / ((e + 1) * max(self.grid.n_cells - 1, 1))


def _exponent_setup(self: GRR) -> None:
    GRR.setup(self)
    e = math.exp(1.5 * self.epsilon)
    self.p, self.q = e / (e + self.grid.n_cells - 1), 1 / (e + self.grid.n_cells - 1)


def _keep_or_other(self: GRR, users, rng):
    """GRR's sampler with the (wrong) keep probability self.p: the true cell, or another uniformly."""
    cells = np.asarray(users.cells)
    n_cells = self.grid.n_cells
    keep = rng.random(len(cells)) < self.p
    other = rng.integers(0, max(n_cells - 1, 1), size=len(cells))
    other += other >= cells
    return np.where(keep, cells, np.minimum(other, n_cells - 1))


class SEMGeoIOverspent(SEMGeoI):
    """Broken on purpose: states its calibrated eps'-Geo-I (with its snapping slack of one cell diagonal) but
    samples with 5 eps' (audited against eps' x (distance + slack))."""

    name = "broken: SEM-Geo-I sampling with 5 eps'"

    def setup(self) -> None:
        super().setup()
        self.tables = self._tables(5.0 * self.eps_prime)


class PlanarLaplaceSnapping(PlanarLaplace):
    """Broken on purpose (the tool's old planar Laplace): noise added to the cell centre, not the exact position,
    while stating Geo-I between exact positions with no slack (issue 20)."""

    name = "broken: planar Laplace on cell centres"

    def positions(self, users) -> np.ndarray:
        d = self.grid.side
        cells = np.asarray(users.cells)
        return np.column_stack([cells % d + 0.5, cells // d + 0.5])


class PlanarLaplaceQuarterCells(PlanarLaplace):
    """Broken on purpose: planar Laplace on each position rounded to the nearest quarter-cell point, stating Geo-I
    between exact positions with no slack; its rounding lines lie inside the cells, away from edges and corners
    (issue 26: only the random chain of close pairs crosses them)."""

    name = "broken: planar Laplace rounding to quarter cells"

    def positions(self, users) -> np.ndarray:
        return np.round(super().positions(users) * 4.0) / 4.0


#: Parameters of the broken mechanisms that differ from the defaults: the overspending SEM-Geo-I is calibrated to
#: DAM's local privacy (its eps' stays where 5 eps' is certifiable with these sample sizes).
BROKEN_PARAMS = {SEMGeoIOverspent: {"calibration": "same-lp-as-dam"}}


GRRBinaryFormula.setup = _binary_setup
GRRWrongExponent.setup = _exponent_setup
GRRBinaryFormula.perturb = _keep_or_other
GRRWrongExponent.perturb = _keep_or_other


#: Parameter settings audited besides the defaults (whole-protocol audits): the L-SRR paper assumes a
#: public location domain (Sec. 3.2); the tool's default builds it from the users ("occupied").
def protocol_targets(quick: bool) -> list[tuple[str, dict]]:
    """(name, params) audited as a whole protocol: LDP / Geo-I mechanisms without a client half, and the
    L-SRR family's opt-in ``domain="occupied"`` (built from the users' true tiles, so not eps-LDP when that
    set is private: its guarantee says so, and this audit is expected to certify a loss above eps)."""
    out = []
    for name in mechanisms.available():
        cls = mechanisms.get(name)
        if cls.privacy_model not in ("LDP", "Geo-I"):
            continue
        if not cls.has_client:
            out.append((name, {}))
        if any(p.name == "domain" and "occupied" in (p.choices or ()) for p in cls.params):
            out.append((name, {"domain": "occupied"}))
    return out[:1] if quick else out


def _protocol_summary(protocol: pd.DataFrame) -> str:
    """One line: how many whole-protocol audits passed; the opt-in occupied-domain failures (expected) grouped."""
    failed = protocol[protocol["status"] == audit.FAILED]
    occupied = failed[failed["mechanism"].str.contains("domain=occupied")]
    other = failed.drop(occupied.index)
    passed = protocol[protocol["status"] == audit.PASSED]
    line = (f"- Whole-protocol audits (no client half): {len(passed)} of {len(protocol)} found no violation.")
    weak = passed[~passed["informative"].astype(bool)]
    if len(weak):
        low, high = weak["lower_bound"].min(), weak["lower_bound"].max()
        bounds = f"{low:.3f}" if f"{low:.3f}" == f"{high:.3f}" else f"{low:.3f} to {high:.3f}"
        line += (f" {len(weak)} of those ({', '.join(m.split(' (')[0] for m in weak['mechanism'])}) certified only "
                 f"{bounds}, below {audit.INFORMATIVE_FRACTION:.0%} of the claim: each sample is one whole run, whose "
                 "output (an estimated density) rarely repeats, so the audit can barely separate the inputs; these "
                 "passes are no evidence either way, not a proof (the guarantee rests on the mechanism's proof and its "
                 "channel tests, not on this audit).")
    if len(occupied):
        names = ", ".join(m.split(",")[0] for m in occupied["mechanism"])
        low, high = occupied["lower_bound"].min(), occupied["lower_bound"].max()
        certified = f"{low:.2f}" if f"{low:.2f}" == f"{high:.2f}" else f"{low:.2f} to {high:.2f}"
        line += (f" The {len(occupied)} opt-in `domain=\"occupied\"` variants ({names}) fail as expected "
                 f"(certified {certified} > {occupied['claimed'].max():g}): that domain is built from the users' true "
                 "tiles, and their guarantee says they are not epsilon-LDP when the set of occupied tiles is private.")
    for m, lb, c in other[["mechanism", "lower_bound", "claimed"]].itertuples(index=False):
        line += f" **FAILED: {m}** (certified {lb:.2f} > {c:g})."
    return line


def _fmt(value: float) -> str:
    if isinstance(value, float) and math.isnan(value):
        return "-"
    return "none" if value == math.inf else f"{value:.3f}"


def _markdown(frame: pd.DataFrame) -> str:
    """A DataFrame as a Markdown table (floats to 3 decimals), without optional dependencies."""
    def cell(v: object) -> str:
        text = f"{v:.3f}" if isinstance(v, float) else str(v)
        return text.replace("|", "\\|")
    head = "| " + " | ".join(map(str, frame.columns)) + " |"
    rule = "|" + "---|" * len(frame.columns)
    body = ["| " + " | ".join(cell(v) for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join([head, rule, *body])


def run(quick: bool, out: Path, sides: tuple[int, ...] | None = None, n_samples: int | None = None) -> Path:
    default_sides, default_samples = ((4,), 20_000) if quick else ((4, 8, 16), 100_000)
    sides = sides or default_sides
    epsilons = (1.0, 4.0) if quick else (0.5, 1.0, 2.0, 4.0, 8.0)
    n_samples = n_samples or default_samples
    reduced = ("" if (tuple(sides), n_samples) == (default_sides, default_samples) else
               f" (a reduced run: the {'quick' if quick else 'full'} default is {default_samples:,} reports per input "
               f"on sides {', '.join(map(str, default_sides))}, reduced with --sides/--samples to fit the time "
               "available)")
    seed, confidence = 0, 0.99
    rows, details = [], []
    targets: list = list(mechanisms.available()) + [GRRBinaryFormula, GRRWrongExponent, SEMGeoIOverspent,
                                                        PlanarLaplaceSnapping, PlanarLaplaceQuarterCells]
    for target in targets:
        for side in sides:
            for epsilon in epsilons:
                try:
                    result = audit.audit_mechanism(target, side, epsilon, n_samples=n_samples, seed=seed,
                                                   confidence=confidence, params=BROKEN_PARAMS.get(target))
                except LdpvizInputError as err:
                    name = target if isinstance(target, str) else target.name
                    rows.append({"mechanism": name, "d": side, "epsilon": epsilon, "status": f"skipped: {err}"})
                    continue
                row = result.as_row()
                row["mechanism"] = target if isinstance(target, str) else target.name
                rows.append(row)
                if result.status == audit.NOT_AUDITABLE and side == sides[0] and epsilon == epsilons[0]:
                    details.append(f"- **{row['mechanism']}**: {' '.join(result.notes)}")
                if side == sides[-1] and epsilon == 1.0 and result.pairs:
                    frame = result.to_frame()[["pair", "distance (cells)", "claimed", "lower bound", "event"]]
                    frame["event"] = frame["event"].str.slice(0, 70)
                    details.append(f"\n#### {row['mechanism']}, d = {side}, epsilon = 1\n\n"
                                   + _markdown(frame))
    # Mechanisms without a client half: the whole protocol on a few users (slow: one run per sample).
    protocol_samples = 200 if quick else 1_000
    for name, params in protocol_targets(quick):
        label = name + "".join(f", {k}={v}" for k, v in params.items())
        try:
            result = audit.audit_mechanism(name, sides[0], 1.0, seed=seed, confidence=confidence,
                                           params=params, protocol_samples=protocol_samples)
        except LdpvizInputError as err:
            rows.append({"mechanism": label + " (whole protocol)", "d": sides[0], "epsilon": 1.0,
                         "status": f"skipped: {err}"})
            continue
        row = result.as_row()
        row["mechanism"] = label + " (whole protocol)"
        rows.append(row)
        if not details or "whole protocol" not in details[-1]:
            details.append(f"- Whole-protocol audits: {result.notes[0]}")
    table = pd.DataFrame(rows)
    lines = ["# Black-box privacy audit", "",
             provenance_markdown(seeds=f"{seed} (one generator per pair and input)",
                                 trials=f"{n_samples:,} client reports per input of each pair; grid sides "
                                        f"{', '.join(map(str, sides))}; epsilons "
                                        f"{', '.join(f'{e:g}' for e in epsilons)}{reduced}",
                                 quick=quick),
             "Method (`ldpviz/evidence/audit/`): for each pair of hard inputs (neighbouring cells, far corners, a cell "
             "and the cell one radius away when the mechanism has a radius, two corners of one cell) the client "
             "half `perturb` runs on many copies of each input. Half of the reports choose candidate events "
             "(unions of the reports most likely under one input relative to the other, over the whole report "
             "and each report field); the other half evaluates them with one-sided Clopper-Pearson bounds. A "
             "Bonferroni correction over every pair, direction and event makes all bounds hold jointly at "
             f"{confidence:.0%} confidence, so a mechanism that keeps its promise fails with probability at most "
             f"{1 - confidence:.0%}. Geo-I mechanisms are also audited on two real positions 20 m apart (at most "
             "a tenth of a cell) across a cell edge and across a cell corner, and on a chain of pairs a tenth of a "
             "cell apart from a seeded random place across a whole cell (it crosses any rounding line inside a cell), "
             "and checked against epsilon times "
             "(the distance between the real positions in cell sides + the snapping slack the mechanism states: "
             "0 for planar Laplace, one cell diagonal for SEM-Geo-I); their 'lower bound' column is the largest "
             "bound / (distance + slack). A lower bound near the claim "
             "means the audit found the worst case; far below means the events the audit can see are weaker "
             "(e.g. mechanisms with huge report spaces such as hashing), not that the mechanism is more private.",
             "",
             "Each mechanism is audited against the epsilon its **stated guarantee** names "
             "(`Mechanism.claimed_epsilon`), not the epsilon it was asked for; a Geo-I claim is per cell side (the "
             "slider's epsilon per km times the cell side in km: SEM-Geo-I's eps', and the calibrated eps' for "
             "the overspending SEM-Geo-I, which is calibrated to DAM's local privacy). A pass means "
             "*no violation found*, not a proof; the 'verdict' column marks a pass as **uninformative** when its "
             f"certified bound is below {audit.INFORMATIVE_FRACTION:.0%} of the claim (e.g. 0.000: no event "
             "separated the inputs).",
             "", "## Results", "",
             "| mechanism | model | d | epsilon | claimed | certified lower bound | status | verdict | seconds |",
             "|---|---|---:|---:|---:|---:|---|---|---:|"]
    for row in rows:
        if "claimed" not in row:
            lines.append(f"| {row['mechanism']} | | {row['d']} | {row['epsilon']:g} | | | {row['status']} | | |")
            continue
        lines.append(f"| {row['mechanism']} | {row['model']} | {row['d']} | {row['epsilon']:g} | "
                     f"{_fmt(row['claimed'])} | {_fmt(row['lower_bound'])} | {row['status']} | "
                     f"{_verdict(row)} | {row['seconds']:.1f} |")
    audited = table[table["status"].isin([audit.PASSED, audit.FAILED])] if "status" in table else table
    registry = audited[~audited["mechanism"].str.startswith("broken") & ~audited["mechanism"].str.contains("protocol")]
    protocol = audited[audited["mechanism"].str.contains("protocol")]
    broken = audited[audited["mechanism"].str.startswith("broken")]
    sentences = summary_sentences(registry, broken, protocol, table, confidence)
    lines += ["", "## Summary", "", *[f"- {s}" for s in sentences]]
    if details:
        lines += ["", "## Not audited and per-pair detail", "", *details]
    out.mkdir(parents=True, exist_ok=True)
    path = out / "audit.md"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    numbers = {"registry_audits": int(len(registry)),
               "registry_passed": int((registry["status"] == audit.PASSED).sum()),
               "registry_uninformative": int((~registry["informative"].astype(bool)
                                              & (registry["status"] == audit.PASSED)).sum()),
               "broken_audits": int(len(broken)), "broken_caught": int((broken["status"] == audit.FAILED).sum()),
               "protocol_audits": int(len(protocol)),
               "protocol_passed": int((protocol["status"] == audit.PASSED).sum())}
    write_summary(out, "audit.md", "Privacy audit", sentences, numbers, quick=quick)
    return path


def _verdict(row: dict) -> str:
    if row["status"] == audit.FAILED:
        return "violation"
    if row["status"] == audit.PASSED:
        return "no violation found" if row["informative"] else "no violation found; **uninformative** bound"
    return ""


def summary_sentences(registry: pd.DataFrame, broken: pd.DataFrame, protocol: pd.DataFrame, table: pd.DataFrame,
                      confidence: float) -> list[str]:
    """The report's summary, generated from its rows (also written to audit.summary.json for docs/index.md)."""
    passed = registry[registry["status"] == audit.PASSED]
    weak = passed[~passed["informative"].astype(bool)]
    weak_names = ", ".join(sorted(weak["mechanism"].unique())) or "none"
    semantics = (f"{len(passed)} of {len(registry)} audits of the {registry['mechanism'].nunique()} client-side "
                 f"LDP / Geo-I mechanisms found no violation at {confidence:.0%} confidence, each against the "
                 "epsilon its guarantee states (Geo-I per cell side).")
    weak_text = (f"In {len(weak)} of those passes the certified bound is below "
                 f"{audit.INFORMATIVE_FRACTION:.0%} of the claim, so they show no violation but say little "
                 f"(mechanisms: {weak_names}).")
    kinds = ", ".join(sorted({m.replace("broken: ", "") for m in broken["mechanism"]}))
    caught = (f"{(broken['status'] == audit.FAILED).sum()} of {len(broken)} audits of deliberately broken "
              f"mechanisms ({kinds}) are caught.")
    missed = broken[broken["status"] != audit.FAILED]
    if len(missed):
        caught += (" Missed: " + "; ".join(f"{m.replace('broken: ', '')} at d = {d}, epsilon = {e:g} (certified "
                                           f"{lb:.3f} of {c:.3g})" for m, d, e, lb, c in
                                           missed[["mechanism", "d", "epsilon", "lower_bound", "claimed"]]
                                           .itertuples(index=False))
                   + ": certifying a loss L needs about e^L samples where the telling output is rare.")
    not_auditable = table[table["status"] == audit.NOT_AUDITABLE]["mechanism"].unique()
    central = [m for m in not_auditable if "protocol" not in m]
    out = [semantics, weak_text, caught, _protocol_summary(protocol)[2:]]
    failed = registry[registry["status"] == audit.FAILED]
    for m, d, e, lb, c in failed[["mechanism", "d", "epsilon", "lower_bound", "claimed"]].itertuples(index=False):
        out.append(f"**FAILED**: {m} at d = {d}, epsilon = {e:g}: certified loss {lb:.3f} > claimed {c:.3f}.")
    if central:
        out.append(f"Not audited black-box at the client: {', '.join(sorted(central))} (central DP or no client "
                   "half; see the per-mechanism notes).")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small smoke run (one grid, two epsilons)")
    parser.add_argument("--out", default="docs", help="output directory (default: docs/)")
    parser.add_argument("--sides", type=int, nargs="+", help="grid sides to audit (default 4 8 16; quick: 4)")
    parser.add_argument("--samples", type=int, help="client reports per input (default 100,000; quick: 20,000)")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    path = run(args.quick, Path(args.out), tuple(args.sides) if args.sides else None, args.samples)
    print(f"wrote {path} in {time.perf_counter() - start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
