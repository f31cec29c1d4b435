"""The audit of one mechanism on a grid (selection and evaluation halves per pair), and of the whole registry."""

from __future__ import annotations

import math
import time
from typing import Any, Iterable

import numpy as np
import pandas as pd

from ldpviz import mechanisms
from ldpviz.geo.domain import Binned, Grid, Region
from ldpviz.errors import LdpvizInputError, require
from ldpviz.mechanisms.base import CENTRAL_DP, GEO_I, LDP, NO_PRIVACY, Mechanism
from ldpviz.evidence.audit._pairs import AuditInput, AuditPair, hard_pairs
from ldpviz.evidence.audit._keys import _Keys, report_columns
from ldpviz.evidence.audit._verdict import (AuditResult, FAILED, NOT_AUDITABLE, NO_CLAIM, PASSED, PairAudit, _Event,
                                            _candidate_events, _ids, log_ratio_bound)


MAX_SAMPLES = 2_000_000
MAX_AUDIT_CELLS = 4096


# ------------------------------------------------------------------ the audit
def audit_grid(grid_side: int) -> Grid:
    """A grid of ``grid_side`` cells over a nominal 10 km square (the audit does not depend on place)."""
    return Grid(Region(0.0, 0.0, 10_000.0, "audit"), int(grid_side))


def _resolve(name_or_mech: Any, grid: Grid, epsilon: float, params: dict[str, Any]) -> Mechanism:
    if isinstance(name_or_mech, Mechanism):
        require(not params, "give parameters when naming a mechanism, not with a built one")
        return name_or_mech
    if isinstance(name_or_mech, type) and issubclass(name_or_mech, Mechanism):
        return name_or_mech(grid, epsilon, **params)
    require(isinstance(name_or_mech, str), f"audit needs a mechanism name or object, got {name_or_mech!r}")
    return mechanisms.create(name_or_mech, grid, epsilon, **params)


def _claim(model: str, epsilon: float, distance: float, slack: float = 0.0) -> float:
    """The loss the guarantee allows for one pair: LDP epsilon; Geo-I epsilon per cell x (distance + slack),
    both in cell sides; inf when nothing is claimed."""
    if model == LDP:
        return epsilon
    if model == GEO_I:
        return epsilon * (distance + slack)
    return math.inf


