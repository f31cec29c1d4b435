"""One attacker for every page and the report: a Bayesian attacker who sees one person's report.

Model (Shokri et al., "Quantifying location privacy", S&P'11, ref. [17] of
dam-disk-area-mechanism.md; the DAM paper's local privacy, Sec. VII-B eq. 15-16, is
its uniform-prior special case). The attacker knows the mechanism's channel
P(y | x) and a prior pi(x) over the d x d cells, sees one report y and forms the
posterior pi(x | y) ~ P(y | x) pi(x). Two priors, always named:

* **population prior** (the headline): the population density on the grid. What a
  census gives anyone. *Modelling choice*: the tool uses the data set's own density
  (the same users) as a stand-in for a census, which makes the attacker somewhat
  stronger than one with real census tables (coarser, older); this is stated
  wherever the number appears.
* **uniform prior**: an attacker who thinks people could be anywhere in the region
  (the DAM paper's LP assumption).

For each, with D(x, x') the expected distance between a person *at an exact position*
uniformly inside cell x and the centre of cell x' (:mod:`ldpviz.decide.cell_distances`; issue
27: never centre to centre, which scored a right cell as 0 m while "within r" measured real
positions, so the two readings contradicted each other on large cells):

* ``best_guess_error_m``: expected distance between a person's position and the
  attacker's *best guess* x_hat(y) = argmin_x' sum_x pi(x|y) D(x, x') (the guess that
  minimises the expected error: Shokri et al.'s optimal attack for the distance loss);
  even a right guess is off by 0.38 of a cell side on average;
* ``within_r``: probability that an attacker *aiming* to get within ``r_m`` metres
  (guessing the cell centre whose r-disc holds the most posterior mass) lands within
  ``r_m`` of the person's *position*: people sit uniformly inside their cell, and the
  chance is the area of the cell inside the r-disc (:mod:`ldpviz.decide.cell_distances`,
  exact) -- never the chance of naming the right cell, which with cells much larger
  than r says nothing about distance. ``r_m`` scales with the region: by default
  :data:`DEFAULT_R_SHARE` of its side (:func:`default_r_m`), or the user's choice;
* ``posterior_draw_error_m``: expected distance when the guess is drawn from the
  posterior -- with the uniform prior this is the DAM paper's LP (eq. 16) measured from
  positions instead of cell centres (never below the paper's figure, at most 0.38 of a
  cell side above it);
* ``no_report_*``: the same for the prior alone (what the attacker knows without the
  report), so the report's contribution is visible.

All expectations are exact sums over the channel (x ~ pi, y ~ P(.|x)) when the mechanism
has an explicit channel. The products sum_x J[y, x] D(x, x') are 2-D convolutions (D
depends on the offset only), done by FFT. Mechanisms without one (OUE, OLH, the grid
decompositions, OLH-H, PLDP) get the same attacker by Monte Carlo over reports with exact
per-report posteriors (:mod:`ldpviz.decide.attacker_monte_carlo`); ``Attack.method`` says which, and the
Monte Carlo figures carry their standard errors.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ldpviz.decide.cell_distances import rows_times_distance
from ldpviz.decide.attacker_monte_carlo import MC_MAX_CELLS, MC_SEED, monte_carlo_figures, supports_monte_carlo
from ldpviz.geo.domain import Grid
from ldpviz.errors import LdpvizInputError, require
from ldpviz.wording import length
from ldpviz.mechanisms.base import CENTRAL_DP, Mechanism

POPULATION = "population"
UNIFORM = "uniform"
PRIOR_LABELS = {
    POPULATION: ("an attacker who knows the population density (a census; here the data set's own density "
                 "stands in for it, a slightly stronger attacker than a real census)"),
    UNIFORM: "an attacker who assumes people could be anywhere in the region (uniform prior)",
}
#: Default r for "the attacker lands within r": this share of the region's side (scales with the region).
DEFAULT_R_SHARE = 0.01
EXACT = "exact"
_NA = "the attacker's error is not available: "
#: Channels larger than this many entries (outputs x cells) are not attacked (memory and time guard).
MAX_CHANNEL_ENTRIES = 40_000_000


@dataclass(frozen=True)
class Attack:
    """What one Bayesian attacker achieves from one report (distances in metres)."""

    prior: str
    prior_label: str
    r_m: float
    best_guess_error_m: float
    within_r: float
    posterior_draw_error_m: float
    no_report_error_m: float
    no_report_within_r: float
    #: "exact" (a sum over the channel) or "monte carlo (N reports, seed S)"
    method: str = EXACT
    #: standard errors of the three figures above (0 when exact)
    best_guess_error_se_m: float = 0.0
    within_r_se: float = 0.0
    posterior_draw_error_se_m: float = 0.0
    #: reports drawn (None when exact)
    n_reports: int | None = None
    #: where r comes from, e.g. "1% of the region's 25 km side" ("" when the user chose it)
    r_note: str = ""

    @property
    def r_text(self) -> str:
        """r with its unit and origin, e.g. '250 m (1% of the region's 25 km side)'."""
        return _length(self.r_m) + (f" ({self.r_note})" if self.r_note else "")

    def sentence(self) -> str:
        precision = ("" if self.method == EXACT else
                     f" [{self.method}: standard error {_length(self.best_guess_error_se_m)} and "
                     f"{self.within_r_se:.1%}]")
        return (f"For {self.prior_label}, the best guess of a person's location from their report is off by "
                f"{_length(self.best_guess_error_m)} on average and lands within {self.r_text} of them "
                f"{share_text(self.within_r)} of the time{precision} (without the report: "
                f"{_length(self.no_report_error_m)}, {share_text(self.no_report_within_r)}; both measured from "
                f"the person's exact position, anywhere in their cell).")

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "sentence": self.sentence()}


