"""Same channel in every language (issue 29): client.js under node and the Python client, run on fixed true
positions, agree with the Python mechanism's channel.

For every client mechanism at two epsilons and two grids, 50,000 reports from one fixed position (near the
south-west corner or the middle; each language takes the one the other does not) go through two
G-tests at alpha = 1e-3: the two-bin test (the likeliest outputs, half the mass, against the rest), whose power
against a 1% shift (1% of the report mass moved off the likeliest outputs) is checked to be >= 0.8 before it
runs, and the full G-test over every output (bins with < 5 expected reports pooled). OLH is tested on the pair
(hash of the true value under the reported seed, reported bucket), OUE bit by bit. Seeds are fixed (a seeded
xoshiro128** feeds client.js's random words; random.Random feeds the Python client's bits); one small run per
language uses the default cryptographic source.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from ldpviz.geo.domain import Grid, Region
from ldpviz.deploy import spec as specs
from ldpviz.mechanisms.fo.oracles import (_bucket_starts, grr_channel, olh_hash, olh_probabilities, OLH_PRIME,
                                          oue_probabilities)

from tests.deploy.deploy_helpers import ALPHA, POWER, SHIFT, check_channel, node_reports, python_reports

REGION = Region.from_bbox(-93.33, 44.89, -93.19, 45.05, name="test box")
GRIDS = (8, 12)
LDP_EPS = (1.0, 3.0)
GEO_EPS = (0.5, 2.0)   # per km: 1.1 to 3 per cell side on these grids
N = 50_000
CASES = [("grr", {}), ("olh", {}), ("oue", {}), ("hr", {}), ("dam", {}), ("dam-ns", {}), ("huem", {}),
         ("planar-laplace", {}), ("srr", {}), ("grr-tiles", {}), ("hr-tiles", {}),
         ("ug", {"cells_per_side": 4, "oracle": "grr"}), ("ug", {"cells_per_side": 4}),
         ("mdsw", {}), ("mdsw", {"split": "budget"}), ("olh-h", {}), ("sem-geoi", {})]


def _positions(d: int) -> list[list[float]]:
    """A position in the cell next to the south-west corner and one near the middle (unit coordinates)."""
    return [[(0 + 0.37) / d, (1 + 0.61) / d], [(d // 2 - 1 + 0.52) / d, (d // 2 + 0.23) / d]]


def _mech(name: str, params: dict, eps_i: int, d: int):
    eps = (GEO_EPS if name == "planar-laplace" else LDP_EPS)[eps_i]
    return specs.deployable_mechanism(name, Grid(REGION, d), eps, params)


def check_reports(mech, spec: dict, uv: list[float], reports: list[dict], label: str, alpha: float = ALPHA) -> None:
    """Reports from one true position follow the Python channel of ``mech``."""
    c = spec["client"]
    kind, d = c["kind"], mech.grid.side
    assert all(r is not None and r["spec"] == spec["digest"] for r in reports)
    assert all(set(r) == set(spec["report"]["fields"]) for r in reports), "a report with fields the spec lacks"
    value = int(__import__("ldpviz.deploy.client", fromlist=["Client"]).Client(spec).value_of(*uv))
    cell = min(int(uv[1] * d), d - 1) * d + min(int(uv[0] * d), d - 1)
    if kind == "olh-h":
        g, L = int(c["g"]), len(c["level_sizes"])
        level = np.array([r["level"] for r in reports])
        nodes = np.array(c["level_index"])[level, value].astype(np.uint64)
        seeds = np.array([int(r["seed"]) for r in reports], dtype=np.uint64)
        ids = (level * g + olh_hash(seeds, nodes, g)) * g + np.array([r["bucket"] for r in reports])
        ph = np.diff(_bucket_starts(g).astype(float)) / OLH_PRIME
        p, q = olh_probabilities(mech.epsilon, g)
        joint = ph[:, None] * np.where(np.eye(g, dtype=bool), p, q)
        return check_channel(ids, np.tile(joint.ravel() / L, L), label, alpha)
    if kind == "subset":
        return _check_subsets(mech, value, reports, label, alpha)
    if kind == "square-wave":
        sw, B = mech.sw, int(c["out_buckets"])
        edges = np.linspace(-sw.b, 1 + sw.b, B + 1)

        def probs(val: float) -> np.ndarray:
            overlap = np.clip(np.minimum(edges[1:], val + sw.b) - np.maximum(edges[:-1], val - sw.b), 0, None)
            return sw.q * np.diff(edges) + (sw.p - sw.q) * overlap

        y = np.array([r["y"] for r in reports], dtype=np.int64)
        p = np.concatenate([probs(uv[0]), probs(uv[1])]) / 2 if c["split"] == "users" else \
            np.outer(probs(uv[0]), probs(uv[1])).ravel()
        return check_channel(y, p / p.sum(), label, alpha)
    if kind == "olh":
        g = int(c["g"])
        seeds = np.array([int(r["seed"]) for r in reports], dtype=np.uint64)
        h = olh_hash(seeds, np.uint64(value), g)
        ids = h * g + np.array([r["bucket"] for r in reports])
        starts = _bucket_starts(g).astype(float)
        ph = np.diff(starts) / OLH_PRIME
        p, q = olh_probabilities(mech.epsilon, g)
        joint = ph[:, None] * np.where(np.eye(g, dtype=bool), p, q)
        return check_channel(ids, joint.ravel(), label, alpha)
    if kind == "oue":
        D = int(c["D"])
        bits = np.unpackbits(np.frombuffer(bytes.fromhex("".join(r["bits"] for r in reports)), dtype=np.uint8)
                             .reshape(len(reports), -1), axis=1, count=D).astype(np.int64)
        p, q = oue_probabilities(mech.epsilon)
        n = len(reports)
        probs = np.full(D, q)
        probs[value] = p
        counts = bits.sum(axis=0)
        lam = n * SHIFT ** 2 / (p * (1 - p))          # a 1% shift: the own bit's probability moved by 0.01
        assert stats.ncx2.sf(stats.chi2.isf(ALPHA, 1), 1, lam) >= POWER
        others = counts.sum() - counts[value]
        z_others = (others - n * (D - 1) * q) / np.sqrt(n * (D - 1) * q * (1 - q))
        z_own = (counts[value] - n * p) / np.sqrt(n * p * (1 - p))
        assert stats.chi2.sf(z_others ** 2,
                             1) > ALPHA, f"{label}: other bits' share {others / n / (D - 1):.5f} vs {q:.5f}"
        assert stats.chi2.sf(z_own ** 2, 1) > ALPHA, f"{label}: own bit share {counts[value] / n:.4f}"
        chi = np.sum((counts - n * probs) ** 2 / (n * probs * (1 - probs)))
        assert stats.chi2.sf(chi, D) > ALPHA, f"{label}: bit counts chi-square {chi:.1f} over {D} bits"
        return None
    y = np.array([r["y"] for r in reports], dtype=np.int64)
    if mech.name == "planar-laplace":
        p = mech.position_channel(np.array([uv]), nodes=32)[0]
        return check_channel(y, p / p.sum(), label, alpha)
    if kind == "disk":
        out_cells = mech.output_cells()
        ids = np.searchsorted(out_cells, y)
        assert np.all(out_cells[np.minimum(ids, len(out_cells) - 1)] == y), f"{label}: a report outside the domain"
        return check_channel(ids, mech.channel()[:, cell], label, alpha)
    if mech.name == "ug":
        return check_channel(y, grr_channel(int(c["side"]) ** 2, mech.epsilon)[:, value], label, alpha)
    if mech.name in ("srr", "grr-tiles"):
        y = np.asarray(c["domain_cells"])[y]
    return check_channel(y, mech.channel()[:, cell], label, alpha)


def _check_subsets(mech, x: int, reports: list[dict], label: str, alpha: float) -> None:
    """SEM-Geo-I: on small grids the whole channel over k-subsets; otherwise the nearest member's rank (its law
    pi[x, j]) and every cell's membership frequency (Binomial(n, P(v in S | x)), Bonferroni over the cells)."""
    import itertools
    import math as m
    tables, n, k = mech.tables, mech.grid.n_cells, mech.k
    subsets = [tuple(r["cells"]) for r in reports]
    assert all(len(set(t)) == k and list(t) == sorted(t) for t in subsets), f"{label}: not k distinct sorted cells"
    if m.comb(n, k) <= 50_000:
        index = {t: i for i, t in enumerate(itertools.combinations(range(n), k))}
        return check_channel(np.array([index[t] for t in subsets]), mech.channel()[:, x], label, alpha)
    rank = np.empty(n, dtype=np.int64)
    rank[tables.order[x]] = np.arange(n)
    nearest = np.array([rank[list(t)].min() for t in subsets])
    check_channel(nearest, tables.nearest[x] / tables.nearest[x].sum(), label + " (nearest rank)", alpha)
    counts = np.bincount(np.concatenate([list(t) for t in subsets]), minlength=n)
    p = tables.member[:, x]
    N = len(subsets)
    z = (counts - N * p) / np.sqrt(np.maximum(N * p * (1 - p), 1e-300))
    assert stats.chi2.sf(np.max(z ** 2),
                         1) * n > alpha, f"{label}: a cell's membership is off (max |z| {np.abs(z).max():.2f})"


