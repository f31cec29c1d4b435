"""SRR: Staircase Randomized Response over hierarchically encoded locations (L-SRR).

Paper: l-srr-staircase-randomized-response.md (Wang et al., L-SRR), Sec. 3.1-3.5,
Algorithms 1-2, Lemma 3.4, Theorem 3.3 and Appendix B.

The location domain ``D`` (Sec. 3.2) is a sorted array of hierarchical codes:

* ``domain="grid"`` (the default): every cell of the evaluation grid, encoded
  by the quadtree interleaving of ``(row, col)`` -- a public, data-independent
  domain, as the paper assumes (Sec. 3.2, "Offline Computation": the server
  releases D before collection). Grids with more than ``MAX_GRID_DOMAIN_SIZE``
  (4096) cells use square blocks of ``k x k`` cells instead (the smallest ``k`` that
  fits), still fixed by the grid alone.
* ``domain="occupied"`` (the paper's experimental setting, Sec. 6.1: "only the
  reported locations in this area are considered as the domain"): the distinct
  Bing quadkey tiles at level ``h`` that hold at least one user, built from the
  users' *true* locations inside :meth:`SRR.run`. This treats the set of
  occupied tiles as public knowledge, as the paper does; if that set is
  private, the protocol is NOT eps-LDP (a lone user's tile is revealed by its
  membership in D; the whole-protocol audit certifies a loss of ~4 at eps = 1).
  Opt-in only, and then SRR has no separate client half (``has_client`` is
  False on that instance): the domain is built from the users inside ``perturb``.
  With the public grid domain ``perturb`` is the phone's half and ``channel()``
  the exact channel over cells (grids of at most 4,096 cells).

For every input ``x`` the other locations are split into ``m`` groups by their
LCP with ``x`` (Def. 3.2): ``G_1(x) = {y : LCP >= t_1}``, ``G_j(x) =
{t_j <= LCP < t_(j-1)}``, ``G_m(x)`` the rest. Codes that share a prefix are
contiguous once sorted, so each ``{y : LCP >= t}`` is an interval of the sorted
domain; a plan stores ``m + 1`` nested intervals per input, never a d x d table.

Open points and the choices made (all documented in docs/srr-method.md):

* Group thresholds "maximise the sum of LCPs" (Sec. 3.2): we maximise
  ``sum_j |G_j(x)| * t_j`` -- every output credited with its group's GLCP -- by
  an exact dynamic programme over thresholds (the paper's exhaustive search for
  small m, done in O(m B^2) per input, so no heuristic is ever needed).
* Eq. (4) as printed omits the factor (m - 1) of the numerator (it would not sum
  to 1 for m > 2); we use ``alpha_min(x) = (m-1) / ((m-1) d c - (c-1) sum_j (j-1)|G_j(x)|)``
  (the form used in the proof of Lemma 3.4), steps ``Delta = alpha_min (c-1)/(m-1)``.
* Theorem 3.3 prints the inner sums up to ``m - 1``; its proof (App. B.1) is the
  ratio ``alpha_max(x) / alpha_min(x')``, which with the normalisation above sums
  to ``m``. We use that exact ratio: ``eps = log(c * max_x Den(x) / min_x Den(x))``.
* m from Lemma 3.4, ``m* = 2 (c d - e^(1 + log c)) / ((c - 1) d)``, "rounded to its
  floor or ceiling": of the two we keep the one with the smaller relaxed mutual
  information bound (only values where the relaxed alpha_min stays positive are
  admissible), and at least 2. m depends on c and c on m, so we alternate: m
  from c, then the largest c (binary search) whose Theorem 3.3 bound is <= eps,
  until m is stable.
* Estimation (Algorithm 2): ``C_x`` = columns with +1 in row ``i + 1`` of the
  Sylvester Hadamard matrix H_K, K = 2^ceil(log2(d + 1)), restricted to the d
  domain columns; the d equations ``p(C_x) = sum_x' p(x') q(C_x | x')`` are
  solved by LU (scipy.linalg.lu_factor, factorised once per plan). The solution
  is unbiased and may be negative; it is projected onto the simplex with
  Norm-Sub (Euclidean projection; ``projection="clip"`` as an option).
* ``estimator="mle"``: EM for the maximum-likelihood distribution under the
  channel (the Sec. 6.5 / Fig. 11 ablation "SRR + MLE").

Aggregate path (``path``, :mod:`ldpviz.mechanisms.collection_paths`): the server reads only the histogram
of reported positions. The staircase channel is alpha_m everywhere plus one step (alpha_m (c - 1) /
(m - 1)) on each inner interval (:func:`staircase_channel`), i.e. a mixture of uniform draws: over the
whole domain with weight alpha_m |D|, over inner interval j with weight step x |interval j|. So the
users at x split over those components as one multinomial, and every component is uniform on a
contiguous range of sorted positions, whose summed draws :func:`ldpviz.mechanisms.srr.range_draws.uniform_range_histogram`
returns exactly in O(ranges x log |D| + |D|) binomials, independent of n (:func:`aggregate_histogram`).
"""

