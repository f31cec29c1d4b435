"""What an OD run may be: the mechanisms and estimators, the checks on grid and users, the guarantee, the ledger."""

from __future__ import annotations

from typing import Any

import numpy as np

from ldpviz.geo.domain import Region
from ldpviz.errors import require
from ldpviz.mechanisms import accounting
from ldpviz.mechanisms.base import UNIT_PERSON


#: The L-SRR Sec. 6.4 schemes (registry names); ``grr`` and ``hr`` mean the tile oracles on the grid domain.
OD_MECHANISMS = ("srr", "grr-tiles", "olh-h", "hr-tiles", "pldp")
ALIASES = {"grr": "grr-tiles", "hr": "hr-tiles", "l-srr": "srr"}
ESTIMATORS = ("lasso", "em", "unbiased")
#: How reports are simulated: every user's two reports (``Mechanism.perturb``), or the joint statistic
#: drawn from the true OD counts (:mod:`ldpviz.flows.od_simulate`; same distribution, see there).
PATHS = ("users", "aggregate")
#: Largest grid side for OD: d = 32^2 = 1,024 locations, 1,048,576 OD pairs.
MAX_OD_GRID_SIDE = 32


def resolve_mechanism(name: str) -> str:
    """The registry name of an OD scheme (``grr`` -> ``grr-tiles``, ``hr`` -> ``hr-tiles``), or a clear error."""
    require(isinstance(name, str), f"mechanism must be a name, got {name!r}")
    key = ALIASES.get(name.strip().lower(), name.strip().lower())
    require(key in OD_MECHANISMS, f"OD analysis supports the L-SRR schemes {', '.join(OD_MECHANISMS)} "
                                  f"(also grr, hr); got {name!r}")
    return key


def trips_per_person(person: np.ndarray | None) -> tuple[int, int] | None:
    """(most trips by one person, number of people) among the trips taking part; None if persons are unknown."""
    if person is None or len(person) == 0:
        return None
    _, counts = np.unique(np.asarray(person).astype(str), return_counts=True)
    return int(counts.max()), int(len(counts))


def region_sentence(region: Region) -> str:
    """How the region was chosen, for every OD and navigation guarantee (never 'independent' when fitted)."""
    from ldpviz.geo.region_choice import region_covers

    return (f"Region '{region.name or 'custom'}', a {region.side_m / 1000:,.4g} km square: "
            + region_covers(region))


def od_guarantee(mechanism: str, epsilon: float, ledger: accounting.Ledger, region: Region | None = None) -> str:
    """The OD guarantee in words: budget split, privacy unit, the per-person total (``ledger``, :func:`od_ledger`:
    region included, from the accountant) and how the region was chosen."""
    person = ledger.sentence()
    text = (f"epsilon-LDP with epsilon = {epsilon:g} per trip's origin-destination pair (L-SRR Def. 4.1): "
            f"{mechanism} reports the origin at epsilon/2 = {epsilon / 2:g} and the destination at "
            f"epsilon/2 = {epsilon / 2:g}, and sequential composition adds them. Privacy unit: one trip's OD "
            f"pair. {person} Domain: every cell of the grid on the region, so what "
            "phones receive is fixed by the region and the grid.")
    return text + (f" {region_sentence(region)}" if region is not None else "")


def od_ledger(mech: Any, region: Region, person: np.ndarray | None, n_pairs: int) -> accounting.Ledger:
    """What a person pays in one OD collection (the accountant's ledger): the region's epsilon0 once per person
    where it was paid for, and two reports at epsilon/2 (origin, destination) for each of their trips in the
    region. ``person``: the person of every pair that reports (None: synthetic pairs, one per person)."""
    if person is None:
        worst, median, basis = 1, 1.0, "synthetic pairs: one trip per synthetic person"
    else:
        worst, median = accounting.counts_per_person(person)
        basis = f"the most trips by one person in the region: {worst}; median {median:g}"
    charges = [c for c in [accounting.region_charge(region, 1, 1, "each person reports the tile of one of "
                                                                  "their points, once")] if c is not None]
    charges.append(accounting.report_charge(mech, 2 * worst, 2 * median, basis + "; each trip sends two reports",
                                            what=f"an origin or destination report ({mech.name} at ε/2)"))
    return accounting.Ledger(tuple(charges), unit=UNIT_PERSON,
                             notes=(f"{n_pairs:,} OD pairs report",))



def check_od_grid(grid_side: Any) -> int:
    require(isinstance(grid_side, (int, np.integer)) and not isinstance(grid_side, bool) and grid_side >= 1,
            f"grid side must be a whole number >= 1, got {grid_side!r}")
    require(grid_side <= MAX_OD_GRID_SIDE,
            f"grid side {grid_side} is too large for OD analysis: at most {MAX_OD_GRID_SIDE} "
            f"({MAX_OD_GRID_SIDE ** 2:,} locations, {MAX_OD_GRID_SIDE ** 4:,} OD pairs)")
    return int(grid_side)


#: Memory one simulated OD pair takes while it is drawn, binned and reported (coordinates, unit positions,
#: cells and two reports; peak measured with tracemalloc at 300,000 pairs: 263 (GRR) to 465 (OLH-H), rounded up):
#: the users path holds them all.
OD_BYTES_PER_PAIR = 500
#: Most memory an OD run may plan to take for its pairs.
MAX_OD_BYTES = 8 * 2**30


def check_od_users(n_users: Any) -> int:
    """Refuse, before anything is allocated, a number of OD pairs whose simulation would pass :data:`MAX_OD_BYTES`."""
    require(isinstance(n_users, (int, np.integer)) and not isinstance(n_users, bool) and n_users >= 1,
            f"users must be a whole number >= 1, got {n_users!r}")
    most = MAX_OD_BYTES // OD_BYTES_PER_PAIR
    require(n_users <= most, f"{int(n_users):,} OD pairs would need about "
                             f"{int(n_users) * OD_BYTES_PER_PAIR / 2**30:,.0f} GiB; the limit is {most:,} pairs "
                             f"({MAX_OD_BYTES / 2**30:g} GiB)")
    return int(n_users)