def audit_mechanism(name_or_mech: str | type[Mechanism] | Mechanism, grid: Grid | int = 4,
                    epsilon: float = 1.0, n_samples: int = 40_000, seed: int = 0, confidence: float = 0.99,
                    params: dict[str, Any] | None = None, pairs: Iterable[AuditPair] | None = None,
                    events_per_direction: int = 4, protocol_samples: int | None = None) -> AuditResult:
    """Audit a mechanism black-box from its client half; see the module docstring for the method.

    ``name_or_mech`` is a registry name, a Mechanism class, or a built mechanism
    (then ``grid`` and ``epsilon`` are taken from it). ``grid`` is a Grid or a
    side d. ``n_samples`` reports are drawn from each input of each pair (half
    choose events, half evaluate them). The result's bounds hold jointly with
    probability ``confidence``.

    Mechanisms without a client half (``has_client = False``) that claim LDP or
    Geo-I are reported as not auditable unless ``protocol_samples`` is given:
    then the whole protocol (``run``) is run that many times per input on the
    audited user plus a few fixed other users, and the estimated densities are
    the outputs (slow: one ``run`` per sample). Central-DP mechanisms are never
    audited here.
    """
    t0 = time.perf_counter()
    require(isinstance(n_samples, (int, np.integer)) and 100 <= n_samples <= MAX_SAMPLES,
            f"the audit needs between 100 and {MAX_SAMPLES:,} samples per input, got {n_samples!r}")
    require(isinstance(confidence, float) and 0.5 <= confidence < 1.0,
            f"confidence must be in [0.5, 1), got {confidence!r}")
    require(isinstance(seed, (int, np.integer)) and seed >= 0, f"seed must be a whole number >= 0, got {seed!r}")
    if isinstance(name_or_mech, Mechanism):
        grid = name_or_mech.grid
        epsilon = name_or_mech.epsilon
    elif not isinstance(grid, Grid):
        grid = audit_grid(grid)
    require(grid.n_cells <= MAX_AUDIT_CELLS,
            f"the audit runs on grids of at most {MAX_AUDIT_CELLS} cells; d = {grid.side} has {grid.n_cells}")
    mech = _resolve(name_or_mech, grid, epsilon, dict(params or {}))
    model = mech.privacy_model
    base = dict(mechanism=mech.name, label=getattr(mech, "label", mech.name), privacy_model=model,
                grid_side=grid.side, epsilon=mech.epsilon, n_samples=int(n_samples), seed=int(seed),
                confidence=confidence)
    # Audit against the guarantee the mechanism states, not the epsilon it was asked for: they differ when
    # a mechanism calibrates its own budget (SEM-Geo-I's eps', matched to DAM's local privacy).
    stated = float(mech.claimed_epsilon())
    slack = float(mech.geo_slack_m()) / grid.cell_m if model == GEO_I else 0.0
    protocol = None
    if not mech.has_client:
        if model == CENTRAL_DP or not protocol_samples:
            why = ("it is a central-DP aggregator: users send exact data to a trusted curator, so there is no "
                   "client report to audit" if model == CENTRAL_DP else
                   "it has no separate client half (it runs in several rounds, the server builds part of the "
                   "protocol from the users' data, or users share public randomness drawn per collection), so a "
                   "user's report cannot be drawn on its own; audit the whole protocol with protocol_samples=")
            return AuditResult(**base, claimed=math.inf if model == NO_PRIVACY else stated,
                               lower_bound=math.nan, passed=True, status=NOT_AUDITABLE, pairs=[], n_events=0,
                               seconds=time.perf_counter() - t0, notes=[f"Not audited: {why}."])
        require(isinstance(protocol_samples, (int, np.integer)) and 100 <= protocol_samples <= MAX_SAMPLES,
                f"protocol_samples must be a whole number from 100 to {MAX_SAMPLES:,}, got {protocol_samples!r}")
        n_samples = int(protocol_samples)
        base["n_samples"] = n_samples
        protocol = _background(mech, grid, int(seed))

    chosen = list(pairs) if pairs is not None else hard_pairs(grid, mech, int(seed))
    require(len(chosen) > 0, "the audit needs at least one pair of inputs")
    # Bonferroni over every (pair, direction, event) evaluated on the fresh half.
    n_tests = len(chosen) * 2 * events_per_direction
    alpha = (1.0 - confidence) / n_tests
    half = int(n_samples) // 2
    results: list[PairAudit] = []
    for index, pair in enumerate(chosen):
        reports = []
        for which, point in enumerate((pair.first, pair.second)):
            rng = np.random.default_rng([int(seed), index, which, grid.side])
            if protocol is None:
                out = mech.perturb(point.users(int(n_samples)), rng)
            else:
                out = _protocol_outputs(mech, protocol, point, int(n_samples), rng)
            reports.append(report_columns(out, int(n_samples), mech if protocol is None else None))
        results.append(_audit_pair(pair, grid, reports, half, int(n_samples) - half, alpha,
                                   events_per_direction, _claim(model, stated, pair.distance_cells(grid), slack)))

    if model == GEO_I:
        normalised = [p.lower_bound / (p.distance_cells + slack) for p in results if p.distance_cells + slack > 0]
        lower = max(normalised, default=0.0)
        claimed = stated
    else:
        lower = max((p.lower_bound for p in results), default=0.0)
        claimed = stated if model == LDP else math.inf
    passed = all(p.passed for p in results)
    status = NO_CLAIM if not math.isfinite(claimed) else (PASSED if passed else FAILED)
    notes = []
    if protocol is not None:
        notes.append(f"No client half: the whole protocol (run) was audited on {len(protocol.cells) + 1} users, the "
                     f"audited user plus {len(protocol.cells)} fixed others, {n_samples:,} runs per input; the "
                     "output is the estimated density. Under LDP, changing one user's location may change this "
                     "output by at most the claimed loss, so anything the server derives from the users' true "
                     "data (not from their reports) shows up here.")
    if model == GEO_I and any(p.distance_cells == 0 for p in results) and slack == 0:
        notes.append("Pairs at distance 0 (same position) must give a bound of 0 under Geo-I.")
    if model == GEO_I and slack > 0:
        notes.append(f"The stated guarantee adds a snapping slack of {slack:.3g} cell sides "
                     f"({slack * grid.cell_m:,.0f} m) to every distance: each pair is tested against "
                     f"epsilon x (distance + slack), and the audited figure is the largest bound / (distance + "
                     f"slack).")
    return AuditResult(**base, claimed=claimed, lower_bound=float(lower), passed=passed, status=status,
                       pairs=results, n_events=n_tests, seconds=time.perf_counter() - t0, notes=notes,
                       slack_cells=slack)


def _describer(keys: _Keys, space: str, uniq: np.ndarray) -> Any:
    """Readable text for key id ``k`` of a key space (for the page's event column)."""
    def describe(k: int) -> str:
        return keys.describe(space, uniq[k])
    return describe


