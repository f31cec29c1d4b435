"""ldpviz collection client (Python): one true location in, one private report out.

One file, standard library only: copy it next to ``collection.json`` and run it without ldpviz installed.
It follows the spec's ``client`` section exactly, as ``client.js`` does (docs/deploy.md):

* randomness comes from :mod:`secrets` (the operating system's cryptographic source);
* every discrete choice is one uniform integer below a bound, drawn by rejection from random bits (no modulo
  bias), against the spec's integer weights; real-valued noise (planar Laplace) uses 53-bit uniforms in
  double precision and is snapped to a cell;
* the true location is never stored, logged or returned: :meth:`Client.report` gives only the fields the spec's
  ``report`` section names, and ``None`` (send nothing) for a location outside the region.

The projection lon/lat -> metres is the one ldpviz simulates with: the local equirectangular projection, or
the azimuthal equidistant projection on WGS 84 (distance and azimuth from the centre by Vincenty's inverse
formula, accurate to about 0.5 mm; ldpviz uses PROJ's geodesics, so cells agree except for points within
about a millimetre of a cell edge).

    python client.py collection.json LON LAT        # prints one JSON report (or nothing outside the region)
"""
# One file on purpose, though it is over 600 lines (issue 40.5): ldpviz.deploy.bundle ships it alone (CLIENT_PY).

from __future__ import annotations

import hashlib
import json
import math
import secrets
import sys
from typing import Callable

SCHEMA = "ldpviz-collection/2"
TWO53 = float(1 << 53)


class RandomSource:
    """Uniform random integers from a source of random bits (default: :func:`secrets.randbits`)."""

    def __init__(self, randbits: Callable[[int], int] | None = None) -> None:
        self.randbits = randbits or secrets.randbits

    def below(self, n: int) -> int:
        """Uniform on [0, n): k = bit length of n - 1 random bits, rejected until below n (expected < 2 tries)."""
        if n <= 1:
            return 0
        k = (n - 1).bit_length()
        while True:
            r = self.randbits(k)
            if r < n:
                return r

    def unit53(self) -> float:
        """Uniform on [0, 1) with 53 random bits."""
        return self.randbits(53) / TWO53

    def open53(self) -> float:
        """Uniform on (0, 1] with 53 random bits."""
        return (self.randbits(53) + 1) / TWO53


# ---------------------------------------------------------------------------
# The spec: its canonical form, its digest, its shape and its channel (docs/deploy.md, "What the digest protects")
# ---------------------------------------------------------------------------

class SpecError(ValueError):
    """A spec this client refuses to report from; the message says why in one sentence (``reason``: the why alone)."""

    def __init__(self, reason: str, message: str | None = None) -> None:
        super().__init__(message or reason)
        self.reason = reason


#: Integers travel in JSON only below this magnitude (JavaScript numbers are exact only there).
INT_LIMIT = 1 << 53
#: Largest total integer weight of one draw (the spec's weights stay below it).
WEIGHT_LIMIT = 1 << 52
OLH_PRIME = (1 << 31) - 1
OLH_MAX_BUCKETS = 1 << 20
GEO_I_UNIT_M = 1000.0
_NAMED_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _canonical_string(text: str) -> str:
    """A JSON string of ASCII only: the named escapes, every other UTF-16 code unit outside 0x20..0x7e as \\uXXXX
    (lowercase hex; characters beyond U+FFFF as their surrogate pair)."""
    out = ['"']
    for ch in text:
        if ch in _NAMED_ESCAPES:
            out.append(_NAMED_ESCAPES[ch])
        elif " " <= ch <= "~":
            out.append(ch)
        else:
            units = ch.encode("utf-16-be", "surrogatepass")
            out.extend(f"\\u{units[i]:02x}{units[i + 1]:02x}" for i in range(0, len(units), 2))
    out.append('"')
    return "".join(out)


def _canonical_number(x: int | float) -> str:
    """A number by its value (1 and 1.0 are the same number): an integral value below 2^53 in magnitude as its
    decimal digits; any other as the shortest digits that round-trip (Python's repr, JavaScript's toString),
    written d[.ddd]e<exponent> (no '+', no leading zeros, '-' only when negative)."""
    if isinstance(x, int):
        if abs(x) >= INT_LIMIT:
            raise SpecError(f"the integer {x} is beyond 2^53: JSON cannot carry it exactly to JavaScript (write it as "
                            "a string)")
        return str(x)
    if not math.isfinite(x):
        raise SpecError(f"{x} is not a JSON number")
    if x.is_integer() and abs(x) < INT_LIMIT:
        return str(int(x))
    text = repr(abs(x))
    mantissa, _, exp = text.partition("e")
    whole, _, frac = mantissa.partition(".")
    digits = (whole + frac).lstrip("0")
    exponent = int(exp or 0) - len(frac)
    stripped = digits.rstrip("0")
    exponent += len(digits) - len(stripped)
    sci = exponent + len(stripped) - 1
    body = stripped[0] + ("." + stripped[1:] if len(stripped) > 1 else "")
    return ("-" if x < 0 else "") + f"{body}e{sci}"


def _utf16_key(key: str) -> bytes:
    return key.encode("utf-16-be", "surrogatepass")


def canonical_json(obj: object) -> bytes:
    """The bytes a spec's digest is taken over (the same bytes client.js makes, docs/deploy.md): objects with their
    keys sorted by UTF-16 code units, no whitespace, strings in ASCII (:func:`_canonical_string`), numbers by value
    (:func:`_canonical_number`), true / false / null; NaN, infinities and non-string keys are refused."""
    parts: list[str] = []

    def emit(v: object) -> None:
        if v is None:
            parts.append("null")
        elif v is True:
            parts.append("true")
        elif v is False:
            parts.append("false")
        elif isinstance(v, str):
            parts.append(_canonical_string(v))
        elif isinstance(v, (int, float)):
            parts.append(_canonical_number(v))
        elif isinstance(v, dict):
            if not all(isinstance(k, str) for k in v):
                raise SpecError("an object key is not a string")
            parts.append("{")
            for i, k in enumerate(sorted(v, key=_utf16_key)):
                if i:
                    parts.append(",")
                parts.append(_canonical_string(k))
                parts.append(":")
                emit(v[k])
            parts.append("}")
        elif isinstance(v, (list, tuple)):
            parts.append("[")
            for i, item in enumerate(v):
                if i:
                    parts.append(",")
                emit(item)
            parts.append("]")
        else:
            raise SpecError(f"a value of type {type(v).__name__} is not JSON")

    emit(obj)
    return "".join(parts).encode("ascii")


