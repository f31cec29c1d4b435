"""Suite-wide settings.

The dashboard announces runs predicted to take over 10 quiet-machine seconds and waits for Start (the load never
raises a prediction). Page tests use settings of every size, so the suite raises the threshold
(LDPVIZ_LONG_RUN_S, also inherited by the servers the browser tests start); tests of the announcement itself,
and tests/browser/test_fast_ui.py, use the shipped threshold explicitly. Decide's quick start
(LDPVIZ_DECIDE_QUICK_S) keeps its shipped 10 s: a Decide page in a test searches what a person's would without a
click, and tests that need every answer press Start as a person would. The run-time model's machine factor is
pinned to 1 (LDPVIZ_MACHINE_FACTOR), so a page's predictions, and which seeks it starts without a click, do not
depend on the speed of the machine that runs the suite; tests/experiment/test_runtime_model.py times the probe itself.
"""

import os

os.environ.setdefault("LDPVIZ_LONG_RUN_S", "600")
os.environ.setdefault("LDPVIZ_MACHINE_FACTOR", "1")
