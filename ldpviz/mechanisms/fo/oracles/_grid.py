"""The frequency-oracle mechanisms over the d x d evaluation grid: Exact, GRR, OLH, OUE, HR."""

from __future__ import annotations

from typing import Any

import numpy as np

from ldpviz.geo.domain import Binned
from ldpviz.errors import require
from ldpviz.mechanisms.estimation import to_distribution
from ldpviz.mechanisms import register
from ldpviz.mechanisms.base import LDP, NO_PRIVACY, Estimate, Mechanism, Param
from ldpviz.mechanisms.path_cost import AGGREGATE, AUTO, PER_USER, choose_path
from ldpviz.mechanisms.fo.hadamard import (HR_VARIANT_PARAM, hadamard_aggregate_histogram, hadamard_channel,
                                        hadamard_code, hadamard_estimate_counts, hadamard_histogram,
                                        hadamard_perturb)
from ldpviz.mechanisms.fo.oracles._common import (FAMILY_FO, PATHS, ReportHistogram, SupportCounts, OLHReports,
                                                  OUEReports)
from ldpviz.mechanisms.fo.oracles._grr import (grr_probabilities, grr_perturb, grr_estimate_counts, grr_channel,
                                               grr_aggregate_histogram)
from ldpviz.mechanisms.fo.oracles._olh import (olh_buckets, olh_perturb, olh_estimate_counts, olh_supports,
                                               olh_aggregate_support)
from ldpviz.mechanisms.fo.oracles._oue import oue_probabilities, oue_perturb, oue_estimate_counts, oue_aggregate_support
from ldpviz.mechanisms.fo.oracles._dispatch import oracle_statistic
from ldpviz.mechanisms.fo.oracles._likelihood import oue_report_likelihood, olh_report_likelihood, grr_report_likelihood


# ---------------------------------------------------------------------------
# Mechanisms over the d x d evaluation grid
# ---------------------------------------------------------------------------

_PROJECTION = Param("projection", str, "clip",
                    "how unbiased counts (which can be negative) become the map's distribution: 'clip' "
                    "(zero the negatives) or 'norm-sub' (Wang et al. NDSS'20)", choices=("clip", "norm-sub"))


def _path_param(what: str) -> Param:
    return Param("path", str, AUTO,
                 f"'per-user' simulates every phone; 'aggregate' draws {what} directly from its exact "
                 "distribution (the same distribution of the server's statistic); 'auto' (default) takes the "
                 "one predicted faster for this number of users and cells by a cost model fitted to measured "
                 "wall times of both halves (ldpviz.mechanisms.path_cost; docs/fo-benchmark.md)",
                 choices=PATHS)


@register
class Exact(Mechanism):
    """No privacy: every report is the true cell. The reference point (W2 = 0)."""

    name = "exact"
    label = "Exact (no privacy)"
    family = "Reference"
    privacy_model = NO_PRIVACY
    reference = "baseline: the true histogram"
    summary = "Each phone sends its true grid cell; the map is exact and nobody is protected."
    has_channel = True

    def perturb(self, users: Binned, rng: np.random.Generator) -> np.ndarray:
        return np.asarray(users.cells, dtype=np.int64).copy()

    def statistic(self, reports: np.ndarray | ReportHistogram) -> ReportHistogram:
        """The histogram of reports (additive over groups of users)."""
        if isinstance(reports, ReportHistogram):
            return reports
        return ReportHistogram(np.bincount(np.asarray(reports, dtype=np.int64), minlength=self.grid.n_cells),
                               len(reports), PER_USER)

    def estimate(self, reports: np.ndarray | ReportHistogram) -> Estimate:
        hist = self.statistic(reports)
        counts = np.asarray(hist.counts, dtype=float).reshape(self.grid.side, self.grid.side)
        return Estimate(to_distribution(counts), raw=counts, info={"reports": int(hist.n)})

    def channel(self) -> np.ndarray:
        return np.eye(self.grid.n_cells)


