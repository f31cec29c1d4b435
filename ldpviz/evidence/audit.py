"""Black-box privacy audit: a statistically sound lower bound on a mechanism's privacy loss.

Independent of a mechanism's own :meth:`~ldpviz.mechanisms.base.Mechanism.channel`,
the audit runs only its client half (``perturb``) many times from pairs of inputs
chosen to be hard to tell apart -- neighbouring cells, far corners, a cell and
itself shifted by the mechanism's radius, two points inside one cell -- and
bounds the privacy loss from the observed output frequencies, in the spirit of
DP-Sniper (Bichsel et al., S&P 2021) and DP-Auditorium (Kong et al., 2024):

1. Draw ``n_samples`` reports from each input of a pair, with fresh seeded
   randomness, and split them into a *selection* half and an *evaluation* half.
2. On the selection half, map every report to a discrete key (:func:`report_columns`
   then :class:`_Keys`), rank keys by their empirical likelihood ratio and form
   candidate events: unions of the top-ranked keys ("DP-Sniper threshold sets"),
   over the whole report and over each report column separately. Keep the
   ``events_per_direction`` candidates with the best selection-half bound.
3. On the evaluation half only, count each kept event E under both inputs and
   take one-sided Clopper-Pearson bounds: ``lower(P[M(x) in E])`` and
   ``upper(P[M(x') in E])``. Then ``ln(lower / upper)`` is a lower bound on the
   privacy loss of that pair. A Bonferroni correction over every (pair, direction,
   event) makes the *maximum* over all of them hold at the stated ``confidence``.

Because events are chosen on data independent of the evaluation half, the bound
is sound: for a mechanism that satisfies its guarantee, the probability that the
audit reports a bound above the claim is at most ``1 - confidence``. Any event
works (mapping reports to keys is post-processing), so a poorly chosen event
only makes the bound weaker, never wrong.

Claims compared against:

The claimed epsilon is the one the mechanism's guarantee states,
:meth:`Mechanism.claimed_epsilon` -- not the epsilon it was asked for: SEM-Geo-I,
calibrated to DAM's local privacy, promises eps' per cell side and is audited
against eps'.

* LDP: ``epsilon`` for every pair of inputs.
* Geo-I: ``epsilon * (distance + slack)`` with distance between the two *real* positions
  in cell sides and ``slack`` the mechanism's stated snapping slack
  (:meth:`Mechanism.geo_slack_m`, 0 for planar Laplace, the cell diagonal for SEM-Geo-I);
  a Geo-I epsilon is per km, so the claim per cell side is :attr:`Mechanism.epsilon_per_cell`;
  the audited figure is the largest ``bound / (distance + slack)`` over pairs, compared with it.
  Every Geo-I audit includes close positions across a cell edge and a cell corner
  (:func:`boundary_pairs`): snapping to cell centres breaks the guarantee there. Rounding to
  any finer lattice (quarter cells, say) breaks it only across *its* lines, which those pairs
  miss, so every Geo-I audit also runs a chain of close pairs from a seeded random place across
  a whole cell (:func:`random_close_pairs`, issue 26): one of its steps straddles every
  lattice line inside a cell.

A pass is not a proof: it means no violation was found. A certified lower bound
far below the claim (under :data:`INFORMATIVE_FRACTION` of it, e.g. 0.0 when no
event separates the inputs) says nothing about how private the mechanism is;
:attr:`AuditResult.verdict` words it so.
* No privacy (``exact``): nothing is claimed; the audit shows how large a loss it
  can certify from the samples.
* Central DP and multi-round mechanisms (``has_client = False``) have no
  single-user client half to run: they are reported as *not auditable
  black-box at the client*, with the reason.
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass, field
from typing import Any, Iterable

import numpy as np
import pandas as pd
from scipy import stats

from ldpviz import mechanisms
from ldpviz.geo.domain import Binned, Grid, Region
from ldpviz.errors import LdpvizInputError, require
from ldpviz.mechanisms.base import CENTRAL_DP, GEO_I, LDP, NO_PRIVACY, Mechanism

#: Outcomes of an audit.
PASSED = "passed"
FAILED = "failed"
NO_CLAIM = "no privacy claimed"
NOT_AUDITABLE = "not auditable black-box at the client"
#: A passed audit whose lower bound is below this share of the claim is reported as uninformative.
INFORMATIVE_FRACTION = 0.5

#: A report column with more distinct values than this (in the selection half) is cut into quantile bins.
MAX_DISTINCT_VALUES = 64
#: ... and an integer column with more than this many.
MAX_DISTINCT_INTEGERS = 256
QUANTILE_BINS = 32
#: Keys seen fewer times than this in the selection half are left out of candidate events.
MIN_KEY_COUNT = 8
#: Joint keys are only formed from reports with at most this many columns.
MAX_JOINT_COLUMNS = 4096
MAX_SAMPLES = 2_000_000
#: uint8 reports up to this many bytes per user are read as packed bits.
MAX_PACKED_BYTES = 128
MAX_AUDIT_CELLS = 4096


# ------------------------------------------------------------------ inputs and pairs
@dataclass(frozen=True)
class AuditInput:
    """One user's true location: its grid cell and its position (unit coordinates)."""

    cell: int
    position: tuple[float, float]

    def users(self, n: int) -> Binned:
        """``n`` identical users at this location (what ``perturb`` takes)."""
        return Binned(cells=np.full(n, self.cell, dtype=np.int64),
                      unit=np.tile(np.asarray(self.position, dtype=float), (n, 1)), n_outside=0)


