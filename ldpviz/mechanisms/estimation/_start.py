"""Did an EM estimate leave its start? (issue 37.14)"""

from __future__ import annotations

from typing import Any
from collections.abc import Mapping, Sequence

import numpy as np

from ldpviz.mechanisms.estimation._steps import HOLDOUT_SEED, _predict


# ---------------------------------------------------------------------------
# Did the estimate leave its start? (issue 37.14)
# ---------------------------------------------------------------------------
#: An EM estimate is *informative* only if the map its held-out search kept predicts the held-out reports better
#: than the starting map by more than this many standard errors of that gain (one-sided, about 97.7%).
START_MAP_Z = 2.0
#: What every readout says of an estimate that is not informative.
START_MAP_TEXT = ("the reports carry too little information at these settings: the map shown is the uniform "
                  "starting map")


def start_map_text(info: Mapping[str, Any] | None) -> str | None:
    """The words for an estimate that did not leave its start (None where it did, or where no test ran): the
    start itself where no held-out step beat it, else within noise of it (with the gain and its noise)."""
    if not stayed_at_start(info):
        return None
    test = info["start_map"]
    if test["best_step"] == 0:
        return START_MAP_TEXT + " (no EM step predicted the held-out reports better than it)"
    return (START_MAP_TEXT.replace("is the uniform starting map", "is within noise of the uniform starting map")
            + f" (it predicts the held-out reports {test['gain_nats']:.3g} nats better, within {START_MAP_Z:g} x "
            f"its noise of {test['noise_nats']:.3g})")


#: Report cells the starting map predicts below this share of an even split (1 / cells) are the start's "never" in
#: the goodness-of-fit test (:func:`reports_fit_start`): a truncated channel's far tail would otherwise carry
#: probabilities near 0 whose 1/p terms swamp the null variance of the statistic.
START_FIT_POOL_SHARE = 1e-3


#: Random sign probes that estimate the mechanism's own share of the report noise (:func:`start_fit_noise`).
START_FIT_PROBES = 32


def start_fit_noise(forward, start: np.ndarray) -> np.ndarray:
    """D(y) = sum_x f(x) P(y|x)^2 for the starting map f (one map, not a stack), from the forward map alone:
    Hutchinson's estimator, the mean over :data:`START_FIT_PROBES` fixed-seed Rademacher sign vectors v of
    forward(sqrt(f) v)(y)^2 (unbiased for every y). With p = forward(f), p(y) - D(y) is the variance of one
    report's indicator of y given where its person is: 0 for a noise-free channel, p(y)(1 - p(y)) roughly for
    one that ignores where the person is."""
    rng = np.random.default_rng(HOLDOUT_SEED)
    root = np.sqrt(np.maximum(start, 0.0))
    total = 0.0
    for _ in range(START_FIT_PROBES):        # one probe a pass (a stack of one): the batched and one-trial EM agree
        out = forward((root * rng.choice([-1.0, 1.0], size=start.shape))[None])[0]
        total = total + out * out
    return total / START_FIT_PROBES


def reports_fit_start(counts: np.ndarray, p_start: np.ndarray, d_start: np.ndarray) -> tuple[float, float]:
    """Pearson's test of the report counts against the starting map: (z-equivalent, p-value) of H0 "these people
    are spread as the start", each report drawn through the channel from its own person's place.

    X^2 = sum_y (c_y - n p_y)^2 / (n p_y), p = the start's report distribution. The people are the population the
    map is of (not a sample from a larger one), so under H0 the only randomness is the mechanism's: a report
    of a person at x lands in y with P(y|x), and E[X^2] = k - sum_y D(y) / p_y with D(y) = sum_x f(x) P(y|x)^2
    (:func:`start_fit_noise`; k - 1 where the channel ignores the person's place, the multinomial value; ~0 for
    a noise-free one, where any departure from the start is real). The null is taken as a chi-square of that
    mean and variance 2 x mean plus the multinomial's sparse-table term (sum_y 1/p_y - k^2 - 2k + 2) / n where
    positive: at least the variance of the quadratic form (2 tr(A^2) <= 2 tr(A), A's eigenvalues lie in
    [0, 1]), so the test errs towards "not informative". Cells the start predicts below
    :data:`START_FIT_POOL_SHARE` / k are its "never": a report there rejects H0 outright (z = inf), else they
    leave the test. Needs no fit, so it uses every report. Valid only where ``counts`` is a histogram of one
    report per person. The tail and quantile are scipy.stats.chi2.sf and norm.isf's own functions (chdtrc, ndtri)
    called directly: importing scipy.stats cost a fresh process about a second of every EM run (issue 38.4)."""
    from scipy import special

    c = np.asarray(counts, dtype=float).reshape(-1)
    p = np.asarray(p_start, dtype=float).reshape(-1)
    dd = np.asarray(d_start, dtype=float).reshape(-1) / p.sum()
    p = p / p.sum()
    n = float(c.sum())
    tail = p < START_FIT_POOL_SHARE / p.size
    if n <= 0 or np.count_nonzero(~tail) < 2:
        return 0.0, 1.0
    if c[tail].sum() > 0:
        return float("inf"), 0.0
    c, p, dd = c[~tail], p[~tail], dd[~tail]
    k = float(p.size)
    x2 = float(np.sum((c - n * p) ** 2 / (n * p)))
    mean = max(k - float(np.sum(dd / p)), 1e-9)
    var = 2.0 * mean + max((float(np.sum(1.0 / p)) - k * k - 2.0 * k + 2.0) / n, 0.0)
    scale, df = var / (2.0 * mean), 2.0 * mean * mean / var
    pval = float(special.chdtrc(df, x2 / scale))
    return (float(-special.ndtri(pval)) if pval > 0 else float("inf")), pval


