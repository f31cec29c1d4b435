"""SEM-Geo-I: the Subset Exponential Mechanism under geo-indistinguishability.

Wang et al., "Local Private Ordinal Data Distribution Estimation", INFOCOM'17 (ref. [12]
of dam-disk-area-mechanism.md), compared with DAM in Sec. VII-B/C. Each user reports a
set S of k cells, drawn with

    P(S | x) = exp(-eps' d(x, S) / 2) / Z(x),    d(x, S) = min_{s in S} |x - s|  (cells),

the exponential mechanism with the 1-Lipschitz score -d(x, S): eps'-geo-indistinguishable
(P(S|x) <= e^{eps' |x - x'|} P(S|x')).

Guarantee between real positions (snapping slack). SEM-Geo-I's output space is the cells: a phone
snaps its exact position x to its cell centre c(x) and runs the mechanism above on c(x). The bound then
holds between centres, P(S | x) <= e^{eps' |c(x) - c(x')|} P(S | x'), and between real positions

    |c(x) - c(x')| <= |x - x'| + sqrt(2) g          (g the cell side, sqrt(2) g the cell diagonal):

along each axis snapping moves a coordinate by at most g/2, so |c_i - c'_i| <= |x_i - x'_i| + g, and by
Minkowski's inequality |c - c'| <= |(|x_1 - x'_1| + g, |x_2 - x'_2| + g)| <= |x - x'| + |(g, g)|. The slack
is exact for this construction: two positions either side of a cell corner are arbitrarily close while their
centres are one diagonal apart. So the stated guarantee is P(S | x) <= e^{eps' (|x - x'| + sqrt(2) g)}
P(S | x') (:meth:`SEMGeoI.geo_slack_m`); the distance between centres never exceeds the centres' span
sqrt(2) (d - 1) g, which caps the bound across the region.

Implementation choices (the paper leaves them open or we could not check them):

* Sampling never enumerates subsets: order the cells by distance from x (ties by index);
  the subsets whose nearest member has rank j number C(n-1-j, k-1) and share d(x, S) =
  r_j, so draw j with probability ~ C(n-1-j, k-1) e^{-eps' r_j / 2}, then the other k-1
  members uniformly among the cells ranked after j.
* What the slider is (issue 26). By default (``calibration='raw'``) epsilon IS the Geo-I eps' per km
  (``GEO_I_UNIT_M``; eps' per cell side = epsilon x cell side / 1 km), the parameter of SEM-Geo-I's own
  definition and the unit of planar Laplace: the stated bound e^(eps' (|x - x'| + slack)) then grows with the
  slider, so smaller is more private for every slider value. The DAM paper instead fixes DAM's LDP budget eps
  and solves for the eps' whose local privacy (eq. 15-16) equals DAM's (Sec. VII-B, ``calibration=
  'same-lp-as-dam'``, kept to reproduce its Fig. 9). That eps' is NOT monotone in eps, and cannot be while k
  follows the paper's rule: k = ceil(n / (e^eps + 1)) falls in steps as eps grows; for a fixed k the calibrated
  eps' rises with eps (DAM's LP falls), but a larger k hides the true cell among more members, so it needs a
  larger eps' to reach the same LP (its LP floor ((k - 1) / k) x mean distance is higher, and the feasibility
  cut below puts the target just above that floor, where LP is flat in eps'). Each step down in k therefore
  drops eps' (1 km cells, d = 16: eps = 0.5, 1, 2, 4 give k = 97, 34, 7, 2 and eps' = 5.99, 10.2, 4.78, 2.51
  per km). Neither Brent's bracket nor the Monte Carlo is the cause: with k held fixed, eps' rises with eps
  (d = 16, k = 2: 0.41, 0.63, 0.92, 1.35, 2.51 per km at eps = 1.5, 2, 2.5, 3, 4; k = 1, where LP is exact,
  likewise), and the drops sit exactly at the steps of k. The paper
  compares utility at equal LP and never deploys the calibrated eps'; a deployed tool must let the slider set
  the guarantee, so the slider is eps' and the calibration is an opt-in comparison whose guarantee text says
  the slider is DAM's eps and that eps' does not follow it.
* Subset size k (``subset_rule``): by default the paper's baseline rule, k = ceil(n / (e^eps + 1))
  (:func:`paper_subset_size`), with eps the budget between neighbouring cells: eps' per cell side under
  ``'raw'`` (the paper measures distance in cell sides, Sec. VII-B: "if dis(v, v~) < 1 ..."), DAM's eps under
  ``'same-lp-as-dam'``. The DAM paper does not print k, but Sec. VII-C3 says SEM-Geo-I's output domain grows as
  n^k = O(n^{n / e^eps}) as eps falls, i.e. k ~ n / e^eps; n / (e^eps + 1) is the optimal size of the k-subset
  mechanism (Ye & Barg 2018; Wang et al. 2016) that SEM extends, and what its authors most plausibly
  used. (d = 15: k = 25, 7, 2, 1 at eps = 2.1, 3.5, 5, 7.) k never enters the stated bound (eps' per km plus
  the snapping slack). ``subset_rule="mutual-information"``
  keeps the earlier choice: maximise the MI upper bound log C(n, k) - H(S | X) at eps', as DAM's eq. 9 does for
  b -- which picks k = 1 (a plain exponential mechanism) and handicaps SEM-Geo-I. With
  ``calibration='same-lp-as-dam'`` the paper's k can make equal local privacy impossible (a k-subset hides the
  true cell among k members whatever eps', so LP has a floor above DAM's at small eps); k is then lowered to
  the largest k whose floor is below DAM's LP (``_largest_feasible_k``; reported with each run).
* Estimation: EM/EMS on how often each cell appears in the reports, with the
  membership channel P(v in S | x) / k (a composite likelihood); exact EM over whole
  subsets costs (reports x cells) per iteration.
* Calibration (``calibration='same-lp-as-dam'``, the paper's comparison, opt-in):
  eps' is set so that SEM-Geo-I's local privacy (eq. 15-16) equals DAM's at the given
  epsilon (Brent's method on log eps'); SEM's LP is exact when k = 1 (an n x n
  channel) and otherwise a Monte Carlo estimate (fixed seed, 8 reports per input cell,
  exact posterior). ``calibration='raw'`` (the default) takes epsilon as
  eps' per km, no calibration.
* Grids beyond 32 x 32 are refused: reports hold k cells each and k grows with the grid.
* Aggregate path (``path``, :mod:`ldpviz.mechanisms.collection_paths`): the server reads only how often
  each cell is named (the membership histogram), so :meth:`SubsetTables.aggregate_membership` draws
  that histogram exactly without listing any subset: the users at x split over the nearest member's
  rank as Multinomial(n_x, pi[x, :]); the other k - 1 members of a user whose nearest member has rank j
  are a uniform (k-1)-subset of the ranks after j, which selection sampling (Knuth's Algorithm S)
  draws by scanning the ranks in order and taking rank r with probability (members still needed) /
  (ranks left). Users of one x who still need the same number q of members at rank r are exchangeable,
  so each such group takes rank r as one Bin(g_q, q / (n - r)): O(n x occupied cells x k) draws
  however many users, against O(users x n) random keys on the per-user path.
"""

