"""A decision report: one self-contained HTML file to attach to a data-protection impact assessment.

:func:`build_report` runs a scenario (several trials) and writes everything an officer
needs to file in one page that opens offline and prints cleanly: the scenario and the
data's provenance, the guarantee in words and on the common scale
(:mod:`ldpviz.decide.privacy_scale`), true / estimated / difference (and spread) maps as
embedded PNGs (:mod:`ldpviz.render.png`), every metric with a 95% confidence interval and
what good and poor look like (:mod:`ldpviz.decide.explain`), the attacker's error
(:mod:`ldpviz.decide.attacker`), the mechanism's quick audit verdict (:mod:`ldpviz.evidence.audit`), a
reproduction snippet, the date and the version. No external resource is referenced: no
scripts, fonts, stylesheets or images from the network.

The parts, one job each: ``_html`` (the page's style and its HTML and number helpers), ``_commands`` (the
commands that reproduce and deploy the setting), ``_readings`` (the sentences a reader reads: rows, target, unit),
``_build`` (:func:`build_report` and its numbered sections); this face re-exports every name they define.
"""

from __future__ import annotations

from ldpviz.decide.decision_report._html import _CSS, _e, _num, _jsonable, _table, _figure, metric_value, sentence
from ldpviz.decide.decision_report._commands import (is_upload, data_arguments, bbox_arguments, TRIPS_PREFIX, is_trips,
                                                     _trips_reproduction, _reproduction, deploy_refusal, deploy_command,
                                                     _deploy_section, python_framing)
from ldpviz.decide.decision_report._readings import _protects, rows_sentence, target_reading, _target_html
from ldpviz.decide.decision_report._build import (AUDIT_SIDE, AUDIT_SAMPLES, MAP_WIDTH, _audit_section, build_report,
                                                  _scenario_section, _provenance_section, _ledger_html,
                                                  _guarantee_section, _maps_section, _accuracy_section,
                                                  _attacker_section, _reproduce_section)
