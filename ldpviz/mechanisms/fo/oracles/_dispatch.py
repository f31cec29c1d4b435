"""One entry point over every oracle (used by the grid decompositions): perturb, statistic, merge,
estimate, variance."""

from __future__ import annotations

from typing import Any

import numpy as np

from ldpviz.errors import require
from ldpviz.mechanisms.path_cost import AGGREGATE, AUTO, PER_USER, choose_path
from ldpviz.mechanisms.fo.oracles._common import PATHS, ReportHistogram, SupportCounts, pure_variance, _as_values
from ldpviz.mechanisms.fo.oracles._grr import (grr_probabilities, grr_perturb, grr_estimate_counts,
                                               grr_aggregate_histogram)
from ldpviz.mechanisms.fo.oracles._hr import (hr_output_size, hr_perturb, hr_estimate_counts, hr_variance,
                                              hr_aggregate_histogram)
from ldpviz.mechanisms.fo.oracles._olh import (olh_perturb, olh_support_counts, olh_estimate_counts,
                                               olh_aggregate_support, olh_variance)
from ldpviz.mechanisms.fo.oracles._oue import (oue_probabilities, oue_perturb, oue_support_counts, oue_estimate_counts,
                                               oue_aggregate_support)


# ---------------------------------------------------------------------------
# One entry point over every oracle (used by the grid decompositions)
# ---------------------------------------------------------------------------

ORACLES = ("grr", "olh", "oue", "hr")


def oracle_perturb(oracle: str, values: np.ndarray, domain_size: int, epsilon: float, rng: np.random.Generator,
                   path: str = PER_USER) -> Any:
    """Client half of frequency oracle ``oracle`` on ``values`` in [0, D): per-user reports, or with
    ``path="aggregate"`` the oracle's sufficient statistic drawn from its exact distribution;
    ``path="auto"`` takes whichever :func:`~ldpviz.mechanisms.path_cost.choose_path` predicts faster."""
    require(oracle in ORACLES, f"unknown frequency oracle {oracle!r}; choose one of {', '.join(ORACLES)}")
    require(path in PATHS, f"path must be one of {', '.join(PATHS)}; got {path!r}")
    if path == AUTO:
        path = choose_path(oracle, int(np.size(values)), domain_size)
    if path == AGGREGATE:
        true_counts = np.bincount(_as_values(values, domain_size), minlength=domain_size)
        sample = {"grr": grr_aggregate_histogram, "hr": hr_aggregate_histogram, "olh": olh_aggregate_support,
                  "oue": oue_aggregate_support}[oracle]
        return sample(true_counts, epsilon, rng)
    client = {"grr": grr_perturb, "hr": hr_perturb, "olh": olh_perturb, "oue": oue_perturb}[oracle]
    return client(values, domain_size, epsilon, rng)


def oracle_estimate(oracle: str, reports: Any, domain_size: int, epsilon: float) -> np.ndarray:
    """Server half: unbiased counts of every value from :func:`oracle_perturb`'s output."""
    require(oracle in ORACLES, f"unknown frequency oracle {oracle!r}; choose one of {', '.join(ORACLES)}")
    server = {"grr": grr_estimate_counts, "hr": hr_estimate_counts, "olh": olh_estimate_counts,
              "oue": oue_estimate_counts}[oracle]
    return server(reports, domain_size, epsilon)


def oracle_statistic(oracle: str, reports: Any, domain_size: int) -> ReportHistogram | SupportCounts:
    """The server's sufficient statistic of per-user reports (already one: returned as is).

    GRR and HR: the histogram of reports; OLH and OUE: the support count of every
    value. Statistics of disjoint groups of users add up (:func:`merge_statistics`),
    and :func:`oracle_estimate` gives the same counts from the statistic as from
    the reports.
    """
    require(oracle in ORACLES, f"unknown frequency oracle {oracle!r}; choose one of {', '.join(ORACLES)}")
    if isinstance(reports, (ReportHistogram, SupportCounts)):
        return reports
    if oracle == "grr":
        r = np.asarray(reports, dtype=np.int64)
        return ReportHistogram(np.bincount(r, minlength=domain_size), len(r), PER_USER)
    if oracle == "hr":
        r = np.asarray(reports, dtype=np.int64)
        return ReportHistogram(np.bincount(r, minlength=hr_output_size(domain_size)), len(r), PER_USER)
    if oracle == "olh":
        return SupportCounts(olh_support_counts(reports, domain_size), len(reports.buckets), PER_USER)
    return SupportCounts(oue_support_counts(reports), len(reports.packed), PER_USER)


def report_histogram(reports: np.ndarray | ReportHistogram, size: int) -> ReportHistogram:
    """How many reports fell on each of ``size`` outputs (a histogram is returned as is): the additive
    statistic of any mechanism whose server reads only the report counts. ``n`` counts the users, one row
    of ``reports`` each (SEM-Geo-I's rows hold k cells)."""
    if isinstance(reports, ReportHistogram):
        require(len(reports.counts) == size, f"a report histogram over {len(reports.counts):,} outputs was given "
                                            f"where {size:,} were expected")
        return reports
    r = np.asarray(reports, dtype=np.int64)
    return ReportHistogram(np.bincount(r.reshape(-1), minlength=size), len(r), PER_USER)


def merge_statistics(parts: list) -> ReportHistogram | SupportCounts:
    """Sum the sufficient statistics of disjoint groups of users (integer sums: exact in any order).

    The merged ``path`` is the common path of the parts, or 'mixed'.
    """
    require(len(parts) > 0, "nothing to merge: no statistics were given")
    kind = type(parts[0])
    require(kind in (ReportHistogram, SupportCounts) and all(type(p) is kind for p in parts),
            "statistics to merge must all be report histograms or all support counts")
    paths = {p.path for p in parts}
    path = paths.pop() if len(paths) == 1 else "mixed"
    field = "counts" if kind is ReportHistogram else "support"
    total = np.sum([np.asarray(getattr(p, field), dtype=np.int64) for p in parts], axis=0)
    return kind(total, int(sum(p.n for p in parts)), path)


def oracle_counts(oracle: str, values: np.ndarray, domain_size: int, epsilon: float, rng: np.random.Generator,
                  path: str = PER_USER) -> np.ndarray:
    """Run frequency oracle ``oracle`` on ``values`` in [0, D): client and server halves, unbiased counts."""
    return oracle_estimate(oracle, oracle_perturb(oracle, values, domain_size, epsilon, rng, path), domain_size,
                           epsilon)


def oracle_variance(oracle: str, n: int, true_counts: np.ndarray | float, domain_size: int,
                    epsilon: float) -> np.ndarray:
    """Analytical variance of each oracle's unbiased count."""
    if oracle == "grr":
        return pure_variance(n, true_counts, *grr_probabilities(domain_size, epsilon))
    if oracle == "olh":
        return olh_variance(n, true_counts, epsilon)
    if oracle == "oue":
        return pure_variance(n, true_counts, *oue_probabilities(epsilon))
    if oracle == "hr":
        return hr_variance(n, true_counts, epsilon)
    raise ValueError(f"unknown oracle {oracle!r}")
