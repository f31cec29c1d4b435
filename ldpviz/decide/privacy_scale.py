"""Every guarantee on one scale: what epsilon promises, in the same terms for every privacy model.

The tool offers three privacy models whose epsilons do not mean the same thing:

* **LDP** (epsilon-local differential privacy, e.g. GRR, DAM): for any two locations
  x, x' and any report y, P(y | x) <= e^epsilon P(y | x') -- the largest probability
  ratio between *any* two locations is e^epsilon (Warner/Duchi; dam-disk-area-mechanism.md
  Definition 1).
* **Geo-I** (epsilon-geo-indistinguishability, Andres et al. CCS'13): P(y | x) <=
  e^(epsilon * dist(x, x')) P(y | x'); epsilon here is per km
  (:data:`ldpviz.mechanisms.base.GEO_I_UNIT_M`), so two places r metres apart differ by
  at most e^(epsilon r / 1 km), and two places at opposite corners of the region by
  e^(epsilon * region diagonal). That last number is the Geo-I mechanism's LDP epsilon
  over this region: it is what makes Geo-I and LDP comparable, and it grows with the region.
  A mechanism that snaps positions to cell centres (SEM-Geo-I) states a slack s in metres,
  e^(epsilon (dist + s)) (:meth:`ldpviz.mechanisms.base.Mechanism.geo_slack_m`).

Every ratio is computed as its log and written by :func:`ratio_text` ("more than 10^300" where
e^x would overflow: epsilon x distance reaches thousands on a continent-sized region), and
:func:`weak_privacy_warning` is the one source of the "practically no privacy" warning.
* **central DP** (Laplace, DP heatmaps): a trusted aggregator sees every raw location;
  only the *published map* satisfies epsilon-DP (adding or removing one person changes
  the probability of any output by at most e^epsilon). No phone randomises anything.

The unit protected is always one person's one reported location in one collection
(each user contributes one location here); repeated collections add up
(:mod:`ldpviz.decide.budget`).
"""

from __future__ import annotations

import math
from typing import Any

from ldpviz.geo.domain import Grid
from ldpviz.errors import require
from ldpviz.mechanisms.accounting import (LOG_RATIO_TEXT_LIMIT, NO_PRIVACY_LOG_RATIO, WEAK_LOG_RATIO,  # noqa: F401
                                          collection_ledger, ratio_text)
from ldpviz.mechanisms.base import (CENTRAL_DP, GEO_I, GEO_I_UNIT, GEO_I_UNIT_M, LDP, NO_PRIVACY, Mechanism,
                                    validate_epsilon)
from ldpviz.wording import length

#: The unit every guarantee in this tool protects.
PROTECTED_UNIT = ("one report (one location) in one collection; whoever sends several reports pays for each (the "
                  "ledger counts them per row, or per person where persons are known)")
#: Default distance for the Geo-I "two places r metres apart" figure.
DEFAULT_R_M = 1000.0


#: Largest exponent whose e^x is a finite float (e^709.78 is the largest double).
LOG_FLOAT_MAX = math.log(1.7976931348623157e308)
#: Above this per-person total (LDP, central DP) or log-ratio between neighbouring cells (Geo-I) a setting gives
#: practically no privacy; from ``WEAK_LOG_RATIO`` (5) it is weak: both live with the accountant
#: (:mod:`ldpviz.mechanisms.accounting`, whose docstring says why these numbers).
WEAK_PRIVACY_LOG_RATIO = NO_PRIVACY_LOG_RATIO


def ratio_from_log(log_ratio: float) -> float:
    """e^log_ratio as a float, ``inf`` where it would overflow (read it with :func:`ratio_text`)."""
    return math.exp(log_ratio) if log_ratio <= LOG_FLOAT_MAX else math.inf


def _length(metres: float) -> str:
    return length(metres)


def _up_to(log_ratio: float) -> str:
    """'at most 4.48' or, when the number is itself a lower bound, 'more than 10^300'."""
    text = ratio_text(log_ratio)
    return text if text.startswith("more than") else f"at most {text.removeprefix('about ')}"


def region_diagonal_m(grid: Grid) -> float:
    """Largest distance between two cell centres of the grid (metres): the farthest two reported places."""
    return math.sqrt(2.0) * (grid.side - 1) * grid.cell_m if grid.side > 1 else 0.0