def start_map_tests(forward, start: np.ndarray, best: np.ndarray, held_out: np.ndarray,
                    best_steps: Sequence[int], counts: np.ndarray | None = None) -> list[dict]:
    """Whether each trial's estimate left its starting map (a stack): two tests, informative if either passes.

    1. Prediction (the held-out search's own question). The search (``"holdout"``) fits EM on 80% of the reports
       and keeps the step whose map best predicts the other 20%. Its gain over the start is
       G = sum_y h_y log(p_best(y) / p_start(y)) in nats over the m held-out reports; its standard error, the
       reports being independent draws, is sqrt(m) x the standard deviation of the per-report log-ratio. It
       passes when the search moved (``best_step`` > 0) and G > :data:`START_MAP_Z` x that error.
    2. Fit (``counts``: all reports of the trial, given only where they are a histogram of one report per person,
       not SEM-Geo-I's k cells per report). Pearson's test of the reports against the start's report
       distribution, the null variance being the mechanism's alone (:func:`reports_fit_start`), passes when H0
       "these people are spread as the start" is rejected at the same one-sided level (z > :data:`START_MAP_Z`).

    Test 1 alone lacks power where few reports are held out and the population is near the start: a few hundred
    people over tens of cells, reported almost without noise (planar Laplace at 50 per km on 250 km cells, the
    bundled storm trips' 151 people in the Gulf region): 35 held-out reports, the exact population map itself
    predicts them only 1.7 standard errors better than uniform, and a held-out report in a cell no training
    report reached costs the fitted map 690 nats (its prediction there is ~0), so the search keeps step 0 (the
    map is then one EM step on all reports: with a noise-free channel, the reports' own histogram). That map is
    the population's, read almost exactly; test 2 sees that these reports could not come from the start. Where
    the channel drowns the population (DAM at 0.05, planar Laplace at 0.03 per km on the bundled city), the
    reports fit the start and both tests fail. Neither test changes the map.

    Test 2 runs only where test 1 did not pass (its noise term costs :data:`START_FIT_PROBES` forward maps: 0.5 s
    of a DAM run at d = 256, issue 38.4); the verdict is the same either way.

    Returns one dict per trial: ``informative``, ``gain_nats``, ``noise_nats`` (the standard error),
    ``held_out_reports``, ``best_step``, and where test 2 ran ``fit_z`` (its z-equivalent) and ``fit_p``."""
    pred_start, log_start = _predict(forward, start)
    _, log_best = _predict(forward, best)
    out = []
    d_start = None                       # (start map, its start_fit_noise): the probes cost 32 forward maps
    for t in range(held_out.shape[0]):
        h = held_out[t].reshape(-1)
        r = (log_best[t] - log_start[t]).reshape(-1)
        seen = h > 0
        m = float(h.sum())
        gain = float(np.sum(h[seen] * r[seen]))
        mean = gain / m if m > 0 else 0.0
        noise = float(np.sqrt(np.sum(h[seen] * (r[seen] - mean) ** 2))) if m > 0 else 0.0
        informative = bool(int(best_steps[t]) > 0 and gain > START_MAP_Z * noise)
        test = {"informative": informative, "gain_nats": gain, "noise_nats": noise,
                "held_out_reports": int(m), "best_step": int(best_steps[t])}
        if counts is not None and not informative:     # test 2 only decides where test 1 did not pass
            if d_start is None or not np.array_equal(start[t], d_start[0]):
                d_start = (start[t], start_fit_noise(forward, start[t]))
            z, pval = reports_fit_start(counts[t], pred_start[t], d_start[1])
            test.update(fit_z=z, fit_p=pval, informative=informative or z > START_MAP_Z)
        out.append(test)
    return out


def stayed_at_start(info: Mapping[str, Any] | None) -> bool:
    """True where an estimate's ``info`` says its map never left the start (:func:`start_map_tests`); False where
    it left it or no test ran (a rule without a held-out search)."""
    test = (info or {}).get("start_map")
    return isinstance(test, Mapping) and test.get("informative") is False


def combine_start_maps(tests: Sequence[Mapping[str, Any] | None]) -> dict | None:
    """One test for a map built from several EM fits (MDSW's two margins): informative if any part is."""
    known = [t for t in tests if isinstance(t, Mapping)]
    if not known:
        return None
    return {"informative": any(t["informative"] for t in known), "gain_nats": sum(t["gain_nats"] for t in known),
            "noise_nats": float(np.sqrt(sum(t["noise_nats"] ** 2 for t in known))),
            "held_out_reports": max(t["held_out_reports"] for t in known),
            "best_step": max(t["best_step"] for t in known),
            **({"fit_z": max(t["fit_z"] for t in known), "fit_p": min(t["fit_p"] for t in known)}
               if all("fit_z" in t for t in known) else {})}
