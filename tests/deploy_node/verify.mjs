// Test harness: client.js's canonical form, digest and spec checks, one JSON line per input on stdout.
// usage: node verify.mjs JOB.json   with JOB = {client, texts: [collection.json text, ...], values: [any JSON], expect}
// Each text is parsed by JSON.parse (as an app would) and given to createClient; each value is put in canonical form.
import { readFileSync, writeSync } from "node:fs";
import { pathToFileURL } from "node:url";

const job = JSON.parse(readFileSync(process.argv[2], "utf8"));
const { createClient, canonicalJson, specDigest } = await import(pathToFileURL(job.client).href);
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
writeSync(1, out.join("\n") + "\n");
