"""How far an estimated spatial distribution is from the truth.

Flat functions in the style of POT (``ot``). Every grid metric takes ``true``
and ``est`` as ``(d, d)`` non-negative arrays on the same grid (indexed
``[row, col]``, see :mod:`ldpviz.geo.domain`); both are normalised to sum 1 here, and
an input with zero total mass raises :class:`~ldpviz.errors.LdpvizInputError`.
Distances are in *cells* (cell centres one unit apart) unless ``cell_m`` (the
cell side in metres, ``Grid.cell_m``) is given, in which case they are in metres.

Sources (files in ``shared/papers/``):

* ``dam-disk-area-mechanism.md`` -- 2-Wasserstein distance between the true and
  recovered densities (eq. 17, Sec. VII-C) and the sliced Wasserstein distance
  (Sec. V-A, Definition 7);
* ``dp-heatmaps-sparse-emd.md`` -- EMD with the L1 ground metric (Sec. 2.1) and
  the heatmap metrics Similarity, Pearson coefficient and KL-divergence (Sec. 4,
  "Metrics");
* ``grid-decompositions-ug-privag-aag.md`` -- range queries answered
  area-proportionally (eq. 8) and the Average Query Error (eq. 9, Sec. 4.2).Modules by concern (this package
  is their flat face; every name below is importable from here):

* :mod:`~ldpviz.metrics.transport` -- W2 and EMD-L1: exact solvers, BFM, the ``"auto"`` rule and
  :func:`w2_progressive` (approximate first, then exact); behind it :mod:`~ldpviz.metrics.w2_exact` (certified
  coarse-to-fine network simplex, on :mod:`~ldpviz.metrics.network_simplex`),
  :mod:`~ldpviz.metrics.w2_back_and_forth` (BFM) and :mod:`~ldpviz.metrics.envelope` (the one squared-distance
  transform kernel);
* :mod:`~ldpviz.metrics.sliced` -- sliced W2;
* :mod:`~ldpviz.metrics.divergences` -- KL, L1, MSE, Pearson, similarity;
* :mod:`~ldpviz.metrics.queries` -- range queries and AQE;
* :mod:`~ldpviz.metrics.evaluation` -- every metric at once, for one estimate or a run's trials;
* :mod:`~ldpviz.metrics.inputs` -- the input checks they share; :mod:`~ldpviz.metrics.knn` -- k-NN quality.
"""

from __future__ import annotations

import numpy as np

from ldpviz.metrics import w2_exact, w2_back_and_forth, envelope, network_simplex  # noqa: F401
from ldpviz.metrics.inputs import _as_distribution, _check_cell_m, _pair  # noqa: F401
from ldpviz.metrics import transport  # noqa: F401
from ldpviz.metrics.transport import (  # noqa: F401
    AUTO_CERTIFY_ALWAYS_SIDE, AUTO_EXACT_MAX_PAIRS, AUTO_W2_BUDGET_S, BFM_NEAR_COPY_CELLS, BLOCKS_SIDE,
    EMD_METHODS, EXACT_MAX_PAIRS, FAST_MAX_SIDE, SUPPORT_EXACT_MAX_PAIRS, W2_METHODS, TransportReadout,
    _choose_method, _emd_dense, _ot_multiscale, _transport, emd_l1, emd_l1_readout, w2, w2_progressive, w2_readout,
)
from ldpviz.metrics.sliced import _sliced_w2_many, sliced_directions, sliced_w2  # noqa: F401
from ldpviz.metrics.divergences import _gaussian_smooth, _kl_smoothed, kl, kl_sigma, l1, mse, pearson, similarity  # noqa: F401,E501
from ldpviz.metrics.queries import (  # noqa: F401
    QUERY_ASPECT_RANGE, _check_queries, aqe, aqe_from_answers, estimate_answers, random_queries, true_answers,
)
from ldpviz.metrics.evaluation import METRIC_INFO, NONNEGATIVE_METRICS, evaluate, evaluate_trials, local_privacy  # noqa: F401,E501
from ldpviz.metrics.knn import knn_quality  # noqa: F401  (L-SRR Sec. 6.3)

__all__ = [
    "w2", "w2_readout", "w2_progressive", "warm_up", "sliced_w2", "emd_l1", "emd_l1_readout", "TransportReadout", "kl",
    "kl_sigma", "l1", "mse", "pearson", "similarity", "random_queries", "aqe", "true_answers", "estimate_answers",
    "aqe_from_answers", "evaluate", "evaluate_trials", "METRIC_INFO", "NONNEGATIVE_METRICS", "knn_quality",
    "sliced_directions", "local_privacy",
]


def warm_up() -> None:
    """Compile (or load from numba's on-disk cache, ``cache=True``) every numba kernel behind the metrics, on tiny
    inputs: seconds the first time after an install, well under a second after. Run it once at install
    (``make install``) or in a background thread at app start so that a person never waits for numba."""
    network_simplex.warm_up()
    w2_exact.warm_up()
    p = np.zeros((8, 8))
    p[2:5, 2:5] = 1.0
    w2_back_and_forth.bfm_w2(p / p.sum(), np.roll(p, 1, axis=1) / p.sum())
    sliced_w2(p, np.roll(p, 1, axis=0), n_projections=4)