from __future__ import annotations

import functools
import itertools
import math
from typing import Sequence

import numpy as np
from scipy import optimize
from scipy.special import gammaln, logsumexp

from ldpviz.geo.domain import Binned
from ldpviz.errors import require
from ldpviz.mechanisms.estimation import expectation_maximisation_batch, matrix_maps
from ldpviz.mechanisms.dam.local_privacy import cell_distances, lp_from_channel, lp_from_disk_channel
from ldpviz.mechanisms import register
from ldpviz.mechanisms.base import GEO_I, GEO_I_UNIT, GEO_I_UNIT_M, Estimate, Mechanism, Param, TrialRun
from ldpviz.mechanisms.dam.disk_area import DAM, FAMILY_SPATIAL, POSTPROCESS_PARAM
from ldpviz.wording import length
from ldpviz.mechanisms.fo.oracles import ReportHistogram, report_histogram
from ldpviz.mechanisms.path_cost import AGGREGATE, PER_USER
from ldpviz.mechanisms.collection_paths import TwoPaths, path_param

MAX_SIDE = 32
MAX_REPORTED_CELLS = 100_000_000
LP_SAMPLES_PER_CELL = 8
LP_SEED = 20170501
EPS_PRIME_RANGE = (1e-3, 50.0)
#: Work budget of the Monte Carlo LP calibration, in (samples x cells x k) per LP evaluation: beyond it
#: (e.g. 32 x 32 cells at eps = 0.5, where the paper's rule gives k = 154: ~2.5 minutes) SEM-Geo-I is
#: refused with a clear message, as the paper itself keeps d small at small eps (Sec. VII-C3).
MAX_CALIBRATION_WORK = 200_000_000
#: Calibration tolerance on log eps' (0.1 % in eps'; LP is flat in eps' where eps' is small).
CALIBRATION_XTOL = 1e-3
#: 'auto' cost model (seconds): per-user path per (user x cell) random key (k > 1) or per user (k = 1); aggregate
#: path per (rank x occupied cell x member) draw. Read off both client halves (sample + bincount against
#: aggregate_membership) at d = 8, 16, 32, k = 1 and 6-20, n = 1e3 to 1e6, skewed counts (min of 2), on the
#: development machine, 2026-11-23: 1-4e-8 s per key, 0.7-2.5e-7 s per user, 0.3-5e-7 s per draw; with these
#: constants the model chose the faster path in 14 of those 16 configurations (both misses at 1,000 users, where
#: the two paths differ by under 1 ms).
PER_USER_SECONDS_PER_KEY = 2.5e-8
PER_USER_SECONDS_PER_USER = 1.5e-7
AGGREGATE_SECONDS_PER_DRAW = 1.0e-7


