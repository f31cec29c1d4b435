"""Explore's pinned setting, the optional basemap and the maps' lat/lon tooltips (issue 12, items 6 and 9).

AppTest (streamlit.testing) on small scenarios, plus the pure parts: the link form of a pin, the deck's
map provider and the tooltip fields.
"""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import parse_qsl

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from ldpviz.app import pin, state
from ldpviz.render import maps as viz
from ldpviz.geo.domain import Grid, Region
from ldpviz.geo.partition import Partition

ROOT = Path(__file__).resolve().parents[2]
SMALL = {"ds": "normal", "users": "3000", "d": "8"}


def explore(**query: str) -> AppTest:
    at = AppTest.from_file(str(ROOT / "ldpviz/app/views/explore.py"), default_timeout=120)
    for key, value in {**SMALL, **query}.items():
        at.query_params[key] = value
    return at


def link(at: AppTest, key: str) -> str | None:
    """A link parameter as the page last wrote it."""
    value = at.query_params.get(key)
    return value[0] if isinstance(value, list) else value


def assert_clean(at: AppTest) -> None:
    assert not at.exception, [e.message for e in at.exception]
    assert not [e.value for e in at.error if "Something went wrong inside ldpviz" in e.value]


def pin_table(at: AppTest) -> pd.DataFrame:
    """The 'Pinned setting vs current' readout table (st.table), indexed by readout."""
    tables = [t.value for t in at.table if "Current − pinned" in t.value.columns]
    assert len(tables) == 1, [t.value for t in at.table]
    return tables[0]


def decks(at: AppTest) -> list[dict]:
    """Every map on the page, as the JSON sent to the browser."""
    return [json.loads(d.proto.json) for d in at.get("deck_gl_json_chart")]


def test_pin_keeps_the_setting_compares_it_and_unpin_clears_it():
    """Pinning keeps the scenario (in the config and the link); an unchanged pin is the current setting itself (a
    cache hit: same Scenario); after ε changes, the table keeps the pinned W2 and shows the new one and their
    difference, with three maps (pinned, current, difference); Unpin removes it all."""
    at = explore()
    at.run()
    assert_clean(at)
    assert not any("Pinned setting vs current" in h.value for h in at.subheader)
    at.button(key="pin:on").click().run()
    assert_clean(at)
    assert at.session_state["cfg"]["pin"] == {"ds": "normal", "users": "3000", "d": "8", "region": "Whole square"}
    assert dict(parse_qsl(link(at, "pin"))) == at.session_state["cfg"]["pin"]
    assert any("The current setting is the pinned one" in i.value for i in at.info)   # same Scenario repr
    table = pin_table(at)
    assert table.loc["W2 (metres)", "Pinned"] == table.loc["W2 (metres)", "Current"]
    pinned_w2 = table.loc["W2 (metres)", "Pinned"]

    at.select_slider(key="w:epsilon").set_value(4.0).run()
    assert_clean(at)
    table = pin_table(at)
    assert table.loc["W2 (metres)", "Pinned"] == pinned_w2
    assert table.loc["W2 (metres)", "Current"] != pinned_w2
    assert table.loc["W2 (metres)", "Current − pinned"].startswith(("+", "−"))
    # epsilon 1 -> 4: the current setting is less private, so a better W2 never reads plain "better"
    assert table.loc[pin.PRIVACY_ROW, "Current is"] == "less private"
    assert table.loc["W2 (metres)", "Current is"] in ("better, at less privacy", "worse")
    assert {"Attacker's error (metres; larger = more private)", "AQE (relative error of counts "
            "(0.1 = 10%))", "KL (nats)"} <= set(table.index)
    assert len(decks(at)) == 5   # true and estimated density; pinned, current and their difference
    assert any("ε 1 → 4" in c.value for c in at.caption), [c.value for c in at.caption][:5]

    at.button(key="pin:off").click().run()
    assert_clean(at)
    assert at.session_state["cfg"]["pin"] is None and "pin" not in at.query_params
    assert not any("Pinned setting vs current" in h.value for h in at.subheader)


