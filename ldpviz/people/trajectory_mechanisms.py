"""DAM against trajectory LDP mechanisms on the points of trajectories (DAM paper App. D).

dam-disk-area-mechanism.md, Appendix D, compares DAM with LDPTrace [30] and PivotTrace
[31] by the W2 distance between the true and the estimated *point* distributions on a
d x d grid (its seven steps: grid, count true points, D_T, run the mechanism, count the
estimated points, D_T hat, W2). Every class here takes the people's trajectories as
ordered flat cells on that grid (:func:`ldpviz.data.trajectory_generator.to_cells`) and returns an
:class:`~ldpviz.mechanisms.base.Estimate` of that point distribution.

**How DAM meets a trajectory.** App. D does not say how DAM, a one-location mechanism,
is run on a trajectory or with what budget: it only says the trajectory statistics are
"transformed to point statistics". Two readings are offered, with their privacy unit:

* :class:`DAMEveryPoint` (``dam-points``) — every point is reported with DAM at epsilon.
  This is the most plausible reading of the paper (DAM estimates a point distribution and
  the figure uses the same epsilon axis for every method), but it is epsilon-LDP *per
  point*: a person with L points is protected only at L x epsilon (sequential composition;
  up to 200 epsilon with App. D's lengths). Privacy unit: one location.
* :class:`DAMOnePoint` (``dam-sample``) — each person reports one point drawn uniformly
  from their trajectory with DAM at epsilon: epsilon-LDP per trajectory (the sample is
  post-processing of nothing the server sees; the report is one DAM output). Privacy unit:
  one trajectory. It estimates the *person-averaged* point distribution (every person
  weight 1), which differs from the per-point D_T when long trajectories go elsewhere than
  short ones; the bench reports that gap.

Splitting epsilon over the points (epsilon / L each) is the third option; it is not
offered: at App. D's lengths (up to 200) every report would carry epsilon / 200 and the
per-person lengths would make the channels differ between users.

**LDPTrace** (Du et al., "LDPTrace: Locally Differentially Private Trajectory
Synthesis", PVLDB 16(8), 2023), :class:`LDPTrace`. What we followed, from the paper's
description and the authors' public implementation (read, not copied):

1. A trajectory is its sequence of grid cells with consecutive repeats merged and gaps
   between non-adjacent cells filled by the cells on the straight line, so every move is
   to one of the 8 neighbouring cells.
2. Budget split (sequential composition per person, total epsilon): epsilon/10 for the
   length, reported with OUE over lengths 1..d^2 (longer ones clipped); the server takes
   the 90% quantile of the estimated lengths as ``max_len``; the other 9 epsilon/10 is split
   evenly over the person's ``max_len + 1`` reports: the start cell, the end cell of
   the first ``max_len`` cells and their ``max_len - 1`` move slots (real moves, then dummies), each an OUE
   report (cells: domain d^2; moves: domain 8 d^2, cell x direction). ``max_len`` depends on
   the people's lengths but is computed from the epsilon/10 reports only, so broadcasting it
   is paid for. Privacy unit: one trajectory.
   **Padding (ours; the paper is silent on it).** Every person sends exactly ``max_len + 1``
   cell/move reports: one with fewer than ``max_len - 1`` moves adds dummy move reports, so the
   number of reports reveals nothing about the (truncated) length that the epsilon/10 report
   protects. A dummy is an OUE report of the empty input (every bit 1 with probability q): its
   output probabilities are within e^(eps_r) of any real move's (bit v: (1/2)/q = (e^eps_r + 1)/2
   <= e^eps_r), so a person's reports stay (max_len + 1) x eps_r by composition, and the server,
   which cannot tell them apart, discards them in aggregate: the OUE estimate subtracts q per report
   over all reports received, dummies included (:func:`oue_counts_with_dummies`).
3. The server builds a first-order Markov chain with a virtual start (the estimated start
   distribution) and a virtual end state (the estimated end counts) per cell, negative
   estimates set to 0, rows normalised.
4. It synthesises as many trajectories as people: a start cell, a length from the
   estimated length distribution, then moves; at step k the end state's weight is
   multiplied by min(1, 0.3 + 0.2 (k - 1)) as in the authors' implementation (the paper
   leaves the stopping rule to the length).
5. Per App. D's step (5), every cell of every synthetic trajectory counts as one point.

Where we had to choose: OUE responses are drawn in aggregate (every bit of every report
is independent, so the per-value support counts are exactly independent binomials,
:func:`ldpviz.mechanisms.fo.oracles.oue_aggregate_support`); ``stay_moves=True`` (not in LDPTrace)
adds a 9th "stay" move so dwelling in a cell is kept: with merged repeats (step 1) a
trajectory that stays 30 points in one cell counts once in the synthetic density but 30
times in D_T, which is one reason LDPTrace's per-point W2 is large.

**PivotTrace** (Zhang et al., "Trajectory Data Collection with Local Differential
Privacy", PVLDB 16(10): 2591-2604, 2023, ref. [31] of the DAM paper) is *not* implemented:
see :data:`PIVOTTRACE_NOT_IMPLEMENTED` (what was searched, what the published description
we could read leaves out, and why an implementation would not be faithful); the bench
prints it into docs/dam-trajectories.md.
"""

