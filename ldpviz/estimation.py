"""Server-side post-processing shared by mechanisms.

Unbiased frequency-oracle estimates can be negative and need not sum to n;
metrics need a distribution. Two projections are offered:

* ``clip``: negatives set to zero, then renormalised (the common baseline);
* ``norm-sub``: Norm-Sub of Wang et al., "Locally Differentially Private
  Frequency Estimation with Consistency", NDSS'20 — subtract one constant
  delta from every cell and clip at zero, delta chosen so the result sums to
  the total; this is the L2-closest point of the scaled simplex.

Post-processing never touches raw data, so it costs no privacy.
"""

from __future__ import annotations

import numpy as np


def norm_sub(counts: np.ndarray, total: float | None = None) -> np.ndarray:
    """Norm-Sub projection of ``counts`` onto {x >= 0, sum x = total} (NDSS'20, Sec. 4)."""
    c = np.asarray(counts, dtype=float)
    flat = c.ravel()
    total = float(flat.sum()) if total is None else float(total)
    if total <= 0 or flat.size == 0:
        return np.full_like(c, total / max(c.size, 1) if total > 0 else 0.0)
    # Euclidean projection onto the simplex scaled to `total` (sort-based, exact).
    u = np.sort(flat)[::-1]
    css = np.cumsum(u) - total
    k = np.arange(1, flat.size + 1)
    rho = np.nonzero(u - css / k > 0)[0][-1]
    delta = css[rho] / (rho + 1.0)
    return np.maximum(c - delta, 0.0)


def to_distribution(values: np.ndarray, method: str = "clip") -> np.ndarray:
    """A non-negative array of the same shape summing to 1 (uniform if nothing positive remains)."""
    v = np.nan_to_num(np.asarray(values, dtype=float), nan=0.0, posinf=0.0, neginf=0.0)
    if method == "norm-sub":
        v = norm_sub(v, max(v.sum(), 0.0) or None)
    elif method != "clip":
        raise ValueError(f"unknown projection {method!r}; use 'clip' or 'norm-sub'")
    v = np.clip(v, 0.0, None)
    s = v.sum()
    if not np.isfinite(s) or s <= 0:
        return np.full(v.shape, 1.0 / v.size)
    return v / s
