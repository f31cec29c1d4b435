"""One OD run (two reports per user, the joint statistic, an estimate), its metrics, and trials on a data set."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ldpviz import mechanisms, wording
from ldpviz.wording import plural
from ldpviz.geo.domain import Binned, Grid, Region
from ldpviz.errors import require
from ldpviz.limits import MAX_TRIALS
from ldpviz.mechanisms.base import validate_epsilon
from ldpviz.flows.od_simulate import simulate_statistic
from ldpviz.flows.od_statistics import JointStatistic, joint_statistic
from ldpviz.mechanisms.srr.staircase import grid_domain
from ldpviz.flows.od._setting import (ESTIMATORS, PATHS, check_od_grid, check_od_users, od_guarantee, od_ledger,
                                      region_sentence, resolve_mechanism, trips_per_person)
from ldpviz.flows.od._estimators import _normalise, estimate_em, estimate_lasso, estimate_unbiased


# ---------------------------------------------------------------- metrics
def od_l1(true: np.ndarray, est: np.ndarray) -> float:
    """L1 distance over OD pairs between two OD distributions (L-SRR Fig. 10), in [0, 2]."""
    return float(np.abs(_normalise(np.asarray(true, float)) - _normalise(np.asarray(est, float))).sum())


def flat_l1(true: np.ndarray) -> float:
    """The L1 of a flat guess (every OD pair equally likely, knowing nothing) from ``true``: the bar an estimate
    must beat to say anything (issue 27: a 300-trip estimate that was pure noise carried no word)."""
    return od_l1(true, np.ones_like(np.asarray(true, dtype=float)))


def top_k_precision(true: np.ndarray, est: np.ndarray, k: int) -> float:
    """Of the k largest true OD pairs (ties by index), the share that are among the estimate's k largest."""
    t, e = np.asarray(true, float).ravel(), np.asarray(est, float).ravel()
    require(isinstance(k, (int, np.integer)) and k >= 1, f"top-k needs k >= 1, got {k!r}")
    k = int(min(k, int((t > 0).sum()) or 1, t.size))
    top_t = np.argsort(-t, kind="stable")[:k]
    top_e = np.argsort(-e, kind="stable")[:k]
    return float(len(np.intersect1d(top_t, top_e)) / k)


# ---------------------------------------------------------------- one OD run
@dataclass
class ODResult:
    """True and estimated OD distributions over grid cells (d_cells x d_cells, row = origin cell)."""

    mechanism: str
    estimator: str
    epsilon: float
    grid: Grid
    true: np.ndarray
    estimate: np.ndarray
    l1: float
    top_k: int
    top_k_precision: float
    n_users: int
    left_out: dict[str, int]
    guarantee: str
    seconds: dict[str, float]
    info: dict[str, Any] = field(default_factory=dict)
    max_trips_per_person: int = 1    #: most trips by one person among the pairs (1 for synthetic pairs)
    people: int = 0                  #: distinct people among the pairs
    persons_known: bool = False      #: False for synthetic pairs (one per synthetic person)
    region_chosen: str = ""          #: how the region was chosen (:func:`region_sentence`)
    ledger: Any = None               #: what each person pays (:func:`od_ledger`, the accountant's ledger)

    def summary(self) -> dict[str, Any]:
        return {"mechanism": self.mechanism, "estimator": self.estimator, "epsilon": self.epsilon,
                "epsilon_origin": self.epsilon / 2, "epsilon_destination": self.epsilon / 2,
                "grid": self.grid.side, "od_pairs": int(self.true.size), "n_users": self.n_users,
                "distinct_true_pairs": int((self.true > 0).sum()), "l1": self.l1, "top_k": self.top_k,
                "top_k_precision": self.top_k_precision, "left_out": dict(self.left_out),
                "guarantee": self.guarantee, "seconds": dict(self.seconds), "info": dict(self.info),
                "max_trips_per_person": self.max_trips_per_person, "people": self.people,
                "persons_known": self.persons_known,
                "max_person_epsilon": self.ledger.total("worst").ldp_only(),
                "region_chosen": self.region_chosen,
                "ledger": self.ledger.to_dict() if self.ledger is not None else None}


def bin_pairs(grid: Grid, o_lon: np.ndarray, o_lat: np.ndarray, d_lon: np.ndarray,
              d_lat: np.ndarray) -> tuple[Binned, Binned, int]:
    """Bin origins and destinations; pairs with either end outside the region are left out (counted)."""
    uo, ud = grid.region.to_unit(o_lon, o_lat), grid.region.to_unit(d_lon, d_lat)
    inside = np.all((uo >= 0) & (uo <= 1), axis=1) & np.all((ud >= 0) & (ud <= 1), axis=1)
    bo, bd = grid.bin_unit(uo[inside]), grid.bin_unit(ud[inside])
    return bo, bd, int((~inside).sum())


