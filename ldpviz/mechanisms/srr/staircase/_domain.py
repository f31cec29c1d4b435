"""SRR's location domain (L-SRR Sec. 3.2): the hierarchical codes, their parameters, and the mapping
between domain positions and grid cells."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ldpviz.geo import quadkey
from ldpviz.geo.domain import Binned, Grid
from ldpviz.errors import LdpvizInputError, require
from ldpviz.mechanisms.estimation import to_distribution
from ldpviz.mechanisms.base import Mechanism, Param
from ldpviz.geo.partition import Partition, rect_cell_shares



FAMILY_SRR = "Location LDP (L-SRR paper)"
#: Largest domain SRR accepts: its estimator solves a dense d x d system.
MAX_DOMAIN_SIZE = 6000
#: Largest public grid domain (64 x 64 cells): beyond it, k x k blocks of cells. Lower than MAX_DOMAIN_SIZE
#: because SRR's estimator falls back to an O(D^3) SVD at small epsilon (~20 s at D = 4096, minutes at 6000).
MAX_GRID_DOMAIN_SIZE = 4096
#: Finest quadkey level considered (4.7 m tiles, the paper's h = 23).
MAX_LEVEL = 23


# ---------------------------------------------------------------------------
# Location domain
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class LocationDomain:
    """A public, sorted set of hierarchical location codes.

    ``codes`` are ``n_bits``-bit integers (sorted, distinct); ``rects`` are
    the locations' rectangles in unit coordinates of the region (clipped to
    it); ``cells`` (grid domain only) maps each location to its flat grid cell,
    or with ``block > 1`` to its flat index among the ``k x k`` blocks of cells.
    """

    codes: np.ndarray
    n_bits: int
    rects: np.ndarray
    kind: str
    level: int
    cells: np.ndarray | None = None
    block: int = 1

    @property
    def size(self) -> int:
        return int(len(self.codes))

    def key(self) -> str:
        digest = hashlib.sha1(self.codes.tobytes()).hexdigest()
        return f"{self.kind}:{self.n_bits}:{self.block}:{digest}"

    def index_of(self, codes: np.ndarray) -> np.ndarray:
        """Position in the domain of each code (all must be members)."""
        pos = np.searchsorted(self.codes, codes)
        if len(codes) and (pos.max() >= self.size or np.any(self.codes[np.minimum(pos, self.size - 1)] != codes)):
            raise ValueError("some locations are not in the domain")
        return pos.astype(np.int64)


def default_level(grid: Grid) -> int:
    """Coarsest quadkey level whose tiles are no larger than one evaluation cell (at the region centre)."""
    for level in range(1, MAX_LEVEL + 1):
        if quadkey.tile_side_m(grid.region.center_lat, level) <= grid.cell_m:
            return level
    return MAX_LEVEL


def user_codes(grid: Grid, unit: np.ndarray, level: int) -> np.ndarray:
    """Quadkey codes at ``level`` of users given in unit coordinates of the grid's region."""
    lon, lat = grid.region.unit_to_lonlat(np.asarray(unit, dtype=float).reshape(-1, 2))
    return quadkey.lonlat_to_code(lon, lat, level)


def occupied_domain(grid: Grid, unit: np.ndarray, level: int) -> LocationDomain:
    """The distinct level-``level`` tiles holding at least one user (Sec. 6.1)."""
    codes = np.unique(user_codes(grid, unit, level))
    tx, ty = quadkey.deinterleave(codes)
    bounds = quadkey.tile_bounds_lonlat(tx, ty, level)
    sw = grid.region.to_unit(bounds[:, 0], bounds[:, 1])
    ne = grid.region.to_unit(bounds[:, 2], bounds[:, 3])
    rects = np.clip(np.column_stack([sw, ne]), 0.0, 1.0)
    return LocationDomain(codes=codes, n_bits=2 * level, rects=rects, kind="occupied", level=level)


def grid_block(grid: Grid) -> int:
    """Cells per block side of the public grid domain: 1, or the smallest k with ceil(d/k)^2 <= MAX_GRID_DOMAIN_SIZE."""
    k = 1
    while math.ceil(grid.side / k) ** 2 > MAX_GRID_DOMAIN_SIZE:
        k += 1
    return k