from __future__ import annotations

import hashlib
import math
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import scipy.linalg

from ldpviz.geo import quadkey
from ldpviz.geo.domain import Binned, Grid
from ldpviz.errors import LdpvizInputError, require
from ldpviz.mechanisms.estimation import expectation_maximisation, to_distribution
from ldpviz.mechanisms import register
from ldpviz.mechanisms.base import LDP, Estimate, Mechanism, Param
from ldpviz.mechanisms.path_cost import AGGREGATE, PER_USER
from ldpviz.mechanisms.collection_paths import TwoPaths, path_param
from ldpviz.geo.partition import Partition, rect_cell_shares
from ldpviz.mechanisms.srr.range_draws import uniform_range_histogram

FAMILY_SRR = "Location LDP (L-SRR paper)"
#: Largest domain SRR accepts: its estimator solves a dense d x d system.
MAX_DOMAIN_SIZE = 6000
#: Largest public grid domain (64 x 64 cells): beyond it, k x k blocks of cells. Lower than MAX_DOMAIN_SIZE
#: because SRR's estimator falls back to an O(D^3) SVD at small epsilon (~20 s at D = 4096, minutes at 6000).
MAX_GRID_DOMAIN_SIZE = 4096
#: Finest quadkey level considered (4.7 m tiles, the paper's h = 23).
MAX_LEVEL = 23


# ---------------------------------------------------------------------------
# Location domain
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class LocationDomain:
    """A public, sorted set of hierarchical location codes.

    ``codes`` are ``n_bits``-bit integers (sorted, distinct); ``rects`` are
    the locations' rectangles in unit coordinates of the region (clipped to
    it); ``cells`` (grid domain only) maps each location to its flat grid cell,
    or with ``block > 1`` to its flat index among the ``k x k`` blocks of cells.
    """

    codes: np.ndarray
    n_bits: int
    rects: np.ndarray
    kind: str
    level: int
    cells: np.ndarray | None = None
    block: int = 1

    @property
    def size(self) -> int:
        return int(len(self.codes))

    def key(self) -> str:
        digest = hashlib.sha1(self.codes.tobytes()).hexdigest()
        return f"{self.kind}:{self.n_bits}:{self.block}:{digest}"

    def index_of(self, codes: np.ndarray) -> np.ndarray:
        """Position in the domain of each code (all must be members)."""
        pos = np.searchsorted(self.codes, codes)
        if len(codes) and (pos.max() >= self.size or np.any(self.codes[np.minimum(pos, self.size - 1)] != codes)):
            raise ValueError("some locations are not in the domain")
        return pos.astype(np.int64)


def default_level(grid: Grid) -> int:
    """Coarsest quadkey level whose tiles are no larger than one evaluation cell (at the region centre)."""
    for level in range(1, MAX_LEVEL + 1):
        if quadkey.tile_side_m(grid.region.center_lat, level) <= grid.cell_m:
            return level
    return MAX_LEVEL


def user_codes(grid: Grid, unit: np.ndarray, level: int) -> np.ndarray:
    """Quadkey codes at ``level`` of users given in unit coordinates of the grid's region."""
    lon, lat = grid.region.unit_to_lonlat(np.asarray(unit, dtype=float).reshape(-1, 2))
    return quadkey.lonlat_to_code(lon, lat, level)


def occupied_domain(grid: Grid, unit: np.ndarray, level: int) -> LocationDomain:
    """The distinct level-``level`` tiles holding at least one user (Sec. 6.1)."""
    codes = np.unique(user_codes(grid, unit, level))
    tx, ty = quadkey.deinterleave(codes)
    bounds = quadkey.tile_bounds_lonlat(tx, ty, level)
    sw = grid.region.to_unit(bounds[:, 0], bounds[:, 1])
    ne = grid.region.to_unit(bounds[:, 2], bounds[:, 3])
    rects = np.clip(np.column_stack([sw, ne]), 0.0, 1.0)
    return LocationDomain(codes=codes, n_bits=2 * level, rects=rects, kind="occupied", level=level)


