"""SRR: Staircase Randomized Response over hierarchically encoded locations (L-SRR).

Paper: l-srr-staircase-randomized-response.md (Wang et al., L-SRR), Sec. 3.1-3.5,
Algorithms 1-2, Lemma 3.4, Theorem 3.3 and Appendix B.

The location domain ``D`` (Sec. 3.2) is a sorted array of hierarchical codes:

* ``domain="grid"`` (the default): every cell of the evaluation grid, encoded
  by the quadtree interleaving of ``(row, col)`` -- a public, data-independent
  domain, as the paper assumes (Sec. 3.2, "Offline Computation": the server
  releases D before collection). Grids with more than ``MAX_GRID_DOMAIN_SIZE``
  (4096) cells use square blocks of ``k x k`` cells instead (the smallest ``k`` that
  fits), still fixed by the grid alone.
* ``domain="occupied"`` (the paper's experimental setting, Sec. 6.1: "only the
  reported locations in this area are considered as the domain"): the distinct
  Bing quadkey tiles at level ``h`` that hold at least one user, built from the
  users' *true* locations inside :meth:`SRR.run`. This treats the set of
  occupied tiles as public knowledge, as the paper does; if that set is
  private, the protocol is NOT eps-LDP (a lone user's tile is revealed by its
  membership in D; the whole-protocol audit certifies a loss of ~4 at eps = 1).
  Opt-in only, and then SRR has no separate client half (``has_client`` is
  False on that instance): the domain is built from the users inside ``perturb``.
  With the public grid domain ``perturb`` is the phone's half and ``channel()``
  the exact channel over cells (grids of at most 4,096 cells).

For every input ``x`` the other locations are split into ``m`` groups by their
LCP with ``x`` (Def. 3.2): ``G_1(x) = {y : LCP >= t_1}``, ``G_j(x) =
{t_j <= LCP < t_(j-1)}``, ``G_m(x)`` the rest. Codes that share a prefix are
contiguous once sorted, so each ``{y : LCP >= t}`` is an interval of the sorted
domain; a plan stores ``m + 1`` nested intervals per input, never a d x d table.

Open points and the choices made (all documented in docs/srr-method.md):

* Group thresholds "maximise the sum of LCPs" (Sec. 3.2): we maximise
  ``sum_j |G_j(x)| * t_j`` -- every output credited with its group's GLCP -- by
  an exact dynamic programme over thresholds (the paper's exhaustive search for
  small m, done in O(m B^2) per input, so no heuristic is ever needed).
* Eq. (4) as printed omits the factor (m - 1) of the numerator (it would not sum
  to 1 for m > 2); we use ``alpha_min(x) = (m-1) / ((m-1) d c - (c-1) sum_j (j-1)|G_j(x)|)``
  (the form used in the proof of Lemma 3.4), steps ``Delta = alpha_min (c-1)/(m-1)``.
* Theorem 3.3 prints the inner sums up to ``m - 1``; its proof (App. B.1) is the
  ratio ``alpha_max(x) / alpha_min(x')``, which with the normalisation above sums
  to ``m``. We use that exact ratio: ``eps = log(c * max_x Den(x) / min_x Den(x))``.
* m from Lemma 3.4, ``m* = 2 (c d - e^(1 + log c)) / ((c - 1) d)``, "rounded to its
  floor or ceiling": of the two we keep the one with the smaller relaxed mutual
  information bound (only values where the relaxed alpha_min stays positive are
  admissible), and at least 2. m depends on c and c on m, so we alternate: m
  from c, then the largest c (binary search) whose Theorem 3.3 bound is <= eps,
  until m is stable.
* Estimation (Algorithm 2): ``C_x`` = columns with +1 in row ``i + 1`` of the
  Sylvester Hadamard matrix H_K, K = 2^ceil(log2(d + 1)), restricted to the d
  domain columns; the d equations ``p(C_x) = sum_x' p(x') q(C_x | x')`` are
  solved by LU (scipy.linalg.lu_factor, factorised once per plan). The solution
  is unbiased and may be negative; it is projected onto the simplex with
  Norm-Sub (Euclidean projection; ``projection="clip"`` as an option).
* ``estimator="mle"``: EM for the maximum-likelihood distribution under the
  channel (the Sec. 6.5 / Fig. 11 ablation "SRR + MLE").

Aggregate path (``path``, :mod:`ldpviz.mechanisms.collection_paths`): the server reads only the histogram
of reported positions. The staircase channel is alpha_m everywhere plus one step (alpha_m (c - 1) /
(m - 1)) on each inner interval (:func:`staircase_channel`), i.e. a mixture of uniform draws: over the
whole domain with weight alpha_m |D|, over inner interval j with weight step x |interval j|. So the
users at x split over those components as one multinomial, and every component is uniform on a
contiguous range of sorted positions, whose summed draws
:func:`ldpviz.mechanisms.srr.range_draws.uniform_range_histogram` returns exactly in O(ranges x log |D| + |D|)
binomials, independent of n (:func:`aggregate_histogram`).

The parts, one job each: ``_domain`` (the location domain), ``_plan`` (the offline part), ``_online``
(perturbation and estimation), ``_srr`` (the mechanism); this face re-exports every name they define.
"""

from __future__ import annotations

from ldpviz.mechanisms.srr.staircase._domain import (FAMILY_SRR, MAX_DOMAIN_SIZE, MAX_GRID_DOMAIN_SIZE, MAX_LEVEL,
                                                     LocationDomain, default_level, user_codes, occupied_domain,
                                                     grid_block, grid_domain, build_location_domain, DOMAIN_HELP,
                                                     LEVEL_HELP, domain_param, level_param, check_domain_params,
                                                     domain_guarantee, LocationDomainMechanism, domain_positions,
                                                     domain_likelihood_to_cells, domain_to_grid)
from ldpviz.mechanisms.srr.staircase._plan import (lcp_ball_sizes, lcp_ball_sums, staircase_levels, optimal_thresholds,
                                                   lemma_groups, relaxed_mi_bound, choose_groups, staircase_weights,
                                                   theorem33_epsilon, largest_c, StaircasePlan, groups_for, build_plan,
                                                   _PLAN_CACHE, _PLAN_CACHE_SIZE, cached_plan, staircase_channel)
from ldpviz.mechanisms.srr.staircase._online import (perturb_positions, aggregate_histogram, fwht, hadamard_size,
                                                     candidate_matrix, candidate_mass, channel_classes, hadamard_system,
                                                     RCOND_MIN, _hadamard_solver, hadamard_estimate, em_estimate)
from ldpviz.mechanisms.srr.staircase._srr import (SrrReports, SrrHistogram, PER_USER_SECONDS_PER_USER_GROUP,
                                                  AGGREGATE_SECONDS, AGGREGATE_SECONDS_PER_RANGE, SRR)
