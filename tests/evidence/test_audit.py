"""Black-box privacy audit (ldpviz.evidence.audit): sound for every registered mechanism, catches broken ones.

The registry tests are generated from ``mechanisms.available()``, so every
mechanism family that lands is audited without touching this file.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pytest

from ldpviz.evidence import audit
from ldpviz import mechanisms
from ldpviz.geo.domain import Binned, Grid, Region
from ldpviz.errors import LdpvizInputError
from ldpviz.mechanisms.base import CENTRAL_DP, GEO_I, LDP, NO_PRIVACY, Estimate, Mechanism
from ldpviz.mechanisms.fo.oracles import GRR
from ldpviz.mechanisms.dam.planar_laplace import PlanarLaplace
from ldpviz.mechanisms.dam.sem_geoi import SEMGeoI

NAMES = mechanisms.available()


def _audit_or_skip(name: str, side: int, epsilon: float, n_samples: int) -> audit.AuditResult:
    try:
        return audit.audit_mechanism(name, side, epsilon, n_samples=n_samples, seed=11, confidence=0.99)
    except LdpvizInputError as err:
        pytest.skip(f"{name} refuses d={side}, epsilon={epsilon}: {err}")


def _check_registered(result: audit.AuditResult, name: str) -> None:
    cls = mechanisms.get(name)
    if not cls.has_client:
        assert result.status == audit.NOT_AUDITABLE and result.notes, result
        return
    if cls.privacy_model == NO_PRIVACY:
        assert result.status == audit.NO_CLAIM
        return
    assert cls.privacy_model in (LDP, GEO_I)
    assert result.pairs and all(math.isfinite(p.lower_bound) and p.lower_bound >= 0 for p in result.pairs)
    assert result.lower_bound <= result.claimed, result.to_frame().to_string()
    assert result.passed and result.status == audit.PASSED


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("side,epsilon", [(4, 0.5), (4, 2.0)])
def test_registered_mechanism_bound_within_claim(name: str, side: int, epsilon: float) -> None:
    """Every registered client-side mechanism: audited lower bound <= its epsilon at 99% confidence."""
    _check_registered(_audit_or_skip(name, side, epsilon, 20_000), name)


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("side,epsilon", [(2, 1.0), (8, 1.0), (8, 5.0)])
def test_registered_mechanism_bound_within_claim_more_grids(name: str, side: int, epsilon: float) -> None:
    """As above on more grids and epsilons (including a large epsilon, where ratios are extreme)."""
    _check_registered(_audit_or_skip(name, side, epsilon, 40_000), name)


def test_exact_is_flagged_as_leaking() -> None:
    """The no-privacy baseline: the audit certifies a large loss (it has power), and claims nothing."""
    result = audit.audit_mechanism("exact", 4, 1.0, n_samples=20_000, seed=0)
    assert result.status == audit.NO_CLAIM and result.lower_bound > 5.0


# ---------------------------------------------------------------- broken mechanisms are caught
def _keep_or_other(cells: np.ndarray, n_cells: int, keep_probability: float, rng: np.random.Generator) -> np.ndarray:
    """GRR's sampler with a given keep probability: the true cell, or another one uniformly."""
    keep = rng.random(len(cells)) < keep_probability
    other = rng.integers(0, max(n_cells - 1, 1), size=len(cells))
    other += other >= cells
    return np.where(keep, cells, np.minimum(other, n_cells - 1))


class GRRBinaryFormula(GRR):
    """Broken GRR: uses the binary randomised-response keep probability e^eps / (e^eps + 1) for D cells."""

    name = "grr-broken-binary"

    def setup(self) -> None:
        super().setup()
        e = math.exp(self.epsilon)
        self.p = e / (e + 1)
        self.q = (1 - self.p) / max(self.grid.n_cells - 1, 1)

    def perturb(self, users: Binned, rng: np.random.Generator) -> np.ndarray:
        return _keep_or_other(np.asarray(users.cells), self.grid.n_cells, self.p, rng)


