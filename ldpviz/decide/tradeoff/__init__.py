"""The privacy-accuracy trade-off as decisions: the frontier, the smallest epsilon found for a target, users needed.

* :func:`frontier`: per mechanism and epsilon (and optionally number of users), the
  accuracy (mean metric with a 95% CI over trials) against the attacker's error
  (:mod:`ldpviz.decide.attacker`, population prior) -- one curve per mechanism, one point per
  epsilon.
* :func:`target_epsilon` (goal seek, as DP Wizard's users asked for): the smallest epsilon
  *found* at which ONE collection -- the one the officer will run -- meets the target with
  probability >= 95% (configurable), with the confidence of that statement
  (:mod:`ldpviz.decide.one_collection`: a one-sided normal tolerance bound, a log-grid scan with
  common random numbers, a bisection, and the decision on fresh streams the search never used).
  "The mean meets it" is kept as a second, labelled reading. The answer is stated as "the smallest
  found on a scan of N values", never as the smallest: where the metric is not monotone (DAM's disk
  radius, and so its channel, changes with epsilon) a larger scanned epsilon that misses the target
  again is named. An answer beyond meaningful privacy carries a warning
  (:func:`ldpviz.decide.privacy_scale.weak_privacy_warning`).
* :func:`users_needed`: the fewest users found meeting the same rule at a given epsilon.
* :func:`goal_seek`: either, as the pages and ``ldpviz target`` ask it.
* :func:`seeks_side_by_side`: one goal seek per mechanism on the machine's cores, answers as they finish.

Every evaluation is the same computation as :func:`ldpviz.experiment.run` (same users,
same per-trial random streams ``default_rng([seed, trial])``), scoring only the chosen
metric; fresh collections draw from ``default_rng([seed, trial, 1])``.

The parts, one job each: ``_evaluate`` (one setting's metric over fresh collections, the frontier), ``_goal``
(the goal seeks and their answer), ``_side`` (several seeks side by side on threads); this face re-exports every
name they define.
"""

from __future__ import annotations

from ldpviz.decide.privacy_scale import weak_privacy_warning
from ldpviz.decide.tradeoff._evaluate import (TARGET_METRICS, EPS_RTOL, DEFAULT_TRIALS, _score, Evaluator,
                                              _attacker_fields, frontier, _floor, _lower_is_better)
from ldpviz.decide.tradeoff._goal import (MIN_USERS, _set_attacker, GoalResult, _privacy_at, _range_text, rule_text,
                                          _chunk, _checked_goal, _fill, target_epsilon, reading_at, users_needed,
                                          goal_seek)
from ldpviz.decide.tradeoff._side import MAX_SEEK_THREADS, seek_threads, start_order, POLL_S, seeks_side_by_side
