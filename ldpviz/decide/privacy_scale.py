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
from ldpviz.mechanisms.base import (CENTRAL_DP, GEO_I, GEO_I_UNIT, GEO_I_UNIT_M, LDP, NO_PRIVACY, Mechanism,
                                    validate_epsilon)

#: The unit every guarantee in this tool protects.
PROTECTED_UNIT = "one person's location in one collection (one report per person)"
#: Default distance for the Geo-I "two places r metres apart" figure.
DEFAULT_R_M = 1000.0


def _ratio_text(ratio: float) -> str:
    if not math.isfinite(ratio) or ratio > 1e12:
        return "more than a trillion"
    if ratio >= 100:
        return f"{ratio:,.0f}"
    return f"{ratio:.3g}"


def _length(metres: float) -> str:
    return f"{metres / 1000:.3g} km" if metres >= 1000 else f"{metres:.3g} m"


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
    require(isinstance(r_m, (int, float)) and math.isfinite(r_m) and r_m > 0, f"r_m must be a distance > 0 m, got {r_m!r}")
    grid = mech.grid
    eps = validate_epsilon(mech.epsilon)
    model = mech.privacy_model
    out: dict[str, Any] = {"mechanism": mech.name, "model": model, "guarantee": mech.guarantee(),
                           "protects": PROTECTED_UNIT, "epsilon": eps, "epsilon_unit": "",
                           "trusted_aggregator": model in (CENTRAL_DP, NO_PRIVACY)}
    if model == LDP:
        ratio = math.exp(eps)
        out.update(max_ratio=ratio, ldp_equivalent_epsilon=eps)
        out["sentence"] = (
            f"Local differential privacy, epsilon = {eps:g}: each phone randomises its own location before "
            f"sending it, so one report makes no location more than e^{eps:g} = {_ratio_text(ratio)} times "
            f"likelier than any other, wherever the two are. Protects {PROTECTED_UNIT}.")
    elif model == GEO_I:
        per_km = mech.epsilon_per_cell * GEO_I_UNIT_M / grid.cell_m
        diag = region_diagonal_m(grid)
        across = per_km * diag / GEO_I_UNIT_M
        at_r = math.exp(per_km * r_m / GEO_I_UNIT_M)
        out.update(epsilon=per_km, epsilon_unit=f"per {GEO_I_UNIT}", epsilon_as_given=eps, r_m=float(r_m),
                   ratio_at_r=at_r, ratio_neighbour_cells=math.exp(mech.epsilon_per_cell),
                   region_diagonal_m=diag, max_ratio=math.exp(across), ldp_equivalent_epsilon=across)
        out["sentence"] = (
            f"Geo-indistinguishability, epsilon = {per_km:.3g} per {GEO_I_UNIT}: each phone randomises its own "
            f"location, and the protection fades with distance. One report makes a place at most "
            f"{_ratio_text(at_r)} times likelier than another {_length(r_m)} away, and at most "
            f"{_ratio_text(math.exp(across))} times likelier than one across the region ({_length(diag)}; "
            f"that is like LDP with epsilon = {across:.3g} on this region). Protects {PROTECTED_UNIT}.")
    elif model == CENTRAL_DP:
        out.update(max_ratio=math.inf, ldp_equivalent_epsilon=math.inf,
                   published_map_ratio=math.exp(eps))
        out["sentence"] = (
            f"Central differential privacy, epsilon = {eps:g}: phones send their exact locations to a trusted "
            f"aggregator, who sees them all; only the published map is protected (adding or removing one person "
            f"changes the probability of any map by at most e^{eps:g} = {_ratio_text(math.exp(eps))} times). "
            f"Not comparable with local models: it needs trust in the aggregator.")
    else:
        out.update(max_ratio=math.inf, ldp_equivalent_epsilon=math.inf)
        out["sentence"] = "No privacy: reports are the true cells (a reference for accuracy only)."
    return out


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

