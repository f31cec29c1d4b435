"""A reports file read in blocks, line by line or vectorised, every line accepted or counted under one reason."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from ldpviz.errors import LdpvizInputError, require
from ldpviz.deploy.estimate._account import Collected, MALFORMED, MAX_LINE_BYTES, REPEATED, TOO_LONG
from ldpviz.deploy.estimate._checks import Checker, Template, _json_record


CHUNK_BYTES = 1 << 20
#: The UTF-8 byte-order mark spreadsheets write at the start of a CSV file.
BOM = b"\xef\xbb\xbf"
#: Kinds whose every report field is one whole number: their lines are read by the vectorised path.
FAST_KINDS = frozenset({"grr", "curator", "hr", "disk", "planar-laplace", "staircase", "square-wave", "olh",
                        "olh-h"})


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