def _background(mech: Mechanism, grid: Grid, seed: int) -> Binned:
    """The fewest fixed other users (0, 1, 3, 7 or 15, seeded cells) with which ``run`` accepts a population."""
    rng = np.random.default_rng([seed, 0xB6])
    probe = AuditInput(0, (0.5 / grid.side, 0.5 / grid.side))
    last: LdpvizInputError | None = None
    for k in (0, 1, 3, 7, 15):
        cells = rng.integers(0, grid.n_cells, k)
        centres = grid.cell_centers_unit()[cells]
        others = Binned(cells=cells.astype(np.int64), unit=centres, n_outside=0)
        try:
            mech.run(_with(others, probe), np.random.default_rng(0))
            return others
        except LdpvizInputError as err:
            last = err
    raise LdpvizInputError(f"{mech.name} did not run on any small population for the protocol audit ({last})")


def _with(others: Binned, point: AuditInput) -> Binned:
    return Binned(cells=np.append(others.cells, point.cell).astype(np.int64),
                  unit=np.vstack([others.unit, np.asarray(point.position, float)[None, :]]), n_outside=0)


def _protocol_outputs(mech: Mechanism, others: Binned, point: AuditInput, n: int,
                      rng: np.random.Generator) -> np.ndarray:
    """``n`` runs of the whole protocol; each output (the density, to 12 digits) as one byte-string key."""
    users = _with(others, point)
    seeds = rng.integers(0, 2**63 - 1, n)
    keys = [np.round(mech.run(users, np.random.default_rng(int(s))).density, 12).tobytes() for s in seeds]
    return np.array(keys)


def _audit_pair(pair: AuditPair, grid: Grid, reports: list[list[np.ndarray]], n_sel: int, n_eval: int,
                alpha: float, keep: int, claimed: float) -> PairAudit:
    cols_a, cols_b = reports
    keys = _Keys([np.concatenate([a[:n_sel], b[:n_sel]]) for a, b in zip(cols_a, cols_b)])
    spaces_a = keys.spaces(cols_a)
    spaces_b = keys.spaces(cols_b)
    # candidates per direction from every key space; the best `keep` of them (by their selection-half
    # bound) are evaluated, so exactly 2 * keep events per pair enter the Bonferroni count.
    candidates: dict[int, list[tuple[_Event, np.ndarray, np.ndarray, int]]] = {1: [], -1: []}
    for space in spaces_a:
        code_a, code_b = spaces_a[space], spaces_b[space]
        rows = np.concatenate([code_a[:n_sel], code_b[:n_sel], code_a[n_sel:], code_b[n_sel:]])
        ids, n_ids, uniq = _ids(rows, 2 * n_sel)
        sel_a, sel_b = ids[:n_sel], ids[n_sel:2 * n_sel]
        ev_a, ev_b = ids[2 * n_sel:2 * n_sel + n_eval], ids[2 * n_sel + n_eval:]
        describe = _describer(keys, space, uniq)
        for sa, sb, ea, eb, direction in ((sel_a, sel_b, ev_a, ev_b, 1), (sel_b, sel_a, ev_b, ev_a, -1)):
            for event in _candidate_events(space, sa, sb, n_ids, n_sel, alpha, keep, describe):
                candidates[direction].append((event, ea, eb, n_ids))
    best = (0.0, "no event separates the two inputs", 0, 0)
    for direction, found in candidates.items():
        found.sort(key=lambda c: -c[0].selection_bound)
        for event, ea, eb, n_ids in found[:keep]:
            member = np.zeros(n_ids + 1, dtype=bool)      # last slot: unseen (-1) is never in an event
            member[event.keys] = True
            k_first = int(member[ea].sum())
            k_second = int(member[eb].sum())
            bound = float(log_ratio_bound(np.array([k_first]), np.array([k_second]), n_eval, alpha)[0])
            if bound > best[0]:
                label = event.text if direction == 1 else event.text + " (second input more likely)"
                best = (bound, label, k_first, k_second)
    return PairAudit(pair.label, pair.first, pair.second, pair.distance_cells(grid), claimed, best[0], best[1],
                     best[2], best[3], n_eval)


def audit_registry(grid_sides: Iterable[int] = (4, 8), epsilons: Iterable[float] = (0.5, 1.0, 4.0),
                   n_samples: int = 40_000, seed: int = 0, confidence: float = 0.99,
                   names: Iterable[str] | None = None) -> pd.DataFrame:
    """Audit every registered mechanism (or ``names``) on each grid and epsilon; one row per audit."""
    rows = []
    for name in (list(names) if names is not None else mechanisms.available()):
        for side in grid_sides:
            for epsilon in epsilons:
                try:
                    result = audit_mechanism(name, side, epsilon, n_samples=n_samples, seed=seed,
                                             confidence=confidence)
                    rows.append(result.as_row())
                except LdpvizInputError as err:   # e.g. a grid the mechanism refuses
                    rows.append({"mechanism": name, "d": side, "epsilon": epsilon, "status": f"skipped: {err}"})
    return pd.DataFrame(rows)
