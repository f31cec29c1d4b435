"""What phones sent: a plain description of a mechanism's reports (the server's view), for people.

:func:`describe` turns whatever ``Mechanism.perturb`` returned (an array of report
indices, a bit matrix, hash-seed pairs, or the aggregate path's tally) into a few
labelled lines: how many reports, what one report is, its size, the first few.
It never shows an estimator's internals (those are ``Estimate.info``).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from ldpviz.mechanisms.base import CENTRAL_DP, Mechanism
from ldpviz.wording import plural

FIRST = 6


def _bits(n_values: int) -> int:
    return max(1, math.ceil(math.log2(max(n_values, 2))))


def _row_size(arr: np.ndarray) -> str:
    """'64 bits packed in 8 bytes' or '12 values': the size of one phone's row of a report array."""
    if arr.dtype == np.uint8:
        return f"{8 * arr.shape[1]:,} bits packed in {arr.shape[1]:,} bytes"
    return f"{arr.shape[1]:,} values"


def describe(mech: Mechanism, reports: Any, n_users: int) -> dict[str, str]:
    """Labelled lines about what the server received from ``n_users`` phones."""
    label = type(mech).label if hasattr(type(mech), "label") else type(mech).__name__
    if reports is None:
        if mech.privacy_model == CENTRAL_DP:
            return {"what phones sent": f"{plural(n_users, 'exact location')}, to a trusted server that adds the noise "
                                        "to the published map (central DP)"}
        return {"what phones sent": f"{plural(n_users, 'report')} over several rounds (the protocol of {label} runs as "
                                    "a whole, so no single report is kept here)"}
    if isinstance(reports, np.ndarray) and reports.ndim == 1 and np.issubdtype(reports.dtype, np.integer):
        outputs = max(mech.grid.n_cells, int(reports.max(initial=0)) + 1)
        return {"what phones sent": f"{plural(reports.size, 'report')}, each one number: the index of a reported cell "
                                    f"or output among {outputs:,} (about {_bits(outputs)} bits)",
                "the first reports": ", ".join(str(v) for v in reports[:FIRST].tolist())}
    if isinstance(reports, np.ndarray) and reports.ndim == 2 and not np.isin(reports, (0, 1)).all():
        return {"what phones sent": f"{plural(reports.shape[0], 'report')}, each a set of "
                                    f"{plural(reports.shape[1], 'cell index', 'cell indexes')} among "
                                    f"{mech.grid.n_cells:,}",
                "the first report": ", ".join(str(v) for v in reports[0, :FIRST].tolist())}
    if isinstance(reports, np.ndarray) and reports.ndim == 2:
        return {"what phones sent": f"{plural(reports.shape[0], 'report')}, each a vector of {reports.shape[1]:,} "
                                    f"values ({reports.shape[1]:,} bits when they are bits)",
                "the first report": "".join(str(int(v)) for v in reports[0, :64]) + ("…" if reports.shape[1] > 64
                                                                                    else "")}
    if dataclasses.is_dataclass(reports):
        fields = {f.name: getattr(reports, f.name) for f in dataclasses.fields(reports)}
        arrays = {k: v for k, v in fields.items() if isinstance(v, np.ndarray)}
        per_user = [a for a in arrays.values() if a.shape[:1] == (n_users,)]
        if per_user:
            parts = ", ".join(f"{k} ({'one number' if v.ndim == 1 else _row_size(v)})"
                              for k, v in arrays.items() if v.shape[:1] == (n_users,))
            out = {"what phones sent": f"{plural(n_users, 'report')}, each made of: {parts}"}
            for k, v in arrays.items():
                if v.shape[:1] == (n_users,) and v.ndim == 1:
                    out[f"first {k}"] = ", ".join(str(x) for x in v[:FIRST].tolist())
            return out
        tallies = [v for v in fields.values()
                   if getattr(v, "path", None) == "aggregate"
                   or (isinstance(v, list) and v and all(getattr(x, "path", None) == "aggregate" for x in v))]
        if arrays or tallies:
            return {"what phones sent": f"{plural(n_users, 'report')}; the server keeps only their tally, sampled "
                                        "exactly in distribution (the aggregate path: no per-phone report is "
                                        "materialised)"}
    return {"what phones sent": f"{plural(n_users, 'report')} ({type(reports).__name__})"}