def test_sem_geoi_whole_channel_on_a_small_grid(tmp_path):
    """SEM-Geo-I on a 4 x 4 grid: the reported k-subsets follow the Python channel over all C(16, k) subsets."""
    mech = _mech("sem-geoi", {}, 1, 4)
    spec = specs.build_spec(mech)
    uv = _positions(4)[0]
    # seed 6: under the slider-is-epsilon'-per-km default (ledger-edges) seed 5 drew p = 0.00066 (a 1-in-1,500
    # event under a true channel; 8x the sample at seeds 5, 11 and 12 passes even at alpha = 0.05).
    check_reports(mech, spec, uv, python_reports(spec, [uv], N, seed=6), "client.py sem-geoi d=4")
    from tests.deploy.deploy_helpers import NODE
    if NODE is not None:
        check_reports(mech, spec, uv, node_reports(spec, tmp_path, [uv], N, seed=5), "client.js sem-geoi d=4")


IDS = [f"{n}{'-' + '-'.join(f'{k}={v}' for k, v in p.items()) if p else ''}" for n, p in CASES]


@pytest.mark.slow
@pytest.mark.parametrize("d", GRIDS)
@pytest.mark.parametrize("eps_i", (0, 1))
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_client_js_matches_the_python_channel(case, eps_i, d, tmp_path):
    name, params = case
    mech = _mech(name, params, eps_i, d)
    spec = specs.build_spec(mech)
    uv = _positions(d)[(eps_i + d + 1) % 2]         # the position the Python client's case does not take
    reports = node_reports(spec, tmp_path, [uv], N, seed=1000 * eps_i + d)
    check_reports(mech, spec, uv, reports, f"client.js {name} eps={mech.epsilon} d={d} {uv}")


