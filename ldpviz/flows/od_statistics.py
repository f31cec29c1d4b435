"""The server's joint statistic of origin and destination reports (L-SRR Sec. 4.1): what every OD
estimator in :mod:`ldpviz.flows.od` reads, built from phones' reports or drawn exactly from true OD
counts (:mod:`ldpviz.flows.od_simulate`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator

import numpy as np
import scipy.sparse

from ldpviz.errors import LdpvizInputError

from ldpviz.mechanisms.fo.oracles import OLHReports, grr_channel, hr_channel, olh_support_probabilities, olh_supports
from ldpviz.mechanisms.srr.olh_h import OLHHReports, hierarchy
from ldpviz.mechanisms.srr.pldp import pcep_channel

#: Largest joint histogram (origin reports x destination reports) kept dense.
_DENSE_ENTRIES = 1 << 22
#: Users per chunk when OLH-H supports are expanded.
_CHUNK = 1 << 15


@dataclass
class JointStatistic:
    """``S`` (K_o x K_d, dense or sparse) with ``E[S] = n A_o F A_d^T``; ``exact`` if S is a report histogram."""

    S: Any
    A_o: np.ndarray
    A_d: np.ndarray
    n: int
    exact: bool
    S2: np.ndarray | None = None    #: (d x d) mean of (u u)(v v)^T, u = A_o^T a(o), v = A_d^T a(d) (OLH-H only)

    @property
    def d(self) -> int:
        return int(self.A_o.shape[1])

    def score(self) -> np.ndarray:
        """``T = A_o^T (S/n) A_d`` (d x d): the least-squares score of every OD pair."""
        return np.asarray(self.A_o.T @ (self.S @ self.A_d)) / self.n

    def second_moment(self) -> np.ndarray:
        """Mean over users of ``(u*u)(v*v)^T``: the plug-in second moment of each pair's score."""
        if self.S2 is not None:
            return self.S2
        return np.asarray((self.A_o ** 2).T @ (self.S @ (self.A_d ** 2))) / self.n


def _histogram(y_o: np.ndarray, y_d: np.ndarray, k_o: int, k_d: int) -> Any:
    y_o, y_d = np.asarray(y_o, dtype=np.int64), np.asarray(y_d, dtype=np.int64)
    if k_o * k_d <= _DENSE_ENTRIES:
        return np.bincount(y_o * k_d + y_d, minlength=k_o * k_d).reshape(k_o, k_d).astype(float)
    ones = np.ones(len(y_o))
    return scipy.sparse.coo_matrix((ones, (y_o, y_d)), shape=(k_o, k_d)).tocsr()


def _olhh_level_parts(levels: list, A: np.ndarray, d: int) -> tuple[list, list, list]:
    """Per hierarchy level: the map from a node's support to the leaf score u = A s_leaf, and two zeroed
    Gram accumulators (sum of s s^T, origin and destination ends) for the OLH-H second moment."""
    spread = []
    for nodes, index in levels:
        P = np.zeros((len(nodes), d))
        P[index, np.arange(d)] = 1.0
        spread.append(P @ A)
    gram_o = [np.zeros((len(nodes), len(nodes))) for nodes, _ in levels]
    gram_d = [np.zeros((len(nodes), len(nodes))) for nodes, _ in levels]
    return spread, gram_o, gram_d


def _olhh_response(reports: OLHHReports, epsilon: float) -> np.ndarray:
    """``A[v, x]`` of OLH-H over leaves: q* + (p* - q*) * (share of levels where v and x share a node)."""
    levels = hierarchy(reports.domain)
    d = reports.domain.size
    same = np.zeros((d, d))
    for _, index in levels:
        same += index[:, None] == index[None, :]
    p, q = olh_support_probabilities(epsilon, reports.g)
    return q + (p - q) * same / len(levels)


