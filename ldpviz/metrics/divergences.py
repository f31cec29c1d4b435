"""Cell-by-cell comparisons: KL divergence on smoothed maps, L1, MSE, Pearson's r and the histogram intersection
(dp-heatmaps-sparse-emd.md Sec. 1, 4 and Appendix B; dam-disk-area-mechanism.md Sec. I)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ldpviz.errors import require
from ldpviz.metrics.inputs import _pair

__all__ = ["kl", "kl_sigma", "l1", "mse", "pearson", "similarity"]


def kl_sigma(d: int) -> float:
    """Smoothing (standard deviation in cells) that :func:`evaluate` uses for KL on a d x d grid:
    d / 64 (the heatmap benchmark's sigma, bench/heatmap_claims.py), at least one cell."""
    return max(1.0, d / 64.0)


def _gaussian_smooth(p: np.ndarray, sigma: float) -> np.ndarray:
    """Point masses at cell centres convolved with N(0, sigma^2 I), binned back to the cells and folded at the
    region's edges (mirror), so no mass leaves the grid. The kernel is the exact binned Gaussian
    ``Phi((k + 1/2) / sigma) - Phi((k - 1/2) / sigma)`` (truncated at 8 sigma, renormalised)."""
    from scipy.ndimage import correlate1d
    from scipy.special import ndtr
    half = int(math.ceil(8 * sigma))
    k = np.arange(-half, half + 1, dtype=float)
    w = ndtr((k + 0.5) / sigma) - ndtr((k - 0.5) / sigma)
    w /= w.sum()
    out = correlate1d(p, w, axis=0, mode="reflect")
    out = correlate1d(out, w, axis=1, mode="reflect")
    return np.clip(out, 0.0, None) / out.sum()


def kl(true: Any, est: Any, *, sigma: float = 0.0, floor: float = 1e-10) -> float:
    """Kullback-Leibler divergence KL(true || est) in nats, optionally on Gaussian-smoothed maps.

    Heatmap metric of dp-heatmaps-sparse-emd.md (Sec. 4, "Metrics"; lower is
    better). With ``sigma > 0`` (cells) both maps are first smoothed as the
    paper's heatmaps are (Sec. 2: a Gaussian filter of variance sigma^2; here
    the exact binned kernel, mirrored at the edges, see :func:`_gaussian_smooth`).
    Smoothing is what makes KL informative when users are few (n << d^2): on
    raw maps almost every cell the truth uses is empty or noisy in an estimate,
    and the value is governed by ``floor``. On smoothed maps KL is bounded by
    transport, ``KL <= W2^2 / (2 sigma^2)`` (Appendix B, Lemma B.2 and
    convexity; the mirror fold and the binning only lower KL), so it ranks
    estimates by how far mass moved. Zero cells: terms with ``true = 0``
    contribute 0; ``est`` is floored at ``floor`` and renormalised, so KL stays
    finite when the estimate misses a cell the truth uses. Always >= 0.
    """
    p, q = _pair(true, est)
    require(isinstance(floor, (int, float, np.floating)) and 0 < floor < 1,
            f"floor must be a number in (0, 1), got {floor!r}")
    require(isinstance(sigma, (int, float, np.integer, np.floating)) and math.isfinite(sigma) and sigma >= 0,
            f"sigma (KL smoothing, in cells) must be a number >= 0, got {sigma!r}")
    if sigma > 0:
        p, q = _gaussian_smooth(p, float(sigma)), _gaussian_smooth(q, float(sigma))
    return _kl_smoothed(p, q, floor)


def _kl_smoothed(p: np.ndarray, q: np.ndarray, floor: float = 1e-10) -> float:
    """KL(p || q) of two (already smoothed) distributions, ``q`` floored at ``floor`` and renormalised."""
    q = np.maximum(q, floor)
    q = q / q.sum()
    mask = p > 0
    return max(float(np.sum(p[mask] * np.log(p[mask] / q[mask]))), 0.0)


def l1(true: Any, est: Any) -> float:
    """L1 distance ``sum |p - q|`` between the normalised distributions, in [0, 2].

    The l1 error of dp-heatmaps-sparse-emd.md (Sec. 1 and Appendix B: bounded by EMD).
    """
    p, q = _pair(true, est)
    return float(np.abs(p - q).sum())


def mse(true: Any, est: Any) -> float:
    """Mean over cells of ``(p - q)^2`` between the normalised distributions.

    The squared-error (variance) metric of frequency estimation that the DAM
    paper (dam-disk-area-mechanism.md Sec. I) lists with "mean absolute error,
    variances or KL divergence" as common, order-blind metrics.
    """
    p, q = _pair(true, est)
    return float(np.mean((p - q) ** 2))


def pearson(true: Any, est: Any) -> float:
    """Pearson correlation coefficient between the cell values (higher is better).

    Heatmap metric of dp-heatmaps-sparse-emd.md (Sec. 4, "Metrics"). Undefined
    when either distribution is constant over the grid (e.g. uniform); we then
    return 0.0 (no linear association can be measured).
    """
    p, q = _pair(true, est)
    p, q = p.ravel(), q.ravel()
    if np.all(p == p[0]) or np.all(q == q[0]):
        return 0.0
    r = float(np.corrcoef(p, q)[0, 1])
    return float(np.clip(r, -1.0, 1.0))


def similarity(true: Any, est: Any) -> float:
    """Histogram intersection ``sum min(p, q)`` in [0, 1] (higher is better).

    The Similarity metric of dp-heatmaps-sparse-emd.md (Sec. 4, "Metrics");
    equals ``1 - l1 / 2`` for normalised distributions.
    """
    p, q = _pair(true, est)
    return float(np.minimum(p, q).sum())
