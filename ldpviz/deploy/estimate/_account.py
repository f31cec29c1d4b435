"""The account of a reports file: the rejection reasons, and what passed the checks, kept compactly."""

from __future__ import annotations

from array import array
from dataclasses import dataclass, field

import numpy as np


#: Longest report line read (an OUE report on a 1,024 x 1,024 grid is 262,144 hex characters plus the digest).
MAX_LINE_BYTES = 300_000

# Rejection reasons (named in every summary)
MALFORMED = "malformed line (not a JSON object / not a CSV row of the header's fields)"
TOO_LONG = f"line longer than {MAX_LINE_BYTES:,} bytes"
NO_DIGEST = "no spec digest"
OTHER_SPEC = "from another spec (digest differs)"
MISSING = "a report field is missing"
EXTRA = "carries fields the spec does not name (never store such a report)"
BAD_VALUE = "a field is not a whole number / hex string of the right form"
OUT_OF_DOMAIN = "value outside the spec's domain"
REPEATED = "a field named twice (a repeated JSON key or CSV header column): which value is the report's is ambiguous"
#: OLH reports held before their support counts are added up (16 MB).
SUPPORT_FLUSH = 1 << 20


@dataclass
class Collected:
    """What passed the checks, kept compactly, and what did not, by reason."""

    kind: str
    lines: int = 0
    blank: int = 0
    accepted: int = 0
    rejected: dict[str, int] = field(default_factory=dict)
    examples: dict[str, list[int]] = field(default_factory=dict)
    y: array = field(default_factory=lambda: array("q"))
    seeds: array = field(default_factory=lambda: array("Q"))
    buckets: array = field(default_factory=lambda: array("q"))
    bits: bytearray = field(default_factory=bytearray)
    #: Lines read by the vectorised path (the rest went line by line).
    fast_lines: int = 0
    #: OLH over the grid's cells: the support counts are summed as reports arrive (``support_domain`` values), so
    #: only the last ``SUPPORT_FLUSH`` seeds and buckets are ever held (memory does not grow with the file).
    support_domain: int = 0
    support: np.ndarray | None = None
    support_g: int = 0

    def reject(self, reason: str, line_no: int) -> None:
        self.rejected[reason] = self.rejected.get(reason, 0) + 1
        ex = self.examples.setdefault(reason, [])
        if len(ex) < 5:
            ex.append(line_no)

    def add(self, values: tuple) -> None:
        """One accepted report's values, as :meth:`Checker.check` returns them."""
        kind = self.kind
        if kind in ("olh", "olh-h"):
            self.seeds.append(values[-2])
            self.buckets.append(values[-1])
            if kind == "olh-h":
                self.y.append(values[0])
        elif kind == "subset":
            self.y.extend(values[0])
        elif kind == "oue":
            self.bits += values[0]
        else:
            self.y.append(values[0])
        self.accepted += 1
        self._maybe_flush()

    def add_columns(self, columns: list[np.ndarray]) -> None:
        """Many accepted reports at once: one array per value of :meth:`Checker.check`'s tuple (fast kinds)."""
        if self.kind in ("olh", "olh-h"):
            self.seeds.frombytes(np.ascontiguousarray(columns[-2], dtype="<u8").tobytes())
            self.buckets.frombytes(np.ascontiguousarray(columns[-1], dtype="<i8").tobytes())
            if self.kind == "olh-h":
                self.y.frombytes(np.ascontiguousarray(columns[0], dtype="<i8").tobytes())
        else:
            self.y.frombytes(np.ascontiguousarray(columns[0], dtype="<i8").tobytes())
        self.accepted += len(columns[0])
        self._maybe_flush()

    @property
    def n_rejected(self) -> int:
        return sum(self.rejected.values())

    def _maybe_flush(self) -> None:
        if self.support_domain and len(self.seeds) >= SUPPORT_FLUSH:
            self.flush_support()

    def flush_support(self) -> None:
        """Add the held OLH reports' support counts (:func:`~ldpviz.mechanisms.fo.oracles.olh_support_counts`, the
        mechanism's own count) to the running total and let them go."""
        from ldpviz.mechanisms.fo.oracles import OLHReports, olh_support_counts
        if self.support is None:
            self.support = np.zeros(self.support_domain, dtype=np.int64)
        if len(self.seeds):
            held = OLHReports(np.frombuffer(self.seeds, dtype=np.uint64), np.frombuffer(self.buckets, dtype=np.int64),
                              self.support_g)
            self.support += olh_support_counts(held, self.support_domain)
            del held
            self.seeds, self.buckets = array("Q"), array("q")
