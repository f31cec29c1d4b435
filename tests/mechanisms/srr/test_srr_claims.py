"""L-SRR paper claims on the bundled Minneapolis stops (Fig. 8 L1, Table 3 k-NN), fixed seeds.

Setting: whole-city region, 32 x 32 grid (625 m cells), SRR's occupied level-16 tiles (813) as the
location domain shared by SRR and the paper's GRR/HR baselines (``grr-tiles``, ``hr-tiles``), all
51,920 users, 2 trials, seed 0. Checked locally on seeds 0-3: the asserted claims held for every seed
with margins of >= 0.04 in L1. Full re-run and discussion: docs/srr-claims.md (bench/srr_claims.py).
"""

import math

import pytest

from ldpviz import experiment
from ldpviz.metrics.knn import knn_quality

pytestmark = pytest.mark.slow

# The paper's setting (Sec. 6.1): the domain is the occupied tiles, treated as public knowledge. That is NOT
# eps-LDP if the occupied set is private, so it is an explicit opt-in (the tool's default is the public grid).
SETTING = dict(dataset="minneapolis-stops", grid_side=32, region="Whole city", seed=0, trials=2,
               params={"domain": "occupied"})


def mean_l1(mechanism: str, epsilon: float) -> float:
    result = experiment.run(experiment.Scenario(mechanism=mechanism, epsilon=epsilon, **SETTING))
    return float(result.metrics["l1"].mean())


@pytest.mark.parametrize("epsilon", [1.0, 3.0, 5.0])
def test_srr_l1_against_grr_and_hr_on_the_same_tiles(epsilon):
    """Fig. 8: L1(SRR) < L1(GRR) and L1(SRR) <= L1(HR), where they hold in our faithful implementation.

    What does NOT hold (reported in docs/srr-claims.md, not tuned away):
    * eps = 5: GRR beats SRR (L1 ~0.37 vs ~0.72 here). SRR's LCP groups make all tiles of a G_1 block
      send identical reports, so SRR only resolves block-level density and stops improving with eps.
    * eps = 5 vs HR: with the general-privacy HR (Acharya et al. Sec. 5) HR beats SRR (see the next test).
    * eps = 3 vs HR: not stable across seeds on this grid, so not asserted.
    """
    srr = mean_l1("srr", epsilon)
    assert math.isfinite(srr)
    if epsilon in (1.0, 3.0):
        assert srr < mean_l1("grr-tiles", epsilon)
    if epsilon == 1.0:
        assert srr <= mean_l1("hr-tiles", epsilon)


@pytest.mark.xfail(strict=True, reason=(
    "does not reproduce once HR is the general-privacy HR (blocks of ~e^eps outputs, Acharya et al. Sec. 5): "
    "at eps = 5 on 813 tiles HR's L1 is ~0.40 against SRR's ~0.71; the paper's 'SRR <= HR' at large eps "
    "compared against the high-privacy HR only"))
def test_srr_at_most_hr_at_eps5():
    """Fig. 8: L1(SRR) <= L1(HR) at eps = 5 on the same tiles."""
    assert mean_l1("srr", 5.0) <= mean_l1("hr-tiles", 5.0)


def test_srr_knn_precision_at_least_grr_at_eps3():
    """Table 3: the k-NN lists (k = 25) derived from SRR's estimate are at least as precise as GRR's (eps = 3)."""
    precision = {}
    for mechanism in ("srr", "grr-tiles"):
        result = experiment.run(experiment.Scenario(mechanism=mechanism, epsilon=3.0, **SETTING))
        counts = result.true_density * result.n_users
        values = [knn_quality(counts, est.density, k=25)["precision"] for est in result.estimates]
        precision[mechanism] = sum(values) / len(values)
    assert precision["srr"] >= precision["grr-tiles"]


def test_rank_deficient_directions_use_a_prior_or_em_not_min_norm():
    """Issue 15 item 6, the paper's setting at eps = 5 (64 x 64 grid, occupied level-17 tiles, 51,920 users,
    seed 2024, 1 trial): Algorithm 2's merged system is rank-deficient; filling the undetermined directions
    from the uniform prior beats the minimum-norm fill, and EM (the shared maximum-likelihood estimator)
    beats both and GRR on the same tiles, where min-norm loses to GRR."""
    setting = dict(SETTING, grid_side=64, seed=2024, trials=1)

    def l1(mechanism, **params):
        scenario = experiment.Scenario(mechanism=mechanism, epsilon=5.0, **dict(setting, params={
            "domain": "occupied", **params}))
        result = experiment.run(scenario)
        return float(result.metrics["l1"].mean()), result.estimate.info

    min_norm, info = l1("srr", estimator="hadamard-min-norm")
    assert info["solver"] == "min-norm least squares" and info["identifiable_rank"] < info["domain_size"]
    prior, _ = l1("srr", estimator="hadamard")
    em, _ = l1("srr", estimator="mle")
    grr, _ = l1("grr-tiles")
    assert em < prior < min_norm
    assert em < grr < min_norm
