"""The DAM paper's claims (Sec. VII-C), re-run on synthetic data with fixed seeds.

Normal, MNormal and SZipf as in Sec. VII-A (bench/dam_claims.py), d = 15, epsilon = 3.5,
60,000 users per trial, trial t seeded with 1000 + t. Full tables: docs/dam-claims.md.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))
import dam_claims as claims  # noqa: E402

N, TRIALS, SEED = 60_000, 3, 1000

pytestmark = pytest.mark.slow


def mean_w2(name, dataset, params=None, trials=TRIALS):
    return float(np.mean(claims.run_w2(name, dataset, 15, 3.5, trials, N, SEED, params)))


@pytest.mark.parametrize("dataset", ["Normal", "MNormal"])
def test_dam_beats_mdsw_and_is_at_least_as_good_as_huem(dataset):
    """W2(DAM) < W2(MDSW) and W2(DAM) <= W2(HUEM) (Sec. VII-C2, Fig. 9)."""
    dam = mean_w2("dam", dataset)
    assert dam < mean_w2("mdsw", dataset)
    assert dam < mean_w2("mdsw", dataset, {"postprocess": "em"})
    assert dam <= mean_w2("huem", dataset)


def test_dam_beats_mdsw_on_szipf():
    """W2(DAM) < W2(MDSW) on SZipf at d = 15, eps = 3.5, as the paper's text says (Sec. VII-C2: "DAM is always
    better than MDSW"), although its own Fig. 9 shows DAM behind MDSW and HUEM on SZipf (docs/dam-claims.md
    reports both)."""
    assert mean_w2("dam", "SZipf") < mean_w2("mdsw", "SZipf")


@pytest.mark.parametrize("dataset", [
    pytest.param("Normal", marks=pytest.mark.xfail(strict=True, reason=(
        "does not reproduce: with the held-out EM stopping rule W2 keeps falling to 1.67 b, the edge of "
        "the sweep (0.0338, 0.0310, 0.0251, 0.0214, 0.0209 for factors 0.33..1.67, seeds 1000-1001); "
        "see docs/dam-claims.md"))),
    "MNormal",
])
def test_w2_is_u_shaped_in_the_radius(dataset):
    """W2 against b (0.33 to 1.67 times the optimal b) first falls then rises, minimum near b (Fig. 8)."""
    w = [mean_w2("dam", dataset, {"radius_factor": f}, trials=2) for f in claims.RADIUS_FACTORS]
    best = int(np.argmin(w))
    assert best in (1, 2, 3), w
    assert w[0] > w[best] and w[-1] > w[best]


@pytest.mark.xfail(strict=True, reason="does not reproduce on the Minneapolis stops with the merged code (W2 0.0350 "
                   "for DAM vs 0.0310 for DAM-NS at d = 15, eps = 3.5, 3 trials); it held on the estimators branch "
                   "alone (another random stream), so the claim is within seed noise here, not a robust win")
def test_dam_at_most_dam_ns_on_the_bundled_real_data():
    """On road-network data the shrunken border helps: W2(DAM) <= W2(DAM-NS) (Sec. VII-C2)."""
    try:
        datasets = importlib.import_module("ldpviz.data.datasets")
        data = datasets.load("minneapolis-stops")
    except Exception as err:  # the bundled data arrives with main's datasets module
        pytest.skip(f"bundled real dataset not available on this branch: {err}")
    from ldpviz import mechanisms
    from ldpviz.geo.domain import Grid
    grid = Grid(data.default_region, 15)
    users = grid.bin_lonlat(data.lon, data.lat)
    true = grid.histogram(users.cells)
    result = {}
    for name in ("dam", "dam-ns"):
        mech = mechanisms.create(name, grid, 3.5)
        result[name] = np.mean([claims.w2(true, mech.run(users, np.random.default_rng(SEED + t)).density)
                                for t in range(TRIALS)])
    assert result["dam"] <= result["dam-ns"], result


def test_verdicts_call_a_gap_inside_the_noise_not_resolved():
    """The generated verdicts never say 'contradicted' or 'holds' for a gap within one sd over trials, and name
    SEM-Geo-I's k as run when it was lowered from the paper's rule (issue 22)."""
    import importlib.util
    from pathlib import Path
    spec = importlib.util.spec_from_file_location("dam_claims",
                                                  Path(__file__).resolve().parents[3] / "bench" / "dam_claims.py")
    dc = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(dc)
    labels = ["dam", "dam-ns", "huem", "mdsw", "mdsw (EMS at grid resolution)", "mdsw (plain EM)", "sem-geoi",
              "sem-geoi (mutual-information k)"]
    res = {}
    for lab in labels:
        for eps in (3.5, 7.0):
            res[(lab, "Normal", 15, eps)] = [0.030, 0.034, 0.026]       # mean 0.030, sd ~0.0033
    res[("sem-geoi", "Normal", 15, 7.0)] = [0.029, 0.033, 0.025]        # DAM behind by 0.001: inside the noise
    res[("mdsw", "Normal", 15, 3.5)] = [0.060, 0.061, 0.059]            # clearly worse than DAM
    for f in (0.67, 1.0, 1.33):
        res[(f"dam@{f}", "Normal", 15, 3.5)] = [0.03, 0.03, 0.03]
    lines = dc.verdicts(res, ("Normal",), (0.67, 1.0, 1.33), (3.5, 7.0), {3.5: 3, 7.0: 0},
                        {("sem-geoi", 15, 3.5): (2, 7)})
    text = "\n".join(lines)
    assert "contradicted" not in text
    assert "**not resolved** (within one sd) at eps = 7" in text
    assert "mdsw 0.0600 (2.0x DAM: **holds**)" in text
    assert "k = 2 (the paper's rule gives 7" in text and "with the paper's k" not in text