def _length(metres: float) -> str:
    """'25 km', '5,983 km', '250 m': the one distance formatter (:func:`ldpviz.wording.length`)."""
    return length(metres)


def share_text(p: float) -> str:
    """A probability as a percentage that does not round a small chance to 0%: '<0.1%', '0.4%', '37%'."""
    if 0 < p < 0.001:
        return "<0.1%"
    return f"{p:.1%}" if p < 0.1 else f"{p:.0%}"


def default_r_m(grid: Grid) -> float:
    """The default r of "lands within r": :data:`DEFAULT_R_SHARE` of the region's side, to 2 significant figures."""
    raw = DEFAULT_R_SHARE * grid.region.side_m
    return float(f"{raw:.2g}")


def r_note(grid: Grid, r_m: float) -> str:
    """Where ``r_m`` comes from, in words: the default's share of the region's side, or "" for a chosen r."""
    if r_m != default_r_m(grid):
        return ""
    return f"{DEFAULT_R_SHARE:.0%} of the region's {_length(grid.region.side_m)} side"


def resolve_r_m(grid: Grid, r_m: float | None) -> float:
    """``r_m``, or the region's default when None; refuses a negative or non-finite distance."""
    if r_m is None:
        return default_r_m(grid)
    require(isinstance(r_m, (int, float)) and not isinstance(r_m, bool) and math.isfinite(r_m) and r_m >= 0,
            f"r must be a distance >= 0 m, got {r_m!r}")
    return float(r_m)


def availability(mech: Mechanism) -> tuple[bool, str]:
    """(True, "") when the attacker can be computed for ``mech``, else (False, the reason in words)."""
    if mech.privacy_model == CENTRAL_DP:
        return False, "central DP releases no individual report (the aggregator sees raw locations)"
    if getattr(mech, "has_channel", False) or supports_monte_carlo(mech):
        return True, ""
    return False, (f"{mech.name} has neither an explicit channel (P(report | location)) nor per-report "
                   "likelihoods to compute the attacker from")


def method(mech: Mechanism) -> str:
    """How the attacker against ``mech`` is computed: "exact" (its channel) or "monte carlo"."""
    return EXACT if getattr(mech, "has_channel", False) else "monte carlo"


def _prior(kind: str | np.ndarray, grid: Grid, population: np.ndarray | None) -> tuple[str, np.ndarray]:
    n = grid.n_cells
    if isinstance(kind, str):
        require(kind in PRIOR_LABELS, f"prior must be one of {', '.join(PRIOR_LABELS)}, got {kind!r}")
        if kind == UNIFORM:
            return kind, np.full(n, 1.0 / n)
        require(population is not None, "the population-prior attacker needs the population density")
        values = np.asarray(population, dtype=float).ravel()
    else:
        kind, values = "custom", np.asarray(kind, dtype=float).ravel()
    require(values.size == n, f"the prior has {values.size} values but the grid has {n} cells")
    require(bool(np.all(np.isfinite(values)) and np.all(values >= 0) and values.sum() > 0),
            "the prior must be non-negative with a positive total")
    return kind, values / values.sum()


