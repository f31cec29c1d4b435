"""User-level central-DP heatmaps: one normalised distribution per person (dp-heatmaps paper).

Ghazi et al., "Differentially Private Heatmaps" (dp-heatmaps-sparse-emd.md). The paper's
input is not one point per user: "each user i's data is a distribution p_i over G_Delta"
(Sec. 2.2), e.g. a user's check-ins normalised to total weight 1 (Sec. 2.3, Sec. 4
"Datasets"). This module runs the central mechanisms of :mod:`ldpviz.mechanisms.heatmaps.dp_heatmap`
on such data.

**Privacy unit: one person** — every point a person contributed. Neighbouring data sets
differ by adding or removing one person (Sec. 2.2). Because each person's points are
normalised to weight 1, removing a person changes every level sum ``P_i s`` by exactly
that person's distribution aggregated to level i, whose l1 norm is 1: the l1 sensitivity
of every level, and of the Laplace baselines' cell sums, is :data:`SENSITIVITY` = 1
whatever the number of points a person has (the "Privacy analysis" of Thm 3.1). Without
the normalisation it would be the largest number of points of any person, unbounded.
(Under replace-one neighbours it would be 2; the paper and this module use add/remove.)

* :func:`person_distributions` — a points table with a person column to the sparse
  ``(people, d^2)`` matrix of normalised histograms; rows dropped for a missing person id,
  a missing coordinate or a point outside the region are counted by reason.
* :func:`user_level_heatmap` — ``dp-heatmap`` (Alg. 1-2), ``laplace`` or ``laplace-top``
  on those distributions; with ``shuffle=ShuffleSpec(...)`` dp-heatmap runs in the shuffle
  model of App. F.
* :func:`shuffle_plan` / :func:`shuffle_measure` — App. F: each person rounds ``B y^j``
  down, adds Polya noise whose sum over the n people is discrete Laplace, splits every
  coordinate into r additive shares mod q ("split & mix", [BBGN20]) and sends them through
  the shuffler; the analyzer sums the shares. Guarantee: (epsilon, delta)-DP in the shuffle
  model, provided all n people take part (each adds only 1/n of the noise).
* :func:`dp_kmedian_centres` — App. A: the unnormalised reconstruction ``s_hat`` of Alg. 2
  is a DP coreset for planar k-median (Cor. A.1); any non-private k-median solver on it
  gives DP centres (Cor. A.2). We use single-swap local search (Arya et al., SIAM J. Comput.
  2004: a 5-approximation over its candidate set) with the l1 cost of App. A.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse as sp
from scipy.optimize import linprog

from ldpviz.mechanisms.heatmaps import pyramid
from ldpviz.geo.domain import Grid
from ldpviz.errors import require
from ldpviz.wording import plural
from ldpviz.mechanisms.estimation import to_distribution
from ldpviz.mechanisms.heatmaps import dp_heatmap as hm
from ldpviz.mechanisms import accounting
from ldpviz.mechanisms.base import CENTRAL_DP, UNIT_PERSON, validate_epsilon

PRIVACY_UNIT = "one person (all of their points)"
#: l1 sensitivity of every level sum P_i s (and of the cell sums) under add/remove-one-person.
SENSITIVITY = 1.0
METHODS = ("dp-heatmap", "laplace", "laplace-top")
REFERENCE = "dp-heatmaps-sparse-emd.md"


# ---- per-person distributions ------------------------------------------------------------------

@dataclass(frozen=True)
class PersonDistributions:
    """Each person's kept points as a histogram normalised to 1 (rows of ``matrix``)."""

    matrix: sp.csr_matrix            #: (people, side^2), every row sums to 1
    people: np.ndarray               #: person id of each row
    points: np.ndarray               #: kept points per person
    side: int
    dropped: dict[str, int] = field(default_factory=dict)   #: rows dropped, by reason
    people_dropped: int = 0          #: people with no point left (not in ``matrix``)

    @property
    def n_people(self) -> int:
        return int(self.matrix.shape[0])

    def aggregate(self) -> np.ndarray:
        """``s = sum_i p_i`` as a (side, side) array."""
        return np.asarray(self.matrix.sum(axis=0)).reshape(self.side, self.side)

    def summary(self) -> str:
        phrase = {"missing person id": "with a missing person id", "missing coordinate": "with a missing coordinate"}
        parts = [f"{plural(v, 'row')} {phrase.get(k, k)}" for k, v in self.dropped.items() if v]
        text = (f"{plural(self.n_people, 'person', 'people')} with {plural(int(self.points.sum()), 'point')}, each "
                f"person's points normalised to total weight 1")
        if parts:
            text += "; dropped " + ", ".join(parts)
        if self.people_dropped:
            text += (f"; {plural(self.people_dropped, 'person', 'people')} had no point left and "
                     f"{'was' if self.people_dropped == 1 else 'were'} dropped")
        return text + "."