@dataclass(frozen=True)
class AuditPair:
    """Two inputs to tell apart, why they were chosen, and their distance in cell sides."""

    label: str
    first: AuditInput
    second: AuditInput

    def distance_cells(self, grid: Grid) -> float:
        delta = np.subtract(self.first.position, self.second.position) * grid.side
        return float(np.hypot(*delta))


def _input(grid: Grid, row: int, col: int, offset: tuple[float, float] = (0.5, 0.5)) -> AuditInput:
    d = grid.side
    row, col = min(max(row, 0), d - 1), min(max(col, 0), d - 1)
    return AuditInput(row * d + col, ((col + offset[0]) / d, (row + offset[1]) / d))


def _radius_cells(mech: Mechanism) -> int | None:
    """The mechanism's radius in whole cells, if it declares one (parameter or attribute)."""
    for name in ("radius_cells", "radius"):
        value = mech.__dict__.get(name, mech.param_values.get(name))
        if isinstance(value, (int, float, np.integer, np.floating)) and math.isfinite(value) and value > 0:
            return int(math.ceil(value))
    return None


def hard_pairs(grid: Grid, mech: Mechanism | None = None, seed: int = 0) -> list[AuditPair]:
    """Input pairs that are hard to tell apart: neighbours, far corners, radius shift, within a cell.

    For an LDP mechanism every pair must satisfy the same bound, so the pairs
    that matter are those where the mechanism's output differs most: adjacent
    cells (where smoothing mechanisms such as DAM or SRR blur least), opposite
    corners (where border effects and distance-based mechanisms differ most), a
    cell and the cell one radius away (the edge of a disk or staircase), and two
    positions inside one cell (mechanisms on continuous coordinates). Geo-I mechanisms also get close pairs
    across a cell edge and corner (:func:`boundary_pairs`) and at random positions (:func:`random_close_pairs`,
    drawn from ``seed``).
    """
    d = grid.side
    mid = (d - 1) // 2
    pairs = [AuditPair("neighbouring cells (east)", _input(grid, mid, mid), _input(grid, mid, mid + 1)),
             AuditPair("neighbouring cells (north-east)", _input(grid, mid, mid), _input(grid, mid + 1, mid + 1)),
             AuditPair("far corners", _input(grid, 0, 0), _input(grid, d - 1, d - 1)),
             AuditPair("corner and its neighbour", _input(grid, 0, 0), _input(grid, 0, 1))]
    radius = _radius_cells(mech) if mech is not None else None
    if radius is not None and radius < d:
        pairs.append(AuditPair(f"cell and itself shifted by the radius ({radius} cells)",
                               _input(grid, mid, 0), _input(grid, mid, radius)))
    pairs.append(AuditPair("two corners of one cell", _input(grid, mid, mid, (0.01, 0.01)),
                           _input(grid, mid, mid, (0.99, 0.99))))
    if mech is not None and mech.privacy_model == GEO_I and d > 1:
        pairs.extend(boundary_pairs(grid))
        pairs.extend(random_close_pairs(grid, seed))
    unique, seen = [], set()
    for pair in pairs:          # tiny grids collapse some pairs onto the same inputs
        key = (pair.first, pair.second)
        if key not in seen:
            seen.add(key)
            unique.append(pair)
    return unique


