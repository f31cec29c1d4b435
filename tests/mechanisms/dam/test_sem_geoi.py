"""SEM-Geo-I: geo-indistinguishability of the subset channel, sampler, LP calibration, EM."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from ldpviz import mechanisms
from ldpviz.geo.domain import Binned, Grid, Region
from ldpviz.errors import LdpvizInputError
from ldpviz.mechanisms.dam.local_privacy import cell_distances, local_privacy, lp_from_channel
from ldpviz.mechanisms.dam.sem_geoi import (SubsetTables, mean_subset_entropies, sem_local_privacy_cells,
                                         sem_lp_cells)


def grid(d: int) -> Grid:
    """Cells of 1 km: a Geo-I epsilon (per km) is then epsilon per cell side, the channel's unit."""
    return Grid(Region(0.0, 45.0, 1000.0 * d), d)


def users(cells) -> Binned:
    cells = np.asarray(cells, dtype=np.int64)
    return Binned(cells, np.zeros((len(cells), 2)), 0)


@pytest.mark.parametrize("d,eps,k", [(2, 0.5, 1), (2, 2.0, 2), (3, 1.0, 1), (3, 1.5, 3), (3, 0.3, 4)])
def test_subset_channel_is_geo_indistinguishable(d, eps, k):
    """Columns over all k-subsets sum to 1 and P(S|x) <= e^{eps' |x-x'|} P(S|x')."""
    P = mechanisms.create("sem-geoi", grid(d), eps, calibration="raw", subset_size=k).channel()
    assert P.shape[0] == math.comb(d * d, k)
    assert np.allclose(P.sum(axis=0), 1.0, atol=1e-12)
    ratio = (P[:, :, None] / P[:, None, :]).max(axis=0)
    assert (ratio / np.exp(eps * cell_distances(d))).max() <= 1 + 1e-9


def test_membership_matches_enumeration():
    mech = mechanisms.create("sem-geoi", grid(3), 1.0, calibration="raw", subset_size=3)
    P = mech.channel()
    member = np.zeros((9, 9))
    for i, s in enumerate(itertools.combinations(range(9), 3)):
        member[list(s)] += P[i]
    assert np.allclose(member, mech.tables.member, atol=1e-12)
    assert np.allclose(member.sum(axis=0), 3.0)


def test_sampler_follows_channel():
    """Chi-square of 30,000 subset reports from three cells against the declared column (p > 1e-3)."""
    mech = mechanisms.create("sem-geoi", grid(3), 1.2, calibration="raw", subset_size=2)
    P = mech.channel()
    index = {s: i for i, s in enumerate(itertools.combinations(range(9), 2))}
    rng = np.random.default_rng(3)
    for x in (0, 4, 7):
        reps = np.sort(mech.perturb(users(np.full(30_000, x)), rng), axis=1)
        assert np.all(reps[:, 0] != reps[:, 1])
        rows = np.array([index[(int(a), int(b))] for a, b in reps])
        observed = np.bincount(rows, minlength=P.shape[0])
        assert stats.chisquare(observed, P[:, x] * len(reps)).pvalue > 1e-3


def test_monte_carlo_lp_matches_exact():
    mech = mechanisms.create("sem-geoi", grid(3), 0.8, calibration="raw", subset_size=2)
    exact = lp_from_channel(mech.channel(), 3)
    assert sem_local_privacy_cells(mech.tables, samples_per_cell=400) == pytest.approx(exact, rel=0.02)


def test_exact_lp_for_single_cell_reports_matches_the_channel():
    """With k = 1 the calibration's LP is exact: it equals eq. (16) on the explicit channel and the Monte Carlo."""
    mech = mechanisms.create("sem-geoi", grid(4), 0.7, calibration="raw", subset_size=1)
    exact = lp_from_channel(mech.channel(), 4)
    assert sem_lp_cells(mech.tables) == pytest.approx(exact, rel=1e-12)
    assert sem_local_privacy_cells(mech.tables, samples_per_cell=400) == pytest.approx(exact, rel=0.02)


