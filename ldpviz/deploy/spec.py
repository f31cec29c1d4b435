"""``collection.json``: what every phone receives, versioned and digested (issue 29).

A spec holds the mechanism and its parameters, epsilon and the ledger of what each person pays
(:mod:`ldpviz.mechanisms.accounting`), the region with its projection, the grid, the value domain, the
report encoding, ldpviz's version, and a sha256 digest of all of it over a canonical JSON
(:func:`canonical_json`, defined once in ``client.py`` and mirrored byte for byte by ``client.js``; the ``digest``
key itself left out).

The ``client`` section is the exact sampler a phone follows. Every discrete choice is one uniform integer
in ``[0, N)``, ``N <= 2^52``, drawn by rejection from the platform's cryptographic random bits, against
integer weights: a probability the paper writes as ``w / Z`` becomes ``floor(w S) / sum floor(w' S)`` for a
power of two ``S``, with the weight every ratio is measured against kept exactly at ``S``. Flooring the larger
weights can only shrink the largest ratio, so the deployed channel's epsilon (``client.epsilon_deployed``,
computed from the integers) is at most the stated one, and every probability equals the simulator's to
within ``Z / 2^51`` relative for a sampler of total weight ``Z`` (in units of the smallest weight; e.g. 5e-10 for a
million outputs). Real-valued noise
(planar Laplace) is drawn from 53-bit uniforms in double precision and snapped to a cell.

Nothing in a spec depends on the users' data: a region fitted to the data is refused unless its epsilon
was paid (``Region.epsilon_spent``, then carried by the ledger), and so are mechanisms whose domain is built
from the users (SRR's occupied tiles).
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from typing import Any

import numpy as np

import ldpviz
from ldpviz import mechanisms
from ldpviz.deploy import client as _client
from ldpviz.errors import LdpvizInputError, require
from ldpviz.geo import region_choice
from ldpviz.geo.domain import AEQD, EARTH_RADIUS_M, Grid, Region
from ldpviz.mechanisms.base import CENTRAL_DP, GEO_I, GEO_I_UNIT_M, NO_PRIVACY, Mechanism

SCHEMA = _client.SCHEMA
#: Largest total integer weight of one draw (uniform integers are drawn below it by rejection).
WEIGHT_LIMIT = 1 << 52
WGS84_A = 6_378_137.0
WGS84_F = 1.0 / 298.257223563

#: Mechanisms with a client half that the bundle does not ship yet, and why (the README lists them).
NOT_YET: dict[str, str] = {}


# ---------------------------------------------------------------------------
# Canonical JSON and digest
# ---------------------------------------------------------------------------

def canonical_json(obj: Any) -> bytes:
    """The bytes the digest is taken over, the same in client.py and client.js (docs/deploy.md, "The canonical
    form"): keys sorted by UTF-16 code units, no whitespace, ASCII strings, numbers by value (an integral value
    below 2^53 as digits, any other as its shortest round-trip digits in ``d.ddde<exp>``), no NaN. Any new field
    of any JSON type is covered without change here."""
    try:
        return _client.canonical_json(obj)
    except _client.SpecError as err:
        raise LdpvizInputError(f"the spec cannot be put in canonical form: {err}") from None


def spec_digest(spec: dict) -> str:
    """``sha256:<hex>`` of the canonical JSON of ``spec`` without its ``digest`` key."""
    body = {k: v for k, v in spec.items() if k != "digest"}
    return "sha256:" + hashlib.sha256(canonical_json(body)).hexdigest()


def verify_spec(spec: Any, source: str = "the spec") -> dict:
    """Check a loaded spec as a phone does (its shape, its digest recomputed over the canonical form, every channel
    parameter derived from the mechanism and epsilon), and, with the whole of ldpviz at hand, that its ``client``
    section is exactly the one this mechanism, epsilon and grid give (:func:`client_section`); return it. Clear
    messages, never a traceback."""
    require(isinstance(spec, dict), f"{source} is not a JSON object; expected an ldpviz collection.json")
    require(spec.get("schema") == SCHEMA,
            f"{source} has schema {spec.get('schema')!r}; this ldpviz reads {SCHEMA!r}")
    stated = spec.get("digest")
    require(isinstance(stated, str) and stated.startswith("sha256:"), f"{source} has no digest")
    actual = spec_digest(spec)
    require(actual == stated, f"{source} was changed after it was made: its digest says {stated[:19]}..., its "
                              f"content hashes to {actual[:19]}...; phones and server must use the same unchanged "
                              f"collection.json (make a new one with 'ldpviz deploy')")
    try:
        _client.check_shape(spec)
        _client.check_channel(spec)
    except _client.SpecError as err:
        raise LdpvizInputError(f"{source} is refused ({err.reason}); phones refuse it too. Make a new spec with "
                               "'ldpviz deploy'") from None
    _check_rebuilt_client(spec, source)
    return spec


def _check_rebuilt_client(spec: dict, source: str) -> None:
    """The spec's sampler equals the one :func:`client_section` builds from its mechanism, epsilon and grid."""
    try:
        mech = mechanism_from_spec(spec)
        if spec["client"].get("kind") == "curator":
            return
        rebuilt = _jsonable(client_section(mech))
    except LdpvizInputError as err:
        raise LdpvizInputError(f"{source}: its mechanism cannot be rebuilt ({err})") from None
    except (KeyError, TypeError, ValueError) as err:
        raise LdpvizInputError(f"{source}: its mechanism cannot be rebuilt ({type(err).__name__}: {err})") from None
    if canonical_json(rebuilt) != canonical_json(spec["client"]):
        keys = sorted(set(rebuilt) | set(spec["client"]))
        differ = [k for k in keys if canonical_json([rebuilt.get(k)]) != canonical_json([spec["client"].get(k)])]
        raise LdpvizInputError(f"{source}: its client section differs from the sampler its mechanism, epsilon and "
                               f"grid give (in {', '.join(differ[:5])}); phones would not run the channel that was "
                               "signed. Make a new spec with 'ldpviz deploy'")