def grid_domain(grid: Grid) -> LocationDomain:
    """Every cell of the evaluation grid (or every k x k block, see :func:`grid_block`), quadtree-encoded.

    Depends on the grid alone, never on the users: a public, data-independent domain.
    """
    block = grid_block(grid)
    d = grid.side
    side = math.ceil(d / block)
    levels = max(1, math.ceil(math.log2(side))) if side > 1 else 1
    rows, cols = np.divmod(np.arange(side * side, dtype=np.int64), side)
    codes = quadkey.interleave(cols, rows)
    order = np.argsort(codes)
    cells = np.arange(side * side, dtype=np.int64)[order]
    r, c = rows[order], cols[order]
    rects = np.column_stack([c * block, r * block, np.minimum((c + 1) * block, d),
                             np.minimum((r + 1) * block, d)]) / d
    return LocationDomain(codes=codes[order], n_bits=2 * levels, rects=rects, kind="grid", level=levels, cells=cells,
                          block=block)


def build_location_domain(grid: Grid, users: Binned, kind: str, level: int | None) -> LocationDomain:
    """Occupied tiles at ``level`` (default :func:`default_level`, coarsened to fit) or the grid's cells."""
    if kind == "grid":
        return grid_domain(grid)
    require(len(users.cells) > 0, "this mechanism needs at least one user inside the region")
    if level is not None:
        dom = occupied_domain(grid, users.unit, level)
        require(dom.size <= MAX_DOMAIN_SIZE,
                f"at quadkey level {level} the users occupy {dom.size} tiles; at most {MAX_DOMAIN_SIZE} are "
                f"supported. Choose a coarser level (smaller number).")
        return dom
    level = default_level(grid)
    dom = occupied_domain(grid, users.unit, level)
    while dom.size > MAX_DOMAIN_SIZE and level > 1:
        level -= 1
        dom = occupied_domain(grid, users.unit, level)
    return dom


#: Help text of the ``domain`` parameter shared by SRR and its Sec. 6.2 baselines.
DOMAIN_HELP = ("location domain: 'grid' (default) = every evaluation-grid cell (k x k blocks of cells beyond "
               f"{MAX_GRID_DOMAIN_SIZE} cells), public and independent of the data; 'occupied' = the quadkey tiles "
               "holding users (the L-SRR paper's experiments). 'occupied' treats the set of occupied tiles as public "
               "knowledge, as the paper does: it is NOT epsilon-LDP if that set is private (a lone user's tile "
               "shows in the domain)")
LEVEL_HELP = ("quadkey level h of the tiles (domain='occupied' only); default: the coarsest level whose tiles are "
              f"no larger than a grid cell, made coarser until the domain has at most {MAX_DOMAIN_SIZE} tiles")


def domain_param() -> Param:
    """The ``domain`` parameter: public grid by default, the paper's occupied tiles as an explicit opt-in."""
    return Param("domain", str, "grid", DOMAIN_HELP, choices=("grid", "occupied"))


def level_param() -> Param:
    return Param("level", int, None, LEVEL_HELP, minimum=1, maximum=MAX_LEVEL)


def check_domain_params(domain: str, level: int | None) -> None:
    """``level`` only shapes the occupied domain: refuse it with the grid domain rather than ignore it."""
    require(level is None or domain == "occupied",
            f"the quadkey level (level={level}) applies only to domain='occupied'; the default public grid "
            "domain uses the grid's own cells. Remove level or set domain='occupied'.")


def domain_guarantee(epsilon: float, domain: str) -> str:
    """The guarantee in words for a mechanism on the given location domain."""
    if domain == "occupied":
        return (f"epsilon = {epsilon:g} LDP for each report GIVEN a public domain: here the domain is the set of "
                "tiles holding users, built from their true locations, and treated as public knowledge (as in "
                "the L-SRR paper's experiments). If which tiles are occupied is itself private, this is NOT "
                "epsilon-LDP: a user alone in a tile is revealed by the domain. Use domain='grid' for a "
                "data-independent domain.")
    return (f"epsilon-LDP with epsilon = {epsilon:g} over a public, data-independent domain (every grid cell "
            "or block of cells)")