def grid_block(grid: Grid) -> int:
    """Cells per block side of the public grid domain: 1, or the smallest k with ceil(d/k)^2 <= MAX_GRID_DOMAIN_SIZE."""
    k = 1
    while math.ceil(grid.side / k) ** 2 > MAX_GRID_DOMAIN_SIZE:
        k += 1
    return k


def grid_domain(grid: Grid) -> LocationDomain:
    """Every cell of the evaluation grid (or every k x k block, see :func:`grid_block`), quadtree-encoded.

    Depends on the grid alone, never on the users: a public, data-independent domain.
    """
    block = grid_block(grid)
    d = grid.side
    side = math.ceil(d / block)
    levels = max(1, math.ceil(math.log2(side))) if side > 1 else 1
    rows, cols = np.divmod(np.arange(side * side, dtype=np.int64), side)
    codes = quadkey.interleave(cols, rows)
    order = np.argsort(codes)
    cells = np.arange(side * side, dtype=np.int64)[order]
    r, c = rows[order], cols[order]
    rects = np.column_stack([c * block, r * block, np.minimum((c + 1) * block, d),
                             np.minimum((r + 1) * block, d)]) / d
    return LocationDomain(codes=codes[order], n_bits=2 * levels, rects=rects, kind="grid", level=levels, cells=cells,
                          block=block)


def build_location_domain(grid: Grid, users: Binned, kind: str, level: int | None) -> LocationDomain:
    """Occupied tiles at ``level`` (default :func:`default_level`, coarsened to fit) or the grid's cells."""
    if kind == "grid":
        return grid_domain(grid)
    require(len(users.cells) > 0, "this mechanism needs at least one user inside the region")
    if level is not None:
        dom = occupied_domain(grid, users.unit, level)
        require(dom.size <= MAX_DOMAIN_SIZE,
                f"at quadkey level {level} the users occupy {dom.size} tiles; at most {MAX_DOMAIN_SIZE} are "
                f"supported. Choose a coarser level (smaller number).")
        return dom
    level = default_level(grid)
    dom = occupied_domain(grid, users.unit, level)
    while dom.size > MAX_DOMAIN_SIZE and level > 1:
        level -= 1
        dom = occupied_domain(grid, users.unit, level)
    return dom


#: Help text of the ``domain`` parameter shared by SRR and its Sec. 6.2 baselines.
DOMAIN_HELP = ("location domain: 'grid' (default) = every evaluation-grid cell (k x k blocks of cells beyond "
               f"{MAX_GRID_DOMAIN_SIZE} cells), public and independent of the data; 'occupied' = the quadkey tiles "
               "holding users (the L-SRR paper's experiments). 'occupied' treats the set of occupied tiles as public "
               "knowledge, as the paper does: it is NOT epsilon-LDP if that set is private (a lone user's tile "
               "shows in the domain)")
LEVEL_HELP = ("quadkey level h of the tiles (domain='occupied' only); default: the coarsest level whose tiles are "
              f"no larger than a grid cell, made coarser until the domain has at most {MAX_DOMAIN_SIZE} tiles")


def domain_param() -> Param:
    """The ``domain`` parameter: public grid by default, the paper's occupied tiles as an explicit opt-in."""
    return Param("domain", str, "grid", DOMAIN_HELP, choices=("grid", "occupied"))


def level_param() -> Param:
    return Param("level", int, None, LEVEL_HELP, minimum=1, maximum=MAX_LEVEL)


def check_domain_params(domain: str, level: int | None) -> None:
    """``level`` only shapes the occupied domain: refuse it with the grid domain rather than ignore it."""
    require(level is None or domain == "occupied",
            f"the quadkey level (level={level}) applies only to domain='occupied'; the default public grid "
            "domain uses the grid's own cells. Remove level or set domain='occupied'.")


def domain_guarantee(epsilon: float, domain: str) -> str:
    """The guarantee in words for a mechanism on the given location domain."""
    if domain == "occupied":
        return (f"epsilon = {epsilon:g} LDP for each report GIVEN a public domain: here the domain is the set of "
                "tiles holding users, built from their true locations, and treated as public knowledge (as in "
                "the L-SRR paper's experiments). If which tiles are occupied is itself private, this is NOT "
                "epsilon-LDP: a user alone in a tile is revealed by the domain. Use domain='grid' for a "
                "data-independent domain.")
    return (f"epsilon-LDP with epsilon = {epsilon:g} over a public, data-independent domain (every grid cell "
            "or block of cells)")