from __future__ import annotations

from typing import Any, ClassVar, Sequence

import numpy as np

from ldpviz.geo.domain import Binned, Grid
from ldpviz.errors import require
from ldpviz.mechanisms.estimation import to_distribution
from ldpviz.mechanisms.dam import disk_area as dam_module
from ldpviz.mechanisms import accounting
from ldpviz.mechanisms.base import LDP, Estimate, validate_epsilon
from ldpviz.mechanisms.fo.oracles import (SupportCounts, oue_aggregate_support, oue_estimate_counts,
                                          oue_probabilities)

PAPER = "dam-disk-area-mechanism.md App. D"

#: Why PivotTrace (DAM paper ref. [31]) is not run; printed by bench/dam_trajectories.py.
PIVOTTRACE_NOT_IMPLEMENTED = (
    "PivotTrace (Zhang, Ye, Chen, Hu, Han, 'Trajectory Data Collection with Local Differential Privacy', "
    "PVLDB 16(10), 2023; arXiv 2307.09339) is not implemented. Searched: the DAM paper (App. D and its reference "
    "list, which give only the title and that PivotTrace spends much of its budget on directions); the public-docs, "
    "web-page and code indexes available to us (queries 'PivotTrace trajectory local differential privacy pivot', "
    "'pivot sampling perturbation direction sector', 'anchor-based trajectory perturbation square wave radius', "
    "the paper's title and authors; repositories and files named PivotTrace). Found: the paper's abstract "
    "(each point is perturbed by 'pivot sampling': its preceding and following points are pivots, perturbed "
    "directions from them restrict where the perturbed point may fall, pure epsilon-LDP per trajectory; an "
    "anchor-based method restricts the region of a whole trajectory; a guideline picks the direction granularity) "
    "and a third-party re-implementation of the anchor-based method (ATP.py in the TraCS authors' repository), "
    "not the paper's body. Left out of what we could read: the sampling distribution inside the restricted region, "
    "the split of epsilon between the trajectory's anchor (centre and radius), its directions and its points, how "
    "the anchor radius is perturbed and calibrated, the direction-granularity guideline, how a trajectory's length "
    "enters the budget (the re-implementation divides epsilon by the true length, which is then not protected), and "
    "how a location set of POIs with pairwise distances maps to App. D's d x d grid cells. The re-implementation "
    "fixes these with constants (e.g. 0.75 x 0.75 of epsilon for directions, 1/16 for the centre, 3/16 for the "
    "radius, a sigmoid correction of the radius) that we cannot check against the paper, and the project does not "
    "copy other projects' code; an implementation would be our guess at PivotTrace, so it is not run and App. D's "
    "PivotTrace curve is not reproduced."
)

UNIT_TRAJECTORY = "one trajectory (all of a person's points)"
UNIT_LOCATION = "one location (a single point of a trajectory)"
#: dx, dy of the 8 moves (and the optional stay, index 8)
MOVES = np.array([(-1, -1), (-1, 0), (-1, 1), (0, -1), (0, 1), (1, -1), (1, 0), (1, 1), (0, 0)])
LENGTH_SHARE = 0.1          # LDPTrace: epsilon / 10 for the length
LENGTH_QUANTILE = 0.9       # LDPTrace: max_len = 90% quantile of the estimated lengths


def point_density(sequences: Sequence[np.ndarray], side: int) -> np.ndarray:
    """App. D steps (2)-(3): D_T, the distribution of all trajectory points over the (side, side) grid."""
    require(len(sequences) > 0, "no trajectories given")
    cells = np.concatenate([np.asarray(s, dtype=np.int64) for s in sequences])
    return to_distribution(np.bincount(cells, minlength=side * side).astype(float).reshape(side, side))


