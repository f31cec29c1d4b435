"""A mechanism's reports as discrete keys: columns, quantile bins for many-valued columns, joint keys."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from ldpviz.errors import LdpvizInputError, require
from ldpviz.mechanisms.base import Mechanism


#: A report column with more distinct values than this (in the selection half) is cut into quantile bins.
MAX_DISTINCT_VALUES = 64
#: ... and an integer column with more than this many.
MAX_DISTINCT_INTEGERS = 256
QUANTILE_BINS = 32
#: Joint keys are only formed from reports with at most this many columns.
MAX_JOINT_COLUMNS = 4096
#: uint8 reports up to this many bytes per user are read as packed bits.
MAX_PACKED_BYTES = 128


# ------------------------------------------------------------------ reports -> discrete keys
def report_columns(reports: Any, n: int, mech: Mechanism | None = None) -> list[np.ndarray]:
    """The ``n`` reports as a list of 1-D columns (one value per user), whatever their type.

    A mechanism may define ``report_key(reports)`` returning an ``(n,)`` or
    ``(n, k)`` array; otherwise arrays are flattened per user, tuples / lists /
    dicts / dataclasses of per-user arrays are taken field by field, and a list
    of ``n`` per-user objects is stacked.
    """
    hook = getattr(mech, "report_key", None) if mech is not None else None
    if callable(hook):
        reports = hook(reports)
    columns = _columns(reports, n)
    require(len(columns) > 0, "the mechanism's reports could not be turned into per-user values")
    return columns


def _columns(reports: Any, n: int) -> list[np.ndarray]:
    if isinstance(reports, np.ndarray) and reports.dtype != object:
        if reports.ndim >= 1 and reports.shape[0] == n:
            flat = reports.reshape(n, -1)
            if flat.dtype == np.uint8 and flat.shape[1] <= MAX_PACKED_BYTES:
                # bytes are often packed bits (np.packbits, e.g. OUE): one column per bit exposes each bit as
                # its own event space; the joint key carries the same information either way.
                flat = np.unpackbits(flat, axis=1)
            return [flat[:, j] for j in range(flat.shape[1])]
        raise LdpvizInputError(f"expected one report per user ({n}), got an array of shape {reports.shape}")
    if isinstance(reports, dict):
        return [c for value in reports.values() for c in _columns(value, n)]
    if dataclasses.is_dataclass(reports) and not isinstance(reports, type):
        parts = [getattr(reports, f.name) for f in dataclasses.fields(reports)]
        return [c for p in parts if _is_per_user(p, n) for c in _columns(p, n)]
    if isinstance(reports, (tuple, list)):
        if len(reports) != n or all(_is_per_user(p, n) for p in reports):
            return [c for p in reports for c in _columns(p, n)]
        # n per-user objects: stack them (ragged objects become their repr, still a valid key)
        try:
            stacked = np.asarray(reports)
            if stacked.dtype != object:
                return _columns(stacked, n)
        except ValueError:
            pass
        return [np.array([repr(r) for r in reports])]
    if isinstance(reports, np.ndarray):      # object array
        return [np.array([repr(r) for r in reports.reshape(n, -1)])]
    if hasattr(reports, "__dict__"):
        parts = [v for v in vars(reports).values() if _is_per_user(v, n)]
        if parts:
            return [c for p in parts for c in _columns(p, n)]
    raise LdpvizInputError(f"cannot read the mechanism's reports ({type(reports).__name__}) as one value per user")


def _is_per_user(value: Any, n: int) -> bool:
    try:
        return len(value) == n and not isinstance(value, (str, bytes))
    except TypeError:
        return False


class _Column:
    """Discretises one report column, learning its values or quantile edges from the selection half."""

    def __init__(self, values: np.ndarray) -> None:
        self.kind = "values"
        distinct = np.unique(values)
        limit = MAX_DISTINCT_INTEGERS if values.dtype.kind in "iub" else MAX_DISTINCT_VALUES
        if len(distinct) > limit and np.issubdtype(values.dtype, np.number):
            self.kind = "bins"
            qs = np.quantile(values.astype(float), np.linspace(0, 1, QUANTILE_BINS + 1)[1:-1])
            self.edges = np.unique(qs)
            self.n_codes = len(self.edges) + 1
        else:
            self.distinct = distinct       # codes 0..k-1; -1 = value not seen in the selection half
            self.n_codes = len(distinct)

    def codes(self, values: np.ndarray) -> np.ndarray:
        if self.kind == "bins":
            return np.searchsorted(self.edges, values.astype(float), side="right").astype(np.int64)
        idx = np.searchsorted(self.distinct, values)
        idx = np.minimum(idx, len(self.distinct) - 1)
        return np.where(self.distinct[idx] == values, idx, -1).astype(np.int64)

    def describe(self, code: int) -> str:
        if self.kind == "bins":
            lo = -np.inf if code == 0 else self.edges[code - 1]
            hi = np.inf if code >= len(self.edges) else self.edges[code]
            return f"[{lo:.4g}, {hi:.4g})"
        value = self.distinct[code]
        if isinstance(value, (bytes, np.bytes_)):
            return f"output #{code}"
        return str(int(value)) if isinstance(value, (bool, np.bool_)) else str(value)


class _Keys:
    """Key spaces learned on the selection half: the whole report, and each column alone."""

    def __init__(self, selection_columns: list[np.ndarray]) -> None:
        self.columns = [_Column(c) for c in selection_columns]
        self.joint = len(self.columns) <= MAX_JOINT_COLUMNS

    def _joint(self, codes: list[np.ndarray]) -> np.ndarray | np.ndarray:
        """One integer (or, for huge key spaces, one byte string) per report for the whole report."""
        radices = [c.n_codes + 1 for c in self.columns]          # +1: the "unseen value" code -1
        if math.prod(radices) < 2 ** 62:
            key = np.zeros(len(codes[0]), dtype=np.int64)
            for radix, code in zip(radices, codes):
                key = key * radix + (code + 1)
            return key
        rows = np.ascontiguousarray(np.column_stack(codes).astype(np.int32))
        return rows.view(np.dtype((np.void, rows.shape[1] * 4))).reshape(-1)

    def describe(self, space: str, key: Any) -> str:
        """The values behind one key of a space, e.g. ``7`` or ``(0,1,1,..)``."""
        if space.startswith("report["):
            return self.columns[int(space[len("report["):-1])].describe(int(key))
        if len(self.columns) == 1:
            return self.columns[0].describe(int(key))
        if isinstance(key, (bytes, np.void)):
            codes = list(np.frombuffer(bytes(key), dtype=np.int32))
        else:
            codes, key = [], int(key)
            for column in reversed(self.columns):
                key, digit = divmod(key, column.n_codes + 1)
                codes.append(digit - 1)
            codes.reverse()
        shown = [self.columns[j].describe(int(c)) if c >= 0 else "?" for j, c in enumerate(codes[:4])]
        return f"({','.join(shown)}{',..' if len(codes) > 4 else ''})"

    def spaces(self, columns: list[np.ndarray]) -> dict[str, np.ndarray]:
        """Integer key per report in every key space (``-1`` = unseen in the selection half)."""
        codes = [col.codes(values) for col, values in zip(self.columns, columns)]
        out = {}
        if len(codes) == 1:
            out["report"] = codes[0]
            return out
        if self.joint:
            out["report"] = self._joint(codes)
        if len(codes) <= 1024:
            for j, c in enumerate(codes):
                if self.columns[j].n_codes > 1:
                    out[f"report[{j}]"] = c
        return out
