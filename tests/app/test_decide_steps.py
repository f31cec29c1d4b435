"""The Decide page's steps as functions over one typed state (issue 40), run without AppTest: Streamlit's bare mode
draws nothing and the widgets bound to the config return its values, so each step's answer can be checked from the
state it is given. Also the seek schedule (ldpviz.app.seeks) on its own, and the signed mechanism built once."""

from __future__ import annotations

import sys
import uuid

import streamlit as st

from ldpviz import mechanisms
from ldpviz.app import compute, longrun, seeks, state
from ldpviz.app.decide_page import (DecideState, Need, Protection, Source, deploy, sign, the_answer,
                                    what_the_map_must_show, who_is_protected, your_data)
from ldpviz.data import datasets
from ldpviz.decide import decision_flow as flow
from ldpviz.errors import LdpvizInputError
from ldpviz.experiment import Scenario
from ldpviz.mechanisms import estimation
from ldpviz.mechanisms.base import GEO_I


def fresh(**changes) -> DecideState:
    return DecideState(cfg={**state.defaults(), **changes}, session={"uploads": {}})


def small_source(name: str = "normal") -> Source:
    """Step 1's answer for a bundled dataset and its first preset (what your_data returns for them)."""
    data, key = compute.get_dataset(name)
    choice = next(iter(data.presets))
    region = data.presets[choice]
    inside = int(region.contains(data.lon, data.lat).sum())
    return Source(name=name, key=key, data=data, trips=None, labels={name: data.label}, choice=choice, region=region,
                  upload_name=None, inside=inside, rows_text=f"{data.n:,} rows; {inside:,} inside the region",
                  people=None)


def test_your_data_returns_the_dataset_and_region_chosen():
    s = fresh()
    source = your_data(s)
    first = datasets.names()[0]
    data, key = compute.get_dataset(first)
    assert (source.name, source.key, source.trips, source.people) == (first, key, None, None)
    assert source.choice == next(iter(data.presets)) and source.region == data.presets[source.choice]
    assert source.inside == int(source.region.contains(data.lon, data.lat).sum())
    assert source.rows_text.endswith(f"{source.inside:,} inside the region")
    assert s.cfg["decide_trips"] == "" and s.cfg["dataset"] == first


def test_who_is_protected_leaves_the_mechanisms_of_the_models_accepted():
    s = fresh(decide_models=[GEO_I])
    s.source = small_source()
    protection = who_is_protected(s)
    assert protection == Protection(models=[GEO_I], eligible=["planar-laplace", "sem-geoi"],
                                    why_not=flow.eligible([GEO_I])[1])


def test_what_the_map_must_show_returns_the_need():
    s = fresh(decide_metric="aqe", decide_target=0.02, grid_side=16, decide_probability=0.9)
    s.source = small_source()
    assert what_the_map_must_show(s) == Need(metric="aqe", target=0.02, side=16, probability=0.9)


def _scenarios(names: list[str]) -> list[Scenario]:
    return [Scenario(dataset="normal", mechanism=m, epsilon=1.0, grid_side=8, n_users=2000, seed=0) for m in names]


def test_schedule_starts_the_quick_group_and_waits_for_start_for_the_rest(monkeypatch):
    """Without a click the quick group starts within the CPU budget, each with a CPU limit; Start (the session's
    keys) runs every pending seek without one; a seek that overran waits for Start and is predicted at its limit."""
    predicted = {"grr": 0.5, "oue": 0.8, "dam": 60.0}     # limits of 3 s, 3 s and 180 s
    monkeypatch.setattr(compute, "goal_seek_seconds",
                        lambda sc, trials, branch="reached", w2_target_m=None: predicted[sc.mechanism])
    monkeypatch.setattr(longrun, "DECIDE_QUICK_S", 10.0)
    monkeypatch.setattr(longrun, "DECIDE_OPEN_CPU_S", 8.0)
    key = f"test-{uuid.uuid4()}"             # seeks.overran() is server-wide: a key of this run only
    asked = seeks.Seeks(_scenarios(list(predicted)), key, "epsilon", "w2_m", 1234.5, 0.95, 1.0)
    question = ("epsilon", "w2_m", 1234.5, 0.95, 0.0)             # the key the page held answers under
    assert asked.keys == [repr(("decide", sc, key, question)) for sc in asked.scenarios]
    plan = seeks.schedule(asked, set())
    assert plan.pending == [0, 1, 2] and plan.by_click == []
    assert plan.now == flow.quick_group(plan.every_s, min(8.0, 10.0 * plan.threads)) == [0, 1]
    assert plan.later == [2]
    limits = plan.limits()
    assert set(limits) == {0, 1} and all(v is not None and v > 0 for v in limits.values())
    plan.start_all(asked)                      # Start: every pending seek, no limit, remembered in the session
    assert (plan.by_click, plan.later) == ([0, 1, 2], []) and plan.clicked == set(asked.keys)
    assert seeks.schedule(asked, plan.clicked).limits() == {0: None, 1: None, 2: None}
    seeks.overran().add(asked.keys[0])        # ran past its limit when started without a click
    again = seeks.schedule(asked, set())
    assert 0 not in again.now and 0 in again.later
    assert again.seek_s[0] == flow.quick_limit(predicted["grr"])


