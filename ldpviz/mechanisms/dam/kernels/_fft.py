"""FFT convolution with one fixed kernel: cached kernel transforms, per-thread work arrays, the precision rule."""

from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np
from scipy import fft as sfft


try:  # the pocketfft bindings scipy.fft runs, called with preallocated outputs (see _Convolver)
    from scipy.fft._pocketfft import pypocketfft as _pfft
except ImportError:  # pragma: no cover - a scipy without them: the public scipy.fft functions
    _pfft = None


# ---------------------------------------------------------------------------
# FFT convolution helpers
# ---------------------------------------------------------------------------
#: Threads per transform (scipy.fft ``workers``): one. Transforms of 256^2 points and more used to run on both
#: cores; measured on DAM at d = 256 (720^2 transforms, 1M users, epsilon 1; issue 38.4), two threads cost 5.8-6.5 s
#: of CPU against 5.0 s on one, for 0-11% less wall time (4.45-5.0 s against 5.0 s). On a shared server, where
#: the other core is busy, that is a fifth more work for nothing. Same numbers either way (each 1-D transform
#: runs whole on one thread).
FFT_WORKERS = 1
#: A convolution may run in single precision (float32 transforms are about twice as fast) when its kernel's
#: largest to smallest entry is at most this. Off (0): measured in issue 28, float32 round-off (~1e-7 of the
#: largest output) is larger than the step-to-step gains of the held-out log-likelihood on its plateau, so it
#: moved the held-out rule's stopping step: HUEM, d = 32, epsilon = 1, 100,000 users, seeds 2026 and 2027
#: stopped after 681 and 321 EM evaluations instead of 258 and 258, W2 +255 m and +86 m
#: (bench/bench_dam.py population). EM's maps therefore run in float64.
FLOAT32_MAX_RANGE = 0.0


#: Bytes of FFT work arrays kept per thread between calls (:func:`_work_array`), least recently used dropped
#: first: DAM at d = 256 with 5 trials needs about 130 MB; beyond the budget arrays are simply made per call.
WORK_BYTES = 192 * 2 ** 20
_WORK = threading.local()


def _work_array(key: tuple, T: int, rows: int, cols: int, dtype: np.dtype) -> np.ndarray:
    """A ``(T, rows, cols)`` array kept between calls in this thread (zeros when first made). ``key`` names
    what its users keep zero: every user of one key writes the same parts, so an array can serve any channel
    with that key. Made for the largest stack asked for; a smaller stack uses its leading slices (contiguous)."""
    store = getattr(_WORK, "arrays", None)
    if store is None:
        store = _WORK.arrays = OrderedDict()
        _WORK.nbytes = 0                      # the store's total, kept as arrays come and go (not re-summed)
    full = (key, rows, cols, np.dtype(dtype).str)
    arr = store.get(full)
    if arr is not None and arr.shape[0] >= T:
        store.move_to_end(full)               # the common case: reuse, now the most recently used
        return arr[:T]
    if arr is not None:
        _WORK.nbytes -= store.pop(full).nbytes
    arr = store[full] = np.zeros((T, rows, cols), dtype)
    _WORK.nbytes += arr.nbytes
    while _WORK.nbytes > WORK_BYTES and len(store) > 1:
        _WORK.nbytes -= store.popitem(last=False)[1].nbytes
    return arr[:T]


