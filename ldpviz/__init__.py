"""ldpviz: choose a private way to collect location data, and see what it costs.

The compute core of the dashboard. Flat, functional entry points:

>>> from ldpviz import Scenario, run
>>> result = run(Scenario(dataset="minneapolis-stops", mechanism="grr", epsilon=1.0, grid_side=32))
>>> result.mean()["w2_m"]            # doctest: +SKIP

The core never imports Streamlit; the dashboard lives in :mod:`ldpviz.app` (docs/architecture.md).
The experiment runner is imported lazily so that ``ldpviz.mechanisms`` stays light.
"""

from typing import Any

from ldpviz.geo.domain import Grid, Region
from ldpviz.errors import LdpvizInputError

__version__ = "0.1.0"
_LAZY = {"Scenario", "Result", "run", "sweep", "summarise"}
__all__ = ["Grid", "Region", "LdpvizInputError", *sorted(_LAZY)]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from ldpviz import experiment
        return getattr(experiment, name)
    raise AttributeError(f"module 'ldpviz' has no attribute {name!r}")
