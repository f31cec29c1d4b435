"""DAM vs LDPTrace on trajectories (DAM paper App. D): privacy units, budgets and what each estimates."""

from __future__ import annotations

import numpy as np
import pytest

from ldpviz import metrics
from ldpviz.people import trajectory_mechanisms as tm
from ldpviz.geo.domain import Grid, Region
from ldpviz.errors import LdpvizInputError

GRID = Grid(Region(0.0, 0.0, 10_000.0), 8)


def test_privacy_units_are_stated():
    """Every trajectory mechanism names its unit; only DAM on every point protects less than a trajectory."""
    assert tm.LDPTrace.privacy_unit == tm.UNIT_TRAJECTORY
    assert tm.DAMOnePoint.privacy_unit == tm.UNIT_TRAJECTORY
    assert tm.DAMEveryPoint.privacy_unit == tm.UNIT_LOCATION
    assert "L x 1" in tm.DAMEveryPoint(GRID, 1.0).guarantee()
    assert "trajectory" in tm.LDPTrace(GRID, 1.0).guarantee()


@pytest.mark.parametrize("epsilon", [0.5, 1.5, 2.5])
@pytest.mark.parametrize("max_len", [1, 7, 200])
def test_ldptrace_budgets_sum_to_epsilon(epsilon, max_len):
    """Length (eps/10) plus max_len + 1 equal reports add up to eps exactly (sequential composition)."""
    b = tm.LDPTrace(GRID, epsilon).budgets(max_len)
    assert b["length"] == pytest.approx(epsilon / 10)
    assert b["reports"] == max_len + 1
    assert b["total"] == pytest.approx(epsilon, rel=1e-12)


def test_ldptrace_run_reports_its_budget():
    """A run's info shows a total epsilon equal to the one asked for and a per-person report cap."""
    rng = np.random.default_rng(0)
    seqs = [rng.integers(0, 64, size=rng.integers(1, 30)) for _ in range(300)]
    est = tm.LDPTrace(GRID, 1.5).run(seqs, np.random.default_rng(1))
    assert est.info["epsilon_total"] == pytest.approx(1.5)
    assert est.info["reports_per_person"] == est.info["max_len"] + 1
    # everybody sends the length report plus exactly max_len + 1 reports at eps_r each
    assert est.info["messages_per_person"] == 1 + est.info["max_len"] + 1
    assert est.info["dummy_move_reports"] > 0
    assert est.density.sum() == pytest.approx(1.0)


def test_grid_path_merges_and_fills():
    """Repeats merge; a jump across the grid is filled so every move goes to one of the 8 neighbours."""
    side = 8
    path = tm.grid_path(np.array([0, 0, 0, 63, 63, 9]), side)
    assert path[0] == 0 and path[-1] == 9 and 63 in path
    r, c = np.divmod(path, side)
    steps = np.maximum(abs(np.diff(r)), abs(np.diff(c)))
    assert (steps == 1).all()


def test_ldptrace_with_little_noise_follows_the_paths():
    """At the largest epsilon (50) the synthetic points stay on the walked row (> 90% of the mass) and the
    density is far closer to the merged paths' than a uniform map is (fixed seeds): the Markov model and
    the synthesis carry the data. (At epsilon 10 the eps/10 length report and the 8 d^2-value move
    reports are noise-dominated, which is LDPTrace's behaviour, not a bug.)"""
    rng = np.random.default_rng(3)
    side = GRID.side
    seqs = []
    for _ in range(3000):       # walks along the bottom row, left to right
        start = rng.integers(0, 3)
        seqs.append(np.arange(start, start + rng.integers(2, 6)))
    truth = tm.point_density([tm.grid_path(s, side) for s in seqs], side)
    est = tm.LDPTrace(GRID, 50.0).run(seqs, np.random.default_rng(4))
    uniform = np.full((side, side), 1.0 / side ** 2)
    assert est.density[0].sum() > 0.9
    assert metrics.w2(truth, est.density) < 0.3 * metrics.w2(truth, uniform)


def test_dam_sample_estimates_the_person_average():
    """One sampled point per person estimates the person-averaged distribution, not the per-point one:
    50 short trips in cell 0 and one 5000-point trip in cell 63 (fixed seeds, epsilon 20)."""
    seqs = [np.array([0, 0])] * 50 + [np.full(5000, 63)]
    point, person = tm.point_density(seqs, 8), tm.person_density(seqs, 8)
    est = tm.DAMOnePoint(GRID, 20.0).run(seqs, np.random.default_rng(0))
    assert est.info["reports"] == 51
    assert metrics.w2(person, est.density) < 0.2 * metrics.w2(point, est.density)
    every = tm.DAMEveryPoint(GRID, 20.0).run(seqs, np.random.default_rng(0))
    assert every.info["reports"] == 5100
    assert metrics.w2(point, every.density) < 0.2 * metrics.w2(person, every.density)


