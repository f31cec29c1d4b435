"""Maps are framed to their column: the widths per slot follow the window's width the browser reports (issue 21)."""

from ldpviz.app import ui


def test_column_widths_match_the_measured_1024_layout_and_grow_with_the_window():
    """At 1024 px (and for an unknown or narrower window) the measured widths; wider windows give wider columns,
    never narrower than the 1024 px ones, and the slots keep their order (full > half > third)."""
    assert ui.column_widths(1024) == ui.DESKTOP_WIDTHS == ui.column_widths(None) == ui.column_widths(800)
    wide = ui.column_widths(1440)
    assert wide["full"] > wide["half"] > wide["third"] > ui.DESKTOP_WIDTHS["third"]
    assert wide["full"] - ui.DESKTOP_WIDTHS["full"] == 1440 - 1024
    assert ui.map_size("third")["width"] == ui.DESKTOP_WIDTHS["third"]     # no browser: the 1024 framing