def common_terms(mechanism: Mechanism | str, grid: Grid | None = None, epsilon: float | None = None, *,
                 r_m: float = DEFAULT_R_M, **params: Any) -> dict[str, Any]:
    """The guarantee of ``mechanism`` in common terms (a dict for pages, the CLI and the report).

    ``mechanism`` is a constructed :class:`Mechanism` or a registry name (then ``grid``
    and ``epsilon`` are needed; ``params`` go to the mechanism). Keys:

    * ``model``, ``guarantee`` (the mechanism's own sentence), ``protects`` (the unit);
    * ``epsilon`` as given and ``epsilon_unit`` ("" for LDP/central DP, "per km" for Geo-I);
    * ``max_ratio``: the largest probability ratio between any two locations of the
      region for one report (LDP: e^eps; Geo-I: e^(eps * region diagonal); central DP
      and no privacy: inf, since the aggregator sees raw locations);
    * ``ldp_equivalent_epsilon``: log of ``max_ratio`` -- the one scale (inf for central DP);
    * Geo-I only: ``r_m`` and ``ratio_at_r`` (two places r metres apart), ``ratio_neighbour_cells``;
    * ``trusted_aggregator``: True when raw locations reach the server (central DP, none);
    * ``sentence``: all of it in plain words.
    """
    from ldpviz import mechanisms
    if isinstance(mechanism, str):
        require(grid is not None and epsilon is not None, "common_terms needs a grid and epsilon with a mechanism name")
        mech = mechanisms.create(mechanism, grid, epsilon, **params)
    else:
        mech = mechanism
    require(isinstance(r_m, (int, float)) and math.isfinite(r_m) and r_m > 0,
            f"r_m must be a distance > 0 m, got {r_m!r}")
    grid = mech.grid
    eps = validate_epsilon(mech.epsilon)
    model = mech.privacy_model
    out: dict[str, Any] = {"mechanism": mech.name, "model": model, "guarantee": mech.guarantee(),
                           "protects": PROTECTED_UNIT, "epsilon": eps, "epsilon_unit": "",
                           "trusted_aggregator": model in (CENTRAL_DP, NO_PRIVACY)}
    if model == LDP:
        ratio = math.exp(eps)
        out.update(max_ratio=ratio, max_ratio_text=ratio_text(eps), ldp_equivalent_epsilon=eps)
        out["sentence"] = (
            f"Local differential privacy, epsilon = {eps:g}: each phone randomises its own location before "
            f"sending it, so one report makes no location more than {ratio_text(eps)} times "
            f"likelier (e^{eps:g}) than any other, wherever the two are. Protects {PROTECTED_UNIT}.")
    elif model == GEO_I:
        per_km = mech.epsilon_per_cell * GEO_I_UNIT_M / grid.cell_m
        slack = float(mech.geo_slack_m())
        span = geo_span_m(mech)
        across = mech.geo_log_ratio_bound(span) if slack == 0 else min(mech.geo_log_ratio_bound(span),
                                                                        mech.epsilon_per_cell / grid.cell_m * span)
        log_at_r = mech.geo_log_ratio_bound(r_m)
        log_neighbour = mech.geo_log_ratio_bound(grid.cell_m)
        out.update(epsilon=per_km, epsilon_unit=f"per {GEO_I_UNIT}", epsilon_as_given=eps, r_m=float(r_m),
                   slack_m=slack, log_ratio_at_r=log_at_r, ratio_at_r=ratio_from_log(log_at_r),
                   ratio_at_r_text=ratio_text(log_at_r), log_ratio_neighbour_cells=log_neighbour,
                   ratio_neighbour_cells=ratio_from_log(log_neighbour),
                   ratio_neighbour_cells_text=ratio_text(log_neighbour), region_diagonal_m=span,
                   max_ratio=ratio_from_log(across), max_ratio_text=ratio_text(across),
                   ldp_equivalent_epsilon=across)
        slack_text = (f" plus a snapping slack of {_length(slack)} (the cell diagonal: positions are snapped to "
                      f"cell centres), so even two neighbours a metre apart may differ by e^({per_km:.3g} x "
                      f"{slack / GEO_I_UNIT_M:.3g}), {ratio_text(mech.geo_log_ratio_bound(0.0))} times"
                      if slack > 0 else "")
        out["sentence"] = (
            f"Geo-indistinguishability, epsilon = {per_km:.3g} per {GEO_I_UNIT}: each phone randomises its own "
            f"location, and the protection fades with distance{slack_text}. One report makes a place "
            f"{_up_to(log_at_r)} times likelier than another {_length(r_m)} away, "
            f"{_up_to(log_neighbour)} times likelier than one a cell side ({_length(grid.cell_m)}) away, and "
            f"{_up_to(across)} times likelier than one across the region ({_length(span)}; "
            f"that is like LDP with epsilon = {across:,.3g} on this region). Protects {PROTECTED_UNIT}.")
    elif model == CENTRAL_DP:
        out.update(max_ratio=math.inf, max_ratio_text="unbounded (the aggregator sees raw locations)",
                   ldp_equivalent_epsilon=math.inf, published_map_ratio=math.exp(eps))
        out["sentence"] = (
            f"Central differential privacy, epsilon = {eps:g}: phones send their exact locations to a trusted "
            f"aggregator, who sees them all; only the published map is protected (adding or removing one person "
            f"changes the probability of any map by at most {ratio_text(eps)} times, e^{eps:g}). "
            f"Not comparable with local models: it needs trust in the aggregator.")
    else:
        out.update(max_ratio=math.inf, max_ratio_text="unbounded (no privacy)", ldp_equivalent_epsilon=math.inf)
        out["sentence"] = "No privacy: reports are the true cells (a reference for accuracy only)."
    out["warning"] = weak_privacy_warning(mech)
    return out


