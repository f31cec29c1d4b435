"""Certified bounds (Clopper-Pearson) on candidate events, and the audit's outcomes and results."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from ldpviz.mechanisms.base import GEO_I, NO_PRIVACY
from ldpviz.evidence.audit._pairs import AuditInput


#: Outcomes of an audit.
PASSED = "passed"
FAILED = "failed"
NO_CLAIM = "no privacy claimed"
NOT_AUDITABLE = "not auditable black-box at the client"
#: A passed audit whose lower bound is below this share of the claim is reported as uninformative.
INFORMATIVE_FRACTION = 0.5
#: Keys seen fewer times than this in the selection half are left out of candidate events.
MIN_KEY_COUNT = 8


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
        claim = ("no privacy claimed" if not math.isfinite(self.claimed)
                 else f"claims epsilon = {self.claimed:.3g}{unit}")
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
