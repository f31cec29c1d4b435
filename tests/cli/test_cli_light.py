"""The command line answers at once: ``--help`` and a refusal import no part of the compute core.

A property of the imports, not a timing: importing ``ldpviz.cli`` and running ``--help`` or a refusal in a fresh
interpreter leaves numba, scipy.stats, pandas and streamlit out of ``sys.modules`` (issue 28: each cost seconds
on a loaded server before the one-line answer).
"""

import subprocess
import sys

import pytest

HEAVY = ("numba", "scipy.stats", "pandas", "streamlit")

PROBE = """
import contextlib, io, sys
from ldpviz.cli import main
argv = sys.argv[1:]
out, err = io.StringIO(), io.StringIO()
with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
    try:
        code = main(argv) if argv else 0
    except SystemExit as exc:
        code = exc.code
heavy = [m for m in {heavy!r} if m in sys.modules]
print(repr((code, heavy, out.getvalue()[:5000], err.getvalue()[:1000])))
""".format(heavy=HEAVY)


def probe(*argv: str) -> tuple:
    done = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return eval(done.stdout.strip().splitlines()[-1])  # noqa: S307 -- our own repr of a tuple


@pytest.mark.parametrize("argv, code, says", [
    ((), 0, ""),                                                # importing ldpviz.cli alone
    (("--help",), 0, "usage: ldpviz"),
    (("run", "--help"), 0, "--epsilon"),
    (("sweep", "--help"), 0, "--vary"),
    (("run", "--epsilon", "-1"), 2, "epsilon must be > 0"),
    (("run", "--epsilon", "nan"), 2, "epsilon must be a finite number"),
    (("run", "--epsilon", "abc"), 2, "invalid float value"),
    (("sweep", "--epsilon", "0"), 2, "epsilon must be > 0"),
    (("run", "--workers", "0"), 2, "--workers"),
    (("od", "--epsilon", "-inf"), 2, "epsilon must be"),
])
def test_help_and_refusals_import_no_compute_core(argv, code, says):
    got, heavy, out, err = probe(*argv)
    assert got == code, (out, err)
    assert says in out + err
    assert heavy == [], f"ldpviz {' '.join(argv)} imported {heavy}"


def test_region_rule_names_match_the_mechanism_module():
    """data_options names the region rules without importing private_region: the copies must stay equal."""
    from ldpviz.cli import data_options
    from ldpviz.mechanisms.fo import private_region
    assert data_options.REGION_RULES == private_region.REGION_RULES
    assert data_options.PRIVATE_TILES == private_region.PRIVATE_TILES
    assert data_options.PUBLIC_TILES == private_region.PUBLIC_TILES
    assert data_options.DEFAULT_REGION_EPSILON == private_region.DEFAULT_REGION_EPSILON


def test_deferred_options_are_there_when_used(capsys):
    """target's options are added when it is used: its help lists them and a bad value is refused by name."""
    from ldpviz.cli.commands import main
    with pytest.raises(SystemExit) as exc:
        main(["target", "--help"])
    assert exc.value.code == 0 and "--at-most" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exc:
        main(["target", "--metric", "nope", "--at-most", "1", "--mechanism", "grr"])
    assert exc.value.code == 2 and "--metric" in capsys.readouterr().err


def test_the_bundled_run_imports_no_pot():
    """``ldpviz run`` on the bundled default computes W2 and EMD-L1 with our own network simplex: POT (and the
    scipy.stats its import pulls in) stay out of the process (issue 28: half a second of a one-second command)."""
    done = subprocess.run([sys.executable, "-c", PROBE.replace(repr(HEAVY), repr(("ot", "scipy.stats"))), "run"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    code, heavy, out, err = eval(done.stdout.strip().splitlines()[-1])  # noqa: S307 -- our own repr
    assert code == 0 and "emd_l1_m" in out and "w2_m" in out, (out, err)
    assert heavy == [], f"ldpviz run imported {heavy}"