def person_density(sequences: Sequence[np.ndarray], side: int) -> np.ndarray:
    """Each person's points normalised to weight 1, averaged: what ``dam-sample`` estimates."""
    total = np.zeros(side * side)
    for s in sequences:
        total += np.bincount(np.asarray(s, dtype=np.int64), minlength=side * side) / len(s)
    return to_distribution(total.reshape(side, side))


class TrajectoryMechanism:
    """A mechanism whose input is one trajectory (ordered grid cells) per person."""

    name: ClassVar[str]
    label: ClassVar[str]
    reference: ClassVar[str]
    privacy_model: ClassVar[str] = LDP
    privacy_unit: ClassVar[str] = UNIT_TRAJECTORY

    def __init__(self, grid: Grid, epsilon: float) -> None:
        require(isinstance(grid, Grid), "a trajectory mechanism needs a Grid")
        self.grid = grid
        self.epsilon = validate_epsilon(epsilon)

    def guarantee(self) -> str:
        return f"epsilon-LDP with epsilon = {self.epsilon:g} per {self.privacy_unit}"

    def run(self, sequences: Sequence[np.ndarray], rng: np.random.Generator) -> Estimate:
        raise NotImplementedError

    def _check(self, sequences: Sequence[np.ndarray]) -> list[np.ndarray]:
        require(len(sequences) > 0, "no trajectories given")
        out = [np.asarray(s, dtype=np.int64).ravel() for s in sequences]
        require(all(s.size > 0 for s in out), "every trajectory needs at least one point")
        n = self.grid.n_cells
        require(all(s.min() >= 0 and s.max() < n for s in out), f"trajectory cells must lie in 0..{n - 1}")
        return out


def _binned(cells: np.ndarray) -> Binned:
    return Binned(cells=cells, unit=np.zeros((cells.size, 2)), n_outside=0)


class DAMEveryPoint(TrajectoryMechanism):
    """DAM at epsilon on every point (the paper's most plausible reading; epsilon per point)."""

    name = "dam-points"
    label = "DAM on every point (epsilon per point)"
    reference = f"{PAPER}; DAM: Def. 8, Algorithms 1-2"
    privacy_unit = UNIT_LOCATION

    def guarantee(self) -> str:
        return (f"epsilon-LDP with epsilon = {self.epsilon:g} per location; a person with L points is protected "
                f"at L x {self.epsilon:g} (sequential composition), not at {self.epsilon:g}")

    def run(self, sequences: Sequence[np.ndarray], rng: np.random.Generator) -> Estimate:
        seqs = self._check(sequences)
        mech = dam_module.DAM(self.grid, self.epsilon)
        cells = np.concatenate(seqs)
        est = mech.estimate(mech.perturb(_binned(cells), rng))
        # what a person pays is the ledger's (trajectory_ledger), never a total made here
        est.info.update({"people": len(seqs), "reports": int(cells.size),
                         "most_points_per_person": int(max(s.size for s in seqs))})
        return est


class DAMOnePoint(TrajectoryMechanism):
    """DAM at epsilon on one uniformly sampled point per person (epsilon per trajectory)."""

    name = "dam-sample"
    label = "DAM on one sampled point per person (epsilon per trajectory)"
    reference = f"{PAPER}; DAM: Def. 8, Algorithms 1-2; one report per person"
    privacy_unit = UNIT_TRAJECTORY

    def run(self, sequences: Sequence[np.ndarray], rng: np.random.Generator) -> Estimate:
        seqs = self._check(sequences)
        lengths = np.array([s.size for s in seqs])
        starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
        pick = starts + (rng.random(len(seqs)) * lengths).astype(np.int64)
        cells = np.concatenate(seqs)[pick]
        mech = dam_module.DAM(self.grid, self.epsilon)
        est = mech.estimate(mech.perturb(_binned(cells), rng))
        est.info.update({"people": len(seqs), "reports": int(cells.size)})
        return est


# ---- LDPTrace ----------------------------------------------------------------------------

