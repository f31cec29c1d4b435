// ldpviz collection client (JavaScript): one true location in, one private report out.
//
// A dependency-free ES module (ES2020: BigInt for OLH seeds). A web page or a React Native app imports it:
//
//   import { createClient } from "./client.js";
//   const client = createClient(spec);          // spec = the parsed collection.json, unchanged
//   const report = client.report(lon, lat);     // an object to send, or null: outside the region, send nothing
//
// It follows the spec's "client" section exactly, as ldpviz's Python client does (docs/deploy.md):
// - randomness comes from crypto.getRandomValues (browsers, Node >= 19, React Native with a getRandomValues
//   polyfill backed by the platform's secure generator); there is no fallback to Math.random;
// - every discrete choice is one uniform integer below a bound, drawn by rejection from random bits (no modulo
//   bias), against the spec's integer weights (all below 2^52, exact in doubles); real-valued noise (planar
//   Laplace) uses 53-bit uniforms in double precision and is snapped to a cell;
// - the true location is never stored, logged or returned: report() returns only the fields the spec's "report"
//   section names.
// The projection lon/lat -> metres is ldpviz's: local equirectangular, or azimuthal equidistant on WGS 84
// (Vincenty's inverse formula, within about 0.5 mm of PROJ's geodesics).

export const SCHEMA = "ldpviz-collection/1";
const DEG = Math.PI / 180;
const TWO32 = 4294967296;
const TWO53 = 9007199254740992;

/** Python's float modulo (the sign of the divisor), which ldpviz's projections use. */
function pymod(a, n) {
  const r = a % n;
  return r !== 0 && (r < 0) !== (n < 0) ? r + n : r;
}

function wrapLon(lon) {
  return lon === 180 ? 180 : pymod(lon + 180, 360) - 180;
}

/** Geodesic distance (m) and initial azimuth (radians from north) on the ellipsoid (Vincenty 1975). */
export function vincentyInverse(lat1, lon1, lat2, lon2, a, f) {
  const b = a * (1 - f);
  const L = (pymod(lon2 - lon1 + 180, 360) - 180) * DEG;
  const U1 = Math.atan((1 - f) * Math.tan(lat1 * DEG));
  const U2 = Math.atan((1 - f) * Math.tan(lat2 * DEG));
  const sinU1 = Math.sin(U1), cosU1 = Math.cos(U1), sinU2 = Math.sin(U2), cosU2 = Math.cos(U2);
  let lam = L, sinLam = 0, cosLam = 0, sinSigma = 0, cosSigma = 0, sigma = 0, cos2Alpha = 0, cos2SigmaM = 0;
  for (let i = 0; i < 200; i++) {
    sinLam = Math.sin(lam);
    cosLam = Math.cos(lam);
    sinSigma = Math.hypot(cosU2 * sinLam, cosU1 * sinU2 - sinU1 * cosU2 * cosLam);
    if (sinSigma === 0) return [0, 0];
    cosSigma = sinU1 * sinU2 + cosU1 * cosU2 * cosLam;
    sigma = Math.atan2(sinSigma, cosSigma);
    const sinAlpha = cosU1 * cosU2 * sinLam / sinSigma;
    cos2Alpha = 1 - sinAlpha * sinAlpha;
    cos2SigmaM = cos2Alpha !== 0 ? cosSigma - 2 * sinU1 * sinU2 / cos2Alpha : 0;
    const C = f / 16 * cos2Alpha * (4 + f * (4 - 3 * cos2Alpha));
    const prev = lam;
    lam = L + (1 - C) * f * sinAlpha *
      (sigma + C * sinSigma * (cos2SigmaM + C * cosSigma * (-1 + 2 * cos2SigmaM * cos2SigmaM)));
    if (Math.abs(lam - prev) < 1e-14) break;
  }
  const u2 = cos2Alpha * (a * a - b * b) / (b * b);
  const A = 1 + u2 / 16384 * (4096 + u2 * (-768 + u2 * (320 - 175 * u2)));
  const B = u2 / 1024 * (256 + u2 * (-128 + u2 * (74 - 47 * u2)));
  const dSigma = B * sinSigma * (cos2SigmaM + B / 4 * (cosSigma * (-1 + 2 * cos2SigmaM * cos2SigmaM) -
    B / 6 * cos2SigmaM * (-3 + 4 * sinSigma * sinSigma) * (-3 + 4 * cos2SigmaM * cos2SigmaM)));
  const s = b * A * (sigma - dSigma);
  const alpha1 = Math.atan2(cosU2 * sinLam, cosU1 * sinU2 - sinU1 * cosU2 * cosLam);
  return [s, alpha1];
}

