"""SRR's effective resolution: how many distinct blocks of its location domain it can tell apart.

L-SRR (l-srr-staircase-randomized-response.md Sec. 3.1-3.2) gives every location x
its LCP groups G_1(x) .. G_m(x) (Def. 3.2). Two locations with the same nested
intervals and the same alpha_min send *identical* report distributions (eq. 2-4),
so no estimator can separate them: the channel's distinct columns
(:func:`ldpviz.mechanisms.srr.staircase.channel_classes`) are the blocks SRR resolves, and
only their total mass is learnt, whatever epsilon. On the public 64 x 64 grid that
is a few tens of blocks. This module exposes that resolution for the map (a class
label per grid cell), the guarantee panel (one sentence) and the claims report (the
noise-free histogram on the classes: the best any SRR estimator can do).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ldpviz.geo.domain import Binned
from ldpviz.mechanisms.srr.staircase import SRR, LocationDomain, channel_classes, domain_positions, domain_to_grid


@dataclass(frozen=True)
class SrrResolution:
    """The blocks SRR resolves on its domain at one epsilon.

    ``class_of`` labels every domain location with its block (0..n_classes-1);
    ``cell_class`` labels every cell of the ``(d, d)`` evaluation grid with the
    block covering it (the block of most of its locations; -1 where the domain has
    no location), for drawing block outlines on the map.
    """

    n_classes: int
    domain_size: int
    class_of: np.ndarray
    class_size: np.ndarray
    cell_class: np.ndarray
    median_block_side_m: float
    epsilon: float

    def sentence(self) -> str:
        """For the guarantee panel: what SRR can and cannot see at this epsilon."""
        return (f"At epsilon = {self.epsilon:g}, SRR resolves {self.n_classes:,} distinct blocks of its "
                f"{self.domain_size:,} locations (median block about {self.median_block_side_m:,.0f} m across): "
                "locations in one block send identical reports, so only each block's total is estimated, "
                "spread evenly inside it, however many users report.")


def effective_resolution(mech: SRR, users: Binned | None = None) -> SrrResolution:
    """The blocks ``mech`` (an :class:`~ldpviz.mechanisms.srr.staircase.SRR`) resolves.

    ``users`` is needed only for ``domain="occupied"`` (the domain is their tiles);
    the default public grid domain depends on the grid alone.
    """
    empty = Binned(cells=np.zeros(0, dtype=np.int64), unit=np.zeros((0, 2)), n_outside=0)
    domain = mech.build_domain(users if users is not None else empty)
    plan = mech.plan(domain)
    _, class_of = channel_classes(plan)
    n_classes = int(class_of.max()) + 1 if len(class_of) else 0
    size = np.bincount(class_of, minlength=n_classes)
    return SrrResolution(n_classes=n_classes, domain_size=domain.size, class_of=class_of, class_size=size,
                         cell_class=_cell_classes(mech, domain, class_of),
                         median_block_side_m=_median_block_side_m(mech, domain, class_of, n_classes),
                         epsilon=float(plan.epsilon_target))


def class_histogram(mech: SRR, users: Binned) -> np.ndarray:
    """Noise-free baseline: the users' true distribution summed over SRR's blocks and spread evenly inside each
    (exactly what SRR's estimator returns for merged classes with no noise), as a ``(d, d)`` density."""
    domain = mech.build_domain(users)
    _, class_of = channel_classes(mech.plan(domain))
    counts = np.bincount(domain_positions(mech.grid, domain, users), minlength=domain.size).astype(float)
    per_class = np.bincount(class_of, weights=counts)
    probs = (per_class / np.bincount(class_of))[class_of]
    return domain_to_grid(mech.grid, domain, probs / probs.sum())[0]


def uniform_over_domain(mech: SRR, users: Binned | None = None) -> np.ndarray:
    """Data-free baseline: the same mass on every location of SRR's domain, as a ``(d, d)`` density."""
    empty = Binned(cells=np.zeros(0, dtype=np.int64), unit=np.zeros((0, 2)), n_outside=0)
    domain = mech.build_domain(users if users is not None else empty)
    return domain_to_grid(mech.grid, domain, np.full(domain.size, 1.0 / domain.size))[0]


def _cell_classes(mech: SRR, domain: LocationDomain, class_of: np.ndarray) -> np.ndarray:
    grid = mech.grid
    out = np.full(grid.n_cells, -1, dtype=np.int64)
    if domain.kind == "grid" and domain.block == 1:
        out[domain.cells] = class_of
        return out.reshape(grid.side, grid.side)
    # tiles or blocks of cells: each location's centre picks its cell; a cell takes its most frequent class
    centres = np.column_stack([(domain.rects[:, 0] + domain.rects[:, 2]) / 2,
                               (domain.rects[:, 1] + domain.rects[:, 3]) / 2])
    cells = grid.bin_unit(np.clip(centres, 0.0, 1.0)).cells
    order = np.lexsort((class_of, cells))
    pairs, counts = np.unique(np.column_stack([cells[order], class_of[order]]), axis=0, return_counts=True)
    best = np.lexsort((-counts, pairs[:, 0]))               # per cell, the most frequent class first
    first = np.unique(pairs[best, 0], return_index=True)[1]
    out[pairs[best[first], 0]] = pairs[best[first], 1]
    if domain.kind == "grid" and domain.block > 1:          # blocks of k x k cells: every cell of a block
        k = domain.block
        blocks = out.reshape(grid.side, grid.side)
        filled = np.full((grid.side, grid.side), -1, dtype=np.int64)
        for r0 in range(0, grid.side, k):
            for c0 in range(0, grid.side, k):
                tile = blocks[r0:r0 + k, c0:c0 + k]
                labels = tile[tile >= 0]
                filled[r0:r0 + k, c0:c0 + k] = labels[0] if len(labels) else -1
        return filled
    return out.reshape(grid.side, grid.side)


def _median_block_side_m(mech: SRR, domain: LocationDomain, class_of: np.ndarray, n_classes: int) -> float:
    """Median over blocks of sqrt(block area) in metres (area = the sum of its locations' rectangles)."""
    if n_classes == 0:
        return float("nan")
    areas = (domain.rects[:, 2] - domain.rects[:, 0]) * (domain.rects[:, 3] - domain.rects[:, 1])
    block_area = np.bincount(class_of, weights=areas, minlength=n_classes)
    side_m = mech.grid.cell_m * mech.grid.side
    return float(np.median(np.sqrt(block_area)) * side_m)