def oue_counts_with_dummies(true_counts: np.ndarray, n_dummy: int, epsilon: float,
                            rng: np.random.Generator) -> np.ndarray:
    """OUE support counts of real reports plus ``n_dummy`` empty-input dummies, and the server's estimate.

    Aggregate path, exact in distribution: bit v's count ~ Bin(n_v, 1/2) + Bin(n - n_v, q) +
    Bin(n_dummy, q). The unbiased estimate (support - N q) / (1/2 - q) over all N = n + n_dummy
    reports received removes the dummies in expectation; negative estimates are set to 0.
    """
    require(int(n_dummy) >= 0, f"dummy reports must be >= 0, got {n_dummy!r}")
    real = oue_aggregate_support(true_counts, epsilon, rng)
    _, q = oue_probabilities(epsilon)
    support = real.support + rng.binomial(int(n_dummy), q, size=real.support.shape)
    received = SupportCounts(support, real.n + int(n_dummy))
    return oue_estimate_counts(received, real.support.size, epsilon)


def grid_path(cells: np.ndarray, side: int) -> np.ndarray:
    """LDPTrace step 1: merge consecutive repeats and fill gaps so every move is to a neighbour."""
    cells = np.asarray(cells, dtype=np.int64)
    keep = np.concatenate([[True], cells[1:] != cells[:-1]])
    cells = cells[keep]
    rows, cols = np.divmod(cells, side)
    out = [cells[:1]]
    for k in range(1, cells.size):
        dr, dc = rows[k] - rows[k - 1], cols[k] - cols[k - 1]
        steps = max(abs(dr), abs(dc))
        if steps > 1:
            t = np.arange(1, steps) / steps
            mid_r = np.rint(rows[k - 1] + t * dr).astype(np.int64)
            mid_c = np.rint(cols[k - 1] + t * dc).astype(np.int64)
            out.append(mid_r * side + mid_c)
        out.append(cells[k:k + 1])
    path = np.concatenate(out)
    return path[np.concatenate([[True], path[1:] != path[:-1]])]


def neighbour_table(side: int, n_moves: int) -> np.ndarray:
    """``table[cell, m]``: the cell reached by move m (MOVES order), -1 outside the grid."""
    rows, cols = np.divmod(np.arange(side * side), side)
    r = rows[:, None] + MOVES[:n_moves, 0]
    c = cols[:, None] + MOVES[:n_moves, 1]
    ok = (r >= 0) & (r < side) & (c >= 0) & (c < side)
    return np.where(ok, r * side + c, -1)


def move_index(a: np.ndarray, b: np.ndarray, side: int) -> np.ndarray:
    """Index (0..8) in MOVES of the move from cell a to neighbouring cell b."""
    dr = b // side - a // side
    dc = b % side - a % side
    lookup = {(int(x), int(y)): i for i, (x, y) in enumerate(MOVES)}
    return np.array([lookup[(int(x), int(y))] for x, y in zip(dr, dc)], dtype=np.int64)


