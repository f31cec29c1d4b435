"""The Mechanism interface shared by every family.

Modelled on the papers' frequency oracle FO = <T, E> (grid paper Sec. 2.3) and
on pure-ldp's client/server split:

* :meth:`Mechanism.perturb` is the *client* half: what one phone runs on its own
  location, vectorised over all users (one report per user);
* :meth:`Mechanism.estimate` is the *server* half: reports in, an
  :class:`Estimate` of the spatial distribution out;
* :meth:`Mechanism.collect` is what the server receives from all users: the
  client half's reports or, for mechanisms with an exact aggregate path, the
  reports' sufficient statistic drawn directly when that is cheaper;
  :meth:`Mechanism.statistic` reduces reports to that additive statistic;
* :meth:`Mechanism.run` chains collect and estimate. Multi-round mechanisms
  (PrivAG, AAG) and central-DP aggregators, which have no single client
  report, override it.

Parameters are declared once per class as :class:`Param` objects and validated
once, at construction, with messages a privacy officer understands (in the
spirit of scikit-learn's parameter validation). A mechanism whose transition
probabilities are explicit also implements :meth:`Mechanism.channel`, which the
privacy tests and the audit page check against e^epsilon.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, ClassVar, Sequence

import numpy as np

from ldpviz.geo.domain import Binned, Grid
from ldpviz.errors import LdpvizInputError, require
from ldpviz.geo.partition import Partition
from ldpviz.wording import length

#: Privacy models a mechanism may declare.
LDP = "LDP"
CENTRAL_DP = "central DP"
GEO_I = "Geo-I"
NO_PRIVACY = "none"
PRIVACY_MODELS = (LDP, CENTRAL_DP, GEO_I, NO_PRIVACY)

#: Privacy units: what one epsilon protects (issue 15.17). Mechanisms here see one location per
#: report, so the default is a row: a person who contributes m rows is protected only at m x epsilon
#: (sequential composition), i.e. event-level privacy.
UNIT_ROW = "one row (one location)"
UNIT_TRAJECTORY = "one trajectory"
UNIT_PERSON = "one person"

EPSILON_MIN = 1e-3
EPSILON_MAX = 50.0
#: Geo-I epsilon is per this many metres (per km), whatever the grid: the guarantee
#: e^(epsilon * distance) then means the same on every grid side d and region.
GEO_I_UNIT_M = 1000.0
GEO_I_UNIT = "km"


def validate_epsilon(epsilon: Any) -> float:
    """Epsilon must be a finite number in (0, 50]; return it as a float."""
    try:
        value = float(epsilon)
    except (TypeError, ValueError):
        raise LdpvizInputError(f"epsilon must be a number > 0, got {epsilon!r}") from None
    require(math.isfinite(value), f"epsilon must be a finite number > 0, got {epsilon!r}")
    require(value > 0, f"epsilon must be > 0, got {value:g}")
    require(value >= EPSILON_MIN, f"epsilon must be at least {EPSILON_MIN:g}, got {value:g}")
    require(value <= EPSILON_MAX, f"epsilon must be at most {EPSILON_MAX:g} (beyond that there is no "
                                  f"meaningful privacy), got {value:g}")
    return value


@dataclass(frozen=True)
class Param:
    """A declared mechanism parameter: name, type, default, bounds and a help text.

    ``default=None`` means "computed by the mechanism" (e.g. DAM's optimal radius);
    the help text should say how.
    """

    name: str
    kind: type
    default: Any
    help: str
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[Any, ...] | None = None

    def validate(self, value: Any) -> Any:
        if value is None:
            require(self.default is None, f"parameter '{self.name}' needs a value")
            return None
        if self.kind is bool:
            if isinstance(value, str):
                low = value.strip().lower()
                require(low in ("true", "false", "1", "0", "yes", "no"),
                        f"parameter '{self.name}' must be true or false, got {value!r}")
                return low in ("true", "1", "yes")
            require(isinstance(value, (bool, np.bool_)) or value in (0, 1),
                    f"parameter '{self.name}' must be true or false, got {value!r}")
            return bool(value)
        if self.kind in (int, float):
            try:
                number = float(value)
            except (TypeError, ValueError):
                raise LdpvizInputError(f"parameter '{self.name}' must be a number, got {value!r}") from None
            require(math.isfinite(number), f"parameter '{self.name}' must be finite, got {value!r}")
            if self.kind is int:
                require(number == int(number), f"parameter '{self.name}' must be a whole number, got {value!r}")
                number = int(number)
            if self.minimum is not None:
                require(number >= self.minimum, f"parameter '{self.name}' must be >= {self.minimum:g}, got {number:g}")
            if self.maximum is not None:
                require(number <= self.maximum, f"parameter '{self.name}' must be <= {self.maximum:g}, got {number:g}")
            value = number
        else:
            value = self.kind(value)
        if self.choices is not None:
            require(value in self.choices,
                    f"parameter '{self.name}' must be one of {', '.join(map(str, self.choices))}; got {value!r}")
        return value


@dataclass
class Estimate:
    """What the server learns: a distribution over the grid (and its native partition).

    ``density`` is a valid distribution on the mechanism's ``(d, d)`` grid
    (non-negative, sums to 1). ``partition`` is the mechanism's own partition
    (the adaptive grids' rectangles) with the same total mass; range queries
    (AQE) are answered on it. ``raw`` keeps an unprojected estimate (e.g. the
    unbiased counts of a frequency oracle, which can be negative) when there is
    one. ``info`` summarises what happened (reports, iterations, domain size...).
    """

    density: np.ndarray
    partition: Partition | None = None
    raw: np.ndarray | None = None
    info: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        density = np.asarray(self.density, dtype=float)
        if density.ndim != 2 or density.shape[0] != density.shape[1]:
            raise ValueError(f"Estimate.density must be square (d, d), got shape {density.shape}")
        self.density = density
        if self.partition is None:
            self.partition = Partition.uniform(density)


@dataclass
class TrialRun:
    """Several trials of one mechanism on the same users (:meth:`Mechanism.run_trials`)."""

    estimates: list[Estimate]
    first_reports: Any          #: what the server received in trial 0 (None without a client half)
    perturb_s: float            #: seconds drawing reports, all trials together
    estimate_s: float           #: seconds estimating, all trials together
    batched: bool = False       #: True when the estimator ran on all trials' statistics in one pass


class Mechanism:
    """Base class: subclasses set the class attributes and implement the halves.

    Construct through :func:`ldpviz.mechanisms.create` or directly:
    ``DAM(grid, epsilon=1.0, radius=None)``.
    """

    name: ClassVar[str]
    label: ClassVar[str]             #: human name, e.g. "DAM (Disk Area Mechanism)"
    family: ClassVar[str]            #: e.g. "Spatial LDP (DAM paper)"
    privacy_model: ClassVar[str]     #: one of PRIVACY_MODELS
    reference: ClassVar[str]         #: paper file and section/equation
    summary: ClassVar[str] = ""      #: one plain sentence for non-experts
    params: ClassVar[tuple[Param, ...]] = ()
    has_channel: ClassVar[bool] = False
    has_client: ClassVar[bool] = True  #: False for central-DP and multi-round mechanisms
    privacy_unit: ClassVar[str] = UNIT_ROW  #: what one epsilon protects (UNIT_ROW, UNIT_TRAJECTORY, UNIT_PERSON)

    def __init__(self, grid: Grid, epsilon: float, **params: Any) -> None:
        require(isinstance(grid, Grid), "a mechanism needs a Grid")
        self.grid = grid
        self.epsilon = validate_epsilon(epsilon)
        known = {p.name: p for p in self.params}
        unknown = sorted(set(params) - set(known))
        require(not unknown, f"mechanism '{self.name}' has no parameter {', '.join(map(repr, unknown))}; "
                             f"it takes: {', '.join(known) or 'no parameters'}")
        self.param_values: dict[str, Any] = {
            p.name: p.validate(params.get(p.name, p.default)) for p in self.params}
        self.setup()

    # ---- hooks for subclasses ------------------------------------------
    def setup(self) -> None:
        """Precompute whatever depends only on (grid, epsilon, params); validate combinations."""

    def perturb(self, users: Binned, rng: np.random.Generator) -> Any:
        """Client side: one randomised report per user."""
        raise NotImplementedError(f"{self.name} has no separate client half; use run()")

    def estimate(self, reports: Any) -> Estimate:
        """Server side: reports -> estimated distribution."""
        raise NotImplementedError(f"{self.name} has no separate server half; use run()")

    def collect(self, users: Binned, rng: np.random.Generator) -> Any:
        """What the server receives from ``users``: their reports, or (mechanisms with an aggregate path,
        e.g. the frequency oracles) the reports' exact sufficient statistic when that path is cheaper.
        :meth:`estimate` accepts either."""
        return self.perturb(users, rng)

    def statistic(self, reports: Any) -> Any:
        """The server's sufficient statistic of ``reports``, additive over disjoint groups of users (what a
        cluster run reduces; see :mod:`ldpviz.distributed`). Mechanisms that support it override this."""
        raise NotImplementedError(f"{self.name} does not reduce its reports to an additive statistic")

    def run(self, users: Binned, rng: np.random.Generator) -> Estimate:
        """The whole protocol on a population of users."""
        return self.estimate(self.collect(users, rng))

    def run_trials(self, users: Binned, rngs: Sequence[np.random.Generator]) -> TrialRun:
        """The whole protocol once per generator in ``rngs``: trial t draws from ``rngs[t]`` exactly what
        :meth:`collect` (or :meth:`run`) draws with it, so trial t equals a one-trial run with that generator.

        This default runs the trials one after another (a trial's reports are dropped once estimated, so
        memory stays one trial's). Mechanisms whose server estimate can take all trials' statistics in one
        pass override it (the DAM family and planar Laplace: EM on a ``(T, d, d)`` stack)."""
        estimates, first, perturb_s, estimate_s = [], None, 0.0, 0.0
        for trial, rng in enumerate(rngs):
            a = time.perf_counter()
            if self.has_client:
                reports = self.collect(users, rng)
                b = time.perf_counter()
                estimates.append(self.estimate(reports))
                if trial == 0:
                    first = reports
            else:
                b = a
                estimates.append(self.run(users, rng))
            perturb_s += b - a
            estimate_s += time.perf_counter() - b
        return TrialRun(estimates, first, perturb_s, estimate_s)

    def stacked_trials(self, users: Binned, rngs: Sequence[np.random.Generator], estimate_all: Any,
                       draw: Any = None) -> TrialRun:
        """:meth:`run_trials` for a mechanism whose server estimates every trial in one pass: each trial's reports
        drawn with its own generator (``draw``, :meth:`collect` by default) and reduced to its statistic, then
        ``estimate_all(statistics)`` on all of them at once (a stacked EM), so trial t equals a one-trial run."""
        draw = draw or self.collect
        a = time.perf_counter()
        first, stats = None, []
        for trial, rng in enumerate(rngs):
            reports = draw(users, rng)
            first = reports if trial == 0 else first
            stats.append(self.statistic(reports))
        b = time.perf_counter()
        estimates = estimate_all(stats)
        return TrialRun(estimates, first, b - a, time.perf_counter() - b, batched=True)

    def channel(self) -> np.ndarray:
        """Dense transition matrix ``P[y, x]`` = P(report y | true cell x); columns sum to 1."""
        raise NotImplementedError(f"{self.name} has no explicit channel")

    def effective_params(self) -> dict[str, Any]:
        """Every parameter's value as used, computed defaults filled in (e.g. DAM's optimal radius).

        Subclasses whose parameters default to a computed value (``default=None``)
        override :meth:`resolved_defaults`; pages show these numbers to the user.
        """
        values = dict(self.param_values)
        for key, value in self.resolved_defaults().items():
            if values.get(key) is None:
                values[key] = value
        return values

    def resolved_defaults(self) -> dict[str, Any]:
        """Values chosen for parameters left at a computed default (``default=None``)."""
        return {}

    def claimed_epsilon(self) -> float:
        """The epsilon the stated guarantee promises, in its unit (Geo-I: per cell side).

        What an audit checks the mechanism against. Usually the ``epsilon`` it was built
        with; a mechanism calibrated to a different epsilon (SEM-Geo-I's eps') overrides it,
        and :meth:`guarantee` must state the same number. Geo-I: epsilon is per km, so the
        claim per cell side is :attr:`epsilon_per_cell`.
        """
        return self.epsilon_per_cell if self.privacy_model == GEO_I else self.epsilon

    def guarantee(self) -> str:
        """The privacy guarantee in words, e.g. 'epsilon-LDP with epsilon = 1'."""
        if self.privacy_model == NO_PRIVACY:
            return "no privacy: reports are the true cells"
        if self.privacy_model == GEO_I:
            return (f"epsilon-geo-indistinguishability with epsilon = {self.epsilon:g} per {GEO_I_UNIT} "
                    f"({self.epsilon_per_cell:.3g} per cell side of {length(self.grid.cell_m)})")
        return f"epsilon-{self.privacy_model} with epsilon = {self.epsilon:g}"

    def geo_slack_m(self) -> float:
        """Geo-I: the slack (metres) the guarantee adds to every distance between real positions.

        The stated bound is P(report | x) <= e^(epsilon * (|x - x'| + slack)) P(report | x') for any two real
        positions x, x'. 0 for a mechanism that randomises the exact position (planar Laplace); a mechanism
        that first snaps x to its cell centre pays the snapping (SEM-Geo-I: the cell diagonal)."""
        return 0.0

    def geo_log_ratio_bound(self, distance_m: float) -> float:
        """Geo-I: the stated bound on ln P(report | x) / P(report | x') for real positions ``distance_m`` apart
        (epsilon per metre x (distance + :meth:`geo_slack_m`)); a log, so it never overflows."""
        return self.epsilon_per_cell / self.grid.cell_m * (float(distance_m) + self.geo_slack_m())

    @property
    def epsilon_per_cell(self) -> float:
        """Geo-I: the privacy loss per cell side of distance, the unit mechanisms and the audit work in.

        ``epsilon`` is per km (:data:`GEO_I_UNIT_M`), so this is epsilon * cell side / 1 km;
        mechanisms whose guarantee is set otherwise (SEM-Geo-I's calibration) override it.
        """
        return self.epsilon * self.grid.cell_m / GEO_I_UNIT_M

    def unit_statement(self) -> str:
        """What the guarantee protects, in words (issue 15.17): event-level for a row, else the unit."""
        if self.privacy_model == NO_PRIVACY:
            return "nothing is protected"
        if self.privacy_unit == UNIT_ROW:
            return ("per row (event-level): each row, one location, is protected; a person with m rows is "
                    "protected only at m x epsilon")
        return f"per {self.privacy_unit}: everything {self.privacy_unit} contributes is protected together"

    def stated_guarantee(self) -> str:
        """:meth:`guarantee` with its privacy unit named, as shown with every result."""
        return f"{self.guarantee()}, {self.unit_statement()}"

    # ---- helpers -----------------------------------------------------------
    def __getattr__(self, item: str) -> Any:
        # Parameters read as attributes: mech.radius
        values = self.__dict__.get("param_values")
        if values is not None and item in values:
            return values[item]
        raise AttributeError(item)

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.param_values.items())
        return f"{type(self).__name__}(d={self.grid.side}, epsilon={self.epsilon:g}{', ' + args if args else ''})"
