"""The command line's weak- and no-privacy warning: one line on stderr, from
:func:`ldpviz.decide.privacy_scale.weak_privacy_warning` (the one source of its text: the accountant's
:meth:`~ldpviz.mechanisms.accounting.Ledger.warning`, judged on the largest total it shows)."""

from __future__ import annotations

import sys
from typing import Any

from ldpviz import mechanisms
from ldpviz.decide.privacy_scale import weak_privacy_warning
from ldpviz.errors import LdpvizInputError
from ldpviz.mechanisms.accounting import collection_ledger


def privacy_warning(mechanism: str, grid: Any, epsilon: float, params: dict[str, Any] | None = None,
                    region: Any = None, dataset: str = "") -> str | None:
    """privacy_scale.weak_privacy_warning for one setting, judged on the ledger a run of it states (the region's
    epsilon0 included when ``region`` was paid for; per person for points taken one per person from ``dataset``'s
    trips, else per row); None where the mechanism cannot be built."""
    try:
        mech = mechanisms.create(mechanism, grid, epsilon, **dict(params or {}))
    except LdpvizInputError:
        return None
    if dataset:
        from ldpviz.experiment import run_ledger
        return weak_privacy_warning(mech, run_ledger(mech, region if region is not None else grid.region, dataset))
    return weak_privacy_warning(mech, collection_ledger(mech, region))


def print_privacy_warning(text: str | None, label: str = "") -> None:
    """The warning on stderr, one line, so a script reading stdout (JSON) still sees it."""
    if text:
        print(f"warning: {label + ': ' if label else ''}{text}", file=sys.stderr)