class LDPTrace(TrajectoryMechanism):
    """LDPTrace (Du et al., PVLDB 2023): OUE on length, start, end and moves, then Markov synthesis."""

    name = "ldptrace"
    label = "LDPTrace (Du et al., VLDB 2023)"
    reference = "Du et al., PVLDB 16(8) 2023 (LDPTrace); compared in " + PAPER
    privacy_unit = UNIT_TRAJECTORY

    def __init__(self, grid: Grid, epsilon: float, stay_moves: bool = False) -> None:
        super().__init__(grid, epsilon)
        self.stay_moves = bool(stay_moves)
        self.n_moves = 9 if self.stay_moves else 8

    def budgets(self, max_len: int) -> dict[str, float]:
        """Per-report budgets: length, then each of the max_len + 1 cell/move reports every person sends (padded)."""
        eps_len = LENGTH_SHARE * self.epsilon
        per_report = (self.epsilon - eps_len) / (max_len + 1)
        return {"length": eps_len, "per_report": per_report, "reports": max_len + 1,
                "total": eps_len + per_report * (max_len + 1)}

    def client_reports(self, paths: Sequence[np.ndarray], max_len: int) -> dict[str, np.ndarray]:
        """What each person's phone sends in round 2 once ``max_len`` is broadcast: start and end cell of its
        first ``max_len`` cells and a ``(people, max_len - 1)`` table of move values, -1 for a dummy move.

        Every row has the same number of entries (``max_len + 1`` reports per person), whatever its length.
        """
        require(int(max_len) >= 1, f"max_len must be >= 1, got {max_len!r}")
        side, max_len = self.grid.side, int(max_len)
        cut = [p[:max_len] for p in paths]
        moves = np.full((len(cut), max_len - 1), -1, dtype=np.int64)
        for i, p in enumerate(cut):
            if p.size > 1:
                moves[i, :p.size - 1] = p[:-1] * self.n_moves + move_index(p[:-1], p[1:], side)
        return {"start": np.array([p[0] for p in cut]), "end": np.array([p[-1] for p in cut]), "moves": moves}

    @staticmethod
    def reports_per_person(reports: dict[str, np.ndarray]) -> np.ndarray:
        """Number of cell/move reports each person sends: start + end + move slots (real or dummy)."""
        n = len(reports["start"])
        return np.ones(n, dtype=np.int64) * 2 + (reports["moves"] >= -1).sum(axis=1)

    def paths(self, sequences: Sequence[np.ndarray]) -> list[np.ndarray]:
        side = self.grid.side
        if self.stay_moves:     # keep dwelling: fill gaps but do not merge repeats
            out = []
            for s in sequences:
                p = [s[:1]]
                for k in range(1, s.size):
                    seg = grid_path(s[k - 1:k + 1], side)
                    p.append(seg[1:] if seg.size > 1 else s[k:k + 1])
                out.append(np.concatenate(p))
            return out
        return [grid_path(s, side) for s in sequences]

    def run(self, sequences: Sequence[np.ndarray], rng: np.random.Generator) -> Estimate:
        seqs = self._check(sequences)
        side, n_cells = self.grid.side, self.grid.n_cells
        paths = self.paths(seqs)
        n_people = len(paths)
        # ---- round 1: lengths (epsilon / 10), OUE over 1..n_cells ----------------------------
        length_domain = max(n_cells, 1)
        lengths = np.array([min(p.size, length_domain) for p in paths])
        eps_len = LENGTH_SHARE * self.epsilon
        length_est = oue_estimate_counts(
            oue_aggregate_support(np.bincount(lengths - 1, minlength=length_domain), eps_len, rng),
            length_domain, eps_len)
        length_pos = np.maximum(length_est, 0.0)
        if length_pos.sum() > 0:
            cdf = np.cumsum(length_pos) / length_pos.sum()
            max_len = int(np.searchsorted(cdf, LENGTH_QUANTILE) + 1)
        else:
            max_len = length_domain
        budget = self.budgets(max_len)
        eps_r = budget["per_report"]
        # ---- round 2: start, end (of the first max_len cells) and moves, eps_r each; padded -------
        sent = self.client_reports(paths, max_len)
        moves = sent["moves"]
        real_moves = moves[moves >= 0]
        n_dummy = int((moves < 0).sum())

        def oue_counts(values: np.ndarray, domain: int, dummies: int = 0) -> np.ndarray:
            return np.maximum(oue_counts_with_dummies(np.bincount(values, minlength=domain), dummies, eps_r,
                                                      rng), 0.0)

        start_est = oue_counts(sent["start"], n_cells)
        end_est = oue_counts(sent["end"], n_cells)
        move_est = oue_counts(real_moves, n_cells * self.n_moves, n_dummy).reshape(n_cells, self.n_moves)
        # ---- Markov chain with virtual end, then synthesis -------------------------------------
        table = neighbour_table(side, self.n_moves)
        move_est = np.where(table >= 0, move_est, 0.0)
        synthetic = self._synthesise(n_people, start_est, length_pos, move_est, end_est, table, rng)
        counts = np.bincount(synthetic, minlength=n_cells).astype(float).reshape(side, side)
        return Estimate(to_distribution(counts), raw=counts, info={
            "people": n_people, "max_len": max_len, "epsilon_length": eps_len, "epsilon_per_report": eps_r,
            "reports_per_person": budget["reports"], "epsilon_total": budget["total"],
            "messages_per_person": 1 + budget["reports"],      # the length report + the padded round 2
            "dummy_move_reports": n_dummy,
            "synthetic_points": int(synthetic.size), "moves": self.n_moves})

    def _synthesise(self, n: int, start_w: np.ndarray, length_w: np.ndarray, move_w: np.ndarray,
                    end_w: np.ndarray, table: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        n_cells = start_w.size
        start_p = start_w / start_w.sum() if start_w.sum() > 0 else np.full(n_cells, 1.0 / n_cells)
        length_p = length_w / length_w.sum() if length_w.sum() > 0 else np.full(length_w.size, 1.0 / length_w.size)
        row_total = move_w.sum(axis=1) + end_w
        safe = np.where(row_total > 0, row_total, 1.0)
        move_p = move_w / safe[:, None]
        end_p = end_w / safe
        current = rng.choice(n_cells, size=n, p=start_p)
        target = rng.choice(length_p.size, size=n, p=length_p) + 1
        visited = [current.copy()]
        alive = np.arange(n)
        for k in range(1, int(target.max())):
            alive = alive[target[alive] > k]
            if alive.size == 0:
                break
            cur = current[alive]
            weights = np.column_stack([move_p[cur], end_p[cur] * min(1.0, 0.3 + 0.2 * (k - 1))])
            total = weights.sum(axis=1)
            u = rng.random(alive.size) * total
            pick = (np.cumsum(weights, axis=1) < u[:, None]).sum(axis=1)
            stop = (total <= 0) | (pick >= self.n_moves)
            nxt = table[cur, np.minimum(pick, self.n_moves - 1)]
            stop |= nxt < 0
            alive = alive[~stop]
            current[alive] = nxt[~stop]
            visited.append(current[alive].copy())
        return np.concatenate(visited)


def run_on_trajectories(frame: Any, grid: Grid, name: str, epsilon: float, rng: np.random.Generator,
                        **params: Any) -> tuple[np.ndarray, Estimate, dict[str, int]]:
    """App. D's seven steps on a ``person, seq, lon, lat`` table: ``(D_T, estimate, dropped)``.

    ``dropped`` counts points outside the grid's region and people left without points
    (:func:`ldpviz.data.trajectory_generator.to_cells`); W2 between ``D_T`` and ``estimate.density`` is step (7).
    """
    from ldpviz.data.trajectory_generator import to_cells

    sequences, dropped = to_cells(frame, grid)
    require(len(sequences) > 0, "no trajectory has a point inside the region")
    mechanism = create(name, grid, epsilon, **params)
    return point_density(sequences, grid.side), mechanism.run(sequences, rng), dropped


MECHANISMS: dict[str, type[TrajectoryMechanism]] = {
    cls.name: cls for cls in (DAMEveryPoint, DAMOnePoint, LDPTrace)}


def create(name: str, grid: Grid, epsilon: float, **params: Any) -> TrajectoryMechanism:
    """The trajectory mechanism ``name`` (``dam-points``, ``dam-sample``, ``ldptrace``)."""
    require(name in MECHANISMS, f"unknown trajectory mechanism {name!r}; available: {', '.join(MECHANISMS)}")
    return MECHANISMS[name](grid, epsilon, **params)


__all__ = ["run_on_trajectories", "TrajectoryMechanism", "DAMEveryPoint", "DAMOnePoint", "LDPTrace", "MECHANISMS",
           "create", "point_density", "person_density", "grid_path", "neighbour_table", "move_index",
           "UNIT_TRAJECTORY", "UNIT_LOCATION"]


def trajectory_ledger(name: str, epsilon: float, points_per_person: Sequence[int], region: Any = None,
                      people_label: str = "person") -> accounting.Ledger:
    """What each person pays under trajectory mechanism ``name`` (the accountant's ledger; this page joins a
    person's trips into one trajectory): dam-points sends one DAM report per point (L x epsilon for a person with
    L points), dam-sample one report, LDPTrace one padded set of reports sharing epsilon (its length report and
    max_len + 1 cell/move reports, dummies included); plus the region's epsilon0 once where it was paid for."""
    cls = MECHANISMS[name]
    points = np.asarray(points_per_person, dtype=float)
    require(points.size > 0 and points.min() >= 1, "every person needs at least one point")
    reports = points if cls.privacy_unit == UNIT_LOCATION else np.ones_like(points)
    what = {"dam-points": "a DAM report of one point", "dam-sample": "a DAM report of one sampled point",
            "ldptrace": "LDPTrace's reports (length, start, end, moves and dummy moves, sharing epsilon)"}[name]
    basis = ("one per point" if cls.privacy_unit == UNIT_LOCATION else "once per person")
    parts = []
    tiles = accounting.region_charge(region, 1, 1, "each person reports the tile of one of their points, once")
    if tiles is not None:
        parts.append((tiles, np.ones_like(points)))
    parts.append((accounting.Charge(what, LDP, float(epsilon), 1, 1, basis), reports))
    return accounting.person_ledger(parts)