def olhh_accumulate(levels: list, A: np.ndarray, n: int,
                    supports: Callable[[int, int, int, int], Iterable[tuple[np.ndarray, np.ndarray]] | None]
                    ) -> JointStatistic:
    """The OLH-H joint statistic from support bits, built per pair of levels at node level (not per leaf).

    ``supports(a, b, N_a, N_b)`` yields, chunk by chunk, the float32 support bits ``(s_o, s_d)`` (users x N_a,
    users x N_b) of the users who picked levels (a, b), or None when none did. A report at level l supports
    every leaf under its supported level-l nodes, so the leaf counts of those users are the node counts
    ``S_ab = sum s_o s_d^T`` spread to leaves: n * N_a * N_b instead of n * d^2 per level pair. The second
    moment for the Lasso weights is the product of the two ends' mean squared scores (independence between
    the ends), because its exact value needs an O(n d^2) pass. One kernel for the per-user reports (below)
    and the by-count draw (:mod:`ldpviz.flows.od_simulate`).
    """
    d = A.shape[0]
    S = np.zeros((d, d))
    spread, gram_o, gram_d = _olhh_level_parts(levels, A, d)
    for a, (nodes_a, index_a) in enumerate(levels):
        for b, (nodes_b, index_b) in enumerate(levels):
            chunks = supports(a, b, len(nodes_a), len(nodes_b))
            if chunks is None:
                continue
            S_ab = np.zeros((len(nodes_a), len(nodes_b)), dtype=np.float64)
            for s_o, s_d in chunks:
                S_ab += s_o.T @ s_d
                gram_o[a] += s_o.T @ s_o
                gram_d[b] += s_d.T @ s_d
            S += S_ab[np.ix_(index_a, index_b)]
    # sum over users of (B^T s)^2 = diag(B^T (sum s s^T) B)
    m2_o = sum(((G @ B) * B).sum(axis=0) for G, B in zip(gram_o, spread))
    m2_d = sum(((G @ B) * B).sum(axis=0) for G, B in zip(gram_d, spread))
    return JointStatistic(S, A, A, n, exact=False, S2=np.outer(m2_o, m2_d) / max(n, 1) ** 2)


def _olhh_statistic(rep_o: OLHHReports, rep_d: OLHHReports, epsilon: float) -> JointStatistic:
    """Support-pair counts of OLH-H from the paired per-user reports (:func:`olhh_accumulate`)."""

    def supports(a: int, b: int, n_a: int, n_b: int) -> Iterator[tuple[np.ndarray, np.ndarray]] | None:
        users = np.flatnonzero((rep_o.levels == a) & (rep_d.levels == b))
        if not len(users):
            return None
        return ((olh_supports(OLHReports(rep_o.seeds[u], rep_o.buckets[u], rep_o.g), n_a).astype(np.float32),
                 olh_supports(OLHReports(rep_d.seeds[u], rep_d.buckets[u], rep_d.g), n_b).astype(np.float32))
                for u in (users[lo:lo + _CHUNK] for lo in range(0, len(users), _CHUNK)))

    return olhh_accumulate(hierarchy(rep_o.domain), _olhh_response(rep_o, epsilon), len(rep_o.levels), supports)


def joint_statistic(mech: Any, rep_o: Any, rep_d: Any) -> JointStatistic:
    """The paired reports of ``mech`` (origins, destinations; same users in the same order) as a statistic."""
    name, eps = mech.name, mech.epsilon
    if name == "srr":
        A_o, A_d = rep_o.plan.channel(), rep_d.plan.channel()
        y_o, y_d = rep_o.positions, rep_d.positions
    elif name in ("grr-tiles", "hr-tiles"):
        size = rep_o.domain.size
        # the mechanism's own channel over its domain (HR's code depends on its variant and epsilon)
        A_o = A_d = mech.domain_channel(size) if hasattr(mech, "domain_channel") else (
            grr_channel(size, eps) if name == "grr-tiles" else hr_channel(size, eps))
        y_o, y_d = rep_o.reports, rep_d.reports
    elif name == "pldp":
        A_o, A_d = pcep_channel(rep_o.signs, eps), pcep_channel(rep_d.signs, eps)
        y_o = 2 * rep_o.rows + (rep_o.reported > 0)
        y_d = 2 * rep_d.rows + (rep_d.reported > 0)
    elif name == "olh-h":
        return _olhh_statistic(rep_o, rep_d, eps)
    else:
        raise LdpvizInputError(f"no OD statistic for mechanism {name!r}")
    return JointStatistic(_histogram(y_o, y_d, A_o.shape[0], A_d.shape[0]), np.asarray(A_o, float),
                          np.asarray(A_d, float), len(y_o), exact=True)


# ---------------------------------------------------------------- estimators