class GRRWrongExponent(GRR):
    """Broken GRR: keep probability computed with e^(1.5 eps) (a subtle 50% budget overrun)."""

    name = "grr-broken-exponent"

    def setup(self) -> None:
        super().setup()
        e = math.exp(1.5 * self.epsilon)
        self.p = e / (e + self.grid.n_cells - 1)
        self.q = 1 / (e + self.grid.n_cells - 1)

    def perturb(self, users: Binned, rng: np.random.Generator) -> np.ndarray:
        return _keep_or_other(np.asarray(users.cells), self.grid.n_cells, self.p, rng)


@pytest.mark.parametrize("broken", [GRRBinaryFormula, GRRWrongExponent])
@pytest.mark.parametrize("side,epsilon", [(2, 1.0), (4, 1.0), (4, 2.0), (8, 0.5)])
def test_broken_grr_is_caught(broken: type[GRR], side: int, epsilon: float) -> None:
    """A GRR with the wrong probabilities exceeds its claimed epsilon, and the same audit says so."""
    result = audit.audit_mechanism(broken, side, epsilon, n_samples=40_000, seed=3, confidence=0.99)
    assert not result.passed and result.status == audit.FAILED
    assert result.lower_bound > epsilon


def test_correct_grr_rarely_fails_across_seeds() -> None:
    """Soundness in practice: a correct GRR passes the audit for every one of 40 seeds (expected < 0.4 fails)."""
    failures = [seed for seed in range(40)
                if not audit.audit_mechanism("grr", 2, 1.0, n_samples=2_000, seed=seed).passed]
    assert failures == []


def test_bound_tightens_with_samples() -> None:
    """More samples, tighter bound: GRR's certified loss approaches epsilon from below."""
    small = audit.audit_mechanism("grr", 4, 1.0, n_samples=2_000, seed=0).lower_bound
    large = audit.audit_mechanism("grr", 4, 1.0, n_samples=200_000, seed=0).lower_bound
    assert small < large <= 1.0 and large > 0.85


# ---------------------------------------------------------------- generic report handling
class ToyOUE(Mechanism):
    """Optimised unary encoding: bit vectors (n, D); bit x is 1 w.p. 1/2, others w.p. 1/(e^eps + 1)."""

    name, label, family, privacy_model, reference = "toy-oue", "toy OUE", "test", LDP, "Wang et al. 2017"
    overrun = 1.0

    def perturb(self, users: Binned, rng: np.random.Generator) -> np.ndarray:
        n, D = len(users.cells), self.grid.n_cells
        q = 1 / (math.exp(self.overrun * self.epsilon) + 1)
        bits = rng.random((n, D)) < q
        bits[np.arange(n), users.cells] = rng.random(n) < 0.5
        return bits


class ToyOUEBroken(ToyOUE):
    name = "toy-oue-broken"
    overrun = 3.0


@dataclass
class SeedBucket:
    seed: np.ndarray
    bucket: np.ndarray


class ToyLocalHash(Mechanism):
    """OLH-like reports as a dataclass of (seed, bucket); g = 2 buckets, hash = parity of (seed + cell)."""

    name, label, family, privacy_model, reference = "toy-olh", "toy OLH", "test", LDP, "Wang et al. 2017"

    def perturb(self, users: Binned, rng: np.random.Generator) -> SeedBucket:
        n = len(users.cells)
        seed = rng.integers(0, 1 << 30, n)
        hashed = (seed + users.cells) % 2
        keep = rng.random(n) < math.exp(self.epsilon) / (math.exp(self.epsilon) + 1)
        return SeedBucket(seed, np.where(keep, hashed, 1 - hashed))