def load_spec(path: str | Path) -> dict:
    """Read and verify ``collection.json``."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise LdpvizInputError(f"spec file {str(path)!r} not found") from None
    except (OSError, UnicodeDecodeError) as err:
        raise LdpvizInputError(f"cannot read the spec {str(path)!r}: {err}") from None
    try:
        spec = json.loads(text)
    except json.JSONDecodeError as err:
        raise LdpvizInputError(f"the spec {str(path)!r} is not valid JSON ({err.msg} at line {err.lineno})") from None
    return verify_spec(spec, f"the spec {str(path)!r}")


# ---------------------------------------------------------------------------
# Integer weights
# ---------------------------------------------------------------------------

def scale_for(total: float) -> int:
    """The largest power of two S with total x S <= 2^52 (at least 1)."""
    require(total > 0 and math.isfinite(total), f"a sampler's total weight must be positive, got {total}")
    return 1 << max(0, int(math.floor(math.log2(WEIGHT_LIMIT / total))))


def floor_weight(w: float, scale: int) -> int:
    return int(math.floor(float(w) * scale))


# ---------------------------------------------------------------------------
# Region and value maps
# ---------------------------------------------------------------------------

def region_section(region: Region, side: int) -> dict:
    """The region as phones need it: centre, side, projection and its constants, the typed box, the grid."""
    aeqd = region.projection == AEQD
    return {
        "center_lon": float(region.center_lon), "center_lat": float(region.center_lat),
        "side_m": float(region.side_m), "bounds": list(region.bounds) if region.bounds is not None else None,
        "name": region.name, "data_use": region.data_use, "epsilon_spent": float(region.epsilon_spent),
        "origin": region_choice.origin(region),     # where it came from (typed, preset, private tiles; issue 36)
        "projection": "aeqd" if aeqd else "local",
        "projection_text": region.projection,
        "ellipsoid": {"a": WGS84_A, "f": WGS84_F} if aeqd else None,
        "earth_radius_m": None if aeqd else EARTH_RADIUS_M,
        "grid_side": int(side), "cell_m": float(region.side_m / side),
    }


def region_from_spec(spec: dict) -> Region:
    r = spec["region"]
    bounds = tuple(r["bounds"]) if r.get("bounds") is not None else None
    return Region(r["center_lon"], r["center_lat"], r["side_m"], r.get("name", ""), r.get("data_use", ""),
                  r.get("epsilon_spent", 0.0), bounds)


def grid_from_spec(spec: dict) -> Grid:
    return Grid(region_from_spec(spec), int(spec["region"]["grid_side"]))


def _cells_map() -> dict:
    return {"map": "cell"}


def _domain_map(grid: Grid) -> dict:
    from ldpviz.mechanisms.srr.staircase import grid_domain
    dom = grid_domain(grid)
    return {"map": "domain", "block": int(dom.block), "domain_cells": [int(c) for c in dom.cells]}


# ---------------------------------------------------------------------------
# Samplers, one per family (each mirrors the mechanism's own client half)
# ---------------------------------------------------------------------------

def _grr(D: int, eps: float) -> dict:
    """GRR over D values (L-SRR eq. 1): own value weight floor(e^eps S), every other S."""
    if D == 1:
        return {"kind": "grr", "D": 1, "keep": 1, "other": 1, "epsilon_deployed": 0.0}
    S = scale_for(math.exp(eps) + D - 1)
    W = max(S, floor_weight(math.exp(eps), S))
    return {"kind": "grr", "D": int(D), "keep": W, "other": S, "epsilon_deployed": math.log(W / S)}


def _olh(D: int, eps: float, g: int) -> dict:
    """OLH (USENIX'17 Sec. 4.4; grid paper eq. 2): a hash from the Carter-Wegman family, GRR on g buckets."""
    from ldpviz.mechanisms.fo.oracles import OLH_PRIME
    bucket = _grr(g, eps)
    return {"kind": "olh", "D": int(D), "g": int(g), "prime": OLH_PRIME, "keep": bucket["keep"],
            "other": bucket["other"], "epsilon_deployed": bucket["epsilon_deployed"]}


def _oue(D: int, eps: float) -> dict:
    """OUE (USENIX'17 Sec. 4.3): own bit 1 w.p. 1/2 (one random bit), others 1 w.p. q = 1/(e^eps + 1), drawn as
    u < Q for a 53-bit uniform u; Q = ceil(q 2^53) rounds q up, which can only lower (1 - q)/q."""
    q = 1.0 / (math.exp(eps) + 1.0)
    Q = int(math.ceil(q * (1 << 53)))
    qd = Q / float(1 << 53)
    return {"kind": "oue", "D": int(D), "q_numerator": Q, "q_bits": 53,
            "epsilon_deployed": math.log((1.0 - qd) / qd)}


def _hr(D: int, eps: float, variant: str) -> dict:
    """Hadamard response (Acharya et al. Sec. 4-5): weight e^eps on C_x, 1 elsewhere, K = B b outputs."""
    from ldpviz.mechanisms.fo.hadamard import hadamard_code
    code = hadamard_code(D, eps, variant)
    s, K = code.set_size, code.outputs
    S = scale_for(s * math.exp(eps) + K - s)
    E = max(S, floor_weight(math.exp(eps), S))
    return {"kind": "hr", "D": int(D), "blocks": int(code.blocks), "block_size": int(code.block_size),
            "in_set": E, "other": S, "epsilon_deployed": math.log(E / S)}


def _disk(mech: Mechanism) -> dict:
    """DAM / DAM-NS / HUEM (DAM paper Def. 8, eq. 13-14, Alg. 2): uniform over the output domain with weight S,
    plus the bump floor((W - 1) S) at each offset of the disk around the true cell."""
    chan = mech.chan
    bump = chan.bump.ravel()
    M = int(chan.mask.sum())
    S = scale_for(M + float(bump.sum()))
    nz = np.flatnonzero(bump > 0)
    pairs = [[int(k), floor_weight(bump[k], S)] for k in nz]
    pairs = [p for p in pairs if p[1] > 0]
    top = max([p[1] for p in pairs], default=0)
    return {"kind": "disk", "box_side": int(chan.out_side), "radius": int(chan.radius),
            "mask": [int(c) for c in chan.mask_cells], "base": S, "bump": pairs,
            "epsilon_deployed": math.log((S + top) / S)}


def _planar_laplace(mech: Mechanism) -> dict:
    """Planar Laplace (Andres et al. CCS'13 Sec. 4.1) in cell units: angle uniform, radius Gamma(2, 1/eps_cell)
    (the density eps^2 r e^(-eps r) of their C_eps, drawn as -(ln U1 + ln U2)/eps), the cell of the moved point
    clamped to the grid (their Sec. 4.2)."""
    return {"kind": "planar-laplace", "eps_cell": float(mech.epsilon_per_cell), "float_bits": 53,
            "epsilon_deployed": float(mech.epsilon)}


def _staircase(mech: Mechanism) -> dict:
    """SRR (L-SRR Alg. 1): group j of the true location with weight |G_j| L_j, then a member uniformly; the
    levels L_j = floor(S alpha_j / alpha_m) are the same for every location (alpha_j / alpha_m depends on c, m)."""
    from ldpviz.mechanisms.srr.staircase import grid_domain
    plan = mech.plan(grid_domain(mech.grid))
    m = plan.m
    ratios = plan.alpha[0, :m] / plan.alpha[0, m - 1]
    D = plan.domain.size
    S = scale_for(D * float(ratios.max()))
    levels = [floor_weight(r, S) for r in ratios]
    levels[m - 1] = S
    dens = [sum(int(sz) * L for sz, L in zip(row, levels)) for row in plan.group_sizes[:, :m]]
    eps = math.log(max(levels) / min(levels)) + math.log(max(dens) / min(dens))      # Theorem 3.3's ratio
    return {"kind": "staircase", "m": int(m), "levels": levels,
            "lo": plan.lo.astype(int).tolist(), "hi": plan.hi.astype(int).tolist(),
            "epsilon_deployed": eps}


def _square_wave(mech: Mechanism) -> dict:
    """MDSW (Li et al. SIGMOD'20 Alg. 1 per coordinate; Yang et al. VLDB'20): within b of the exact coordinate
    with probability 2 b p (uniform there), else uniform on the rest of [-b, 1 + b]; the report is the bucket of
    the noisy value among B equal buckets (53-bit uniforms in double precision). 'users': one coordinate chosen by
    a random bit, full epsilon; 'budget': both coordinates at epsilon / 2."""
    sw = mech.sw
    return {"kind": "square-wave", "split": mech.split, "b": float(sw.b), "near_probability": float(2 * sw.b * sw.p),
            "out_buckets": int(sw.out_buckets), "float_bits": 53, "epsilon_deployed": float(mech.epsilon)}


def _olh_h(mech: Mechanism) -> dict:
    """OLH-H (L-SRR Sec. 6.2): a level of the quadkey hierarchy uniformly, then OLH on the level's node."""
    from ldpviz.mechanisms.fo.oracles import olh_buckets
    from ldpviz.mechanisms.srr.olh_h import hierarchy
    from ldpviz.mechanisms.srr.staircase import grid_domain
    levels = hierarchy(grid_domain(mech.grid))
    g = olh_buckets(mech.epsilon)
    bucket = _grr(g, mech.epsilon)
    from ldpviz.mechanisms.fo.oracles import OLH_PRIME
    return {"kind": "olh-h", "g": g, "prime": OLH_PRIME, "keep": bucket["keep"], "other": bucket["other"],
            "epsilon_deployed": bucket["epsilon_deployed"],
            "level_sizes": [int(len(nodes)) for nodes, _ in levels],
            "level_index": [index.astype(int).tolist() for _, index in levels]}


def _subset(mech: Mechanism) -> dict:
    """SEM-Geo-I (Wang et al. INFOCOM'17, as ldpviz.mechanisms.dam.sem_geoi samples it): the cells ordered by
    distance from the snapped cell (squared distance, ties by index); the nearest member's rank j with weight
    C(n - 1 - j, k - 1) x decay[s_j], s_j its squared distance in cells, decay[s] = floor(e^(eps' (r_max - sqrt s) / 2)
    2^52) (50-digit decimal arithmetic, every weight >= 2^52, so each is within 2^-52 of e^(-eps' r / 2) up to one
    common factor); then the other k - 1 members a uniform subset of the later ranks. Weights are whole numbers of
    any size (BigInt in client.js)."""
    import decimal
    d, k, eps = mech.grid.side, int(mech.k), float(mech.eps_prime)
    smax = 2 * (d - 1) ** 2
    ctx = decimal.Context(prec=60)
    rmax = ctx.sqrt(decimal.Decimal(smax))
    half = ctx.divide(decimal.Decimal(repr(eps)), 2)
    scale = decimal.Decimal(1 << 52)
    decay = [str(int(ctx.multiply(ctx.exp(ctx.multiply(half, ctx.subtract(rmax, ctx.sqrt(decimal.Decimal(t))))),
                                  scale))) for t in range(smax + 1)]
    per_km = eps * 1000.0 / mech.grid.cell_m
    return {"kind": "subset", "k": k, "n": d * d, "decay": decay, "eps_prime_per_cell": eps,
            "slack_m": float(mech.geo_slack_m()), "epsilon_deployed": per_km}


def client_section(mech: Mechanism) -> dict:
    """The exact sampler and value map phones follow for ``mech`` (see the module docstring)."""
    name, eps, d = mech.name, mech.epsilon, mech.grid.side
    if mech.privacy_model == CENTRAL_DP:
        return {"map": "cell", "kind": "curator", "D": d * d, "epsilon_deployed": float(eps),
                "note": "central DP: phones send their true cell to the trusted curator, who adds the noise once"}
    if name == "grr":
        return {**_cells_map(), **_grr(d * d, eps)}
    if name == "olh":
        return {**_cells_map(), **_olh(d * d, eps, mech.g)}
    if name == "oue":
        return {**_cells_map(), **_oue(d * d, eps)}
    if name == "hr":
        return {**_cells_map(), **_hr(d * d, eps, mech.variant)}
    if name in ("dam", "dam-ns", "huem"):
        return {**_cells_map(), **_disk(mech)}
    if name == "planar-laplace":
        return {"map": "position", **_planar_laplace(mech)}
    if name == "srr":
        return {**_domain_map(mech.grid), **_staircase(mech)}
    if name == "sem-geoi":
        return {**_cells_map(), **_subset(mech)}
    if name == "mdsw":
        return {"map": "position", **_square_wave(mech)}
    if name == "olh-h":
        return {**_domain_map(mech.grid), **_olh_h(mech)}
    if name in ("grr-tiles", "hr-tiles"):
        dm = _domain_map(mech.grid)
        size = len(dm["domain_cells"])
        inner = _grr(size, eps) if name == "grr-tiles" else _hr(size, eps, mech.variant)
        return {**dm, **inner}
    if name == "ug":
        N = int(mech.cells_per_side)
        D = N * N
        inner = {"grr": lambda: _grr(D, eps), "olh": lambda: _olh(D, eps, _olh_g(eps)),
                 "oue": lambda: _oue(D, eps), "hr": lambda: _hr(D, eps, "high-privacy")}[mech.oracle]()
        return {"map": "uniform-grid", "side": N, **inner}
    raise LdpvizInputError(f"no client for mechanism {name!r}")


def _olh_g(eps: float) -> int:
    from ldpviz.mechanisms.fo.oracles import olh_buckets
    return olh_buckets(eps)


REPORT_FIELDS = {
    "grr": ["y"], "hr": ["y"], "disk": ["y"], "planar-laplace": ["y"], "staircase": ["y"],
    "olh": ["seed", "bucket"], "oue": ["bits"], "curator": ["y"], "square-wave": ["y"],
    "olh-h": ["level", "seed", "bucket"], "subset": ["cells"],
}

REPORT_TEXT = {
    "y": "the reported output, a whole number (a cell, a domain position or a code word; see client.kind)",
    "seed": "OLH: the hash function's index in the family, a decimal string (a = seed // prime + 1, "
            "b = seed mod prime)",
    "bucket": "OLH: the perturbed hash bucket, a whole number in [0, g)",
    "cells": "SEM-Geo-I: the k reported cells, distinct, increasing (a JSON list; in CSV one field, space-separated)",
    "level": "OLH-H: the level of the hierarchy reported on, a whole number (0 = top)",
    "bits": "OUE: the D bits, packed 8 per byte most significant first (numpy.packbits), as lowercase hex",
}


def supported() -> list[str]:
    """Registry names the bundle ships a client for."""
    return ["grr", "olh", "oue", "hr", "dam", "dam-ns", "huem", "planar-laplace", "srr", "grr-tiles",
            "hr-tiles", "ug", "mdsw", "olh-h", "sem-geoi"]


def check_deployable(mech: Mechanism, curator: bool = False) -> None:
    """Refuse, with the reason, what a phone cannot run or what would depend on the users' data. ``curator``: a
    central-DP mechanism's trusted-curator spec is wanted (phones then send true cells to the curator)."""
    name = mech.name
    region = mech.grid.region
    if region.data_use and region.epsilon_spent <= 0:
        raise LdpvizInputError(f"the region ({region.name or 'unnamed'}) was chosen from the users' data without "
                               f"paying for it ({region.data_use}); a spec sent to every phone must not depend on "
                               "the users' data. Type the region's bounds, use a preset or a public tile, or a "
                               "private-tile region (its own collection)")
    if curator and mech.privacy_model == CENTRAL_DP:
        return
    if mech.privacy_model == NO_PRIVACY:
        raise LdpvizInputError(f"'{name}' sends every true cell: there is no privacy to deploy; choose a "
                               "private mechanism")
    if mech.privacy_model == CENTRAL_DP:
        raise LdpvizInputError(f"'{name}' is central DP: phones send their true cells to a trusted curator, so "
                               "there is no phone-side client; 'ldpviz deploy' writes the curator's side only "
                               "(--curator)")
    if name in NOT_YET:
        raise LdpvizInputError(f"'{name}' has no client in this bundle yet: {NOT_YET[name]}. Clients exist for: "
                               f"{', '.join(supported())}")
    if name == "sem-geoi" and getattr(mech, "calibration", "raw") != "raw":
        # Refused, not deployed at its epsilon' (issue 37.8): the slider of this mode is DAM's LDP level and the
        # epsilon' it gives is not monotone in it (2.01 -> 3.82 -> 8.13 per km for 4 -> 2 -> 1 on one grid), so a
        # signed "epsilon = 2" would not say whether it is more or less private than "epsilon = 4". The guarantee a
        # phone runs is the epsilon' per km: deploy that number as the slider itself (calibration=raw).
        per_km = mech.epsilon_per_cell * GEO_I_UNIT_M / mech.grid.cell_m
        raise LdpvizInputError(
            f"'sem-geoi' with calibration={mech.calibration} is a comparison with DAM, not a setting to deploy: its "
            f"slider (DAM's epsilon = {mech.epsilon:g}) is not monotone in the guarantee it gives (here epsilon' = "
            f"{per_km:.4g} per km), so a smaller slider can mean less privacy. Deploy the guarantee itself: "
            f"--mechanism sem-geoi --epsilon {per_km:.4g} (calibration=raw, the default: the slider is epsilon' "
            "per km)")
    if not mech.has_client or name not in supported():
        raise LdpvizInputError(f"'{name}' has no single phone-side report (multi-round, or its domain is built "
                               f"from the users' data); clients exist for: {', '.join(supported())}")


def deployable_mechanism(name: str, grid: Grid, epsilon: float, params: dict | None = None,
                         expected_users: int | None = None) -> Mechanism:
    """The mechanism as it will be deployed: per-user reports (``path='per-user'``), UG's N fixed."""
    params = dict(params or {})
    cls = mechanisms.get(name)
    if name in NOT_YET:
        raise LdpvizInputError(f"'{name}' has no client in this bundle yet: {NOT_YET[name]}. Clients exist for: "
                               f"{', '.join(supported())}")
    if any(p.name == "path" for p in cls.params):
        params["path"] = "per-user"
    if name == "ug" and params.get("cells_per_side") is None:
        require(expected_users is not None and expected_users >= 1,
                "UG fixes its N x N grid from the number of users: give the expected number of reports "
                "(--expected-users) or cells_per_side")
        probe = mechanisms.create(name, grid, epsilon, **params)
        params["cells_per_side"] = probe.side_for(int(expected_users))
    return mechanisms.create(name, grid, epsilon, **params)


#: What the deployed ledger assumes unless told otherwise (the README's rule for the app).
ONE_REPORT_BASIS = "each phone calls the client once per collection and sends that one report"


def collection_ledger_for(mech: Mechanism, *, reports_per_person: int = 1, repeats: int = 1,
                          repeats_basis: str = "") -> Any:
    """The accountant's ledger of the deployed collection: the region's epsilon0 (if it was paid for) plus the
    phone's reports, per person (issue 26's :func:`~ldpviz.mechanisms.accounting.collection_ledger`)."""
    from ldpviz.mechanisms import accounting
    from ldpviz.mechanisms.base import UNIT_PERSON
    require(isinstance(reports_per_person, int) and reports_per_person >= 1,
            f"reports per person must be a whole number >= 1, got {reports_per_person!r}")
    basis = ONE_REPORT_BASIS if reports_per_person == 1 else \
        f"each phone calls the client {reports_per_person} times per collection and sends every report"
    return accounting.collection_ledger(mech, mech.grid.region, reports_worst=reports_per_person,
                                        reports_median=reports_per_person, reports_basis=basis,
                                        region_basis="each person reports one map tile once",
                                        repeats=int(repeats), repeats_basis=repeats_basis, unit=UNIT_PERSON)


def ledger_dict(mech: Mechanism, ledger: Any = None) -> dict:
    """The ledger's JSON form (``Ledger.to_dict``: lines, totals, sentence, warning); built by
    :func:`collection_ledger_for` when not given."""
    return _jsonable((ledger if ledger is not None else collection_ledger_for(mech)).to_dict())


def build_spec(mech: Mechanism, ledger: Any = None, curator: bool = False) -> dict:
    """The complete, digested ``collection.json`` for a deployable mechanism (:func:`check_deployable`);
    ``curator=True`` for a central-DP mechanism's trusted-curator side."""
    check_deployable(mech, curator)
    client = client_section(mech)
    stated = mech.claimed_epsilon() if mech.privacy_model != GEO_I else \
        mech.epsilon_per_cell * 1000.0 / mech.grid.cell_m
    require(client["epsilon_deployed"] <= stated * (1 + 1e-9) + 1e-12,
            f"the deployed sampler's epsilon {client['epsilon_deployed']:.6g} exceeds the stated {stated:g}")
    params = {k: (v if not isinstance(v, (np.generic,)) else v.item()) for k, v in mech.param_values.items()}
    fields = REPORT_FIELDS[client["kind"]]
    spec = {
        "schema": SCHEMA,
        "ldpviz_version": ldpviz.__version__,
        "mechanism": {"name": mech.name, "label": mech.label, "privacy_model": mech.privacy_model,
                      "reference": mech.reference, "params": params,
                      "effective_params": _jsonable(mech.effective_params()),
                      "guarantee": mech.stated_guarantee(), "unit": mech.privacy_unit},
        "epsilon": float(mech.epsilon),
        "epsilon_unit": _epsilon_unit(mech),
        "ledger": ledger_dict(mech, ledger),
        "region": region_section(mech.grid.region, mech.grid.side),
        "client": client,
        "report": {"fields": ["spec", *fields],
                   "text": {"spec": "this spec's digest, copied unchanged", **{f: REPORT_TEXT[f] for f in fields}},
                   "formats": ["JSON lines: one object per line", "CSV with a header naming the fields"],
                   "outside_region": "a phone whose location is outside the region sends nothing"},
    }
    spec["digest"] = spec_digest(spec)
    return spec


def _epsilon_unit(mech: Mechanism) -> str:
    """What the spec's ``epsilon`` (the number the mechanism was built with) measures."""
    if mech.privacy_model != GEO_I:
        return "per report"
    per_km = mech.epsilon_per_cell * 1000.0 / mech.grid.cell_m
    if abs(per_km - mech.epsilon) <= 1e-12 * mech.epsilon:
        return "per km"
    return (f"the LDP epsilon the mechanism was calibrated to; its own guarantee is Geo-I at {per_km:.6g} per km "
            "(mechanism.guarantee)")


def _jsonable(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def mechanism_from_spec(spec: dict) -> Mechanism:
    """The server's mechanism, rebuilt from a verified spec (the same class, grid, epsilon and parameters)."""
    m = spec["mechanism"]
    return mechanisms.create(m["name"], grid_from_spec(spec), spec["epsilon"], **m["params"])


def write_spec(spec: dict, path: str | Path) -> Path:
    path = Path(path)
    path.write_text(json.dumps(spec, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return path
