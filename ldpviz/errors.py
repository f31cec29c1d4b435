"""The one exception type the tool raises for bad user input.

Every message is written for the person who gave the input (a privacy officer,
a teacher, an analyst): it names the parameter, what was wrong and what to do.
Pages and the CLI catch this type and show the message; anything else that
escapes is a bug.
"""

from __future__ import annotations


class LdpvizInputError(ValueError):
    """Input the tool cannot work with; ``str(err)`` is the user-facing message."""


def clause(error: BaseException | str) -> str:
    """A message ready to sit inside a longer sentence: without its closing full stop, so wrapping it in
    "(...);" or following it with ". Keep ..." gives no doubled punctuation ("(a continent).);")."""
    return str(error).strip().rstrip(".").rstrip()


def require(condition: bool, message: str) -> None:
    """Raise :class:`LdpvizInputError` with ``message`` unless ``condition`` holds."""
    if not condition:
        raise LdpvizInputError(message)


class RegionTooLargeError(LdpvizInputError):
    """A file's points span more than one region; ``suggestion`` is a box holding most of them, or None.

    ``suggestion`` is a :class:`ldpviz.geo.region_suggestion.SuggestedBox`; pages offer it as typed
    bounds and the command line prints it as ``--bbox=W,S,E,N``.
    """

    def __init__(self, message: str, suggestion: object = None) -> None:
        super().__init__(message)
        self.suggestion = suggestion


class TooFewToFrame(LdpvizInputError):
    """Too few rows or people for the private map tiles to frame a region: even all of them in one tile would not be
    told apart from noise. ``needed`` is how many more than that the rule needs; the caller asks for a box."""

    def __init__(self, message: str, needed: int = 0, have: int = 0) -> None:
        super().__init__(message)
        self.needed = int(needed)
        self.have = int(have)