def estimate_od(stat: JointStatistic, estimator: str, lasso_z: float | None = None) -> tuple[np.ndarray, dict]:
    require(estimator in ESTIMATORS, f"estimator must be one of {', '.join(ESTIMATORS)}; got {estimator!r}")
    if estimator == "lasso":
        return estimate_lasso(stat, lasso_z)
    if estimator == "em":
        return estimate_em(stat)
    return estimate_unbiased(stat)


def run_od(o_lon: np.ndarray, o_lat: np.ndarray, d_lon: np.ndarray, d_lat: np.ndarray, region: Region,
           grid_side: int, mechanism: str, epsilon: float, *, estimator: str = "lasso", seed: int = 0,
           top_k: int = 10, params: dict[str, Any] | None = None, lasso_z: float | None = None,
           left_out: dict[str, int] | None = None, path: str = "users",
           person: np.ndarray | None = None) -> ODResult:
    """Collect every trip's OD pair with ``mechanism`` at epsilon/2 + epsilon/2 and estimate the OD distribution.

    ``person`` (the person of every pair; None for synthetic pairs, one per synthetic person) sets the
    per-person total stated in the guarantee: a person with k trips in the region is at k x epsilon.

    ``path="aggregate"`` draws the joint statistic from the true OD counts instead of simulating each
    phone (:mod:`ldpviz.flows.od_simulate`: exact in distribution; OLH-H under a fully random hash family).
    """
    require(path in PATHS, f"path must be one of {', '.join(PATHS)}; got {path!r}")
    name = resolve_mechanism(mechanism)
    epsilon = validate_epsilon(epsilon)
    grid = Grid(region, check_od_grid(grid_side))
    params = dict(params or {})
    require(params.get("domain", "grid") == "grid",
            "OD analysis uses the public grid domain only (domain='grid'): the occupied domain is built from the "
            "users' true locations")
    left = dict(left_out or {})
    bo, bd, outside = bin_pairs(grid, o_lon, o_lat, d_lon, d_lat)
    trips = reporting = None
    if person is not None:
        require(len(person) == len(o_lon), f"person labels: {len(person)} for {len(o_lon)} OD pairs")
        uo, ud = grid.region.to_unit(o_lon, o_lat), grid.region.to_unit(d_lon, d_lat)
        inside = np.all((uo >= 0) & (uo <= 1), axis=1) & np.all((ud >= 0) & (ud <= 1), axis=1)
        reporting = np.asarray(person)[inside]          # the person of every pair that sends its two reports
        trips = trips_per_person(reporting)
    if outside:
        left["pairs with an end outside the region"] = left.get("pairs with an end outside the region", 0) + outside
    require(len(bo.cells) > 0, "no OD pair has both ends inside the region; choose another region")
    mech = mechanisms.create(name, grid, epsilon / 2.0, **params)
    ledger = od_ledger(mech, grid.region, reporting, len(bo.cells))
    domain = grid_domain(grid)
    rng = np.random.default_rng(seed)
    pos_o, pos_d = mech.positions(domain, bo), mech.positions(domain, bd)
    D = domain.size
    counts = np.bincount(pos_o * D + pos_d, minlength=D * D).reshape(D, D)
    t0 = time.perf_counter()
    if path == "users":
        rep_o, rep_d = mech.perturb(bo, rng), mech.perturb(bd, rng)       # the phones: two reports at eps/2
        t1 = time.perf_counter()
        stat = joint_statistic(mech, rep_o, rep_d)
    else:

        t1 = t0
        stat = simulate_statistic(mech, domain, counts, rng)
    t2 = time.perf_counter()
    F_pos, info = estimate_od(stat, estimator, lasso_z)
    t3 = time.perf_counter()
    true_pos = counts / len(pos_o)
    cells = domain.cells
    true = np.zeros((grid.n_cells, grid.n_cells))
    est = np.zeros_like(true)
    true[np.ix_(cells, cells)] = true_pos
    est[np.ix_(cells, cells)] = F_pos
    return ODResult(mechanism=name, estimator=estimator, epsilon=epsilon, grid=grid, true=true, estimate=est,
                    l1=od_l1(true, est), top_k=top_k, top_k_precision=top_k_precision(true, est, top_k),
                    n_users=int(len(bo.cells)), left_out=left,
                    guarantee=od_guarantee(name, epsilon, ledger, grid.region),
                    seconds={"perturb": t1 - t0, "statistic": t2 - t1, "estimate": t3 - t2},
                    info={**info, "report_symbols": int(stat.A_o.shape[0]), "exact_likelihood": stat.exact,
                          "path": path},
                    max_trips_per_person=trips[0] if trips else 1, people=trips[1] if trips else int(len(bo.cells)),
                    persons_known=trips is not None, region_chosen=region_sentence(grid.region), ledger=ledger)


