// Test harness: client.js's canonical form, digest and spec checks, one JSON line per input on stdout.
// usage: node verify.mjs JOB.json   with JOB = {client, texts: [collection.json text, ...], values: [any JSON], expect,
//   disks: [{name, d, radius, eps, hash}], domains: [d, ...]}
// Each text is parsed by JSON.parse (as an app would) and given to createClient; each value is put in canonical form;
// each disk is derived by deriveDisk (its mask and bump as SHA-256 of their JSON text when hash is set), each domain
// by domainOrder and domainHierarchy.
import { createHash } from "node:crypto";
import { readFileSync, writeSync } from "node:fs";
import { pathToFileURL } from "node:url";

const job = JSON.parse(readFileSync(process.argv[2], "utf8"));
const { createClient, canonicalJson, specDigest, deriveDisk, domainOrder, domainHierarchy } =
  await import(pathToFileURL(job.client).href);
const out = [];
for (const text of job.texts || []) {
  let spec, row;
  try {
    spec = JSON.parse(text);
  } catch (err) {
    out.push(JSON.stringify({ parse: String(err) }));
    continue;
  }
  try {
    row = { canonical: canonicalJson(Object.fromEntries(Object.entries(spec).filter(([k]) => k !== "digest"))),
      digest: specDigest(spec) };
  } catch (err) {
    row = { canonical: null, digest: null };
  }
  try {
    const client = createClient(spec, job.expect ? { expectedDigest: job.expect } : {});
    row.accepted = client.digest;
  } catch (err) {
    row.error = err.message;
    row.error_name = err.name;
  }
  out.push(JSON.stringify(row));
}
for (const value of job.values || []) out.push(JSON.stringify({ canonical: canonicalJson(value) }));
const sha = (v) => createHash("sha256").update(JSON.stringify(v)).digest("hex");
for (const { name, d, radius, eps, hash } of job.disks || []) {
  const got = deriveDisk(name, d, radius, eps);
  out.push(JSON.stringify(hash ? { mask: sha(got.mask), base: got.base, bump: sha(got.bump) } : got));
}
for (const d of job.domains || []) {
  const { block, cells } = domainOrder(d);
  const [sizes, index] = domainHierarchy(d);
  out.push(JSON.stringify({ block, cells, sizes, index }));
}
writeSync(1, out.join("\n") + "\n");