def test_pin_survives_a_page_switch():
    """The pin lives in the session's config: Explore -> Compare -> Explore keeps it (and its comparison)."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    for key, value in SMALL.items():
        at.query_params[key] = value
    at.run()
    at.button(key="pin:on").click().run()
    kept = dict(at.session_state["cfg"]["pin"])
    at.switch_page("ldpviz/app/views/compare.py").run()
    assert_clean(at)
    assert at.title[0].value.startswith("Compare")
    assert at.session_state["cfg"]["pin"] == kept
    at.switch_page("ldpviz/app/views/explore.py").run()
    assert_clean(at)
    assert at.session_state["cfg"]["pin"] == kept
    assert any("Pinned setting vs current" in h.value for h in at.subheader)


def test_a_link_with_a_pin_reopens_the_comparison_and_a_bad_pin_is_refused():
    """pin= in the link (a reload) brings the comparison back; a pin with a bad value is dropped with a warning."""
    at = explore(eps="2", pin="ds=normal&users=3000&d=8&eps=0.5")
    at.run()
    assert_clean(at)
    table = pin_table(at)
    assert table.loc["W2 (metres)", "Pinned"] != table.loc["W2 (metres)", "Current"]
    assert any("ε 0.5 → 2" in c.value for c in at.caption)
    at = explore(pin="eps=99&mech=grr")
    at.run()
    assert_clean(at)
    assert at.session_state["cfg"]["pin"] is None
    assert any("link parameter 'pin' ignored" in w.value for w in at.warning)


def test_pin_on_another_grid_says_why_there_is_no_difference_map():
    """A pin on another grid has no cell-by-cell difference: the page says so instead of drawing a wrong map."""
    at = explore(pin="ds=normal&users=3000&d=16")
    at.run()
    assert_clean(at)
    assert any("No cell-by-cell difference" in i.value for i in at.info)
    assert len(decks(at)) == 4   # true and estimated density; pinned and current, no difference


def test_basemap_is_off_by_default_and_the_toggle_switches_every_map():
    """Off: every deck has map_provider None (no third-party request). On: every deck uses CARTO's token-free
    light style, and the choice is in the link."""
    at = explore(pin="ds=normal&users=3000&d=8&eps=0.5")
    at.run()
    assert_clean(at)
    found = decks(at)
    assert len(found) == 5
    assert all(d.get("mapProvider") is None for d in found), [d.get("mapProvider") for d in found]
    at.toggle(key="w:basemap").set_value(True).run()
    assert_clean(at)
    found = decks(at)
    assert all(d.get("mapProvider") == "carto" and viz.BASEMAP_HOST in d.get("mapStyle", "")
               for d in found), [(d.get("mapProvider"), d.get("mapStyle")) for d in found]
    assert link(at, "basemap") == "1"
    assert any(viz.BASEMAP_CREDIT in c.value for c in at.caption)


def test_pin_and_basemap_round_trip_through_the_link():
    """encode/decode keep a pin (urlencoded in one parameter) and the basemap; defaults leave the link empty."""
    cfg = state.defaults()
    assert "pin" not in state.encode(cfg) and "basemap" not in state.encode(cfg)
    cfg.update(epsilon=0.5, mechanism="grr", grid_side=16)
    cfg["pin"] = state.pin_query(cfg)
    cfg["basemap"] = True
    back, warnings = state.decode(state.encode(cfg))
    assert not warnings
    assert back["pin"] == {"eps": "0.5", "mech": "grr", "d": "16"} and back["basemap"] is True
    assert state.decode({"pin": "users=3000&zz=1"})[0]["pin"] is None


def test_tooltips_give_each_cell_centre_in_degrees():
    """Every map's records carry the cell's centre (lat, lon) and the tooltip shows it with the value and unit;
    across the antimeridian the longitude is wrapped into [-180, 180)."""
    grid = Grid(Region(179.99, -16.5, 8_000, "Fiji, across 180°"), 4)
    density = np.full((4, 4), 1 / 16)
    lon, lat = grid.cell_centers_lonlat()
    for deck in (viz.density_deck(grid, density), viz.difference_deck(grid, density, density * 0 + 2 / 16),
                 viz.column_deck(grid, density), viz.estimate_deck(grid, density)):
        records = [r for layer in deck.layers for r in (layer.data if isinstance(layer.data, list) else [])
                   if "cell" in r]
        assert len(records) == 16
        for r in records:
            assert r["lat"] == pytest.approx(lat[r["cell"]], abs=1e-5)
            assert -180 <= r["lon"] < 180
            assert r["lon"] == pytest.approx((lon[r["cell"]] + 180) % 360 - 180, abs=1e-5)
        assert "{lat}" in deck._tooltip["text"] and "{lon}" in deck._tooltip["text"]
    assert "% of users" in viz.density_deck(grid, density)._tooltip["text"]
    assert "percentage points" in viz.difference_deck(grid, density, density)._tooltip["text"]


def test_adaptive_rectangles_show_their_centre():
    """An adaptive partition's rectangle tooltip gives the rectangle's centre."""
    grid = Grid(Region(-93.27, 44.97, 4_000, "x"), 4)
    part = Partition(np.array([[0.0, 0.0, 0.5, 1.0], [0.5, 0.0, 1.0, 1.0]]), np.array([0.25, 0.75]))
    records = viz.partition_records(grid.region, part, 4, vmax=0.1)
    lon, lat = grid.region.unit_to_lonlat(np.array([[0.25, 0.5], [0.75, 0.5]]))
    assert [(r["lon"], r["lat"]) for r in records] == [(pytest.approx(lon[k], abs=1e-5),
                                                        pytest.approx(lat[k], abs=1e-5)) for k in range(2)]


def test_readout_table_says_which_setting_is_better():
    """Lower error is better; a larger attacker error is more private; equal values read 'the same'."""
    class R:
        def __init__(self, **m):
            self.m = m

        def mean(self):
            return pd.Series(self.m)

    table = pin.readout_table(R(w2_m=500.0, aqe=0.2, kl=0.1), R(w2_m=400.0, aqe=0.3, kl=0.1), (1000.0, 800.0),
                              lambda k, v: f"{v:g}").set_index("Readout")
    assert table["Current is"].tolist() == ["better", "worse", "the same", "less private"]
    assert table["Current − pinned"].tolist() == ["−100", "+0.1", "0", "−200"]
    # with the privacy loss between neighbouring cells (pinned 1, current 4): accuracy gained at less privacy
    # is never plain "better"; with the roles swapped, accuracy lost for more privacy is not plain "worse"
    traded = pin.readout_table(R(w2_m=500.0, aqe=0.2, kl=0.1), R(w2_m=400.0, aqe=0.3, kl=0.1), (1000.0, 800.0),
                               lambda k, v: f"{v:g}", privacy=(1.0, 4.0)).set_index("Readout")
    assert traded["Current is"].tolist() == ["less private", "better, at less privacy", "worse", "the same",
                                             "less private"]
    swapped = pin.readout_table(R(w2_m=500.0, aqe=0.2, kl=0.1), R(w2_m=400.0, aqe=0.3, kl=0.1), None,
                                lambda k, v: f"{v:g}", privacy=(4.0, 1.0)).set_index("Readout")
    assert swapped["Current is"].tolist()[:3] == ["more private", "better", "worse, for more privacy"]


READOUT_PAGES = [  # (page, link) small settings; every st.metric on each must explain itself
    ("ldpviz/app/views/explore.py", {**SMALL, "trials": "2"}),
    ("ldpviz/app/views/trade_offs.py", {**SMALL, "smech": "grr", "vals": "1"}),
    ("ldpviz/app/views/mechanisms.py", {"ds": "normal", "mech": "grr", "cd": "6"}),
    ("ldpviz/app/views/flows.py", {"fd": "4"}),
    ("ldpviz/app/views/people.py", {"pd": "8", "pk": "2", "pshuf": "1"}),
]


@pytest.mark.parametrize("page,query", READOUT_PAGES, ids=[Path(p).stem for p, _ in READOUT_PAGES])
def test_every_readout_states_its_unit_and_what_good_and_poor_look_like(page, query):
    """Each st.metric's help comes from ldpviz.decide.explain.readout_help: a unit in brackets, a direction, and
    what good and poor values look like (the one exception: the People page's 'Privacy unit', which is not a number)."""
    at = AppTest.from_file(str(ROOT / page), default_timeout=180)
    for key, value in query.items():
        at.query_params[key] = value
    at.run()
    assert_clean(at)
    shown = [m for m in at.metric if m.label != "Privacy unit"]
    assert len(shown) >= 3, [m.label for m in at.metric]
    for m in shown:
        help_text = m.proto.help
        assert "Good: " in help_text and "Poor: " in help_text, (m.label, help_text)
        assert any(w in help_text for w in ("better", "more private", "cheaper", "more accurate", "a pass")), \
            (m.label, help_text)
        assert help_text.startswith("**") and "(" in help_text.split("\n")[0], (m.label, help_text)


def test_readout_help_covers_every_guide_entry_and_refuses_unknown_keys():
    """Every non-map readout has a label, unit, direction, definition, good and poor; an unknown key is refused."""
    from ldpviz.decide import explain
    from ldpviz.errors import LdpvizInputError
    for key, entry in explain.READOUT_GUIDE.items():
        assert all(entry.get(f) for f in ("label", "unit", "direction", "help", "good", "poor")), key
        text = explain.readout_help(key, "Detail.")
        assert entry["unit"] in text and "Detail." in text and f"Good: {entry['good']}" in text
    assert "nats" in explain.readout_help("kl")
    with pytest.raises(LdpvizInputError, match="unknown readout"):
        explain.readout_help("nope")


@pytest.mark.parametrize("page,query", [("ldpviz/app/views/compare.py", {**SMALL, "cmp": "grr,dam"}),
                                        ("ldpviz/app/views/mechanisms.py", {"ds": "normal", "mech": "grr", "cd": "6"}),
                                        ("ldpviz/app/views/people.py", {"pd": "8", "pk": "2"}),
                                        ("ldpviz/app/views/data.py", {"ds": "normal"}),
                                        ("ldpviz/app/views/flows.py", {"fd": "4"})],
                         ids=["Compare", "Mechanisms", "People", "Data", "Flows"])
def test_other_map_pages_follow_the_basemap_setting(page, query):
    """The basemap choice is the session's, not Explore's: off by default on every map page, on when the link says
    so (as after switching it on elsewhere)."""
    for on in (False, True):
        at = AppTest.from_file(str(ROOT / page), default_timeout=180)
        for key, value in {**query, **({"basemap": "1"} if on else {})}.items():
            at.query_params[key] = value
        at.run()
        assert_clean(at)
        providers = {d.get("mapProvider") for d in decks(at)}
        assert providers == ({"carto"} if on else {None}), providers
        assert at.toggle(key="w:basemap").value is on


@pytest.mark.parametrize("query", [{"seed": "8675309"}, {"seed": "8675310", "p.radius_factor": "1.5", "trials": "2"}],
                         ids=["defaults", "a parameter and trials"])
def test_an_unchanged_pin_costs_no_extra_run(monkeypatch, query):
    """Pinning the current setting runs nothing new: the pinned Scenario is the current one, served by the same
    cache (counted at ldpviz.experiment.run, on a seed no other test uses so the cache starts cold)."""
    from ldpviz import experiment
    calls = []
    real = experiment.run
    monkeypatch.setattr(experiment, "run", lambda *a, **k: calls.append(a[0]) or real(*a, **k))
    at = explore(**query)
    at.run()
    assert_clean(at)
    # one run, or with several trials two: Explore draws the first trial's maps first, then runs them all (issue 28)
    first = len(calls)
    assert first == (1 if all(c.trials == 1 for c in calls) else 2) and calls[-1].trials >= 1
    at.button(key="pin:on").click().run()
    assert_clean(at)
    assert len(calls) == first, calls[first:]
    at.select_slider(key="w:epsilon").set_value(2.0).run()
    assert len(calls) > first and all(c.epsilon == 2.0 for c in calls[first:])   # only the new current setting
