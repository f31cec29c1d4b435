"""Command lines the product prints (follow-up commands, reproduce lines), formatted from their argv.

Every word is quoted for a POSIX shell (:func:`shlex.quote`), so what is printed runs as printed: a path such as
``dep$(touch x)`` or ``my data.csv`` stays one argument and runs nothing else (``ldpviz deploy --out 'dep$(...)'``
printed its ``ldpviz estimate`` follow-up with the path bare, issue 39.11). Words that need no quoting (option
names, numbers, ``--bbox=-93.3,44.9,...``) print as they are.
"""

from __future__ import annotations

import shlex
from typing import Iterable


def command_line(argv: Iterable[object]) -> str:
    """``argv`` as one shell command line, each word quoted where the shell would read it otherwise."""
    return " ".join(shlex.quote(str(word)) for word in argv)
