"""Traffic-aware navigation with LDP location updates: L-SRR Sec. 4.2 and App. C.1 (Figs. 14-16).

Paper: l-srr-staircase-randomized-response.md Sec. 4.2 ("location updates" when the delay exceeds a
threshold theta; lambda updates cost lambda * epsilon by sequential composition) and App. C.1 (the
simulation: fastest routes on estimated congestion, relative Levenshtein distance to the route on
true congestion, trip-time deviation).

The paper's simulation runs on road maps and historical traces we do not have; ours keeps its logic
on the evaluation grid and says where it had to choose:

* Roads: the d x d grid cells, moves to the 4 neighbours. Entering a cell takes ``cell_m / speed``
  seconds, plus ``delay_s`` if the cell is congested: more than ``threshold`` users in it (App. C.1:
  "if the frequency exceeds a threshold ... a delay time will be added"). Defaults: 10 m/s, a delay
  equal to the free-flow time of a cell, and a threshold of twice the mean users per cell (a function
  of n and d only, not of where the users are).
* Traffic: the people's current locations, one per person (issue 26: a traffic reporter is a person;
  for trajectory data each person's location is one of their points, chosen at random; for point data
  each row is a person), the same in every time window (static congestion; the paper's is dynamic).
  True congestion is their histogram.
* Estimated congestion: in every time window every traffic reporter reports their location once with
  the mechanism at epsilon and the server estimates the density (n x the mechanism's estimate); the
  k-th location update of any trip falls in window k. Accounting choice (ours; the paper does not
  count the reporters): the same reporters re-send in every window, as in the paper's simulation, so a
  reporter who sent in W windows is charged W x epsilon (sequential composition). A person is charged
  once per window (one point each), plus the updates of their own trips, plus the region's epsilon0 where
  the region was paid for: the accountant's ledger (:func:`navigation_ledger`) composes it per person,
  and its worst-off person is a real person whose reports were counted in the simulation.
* A trip starts on the free-flow fastest route (the "historical" prediction; we have no history).
  While driving, when the actual elapsed time exceeds the predicted one by more than ``theta_s``
  seconds (Sec. 4.2: Agg^t - Agg^P > theta), the client makes a location update: it sends its
  perturbed location (epsilon), retrieves the estimated congestion (by PIR in the paper; here read
  directly) and re-plans the fastest route from where it is; the prediction is reset to that plan.
  ``max_updates`` (ours, default none) is a cap the client enforces: after that many updates it
  keeps its last plan and sends nothing more, so every trip is at most ``max_updates x epsilon``.
* Mechanisms: only client-side local mechanisms (LDP, Geo-I) can protect an update, since the
  location leaves the phone; the guarantee sentence is built from the mechanism's own stated
  guarantee and privacy model. Central-DP mechanisms (a trusted aggregator sees exact locations)
  are refused; ``exact`` (no privacy) is kept as the reference the paper compares against.
* Measures (App. C.1): lambda (updates per trip) and the total privacy bound lambda * epsilon
  (Fig. 14; its worst trip is the guarantee, the mean is how much is spent on average), the
  relative Levenshtein distance between the driven cell sequence and the fastest route
  on true congestion, over the latter's length (Fig. 15), and the trip-time deviation: true time of
  the driven route minus that of the fastest true route, in seconds (Fig. 16).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse
from scipy.sparse.csgraph import dijkstra

import pandas as pd

from ldpviz import mechanisms, wording
from ldpviz.mechanisms import accounting
from ldpviz.geo.domain import Grid, Region
from ldpviz.errors import LdpvizInputError, require
from ldpviz.mechanisms.base import validate_epsilon

MAX_NAV_GRID_SIDE = 64
#: The unit of a per-trip total (the location updates of one trip).
UNIT_TRIP = "one trip"
MAX_TRIPS = 5_000
#: Longest time a route may take, in seconds: below 2**53 a float still counts whole seconds exactly, so the
#: route times Dijkstra sums and the trip's elapsed-minus-predicted comparisons stay meaningful. A larger
#: ``delay_s`` (or a crawling ``speed_mps``) made Dijkstra's sums overflow to infinity: every goal looked
#: unreachable and the route walk indexed its "no predecessor" marker (-9999), an IndexError.
MAX_ROUTE_S = float(2**53)


def check_update_mechanism(mechanism: str) -> type:
    """The mechanism class if it can protect a location update on the phone, else a clear error."""
    cls = mechanisms.get(mechanism)
    require(cls.privacy_model != mechanisms.CENTRAL_DP,
            f"{mechanism} is a central-DP mechanism (a trusted aggregator sees every exact location), so it cannot "
            "protect a location update sent from a phone; navigation needs a client-side mechanism: an LDP or "
            "Geo-I one (see 'ldpviz mechanisms')")
    require(cls.privacy_model in (mechanisms.LDP, mechanisms.GEO_I, mechanisms.NO_PRIVACY),
            f"{mechanism} has privacy model {cls.privacy_model!r}; navigation needs an LDP or Geo-I mechanism")
    return cls


def navigation_guarantee(mech: Any, max_updates: int | None = None, windows: int | None = None,
                         people: dict[str, Any] | None = None, ledger: accounting.Ledger | None = None) -> str:
    """The guarantee of one trip's updates, of a person's trips and of a traffic reporter, from ``mech``'s own
    stated guarantee. ``people``: :func:`person_totals` of the simulated trips (None: not known)."""
    eps = accounting.report_charge(mech).unit_text()     # Geo-I: the mechanism's own epsilon per km (+ slack)
    if mech.privacy_model == mechanisms.NO_PRIVACY:
        return (f"no privacy: each location update sends the exact location ({mech.name}, a reference, not a "
                "deployment), and so does every traffic reporter. Privacy unit: none.")
    model = "epsilon-LDP" if mech.privacy_model == mechanisms.LDP else "epsilon-geo-indistinguishable"
    cap = (f"; the client sends at most {max_updates} updates per trip, so every trip is within "
           f"{max_updates} x {eps}" if max_updates is not None else "; no cap on updates per trip is set, so "
           "lambda (and the trip's total) is unbounded in advance")
    person = "Per person: a person with k trips is at the sum of their trips' totals (sequential composition)"
    if ledger is not None:
        person += "; the ledger below adds every report a person sends."
    elif people is None:
        person += "; these trips are synthetic, one per synthetic person."
    else:
        person += (f"; here the most trips by one person is {people['max_trips_per_person']} (of "
                   f"{people['people']:,} people among the simulated trips).")
    reporters = ("" if windows is None else
                 f" Traffic reporters are people, each re-sending one location in every time window: with W = "
                 f"{windows} windows a reporter pays {windows} reports; a person who both reports traffic and "
                 "drives adds the two.")
    if ledger is not None:
        reporters += f" {ledger.sentence()}"
    return (f"each location update is one {model} report of the current location by {mech.name}: "
            f"{mech.guarantee()}. A trip with lambda updates is within lambda x {eps} for that trip by "
            f"sequential composition (L-SRR Sec. 4.2){cap}. Privacy unit: one trip. {person}{reporters} Not "
            "covered: the fact and timing of an update (it happens when the user is delayed), which the paper "
            "proposes to hide with a shuffler.")


def navigation_ledger(mech: Any, region: Region, windows: int, reporter_person: np.ndarray | None,
                      trip_person: np.ndarray | None, updates: np.ndarray) -> accounting.Ledger:
    """What each person pays in one navigation run (the accountant's ledger): W traffic reports (one per window,
    if they report traffic), the location updates of their own trips, and the region's epsilon0 once.

    ``reporter_person``: the person of every traffic reporter inside the region (None: point data, one
    reporter per row, anonymous); ``trip_person``: the person of every simulated trip (None: synthetic trips,
    one per synthetic person, who may also be a reporter: charged as both, the worst case)."""
    lam = np.asarray(updates, dtype=float)
    if reporter_person is None or trip_person is None:
        if trip_person is not None:        # drivers known, reporters anonymous rows: a driver's trips add up
            _, inverse = np.unique(np.asarray(trip_person).astype(str), return_inverse=True)
            lam = np.bincount(inverse, weights=lam)
        people = max(len(lam), 1)
        reports = np.full(people, float(windows))
        drives = np.zeros(people)
        drives[:len(lam)] = lam
        basis_r = (f"W = {windows} windows; a driver may also report traffic (counted as both)" if trip_person
                   is not None else f"W = {windows} windows; a synthetic driver may also report traffic (counted as "
                   "both)")
    else:
        labels, inverse = np.unique(np.concatenate([np.asarray(reporter_person).astype(str),
                                                    np.asarray(trip_person).astype(str)]), return_inverse=True)
        n_rep = len(reporter_person)
        reports = np.bincount(inverse[:n_rep], minlength=len(labels)).astype(float) * windows
        drives = np.bincount(inverse[n_rep:], weights=lam, minlength=len(labels))
        basis_r = f"W = {windows} windows, one location per person"
    parts = []
    tiles = accounting.region_charge(region, 1, 1, "each person reports the tile of one of their points, once")
    if tiles is not None:
        parts.append((tiles, np.ones_like(reports)))
    parts.append((accounting.report_charge(mech, what=f"a traffic report ({mech.name}, one per window)",
                                           basis=basis_r), reports))
    parts.append((accounting.report_charge(mech, what=f"a location update ({mech.name}) on the person's own trips",
                                           basis="lambda updates per trip, summed over the person's trips"), drives))
    return accounting.person_ledger(parts, reference_m=mech.grid.cell_m if mech.privacy_model == mechanisms.GEO_I
                                    else 0.0)


def person_totals(person: np.ndarray) -> dict[str, Any]:
    """Most trips by one person and the number of people among the simulated trips (what they pay: the ledger)."""
    labels, counts = np.unique(np.asarray(person).astype(str), return_counts=True)
    return {"max_trips_per_person": int(counts.max()), "people": int(len(labels))}


def trip_ledger(ledger: accounting.Ledger, updates: np.ndarray) -> accounting.Ledger:
    """What one trip's location updates cost (the accountant: the update charge of ``ledger`` paid lambda times):
    the worst trip (most updates) and, as its 'median', the median trip. Unit: one trip."""
    lam = np.asarray(updates, dtype=float)
    return accounting.uses_ledger(ledger.charges[-1], float(lam.max()), float(np.median(lam)), unit=UNIT_TRIP,
                                  basis="lambda updates of one trip", reference_m=ledger.reference_m)


def levenshtein(a: list[int] | np.ndarray, b: list[int] | np.ndarray) -> int:
    """Edit distance (insertions, deletions, substitutions) between two cell sequences."""
    a, b = list(a), list(b)
    prev = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        cur = [i] + [0] * len(b)
        for j, y in enumerate(b, 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (x != y))
        prev = cur
    return prev[-1]


def _graph(side: int, enter_cost: np.ndarray) -> scipy.sparse.csr_matrix:
    """4-neighbour grid; the weight of edge u -> v is the time to enter v."""
    idx = np.arange(side * side).reshape(side, side)
    src = np.concatenate([idx[:, :-1].ravel(), idx[:, 1:].ravel(), idx[:-1, :].ravel(), idx[1:, :].ravel()])
    dst = np.concatenate([idx[:, 1:].ravel(), idx[:, :-1].ravel(), idx[1:, :].ravel(), idx[:-1, :].ravel()])
    return scipy.sparse.csr_matrix((enter_cost[dst], (src, dst)), shape=(side * side, side * side))


def _route(graph: scipy.sparse.csr_matrix, start: int, goal: int) -> list[int]:
    _, pred = dijkstra(graph, indices=start, return_predecessors=True)
    path = [goal]
    while path[-1] != start:
        step = int(pred[path[-1]])
        if step < 0:     # scipy's "no predecessor": the grid is connected, so only overflowing costs get here
            raise LdpvizInputError(f"no route from cell {start} to cell {goal}: the route times overflow")
        path.append(step)
    return path[::-1]


@dataclass
class NavigationResult:
    """Per-trip measures and their means; ``example`` holds one trip's routes as grid cells."""

    mechanism: str
    epsilon: float
    theta_s: float
    grid: Grid
    updates: np.ndarray
    rel_levenshtein: np.ndarray
    time_deviation_s: np.ndarray
    optimal_time_s: np.ndarray
    guarantee: str
    settings: dict[str, Any]
    example: dict[str, list[int]] = field(default_factory=dict)
    congestion_true: np.ndarray | None = None
    congestion_estimated: np.ndarray | None = None
    ledger: Any = None        #: what each person pays (:func:`navigation_ledger`, the accountant's ledger)

    def summary(self) -> dict[str, Any]:
        """Means and worst cases; the worst trip's total is the per-trip guarantee, the mean is not. Every total is
        read from the accountant's ledgers (:func:`navigation_ledger`, :func:`trip_ledger`): a figure is the
        total in its own unit (``epsilon_unit``: 'per km' for Geo-I, whose slack is in ``*_total``), None where
        it mixes models (see the text)."""
        lam = self.updates
        windows = int(self.settings.get("windows_collected", 0))
        update = self.ledger.charges[-1]      # one update's charge in its own model (SEM-Geo-I: its epsilon')
        per = float(update.epsilon) if update.model != mechanisms.NO_PRIVACY else self.epsilon
        trip = trip_ledger(self.ledger, lam)
        mean_trip = accounting.uses_ledger(update, float(lam.mean()), unit=UNIT_TRIP,
                                           reference_m=self.ledger.reference_m).total()
        reporter = accounting.uses_ledger(self.ledger.charges[-2], windows, unit="one traffic reporter",
                                          reference_m=self.ledger.reference_m).total()
        person, worst_trip = self.ledger.total(), trip.total()
        return {"mechanism": self.mechanism, "epsilon_per_update": per, "epsilon_slider": self.epsilon,
                "theta_s": self.theta_s,
                "grid": self.grid.side, "trips": int(len(lam)), "mean_updates": float(lam.mean()),
                "max_updates": int(lam.max()), "mean_total_epsilon": mean_trip.figure(),
                "max_total_epsilon": worst_trip.figure(), "max_trip_total": worst_trip.to_dict(),
                "trip_total_text": worst_trip.local_text() or "0",
                "mean_trip_total_text": mean_trip.local_text() or "0",
                "update_cap": self.settings.get("max_updates"),
                "max_trips_per_person": (self.settings.get("people") or {}).get("max_trips_per_person", 1),
                "worst_person_epsilon": person.figure(), "worst_person_total": person.to_dict(),
                "persons_known": self.settings.get("people") is not None,
                "capped_trips": int(self.settings.get("capped_trips", 0)),
                "reporter_windows": windows, "reporter_total_epsilon": reporter.figure(),
                "epsilon_unit": self.settings.get("epsilon_unit", ""),
                "reporter_accounting": "repeat: the same reporters send in every window, charged W x epsilon",
                "rel_levenshtein": float(self.rel_levenshtein.mean()),
                "trip_time_deviation_s": float(self.time_deviation_s.mean()),
                "trip_time_deviation_rel": float((self.time_deviation_s / self.optimal_time_s).mean()),
                "guarantee": self.guarantee, "notes": list(self.settings.get("notes", [])),
                "settings": {k: v for k, v in self.settings.items() if k != "reports_sent_by_reporter"},
                "ledger": self.ledger.to_dict()}


