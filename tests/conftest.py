"""Suite-wide settings.

The dashboard announces runs predicted (from this process's measured timings) to take over ~5 s and waits for
Start. Under the whole suite on two cores those predictions inflate, so a page test could meet an announcement
instead of its readouts. The suite raises the threshold (LDPVIZ_LONG_RUN_S, also inherited by the servers the
browser tests start); tests of the announcement itself set ``longrun.LONG_S`` explicitly.
"""

import os

os.environ.setdefault("LDPVIZ_LONG_RUN_S", "600")
