"""Origin-destination (OD) flows under LDP: L-SRR Sec. 4.1 for SRR and its Sec. 6.2 baselines.

Paper: l-srr-staircase-randomized-response.md Sec. 4.1 (Def. 4.1, Fig. 6), Sec. 6.4 (Fig. 10).

Protocol (client): each trip's origin and destination are reported *separately* with the mechanism's
own client half (``Mechanism.perturb``) at epsilon/2 each; by sequential composition the pair is
epsilon-LDP (Def. 4.1). Privacy unit: one trip's OD pair (one person when each person has one trip;
a person with t trips spends t * epsilon). The domain is the public grid domain of the L-SRR family
(``domain="grid"``), so everything broadcast to phones is fixed by the grid alone.

Server: the two report sets are paired by user. Every mechanism's report has a known *response*
``A[k, x] = E[a_k(report) | true location x]``: for the mechanisms whose report is one symbol
(SRR and GRR: a location; HR: a Hadamard column; PLDP: a (row, sign) pair) ``a`` is the one-hot
report and ``A`` is the channel; for OLH-H, whose report carries a fresh hash, ``a`` is the report's
support over the domain (which leaves its hashed node supports) and ``A[v, x] = q* + (p* - q*) *
(share of hierarchy levels where v and x are in the same node)``. Because origin and destination
are randomised independently, the joint statistic ``S = sum_i a(o_i) a(d_i)^T`` has expectation
``n A_o F A_d^T`` for the OD distribution F (d x d for d locations, d^2 pairs). All estimators work
on ``S`` (a K x K histogram; never a per-user loop):

* ``lasso`` (the paper's estimator): Lasso regression of the response ``y = S / n`` on the
  predictors ``M = A_o (x) A_d`` -- one column per candidate OD pair, its expected joint report
  distribution -- with non-negative coefficients, ``min 1/2 ||A_o F A_d^T - S/n||^2 + sum W * F``,
  ``F >= 0``; "the non-zero coefficients ... are the frequencies" (normalised to sum 1). The paper
  does not say what ``y`` holds beyond "estimated from the perturbed values", nor how the penalty is
  chosen. We use the joint report statistic because the two marginal distributions alone cannot
  identify the joint (every coupling of the marginals fits them equally), and per-pair penalties
  ``W = z * (standard error of the pair's score A_o^T (S/n) A_d)`` with the universal threshold
  ``z = sqrt(2 ln d^2)`` (Donoho-Johnstone): a pair with no flow stays at zero unless its score
  exceeds noise of that size. Solved with the Kronecker structure (d x d products, never the
  d^2 x d^2 design) by ADMM and a projected Newton polish (:mod:`ldpviz.flows.od_lasso_solver`).
* ``em`` (maximum likelihood): EM on the joint report histogram, ``F <- F * A_o^T (S / (A_o F
  A_d^T)) A_d / n`` (the Sec. 6.5 ablation's MLE, on pairs). Exact maximum likelihood for the
  one-symbol mechanisms; for OLH-H it maximises the Poisson likelihood of the support-pair counts
  (Richardson-Lucy), because the likelihood of a fresh-hash report does not factor through any
  histogram.
* ``unbiased``: the unbiased linear estimate ``A_o^+ (S/n) A_d^+T`` projected onto the simplex
  (Norm-Sub): the explaining baseline, the product of the mechanisms' own unbiased estimators.

Metrics: L1 over OD pairs (Fig. 10) and the precision of the top-k flows (of the k largest true
pairs, the share that are among the estimate's k largest).

The parts, one job each: ``_setting`` (the mechanisms, the checks on a setting, the guarantee and the
ledger), ``_estimators`` (the three estimators of the OD matrix from the joint statistic), ``_run`` (one OD run, its
metrics and its trials on a data set); this face re-exports every name they define.
"""

from __future__ import annotations

from ldpviz.flows.od_statistics import JointStatistic, joint_statistic
from ldpviz.flows.od._setting import (OD_MECHANISMS, ALIASES, ESTIMATORS, PATHS, MAX_OD_GRID_SIDE, resolve_mechanism,
                                      trips_per_person, region_sentence, od_guarantee, od_ledger, check_od_grid,
                                      OD_BYTES_PER_PAIR, MAX_OD_BYTES, check_od_users)
from ldpviz.flows.od._estimators import (_CHUNK, _LP_ROUNDS, _LP_ROWS, _LP_ENTRIES, _eig, estimate_unbiased,
                                         lasso_weights, _lasso_problem, lasso_objective, _lasso_info, estimate_lasso,
                                         estimate_lasso_lbfgsb, _Channel, _predicted, estimate_em, _normalise)
from ldpviz.flows.od._run import (od_l1, flat_l1, top_k_precision, ODResult, bin_pairs, estimate_od, run_od,
                                  load_od_pairs, _region, od_trials)
