"""Issue 40: every dashboard setting is declared once (ldpviz.app.settings): a refused link value gets one clear
message, the table's bounds and defaults are the core's constants, and the state layer is a loop over it."""

from __future__ import annotations

import pytest

from ldpviz import limits
from ldpviz.app import settings, state
from ldpviz.decide import decision_flow, feasibility, one_collection
from ldpviz.geo.domain import MAX_GRID_SIDE
from ldpviz.mechanisms.base import EPSILON_MAX, EPSILON_MIN
from ldpviz.people.user_heatmaps import METHODS

LINKED = [s for s in settings.SETTINGS if s.key is not None]
#: Settings that read every link value: free text the page checks against its options, and switches ('1' turns
#: one on, anything else leaves it at its default).
READS_ANY = {"region", "vary", "values", "flows_dataset", "flows_region", "flows_mechanism", "flows_estimator",
             "people_region", "basemap", "show_difference", "show_spread", "budget_from_total", "frontier",
             "heatmap_filter", "blackbox", "decide_purpose", "decide_owner", "decide_retention"}
#: Unknown sweep mechanisms are left out without a word (as before the table; 'cmp' and 'mets' name them).
SILENT = {"sweep_mechanisms"}


def test_one_row_per_field_and_per_link_key():
    fields = [s.field for s in settings.SETTINGS]
    keys = [s.key for s in LINKED]
    assert len(fields) == len(set(fields)) and len(keys) == len(set(keys))
    assert list(state.defaults()) == fields
    assert set(decision_flow.SETTING) <= set(fields)
    assert {s.field for s in settings.DASHBOARD} | set(decision_flow.SETTING) == set(fields)


def test_every_row_refuses_an_out_of_range_and_a_malformed_value_or_reads_any():
    for s in LINKED:
        assert len(s.refused_values()) == (0 if s.field in READS_ANY else 2), s.field


@pytest.mark.parametrize("row", [s for s in LINKED if s.field not in READS_ANY], ids=lambda s: s.key)
def test_a_refused_link_value_gets_one_clear_message(row):
    for text in row.refused_values():
        cfg, warnings = state.decode({row.key: text})        # never raises
        value = cfg[row.field]
        assert value == row.initial() or (row.kind is list and text not in value), (text, value)
        if row.field in SILENT:
            assert warnings == [], warnings
            continue
        assert len(warnings) == 1, (text, warnings)
        message = warnings[0]
        assert message.startswith("link parameter") and row.key in message and "Traceback" not in message
        if row.kind in (int, float) and row.read is None and row.choices is None:
            said = f"{row.low:g}" in message and f"{row.high:g}" in message
            assert said if text[0].isdigit() else "must be a number" in message, message
        if row.choices is not None and row.read is None:
            assert all(str(c) in message for c in row.choices), message


@pytest.mark.parametrize("row", [s for s in LINKED if s.field in READS_ANY], ids=lambda s: s.key)
def test_a_setting_that_reads_any_value_reads_junk_silently(row):
    cfg, warnings = state.decode({row.key: "junk <&>"})
    assert warnings == []


@pytest.mark.parametrize("row", [s for s in LINKED if s.kind in (int, float) and s.low is not None
                                 and s.choices is None], ids=lambda s: s.key)
def test_a_number_setting_takes_its_bounds_and_its_link_keeps_them(row):
    for bound in (row.low, row.high):
        text = str(row.kind(bound))
        cfg, warnings = state.decode({row.key: text})
        assert not warnings and cfg[row.field] == row.kind(bound)
        again, warnings = state.decode(state.encode(cfg))
        assert not warnings and again[row.field] == cfg[row.field]


def test_bounds_and_defaults_are_the_core_constants():
    s = settings.SETTING
    for field in ("epsilon", "decide_epsilon", "decide_limit"):
        assert (s[field].low, s[field].high) == (EPSILON_MIN, EPSILON_MAX), field
    assert state.EPSILON_LINK_RANGE == (EPSILON_MIN, EPSILON_MAX)
    assert s["grid_side"].high == MAX_GRID_SIDE and s["grid_side"].low == settings.LINK_MIN_GRID_SIDE
    assert (s["n_users"].low, s["n_users"].high) == (0, limits.MAX_USERS)
    assert (s["seed"].low, s["seed"].high) == (0, limits.MAX_SEED)
    assert s["trials"].high == state.MAX_TRIALS_UI <= limits.MAX_TRIALS
    assert s["people_method"].choices == tuple(METHODS)
    assert s["decide_probability"].default == one_collection.PROBABILITY
    assert s["decide_limit"].default == feasibility.DEFAULT_LIMIT
    assert s["decide_target"].default == decision_flow.DECIDE_TARGET_DEFAULTS["w2_m"]
    assert decision_flow.DEFAULTS == {r.field: r.default for r in decision_flow.SETTINGS}
    # the sidebar's steps lie within what a link may set
    assert state.EPSILON_RANGE == (min(state.EPSILON_OPTIONS), max(state.EPSILON_OPTIONS))
    assert EPSILON_MIN <= state.EPSILON_RANGE[0] and state.EPSILON_RANGE[1] <= EPSILON_MAX
    assert all(s["grid_side"].low <= d <= s["grid_side"].high for d in state.GRID_OPTIONS)


def test_widget_bounds_are_the_settings_bounds():
    assert settings.SETTING["n_users"].widget_bounds() == {"min_value": 0, "max_value": limits.MAX_USERS}
    assert settings.SETTING["budget_period"].widget_bounds() == {"min_value": 0.001, "max_value": 1000.0}
    assert settings.SETTING["region"].widget_bounds() == {}