function inBounds(lon, lat, bounds) {
  let [west, south, east, north] = bounds.map(Number);
  west = wrapLon(west);
  east = wrapLon(east);
  lon = wrapLon(lon);
  const inLon = west <= east ? lon >= west && lon <= east : lon >= west || lon <= east;
  return inLon && lat >= south && lat <= north;
}

/** [u, v] in [0, 1]^2 of a lon/lat point in the spec's region, or null outside it (or its typed box). */
export function unitCoordinates(region, lon, lat) {
  lon = Number(lon);
  lat = Number(lat);
  if (!Number.isFinite(lon) || !Number.isFinite(lat) || lat < -90 || lat > 90) return null;
  const lon0 = region.center_lon, lat0 = region.center_lat, side = region.side_m;
  let x, y;
  if (region.projection === "aeqd") {
    const [s, az] = vincentyInverse(lat0, lon0, lat, wrapLon(lon), region.ellipsoid.a, region.ellipsoid.f);
    x = s * Math.sin(az);
    y = s * Math.cos(az);
  } else {
    const R = region.earth_radius_m;
    const dlon = pymod(lon - lon0 + 180, 360) - 180;
    x = dlon * DEG * R * Math.cos(lat0 * DEG);
    y = (lat - lat0) * DEG * R;
  }
  const u = x / side + 0.5, v = y / side + 0.5;
  if (!(u >= 0 && u <= 1 && v >= 0 && v <= 1)) return null;
  if (region.bounds != null && !inBounds(lon, lat, region.bounds)) return null;
  return [u, v];
}

function index(t, n) {
  return Math.min(Math.floor(t * n), n - 1);
}

/** Uniform random integers from 32-bit random words (default: crypto.getRandomValues). */
export class RandomSource {
  constructor(fill) {
    if (fill == null) {
      const c = globalThis.crypto;
      if (!c || typeof c.getRandomValues !== "function") {
        throw new Error("ldpviz client: no crypto.getRandomValues on this platform; refusing to report " +
          "without a cryptographic random source");
      }
      fill = (words) => c.getRandomValues(words);
    }
    this.fill = fill;
    this.words = new Uint32Array(1024);
    this.pos = this.words.length;
  }

  word() {
    if (this.pos >= this.words.length) {
      this.fill(this.words);
      this.pos = 0;
    }
    return this.words[this.pos++];
  }

  /** k random bits (0 <= k <= 53) as a whole number. */
  bits(k) {
    if (k === 0) return 0;
    if (k <= 32) return this.word() >>> (32 - k);
    const hi = this.word() >>> (64 - k);
    return hi * TWO32 + this.word();
  }

  /** Uniform on [0, n) for 1 <= n <= 2^53: bit length of n - 1 random bits, rejected until below n. */
  below(n) {
    if (n <= 1) return 0;
    let k = 0;
    while (2 ** k < n) k++;
    for (;;) {
      const r = this.bits(k);
      if (r < n) return r;
    }
  }

  /** Uniform on [0, n) for a BigInt n >= 1, by rejection on the bit length of n - 1. */
  belowBig(n) {
    if (n <= 1n) return 0n;
    const k = (n - 1n).toString(2).length;
    for (;;) {
      let r = 0n;
      for (let got = 0; got < k; got += 32) r = (r << 32n) | BigInt(this.word());
      r >>= BigInt(Math.ceil(k / 32) * 32 - k);
      if (r < n) return r;
    }
  }

  unit53() { return this.bits(53) / TWO53; }        // [0, 1)
  open53() { return (this.bits(53) + 1) / TWO53; }  // (0, 1]
}

function grr(rs, value, D, keep, other) {
  if (D === 1) return 0;
  const u = rs.below(keep + (D - 1) * other);
  if (u < keep) return value;
  const y = Math.floor((u - keep) / other);
  return y + (y >= value ? 1 : 0);
}

function parity(a) {
  let p = 0;
  while (a) {
    p ^= a & 1;
    a >>>= 1;
  }
  return p;
}

/** The phone's half of one collection. Holds the spec only; never a location. */
export class CollectionClient {
  /**
   * @param spec the parsed collection.json, unchanged
   * @param options.fillRandom (testing only) fills a Uint32Array with random words; default crypto.getRandomValues
   */
  constructor(spec, options = {}) {
    if (!spec || spec.schema !== SCHEMA) throw new Error(`ldpviz client: not a collection spec of schema ${SCHEMA}`);
    this.spec = spec;
    this.digest = spec.digest;
    this.c = spec.client;
    this.d = spec.region.grid_side;
    this.random = new RandomSource(options.fillRandom);
    const c = this.c;
    if (c.map === "domain") {
      this.position = new Map();
      c.domain_cells.forEach((cell, pos) => this.position.set(cell, pos));
      this.blockSide = Math.ceil(this.d / c.block);
    }
    if (c.kind === "disk") {
      let total = 0;
      this.bumpCum = c.bump.map(([, w]) => (total += w));
      this.maskWeight = c.mask.length * c.base;
    }
  }

