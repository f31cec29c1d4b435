"""PLDP baseline: Chen et al.'s private spatial aggregation (ICDE'16, L-SRR ref. [13]) at one protection level.

L-SRR Sec. 6.2 configures PLDP "with the same protection region level for all
the users ... to satisfy the strict eps-LDP". In Chen et al.'s framework a user
with safe region tau is indistinguishable among the locations of tau and
reveals tau itself; plain eps-LDP over the whole domain therefore means every
user's safe region is the root (the whole domain), which reduces the
framework to one user group running its personalized count estimation
protocol (PCEP) over the domain. The user-group clustering (SDP) then has
nothing to cluster.

PCEP as reconstructed here (it follows Bassily & Smith's random-projection
frequency oracle, STOC'15, on which Chen et al. build): the server publishes a
random matrix Phi in {-1/sqrt(m), +1/sqrt(m)}^(m x d); each user picks a row j
uniformly, takes the sign of Phi[j, x] of their location x, keeps it with
probability e^eps / (e^eps + 1) and otherwise flips it, and sends (j, sign).
The server estimates count(v) = c_eps sum_i sign_i sqrt(m) Phi[j_i, v] with
c_eps = (e^eps + 1)/(e^eps - 1), unbiased over the draw of Phi. The projection
dimension defaults to m = ceil(log(d + 1) log(2 / beta) / eps^2) with beta = 0.05,
our reading of Chen et al.'s setting. Differences from the original (we have
no copy of the paper): the SDP clustering step and personalised safe regions
are not modelled (they are trivial at a single root-level protection region),
and m follows the formula above, capped so that the public m x d matrix has at most
MAX_PROJECTION_ENTRIES (16.8M) entries (at small eps the formula asks for 10^5-10^6 rows; the
estimator stays unbiased over Phi for any m); see docs/srr-method.md.

Aggregate path (``path``, see :mod:`ldpviz.mechanisms.collection_paths`): given the public matrix, the
server reads only r_j = sum of the signs reported on row j. A user at x picks its row uniformly and
keeps its sign with probability e^eps / (e^eps + 1), independently of everyone, so the n_x users at
x split over the rows as Multinomial(n_x, uniform over m), the kept ones on row j are Bin(c_xj, keep)
and contribute sign[j, x] (2 kept - c_xj): the exact distribution of r, in O(m x occupied locations)
draws instead of O(n). 'auto' compares those draws with n (:data:`PER_USER_SECONDS_PER_USER`,
:data:`AGGREGATE_SECONDS_PER_DRAW`, measured on this tool's development machine).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ldpviz.geo.domain import Binned
from ldpviz.errors import require
from ldpviz.mechanisms.estimation import to_distribution
from ldpviz.mechanisms import register
from ldpviz.mechanisms.base import LDP, Estimate, Param
from ldpviz.mechanisms.path_cost import AGGREGATE, PER_USER
from ldpviz.mechanisms.srr.staircase import (FAMILY_SRR, LocationDomain, LocationDomainMechanism,
                                             domain_likelihood_to_cells, domain_param, domain_to_grid, level_param)
from ldpviz.mechanisms.collection_paths import TwoPaths, path_param


def projection_dim(domain_size: int, epsilon: float, beta: float = 0.05) -> int:
    """m = ceil(log(d + 1) log(2 / beta) / eps^2), at least 1."""
    return max(1, math.ceil(math.log(domain_size + 1) * math.log(2.0 / beta) / epsilon ** 2))


#: Largest public sign matrix (m x d int8 entries, 16 MiB); keeps a run to about a second.
MAX_PROJECTION_ENTRIES = 1 << 24
#: Largest projection_dim a user may ask for (and only while m x d <= MAX_PROJECTION_ENTRIES).
MAX_PROJECTION_DIM = 100_000
_ROW_BLOCK = 1 << 20   # entries generated / converted at a time


def projection_signs(m: int, d: int, seed: int) -> np.ndarray:
    """The public sign matrix sqrt(m) Phi in {-1, +1}^(m x d) (int8), drawn in row blocks (same values)."""
    rng = np.random.default_rng(seed)
    out = np.empty((m, d), dtype=np.int8)
    step = max(1, _ROW_BLOCK // max(d, 1))
    for start in range(0, m, step):
        block = rng.random((min(step, m - start), d))
        out[start:start + len(block)] = np.where(block < 0.5, -1, 1)
    return out


def pcep_perturb(positions: np.ndarray, signs: np.ndarray, epsilon: float,
                 rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Client: (row j, randomized sign) per user."""
    n = len(positions)
    rows = rng.integers(0, signs.shape[0], size=n)
    bit = signs[rows, positions].astype(np.int64)
    keep = rng.random(n) < math.exp(epsilon) / (math.exp(epsilon) + 1.0)
    return rows, np.where(keep, bit, -bit)


