"""The OD joint statistic drawn from the true OD counts (aggregate simulation of every user's two reports).

Paper: l-srr-staircase-randomized-response.md Sec. 4.1 (each trip's origin and destination reported
independently at epsilon/2). :func:`ldpviz.flows.od.joint_statistic` builds the statistic from per-user
reports (``Mechanism.perturb``); this module draws the *same statistic* directly from the counts
``C[i, j]`` of trips with true origin i and destination j, without per-user report objects:

* **one-symbol reports** (SRR, GRR, HR, PLDP): a user's origin report ~ column i of ``A_o`` and its
  destination report ~ column j of ``A_d``, independently, and the statistic is the joint report
  histogram. Stage 1 draws the origin reports of each OD pair, giving ``N[k, j]`` = users with origin
  report k and true destination j; stage 2 draws their destination reports, ``S[k, :] = sum_j
  Mult(N[k, j], A_d[:, j])``. Both stages are exact in distribution (users are independent and the
  histogram only depends on how many users share each (report, true location)). Each stage draws by
  counts (one multinomial per non-empty cell, cost ~ cells x reports, independent of n) when there
  are more users than that, else per user by inverse CDF (cost ~ n): whichever is cheaper.
  PLDP's public sign matrices are drawn as its ``perturb`` draws them (one per end, from ``rng``).
* **OLH-H** (a fresh hash per report): exact for a fully random hash family, as
  :func:`ldpviz.mechanisms.fo.oracles.olh_aggregate_support` is: a report at level l supports the user's own
  node with probability p* and every other node independently with probability 1/g. Levels are
  split by counts (multinomial over the L x L level pairs); the support bits are drawn per user
  (their sum of outer products has no closed form) without hashing, and summed at node level exactly
  as :func:`ldpviz.flows.od_statistics.olhh_accumulate` does, second moment included.
"""

from __future__ import annotations

from typing import Any, Iterator

import numpy as np
import scipy.sparse

from ldpviz.errors import LdpvizInputError
from ldpviz.flows.od_statistics import JointStatistic, _olhh_response, olhh_accumulate
from ldpviz.mechanisms.fo.oracles import olh_buckets, olh_support_probabilities
from ldpviz.mechanisms.srr.olh_h import OLHHReports, hierarchy
from ldpviz.mechanisms.srr.pldp import MAX_PROJECTION_ENTRIES, pcep_channel, projection_dim, projection_signs
from ldpviz.mechanisms.srr.staircase import LocationDomain

_CHUNK = 1 << 15


