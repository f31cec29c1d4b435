"""Report likelihoods: what one report says about every value (for the Bayesian attacker)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ldpviz.errors import require
from ldpviz.mechanisms.fo.oracles._common import ReportHistogram, SupportCounts, OLHReports, OUEReports
from ldpviz.mechanisms.fo.oracles._grr import grr_probabilities
from ldpviz.mechanisms.fo.oracles._hr import hr_channel
from ldpviz.mechanisms.fo.oracles._olh import olh_probabilities, olh_supports
from ldpviz.mechanisms.fo.oracles._oue import oue_probabilities
from ldpviz.mechanisms.fo.oracles._dispatch import ORACLES


# ---------------------------------------------------------------------------
# Report likelihoods: what one report says about every value (for the Bayesian attacker)
# ---------------------------------------------------------------------------

def oue_report_likelihood(reports: OUEReports, epsilon: float) -> np.ndarray:
    """``(n, D)``: P(report | value x) of each OUE report, up to a factor that depends on the report only.

    P(y | x) = prod_v q^(y_v) (1-q)^(1-y_v) * [p/q]^(y_x) [(1-p)/(1-q)]^(1-y_x) (USENIX'17 Sec. 4.3: bits
    flip independently, the own bit with p, every other with q). The product over v does not
    depend on x, so the row is 1 where bit x is 0 and p(1-q)/(q(1-p)) = e^eps where it is 1
    (scaled by (1-p)/(1-q), which cancels in any posterior).
    """
    p, q = oue_probabilities(epsilon)
    bits = np.unpackbits(reports.packed, axis=1, count=reports.domain_size).astype(bool)
    return np.where(bits, p / q, (1 - p) / (1 - q))


def olh_report_likelihood(reports: OLHReports, epsilon: float, domain_size: int) -> np.ndarray:
    """``(n, D)``: P(<seed, bucket> | value x) of each OLH report, up to the seed's probability (the same for
    every x): p where H_seed(x) equals the reported bucket, else q (grid paper eq. 2)."""
    p, q = olh_probabilities(epsilon, reports.g)
    return np.where(olh_supports(reports, domain_size), p, q)


def grr_report_likelihood(reports: np.ndarray, epsilon: float, domain_size: int) -> np.ndarray:
    """``(n, D)``: P(y | x) of each GRR report y: p on x = y, q elsewhere (L-SRR eq. 1)."""
    r = np.asarray(reports, dtype=np.int64).reshape(-1)
    p, q = grr_probabilities(domain_size, epsilon)
    out = np.full((len(r), domain_size), q)
    out[np.arange(len(r)), r] = p
    return out


def oracle_report_likelihood(oracle: str, reports: Any, domain_size: int, epsilon: float) -> np.ndarray:
    """``(n, D)``: the likelihood of every value given each per-user report of :func:`oracle_perturb`
    (rows up to a factor depending on the report only). Aggregate statistics carry no per-user report."""
    require(oracle in ORACLES, f"unknown frequency oracle {oracle!r}; choose one of {', '.join(ORACLES)}")
    require(not isinstance(reports, (ReportHistogram, SupportCounts)),
            "the report likelihood needs per-user reports, not the aggregate statistic")
    if oracle == "grr":
        return grr_report_likelihood(reports, epsilon, domain_size)
    if oracle == "olh":
        return olh_report_likelihood(reports, epsilon, domain_size)
    if oracle == "oue":
        return oue_report_likelihood(reports, epsilon)
    return hr_channel(domain_size, epsilon)[np.asarray(reports, dtype=np.int64)]