@pytest.mark.slow
@pytest.mark.parametrize("d", GRIDS)
@pytest.mark.parametrize("eps_i", (0, 1))
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_python_client_matches_the_python_channel(case, eps_i, d):
    name, params = case
    mech = _mech(name, params, eps_i, d)
    spec = specs.build_spec(mech)
    uv = _positions(d)[(eps_i + d) % 2]
    reports = python_reports(spec, [uv], N, seed=7 + 1000 * eps_i + d)
    check_reports(mech, spec, uv, reports, f"client.py {name} eps={mech.epsilon} d={d} {uv}")


@pytest.mark.slow
@pytest.mark.parametrize("case", [("grr", {}), ("dam", {}), ("olh", {})], ids=["grr", "dam", "olh"])
def test_default_cryptographic_source_gives_the_channel_too(case, tmp_path):
    """Both clients with their default source (crypto.getRandomValues, secrets): 50,000 reports pass the same
    tests at alpha = 1e-6 (not seeded, so a stricter level keeps a correct client from failing by chance; the
    seeded tests above carry the power against a 1% shift)."""
    name, params = case
    mech = _mech(name, params, 1, 8)
    spec = specs.build_spec(mech)
    uv = _positions(8)[1]
    from ldpviz.deploy.client import Client
    client = Client(spec)
    check_channel_from = [client.report_unit(*uv) for _ in range(N)]
    check_reports(mech, spec, uv, check_channel_from, f"client.py (secrets) {name}", alpha=1e-6)
    from tests.deploy.deploy_helpers import NODE
    if NODE is not None:
        check_reports(mech, spec, uv, node_reports(spec, tmp_path, [uv], N, seed=None), f"client.js (crypto) {name}",
                      alpha=1e-6)


def test_the_channel_check_can_fail():
    """The checks have the power they claim: with the likeliest outputs' mass moved by 1% (the alternative the
    power is computed for), at least 14 of 20 seeded runs of 50,000 reports are rejected; with the true channel at
    most 1 of 20 is."""
    from tests.deploy.deploy_helpers import focused_split
    mech = _mech("grr", {}, 1, 8)
    p = mech.channel()[:, 9]
    high = focused_split(p)
    shifted = p.copy()
    shifted[high] -= SHIFT * p[high] / p[high].sum()
    shifted[~high] += SHIFT * p[~high] / p[~high].sum()
    rng = np.random.default_rng(3)

    def rejected(q: np.ndarray) -> bool:
        try:
            check_channel(rng.choice(p.size, size=N, p=q), p, "draw")
        except AssertionError:
            return True
        return False

    assert sum(rejected(shifted) for _ in range(20)) >= 14
    assert sum(rejected(p) for _ in range(20)) <= 1