def _per_user(cols: np.ndarray, A: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One report per user whose true location is ``cols[u]``: inverse CDF of column ``cols[u]`` of ``A``."""
    out = np.empty(len(cols), dtype=np.int64)
    cum = np.cumsum(A, axis=0)
    cum[-1] = 1.0 + 1e-12                       # rounding never pushes a draw past the last report
    order = np.argsort(cols, kind="stable")
    bounds = np.searchsorted(cols[order], np.arange(A.shape[1] + 1))
    u = rng.random(len(cols))
    for x in np.flatnonzero(np.diff(bounds)):
        who = order[bounds[x]:bounds[x + 1]]
        out[who] = np.searchsorted(cum[:, x], u[who], side="right")
    return np.minimum(out, A.shape[0] - 1)


def _reports_by_group(counts: np.ndarray, cols: np.ndarray, A: np.ndarray, rng: np.random.Generator,
                      group: np.ndarray, n_groups: int) -> np.ndarray:
    """``out[k, g]`` = users of group g whose report is k, for groups of ``counts[c]`` users at ``cols[c]``."""
    K = A.shape[0]
    out = np.zeros((K, n_groups), dtype=np.int64)
    keep = counts > 0
    counts, cols, group = counts[keep], cols[keep], group[keep]
    if counts.sum() <= len(counts) * K:         # fewer users than cells x reports: per user
        reports = _per_user(np.repeat(cols, counts), A, rng)
        flat = reports * n_groups + np.repeat(group, counts)
        return np.bincount(flat, minlength=K * n_groups).reshape(K, n_groups)
    P = np.clip(A.T, 0.0, None)
    P /= P.sum(axis=1, keepdims=True)
    step = max(1, (1 << 22) // K)
    for lo in range(0, len(counts), step):
        sl = slice(lo, lo + step)
        draws = rng.multinomial(counts[sl], P[cols[sl]])            # (cells, K)
        member = scipy.sparse.csr_matrix((np.ones(len(draws)), (group[sl], np.arange(len(draws)))),
                                         shape=(n_groups, len(draws)))
        out += np.asarray(member @ draws, dtype=np.int64).T
    return out


def one_symbol_histogram(C: np.ndarray, A_o: np.ndarray, A_d: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The joint report histogram ``S`` (K_o x K_d) of users with true OD counts ``C`` (exact in distribution)."""
    C = np.asarray(C, dtype=np.int64)
    i, j = np.nonzero(C)
    N = _reports_by_group(C[i, j], i, A_o, rng, j, C.shape[1])          # (K_o, d_d): origin report x true dest
    k, jj = np.nonzero(N)
    return _reports_by_group(N[k, jj], jj, A_d, rng, k, A_o.shape[0]).T.astype(float)


def _olhh_statistic(C: np.ndarray, mech: Any, domain: LocationDomain, rng: np.random.Generator) -> Any:
    """OLH-H's joint statistic of users with true OD counts ``C``: each (leaf pair, level pair) gets a multinomial
    share of its users, whose support bits are drawn under a fully random hash (:func:`_supports`) and
    accumulated by the per-user path's kernel (:func:`ldpviz.flows.od_statistics.olhh_accumulate`)."""
    levels = hierarchy(domain)
    L, d = len(levels), domain.size
    g = olh_buckets(mech.epsilon)
    p, q = olh_support_probabilities(mech.epsilon, g)
    A = _olhh_response(OLHHReports(domain, np.zeros(0, int), np.zeros(0, np.uint64), np.zeros(0, int), g),
                       mech.epsilon)
    flat = np.asarray(C, dtype=np.int64).ravel()
    split = rng.multinomial(flat, np.full(L * L, 1.0 / (L * L)))        # users per (leaf pair, level pair)

    def supports(a: int, b: int, n_a: int, n_b: int) -> Iterator[tuple[np.ndarray, np.ndarray]] | None:
        cnt = split[:, a * L + b]
        pairs = np.flatnonzero(cnt)
        if not len(pairs):
            return None
        users = np.repeat(pairs, cnt[pairs])
        x_node, y_node = levels[a][1][users // d], levels[b][1][users % d]
        return ((_supports(x_node[lo:lo + _CHUNK], n_a, p, q, rng), _supports(y_node[lo:lo + _CHUNK], n_b, p, q, rng))
                for lo in range(0, len(users), _CHUNK))

    return olhh_accumulate(levels, A, int(flat.sum()), supports)


def _supports(own: np.ndarray, n_nodes: int, p: float, q: float, rng: np.random.Generator) -> np.ndarray:
    """Support bits (float32) of OLH reports under a fully random hash: own node w.p. p*, each other w.p. 1/g."""
    bits = (rng.random((len(own), n_nodes), dtype=np.float32) < q).astype(np.float32)
    bits[np.arange(len(own)), own] = (rng.random(len(own)) < p).astype(np.float32)
    return bits


def simulate_statistic(mech: Any, domain: LocationDomain, C: np.ndarray, rng: np.random.Generator) -> Any:
    """The :class:`ldpviz.flows.od.JointStatistic` of users with true OD counts ``C`` (domain positions), drawn
    by counts."""

    name, eps = mech.name, mech.epsilon
    if name == "olh-h":
        return _olhh_statistic(C, mech, domain, rng)
    if name == "srr":
        A_o = A_d = mech.plan(domain).channel()
    elif name in ("grr-tiles", "hr-tiles"):
        A_o = A_d = mech.domain_channel(domain.size)
    elif name == "pldp":
        cap = max(1, MAX_PROJECTION_ENTRIES // domain.size)
        m = mech.projection_dim or min(projection_dim(domain.size, eps), cap)
        A_o = pcep_channel(projection_signs(m, domain.size, int(rng.integers(0, 2 ** 63 - 1))), eps)
        A_d = pcep_channel(projection_signs(m, domain.size, int(rng.integers(0, 2 ** 63 - 1))), eps)
    else:
        raise LdpvizInputError(f"no OD statistic for mechanism {name!r}")
    A_o, A_d = np.asarray(A_o, float), np.asarray(A_d, float)
    S = one_symbol_histogram(C, A_o, A_d, rng)
    return JointStatistic(S, A_o, A_d, int(np.asarray(C).sum()), exact=True)
