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

export const SCHEMA = "ldpviz-collection/2";
const DEG = Math.PI / 180;
const TWO32 = 4294967296;
const TWO53 = 9007199254740992;

// ---------------------------------------------------------------------------------------------------------------
// The spec: its canonical form, its digest, its shape and its channel (docs/deploy.md, "What the digest protects").
// Byte for byte the same as client.py's canonical_json / check_shape / check_channel.
// ---------------------------------------------------------------------------------------------------------------

/** Integers travel in JSON only below this magnitude. */
const INT_LIMIT = 9007199254740992;
const WEIGHT_LIMIT = 4503599627370496;
const OLH_PRIME = 2147483647;
const OLH_MAX_BUCKETS = 1048576;
const GEO_I_UNIT_M = 1000;

/** A spec this client refuses to report from; the message says why in one sentence. */
export class SpecError extends Error {
  constructor(message) {
    super(message);
    this.name = "SpecError";
  }
}

function refuse(why) {
  const reason = "the spec" + (why.startsWith("'s ") ? "" : " ") + why;
  throw new SpecError(`ldpviz client: ${reason}; refusing to report (use the collection.json made by ` +
    "'ldpviz deploy', unchanged)");
}

const NAMED_ESCAPES = { '"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t" };

/** A JSON string of ASCII only: the named escapes, every other UTF-16 code unit outside 0x20..0x7e as \uXXXX. */
function canonicalString(text) {
  let out = '"';
  for (let i = 0; i < text.length; i++) {
    const ch = text[i], code = text.charCodeAt(i);
    if (NAMED_ESCAPES[ch] !== undefined) out += NAMED_ESCAPES[ch];
    else if (code >= 0x20 && code <= 0x7e) out += ch;
    else out += "\\u" + code.toString(16).padStart(4, "0");
  }
  return out + '"';
}

/** A number by its value: integral below 2^53 as digits, any other as its shortest round-trip digits d[.ddd]e<exp>. */
function canonicalNumber(x) {
  if (!Number.isFinite(x)) refuse(`holds ${x}, not a JSON number`);
  if (Number.isInteger(x) && Math.abs(x) < INT_LIMIT) return x === 0 ? "0" : String(x);
  const text = String(Math.abs(x));              // Number::toString: the shortest digits that round-trip
  const [mantissa, exp = "0"] = text.split("e");
  const [whole, frac = ""] = mantissa.split(".");
  const digits = (whole + frac).replace(/^0+/, "");
  let exponent = Number(exp) - frac.length;
  const stripped = digits.replace(/0+$/, "");
  exponent += digits.length - stripped.length;
  const sci = exponent + stripped.length - 1;
  const body = stripped[0] + (stripped.length > 1 ? "." + stripped.slice(1) : "");
  return (x < 0 ? "-" : "") + body + "e" + sci;
}

function compareUnits(a, b) {                     // UTF-16 code unit order (JavaScript's own string order)
  return a < b ? -1 : a > b ? 1 : 0;
}

/** The canonical JSON text of a parsed value (ASCII only: its bytes are its characters). */
export function canonicalJson(value) {
  if (value === null) return "null";
  if (value === true) return "true";
  if (value === false) return "false";
  if (typeof value === "string") return canonicalString(value);
  if (typeof value === "number") return canonicalNumber(value);
  if (Array.isArray(value)) return "[" + value.map(canonicalJson).join(",") + "]";
  if (typeof value === "object") {
    const keys = Object.keys(value).sort(compareUnits);
    return "{" + keys.map((k) => canonicalString(k) + ":" + canonicalJson(value[k])).join(",") + "}";
  }
  refuse(`holds a value of type ${typeof value}, not JSON`);
}

const SHA256_K = new Uint32Array([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98,
  0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
  0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8,
  0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
  0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819,
  0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
  0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
  0xc67178f2]);

/** SHA-256 (FIPS 180-4) of an ASCII string, as lowercase hex; synchronous, so createClient stays synchronous. */
export function sha256Hex(text) {
  const n = text.length, total = Math.ceil((n + 9) / 64) * 64;
  const bytes = new Uint8Array(total);
  for (let i = 0; i < n; i++) bytes[i] = text.charCodeAt(i);
  bytes[n] = 0x80;
  const bits = n * 8;
  for (let i = 0; i < 8; i++) bytes[total - 1 - i] = Math.floor(bits / 2 ** (8 * i)) & 0xff;
  const H = new Uint32Array([0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab,
    0x5be0cd19]);
  const W = new Uint32Array(64);
  const rotr = (x, k) => (x >>> k) | (x << (32 - k));
  for (let off = 0; off < total; off += 64) {
    for (let t = 0; t < 16; t++) {
      const j = off + 4 * t;
      W[t] = (bytes[j] << 24) | (bytes[j + 1] << 16) | (bytes[j + 2] << 8) | bytes[j + 3];
    }
    for (let t = 16; t < 64; t++) {
      const s0 = rotr(W[t - 15], 7) ^ rotr(W[t - 15], 18) ^ (W[t - 15] >>> 3);
      const s1 = rotr(W[t - 2], 17) ^ rotr(W[t - 2], 19) ^ (W[t - 2] >>> 10);
      W[t] = (W[t - 16] + s0 + W[t - 7] + s1) >>> 0;
    }
    let [a, b, c, d, e, f, g, h] = H;
    for (let t = 0; t < 64; t++) {
      const t1 = (h + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + SHA256_K[t] + W[t]) >>> 0;
      const t2 = ((rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c))) >>> 0;
      h = g; g = f; f = e; e = (d + t1) >>> 0; d = c; c = b; b = a; a = (t1 + t2) >>> 0;
    }
    H[0] += a; H[1] += b; H[2] += c; H[3] += d; H[4] += e; H[5] += f; H[6] += g; H[7] += h;
  }
  return Array.from(H, (w) => w.toString(16).padStart(8, "0")).join("");
}

