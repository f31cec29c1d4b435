"""Server-side post-processing shared by mechanisms.

Unbiased frequency-oracle estimates can be negative and need not sum to n;
metrics need a distribution. Two projections are offered:

* ``clip``: negatives set to zero, then renormalised (the common baseline);
* ``norm-sub``: Norm-Sub of Wang et al., "Locally Differentially Private
  Frequency Estimation with Consistency", NDSS'20 — subtract one constant
  delta from every cell and clip at zero, delta chosen so the result sums to
  the total; this is the L2-closest point of the scaled simplex.

Post-processing never touches raw data, so it costs no privacy.

The parts, one job each: ``_post`` (deadlines and cancelling, the projections to a distribution), ``_steps``
(EM's stopping rules and one plain EM / EMS step), ``_start`` (did the estimate leave its start?), ``_em`` (EM / EMS
on one trial's reports and on several trials' at once, SQUAREM-accelerated); this face re-exports every name they
define.
"""

from __future__ import annotations

from ldpviz.mechanisms.estimation._post import (Stopped, _DEADLINE, stop_after, Cancelled, cancel_on, check_time,
                                                norm_sub, to_distribution)
from ldpviz.mechanisms.estimation._steps import (EM_RULES, EM_TOLERANCE, MAX_EM_ITERATIONS, EM_WORK_BUDGET,
                                                 MIN_EM_ITERATIONS, HOLDOUT_FRACTION, HOLDOUT_SEED,
                                                 LEGACY_CELL_TOLERANCE, _RULE, SQUAREM_STEP_SHARE, PLAIN_WARMUP,
                                                 PATIENCE_SHARE, PATIENCE_EXTRA, LARGE_EM_CELLS, LARGE_PLAIN_WARMUP,
                                                 LARGE_SQUAREM_STEP_SHARE,
                                                 em_stopping_rule, binomial_smooth, _rowsum, _per_trial, _smooth_stack,
                                                 _em_step, _em_loop, _predict)
from ldpviz.mechanisms.estimation._start import (START_MAP_Z, START_MAP_TEXT, start_map_text, START_FIT_POOL_SHARE,
                                                 START_FIT_PROBES, start_fit_noise, reports_fit_start, start_map_tests,
                                                 stayed_at_start, combine_start_maps)
from ldpviz.mechanisms.estimation._em import (expectation_maximisation, _accelerated, _step_batch, _squarem_batch,
                                              _accelerated_batch, expectation_maximisation_batch, matrix_maps)
