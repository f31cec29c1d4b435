"""k-NN application metric of the L-SRR paper (Sec. 6.3, Table 3 and Fig. 9).

For every user, the server lists the ``k`` nearest *other* users (k = 25 in the
paper), once from the true population and once from the estimated one (the
estimated distribution scaled to n users). Users are known at cell resolution,
so a list is a sequence of cells ordered by distance from the user's cell
(centre to centre, ties by cell index), each cell repeated by its (estimated)
number of users, cut at k users. We report, averaged over all users:

* precision = |cells(estimated list) & cells(true list)| / |cells(estimated list)|;
* recall    = |cells(estimated list) & cells(true list)| / |cells(true list)|;
* nmse      = mean over ranks j = 1..k of the squared distance between the
  j-th true and j-th estimated neighbour, in unit coordinates (i.e. normalised
  by the region side squared) -- the "normalised MSE of coordinates" of Fig. 9.

The paper does not define the lists at this level of detail; this is the
reading used for our reproduction (docs/srr-claims.md).
"""

from __future__ import annotations

import numpy as np


def knn_quality(true_counts: np.ndarray, estimated: np.ndarray, k: int = 25,
                chunk: int = 256) -> dict[str, float]:
    """Precision, recall and NMSE of every user's k-NN list (see the module docstring).

    ``true_counts``: (d, d) users per cell. ``estimated``: (d, d) estimated
    distribution (any non-negative array; rescaled to the true number of users).
    """
    counts = np.asarray(true_counts, dtype=float)
    est = np.clip(np.asarray(estimated, dtype=float), 0.0, None)
    if counts.shape != est.shape or counts.ndim != 2:
        raise ValueError(f"true_counts {counts.shape} and estimated {est.shape} must be the same (d, d) shape")
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    side = counts.shape[0]
    n = counts.sum()
    flat_true = counts.ravel()
    flat_est = est.ravel() * (n / est.sum() if est.sum() > 0 else 0.0)
    centres = (np.stack(np.divmod(np.arange(side * side), side), axis=1)[:, ::-1] + 0.5) / side  # (col, row)
    sources = np.nonzero(flat_true > 0)[0]
    weights = flat_true[sources]
    k_eff = min(k, int(n) - 1)
    if k_eff < 1 or len(sources) == 0:
        return {"precision": float("nan"), "recall": float("nan"), "nmse": float("nan"), "k": k}
    totals = np.zeros(3)
    for start in range(0, len(sources), chunk):
        src = sources[start:start + chunk]
        dist = ((centres[None, :, :] - centres[src, None, :]) ** 2).sum(axis=2)
        order = np.lexsort((np.broadcast_to(np.arange(side * side), dist.shape), dist), axis=1)
        rows = np.arange(len(src))[:, None]
        own = order == src[:, None]
        true_c = flat_true[order] - own                         # the user is not their own neighbour
        est_c = np.maximum(flat_est[order] - own, 0.0)
        cum_t, cum_e = np.cumsum(true_c, axis=1), np.cumsum(est_c, axis=1)
        last_t = (cum_t < k_eff).sum(axis=1)                    # list = positions 0..last with count > 0
        last_e = np.minimum((cum_e < k_eff - 1e-9).sum(axis=1), side * side - 1)
        pos = np.arange(side * side)[None, :]
        in_t = (pos <= last_t[:, None]) & (true_c > 0)
        in_e = (pos <= last_e[:, None]) & (est_c > 0)
        both = (in_t & in_e).sum(axis=1)
        precision = both / np.maximum(in_e.sum(axis=1), 1)
        recall = both / np.maximum(in_t.sum(axis=1), 1)
        ranks = np.arange(1, k_eff + 1)
        jt = np.minimum(np.array([np.searchsorted(c, ranks - 0.5) for c in cum_t]), side * side - 1)
        je = np.minimum(np.array([np.searchsorted(c, ranks - 0.5) for c in cum_e]), side * side - 1)
        ct, ce = centres[order[rows, jt]], centres[order[rows, je]]
        nmse = ((ct - ce) ** 2).sum(axis=2).mean(axis=1)
        w = weights[start:start + chunk]
        totals += np.array([(w * precision).sum(), (w * recall).sum(), (w * nmse).sum()])
    totals /= weights.sum()
    return {"precision": float(totals[0]), "recall": float(totals[1]), "nmse": float(totals[2]), "k": k}
