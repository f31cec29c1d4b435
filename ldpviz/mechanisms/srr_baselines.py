"""GRR and HR over SRR's location domain: the L-SRR paper's Sec. 6.2 baselines as the paper ran them.

Paper: l-srr-staircase-randomized-response.md Sec. 6.1-6.2. In the paper every
scheme (GRR, OLH-H, PLDP, HR, L-SRR) works on the same location domain: the
locations reported in the city region ("Only the reported locations in this
area are considered as the domain"). The tool's ``grr`` and ``hr`` work on
every cell of the evaluation grid, empty cells included, which is a larger
domain than SRR's occupied tiles. ``grr-tiles`` and ``hr-tiles`` run the same
frequency oracles (``ldpviz.mechanisms.fo``: L-SRR eq. 1 and ref. [38]) on
SRR's public location domain (:func:`ldpviz.mechanisms.srr.build_location_domain`),
so the comparison of Fig. 8 / Table 3 is like for like (with ``domain="occupied"``,
the paper's setting; the default is the public grid domain, see srr.py). Privacy is that of the
oracle on a domain of D values (e^eps ratio; channel tests in tests/test_fo_*.py
and tests/test_srr_claims.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ldpviz.domain import Binned
from ldpviz.estimation import to_distribution
from ldpviz.mechanisms import register
from ldpviz.mechanisms.base import LDP, Estimate, Param
from ldpviz.mechanisms.fo import grr_channel, grr_estimate_counts, grr_perturb
from ldpviz.mechanisms.hadamard import (HR_VARIANT_PARAM, hadamard_channel, hadamard_code, hadamard_estimate_counts,
                                        hadamard_histogram, hadamard_perturb)
from ldpviz.mechanisms.srr import (FAMILY_SRR, LocationDomain, LocationDomainMechanism, domain_likelihood_to_cells,
                                   domain_param, domain_to_grid, level_param)

_DOMAIN_PARAMS = (
    domain_param(),
    level_param(),
    Param("projection", str, "norm-sub", "how unbiased counts become a distribution", choices=("norm-sub", "clip")),
)


@dataclass(frozen=True)
class DomainReports:
    """What the server receives: the public location domain and one oracle report per user."""

    domain: LocationDomain
    reports: np.ndarray


class _TileOracle(LocationDomainMechanism):
    """A frequency oracle on SRR's location domain; subclasses give the client and server halves."""

    family = FAMILY_SRR
    privacy_model = LDP
    params = _DOMAIN_PARAMS
    has_channel = True    # with the public grid domain (see LocationDomainMechanism)

    def perturb_positions(self, positions: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
        raise NotImplementedError  # pragma: no cover

    def estimate_positions(self, reports: np.ndarray, size: int) -> np.ndarray:
        raise NotImplementedError  # pragma: no cover

    def domain_channel(self, size: int) -> np.ndarray:
        raise NotImplementedError  # pragma: no cover

    def perturb(self, users: Binned, rng: np.random.Generator) -> DomainReports:
        domain = self.build_domain(users)
        return DomainReports(domain, self.perturb_positions(self.positions(domain, users), domain.size, rng))

    def estimate(self, reports: DomainReports) -> Estimate:
        domain = reports.domain
        counts = self.estimate_positions(reports.reports, domain.size)
        probs = to_distribution(counts, self.projection)
        density, partition = domain_to_grid(self.grid, domain, probs)
        return Estimate(density, partition=partition, raw=counts, info={
            "reports": int(len(reports.reports)), "domain": domain.kind, "domain_size": domain.size,
            "level": domain.level})

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

    def perturb_positions(self, positions: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
        return grr_perturb(positions, size, self.epsilon, rng)

    def estimate_positions(self, reports: np.ndarray, size: int) -> np.ndarray:
        return grr_estimate_counts(reports, size, self.epsilon)

    def domain_channel(self, size: int) -> np.ndarray:
        return grr_channel(size, self.epsilon)


@register
class HRTiles(_TileOracle):
    """Hadamard response (ref. [38]) over SRR's location domain (public grid by default; occupied tiles on request).

    ``variant`` as for ``hr`` (:mod:`ldpviz.mechanisms.hadamard`): by default the code with the smaller
    variance at this domain size and epsilon, the general-privacy HR beyond epsilon ~ 1.5.
    """

    name = "hr-tiles"
    label = "HR over SRR's location tiles (L-SRR baseline)"
    reference = "l-srr-staircase-randomized-response.md Sec. 3.5, 6.2 and ref. [38] (HR on the location domain)"
    summary = ("Like HR, but the code words index the same places SRR uses: the grid cells (blocks of cells on "
               "large grids), or on request the map tiles where people are, as in the paper.")

    params = _DOMAIN_PARAMS + (HR_VARIANT_PARAM,)

    def perturb_positions(self, positions: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
        return hadamard_perturb(positions, hadamard_code(size, self.epsilon, self.variant), rng)

    def estimate_positions(self, reports: np.ndarray, size: int) -> np.ndarray:
        code = hadamard_code(size, self.epsilon, self.variant)
        return hadamard_estimate_counts(hadamard_histogram(reports, code), code)

    def domain_channel(self, size: int) -> np.ndarray:
        return hadamard_channel(hadamard_code(size, self.epsilon, self.variant))