/** "sha256:<hex>" of the canonical JSON of the spec without its digest key. */
export function specDigest(spec) {
  const body = {};
  for (const k of Object.keys(spec)) if (k !== "digest") body[k] = spec[k];
  return "sha256:" + sha256Hex(canonicalJson(body));
}

const isWhole = (v) => typeof v === "number" && Number.isInteger(v) && v >= 0 && v < INT_LIMIT;
const isNum = (v) => typeof v === "number" && Number.isFinite(v);
const TYPES = {
  int: [isWhole, "a whole number below 2^53"],
  num: [isNum, "a finite number"],
  str: [(v) => typeof v === "string", "a string"],
  ints: [(v) => Array.isArray(v) && v.every(isWhole), "a list of whole numbers"],
  rows: [(v) => Array.isArray(v) && v.every((r) => Array.isArray(r) && r.every(isWhole)),
    "a list of lists of whole numbers"],
  pairs: [(v) => Array.isArray(v) && v.every((p) => Array.isArray(p) && p.length === 2 && isWhole(p[0]) &&
    isWhole(p[1])), "a list of [offset, weight] pairs"],
  digits: [(v) => Array.isArray(v) && v.every((x) => typeof x === "string" && /^[0-9]+$/.test(x)),
    "a list of decimal-digit strings"],
};
/** The fields of each sampler (client.kind) and value map (client.map), with their JSON types (as client.py). */
export const KIND_FIELDS = {
  grr: { D: "int", keep: "int", other: "int" },
  olh: { D: "int", g: "int", prime: "int", keep: "int", other: "int" },
  oue: { D: "int", q_numerator: "int", q_bits: "int" },
  hr: { D: "int", blocks: "int", block_size: "int", in_set: "int", other: "int" },
  disk: { box_side: "int", radius: "int", mask: "ints", base: "int", bump: "pairs" },
  "planar-laplace": { eps_cell: "num", float_bits: "int" },
  staircase: { m: "int", levels: "ints", lo: "rows", hi: "rows" },
  "square-wave": { split: "str", b: "num", near_probability: "num", out_buckets: "int" },
  "olh-h": { g: "int", prime: "int", keep: "int", other: "int", level_sizes: "ints", level_index: "rows" },
  subset: { k: "int", n: "int", decay: "digits", eps_prime_per_cell: "num" },
  curator: { D: "int" },
};
const MAP_FIELDS = { cell: {}, position: {}, domain: { block: "int", domain_cells: "ints" },
  "uniform-grid": { side: "int" } };
