"""The guided decision (the Decide page's steps), without Streamlit: choices, who is eligible, the answer, the record.

Five steps, as DP Wizard's Select -> Define -> Download, for location LDP (issue 27):

1. *Your data*: a dataset (bundled, synthetic or an upload) and its region (typed bounds or a preset);
2. *Who is protected*: the unit, reports per person per collection, how often the collection repeats, and the
   privacy models the officer accepts (:func:`eligible` says why each other mechanism is left out);
3. *What the map must show*: a need in plain words (:data:`NEEDS`) with its metric, a target and the grid;
4. *The answer*: per eligible mechanism the goal seek (:func:`answer`: :func:`ldpviz.decide.tradeoff.target_epsilon`
   on :func:`scenario`, the same scenario ``ldpviz target`` builds, so the same inputs and seed give the same
   answer), its ledger (:mod:`ldpviz.mechanisms.accounting`), ranked by the epsilon it needs (:func:`rank`);
   "users needed at a fixed epsilon" is the same step turned around;
5. *Sign*: :func:`record_sections`, the flow's part of the signed decision -- every choice, the answer and the
   alternatives, the ledger, what is not covered, a sign-off block, the link and the command that reproduce it --
   which :func:`ldpviz.decide.decision_report.build_report` wraps around the decision report of the chosen
   mechanism at its answer (maps, the interval, the attacker, the audit): one document.

Step 1 takes points or trips: trips give one point per person per collection (:func:`trips_points`), the unit is
then a person and the ledger the accountant's per-person ledger (:func:`ledger_for`).

The choices live in the dashboard's one state layer (:mod:`ldpviz.app.state` calls :func:`encode` / :func:`decode`
for the keys below), so a reload, a shared link and back/forward keep every step.

The parts, one job each: ``_choices`` (the officer's choices, their link form and who is eligible), ``_answer``
(step 4: the answer per mechanism, its ledger, the quick seeks' limits, the ranking), ``_record`` (step 5: the
command that reproduces it and the signed record); this face re-exports every name they define.
"""

from __future__ import annotations

from ldpviz.decide.decision_flow._choices import (MODELS, MODEL_CODES, UNITS, EVERY, NEEDS, DECIDE_TARGET_DEFAULTS,
                                                  TURNS, TEXT_MAX, _models, _write_models, _pins, _trips, _chosen,
                                                  _clip, _flow, SETTINGS, SETTING, DEFAULTS, KEYS, SHARED, decode,
                                                  encode, eligible, scenario)
from ldpviz.decide.decision_flow._answer import (TRIPS_PREFIX, TRIPS_UNIT_TEXT, trips_points, trips_rows_text, unit_of,
                                                 ledger_for, answer, with_limit, limit_text, start_now,
                                                 QUICK_LIMIT_FLOOR_S, quick_limit, quick_group, quick_limits, rank,
                                                 groups, signed, epsilon_text, need_text)
from ldpviz.decide.decision_flow._record import (command, trips_command, CHOICES, REQUIRED, _e, _rows, record_sections,
                                                 _record_choices, _record_answer, _record_alternatives, unit_noun,
                                                 record_json)