#: Distance between the two positions of a cross-boundary pair (metres; at most a tenth of a cell side).
BOUNDARY_GAP_M = 20.0


def _position(grid: Grid, col: float, row: float) -> AuditInput:
    """The input at a position given in cell units (column, row from the south-west corner)."""
    d = grid.side
    col, row = min(max(col, 0.0), float(d)), min(max(row, 0.0), float(d))
    c, r = min(int(col), d - 1), min(int(row), d - 1)
    return AuditInput(r * d + c, (col / d, row / d))


def boundary_pairs(grid: Grid, gap_m: float = BOUNDARY_GAP_M) -> list[AuditPair]:
    """Close real positions on either side of a cell boundary (Geo-I between real positions, issue 20).

    A mechanism that snaps positions to cell centres reports them as if a whole cell apart, while the
    guarantee allows only e^(epsilon x gap) (plus any slack the mechanism states). Two pairs: ``gap_m``
    apart across the east edge of the middle cell, and across its north-east corner (the diagonal, where
    snapping moves the two centres furthest apart). The gap is capped at a tenth of the cell side."""
    d = grid.side
    mid = (d - 1) // 2
    gap = min(gap_m / grid.cell_m, 0.1)
    half, diag = gap / 2.0, gap / (2.0 * math.sqrt(2.0))
    edge, corner = float(mid + 1), float(mid + 1)
    gap_text = f"{gap * grid.cell_m:.3g} m"
    return [AuditPair(f"{gap_text} apart across a cell edge", _position(grid, edge - half, mid + 0.5),
                      _position(grid, edge + half, mid + 0.5)),
            AuditPair(f"{gap_text} apart across a cell corner", _position(grid, corner - diag, corner - diag),
                      _position(grid, corner + diag, corner + diag))]


#: Gap between the two positions of each random close pair (cell sides): the chain of :func:`random_close_pairs`.
RANDOM_GAP_CELLS = 0.1


def random_close_pairs(grid: Grid, seed: int = 0, gap_cells: float = RANDOM_GAP_CELLS) -> list[AuditPair]:
    """Close pairs of real positions at a seeded random place: a chain of steps ``gap_cells`` long from a random
    start, in a random direction near the diagonal (40 to 50 degrees), long enough to cross a whole cell width
    along both axes; each step is one pair (issue 26).

    The cross-boundary pairs (:func:`boundary_pairs`) catch snapping to cell centres. A mechanism that rounds to
    a finer lattice -- quarter cells, say, whose lines lie inside the cells -- keeps both points of those pairs on
    one lattice point and passes them. The chain crosses every lattice line inside a cell, whatever its offset,
    and the step across a line shows a loss of about epsilon x (the lattice spacing) against a claim of epsilon x
    ``gap_cells``: 2.5 x the claim for quarter cells at a gap of a tenth of a cell. (Pairs at independent random
    places straddle a line only with probability about gap / spacing each: ten such audits of a quarter-cell
    rounding missed it 4 times in 10 with 8 pairs.) ``gap_cells`` is capped at a tenth of the grid."""
    d = grid.side
    rng = np.random.default_rng([int(seed), 0x26C105E])
    gap = min(float(gap_cells), 0.1 * d)
    angle = math.radians(rng.uniform(40.0, 50.0)) + (math.pi / 2 if rng.random() < 0.5 else 0.0)
    step_x, step_y = gap * math.cos(angle), gap * math.sin(angle)
    steps = int(math.ceil(1.0 / (gap * min(abs(math.cos(angle)), abs(math.sin(angle)))))) if d > 1 else 1
    span_x, span_y = abs(step_x) * steps, abs(step_y) * steps
    x0 = rng.uniform(0.0, max(d - span_x, 0.0)) + (span_x if step_x < 0 else 0.0)
    y0 = rng.uniform(0.0, max(d - span_y, 0.0))
    gap_text = f"{gap * grid.cell_m:.3g} m"
    out = []
    for k in range(steps):
        ax, ay = x0 + k * step_x, y0 + k * step_y
        out.append(AuditPair(f"{gap_text} apart at a random place ({ax + step_x / 2:.2f}, {ay + step_y / 2:.2f} "
                             "cells)", _position(grid, ax, ay), _position(grid, ax + step_x, ay + step_y)))
    return out


