"""Every page's words, scanned: no '1 points', no doubled punctuation, no raw floats (issue 21.6).

Each of the eight pages runs in AppTest with a few settings (a small synthetic scenario, one user, a region across
the antimeridian); every text it renders (titles, markdown, captions, alerts, readouts, widget labels and help) is
checked by :func:`problems`, whose patterns are tested on their own first so the scan can fail.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "ldpviz" / "app" / "views").glob("*.py"))
SETTINGS = {
    "small": {"ds": "normal", "users": "3000", "d": "8", "mech": "grr"},
    "one user": {"ds": "normal", "users": "1", "d": "4", "mech": "grr"},
    "across 180": {"ds": "uniform", "users": "2000", "d": "8", "mech": "grr", "region": "bounds typed in",
                   "bbox": "170,-25,-170,-10"},
    # km-scale errors (W2 of kilometres, cells of 2.5 km) and one mechanism chosen on Compare
    "large errors": {"ds": "normal", "users": "2000", "d": "4", "mech": "grr", "eps": "0.1", "cmp": "grr"},
}

#: A count of one with a plural noun ('1 points', 'Only 1 people').
ONE_PLURAL = re.compile(r"(?<![\d.,])(?<![-+/] )1 (points|people|rows|users|cells|trips|persons|reports|trials|pairs|"
                        r"collections|places|locations|records|mechanisms|trips)\b")
#: A number in exponent form ('1.039e+05 m', '7.05e+03'): people read neither.
EXPONENT = re.compile(r"(?<![\w.])\d+(?:\.\d+)?e[+-]?\d+\b", re.IGNORECASE)
#: A label in metres followed by a value in km, or the reverse ('W2 (m) 69.5 km').
UNIT_CLASH = re.compile(r"\((m|km)\)\s*[-\d.,]+\s*(km|m)\b")
#: Punctuation doubled: '..' (not an ellipsis), '.);', ',,', ';;', '. ,' and the like.
DOUBLED = re.compile(r"(?<!\.)\.\s*\.(?!\.)|\.\)[;,.]|[,;]\s*[,;.]|\.\s*[,;]")
#: A decimal number with more than 4 significant digits ('10.140407900811718'); thousands separators aside.
DECIMAL = re.compile(r"(?<![\w.,])-?\d[\d,]*\.\d+(?![\w.])")
#: Abbreviations whose full stops are not sentence ends.
ABBREVIATIONS = ("e.g.", "i.e.", "et al.", "etc.", "vs.", "Sec.", "Eq.", "eq.", "App.", "Fig.", "Thm.")


def _significant(number: str) -> int:
    digits = number.lstrip("-").replace(",", "").replace(".", "").lstrip("0")
    return len(digits)


def problems(text: str) -> list[str]:
    """What is wrong with one rendered text: plural errors, doubled punctuation, raw floats."""
    found = [f"plural: {m.group(0)!r}" for m in ONE_PLURAL.finditer(text)]
    cleaned = text
    for abbreviation in ABBREVIATIONS:
        cleaned = cleaned.replace(abbreviation, abbreviation.replace(".", ""))
    cleaned = re.sub(r"https?://\S+|`[^`]*`", "", cleaned)          # addresses and code keep their dots
    found += [f"punctuation: {cleaned[max(0, m.start() - 30):m.end() + 10]!r}" for m in DOUBLED.finditer(cleaned)]
    found += [f"raw float: {m.group(0)}" for m in DECIMAL.finditer(cleaned) if _significant(m.group(0)) > 4
              and not _is_coordinate(cleaned, m)]
    found += [f"exponent: {m.group(0)}" for m in EXPONENT.finditer(cleaned)]
    found += [f"unit clash: {m.group(0)!r}" for m in UNIT_CLASH.finditer(cleaned) if m.group(1) != m.group(2)]
    return found


def _is_coordinate(text: str, match: re.Match) -> bool:
    """Degrees of a place are shown to 5 decimals (about a metre) on purpose: lat/lon and bounds."""
    before = text[max(0, match.start() - 60):match.start()].lower()
    return any(word in before for word in ("lat", "lon", "bounds", "centred at", "centre", "°", "w, s, e, n"))


def test_the_scan_finds_what_issue_21_listed():
    """The patterns catch each text the issue found, and pass their corrected forms."""
    bad = ["regions can be at most 6,500 km across (a continent).); ldpviz works", "Loaded x: 1 points.",
           "Only 1 people are in this region", "radius = 10.140407900811718", "Stopped.. Keeping",
           "region side 5,983.08 km", "one, , two",
           # issue 27
           "the smallest ε search for 1 mechanisms", "per cell side of 1.039e+05 m", "Max / min 7.05e+03",
           "W2 (m) 69.5 km", "Side (km) 2942.054"]
    for text in bad:
        assert problems(text), text
    good = ["regions can be at most 6,500 km across (a continent); ldpviz works", "Loaded x: 1 point.",
            "Only 1 person is in this region", "radius = 10.14", "e.g. a city, i.e. one area. Next",
            "W2 = 1,234 m; 21 points", "centre: lat 44.90255, lon -93.36534", "Wait ...", "0.0001 and 12.5%",
            "the smallest ε search for 1 mechanism", "per cell side of 104 km", "Max / min 7050", "W2 69.5 km",
            "Side (km) 2942", "W2 (m) ≤ 530", "type `1e3` for a thousand"]
    for text in good:
        assert not problems(text), (text, problems(text))


def texts(at: AppTest) -> list[str]:
    """Every string a page rendered: element bodies, metric labels and values, widget labels and help."""
    out: list[str] = []

    def walk(node) -> None:
        typed = getattr(node, "type", "") in ("text_input", "text_area", "number_input")   # what the user typed
        if getattr(node, "type", "") == "number_input":   # the number as the widget prints it ('2942.054')
            fmt = getattr(getattr(node, "proto", None), "format", "") or ""
            if fmt and node.value is not None:
                out.append(f"{node.label} {fmt % node.value}")
        options = getattr(node, "options", None)
        if isinstance(options, list):
            out.extend(f"option: {o}" for o in options if isinstance(o, str))
        for attr in ("body", "label", "help", "placeholder", "caption") + (() if typed else ("value",)):
            try:
                v = getattr(node, attr)
            except Exception:   # noqa: BLE001 -- not every node has every field
                continue
            if isinstance(v, str) and v and not v.lstrip().startswith("<"):   # not the pages' own HTML/CSS
                out.append(v)
        children = getattr(node, "children", None)
        if isinstance(children, dict):
            for child in children.values():
                walk(child)

    walk(at._tree)
    return out


@pytest.mark.slow
@pytest.mark.parametrize("setting", list(SETTINGS))
@pytest.mark.parametrize("page", PAGES)
def test_page_text_is_clean(page, setting):
    """No page shows '1 points'-style plurals, doubled punctuation or raw floats of more than 4 significant
    digits, at a small scenario, with one user, and on a region across 180 degrees."""
    at = AppTest.from_file(str(ROOT / page), default_timeout=240)
    for key, value in SETTINGS[setting].items():
        at.query_params[key] = value
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    wrong = {text[:120]: problems(text) for text in texts(at) if problems(text)}
    assert not wrong, wrong


def test_dataset_lists_show_labels_not_internal_ids():
    """Issue 27: the dataset box listed 'szipf', 'gmm', 'mnormal' (registry ids) beside one readable label."""
    from ldpviz.data import datasets
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=240)
    for key, value in SETTINGS["small"].items():
        at.query_params[key] = value
    at.run()
    assert not at.exception
    options = at.selectbox(key="w:dataset").options
    assert not set(options) & set(datasets.names()), options
    assert len(set(options)) == len(options)