# ---------------------------------------------------------------- datasets -> OD pairs, trials
def load_od_pairs(dataset: Any, region: Any = None, n_users: int | None = None,
                  seed: int = 0) -> tuple[Any, Region, str]:
    """OD pairs of a dataset: trips of a trajectory dataset (a bundled name or a loaded
    :class:`~ldpviz.data.trajectories.Trajectories`), or gravity-model pairs of a bundled point dataset.

    Returns ``(ODPairs, region, source)``; ``source`` says in words where the pairs come from.
    ``n_users`` subsamples trips (seeded, without replacement) or sets the number of synthetic pairs.
    """
    from ldpviz.data import datasets, trajectories

    if isinstance(dataset, trajectories.Trajectories) or dataset in trajectories.names():
        data = dataset if isinstance(dataset, trajectories.Trajectories) else trajectories.load(dataset)
        reg = _region(data.presets, region)
        pairs = trajectories.od_pairs(data, reg)
        source = f"{data.label}: first and last point of each trip inside the region"
        if n_users is not None:
            require(isinstance(n_users, (int, np.integer)) and n_users >= 1, f"users must be >= 1, got {n_users!r}")
            if n_users < pairs.n:
                keep = np.sort(np.random.default_rng(seed).choice(pairs.n, size=n_users, replace=False))
                left = dict(pairs.left_out)
                left["trips not in the requested subsample"] = pairs.n - n_users
                pairs = trajectories.ODPairs(pairs.origin_lon[keep], pairs.origin_lat[keep], pairs.dest_lon[keep],
                                             pairs.dest_lat[keep], pairs.n_trips, left,
                                             None if pairs.person is None else pairs.person[keep])
        return pairs, reg, source
    data = dataset if isinstance(dataset, datasets.Dataset) else datasets.load(dataset, seed)
    reg = _region(data.presets, region)
    n = int(n_users) if n_users is not None else int(reg.contains(data.lon, data.lat).sum())
    check_od_users(n)
    pairs = trajectories.gravity_od_pairs(data.lon, data.lat, reg, n, seed=seed)
    return pairs, reg, (f"{data.label}: {n:,} synthetic OD pairs by a gravity model on the points "
                        "(not real trips; see ldpviz.data.trajectories.gravity_od_pairs)")


def _region(presets: dict[str, Region], region: Any) -> Region:
    if region is None:
        return next(iter(presets.values()))
    if isinstance(region, Region):
        return region
    require(region in presets, f"unknown region {region!r}; this dataset has: {', '.join(presets)}")
    return presets[region]


def od_trials(dataset: Any, mechanism: str, epsilon: float, grid_side: int, *, region: Any = None,
              estimator: str = "lasso", trials: int = 1, seed: int = 0, n_users: int | None = None,
              top_k: int = 10, params: dict[str, Any] | None = None, path: str = "users") -> dict[str, Any]:
    """``trials`` OD runs (seeds seed, seed+1, ...) on one population; means and per-trial values.

    ``path="aggregate"`` draws each run's joint statistic from the OD counts (see :func:`run_od`).
    """
    require(isinstance(trials, (int, np.integer)) and 1 <= trials <= MAX_TRIALS,
            f"trials must be a whole number from 1 to {MAX_TRIALS}, got {trials!r}")
    pairs, reg, source = load_od_pairs(dataset, region, n_users, seed)
    runs = [run_od(pairs.origin_lon, pairs.origin_lat, pairs.dest_lon, pairs.dest_lat, reg, grid_side, mechanism,
                   epsilon, estimator=estimator, seed=seed + t, top_k=top_k, params=params,
                   left_out=pairs.left_out, path=path, person=pairs.person) for t in range(int(trials))]
    out = runs[0].summary()
    name = dataset.name if hasattr(dataset, "name") else dataset
    out.update({"dataset": name, "region": reg.name, "source": source, "trials": int(trials),
                "seeds": [seed + t for t in range(int(trials))],
                "l1": float(np.mean([r.l1 for r in runs])), "l1_trials": [r.l1 for r in runs],
                "top_k_precision": float(np.mean([r.top_k_precision for r in runs])),
                "top_k_precision_trials": [r.top_k_precision for r in runs]})
    out["notes"] = ([wording.capped(n_users, pairs.n, "trips", "the region")]
                    if n_users is not None and n_users > pairs.n else [])
    occurring = int((runs[0].true > 0).sum())       # top_k_precision ranks at most the OD pairs that occur
    if top_k > occurring:
        out["notes"].append(f"top-{top_k} was asked for but {plural(occurring, 'OD pair')} occur in the data; the "
                            f"precision is over the top {occurring:,}.")
    return out