def pcep_estimate_counts(rows: np.ndarray, reported: np.ndarray, signs: np.ndarray, epsilon: float) -> np.ndarray:
    """Server: unbiased (over Phi) counts c_eps sum_i s_i sqrt(m) Phi[j_i, v] for every v."""
    return pcep_counts_from_rows(np.bincount(rows, weights=reported, minlength=signs.shape[0]), signs, epsilon)


def pcep_row_sums_aggregate(counts: np.ndarray, signs: np.ndarray, epsilon: float,
                            rng: np.random.Generator) -> np.ndarray:
    """Aggregate path: r_j = sum of the signs reported on row j, drawn exactly from the true counts per location.

    The users at x split over the m rows as Multinomial(n_x, uniform); Bin(c_xj, e^eps/(e^eps+1)) of
    them keep sign[j, x], the rest flip it: r_j = sum_x sign[j, x] (2 kept_xj - c_xj), as
    :func:`pcep_perturb` followed by the row sums of :func:`pcep_estimate_counts`.
    """
    counts = np.asarray(counts, dtype=np.int64).reshape(-1)
    m = signs.shape[0]
    keep = math.exp(epsilon) / (math.exp(epsilon) + 1.0)
    occupied = np.flatnonzero(counts)
    out = np.zeros(m, dtype=np.int64)
    step = max(1, _ROW_BLOCK // m)
    for start in range(0, len(occupied), step):
        x = occupied[start:start + step]
        c = rng.multinomial(counts[x], np.full(m, 1.0 / m))                  # (locations, rows)
        kept = rng.binomial(c, keep)
        out += ((2 * kept - c) * signs[:, x].T.astype(np.int64)).sum(axis=0)
    return out


def pcep_counts_from_rows(per_row: np.ndarray, signs: np.ndarray, epsilon: float) -> np.ndarray:
    """Unbiased counts from the row sums r_j of the reported signs: c_eps sum_j r_j sqrt(m) Phi[j, v]."""
    c_eps = (math.exp(epsilon) + 1.0) / (math.exp(epsilon) - 1.0)
    per_row = np.asarray(per_row, dtype=float)
    used = np.flatnonzero(per_row)            # rows no report fell on contribute nothing
    total = np.zeros(signs.shape[1])
    step = max(1, _ROW_BLOCK // max(signs.shape[1], 1))
    for start in range(0, len(used), step):
        block = used[start:start + step]
        total += per_row[block] @ signs[block].astype(float)
    return c_eps * total


def pcep_channel(signs: np.ndarray, epsilon: float) -> np.ndarray:
    """P[(j, s), x] over outputs ordered (j, -1), (j, +1); columns sum to 1."""
    m, d = signs.shape
    keep = math.exp(epsilon) / (math.exp(epsilon) + 1.0)
    plus = np.where(signs > 0, keep, 1 - keep) / m
    out = np.empty((2 * m, d))
    out[0::2], out[1::2] = 1.0 / m - plus, plus
    return out


@dataclass(frozen=True)
class PLDPReports:
    """What the server receives: the public domain and sign matrix, and per user a row and a sign."""

    domain: LocationDomain
    signs: np.ndarray      #: the public (m, D) sign matrix, int8
    rows: np.ndarray       #: the row j each user used
    reported: np.ndarray   #: the randomised sign in {-1, +1}


@dataclass(frozen=True)
class PLDPRowSums:
    """The aggregate path's statistic: the public domain and sign matrix, and per row the sum of reported signs."""

    domain: LocationDomain
    signs: np.ndarray
    row_sums: np.ndarray   #: int64 (m,)
    n: int


#: 'auto' cost model (seconds): per-user path per user; aggregate path per (occupied location x row) draw.
#: Read off pcep_perturb (+ the server's row bincount) and pcep_row_sums_aggregate at n = 1e4..1e6 over 64..4,096
#: locations, eps = 1 (min of 3; 1.5-4.4e-8 s per user, 0.6-4e-7 s per draw), on the development machine, 2026-11-23.
PER_USER_SECONDS_PER_USER = 4.5e-8
AGGREGATE_SECONDS_PER_DRAW = 2.5e-7


@register
class PLDP(TwoPaths, LocationDomainMechanism):
    """Chen et al. ICDE'16 location aggregation with the root as everyone's safe region (plain eps-LDP)."""

    name = "pldp"
    label = "PLDP (Chen et al. ICDE'16, root protection level)"
    family = FAMILY_SRR
    privacy_model = LDP
    reference = ("l-srr-staircase-randomized-response.md Sec. 6.2 and ref. [13] (Chen et al., ICDE'16, PCEP); "
                 "Bassily & Smith STOC'15")
    summary = ("Each phone sends one randomly flipped sign of a public random code of its place; the server "
               "correlates the signs with the code to count every place.")
    params = (
        domain_param(),
        level_param(),
        Param("projection_dim", int, None, "rows m of the random projection; default "
              "ceil(log(d+1) log(2/beta) / eps^2), beta = 0.05, capped so that m x (domain size) <= "
              f"{MAX_PROJECTION_ENTRIES:,}", minimum=1, maximum=MAX_PROJECTION_DIM),
        Param("projection", str, "norm-sub", "how unbiased counts become a distribution",
              choices=("norm-sub", "clip")),
        path_param("the sum of reported signs on every row of the public matrix",
                   "n users against m rows x occupied locations draws"),
    )
    # The public sign matrix is drawn afresh for each collection (the estimator is unbiased over it), so a
    # user's report exists only within one collection: reports from two calls of perturb() are not samples
    # of one channel, and the black-box audit cannot compare them. The whole-protocol audit applies.
    has_client = False

    def attack_reports(self, people: Binned, rng: np.random.Generator, crowd: Binned) -> PLDPReports:
        """One collection of ``people``'s reports (a fresh public sign matrix) on ``crowd``'s domain."""
        return self._per_user_on(self.attack_domain(people, crowd), people, rng)

    def report_likelihood(self, reports: PLDPReports) -> np.ndarray:
        """``(n, d*d)``: P((j, s) | location v) = (1/m) [e^eps/(e^eps+1) if s = sign[j, v] else 1/(e^eps+1)]
        (the rows of :func:`pcep_channel`, given the published matrix), spread to the grid's cells."""
        keep = math.exp(self.epsilon) / (math.exp(self.epsilon) + 1.0)
        agree = reports.signs[reports.rows].astype(np.int64) == np.asarray(reports.reported)[:, None]
        lik = np.where(agree, keep, 1.0 - keep) / reports.signs.shape[0]
        return domain_likelihood_to_cells(self.grid, reports.domain, lik)

    def _rows(self, domain: LocationDomain) -> int:
        """m: ``projection_dim`` or the default formula, capped by the public matrix's size."""
        cap = max(1, MAX_PROJECTION_ENTRIES // domain.size)
        if self.projection_dim is not None:
            require(self.projection_dim <= cap,
                    f"projection_dim = {self.projection_dim:,} is too large for a domain of {domain.size:,} "
                    f"locations: the public matrix may have at most {MAX_PROJECTION_ENTRIES:,} entries, so "
                    f"projection_dim <= {cap:,} here. Lower projection_dim.")
        return self.projection_dim or min(projection_dim(domain.size, self.epsilon), cap)

    def per_user(self, users: Binned, rng: np.random.Generator) -> PLDPReports:
        """One collection: the server draws and publishes the sign matrix, each phone sends a row and a sign."""
        return self._per_user_on(self.build_domain(users), users, rng)

    def _per_user_on(self, domain: LocationDomain, users: Binned, rng: np.random.Generator) -> PLDPReports:
        positions = self.positions(domain, users)
        signs = projection_signs(self._rows(domain), domain.size, int(rng.integers(0, 2 ** 63 - 1)))
        rows, reported = pcep_perturb(positions, signs, self.epsilon, rng)
        return PLDPReports(domain, signs, rows, reported)

    def aggregate(self, users: Binned, rng: np.random.Generator) -> PLDPRowSums:
        """One collection on the aggregate path: the same public matrix, then the exact row sums of the signs."""
        domain = self.build_domain(users)
        counts = np.bincount(self.positions(domain, users), minlength=domain.size)
        signs = projection_signs(self._rows(domain), domain.size, int(rng.integers(0, 2 ** 63 - 1)))
        return PLDPRowSums(domain, signs, pcep_row_sums_aggregate(counts, signs, self.epsilon, rng),
                           int(counts.sum()))

    def choose(self, users: Binned) -> str:
        domain = self.build_domain(users)
        occupied = len(np.unique(self.positions(domain, users))) if len(users.cells) else 0
        draws = occupied * self._rows(domain)
        faster = AGGREGATE_SECONDS_PER_DRAW * draws < PER_USER_SECONDS_PER_USER * len(users.cells)
        return AGGREGATE if faster else PER_USER

    def estimate(self, reports: PLDPReports | PLDPRowSums) -> Estimate:
        domain, m = reports.domain, reports.signs.shape[0]
        aggregated = isinstance(reports, PLDPRowSums)
        if aggregated:
            counts = pcep_counts_from_rows(reports.row_sums, reports.signs, self.epsilon)
        else:
            counts = pcep_estimate_counts(reports.rows, reports.reported, reports.signs, self.epsilon)
        probs = to_distribution(counts, self.projection)
        density, partition = domain_to_grid(self.grid, domain, probs)
        return Estimate(density, partition=partition, raw=counts, info={
            "reports": int(reports.n if aggregated else len(reports.rows)), "domain": domain.kind,
            "domain_size": domain.size, "projection_dim": m, **self.path_info(AGGREGATE if aggregated else PER_USER),
            "projection_dim_capped": self.projection_dim is None and m < projection_dim(domain.size, self.epsilon)})