const KIND_MAPS = { grr: ["cell", "domain", "uniform-grid"], olh: ["cell", "uniform-grid"],
  oue: ["cell", "uniform-grid"], hr: ["cell", "domain", "uniform-grid"], disk: ["cell"],
  "planar-laplace": ["position"], staircase: ["domain"], "square-wave": ["position"], "olh-h": ["domain"],
  subset: ["cell"], curator: ["cell"] };
const REGION_FIELDS = { center_lon: "num", center_lat: "num", side_m: "num", grid_side: "int", projection: "str" };
const isObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v);
const has = (o, k) => Object.prototype.hasOwnProperty.call(o, k);

function checkFields(section, fields, name) {
  for (const [key, type] of Object.entries(fields)) {
    if (!has(section, key)) refuse(`'s ${name} section has no '${key}'`);
    if (!TYPES[type][0](section[key])) refuse(`'s ${name}.${key} is not ${TYPES[type][1]}`);
  }
}

/** Every section and field the client reads is there with its JSON type; one clear SpecError if not. */
export function checkShape(spec) {
  if (!isObject(spec)) refuse("is not a JSON object");
  if (spec.schema !== SCHEMA) refuse(`has schema ${JSON.stringify(spec.schema ?? null)}; this client reads '${SCHEMA}'`);
  for (const section of ["mechanism", "region", "client", "report"]) {
    if (!isObject(spec[section])) refuse(has(spec, section) ? `'s '${section}' is not an object` : `has no '${section}' section`);
  }
  if (!(typeof spec.digest === "string" && spec.digest.startsWith("sha256:"))) refuse("has no digest");
  if (!(isNum(spec.epsilon) && spec.epsilon > 0)) refuse("has no positive 'epsilon'");
  if (typeof spec.epsilon_unit !== "string") refuse("has no 'epsilon_unit'");
  const region = spec.region, c = spec.client;
  checkFields(region, REGION_FIELDS, "region");
  if (region.projection === "aeqd") {
    const e = region.ellipsoid;
    if (!(isObject(e) && isNum(e.a) && isNum(e.f))) refuse("'s aeqd region has no ellipsoid {a, f}");
  } else if (region.projection === "local") {
    checkFields(region, { earth_radius_m: "num" }, "region");
  } else {
    refuse(`'s region has projection '${region.projection}' (expected 'aeqd' or 'local')`);
  }
  const bounds = region.bounds;
  if (bounds != null && !(Array.isArray(bounds) && bounds.length === 4 && bounds.every(isNum))) {
    refuse("'s region bounds are not four numbers (west, south, east, north)");
  }
  if (!(region.side_m > 0 && region.grid_side >= 1)) refuse("'s region has no positive side or grid");
  if (!has(KIND_FIELDS, c.kind)) refuse(`names an unknown sampler client.kind ${JSON.stringify(c.kind ?? null)}`);
  if (!KIND_MAPS[c.kind].includes(c.map)) {
    refuse(`runs sampler '${c.kind}' on value map ${JSON.stringify(c.map ?? null)} (expected ${KIND_MAPS[c.kind].join(" or ")})`);
  }
  checkFields(c, { ...KIND_FIELDS[c.kind], ...MAP_FIELDS[c.map], epsilon_deployed: "num" }, "client");
}

/** num / den is target up to the floor that made num (num = floor(target den), never above it). */
function ratioIs(num, den, target) {
  const r = num / den;
  return r <= target * (1 + 1e-12) && r >= target * (1 - 1e-9) - 2 / den;
}

const logRatio = (num, den) => (num > 0 && den > 0 ? Math.log(num / den).toPrecision(4) : "?");
const g6 = (x) => String(Number(x.toPrecision(6)));

/** The natural log of a whole number written in decimal digits (any size). */
function logDigits(text) {
  text = text.replace(/^0+/, "");
  if (text === "") return -Infinity;
  return Math.log(Number("0." + text.slice(0, 17))) + text.length * Math.log(10);
}

/** b of the square wave (Li et al. SIGMOD'20): (eps e^eps - e^eps + 1) / (2 e^eps (e^eps - 1 - eps)). */
export function squareWaveRadius(eps) {
  const e = Math.exp(eps);
  return (eps * e - e + 1) / (2 * e * (e - 1 - eps));
}

