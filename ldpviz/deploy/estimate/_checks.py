"""One report line checked against the spec (format, digest, domain), and the layout template the fast path reads by."""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from ldpviz.deploy.estimate._account import (BAD_VALUE, Collected, EXTRA, MALFORMED, MISSING, NO_DIGEST, OTHER_SPEC,
                                             OUT_OF_DOMAIN, REPEATED)


#: Longest digit run the vectorised path parses (an OLH seed is below (2^31 - 2)(2^31 - 1) < 10^19).
_MAX_DIGITS = 19


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
