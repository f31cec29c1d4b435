"""ldpviz.wording.length: the one distance formatter (issue 27: '1.039e+05 m', '5,983.08 km', 'W2 (m) 69.5 km')."""

from __future__ import annotations

import re

import pytest

from ldpviz.wording import length


@pytest.mark.parametrize("metres,text", [(0, "0 m"), (0.004, "under 1 cm"), (3.456, "3.46 m"), (99.94, "99.9 m"),
                                         (250, "250 m"), (999.4, "999 m"), (1000, "1 km"), (1234, "1.23 km"),
                                         (69_500, "69.5 km"), (103_900, "104 km"), (5_983_080, "5,983 km"),
                                         (-1234, "-1.23 km")])
def test_length_reads_as_people_write_distances(metres, text):
    assert length(metres) == text


def test_length_never_uses_exponents_or_long_decimals():
    """Over 12 decades of distances: no exponent, at most 3 significant digits below 100 km, km from 1,000 m."""
    for k in range(-2, 10):
        for mantissa in (1.0, 1.039, 2.5, 9.99):
            text = length(mantissa * 10.0 ** k)
            assert "e+" not in text and "e-" not in text, text
            number = re.sub(r"[^\d.]", "", text.split()[0]) if text[0].isdigit() else ""
            if number and "km" in text and float(number.replace(",", "")) < 100:
                assert len(number.replace(".", "").lstrip("0")) <= 3, text
            assert text.endswith((" m", " km", "cm"))
