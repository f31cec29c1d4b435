"""The server's side of a deployed collection: reports in, a checked, estimated heatmap out (issue 29).

:func:`estimate_reports` streams a reports file (JSON lines, or CSV with a header naming the spec's report
fields), checks every line against the spec (format, digest, domain), counts and names every rejection, and
estimates with the mechanism's own server half (``ldpviz.mechanisms.create(...).estimate``). Nothing valid is
dropped: a line is either accepted or counted under one reason.

Per-cell intervals (95%):

* mechanisms whose sufficient statistic is a report histogram (GRR, HR, DAM / DAM-NS / HUEM, planar Laplace,
  MDSW, SRR, the tile oracles) -- the bootstrap: the histogram resampled as a multinomial on the observed
  frequencies (equivalent to resampling the reports), re-estimated ``bootstrap`` times, percentiles 2.5 / 97.5
  of each cell's share;
* OLH and OUE (support counts) and UG over them -- the unbiased share +- 1.96 standard deviations, with the
  exact variance of USENIX'17 Thm. 2 at the estimated counts (:func:`ldpviz.mechanisms.fo.oracles.pure_variance`);
  UG's N x N intervals are spread to the grid's cells by area;
* OLH-H and SEM-Geo-I -- the bootstrap over the reports themselves (OLH-H's estimate is not a function of one
  additive histogram; a SEM-Geo-I report names k cells at once).

:func:`write_outputs` writes ``estimate.csv`` and ``estimate.geojson`` (share, low, high per cell),
``estimate.png`` and ``summary.json`` (counts, rejections by reason, ledger, interval method).

The parts, one job each: ``_account`` (the rejection reasons and what passed, kept compactly), ``_checks``
(one line checked against the spec, and the template the fast path reads by), ``_reader`` (the file read in blocks,
vectorised where it can be), ``_estimate`` (the estimate, its intervals and its outputs); this face re-exports every
name they define. Tests that change ``CHUNK_BYTES`` or ``SUPPORT_FLUSH`` patch ``_reader`` or ``_account``, where
they are read.
"""

from __future__ import annotations

from ldpviz.deploy.estimate._account import (MAX_LINE_BYTES, MALFORMED, TOO_LONG, NO_DIGEST, OTHER_SPEC, MISSING, EXTRA,
                                             BAD_VALUE, OUT_OF_DOMAIN, REPEATED, SUPPORT_FLUSH, Collected)
from ldpviz.deploy.estimate._checks import _MAX_DIGITS, _int, _Repeated, _pairs, _json_record, Checker, Template
from ldpviz.deploy.estimate._reader import (CHUNK_BYTES, BOM, FAST_KINDS, iter_blocks, _blocks_of, _Reader, collect,
                                            _name, _lost_text)
from ldpviz.deploy.estimate._estimate import (LOSS_WARNING_SHARE, DEFAULT_BOOTSTRAP, reports_object, DeployedEstimate,
                                              _histogram_bootstrap, _containing, _report_bootstrap, _ug_outputs,
                                              _oracle_interval, estimate_reports, _curator_release, write_outputs,
                                              summary_text)
