"""What is signed is what runs (issue 37, items 9-10): both clients and ``ldpviz estimate`` recompute the spec's
digest over one canonical form, byte for byte the same in Python and JavaScript (floats, unicode, key order), derive
the channel's parameters from the mechanism and epsilon, and refuse a spec that is tampered with or misshapen with
one clear sentence."""

from __future__ import annotations

import copy
import functools
import hashlib
import json
import math
import random
import shutil
import struct
import subprocess
import sys

import pytest

from ldpviz import mechanisms
from ldpviz.cli.commands import main
from ldpviz.deploy import client as pyclient
from ldpviz.deploy import estimate as deployed
from ldpviz.deploy import spec as specs
from ldpviz.errors import LdpvizInputError
from ldpviz.geo.domain import Grid, Region

from tests.deploy.deploy_helpers import CLIENT_JS, ROOT, need_node

VERIFY = ROOT / "tests" / "deploy" / "deploy_node" / "verify.mjs"
BOX = Region.from_bbox(-93.33, 44.89, -93.19, 45.05, name="box")
#: A region whose name needs escapes: accents, CJK, an astral emoji (a surrogate pair), DEL, a control, a quote.
UNICODE_BOX = Region.from_bbox(170, -25, -170, -10, name='Zürich – 東京 😀 \x7f\x01 "q"\\')
#: Every deployable mechanism (and UG over each oracle, MDSW's both splits), and the curator side.
CASES = [(n, {}) for n in specs.supported() if n != "ug"] + [
    ("ug", {"oracle": o, "cells_per_side": 4}) for o in ("grr", "olh", "oue", "hr")] + [
    ("mdsw", {"split": "budget"})]


def _spec(name: str = "grr", params: dict | None = None, eps: float = 1.0, d: int = 8, region: Region = BOX) -> dict:
    return specs.build_spec(specs.deployable_mechanism(name, Grid(region, d), eps, params or {},
                                                       expected_users=10_000))


def _all_specs() -> list[dict]:
    out = []
    for i, (name, params) in enumerate(CASES):
        eps = (0.3, 1.7, 4.0)[i % 3] if name not in ("planar-laplace", "sem-geoi") else (0.5, 2.3)[i % 2]
        out.append(_spec(name, params, eps, 8 if i % 2 else 12, UNICODE_BOX if i % 2 else BOX))
    out.append(specs.build_spec(mechanisms.create("dp-heatmap", Grid(UNICODE_BOX, 8), 1.3), curator=True))
    return out