def simulate_navigation(users_lon: np.ndarray, users_lat: np.ndarray, origin_lon: np.ndarray,
                        origin_lat: np.ndarray, dest_lon: np.ndarray, dest_lat: np.ndarray, region: Region,
                        grid_side: int, mechanism: str, epsilon: float, theta_s: float, *,
                        n_trips: int = 100, speed_mps: float = 10.0, delay_s: float | None = None,
                        threshold: float | None = None, seed: int = 0, params: dict[str, Any] | None = None,
                        max_updates: int | None = None, trip_person: np.ndarray | None = None,
                        users_person: np.ndarray | None = None) -> NavigationResult:
    """Simulate ``n_trips`` trips (seeded sample of the OD pairs) with LDP location updates; see module docstring.

    ``max_updates``: the client-side cap on location updates per trip (None: no cap). ``trip_person``: the
    person of every OD pair (None: synthetic pairs, one per synthetic person), for the per-person total.
    ``users_person``: the person of every traffic location (one each; None: each row is its own person).
    """
    require(isinstance(grid_side, (int, np.integer)) and 2 <= grid_side <= MAX_NAV_GRID_SIDE,
            f"grid side must be a whole number from 2 to {MAX_NAV_GRID_SIDE}, got {grid_side!r}")
    epsilon = validate_epsilon(epsilon)
    require(isinstance(theta_s, (int, float)) and math.isfinite(theta_s) and theta_s >= 0,
            f"theta (delay threshold, seconds) must be a number >= 0, got {theta_s!r}")
    require(isinstance(n_trips, (int, np.integer)) and 1 <= n_trips <= MAX_TRIPS,
            f"trips must be a whole number from 1 to {MAX_TRIPS:,}, got {n_trips!r}")
    require(math.isfinite(speed_mps) and speed_mps > 0, f"speed must be > 0 m/s, got {speed_mps!r}")
    require(max_updates is None or (isinstance(max_updates, (int, np.integer)) and not isinstance(max_updates, bool)
                                    and max_updates >= 0),
            f"the cap on updates per trip must be a whole number >= 0 (or none), got {max_updates!r}")
    check_update_mechanism(mechanism)
    grid = Grid(region, int(grid_side))
    rng = np.random.default_rng(seed)
    users = grid.bin_lonlat(users_lon, users_lat)
    n = len(users.cells)
    require(n > 0, "no user lies inside the region; choose another region")
    base = grid.cell_m / speed_mps
    delay = base if delay_s is None else float(delay_s)
    require(math.isfinite(delay) and delay >= 0, f"delay must be >= 0 seconds, got {delay_s!r}")
    worst = grid.n_cells * (base + delay)            # a route through every cell, each congested
    room = MAX_ROUTE_S / grid.n_cells - base           # the largest delay that keeps every route countable
    require(worst <= MAX_ROUTE_S,
            f"route times too large to count: a route over the {grid.n_cells:,} cells could take {worst:.3g} s "
            f"(free-flow {base:.3g} s a cell at {speed_mps:g} m/s, plus a delay of {delay:.3g} s per congested "
            f"cell), beyond {MAX_ROUTE_S:.3g} s where a float stops counting whole seconds; "
            + (f"give a delay of at most {room:.3g} s" if delay_s is not None and room > 0 else "give a higher speed"))
    require(threshold is None or (math.isfinite(float(threshold)) and float(threshold) >= 0),
            f"threshold (users in a cell above which it is congested) must be a number >= 0, got {threshold!r}")
    thr = 2.0 * n / grid.n_cells if threshold is None else float(threshold)
    true_counts = np.bincount(users.cells, minlength=grid.n_cells).astype(float)
    true_cost = base + delay * (true_counts > thr)
    free_graph = _graph(grid.side, np.full(grid.n_cells, base))
    true_graph = _graph(grid.side, true_cost)

    bo, bd = grid.bin_lonlat(origin_lon, origin_lat), grid.bin_lonlat(dest_lon, dest_lat)
    uo, ud = grid.region.to_unit(origin_lon, origin_lat), grid.region.to_unit(dest_lon, dest_lat)
    both = np.all((uo >= 0) & (uo <= 1) & (ud >= 0) & (ud <= 1), axis=1)
    o_cells = np.minimum((uo[both] * grid.side).astype(np.int64), grid.side - 1)
    d_cells = np.minimum((ud[both] * grid.side).astype(np.int64), grid.side - 1)
    o_flat, d_flat = o_cells[:, 1] * grid.side + o_cells[:, 0], d_cells[:, 1] * grid.side + d_cells[:, 0]
    trips_outside = int((~both).sum())
    moving = np.flatnonzero(o_flat != d_flat)
    require(len(moving) > 0, "no trip has its origin and destination in different cells of the region")
    pick = rng.choice(moving, size=min(int(n_trips), len(moving)), replace=False)
    trip_notes = ([wording.capped(n_trips, len(moving), "trips that change cell", "the region")]
              if n_trips > len(moving) else [])
    if trip_person is not None:
        require(len(trip_person) == len(origin_lon), f"trip persons: {len(trip_person)} for {len(origin_lon)} trips")
    del bo, bd

    mech = mechanisms.create(mechanism, grid, epsilon, **(params or {}))
    windows: list[np.ndarray] = []

    sent_by_reporter = np.zeros(n, dtype=np.int64)   # reports each traffic reporter actually sent (the ledger's check)

    def estimated_cost(k: int) -> np.ndarray:
        while len(windows) <= k:          # window k: every user reports once more at epsilon
            density = mech.run(users, rng).density.reshape(-1)
            sent_by_reporter[:] += 1
            windows.append(base + delay * (n * density > thr))
        return windows[k]

    updates, rel_lev, dev, opt = [], [], [], []
    capped = 0
    example: dict[str, list[int]] = {}
    for t, trip in enumerate(pick):
        start, goal = int(o_flat[trip]), int(d_flat[trip])
        plan = _route(free_graph, start, goal)
        plan_cost = np.full(grid.n_cells, base)
        driven = [start]
        elapsed = predicted = 0.0
        lam, i = 0, 0
        at_cap = False
        while driven[-1] != goal:
            nxt = plan[i + 1]
            elapsed += true_cost[nxt]
            predicted += plan_cost[nxt]
            driven.append(nxt)
            i += 1
            if nxt != goal and elapsed - predicted > theta_s and not at_cap:
                if max_updates is not None and lam >= max_updates:   # the client's cap: it sends nothing more
                    at_cap = True
                    capped += 1
                    continue
                plan_cost = estimated_cost(lam)
                lam += 1
                plan, i = _route(_graph(grid.side, plan_cost), nxt, goal), 0
                predicted = elapsed
        best = _route(true_graph, start, goal)
        best_time = float(true_cost[best[1:]].sum())
        updates.append(lam)
        rel_lev.append(levenshtein(driven, best) / len(best))
        dev.append(elapsed - best_time)
        opt.append(best_time)
        if t == 0:
            example = {"driven": driven, "best": best}
    people = None if trip_person is None else person_totals(np.asarray(trip_person)[both][pick])
    reporting = grid.region.contains(users_lon, users_lat)    # the traffic reporters: those bin_lonlat kept
    ledger = navigation_ledger(mech, region, len(windows),
                               None if users_person is None else np.asarray(users_person)[reporting],
                               None if trip_person is None else np.asarray(trip_person)[both][pick], np.array(updates))
    return NavigationResult(
        mechanism=mech.name, epsilon=epsilon, theta_s=float(theta_s), grid=grid, updates=np.array(updates),
        rel_levenshtein=np.array(rel_lev), time_deviation_s=np.array(dev), optimal_time_s=np.array(opt),
        guarantee=navigation_guarantee(mech, None if max_updates is None else int(max_updates), len(windows),
                                       people, ledger),
        settings={"speed_mps": speed_mps, "cell_s": base, "delay_s": delay, "threshold_users": thr,
                  "epsilon_unit": "per km" if mech.privacy_model == mechanisms.GEO_I else "",
                  "users": n, "users_outside_region": int(users.n_outside), "trips_outside_region": trips_outside,
                  "congested_cells_true": int((true_counts > thr).sum()),
                  "windows_collected": len(windows), "seed": seed,
                  "max_updates": None if max_updates is None else int(max_updates), "capped_trips": capped,
                  "people": people, "notes": trip_notes, "reports_sent_by_reporter": sent_by_reporter},
        ledger=ledger,
        example=example, congestion_true=(true_counts > thr).reshape(grid.side, grid.side),
        congestion_estimated=(windows[0] > base).reshape(grid.side, grid.side) if windows else None)


