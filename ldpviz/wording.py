"""Words for people: counts with the right noun form, numbers to sensible precision (numpy only: usable anywhere)."""

from __future__ import annotations

import math

import numpy as np


def plural(count: int, noun: str, plural_form: str | None = None) -> str:
    """'1 point', '2 points', '15,392 people': the count with thousands separators and the right form."""
    count = int(count)
    word = noun if count == 1 else (plural_form or noun + "s")
    return f"{count:,} {word}"


def number(value: object) -> str:
    """A value for people: floats to 4 significant digits (10.14, not 10.140407900811718), large whole numbers
    with thousands separators, None as 'none'; anything else as str()."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, (int, np.integer)):
        return f"{int(value):,}" if abs(int(value)) >= 10_000 else str(int(value))
    if isinstance(value, (float, np.floating)):
        v = float(value)
        if not math.isfinite(v):
            return str(v)
        return f"{v:,.0f}" if abs(v) >= 10_000 else f"{v:.4g}"
    if isinstance(value, dict):
        return ", ".join(f"{k} = {number(v)}" for k, v in value.items()) or "none"
    return str(value)


def capped(asked: int, held: int, noun: str = "users", where: str = "the region") -> str:
    """The one sentence every command and page gives when more were asked for than there are: '1,000,000,000 users
    were asked for but the region holds 51,920; all take part.' (nothing the user gave is silently changed)."""
    return f"{int(asked):,} {noun} were asked for but {where} holds {int(held):,}; all take part."
def length(metres: float) -> str:
    """A distance for people, one rule everywhere: km from 1,000 m, three significant digits, thousands separators
    from 100 km, never in exponent form ('250 m', '1.25 km', '104 km', '5,983 km'; issue 27: '1.039e+05 m')."""
    v = float(metres)
    if not math.isfinite(v):
        return "n/a"
    sign, v = ("-" if v < 0 else ""), abs(v)
    if v >= 1000:
        km = v / 1000
        return sign + (f"{km:,.0f} km" if km >= 100 else f"{float(f'{km:.3g}'):g} km")
    if v >= 100:
        return sign + f"{v:,.0f} m"
    if v == 0:
        return "0 m"
    if v < 0.01:
        return sign + "under 1 cm"
    return sign + f"{float(f'{v:.3g}'):g} m"


#: e^x is written out up to x = 300 ln 10; beyond it (and where a float overflows) "more than 10^300".
LOG_TIMES_LIMIT = 300.0 * math.log(10.0)
_LARGE = ((1e9, "billion"), (1e6, "million"))


def times(log_ratio: float) -> str:
    """How many times likelier, from the ratio's log (nothing overflows), for people: '4.48', '22,026',
    'about 82 million' (not '81,867,951'), 'about 3.1 billion', '2.7 x 10^43', 'more than 10^300'."""
    x = float(log_ratio)
    if math.isnan(x):
        return "undetermined"
    if x > LOG_TIMES_LIMIT:
        return "more than 10^300"
    if x > math.log(1e12):
        exponent = math.floor(x / math.log(10.0))
        mantissa = math.exp(x - exponent * math.log(10.0))
        if mantissa >= 9.95:
            mantissa, exponent = 1.0, exponent + 1
        return f"{mantissa:.2g} x 10^{exponent}"
    ratio = math.exp(x)
    for size, word in _LARGE:
        if ratio >= size:
            n = float(f"{ratio / size:.2g}")
            if n >= 1000:           # 999.6 billion rounds to 1,000 billion: say a trillion
                return "about 1 trillion"
            return f"about {n:g} {word}"
    if ratio >= 100:
        return f"{ratio:,.0f}"
    return f"{ratio:.3g}"


def times_finer(ratio: float) -> str:
    """A size ratio for people: '40×', '4.5×', '1,200×'."""
    r = float(ratio)
    return f"{r:,.0f}×" if r >= 10 else f"{float(f'{r:.2g}'):g}×"
