"""The FFT channels' kept work arrays (kernels._Convolver, issue 28): the same numbers as scipy.fft's own
functions, bit for bit, whatever the order of calls, the stack size, the thread, or after pickling."""

from __future__ import annotations

import pickle
import threading

import numpy as np
import pytest

from ldpviz.mechanisms.dam import kernels
from ldpviz.mechanisms.dam.kernels import ClampedChannel, DiskChannel, dam_weights, huem_weights
from ldpviz.mechanisms.dam.planar_laplace import planar_laplace_kernel


def _channels():
    w, fp = dam_weights(5)
    hw, hfp = huem_weights(4, 1.0)
    return [DiskChannel(20, 1 + (np.e - 1) * w, fp), DiskChannel(9, hw, hfp),
            ClampedChannel(12, planar_laplace_kernel(0.5, 30))]


def _maps(chan, f, r):
    return chan.forward_batch(f), chan.adjoint_batch(r)


def _inputs(chan, T, seed):
    rng = np.random.default_rng(seed)
    d = chan.side
    D = chan.out_side if isinstance(chan, DiskChannel) else d
    return rng.random((T, d, d)), rng.random((T, D, D))


@pytest.fixture
def public_scipy(monkeypatch):
    """Channels built with kernels' fallback: scipy.fft's public functions instead of the work arrays."""
    def build():
        monkeypatch.setattr(kernels._fft, "_pfft", None)              # where _Convolver reads it
        return _channels()
    return build


def test_same_bits_as_scipy_fft_in_any_call_order(public_scipy):
    fast = _channels()
    inputs = [[_inputs(c, T, seed) for T, seed in ((3, 1), (1, 2), (2, 3))] for c in fast]
    got = [[_maps(c, f, r) for f, r in ins] for c, ins in zip(fast, inputs)]
    again = [[_maps(c, f, r) for f, r in reversed(ins)][::-1] for c, ins in zip(fast, inputs)]
    slow = public_scipy()
    want = [[_maps(c, f, r) for f, r in ins] for c, ins in zip(slow, inputs)]
    for g, a, w in zip(got, again, want):
        for (gf, ga), (af, aa), (wf, wa) in zip(g, a, w):
            for x, y, z in ((gf, af, wf), (ga, aa, wa)):
                np.testing.assert_array_equal(x, z)
                np.testing.assert_array_equal(y, z)


def test_one_trial_maps_equal_the_stack_slices():
    for chan in _channels():
        f, r = _inputs(chan, 3, 7)
        bf, ba = _maps(chan, f, r)
        for t in range(3):
            np.testing.assert_array_equal(chan.forward(f[t]), bf[t])
            np.testing.assert_array_equal(chan.adjoint(r[t]), ba[t])


def test_threads_and_pickles_do_not_share_work_arrays():
    chan = _channels()[0]
    inputs = [_inputs(chan, 2, seed) for seed in range(4)]
    want = [_maps(chan, f, r) for f, r in inputs]
    got: list = [None] * len(inputs)

    def work(k):
        for _ in range(20):
            got[k] = _maps(chan, *inputs[k])

    threads = [threading.Thread(target=work, args=(k,)) for k in range(len(inputs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    copy = pickle.loads(pickle.dumps(chan))
    for k, (wf, wa) in enumerate(want):
        np.testing.assert_array_equal(got[k][0], wf)
        np.testing.assert_array_equal(got[k][1], wa)
        np.testing.assert_array_equal(copy.forward_batch(inputs[k][0]), wf)


def test_maps_match_the_dense_channel():
    for chan in _channels():
        if not isinstance(chan, DiskChannel):
            continue
        P = chan.dense()
        f, r = _inputs(chan, 1, 11)
        np.testing.assert_allclose(chan.forward(f[0]).ravel()[chan.mask_cells], P @ f[0].ravel(), atol=1e-13)
        np.testing.assert_allclose(chan.adjoint(r[0]).ravel(), P.T @ r[0].ravel()[chan.mask_cells], atol=1e-12)


def test_a_tiny_work_budget_changes_nothing(monkeypatch):
    """Arrays dropped from the per-thread store (beyond kernels.WORK_BYTES) are made afresh: same numbers."""
    chans = _channels()
    inputs = [_inputs(c, 2, 5) for c in chans]
    want = [_maps(c, f, r) for c, (f, r) in zip(chans, inputs)]
    monkeypatch.setattr(kernels._fft, "WORK_BYTES", 1)             # where _work_array reads it
    for _ in range(2):
        for c, (f, r), (wf, wa) in zip(chans, inputs, want):
            gf, ga = _maps(c, f, r)
            np.testing.assert_array_equal(gf, wf)
            np.testing.assert_array_equal(ga, wa)


def test_kept_work_arrays_stay_within_their_budget_and_count_their_bytes(monkeypatch):
    """The store's running byte count (kept, not re-summed per call) equals its arrays' bytes, the store stays
    within WORK_BYTES (dropping the least recently used), and an array reused or grown still gives zeros where
    its users expect them."""
    monkeypatch.setattr(kernels._fft, "WORK_BYTES", 3 * 8 * 10 * 10)      # room for three (1, 10, 10) arrays
    result = {}

    def run():
        first = kernels._work_array(("a",), 1, 10, 10, np.float64)
        for name in ("b", "c", "d"):
            kernels._work_array((name,), 1, 10, 10, np.float64)
        grown = kernels._work_array(("c",), 2, 10, 10, np.float64)     # a larger stack: a new zeroed array
        store = kernels._WORK.arrays
        result.update(count=kernels._WORK.nbytes, summed=sum(a.nbytes for a in store.values()),
                      keys=[k[0][0] for k in store], first_kept=any(a is first.base for a in store.values()),
                      grown=grown.shape, zeros=not grown.any())

    thread = threading.Thread(target=run)      # a fresh thread: its own, empty store
    thread.start()
    thread.join()
    assert result["count"] == result["summed"] <= kernels._fft.WORK_BYTES
    assert result["keys"] == ["d", "c"] and not result["first_kept"]     # a and b dropped, oldest first
    assert result["grown"] == (2, 10, 10) and result["zeros"]