class _GridOracle(Mechanism):
    """Shared server side: unbiased counts -> (d, d) raw estimate -> projected distribution."""

    family = FAMILY_FO
    privacy_model = LDP

    def _true_counts(self, users: Binned) -> np.ndarray:
        return np.bincount(np.asarray(users.cells, dtype=np.int64), minlength=self.grid.n_cells)

    def estimate_counts(self, reports) -> np.ndarray:  # pragma: no cover - overridden
        raise NotImplementedError

    def _n_reports(self, reports) -> int:
        if isinstance(reports, (ReportHistogram, SupportCounts)):
            return reports.n
        if isinstance(reports, OLHReports):
            return len(reports.buckets)
        if isinstance(reports, OUEReports):
            return len(reports.packed)
        return len(reports)

    def path_for(self, n_users: int) -> str:
        """The path :meth:`collect` takes for ``n_users``: the one forced by ``path``, or with 'auto' the
        one :func:`~ldpviz.mechanisms.path_cost.choose_path` predicts faster."""
        return self.path if self.path != AUTO else choose_path(self.name, int(n_users), self.grid.n_cells)

    def perturb(self, users: Binned, rng: np.random.Generator) -> Any:
        """Client half: one report per user (with ``path='aggregate'`` forced: the statistic instead)."""
        if self.path == AGGREGATE:
            return self._aggregate(self._true_counts(users), rng)
        return self._per_user(users, rng)

    def collect(self, users: Binned, rng: np.random.Generator) -> Any:
        """What the server receives, on the path :meth:`path_for` picks (reports or their exact statistic)."""
        if self.path_for(len(users.cells)) == AGGREGATE:
            return self._aggregate(self._true_counts(users), rng)
        return self._per_user(users, rng)

    def statistic(self, reports: Any) -> ReportHistogram | SupportCounts:
        """The server's sufficient statistic of ``reports`` (additive over groups of users)."""
        return oracle_statistic(self.name, reports, self.grid.n_cells)

    def _per_user(self, users: Binned, rng: np.random.Generator) -> Any:  # pragma: no cover - overridden
        raise NotImplementedError

    def _aggregate(self, true_counts: np.ndarray, rng: np.random.Generator) -> Any:  # pragma: no cover
        raise NotImplementedError

    def estimate(self, reports) -> Estimate:
        d = self.grid.side
        raw = self.estimate_counts(reports).reshape(d, d)
        density = to_distribution(raw, self.projection)
        used = reports.path if isinstance(reports, (ReportHistogram, SupportCounts)) else PER_USER
        info = {"reports": self._n_reports(reports), "domain size": self.grid.n_cells, "path": used,
                "path requested": self.path}
        info.update(self._info())
        return Estimate(density, raw=raw, info=info)

    def _info(self) -> dict:
        return {}


@register
class GRR(_GridOracle):
    """Generalised randomised response over the d x d cells.

    Keep the true cell with p = e^eps / (e^eps + D - 1), otherwise report one of
    the other D - 1 cells uniformly, q = 1 / (e^eps + D - 1) each (L-SRR eq. 1).
    Server: unbiased counts c_hat(v) = (C(v) - n q) / (p - q) (USENIX'17 Sec. 4.1),
    then a projection to a distribution (``projection``). The aggregate path
    draws the report histogram exactly in O(D) (:func:`grr_aggregate_histogram`).
    """

    name = "grr"
    label = "GRR (generalised randomised response)"
    reference = "l-srr-staircase-randomized-response.md eq. (1); Wang et al. USENIX Security'17 Sec. 4.1"
    summary = ("Each phone keeps its true cell with a boosted probability, otherwise names a cell uniformly at "
               "random; the server corrects the counts for the known noise.")
    params = (_PROJECTION, _path_param("the report histogram (a binomial per cell plus one multinomial)"))
    has_channel = True

    def setup(self) -> None:
        self.p, self.q = grr_probabilities(self.grid.n_cells, self.epsilon)

    def _per_user(self, users: Binned, rng: np.random.Generator) -> np.ndarray:
        return grr_perturb(users.cells, self.grid.n_cells, self.epsilon, rng)

    def _aggregate(self, true_counts: np.ndarray, rng: np.random.Generator) -> ReportHistogram:
        return grr_aggregate_histogram(true_counts, self.epsilon, rng)

    def estimate_counts(self, reports: np.ndarray | ReportHistogram) -> np.ndarray:
        """Unbiased count estimate for every cell (may be negative)."""
        return grr_estimate_counts(reports, self.grid.n_cells, self.epsilon)

    def _info(self) -> dict:
        return {"p": self.p, "q": self.q}

    def attack_reports(self, people: Binned, rng: np.random.Generator, crowd: Binned) -> np.ndarray:
        """One per-user report for each of ``people`` (the phone's code; ``crowd`` shapes nothing public)."""
        return self._per_user(people, rng)

    def report_likelihood(self, reports: np.ndarray) -> np.ndarray:
        """``(n, D)`` P(report | cell) of each report (the rows of :meth:`channel`)."""
        return grr_report_likelihood(reports, self.epsilon, self.grid.n_cells)

    def channel(self) -> np.ndarray:
        """P[y, x], shape (D, D); built for grids up to 64 x 64."""
        require(self.grid.n_cells <= 4096, "the GRR channel matrix is built only for grids up to 64 x 64")
        return grr_channel(self.grid.n_cells, self.epsilon)