def attack(mech: Mechanism, prior: str | np.ndarray = POPULATION, *, population: np.ndarray | None = None,
           r_m: float | None = None, n_users: int | None = None, seed: int = MC_SEED) -> Attack:
    """The Bayesian attacker against ``mech`` whose belief is ``prior`` (see the module docstring).

    ``population`` is the population density on ``mech.grid`` (a ``(d, d)`` array): the
    population prior's belief, and where the people really are. Every figure is an
    expectation over people drawn from ``population`` when it is given (so a uniform-prior
    attacker is scored against the real population, with a mistaken belief), else from the
    prior itself (the uniform prior alone gives the DAM paper's LP, eq. 16).
    ``prior`` may also be an explicit array (named "custom").

    Without an explicit channel the figures are Monte Carlo means (:mod:`ldpviz.decide.attacker_monte_carlo`,
    reports drawn with ``seed``); ``n_users`` is the size of the collection whose public state
    (UG's N, an adaptive grid) the reports depend on, by default ``population``'s total when
    it holds counts (a sum of at least 2), else the Monte Carlo batch size.
    """
    return attack_many(mech, [prior], population=population, r_m=r_m, n_users=n_users, seed=seed)[0]


def attack_many(mech: Mechanism, priors: list[str | np.ndarray], *, population: np.ndarray | None = None,
                r_m: float | None = None, n_users: int | None = None, seed: int = MC_SEED) -> list[Attack]:
    """:func:`attack` for several beliefs scored on the same people, sharing the channel and its products.

    Without ``population`` the people follow the first prior.
    """
    ok, why = availability(mech)
    if not ok:
        raise LdpvizInputError(f"the attacker's error is not available: {why}")
    r_m = resolve_r_m(mech.grid, r_m)
    require(len(priors) >= 1, "attack_many needs at least one prior")
    grid = mech.grid
    side, n = grid.side, grid.n_cells
    beliefs = [_prior(p, grid, population) for p in priors]
    people = (beliefs[0][1] if population is None else
              _prior(np.asarray(population, dtype=float), grid, None)[1])
    if n_users is None and population is not None:
        total = float(np.asarray(population, dtype=float).sum())
        n_users = int(round(total)) if total >= 2 else None
    if not getattr(mech, "has_channel", False):
        return _monte_carlo(mech, beliefs, people, float(r_m), n_users, seed)
    try:
        P = np.asarray(mech.channel(), dtype=float)
    except (NotImplementedError, LdpvizInputError) as err:
        if supports_monte_carlo(mech):                   # e.g. GRR / HR beyond 64 x 64: no dense channel
            return _monte_carlo(mech, beliefs, people, float(r_m), n_users, seed)
        raise LdpvizInputError(f"the attacker's error is not available: {str(err).removeprefix(_NA)}") from None
    if P.size > MAX_CHANNEL_ENTRIES and supports_monte_carlo(mech):
        return _monte_carlo(mech, beliefs, people, float(r_m), n_users, seed)
    require(P.shape[1] == n and P.size <= MAX_CHANNEL_ENTRIES,
            f"the channel of {mech.name} on this grid has {P.shape[0]:,} x {P.shape[1]:,} entries; the attacker is "
            f"computed up to {MAX_CHANNEL_ENTRIES:,} (choose a smaller grid)")
    J_true = P * people[None, :]                          # P(y, x) for the real people
    keep = J_true.sum(axis=1) > 0
    J_true, P = J_true[keep], P[keep]
    E_true = rows_times_distance(J_true, side)          # E[y, x'] = sum_x J[y, x] D(x, x')  (cells)
    r_cells = r_m / grid.cell_m
    e_people = rows_times_distance(people[None, :], side)[0]
    W_true = rows_times_distance(J_true, side, r_cells)  # mass within r of each candidate cell
    w_people = rows_times_distance(people[None, :], side, r_cells)[0]
    out = []
    for kind, belief in beliefs:
        same = np.array_equal(belief, people)
        if same:
            J_belief, E_belief = J_true, E_true
        elif kind == UNIFORM:                             # a constant factor does not move the argmin
            J_belief = P / n
            E_belief = rows_times_distance(P, side)
        else:
            J_belief = P * belief[None, :]
            E_belief = rows_times_distance(J_belief, side)
        guess = np.argmin(E_belief, axis=1)
        best_err = float(E_true[np.arange(len(E_true)), guess].sum())
        mass_b = J_belief.sum(axis=1)
        safe = np.where(mass_b > 0, mass_b, 1.0)
        draw_err = float(np.where(mass_b > 0, (E_true * J_belief).sum(axis=1) / safe, 0.0).sum())
        # aiming to land within r: the cell whose r-disc holds the most posterior mass
        W_belief = W_true if same else rows_times_distance(J_belief, side, r_cells)
        aim = np.argmax(W_belief, axis=1)
        within = float(W_true[np.arange(len(W_true)), aim].sum())
        # the belief alone: one guess for everybody, scored on the people
        g0 = int(np.argmin(rows_times_distance(belief[None, :], side)[0]))
        a0 = int(np.argmax(rows_times_distance(belief[None, :], side, r_cells)[0]))
        out.append(Attack(prior=kind, prior_label=PRIOR_LABELS.get(kind, "an attacker with a given prior"),
                          r_m=float(r_m), r_note=r_note(grid, r_m), best_guess_error_m=best_err * grid.cell_m,
                          within_r=within,
                          posterior_draw_error_m=draw_err * grid.cell_m,
                          no_report_error_m=float(e_people[g0]) * grid.cell_m,
                          no_report_within_r=float(w_people[a0])))
    return out