def spec_digest(spec: dict) -> str:
    """``sha256:<hex>`` of the canonical JSON of ``spec`` without its ``digest`` key."""
    return "sha256:" + hashlib.sha256(canonical_json({k: v for k, v in spec.items() if k != "digest"})).hexdigest()


def _refuse(why: str) -> None:
    reason = "the spec" + ("" if why.startswith("'s ") else " ") + why
    raise SpecError(reason, f"ldpviz client: {reason}; refusing to report (use the collection.json made by "
                            "'ldpviz deploy', unchanged)")


def _whole(v: object) -> bool:
    """A whole number in [0, 2^53) (an integral float too, as JavaScript cannot tell 5 from 5.0)."""
    if isinstance(v, bool):
        return False
    if isinstance(v, float):
        return math.isfinite(v) and v.is_integer() and 0 <= v < INT_LIMIT
    return isinstance(v, int) and 0 <= v < INT_LIMIT


def _number(v: object) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _typed(v: object, kind: str) -> bool:
    if kind == "int":
        return _whole(v)
    if kind == "num":
        return _number(v)
    if kind == "str":
        return isinstance(v, str)
    if kind == "ints":
        return isinstance(v, list) and all(_whole(x) for x in v)
    if kind == "rows":
        return isinstance(v, list) and all(isinstance(r, list) and all(_whole(x) for x in r) for r in v)
    if kind == "pairs":
        return isinstance(v, list) and all(isinstance(p, list) and len(p) == 2 and _whole(p[0]) and _whole(p[1])
                                           for p in v)
    if kind == "digits":
        return isinstance(v, list) and all(isinstance(x, str) and x.isascii() and x.isdigit() for x in v)
    raise AssertionError(kind)


#: The fields of each sampler (``client.kind``) and of each value map (``client.map``), with their JSON types.
KIND_FIELDS = {
    "grr": {"D": "int", "keep": "int", "other": "int"},
    "olh": {"D": "int", "g": "int", "prime": "int", "keep": "int", "other": "int"},
    "oue": {"D": "int", "q_numerator": "int", "q_bits": "int"},
    "hr": {"D": "int", "blocks": "int", "block_size": "int", "in_set": "int", "other": "int"},
    "disk": {"box_side": "int", "radius": "int", "mask": "ints", "base": "int", "bump": "pairs"},
    "planar-laplace": {"eps_cell": "num", "float_bits": "int"},
    "staircase": {"m": "int", "levels": "ints", "lo": "rows", "hi": "rows"},
    "square-wave": {"split": "str", "b": "num", "near_probability": "num", "out_buckets": "int"},
    "olh-h": {"g": "int", "prime": "int", "keep": "int", "other": "int", "level_sizes": "ints",
              "level_index": "rows"},
    "subset": {"k": "int", "n": "int", "decay": "digits", "eps_prime_per_cell": "num"},
    "curator": {"D": "int"},
}
MAP_FIELDS = {"cell": {}, "position": {}, "domain": {"block": "int", "domain_cells": "ints"},
              "uniform-grid": {"side": "int"}}
#: Which value maps each sampler runs on.
KIND_MAPS = {"grr": ("cell", "domain", "uniform-grid"), "olh": ("cell", "uniform-grid"),
             "oue": ("cell", "uniform-grid"), "hr": ("cell", "domain", "uniform-grid"), "disk": ("cell",),
             "planar-laplace": ("position",), "staircase": ("domain",), "square-wave": ("position",),
             "olh-h": ("domain",), "subset": ("cell",), "curator": ("cell",)}
REGION_FIELDS = {"center_lon": "num", "center_lat": "num", "side_m": "num", "grid_side": "int",
                 "projection": "str"}


def check_shape(spec: object) -> None:
    """Every section and field the client reads is there with its JSON type; one clear :class:`SpecError` if not."""
    if not isinstance(spec, dict):
        _refuse("is not a JSON object")
    if spec.get("schema") != SCHEMA:
        _refuse(f"has schema {spec.get('schema')!r}; this client reads {SCHEMA!r}")
    for section in ("mechanism", "region", "client", "report"):
        if not isinstance(spec.get(section), dict):
            _refuse(f"has no {section!r} section" if section not in spec else f"'s {section!r} is not an object")
    digest = spec.get("digest")
    if not (isinstance(digest, str) and digest.startswith("sha256:")):
        _refuse("has no digest")
    if not (_number(spec.get("epsilon")) and spec["epsilon"] > 0):
        _refuse("has no positive 'epsilon'")
    if not isinstance(spec.get("epsilon_unit"), str):
        _refuse("has no 'epsilon_unit'")
    region, c = spec["region"], spec["client"]
    _check_fields(region, REGION_FIELDS, "region")
    if region["projection"] == "aeqd":
        e = region.get("ellipsoid")
        if not (isinstance(e, dict) and _number(e.get("a")) and _number(e.get("f"))):
            _refuse("'s aeqd region has no ellipsoid {a, f}")
    elif region["projection"] == "local":
        _check_fields(region, {"earth_radius_m": "num"}, "region")
    else:
        _refuse(f"'s region has projection {region['projection']!r} (expected 'aeqd' or 'local')")
    bounds = region.get("bounds")
    if bounds is not None and not (isinstance(bounds, list) and len(bounds) == 4 and all(map(_number, bounds))):
        _refuse("'s region bounds are not four numbers (west, south, east, north)")
    if not (region["side_m"] > 0 and region["grid_side"] >= 1):
        _refuse("'s region has no positive side or grid")
    kind, mp = c.get("kind"), c.get("map")
    if kind not in KIND_FIELDS:
        _refuse(f"names an unknown sampler client.kind {kind!r}")
    if mp not in KIND_MAPS[kind]:
        _refuse(f"runs sampler {kind!r} on value map {mp!r} (expected {' or '.join(KIND_MAPS[kind])})")
    _check_fields(c, {**KIND_FIELDS[kind], **MAP_FIELDS[mp], "epsilon_deployed": "num"}, "client")


