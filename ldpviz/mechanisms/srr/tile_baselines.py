"""GRR and HR over SRR's location domain: the L-SRR paper's Sec. 6.2 baselines as the paper ran them.

Paper: l-srr-staircase-randomized-response.md Sec. 6.1-6.2. In the paper every
scheme (GRR, OLH-H, PLDP, HR, L-SRR) works on the same location domain: the
locations reported in the city region ("Only the reported locations in this
area are considered as the domain"). The tool's ``grr`` and ``hr`` work on
every cell of the evaluation grid, empty cells included, which is a larger
domain than SRR's occupied tiles. ``grr-tiles`` and ``hr-tiles`` run the same
frequency oracles (``ldpviz.mechanisms.fo.oracles``: L-SRR eq. 1 and ref. [38]) on
SRR's public location domain (:func:`ldpviz.mechanisms.srr.staircase.build_location_domain`),
so the comparison of Fig. 8 / Table 3 is like for like (with ``domain="occupied"``,
the paper's setting; the default is the public grid domain, see srr.py). Privacy is that of the
oracle on a domain of D values (e^eps ratio; channel tests in tests/mechanisms/fo/test_fo_*.py
and tests/mechanisms/srr/test_srr_claims.py).

Both have the oracles' exact aggregate path over the domain's positions
(:func:`~ldpviz.mechanisms.fo.oracles.grr_aggregate_histogram`,
:func:`~ldpviz.mechanisms.fo.hadamard.hadamard_aggregate_histogram`: the report histogram, the
server's sufficient statistic) and the ``path`` parameter of :mod:`ldpviz.mechanisms.collection_paths`;
'auto' uses the oracles' fitted cost models (``path_cost.choose_path``) for n users over D locations.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ldpviz.geo.domain import Binned
from ldpviz.mechanisms.estimation import to_distribution
from ldpviz.mechanisms import register
from ldpviz.mechanisms.base import LDP, Estimate, Param
from ldpviz.mechanisms.fo.oracles import (ReportHistogram, grr_aggregate_histogram, grr_channel, grr_estimate_counts,
                                          grr_perturb)
from ldpviz.mechanisms.fo.hadamard import (HR_VARIANT_PARAM, hadamard_aggregate_histogram, hadamard_channel,
                                           hadamard_code, hadamard_estimate_counts, hadamard_histogram,
                                           hadamard_perturb)
from ldpviz.mechanisms.path_cost import AGGREGATE, PER_USER, choose_path
from ldpviz.mechanisms.srr.staircase import (FAMILY_SRR, LocationDomain, LocationDomainMechanism,
                                             domain_likelihood_to_cells, domain_param, domain_to_grid, level_param)
from ldpviz.mechanisms.collection_paths import TwoPaths, path_param

_DOMAIN_PARAMS = (
    domain_param(),
    level_param(),
    Param("projection", str, "norm-sub", "how unbiased counts become a distribution", choices=("norm-sub", "clip")),
    path_param("the report histogram over the domain", "the oracle's cost model for n users over D locations"),
)


@dataclass(frozen=True)
class DomainReports:
    """What the server receives: the public location domain and one oracle report per user, or (aggregate
    path) their histogram, drawn exactly."""

    domain: LocationDomain
    reports: np.ndarray | ReportHistogram


class _TileOracle(TwoPaths, LocationDomainMechanism):
    """A frequency oracle on SRR's location domain; subclasses give the client and server halves."""

    oracle: str   #: the oracle whose cost model picks the path ('grr' or 'hr')

    family = FAMILY_SRR
    privacy_model = LDP
    params = _DOMAIN_PARAMS
    has_channel = True    # with the public grid domain (see LocationDomainMechanism)

    def perturb_positions(self, positions: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
        raise NotImplementedError  # pragma: no cover

    def estimate_positions(self, reports: np.ndarray | ReportHistogram, size: int) -> np.ndarray:
        raise NotImplementedError  # pragma: no cover

    def aggregate_positions(self, counts: np.ndarray, rng: np.random.Generator) -> ReportHistogram:
        raise NotImplementedError  # pragma: no cover

    def domain_channel(self, size: int) -> np.ndarray:
        raise NotImplementedError  # pragma: no cover

    def per_user(self, users: Binned, rng: np.random.Generator) -> DomainReports:
        domain = self.build_domain(users)
        return DomainReports(domain, self.perturb_positions(self.positions(domain, users), domain.size, rng))

    def aggregate(self, users: Binned, rng: np.random.Generator) -> DomainReports:
        domain = self.build_domain(users)
        counts = np.bincount(self.positions(domain, users), minlength=domain.size)
        return DomainReports(domain, self.aggregate_positions(counts, rng))

    def choose(self, users: Binned) -> str:
        return choose_path(self.oracle, len(users.cells), self.build_domain(users).size)

    def estimate(self, reports: DomainReports) -> Estimate:
        domain = reports.domain
        counts = self.estimate_positions(reports.reports, domain.size)
        probs = to_distribution(counts, self.projection)
        density, partition = domain_to_grid(self.grid, domain, probs)
        hist = isinstance(reports.reports, ReportHistogram)
        return Estimate(density, partition=partition, raw=counts, info={
            "reports": int(reports.reports.n if hist else len(reports.reports)), "domain": domain.kind,
            "domain_size": domain.size, "level": domain.level,
            **self.path_info(reports.reports.path if hist else PER_USER)})

    def attack_reports(self, people: Binned, rng: np.random.Generator, crowd: Binned) -> DomainReports:
        """Reports of ``people`` on the collection's domain (Monte Carlo attacker; used only without a channel
        over single cells: occupied tiles, or blocks of cells on grids beyond 64 x 64)."""
        domain = self.attack_domain(people, crowd)
        return DomainReports(domain, self.perturb_positions(self.positions(domain, people), domain.size, rng))

    def report_likelihood(self, reports: DomainReports) -> np.ndarray:
        """``(n, d*d)``: the oracle's channel rows for each report, spread from locations to cells."""
        q = self.domain_channel(reports.domain.size)[np.asarray(reports.reports, dtype=np.int64)]
        return domain_likelihood_to_cells(self.grid, reports.domain, q)

    def channel(self) -> np.ndarray:
        """The oracle's channel over the grid's cells (public grid domain, grids up to 4,096 cells)."""
        return self.channel_over_cells(lambda domain: self.domain_channel(domain.size))


@register
class GRRTiles(_TileOracle):
    """GRR (L-SRR eq. 1) over SRR's location domain (public grid by default; occupied tiles on request)."""

    name = "grr-tiles"
    label = "GRR over SRR's location tiles (L-SRR baseline)"
    reference = "l-srr-staircase-randomized-response.md eq. (1), Sec. 6.2 (GRR baseline on the location domain)"
    summary = ("Like GRR, but the phone chooses among the same places SRR uses: the grid cells (blocks of cells "
               "on large grids), or on request the map tiles where people are, as in the paper.")

    oracle = "grr"

    def perturb_positions(self, positions: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
        return grr_perturb(positions, size, self.epsilon, rng)

    def aggregate_positions(self, counts: np.ndarray, rng: np.random.Generator) -> ReportHistogram:
        return grr_aggregate_histogram(counts, self.epsilon, rng)

    def estimate_positions(self, reports: np.ndarray | ReportHistogram, size: int) -> np.ndarray:
        return grr_estimate_counts(reports, size, self.epsilon)

    def domain_channel(self, size: int) -> np.ndarray:
        return grr_channel(size, self.epsilon)


@register
class HRTiles(_TileOracle):
    """Hadamard response (ref. [38]) over SRR's location domain (public grid by default; occupied tiles on request).

    ``variant`` as for ``hr`` (:mod:`ldpviz.mechanisms.fo.hadamard`): by default the code with the smaller
    variance at this domain size and epsilon, the general-privacy HR beyond epsilon ~ 1.5.
    """

    name = "hr-tiles"
    label = "HR over SRR's location tiles (L-SRR baseline)"
    reference = "l-srr-staircase-randomized-response.md Sec. 3.5, 6.2 and ref. [38] (HR on the location domain)"
    summary = ("Like HR, but the code words index the same places SRR uses: the grid cells (blocks of cells on "
               "large grids), or on request the map tiles where people are, as in the paper.")

    params = _DOMAIN_PARAMS + (HR_VARIANT_PARAM,)
    oracle = "hr"

    def perturb_positions(self, positions: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
        return hadamard_perturb(positions, hadamard_code(size, self.epsilon, self.variant), rng)

    def aggregate_positions(self, counts: np.ndarray, rng: np.random.Generator) -> ReportHistogram:
        code = hadamard_code(len(counts), self.epsilon, self.variant)
        return ReportHistogram(hadamard_aggregate_histogram(counts, code, rng), int(counts.sum()), AGGREGATE)

    def estimate_positions(self, reports: np.ndarray | ReportHistogram, size: int) -> np.ndarray:
        code = hadamard_code(size, self.epsilon, self.variant)
        hist = reports.counts if isinstance(reports, ReportHistogram) else hadamard_histogram(reports, code)
        return hadamard_estimate_counts(hist, code)

    def domain_channel(self, size: int) -> np.ndarray:
        return hadamard_channel(hadamard_code(size, self.epsilon, self.variant))