def person_distributions(frame: pd.DataFrame, grid: Grid, person: str = "person", lon: str = "lon",
                         lat: str = "lat") -> PersonDistributions:
    """Normalised per-person histograms on ``grid`` from a table of (person, lon, lat) rows."""
    for column in (person, lon, lat):
        require(column in frame.columns, f"the table has no column {column!r}; columns: "
                                         f"{', '.join(map(str, frame.columns))}")
    ids = frame[person]
    lons = pd.to_numeric(frame[lon], errors="coerce").to_numpy(float)
    lats = pd.to_numeric(frame[lat], errors="coerce").to_numpy(float)
    no_id = ids.isna().to_numpy()
    no_xy = ~no_id & ~(np.isfinite(lons) & np.isfinite(lats))
    ok = ~no_id & ~no_xy
    inside = np.zeros(len(frame), dtype=bool)
    inside[ok] = grid.region.contains(lons[ok], lats[ok])
    outside = ok & ~inside
    binned = grid.bin_lonlat(lons[inside], lats[inside])
    require(binned.cells.size > 0, "no point with a person id lies inside the region")
    n_all_people = len(pd.unique(ids[~no_id]))
    codes, people = pd.factorize(ids[inside])          # any id type, mixed types included
    matrix = hm.user_histograms(codes, binned.cells, grid.n_cells)
    points = np.bincount(codes)
    return PersonDistributions(matrix, np.asarray(people), points, grid.side,
                               {"missing person id": int(no_id.sum()), "missing coordinate": int(no_xy.sum()),
                                "outside the region": int(outside.sum())},
                               int(n_all_people - len(people)))