class ToyPlanarLaplace(Mechanism):
    """Planar Laplace on unit positions (Geo-I, eps per km = epsilon_per_cell per cell side): float (n, 2) outputs."""

    name, label, family, privacy_model, reference = "toy-planar", "toy planar Laplace", "test", GEO_I, "Andres 2013"
    overrun = 1.0

    def perturb(self, users: Binned, rng: np.random.Generator) -> np.ndarray:
        n = len(users.cells)
        radius_cells = rng.gamma(2.0, 1.0 / (self.overrun * self.epsilon_per_cell), n)
        angle = rng.uniform(0, 2 * np.pi, n)
        step = np.column_stack([np.cos(angle), np.sin(angle)]) * (radius_cells / self.grid.side)[:, None]
        return users.unit + step


class ToyPlanarLaplaceBroken(ToyPlanarLaplace):
    name = "toy-planar-broken"
    overrun = 4.0


class ToyCentral(Mechanism):
    name, label, family, privacy_model, reference = "toy-central", "toy central", "test", CENTRAL_DP, "-"
    has_client = False

    def run(self, users: Binned, rng: np.random.Generator) -> Estimate:
        return Estimate(np.full((self.grid.side,) * 2, 1 / self.grid.n_cells))


@pytest.mark.parametrize("good,bad", [(ToyOUE, ToyOUEBroken), (ToyPlanarLaplace, ToyPlanarLaplaceBroken)])
def test_bit_vector_and_continuous_reports(good: type[Mechanism], bad: type[Mechanism]) -> None:
    """Bit-vector (OUE) and float-position (planar Laplace) reports: correct passes, 3-4x overrun is caught."""
    ok = audit.audit_mechanism(good, 4, 1.0, n_samples=40_000, seed=5)
    assert ok.passed and ok.lower_bound > 0.2, ok.to_frame().to_string()
    broken = audit.audit_mechanism(bad, 4, 1.0, n_samples=40_000, seed=5)
    assert not broken.passed, broken.to_frame().to_string()


def test_dataclass_reports_with_unique_seeds() -> None:
    """(seed, bucket) reports whose seeds are all distinct are handled (sound, no crash)."""
    result = audit.audit_mechanism(ToyLocalHash, 4, 1.0, n_samples=10_000, seed=0)
    assert result.passed and result.pairs


def test_report_columns_shapes() -> None:
    """Every report container becomes a list of per-user columns."""
    n = 5
    assert len(audit.report_columns(np.arange(n), n)) == 1
    assert len(audit.report_columns(np.zeros((n, 3, 2)), n)) == 6
    assert len(audit.report_columns((np.arange(n), np.zeros((n, 2))), n)) == 3
    assert len(audit.report_columns({"a": np.arange(n), "b": np.arange(n)}, n)) == 2
    assert len(audit.report_columns([(1, 2)] * n, n)) == 2
    assert len(audit.report_columns([{"x": i} for i in range(n)], n)) == 1
    with pytest.raises(LdpvizInputError):
        audit.report_columns(np.arange(n + 1), n)


def test_central_dp_is_reported_not_auditable() -> None:
    result = audit.audit_mechanism(ToyCentral, 4, 1.0)
    assert result.status == audit.NOT_AUDITABLE and "central" in result.summary()


def test_clopper_pearson_known_values() -> None:
    """k = 0: upper bound 1 - alpha^(1/n) (exact); k = n: lower bound alpha^(1/n)."""
    n, alpha = 1000, 0.01
    assert np.isclose(audit.cp_upper(np.array([0]), n, alpha)[0], 1 - alpha ** (1 / n))
    assert np.isclose(audit.cp_lower(np.array([n]), n, alpha)[0], alpha ** (1 / n))
    assert audit.cp_lower(np.array([0]), n, alpha)[0] == 0.0


@pytest.mark.parametrize("kwargs", [dict(n_samples=10), dict(confidence=1.0), dict(seed=-1), dict(grid=128),
                                    dict(epsilon=0.0)])
def test_bad_audit_arguments_are_input_errors(kwargs: dict) -> None:
    args = dict(grid=4, epsilon=1.0) | kwargs
    with pytest.raises(LdpvizInputError):
        audit.audit_mechanism("grr", **args)