@pytest.mark.parametrize("side,eps_prime", [(3, 0.05), (5, 1.0), (12, 0.3), (12, 8.0)])
def test_subset_size_criterion_in_matrix_form(side, eps_prime):
    """The vectorised mean entropy equals the per-k tables' entropy for every candidate k."""
    ks = np.arange(1, side * side // 2 + 1)
    direct = [SubsetTables(side, eps_prime, int(k)).entropy().mean() for k in ks]
    np.testing.assert_allclose(mean_subset_entropies(side, eps_prime, ks), direct, rtol=1e-12, atol=1e-10)


@pytest.mark.slow
def test_calibration_matches_dam_local_privacy():
    """'same-lp-as-dam': SEM-Geo-I's LP equals DAM's at the same epsilon (Sec. VII-B)."""
    g = grid(8)
    sem = mechanisms.create("sem-geoi", g, 2.0, calibration="same-lp-as-dam")
    dam_lp = local_privacy("dam", g, 2.0)
    assert local_privacy(sem) == pytest.approx(dam_lp, rel=0.02)
    assert sem.eps_prime > 0 and "calibrated" in sem.guarantee()
    # The paper's k = ceil(64 / (e^2 + 1)) = 8 hides the cell among 8 members: its LP floor (eps' = 50)
    # is above DAM's, so k is lowered to the largest size that can still match DAM's local privacy.
    assert sem.k_paper == 8 and 1 < sem.k < 8
    assert sem_lp_cells(SubsetTables(8, 50.0, sem.k)) <= dam_lp / g.cell_m < sem_lp_cells(SubsetTables(8, 50.0,
                                                                                                       sem.k + 1))


def test_refuses_large_grids_and_oversized_reports():
    with pytest.raises(LdpvizInputError, match="too slow"):
        mechanisms.create("sem-geoi", grid(40), 1.0, calibration="raw")
    mech = mechanisms.create("sem-geoi", grid(4), 1.0, calibration="raw", subset_size=8)
    with pytest.raises(LdpvizInputError, match="cells in total"):
        mech.perturb(users(np.zeros(20_000_000, dtype=np.int64)), np.random.default_rng(0))


@pytest.mark.slow
def test_em_error_shrinks_with_n():
    """L1 error of the EM estimate on membership counts falls with n."""
    d = 6
    mech = mechanisms.create("sem-geoi", grid(d), 1.0, calibration="raw", subset_size=3, postprocess="em")
    r, c = np.mgrid[0:d, 0:d]
    truth = np.exp(-((r - 4) ** 2 + (c - 2) ** 2) / 4.0)
    truth /= truth.sum()
    errors = []
    for n in (10_000, 100_000, 1_000_000):
        rng = np.random.default_rng(n)
        cells = rng.choice(d * d, size=n, p=truth.ravel())
        errors.append(np.abs(mech.estimate(mech.perturb(users(cells), rng)).density - truth).sum())
    assert errors[0] > errors[1] > errors[2]
    assert errors[2] < 0.4 * errors[0]


def test_effective_params_report_the_chosen_subset_size():
    """effective_params() fills subset_size with the k the mechanism uses (default: the paper's rule)."""
    grid = Grid(Region(0, 0, 1000), 6)
    auto = mechanisms.create("sem-geoi", grid, 1.0, calibration="raw")
    assert auto.param_values["subset_size"] is None
    assert auto.effective_params()["subset_size"] == auto.k == auto.tables.k
    assert 1 <= auto.k < grid.n_cells
    fixed = mechanisms.create("sem-geoi", grid, 1.0, calibration="raw", subset_size=3)
    assert fixed.effective_params()["subset_size"] == 3


def test_default_subset_size_is_the_papers_rule():
    """k = ceil(n / (e^eps + 1)) (DAM paper Sec. VII-C3: n^k = O(n^{n/e^eps})), eps the budget between
    neighbouring cells -- eps' per cell side under 'raw' (the default): on 15 x 15 cells k = 25, 7, 2, 1 at
    eps = 2.1, 3.5, 5, 7; the mechanism uses it unless told otherwise, and 'mutual-information' keeps the
    MI-bound choice at eps'."""
    from ldpviz.mechanisms.dam.sem_geoi import choose_subset_size, paper_subset_size
    assert [paper_subset_size(225, e) for e in (2.1, 3.5, 5.0, 7.0)] == [25, 7, 2, 1]
    assert paper_subset_size(2, 0.1) == 1 and paper_subset_size(10, 0.01) == 5
    g = Grid(Region(0, 0, 6000), 6)                     # 1 km cells: eps' per cell side = the slider per km
    mech = mechanisms.create("sem-geoi", g, 1.0, calibration="raw")
    assert mech.k == paper_subset_size(36, 1.0) == 10
    small = mechanisms.create("sem-geoi", Grid(Region(0, 0, 1000), 6), 1.0)   # 167 m cells: eps' = 1/6 per cell
    assert small.epsilon_per_cell == pytest.approx(1 / 6) and small.k == paper_subset_size(36, 1 / 6) == 17
    mi = mechanisms.create("sem-geoi", g, 1.0, calibration="raw", subset_rule="mutual-information")
    assert mi.k == choose_subset_size(6, 1.0)


def test_reports_are_sets_not_ordered_draws():
    """A k-subset report lists its cells in a canonical (ascending) order, so the position of a cell in the
    report carries nothing beyond the set (the draw itself picks the member nearest the user first)."""
    tables = SubsetTables(5, 2.0, 4)
    reports = tables.sample(np.full(3000, 12), np.random.default_rng(1))
    assert np.all(np.diff(reports, axis=1) > 0)
    # The user's own cell (12) is the nearest member most of the time; it must not sit in a fixed slot.
    slots = np.nonzero(reports == 12)[1]
    assert len(np.unique(slots)) > 1


def test_paper_subset_size_that_cannot_be_calibrated_in_time_is_refused():
    """32 x 32 cells at eps = 0.5: the paper's rule gives k = 387, still 154 after the local-privacy
    feasibility cut, which would take minutes to calibrate; SEM-Geo-I says so in one line instead of hanging,
    and the mutual-information rule still runs."""
    with pytest.raises(LdpvizInputError, match="subset_rule='mutual-information'"):
        mechanisms.create("sem-geoi", grid(32), 0.5, calibration="same-lp-as-dam")
    assert mechanisms.create("sem-geoi", grid(32), 0.5, calibration="same-lp-as-dam",
                             subset_rule="mutual-information").k >= 1


@pytest.mark.parametrize("d,cell_m", [(4, 250.0), (8, 1000.0), (16, 1000.0), (12, 20_000.0)])
def test_stated_geo_i_bound_is_monotone_in_the_slider(d, cell_m):
    """Issue 26: 'smaller is more private' holds for every slider value. Over a fine grid of the slider across its
    whole range (EPSILON_MIN .. EPSILON_MAX, log-spaced), the default SEM-Geo-I's stated bound -- eps' per km, the
    one the accountant reads (eps_prime_per_km / epsilon_per_cell / claimed_epsilon) and the slack in metres --
    never falls when the slider rises, and eps' per km is the slider itself (the guarantee text says so). The
    paper's rule k = ceil(n / (e^eps + 1)) still changes k along the way, so the old calibrated eps' would jump."""
    from ldpviz.mechanisms.base import EPSILON_MAX, EPSILON_MIN
    g = Grid(Region(0.0, 45.0, cell_m * d), d)
    sliders = np.geomspace(EPSILON_MIN, EPSILON_MAX, 61)
    per_km, per_cell, slack, ks = [], [], [], []
    for eps in sliders:
        mech = mechanisms.create("sem-geoi", g, float(eps))
        per_km.append(mech.eps_prime_per_km)
        per_cell.append(mech.claimed_epsilon())
        assert mech.epsilon_per_cell == pytest.approx(mech.claimed_epsilon())
        slack.append(mech.geo_slack_m())
        ks.append(mech.k)
        assert f"the epsilon you set ({eps:g} per km)" in mech.guarantee()
    assert np.allclose(per_km, sliders, rtol=1e-12)
    assert np.all(np.diff(per_km) > 0) and np.all(np.diff(per_cell) > 0)
    assert np.allclose(slack, math.sqrt(2) * g.cell_m)
    assert np.all(np.diff(ks) <= 0) and (ks[0] > ks[-1] or d * d <= 2)    # k follows the paper's rule down


def test_paper_calibration_says_its_slider_is_dams_epsilon():
    """The DAM paper's comparison ('same-lp-as-dam') stays available, and says plainly that its slider is DAM's
    LDP level and that eps' does not follow it: 1 km cells, d = 8, slider 1 then 2 -- eps' is whatever matches
    DAM's local privacy, stated per km in the guarantee."""
    g = grid(8)
    mech = mechanisms.create("sem-geoi", g, 2.0, calibration="same-lp-as-dam")
    text = mech.guarantee()
    assert f"epsilon' = {mech.eps_prime_per_km:.3g} per km" in text
    assert "the epsilon you set is DAM's LDP level, not SEM-Geo-I's guarantee" in text
    assert "do not deploy on it" in text
