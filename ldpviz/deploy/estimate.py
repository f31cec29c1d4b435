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
"""

from __future__ import annotations

import csv
import json
from array import array
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from ldpviz.mechanisms.estimation import start_map_text, stayed_at_start
from ldpviz.errors import LdpvizInputError, require
from ldpviz.deploy import spec as specs
from ldpviz.mechanisms.base import Estimate, Mechanism
from ldpviz.mechanisms.path_cost import PER_USER

#: Longest report line read (an OUE report on a 1,024 x 1,024 grid is 262,144 hex characters plus the digest).
MAX_LINE_BYTES = 300_000
CHUNK_BYTES = 1 << 20
#: A loss above this share of lines is a warning, not a success.
LOSS_WARNING_SHARE = 0.05
DEFAULT_BOOTSTRAP = 40
#: The UTF-8 byte-order mark spreadsheets write at the start of a CSV file.
BOM = b"\xef\xbb\xbf"

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
#: Kinds whose every report field is one whole number: their lines are read by the vectorised path.
FAST_KINDS = frozenset({"grr", "curator", "hr", "disk", "planar-laplace", "staircase", "square-wave", "olh",
                        "olh-h"})
#: OLH reports held before their support counts are added up (16 MB).
SUPPORT_FLUSH = 1 << 20
#: Longest digit run the vectorised path parses (an OLH seed is below (2^31 - 2)(2^31 - 1) < 10^19).
_MAX_DIGITS = 19


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


def iter_blocks(source: Any) -> Iterator[bytes | None]:
    """Whole lines of a path or a binary file object, each ending in a newline, streamed in ~1 MB blocks; a UTF-8
    byte-order mark at the start of the file is dropped. A line longer than MAX_LINE_BYTES that does not fit a
    block is yielded alone as None, skipped to its end without being held in memory."""
    if hasattr(source, "read"):
        source.seek(0)
        yield from _blocks_of(source)
        return
    with open(source, "rb") as fh:
        yield from _blocks_of(fh)


def _blocks_of(fh: Any) -> Iterator[bytes | None]:
    carry, skipping, first = b"", False, True
    while True:
        chunk = fh.read(CHUNK_BYTES)
        if first:
            first = False
            while len(chunk) < len(BOM) and chunk and BOM.startswith(chunk):   # a short read inside the mark
                more = fh.read(CHUNK_BYTES)
                if not more:
                    break
                chunk += more
            chunk = chunk[len(BOM):] if chunk.startswith(BOM) else chunk
        if not chunk:
            break
        if skipping:
            nl = chunk.find(b"\n")
            if nl < 0:
                continue
            yield None
            skipping = False
            chunk = chunk[nl + 1:]
        data = carry + chunk if carry else chunk
        cut = data.rfind(b"\n")
        if cut < 0:
            carry = data
        else:
            yield data[:cut + 1]
            carry = data[cut + 1:]
        if len(carry) > MAX_LINE_BYTES:
            carry, skipping = b"", True
    if skipping:
        yield None
    elif carry:
        yield carry + b"\n"


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit() and value.strip().isascii():
        return int(value.strip())
    return None


class _Repeated(ValueError):
    """A JSON object names a key twice."""


def _pairs(pairs: list[tuple[str, Any]]) -> dict:
    out = dict(pairs)
    if len(out) != len(pairs):
        raise _Repeated
    return out


def _json_record(text: str) -> tuple[dict | None, str]:
    """One JSON line as a record, or the reason it is refused: REPEATED (a key twice), MALFORMED (not JSON, or
    not an object)."""
    try:
        rec = json.loads(text, object_pairs_hook=_pairs)
    except _Repeated:
        return None, REPEATED
    except (ValueError, RecursionError):
        return None, MALFORMED
    return (rec, "") if isinstance(rec, dict) else (None, MALFORMED)


class Checker:
    """The spec's report rules: fields, digest, domain."""

    def __init__(self, spec: dict) -> None:
        self.digest = spec["digest"]
        c = spec["client"]
        self.kind = c["kind"]
        self.fields = list(spec["report"]["fields"])
        self.payload = [f for f in self.fields if f != "spec"]
        d = int(spec["region"]["grid_side"])
        #: For the vectorised path: y < y_limit, and y_table[y] when there is a table.
        self.y_limit: int = 0
        self.y_table: np.ndarray | None = None
        if self.kind in ("grr", "curator"):
            self.y_limit = int(c["D"])
        elif self.kind == "hr":
            self.y_limit = int(c["blocks"]) * int(c["block_size"])
        elif self.kind == "disk":
            box = int(c["box_side"])
            self.y_limit = box * box
            self.y_table = np.zeros(self.y_limit, dtype=bool)
            self.y_table[np.asarray(c["mask"], dtype=np.int64)] = True
        elif self.kind == "planar-laplace":
            self.y_limit = d * d
        elif self.kind == "staircase":
            self.y_limit = len(c["lo"])
        elif self.kind == "subset":
            self.k, self.n_cells = int(c["k"]), int(c["n"])
        elif self.kind == "square-wave":
            B = int(c["out_buckets"])
            self.y_limit = 2 * B if c["split"] == "users" else B * B
        elif self.kind in ("olh", "olh-h"):
            self.seed_max = (int(c["prime"]) - 1) * int(c["prime"])
            self.g = int(c["g"])
            self.levels = len(c.get("level_sizes") or [None])
        elif self.kind == "oue":
            self.D = int(c["D"])
            self.nbytes = (self.D + 7) // 8
            self.pad_mask = (1 << (8 * self.nbytes - self.D)) - 1

    def y_ok(self, y: int) -> bool:
        return 0 <= y < self.y_limit and (self.y_table is None or bool(self.y_table[y]))

    def check(self, rec: dict) -> tuple[str | None, tuple]:
        """(the rejection reason, or None and the report's values) of one parsed line."""
        if "spec" not in rec or rec["spec"] in ("", None):
            return NO_DIGEST, ()
        if rec["spec"] != self.digest:
            return OTHER_SPEC, ()
        if any(f not in rec or rec[f] in ("", None) for f in self.payload):
            return MISSING, ()
        if len(rec) != len(self.fields):
            return EXTRA, ()
        if self.kind in ("olh", "olh-h"):
            seed, bucket = _int(rec["seed"]), _int(rec["bucket"])
            level = _int(rec["level"]) if self.kind == "olh-h" else 0
            if seed is None or bucket is None or level is None:
                return BAD_VALUE, ()
            if not (0 <= seed < self.seed_max and 0 <= bucket < self.g and 0 <= level < self.levels):
                return OUT_OF_DOMAIN, ()
            return None, ((level, seed, bucket) if self.kind == "olh-h" else (seed, bucket))
        if self.kind == "subset":
            cells = rec["cells"]
            if isinstance(cells, str):
                cells = [_int(t) for t in cells.split()]
            if not isinstance(cells, list) or any(_int(v) is None for v in cells):
                return BAD_VALUE, ()
            cells = [_int(v) for v in cells]
            if len(cells) != self.k or any(b <= a for a, b in zip(cells, cells[1:])) or \
                    not all(0 <= v < self.n_cells for v in cells):
                return OUT_OF_DOMAIN, ()
            return None, (cells,)
        if self.kind == "oue":
            text = rec["bits"]
            if not isinstance(text, str) or len(text) != 2 * self.nbytes:
                return BAD_VALUE, ()
            try:
                raw = bytes.fromhex(text)
            except ValueError:
                return BAD_VALUE, ()
            if raw[-1] & self.pad_mask:
                return OUT_OF_DOMAIN, ()
            return None, (raw,)
        y = _int(rec["y"])
        if y is None:
            return BAD_VALUE, ()
        if not self.y_ok(y):
            return OUT_OF_DOMAIN, ()
        return None, (y,)

    def add(self, rec: dict, out: Collected, line_no: int) -> None:
        """Check one parsed line: accepted into ``out``, or counted there under its reason."""
        reason, values = self.check(rec)
        if reason is not None:
            out.reject(reason, line_no)
        else:
            out.add(values)

    def domain_ok(self, columns: list[np.ndarray]) -> np.ndarray:
        """The vectorised domain check of many reports' values (fast kinds; the values are whole numbers >= 0)."""
        if self.kind in ("olh", "olh-h"):
            ok = (columns[-2] < np.uint64(self.seed_max)) & (columns[-1] < np.uint64(self.g))
            if self.kind == "olh-h":
                ok &= columns[0] < np.uint64(self.levels)
            return ok
        y = columns[0]
        ok = y < np.uint64(self.y_limit)
        if self.y_table is not None:
            ok[ok] = self.y_table[y[ok].astype(np.int64)]
        return ok


