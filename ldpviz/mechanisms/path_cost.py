"""Measured cost model that picks a frequency oracle's path: per-user reports or the exact aggregate.

Both paths give the server's sufficient statistic with the same distribution
(see :mod:`ldpviz.mechanisms.fo.oracles`), so the choice is about time only. The time
of one path for ``n`` users over ``D`` values (client and server halves,
including the bincount of the true values) is modelled as

    t(n, D) = c0 + c_n n + c_D D + c_nD n D      (seconds)

with non-negative coefficients fitted (least squares on relative error) to
wall times measured by ``bench/bench_fo.py`` (its "Path cost model" section
re-measures them, refits, and reports how often the model picks the faster
path). :data:`COEFFICIENTS` holds the fit of the run named in
:data:`MEASURED_ON`; the times are machine-specific, the *ratios* that decide
the choice much less so (both paths are numpy on the same machine).

What dominates: GRR per-user is O(n) random draws, its aggregate O(D) (one
binomial per value and one multinomial); OLH and OUE per-user are O(n D) (the
server evaluates every hash on every value; every user sends D bits), their
aggregate O(D); HR per-user is O(n + K), its aggregate O(K + D + tanh(eps/2) n)
(coefficients measured at eps = 1, where tanh(1/2) = 0.46; at larger eps the
aggregate's n-term grows towards the per-user one, so the choice errs only
between two paths of similar cost).

The other client mechanisms (:mod:`ldpviz.mechanisms.collection_paths`) keep their own
measured work models next to their aggregate draw: the tile oracles and OLH-H
reuse :func:`choose_path` / :func:`predicted_seconds` above; planar Laplace
(geoi.py), SRR (srr.py), PLDP (pldp.py) and SEM-Geo-I (sem_geoi.py) compare n
against their aggregate's draws. ``bench/bench_paths.py`` times every client
mechanism on both paths at 1M users, d = 64 and reports whether 'auto' chose
the faster one (docs/paths-benchmark.md).
"""

from __future__ import annotations

from ldpviz.errors import require

PER_USER = "per-user"
AGGREGATE = "aggregate"
AUTO = "auto"

#: Where and when :data:`COEFFICIENTS` were measured.
MEASURED_ON = ("bench/bench_fo.py path-cost grid (n = 1e4, 1e5, 1e6; D = 16, 256, 4096; eps = 1; min of 3 "
               "runs), on the development machine (Intel Xeon, 2 cores shared with other jobs), 2026-11-23")

#: (oracle, path) -> (c0 [s], c_n [s/user], c_D [s/value], c_nD [s/(user x value)]).
COEFFICIENTS: dict[tuple[str, str], tuple[float, float, float, float]] = {
    ("grr", PER_USER): (2.26e-05, 1.2e-08, 6.1e-10, 0.0),
    ("grr", AGGREGATE): (3.66e-05, 1.98e-09, 1.06e-07, 1.86e-13),
    ("olh", PER_USER): (0.0, 4.89e-08, 2.6e-06, 5.34e-10),
    ("olh", AGGREGATE): (4.03e-05, 1.98e-09, 1.15e-07, 1.9e-13),
    ("oue", PER_USER): (0.000157, 5.89e-08, 0.0, 3.61e-09),
    ("oue", AGGREGATE): (3.99e-05, 1.94e-09, 1.16e-07, 1.77e-13),
    ("hr", PER_USER): (5.27e-05, 1.85e-08, 6.29e-08, 0.0),
    ("hr", AGGREGATE): (0.00017, 9.21e-09, 2.31e-07, 4.46e-13),
}


def predicted_seconds(oracle: str, path: str, n: int, domain_size: int,
                      coefficients: dict | None = None) -> float:
    """Modelled wall time of ``oracle`` on ``path`` for ``n`` users over ``domain_size`` values."""
    table = COEFFICIENTS if coefficients is None else coefficients
    require((oracle, path) in table, f"no cost model for oracle {oracle!r} on path {path!r}")
    c0, cn, cd, cnd = table[(oracle, path)]
    return c0 + cn * n + cd * domain_size + cnd * n * domain_size


def choose_path(oracle: str, n: int, domain_size: int, coefficients: dict | None = None) -> str:
    """'aggregate' when the model predicts it faster than 'per-user' for n users over D values, else 'per-user'."""
    agg = predicted_seconds(oracle, AGGREGATE, n, domain_size, coefficients)
    return AGGREGATE if agg < predicted_seconds(oracle, PER_USER, n, domain_size, coefficients) else PER_USER


#: DAM, DAM-NS and HUEM (kernels.DiskChannel): per-user (c0, c_n [s/user]); aggregate (c0, c_draw [s per
#: offset draw, see DiskChannel.bump_draws], c_out [s per output cell]). Fitted to sample()+bincount and
#: aggregate() wall times at d = 16, 64, eps = 1, 3, n = 1e5..1e7 (min of 3 runs), same machine and day
#: as MEASURED_ON; below 1e5 users both paths take under ~30 ms. bench/bench_fo.py re-measures them and
#: reports how often choose_disk_path picks the faster path.
DISK_COEFFICIENTS: dict[str, tuple[float, ...]] = {
    PER_USER: (0.0, 2.37e-07),
    AGGREGATE: (0.0, 1.61e-07, 7.49e-07),
}


def choose_disk_path(n: int, draws: float, n_outputs: int) -> str:
    """'aggregate' when the disk channel's aggregate (``draws`` offset draws, ``n_outputs`` cells) is predicted
    faster than ``n`` per-user reports, else 'per-user'."""
    c0, cn = DISK_COEFFICIENTS[PER_USER]
    a0, a_draw, a_out = DISK_COEFFICIENTS[AGGREGATE]
    return AGGREGATE if a0 + a_draw * draws + a_out * n_outputs < c0 + cn * n else PER_USER