def geo_span_m(mech: Mechanism) -> float:
    """The largest distance a Geo-I bound is taken over on this region: between two real positions (the region's
    diagonal, sqrt(2) L) for a mechanism without slack; between two cell centres (sqrt(2) (d - 1) g) for one that
    snaps positions to cell centres (their distance never exceeds that)."""
    grid = mech.grid
    return region_diagonal_m(grid) if mech.geo_slack_m() > 0 else math.sqrt(2.0) * grid.region.side_m


def neighbour_log_ratio(mech: Mechanism) -> float:
    """The stated privacy loss between two neighbouring cells, as a log-ratio (one number to compare settings):
    LDP and central DP epsilon; Geo-I epsilon per km x cell side in km (plus any snapping slack); no privacy inf."""
    if mech.privacy_model in (LDP, CENTRAL_DP):
        return float(mech.epsilon)
    if mech.privacy_model == GEO_I:
        return float(mech.geo_log_ratio_bound(mech.grid.cell_m))
    return math.inf


def weak_privacy_warning(mech: Mechanism, ledger: Any = None) -> str | None:
    """The weak- or no-privacy warning of a setting, else None: the one source of it for pages, the command line
    and the decision report. It is judged on the per-person total of ``ledger`` (a
    :class:`ldpviz.mechanisms.accounting.Ledger`: the region's epsilon0, reports per person, repetitions); without
    one, on the ledger of one report per person (:func:`ldpviz.mechanisms.accounting.collection_ledger`)."""
    if mech.privacy_model == NO_PRIVACY:
        return None
    return (ledger if ledger is not None else collection_ledger(mech)).warning()


def like_for_like(models: list[str] | set[str]) -> str | None:
    """None when every model is the same; otherwise why a ranking across them is not like for like."""
    kinds = sorted(set(models))
    if len(kinds) <= 1:
        return None
    reasons = []
    if CENTRAL_DP in kinds:
        reasons.append("central DP trusts the aggregator with every raw location, so its epsilon protects only "
                       "the published map")
    if GEO_I in kinds:
        reasons.append(f"Geo-I's epsilon is per {GEO_I_UNIT} of distance: far-apart places are barely protected "
                       "(compare its LDP-equivalent epsilon over the region)")
    if NO_PRIVACY in kinds:
        reasons.append("the exact counts offer no privacy at all")
    return ("Not like for like: this compares " + ", ".join(kinds) + " mechanisms; " + "; ".join(reasons) +
            ". Rank within one privacy model, or on the LDP-equivalent epsilon.")