def _node(tmp_path, texts=(), values=(), expect=None, disks=(), domains=()) -> list[dict]:
    node = need_node()
    job = tmp_path / "verify-job.json"
    job.write_text(json.dumps({"client": str(CLIENT_JS), "texts": list(texts), "values": list(values),
                               "expect": expect, "disks": list(disks), "domains": list(domains)}))
    out = subprocess.run([node, str(VERIFY), str(job)], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    return [json.loads(line) for line in out.stdout.splitlines()]


def _body(spec: dict) -> dict:
    return {k: v for k, v in spec.items() if k != "digest"}


def _redigest(spec: dict) -> dict:
    spec = copy.deepcopy(spec)
    spec["digest"] = specs.spec_digest(spec)
    return spec


# ---------------------------------------------------------------------------------------------------------------
# The canonical form, byte for byte in both languages
# ---------------------------------------------------------------------------------------------------------------

def test_canonical_form_is_defined_by_value():
    """The rules of docs/deploy.md: sorted keys (UTF-16 order), no whitespace, ASCII escapes, numbers by value."""
    c = lambda v: pyclient.canonical_json(v).decode()  # noqa: E731
    assert c({"b": 1, "a": [1.0, -0.0, True, None, "x"]}) == '{"a":[1,0,true,null,"x"],"b":1}'
    assert c([1e-7, 1e21, 1e16, 0.1, 2.0 ** 53, 123.456, -2.5e-300, 5e-324]) == \
        "[1e-7,1e21,1e16,1e-1,9.007199254740992e15,1.23456e2,-2.5e-300,5e-324]"
    assert c("é\u2028😀\x7f\x00\n\"\\") == '"\\u00e9\\u2028\\ud83d\\ude00\\u007f\\u0000\\n\\"\\\\"'
    assert c({"\uff01": 1, "😀": 2}) == '{"\\ud83d\\ude00":2,"\\uff01":1}'     # UTF-16 order, not code points
    for bad in (float("nan"), float("inf"), 1 << 53, {1: 2}, {1, 2}):
        with pytest.raises(pyclient.SpecError):
            pyclient.canonical_json(bad)


def _hostile_floats(n: int, seed: int) -> list[float]:
    """Random doubles of every magnitude (random bit patterns), and the edges where Python's repr and JavaScript's
    toString switch notation (1e-5 .. 1e-7, 1e16, 1e21, 2^53)."""
    rng = random.Random(seed)
    out = []
    while len(out) < n:
        x = struct.unpack("<d", rng.getrandbits(64).to_bytes(8, "little"))[0]
        if math.isfinite(x):
            out.append(x)
    edges = [1e-5, 1e-6, 1e-7, 1.5e-7, 1e15, 1e16, 1.5e16, 1e20, 1e21, 1.5e21, 2.0 ** 53, 2.0 ** 53 + 2,
             2.0 ** 53 - 1, 0.1 + 0.2, 1 / 3, 5e-324, 2.2250738585072014e-308, 1.7976931348623157e308, 100.0,
             -0.0, 123456789012345680.0, 4.35, 0.000123, 1e-300 * 7]
    return out + edges + [-x for x in edges] + [rng.uniform(-1e6, 1e6) for _ in range(200)] + \
        [math.exp(rng.uniform(-40, 40)) for _ in range(200)]


def test_canonical_json_is_byte_for_byte_the_same_in_node(tmp_path):
    """client.js's canonical form equals client.py's byte for byte: 3,000 random doubles and the notation edges, unicode
    strings and keys, and the spec of every deployable mechanism (floats, a unicode region name) read from files
    written in three layouts (sorted and indented, keys reversed, raw UTF-8); each digest is the one ldpviz wrote."""
    floats = _hostile_floats(3000, 1)
    strings = ["Zürich", "東京", "😀x", "\x7f\x1f\u2028\ufeff", "\ud800", "a\"b\\c\n"]
    values = [floats, {s: i for i, s in enumerate(strings)}, strings]
    all_specs = _all_specs()
    texts = []
    for spec in all_specs:
        texts.append(json.dumps(spec, indent=1, sort_keys=True))
        texts.append(json.dumps(dict(reversed(list(spec.items()))), separators=(",", ":")))
        texts.append(json.dumps(spec, ensure_ascii=False, indent=2))
    rows = _node(tmp_path, texts=texts, values=values)
    assert len(rows) == len(texts) + len(values)
    for row, value in zip(rows[len(texts):], values):
        assert row["canonical"] == pyclient.canonical_json(value).decode()
    for i, row in enumerate(rows[:len(texts)]):
        spec = all_specs[i // 3]
        assert row["canonical"] == pyclient.canonical_json(_body(spec)).decode(), spec["mechanism"]["name"]
        assert row["digest"] == spec["digest"] == specs.spec_digest(json.loads(texts[i]))
        assert row.get("accepted") == spec["digest"], (spec["mechanism"]["name"], row.get("error"))
    assert {s["client"]["kind"] for s in all_specs} == set(pyclient.KIND_FIELDS)


@pytest.mark.parametrize("layout", ["sorted", "reversed", "raw-utf8"])
def test_python_client_verifies_every_mechanism_in_every_layout(layout):
    for spec in _all_specs():
        text = {"sorted": lambda s: json.dumps(s, indent=1, sort_keys=True),
                "reversed": lambda s: json.dumps(dict(reversed(list(s.items())))),
                "raw-utf8": lambda s: json.dumps(s, ensure_ascii=False)}[layout](spec)
        assert pyclient.Client(json.loads(text)).digest == spec["digest"]
        assert specs.verify_spec(json.loads(text)) is not None


# ---------------------------------------------------------------------------------------------------------------
# Tampered specs: refused by both clients and by the estimate
# ---------------------------------------------------------------------------------------------------------------

def _raised_keep(spec: dict, factor: int = 250) -> dict:
    bad = copy.deepcopy(spec)
    bad["client"]["keep"] *= factor
    return bad


def _tampers() -> list[tuple[str, dict, str]]:
    """(label, tampered spec, what the refusal names), each with its digest recomputed (a tamperer who rewrites it)
    unless the label says so."""
    grr = _spec("grr", eps=1.0, d=32)        # issue 37's case: keep x250 is about epsilon 5.5 on 1,024 cells
    out = [("grr keep x250, digest unchanged", _raised_keep(grr), "changed after it was made"),
           ("grr keep x250, digest recomputed", _redigest(_raised_keep(grr)), "keep/other")]
    olh = _spec("olh", eps=1.0)
    t = copy.deepcopy(olh)
    t["client"]["g"] = 40
    out.append(("olh g", _redigest(t), "OLH buckets"))
    oue = _spec("oue", eps=1.0)
    t = copy.deepcopy(oue)
    t["client"]["q_numerator"] //= 10
    out.append(("oue q", _redigest(t), "OUE threshold"))
    hr = _spec("hr", eps=1.0)
    t = copy.deepcopy(hr)
    t["client"]["in_set"] *= 2
    out.append(("hr in_set", _redigest(t), "in_set/other"))
    dam = _spec("dam", eps=1.0)
    t = copy.deepcopy(dam)
    r = t["client"]["radius"]
    centre = next(p for p in t["client"]["bump"] if p[0] == r * (2 * r + 1) + r)
    centre[1] *= 2
    out.append(("dam own-cell weight", _redigest(t), "disk weights"))
    pl = _spec("planar-laplace", eps=1.0)
    t = copy.deepcopy(pl)
    t["client"]["eps_cell"] *= 5
    out.append(("planar laplace eps_cell", _redigest(t), "noise scale"))
    srr = _spec("srr", eps=1.0)
    t = copy.deepcopy(srr)
    t["client"]["levels"][-1] = 1
    out.append(("srr levels", _redigest(t), "staircase weights give epsilon"))
    sw = _spec("mdsw", eps=1.0)
    t = copy.deepcopy(sw)
    t["client"]["near_probability"] = 0.99
    out.append(("mdsw near", _redigest(t), "square wave"))
    sem = _spec("sem-geoi", eps=1.0)
    t = copy.deepcopy(sem)
    t["client"]["decay"][0] = str(int(t["client"]["decay"][0]) * 1000)
    out.append(("sem-geoi decay", _redigest(t), "decay weight 0"))
    olhh = _spec("olh-h", eps=1.0)
    t = copy.deepcopy(olhh)
    t["client"]["keep"] *= 2
    out.append(("olh-h keep", _redigest(t), "keep/other"))
    t = copy.deepcopy(grr)
    t["epsilon_unit"] = "per km"
    out.append(("grr unit", _redigest(t), "not 'per report'"))
    t = copy.deepcopy(grr)
    t["client"]["D"] = 4
    out.append(("grr D", _redigest(t), "client.D"))
    return out


TAMPERS = _tampers()


@pytest.mark.parametrize("label,spec,why", TAMPERS, ids=[t[0] for t in TAMPERS])
def test_python_client_refuses_a_tampered_spec(label, spec, why):
    with pytest.raises(pyclient.SpecError, match=why):
        pyclient.Client(spec)


def test_client_js_refuses_every_tampered_spec(tmp_path):
    rows = _node(tmp_path, texts=[json.dumps(spec) for _, spec, _ in TAMPERS])
    for (label, _, why), row in zip(TAMPERS, rows):
        assert row.get("error_name") == "SpecError", (label, row)
        assert why in row["error"], (label, row["error"])


def test_the_raised_keep_would_have_leaked_the_cell():
    """Why it matters (issue 37's finding): on 1,024 cells the tampered GRR channel keeps the true cell in ~40% of
    reports, the signed one in 0.26%; a client that skipped the checks would run it."""
    spec = _spec("grr", eps=1.0, d=32)
    keep, other, D = spec["client"]["keep"], spec["client"]["other"], spec["client"]["D"]
    assert keep / (keep + (D - 1) * other) == pytest.approx(math.e / (math.e + D - 1))
    assert 250 * keep / (250 * keep + (D - 1) * other) > 0.39
    with pytest.raises(pyclient.SpecError):
        pyclient.Client(_redigest(_raised_keep(spec)))


def test_a_pinned_digest_refuses_a_replaced_spec(tmp_path):
    """A spec replaced with its digest recomputed and a channel that is consistent (a genuine spec at epsilon 5) is
    caught only by the digest the app pins; both clients take it."""
    signed, other = _spec("grr", eps=1.0), _spec("grr", eps=5.0)
    assert pyclient.Client(other).digest == other["digest"]
    with pytest.raises(pyclient.SpecError, match="not the one this app was built for"):
        pyclient.Client(other, expected_digest=signed["digest"])
    assert pyclient.Client(signed, expected_digest=signed["digest"]).digest == signed["digest"]
    rows = _node(tmp_path, texts=[json.dumps(other), json.dumps(signed)], expect=signed["digest"])
    assert "not the one this app was built for" in rows[0]["error"]
    assert rows[1]["accepted"] == signed["digest"]


def test_estimate_refuses_a_tampered_spec(tmp_path, capsys):
    """`ldpviz estimate` recomputes the digest and rebuilds the sampler from the mechanism, epsilon and grid: the raised
    keep is refused with its digest unchanged and with it recomputed, and so is any client field the rebuild does not
    give (here DAM's whole disk for another radius: a consistent, private channel the phone accepts, as it does not
    read the mechanism's parameters, but not the one the mechanism's radius gives)."""
    grr = _spec("grr", eps=1.0, d=32)
    reports = tmp_path / "r.jsonl"
    reports.write_text("".join(json.dumps({"spec": grr["digest"], "y": i % 64}) + "\n" for i in range(200)))
    dam = _spec("dam", eps=1.0, d=32)
    t = copy.deepcopy(dam)
    t["client"] = copy.deepcopy(_spec("dam", {"radius": 3.0}, eps=1.0, d=32)["client"])
    assert t["client"]["radius"] != dam["client"]["radius"]
    assert pyclient.Client(_redigest(t))     # the phone derives the disk from the radius the client section states
    cases = [(_raised_keep(grr), "changed after it was made"), (_redigest(_raised_keep(grr)), "keep/other"),
             (_redigest(t), "client section differs")]
    for i, (spec, why) in enumerate(cases):
        path = tmp_path / f"tampered{i}.json"
        path.write_text(json.dumps(spec))
        assert main(["estimate", "--spec", str(path), "--reports", str(reports)]) == 2
        err = capsys.readouterr().err
        assert why in err and "Traceback" not in err, err
        with pytest.raises(LdpvizInputError, match=why):
            deployed.estimate_reports(spec, reports)


# ---------------------------------------------------------------------------------------------------------------
# Lists the phone derives (issue 37 item 9's gap): the disk's mask and bump, the public domain, OLH-H's hierarchy;
# SRR's staircase intervals checked for the structure its ratio bound needs
# ---------------------------------------------------------------------------------------------------------------

DISKS = ("dam", "dam-ns", "huem")
DISK_EPS = (0.05, 0.3, 1.0, 2.7, 6.0, 12.0)
DISK_SIDES = (1, 2, 3, 5, 8)


def _disk_cases() -> list[tuple[str, int, float, float | None]]:
    """(mechanism, d, epsilon, radius or None for the default) over a range, with radius 0 and the largest allowed."""
    from ldpviz.mechanisms.dam.disk_area import MAX_RADIUS_SIDES
    return [(name, d, eps, radius) for name in DISKS for d in DISK_SIDES for eps in DISK_EPS
            for radius in (None, 0.0, 1.0, 2.0, 7.0, float(MAX_RADIUS_SIDES * d)) if radius is None or radius <= 8 * d]


def _disk_client(name: str, d: int, eps: float, radius: float | None) -> dict:
    return specs.client_section(specs.deployable_mechanism(name, Grid(BOX, d), eps,
                                                           {} if radius is None else {"radius": radius}))


def test_python_client_derives_the_disk_the_spec_builder_writes():
    """client.py's mask, base and bump are ldpviz's own (spec.py's _disk over kernels.DiskChannel) byte for byte, for
    DAM, DAM-NS and HUEM at 6 epsilons, 5 grids and radii 0, 1, 2, 7, the default and MAX_RADIUS_SIDES x d."""
    cases = _disk_cases()
    assert len(cases) > 500
    for name, d, eps, radius in cases:
        c = _disk_client(name, d, eps, radius)
        got = pyclient.derive_disk(name, d, c["radius"], eps)
        assert (got["mask"], got["base"], got["bump"]) == (c["mask"], c["base"], c["bump"]), (name, d, eps, radius)


def test_client_js_derives_the_disk_the_spec_builder_writes(tmp_path):
    cases = _disk_cases()
    sections = [_disk_client(name, d, eps, radius) for name, d, eps, radius in cases]
    rows = _node(tmp_path, disks=[{"name": name, "d": d, "radius": c["radius"], "eps": eps}
                                  for (name, d, eps, _), c in zip(cases, sections)])
    assert len(rows) == len(cases)
    for case, c, row in zip(cases, sections, rows):
        assert (row["mask"], row["base"], row["bump"]) == (c["mask"], c["base"], c["bump"]), case


@functools.lru_cache(maxsize=None)
def _largest_disk(name: str) -> tuple[int, str, int, str]:
    """The disk at both radius limits (1,024 cells = 8 sides of a 128 x 128 grid): (radius, SHA-256 of the mask's
    JSON, base, SHA-256 of the bump's JSON), as spec.py writes it (3.8 million mask cells, 3.3 million offsets)."""
    from ldpviz.mechanisms.dam.disk_area import MAX_RADIUS_CELLS, MAX_RADIUS_SIDES
    assert MAX_RADIUS_CELLS == MAX_RADIUS_SIDES * 128
    c = _disk_client(name, 128, 1.3, float(MAX_RADIUS_CELLS))
    return c["radius"], _sha(c["mask"]), c["base"], _sha(c["bump"])


def _sha(value: object) -> str:
    return hashlib.sha256(json.dumps(value, separators=(",", ":")).encode()).hexdigest()


def test_python_client_derives_the_largest_disk():
    """At the largest radius allowed (HUEM: its ring levels are the most float-sensitive)."""
    radius, mask_sha, base, bump_sha = _largest_disk("huem")
    got = pyclient.derive_disk("huem", 128, radius, 1.3)
    assert (_sha(got["mask"]), got["base"], _sha(got["bump"])) == (mask_sha, base, bump_sha)


def test_client_js_derives_the_largest_disk(tmp_path):
    need_node()
    radius, mask_sha, base, bump_sha = _largest_disk("huem")
    row, = _node(tmp_path, disks=[{"name": "huem", "d": 128, "radius": radius, "eps": 1.3, "hash": True}])
    assert (row["mask"], row["base"], row["bump"]) == (mask_sha, base, bump_sha)


DOMAIN_SIDES = list(range(1, 70)) + [100, 127, 128, 129, 255, 256, 257, 1000, 1024]


def _domain(d: int) -> dict:
    from ldpviz.mechanisms.srr.olh_h import hierarchy
    from ldpviz.mechanisms.srr.staircase import grid_domain
    dom = grid_domain(Grid(BOX, d))
    levels = hierarchy(dom)
    return {"block": int(dom.block), "cells": dom.cells.tolist(), "sizes": [len(n) for n, _ in levels],
            "index": [i.astype(int).tolist() for _, i in levels]}


def test_python_client_derives_the_public_domain_and_its_hierarchy():
    """domain_order and domain_hierarchy are grid_domain's blocks in quadtree order and OLH-H's hierarchy."""
    for d in DOMAIN_SIDES:
        block, cells, _ = pyclient.domain_order(d)
        sizes, index = pyclient.domain_hierarchy(d)
        assert {"block": block, "cells": cells, "sizes": sizes, "index": index} == _domain(d), d


def test_client_js_derives_the_public_domain_and_its_hierarchy(tmp_path):
    assert _node(tmp_path, domains=DOMAIN_SIDES) == [_domain(d) for d in DOMAIN_SIDES]


def _other_cell(c: dict) -> int:
    """A cell of the box outside the spec's mask."""
    inside = set(c["mask"])
    return next(k for k in range(c["box_side"] ** 2) if k not in inside)


def _derived_tampers() -> list[tuple[str, dict, str]]:
    """(label, tampered spec with its digest recomputed, the start of the sentence both clients refuse it with)."""
    out = []
    for name in DISKS:
        spec = _spec(name, eps=1.0)
        r, d = spec["client"]["radius"], spec["region"]["grid_side"]
        mask_says = (f"the spec's client.mask is not the output domain of {name}'s disk of radius {r} on its {d} x {d} "
                     "grid")
        t = copy.deepcopy(spec)
        t["client"]["mask"] = [t["client"]["mask"][0]]        # issue 37's case: every report in the true cell's disk
        out.append((f"{name} mask shrunk to one cell", _redigest(t), mask_says))
        t = copy.deepcopy(spec)
        m = t["client"]["mask"]
        m[3], m[-4] = m[-4], m[3]
        out.append((f"{name} mask entries swapped", _redigest(t), mask_says))
        t = copy.deepcopy(spec)
        t["client"]["mask"] = sorted(t["client"]["mask"] + [_other_cell(t["client"])])
        out.append((f"{name} mask extended", _redigest(t), mask_says))
        bump_says = f"the spec's client.bump is not the disk weights {name} gives at its epsilon with radius {r}"
        t = copy.deepcopy(spec)
        w = 2 * r + 1
        t["client"]["bump"].append([r * w + r, next(wt for o, wt in t["client"]["bump"] if o == r * w + r)])
        out.append((f"{name} own cell listed twice", _redigest(t), bump_says))
        t = copy.deepcopy(spec)
        t["client"]["bump"].insert(0, [0, 1])                  # the box corner: outside the disk
        out.append((f"{name} offset outside the disk", _redigest(t), bump_says))
        t = copy.deepcopy(spec)
        t["client"]["bump"][0][1] //= 2
        out.append((f"{name} a share halved", _redigest(t), bump_says))
    t = _spec("dam", eps=1.0)
    t["mechanism"]["name"] = "grr"
    out.append(("disk for another mechanism", _redigest(t),
                "the spec runs the disk sampler for a mechanism that is not dam, dam-ns or huem"))
    srr = _spec("srr", eps=1.0)
    t = copy.deepcopy(srr)
    c = t["client"]
    D = len(c["domain_cells"])
    c["m"], c["levels"], c["lo"], c["hi"] = 1, [1], [[x, x] for x in range(D)], [[x, x + 1] for x in range(D)]
    out.append(("srr reports the true position", _redigest(t),
                "the spec's staircase intervals (client.lo, client.hi) of position 0 are not nested from the empty one "
                "at it to the whole domain"))
    t = copy.deepcopy(srr)
    t["client"]["hi"][5][-1] -= 1
    out.append(("srr outer interval short", _redigest(t), "the spec's staircase intervals (client.lo, client.hi) of "
                                                          "position 5 are not nested"))
    for name in ("grr-tiles", "srr", "hr-tiles", "olh-h"):
        spec = _spec(name, eps=1.0)
        cells_says = "the spec's client.domain_cells is not the quadtree order of the 8 x 8 blocks of its 8 x 8 grid"
        t = copy.deepcopy(spec)
        t["client"]["domain_cells"] = t["client"]["domain_cells"][:-1]
        if "D" in t["client"]:
            t["client"]["D"] -= 1
        out.append((f"{name} domain cell dropped", _redigest(t), cells_says))
        t = copy.deepcopy(spec)
        cells = t["client"]["domain_cells"]
        cells[0], cells[1] = cells[1], cells[0]
        out.append((f"{name} domain cells swapped", _redigest(t), cells_says))
    t = _spec("grr-tiles", eps=1.0)
    t["client"]["block"] = 2
    out.append(("tiles block", _redigest(t), "the spec's client.block is 2, not the 1 cells per block side its 8 x 8 "
                                             "grid gives"))
    hier_says = ("the spec's hierarchy (client.level_sizes, client.level_index) is not the quadtree hierarchy of its "
                 "domain")
    t = _spec("olh-h", eps=1.0)
    t["client"]["level_index"][0][0] = 1 - t["client"]["level_index"][0][0]
    out.append(("olh-h node swapped", _redigest(t), hier_says))
    t = _spec("olh-h", eps=1.0)
    t["client"]["level_sizes"].pop()
    t["client"]["level_index"].pop()
    out.append(("olh-h leaves dropped", _redigest(t), hier_says))
    return out


DERIVED_TAMPERS = _derived_tampers()


@pytest.mark.parametrize("label,spec,says", DERIVED_TAMPERS, ids=[t[0] for t in DERIVED_TAMPERS])
def test_python_client_refuses_a_list_it_derives(label, spec, says):
    with pytest.raises(pyclient.SpecError) as err:
        pyclient.Client(spec)
    assert str(err.value).startswith(f"ldpviz client: {says}"), str(err.value)
    assert pyclient.Client(_spec("dam", eps=1.0))


def test_client_js_refuses_a_list_it_derives_with_the_same_sentence(tmp_path):
    rows = _node(tmp_path, texts=[json.dumps(spec) for _, spec, _ in DERIVED_TAMPERS])
    for (label, spec, says), row in zip(DERIVED_TAMPERS, rows):
        assert row.get("error_name") == "SpecError", (label, row)
        with pytest.raises(pyclient.SpecError) as err:
            pyclient.Client(spec)
        assert row["error"] == str(err.value) and row["error"].startswith(f"ldpviz client: {says}"), label


def test_the_shrunk_mask_would_have_leaked_the_cell():
    """Why it matters: on 1,024 cells at epsilon 1, a DAM report lands in the true cell's disk (the bump) 37% of the
    time under the signed channel, and 99.97% of the time with the mask cut to one cell, where every other report is
    that one cell: a cell outside a far location's disk then has probability 0 from it, and no epsilon bounds that."""
    spec = _spec("dam", eps=1.0, d=32)
    c = spec["client"]
    bump = sum(wt for _, wt in c["bump"])
    assert bump / (bump + len(c["mask"]) * c["base"]) < 0.38
    assert bump / (bump + c["base"]) > 0.9997
    with pytest.raises(pyclient.SpecError, match="client.mask"):
        pyclient.Client(_redigest({**spec, "client": {**c, "mask": c["mask"][:1]}}))


def _disk_specs() -> list[dict]:
    from ldpviz.mechanisms.dam.disk_area import MAX_RADIUS_SIDES
    return [_spec(name, {} if radius is None else {"radius": float(radius)}, eps, d, UNICODE_BOX if d % 2 else BOX)
            for name in DISKS for eps in (0.3, 2.7) for d in (1, 5, 8) for radius in (None, 0, MAX_RADIUS_SIDES * d)]


def test_python_client_accepts_the_untampered_disks():
    """The specs ldpviz writes for the disk mechanisms, radius 0 to the largest allowed, pass both clients' checks."""
    for spec in _disk_specs():
        assert pyclient.Client(spec).digest == spec["digest"]


def test_client_js_accepts_the_untampered_disks(tmp_path):
    disk_specs = _disk_specs()
    rows = _node(tmp_path, texts=[json.dumps(spec) for spec in disk_specs])
    assert [row.get("accepted", row.get("error")) for row in rows] == [spec["digest"] for spec in disk_specs]


# ---------------------------------------------------------------------------------------------------------------
# Misshapen specs: one clear message in each client
# ---------------------------------------------------------------------------------------------------------------

def _misshapen() -> list[tuple[str, object, str]]:
    spec = _spec("dam", eps=1.0)
    out = []
    for section in ("client", "region", "report", "mechanism"):
        t = copy.deepcopy(spec)
        del t[section]
        out.append((f"no {section}", t, f"has no '{section}' section"))
    t = copy.deepcopy(spec)
    t["client"] = None
    out.append(("client null", t, "'client' is not an object"))
    t = copy.deepcopy(spec)
    del t["client"]["bump"]
    out.append(("no bump", t, "client section has no 'bump'"))
    t = copy.deepcopy(spec)
    t["region"]["grid_side"] = "8"
    out.append(("grid as text", t, "region.grid_side is not a whole number"))
    t = copy.deepcopy(spec)
    t["client"]["kind"] = "magic"
    out.append(("unknown kind", t, "unknown sampler"))
    out.append(("a list", [1, 2], "is not a JSON object"))
    t = copy.deepcopy(spec)
    del t["digest"]
    out.append(("no digest", t, "has no digest"))
    return out


MISSHAPEN = _misshapen()


@pytest.mark.parametrize("label,spec,why", MISSHAPEN, ids=[m[0] for m in MISSHAPEN])
def test_python_client_names_what_the_spec_lacks(label, spec, why):
    with pytest.raises(pyclient.SpecError, match=f"^ldpviz client: the spec.*{__import__('re').escape(why)}"):
        pyclient.Client(spec)


def test_client_js_names_what_the_spec_lacks(tmp_path):
    rows = _node(tmp_path, texts=[json.dumps(spec) for _, spec, _ in MISSHAPEN])
    for (label, _, why), row in zip(MISSHAPEN, rows):
        assert row.get("error_name") == "SpecError", (label, row)
        assert row["error"].startswith("ldpviz client: the spec") and why in row["error"], (label, row["error"])


def test_python_client_command_prints_one_line_not_a_traceback(tmp_path):
    shutil.copy(pyclient.__file__, tmp_path / "client.py")
    for i, (label, spec, why) in enumerate(MISSHAPEN[:2] + TAMPERS[:2]):
        (tmp_path / f"s{i}.json").write_text(json.dumps(spec))
        out = subprocess.run([sys.executable, "-I", "-S", "client.py", f"s{i}.json", "-93.26", "44.97"],
                             cwd=tmp_path, capture_output=True, text=True, timeout=60)
        assert out.returncode == 2 and out.stdout == "", label
        assert "Traceback" not in out.stderr and why in out.stderr and out.stderr.count("\n") == 1, out.stderr


def test_estimate_names_what_the_spec_lacks(tmp_path):
    for label, spec, why in MISSHAPEN[:4]:
        spec = _redigest(spec) if isinstance(spec, dict) and "digest" in spec else spec
        with pytest.raises(LdpvizInputError, match=__import__("re").escape(why)):
            specs.verify_spec(spec)