  /** The mechanism's input value for unit coordinates: a cell, a domain position or a UG cell. */
  valueOf(u, v) {
    const c = this.c, d = this.d;
    if (c.map === "uniform-grid") return index(v, c.side) * c.side + index(u, c.side);
    const cell = index(v, d) * d + index(u, d);
    if (c.map === "domain") {
      const row = Math.floor(cell / d), col = cell % d, k = c.block;
      return this.position.get(Math.floor(row / k) * this.blockSide + Math.floor(col / k));
    }
    return cell;
  }

  /** One report for a true location, or null (send nothing) outside the region. */
  report(lon, lat) {
    const uv = unitCoordinates(this.spec.region, lon, lat);
    return uv === null ? null : this.reportUnit(uv[0], uv[1]);
  }

  /** One report for a position in the region's unit coordinates. */
  reportUnit(u, v) {
    if (this.c.kind === "planar-laplace") return { spec: this.digest, y: this.planarLaplace(u * this.d, v * this.d) };
    if (this.c.kind === "square-wave") return { spec: this.digest, y: this.squareWaveReport(u, v) };
    return { spec: this.digest, ...this.perturbValue(this.valueOf(u, v)) };
  }

  /** The report fields for input value x (all kinds but planar Laplace, which needs the position). */
  perturbValue(x) {
    const c = this.c, rs = this.random;
    switch (c.kind) {
      case "grr":
        return { y: grr(rs, x, c.D, c.keep, c.other) };
      case "olh": {
        const P = c.prime, g = c.g;
        const a = 1 + rs.below(P - 1);
        const b = rs.below(P);
        const z = (a * x + b) % P;              // a x + b < 2^52: exact
        const n = z * g;                         // < 2^51: exact
        const h = (n - (n % P)) / P;             // floor(z g / P), exact
        const seed = (BigInt(a - 1) * BigInt(P) + BigInt(b)).toString();
        return { seed, bucket: grr(rs, h, g, c.keep, c.other) };
      }
      case "oue": {
        const D = c.D, Q = c.q_numerator;
        const bytes = new Uint8Array((D + 7) >> 3);
        for (let i = 0; i < D; i++) {
          const bit = i === x ? rs.bits(1) : (rs.bits(53) < Q ? 1 : 0);
          if (bit) bytes[i >> 3] |= 0x80 >> (i & 7);
        }
        let hex = "";
        for (const byte of bytes) hex += byte.toString(16).padStart(2, "0");
        return { bits: hex };
      }
      case "olh-h": {
        const level = rs.below(c.level_sizes.length);
        const node = c.level_index[level][x];
        const P = c.prime, g = c.g;
        const a = 1 + rs.below(P - 1);
        const b = rs.below(P);
        const n = ((a * node + b) % P) * g;
        const h = (n - (n % P)) / P;
        const seed = (BigInt(a - 1) * BigInt(P) + BigInt(b)).toString();
        return { level, seed, bucket: grr(rs, h, g, c.keep, c.other) };
      }
      case "subset":
        return { cells: this.subset(x) };
      case "hr":
        return { y: this.hr(x) };
      case "disk":
        return { y: this.disk(x) };
      case "staircase":
        return { y: this.staircase(x) };
      default:
        throw new Error(`ldpviz client: unknown client kind ${c.kind}`);
    }
  }

  subsetTables(x) {
    if (!this.subsetCache) this.subsetCache = new Map();
    if (!this.subsetCache.has(x)) {
      const d = this.d, n = this.c.n, k = this.c.k, r0 = Math.floor(x / d), c0 = x % d;
      const sq = [];
      for (let r = 0; r < d; r++) for (let c = 0; c < d; c++) sq.push([(r - r0) ** 2 + (c - c0) ** 2, r * d + c]);
      sq.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
      const decay = this.c.decay.map(BigInt);
      // C(n - 1 - j, k - 1) for j = n - k down to 0: start at C(k - 1, k - 1) = 1, then C(m + 1, k - 1) =
      // C(m, k - 1) (m + 1) / (m + 1 - (k - 1)), exact in BigInt.
      const comb = new Array(n).fill(0n);
      let value = 1n;
      for (let j = n - k; j >= 0; j--) {
        const m = BigInt(n - 1 - j);
        if (j < n - k) value = value * m / (m - BigInt(k - 1));
        comb[j] = value;
      }
      const cum = [];
      let total = 0n;
      sq.forEach(([s], j) => { total += comb[j] * decay[s]; cum.push(total); });
      this.subsetCache.set(x, [sq.map(([, cell]) => cell), cum]);
    }
    return this.subsetCache.get(x);
  }

