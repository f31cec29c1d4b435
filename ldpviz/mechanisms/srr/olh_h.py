"""OLH-H: OLH over the quadkey hierarchy with constrained inference (L-SRR Sec. 6.2 baseline).

Paper: l-srr-staircase-randomized-response.md Sec. 6.2 ("we randomly sample a
hierarchical level for each location ... adapt the constrained inference [34]
to adjust the frequencies of parent and leaf nodes for consistency"); OLH from
Wang et al. USENIX Security'17 (ldpviz.mechanisms.fo.oracles); constrained inference
from Hay et al., VLDB'10 (ref. [34]).

The hierarchy is the quadkey tree of the SRR location domain (by default the
public grid's quadtree; with ``domain="occupied"`` the occupied tiles at level
h, the paper's setting, see srr.py on why that is not LDP): level l holds the distinct level-l ancestors
of the domain, from the first level with two or more nodes down to h. Each
user picks one level uniformly at random (independently of the location) and
reports their level-l node with OLH at the full epsilon, so the protocol is
epsilon-LDP. The server estimates every level's frequencies (OLH support
counts scaled by the level's number of reports) and makes them consistent.

Constrained inference: Hay et al.'s two-pass formulas assume a complete k-ary
tree; the quadkey tree of occupied tiles is not complete, so we use the same
two passes in their general form (the exact least-squares solution for any
tree with known node variances): bottom-up, each node's estimate is combined
with the sum of its children's by inverse-variance weighting; top-down, each
parent's residual is shared among the children in proportion to their
variances. The root is the whole population (frequency 1, known exactly).

Aggregate path (``path``, see :mod:`ldpviz.mechanisms.collection_paths`): the server's sufficient
statistic is, per level, the number of reports at that level and the OLH support count of
every node. Each user picks its level uniformly and independently, so the users of a leaf
split over the levels as Multinomial(n_leaf, uniform); the level's node counts are sums of
those, and given them each level is plain OLH, whose support counts are drawn by
:func:`~ldpviz.mechanisms.fo.oracles.olh_aggregate_support` (exact for a fully random hash family,
as USENIX'17's analysis assumes; the per-user universal family matches it in every per-node
marginal). 'auto' sums OLH's fitted cost model (``path_cost``) over the levels at n / L users each.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ldpviz.geo.domain import Binned
from ldpviz.mechanisms.estimation import to_distribution
from ldpviz.mechanisms import register
from ldpviz.mechanisms.base import LDP, Estimate, Param
from ldpviz.mechanisms.fo.oracles import (OLHReports, SupportCounts, olh_aggregate_support, olh_buckets,
                                          olh_estimate_counts, olh_perturb, olh_probabilities, olh_supports)
from ldpviz.mechanisms.path_cost import AGGREGATE, PER_USER, predicted_seconds
from ldpviz.mechanisms.srr.staircase import (FAMILY_SRR, LocationDomain, LocationDomainMechanism,
                                             domain_likelihood_to_cells, domain_param, domain_to_grid, level_param)
from ldpviz.mechanisms.collection_paths import TwoPaths, path_param


def hierarchy(domain: LocationDomain) -> list[tuple[np.ndarray, np.ndarray]]:
    """Levels from the top (first with >= 2 nodes) to the leaves: ``(node_codes, leaf_to_node_index)``."""
    depth = domain.n_bits // 2
    levels = []
    for level in range(1, depth + 1):
        prefix = domain.codes >> (2 * (depth - level))
        nodes, index = np.unique(prefix, return_inverse=True)
        if len(nodes) >= 2 or level == depth:
            levels.append((nodes, index.reshape(-1)))
    return levels


def olh_node_variance(epsilon: float, n_level: int) -> float:
    """Variance of an OLH frequency (fraction of all users) from ``n_level`` reports (USENIX'17 eq. 6)."""
    g = olh_buckets(epsilon)
    p, _ = olh_probabilities(epsilon, g)
    q = 1.0 / g
    return q * (1 - q) / (max(n_level, 1) * (p - q) ** 2)


def constrained_inference(levels: list[tuple[np.ndarray, np.ndarray]], noisy: list[np.ndarray],
                          variances: list[float]) -> list[np.ndarray]:
    """Least-squares consistent frequencies on the tree (two passes; root = 1 exactly)."""
    parents: list[np.ndarray] = []                 # parent of a level-i node = level-(i-1) node of its leaves
    for i in range(1, len(levels)):
        nodes, idx = levels[i]
        _, idx_up = levels[i - 1]
        par = np.empty(len(nodes), dtype=np.int64)
        par[idx] = idx_up
        parents.append(par)
    est = [np.asarray(z, dtype=float).copy() for z in noisy]
    var = [np.full(len(z), v) for z, v in zip(noisy, variances)]
    for i in range(len(levels) - 1, 0, -1):        # bottom-up
        par = parents[i - 1]
        s = np.bincount(par, weights=est[i], minlength=len(est[i - 1]))
        v = np.bincount(par, weights=var[i], minlength=len(est[i - 1]))
        w_own = 1.0 / var[i - 1]
        w_kids = np.where(v > 0, 1.0 / np.where(v > 0, v, 1.0), np.inf)
        combined = np.where(np.isinf(w_kids), s, (est[i - 1] * w_own + s * w_kids) / (w_own + w_kids))
        var[i - 1] = np.where(np.isinf(w_kids), 0.0, 1.0 / (w_own + w_kids))
        est[i - 1] = combined
    out = [None] * len(levels)
    top = est[0] + (1.0 - est[0].sum()) * var[0] / var[0].sum()     # root = 1
    out[0] = top
    for i in range(1, len(levels)):                # top-down
        par = parents[i - 1]
        s = np.bincount(par, weights=est[i], minlength=len(out[i - 1]))
        v = np.bincount(par, weights=var[i], minlength=len(out[i - 1]))
        share = np.where(v[par] > 0, var[i] / np.where(v[par] > 0, v[par], 1.0), 0.0)
        out[i] = est[i] + (out[i - 1] - s)[par] * share
    return out


@dataclass(frozen=True)
class OLHHReports:
    """What the server receives: the public domain and, per user, its level and OLH report at that level."""

    domain: LocationDomain
    levels: np.ndarray     #: index into :func:`hierarchy` (0 = top)
    seeds: np.ndarray      #: uint64 hash seeds (see ldpviz.mechanisms.fo.oracles.olh_hash)
    buckets: np.ndarray    #: perturbed buckets in [0, g)
    g: int


@dataclass(frozen=True)
class OLHHStatistic:
    """The aggregate path's report statistic: the public domain and, per level, its OLH support counts (whose
    ``n`` is the number of users who reported at that level)."""

    domain: LocationDomain
    levels: list[SupportCounts]
    g: int


@register
class OLHH(TwoPaths, LocationDomainMechanism):
    """OLH over the quadkey hierarchy, one random level per user, with constrained inference (Sec. 6.2)."""

    name = "olh-h"
    label = "OLH-H (hierarchical OLH)"
    family = FAMILY_SRR
    privacy_model = LDP
    reference = ("l-srr-staircase-randomized-response.md Sec. 6.2; Wang et al. USENIX Security'17 (OLH); "
                 "Hay et al. VLDB'10 (constrained inference)")
    summary = ("Each phone reports, with hashed randomized response, which block it is in at one randomly "
               "chosen zoom level; the server makes the levels agree.")
    params = (
        domain_param(),
        level_param(),
        Param("projection", str, "norm-sub", "how the leaf estimates become a distribution",
              choices=("norm-sub", "clip")),
        path_param("every level's report count and OLH support counts",
                   "OLH's cost model summed over the levels at n / L users each"),
    )

    def choose(self, users: Binned) -> str:
        levels = hierarchy(self.build_domain(users))
        n = len(users.cells) / len(levels)
        cost = {path: sum(predicted_seconds("olh", path, n, len(nodes)) for nodes, _ in levels)
                for path in (PER_USER, AGGREGATE)}
        return AGGREGATE if cost[AGGREGATE] < cost[PER_USER] else PER_USER

    def aggregate(self, users: Binned, rng: np.random.Generator) -> OLHHStatistic:
        """Per level: its users (a uniform multinomial split of every leaf's users) and their OLH support counts."""
        domain = self.build_domain(users)
        leaf_counts = np.bincount(self.positions(domain, users), minlength=domain.size)
        levels = hierarchy(domain)
        split = rng.multinomial(leaf_counts, np.full(len(levels), 1.0 / len(levels)))      # (leaves, levels)
        g = olh_buckets(self.epsilon)
        stats = [olh_aggregate_support(np.bincount(index, weights=split[:, i], minlength=len(nodes)).astype(np.int64),
                                       self.epsilon, rng, g) for i, (nodes, index) in enumerate(levels)]
        return OLHHStatistic(domain, stats, g)

    def per_user(self, users: Binned, rng: np.random.Generator) -> OLHHReports:
        """Each phone picks a level uniformly and sends an OLH report of its node at that level."""
        return self._perturb_on(self.build_domain(users), users, rng)

    def attack_reports(self, people: Binned, rng: np.random.Generator, crowd: Binned) -> OLHHReports:
        """One report per person on the domain a collection of ``crowd`` uses (public grid: the grid alone)."""
        return self._perturb_on(self.attack_domain(people, crowd), people, rng)

    def report_likelihood(self, reports: OLHHReports) -> np.ndarray:
        """``(n, d*d)``: P(report | location) up to factors of the report alone. A report is (level l, seed,
        bucket) (Sec. 6.2): the level is drawn independently of the location (a constant factor), and given
        it the report is OLH on the level-l node, so leaf v has p where H_seed(node_l(v)) = bucket, else q
        (grid paper eq. 2); spread from the domain's locations to the grid's cells."""
        domain = reports.domain
        p, q = olh_probabilities(self.epsilon, reports.g)
        out = np.empty((len(reports.levels), domain.size))
        for i, (nodes, index) in enumerate(hierarchy(domain)):
            mine = np.flatnonzero(reports.levels == i)
            if len(mine):
                level = OLHReports(reports.seeds[mine], reports.buckets[mine], reports.g)
                out[mine] = np.where(olh_supports(level, len(nodes))[:, index], p, q)
        return domain_likelihood_to_cells(self.grid, domain, out)

    def _perturb_on(self, domain: LocationDomain, users: Binned, rng: np.random.Generator) -> OLHHReports:
        leaves = self.positions(domain, users)
        levels = hierarchy(domain)
        n = len(leaves)
        choice = rng.integers(0, len(levels), size=n)
        g = olh_buckets(self.epsilon)
        seeds, buckets = np.zeros(n, dtype=np.uint64), np.zeros(n, dtype=np.int64)
        for i, (nodes, index) in enumerate(levels):
            mine = choice == i
            if mine.any():
                part = olh_perturb(index[leaves[mine]], len(nodes), self.epsilon, rng, g)
                seeds[mine], buckets[mine] = part.seeds, part.buckets
        return OLHHReports(domain, choice, seeds, buckets, g)

    def estimate(self, reports: OLHHReports | OLHHStatistic) -> Estimate:
        domain = reports.domain
        levels = hierarchy(domain)
        noisy, variances, per_level = [], [], []
        aggregated = isinstance(reports, OLHHStatistic)
        for i, (nodes, _) in enumerate(levels):
            if aggregated:
                level_reports: OLHReports | SupportCounts = reports.levels[i]
                n_level = int(reports.levels[i].n)
            else:
                mine = reports.levels == i
                n_level = int(mine.sum())
                level_reports = OLHReports(reports.seeds[mine], reports.buckets[mine], reports.g)
            if n_level:
                counts = olh_estimate_counts(level_reports, len(nodes), self.epsilon, reports.g)
                noisy.append(counts / n_level)
            else:
                noisy.append(np.full(len(nodes), 1.0 / len(nodes)))
            variances.append(olh_node_variance(self.epsilon, n_level) if n_level else 1e12)
            per_level.append(n_level)
        consistent = constrained_inference(levels, noisy, variances)
        probs = to_distribution(consistent[-1], self.projection)
        density, partition = domain_to_grid(self.grid, domain, probs)
        return Estimate(density, partition=partition, raw=consistent[-1], info={
            "reports": int(sum(per_level)), "domain": domain.kind, "domain_size": domain.size,
            "levels": len(levels), "reports_per_level": per_level,
            **self.path_info(AGGREGATE if aggregated else PER_USER)})

    def report_key(self, reports: OLHHReports) -> np.ndarray:
        """For the black-box audit: the user's level and which leaves its report supports, ``(n, 1 + D)``.

        As for OLH (:meth:`ldpviz.mechanisms.fo.oracles.OLH.report_key`), a raw report carries a
        fresh hash seed; whether it supports leaf v at the reported level is a function
        of the report (post-processing), so events on it are sound.
        """
        domain = reports.domain
        n = len(reports.levels)
        out = np.zeros((n, 1 + domain.size), dtype=np.int64)
        out[:, 0] = reports.levels
        for i, (nodes, index) in enumerate(hierarchy(domain)):
            mine = np.flatnonzero(reports.levels == i)
            if len(mine):
                level = OLHReports(reports.seeds[mine], reports.buckets[mine], reports.g)
                out[mine, 1:] = olh_supports(level, len(nodes))[:, index]   # a leaf is supported via its node
        return out
