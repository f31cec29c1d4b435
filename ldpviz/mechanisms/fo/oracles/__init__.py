"""Categorical frequency oracles: exact (no privacy), GRR, OLH, OUE and HR.

Every oracle is a pair FO = <T, E> (grid paper Sec. 2.3): a client half that
perturbs one user's value and a server half that turns the reports into an
unbiased count for every value. The halves are plain functions on integer
values in ``[0, D)`` for an arbitrary domain size ``D`` (grid cells, adaptive
grid cells, SRR groups...), so any module can run an oracle on its own domain:

* GRR / direct encoding: :func:`grr_perturb`, :func:`grr_estimate_counts`
  (L-SRR eq. 1; Wang et al. USENIX Security'17 Sec. 4.1);
* OLH: :func:`olh_perturb`, :func:`olh_support_counts`, :func:`olh_estimate_counts`
  (grid paper eq. 2-3; USENIX'17 Sec. 4.4);
* OUE: :func:`oue_perturb`, :func:`oue_support_counts`, :func:`oue_estimate_counts`
  (USENIX'17 Sec. 4.3);
* HR: :func:`hr_perturb`, :func:`hr_estimate_counts` (Acharya, Sun, Zhang,
  "Hadamard Response", AISTATS'19; L-SRR Sec. 3.5 and ref. [38]).

All four are "pure" protocols (USENIX'17 Def. 2): each report *supports* a set
of values; a user's report supports its own value with probability ``p*`` and
any other given value with probability ``q*``. The unbiased count is
``(support - n q*) / (p* - q*)`` (:func:`pure_estimate_counts`) with variance
``n q*(1-q*)/(p*-q*)^2 + f (1-p*-q*)/(p*-q*)`` (:func:`pure_variance`, USENIX'17
Thm. 2); HR has its own variance (:func:`hr_variance`).

*Aggregate paths* draw the server's sufficient statistic directly from its
exact distribution given the true counts:
:func:`grr_aggregate_histogram` and :func:`hr_aggregate_histogram` (the report
histogram, drawn through each oracle's mixture form: O(D) and O(K + D + b n)),
:func:`oue_aggregate_support` (independent binomials per bit -- exact, since
OUE flips every bit independently) and :func:`olh_aggregate_support`
(independent binomials per value -- exact for a fully random hash family,
which USENIX'17's analysis assumes; the per-user path uses a universal family
and matches it in every per-value marginal). Mechanisms take a ``path``
parameter: 'auto' (default) picks the path a measured cost model
(:mod:`ldpviz.mechanisms.path_cost`) predicts faster for n users and D cells,
'per-user' or 'aggregate' force one; the estimate's ``info["path"]`` says which
was used. :func:`oracle_statistic` reduces per-user reports to the same
statistic, and statistics of disjoint groups of users add up
(:func:`merge_statistics`), which is what a cluster run reduces.

The parts, one job each: ``_common`` (report containers, the pure estimator), ``_grr``, ``_hr``, ``_olh``, ``_oue``
(one oracle each), ``_dispatch`` (one entry point over every oracle), ``_grid`` (the mechanisms on the grid),
``_likelihood`` (report likelihoods); this face re-exports every name they define.
"""

from __future__ import annotations

from ldpviz.mechanisms.fo.oracles._common import (FAMILY_FO, PATHS, ReportHistogram, SupportCounts, OLHReports,
                                                  OUEReports, pure_estimate_counts, pure_variance, _as_values)
from ldpviz.mechanisms.fo.oracles._grr import (grr_probabilities, grr_perturb, grr_estimate_counts, grr_channel,
                                               grr_aggregate_histogram)
from ldpviz.mechanisms.fo.oracles._hr import (hr_output_size, hr_in_probability, fwht, hr_perturb, hr_estimate_counts,
                                              hr_support_probabilities, hr_variance, hr_channel, _hr_in_set_sample,
                                              hr_aggregate_histogram)
from ldpviz.mechanisms.fo.oracles._olh import (OLH_PRIME, OLH_MAX_BUCKETS, olh_buckets, olh_probabilities, _olh_decode,
                                               _bucket_starts, olh_hash, olh_perturb, _olh_support_chunk,
                                               olh_support_counts, olh_support_probabilities, olh_estimate_counts,
                                               olh_hash_channel, olh_supports, olh_aggregate_support, olh_variance)
from ldpviz.mechanisms.fo.oracles._oue import (oue_probabilities, oue_perturb, oue_support_counts, oue_estimate_counts,
                                               oue_aggregate_support, oue_bit_channel)
from ldpviz.mechanisms.fo.oracles._dispatch import (ORACLES, oracle_perturb, oracle_estimate, oracle_statistic,
                                                    report_histogram, merge_statistics, oracle_counts, oracle_variance)
from ldpviz.mechanisms.fo.oracles._likelihood import (oue_report_likelihood, olh_report_likelihood,
                                                      grr_report_likelihood, oracle_report_likelihood)
from ldpviz.mechanisms.fo.oracles._grid import (_PROJECTION, _path_param, Exact, _GridOracle, GRR, OLH, OUE, HR)