def _check_fields(section: dict, fields: dict, name: str) -> None:
    for key, kind in fields.items():
        if key not in section:
            _refuse(f"'s {name} section has no {key!r}")
        if not _typed(section[key], kind):
            _refuse(f"'s {name}.{key} is not {_TYPE_TEXT[kind]}")


_TYPE_TEXT = {"int": "a whole number below 2^53", "num": "a finite number", "str": "a string",
              "ints": "a list of whole numbers", "rows": "a list of lists of whole numbers",
              "pairs": "a list of [offset, weight] pairs", "digits": "a list of decimal-digit strings"}


def _log_digits(text: str) -> float:
    """The natural log of a whole number written in decimal digits (any size)."""
    text = text.lstrip("0") or "0"
    if text == "0":
        return -math.inf
    head = text[:17]
    return math.log(float("0." + head)) + len(text) * math.log(10.0)


def _ratio_is(num: int, den: int, target: float) -> bool:
    """num / den is ``target`` up to the floor that made num (num = floor(target den), never above it)."""
    r = num / den
    return r <= target * (1 + 1e-12) and r >= target * (1 - 1e-9) - 2.0 / den


def square_wave_radius(eps: float) -> float:
    """b of the square wave (Li et al. SIGMOD'20): (eps e^eps - e^eps + 1) / (2 e^eps (e^eps - 1 - eps))."""
    e = math.exp(eps)
    return (eps * e - e + 1.0) / (2.0 * e * (e - 1.0 - eps))


#: The disk mechanisms (DAM paper) and whether their footprint also holds the cells the circle crosses with the
#: centre outside (DAM's border shrinkage, HUEM's nested disks) or only the cells whose centre is inside (DAM-NS).
DISK_CROSSED = {"dam": True, "dam-ns": False, "huem": True}
#: Largest disk radius, in cells and in grid sides (ldpviz.mechanisms.dam.disk_area).
MAX_RADIUS_CELLS = 1024
MAX_RADIUS_SIDES = 8
#: Largest public grid domain (ldpviz.mechanisms.srr.staircase): at most 64 x 64 blocks of cells.
MAX_DOMAIN_BLOCKS_SIDE = 64