def navigation_for_dataset(dataset: Any, mechanism: str, epsilon: float, theta_s: float, grid_side: int, *,
                           region: Any = None, n_trips: int = 100, seed: int = 0, **kwargs: Any) -> NavigationResult:
    """Navigation on a dataset (a bundled name, loaded :class:`~ldpviz.data.trajectories.Trajectories` or a loaded
    points file): its points (all trajectory points) are the traffic, its OD pairs the trips. ``region``: a preset
    name or a :class:`Region` (e.g. a stated bbox); trips left out of the OD pairs are counted in ``settings``."""
    from ldpviz.data import datasets, trajectories
    from ldpviz.flows import od

    pairs, reg, _ = od.load_od_pairs(dataset, region, None, seed)
    if isinstance(dataset, (trajectories.Trajectories, datasets.Dataset)):   # a file the user loaded
        data: Any = dataset
    elif dataset in trajectories.names():
        data = trajectories.load(dataset)
    else:
        data = datasets.load(dataset, seed)
    if isinstance(data, trajectories.Trajectories):        # a traffic reporter is a person: one location each
        lon, lat = trajectories.one_point_per_person(data.person, data.lon, data.lat, seed)
        users_person = pd.unique(pd.Series(np.asarray(data.person).astype(str)))
    else:
        lon, lat, users_person = data.lon, data.lat, None
    res = simulate_navigation(lon, lat, pairs.origin_lon, pairs.origin_lat, pairs.dest_lon,
                              pairs.dest_lat, reg, grid_side, mechanism, epsilon, theta_s, n_trips=n_trips,
                              seed=seed, trip_person=pairs.person, users_person=users_person, **kwargs)
    res.settings["trips_left_out"] = dict(pairs.left_out)
    res.settings["region"] = od.region_sentence(reg)
    return res
