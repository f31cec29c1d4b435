"""Limits on what one command or page may ask for, declared once and light to import (the command line checks
them before the compute core is loaded; :mod:`ldpviz.experiment` enforces the same numbers)."""

from __future__ import annotations

#: Most trials of one scenario, on every command (run, sweep, od, target, report) and in the experiment core:
#: beyond 100 a confidence interval narrows by less than a tenth per further hundred trials while the run
#: time keeps growing linearly (`od --trials 101` ran 210 s).
MAX_TRIALS = 100

#: Most users one dashboard scenario may sample (its sidebar and its link; 0 means everyone in the region).
MAX_USERS = 50_000_000

#: Largest seed the dashboard takes (its sidebar and its link): an unsigned 32-bit number.
MAX_SEED = 2**32 - 1
