"""The deployment bundle: everything an engineering team needs to run the decided collection (issue 29).

:func:`write_bundle` (and :func:`bundle_zip` for a download button) writes, for a mechanism with a phone-side
client: ``collection.json``, ``client.js``, ``client.py``, ``example.html`` (a page that runs client.js) and a
``README.md`` for the engineers with the estimate command; for a central-DP mechanism, the spec and a README for
the trusted curator only (phones have nothing private to run).
"""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path
from typing import Any

from ldpviz import mechanisms
from ldpviz.errors import LdpvizInputError, require
from ldpviz.geo.domain import Grid, Region
from ldpviz.mechanisms.base import CENTRAL_DP, Mechanism
from ldpviz.deploy import spec as specs

HERE = Path(__file__).resolve().parent
CLIENT_JS = HERE / "client.js"
CLIENT_PY = HERE / "client.py"

EXAMPLE_HTML = """<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>ldpviz collection: example page</title></head>
<body>
<h1>Private location report</h1>
<p>Serve this folder over http (e.g. <code>python3 -m http.server --bind 127.0.0.1 8000</code>) and open
<code>http://127.0.0.1:8000/example.html</code>. Type a location: the page shows the report the phone would send.
The location itself is never shown, stored or sent.</p>
<label>longitude <input id="lon" value="{lon}"></label>
<label>latitude <input id="lat" value="{lat}"></label>
<button id="go">Make one report</button>
<pre id="out">loading the spec...</pre>
<script type="module">
import {{ createClient }} from "./client.js";
const out = document.getElementById("out");
const spec = await (await fetch("collection.json")).json();
const client = createClient(spec);
out.textContent = "ready: " + spec.mechanism.label;
document.getElementById("go").addEventListener("click", () => {{
  const report = client.report(Number(document.getElementById("lon").value),
                               Number(document.getElementById("lat").value));
  // Send `report` to your collection endpoint here. Never log or send the location itself.
  out.textContent = report === null ? "outside the region: nothing is sent" : JSON.stringify(report);
}});
</script>
</body>
</html>
"""


def _mechanism_of(target: Any, region: Region | None, expected_users: int | None) -> Mechanism:
    """A deployable mechanism from a Mechanism or an experiment Scenario (its region given or resolved)."""
    if isinstance(target, Mechanism):
        if target.privacy_model == CENTRAL_DP:
            return target
        return specs.deployable_mechanism(target.name, target.grid, target.epsilon, target.param_values,
                                          expected_users)
    from ldpviz.experiment import Scenario
    require(isinstance(target, Scenario), f"write_bundle needs a Mechanism or a Scenario, got {type(target).__name__}")
    if region is None:
        if isinstance(target.region, Region):
            region = target.region
        else:
            from ldpviz.data import datasets
            region = datasets.load(target.dataset).resolve_region(target.region)
    grid = Grid(region, int(target.grid_side))
    if mechanisms.get(target.mechanism).privacy_model == CENTRAL_DP:
        return mechanisms.create(target.mechanism, grid, target.epsilon, **target.param_dict)
    return specs.deployable_mechanism(target.mechanism, grid, target.epsilon, target.param_dict,
                                      expected_users or target.n_users)


def report_guarantee(spec: dict) -> str:
    """The guarantee of one report from ``spec`` without the simulator's per-row wording: in a deployment a phone is a
    person, and what a person pays over their reports is the spec's ledger (issue 37.6)."""
    return str(spec["mechanism"]["guarantee"]).split(", per row (event-level)")[0]


