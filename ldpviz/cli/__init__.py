"""The ``ldpviz`` command: run, sweep, target, report, od, navigate, reproduce, app, ...
"""

from ldpviz.cli.commands import main

__all__ = ["main"]