def test_hard_pairs_on_tiny_grids_are_distinct() -> None:
    for side in (1, 2, 3, 16):
        pairs = audit.hard_pairs(audit.audit_grid(side))
        assert len({(p.first, p.second) for p in pairs}) == len(pairs) >= 1


def test_audit_registry_table() -> None:
    table = audit.audit_registry(grid_sides=(2,), epsilons=(1.0,), n_samples=2_000, names=["exact", "grr"])
    assert list(table["mechanism"]) == ["exact", "grr"] and table.loc[1, "status"] == audit.PASSED


# ---------------------------------------------------------------- whole-protocol audit (no client half)
class ToyProtocolGRR(GRR):
    """GRR run as a whole protocol only (no client half), as multi-round mechanisms are."""

    name = "toy-protocol-grr"
    has_client = False

    def run(self, users: Binned, rng: np.random.Generator) -> Estimate:
        return self.estimate(GRR.perturb(self, users, rng))


class ToyProtocolLeaky(ToyProtocolGRR):
    """Leaks: the server 'builds its domain from the users', i.e. keeps the true occupied cells."""

    name = "toy-protocol-leaky"

    def run(self, users: Binned, rng: np.random.Generator) -> Estimate:
        density = self.grid.histogram(users.cells)
        return Estimate(density / density.sum())


def test_protocol_audit_of_mechanisms_without_client_half() -> None:
    """protocol_samples audits run() on tiny populations: a GRR-based protocol passes, a leaky one fails."""
    assert audit.audit_mechanism(ToyProtocolGRR, 4, 1.0).status == audit.NOT_AUDITABLE
    ok = audit.audit_mechanism(ToyProtocolGRR, 4, 1.0, protocol_samples=1_000, seed=2)
    assert ok.passed and ok.lower_bound >= 0 and "whole protocol" in ok.notes[0], ok.to_frame().to_string()
    leaky = audit.audit_mechanism(ToyProtocolLeaky, 4, 1.0, protocol_samples=300, seed=2)
    assert leaky.status == audit.FAILED and leaky.lower_bound > 2


# ---------------------------------------------------------------- location-domain mechanisms (L-SRR family)
DOMAIN_MECHANISMS = ("srr", "olh-h", "pldp", "grr-tiles", "hr-tiles")


@pytest.mark.parametrize("name", DOMAIN_MECHANISMS)
def test_default_public_domain_passes_whole_protocol_audit(name: str) -> None:
    """Default domain='grid' is data-independent: the whole-protocol audit certifies no loss above epsilon."""
    result = audit.audit_mechanism(name, 4, 1.0, protocol_samples=300, seed=2)
    assert result.status == audit.PASSED and result.lower_bound <= 1.0, result.to_frame().to_string()


@pytest.mark.parametrize("name", [pytest.param(n, marks=[] if n == "srr" else [pytest.mark.slow])
                                  for n in DOMAIN_MECHANISMS])
def test_occupied_domain_is_flagged_and_documented(name: str) -> None:
    """domain='occupied' (the paper's setting) leaks which tiles hold users: the audit certifies a loss above
    epsilon = 1 for a lone user's tile, and the guarantee says plainly that it is not eps-LDP then."""
    result = audit.audit_mechanism(name, 4, 1.0, protocol_samples=300, seed=2, params={"domain": "occupied"})
    assert result.status == audit.FAILED and result.lower_bound > 2.0, result.to_frame().to_string()
    guarantee = mechanisms.create(name, audit.audit_grid(4), 1.0, domain="occupied").guarantee()
    assert "NOT epsilon-LDP" in guarantee and "public" in guarantee


