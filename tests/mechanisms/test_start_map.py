"""An EM estimate that never left its start says so (issue 37.14).

The criterion (ldpviz.mechanisms.estimation.start_map_tests): the map the held-out search keeps must predict the
held-out 20% of the reports better than the uniform starting map by more than 2 standard errors of that gain;
otherwise (in particular where no EM step beat the start) the estimate is flagged, every readout says "the map shown
is the uniform starting map", and the goal seek counts that collection as a miss. Fixed seeds; each case is one
collection of 20,000 Minneapolis stops on a 16 x 16 grid (SEM-Geo-I also at the issue's d = 32).
"""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

from ldpviz import experiment
from ldpviz.cli.commands import main
from ldpviz.decide import tradeoff
from ldpviz.deploy import client as pyclient, estimate as deployed, spec as specs
from ldpviz.geo.domain import Grid, Region
from ldpviz.mechanisms import estimation

BOX = Region.from_bbox(-93.33, 44.89, -93.19, 45.05, name="box")

#: (mechanism, an informative epsilon, an uninformative one), from a probe of the same seeds: the informative
#: settings' held-out gains are 4.5 to 36 standard errors, the uninformative ones below 1 (most exactly 0).
EM_MECHANISMS = [("dam", 1.0, 0.05), ("dam-ns", 1.0, 0.005), ("huem", 2.0, 0.02), ("sem-geoi", 4.0, 0.5),
                 ("planar-laplace", 1.0, 0.03), ("mdsw", 1.0, 0.02)]


def _one(mechanism: str, epsilon: float, d: int = 16) -> experiment.Result:
    return experiment.run(experiment.Scenario(dataset="minneapolis-stops", mechanism=mechanism, epsilon=epsilon,
                                              grid_side=d, trials=1, n_users=20_000))


@pytest.mark.parametrize("mechanism,good,bad", EM_MECHANISMS)
def test_every_em_mechanism_flags_only_the_uninformative_setting(mechanism, good, bad):
    """Informative: the test ran and passed, no note. Uninformative: flagged, the note leads the notes, the JSON
    says so."""
    informative, flat = _one(mechanism, good), _one(mechanism, bad)
    test = informative.estimate.info["start_map"]
    assert test["informative"] and test["gain_nats"] > 2 * test["noise_nats"] > 0
    assert informative.start_map_note() is None and informative.summary()["estimate_informative"]
    assert estimation.stayed_at_start(flat.estimate.info)
    assert flat.notes[0].startswith("The reports carry too little information at these settings: the map shown is")
    assert flat.summary()["estimate_informative"] is False and flat.summary()["start_map_trials"] == 1


@pytest.mark.parametrize("epsilon", [0.5, 1.0, 2.0])
def test_sem_geoi_at_d32_is_exactly_the_uniform_start(epsilon):
    """The issue's case: SEM-Geo-I at d = 32, 0.5 / 1 / 2 per km: no EM step beats the uniform start on held-out
    reports, and the map is that start (entropy log 1024)."""
    res = _one("sem-geoi", epsilon, d=32)
    test = res.estimate.info["start_map"]
    assert test["best_step"] == 0 and test["gain_nats"] == 0.0 and not test["informative"]
    f = res.estimate.density.ravel()
    assert -np.sum(f * np.log(f)) == pytest.approx(np.log(1024), abs=1e-3)
    assert "the map shown is the uniform starting map" in res.notes[0]