class LocationDomainMechanism(Mechanism):
    """Base of the mechanisms on the L-SRR location domain (srr, olh-h, pldp and the tile oracles).

    With the default public grid domain each is an ordinary two-halved protocol:
    ``perturb`` is the phone (it needs only the domain, which the grid alone fixes)
    and ``estimate`` the server. With ``domain="occupied"`` the domain is built
    from the users' true locations inside ``perturb``, so such an instance has no
    separate client half and no channel over the grid's cells (``has_client`` and
    ``has_channel`` are False on it; ``run`` works as before). ``domain`` and
    ``level`` are checked together and the guarantee names the domain's status.
    """

    has_client = True   # the default public domain; instances with domain="occupied" set it False

    def setup(self) -> None:
        check_domain_params(self.domain, self.level)
        if self.domain == "occupied":
            self.has_client = False
            self.has_channel = False
            self.attack_uses_crowd = True   # the attacker rebuilds the occupied domain from a crowd
        elif grid_block(self.grid) > 1:
            self.has_channel = False   # a location is a k x k block: no channel over single cells

    def guarantee(self) -> str:
        return domain_guarantee(self.epsilon, self.domain)

    def build_domain(self, users: Binned) -> LocationDomain:
        """The location domain: the public grid (users unused) or, on request, the occupied tiles."""
        return build_location_domain(self.grid, users, self.domain, self.level)

    def positions(self, domain: LocationDomain, users: Binned) -> np.ndarray:
        """Each user's position in the sorted domain."""
        return domain_positions(self.grid, domain, users)

    def attack_domain(self, people: Binned, crowd: Binned) -> LocationDomain:
        """The domain of a collection holding ``crowd`` and ``people`` (for the Monte Carlo attacker): the public
        grid domain, or with ``domain="occupied"`` the tiles they occupy."""
        if self.domain != "occupied":
            return self.build_domain(people)
        both = Binned(cells=np.concatenate([crowd.cells, people.cells]),
                      unit=np.concatenate([crowd.unit, people.unit]), n_outside=0)
        return self.build_domain(both)

    def channel_over_cells(self, domain_channel: Callable[[LocationDomain], np.ndarray]) -> np.ndarray:
        """``P[y, x]`` over the grid's cells from a channel over domain positions (grid domain only).

        ``domain_channel(domain)`` gives ``Q[y, i]`` for domain position ``i``; columns
        are relabelled as cells and, when reports are themselves locations (``Q`` square),
        so are the rows, so the report can be drawn on the grid.
        """
        if self.domain != "grid":
            raise LdpvizInputError(f"{self.label}: a channel over grid cells exists only with domain='grid'; "
                                   "the occupied domain depends on which tiles hold users.")
        domain = grid_domain(self.grid)
        require(domain.block == 1,
                f"{self.label}: the channel over cells is built only for grids of at most {MAX_GRID_DOMAIN_SIZE} "
                f"cells; a {self.grid.side} x {self.grid.side} grid uses blocks of {domain.block} x "
                f"{domain.block} cells.")
        q = np.asarray(domain_channel(domain), dtype=float)
        cells = domain.cells
        out = np.zeros((q.shape[0], self.grid.n_cells))
        if q.shape[0] == domain.size:
            out[np.ix_(cells, cells)] = q
        else:
            out[:, cells] = q
        return out


