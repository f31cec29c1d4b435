"""The Decide page's one typed state (as DP Wizard's ``types.AppState``): what its steps share on one run.

:class:`DecideState` holds the one config dict (the state layer's, mirrored in the link), the session's state, and
each step's answer once the page has reached it: :class:`Source` (1 · Your data), :class:`Protection` (2 · Who is
protected), :class:`Need` (3 · What the map must show), :class:`Answers` (4 · The answer), :class:`Signed` (5 ·
Sign). A step reads the earlier ones and returns its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, MutableMapping

from ldpviz.data.dataset_types import Dataset
from ldpviz.data.trajectories import Trajectories
from ldpviz.geo.domain import Grid, Region
from ldpviz.mechanisms.base import Mechanism


@dataclass(frozen=True)
class Source:
    """Step 1: the points studied and their region."""
    name: str                       # the dataset's name (an upload's, a bundled set's, points derived from trips)
    key: str                        # its content key (what the caches are keyed by)
    data: Dataset                   # the points (for trips: one point per person)
    trips: Trajectories | None      # the trips file, when the source is one
    labels: dict[str, str]          # every source offered, labelled
    choice: str                     # the region option chosen: a preset's name or state.REGION_BBOX
    region: Region
    upload_name: str | None         # the upload's label when the points are an upload
    inside: int                     # points inside the region (trips: people)
    rows_text: str                  # what was read and kept, in words
    people: int | None              # trips: the ledger is per person (accounting.person_ledger); points: None

    @property
    def label(self) -> str:
        return self.labels.get(self.name, self.name)


@dataclass(frozen=True)
class Protection:
    """Step 2: the privacy models accepted and the mechanisms they leave."""
    models: list[str]
    eligible: list[str]
    why_not: dict[str, str]         # each other mechanism's reason; step 4 adds the seeks that did not answer


@dataclass(frozen=True)
class Need:
    """Step 3: what the map must show, on which grid (the values as the widgets hold them)."""
    metric: str
    target: float
    side: int
    probability: float


@dataclass(frozen=True)
class Answers:
    """Step 4: the question asked and the answers, ranked as shown."""
    turn: str                       # "epsilon" or "users" (decision_flow.TURNS)
    limit: float                    # the officer's largest ε per person in one collection
    n_users: int | None             # the users the seeks ran on (None: everyone in the region)
    grid: Grid
    ranked: list[dict[str, Any]]
    reached: list[str]              # the mechanisms that meet the target, in ranked order
    later: list[int]                # seeks waiting for Start (their indexes among the eligible)
    #: Each reached answer's mechanism at its ε, built once (for its ledger) and passed on to the signed report
    #: and the deploy bundle.
    mechanisms: dict[str, Mechanism]


@dataclass(frozen=True)
class Signed:
    """Step 5: the mechanism signed, its answer, and the mechanism itself (built once, in step 4)."""
    chosen: str
    pick: dict[str, Any]
    mechanism: Mechanism


@dataclass(kw_only=True)
class DecideState:
    """What the steps share on one run of the page; each step's field is None until the page reaches it."""
    cfg: dict[str, Any]
    session: MutableMapping[str, Any]
    source: Source | None = None
    protection: Protection | None = None
    need: Need | None = None
    answers: Answers | None = None
    signed: Signed | None = None
