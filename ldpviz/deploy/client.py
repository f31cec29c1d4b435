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

from __future__ import annotations

import json
import math
import secrets
import sys
from typing import Callable

SCHEMA = "ldpviz-collection/1"
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

    def __init__(self, spec: dict, randbits: Callable[[int], int] | None = None) -> None:
        if not isinstance(spec, dict) or spec.get("schema") != SCHEMA:
            raise ValueError(f"not an ldpviz collection spec of schema {SCHEMA}")
        self.spec = spec
        self.digest = spec["digest"]
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
    if len(argv) != 3:
        print("usage: python client.py collection.json LON LAT", file=sys.stderr)
        return 2
    with open(argv[0], encoding="utf-8") as fh:
        client = Client(json.load(fh))
    report = client.report(float(argv[1]), float(argv[2]))
    if report is not None:
        print(json.dumps(report, separators=(",", ":")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