class Template:
    """The byte layout of a report line with its whole-number values cut out: ``segments[0] value segments[1] ...``.

    Learnt from a line the line-by-line path accepted, so every line of this exact layout is a valid JSON object (or
    CSV row) with the same fields in the same order; a line that matches it is read by :meth:`match` (vectorised
    over a block) to the same values the line-by-line path would give, and every other line goes line by line."""

    def __init__(self, segments: list[bytes], order: list[int]) -> None:
        self.segments = segments
        self.order = order                      # which value of Checker.check's tuple each hole holds
        self._words = [np.frombuffer(s + b"\0" * (-len(s) % 8), dtype="<u8") for s in segments]

    @classmethod
    def learn(cls, raw: bytes, rec: dict, fmt: str, header: list[str] | None, checker: Checker) -> Template | None:
        """The template of ``raw`` (an accepted line, parsed to ``rec``), or None if its layout is not one the
        vectorised path reads: compact or spaced JSON with values as numbers or digit strings, or plain CSV."""
        names = ["level", "seed", "bucket"] if checker.kind == "olh-h" else \
            ["seed", "bucket"] if checker.kind == "olh" else ["y"]
        digest = checker.digest.encode()

        def hole(value: Any) -> bytes | None:
            if isinstance(value, bool) or not isinstance(value, (int, str)):
                return None
            return b"\x00" if isinstance(value, int) else b'"\x00"'

        if fmt == "json":
            keys = list(rec)
            for item_sep, key_sep in ((b",", b":"), (b", ", b": ")):
                parts = []
                for k in keys:
                    if k == "spec":
                        value = b'"' + digest + b'"'
                    else:
                        value = hole(rec[k])
                        if value is None:
                            return None
                    parts.append(json.dumps(k).encode() + key_sep + value)
                pattern = b"{" + item_sep.join(parts) + b"}"
                made = cls._fill(pattern, [str(_int(rec[k])).encode() for k in keys if k != "spec"])
                if made == raw:
                    return cls(pattern.split(b"\x00"), [names.index(k) for k in keys if k != "spec"])
            return None
        if header is None or any("," in str(rec[h]) or '"' in str(rec[h]) for h in header):
            return None
        pattern = b",".join(digest if h == "spec" else b"\x00" for h in header)
        made = cls._fill(pattern, [str(_int(rec[h])).encode() for h in header if h != "spec"])
        if made != raw:
            return None
        return cls(pattern.split(b"\x00"), [names.index(h) for h in header if h != "spec"])

    @staticmethod
    def _fill(pattern: bytes, values: list[bytes]) -> bytes:
        parts = pattern.split(b"\x00")
        if len(parts) != len(values) + 1 or any(v == b"None" for v in values):
            return b""
        return parts[0] + b"".join(v + p for v, p in zip(values, parts[1:]))

    def match(self, block: bytes, starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
        """Which lines ``block[starts[i]:ends[i]]`` have this layout, and their values (one uint64 array per hole,
        in Checker.check's order). A value must be 1-19 digits without a leading zero (else: line by line)."""
        arr = np.frombuffer(block, dtype=np.uint8)
        size = len(arr)
        pad = np.frombuffer(block + b"\0" * 8, dtype=np.uint8)
        words = np.ndarray((size + 1,), dtype="<u8", buffer=pad, offset=0, strides=(1,))   # words[i]: bytes i..i+7
        pos = starts.astype(np.int64)
        ok = np.ones(len(pos), dtype=bool)
        values: list[np.ndarray | None] = [None] * len(self.order)
        for h, seg in enumerate(self.segments):
            L = len(seg)
            if L:
                ok &= pos + L <= ends
                w = self._words[h]
                for j in range(len(w)):
                    at = np.minimum(pos + 8 * j, size)
                    got = words[at]
                    tail = L - 8 * j
                    if tail < 8:
                        got = got & np.uint64((1 << (8 * tail)) - 1)
                    ok &= got == w[j]
                pos = pos + L
            if h == len(self.segments) - 1:
                break
            length = np.zeros(len(pos), dtype=np.int64)
            value = np.zeros(len(pos), dtype=np.uint64)
            running = ok.copy()
            for k in range(_MAX_DIGITS + 1):             # the digit run at pos: its length and value
                byte = arr[np.minimum(pos + k, size - 1)]
                digit = (byte >= 48) & (byte <= 57) & running & (pos + k < size)
                running = digit
                if not digit.any():
                    break
                value[digit] = value[digit] * np.uint64(10) + (byte[digit] - 48)
                length += digit
            ok &= (length >= 1) & (length <= _MAX_DIGITS) & ~running
            ok &= (length == 1) | (arr[np.minimum(pos, size - 1)] != 48)
            values[self.order[h]] = value
            run_end = pos + length
            pos = np.where(ok, run_end, pos)
        ok &= pos == ends
        return ok, values  # type: ignore[return-value]


class _Reader:
    """One pass over a reports file: the format decided on the first line that is a JSON object or a CSV header
    naming the spec's fields (earlier lines are counted malformed), every line checked and counted."""

    def __init__(self, checker: Checker, fast: bool, support_domain: int = 0) -> None:
        self.checker = checker
        self.out = Collected(checker.kind)
        if support_domain:
            self.out.support_domain, self.out.support_g = support_domain, checker.g
        self.fmt: str | None = None
        self.header: list[str] | None = None
        self.header_repeats: list[str] = []
        self.template: Template | None = None
        self.first_text: str | None = None
        self.json_like = False
        self.next_line = 1
        self.fast = fast and checker.kind in FAST_KINDS

    def block(self, block: bytes | None) -> None:
        """Check every line of one block (or count a skipped overlong line)."""
        out, first = self.out, self.next_line
        if block is None:
            out.lines += 1
            self.next_line += 1
            out.reject(TOO_LONG, first)
            return
        arr = np.frombuffer(block, dtype=np.uint8)
        ends = np.flatnonzero(arr == 10)
        starts = np.empty_like(ends)
        starts[:1] = 0
        starts[1:] = ends[:-1] + 1
        cr = ends > starts
        cr[cr] = arr[ends[cr] - 1] == 13
        ends = ends - cr
        n = len(ends)
        out.lines += n
        self.next_line += n
        i = 0
        while i < n and (self.template is None or not self.fast):
            self.line(block[starts[i]:ends[i]], first + i, None)
            i += 1
        if i < n:
            self._fast(block, starts[i:], ends[i:], first + i)

    def _fast(self, block: bytes, starts: np.ndarray, ends: np.ndarray, first: int) -> None:
        """Lines of the learnt layout read at once; the others line by line, merged back in file order."""
        out = self.out
        assert self.template is not None
        ok, columns = self.template.match(block, starts, ends)
        if ok.any():
            ok[ok] = self.checker.domain_ok([c[ok] for c in columns])
        slow = np.flatnonzero(~ok)
        out.fast_lines += len(ok) - len(slow)
        if 2 * len(slow) > len(ok):                 # most lines have another layout: learn it from the next one
            self.template = None
        if len(slow) == 0:
            out.add_columns(columns)
            return
        kept: list[tuple[int, tuple]] = []
        for i in slow.tolist():
            self.line(block[starts[i]:ends[i]], first + i, (kept, i))
        if not kept:
            out.add_columns([c[ok] for c in columns])
            return
        index = np.concatenate([np.flatnonzero(ok), np.array([i for i, _ in kept], dtype=np.int64)])
        order = np.argsort(index, kind="stable")
        out.add_columns([np.concatenate([c[ok], np.array([v[j] for _, v in kept], dtype=np.uint64)])[order]
                         for j, c in enumerate(columns)])

    def line(self, raw: bytes, line_no: int, keep: tuple[list, int] | None) -> None:
        """One line the line-by-line way; accepted values go to ``keep`` (a block's list, to merge in file order) or
        straight into the output."""
        out, checker = self.out, self.checker
        if len(raw) > MAX_LINE_BYTES:
            out.reject(TOO_LONG, line_no)
            return
        try:
            text = raw.decode("utf-8").strip()
        except UnicodeDecodeError:
            out.reject(MALFORMED, line_no)
            return
        if not text or text.strip("\x00") == "":
            out.blank += 1
            return
        if self.first_text is None:
            self.first_text = text
        rec: Any
        if self.fmt is None:
            if text.startswith("{"):
                self.json_like = True
                rec, reason = _json_record(text)
                if reason == REPEATED:
                    self.fmt = "json"
                if reason:
                    out.reject(reason, line_no)
                    return
                self.fmt = "json"
            else:
                header = self._header(text)
                if header is None:
                    out.reject(MALFORMED, line_no)
                    return
                self.fmt, self.header = "csv", header
                self.header_repeats = sorted({h for h in header if header.count(h) > 1})
                if self.header_repeats:
                    out.reject(REPEATED, line_no)
                return
        elif self.fmt == "json":
            if not text.startswith("{"):
                out.reject(MALFORMED, line_no)
                return
            rec, reason = _json_record(text)
            if reason:
                out.reject(reason, line_no)
                return
        else:
            if self.header_repeats:
                out.reject(REPEATED, line_no)
                return
            if text.startswith("{"):                       # a JSON line in a CSV file
                out.reject(MALFORMED, line_no)
                return
            try:
                row = next(csv.reader([text]))
            except csv.Error:
                out.reject(MALFORMED, line_no)
                return
            assert self.header is not None
            if len(row) != len(self.header):
                out.reject(MALFORMED, line_no)
                return
            rec = {h: v.strip() for h, v in zip(self.header, row)}
        reason, values = checker.check(rec)
        if reason is not None:
            out.reject(reason, line_no)
            return
        if keep is None:
            out.add(values)
        else:
            keep[0].append((keep[1], values))
        if self.fast and self.template is None:
            self.template = Template.learn(raw, rec, self.fmt, self.header, checker)

    def _header(self, text: str) -> list[str] | None:
        """The CSV header this line is, if it names the spec's digest and every report field."""
        try:
            header = [h.strip() for h in next(csv.reader([text]))]
        except (csv.Error, StopIteration):
            return None
        if "spec" not in header or not set(self.checker.payload) <= set(header):
            return None
        return header


def collect(spec: dict, reports: Any, max_bytes: int | None = None, *, fast: bool = True,
            stream_support: bool = False) -> Collected:
    """Read and check every line of ``reports`` (a path, or a binary file object such as an upload; JSON lines or
    CSV with a header; a UTF-8 byte-order mark is dropped); see the module docstring. The format is decided on the
    first line that is a JSON object or a CSV header naming the report fields (lines before it count as malformed).
    ``fast``: read lines of the layout learnt from the first accepted line by the vectorised :class:`Template`
    (same checks, same values; ``False`` reads every line one by one, as a reference). ``stream_support``: for OLH
    over the grid's cells keep the running support counts (``Collected.support``) instead of every report."""
    if hasattr(reports, "read"):
        path = reports
        size = getattr(reports, "size", None)
        if size is None:
            size = len(reports.getbuffer()) if hasattr(reports, "getbuffer") else 1
    else:
        path = Path(reports)
        if not path.exists():
            raise LdpvizInputError(f"reports file {str(path)!r} not found")
        if path.is_dir():
            raise LdpvizInputError(f"{str(path)!r} is a folder; give the reports file")
        size = path.stat().st_size
    if max_bytes is not None and size > max_bytes:
        raise LdpvizInputError(f"the reports file is {size:,} bytes, above the limit of {max_bytes:,} "
                               f"(--max-bytes); nothing was read. Raise the limit or split the file")
    require(size > 0, f"the reports file {_name(reports)!r} is empty: no reports to estimate from")
    streamed = int(spec["client"]["D"]) if stream_support and spec["client"]["kind"] == "olh" and \
        spec["client"]["map"] == "cell" else 0
    reader = _Reader(Checker(spec), fast, streamed)
    try:
        for block in iter_blocks(path):
            reader.block(block)
    except OSError as err:
        raise LdpvizInputError(f"cannot read the reports file {_name(reports)!r}: {err.strerror or err}") from None
    out = reader.out
    if streamed:
        out.flush_support()
    if reader.fmt is None and out.lines > out.blank and not reader.json_like:
        raise LdpvizInputError(
            f"the reports file is neither JSON lines nor a CSV whose header names the spec's report fields "
            f"({', '.join(reader.checker.fields)}): no line is a JSON object or such a header; its first line is "
            f"{(reader.first_text or '')[:80]!r}")
    return out


def _name(reports: Any) -> str:
    return str(getattr(reports, "name", reports))


def _lost_text(out: Collected) -> str:
    parts = [f"{n:,} {reason}" for reason, n in sorted(out.rejected.items(), key=lambda kv: -kv[1])]
    return "; ".join(parts) if parts else "none"


def reports_object(mech: Mechanism, spec: dict, out: Collected) -> Any:
    """The accepted reports in the form the mechanism's server half takes."""
    from ldpviz.mechanisms.fo.oracles import OLHReports, OUEReports
    kind, name = out.kind, mech.name
    if kind == "olh-h":
        from ldpviz.mechanisms.srr.olh_h import OLHHReports
        from ldpviz.mechanisms.srr.staircase import grid_domain
        return OLHHReports(grid_domain(mech.grid), np.frombuffer(out.y, dtype=np.int64),
                           np.frombuffer(out.seeds, dtype=np.uint64),
                           np.frombuffer(out.buckets, dtype=np.int64), int(spec["client"]["g"]))
    if kind == "olh" and out.support is not None:
        from ldpviz.mechanisms.fo.oracles import SupportCounts
        inner = SupportCounts(out.support, out.accepted, PER_USER)
    elif kind == "olh":
        inner = OLHReports(np.frombuffer(out.seeds, dtype=np.uint64),
                           np.frombuffer(out.buckets, dtype=np.int64), int(spec["client"]["g"]))
    elif kind == "oue":
        D = int(spec["client"]["D"])
        inner = OUEReports(np.frombuffer(bytes(out.bits), dtype=np.uint8).reshape(-1, (D + 7) // 8).copy(), D)
    elif kind == "subset":
        inner = np.frombuffer(out.y, dtype=np.int64).reshape(-1, int(spec["client"]["k"]))
    else:
        inner = np.frombuffer(out.y, dtype=np.int64)
    if name == "ug":
        from ldpviz.mechanisms.grids.decompositions import UGReports
        return UGReports(int(spec["client"]["side"]), False, out.accepted, inner)
    if name == "srr":
        from ldpviz.mechanisms.srr.staircase import SrrReports, grid_domain
        return SrrReports(mech.plan(grid_domain(mech.grid)), inner)
    if name in ("grr-tiles", "hr-tiles"):
        from ldpviz.mechanisms.srr.staircase import grid_domain
        from ldpviz.mechanisms.srr.tile_baselines import DomainReports
        return DomainReports(grid_domain(mech.grid), inner)
    return inner


@dataclass
class DeployedEstimate:
    """An estimate from collected reports, its intervals, and the account of every line."""

    spec: dict
    mechanism: Mechanism
    estimate: Estimate
    low: np.ndarray
    high: np.ndarray
    interval_method: str
    collected: Collected
    warnings: list[str]

    @property
    def density(self) -> np.ndarray:
        return self.estimate.density

    def summary(self) -> dict:
        c = self.collected
        return {
            "spec": self.spec["digest"], "mechanism": self.mechanism.name, "epsilon": self.spec["epsilon"],
            "epsilon_unit": self.spec["epsilon_unit"], "guarantee": self.spec["mechanism"]["guarantee"],
            "lines": c.lines, "blank_lines": c.blank, "accepted": c.accepted, "rejected": c.n_rejected,
            "rejected_by_reason": dict(c.rejected), "rejected_examples_line_numbers": c.examples,
            "interval": self.interval_method, "warnings": self.warnings, "ledger": self.spec["ledger"],
            "region": self.spec["region"]["name"], "grid_side": self.spec["region"]["grid_side"],
            # an EM estimate that never left its uniform start says so (issue 37.14; None: it left it, or no test)
            "estimate_informative": not stayed_at_start(self.estimate.info),
            "start_map": start_map_text(self.estimate.info),
        }


def _histogram_bootstrap(mech: Mechanism, reports: Any, B: int, rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    """Percentile intervals from B multinomial resamples of the report histogram."""
    from ldpviz.mechanisms.fo.oracles import ReportHistogram
    from ldpviz.mechanisms.srr.staircase import SrrHistogram, SrrReports
    from ldpviz.mechanisms.srr.tile_baselines import DomainReports
    if mech.name == "ug":
        from ldpviz.mechanisms.grids.decompositions import UGReports
        inner = np.asarray(reports.reports, dtype=np.int64)
        size = _ug_outputs(mech, reports.side)
        counts = np.bincount(inner, minlength=size)
        make = lambda c: UGReports(reports.side, False, int(c.sum()), ReportHistogram(c, int(c.sum())))  # noqa: E731
    elif isinstance(reports, SrrReports):
        counts = np.bincount(reports.positions, minlength=reports.plan.domain.size)
        make = lambda c: SrrHistogram(reports.plan, c, int(c.sum()))  # noqa: E731
    elif isinstance(reports, DomainReports):
        size = mech.domain_channel(reports.domain.size).shape[0]
        counts = np.bincount(reports.reports, minlength=size)
        make = lambda c: DomainReports(reports.domain, ReportHistogram(c, int(c.sum())))  # noqa: E731
    else:
        hist = mech.statistic(reports)
        counts = np.asarray(hist.counts, dtype=np.int64)
        make = lambda c: ReportHistogram(c, int(c.sum()))  # noqa: E731
    n = int(counts.sum())
    p = counts / n
    draws = np.stack([mech.estimate(make(rng.multinomial(n, p))).density.ravel() for _ in range(B)])
    return np.percentile(draws, 2.5, axis=0), np.percentile(draws, 97.5, axis=0)


def _containing(estimate: np.ndarray, low: np.ndarray, high: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """``[low, high]`` widened where needed so that every cell's interval holds its own estimate, and how many were.

    A percentile bootstrap of a shrinking estimator (EM stopped early, clipping) is centred on the resamples'
    mean, which can miss the estimate itself; a readout must never print a value outside its own interval, so
    such cells are widened to the estimate and counted (said in the interval's method)."""
    est = np.asarray(estimate, float).ravel()
    low, high = np.asarray(low, float).ravel(), np.asarray(high, float).ravel()
    outside = int(np.count_nonzero((est < low) | (est > high)))
    return np.minimum(low, est), np.maximum(high, est), outside


def _report_bootstrap(mech: Mechanism, reports: Any, B: int, rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    """Percentile intervals from B resamples of the reports themselves (OLH-H: its estimate is not a function of
    one additive histogram)."""
    from dataclasses import replace
    n = len(reports.levels) if hasattr(reports, "levels") else len(reports)
    draws = []
    for _ in range(B):
        idx = rng.integers(0, n, n)
        again = reports[idx] if isinstance(reports, np.ndarray) else \
            replace(reports, levels=reports.levels[idx], seeds=reports.seeds[idx], buckets=reports.buckets[idx])
        draws.append(mech.estimate(again).density.ravel())
    return np.percentile(draws, 2.5, axis=0), np.percentile(draws, 97.5, axis=0)


def _ug_outputs(mech: Mechanism, side: int) -> int:
    """How many distinct reports UG's oracle (GRR or HR) has on its N x N grid."""
    if mech.oracle == "hr":
        from ldpviz.mechanisms.fo.hadamard import hadamard_code
        return hadamard_code(side * side, mech.epsilon, "high-privacy").outputs
    return side * side


def _oracle_interval(mech: Mechanism, est: Estimate, n: int, spec: dict) -> tuple[np.ndarray, np.ndarray]:
    """Unbiased share +- 1.96 sd (USENIX'17 Thm. 2 at the estimated counts)."""
    from ldpviz.mechanisms.fo.oracles import olh_support_probabilities, oue_probabilities, pure_variance
    c = spec["client"]
    eps = float(spec["epsilon"])
    p, q = olh_support_probabilities(eps, int(c["g"])) if c["kind"] == "olh" else oue_probabilities(eps)
    if mech.name == "ug":
        from ldpviz.mechanisms.grids.decompositions import TwoLevelGrid
        from ldpviz.geo.partition import Partition
        raw = est.info.get("ug_raw")
        N = int(c["side"])
        counts = np.asarray(raw, dtype=float)
        sd = np.sqrt(pure_variance(n, np.maximum(counts, 0.0), p, q))
        rects = TwoLevelGrid.uniform(N).rects()
        low = Partition(rects, np.maximum((counts - 1.96 * sd) / n, 0.0)).to_grid(mech.grid.side)
        high = Partition(rects, np.minimum((counts + 1.96 * sd) / n, 1.0)).to_grid(mech.grid.side)
        return low.ravel(), high.ravel()
    counts = np.asarray(est.raw, dtype=float).ravel()
    sd = np.sqrt(pure_variance(n, np.maximum(counts, 0.0), p, q))
    return np.maximum((counts - 1.96 * sd) / n, 0.0), np.minimum((counts + 1.96 * sd) / n, 1.0)


def estimate_reports(spec: dict | str | Path, reports: str | Path, *, bootstrap: int = DEFAULT_BOOTSTRAP,
                     seed: int = 0, max_bytes: int | None = None) -> DeployedEstimate:
    """Check and estimate a reports file against its spec (see the module docstring)."""
    spec = specs.load_spec(spec) if isinstance(spec, (str, Path)) else specs.verify_spec(spec)
    require(isinstance(bootstrap, int) and 2 <= bootstrap <= 10_000,
            f"--bootstrap must be a whole number from 2 to 10,000, got {bootstrap!r}")
    mech = specs.mechanism_from_spec(spec)
    out = collect(spec, reports, max_bytes, stream_support=True)
    if out.accepted == 0:
        raise LdpvizInputError(f"no valid reports in {_name(reports)!r}: {out.lines:,} lines, rejected: "
                               f"{_lost_text(out)}")
    obj = reports_object(mech, spec, out)
    rng = np.random.default_rng(seed)
    if out.kind == "curator":
        return _curator_release(spec, mech, obj, out, bootstrap)
    est = mech.estimate(obj)
    if out.kind in ("olh-h", "subset"):
        low, high = _report_bootstrap(mech, obj, bootstrap, rng)
        method = f"95%: bootstrap percentiles, {bootstrap} resamples of the reports (with replacement)"
    elif out.kind in ("olh", "oue"):
        if mech.name == "ug":
            from ldpviz.mechanisms.fo.oracles import oracle_estimate
            est.info["ug_raw"] = oracle_estimate(mech.oracle, obj.reports, obj.side ** 2, mech.epsilon)
        low, high = _oracle_interval(mech, est, out.accepted, spec)
        est.info.pop("ug_raw", None)
        method = "95%: unbiased share +- 1.96 sd, exact variance (USENIX'17 Thm. 2) at the estimated counts"
    else:
        low, high = _histogram_bootstrap(mech, obj, bootstrap, rng)
        method = f"95%: bootstrap percentiles, {bootstrap} multinomial resamples of the report histogram"
    warnings = []
    low, high, widened = _containing(est.density.ravel(), low, high)
    if widened:
        method += (f"; in {widened:,} of {low.size:,} cells the estimate lay outside the bootstrap's percentiles "
                   f"(the estimator's shrinkage shifts its resamples), and those intervals were widened to reach it")
    total = out.accepted + out.n_rejected
    if out.n_rejected and out.n_rejected > LOSS_WARNING_SHARE * total:
        warnings.append(f"{out.n_rejected:,} of {total:,} report lines ({100 * out.n_rejected / total:.1f}%) were "
                        f"rejected: {_lost_text(out)}. The estimate uses the {out.accepted:,} valid reports only.")
    return DeployedEstimate(spec, mech, est, np.asarray(low).ravel(), np.asarray(high).ravel(), method, out,
                            warnings)


def _curator_release(spec: dict, mech: Mechanism, cells: np.ndarray, out: Collected, bootstrap: int
                     ) -> DeployedEstimate:
    """Central DP: the curator runs the mechanism once on the true cells (noise from a generator seeded by the
    operating system's cryptographic source). Intervals are post-processing of the release: the mechanism re-run on
    users drawn from the released distribution, so they cost no further privacy."""
    import secrets
    from ldpviz.geo.domain import Binned
    grid = mech.grid
    centres = grid.cell_centers_unit()
    rng = np.random.default_rng(secrets.randbits(128))
    est = mech.run(Binned(cells=cells, unit=centres[cells], n_outside=0), rng)
    p = np.clip(est.density.ravel(), 0.0, None)
    p = p / p.sum() if p.sum() > 0 else np.full(p.size, 1.0 / p.size)
    sims = []
    for _ in range(bootstrap):
        fake = rng.choice(p.size, size=len(cells), p=p)
        sims.append(mech.run(Binned(cells=fake, unit=centres[fake], n_outside=0), rng).density.ravel())
    low, high = np.percentile(sims, 2.5, axis=0), np.percentile(sims, 97.5, axis=0)
    method = (f"95%: {bootstrap} re-runs of the mechanism on users drawn from the released distribution "
              "(post-processing: no further privacy spent)")
    low, high, widened = _containing(est.density.ravel(), low, high)
    if widened:
        method += f"; {widened:,} cells' intervals widened to reach the release itself"
    return DeployedEstimate(spec, mech, est, low, high, method, out, [])


def write_outputs(result: DeployedEstimate, out_dir: str | Path) -> dict[str, Path]:
    """estimate.csv, estimate.geojson, estimate.png, summary.json in ``out_dir`` (created)."""
    from ldpviz.render import export, png
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    grid = result.mechanism.grid
    layers = {"estimated_share": result.density.ravel(), "low_95": result.low, "high_95": result.high}
    paths = {"csv": out_dir / "estimate.csv", "geojson": out_dir / "estimate.geojson",
             "png": out_dir / "estimate.png", "summary": out_dir / "summary.json"}
    paths["csv"].write_text(export.grid_csv(grid, layers), encoding="utf-8")
    meta = {"spec": result.spec["digest"], "mechanism": result.mechanism.name, "accepted": result.collected.accepted,
            "interval": result.interval_method}
    paths["geojson"].write_text(export.grid_geojson(grid, layers, meta), encoding="utf-8")
    title = f"{result.mechanism.label}: {result.collected.accepted:,} reports"
    paths["png"].write_bytes(png.density_png(grid, result.density, title=title, legend="estimated share"))
    paths["summary"].write_text(json.dumps(result.summary(), indent=1, default=str) + "\n", encoding="utf-8")
    return paths


def summary_text(result: DeployedEstimate) -> list[str]:
    """The lines the command prints."""
    s = result.summary()
    lines = [f"estimated {s['mechanism']} from {s['accepted']:,} valid reports ({s['lines']:,} lines read)",
             f"  {s['guarantee']}",
             f"  intervals: {s['interval']}"]
    sentence = s["ledger"].get("sentence") if isinstance(s["ledger"], dict) else None
    if sentence:
        lines.append(f"  each person pays: {sentence}")
    if s["start_map"]:
        lines.append(f"  NOT AN ESTIMATE: {s['start_map']}")
    if s["rejected"]:
        lines.append(f"  rejected {s['rejected']:,} lines: {_lost_text(result.collected)}")
    else:
        lines.append("  rejected: none")
    return lines
