"""Black-box privacy audit: a statistically sound lower bound on a mechanism's privacy loss.

Independent of a mechanism's own :meth:`~ldpviz.mechanisms.base.Mechanism.channel`,
the audit runs only its client half (``perturb``) many times from pairs of inputs
chosen to be hard to tell apart -- neighbouring cells, far corners, a cell and
itself shifted by the mechanism's radius, two points inside one cell -- and
bounds the privacy loss from the observed output frequencies, in the spirit of
DP-Sniper (Bichsel et al., S&P 2021) and DP-Auditorium (Kong et al., 2024):

1. Draw ``n_samples`` reports from each input of a pair, with fresh seeded
   randomness, and split them into a *selection* half and an *evaluation* half.
2. On the selection half, map every report to a discrete key (:func:`report_columns`
   then :class:`_Keys`), rank keys by their empirical likelihood ratio and form
   candidate events: unions of the top-ranked keys ("DP-Sniper threshold sets"),
   over the whole report and over each report column separately. Keep the
   ``events_per_direction`` candidates with the best selection-half bound.
3. On the evaluation half only, count each kept event E under both inputs and
   take one-sided Clopper-Pearson bounds: ``lower(P[M(x) in E])`` and
   ``upper(P[M(x') in E])``. Then ``ln(lower / upper)`` is a lower bound on the
   privacy loss of that pair. A Bonferroni correction over every (pair, direction,
   event) makes the *maximum* over all of them hold at the stated ``confidence``.

Because events are chosen on data independent of the evaluation half, the bound
is sound: for a mechanism that satisfies its guarantee, the probability that the
audit reports a bound above the claim is at most ``1 - confidence``. Any event
works (mapping reports to keys is post-processing), so a poorly chosen event
only makes the bound weaker, never wrong.

Claims compared against:

The claimed epsilon is the one the mechanism's guarantee states,
:meth:`Mechanism.claimed_epsilon` -- not the epsilon it was asked for: SEM-Geo-I,
calibrated to DAM's local privacy, promises eps' per cell side and is audited
against eps'.

* LDP: ``epsilon`` for every pair of inputs.
* Geo-I: ``epsilon * (distance + slack)`` with distance between the two *real* positions
  in cell sides and ``slack`` the mechanism's stated snapping slack
  (:meth:`Mechanism.geo_slack_m`, 0 for planar Laplace, the cell diagonal for SEM-Geo-I);
  a Geo-I epsilon is per km, so the claim per cell side is :attr:`Mechanism.epsilon_per_cell`;
  the audited figure is the largest ``bound / (distance + slack)`` over pairs, compared with it.
  Every Geo-I audit includes close positions across a cell edge and a cell corner
  (:func:`boundary_pairs`): snapping to cell centres breaks the guarantee there. Rounding to
  any finer lattice (quarter cells, say) breaks it only across *its* lines, which those pairs
  miss, so every Geo-I audit also runs a chain of close pairs from a seeded random place across
  a whole cell (:func:`random_close_pairs`, issue 26): one of its steps straddles every
  lattice line inside a cell.

A pass is not a proof: it means no violation was found. A certified lower bound
far below the claim (under :data:`INFORMATIVE_FRACTION` of it, e.g. 0.0 when no
event separates the inputs) says nothing about how private the mechanism is;
:attr:`AuditResult.verdict` words it so.
* No privacy (``exact``): nothing is claimed; the audit shows how large a loss it
  can certify from the samples.
* Central DP and multi-round mechanisms (``has_client = False``) have no
  single-user client half to run: they are reported as *not auditable
  black-box at the client*, with the reason.

The parts, one job each: ``_pairs`` (the inputs and the pairs of them audited), ``_keys`` (reports as
discrete keys), ``_verdict`` (Clopper-Pearson bounds, candidate events, the outcomes and results), ``_run`` (the
audit of one mechanism and of the registry); this face re-exports every name they define.
"""

from __future__ import annotations

from ldpviz.evidence.audit._pairs import (AuditInput, AuditPair, _input, _radius_cells, hard_pairs, BOUNDARY_GAP_M,
                                          _position, boundary_pairs, RANDOM_GAP_CELLS, random_close_pairs)
from ldpviz.evidence.audit._keys import (MAX_DISTINCT_VALUES, MAX_DISTINCT_INTEGERS, QUANTILE_BINS, MAX_JOINT_COLUMNS,
                                         MAX_PACKED_BYTES, report_columns, _columns, _is_per_user, _Column, _Keys)
from ldpviz.evidence.audit._verdict import (PASSED, FAILED, NO_CLAIM, NOT_AUDITABLE, INFORMATIVE_FRACTION,
                                            MIN_KEY_COUNT, cp_lower, cp_upper, log_ratio_bound, _Event,
                                            _candidate_events, _ids, PairAudit, AuditResult)
from ldpviz.evidence.audit._run import (MAX_SAMPLES, MAX_AUDIT_CELLS, audit_grid, _resolve, _claim, audit_mechanism,
                                        _describer, _background, _with, _protocol_outputs, _audit_pair, audit_registry)