/** The disk mechanisms (DAM paper) and whether their footprint also holds the cells the circle crosses with the
 * centre outside (DAM's border shrinkage, HUEM's nested disks) or only those whose centre is inside (DAM-NS). */
const DISK_CROSSED = { dam: true, "dam-ns": false, huem: true };
/** Largest disk radius, in cells and in grid sides (ldpviz.mechanisms.dam.disk_area). */
const MAX_RADIUS_CELLS = 1024;
const MAX_RADIUS_SIDES = 8;
/** Largest public grid domain (ldpviz.mechanisms.srr.staircase): at most 64 x 64 blocks of cells. */
const MAX_DOMAIN_BLOCKS_SIDE = 64;

/** The largest whole number whose square is at most n (n a whole number below 2^53). */
function isqrt(n) {
  let s = Math.floor(Math.sqrt(n));
  while (s * s > n) s--;
  while ((s + 1) * (s + 1) <= n) s++;
  return s;
}

/** reach[a] for a = 0..radius: the footprint holds offset (dy, dx) iff |dy| <= radius and |dx| <= reach[|dy|]
 * (kernels.dam_weights in whole numbers, as client.py's disk_reach). */
export function diskReach(radius, crossed) {
  const reach = [];
  for (let a = 0; a <= radius; a++) {
    let t = isqrt(radius * radius - a * a);
    const rest = 4 * radius * radius - Math.max(2 * a - 1, 0) ** 2;
    if (crossed && rest > 0) t = Math.max(t, Math.floor((isqrt(rest - 1) + 1) / 2));
    reach.push(Math.min(t, radius));
  }
  return reach;
}

/** The output domain (kernels.output_support) row by row of the (d + 2r)^2 box: [first flat index, cells] per row. */
function diskMaskRow(d, radius, reach, i) {
  const box = d + 2 * radius, t = reach[Math.max(radius - i, i - (radius + d - 1), 0)];
  return [i * box + radius - t, d + 2 * t];
}

/** share[a][b]: W - 1 at every footprint offset (|dy|, |dx|) = (a, b), in the same double-precision operations as
 * kernels.dam_weights / huem_weights and DiskChannel (as client.py's disk_shares). */
export function diskShares(name, radius, eps, reach) {
  const r = radius, out = [];
  if (name !== "huem") {
    const em1 = Math.expm1(eps);
    for (let a = 0; a <= r; a++) {
      const row = [];
      for (let b = 0; b <= reach[a]; b++) {
        let high = 1;
        if (a * a + b * b > r * r) {
          const delta = r / Math.sqrt(a * a + b * b) - 1;
          high = Math.min(Math.max(4 * (delta * b + 0.5) * (delta * a + 0.5), 0), 1);
        }
        row.push(Math.max((1 + em1 * high) - 1, 0));
      }
      out.push(row);
    }
    return out;
  }
  if (r === 0) return [[Math.max(Math.exp(eps) - 1, 0)]];
  const levels = [NaN];
  for (let k = 1; k <= r; k++) levels.push(Math.exp((1 - (k - 1) / r) * eps));
  levels.push(1);
  for (let a = 0; a <= r; a++) {
    const row = [];
    for (let b = 0; b <= reach[a]; b++) {
      const rho2 = a * a + b * b;
      let w = 1;
      const kIn = rho2 ? isqrt(rho2 - 1) + 1 : 1;          // the smallest k >= 1 with k^2 >= rho2
      if (kIn <= r) w += levels[kIn] - 1;
      const k = rho2 ? isqrt(rho2 - 1) : 0;                 // the largest k with k^2 < rho2
      if (k >= 1 && k <= r && 4 * k * k > Math.max(2 * a - 1, 0) ** 2 + Math.max(2 * b - 1, 0) ** 2) {
        const delta = k / Math.sqrt(rho2) - 1;
        w += (levels[k] - levels[k + 1]) * Math.min(Math.max(4 * (delta * b + 0.5) * (delta * a + 0.5), 0), 1);
      }
      row.push(Math.max(w - 1, 0));
    }
    out.push(row);
  }
  return out;
}

