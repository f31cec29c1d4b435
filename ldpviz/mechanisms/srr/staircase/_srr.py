"""The SRR mechanism: its reports, its histogram and the two collection paths."""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from ldpviz.geo import quadkey
from ldpviz.geo.domain import Binned
from ldpviz.mechanisms.estimation import to_distribution
from ldpviz.mechanisms import register
from ldpviz.mechanisms.base import LDP, Estimate, Param
from ldpviz.mechanisms.path_cost import AGGREGATE, PER_USER
from ldpviz.mechanisms.collection_paths import TwoPaths, path_param
from ldpviz.mechanisms.srr.staircase._domain import (FAMILY_SRR, LocationDomain, domain_param, level_param,
                                                     domain_guarantee, LocationDomainMechanism,
                                                     domain_likelihood_to_cells, domain_to_grid)
from ldpviz.mechanisms.srr.staircase._plan import StaircasePlan, cached_plan
from ldpviz.mechanisms.srr.staircase._online import (perturb_positions, aggregate_histogram, hadamard_estimate,
                                                     em_estimate)


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
