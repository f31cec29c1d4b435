"""SRR's offline part (L-SRR Sec. 3.2-3.3, Lemma 3.4, Theorem 3.3): groups, m, c, the staircase
probabilities and the cached plan."""

from __future__ import annotations

import math
import time
from collections import OrderedDict
from dataclasses import dataclass, field

import numpy as np

from ldpviz.geo import quadkey
from ldpviz.mechanisms.srr.staircase._domain import LocationDomain


# ---------------------------------------------------------------------------
# Offline part: groups, m, c and the staircase probabilities (Sec. 3.2-3.3)
# ---------------------------------------------------------------------------
def lcp_ball_sizes(domain: LocationDomain) -> np.ndarray:
    """``S[x, b]`` = #{y in D : LCP(x, y) >= b} for b = 0..n_bits (and 0 at n_bits + 1)."""
    d, bits = domain.size, domain.n_bits
    out = np.zeros((d, bits + 2), dtype=np.int64)
    for b in range(bits + 1):
        lo, hi = quadkey.prefix_interval(domain.codes, domain.codes, np.full(d, b), bits)
        out[:, b] = hi - lo
    return out


def lcp_ball_sums(ball: np.ndarray) -> np.ndarray:
    """``L[x, b]`` = sum of LCP(x, y) over {y : LCP(x, y) >= b} (same shape as ``ball``)."""
    bits = ball.shape[1] - 2
    exact = (ball[:, :bits + 1] - ball[:, 1:]) * np.arange(bits + 1)[None, :]
    out = np.zeros(ball.shape, dtype=float)
    out[:, :bits + 1] = np.cumsum(exact[:, ::-1], axis=1)[:, ::-1]
    return out


def staircase_levels(m: int, c: float) -> np.ndarray:
    """Relative staircase heights ``alpha_j / alpha_min = 1 + (m - j)(c - 1)/(m - 1)``, j = 1..m (eq. 3)."""
    j = np.arange(1, m + 1)
    return 1.0 + (m - j) * (c - 1.0) / (m - 1)


def optimal_thresholds(ball: np.ndarray, m: int, c: float, max_rounds: int = 30) -> np.ndarray:
    """Group thresholds ``t_1 > ... > t_(m-1)`` per input maximising the expected LCP of the report.

    Sec. 3.2 asks for the groups "that maximise sum_y LCP(x, y)"; the plain sum
    does not depend on the groups, so we maximise it weighted by the staircase
    probabilities, ``E[LCP(x, Y)] = sum_j alpha_j(x) sum_(y in G_j(x)) LCP(x, y)``
    (the closeness of the report to the truth). With alpha_j proportional to
    ``w_j`` (:func:`staircase_levels`) this is the ratio
    ``sum_j w_j L_j / sum_j w_j |G_j|``, maximised exactly by Dinkelbach's
    method, each step an exact dynamic programme over the thresholds (the
    paper's exhaustive search, without its exponential cost). ``G_1 = {LCP >=
    t_1}``, ``G_j = {t_j <= LCP < t_(j-1)}``, ``G_m`` (kept non-empty) the rest;
    thresholds above n_bits give empty groups. Returns ``(d, m - 1)`` int64.
    """
    d, width = ball.shape
    bits = width - 2
    top = bits + m
    size = np.zeros((d, top + 1))
    size[:, :bits + 1] = ball[:, :bits + 1]
    lsum = np.zeros((d, top + 1))
    lsum[:, :bits + 1] = lcp_ball_sums(ball)[:, :bits + 1]
    total, total_l = size[:, 0].copy(), lsum[:, 0].copy()
    v_min = (ball[:, :bits + 1] == ball[:, [0]]).sum(axis=1) - 1
    w = staircase_levels(m, c)
    t = np.arange(top + 1)
    later = t[None, :] > t[:, None]
    rows = np.arange(d)

    def solve(lam: np.ndarray) -> np.ndarray:
        score = lsum - lam[:, None] * size              # per-threshold cumulative score
        f = w[0] * score
        back = []
        for j in range(1, m - 1):
            cand = f[:, None, :] + w[j] * (score[:, :, None] - score[:, None, :])
            cand = np.where(later[None], cand, -np.inf)
            arg = cand.argmax(axis=2)
            f = np.take_along_axis(cand, arg[:, :, None], axis=2)[:, :, 0]
            back.append(arg)
        final = f + w[m - 1] * ((total_l - lam * total)[:, None] - score)
        final = np.where(t[None, :] > v_min[:, None], final, -np.inf)
        thr = np.empty((d, m - 1), dtype=np.int64)
        thr[:, m - 2] = final.argmax(axis=1)
        for j in range(m - 3, -1, -1):
            thr[:, j] = back[j][rows, thr[:, j + 1]]
        return thr

    def ratio(thr: np.ndarray) -> np.ndarray:
        cut = np.column_stack([thr, np.zeros(d, dtype=np.int64)])
        s_in = size[rows[:, None], cut] - np.column_stack([np.zeros(d), size[rows[:, None], thr]])
        l_in = lsum[rows[:, None], cut] - np.column_stack([np.zeros(d), lsum[rows[:, None], thr]])
        return (l_in @ w) / (s_in @ w)

    lam = total_l / total                                  # the uniform report's expected LCP
    thr = solve(lam)
    for _ in range(max_rounds):
        new_lam = ratio(thr)
        if np.all(new_lam <= lam + 1e-12):
            break
        lam = np.maximum(lam, new_lam)
        thr = solve(lam)
    return thr