# ------------------------------------------------------------------ reports -> discrete keys
def report_columns(reports: Any, n: int, mech: Mechanism | None = None) -> list[np.ndarray]:
    """The ``n`` reports as a list of 1-D columns (one value per user), whatever their type.

    A mechanism may define ``report_key(reports)`` returning an ``(n,)`` or
    ``(n, k)`` array; otherwise arrays are flattened per user, tuples / lists /
    dicts / dataclasses of per-user arrays are taken field by field, and a list
    of ``n`` per-user objects is stacked.
    """
    hook = getattr(mech, "report_key", None) if mech is not None else None
    if callable(hook):
        reports = hook(reports)
    columns = _columns(reports, n)
    require(len(columns) > 0, "the mechanism's reports could not be turned into per-user values")
    return columns


def _columns(reports: Any, n: int) -> list[np.ndarray]:
    if isinstance(reports, np.ndarray) and reports.dtype != object:
        if reports.ndim >= 1 and reports.shape[0] == n:
            flat = reports.reshape(n, -1)
            if flat.dtype == np.uint8 and flat.shape[1] <= MAX_PACKED_BYTES:
                # bytes are often packed bits (np.packbits, e.g. OUE): one column per bit exposes each bit as
                # its own event space; the joint key carries the same information either way.
                flat = np.unpackbits(flat, axis=1)
            return [flat[:, j] for j in range(flat.shape[1])]
        raise LdpvizInputError(f"expected one report per user ({n}), got an array of shape {reports.shape}")
    if isinstance(reports, dict):
        return [c for value in reports.values() for c in _columns(value, n)]
    if dataclasses.is_dataclass(reports) and not isinstance(reports, type):
        parts = [getattr(reports, f.name) for f in dataclasses.fields(reports)]
        return [c for p in parts if _is_per_user(p, n) for c in _columns(p, n)]
    if isinstance(reports, (tuple, list)):
        if len(reports) != n or all(_is_per_user(p, n) for p in reports):
            return [c for p in reports for c in _columns(p, n)]
        # n per-user objects: stack them (ragged objects become their repr, still a valid key)
        try:
            stacked = np.asarray(reports)
            if stacked.dtype != object:
                return _columns(stacked, n)
        except ValueError:
            pass
        return [np.array([repr(r) for r in reports])]
    if isinstance(reports, np.ndarray):      # object array
        return [np.array([repr(r) for r in reports.reshape(n, -1)])]
    if hasattr(reports, "__dict__"):
        parts = [v for v in vars(reports).values() if _is_per_user(v, n)]
        if parts:
            return [c for p in parts for c in _columns(p, n)]
    raise LdpvizInputError(f"cannot read the mechanism's reports ({type(reports).__name__}) as one value per user")


def _is_per_user(value: Any, n: int) -> bool:
    try:
        return len(value) == n and not isinstance(value, (str, bytes))
    except TypeError:
        return False