def domain_positions(grid: Grid, domain: LocationDomain, users: Binned) -> np.ndarray:
    """Each user's position in the sorted domain."""
    if domain.kind == "grid":
        inverse = np.empty(domain.size, dtype=np.int64)
        inverse[domain.cells] = np.arange(domain.size)
        cells = np.asarray(users.cells, dtype=np.int64)
        if domain.block > 1:
            side = math.ceil(grid.side / domain.block)
            rows, cols = np.divmod(cells, grid.side)
            cells = (rows // domain.block) * side + cols // domain.block
        return inverse[cells]
    return domain.index_of(user_codes(grid, users.unit, domain.level))


def domain_likelihood_to_cells(grid: Grid, domain: LocationDomain, likelihood: np.ndarray) -> np.ndarray:
    """``(n, D)`` likelihoods over domain positions -> ``(n, d*d)`` over the grid's cells.

    Grid domain (one cell per location): a relabelling. Blocks or quadkey tiles: P(y | cell x) =
    sum_v P(v | x) P(y | v) with P(v | x) the share of cell x's area in location v (people uniform
    within a cell); a cell no location covers gets likelihood 0 (nobody can be there).
    """
    L = np.asarray(likelihood, dtype=float)
    if domain.kind == "grid" and domain.block == 1:
        out = np.zeros((len(L), grid.n_cells))
        out[:, domain.cells] = L
        return out
    return np.asarray((rect_cell_shares(domain.rects, grid.side).T @ L.T).T)


def domain_to_grid(grid: Grid, domain: LocationDomain, probs: np.ndarray) -> tuple[np.ndarray, Partition | None]:
    """A distribution over the domain -> (d, d) density (area-proportional for tiles) and its partition."""
    if domain.kind == "grid" and domain.block == 1:
        density = np.zeros(grid.n_cells)
        density[domain.cells] = probs
        return density.reshape(grid.side, grid.side), None
    partition = Partition(domain.rects, probs)
    return to_distribution(partition.to_grid(grid.side), "clip"), partition


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
        l, h = quadkey.prefix_interval(domain.codes, domain.codes, np.minimum(t, bits), bits)
        lo[:, j] = np.where(inside, l, pos)
        hi[:, j] = np.where(inside, h, pos)
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


# ---------------------------------------------------------------------------
# Online part: perturbation (Algorithm 1, client) and estimation (Algorithm 2, server)
# ---------------------------------------------------------------------------
def perturb_positions(plan: StaircasePlan, positions: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Algorithm 1, line 14: each input samples a group by its mass, then a member uniformly."""
    x = np.asarray(positions, dtype=np.int64)
    n, m = len(x), plan.m
    if n == 0:
        return x.copy()
    u = rng.random(n)
    group = (u[:, None] >= plan.cum_mass[x, :m - 1]).sum(axis=1)       # 0-based j - 1
    size = plan.group_sizes[x, group]
    k = np.minimum((rng.random(n) * size).astype(np.int64), np.maximum(size - 1, 0))
    outer_lo = plan.lo[x, group + 1]
    inner_lo, inner_hi = plan.lo[x, group], plan.hi[x, group]
    left = inner_lo - outer_lo
    return np.where(k < left, outer_lo + k, inner_hi + (k - left))


def aggregate_histogram(plan: StaircasePlan, counts: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Histogram of reported positions for ``counts`` users per position, drawn exactly (the mixture form of
    :func:`staircase_channel`; module docstring): the same distribution as :func:`perturb_positions` + bincount."""
    D, m = plan.domain.size, plan.m
    counts = np.asarray(counts, dtype=np.int64).reshape(-1)
    require(counts.size == D, f"need one count per domain position ({D}), got {counts.size}")
    xs = np.flatnonzero(counts)
    if not len(xs):
        return np.zeros(D, dtype=np.int64)
    alpha_min = plan.alpha[xs, m - 1]
    step = alpha_min * (plan.c - 1.0) / (m - 1)
    lo, hi = plan.lo[xs, 1:m], plan.hi[xs, 1:m]
    weights = np.column_stack([alpha_min * D, step[:, None] * (hi - lo)])
    total = weights.sum(axis=1, keepdims=True)
    require(np.allclose(total, 1.0, atol=1e-6), "the staircase plan's probabilities do not sum to 1")
    split = rng.multinomial(counts[xs], weights / total)                      # (inputs, 1 + inner intervals)
    return uniform_range_histogram(np.concatenate([[0], lo.ravel()]), np.concatenate([[D], hi.ravel()]),
                                   np.concatenate([[split[:, 0].sum()], split[:, 1:].ravel()]), D, rng)


def fwht(a: np.ndarray) -> np.ndarray:
    """Unnormalised fast Walsh-Hadamard transform along axis 0 (Sylvester order, eq. 8); length 2^k."""
    out = np.array(a, dtype=float, copy=True)
    n = out.shape[0]
    h = 1
    while h < n:
        view = out.reshape(n // (2 * h), 2, h, *out.shape[1:])
        first = view[:, 0].copy()
        view[:, 0] += view[:, 1]
        view[:, 1] = first - view[:, 1]
        h *= 2
    return out


def hadamard_size(d: int) -> int:
    """K = 2^ceil(log2(d + 1))."""
    return 1 << math.ceil(math.log2(d + 1))


def candidate_matrix(d: int) -> np.ndarray:
    """``M[x, y] = 1`` iff y in C_x: row x + 1 of H_K has +1 in column y (y < d). Dense; for tests and small d."""
    rows = np.arange(1, d + 1, dtype=np.uint64)[:, None]
    cols = np.arange(d, dtype=np.uint64)[None, :]
    return (np.bitwise_count(rows & cols) % 2 == 0).astype(float)


def candidate_mass(values: np.ndarray) -> np.ndarray:
    """``sum_(y in C_x) values[y, ...]`` for every x (fast Walsh-Hadamard; values has d rows)."""
    d = values.shape[0]
    padded = np.zeros((hadamard_size(d),) + values.shape[1:])
    padded[:d] = values
    transformed = fwht(padded)
    return 0.5 * (transformed[1:d + 1] + values.sum(axis=0))


def channel_classes(plan: StaircasePlan) -> tuple[np.ndarray, np.ndarray]:
    """Inputs with identical channel columns: ``(representatives, class_of_each_input)``.

    A column of the SRR channel is fixed by its nested intervals I_1..I_(m-1)
    and alpha_min(x), so inputs sharing them (e.g. two sibling tiles that are
    each other's only G_1 neighbour) send identical report distributions: no
    estimator can tell them apart, and the system of Algorithm 2 is singular.
    """
    m = plan.m
    key = np.column_stack([plan.lo[:, 1:m], plan.hi[:, 1:m], plan.alpha[:, m - 1].view(np.int64)])
    _, first, inverse = np.unique(key, axis=0, return_index=True, return_inverse=True)
    return first, inverse.reshape(-1)


def hadamard_system(plan: StaircasePlan) -> np.ndarray:
    """``A[x, x'] = sum_(y in C_x) q(y | x')``: the linear system of Algorithm 2 (d x d)."""
    return candidate_mass(plan.channel())


#: Smallest reciprocal condition number accepted for the square LU solve of Algorithm 2.
RCOND_MIN = 1e-10


def _hadamard_solver(plan: StaircasePlan) -> dict:
    """A reusable solver for Algorithm 2's system (computed once per plan).

    The paper factorises the d x d system ``A p = p(C)`` by LU, assuming its d
    equations are independent. On real domains the SRR channel is usually
    rank-deficient: inputs sharing their groups send identical reports
    (:func:`channel_classes`), and columns of the form ``a 1 + b 1_B`` for
    nested LCP blocks B are linearly dependent. So: identical inputs are merged
    into one unknown; if the merged system is square and well conditioned it is
    solved by LU exactly as in the paper, otherwise by its minimum-norm
    least-squares solution (truncated-SVD pseudo-inverse). Either way the
    estimate is unbiased for every identifiable combination of frequencies;
    each merged class's mass is shared equally among its members.
    """
    reps, classes = channel_classes(plan)
    system = candidate_mass(plan.channel()[:, reps])
    solver: dict = {"classes": classes, "class_size": np.bincount(classes).astype(float), "rank": len(reps),
                    "system": system}
    if len(reps) == plan.domain.size:
        lu = scipy.linalg.lu_factor(system, check_finite=False)
        rcond, _ = scipy.linalg.lapack.dgecon(lu[0], np.abs(system).sum(axis=0).max(), norm="1")
        if rcond > RCOND_MIN:
            solver.update(method="lu", lu=lu)
            return solver
    u, sv, vt = scipy.linalg.svd(system, full_matrices=False, check_finite=False)
    solver.update(method="min-norm least squares", svd=(u, sv, vt), rank=int((sv > sv[0] * 1e-10).sum()))
    return solver


def hadamard_estimate(plan: StaircasePlan, counts: np.ndarray, fill: str = "prior") -> np.ndarray:
    """Algorithm 2: solve ``A p = p(C)`` (see :func:`_hadamard_solver`). Unbiased; may be negative.

    Where the system is rank-deficient (or a direction is too noisy to keep), the directions
    the reports cannot determine are filled from a data-free prior, the uniform distribution
    over the domain (``fill="prior"``: the solution closest to uniform, p0 + A^+ (p(C) - A p0)),
    or set to zero (``fill="min-norm"``: the minimum-norm solution A^+ p(C), which pulls the
    unidentified mass towards whatever shape the null space's complement happens to have).
    Both agree on every identifiable combination of frequencies.
    """
    require(fill in ("prior", "min-norm"), f"fill must be 'prior' or 'min-norm', got {fill!r}")
    n = counts.sum()
    if n == 0:
        return np.full(plan.domain.size, 1.0 / plan.domain.size)
    if plan._lu is None:
        plan._lu = _hadamard_solver(plan)
    solver = plan._lu
    observed = candidate_mass(counts.astype(float)) / n
    if solver["method"] == "lu":
        merged = scipy.linalg.lu_solve(solver["lu"], observed, check_finite=False)
    else:
        # Truncated SVD: drop directions whose sampling noise (sd <= 1/(2 sqrt(n) s_k) on the
        # coefficient) would exceed 1/2, the most a distribution's coefficient can carry there.
        u, sv, vt = solver["svd"]
        keep = (sv > sv[0] * 1e-10) & (sv > 1.0 / math.sqrt(n))
        prior = solver["class_size"] / plan.domain.size if fill == "prior" else np.zeros(len(sv))
        residual = observed - solver["system"] @ prior
        merged = prior + vt[keep].T @ ((u[:, keep].T @ residual) / sv[keep])
    return (merged / solver["class_size"])[solver["classes"]]


def em_estimate(plan: StaircasePlan, counts: np.ndarray, rule: str | None = None) -> tuple[np.ndarray, int]:
    """Maximum-likelihood distribution under the SRR channel by EM (Sec. 6.5 ablation "SRR + MLE").

    Uses the shared EM of :mod:`ldpviz.mechanisms.estimation` and its stopping rule. Inputs with identical
    channel columns (:func:`channel_classes`) are merged first: EM's multiplicative update moves
    them in lockstep, so running it on the classes (started from the uniform distribution over
    the domain, i.e. class size / D) and splitting each class's mass equally is the same EM,
    ~100x smaller. Where the likelihood still has flat directions (rank below the number of
    classes), EM stays at the point its uniform start leads to. Returns (distribution, iterations).
    """
    reps, classes = channel_classes(plan)
    q = plan.channel()[:, reps]
    size = np.bincount(classes).astype(float)
    p, info = expectation_maximisation(np.asarray(counts, dtype=float), lambda f: q @ f, lambda r: q.T @ r,
                                       (len(reps),), smoothing=False, rule=rule, initial=size)
    return (p / size)[classes], int(info["iterations"])


@dataclass(frozen=True)
class SrrReports:
    """What the server receives: one domain position per user, with the public plan."""

    plan: StaircasePlan
    positions: np.ndarray


@dataclass(frozen=True)
class SrrHistogram:
    """The aggregate path's statistic: the public plan and how many users reported each domain position."""

    plan: StaircasePlan
    counts: np.ndarray
    n: int


#: 'auto' cost model (seconds): per-user path per (user x group); aggregate a constant plus per (occupied input x
#: group) range. Read off perturb_positions + bincount against aggregate_histogram at d = 8, 32, 64, eps = 1 and 4,
#: 1e4 to 1e6 users, skewed counts (min of 3), on the development machine, 2026-11-23: 2-8e-8 s per user x group,
#: 0.2-5e-6 s per range (the larger at d = 8, where the constant dominates).
PER_USER_SECONDS_PER_USER_GROUP = 4.0e-8
AGGREGATE_SECONDS = 3.0e-4
AGGREGATE_SECONDS_PER_RANGE = 3.0e-7


@register
class SRR(TwoPaths, LocationDomainMechanism):
    """Staircase Randomized Response over quadkey-encoded locations (L-SRR Sec. 3, Alg. 1-2).

    Each user reports a location of the public domain D: one of the ``m``
    LCP groups around the true location is chosen with probability
    ``|G_j(x)| alpha_j(x)`` (staircase eq. 2-4, largest for the closest group),
    then a member of that group uniformly. ``c = alpha_max / alpha_min`` is the
    largest value whose Theorem 3.3 bound is <= epsilon; the achieved bound is
    reported in ``Estimate.info["epsilon_achieved"]``. The estimate over D is
    mapped to the evaluation grid area-proportionally (each tile a rectangle).

    In the paper the domain is public knowledge. The default ``domain="grid"``
    is public and data-independent; ``domain="occupied"`` builds it from the
    users' true tiles (the paper's experimental setting), which is eps-LDP only
    if the set of occupied tiles is public knowledge (see :func:`domain_guarantee`).
    """

    name = "srr"
    label = "SRR / L-SRR (staircase randomized response)"
    family = FAMILY_SRR
    privacy_model = LDP
    reference = ("l-srr-staircase-randomized-response.md Sec. 3.1-3.5: eq. (2)-(4), Def. 3.2, Thm. 3.3, "
                 "Lemma 3.4, Alg. 1-2")
    summary = ("Each phone reports a nearby place more often than a far one, in a few distance bands "
               "(a staircase); the server undoes the known noise.")
    params = (
        domain_param(),
        level_param(),
        Param("groups", int, None, "number of staircase groups m; default: Lemma 3.4 (mutual information)",
              minimum=2, maximum=64),
        Param("estimator", str, "hadamard", "server estimator: revised empirical (Hadamard candidate sets, "
              "Alg. 2; directions the reports cannot determine are filled from the uniform distribution), "
              "the same with the minimum-norm fill ('hadamard-min-norm'), or maximum likelihood (EM, 'mle')",
              choices=("hadamard", "hadamard-min-norm", "mle")),
        Param("projection", str, "norm-sub", "how the unbiased Hadamard estimate becomes a distribution",
              choices=("norm-sub", "clip")),
        path_param("the histogram of reported positions (a mixture of uniform draws over nested intervals)",
                   "n users x m groups against occupied inputs x m intervals"),
    )
    has_channel = True    # with the public grid domain (see LocationDomainMechanism)

    def plan(self, domain: LocationDomain) -> StaircasePlan:
        return cached_plan(domain, self.epsilon, self.groups)

    # ---- protocol -----------------------------------------------------------
    def per_user(self, users: Binned, rng: np.random.Generator) -> SrrReports:
        domain = self.build_domain(users)
        plan = self.plan(domain)
        return SrrReports(plan, perturb_positions(plan, self.positions(domain, users), rng))

    def aggregate(self, users: Binned, rng: np.random.Generator) -> SrrHistogram:
        domain = self.build_domain(users)
        counts = np.bincount(self.positions(domain, users), minlength=domain.size)
        return SrrHistogram(self.plan(domain), aggregate_histogram(self.plan(domain), counts, rng), int(counts.sum()))

    def choose(self, users: Binned) -> str:
        domain = self.build_domain(users)
        m = self.plan(domain).m
        occupied = min(len(np.unique(users.cells)), domain.size)    # occupied inputs (cells bound tiles)
        aggregate = AGGREGATE_SECONDS + AGGREGATE_SECONDS_PER_RANGE * occupied * m
        faster = aggregate < PER_USER_SECONDS_PER_USER_GROUP * len(users.cells) * m
        return AGGREGATE if faster else PER_USER

    def estimate(self, reports: SrrReports | SrrHistogram) -> Estimate:
        plan = reports.plan
        domain = plan.domain
        t0 = time.perf_counter()
        aggregated = isinstance(reports, SrrHistogram)
        if aggregated:
            counts = np.asarray(reports.counts, dtype=float)
        else:
            counts = np.bincount(reports.positions, minlength=domain.size).astype(float)
        info: dict = {}
        if self.estimator == "mle":
            raw, iterations = em_estimate(plan, counts)
            probs = to_distribution(raw, "clip")
            info["em_iterations"] = iterations
        else:
            raw = hadamard_estimate(plan, counts, "min-norm" if self.estimator == "hadamard-min-norm" else "prior")
            probs = to_distribution(raw, self.projection)
            info.update(solver=plan._lu["method"], identifiable_rank=plan._lu["rank"])
        density, partition = domain_to_grid(self.grid, domain, probs)
        info.update({
            "reports": int(reports.n if aggregated else len(reports.positions)), "domain": domain.kind,
            "domain_size": domain.size, **self.path_info(AGGREGATE if aggregated else PER_USER),
            "level": domain.level, "groups_m": plan.m, "c": plan.c, "epsilon_target": plan.epsilon_target,
            "epsilon_achieved": plan.epsilon, "estimator": self.estimator,
            "offline_s": plan.seconds, "estimate_s": time.perf_counter() - t0,
        })
        if domain.kind == "occupied":
            info["tile_side_m"] = quadkey.tile_side_m(self.grid.region.center_lat, domain.level)
        return Estimate(density, partition=partition, raw=raw, info=info)

    def run(self, users: Binned, rng: np.random.Generator) -> Estimate:
        return self.estimate(self.collect(users, rng))

    def attack_reports(self, people: Binned, rng: np.random.Generator, crowd: Binned) -> SrrReports:
        """Reports of ``people`` under the plan of the collection's domain (Monte Carlo attacker; used only when
        there is no channel over single cells: occupied tiles, or blocks of cells on grids beyond 64 x 64)."""
        plan = self.plan(self.attack_domain(people, crowd))
        return SrrReports(plan, perturb_positions(plan, self.positions(plan.domain, people), rng))

    def report_likelihood(self, reports: SrrReports) -> np.ndarray:
        """``(n, d*d)``: the rows of the staircase channel (eq. 2-4) for each reported location, spread to cells."""
        q = reports.plan.channel()[np.asarray(reports.positions, dtype=np.int64)]
        return domain_likelihood_to_cells(self.grid, reports.plan.domain, q)

    def channel(self) -> np.ndarray:
        """Dense channel over the grid cells (``domain="grid"`` only; the occupied domain depends on data)."""
        return self.channel_over_cells(lambda domain: self.plan(domain).channel())

    def guarantee(self) -> str:
        return (domain_guarantee(self.epsilon, self.domain) + " (Theorem 3.3; the achieved bound, reported with "
                "each run, may be slightly below)")