@register
class OLH(_GridOracle):
    """Optimised local hashing over the d x d cells (grid paper Sec. 2.3, eq. 2-3; USENIX'17 Sec. 4.4).

    Each phone draws its own hash function from a universal family (see
    :func:`olh_hash`), hashes its cell into g = round(e^eps + 1) buckets and
    perturbs the bucket by eq. 2; the report is <hash seed, bucket>. The server
    evaluates every user's hash on every cell (support counts) and applies eq. 3.
    The full channel over (seed, bucket) is not a matrix we can list; the
    per-hash-function channel (:func:`olh_hash_channel`) is what the tests check.
    """

    name = "olh"
    label = "OLH (optimised local hashing)"
    reference = ("grid-decompositions-ug-privag-aag.md Sec. 2.3 eq. (2)-(3); Wang et al. USENIX Security'17 "
                 "Sec. 4.4")
    summary = ("Each phone hashes its cell into a few buckets with its own random hash function and reports a "
               "noisy bucket; the server counts, for every cell, the reports consistent with it.")
    params = (_PROJECTION, _path_param("the support counts (independent binomials per cell)"))

    def setup(self) -> None:
        self.g = olh_buckets(self.epsilon)

    def _per_user(self, users: Binned, rng: np.random.Generator) -> OLHReports:
        return olh_perturb(users.cells, self.grid.n_cells, self.epsilon, rng, self.g)

    def _aggregate(self, true_counts: np.ndarray, rng: np.random.Generator) -> SupportCounts:
        return olh_aggregate_support(true_counts, self.epsilon, rng, self.g)

    def estimate_counts(self, reports: OLHReports | SupportCounts) -> np.ndarray:
        return olh_estimate_counts(reports, self.grid.n_cells, self.epsilon, self.g)

    def report_key(self, reports: OLHReports | SupportCounts) -> np.ndarray | SupportCounts:
        """For the black-box audit (ldpviz.evidence.audit): which cells each report supports, ``(n, D)`` bool.

        A raw report <seed, bucket> carries a fresh random seed, so no two reports are
        alike and frequency-based events see nothing. Whether the report supports cell v
        (H_seed(v) == bucket) is a function of the report (post-processing, so any event
        on it is sound) and is the event the estimator itself uses: P[supports x | x] = p,
        P[supports x | x'] = 1/g, a ratio of about (e^eps + 1) / 2 <= e^eps.
        """
        return olh_supports(reports, self.grid.n_cells) if isinstance(reports, OLHReports) else reports

    def _info(self) -> dict:
        return {"buckets g": self.g}

    def attack_reports(self, people: Binned, rng: np.random.Generator, crowd: Binned) -> OLHReports:
        """One per-user report <seed, bucket> for each of ``people`` (``crowd`` shapes nothing public)."""
        return self._per_user(people, rng)

    def report_likelihood(self, reports: OLHReports) -> np.ndarray:
        """``(n, D)`` P(report | cell) up to the seed's probability: :func:`olh_report_likelihood`."""
        return olh_report_likelihood(reports, self.epsilon, self.grid.n_cells)