def level_sums_per_person(matrix: sp.csr_matrix, side: int, level: int) -> sp.csr_matrix:
    """``P_level p_j`` for every person j: (people, 4^level) sparse."""
    cells = 1 << level
    block = side // cells
    rows, cols = np.divmod(np.arange(side * side), side)
    parent = (rows // block) * cells + cols // block
    to_level = sp.csr_matrix((np.ones(side * side), (np.arange(side * side), parent)),
                             shape=(side * side, cells * cells))
    return sp.csr_matrix(matrix @ to_level)


# ---- App. F: shuffle model ---------------------------------------------------------------------

@dataclass(frozen=True)
class ShuffleSpec:
    """App. F's parameters: delta and the scaling factor B (paper: delta = 1e-5)."""

    delta: float = 1e-5
    scale: int = 100


@dataclass(frozen=True)
class ShufflePlan:
    """What App. F's protocol needs and costs for n people and m coordinates."""

    epsilon: float
    delta: float
    n_people: int
    coordinates: int           #: m = m_q + ... + m_l (levels measured)
    scale: int                 #: B
    modulus: int               #: q
    shares: int                #: r, messages per coordinate per person
    messages_per_person: int   #: r m
    bits_per_person: int       #: r m ceil(log2(m q))

    def guarantee(self) -> str:
        return (f"({self.epsilon:g}, {self.delta:g})-DP in the shuffle model per {PRIVACY_UNIT}, provided all "
                f"{self.n_people:,} people send their messages (each adds 1/{self.n_people:,} of the noise); "
                f"{self.messages_per_person:,} messages ({self.bits_per_person:,} bits) per person")


def shuffle_modulus(n_people: int, scale: int) -> int:
    """q. App. F sets q = B n; we use q = 2 B n so a cell holding every person's mass (B n) is not
    read as 0 and slightly negative noisy sums decode as negative (post-processing only)."""
    return 2 * int(scale) * int(n_people)


def shuffle_shares(epsilon: float, delta: float, n_people: int, coordinates: int, modulus: int) -> int:
    """App. F (Cor. 6 and Lemma 5.2 of [BBGN20]):
    ``r = ceil((2 ln(e^eps + 1) + 2 ln(m / delta) + ln q) / ln n + 1)``."""
    require(n_people >= 2, f"the shuffle protocol needs at least 2 people (r divides by ln n); got {n_people}")
    require(0 < delta < 1, f"delta must be in (0, 1), got {delta!r}")
    top = 2 * np.logaddexp(epsilon, 0.0) + 2 * math.log(coordinates / delta) + math.log(modulus)
    return int(math.ceil(top / math.log(n_people) + 1))


def shuffle_plan(epsilon: float, n_people: int, side: int, spec: ShuffleSpec = ShuffleSpec(),
                 width: int = pyramid.DEFAULT_WIDTH) -> ShufflePlan:
    """The App. F plan for dp-heatmap on a side x side grid (levels q..l measured, as in Sec. 4)."""
    epsilon = validate_epsilon(epsilon)
    top = pyramid.require_power_of_two(side)
    require(isinstance(spec.scale, (int, np.integer)) and spec.scale >= 1,
            f"the scaling factor B must be a whole number >= 1, got {spec.scale!r}")
    first = pyramid.start_level(width, top)
    m = sum(4 ** i for i in range(first, top + 1))
    q = shuffle_modulus(n_people, spec.scale)
    r = shuffle_shares(epsilon, spec.delta, n_people, m, q)
    return ShufflePlan(epsilon, spec.delta, int(n_people), m, int(spec.scale), q, r, r * m,
                       r * m * int(math.ceil(math.log2(m * q))))


def split_shares(values: np.ndarray, shares: int, modulus: int, rng: np.random.Generator) -> np.ndarray:
    """Split & mix: ``shares`` vectors, the first r - 1 uniform in Z_q, summing to ``values`` mod q."""
    values = np.asarray(values, dtype=np.int64)
    out = rng.integers(0, modulus, size=(shares,) + values.shape, dtype=np.int64)
    out[-1] = np.mod(values - out[:-1].sum(axis=0), modulus)
    return out


def polya_noise(shape: tuple[int, ...], n_people: int, alpha: float, rng: np.random.Generator) -> np.ndarray:
    """One person's noise: Polya(1/n, alpha) - Polya(1/n, alpha); n of them sum to DLap(alpha)."""
    return (rng.negative_binomial(1.0 / n_people, 1.0 - alpha, size=shape)
            - rng.negative_binomial(1.0 / n_people, 1.0 - alpha, size=shape))


def shuffle_measure(dists: PersonDistributions, epsilon: float, rng: np.random.Generator,
                    spec: ShuffleSpec = ShuffleSpec(), width: int = pyramid.DEFAULT_WIDTH,
                    gamma: float = pyramid.DEFAULT_GAMMA, per_person: bool = False
                    ) -> tuple[pyramid.Measurements, ShufflePlan]:
    """App. F's computation of y' (levels q..l, budgets of Thm 3.1), returned as Algorithm 1's
    :class:`~ldpviz.mechanisms.heatmaps.pyramid.Measurements` so RECONSTRUCT runs unchanged.

    Noise: person j adds ``Polya(1/n, a_i) - Polya(1/n, a_i)`` per level-i coordinate with
    ``a_i = exp(-eps_i / B)``; the sum over the n people is discrete Laplace DLap(a_i). App. F
    writes ``e^-eps_i``; on the B-scaled integers the l1 sensitivity is B (the floors of a
    person's B y^j sum to at most B), so eps_i-DP per level needs ``a_i = e^(-eps_i / B)``.
    With ``per_person=False`` the sum of the n people's noise is drawn directly
    (Polya(1, a) differences: the same distribution); shares are never materialised, since
    their sum mod q is by construction ``sum_j z'^j mod q`` (:func:`split_shares`).
    """
    epsilon = validate_epsilon(epsilon)
    side, n = dists.side, dists.n_people
    plan = shuffle_plan(epsilon, n, side, spec, width)
    top = pyramid.require_power_of_two(side)
    first, budgets = pyramid.level_budgets(epsilon, top, width, gamma)
    B, q = plan.scale, plan.modulus
    noisy = []
    for j, level in enumerate(range(first, top + 1)):
        per = level_sums_per_person(dists.matrix, side, level)
        per.data = np.floor(B * per.data + 1e-9)
        z = np.asarray(per.sum(axis=0)).ravel().astype(np.int64)
        alpha = math.exp(-budgets[j] / B)
        if per_person:
            require(n * z.size <= 20_000_000, f"per-person noise for {n:,} people x {z.size:,} coordinates is too "
                                              f"large to simulate; use per_person=False (same distribution)")
            noise = polya_noise((n, z.size), n, alpha, rng).sum(axis=0)
        else:
            noise = polya_noise((z.size,), 1, alpha, rng)
        received = np.mod(z + noise, q)
        window_low = -(q - B * n) // 2
        decoded = np.where(received >= B * n - window_low, received - q, received)
        cells = 1 << level
        noisy.append(decoded.reshape(cells, cells) / B * 2.0 ** -level)
    scales = 1.0 / budgets
    return pyramid.Measurements(side, first, budgets, scales, tuple(noisy)), plan


# ---- user-level heatmaps ------------------------------------------------------------------------

@dataclass
class UserLevelResult:
    """A user-level heatmap: the estimated distribution, its guarantee and what happened."""

    density: np.ndarray
    method: str
    epsilon: float
    guarantee: str
    privacy_unit: str = PRIVACY_UNIT
    info: dict[str, Any] = field(default_factory=dict)


def user_level_heatmap(dists: PersonDistributions, method: str, epsilon: float, rng: np.random.Generator, *,
                       width: int = pyramid.DEFAULT_WIDTH, gamma: float = pyramid.DEFAULT_GAMMA,
                       top_percent: float = 0.01, shuffle: ShuffleSpec | None = None) -> UserLevelResult:
    """dp-heatmap / laplace / laplace-top on per-person distributions (privacy unit: one person)."""
    require(method in METHODS, f"method must be one of {', '.join(METHODS)}; got {method!r}")
    epsilon = validate_epsilon(epsilon)
    require(shuffle is None or method == "dp-heatmap", "the shuffle-model variant (App. F) is for dp-heatmap only")
    require(0 < top_percent <= 100, f"top_percent must be in (0, 100], got {top_percent!r}")
    aggregate = dists.aggregate()
    info: dict[str, Any] = {"people": dists.n_people, "points": int(dists.points.sum()),
                            "sensitivity": SENSITIVITY, "dropped_rows": dict(dists.dropped),
                            "people_dropped": dists.people_dropped}
    if method == "dp-heatmap" and shuffle is not None:
        measured, plan = shuffle_measure(dists, epsilon, rng, shuffle, width, gamma)
        rec = pyramid.reconstruct(measured, width)
        density = to_distribution(rec.estimate)
        info.update({"model": "shuffle", "level_epsilons": measured.level_epsilon.tolist(),
                     "shares_per_coordinate": plan.shares, "messages_per_person": plan.messages_per_person,
                     "bits_per_person": plan.bits_per_person, "scale_B": plan.scale, "modulus_q": plan.modulus})
        guarantee = plan.guarantee()
    else:
        if method == "dp-heatmap":
            density, extra = hm.dp_heatmap_from_aggregate(aggregate, epsilon, rng, width, gamma, dists.n_people)
        else:
            density, _, extra = hm.laplace_from_aggregate(
                aggregate, epsilon, rng, top_percent if method == "laplace-top" else None, dists.n_people)
        info.update(extra)
        info["model"] = "central"
        guarantee = (f"{epsilon:g}-DP (central: a trusted aggregator sees every point) per {PRIVACY_UNIT}; "
                     f"each person's points are normalised to weight 1, so l1 sensitivity {SENSITIVITY:g}")
    return UserLevelResult(density, method, epsilon, guarantee, PRIVACY_UNIT, info)


# ---- App. A: DP k-median -------------------------------------------------------------------------

def _cell_xy(side: int) -> np.ndarray:
    rows, cols = np.divmod(np.arange(side * side), side)
    return np.column_stack([cols, rows]).astype(float)       # (x = col, y = row), cell units


def kmedian_cost(weights: np.ndarray, centres: np.ndarray) -> float:
    """App. A's ``cost_C(x) = sum_u x(u) min_c ||c - u||_1`` in cell units; centres as (x, y) = (col, row)."""
    w = np.asarray(weights, dtype=float)
    xy = _cell_xy(w.shape[0])
    c = np.asarray(centres, dtype=float).reshape(-1, 2)
    dist = np.abs(xy[:, None, :] - c[None, :, :]).sum(axis=2).min(axis=1)
    return float((w.ravel() * dist).sum())


def kmedian_local_search(weights: np.ndarray, k: int, candidates: np.ndarray | None = None,
                         max_swaps: int = 1000) -> np.ndarray:
    """Single-swap local search for weighted planar k-median (l1) over candidate cells.

    Starts from the k heaviest candidates and applies the best improving swap until none
    improves the cost by more than 1e-12 relative; a local optimum is a 5-approximation of the
    best k centres among the candidates (Arya et al. 2004). Returns (k, 2) centres (col, row).
    """
    w = np.asarray(weights, dtype=float).ravel()
    side = int(round(math.sqrt(w.size)))
    require(isinstance(k, (int, np.integer)) and k >= 1, f"k must be a whole number >= 1, got {k!r}")
    cand = np.arange(w.size) if candidates is None else np.asarray(candidates, dtype=np.int64)
    require(cand.size >= k, f"k = {k} centres need at least {k} candidate cells; got {cand.size}")
    xy = _cell_xy(side)
    support = np.nonzero(w > 0)[0]
    if support.size == 0:
        return xy[cand[:k]]
    ws = w[support]
    dist = np.abs(xy[cand][:, None, :] - xy[support][None, :, :]).sum(axis=2)     # (candidates, support)
    current = list(np.argsort(-w[cand], kind="stable")[:k])
    for _ in range(max_swaps):
        d_cur = dist[current]                                        # (k, support)
        order = np.argsort(d_cur, axis=0)
        nearest = d_cur[order[0], np.arange(support.size)]
        second = d_cur[order[1], np.arange(support.size)] if k > 1 else np.full(support.size, np.inf)
        cost = float((ws * nearest).sum())
        best = (cost * (1 - 1e-12), None, None)
        for slot in range(k):
            base = np.where(order[0] == slot, second, nearest)          # cost without centre `slot`
            swapped = (ws * np.minimum(base[None, :], dist)).sum(axis=1)
            j = int(np.argmin(swapped))
            if swapped[j] < best[0] and j not in current:
                best = (float(swapped[j]), slot, j)
        if best[1] is None:
            break
        current[best[1]] = best[2]
    return xy[cand[np.array(current)]]


def kmedian_brute_force(weights: np.ndarray, k: int) -> tuple[np.ndarray, float]:
    """The optimal k cell centres by enumeration (toy instances only)."""
    w = np.asarray(weights, dtype=float)
    xy = _cell_xy(w.shape[0])
    require(math.comb(xy.shape[0], k) <= 200_000, "brute force is for toy instances only")
    best = (None, math.inf)
    for combo in itertools.combinations(range(xy.shape[0]), k):
        cost = kmedian_cost(w, xy[list(combo)])
        if cost < best[1]:
            best = (xy[list(combo)], cost)
    return best


def emd_norm(w: np.ndarray, alpha: float | None = None) -> float:
    """``||w||_EMD`` of Sec. 2.1 with the l1 ground distance in cell units, solved exactly (LP).

    ``min EMD(p, q) + alpha ||r||_1`` over ``p - q + r = w``: a transport of w's positive part
    onto its negative part where unmatched mass costs ``alpha`` per unit; ``alpha`` defaults to
    the grid's l1 diameter between cell centres, 2 (side - 1) (the paper's alpha = 2 on [0, 1)^2).
    Toy sizes only (side^4 variables).
    """
    w = np.asarray(w, dtype=float)
    side = w.shape[0]
    alpha = 2.0 * (side - 1) if alpha is None else alpha
    pos, neg = np.maximum(w.ravel(), 0), np.maximum(-w.ravel(), 0)
    i, j = np.nonzero(pos)[0], np.nonzero(neg)[0]
    if i.size == 0 or j.size == 0:
        return float(alpha * (pos.sum() + neg.sum()))
    xy = _cell_xy(side)
    cost = np.abs(xy[i][:, None, :] - xy[j][None, :, :]).sum(axis=2).ravel()
    ni, nj = i.size, j.size
    # variables: gamma (ni*nj), u (ni: unmatched positive), v (nj: unmatched negative)
    c = np.concatenate([cost, np.full(ni + nj, alpha)])
    rows_p = sp.hstack([sp.kron(sp.identity(ni), np.ones((1, nj))), sp.identity(ni), sp.csr_matrix((ni, nj))])
    rows_n = sp.hstack([sp.kron(np.ones((1, ni)), sp.identity(nj)), sp.csr_matrix((nj, ni)), sp.identity(nj)])
    res = linprog(c, A_eq=sp.vstack([rows_p, rows_n]).tocsr(), b_eq=np.concatenate([pos[i], neg[j]]),
                  bounds=(0, None), method="highs")
    if res.status != 0:
        raise RuntimeError(f"EMD-norm LP failed: {res.message}")
    return float(res.fun)


@dataclass
class KMedianResult:
    """DP k-median centres (App. A) and the coreset they were found on."""

    centres_cells: np.ndarray      #: (k, 2) (col, row) cell indices
    centres_unit: np.ndarray       #: (k, 2) unit coordinates of the cell centres
    centres_lonlat: np.ndarray     #: (k, 2) lon, lat (for a map)
    coreset: np.ndarray            #: s_hat, the unnormalised reconstruction (weights per cell)
    epsilon: float
    guarantee: str
    privacy_unit: str = PRIVACY_UNIT
    info: dict[str, Any] = field(default_factory=dict)


def dp_kmedian_centres(dists: PersonDistributions, grid: Grid, k: int, epsilon: float, rng: np.random.Generator,
                       *, width: int = pyramid.DEFAULT_WIDTH, gamma: float = pyramid.DEFAULT_GAMMA,
                       max_candidates: int = 512) -> KMedianResult:
    """App. A: DP coreset ``s_hat`` from Alg. 1-2 on the people's distributions, then local search on it.

    Everything after the noisy measurements reads only ``s_hat``, so the centres are
    epsilon-DP per person (post-processing). Candidates: the ``max_candidates`` heaviest cells
    of ``s_hat`` (all cells when fewer). Guarantee on the cost (Cor. A.1 + local search):
    ``cost_s(C) <= 5 OPT + 6 ||s - s_hat||_EMD`` with OPT over the same candidates.
    """
    require(dists.side == grid.side, f"distributions are on a {dists.side} grid but the grid has side {grid.side}")
    epsilon = validate_epsilon(epsilon)
    measured = pyramid.measure(dists.aggregate(), epsilon, rng, width, gamma)
    rec = pyramid.reconstruct(measured, width)
    coreset = rec.estimate
    flat = coreset.ravel()
    n_cand = min(max_candidates, flat.size)
    cand = np.argsort(-flat, kind="stable")[:n_cand]
    centres = kmedian_local_search(coreset, k, cand)
    unit = (centres + 0.5) / grid.side
    lon, lat = grid.region.unit_to_lonlat(unit)
    guarantee = (f"{epsilon:g}-DP (central) per {PRIVACY_UNIT}: the centres are computed from the DP coreset "
                 f"only")
    return KMedianResult(centres.astype(int), unit, np.column_stack([lon, lat]), coreset, epsilon, guarantee,
                         PRIVACY_UNIT, {"people": dists.n_people, "candidates": int(n_cand),
                                        "coreset_mass": float(flat.sum()), "k": int(k)})


__all__ = ["PRIVACY_UNIT", "SENSITIVITY", "METHODS", "PersonDistributions", "person_distributions",
           "level_sums_per_person", "ShuffleSpec", "ShufflePlan", "shuffle_plan", "shuffle_shares",
           "shuffle_modulus", "split_shares", "polya_noise", "shuffle_measure", "UserLevelResult",
           "user_level_heatmap", "kmedian_cost", "kmedian_local_search", "kmedian_brute_force", "emd_norm",
           "KMedianResult", "dp_kmedian_centres"]


def heatmap_ledger(epsilon: float, region: Any = None, with_centres: bool = True) -> accounting.Ledger:
    """What each person pays for this page's user-level outputs (the accountant's ledger): the heatmap of
    people (central epsilon-DP, one person's distribution), the DP k-median centres (epsilon again, App. A), and
    the region's epsilon0 once where it was paid for (LDP, reported by the phone)."""
    charges = [c for c in [accounting.region_charge(region, 1, 1, "each person reports the tile of one of their "
                                                                  "points, once")] if c is not None]
    charges.append(accounting.Charge("the user-level heatmap (the person's normalised distribution)", CENTRAL_DP,
                                     float(epsilon), 1, 1, "once per person"))
    if with_centres:
        charges.append(accounting.Charge("the DP k-median centres (App. A)", CENTRAL_DP, float(epsilon), 1, 1,
                                         "once per person"))
    return accounting.Ledger(tuple(charges), unit=UNIT_PERSON)
