"""The per-user / aggregate path switch shared by the client mechanisms outside :mod:`ldpviz.mechanisms.fo.oracles`.

A mechanism with an *exact-in-distribution aggregate path* can hand the server the
sufficient statistic of its users' reports drawn directly from that statistic's
distribution given the true counts (e.g. for an explicit finite channel, the reports
of the n_x users at x are Multinomial(n_x, P[:, x])), which is cheaper than simulating
every phone when users far outnumber what the draw costs. :class:`TwoPaths` gives such
a mechanism the same ``path`` parameter and behaviour as the frequency oracles:

* ``path='per-user'`` simulates every phone (:meth:`TwoPaths.per_user`);
* ``path='aggregate'`` draws the statistic (:meth:`TwoPaths.aggregate`);
* ``path='auto'`` (default) takes the path :meth:`TwoPaths.choose` predicts faster for
  these users (a cost model in :mod:`ldpviz.mechanisms.path_cost`, from n and the domain
  size), and :meth:`Mechanism.estimate` reports ``info["path"]`` and ``info["path requested"]``.

:meth:`perturb` stays the client half (per-user reports unless ``path='aggregate'`` is
forced), :meth:`collect` is what the server receives on the chosen path.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ldpviz.geo.domain import Binned
from ldpviz.mechanisms.base import Param
from ldpviz.mechanisms.path_cost import AGGREGATE, AUTO, PER_USER

PATHS = (AUTO, PER_USER, AGGREGATE)


def path_param(what: str, model: str) -> Param:
    """The ``path`` parameter: ``what`` the aggregate path draws, ``model`` how 'auto' chooses."""
    return Param("path", str, AUTO,
                 f"'per-user' simulates every phone; 'aggregate' draws {what} directly from its exact distribution "
                 f"(the same distribution of what the server uses); 'auto' (default) takes the one predicted "
                 f"faster for these users: {model} (ldpviz.mechanisms.path_cost)", choices=PATHS)


class TwoPaths:
    """Mixin for a :class:`~ldpviz.mechanisms.base.Mechanism` with a per-user and an exact aggregate path."""

    path: str

    def per_user(self, users: Binned, rng: np.random.Generator) -> Any:  # pragma: no cover - overridden
        """Every phone's report (the client half)."""
        raise NotImplementedError

    def aggregate(self, users: Binned, rng: np.random.Generator) -> Any:  # pragma: no cover - overridden
        """The server's sufficient statistic of the reports, drawn from its exact distribution."""
        raise NotImplementedError

    def choose(self, users: Binned) -> str:  # pragma: no cover - overridden
        """The path the cost model predicts faster for ``users`` (PER_USER or AGGREGATE)."""
        raise NotImplementedError

    def path_for(self, users: Binned) -> str:
        """The path :meth:`collect` takes for ``users``: the one forced by ``path``, else :meth:`choose`'s."""
        return self.path if self.path != AUTO else self.choose(users)

    def perturb(self, users: Binned, rng: np.random.Generator) -> Any:
        """Client half: one report per user (with ``path='aggregate'`` forced: the exact statistic instead)."""
        if self.path == AGGREGATE:
            return self.aggregate(users, rng)
        return self.per_user(users, rng)

    def collect(self, users: Binned, rng: np.random.Generator) -> Any:
        """What the server receives, on the path :meth:`path_for` picks."""
        if self.path_for(users) == AGGREGATE:
            return self.aggregate(users, rng)
        return self.per_user(users, rng)

    def path_info(self, used: str) -> dict[str, str]:
        """The ``info`` entries every estimate carries: the path used and the path requested."""
        return {"path": used, "path requested": self.path}