@register
class OUE(_GridOracle):
    """Optimised unary encoding over the d x d cells (USENIX'17 Sec. 4.3).

    One bit per cell; the own bit is reported as 1 with p = 1/2, every other bit
    as 1 with q = 1/(e^eps + 1), independently. Reports are D bits per user.
    """

    name = "oue"
    label = "OUE (optimised unary encoding)"
    reference = "Wang et al. USENIX Security'17 Sec. 4.3 (cited by grid-decompositions-ug-privag-aag.md Sec. 3.1)"
    summary = ("Each phone sends one noisy yes/no bit for every cell; the server counts the yeses per cell and "
               "corrects for the known noise.")
    params = (_PROJECTION, _path_param("the bit counts (independent binomials per cell)"))
    has_channel = False

    def setup(self) -> None:
        self.p, self.q = oue_probabilities(self.epsilon)

    def _aggregate(self, true_counts: np.ndarray, rng: np.random.Generator) -> SupportCounts:
        return oue_aggregate_support(true_counts, self.epsilon, rng)

    def _per_user(self, users: Binned, rng: np.random.Generator) -> OUEReports:
        require(len(users.cells) * self.grid.n_cells <= 1 << 33,
                f"OUE per-user reports for {len(users.cells):,} users x {self.grid.n_cells:,} cells do not fit "
                "in memory; use path='aggregate' or a coarser grid")
        return oue_perturb(users.cells, self.grid.n_cells, self.epsilon, rng)

    def estimate_counts(self, reports: OUEReports | SupportCounts) -> np.ndarray:
        return oue_estimate_counts(reports, self.grid.n_cells, self.epsilon)

    def _info(self) -> dict:
        return {"p": self.p, "q": self.q}

    def attack_reports(self, people: Binned, rng: np.random.Generator, crowd: Binned) -> OUEReports:
        """One per-user report (D bits) for each of ``people`` (``crowd`` shapes nothing public)."""
        return oue_perturb(people.cells, self.grid.n_cells, self.epsilon, rng)

    def report_likelihood(self, reports: OUEReports) -> np.ndarray:
        """``(n, D)`` P(report | cell) up to a factor of the report alone: :func:`oue_report_likelihood`."""
        return oue_report_likelihood(reports, self.epsilon)


@register
class HR(_GridOracle):
    """Hadamard response over the d x d cells (Acharya et al. AISTATS'19; L-SRR Sec. 3.5, ref. [38]).

    ``variant`` picks the code (:mod:`ldpviz.mechanisms.fo.hadamard`): the paper's general-privacy
    HR (B ~ e^eps blocks, their Sec. 5), the high-privacy HR (one block, their Sec. 4; the
    module-level ``hr_*`` functions here), or ``auto``, the one with the smaller variance at
    this (D, eps). Reports are one of K outputs (log2 K bits).
    """

    name = "hr"
    label = "HR (Hadamard response)"
    reference = "l-srr-staircase-randomized-response.md Sec. 3.5 and ref. [38] (Acharya, Sun, Zhang AISTATS'19)"
    summary = ("Each phone reports one code word, drawn with a boosted probability from a set tied to its cell "
               "by a Hadamard matrix; the server inverts the code with one fast transform per block.")
    params = (_PROJECTION, _path_param("the report histogram (per informed value, binomial splits and uniform "
                                       "multinomials within the parts of its code)"), HR_VARIANT_PARAM)
    has_channel = True

    def setup(self) -> None:
        self.code = hadamard_code(self.grid.n_cells, self.epsilon, self.variant)
        self.K = self.code.outputs

    def _per_user(self, users: Binned, rng: np.random.Generator) -> np.ndarray:
        return hadamard_perturb(users.cells, self.code, rng)

    def statistic(self, reports: Any) -> ReportHistogram:
        """The report histogram over this instance's code (general or high-privacy HR)."""
        if isinstance(reports, ReportHistogram):
            return reports
        return ReportHistogram(hadamard_histogram(reports, self.code), len(reports), PER_USER)

    def _aggregate(self, true_counts: np.ndarray, rng: np.random.Generator) -> ReportHistogram:
        return ReportHistogram(hadamard_aggregate_histogram(true_counts, self.code, rng), int(true_counts.sum()))

    def estimate_counts(self, reports: np.ndarray | ReportHistogram) -> np.ndarray:
        hist = reports.counts if isinstance(reports, ReportHistogram) else hadamard_histogram(reports, self.code)
        return hadamard_estimate_counts(hist, self.code)

    def _info(self) -> dict:
        return {"outputs K": self.K, "blocks B": self.code.blocks, "block size b": self.code.block_size}

    def channel(self) -> np.ndarray:
        """P[y, x], shape (K, D); built for grids up to 64 x 64."""
        require(self.grid.n_cells <= 4096, "the HR channel matrix is built only for grids up to 64 x 64")
        return hadamard_channel(self.code)