class _Column:
    """Discretises one report column, learning its values or quantile edges from the selection half."""

    def __init__(self, values: np.ndarray) -> None:
        self.kind = "values"
        distinct = np.unique(values)
        limit = MAX_DISTINCT_INTEGERS if values.dtype.kind in "iub" else MAX_DISTINCT_VALUES
        if len(distinct) > limit and np.issubdtype(values.dtype, np.number):
            self.kind = "bins"
            qs = np.quantile(values.astype(float), np.linspace(0, 1, QUANTILE_BINS + 1)[1:-1])
            self.edges = np.unique(qs)
            self.n_codes = len(self.edges) + 1
        else:
            self.distinct = distinct       # codes 0..k-1; -1 = value not seen in the selection half
            self.n_codes = len(distinct)

    def codes(self, values: np.ndarray) -> np.ndarray:
        if self.kind == "bins":
            return np.searchsorted(self.edges, values.astype(float), side="right").astype(np.int64)
        idx = np.searchsorted(self.distinct, values)
        idx = np.minimum(idx, len(self.distinct) - 1)
        return np.where(self.distinct[idx] == values, idx, -1).astype(np.int64)

    def describe(self, code: int) -> str:
        if self.kind == "bins":
            lo = -np.inf if code == 0 else self.edges[code - 1]
            hi = np.inf if code >= len(self.edges) else self.edges[code]
            return f"[{lo:.4g}, {hi:.4g})"
        value = self.distinct[code]
        if isinstance(value, (bytes, np.bytes_)):
            return f"output #{code}"
        return str(int(value)) if isinstance(value, (bool, np.bool_)) else str(value)


class _Keys:
    """Key spaces learned on the selection half: the whole report, and each column alone."""

    def __init__(self, selection_columns: list[np.ndarray]) -> None:
        self.columns = [_Column(c) for c in selection_columns]
        self.joint = len(self.columns) <= MAX_JOINT_COLUMNS

    def _joint(self, codes: list[np.ndarray]) -> np.ndarray | np.ndarray:
        """One integer (or, for huge key spaces, one byte string) per report for the whole report."""
        radices = [c.n_codes + 1 for c in self.columns]          # +1: the "unseen value" code -1
        if math.prod(radices) < 2 ** 62:
            key = np.zeros(len(codes[0]), dtype=np.int64)
            for radix, code in zip(radices, codes):
                key = key * radix + (code + 1)
            return key
        rows = np.ascontiguousarray(np.column_stack(codes).astype(np.int32))
        return rows.view(np.dtype((np.void, rows.shape[1] * 4))).reshape(-1)

    def describe(self, space: str, key: Any) -> str:
        """The values behind one key of a space, e.g. ``7`` or ``(0,1,1,..)``."""
        if space.startswith("report["):
            return self.columns[int(space[len("report["):-1])].describe(int(key))
        if len(self.columns) == 1:
            return self.columns[0].describe(int(key))
        if isinstance(key, (bytes, np.void)):
            codes = list(np.frombuffer(bytes(key), dtype=np.int32))
        else:
            codes, key = [], int(key)
            for column in reversed(self.columns):
                key, digit = divmod(key, column.n_codes + 1)
                codes.append(digit - 1)
            codes.reverse()
        shown = [self.columns[j].describe(int(c)) if c >= 0 else "?" for j, c in enumerate(codes[:4])]
        return f"({','.join(shown)}{',..' if len(codes) > 4 else ''})"

    def spaces(self, columns: list[np.ndarray]) -> dict[str, np.ndarray]:
        """Integer key per report in every key space (``-1`` = unseen in the selection half)."""
        codes = [col.codes(values) for col, values in zip(self.columns, columns)]
        out = {}
        if len(codes) == 1:
            out["report"] = codes[0]
            return out
        if self.joint:
            out["report"] = self._joint(codes)
        if len(codes) <= 1024:
            for j, c in enumerate(codes):
                if self.columns[j].n_codes > 1:
                    out[f"report[{j}]"] = c
        return out


# ------------------------------------------------------------------ Clopper-Pearson
def cp_lower(successes: np.ndarray, trials: int, alpha: float) -> np.ndarray:
    """One-sided (1 - alpha) Clopper-Pearson lower bound on a binomial probability."""
    k = np.asarray(successes, dtype=float)
    with np.errstate(invalid="ignore"):
        out = stats.beta.ppf(alpha, k, trials - k + 1)
    return np.where(k <= 0, 0.0, out)


def cp_upper(successes: np.ndarray, trials: int, alpha: float) -> np.ndarray:
    """One-sided (1 - alpha) Clopper-Pearson upper bound on a binomial probability."""
    k = np.asarray(successes, dtype=float)
    with np.errstate(invalid="ignore"):
        out = stats.beta.ppf(1 - alpha, k + 1, trials - k)
    return np.where(k >= trials, 1.0, out)