def _no_report(belief: np.ndarray, people: np.ndarray, grid: Grid, r_cells: float) -> tuple[float, float]:
    """The belief alone: one guess for everybody, scored on the people (metres, probability)."""
    side = grid.side
    g0 = int(np.argmin(rows_times_distance(belief[None, :], side)[0]))
    a0 = int(np.argmax(rows_times_distance(belief[None, :], side, r_cells)[0]))
    e_people = rows_times_distance(people[None, :], side)[0]
    w_people = rows_times_distance(people[None, :], side, r_cells)[0]
    return float(e_people[g0]) * grid.cell_m, float(w_people[a0])


def _monte_carlo(mech: Mechanism, beliefs: list[tuple[str, np.ndarray]], people: np.ndarray, r_m: float,
                 n_users: int | None, seed: int) -> list[Attack]:
    grid = mech.grid
    require(grid.n_cells <= MC_MAX_CELLS,
            f"the attacker's error is not available: by Monte Carlo it is computed up to {MC_MAX_CELLS:,} cells "
            f"(d = {math.isqrt(MC_MAX_CELLS)}); this grid has {grid.n_cells:,} (choose a smaller grid)")
    r_cells = r_m / grid.cell_m
    used, figures = monte_carlo_figures(mech, [b for _, b in beliefs], people, r_cells, n_users=n_users, seed=seed)
    label = f"monte carlo ({used:,} reports, seed {seed})"
    out = []
    for (kind, belief), f in zip(beliefs, figures):
        no_err, no_within = _no_report(belief, people, grid, r_cells)
        out.append(Attack(prior=kind, prior_label=PRIOR_LABELS.get(kind, "an attacker with a given prior"),
                          r_m=r_m, r_note=r_note(grid, r_m), best_guess_error_m=f["best"] * grid.cell_m,
                          within_r=f["within"],
                          posterior_draw_error_m=f["draw"] * grid.cell_m, no_report_error_m=no_err,
                          no_report_within_r=no_within, method=label,
                          best_guess_error_se_m=f["best_se"] * grid.cell_m, within_r_se=f["within_se"],
                          posterior_draw_error_se_m=f["draw_se"] * grid.cell_m, n_reports=used))
    return out


def attackers(mech: Mechanism, population: np.ndarray, *, r_m: float | None = None,
              n_users: int | None = None) -> dict[str, Any]:
    """Both named attackers, or why not: ``{"available", "reason", "population", "uniform", "sentence"}``.

    The one entry point for pages and the report: the headline is the population-prior
    attacker; the uniform-prior attacker sits beside it. Both are scored on the same
    people (``population``), so the population-prior attacker is never worse on average. Never raises for a mechanism
    that has no channel (``available`` is then False and ``reason`` says why).
    """
    ok, why = availability(mech)
    if ok:
        try:
            pop, uni = attack_many(mech, [POPULATION, UNIFORM], population=population, r_m=r_m, n_users=n_users)
        except LdpvizInputError as err:
            ok, why = False, str(err).removeprefix("the attacker's error is not available: ")
    if not ok:
        return {"available": False, "reason": why, "population": None, "uniform": None,
                "sentence": f"The attacker's error is not computed: {why}."}
    sentence = (pop.sentence() + f" For comparison, {uni.prior_label} is off by "
                f"{_length(uni.best_guess_error_m)}.")
    return {"available": True, "reason": "", "population": pop, "uniform": uni, "sentence": sentence}