def disk_reach(radius: int, crossed: bool) -> list[int]:
    """``reach[a]`` for a = 0..radius: the disk's footprint holds the offset (dy, dx) iff |dy| <= radius and
    |dx| <= reach[|dy|]. ldpviz.mechanisms.dam.kernels.dam_weights in whole numbers: the cell's centre within the
    radius (a^2 + b^2 <= r^2), or, with ``crossed``, its nearest point strictly inside ((2a - 1)^2 + (2b - 1)^2 <
    4 r^2, a term 0 when 2a - 1 < 0). Both conditions shrink away from the centre, so each row is one interval."""
    r = int(radius)
    reach = []
    for a in range(r + 1):
        t = math.isqrt(r * r - a * a)
        rest = 4 * r * r - max(2 * a - 1, 0) ** 2
        if crossed and rest > 0:
            t = max(t, (math.isqrt(rest - 1) + 1) // 2)
        reach.append(min(t, r))
    return reach


def disk_mask_rows(d: int, radius: int, reach: list[int]):
    """The output domain (kernels.output_support: the d x d grid grown by the footprint) row by row of the
    (d + 2r) x (d + 2r) box: (first flat index, number of cells) per row, in increasing order. A box cell is in it
    iff the footprint holds its offset from the nearest input cell."""
    box = d + 2 * radius
    for i in range(box):
        t = reach[max(radius - i, i - (radius + d - 1), 0)]
        yield i * box + radius - t, d + 2 * t


def disk_shares(name: str, radius: int, eps: float, reach: list[int]) -> list[list[float]]:
    """``share[a][b]``: the disk's weight above the floor, W - 1, at every offset (|dy|, |dx|) = (a, b) of the
    footprint (b <= reach[a]), in the same double-precision operations as kernels.dam_weights (DAM, DAM-NS:
    W = 1 + (e^eps - 1) x the high area, Theorem VI.1's shrunken area for a crossed cell) and kernels.huem_weights
    (HUEM, Appendix A: ring levels e^((1 - (k - 1)/r) eps) as nested disks) with DiskChannel's W - 1."""
    r = int(radius)
    out = []
    if name != "huem":
        em1 = math.expm1(eps)
        for a in range(r + 1):
            row = []
            for b in range(reach[a] + 1):
                if a * a + b * b <= r * r:
                    high = 1.0
                else:
                    delta = r / math.sqrt(a * a + b * b) - 1.0
                    high = min(max(4.0 * (delta * b + 0.5) * (delta * a + 0.5), 0.0), 1.0)
                row.append(max((1.0 + em1 * high) - 1.0, 0.0))
            out.append(row)
        return out
    if r == 0:
        return [[max(math.exp(eps) - 1.0, 0.0)]]
    levels = [math.nan] + [math.exp((1.0 - (k - 1) / r) * eps) for k in range(1, r + 1)] + [1.0]
    for a in range(r + 1):
        row = []
        for b in range(reach[a] + 1):
            rho2 = a * a + b * b
            w = 1.0
            k_in = max(math.isqrt(rho2 - 1) + 1 if rho2 else 1, 1)        # the smallest k >= 1 with k^2 >= rho2
            if k_in <= r:
                w += levels[k_in] - 1.0
            k = math.isqrt(rho2 - 1) if rho2 else 0                         # the largest k with k^2 < rho2
            if 1 <= k <= r and 4 * k * k > max(2 * a - 1, 0) ** 2 + max(2 * b - 1, 0) ** 2:
                delta = k / math.sqrt(rho2) - 1.0                         # circle k crosses the cell, centre outside
                area = min(max(4.0 * (delta * b + 0.5) * (delta * a + 0.5), 0.0), 1.0)
                w += (levels[k] - levels[k + 1]) * area
            row.append(max(w - 1.0, 0.0))
        out.append(row)
    return out


def disk_bump(radius: int, reach: list[int], shares: list[list[float]], base: int):
    """The sampler's bump as ``[offset, floor(share x base)]`` over the footprint's offsets in increasing order
    (offset = (dy + r)(2r + 1) + dx + r), zero weights included."""
    w = 2 * radius + 1
    for dy in range(-radius, radius + 1):
        t, row = reach[abs(dy)], shares[abs(dy)]
        for dx in range(-t, t + 1):
            yield (dy + radius) * w + dx + radius, math.floor(row[abs(dx)] * base)


def disk_total(d: int, radius: int, reach: list[int], shares: list[list[float]]) -> float:
    """The disk's total weight in units of the floor: the output domain's cells plus every share."""
    cells = sum(n for _, n in disk_mask_rows(d, radius, reach))
    return cells + sum(row[0] + 2 * sum(row[1:]) if a == 0 else 2 * row[0] + 4 * sum(row[1:])
                       for a, row in enumerate(shares))


def derive_disk(name: str, d: int, radius: int, eps: float) -> dict:
    """The ``mask``, ``base`` and ``bump`` a disk mechanism gives on the d x d grid (what ldpviz.deploy.spec writes;
    for the tests: the check compares row by row without building these lists)."""
    reach = disk_reach(radius, DISK_CROSSED[name])
    shares = disk_shares(name, radius, eps, reach)
    base = 1 << max(0, int(math.floor(math.log2(WEIGHT_LIMIT / disk_total(d, radius, reach, shares)))))
    return {"mask": [k for s, n in disk_mask_rows(d, radius, reach) for k in range(s, s + n)], "base": base,
            "bump": [[k, wt] for k, wt in disk_bump(radius, reach, shares, base) if wt > 0]}


def domain_block(d: int) -> int:
    """Cells per block side of the public grid domain: the smallest k with ceil(d / k) <= 64
    (ldpviz.mechanisms.srr.staircase.grid_block)."""
    return max(1, -(-d // MAX_DOMAIN_BLOCKS_SIDE))


def _quadkey(col: int, row: int) -> int:
    """The quadtree code of block (row, col): base-4 digits 2 x row bit + col bit (ldpviz.geo.quadkey.interleave)."""
    code = 0
    for bit in range(max(col.bit_length(), row.bit_length())):
        code |= ((col >> bit) & 1) << (2 * bit) | ((row >> bit) & 1) << (2 * bit + 1)
    return code


def domain_order(d: int) -> tuple[int, list[int], list[int]]:
    """``(block, cells, codes)`` of the public grid domain: the ceil(d / k)^2 blocks in increasing quadtree code
    (ldpviz.mechanisms.srr.staircase.grid_domain), each block's flat index and its code."""
    block = domain_block(d)
    side = -(-d // block)
    pairs = sorted((_quadkey(i % side, i // side), i) for i in range(side * side))
    return block, [i for _, i in pairs], [code for code, _ in pairs]


def domain_hierarchy(d: int) -> tuple[list[int], list[list[int]]]:
    """OLH-H's levels over the public grid domain (ldpviz.mechanisms.srr.olh_h.hierarchy): level l's nodes are the
    distinct leading 2l bits of the codes; a level is kept from the first with two nodes down to the leaves.
    Returns each kept level's number of nodes and each domain position's node index there."""
    block, _, codes = domain_order(d)
    side = -(-d // block)
    depth = 1
    while (1 << depth) < side:
        depth += 1
    sizes, index = [], []
    for level in range(1, depth + 1):
        shift = 2 * (depth - level)
        row, prev, n = [], None, 0
        for code in codes:                      # codes increase, so do their prefixes: a node's index is a count
            p = code >> shift
            if p != prev:
                n, prev = n + 1, p
            row.append(n - 1)
        if n >= 2 or level == depth:
            sizes.append(n)
            index.append(row)
    return sizes, index


def check_channel(spec: dict) -> None:
    """Every parameter that sets the privacy of the sampler, derived here from the mechanism's epsilon (and the
    grid), equals the spec's, up to the one unit an integer weight is floored by; the structural ones (sizes,
    indices) are consistent, so no index can leave its table. A :class:`SpecError` names the first that is not."""
    c, region = spec["client"], spec["region"]
    eps, unit, kind, mp = float(spec["epsilon"]), spec["epsilon_unit"], c["kind"], c["map"]
    d = int(region["grid_side"])
    cell_m = float(region["side_m"]) / d
    e = math.exp(eps)
    if mp == "cell":
        D = d * d
    elif mp == "domain":
        block, cells, _ = domain_order(d)
        side = -(-d // block)
        if c["block"] != block:
            _refuse(f"'s client.block is {c['block']}, not the {block} cells per block side its {d} x {d} grid gives")
        if c["domain_cells"] != cells:
            _refuse(f"'s client.domain_cells is not the quadtree order of the {side} x {side} blocks of its {d} x {d} "
                    "grid")
        D = len(cells)
    elif mp == "uniform-grid":
        if not 1 <= c["side"] <= 1 << 12:
            _refuse("'s uniform grid side is out of range")
        D = int(c["side"]) ** 2
    else:
        D = 0
    if "D" in c and c["D"] != D:
        _refuse(f"'s client.D is {c['D']} but its value map has {D} values")
    geo = kind in ("planar-laplace", "subset")
    if not geo and unit != "per report":
        _refuse(f"states its LDP epsilon {unit!r}, not 'per report'")
    if kind in ("grr", "olh", "olh-h"):
        g = D if kind == "grr" else int(c["g"])
        if kind != "grr":
            if c["prime"] != OLH_PRIME:
                _refuse(f"'s OLH prime is {c['prime']}, not 2^31 - 1")
            want = OLH_MAX_BUCKETS if eps > math.log(OLH_MAX_BUCKETS) else max(2.0, e + 1.0)
            if not (2 <= g <= OLH_MAX_BUCKETS and abs(g - want) <= 0.5 + 1e-9):
                _refuse(f"has {g} OLH buckets where epsilon {eps:g} gives round(e^eps + 1) = {round(want)}")
        if g > 1 and not (c["other"] >= 1 and _ratio_is(c["keep"], c["other"], e)):
            _refuse(f"'s weights keep/other = {c['keep']}/{c['other']} give e^{_log_ratio(c['keep'], c['other'])} "
                    f"where epsilon {eps:g} gives e^{eps:g}")
        if g > 1 and c["keep"] + (g - 1) * c["other"] > WEIGHT_LIMIT:
            _refuse("'s weights exceed 2^52")
        if kind == "olh-h" and [c["level_sizes"], c["level_index"]] != list(domain_hierarchy(d)):
            _refuse("'s hierarchy (client.level_sizes, client.level_index) is not the quadtree hierarchy of its "
                    "domain")
    elif kind == "oue":
        q = 1.0 / (e + 1.0)
        Q = c["q_numerator"]
        if not (c["q_bits"] == 53 and q * TWO53 * (1 - 1e-12) <= Q <= q * TWO53 * (1 + 1e-12) + 1):
            _refuse(f"'s OUE threshold {Q} / 2^{c['q_bits']} is not q = 1/(e^eps + 1) = {q:.6g} at epsilon {eps:g}")
    elif kind == "hr":
        B, b, E, S = c["blocks"], c["block_size"], c["in_set"], c["other"]
        if not (B >= 1 and B & (B - 1) == 0 and b >= 2 and b & (b - 1) == 0 and B * (b - 1) >= D):
            _refuse("'s Hadamard code (blocks, block_size) does not cover its domain")
        if not (S >= 1 and _ratio_is(E, S, e)):
            _refuse(f"'s weights in_set/other give e^{_log_ratio(E, S)} where epsilon {eps:g} gives e^{eps:g}")
        if (b // 2) * (E + S) + (B * b - b) * S > WEIGHT_LIMIT:
            _refuse("'s weights exceed 2^52")
    elif kind == "disk":
        name = spec["mechanism"].get("name")
        r, box, base, bump = c["radius"], c["box_side"], c["base"], c["bump"]
        w = 2 * r + 1
        if not (isinstance(name, str) and name in DISK_CROSSED):
            _refuse("runs the disk sampler for a mechanism that is not dam, dam-ns or huem")
        if not (box == d + 2 * r and base >= 1 and all(o < w * w for o, _ in bump) and bump):
            _refuse("'s disk (radius, box_side, bump) does not fit its grid")
        if r > min(MAX_RADIUS_CELLS, MAX_RADIUS_SIDES * d):
            _refuse(f"'s disk radius {r} is above the largest allowed ({MAX_RADIUS_CELLS} cells and "
                    f"{MAX_RADIUS_SIDES} grid sides)")
        reach = disk_reach(r, DISK_CROSSED[name])
        mask, pos = c["mask"], 0
        for start, n in disk_mask_rows(d, r, reach):      # the output domain, row by row; stops at the first miss
            if pos + n > len(mask) or mask[pos:pos + n] != list(range(start, start + n)):
                pos = -1
                break
            pos += n
        if pos != len(mask):
            _refuse(f"'s client.mask is not the output domain of {name}'s disk of radius {r} on its {d} x {d} grid")
        centre = [wt for o, wt in bump if o == r * w + r]
        top = max(wt for _, wt in bump)
        # the own cell has weight e^eps (DAM paper Def. 8), every other at most that: the ratio bound is the signed one
        if not (centre and centre[0] == top and _ratio_is(base + top, base, e)):
            _refuse(f"'s disk weights give e^{_log_ratio(base + top, base)} where epsilon {eps:g} gives e^{eps:g} "
                    "at the own cell")
        shares = disk_shares(name, r, eps, reach)
        total = disk_total(d, r, reach, shares)
        if not (base & (base - 1) == 0 and total * base <= WEIGHT_LIMIT * (1 + 1e-9)
                and (base == 1 or 2 * total * base > WEIGHT_LIMIT * (1 - 1e-9))):
            _refuse(f"'s client.base {base} is not the largest power of two that keeps the disk's total weight "
                    "within 2^52")
        i = 0
        for k, want in disk_bump(r, reach, shares, base):   # every weight within one floored unit of W - 1
            got = 0
            if i < len(bump) and bump[i][0] == k:
                got, i = bump[i][1], i + 1
            if abs(got - want) > 1 + 1e-12 * want:
                break
        else:
            k = bump[i][0] if i < len(bump) else -1          # an offset left over: outside the disk or repeated
        if k >= 0:
            _refuse(f"'s client.bump is not the disk weights {name} gives at its epsilon with radius {r} (first "
                    f"difference at offset {k})")
        if len(c["mask"]) * base + sum(wt for _, wt in bump) > WEIGHT_LIMIT:
            _refuse("'s weights exceed 2^52")
    elif kind == "staircase":
        m, L, lo, hi = c["m"], c["levels"], c["lo"], c["hi"]
        if not (m >= 1 and len(L) == m and min(L) >= 1 and len(lo) == D and len(hi) == D and
                all(len(a) == m + 1 and len(z) == m + 1 and all(0 <= a[j] and z[j] <= D for j in range(m + 1))
                    for a, z in zip(lo, hi))):
            _refuse("'s staircase (m, levels, lo, hi) does not fit its domain")
        # L-SRR Alg. 1's groups: nested intervals of sorted positions, from the empty one at x to the whole domain,
        # so every position is reported from every input (Theorem 3.3's ratio below then bounds the channel)
        for x, (a, z) in enumerate(zip(lo, hi)):
            if not (a[0] == z[0] == x and a[m] == 0 and z[m] == D
                    and all(a[j + 1] <= a[j] and z[j] <= z[j + 1] for j in range(m))):
                _refuse(f"'s staircase intervals (client.lo, client.hi) of position {x} are not nested from the "
                        "empty one at it to the whole domain")
        dens = []
        for a, z in zip(lo, hi):
            sizes = [(z[j + 1] - a[j + 1]) - (z[j] - a[j]) for j in range(m)]
            if min(sizes) < 0:
                _refuse("'s staircase groups have negative sizes")
            dens.append(sum(s * lv for s, lv in zip(sizes, L)))
        if min(dens) < 1 or max(dens) > WEIGHT_LIMIT:
            _refuse("'s staircase weights are empty or exceed 2^52")
        got = math.log(max(L) / min(L)) + math.log(max(dens) / min(dens))      # L-SRR Theorem 3.3's ratio
        if got > eps * (1 + 1e-9) + 1e-12:
            _refuse(f"'s staircase weights give epsilon {got:.6g}, above its epsilon {eps:g}")
    elif kind == "square-wave":
        if c["split"] not in ("users", "budget"):
            _refuse(f"'s square wave split is {c['split']!r}")
        se = eps if c["split"] == "users" else eps / 2
        b = square_wave_radius(se)
        ee = math.exp(se)
        near = 2 * b * ee / (2 * b * ee + 1)
        if not (abs(c["b"] - b) <= 1e-9 * b and abs(c["near_probability"] - near) <= 1e-9 * near
                and c["out_buckets"] >= 1):
            _refuse(f"'s square wave (b, near_probability) = ({c['b']:.6g}, {c['near_probability']:.6g}) is not "
                    f"({b:.6g}, {near:.6g}) that epsilon {eps:g} gives")
    elif kind == "planar-laplace":
        if unit != "per km":
            _refuse(f"states planar Laplace's epsilon {unit!r}, not 'per km'")
        want = eps * cell_m / GEO_I_UNIT_M
        if not (abs(c["eps_cell"] - want) <= 1e-9 * want and c["float_bits"] == 53):
            _refuse(f"'s noise scale eps_cell {c['eps_cell']:.6g} is not {want:.6g} (epsilon {eps:g} per km on "
                    f"{cell_m:.6g} m cells)")
    elif kind == "subset":
        n, k, decay, ep = c["n"], c["k"], c["decay"], float(c["eps_prime_per_cell"])
        per_km = eps if unit == "per km" else float(c["epsilon_deployed"])
        want = per_km * cell_m / GEO_I_UNIT_M
        smax = 2 * (d - 1) ** 2
        if not (n == d * d and 1 <= k <= max(1, n - 1) and len(decay) == smax + 1):
            _refuse("'s subset sampler (n, k, decay) does not fit its grid")
        if not abs(ep - want) <= 1e-9 * want:
            _refuse(f"'s eps' per cell {ep:.6g} is not {want:.6g} ({per_km:g} per km on {cell_m:.6g} m cells)")
        rmax, lim = math.sqrt(smax), 52 * math.log(2.0)
        for s, text in enumerate(decay):
            if abs(_log_digits(text) - (ep * (rmax - math.sqrt(s)) / 2 + lim)) > 1e-9:
                _refuse(f"'s decay weight {s} is not e^(eps' (r_max - r) / 2) 2^52")


def _log_ratio(num: int, den: int) -> str:
    return f"{math.log(num / den):.4g}" if num > 0 and den > 0 else "?"


def verify_spec(spec: object, expected_digest: str | None = None) -> str:
    """Check a parsed spec before any report (:func:`check_shape`, its digest recomputed over the canonical form,
    the pinned digest when one is given, :func:`check_channel`); return the verified digest."""
    check_shape(spec)
    assert isinstance(spec, dict)
    actual = spec_digest(spec)
    if actual != spec["digest"]:
        _refuse(f"was changed after it was made: it states digest {spec['digest'][:19]}... but its content hashes "
                f"to {actual[:19]}...")
    if expected_digest is not None and actual != expected_digest:
        _refuse(f"is not the one this app was built for: its digest is {actual[:19]}..., the app expects "
                f"{str(expected_digest)[:19]}...")
    check_channel(spec)
    return actual


# ---------------------------------------------------------------------------
# Projection (ldpviz.geo.domain.Region)
# ---------------------------------------------------------------------------

def _pymod(a: float, n: float) -> float:
    return a % n


def wrap_lon(lon: float) -> float:
    return 180.0 if lon == 180.0 else _pymod(lon + 180.0, 360.0) - 180.0


def vincenty_inverse(lat1: float, lon1: float, lat2: float, lon2: float, a: float, f: float) -> tuple[float, float]:
    """Geodesic distance (m) and initial azimuth (radians, from north) on the ellipsoid (Vincenty 1975)."""
    b = a * (1.0 - f)
    L = math.radians(_pymod(lon2 - lon1 + 180.0, 360.0) - 180.0)
    U1 = math.atan((1.0 - f) * math.tan(math.radians(lat1)))
    U2 = math.atan((1.0 - f) * math.tan(math.radians(lat2)))
    sinU1, cosU1, sinU2, cosU2 = math.sin(U1), math.cos(U1), math.sin(U2), math.cos(U2)
    lam = L
    for _ in range(200):
        sinLam, cosLam = math.sin(lam), math.cos(lam)
        sinSigma = math.hypot(cosU2 * sinLam, cosU1 * sinU2 - sinU1 * cosU2 * cosLam)
        if sinSigma == 0.0:
            return 0.0, 0.0
        cosSigma = sinU1 * sinU2 + cosU1 * cosU2 * cosLam
        sigma = math.atan2(sinSigma, cosSigma)
        sinAlpha = cosU1 * cosU2 * sinLam / sinSigma
        cos2Alpha = 1.0 - sinAlpha * sinAlpha
        cos2SigmaM = cosSigma - 2.0 * sinU1 * sinU2 / cos2Alpha if cos2Alpha != 0.0 else 0.0
        C = f / 16.0 * cos2Alpha * (4.0 + f * (4.0 - 3.0 * cos2Alpha))
        prev = lam
        lam = L + (1.0 - C) * f * sinAlpha * (
            sigma + C * sinSigma * (cos2SigmaM + C * cosSigma * (-1.0 + 2.0 * cos2SigmaM * cos2SigmaM)))
        if abs(lam - prev) < 1e-14:
            break
    u2 = cos2Alpha * (a * a - b * b) / (b * b)
    A = 1.0 + u2 / 16384.0 * (4096.0 + u2 * (-768.0 + u2 * (320.0 - 175.0 * u2)))
    B = u2 / 1024.0 * (256.0 + u2 * (-128.0 + u2 * (74.0 - 47.0 * u2)))
    dSigma = B * sinSigma * (cos2SigmaM + B / 4.0 * (
        cosSigma * (-1.0 + 2.0 * cos2SigmaM * cos2SigmaM)
        - B / 6.0 * cos2SigmaM * (-3.0 + 4.0 * sinSigma * sinSigma) * (-3.0 + 4.0 * cos2SigmaM * cos2SigmaM)))
    s = b * A * (sigma - dSigma)
    alpha1 = math.atan2(cosU2 * sinLam, cosU1 * sinU2 - sinU1 * cosU2 * cosLam)
    return s, alpha1


def _in_bounds(lon: float, lat: float, bounds: list) -> bool:
    west, south, east, north = (float(v) for v in bounds)
    west, east, lon = wrap_lon(west), wrap_lon(east), wrap_lon(lon)
    in_lon = (west <= lon <= east) if west <= east else (lon >= west or lon <= east)
    return in_lon and south <= lat <= north


def unit_coordinates(region: dict, lon: float, lat: float) -> tuple[float, float] | None:
    """(u, v) in [0, 1]^2 of a lon/lat point in the spec's region, or None outside it (or its typed box)."""
    lon, lat = float(lon), float(lat)
    if not (math.isfinite(lon) and math.isfinite(lat)) or not -90.0 <= lat <= 90.0:
        return None
    lon0, lat0, side = region["center_lon"], region["center_lat"], region["side_m"]
    if region["projection"] == "aeqd":
        e = region["ellipsoid"]
        s, az = vincenty_inverse(lat0, lon0, lat, wrap_lon(lon), e["a"], e["f"])
        x, y = s * math.sin(az), s * math.cos(az)
    else:
        R = region["earth_radius_m"]
        dlon = _pymod(lon - lon0 + 180.0, 360.0) - 180.0
        x = math.radians(dlon) * R * math.cos(math.radians(lat0))
        y = math.radians(lat - lat0) * R
    u, v = x / side + 0.5, y / side + 0.5
    if not (0.0 <= u <= 1.0 and 0.0 <= v <= 1.0):
        return None
    if region.get("bounds") is not None and not _in_bounds(lon, lat, region["bounds"]):
        return None
    return u, v


def _index(t: float, n: int) -> int:
    return min(int(t * n), n - 1)


# ---------------------------------------------------------------------------
# Samplers (the spec's client section)
# ---------------------------------------------------------------------------

def _grr(rs: RandomSource, value: int, D: int, keep: int, other: int) -> int:
    if D == 1:
        return 0
    u = rs.below(keep + (D - 1) * other)
    if u < keep:
        return value
    y = (u - keep) // other
    return y + (y >= value)


def _parity(a: int) -> int:
    return bin(a).count("1") & 1


class Client:
    """The phone's half of one collection. Holds the spec only; never a location."""

    def __init__(self, spec: dict, randbits: Callable[[int], int] | None = None,
                 expected_digest: str | None = None) -> None:
        """``spec``: the parsed collection.json, unchanged; refused with a :class:`SpecError` (one sentence) when its
        shape, digest or channel does not verify (:func:`verify_spec`). ``expected_digest``: the digest the app was
        built for (printed by 'ldpviz deploy'), so a spec replaced together with its digest is refused too."""
        self.digest = verify_spec(spec, expected_digest)
        self.spec = spec
        self.c = spec["client"]
        self.d = int(spec["region"]["grid_side"])
        self.random = RandomSource(randbits)
        if self.c["map"] == "domain":
            inv = {}
            for pos, cell in enumerate(self.c["domain_cells"]):
                inv[int(cell)] = pos
            self._position = inv
            self._block_side = -(-self.d // int(self.c["block"]))
        if self.c["kind"] == "disk":
            cum, total = [], 0
            for _, w in self.c["bump"]:
                total += int(w)
                cum.append(total)
            self._bump_cum = cum
            self._mask_weight = len(self.c["mask"]) * int(self.c["base"])
        if self.c["kind"] == "staircase":
            self._levels = [int(x) for x in self.c["levels"]]

    # ---- the value a location is reported about ------------------------------------------------------------
    def value_of(self, u: float, v: float) -> int:
        """The mechanism's input value for unit coordinates (u, v): a cell, a domain position or a UG cell."""
        kind = self.c["map"]
        if kind == "uniform-grid":
            N = int(self.c["side"])
            return _index(v, N) * N + _index(u, N)
        cell = _index(v, self.d) * self.d + _index(u, self.d)
        if kind == "domain":
            k = int(self.c["block"])
            row, col = divmod(cell, self.d)
            return self._position[(row // k) * self._block_side + col // k]
        return cell

    # ---- one report -------------------------------------------------------------------------------------------
    def report(self, lon: float, lat: float) -> dict | None:
        """One report for a true location, or None (send nothing) outside the region."""
        uv = unit_coordinates(self.spec["region"], lon, lat)
        if uv is None:
            return None
        return self.report_unit(*uv)

    def report_unit(self, u: float, v: float) -> dict:
        """One report for a position given in the region's unit coordinates."""
        if self.c["kind"] == "planar-laplace":
            return {"spec": self.digest, "y": self._planar_laplace(u * self.d, v * self.d)}
        if self.c["kind"] == "square-wave":
            return {"spec": self.digest, "y": self._square_wave_report(u, v)}
        return {"spec": self.digest, **self.perturb_value(self.value_of(u, v))}

    def perturb_value(self, x: int) -> dict:
        """The report fields for input value ``x`` (everything but planar Laplace, which needs the position)."""
        c, rs = self.c, self.random
        kind = c["kind"]
        if kind == "grr":
            return {"y": _grr(rs, x, int(c["D"]), int(c["keep"]), int(c["other"]))}
        if kind == "olh":
            P, g = int(c["prime"]), int(c["g"])
            a = 1 + rs.below(P - 1)
            b = rs.below(P)
            h = ((a * x + b) % P) * g // P
            return {"seed": str((a - 1) * P + b), "bucket": _grr(rs, h, g, int(c["keep"]), int(c["other"]))}
        if kind == "oue":
            D, Q = int(c["D"]), int(c["q_numerator"])
            out = bytearray((D + 7) // 8)
            for i in range(D):
                bit = rs.randbits(1) if i == x else int(rs.randbits(53) < Q)
                if bit:
                    out[i >> 3] |= 0x80 >> (i & 7)
            return {"bits": out.hex()}
        if kind == "olh-h":
            level = rs.below(len(c["level_sizes"]))
            node = int(c["level_index"][level][x])
            P, g = int(c["prime"]), int(c["g"])
            a = 1 + rs.below(P - 1)
            b = rs.below(P)
            h = ((a * node + b) % P) * g // P
            return {"level": level, "seed": str((a - 1) * P + b),
                    "bucket": _grr(rs, h, g, int(c["keep"]), int(c["other"]))}
        if kind == "subset":
            return {"cells": self._subset(x)}
        if kind == "hr":
            return {"y": self._hr(x)}
        if kind == "disk":
            return {"y": self._disk(x)}
        if kind == "staircase":
            return {"y": self._staircase(x)}
        raise ValueError(f"unknown client kind {kind!r}")

    def _subset_tables(self, x: int) -> tuple[list[int], list[int]]:
        """Cells ordered by distance from x (squared distance, ties by index) and the cumulative weights of the
        nearest member's rank (cached per input: one phone asks for one)."""
        cache = self.__dict__.setdefault("_subset_cache", {})
        if x not in cache:
            d, n, k = self.d, int(self.c["n"]), int(self.c["k"])
            r0, c0 = divmod(x, d)
            sq = [((r - r0) ** 2 + (c - c0) ** 2, r * d + c) for r in range(d) for c in range(d)]
            sq.sort()
            decay = [int(v) for v in self.c["decay"]]
            cum, total = [], 0
            for j, (s, _) in enumerate(sq):
                total += math.comb(n - 1 - j, k - 1) * decay[s]
                cum.append(total)
            cache[x] = ([cell for _, cell in sq], cum)
        return cache[x]

    def _subset(self, x: int) -> list[int]:
        n, k, rs = int(self.c["n"]), int(self.c["k"]), self.random
        order, cum = self._subset_tables(x)
        u = rs.below(cum[-1])
        lo, hi = 0, n - 1
        while lo < hi:                                   # first cumulative weight above u
            mid = (lo + hi) // 2
            if cum[mid] > u:
                hi = mid
            else:
                lo = mid + 1
        j = lo
        m = n - 1 - j                                    # ranks after j: a uniform (k-1)-subset (Floyd)
        chosen: set[int] = set()
        for t in range(m - (k - 1), m):
            r = rs.below(t + 1)
            chosen.add(t if r in chosen else r)
        return sorted([order[j]] + [order[j + 1 + r] for r in chosen])

    def _hr(self, x: int) -> int:
        c, rs = self.c, self.random
        B, b, E, S = int(c["blocks"]), int(c["block_size"]), int(c["in_set"]), int(c["other"])
        s, K = b // 2, B * b
        block, row = divmod(x, b - 1)
        row += 1
        low = row & -row
        u = rs.below(s * E + s * S + (K - b) * S)
        if u < s * E + s * S:
            want = 0 if u < s * E else 1
            col = rs.below(b)
            if _parity(row & col) != want:
                col ^= low
            return block * b + col
        t = rs.below((B - 1) * b)
        other = t // b
        other += other >= block
        return other * b + t % b

    def _disk(self, x: int) -> int:
        c, rs = self.c, self.random
        base = int(c["base"])
        total = self._mask_weight + (self._bump_cum[-1] if self._bump_cum else 0)
        u = rs.below(total)
        if u < self._mask_weight:
            return int(c["mask"][u // base])
        u -= self._mask_weight
        lo, hi = 0, len(self._bump_cum) - 1
        while lo < hi:                                   # first cumulative weight above u
            mid = (lo + hi) // 2
            if self._bump_cum[mid] > u:
                hi = mid
            else:
                lo = mid + 1
        k = int(c["bump"][lo][0])
        w, box = 2 * int(c["radius"]) + 1, int(c["box_side"])
        row, col = divmod(x, self.d)
        return (row + k // w) * box + col + k % w

    def _staircase(self, x: int) -> int:
        lo, hi, L = self.c["lo"][x], self.c["hi"][x], self._levels
        sizes = [(hi[j + 1] - lo[j + 1]) - (hi[j] - lo[j]) for j in range(len(L))]
        u = self.random.below(sum(s * w for s, w in zip(sizes, L)))
        for j, (size, w) in enumerate(zip(sizes, L)):
            if u < size * w:
                k = u // w
                outer_lo, inner_lo, inner_hi = lo[j + 1], lo[j], hi[j]
                left = inner_lo - outer_lo
                return outer_lo + k if k < left else inner_hi + (k - left)
            u -= size * w
        raise AssertionError("unreachable: u is below the total weight")

    def _square_wave(self, value: float) -> int:
        c, rs = self.c, self.random
        b, B = float(c["b"]), int(c["out_buckets"])
        u = rs.unit53()
        if rs.unit53() < float(c["near_probability"]):
            noisy = value - b + 2.0 * b * u
        else:
            noisy = -b + u if u < value else value + b + (u - value)
        return min(max(math.floor((noisy + b) / (1.0 + 2.0 * b) * B), 0), B - 1)

    def _square_wave_report(self, u: float, v: float) -> int:
        B = int(self.c["out_buckets"])
        if self.c["split"] == "users":
            axis = self.random.randbits(1)
            return axis * B + self._square_wave(v if axis else u)
        bx = self._square_wave(u)
        return bx * B + self._square_wave(v)

    def _planar_laplace(self, px: float, py: float) -> int:
        eps, d, rs = float(self.c["eps_cell"]), self.d, self.random
        theta = rs.unit53() * (2.0 * math.pi)
        r = -(math.log(rs.open53()) + math.log(rs.open53())) / eps
        col = min(max(math.floor(px + r * math.cos(theta)), 0), d - 1)
        row = min(max(math.floor(py + r * math.sin(theta)), 0), d - 1)
        return int(row * d + col)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) not in (3, 4):
        print("usage: python client.py collection.json LON LAT [EXPECTED_DIGEST]", file=sys.stderr)
        return 2
    try:
        with open(argv[0], encoding="utf-8") as fh:
            spec = json.load(fh)
        client = Client(spec, expected_digest=argv[3] if len(argv) == 4 else None)
        lon, lat = float(argv[1]), float(argv[2])
    except SpecError as err:
        print(err, file=sys.stderr)
        return 2
    except (OSError, UnicodeDecodeError, ValueError) as err:
        print(f"ldpviz client: cannot read {argv[0]!r} or the location: {err}", file=sys.stderr)
        return 2
    report = client.report(lon, lat)
    if report is not None:
        print(json.dumps(report, separators=(",", ":")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
