"""Maps are framed to their column: the widths per slot follow the window's width the browser reports (issue 21)."""

from ldpviz.app import ui


def test_column_widths_match_the_measured_1024_layout_and_grow_with_the_window():
    """At 1024 px (and for an unknown window) the measured widths; wider windows give wider columns,
    never narrower than the 1024 px ones, and the slots keep their order (full > half > third)."""
    assert ui.column_widths(1024) == ui.DESKTOP_WIDTHS == ui.column_widths(None)
    wide = ui.column_widths(1440)
    assert wide["full"] > wide["half"] > wide["third"] > ui.DESKTOP_WIDTHS["third"]
    assert wide["full"] - ui.DESKTOP_WIDTHS["full"] == 1440 - 1024
    assert ui.map_size("third")["width"] == ui.DESKTOP_WIDTHS["third"]     # no browser: the 1024 framing


def test_narrow_windows_get_their_own_narrower_columns():
    """Issue 27: a 390 px window without a phone's User-Agent was framed for 560 px and cut the outline. Below
    1024 px the columns shrink with the window; below Streamlit's 640 px breakpoint
    they stack, each the screen's width (356 px at 390 px, what a phone gets)."""
    assert ui.column_widths(390) == {slot: ui.PHONE_WIDTH for slot in ui.MAP_SLOTS}
    mid = ui.column_widths(800)
    for slot in ui.MAP_SLOTS:
        assert mid[slot] < ui.DESKTOP_WIDTHS[slot]
        assert ui.column_widths(639)[slot] == 639 - (390 - ui.PHONE_WIDTH)       # stacked: the screen's width
    assert mid["full"] > mid["half"] > mid["third"] > 0