  subset(x) {
    const n = this.c.n, k = this.c.k, rs = this.random;
    const [order, cum] = this.subsetTables(x);
    const u = rs.belowBig(cum[cum.length - 1]);
    let lo = 0, hi = n - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (cum[mid] > u) hi = mid; else lo = mid + 1;
    }
    const j = lo, m = n - 1 - j, chosen = new Set();
    for (let t = m - (k - 1); t < m; t++) {       // a uniform (k - 1)-subset of the later ranks (Floyd)
      const r = rs.below(t + 1);
      chosen.add(chosen.has(r) ? t : r);
    }
    const cells = [order[j], ...[...chosen].map((r) => order[j + 1 + r])];
    return cells.sort((a, b) => a - b);
  }

  hr(x) {
    const c = this.c, rs = this.random;
    const B = c.blocks, b = c.block_size, E = c.in_set, S = c.other, s = b / 2, K = B * b;
    const block = Math.floor(x / (b - 1)), row = (x % (b - 1)) + 1;
    const low = row & -row;
    const u = rs.below(s * E + s * S + (K - b) * S);
    if (u < s * E + s * S) {
      const want = u < s * E ? 0 : 1;
      let col = rs.below(b);
      if (parity(row & col) !== want) col ^= low;
      return block * b + col;
    }
    const t = rs.below((B - 1) * b);
    let other = Math.floor(t / b);
    if (other >= block) other += 1;
    return other * b + (t % b);
  }

  disk(x) {
    const c = this.c, cum = this.bumpCum;
    const total = this.maskWeight + (cum.length ? cum[cum.length - 1] : 0);
    let u = this.random.below(total);
    if (u < this.maskWeight) return c.mask[Math.floor(u / c.base)];
    u -= this.maskWeight;
    let lo = 0, hi = cum.length - 1;
    while (lo < hi) {                       // first cumulative weight above u
      const mid = (lo + hi) >> 1;
      if (cum[mid] > u) hi = mid; else lo = mid + 1;
    }
    const k = c.bump[lo][0], w = 2 * c.radius + 1, box = c.box_side, d = this.d;
    const row = Math.floor(x / d), col = x % d;
    return (row + Math.floor(k / w)) * box + col + (k % w);
  }

  staircase(x) {
    const lo = this.c.lo[x], hi = this.c.hi[x], L = this.c.levels;
    const sizes = L.map((_, j) => (hi[j + 1] - lo[j + 1]) - (hi[j] - lo[j]));
    let u = this.random.below(sizes.reduce((acc, size, j) => acc + size * L[j], 0));
    for (let j = 0; j < L.length; j++) {
      const mass = sizes[j] * L[j];
      if (u < mass) {
        const k = Math.floor(u / L[j]);
        const outerLo = lo[j + 1], left = lo[j] - outerLo;
        return k < left ? outerLo + k : hi[j] + (k - left);
      }
      u -= mass;
    }
    throw new Error("ldpviz client: staircase weights inconsistent");
  }

  squareWave(value) {
    const c = this.c, rs = this.random, b = c.b, B = c.out_buckets;
    const u = rs.unit53();
    let noisy;
    if (rs.unit53() < c.near_probability) noisy = value - b + 2 * b * u;
    else noisy = u < value ? -b + u : value + b + (u - value);
    return Math.min(Math.max(Math.floor((noisy + b) / (1 + 2 * b) * B), 0), B - 1);
  }

  squareWaveReport(u, v) {
    const B = this.c.out_buckets;
    if (this.c.split === "users") {
      const axis = this.random.bits(1);
      return axis * B + this.squareWave(axis ? v : u);
    }
    const bx = this.squareWave(u);
    return bx * B + this.squareWave(v);
  }

  planarLaplace(px, py) {
    const eps = this.c.eps_cell, d = this.d, rs = this.random;
    const theta = rs.unit53() * (2 * Math.PI);
    const r = -(Math.log(rs.open53()) + Math.log(rs.open53())) / eps;
    const col = Math.min(Math.max(Math.floor(px + r * Math.cos(theta)), 0), d - 1);
    const row = Math.min(Math.max(Math.floor(py + r * Math.sin(theta)), 0), d - 1);
    return row * d + col;
  }
}

/** A client for one parsed collection.json (see the header). */
export function createClient(spec, options = {}) {
  return new CollectionClient(spec, options);
}
