"""One setting of a page declared once (issue 40): its config field, link key, default, kind, and bounds or choices.

A :class:`Setting` reads its link value with one clear message (:meth:`Setting.parse`), writes its value back to
the link, nothing when it is the default (:meth:`Setting.link_text`), gives a widget its bounds
(:meth:`Setting.widget_bounds`) and names values it refuses, so a test can try them (:meth:`Setting.refused_values`),
as scikit-learn's declared parameter constraints do. :mod:`ldpviz.app.settings` holds the dashboard's table;
:data:`ldpviz.decide.decision_flow.SETTINGS` is the Decide page's part of it. No Streamlit here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping

from ldpviz.errors import LdpvizInputError


@dataclass(frozen=True)
class Wording:
    """How a family of link parameters words a refused value. The dashboard's (:data:`LINK`) and the Decide
    flow's (:data:`FLOW_LINK`) differ, as they did before the table; one wording for both changes messages."""

    out_of_range: str = "{what} must be between {low:g} and {high:g}, got {text!r}"
    not_whole: str = "{what} must be a whole number, got {text!r}"
    not_choice: str = "{lead}must be one of {options}, got {text!r}"
    ignored: str = "link parameter '{key}' ignored: {error}"


LINK = Wording()
FLOW_LINK = Wording(out_of_range="{what} must be from {low:g} to {high:g}, got {text!r}",
                    not_whole="must be a whole number", not_choice="must be one of {options}",
                    ignored="link parameter {key}={value!r} ignored: {error}")

#: A custom reader: (link text, the decoder's context) -> the value; raises LdpvizInputError with the reason.
Reader = Callable[[str, Any], Any]


@dataclass(frozen=True)
class Setting:
    """One setting: ``field`` in the config dict, ``key`` in a link (None: kept in the session only).

    ``kind`` is int, float, bool, str or list. Numbers are checked against ``low``..``high``; a setting with
    ``choices`` takes exactly one of them (matched on its text); a bool reads the link's code for the value that
    is not its default ('1', or '0' when the default is True) and anything else as the default, unless its
    ``choices`` are ('0', '1'). ``read`` / ``write`` replace the reading / writing of a setting no kind covers;
    ``refused`` then names link values ``read`` refuses (out of range, malformed). ``factory`` computes a default
    that is only known when a session starts (the first dataset, the default mechanism). ``blank``: a blank value
    is written to the link (as the Flows, People and budget keys always were) rather than left out.
    """

    field: str
    key: str | None
    default: Any
    kind: type = str
    what: str = ""
    low: float | None = None
    high: float | None = None
    choices: tuple[Any, ...] | None = None
    read: Reader | None = None
    write: Callable[[Mapping[str, Any]], str | None] | None = None
    refused: tuple[str, ...] = ()
    factory: Callable[[], Any] | None = None
    wording: Wording = LINK
    blank: bool = False

    def initial(self) -> Any:
        """The default, a fresh copy for a list or a dict."""
        if self.factory is not None:
            return self.factory()
        return type(self.default)(self.default) if isinstance(self.default, (list, dict)) else self.default

    def parse(self, text: str, context: Any = None) -> Any:
        """A link value -> the setting's value; raises LdpvizInputError saying why not."""
        if self.read is not None:
            return self.read(text, context)
        if self.choices is not None:
            value = self.choice(text)
            return value == "1" if self.kind is bool else value
        if self.kind is bool:
            return text != "0" if self.default else text == "1"
        if self.kind in (int, float):
            return self.number(text)
        return str(text)

    def number(self, text: str) -> int | float:
        """``text`` as a number of the setting's kind within its bounds."""
        try:
            value = float(text)
        except (TypeError, ValueError):
            raise LdpvizInputError(f"{self.what} must be a number, got {text!r}") from None
        low = -math.inf if self.low is None else self.low
        high = math.inf if self.high is None else self.high
        if not (math.isfinite(value) and low <= value <= high):
            raise LdpvizInputError(self.wording.out_of_range.format(what=self.what, low=low, high=high, text=text))
        if self.kind is int:
            if value != int(value):
                raise LdpvizInputError(self.wording.not_whole.format(what=self.what, text=text))
            return int(value)
        return value

    def choice(self, text: str) -> Any:
        """The choice whose text is ``text``."""
        match = [c for c in self.choices or () if str(c) == text]
        if not match:
            raise LdpvizInputError(self.wording.not_choice.format(
                lead=f"{self.what} " if self.what else "", options=", ".join(map(str, self.choices or ())),
                text=text))
        return match[0]

    def link_text(self, cfg: Mapping[str, Any]) -> str | None:
        """The link value of the setting in ``cfg``; None (left out) when it is unset, the default, or blank (unless
        ``blank``)."""
        if self.write is not None:
            return self.write(cfg)
        value = cfg.get(self.field)
        if self.kind is list:
            value = list(value or [])
        if value is None or (value == "" and not self.blank) or value == self.initial():
            return None
        if self.kind is bool:
            return "1" if value else "0"
        if self.kind is list:
            return ",".join(map(str, value))
        return f"{value:g}" if isinstance(value, float) else str(value)

    def ignored(self, value: Any, error: BaseException) -> str:
        """The warning for a refused link value."""
        return self.wording.ignored.format(key=self.key, value=value, error=error)

    def widget_bounds(self) -> dict[str, Any]:
        """``min_value`` / ``max_value`` for a number widget."""
        return {k: v for k, v in (("min_value", self.low), ("max_value", self.high)) if v is not None}

    def refused_values(self) -> tuple[str, ...]:
        """Link values the setting refuses: one out of range (or not a choice) and one malformed; () when it
        reads every value (free text, a flag)."""
        if self.read is not None:
            return self.refused
        if self.choices is not None:
            return ("no-such-choice", "")
        if self.kind in (int, float) and self.high is not None:
            return (str(self.kind(self.high * 2 + 1)), "not-a-number")
        return ()


def read_link(settings: Iterable[Setting], query: Mapping[str, Any], cfg: dict[str, Any], warnings: list[str],
              context: Any = None) -> set[str]:
    """Read each setting's link key found in ``query`` into ``cfg``, in the settings' order; a refused value
    leaves its field as it was and adds one warning. Returns the fields read."""
    read = set()
    for setting in settings:
        if setting.key is None or setting.key not in query:
            continue
        text = query[setting.key]
        try:
            cfg[setting.field] = setting.parse(str(text), context)
        except LdpvizInputError as exc:
            warnings.append(setting.ignored(text, exc))
        else:
            read.add(setting.field)
    return read


def write_link(settings: Iterable[Setting], cfg: Mapping[str, Any]) -> dict[str, str]:
    """The link parameters of ``cfg``'s settings, in the settings' order, leaving out defaults."""
    out = {}
    for setting in settings:
        if setting.key is not None and (text := setting.link_text(cfg)) is not None:
            out[setting.key] = text
    return out