def lemma_groups(c: float, d: int) -> float:
    """Lemma 3.4: ``m* = 2 (c d - e^(1 + log c)) / ((c - 1) d)`` (unrounded)."""
    if c <= 1.0:
        return math.inf
    return 2.0 * (c * d - math.e * c) / ((c - 1.0) * d)


def relaxed_mi_bound(m: int, c: float, d: int) -> float:
    """Mutual-information bound of Lemma 3.4's proof with R = R_max: ``log d + (1/A) log(c / (d A))``."""
    a = c - (c - 1.0) * m / 2.0
    if a <= 0:
        return math.inf
    return math.log(d) + (1.0 / a) * math.log(c / (d * a))


def choose_groups(c: float, d: int, max_groups: int) -> int:
    """m* of Lemma 3.4 rounded to floor or ceiling (smaller relaxed MI bound), clamped to [2, max_groups]."""
    star = lemma_groups(c, d)
    if not math.isfinite(star) or star >= max_groups:
        return max(2, max_groups)
    lo, hi = max(2, math.floor(star)), max(2, math.ceil(star))
    best = min((lo, hi), key=lambda m: (relaxed_mi_bound(m, c, d), m))
    return int(min(max(best, 2), max_groups))


def staircase_weights(group_sizes: np.ndarray, c: float) -> tuple[np.ndarray, np.ndarray]:
    """``(alpha (d, m), denominator (d,))`` of eq. (3)-(4) for group sizes ``(d, m)`` and ratio c."""
    d = group_sizes.sum(axis=1)
    m = group_sizes.shape[1]
    j = np.arange(1, m + 1)
    # Den(x) = (m-1) d c - (c-1) sum_j (j-1)|G_j(x)| = (m-1) d + (c-1) sum_j (m-j)|G_j(x)|
    den = (m - 1) * d + (c - 1.0) * (group_sizes * (m - j)[None, :]).sum(axis=1)
    alpha_min = (m - 1) / den
    alpha = alpha_min[:, None] * (1.0 + (m - j)[None, :] * (c - 1.0) / (m - 1))
    return alpha, den


def theorem33_epsilon(group_sizes: np.ndarray, c: float) -> float:
    """Theorem 3.3 / App. B.1: ``max_(x,x') log(alpha_max(x) / alpha_min(x'))``."""
    _, den = staircase_weights(group_sizes, c)
    return math.log(c) + math.log(den.max() / den.min())