# ---------------------------------------------------------------- OLH: report_key exposes the support events
def test_olh_report_key_gives_a_useful_sound_bound() -> None:
    """Raw OLH reports carry a fresh random seed each (the audit used to certify 0). With the mechanism's
    report_key (which cells each report supports) the bound is large at a large epsilon and still <= eps."""
    result = audit.audit_mechanism("olh", 4, 5.0, n_samples=40_000, seed=11)
    assert result.passed and 3.0 < result.lower_bound <= 5.0, result.to_frame().to_string()
    small = audit.audit_mechanism("olh", 4, 1.0, n_samples=40_000, seed=11)
    assert small.passed and 0.2 < small.lower_bound <= 1.0


def test_olh_report_key_matches_support() -> None:
    """report_key's row for a report marks exactly the cells whose hash equals the reported bucket."""
    from ldpviz.mechanisms.fo.oracles import olh_hash
    mech = mechanisms.create("olh", audit.audit_grid(3), 2.0)
    reports = mech.perturb(audit.AuditInput(4, (0.5, 0.5)).users(500), np.random.default_rng(0))
    key = mech.report_key(reports)
    assert key.shape == (500, 9) and key.dtype == bool
    expected = olh_hash(reports.seeds[:, None], np.arange(9, dtype=np.uint64)[None, :], reports.g) == \
        reports.buckets[:, None]
    np.testing.assert_array_equal(key, expected)
    assert key[:, 4].mean() > key[:, 0].mean()      # the true cell is supported more often


# ---------------------------------------------------------------- audited against the stated guarantee
class SEMGeoIOverspent(SEMGeoI):
    """Broken SEM-Geo-I: states eps'-Geo-I (its calibrated budget, with the snapping slack of one cell diagonal)
    but samples with 5 eps' (the stated slack makes a 3x overspend invisible at eps = 1 on 4 x 4 cells: the
    pairs it could show on are claimed at eps' x (distance + 1.41 cells))."""

    name = "sem-geoi-overspent"

    def setup(self) -> None:
        super().setup()
        self.tables = self._tables(5.0 * self.eps_prime)


class GRRClaimsHalf(GRR):
    """Broken claim: a correct GRR channel at epsilon whose stated guarantee is epsilon / 2."""

    name = "grr-claims-half"

    def claimed_epsilon(self) -> float:
        return self.epsilon / 2


def test_sem_geoi_is_audited_against_its_calibrated_epsilon() -> None:
    """SEM-Geo-I calibrated to DAM's local privacy (the paper's comparison) states eps', not the slider, so eps' is
    the claim the audit checks."""
    mech = SEMGeoI(audit.audit_grid(4), 1.0, calibration="same-lp-as-dam")
    result = audit.audit_mechanism(mech, n_samples=20_000, seed=1)
    assert abs(mech.eps_prime - 1.0) > 0.1 and result.claimed == pytest.approx(mech.eps_prime)   # not the slider
    assert f"{mech.eps_prime:.3g}" in mech.guarantee()
    assert result.status == audit.PASSED


@pytest.mark.parametrize("epsilon,calibration", [(0.4, "raw"), (1.0, "same-lp-as-dam"), (2.0, "same-lp-as-dam")])
def test_overspent_sem_geoi_fails_the_audit(epsilon: float, calibration: str) -> None:
    """A SEM-Geo-I whose channel spends more than its stated eps' fails, with the slider as eps' per km (the default:
    0.4 per km = 1 per 2.5 km cell side) and calibrated to DAM (certified loss between eps' and 5 eps')."""
    result = audit.audit_mechanism(SEMGeoIOverspent, 4, epsilon, n_samples=20_000, seed=1,
                                   params={"calibration": calibration})
    assert result.status == audit.FAILED and result.lower_bound > result.claimed
    assert "violation" in result.verdict


def test_guarantee_stricter_than_channel_fails() -> None:
    """Any mechanism whose stated guarantee is stricter than its channel fails: GRR at eps claiming eps / 2."""
    result = audit.audit_mechanism(GRRClaimsHalf, 4, 2.0, n_samples=20_000, seed=0)
    assert result.claimed == 1.0 and result.status == audit.FAILED