/** The disk's total weight in units of the floor: the output domain's cells plus every share. */
function diskTotal(d, radius, reach, shares) {
  let cells = 0;
  for (let i = 0; i < d + 2 * radius; i++) cells += diskMaskRow(d, radius, reach, i)[1];
  let sum = 0;
  shares.forEach((row, a) => {
    const rest = row.slice(1).reduce((acc, x) => acc + x, 0);
    sum += a === 0 ? row[0] + 2 * rest : 2 * row[0] + 4 * rest;
  });
  return cells + sum;
}

/** The mask, base and bump a disk mechanism gives on the d x d grid (what ldpviz.deploy.spec writes; for tests). */
export function deriveDisk(name, d, radius, eps) {
  const reach = diskReach(radius, DISK_CROSSED[name]), shares = diskShares(name, radius, eps, reach);
  const base = 2 ** Math.max(0, Math.floor(Math.log2(WEIGHT_LIMIT / diskTotal(d, radius, reach, shares))));
  const mask = [], bump = [], w = 2 * radius + 1;
  for (let i = 0; i < d + 2 * radius; i++) {
    const [start, n] = diskMaskRow(d, radius, reach, i);
    for (let j = 0; j < n; j++) mask.push(start + j);
  }
  for (let dy = -radius; dy <= radius; dy++) {
    const t = reach[Math.abs(dy)], row = shares[Math.abs(dy)];
    for (let dx = -t; dx <= t; dx++) {
      const wt = Math.floor(row[Math.abs(dx)] * base);
      if (wt > 0) bump.push([(dy + radius) * w + dx + radius, wt]);
    }
  }
  return { mask, base, bump };
}

/** The quadtree code of block (row, col): base-4 digits 2 x row bit + col bit (ldpviz.geo.quadkey.interleave). */
function quadkey(col, row) {
  let code = 0;
  for (let bit = 0; (col >> bit) || (row >> bit); bit++) {
    code += (((col >> bit) & 1) + 2 * ((row >> bit) & 1)) * 4 ** bit;
  }
  return code;
}

/** {block, cells, codes} of the public grid domain: the ceil(d / k)^2 blocks in increasing quadtree code
 * (ldpviz.mechanisms.srr.staircase.grid_domain), as client.py's domain_order. */
export function domainOrder(d) {
  const block = Math.max(1, Math.ceil(d / MAX_DOMAIN_BLOCKS_SIDE)), side = Math.ceil(d / block);
  const pairs = [];
  for (let i = 0; i < side * side; i++) pairs.push([quadkey(i % side, Math.floor(i / side)), i]);
  pairs.sort((p, q) => p[0] - q[0]);
  return { block, cells: pairs.map((p) => p[1]), codes: pairs.map((p) => p[0]) };
}

/** OLH-H's levels over the public grid domain (ldpviz.mechanisms.srr.olh_h.hierarchy): [level sizes, each
 * position's node index per level], as client.py's domain_hierarchy. */
export function domainHierarchy(d) {
  const { block, codes } = domainOrder(d), side = Math.ceil(d / block);
  let depth = 1;
  while (2 ** depth < side) depth++;
  const sizes = [], index = [];
  for (let level = 1; level <= depth; level++) {
    const div = 4 ** (depth - level), row = [];
    let prev = -1, n = 0;
    for (const code of codes) {
      const p = Math.floor(code / div);
      if (p !== prev) {
        n++;
        prev = p;
      }
      row.push(n - 1);
    }
    if (n >= 2 || level === depth) {
      sizes.push(n);
      index.push(row);
    }
  }
  return [sizes, index];
}

const sameList = (a, b) => a.length === b.length && a.every((x, i) => x === b[i]);

/** Every parameter that sets the sampler's privacy, derived here from the mechanism's epsilon (and the grid), equals
 * the spec's up to the one unit an integer weight is floored by; sizes and indices are consistent (as client.py). */