def test_bad_input():
    with pytest.raises(LdpvizInputError, match="no trajectories"):
        tm.LDPTrace(GRID, 1.0).run([], np.random.default_rng(0))
    with pytest.raises(LdpvizInputError, match="cells must lie"):
        tm.DAMOnePoint(GRID, 1.0).run([np.array([64])], np.random.default_rng(0))
    with pytest.raises(LdpvizInputError, match="unknown trajectory mechanism"):
        tm.create("pivottrace", GRID, 1.0)


def test_run_on_a_generated_frame():
    """The seven steps from a person/seq/lon/lat table: D_T over every point, an estimate, drops counted."""
    from ldpviz.data import trajectory_generator as trajgen

    frame = trajgen.minneapolis_trajectories(seed=1, n_trajectories=100, max_length=20)
    grid = Grid(Region(**frame.attrs["region"]), 10)
    truth, est, dropped = tm.run_on_trajectories(frame, grid, "ldptrace", 1.5, np.random.default_rng(0))
    assert dropped == {"points_outside": 0, "people_without_points": 0}
    assert truth.sum() == pytest.approx(1.0) and est.density.shape == (10, 10)


def test_ldptrace_report_count_is_constant_across_lengths():
    """Padding: people with 2 and 200 points send the same number of reports (max_len + 1), so the count reveals
    nothing of the length; the real entries are exactly the person's moves (of the first max_len cells) and the
    rest are dummies (-1)."""
    side = GRID.side
    short = np.array([0, 1])                                   # one move
    long_ = np.arange(200) % (side * side)                  # 200 points, wrapping around the grid
    mid = np.array([0, 9, 18, 27, 36])                         # four diagonal moves
    mech = tm.LDPTrace(GRID, 1.0)
    paths = mech.paths([short, long_, mid])
    max_len = 6
    sent = mech.client_reports(paths, max_len)
    counts = mech.reports_per_person(sent)
    assert counts.tolist() == [max_len + 1] * 3
    assert sent["moves"].shape == (3, max_len - 1)
    for i, p in enumerate(paths):
        cut = p[:max_len]
        real = sent["moves"][i][sent["moves"][i] >= 0]
        expected = cut[:-1] * mech.n_moves + tm.move_index(cut[:-1], cut[1:], side)
        assert real.tolist() == expected.tolist()
        assert (sent["moves"][i] < 0).sum() == max_len - cut.size
    assert sent["end"].tolist() == [p[:max_len][-1] for p in paths]


def test_dummy_reports_are_removed_by_the_estimate():
    """OUE with empty-input dummies: over 400 seeded draws the mean estimate of every value is within 4 standard
    errors of its true count (without subtracting the dummies it would be off by n_dummy x q / (1/2 - q) = 2,000
    x 0.27 / 0.23 ~ 2,300 per value), and a dummy's bit probabilities are within e^eps of a real report's."""
    true = np.array([50, 0, 20, 5, 0, 100])
    rng = np.random.default_rng(3)
    draws = np.array([tm.oue_counts_with_dummies(true, 2_000, 1.0, rng) for _ in range(400)])
    se = draws.std(axis=0, ddof=1) / np.sqrt(len(draws))
    assert np.all(np.abs(draws.mean(axis=0) - true) < 4 * se)
    p, q = tm.oue_probabilities(0.7)
    ratios = [p / q, (1 - p) / (1 - q), q / p, (1 - q) / (1 - p)]
    assert max(ratios) <= np.exp(0.7) + 1e-12


def test_bench_max_len_sentence_follows_the_measured_values():
    """bench/dam_trajectories.py's max_len explanation is generated: runs whose max_len sits at 0.9 d^2 are
    attributed to the OUE noise, runs whose max_len follows the true length quantile to the lengths, with the
    measured numbers in the text."""
    import importlib
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
    bench = importlib.import_module("dam_trajectories")
    noisy = {(15, 1.5): [{"max_len": 203, "epsilon_per_report": 0.0066, "d2": 225, "true_q90": 61.0}]}
    text = bench.ldptrace_sentence(noisy)
    assert "comes from the OUE noise" in text and "0.90 x d^2" in text and "was 61 in the median" in text
    honest = {(15, 1.5): [{"max_len": 60, "epsilon_per_report": 0.02, "d2": 225, "true_q90": 61.0}]}
    assert "comes from the people's lengths" in bench.ldptrace_sentence(honest)
    assert "2-200" not in text