class _Convolver:
    """Linear convolution / correlation with one fixed kernel via cached real FFTs.

    The kernel's transform is computed once, at a fast size (``scipy.fft.next_fast_len``). Each 2-D transform
    is two passes of 1-D transforms that skip what is known to be zero or not needed: a d x d input padded to
    S x S is transformed along its rows only where it has rows, and a valid correlation inverts only the
    rows it returns. The passes run on zero-padded work arrays kept between calls (per thread, within
    :data:`WORK_BYTES`; their padding is written once), so a call copies its input once and allocates nothing
    of the transform's size: the same pocketfft transforms :mod:`scipy.fft` runs, on the same numbers, without
    its per-call padding copies and zero fills (issue 28, d = 256). ``dtype`` float32 halves the work where
    the caller's dynamic range allows it (:data:`FLOAT32_MAX_RANGE`); results are returned in float64 either
    way.
    """

    def __init__(self, kernel: np.ndarray, max_len: int, dtype: type = np.float64) -> None:
        self.kernel = np.asarray(kernel, float)
        self.size = sfft.next_fast_len(max_len, real=True)
        self.shape = (self.size,) * 2
        self.dtype = np.dtype(dtype)
        self.complex_dtype = np.dtype(np.complex64 if self.dtype == np.float32 else np.complex128)
        self.k_fft = sfft.rfft2(self.kernel, self.shape).astype(self.complex_dtype)
        self.k_flip_fft = sfft.rfft2(self.kernel[::-1, ::-1], self.shape).astype(self.complex_dtype)
        self.workers = FFT_WORKERS

    def _work(self, key: str, T: int, rows: int, cols: int, dtype: np.dtype) -> np.ndarray:
        return _work_array((key, self.size), T, rows, cols, dtype)

    def _input(self, key: str, T: int, rows: int) -> np.ndarray:
        """A zero-padded ``(T, rows, S)`` real work array: its first columns are filled with the input of
        :meth:`_transform`, the rest stay zero."""
        return self._work(key, T, rows, self.size, self.dtype)

    def _transform(self, key: str, real: np.ndarray, kernel_fft: np.ndarray, keep: slice) -> np.ndarray:
        """``real`` (a filled :meth:`_input`) transformed (rows, then columns padded to S), multiplied by
        ``kernel_fft`` and inverted on the rows ``keep``: a ``(T, len(keep), S)`` view of a work array (valid
        until the next call)."""
        S, H, w = self.size, self.size // 2 + 1, self.workers
        T, rows = real.shape[:2]
        half = self._work(key + " half", T, S, H, self.complex_dtype)      # rows >= `rows` stay zero (the key
        spec = self._work("spec", T, S, H, self.complex_dtype)              # names rows and columns)
        if _pfft is None:                                                   # scipy without its pocketfft module
            spec[...] = sfft.fft(sfft.rfft(real, axis=-1, workers=w), n=S, axis=-2, workers=w)
            spec *= kernel_fft
            inv = sfft.ifft(spec, axis=-2, workers=w)[:, keep, :]
            return sfft.irfft(inv, n=S, axis=-1, workers=w)
        _pfft.r2c(real, (2,), True, 0, half[:, :rows, :], w)                # as scipy.fft.rfft
        _pfft.c2c(half, (1,), True, 0, spec, w)                             # as scipy.fft.fft (norm "backward")
        spec *= kernel_fft
        _pfft.c2c(spec, (1,), False, 2, spec, w)                            # as scipy.fft.ifft
        n = keep.stop - keep.start
        out = self._work("out", T, n, S, self.dtype)
        _pfft.c2r(spec[:, keep, :], (2,), S, False, 2, out, w)              # as scipy.fft.irfft(n=S)
        return out

    @staticmethod
    def _stack(a: np.ndarray) -> np.ndarray:
        return a.reshape((-1,) + a.shape[-2:])

    def full_view(self, a: np.ndarray) -> np.ndarray:
        """:meth:`full` of a ``(T, d, d)`` stack as a view into a work array, valid until the next call."""
        T, rows, cols = a.shape
        n = cols + self.kernel.shape[0] - 1
        key = f"full {rows}x{cols}"
        real = self._input(key, T, rows)
        np.copyto(real[..., :cols], a, casting="same_kind")
        return self._transform(key, real, self.k_fft, slice(0, n))[..., :n]

    def corr_view(self, T: int, rows: int, cols: int) -> tuple[np.ndarray, object]:
        """For :meth:`valid_corr` without a copy: the ``(T, rows, cols)`` array to fill, and a function that
        then returns the correlation as a view into a work array (valid until the next call)."""
        m = self.kernel.shape[0] - 1
        n = cols - m
        key = f"corr {rows}x{cols}"
        real = self._input(key, T, rows)

        def run() -> np.ndarray:
            return self._transform(key, real, self.k_flip_fft, slice(m, m + n))[..., m:m + n]
        return real[..., :cols], run

    def full(self, a: np.ndarray) -> np.ndarray:
        """Full linear convolution a * kernel (size len(a) + len(kernel) - 1) over the last two axes (a leading
        axis is a stack of trials, transformed in one call)."""
        a = np.asarray(a)
        out = self.full_view(self._stack(a))
        return np.array(out, dtype=float).reshape(a.shape[:-2] + out.shape[-2:])

    def valid_corr(self, a: np.ndarray) -> np.ndarray:
        """Valid correlation: out[i] = sum_k kernel[k] a[i + k] (size len(a) - len(kernel) + 1), last two axes."""
        a = np.asarray(a)
        s = self._stack(a)
        target, run = self.corr_view(*s.shape)
        np.copyto(target, s, casting="same_kind")
        out = run()
        return np.array(out, dtype=float).reshape(a.shape[:-2] + out.shape[-2:])


def _precision(kernel: np.ndarray, floor: float = 0.0) -> type:
    """float32 when every output of a channel ``floor + kernel`` (per unit of input mass) lies within
    FLOAT32_MAX_RANGE of the largest, else float64."""
    k = np.asarray(kernel, float)
    low, top = floor + float(k.min()), floor + float(k.max())
    return np.float32 if low > 0 and top / low <= FLOAT32_MAX_RANGE else np.float64