def test_side_by_side_says_how_each_seek_ended(monkeypatch):
    """Answered (found takes it), cannot run here (an input error), or stopped at its CPU limit (remembered)."""
    def fake(turn, metric, target, probability, epsilon, scenario, dataset, time_limit_s=None):
        if scenario.mechanism == "grr":
            raise estimation.Stopped("over its limit")
        if scenario.mechanism == "oue":
            raise LdpvizInputError("not on this grid")
        return {"mechanism": scenario.mechanism, "reached": False}
    monkeypatch.setattr(seeks, "answer", fake)
    monkeypatch.setattr(compute, "goal_seek_seconds", lambda sc, trials, branch="reached", w2_target_m=None: 1.0)
    asked = seeks.Seeks(_scenarios(["grr", "oue", "dam"]), f"test-{uuid.uuid4()}", "epsilon", "w2_m", 4321.0, 0.95,
                        1.0)
    plan = seeks.schedule(asked, set())
    found = {}
    done = {d.index: d for d in seeks.side_by_side(asked, plan, [0, 1, 2], {0: 1.0, 1: 1.0, 2: None}, None,
                                                   found.__setitem__)}
    assert done[0].stopped and asked.keys[0] in seeks.overran()
    assert isinstance(done[1].error, LdpvizInputError)
    assert done[2] == seeks.Done(2) and found == {2: {"mechanism": "dam", "reached": False}}


def test_the_chosen_mechanism_is_built_once_per_answer(monkeypatch):
    """Steps 2 to 6 on a small question (Geo-I, d = 8, 2,000 users): each answer's mechanism is built once, in step
    4; step 5 signs that same object, and neither step 6's bundle nor the signed report builds it again."""
    monkeypatch.setattr(longrun, "DECIDE_QUICK_S", 1e6)      # every seek starts at once, without Start
    monkeypatch.setattr(longrun, "DECIDE_OPEN_CPU_S", 1e6)
    built: list[str] = []
    real = mechanisms.create

    def counting(name, *args, **kwargs):
        if sys._getframe(1).f_globals.get("__name__", "").startswith("ldpviz.app.decide_page"):
            built.append(name)
        return real(name, *args, **kwargs)
    monkeypatch.setattr(mechanisms, "create", counting)
    downloads = {}
    monkeypatch.setattr(st, "download_button",
                        lambda label, data, *args, key=None, **kwargs: downloads.__setitem__(key, data))
    s = fresh(dataset="normal", n_users=2000, grid_side=8, decide_models=[GEO_I], decide_metric="w2_m",
              decide_target=1480.0, decide_unit="report")
    s.source = small_source()
    s.protection = who_is_protected(s)
    s.need = what_the_map_must_show(s)
    s.answers = the_answer(s)
    assert s.answers.reached and sorted(built) == sorted(s.answers.reached) == sorted(s.answers.mechanisms)
    assert [r["mechanism"] for r in s.answers.ranked] == [r["mechanism"] for r in s.session["decide_answers"]]
    s.signed = sign(s)
    assert s.signed.chosen == flow.signed(s.answers.ranked)
    assert s.signed.mechanism is s.answers.mechanisms[s.signed.chosen]
    deploy(s)
    report = downloads["decide:download"]()            # what the download button builds when pressed
    assert "<html" in report.lower() and s.signed.chosen in report
    assert sorted(built) == sorted(s.answers.reached), "a mechanism was built again after step 4"