export function checkChannel(spec) {
  const c = spec.client, region = spec.region, eps = spec.epsilon, unit = spec.epsilon_unit, kind = c.kind;
  const d = region.grid_side, cellM = region.side_m / d, e = Math.exp(eps);
  let D = 0;
  if (c.map === "cell") D = d * d;
  else if (c.map === "domain") {
    const { block, cells } = domainOrder(d), side = Math.ceil(d / block);
    if (c.block !== block) refuse(`'s client.block is ${c.block}, not the ${block} cells per block side its ${d} x ${d} grid gives`);
    if (!sameList(c.domain_cells, cells)) {
      refuse(`'s client.domain_cells is not the quadtree order of the ${side} x ${side} blocks of its ${d} x ${d} grid`);
    }
    D = cells.length;
  } else if (c.map === "uniform-grid") {
    if (!(c.side >= 1 && c.side <= 4096)) refuse("'s uniform grid side is out of range");
    D = c.side * c.side;
  }
  if (has(c, "D") && c.D !== D) refuse(`'s client.D is ${c.D} but its value map has ${D} values`);
  const geo = kind === "planar-laplace" || kind === "subset";
  if (!geo && unit !== "per report") refuse(`states its LDP epsilon '${unit}', not 'per report'`);
  if (kind === "grr" || kind === "olh" || kind === "olh-h") {
    const g = kind === "grr" ? D : c.g;
    if (kind !== "grr") {
      if (c.prime !== OLH_PRIME) refuse(`'s OLH prime is ${c.prime}, not 2^31 - 1`);
      const want = eps > Math.log(OLH_MAX_BUCKETS) ? OLH_MAX_BUCKETS : Math.max(2, e + 1);
      if (!(g >= 2 && g <= OLH_MAX_BUCKETS && Math.abs(g - want) <= 0.5 + 1e-9)) {
        refuse(`has ${g} OLH buckets where epsilon ${g6(eps)} gives round(e^eps + 1) = ${Math.round(want)}`);
      }
    }
    if (g > 1 && !(c.other >= 1 && ratioIs(c.keep, c.other, e))) {
      refuse(`'s weights keep/other = ${c.keep}/${c.other} give e^${logRatio(c.keep, c.other)} where epsilon ${g6(eps)} gives e^${g6(eps)}`);
    }
    if (g > 1 && c.keep + (g - 1) * c.other > WEIGHT_LIMIT) refuse("'s weights exceed 2^52");
    if (kind === "olh-h") {
      const [sizes, index] = domainHierarchy(d);
      if (!(sameList(c.level_sizes, sizes) && c.level_index.length === index.length &&
            index.every((row, l) => sameList(c.level_index[l], row)))) {
        refuse("'s hierarchy (client.level_sizes, client.level_index) is not the quadtree hierarchy of its domain");
      }
    }
  } else if (kind === "oue") {
    const q = 1 / (e + 1), Q = c.q_numerator;
    if (!(c.q_bits === 53 && Q >= q * TWO53 * (1 - 1e-12) && Q <= q * TWO53 * (1 + 1e-12) + 1)) {
      refuse(`'s OUE threshold ${Q} / 2^${c.q_bits} is not q = 1/(e^eps + 1) = ${g6(q)} at epsilon ${g6(eps)}`);
    }
  } else if (kind === "hr") {
    const B = c.blocks, b = c.block_size, E = c.in_set, S = c.other;
    const pow2 = (x) => x >= 1 && Number.isInteger(Math.log2(x));
    if (!(pow2(B) && b >= 2 && pow2(b) && B * (b - 1) >= D)) refuse("'s Hadamard code (blocks, block_size) does not cover its domain");
    if (!(S >= 1 && ratioIs(E, S, e))) refuse(`'s weights in_set/other give e^${logRatio(E, S)} where epsilon ${g6(eps)} gives e^${g6(eps)}`);
    if ((b / 2) * (E + S) + (B * b - b) * S > WEIGHT_LIMIT) refuse("'s weights exceed 2^52");
  } else if (kind === "disk") {
    const name = spec.mechanism.name, r = c.radius, box = c.box_side, base = c.base, bump = c.bump, w = 2 * r + 1;
    if (!(typeof name === "string" && has(DISK_CROSSED, name))) {
      refuse("runs the disk sampler for a mechanism that is not dam, dam-ns or huem");
    }
    if (!(box === d + 2 * r && base >= 1 && bump.length && bump.every(([o]) => o < w * w))) {
      refuse("'s disk (radius, box_side, bump) does not fit its grid");
    }
    if (r > Math.min(MAX_RADIUS_CELLS, MAX_RADIUS_SIDES * d)) {
      refuse(`'s disk radius ${r} is above the largest allowed (${MAX_RADIUS_CELLS} cells and ${MAX_RADIUS_SIDES} grid sides)`);
    }
    const reach = diskReach(r, DISK_CROSSED[name]), mask = c.mask;
    let pos = 0;
    for (let i = 0; i < box && pos >= 0; i++) {     // the output domain, row by row; stops at the first miss
      const [start, n] = diskMaskRow(d, r, reach, i);
      if (pos + n > mask.length) pos = -1;
      for (let j = 0; j < n && pos >= 0; j++) if (mask[pos + j] !== start + j) pos = -1;
      if (pos >= 0) pos += n;
    }
    if (pos !== mask.length) refuse(`'s client.mask is not the output domain of ${name}'s disk of radius ${r} on its ${d} x ${d} grid`);
    const top = bump.reduce((acc, [, wt]) => Math.max(acc, wt), 0);
    const centre = bump.find(([o]) => o === r * w + r);
    // the own cell has weight e^eps (DAM paper Def. 8), every other at most that: the ratio bound is the signed one
    if (!(centre && centre[1] === top && ratioIs(base + top, base, e))) {
      refuse(`'s disk weights give e^${logRatio(base + top, base)} where epsilon ${g6(eps)} gives e^${g6(eps)} at the own cell`);
    }
    const shares = diskShares(name, r, eps, reach), total = diskTotal(d, r, reach, shares);
    let pow = 1;
    while (pow < base) pow *= 2;
    if (!(pow === base && total * base <= WEIGHT_LIMIT * (1 + 1e-9) && (base === 1 || 2 * total * base > WEIGHT_LIMIT * (1 - 1e-9)))) {
      refuse(`'s client.base ${base} is not the largest power of two that keeps the disk's total weight within 2^52`);
    }
    let i = 0, bad = -1;
    rows: for (let dy = -r; dy <= r; dy++) {        // every weight within one floored unit of W - 1
      const t = reach[Math.abs(dy)], row = shares[Math.abs(dy)];
      for (let dx = -t; dx <= t; dx++) {
        const k = (dy + r) * w + dx + r, want = Math.floor(row[Math.abs(dx)] * base);
        let got = 0;
        if (i < bump.length && bump[i][0] === k) got = bump[i++][1];
        if (Math.abs(got - want) > 1 + 1e-12 * want) {
          bad = k;
          break rows;
        }
      }
    }
    if (bad < 0 && i < bump.length) bad = bump[i][0];          // an offset left over: outside the disk or repeated
    if (bad >= 0) refuse(`'s client.bump is not the disk weights ${name} gives at its epsilon with radius ${r} (first difference at offset ${bad})`);
    if (c.mask.length * base + bump.reduce((acc, [, wt]) => acc + wt, 0) > WEIGHT_LIMIT) refuse("'s weights exceed 2^52");
  } else if (kind === "staircase") {
    const m = c.m, L = c.levels, lo = c.lo, hi = c.hi;
    const fits = (a, z) => a.length === m + 1 && z.length === m + 1 && a.every((v, j) => v >= 0 && z[j] <= D);
    if (!(m >= 1 && L.length === m && L.every((v) => v >= 1) && lo.length === D && hi.length === D && lo.every((a, i) => fits(a, hi[i])))) {
      refuse("'s staircase (m, levels, lo, hi) does not fit its domain");
    }
    // L-SRR Alg. 1's groups: nested intervals of sorted positions, from the empty one at x to the whole domain, so
    // every position is reported from every input (Theorem 3.3's ratio below then bounds the channel)
    lo.forEach((a, x) => {
      const z = hi[x];
      let nested = a[0] === x && z[0] === x && a[m] === 0 && z[m] === D;
      for (let j = 0; j < m && nested; j++) nested = a[j + 1] <= a[j] && z[j] <= z[j + 1];
      if (!nested) refuse(`'s staircase intervals (client.lo, client.hi) of position ${x} are not nested from the empty one at it to the whole domain`);
    });
    let dmin = Infinity, dmax = 0;
    for (let i = 0; i < D; i++) {
      let dens = 0;
      for (let j = 0; j < m; j++) {
        const size = (hi[i][j + 1] - lo[i][j + 1]) - (hi[i][j] - lo[i][j]);
        if (size < 0) refuse("'s staircase groups have negative sizes");
        dens += size * L[j];
      }
      dmin = Math.min(dmin, dens);
      dmax = Math.max(dmax, dens);
    }
    if (dmin < 1 || dmax > WEIGHT_LIMIT) refuse("'s staircase weights are empty or exceed 2^52");
    const got = Math.log(Math.max(...L) / Math.min(...L)) + Math.log(dmax / dmin);   // L-SRR Theorem 3.3's ratio
    if (got > eps * (1 + 1e-9) + 1e-12) refuse(`'s staircase weights give epsilon ${g6(got)}, above its epsilon ${g6(eps)}`);
  } else if (kind === "square-wave") {
    if (c.split !== "users" && c.split !== "budget") refuse(`'s square wave split is '${c.split}'`);
    const se = c.split === "users" ? eps : eps / 2, b = squareWaveRadius(se), ee = Math.exp(se);
    const near = 2 * b * ee / (2 * b * ee + 1);
    if (!(Math.abs(c.b - b) <= 1e-9 * b && Math.abs(c.near_probability - near) <= 1e-9 * near && c.out_buckets >= 1)) {
      refuse(`'s square wave (b, near_probability) = (${g6(c.b)}, ${g6(c.near_probability)}) is not (${g6(b)}, ${g6(near)}) that epsilon ${g6(eps)} gives`);
    }
  } else if (kind === "planar-laplace") {
    if (unit !== "per km") refuse(`states planar Laplace's epsilon '${unit}', not 'per km'`);
    const want = eps * cellM / GEO_I_UNIT_M;
    if (!(Math.abs(c.eps_cell - want) <= 1e-9 * want && c.float_bits === 53)) {
      refuse(`'s noise scale eps_cell ${g6(c.eps_cell)} is not ${g6(want)} (epsilon ${g6(eps)} per km on ${g6(cellM)} m cells)`);
    }
  } else if (kind === "subset") {
    const n = c.n, k = c.k, decay = c.decay, ep = c.eps_prime_per_cell;
    const perKm = unit === "per km" ? eps : c.epsilon_deployed, want = perKm * cellM / GEO_I_UNIT_M;
    const smax = 2 * (d - 1) ** 2;
    if (!(n === d * d && k >= 1 && k <= Math.max(1, n - 1) && decay.length === smax + 1)) {
      refuse("'s subset sampler (n, k, decay) does not fit its grid");
    }
    if (!(Math.abs(ep - want) <= 1e-9 * want)) refuse(`'s eps' per cell ${g6(ep)} is not ${g6(want)} (${g6(perKm)} per km on ${g6(cellM)} m cells)`);
    const rmax = Math.sqrt(smax), lim = 52 * Math.log(2);
    decay.forEach((text, s) => {
      if (Math.abs(logDigits(text) - (ep * (rmax - Math.sqrt(s)) / 2 + lim)) > 1e-9) {
        refuse(`'s decay weight ${s} is not e^(eps' (r_max - r) / 2) 2^52`);
      }
    });
  }
}

/** Check a parsed spec before any report (shape, digest recomputed over the canonical form, the pinned digest when
 * given, the channel); return the verified digest. */
export function verifySpec(spec, expectedDigest = null) {
  checkShape(spec);
  const actual = specDigest(spec);
  if (actual !== spec.digest) {
    refuse(`was changed after it was made: it states digest ${spec.digest.slice(0, 19)}... but its content hashes to ${actual.slice(0, 19)}...`);
  }
  if (expectedDigest != null && actual !== expectedDigest) {
    refuse(`is not the one this app was built for: its digest is ${actual.slice(0, 19)}..., the app expects ${String(expectedDigest).slice(0, 19)}...`);
  }
  checkChannel(spec);
  return actual;
}

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
   * @param options.expectedDigest the digest the app was built for (printed by 'ldpviz deploy'): a spec replaced
   *   together with its digest is refused too
   * Throws a SpecError (one sentence) when the spec's shape, digest or channel does not verify.
   */
  constructor(spec, options = {}) {
    this.digest = verifySpec(spec, options.expectedDigest ?? null);
    this.spec = spec;
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