class LocationDomainMechanism(Mechanism):
    """Base of the mechanisms on the L-SRR location domain (srr, olh-h, pldp and the tile oracles).

    With the default public grid domain each is an ordinary two-halved protocol:
    ``perturb`` is the phone (it needs only the domain, which the grid alone fixes)
    and ``estimate`` the server. With ``domain="occupied"`` the domain is built
    from the users' true locations inside ``perturb``, so such an instance has no
    separate client half and no channel over the grid's cells (``has_client`` and
    ``has_channel`` are False on it; ``run`` works as before). ``domain`` and
    ``level`` are checked together and the guarantee names the domain's status.
    """

    has_client = True   # the default public domain; instances with domain="occupied" set it False

    def setup(self) -> None:
        check_domain_params(self.domain, self.level)
        if self.domain == "occupied":
            self.has_client = False
            self.has_channel = False
            self.attack_uses_crowd = True   # the attacker rebuilds the occupied domain from a crowd
        elif grid_block(self.grid) > 1:
            self.has_channel = False   # a location is a k x k block: no channel over single cells

    def guarantee(self) -> str:
        return domain_guarantee(self.epsilon, self.domain)

    def build_domain(self, users: Binned) -> LocationDomain:
        """The location domain: the public grid (users unused) or, on request, the occupied tiles."""
        return build_location_domain(self.grid, users, self.domain, self.level)

    def positions(self, domain: LocationDomain, users: Binned) -> np.ndarray:
        """Each user's position in the sorted domain."""
        return domain_positions(self.grid, domain, users)

    def attack_domain(self, people: Binned, crowd: Binned) -> LocationDomain:
        """The domain of a collection holding ``crowd`` and ``people`` (for the Monte Carlo attacker): the public
        grid domain, or with ``domain="occupied"`` the tiles they occupy."""
        if self.domain != "occupied":
            return self.build_domain(people)
        both = Binned(cells=np.concatenate([crowd.cells, people.cells]),
                      unit=np.concatenate([crowd.unit, people.unit]), n_outside=0)
        return self.build_domain(both)

    def channel_over_cells(self, domain_channel: Callable[[LocationDomain], np.ndarray]) -> np.ndarray:
        """``P[y, x]`` over the grid's cells from a channel over domain positions (grid domain only).

        ``domain_channel(domain)`` gives ``Q[y, i]`` for domain position ``i``; columns
        are relabelled as cells and, when reports are themselves locations (``Q`` square),
        so are the rows, so the report can be drawn on the grid.
        """
        if self.domain != "grid":
            raise LdpvizInputError(f"{self.label}: a channel over grid cells exists only with domain='grid'; "
                                   "the occupied domain depends on which tiles hold users.")
        domain = grid_domain(self.grid)
        require(domain.block == 1,
                f"{self.label}: the channel over cells is built only for grids of at most {MAX_GRID_DOMAIN_SIZE} "
                f"cells; a {self.grid.side} x {self.grid.side} grid uses blocks of {domain.block} x "
                f"{domain.block} cells.")
        q = np.asarray(domain_channel(domain), dtype=float)
        cells = domain.cells
        out = np.zeros((q.shape[0], self.grid.n_cells))
        if q.shape[0] == domain.size:
            out[np.ix_(cells, cells)] = q
        else:
            out[:, cells] = q
        return out


def domain_positions(grid: Grid, domain: LocationDomain, users: Binned) -> np.ndarray:
    """Each user's position in the sorted domain."""
    if domain.kind == "grid":
        inverse = np.empty(domain.size, dtype=np.int64)
        inverse[domain.cells] = np.arange(domain.size)
        cells = np.asarray(users.cells, dtype=np.int64)
        if domain.block > 1:
            side = math.ceil(grid.side / domain.block)
            rows, cols = np.divmod(cells, grid.side)
            cells = (rows // domain.block) * side + cols // domain.block
        return inverse[cells]
    return domain.index_of(user_codes(grid, users.unit, domain.level))


def domain_likelihood_to_cells(grid: Grid, domain: LocationDomain, likelihood: np.ndarray) -> np.ndarray:
    """``(n, D)`` likelihoods over domain positions -> ``(n, d*d)`` over the grid's cells.

    Grid domain (one cell per location): a relabelling. Blocks or quadkey tiles: P(y | cell x) =
    sum_v P(v | x) P(y | v) with P(v | x) the share of cell x's area in location v (people uniform
    within a cell); a cell no location covers gets likelihood 0 (nobody can be there).
    """
    L = np.asarray(likelihood, dtype=float)
    if domain.kind == "grid" and domain.block == 1:
        out = np.zeros((len(L), grid.n_cells))
        out[:, domain.cells] = L
        return out
    return np.asarray((rect_cell_shares(domain.rects, grid.side).T @ L.T).T)


def domain_to_grid(grid: Grid, domain: LocationDomain, probs: np.ndarray) -> tuple[np.ndarray, Partition | None]:
    """A distribution over the domain -> (d, d) density (area-proportional for tiles) and its partition."""
    if domain.kind == "grid" and domain.block == 1:
        density = np.zeros(grid.n_cells)
        density[domain.cells] = probs
        return density.reshape(grid.side, grid.side), None
    partition = Partition(domain.rects, probs)
    return to_distribution(partition.to_grid(grid.side), "clip"), partition