def _log_binom(a: np.ndarray, b: int) -> np.ndarray:
    a = np.asarray(a, float)
    out = gammaln(a + 1) - gammaln(b + 1) - gammaln(np.maximum(a - b, 0) + 1)
    return np.where(a >= b, out, -np.inf)


@functools.lru_cache(maxsize=4)
def _distance_order(side: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Cell distances, cells ordered by distance from each x (ties by index), sorted distances."""
    dist = cell_distances(side)
    order = np.argsort(dist, axis=1, kind="stable")                        # [x, rank] -> cell
    return dist, order, np.take_along_axis(dist, order, axis=1)


class SubsetTables:
    """Per-input tables for SEM with n cells, subset size k and eps' (cells)."""

    def __init__(self, side: int, eps_prime: float, k: int) -> None:
        n = side * side
        self.side, self.n, self.k, self.eps_prime = side, n, k, eps_prime
        self.dist, self.order, self.sorted_dist = _distance_order(side)
        ranks = np.arange(n)
        self.log_count = _log_binom(n - 1 - ranks, k - 1)                  # subsets with nearest rank j
        lw = self.log_count[None, :] - eps_prime * self.sorted_dist / 2
        self.log_z = logsumexp(lw, axis=1)                                 # log Z(x)
        self.nearest = np.exp(lw - self.log_z[:, None])                    # pi[x, j]
        self.cdf = np.cumsum(self.nearest, axis=1)
        self._member: np.ndarray | None = None

    @property
    def member(self) -> np.ndarray:
        """P(v in S | x) as an (n, n) array [v, x] (columns sum to k)."""
        if self._member is None:
            self._member = self._membership()
        return self._member

    def _membership(self) -> np.ndarray:
        n, k = self.n, self.k
        ranks = np.arange(n)
        # membership P(v in S | x): pi_rho + sum_{j<rho} pi_j (k-1)/(n-1-j)
        tail = np.where(n - 1 - ranks > 0, (k - 1) / np.maximum(n - 1 - ranks, 1), 0.0)
        before = np.cumsum(self.nearest * tail[None, :], axis=1) - self.nearest * tail[None, :]
        member_by_rank = self.nearest + before
        member = np.zeros((n, n))                                          # [v, x]
        np.put_along_axis(member.T, self.order, member_by_rank, axis=1)
        return member

    def entropy(self) -> np.ndarray:
        """H(S | X = x) for every x (nats)."""
        return (self.nearest * self.eps_prime * self.sorted_dist / 2).sum(axis=1) + self.log_z

    def log_prob(self, subsets: np.ndarray) -> np.ndarray:
        """log P(S | x) for every report S (rows) and input x (columns)."""
        d_min = self.dist[:, subsets].min(axis=2).T                         # (reports, n)
        return -self.eps_prime * d_min / 2 - self.log_z[None, :]

    def sample(self, cells: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        n, k = self.n, self.k
        cells = np.asarray(cells, dtype=np.int64)
        out = np.empty((len(cells), k), dtype=np.int16 if n < 32_000 else np.int32)
        order = np.argsort(cells, kind="stable")
        bounds = np.searchsorted(cells[order], np.arange(n + 1))
        chunk = max(1, 4_000_000 // n)
        for x in range(n):
            idx = order[bounds[x]:bounds[x + 1]]
            for s in range(0, len(idx), chunk):
                part = idx[s:s + chunk]
                m = len(part)
                j = np.minimum(np.searchsorted(self.cdf[x], rng.random(m) * self.cdf[x, -1], side="right"), n - k)
                chosen = [j[:, None]]
                if k > 1:
                    keys = rng.random((m, n))
                    keys[np.arange(n)[None, :] <= j[:, None]] = 2.0
                    chosen.append(np.argpartition(keys, k - 2, axis=1)[:, :k - 1])
                ranks = np.concatenate(chosen, axis=1)
                out[part] = self.order[x][ranks]
        # A report is a *set*: the draw puts the member nearest to x first, which would tell the
        # server more than S does (the audit certified a loss of 4.7 per cell at eps' = 1.05).
        out.sort(axis=1)
        return out

    def aggregate_membership(self, counts: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """How often each cell is named by users with ``counts`` per true cell, drawn exactly (no subsets listed).

        Same distribution as :meth:`sample` followed by a bincount: the nearest member's rank is
        Multinomial(n_x, pi[x]) over the users at x, and the k - 1 others are a uniform subset of
        the later ranks, drawn for all users at once by selection sampling over the ranks (see the
        module docstring).
        """
        n, k = self.n, self.k
        counts = np.asarray(counts, dtype=np.int64).reshape(-1)
        require(counts.size == n, f"need one count per cell ({n}), got {counts.size}")
        xs = np.flatnonzero(counts)
        if not len(xs):
            return np.zeros(n, dtype=np.int64)
        p = self.nearest[xs]
        nearest = rng.multinomial(counts[xs], p / p.sum(axis=1, keepdims=True))      # (cells, rank)
        named = nearest.copy()                                                     # times rank r is named
        if k > 1:
            need = np.zeros((len(xs), k), dtype=np.int64)                          # users still needing q
            q = np.arange(1, k)
            for r in range(n):
                waiting = need[:, 1:]
                if r and waiting.any():
                    take = rng.binomial(waiting, np.minimum(q / (n - r), 1.0))
                    named[:, r] += take.sum(axis=1)
                    need[:, 1:] -= take
                    need[:, :-1] += take
                need[:, k - 1] += nearest[:, r]
        return np.bincount(self.order[xs].ravel(), weights=named.ravel(), minlength=n).astype(np.int64)


def mean_subset_entropies(side: int, eps_prime: float, ks: np.ndarray) -> np.ndarray:
    """mean_x H(S | X = x) (nats) for every subset size in ``ks``, all at once.

    With ``E[x, j] = exp(-eps' r_j(x) / 2)`` (cells ranked by distance from x) and
    ``W[j, k] = C(n-1-j, k-1) / C(n-1, k-1)``, ``Z_k(x) = C(n-1, k-1) (E W)[x, k]`` and
    ``H_k(x) = log Z_k(x) + (E (eps' r / 2) W)[x, k] / (E W)[x, k]``: two matrix
    products instead of one ``(n, n)`` log-sum-exp per k. Both ratios are >= 1
    terms of the nearest rank (r_0 = 0, W[0, k] = 1), so nothing overflows and
    underflowing terms are negligible. Equals ``SubsetTables(...).entropy().mean()``.
    """
    n = side * side
    ks = np.asarray(ks, dtype=int)
    _, _, sorted_dist = _distance_order(side)
    half = eps_prime * sorted_dist / 2
    E = np.exp(-half)
    ranks = np.arange(n)
    log_c = np.array([float(_log_binom(np.array(n - 1), int(k) - 1)) for k in ks])      # log C(n-1, k-1)
    W = np.exp(np.stack([_log_binom(n - 1 - ranks, int(k) - 1) for k in ks], axis=1) - log_c[None, :])
    z = E @ W                                                              # (n, K), each >= 1
    energy = (E * half) @ W
    log_z = np.log(z) + log_c[None, :]
    return (log_z + energy / z).mean(axis=0)


def choose_subset_size(side: int, eps_prime: float) -> int:
    """k maximising log C(n, k) - mean_x H(S | x) (the MI upper bound, as DAM's eq. 9)."""
    n = side * side
    if n <= 2:
        return 1
    candidates = np.unique(np.clip(np.round(np.geomspace(1, n / 2, 40)).astype(int), 1, n - 1))
    bounds = np.array([float(_log_binom(np.array(n), int(k))) for k in candidates]) \
        - mean_subset_entropies(side, eps_prime, candidates)
    best, best_k = -np.inf, 1
    for k, bound in zip(candidates, bounds):   # ties (within 1e-9 nats, arithmetic noise) go to the smaller k
        if bound > best + 1e-9:
            best, best_k = bound, int(k)
    return best_k


def paper_subset_size(n_cells: int, epsilon: float) -> int:
    """k = ceil(n / (e^eps + 1)), clipped to [1, n - 1]: the k-subset mechanism's optimal size at
    the comparison's budget eps (DAM paper Sec. VII-C3: SEM-Geo-I's output domain n^k = O(n^{n/e^eps}))."""
    if n_cells <= 2 or epsilon >= math.log(n_cells):     # n / (e^eps + 1) < 1 (and e^eps may overflow)
        return 1
    return int(min(max(1, math.ceil(n_cells / (math.exp(epsilon) + 1) - 1e-9)), n_cells - 1))


def sem_lp_cells(tables: SubsetTables) -> float:
    """LP of eq. (15)-(16) in cells: exact when k = 1 (the channel is then n x n), Monte Carlo otherwise."""
    if tables.k == 1:
        cells = np.arange(tables.n)
        return lp_from_channel(np.exp(tables.log_prob(cells[:, None])), tables.side)
    return sem_local_privacy_cells(tables)


def sem_local_privacy_cells(tables: SubsetTables, samples_per_cell: int = LP_SAMPLES_PER_CELL,
                            seed: int = LP_SEED) -> float:
    """Monte Carlo eq. (15)-(16): E |x - x_hat| with x uniform, S ~ P(.|x), x_hat ~ posterior."""
    rng = np.random.default_rng(seed)
    n = tables.n
    cells = np.repeat(np.arange(n), samples_per_cell)
    total = 0.0
    step = max(1, 2_000_000 // max(1, n * tables.k))
    for s in range(0, len(cells), step):
        x = cells[s:s + step]
        subsets = tables.sample(x, rng).astype(np.int64)
        lp = tables.log_prob(subsets)
        post = np.exp(lp - logsumexp(lp, axis=1, keepdims=True))
        total += float((post * tables.dist[x]).sum())
    return total / len(cells)


@register
class SEMGeoI(TwoPaths, Mechanism):
    """Subset Exponential Mechanism under geo-indistinguishability (INFOCOM'17), LP-calibrated."""

    name = "sem-geoi"
    label = "SEM-Geo-I (subset exponential mechanism)"
    family = FAMILY_SPATIAL
    privacy_model = GEO_I
    reference = "Wang et al. INFOCOM'17 (ref. [12]); dam-disk-area-mechanism.md Sec. VII-B, eq. (15)-(16)"
    summary = ("Each phone sends a set of cells, likelier the closer the set comes to its cell's centre (so two "
               "people either side of a cell edge count as a cell apart); the server counts how often each cell is "
               "named.")
    params = (
        Param("calibration", str, "raw",
              "what epsilon is. 'raw' (default): epsilon is the Geo-I epsilon' per km itself (the guarantee: "
              "smaller is more private); 'same-lp-as-dam': the DAM paper's comparison -- epsilon is DAM's LDP "
              "level and epsilon' is chosen so an attacker's expected error (local privacy) equals DAM's; that "
              "epsilon' does not fall steadily with epsilon (it jumps as the subset size k changes), so use it to "
              "compare with DAM, not to set a guarantee", choices=("raw", "same-lp-as-dam")),
        Param("subset_size", int, None, "cells per report k; default: from subset_rule", minimum=1),
        Param("subset_rule", str, "paper",
              "how k is chosen when subset_size is not given: 'paper' = ceil(n / (e^eps + 1)) with eps the "
              "epsilon' per cell side ('raw') or DAM's epsilon ('same-lp-as-dam') "
              "(the k-subset mechanism's optimal size, as the DAM paper's baseline), 'mutual-information' = "
              "maximise the mutual-information bound at the calibrated eps'",
              choices=("paper", "mutual-information")),
        POSTPROCESS_PARAM,
        path_param("how often each cell is named (the server's statistic)",
                   "users x cells random keys against cells x occupied cells x k binomial draws"),
    )
    has_channel = True

    def setup(self) -> None:
        d = self.grid.side
        require(d <= MAX_SIDE, f"SEM-Geo-I reports sets of cells and is too slow beyond a {MAX_SIDE} x {MAX_SIDE} "
                               f"grid (got d = {d}); choose a smaller grid side")
        n = d * d
        require(self.subset_size is None or self.subset_size < max(n, 2),
                f"subset_size must be smaller than the number of cells ({n})")
        if self.calibration == "raw":
            self.eps_prime = self.epsilon * self.grid.cell_m / GEO_I_UNIT_M
            self.k_paper = paper_subset_size(n, self.eps_prime)
            self.k_fixed = self.subset_size or (self.k_paper if self.subset_rule == "paper" else None)
            self.dam_lp_cells = None
        else:
            self.k_paper = paper_subset_size(n, self.epsilon)
            self.k_fixed = self.subset_size or (self.k_paper if self.subset_rule == "paper" else None)
            self.dam_lp_cells = lp_from_disk_channel(DAM(self.grid, self.epsilon).chan)
            if self.subset_size is None and self.subset_rule == "paper":
                self.k_fixed = self._largest_feasible_k(self.k_paper, self.dam_lp_cells)
            k = self.k_fixed or 1
            require(k == 1 or LP_SAMPLES_PER_CELL * n * n * k <= MAX_CALIBRATION_WORK,
                    f"SEM-Geo-I with k = {k} cells per report on {d} x {d} cells would take minutes to calibrate "
                    f"(the paper keeps SEM-Geo-I to small grids at small epsilon); choose a smaller grid, a larger "
                    f"epsilon, a smaller subset_size, or subset_rule='mutual-information'")
            self.eps_prime = self._calibrate(self.dam_lp_cells)
        self.tables = self._tables(self.eps_prime)
        self.k = self.tables.k

    def resolved_defaults(self) -> dict[str, int]:
        """The subset size k in use (from ``subset_rule`` when ``subset_size`` is not given)."""
        return {"subset_size": int(self.k)}

    def _tables(self, eps_prime: float) -> SubsetTables:
        k = self.k_fixed or choose_subset_size(self.grid.side, eps_prime)
        return SubsetTables(self.grid.side, eps_prime,
                            max(1, min(k, self.grid.n_cells - 1)) if self.grid.n_cells > 1 else 1)

    def _largest_feasible_k(self, k: int, target: float) -> int:
        """The largest subset size <= k whose local privacy can still be brought down to ``target``.

        A k-subset report hides the true cell among its k members whatever eps' is: as eps' grows
        the report is x plus k - 1 cells uniform among the others, the posterior is uniform on the
        k members, and LP falls to its floor ((k - 1) / k) x (mean distance between two distinct
        cells), which grows with k. Where the paper's k has a floor above DAM's LP (d = 15: k = 7
        at eps = 3.5, floor 6.7 cells vs DAM's 5.2), equal local privacy -- the premise of the
        paper's comparison -- is impossible, so k is lowered to the largest k whose floor is below
        it (closed form), then checked once with the Monte Carlo LP at the largest eps' the
        calibration searches (one step down if that misses); ``k_paper`` keeps the paper's value.
        """
        n = self.grid.n_cells
        if k <= 1 or n <= 2:
            return k
        dist = cell_distances(self.grid.side)
        mean_other = float(dist.sum()) / (n * (n - 1))
        share = target / mean_other                    # floor(k) <= target  <=>  (k - 1) / k <= share
        feasible = k if share >= 1 else int(math.floor(1.0 / (1.0 - share) + 1e-9))
        feasible = max(1, min(k, feasible))
        while feasible > 1 and sem_lp_cells(SubsetTables(self.grid.side, EPS_PRIME_RANGE[1], feasible)) > target:
            feasible -= 1
        return feasible

    def _calibrate(self, target: float) -> float:
        """Solve LP(eps') = target for log eps' by Brent's method (LP falls as eps' grows).

        LP is exact while the chosen subset size is 1 (a smooth function of eps':
        Brent needs ~10 evaluations where bisection needed 18) and a fixed-seed
        Monte Carlo estimate otherwise (a step function: Brent then falls back to
        bisection steps).
        """
        lo, hi = math.log(EPS_PRIME_RANGE[0]), math.log(EPS_PRIME_RANGE[1])
        if self.grid.n_cells == 1:
            return self.epsilon

        @functools.lru_cache(maxsize=None)   # brentq evaluates the bracket ends again
        def gap(log_eps: float) -> float:
            return sem_lp_cells(self._tables(math.exp(log_eps))) - target

        gap_hi = gap(hi)
        if gap_hi >= 0:
            return math.exp(hi)
        gap_lo = gap(lo)
        if gap_lo <= 0:
            return math.exp(lo)
        return math.exp(optimize.brentq(gap, lo, hi, xtol=CALIBRATION_XTOL, rtol=1e-12))

    def aggregate(self, users: Binned, rng: np.random.Generator) -> ReportHistogram:
        """The membership histogram of all users' reports, drawn exactly (:meth:`SubsetTables.aggregate_membership`)."""
        counts = np.bincount(np.asarray(users.cells, dtype=np.int64), minlength=self.grid.n_cells)
        return ReportHistogram(self.tables.aggregate_membership(counts, rng), int(counts.sum()), AGGREGATE)

    def choose(self, users: Binned) -> str:
        n_users, cells = len(users.cells), self.grid.n_cells
        if n_users * self.k > MAX_REPORTED_CELLS:
            return AGGREGATE          # the per-user path refuses this many reported cells
        occupied = len(np.unique(users.cells))
        per_user = n_users * (PER_USER_SECONDS_PER_KEY * cells if self.k > 1 else PER_USER_SECONDS_PER_USER)
        aggregate = AGGREGATE_SECONDS_PER_DRAW * cells * occupied * self.k
        return AGGREGATE if aggregate < per_user else PER_USER

    def per_user(self, users: Binned, rng: np.random.Generator) -> np.ndarray:
        """(n_users, k) array of reported cells."""
        require(len(users.cells) * self.k <= MAX_REPORTED_CELLS,
                f"SEM-Geo-I would send {len(users.cells) * self.k:,} cells in total (k = {self.k} per user); use "
                f"fewer users or a smaller grid")
        return self.tables.sample(users.cells, rng)

    def statistic(self, reports: np.ndarray | ReportHistogram) -> ReportHistogram:
        """How often each cell was reported (k per user; additive over groups of users)."""
        if isinstance(reports, ReportHistogram):
            return report_histogram(reports, self.grid.n_cells)
        return report_histogram(np.asarray(reports).reshape(-1, self.k), self.grid.n_cells)

    def estimate(self, reports: np.ndarray | ReportHistogram) -> Estimate:
        return self._estimates([self.statistic(reports)])[0]

    def run_trials(self, users: Binned, rngs: Sequence[np.random.Generator]) -> TrialRun:
        """All trials: each trial's reports drawn with its own generator (as :meth:`collect` draws them), then
        one EM on the ``(T, d, d)`` stack of membership histograms (stacked products with the membership
        matrix, each trial with its own held-out split and stopping); a one-trial :meth:`estimate` runs the
        same code on a stack of one, so trial t equals a one-trial run with ``rngs[t]``."""
        return self.stacked_trials(users, rngs, self._estimates)

    def _estimates(self, hists: Sequence[ReportHistogram]) -> list[Estimate]:
        d, k = self.grid.side, self.k
        counts = np.stack([np.asarray(h.counts, dtype=float) for h in hists])
        forward, adjoint = matrix_maps(self.tables.member / k, (d, d))
        densities, infos = expectation_maximisation_batch(counts, forward, adjoint, (d, d),     # k cells a report
                                                          smoothing=self.postprocess == "ems", one_report_each=k == 1)
        return [Estimate(density, raw=c.reshape(d, d), info={
            "reports": int(hist.n), "subset_size": k, "subset_size_paper": self.k_paper,
            "eps_prime_per_cell": self.eps_prime,
            "eps_prime_per_m": self.eps_prime / self.grid.cell_m, "calibration": self.calibration,
            "postprocess": self.postprocess, **info, **self.path_info(hist.path)})
            for c, hist, density, info in zip(counts, hists, densities, infos)]

    def local_privacy_cells(self) -> float:
        """LP of eq. (15)-(16) in cells (exact on tiny grids, Monte Carlo otherwise)."""
        if math.comb(self.grid.n_cells, self.k) <= 5000:
            return lp_from_channel(self.channel(), self.grid.side)
        return sem_lp_cells(self.tables)

    def channel(self) -> np.ndarray:
        """P[S, x] over all k-subsets S (lexicographic order) -- only for tiny grids."""
        n, k = self.grid.n_cells, self.k
        require(math.comb(n, k) <= 50_000, f"the explicit SEM-Geo-I channel has C({n}, {k}) rows; "
                                           f"it is built only when that is at most 50,000")
        subsets = np.array(list(itertools.combinations(range(n), k)), dtype=np.int64)
        return np.exp(self.tables.log_prob(subsets))

    @property
    def epsilon_per_cell(self) -> float:
        """eps' per cell side: epsilon per km converted ('raw', the default), or set by the calibration."""
        return self.eps_prime

    @property
    def eps_prime_per_km(self) -> float:
        """eps' per km, the Geo-I epsilon the guarantee states: the slider itself under 'raw' (the default)."""
        return float(self.eps_prime * GEO_I_UNIT_M / self.grid.cell_m)

    def claimed_epsilon(self) -> float:
        """eps' per cell side: the geo-indistinguishability the channel is built with (what is audited,
        with the snapping slack :meth:`geo_slack_m` added to every distance between real positions)."""
        return float(self.eps_prime)

    def geo_slack_m(self) -> float:
        """The cell diagonal sqrt(2) g in metres: positions are snapped to cell centres (module docstring)."""
        return math.sqrt(2.0) * self.grid.cell_m

    def guarantee(self) -> str:
        per_km = self.eps_prime_per_km
        slack = self.geo_slack_m()
        slack_text = length(slack)
        text = (f"epsilon'-geo-indistinguishability with epsilon' = {per_km:.3g} per {GEO_I_UNIT} "
                f"({self.eps_prime:.3g} per cell side of {length(self.grid.cell_m)}) between cell centres; between "
                f"real positions x, x' P(report | x) <= e^(epsilon' x (|x - x'| + {slack_text})) P(report | x'), "
                f"{slack_text} being the snapping slack (the cell diagonal: each position is snapped to its cell "
                f"centre)")
        if self.calibration == "raw":
            text += f"; epsilon' is the epsilon you set ({self.epsilon:g} per {GEO_I_UNIT}): smaller is more private"
        else:
            text += (f", calibrated to the local privacy of DAM at epsilon = {self.epsilon:g}: the epsilon you set is "
                     f"DAM's LDP level, not SEM-Geo-I's guarantee, and epsilon' does not fall steadily with it (it "
                     f"jumps as the subset size changes); compare with DAM, do not deploy on it")
        return text
