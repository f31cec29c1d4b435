// Test harness: many reports from client.js in one node process, as JSON lines on stdout.
// usage: node reports.mjs JOB.json   with JOB = {client, spec, mode: "value"|"unit"|"lonlat", inputs, repeats, seed}
// seed: null uses crypto.getRandomValues (the client's default); a number seeds xoshiro128** (tests only).
import { readFileSync, writeSync } from "node:fs";
import { pathToFileURL } from "node:url";

const job = JSON.parse(readFileSync(process.argv[2], "utf8"));
const { createClient, unitCoordinates } = await import(pathToFileURL(job.client).href);
const spec = JSON.parse(readFileSync(job.spec, "utf8"));

function xoshiro(seed) {
  let a = seed >>> 0, s = [0, 0, 0, 0];
  for (let i = 0; i < 4; i++) {            // splitmix32
    a = (a + 0x9e3779b9) >>> 0;
    let z = a;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
    s[i] = (z ^ (z >>> 16)) >>> 0;
  }
  const rotl = (x, k) => ((x << k) | (x >>> (32 - k))) >>> 0;
  return (words) => {
    for (let i = 0; i < words.length; i++) {
      const result = Math.imul(rotl(Math.imul(s[1], 5) >>> 0, 7), 9) >>> 0;
      const t = (s[1] << 9) >>> 0;
      s[2] ^= s[0]; s[3] ^= s[1]; s[1] ^= s[2]; s[0] ^= s[3]; s[2] ^= t; s[3] = rotl(s[3], 11);
      words[i] = result;
    }
    return words;
  };
}

const options = job.seed == null ? {} : { fillRandom: xoshiro(job.seed) };
const client = createClient(spec, options);
let out = [];
const flush = () => { if (out.length) { writeSync(1, out.join("\n") + "\n"); out = []; } };
for (let i = 0; i < job.inputs.length; i++) {
  const input = job.inputs[i];
  for (let r = 0; r < job.repeats; r++) {
    let rep;
    if (job.mode === "value") rep = { spec: client.digest, ...client.perturbValue(input) };
    else if (job.mode === "unit") rep = client.reportUnit(input[0], input[1]);
    else if (job.mode === "cell") { const uv = unitCoordinates(spec.region, input[0], input[1]);
      rep = uv === null ? { cell: -1 } : { cell: client.valueOf(uv[0], uv[1]) }; }
    else rep = client.report(input[0], input[1]);
    out.push(rep === null ? "null" : JSON.stringify(rep));
    if (out.length >= 20000) flush();
  }
}
flush();