def test_the_cli_text_json_and_report_say_so(capsys, tmp_path):
    args = ["--mechanism", "sem-geoi", "--epsilon", "0.5", "--grid", "32", "--users", "20000"]
    assert main(["run", *args]) == 0
    text = capsys.readouterr().out
    assert "note: The reports carry too little information at these settings: the map shown is the uniform " \
           "starting map" in text
    assert main(["run", *args, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["estimate_informative"] is False and out["start_map_trials"] == 1
    page = tmp_path / "r.html"
    assert main(["report", *args, "--trials", "2", "--no-audit", "--out", str(page)]) == 0
    html = page.read_text()
    assert "<strong>Not an estimate:</strong> The reports carry too little information" in html


def test_the_goal_seek_counts_a_start_map_as_a_miss():
    """A uniform map can have a modest W2 (4,777 m here); a target it would meet is not met by it."""
    base = experiment.Scenario(dataset="minneapolis-stops", mechanism="sem-geoi", epsilon=0.5, grid_side=32,
                               n_users=20_000, trials=3)
    ev = tradeoff.Evaluator(base, "w2_m")
    assert np.isinf(ev.values(0.5, None, trials=1)).all()          # a miss, whatever its W2
    assert experiment.run(base.with_(trials=1)).metrics["w2_m"].iloc[0] < 6000


def test_ldpviz_estimate_says_so(tmp_path):
    """Phone reports from the Python client, SEM-Geo-I at d = 32 and 0.5 per km: the deployed estimate is the start."""
    mech = specs.deployable_mechanism("sem-geoi", Grid(BOX, 32), 0.5, {})
    spec = specs.build_spec(mech)
    path = specs.write_spec(spec, tmp_path / "collection.json")
    client = pyclient.Client(spec, random.Random(3).getrandbits)
    uv = np.random.default_rng(3).normal(0.5, 0.08, (4000, 2)).clip(0, 0.999)
    reports = tmp_path / "r.jsonl"
    reports.write_text("".join(json.dumps(client.report_unit(u, v)) + "\n" for u, v in uv))
    result = deployed.estimate_reports(path, reports, bootstrap=2)
    assert result.summary()["estimate_informative"] is False
    assert any(line.startswith("  NOT AN ESTIMATE: the reports carry too little information")
               for line in deployed.summary_text(result))


def test_compare_never_ranks_a_start_map():
    """Compare at 0.5 per km on d = 32: SEM-Geo-I's map is the uniform start in every trial, so it is named as not
    ranked and the best planar-Laplace-or-SEM-Geo-I line names the other."""
    from pathlib import Path

    from streamlit.testing.v1 import AppTest
    at = AppTest.from_file(str(Path(__file__).resolve().parents[2] / "ldpviz/app/views/compare.py"),
                           default_timeout=300)
    for key, value in {"ds": "minneapolis-stops", "users": "20000", "d": "32", "eps": "0.5", "trials": "2",
                       "cmp": "sem-geoi,grr", "metric": "w2_m"}.items():
        at.query_params[key] = value
    at.run()
    start = [b for b in at.button if b.label.startswith("Start (")]
    if start:
        start[0].click().run()
    assert not at.exception
    assert any(w.value.startswith("Not ranked: SEM-Geo-I") and estimation.START_MAP_TEXT in w.value
               for w in at.warning), [w.value for w in at.warning]
    assert not any("SEM-Geo-I" in s.value for s in at.success), [s.value for s in at.success]


def test_sparse_noise_free_reports_are_an_estimate():
    """A few hundred people on 250 km cells, planar Laplace at 50 per km (noise about 40 m, a report is its person's
    cell): the estimate is the people's own map and is informative, though the held-out prediction test alone would
    keep the start (60 held-out reports over tens of cells: a report in a cell no training report reached costs
    the fitted map ~690 nats). Property: the reports-against-start test (estimation.reports_fit_start) calls it
    informative and the map is within 0.5% (L1) of the true histogram. Fixed seeds."""
    from ldpviz import mechanisms

    grid = Grid(Region(center_lon=-84.0, center_lat=25.0, side_m=2_000_000.0, name="gulf"), 8)
    rng = np.random.default_rng(11)
    uv = np.concatenate([rng.uniform(0, 1, (200, 2)), rng.normal((0.3, 0.6), 0.12, (100, 2))]).clip(0, 0.999)
    users = grid.bin_unit(uv)
    truth = grid.histogram(users.cells) / len(users.cells)
    mech = mechanisms.create("planar-laplace", grid, 50.0)
    est = mech.estimate(mech.aggregate(users, np.random.default_rng(5)))
    test = est.info["start_map"]
    assert not estimation.stayed_at_start(est.info) and test["informative"]
    assert test["fit_z"] > estimation.START_MAP_Z
    assert not (test["best_step"] > 0 and test["gain_nats"] > estimation.START_MAP_Z * test["noise_nats"])
    assert np.abs(est.density.reshape(-1) - truth.reshape(-1)).sum() < 0.005


def test_reports_fit_start_null_calibration():
    """Test 2's null: reports drawn through a noisy channel from people spread exactly as the start reject H0 at
    about the stated level (one-sided 2 sigma, ~2.3%), never far above it; noise-free reports of the same people
    never reject (their histogram is the start's to the count). 200 fixed-seed replicates, 40 cells."""
    k, n = 40, 400
    start = np.full((1, k), 1.0 / k)
    eps = 1.0
    chan = np.full((k, k), 1.0) + (np.exp(eps) - 1.0) * np.eye(k)     # GRR: column x is P(. | x)
    chan /= chan.sum(axis=0, keepdims=True)

    def forward(f):
        return f @ chan.T

    d_start = estimation.start_fit_noise(forward, start[0])
    people = np.repeat(np.arange(k), n // k)                          # exactly the start
    rng = np.random.default_rng(7)
    rejected = 0
    for _ in range(200):
        reports = np.array([rng.choice(k, p=chan[:, x]) for x in people])
        z, _ = estimation.reports_fit_start(np.bincount(reports, minlength=k), forward(start)[0], d_start)
        rejected += z > estimation.START_MAP_Z
    assert rejected / 200 < 0.06
    exact = np.bincount(people, minlength=k).astype(float)
    assert estimation.reports_fit_start(exact, start[0], start[0])[0] <= estimation.START_MAP_Z   # identity: D = f


def test_the_reading_at_a_limit_says_start_map_not_n_a():
    """Issue 36: the inverse question (what one collection reaches at the officer's limit) at an epsilon where every
    collection stays at the start map read 'W2 n/a on average'. Property: no mean, a note that says the estimate
    stayed at the start map for each collection, and the limit line shows that note."""
    from ldpviz.decide import feasibility
    base = experiment.Scenario(dataset="minneapolis-stops", mechanism="sem-geoi", epsilon=0.5, grid_side=32,
                               n_users=20_000, seed=0, trials=3)
    reading = tradeoff.reading_at(base, "w2_m", 500.0, 0.5, trials=3)
    assert reading["mean"] is None and reading["at_start"] == 3 and reading["met"] == 0
    assert "every collection stayed at the estimate's start map" in reading["note"], reading
    line = feasibility.at_limit_text("w2_m", reading, "geo-i")
    assert "n/a" not in line and "start map" in line, line


def test_sweep_says_which_rows_stayed_at_the_start(tmp_path, capsys):
    """`ldpviz sweep` (SEM-Geo-I, d = 16, 3,000 users; 0.5 stays at the start, 4 per km leaves it, fixed seed): the
    CSV flags the start-map row in the run's words and only it; stderr names that row and says what it means."""
    import pandas as pd
    out = tmp_path / "sweep.csv"
    assert main(["sweep", "--mechanism", "sem-geoi", "--grid", "16", "--users", "3000", "--vary", "epsilon=0.5,4",
                 "--out", str(out)]) == 0
    err = capsys.readouterr().err
    df = pd.read_csv(out, keep_default_na=False).set_index("epsilon")
    assert list(df["estimate_informative"]) == [False, True] and list(df["start_map_trials"]) == [1, 0]
    assert df.loc[0.5, "start_map"].startswith(estimation.START_MAP_TEXT) and df.loc[4.0, "start_map"] == ""
    note = next(line for line in err.splitlines() if "uniform starting map" in line)
    assert note.startswith("note: 1 of 2 rows stayed at (or within noise of) the uniform starting map "
                           "(sem-geoi at epsilon = 0.5: 1 of 1 trial): the reports carry too little information at "
                           "these settings"), note
    assert "epsilon = 4" not in note


def test_a_sweep_of_informative_settings_says_nothing(tmp_path, capsys):
    out = tmp_path / "sweep.csv"
    assert main(["sweep", "--mechanism", "sem-geoi", "--grid", "16", "--users", "3000", "--vary", "epsilon=4,8",
                 "--out", str(out)]) == 0
    assert "starting map" not in capsys.readouterr().err
    import pandas as pd
    assert pd.read_csv(out)["estimate_informative"].all()


def test_tradeoffs_marks_and_names_start_map_points():
    """Trade-offs, SEM-Geo-I and GRR at d = 32 on 3,000 users over 0.5 and 1: SEM-Geo-I's estimate is the uniform
    start at both (marked on every curve and named under the charts, in the run's words); GRR has no such test and
    is never named."""
    from pathlib import Path

    from streamlit.testing.v1 import AppTest
    at = AppTest.from_file(str(Path(__file__).resolve().parents[2] / "ldpviz/app/views/trade_offs.py"),
                           default_timeout=300)
    for key, value in {"ds": "minneapolis-stops", "users": "3000", "d": "32", "trials": "1", "smech": "sem-geoi,grr",
                       "vary": "epsilon", "vals": "0.5,1"}.items():
        at.query_params[key] = value
    at.run()
    assert not at.exception
    note = next(w.value for w in at.warning if "Not an estimate" in w.value)
    assert "2 of 4 runs stayed at (or within noise of) the uniform starting map" in note, note
    assert "SEM-Geo-I (subset exponential mechanism) at ε (privacy budget) = 0.5: 1 of 1 trial" in note
    assert estimation.START_MAP_TEXT.split(":")[0] in note and "GRR" not in note
    for chart in at.get("plotly_chart"):
        marked = [t for t in json.loads(chart.proto.spec)["data"] if t.get("name") == "stayed at the uniform start map"]
        assert len(marked) == 1 and marked[0]["x"] == [0.5, 1.0]
        assert all("SEM-Geo-I" in text and "starting map" in text for text in marked[0]["text"])
