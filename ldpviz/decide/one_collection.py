"""Will *one* collection meet the target? A tolerance rule, a scan that says what it scanned, fresh streams.

The officer runs one collection, not the mean of many. The rule here is a one-sided normal
tolerance bound (Krishnamoorthy & Mathew, *Statistical Tolerance Regions*, 2009, sec. 2.2):
over ``n`` independent collections with mean ``m`` and standard deviation ``s``,

    U = m + k s,   k = t'_{conf}(n - 1, z_p sqrt(n)) / sqrt(n)                      (2.2.3)

(``t'`` the non-central t quantile) is at least the ``p``-quantile of the metric with confidence
``conf``. So ``U <= target`` says: with confidence ``conf``, at least a share ``p`` of single
collections meet the target (lower is better; for higher-is-better metrics ``m - k s >= target``).
The normal model is an assumption; ``tests/decide/test_one_collection.py`` checks the property that
matters (the share of fresh collections meeting the target at the answer) by simulation.

:func:`scan_epsilon` is the honest search on metrics that need not be monotone in epsilon
(DAM's radius, and so its channel, changes with epsilon): one collection per value of a log grid
(common random numbers), the rule at the grid values whose collection met the target, smallest
first, a bisection between the smallest grid value meeting the rule and the grid value below it,
and a warning for every larger grid value where the target was missed again. The answer is
"the smallest found on a scan of N values", never "the smallest". It is then decided again on
*fresh* streams (seeds the search never used), stepping up until the rule holds there, so the
answer is not the search's lucky draw (the winner's curse).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
from scipy import special   # the quantiles scipy.stats.{norm,t,nct} compute, without its import cost

from ldpviz.errors import LdpvizInputError

#: Share of single collections that must meet the target (the officer's "probability").
PROBABILITY = 0.95
#: Confidence of the statement "at least PROBABILITY of collections meet it".
CONFIDENCE = 0.95
#: Collections per decision (search streams and fresh streams alike).
DEFAULT_TRIALS = 10
#: Ratio between neighbouring values of the scan's log grid (powers of 2 times 1, so 1, 2, 4 ... and 1/2 ...).
SCAN_RATIO = 2.0
#: The stream family of the fresh collections (the search uses family 0: ``default_rng([seed, trial])``).
FRESH_STREAM = 1
#: Grid values scanned above the first one meeting the rule (one collection each), to see the metric turn.
ABOVE = 2
#: The most fresh steps above the search's answer before giving up (x (1 + rtol) steps, then doubling).
MAX_FRESH_STEPS = 12

Values = Callable[[float, int], np.ndarray]


def k_factor(n: int, probability: float = PROBABILITY, confidence: float = CONFIDENCE) -> float:
    """The one-sided normal tolerance factor k for n collections (eq. 2.2.3 above)."""
    if n < 2:
        return math.inf
    z = special.ndtri(probability)
    return float(special.nctdtrit(n - 1, z * math.sqrt(n), confidence) / math.sqrt(n))


def early_stop_is_exact(n: int, probability: float = PROBABILITY, confidence: float = CONFIDENCE) -> bool:
    """True when one collection missing the target already fails the rule at n collections.

    For any sample, max - mean <= s (n - 1) / sqrt(n) (Samuelson's inequality), so with
    k >= (n - 1) / sqrt(n) a value beyond the target puts the bound beyond it too.
    """
    return k_factor(n, probability, confidence) >= (n - 1) / math.sqrt(n)


@dataclass
class Reading:
    """The rule's verdict at one setting over ``trials`` collections."""

    met: bool
    bound: float            # the tolerance bound (upper for lower-is-better)
    mean: float
    ci_low: float           # the mean's 95% t-interval (the second, labelled reading)
    ci_high: float
    trials: int
    misses: int             # collections that missed the target
    miss_chance: float      # normal-model estimate of P(one collection misses)
    miss_chance_max: float  # at most this, with the stated confidence
    mean_met: bool          # the mean's interval meets the target (the older reading)
    stopped_early: bool = False


def miss_chance_bound(values: np.ndarray, target: float, lower_better: bool, confidence: float) -> float:
    """The largest miss chance 1 - p consistent with the data at ``confidence``: the smallest 1 - p whose
    tolerance bound still meets the target (1.0 when none does)."""
    n = len(values)
    mean, s = float(np.mean(values)), float(np.std(values, ddof=1))
    gap = (target - mean) if lower_better else (mean - target)
    if n < 2 or gap <= 0:
        return 1.0
    if s == 0:
        return 0.0
    room = gap / s * math.sqrt(n)                  # need nct.ppf(conf, n-1, z sqrt n) <= room
    lo, hi = -8.0, 8.0                             # z range; monotone in z
    if special.nctdtrit(n - 1, lo * math.sqrt(n), confidence) > room:
        return 1.0
    if special.nctdtrit(n - 1, hi * math.sqrt(n), confidence) <= room:
        return float(special.ndtr(-hi))
    for _ in range(50):
        mid = (lo + hi) / 2
        if special.nctdtrit(n - 1, mid * math.sqrt(n), confidence) <= room:
            lo = mid
        else:
            hi = mid
    return float(special.ndtr(-lo))


def read(values: np.ndarray, target: float, lower_better: bool, probability: float = PROBABILITY,
         confidence: float = CONFIDENCE, floor: float | None = None) -> Reading:
    """The rule over these collections' values (all of them). ``floor``: the least value the metric can take (0 for
    a distance or a divergence, :data:`ldpviz.metrics.NONNEGATIVE_METRICS`): the mean's interval is clipped there,
    so a distance never reads "95% CI -7.2 to 173"."""
    v = np.asarray(values, dtype=float)
    n = len(v)
    mean = float(np.mean(v))
    s = float(np.std(v, ddof=1)) if n > 1 else math.inf
    k = k_factor(n, probability, confidence)
    half = float(special.stdtrit(n - 1, 0.975) * s / math.sqrt(n)) if n > 1 else math.inf
    sign = 1.0 if lower_better else -1.0
    bound = mean + sign * k * s if math.isfinite(s) else sign * math.inf
    met = bool(sign * bound <= sign * target)
    misses = int(np.sum(sign * v > sign * target))
    z = (target - mean) / s * sign if s > 0 and math.isfinite(s) else (math.inf if sign * mean <= sign * target
                                                                         else -math.inf)
    mean_edge = mean + sign * half
    low = mean - half if floor is None else max(mean - half, float(floor))
    return Reading(met=met, bound=bound, mean=mean, ci_low=low, ci_high=mean + half, trials=n,
                   misses=misses, miss_chance=float(special.ndtr(-z)),
                   miss_chance_max=miss_chance_bound(v, target, lower_better, confidence),
                   mean_met=bool(sign * mean_edge <= sign * target))


def one_collection_range(values: np.ndarray, coverage: float = 0.95,
                         floor: float | None = None) -> tuple[float, float, float]:
    """(mean, low, high): where ONE more collection's metric falls with probability ``coverage``, from ``values``
    over independent collections: the normal prediction interval m -+ t_{(1+c)/2, n-1} s sqrt(1 + 1/n)
    (Krishnamoorthy & Mathew 2009, sec. 1.2), the low end clipped at ``floor`` (0 for a distance)."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if v.size == 0:
        return math.nan, math.nan, math.nan
    mean = float(v.mean())
    if v.size < 2:
        return mean, mean, mean
    half = float(special.stdtrit(v.size - 1, 0.5 + coverage / 2)) * float(v.std(ddof=1)) * math.sqrt(1 + 1 / v.size)
    low = mean - half if floor is None else max(mean - half, float(floor))
    return mean, low, mean + half


class Rule:
    """The rule at any setting x, over ``trials`` collections of one stream family, cached.

    ``values(x, t)`` returns the metric of collections 0 .. t-1 at x. Collections are asked for
    ``chunk`` at a time (1: one at a time); when :func:`early_stop_is_exact`, the first one missing
    the target ends the decision as "not met" (the full rule would say the same), which makes a
    scan cheap where it fails. The reading is the same for every ``chunk`` (it reads the values up
    to the first miss); a larger chunk only runs collections past that miss, in one pass.
    """

    def __init__(self, values: Values, target: float, lower_better: bool, trials: int = DEFAULT_TRIALS,
                 probability: float = PROBABILITY, confidence: float = CONFIDENCE, chunk: int = 1,
                 floor: float | None = None) -> None:
        self.values, self.target, self.lower_better = values, float(target), lower_better
        self.floor = floor
        self.chunk = max(1, int(chunk))
        self.trials, self.probability, self.confidence = int(trials), probability, confidence
        self.exact_stop = early_stop_is_exact(self.trials, probability, confidence)
        self.seen: dict[float, Reading] = {}
        self.refused: dict[float, str] = {}

    def misses(self, value: float) -> bool:
        """A collection missing the target (a setting the mechanism refuses, nan, misses it too)."""
        if not math.isfinite(value):
            return True
        return value > self.target if self.lower_better else value < self.target

    def first(self, x: float) -> float:
        """Collection 0 at x (the scan's one-collection profile); nan where the mechanism refuses x, e.g. planar
        Laplace at an epsilon spreading reports over too many cells (``self.refused`` says why)."""
        try:
            return float(self.values(x, 1)[0])
        except LdpvizInputError as err:
            self.refused[x] = str(err)
            return math.nan

    def __call__(self, x: float) -> Reading:
        if x in self.seen:
            return self.seen[x]
        if x in self.refused or not math.isfinite(self.first(x)):
            r = Reading(False, math.nan, math.nan, math.nan, math.nan, 0, 0, math.nan, 1.0, False)
            self.seen[x] = r
            return r
        if self.exact_stop:
            v, t = np.empty(0), 0
            while t < self.trials:
                t += 1
                if t > len(v):          # ask for the next chunk of collections (one pass where batched)
                    v = self.values(x, min(self.trials, t + self.chunk - 1))
                if self.misses(float(v[t - 1])):
                    v = v[:t]
                    r = read(v, self.target, self.lower_better, self.probability, self.confidence, self.floor) \
                        if t > 1 \
                        else \
                        Reading(False, math.inf if self.lower_better else -math.inf, float(v[0]), math.nan, math.nan,
                                1, 1, math.nan, 1.0, False)
                    r.met, r.stopped_early = False, t < self.trials
                    self.seen[x] = r
                    return r
        r = read(self.values(x, self.trials), self.target, self.lower_better, self.probability, self.confidence,
                 self.floor)
        self.seen[x] = r
        return r


def log_grid(lo: float, hi: float, ratio: float = SCAN_RATIO) -> list[float]:
    """``lo``, the powers of ``ratio`` strictly inside (lo, hi), and ``hi``."""
    k0, k1 = math.ceil(math.log(lo, ratio) + 1e-9), math.floor(math.log(hi, ratio) - 1e-9)
    inner = [float(ratio ** k) for k in range(k0, k1 + 1) if lo < ratio ** k < hi]
    return [float(lo)] + inner + [float(hi)]


@dataclass
class ScanPoint:
    epsilon: float
    first: float                 # collection 0's value (search streams)
    met: bool | None             # the rule (None: not evaluated, its collection 0 met the target)
    bound: float | None = None


@dataclass
class Scan:
    """What the search found and how: the scan, the refinement, the fresh decision."""

    status: str                          # "found", "below" (met at the lowest value) or "unreachable"
    answer: float | None                 # epsilon (or users), decided on fresh streams (None when unreachable)
    search_answer: float | None          # where the search streams met the rule
    reading: Reading | None              # the fresh reading at the answer
    search_reading: Reading | None
    points: list[ScanPoint] = field(default_factory=list)
    refined: list[tuple[float, bool]] = field(default_factory=list)
    fresh_tried: list[tuple[float, bool]] = field(default_factory=list)
    #: where the metric is not monotone: (a smaller epsilon that met, a larger one that missed, its value)
    missed_above: list[tuple[float, float, float]] = field(default_factory=list)

    @property
    def scanned(self) -> int:
        return len(self.points)


def missed_again(rule: Rule, points: list[ScanPoint]) -> list[tuple[float, float, float]]:
    """Where the scan shows the metric is not monotone: (smaller epsilon met, larger epsilon, its value) for every
    scanned value whose collection missed the target although a smaller scanned value's collection, or the rule
    there, met it (same streams)."""
    out, met_at = [], None
    for p in points:
        ok = p.met if p.met is not None else (math.isfinite(p.first) and not rule.misses(p.first))
        if ok or (math.isfinite(p.first) and not rule.misses(p.first)):
            met_at = p.epsilon if met_at is None else met_at
        elif met_at is not None and math.isfinite(p.first) and rule.misses(p.first):
            out.append((met_at, p.epsilon, p.first))
    return out


def _bisect(a: float, b: float, ok: Callable[[float], bool], rtol: float, log: list[tuple[float, bool]]) -> float:
    """Shrink (a fails, b meets) to b / a <= 1 + rtol on log x; returns the smallest b found meeting ``ok``."""
    while b / a > 1 + rtol:
        mid = math.sqrt(a * b)
        good = ok(mid)
        log.append((mid, good))
        if good:
            b = mid
        else:
            a = mid
    return b


def scan_epsilon(search: Rule, fresh: Rule, lo: float, hi: float, rtol: float = 0.05,
                 ratio: float = SCAN_RATIO) -> Scan:
    """The smallest epsilon found on a log-grid scan of [lo, hi] meeting ``search``, refined, then confirmed on
    ``fresh`` (one step of 1 + rtol, then doubling, until the fresh rule holds, then bisecting back).

    The scan runs from ``lo`` up: one collection per grid value (a miss fails the rule at once, exactly), the
    rule where it met, and :data:`ABOVE` more grid values past the first meeting the rule, to see whether the
    metric turns (``Scan.missed_above``); ``Scan.scanned`` says how many values were scanned."""
    grid = log_grid(lo, hi, ratio)
    points: list[ScanPoint] = []
    found = None
    for i, e in enumerate(grid):
        if found is not None and i > found + ABOVE:
            break
        p = ScanPoint(e, search.first(e), None)
        points.append(p)
        if not math.isfinite(p.first) or (search.misses(p.first) and search.exact_stop):
            p.met = False
            continue
        if found is None:
            r = search(p.epsilon)
            p.met, p.bound = r.met, r.bound
            if r.met:
                found = i
    if found is None:
        return Scan("unreachable", None, None, None, None, points, missed_above=missed_again(search, points))
    missed = missed_again(search, points)
    refined: list[tuple[float, bool]] = []
    if found == 0:
        status, eps = "below", grid[0]
    else:
        status = "found"
        eps = _bisect(grid[found - 1], grid[found], lambda e: search(e).met, rtol, refined)
    scan = Scan(status, None, eps, None, search(eps), points, refined, [], missed)
    # fresh streams: step up from the search's answer until the fresh rule holds
    tried = scan.fresh_tried
    x, last_bad = eps, None
    for step in range(MAX_FRESH_STEPS + 1):
        good = fresh(x).met
        tried.append((x, good))
        if good:
            break
        last_bad = x
        if x >= hi:
            return scan                                  # unreachable on fresh streams
        above = [g for g in grid if g > x * (1 + 1e-12)]      # never step over a scanned value: the answer stays
        x = min([hi, x * (1 + rtol) if step < 1 else x * 2] + above[:1])   # at or below the first one that holds
    else:
        return scan
    if last_bad is not None and x / last_bad > 1 + rtol:
        x = _bisect(last_bad, x, lambda e: fresh(e).met, rtol, tried)
    scan.answer, scan.reading = x, fresh(x)
    if status == "below" and x > grid[0]:
        scan.status = "found"
    return scan


def scan_users(search: Rule, fresh: Rule, low: int, everyone: int, rtol: float = 0.05) -> Scan:
    """The fewest users (within the data) meeting the rule: bisection on log n over search streams (more users
    do not hurt a consistent estimator), then confirmed on fresh streams, stepping up by 1 + rtol (then x2)."""
    def ok(n: float) -> bool:
        return search(float(int(n))).met

    if not ok(everyone):
        return Scan("unreachable", None, None, None, search(float(everyone)))
    refined: list[tuple[float, bool]] = []
    if low >= everyone or ok(low):
        status, n = "below", low
    else:
        status = "found"
        a, b = float(low), float(everyone)
        while b / a > 1 + rtol and b - a > 1:
            mid = float(min(max(int(round(math.sqrt(a * b))), int(a) + 1), int(b) - 1))
            good = ok(mid)
            refined.append((mid, good))
            a, b = (a, mid) if good else (mid, b)
        n = int(b)
    scan = Scan(status, None, float(n), None, search(float(n)), [], refined)
    x = n
    for step in range(MAX_FRESH_STEPS + 1):
        good = fresh(float(x)).met
        scan.fresh_tried.append((float(x), good))
        if good:
            scan.answer, scan.reading = float(x), fresh(float(x))
            return scan
        if x >= everyone:
            return scan
        x = min(everyone, max(x + 1, int(math.ceil(x * (1 + rtol) if step < 1 else x * 2))))
    return scan


def chance_text(p: float | None) -> str:
    """A small probability in words a reader can use: '< 0.1%', '2.3%', 'unknown'."""
    if p is None or not math.isfinite(p):
        return "unknown"
    if p < 0.001:
        return "< 0.1%"
    return f"{p:.1%}"