def test_pass_with_a_weak_bound_is_worded_as_uninformative() -> None:
    """A pass is 'no violation found'; a lower bound far below the claim is called uninformative, not proof."""
    strong = audit.audit_mechanism("grr", 4, 1.0, n_samples=100_000, seed=0)
    assert strong.status == audit.PASSED and strong.informative
    assert strong.verdict.startswith("no violation found") and "uninformative" not in strong.verdict
    weak = audit.audit_mechanism("grr", 4, 1.0, n_samples=100, seed=0)
    assert weak.status == audit.PASSED and not weak.informative
    assert "uninformative" in weak.verdict and "uninformative" in weak.summary()
    assert weak.as_row()["informative"] is False


# ---------------------------------------------------------------- Geo-I between real positions (issue 20)
class SnappingPlanarLaplace(PlanarLaplace):
    """The old planar Laplace: noise added to the cell centre, not the exact position (a deliberate bug)."""

    name = "planar-laplace-snapping"

    def positions(self, users: Binned) -> np.ndarray:
        d = self.grid.side
        cells = np.asarray(users.cells)
        return np.column_stack([cells % d + 0.5, cells // d + 0.5])


def _minneapolis_16() -> Grid:
    """1 km cells as in the issue's Minneapolis example (d = 16)."""
    return Grid(Region(-93.26, 44.97, 16_000.0, "minneapolis"), 16)


def test_geo_i_audits_pairs_across_cell_boundaries() -> None:
    """Every Geo-I mechanism is audited on two positions 20 m apart across a cell edge and across a cell corner
    (in different cells); LDP mechanisms keep their pairs."""
    grid = _minneapolis_16()
    pairs = audit.hard_pairs(grid, PlanarLaplace(grid, 1.0))
    across = [p for p in pairs if "apart across" in p.label]
    assert len(across) == 2
    for pair in across:
        assert pair.first.cell != pair.second.cell and pair.distance_cells(grid) == pytest.approx(0.02)
    assert not any("apart across" in p.label for p in audit.hard_pairs(grid, GRR(grid, 1.0)))


def test_audit_fails_the_snapping_planar_laplace_and_passes_the_fixed_one() -> None:
    """Issue 20 (d = 16, 1 km cells, eps = 1 per km, 40,000 samples, seed 0): snapping to the cell centre lets two
    users 20 m apart across a boundary be told apart far beyond e^(eps x 20 m): the audit certifies a loss per cell
    side many times the claim (FAIL, on the cross-boundary pairs). Planar Laplace on exact positions passes, with
    no pair above its claim."""
    grid = _minneapolis_16()
    snapping = audit.audit_mechanism(SnappingPlanarLaplace(grid, 1.0), n_samples=40_000, seed=0)
    assert snapping.status == audit.FAILED and snapping.lower_bound > 10 * snapping.claimed
    failed = [p.label for p in snapping.pairs if not p.passed]
    assert any("apart across" in label for label in failed)     # the random chain's step across an edge may fail too
    assert all("apart across" in label or "at a random place" in label for label in failed)
    fixed = audit.audit_mechanism(PlanarLaplace(grid, 1.0), n_samples=40_000, seed=0)
    assert fixed.status == audit.PASSED and all(p.passed for p in fixed.pairs)


class QuarterCellPlanarLaplace(PlanarLaplace):
    """Broken on purpose (issue 26): planar Laplace on each position rounded to the nearest quarter-cell point,
    still stating eps-Geo-I between exact positions with no slack. Its rounding lines sit at odd eighths of a
    cell, never on a cell edge or corner, so the cross-boundary pairs keep both points on one lattice point."""

    name = "planar-laplace-quarter-cells"

    def positions(self, users: Binned) -> np.ndarray:
        return np.round(super().positions(users) * 4.0) / 4.0


def test_random_close_pairs_cross_every_line_inside_a_cell() -> None:
    """The random chain (seeded) crosses a whole cell along both axes in steps of a tenth of a cell, so every lattice
    line inside a cell -- at any offset -- lies between the two points of some pair; different seeds, other places."""
    grid = _minneapolis_16()
    pairs = audit.random_close_pairs(grid, seed=0)
    assert pairs == audit.random_close_pairs(grid, seed=0) and pairs != audit.random_close_pairs(grid, seed=1)
    assert all(p.distance_cells(grid) == pytest.approx(audit.RANDOM_GAP_CELLS) for p in pairs)
    for axis in (0, 1):
        lo = np.array([min(p.first.position[axis], p.second.position[axis]) for p in pairs]) * grid.side
        hi = np.array([max(p.first.position[axis], p.second.position[axis]) for p in pairs]) * grid.side
        for offset in np.linspace(0.0, 1.0, 41)[:-1]:                 # a line at every 1/40 of a cell
            lines = np.floor(lo) + offset
            lines = np.where(lines < lo, lines + 1, lines)
            assert np.any(lines <= hi), (axis, offset)
    labels = [p.label for p in audit.hard_pairs(grid, PlanarLaplace(grid, 1.0))]
    assert sum("at a random place" in label for label in labels) == len(pairs)
    assert not any("random place" in p.label for p in audit.hard_pairs(grid, GRR(grid, 1.0)))


def test_audit_fails_quarter_cell_rounding_and_passes_the_real_geo_i_mechanisms() -> None:
    """Issue 26 (d = 16, 1 km cells, eps = 1 per km, 40,000 samples, seed 0): rounding to quarter cells passes every
    cross-boundary pair (both points round to one place) but not the random chain, whose step across a rounding
    line certifies a loss well above its claim of eps x 100 m: FAIL. The real planar Laplace and SEM-Geo-I (its
    slider and the paper's calibration) pass every pair, the chain included. (Over seeds 0-9 the quarter-cell,
    half-cell and third-cell roundings all failed; an eighth-cell rounding, finer than the chain's step, passed.)"""
    grid = _minneapolis_16()
    rounding = audit.audit_mechanism(QuarterCellPlanarLaplace(grid, 1.0), n_samples=40_000, seed=0)
    assert rounding.status == audit.FAILED and rounding.lower_bound > rounding.claimed
    failed = [p for p in rounding.pairs if not p.passed]
    assert failed and all("at a random place" in p.label for p in failed)
    assert all(p.passed for p in rounding.pairs if "apart across" in p.label)
    real = [PlanarLaplace(grid, 1.0), SEMGeoI(audit.audit_grid(4), 0.4),
            SEMGeoI(audit.audit_grid(4), 1.0, calibration="same-lp-as-dam")]
    for mech in real:
        result = audit.audit_mechanism(mech, n_samples=40_000, seed=0)
        assert result.status == audit.PASSED and all(p.passed for p in result.pairs), mech
        assert any("at a random place" in p.label for p in result.pairs)


def test_sem_geoi_is_audited_with_its_snapping_slack() -> None:
    """SEM-Geo-I snaps to cell centres and states the slack (the cell diagonal, sqrt(2) cell sides): every pair's
    claim is eps' x (distance + sqrt(2)), the cross-boundary pairs included, and it passes."""
    mech = SEMGeoI(audit.audit_grid(4), 1.0)
    assert mech.geo_slack_m() == pytest.approx(math.sqrt(2) * mech.grid.cell_m)
    assert f"{mech.geo_slack_m() / 1000:.3g} km" in mech.guarantee()
    result = audit.audit_mechanism(mech, n_samples=20_000, seed=1)
    for pair in result.pairs:
        assert pair.claimed == pytest.approx(mech.eps_prime * (pair.distance_cells + math.sqrt(2)))
    assert any("apart across" in p.label for p in result.pairs) and result.status == audit.PASSED
    assert "snapping slack of 1.41 cell sides" in result.summary()