def log_ratio_bound(k_first: np.ndarray, k_second: np.ndarray, trials: int, alpha: float) -> np.ndarray:
    """``ln(lower(p_first) / upper(p_second))``, each side at level alpha / 2 (so jointly 1 - alpha)."""
    lo = cp_lower(k_first, trials, alpha / 2)
    hi = cp_upper(k_second, trials, alpha / 2)
    with np.errstate(divide="ignore"):
        return np.where(lo > 0, np.log(np.maximum(lo, 1e-300) / hi), -np.inf)


# ------------------------------------------------------------------ events
@dataclass
class _Event:
    space: str
    keys: np.ndarray           # key ids (in the space's id numbering) that make up the event
    selection_bound: float
    text: str


def _candidate_events(space: str, ids_a: np.ndarray, ids_b: np.ndarray, n_ids: int, trials: int,
                      alpha: float, keep: int, describe: Any) -> list[_Event]:
    """DP-Sniper threshold sets: unions of the keys most likely under A relative to B."""
    seen_a = ids_a[ids_a >= 0]
    seen_b = ids_b[ids_b >= 0]
    count_a = np.bincount(seen_a, minlength=n_ids).astype(float)
    count_b = np.bincount(seen_b, minlength=n_ids).astype(float)
    # Only keys seen often enough in the selection half: a key seen once or twice looks infinitely telling
    # there and almost never recurs in the evaluation half (sparse report spaces, e.g. long bit vectors).
    present = np.flatnonzero((count_a > 0) & (count_a + count_b >= MIN_KEY_COUNT))
    if len(present) == 0:
        return []
    score = (count_a[present] + 0.5) / (count_b[present] + 0.5)
    order = present[np.argsort(-score, kind="stable")]
    cum_a = np.cumsum(count_a[order])
    cum_b = np.cumsum(count_b[order])
    bounds = log_ratio_bound(cum_a, cum_b, trials, alpha)
    best = np.argsort(-bounds, kind="stable")[:keep]
    events = []
    for i in best:
        if not np.isfinite(bounds[i]):
            continue
        keys = order[: i + 1]
        shown = ", ".join(describe(k) for k in keys[:3]) + (f" and {len(keys) - 3} more" if len(keys) > 3 else "")
        events.append(_Event(space, keys, float(bounds[i]), f"{space} in {{{shown}}}"))
    return events


def _ids(keys: np.ndarray, selection_rows: int) -> tuple[np.ndarray, int, np.ndarray]:
    """Dense ids ``0..k-1`` for the keys seen in the first ``selection_rows`` entries; others get -1."""
    if keys.dtype.kind in "iu" and len(keys) and int(keys.max()) - int(keys.min()) < 4 * len(keys):
        low = int(keys.min())           # small integer keys: a direct table instead of a sort
        present = np.zeros(int(keys.max()) - low + 1, dtype=bool)
        present[keys - low] = True
        uniq = np.flatnonzero(present) + low
        position = np.cumsum(present) - 1
        inverse = position[keys - low]
    else:
        uniq, inverse = np.unique(keys, return_inverse=True)
        inverse = inverse.reshape(-1)
    in_selection = np.zeros(len(uniq), dtype=bool)
    in_selection[inverse[:selection_rows]] = True
    remap = np.full(len(uniq), -1, dtype=np.int64)
    remap[in_selection] = np.arange(int(in_selection.sum()))
    return remap[inverse], int(in_selection.sum()), uniq[in_selection]


# ------------------------------------------------------------------ results
@dataclass
class PairAudit:
    """The audit of one input pair: its claim, its bound and the event that gave it."""

    label: str
    first: AuditInput
    second: AuditInput
    distance_cells: float
    claimed: float             #: the privacy loss the mechanism promises for this pair (inf: nothing)
    lower_bound: float         #: certified lower bound on the pair's privacy loss (>= 0)
    event: str                 #: the event with the largest bound
    count_first: int           #: evaluation-half reports in the event, first input
    count_second: int
    n_evaluation: int

    @property
    def passed(self) -> bool:
        return self.lower_bound <= self.claimed + 1e-12


