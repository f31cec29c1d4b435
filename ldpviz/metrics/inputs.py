"""Input checking shared by every metric: a density is a square, finite, non-negative array with positive mass,
normalised here; a cell side is a positive number of metres."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ldpviz.errors import LdpvizInputError, require


def _as_distribution(x: Any, name: str) -> np.ndarray:
    """``x`` as a ``(d, d)`` float array normalised to sum 1, or LdpvizInputError."""
    try:
        arr = np.array(x, dtype=float)
    except (TypeError, ValueError):
        raise LdpvizInputError(f"{name} must be a (d, d) array of numbers, got {type(x).__name__}") from None
    require(arr.ndim == 2 and arr.shape[0] == arr.shape[1] and arr.shape[0] >= 1,
            f"{name} must be a square (d, d) density array, got shape {arr.shape}")
    require(bool(np.all(np.isfinite(arr))), f"{name} contains NaN or infinite values")
    scale = float(np.abs(arr).max())
    # Round-off from upstream arithmetic (e.g. -1e-18) is clipped; real negatives are refused.
    require(float(arr.min()) >= -1e-12 * scale,
            f"{name} has negative entries (smallest {arr.min():g}); a density must be non-negative "
            f"(project raw estimates onto the simplex first)")
    np.clip(arr, 0.0, None, out=arr)
    total = float(arr.sum())
    require(total > 0.0, f"{name} has zero total mass: a distribution needs at least one cell with "
                         f"positive mass")
    return arr / total


def _pair(true: Any, est: Any) -> tuple[np.ndarray, np.ndarray]:
    p = _as_distribution(true, "the true density")
    q = _as_distribution(est, "the estimated density")
    require(p.shape == q.shape, f"the true and estimated densities must be on the same grid, got shapes "
                                f"{p.shape} and {q.shape}")
    return p, q


def _check_cell_m(cell_m: Any) -> float:
    try:
        value = float(cell_m)
    except (TypeError, ValueError):
        raise LdpvizInputError(f"cell_m (cell side in metres) must be a number, got {cell_m!r}") from None
    require(math.isfinite(value) and value > 0, f"cell_m (cell side in metres) must be > 0, got {cell_m!r}")
    return value