def largest_c(group_sizes: np.ndarray, epsilon: float, iterations: int = 100) -> float:
    """Binary search for the largest c >= 1 whose Theorem 3.3 bound is <= epsilon (bound increases with c)."""
    lo, hi = 1.0, math.exp(epsilon)                  # eps(c) >= log c, so c <= e^eps
    if theorem33_epsilon(group_sizes, hi) <= epsilon:
        return hi
    for _ in range(iterations):
        mid = 0.5 * (lo + hi)
        if theorem33_epsilon(group_sizes, mid) <= epsilon:
            lo = mid
        else:
            hi = mid
    return lo


@dataclass
class StaircasePlan:
    """Everything SRR precomputes per (domain, epsilon): groups, m, c and probabilities.

    ``lo, hi`` are ``(d, m + 1)``: the interval ``[lo[x, j], hi[x, j])`` of
    sorted positions holds ``G_1(x) u ... u G_j(x)`` (j = 0 is empty, j = m the
    whole domain). ``glcp[x, j - 1]`` is beta_j(x) (Def. 3.2; -1 for an empty group).
    """

    domain: LocationDomain
    epsilon_target: float
    m: int
    c: float
    epsilon: float              #: Theorem 3.3 bound for (c, m, groups), <= epsilon_target
    thresholds: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    group_sizes: np.ndarray
    glcp: np.ndarray
    alpha: np.ndarray
    cum_mass: np.ndarray
    seconds: float = 0.0
    _lu: dict | None = field(default=None, repr=False)
    _channel: np.ndarray | None = field(default=None, repr=False)

    def channel(self) -> np.ndarray:
        """Dense ``Q[y, x]`` over domain positions; columns sum to 1 (built from the nested intervals)."""
        if self._channel is None:
            self._channel = staircase_channel(self)
        return self._channel

    def channel_epsilon(self) -> float:
        """Exact ``max_y max_(x, x') log Q[y, x] / Q[y, x']`` of the channel (<= :attr:`epsilon`)."""
        q = self.channel()
        return float(np.log(q.max(axis=1) / q.min(axis=1)).max())


def groups_for(domain: LocationDomain, ball: np.ndarray, m: int, c: float) -> dict[str, np.ndarray]:
    """Thresholds, nested intervals, group sizes and GLCPs for m groups (staircase ratio c)."""
    d, bits = domain.size, domain.n_bits
    thr = optimal_thresholds(ball, m, c)
    pos = np.arange(d, dtype=np.int64)
    lo = np.empty((d, m + 1), dtype=np.int64)
    hi = np.empty((d, m + 1), dtype=np.int64)
    lo[:, 0] = hi[:, 0] = pos
    lo[:, m], hi[:, m] = 0, d
    for j in range(1, m):
        t = thr[:, j - 1]
        inside = t <= bits
        first, end = quadkey.prefix_interval(domain.codes, domain.codes, np.minimum(t, bits), bits)
        lo[:, j] = np.where(inside, first, pos)
        hi[:, j] = np.where(inside, end, pos)
    sizes = np.diff(hi - lo, axis=1)
    # beta_j(x): smallest LCP present in G_j(x).
    present = ball[:, :bits + 1] > ball[:, 1:bits + 2]
    next_present = np.full((d, bits + 2), bits + 1, dtype=np.int64)
    for b in range(bits, -1, -1):
        next_present[:, b] = np.where(present[:, b], b, next_present[:, b + 1])
    v_min = (ball[:, :bits + 1] == ball[:, [0]]).sum(axis=1) - 1
    lower = np.column_stack([np.minimum(thr, bits + 1), v_min])
    glcp = np.where(sizes > 0, next_present[np.arange(d)[:, None], np.minimum(lower, bits + 1)], -1)
    return {"thresholds": thr, "lo": lo, "hi": hi, "group_sizes": sizes, "glcp": glcp}