@dataclass
class AuditResult:
    """The audit of one mechanism on one grid at one epsilon.

    ``lower_bound`` is the certified lower bound on epsilon (Geo-I: on epsilon per
    cell side, the largest pair bound divided by the pair's distance); ``claimed``
    the epsilon the mechanism promises (Geo-I: per cell side, ``Mechanism.epsilon_per_cell``;
    ``inf`` when it promises nothing); the
    mechanism ``passed`` when the bound does not exceed the claim. All bounds hold
    jointly with probability ``confidence``.
    """

    mechanism: str
    label: str
    privacy_model: str
    grid_side: int
    epsilon: float
    claimed: float
    lower_bound: float
    passed: bool
    status: str
    pairs: list[PairAudit]
    n_samples: int
    seed: int
    confidence: float
    n_events: int
    seconds: float
    notes: list[str] = field(default_factory=list)
    slack_cells: float = 0.0   #: Geo-I: the stated snapping slack added to every distance (cell sides)

    def to_frame(self) -> pd.DataFrame:
        """One row per pair, for tables on the audit page."""
        return pd.DataFrame([{
            "pair": p.label, "first cell": p.first.cell, "second cell": p.second.cell,
            "distance (cells)": round(p.distance_cells, 3), "claimed": p.claimed,
            "lower bound": p.lower_bound, "passed": p.passed, "event": p.event,
            "hits (first)": p.count_first, "hits (second)": p.count_second, "samples": p.n_evaluation,
        } for p in self.pairs])

    @property
    def informative(self) -> bool:
        """True when the bound says something: a failure, or a pass whose bound reaches
        :data:`INFORMATIVE_FRACTION` of the claim (the audit found events near the worst case)."""
        if self.status == FAILED:
            return True
        if self.status != PASSED:
            return False
        return self.lower_bound >= INFORMATIVE_FRACTION * self.claimed

    @property
    def verdict(self) -> str:
        """The outcome in honest words: a pass is 'no violation found', never a proof."""
        unit = " per cell side" if self.privacy_model == GEO_I else ""
        if self.status == FAILED:
            return (f"violation: certified loss {self.lower_bound:.3f}{unit} > claimed {self.claimed:.3g}{unit}")
        if self.status == PASSED:
            text = f"no violation found (certified {self.lower_bound:.3f} of claimed {self.claimed:.3g}{unit})"
            if not self.informative:
                text += (f"; the lower bound {self.lower_bound:.3f} is uninformative (below "
                         f"{INFORMATIVE_FRACTION:.0%} of the claim: the sampled reports barely separate the inputs, "
                         "which does not show the mechanism is more private)")
            return text
        return self.status

    def summary(self) -> str:
        """One sentence for the page."""
        if self.status == NOT_AUDITABLE:
            return f"{self.label}: {self.status}. {' '.join(self.notes)}"
        unit = " per cell side" if self.privacy_model == GEO_I else ""
        claim = "no privacy claimed" if not math.isfinite(self.claimed) else f"claims epsilon = {self.claimed:.3g}{unit}"
        if self.slack_cells > 0:
            claim += f" x (distance + a snapping slack of {self.slack_cells:.3g} cell sides)"
        if self.privacy_model != NO_PRIVACY and math.isfinite(self.claimed) and self.claimed != self.epsilon:
            claim += f" (its stated guarantee; asked for epsilon = {self.epsilon:g})"
        text = (f"{self.label} on a {self.grid_side}x{self.grid_side} grid: {claim}; the audit certifies a "
                f"privacy loss of at least {self.lower_bound:.3f}{unit} at {self.confidence:.0%} confidence")
        return text + (f": {self.verdict}." if self.status in (PASSED, FAILED) else f" ({self.status}).")

    def as_row(self) -> dict[str, Any]:
        return {"mechanism": self.mechanism, "model": self.privacy_model, "d": self.grid_side,
                "epsilon": self.epsilon, "claimed": self.claimed, "lower_bound": self.lower_bound,
                "status": self.status, "informative": self.informative, "verdict": self.verdict,
                "pairs": len(self.pairs), "samples_per_input": self.n_samples, "seconds": self.seconds}


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
