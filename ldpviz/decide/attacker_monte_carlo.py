"""The Bayesian attacker by Monte Carlo over reports, for mechanisms without an explicit channel.

Same attacker as :mod:`ldpviz.decide.attacker` (Shokri et al. S&P'11; the posterior
pi(x | y) ~ P(y | x) pi(x) over the d x d cells), for mechanisms whose report space
cannot be listed (OUE: 2^D bit vectors; OLH: a hash seed per report; the grid
decompositions, whose cells depend on a first round). Instead of summing over every
report, we draw people x ~ population (fixed seed), draw one report per person with
the mechanism's own client code (``mech.attack_reports``) and compute each report's
posterior *exactly* from its likelihood over all cells (``mech.report_likelihood``,
kept beside each family's code). Every figure is then a mean over reports of the
posterior expectation given that report (a Rao-Blackwellised estimator: for report y,
the expected distance between the person and the guess under the true posterior, not
the one sampled person's distance), with its standard error.

Modelling choices (stated wherever the number appears through ``Attack.method``):

* people are spread uniformly within their grid cell, so a likelihood over a
  mechanism's own cells (coarse, adaptive, quadkey tiles) becomes one over the grid's
  cells by area shares (:func:`ldpviz.geo.partition.rect_cell_shares`);
* whatever the mechanism broadcasts (UG's N, PrivAG/AAG's second-level grid, an
  occupied domain) is built, as in a real collection, from a *crowd* of ``n_users``
  people (at most :data:`MAX_CROWD`) drawn from the same population, for mechanisms that
  set ``attack_uses_crowd``; each batch of reports is one collection;
* reports are drawn in batches of :data:`MC_BATCH` until the standard error of the
  best-guess error is at most :data:`MC_TARGET_RSE` of its value (or a hundredth of a
  cell side), between :data:`MC_MIN_REPORTS` and :data:`MC_MAX_REPORTS` reports.

Cost and precision on the bundled data are in docs/attacker-monte-carlo.md
(bench/attacker_mc.py). One property worth knowing when reading the numbers: OUE's own
bit is set with probability 1/2 at every epsilon (USENIX'17 Sec. 4.3), and a report
without it says almost nothing once q ~ 0, so OUE's best-guess error tends to half the
no-report error as epsilon grows, not to 0 (OLH's tends to 0).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ldpviz.geo.domain import Binned, Grid
from ldpviz.decide.cell_distances import rows_times_distance
from ldpviz.errors import require
from ldpviz.mechanisms.base import Mechanism

#: Reports per batch (one simulated collection each; fewer on large grids, see _batch_size), and the bounds on
#: the total.
MC_BATCH = 1000
#: Largest (reports x cells) array of a batch (32 MiB of floats).
MC_BATCH_ENTRIES = 1 << 22
#: Largest grid the Monte Carlo attacker runs on (64 x 64: at most ~2.5 s of CPU per call, docs/attacker-monte-carlo.md;
#: d = 128 takes ~20 s, the cost growing like d^2 log d per report).
MC_MAX_CELLS = 64 * 64
MC_MIN_REPORTS = 2000
MC_MAX_REPORTS = 5000
#: Stop once the standard error of the best-guess error is at most this share of it.
MC_TARGET_RSE = 0.02
#: Seed of the people and their reports (fixed: the same setting gives the same number).
MC_SEED = 0
#: Largest crowd simulated for public state (UG's N, the adaptive grids): sizes use n_users, the crowd is capped.
MAX_CROWD = 2_000_000


def supports_monte_carlo(mech: Mechanism) -> bool:
    """Whether ``mech`` has per-report likelihoods (``attack_reports`` and ``report_likelihood``)."""
    return callable(getattr(mech, "attack_reports", None)) and callable(getattr(mech, "report_likelihood", None))


def report_likelihood(mech: Mechanism, reports: Any) -> np.ndarray:
    """``(n_reports, n_cells)``: P(report | the person's grid cell), each row up to a factor of the report only.

    The generic dispatcher: each family implements ``report_likelihood`` beside its own code
    (frequency oracles in :mod:`ldpviz.mechanisms.fo.oracles`, grid decompositions in
    :mod:`ldpviz.mechanisms.grids.decompositions`, OLH-H and PLDP in their modules).
    """
    require(supports_monte_carlo(mech), f"{mech.name} has no per-report likelihood")
    L = np.asarray(mech.report_likelihood(reports), dtype=float)
    require(L.ndim == 2 and L.shape[1] == mech.grid.n_cells,
            f"{mech.name}'s report likelihood has shape {L.shape}, expected (reports, {mech.grid.n_cells})")
    return L


def draw_people(grid: Grid, density: np.ndarray, n: int, rng: np.random.Generator) -> Binned:
    """``n`` people: a cell drawn from ``density`` each, a position uniform within it."""
    cells = rng.choice(grid.n_cells, size=n, p=density)
    rows, cols = np.divmod(cells, grid.side)
    unit = np.column_stack([(cols + rng.random(n)) / grid.side, (rows + rng.random(n)) / grid.side])
    return Binned(cells=cells.astype(np.int64), unit=np.clip(unit, 0.0, 1.0), n_outside=0)


@dataclass
class _Sums:
    """Per-report values of each figure for one belief."""

    best: list
    within: list
    draw: list


def _mean_se(values: list) -> tuple[float, float]:
    v = np.concatenate(values)
    return float(v.mean()), float(v.std(ddof=1) / math.sqrt(len(v))) if len(v) > 1 else 0.0


def monte_carlo_figures(mech: Mechanism, beliefs: list[np.ndarray], people: np.ndarray, r_cells: float, *,
                        n_users: int | None = None, seed: int = MC_SEED, min_reports: int = MC_MIN_REPORTS,
                        max_reports: int = MC_MAX_REPORTS) -> tuple[int, list[dict[str, float]]]:
    """Per belief: mean and standard error (in cells) of the best-guess error, the within-r probability and
    the posterior-draw error over reports of people drawn from ``people`` (a distribution over cells).

    Returns (reports used, one dict per belief with keys best, best_se, within, within_se, draw, draw_se).
    """
    require(supports_monte_carlo(mech), f"{mech.name} has no per-report likelihood")
    grid = mech.grid
    side = grid.side
    rng = np.random.default_rng(seed)
    crowd_n = int(min(n_users, MAX_CROWD)) if n_users else MC_BATCH
    uses_crowd = bool(getattr(mech, "attack_uses_crowd", False))
    sums = [_Sums([], [], []) for _ in beliefs]
    used = 0
    while used < max_reports:
        b = min(max(100, min(MC_BATCH, MC_BATCH_ENTRIES // grid.n_cells)), max_reports - used)
        crowd = draw_people(grid, people, crowd_n, rng) if uses_crowd else None
        who = draw_people(grid, people, b, rng)
        L = report_likelihood(mech, mech.attack_reports(who, rng, who if crowd is None else crowd))
        J = L * people[None, :]
        mass = J.sum(axis=1, keepdims=True)
        post_true = J / np.where(mass > 0, mass, 1.0)
        E_true = rows_times_distance(post_true, side)
        W_true = rows_times_distance(post_true, side, r_cells)
        idx = np.arange(b)
        for belief, acc in zip(beliefs, sums):
            if np.array_equal(belief, people):
                post, E, W = post_true, E_true, W_true
            else:
                Jb = L * belief[None, :]
                mb = Jb.sum(axis=1, keepdims=True)
                post = Jb / np.where(mb > 0, mb, 1.0)
                E, W = rows_times_distance(post, side), rows_times_distance(post, side, r_cells)
            acc.best.append(E_true[idx, np.argmin(E, axis=1)])
            acc.within.append(W_true[idx, np.argmax(W, axis=1)])
            acc.draw.append((E_true * post).sum(axis=1))
        used += b
        if used >= min_reports:
            best, se = _mean_se(sums[0].best)
            if se <= max(MC_TARGET_RSE * best, 0.01):
                break
    out = []
    for acc in sums:
        best, best_se = _mean_se(acc.best)
        within, within_se = _mean_se(acc.within)
        draw, draw_se = _mean_se(acc.draw)
        out.append({"best": best, "best_se": best_se, "within": within, "within_se": within_se,
                    "draw": draw, "draw_se": draw_se})
    return used, out