def build_plan(domain: LocationDomain, epsilon: float, groups: int | None = None) -> StaircasePlan:
    """The offline part of Algorithm 1 for ``domain`` at ``epsilon`` (m fixed if ``groups`` is given)."""
    start = time.perf_counter()
    d = domain.size
    ball = lcp_ball_sizes(domain)
    distinct = int((ball[:, :domain.n_bits + 1] > ball[:, 1:]).sum(axis=1).max())
    max_groups = max(2, distinct)

    def solve(m: int, c_guess: float) -> tuple[dict[str, np.ndarray], float]:
        # groups depend on c (through the staircase weights) and c on the groups: iterate to a fixed point
        c_now = c_guess
        for _ in range(6):
            g = groups_for(domain, ball, m, c_now)
            c_new = largest_c(g["group_sizes"], epsilon)
            if abs(c_new - c_now) <= 1e-6 * c_now:
                break
            g_new = groups_for(domain, ball, m, c_new)
            if np.array_equal(g_new["thresholds"], g["thresholds"]):
                break
            c_now = c_new
        return g, c_new

    if d == 1:
        m, c = 2, math.exp(epsilon)
        g = groups_for(domain, ball, m, c)
    elif groups is not None:
        m = int(groups)
        g, c = solve(m, math.exp(epsilon))
    else:
        m = choose_groups(math.exp(epsilon), d, max_groups)
        seen: dict[int, tuple[dict[str, np.ndarray], float]] = {}
        c_guess = math.exp(epsilon)
        for _ in range(8):                           # alternate m <- c and c <- m until m is stable
            seen[m] = solve(m, c_guess)
            c_guess = seen[m][1]
            m_next = choose_groups(c_guess, d, max_groups)
            if m_next == m or m_next in seen:
                break
            m = m_next
        consistent = [k for k, v in seen.items() if choose_groups(v[1], d, max_groups) == k]
        m = consistent[0] if consistent else m
        g, c = seen[m]
    alpha, _ = staircase_weights(g["group_sizes"], c)
    mass = g["group_sizes"] * alpha
    eps = theorem33_epsilon(g["group_sizes"], c) if d > 1 else 0.0
    return StaircasePlan(domain=domain, epsilon_target=epsilon, m=m, c=c, epsilon=eps,
                         thresholds=g["thresholds"], lo=g["lo"], hi=g["hi"], group_sizes=g["group_sizes"],
                         glcp=g["glcp"], alpha=alpha, cum_mass=np.cumsum(mass, axis=1),
                         seconds=time.perf_counter() - start)


_PLAN_CACHE: "OrderedDict[tuple, StaircasePlan]" = OrderedDict()
_PLAN_CACHE_SIZE = 8


def cached_plan(domain: LocationDomain, epsilon: float, groups: int | None = None) -> StaircasePlan:
    """:func:`build_plan`, memoised per (domain, epsilon, m) -- the offline part is computed once."""
    key = (domain.key(), float(epsilon), groups)
    if key in _PLAN_CACHE:
        _PLAN_CACHE.move_to_end(key)
        return _PLAN_CACHE[key]
    plan = build_plan(domain, epsilon, groups)
    _PLAN_CACHE[key] = plan
    while len(_PLAN_CACHE) > _PLAN_CACHE_SIZE:
        _PLAN_CACHE.popitem(last=False)
    return plan


def staircase_channel(plan: StaircasePlan) -> np.ndarray:
    """Dense ``Q[y, x]`` (positions in the sorted domain): alpha_m everywhere plus one step per inner interval."""
    d, m = plan.domain.size, plan.m
    alpha_min = plan.alpha[:, m - 1]
    step = alpha_min * (plan.c - 1.0) / (m - 1)
    diff = np.zeros((d + 1, d))
    cols = np.arange(d)
    for j in range(1, m):
        np.add.at(diff, (plan.lo[:, j], cols), step)
        np.add.at(diff, (plan.hi[:, j], cols), -step)
    return alpha_min[None, :] + np.cumsum(diff[:d], axis=0)