def readme_text(spec: dict) -> str:
    """The engineers' README (also in docs/deploy.md in more words)."""
    m, c, r = spec["mechanism"], spec["client"], spec["region"]
    ledger = spec.get("ledger", {})
    pays = ledger.get("sentence", "")
    curator = c["kind"] == "curator"
    lines = [
        f"# Collection bundle: {m['label']}", "",
        f"Made by ldpviz {spec['ldpviz_version']}; spec digest `{spec['digest']}`.", "",
        f"- Guarantee of one report: {report_guarantee(spec)}.",
        f"- What each person pays over all their reports (the ledger; the unit is the person, each phone one "
        f"person): {pays}" if pays else "- Ledger: see collection.json",
        *([f"- **{ledger['warning']}**"] if ledger.get("warning") else []),
        f"- Region: {r['name'] or 'unnamed'}, a {r['side_m'] / 1000:,.4g} km square centred at "
        f"({r['center_lon']:.6g}, {r['center_lat']:.6g}), projection {r['projection_text']}; "
        f"grid {r['grid_side']} x {r['grid_side']} cells of {r['cell_m']:,.4g} m.", "",
    ]
    if curator:
        lines += [
            "## Central DP: the trusted curator's side only", "",
            "This mechanism is central differential privacy: phones send their **true grid cell** to a trusted",
            "curator over an encrypted channel; the privacy comes from the noise the curator adds once, to the",
            "aggregate. There is no phone-side privacy, so this bundle has no phone client. The curator keeps the",
            "true cells secret, deletes them after the release, and runs:", "",
            "    ldpviz estimate --spec collection.json --reports true_cells.jsonl --out release/", "",
            "with one JSON line per person: `{\"spec\": \"<digest>\", \"y\": <cell>}` (cell = row x d + col, row 0",
            "at the south edge). Run it once per collection: every run spends the budget again.", "",
        ]
        return "\n".join(lines)
    lines += [
        "## Files", "",
        "- `collection.json` -- the spec. Ship it unchanged to every phone; the server checks its digest.",
        "- `client.js` -- ES module, no dependencies: `import { createClient } from \"./client.js\"`,",
        "  `createClient(spec).report(lon, lat)` returns the report to send, or `null` outside the region.",
        "- `client.py` -- the same in Python, standard library only: `python client.py collection.json LON LAT`.",
        "- `example.html` -- a page that runs client.js (serve the folder over http on 127.0.0.1).", "",
        "## Rules for the app", "",
        "- Send exactly the object `report()` returns, and only as often as the ledger above counts (one report",
        "  per person per collection unless it says otherwise): every extra report costs the person more.",
        f"- The report has only these fields: {', '.join(spec['report']['fields'])}. Add nothing.",
        "- Never log, store, cache or send the true location, before or after calling the client; do not log the",
        "  report together with anything that identifies the phone beyond what your transport already reveals.",
        "- Randomness comes from `crypto.getRandomValues` / `secrets`; never replace it with `Math.random`.",
        "- A location outside the region gives `null`: send nothing.", "",
        "## Back on the server", "",
        "Collect the reports as JSON lines (one object per line) or CSV with a header naming the fields, then:", "",
        "    ldpviz estimate --spec collection.json --reports reports.jsonl --out result/", "",
        "It checks every line (digest, format, domain), counts and names what it rejects, and writes",
        "`estimate.csv`, `estimate.geojson`, `estimate.png` and `summary.json` (with per-cell 95% intervals and",
        "the ledger).", "",
        "## Precision", "",
        "Every random choice is one uniform integer drawn by rejection from cryptographic random bits against the",
        "spec's integer weights (below 2^52): the deployed channel's epsilon is "
        f"{c['epsilon_deployed']:.12g} (stated {spec['epsilon']:g} {spec['epsilon_unit']}).",
    ]
    if c["kind"] == "planar-laplace":
        lines.append("Planar Laplace noise is drawn from 53-bit uniforms in double precision and snapped to a grid "
                     "cell; the report is the cell, never the noisy coordinates.")
    lines += ["", "## Mechanisms without a client in this version", ""]
    lines += [f"- `{name}`: {why}" for name, why in specs.NOT_YET.items()] or \
        ["None: every mechanism with a phone-side client half has one here. Multi-round mechanisms (PrivAG, AAG) and",
         "SRR / the tile oracles over occupied tiles (a domain built from the users' data) have no single phone",
         "report and are refused; central-DP mechanisms get the trusted curator's side only."]
    return "\n".join(lines) + "\n"


def bundle_files(target: Any, region: Region | None = None, ledger: Any = None, *,
                 expected_users: int | None = None) -> dict[str, bytes]:
    """The bundle's files as name -> bytes (no disk writes)."""
    mech = _mechanism_of(target, region, expected_users)
    spec = specs.build_spec(mech, ledger, curator=mech.privacy_model == CENTRAL_DP)
    files = {"collection.json": (json.dumps(spec, indent=1, sort_keys=True) + "\n").encode(),
             "README.md": readme_text(spec).encode()}
    if spec["client"]["kind"] != "curator":
        r = spec["region"]
        lon, lat = r["center_lon"], r["center_lat"]
        files["client.js"] = CLIENT_JS.read_bytes()
        files["client.py"] = CLIENT_PY.read_bytes()
        files["example.html"] = EXAMPLE_HTML.format(lon=f"{lon:.6f}", lat=f"{lat:.6f}").encode()
    return files


def write_bundle(target: Any, region: Region | None = None, ledger: Any = None, out_dir: str | Path = "bundle",
                 *, expected_users: int | None = None) -> dict[str, Path]:
    """Write the bundle for ``target`` (a Mechanism, or an experiment Scenario with its Region) into ``out_dir``.

    ``ledger`` is the accountant's Ledger of the collection (default: built by
    ``ldpviz.mechanisms.accounting.collection_ledger``). Returns file name -> path. Raises LdpvizInputError with
    the reason for anything a phone cannot run (see :func:`ldpviz.deploy.spec.check_deployable`).
    """
    files = bundle_files(target, region, ledger, expected_users=expected_users)
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise LdpvizInputError(f"--out {str(out)!r} is a file; give a folder")
    out.mkdir(parents=True, exist_ok=True)
    paths = {}
    for name, data in files.items():
        path = out / name
        path.write_bytes(data)
        paths[name] = path
    return paths


def bundle_zip(target: Any, region: Region | None = None, ledger: Any = None, *,
               expected_users: int | None = None) -> bytes:
    """The bundle as zip bytes (for a download button)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in bundle_files(target, region, ledger, expected_users=expected_users).items():
            zf.writestr(f"ldpviz-collection/{name}", data)
    return buf.getvalue()


__all__ = ["write_bundle", "bundle_zip", "bundle_files", "readme_text"]
