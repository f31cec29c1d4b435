"""Every metric for one estimate, or for the trials of a run in one pass (:func:`evaluate`, :func:`evaluate_trials`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ldpviz.errors import require
from ldpviz.geo.partition import Partition
from ldpviz.metrics import transport
from ldpviz.metrics.divergences import _gaussian_smooth, _kl_smoothed, kl_sigma, l1, mse, pearson, similarity
from ldpviz.metrics.inputs import _as_distribution, _check_cell_m
from ldpviz.metrics.queries import _check_queries, aqe_from_answers, estimate_answers, random_queries, true_answers
from ldpviz.metrics.sliced import _sliced_w2_many
from ldpviz.metrics.transport import TransportReadout

__all__ = ["evaluate", "evaluate_trials", "METRIC_INFO", "NONNEGATIVE_METRICS", "local_privacy"]


METRIC_INFO: dict[str, dict[str, Any]] = {
    "w2_m": {"label": "W2 (m)", "lower_is_better": True,
             "help": "2-Wasserstein distance in metres: how far, on average, mass must move "
                     "(DAM paper, dam-disk-area-mechanism.md eq. 17)."},
    "w2_cells": {"label": "W2 (cells)", "lower_is_better": True,
                 "help": "2-Wasserstein distance in grid cells (DAM paper eq. 17), comparable across regions."},
    "sliced_w2_m": {"label": "Sliced W2 (m)", "lower_is_better": True,
                    "help": "Sliced 2-Wasserstein distance in metres: root mean square over directions of the "
                            "1-D W2 of the projected maps (DAM paper Sec. V-A, Definition 7). Textbook scale: "
                            "a shift by s reads s / sqrt(2), and it is at most W2 / sqrt(2)."},
    "emd_l1_m": {"label": "EMD, L1 (m)", "lower_is_better": True,
                 "help": "Earth Mover's Distance with Manhattan ground distance, in metres "
                         "(dp-heatmaps-sparse-emd.md Sec. 2.1)."},
    "aqe": {"label": "AQE", "lower_is_better": True,
            "help": "Average relative error of random range-count queries, bounded at 2% of users "
                    "(grid-decompositions-ug-privag-aag.md eq. 9)."},
    "kl": {"label": "KL divergence", "lower_is_better": True,
           "help": "KL(true || estimate) in nats between the maps smoothed by a Gaussian of sd max(1, d/64) "
                   "cells, as heatmaps are (dp-heatmaps-sparse-emd.md Sec. 4, Metrics); without smoothing a "
                   "sparse truth makes KL a measure of empty cells, not of distance."},
    "l1": {"label": "L1 distance", "lower_is_better": True,
           "help": "Sum of absolute cell differences, 0 to 2 (dp-heatmaps-sparse-emd.md Sec. 1)."},
    "mse": {"label": "MSE", "lower_is_better": True,
            "help": "Mean over cells of the squared difference of cell probabilities (the variance-type "
                    "error the DAM paper's Sec. I lists among common metrics)."},
    "pearson": {"label": "Pearson r", "lower_is_better": False,
                "help": "Correlation of cell probabilities, 0 if either map is flat "
                        "(dp-heatmaps-sparse-emd.md Sec. 4, Metrics)."},
    "similarity": {"label": "Similarity", "lower_is_better": False,
                   "help": "Histogram intersection sum min(p, q), 0 to 1 "
                           "(dp-heatmaps-sparse-emd.md Sec. 4, Metrics)."},
}


#: Metrics that cannot be negative (distances, divergences, errors, the intersection): their confidence
#: intervals are clipped at zero (issue 22). Pearson's r is the one that can.
NONNEGATIVE_METRICS = frozenset(k for k in METRIC_INFO if k != "pearson")


def evaluate(true_density: np.ndarray, estimate: Any, *, cell_m: float, n_users: int,
             true_points: np.ndarray | None = None, queries: np.ndarray | None = None,
             rho: float = 0.01, readouts: dict[str, TransportReadout] | None = None) -> dict[str, float]:
    """Every metric of :data:`METRIC_INFO` for one estimate, keyed as there.

    ``estimate`` is an :class:`~ldpviz.mechanisms.base.Estimate`: grid metrics
    use ``estimate.density``, AQE uses ``estimate.partition`` (the mechanism's
    own cells, grid paper eq. 8). AQE's true answers come from ``true_points``
    (exact counts) when given, else from ``true_density``; ``queries`` default
    to ``random_queries(rho)`` (seed 0). KL is taken on maps smoothed by
    :func:`kl_sigma` cells. Pass a dict as ``readouts`` to receive the
    :class:`TransportReadout` of ``"w2_m"`` and ``"emd_l1_m"`` (in metres):
    which solver ran, and the interval holding the exact value when it is
    approximate (``readout.exact`` is False).
    """
    rows, found = evaluate_trials(true_density, [estimate], cell_m=cell_m, n_users=n_users,
                                  true_points=true_points, queries=queries, rho=rho)
    if readouts is not None:
        readouts.update(found[0])
    return rows[0]


def evaluate_trials(true_density: np.ndarray, estimates: list, *, cell_m: float, n_users: int,
                    true_points: np.ndarray | None = None, queries: np.ndarray | None = None,
                    rho: float = 0.01) -> tuple[list[dict[str, float]], list[dict[str, TransportReadout]]]:
    """:func:`evaluate` for several estimates of the same truth (the trials of a run), in one pass.

    What depends on the truth alone is computed once: AQE's true answers (a sort of every user's point),
    KL's smoothed truth, and sliced W2's projections and sorts (:func:`_sliced_w2_many`, one sort per
    direction for all trials). Exact transport (W2, EMD-L1) is solved per trial. Every value equals
    :func:`evaluate`'s for that estimate alone (tests/experiment/test_trials.py). Returns (one row of metrics per
    estimate, one dict of transport readouts in metres per estimate).
    """
    require(len(estimates) >= 1, "evaluate_trials needs at least one estimate")
    p = _as_distribution(true_density, "the true density")
    cell = _check_cell_m(cell_m)
    qs = _check_queries(random_queries(rho) if queries is None else queries)
    if true_points is not None:
        truth_answers = true_answers(true_points, qs, "points")
    else:
        truth_answers = true_answers(p, qs, "density")
    sigma = kl_sigma(p.shape[0])
    p_again = _as_distribution(p, "the true density")      # as sliced_w2() and kl() normalise their inputs
    p_smooth = _gaussian_smooth(p_again, float(sigma))
    densities = []
    for estimate in estimates:
        q = _as_distribution(getattr(estimate, "density", estimate), "the estimated density")
        require(p.shape == q.shape, f"the true and estimated densities must be on the same grid, got shapes "
                                    f"{p.shape} and {q.shape}")
        densities.append(q)
    sliced = _sliced_w2_many(p_again, [_as_distribution(q, "the estimated density") for q in densities], cell)
    rows, found = [], []
    for estimate, q, sliced_value in zip(estimates, densities, sliced):
        partition = getattr(estimate, "partition", None)
        if partition is None:
            partition = Partition.uniform(q)
        aqe_value = aqe_from_answers(truth_answers, estimate_answers(partition, qs), n_users, 0.02)
        w2_read = transport._transport(p, q, "sqeuclidean", "auto")
        emd_read = transport._transport(p, q, "cityblock", "auto").scaled(cell)
        found.append({"w2_m": w2_read.scaled(cell), "emd_l1_m": emd_read})
        rows.append({
            "w2_m": w2_read.value * cell,
            "w2_cells": w2_read.value,
            "sliced_w2_m": sliced_value,
            "emd_l1_m": emd_read.value,
            "aqe": aqe_value,
            "kl": _kl_smoothed(p_smooth, _gaussian_smooth(_as_distribution(q, "the estimated density"),
                                                          float(sigma))),
            "l1": l1(p, q),
            "mse": mse(p, q),
            "pearson": pearson(p, q),
            "similarity": similarity(p, q),
        })
    return rows, found


def local_privacy(mechanism: Any, grid: Any = None, eps: float | None = None, **params: Any) -> float:
    """Local privacy (DAM paper eq. 15-16): expected distance in metres between a user's true cell
    and a Bayesian adversary's guess from one report (uniform prior). See :mod:`ldpviz.mechanisms.dam.local_privacy`."""
    from ldpviz.mechanisms.dam.local_privacy import local_privacy as _local_privacy
    return _local_privacy(mechanism, grid, eps, **params)
