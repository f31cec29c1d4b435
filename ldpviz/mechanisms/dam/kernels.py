"""Translation-invariant grid channels for the DAM paper's mechanisms.

dam-disk-area-mechanism.md, Sec. IV-VI and Appendix A. Everything is in *cell units*:
a cell has side 1 and offsets ``(dy, dx)`` are integer row/column differences.

* :func:`optimal_radius` -- eq. (12), the radius b maximising the mutual-information bound.
* :func:`dam_weights` -- the discrete DAM footprint: pure-high cells (centre within
  ``b_hat``), mixed cells crossed by the circle with their centre outside, holding the
  shrunken high area of Theorem VI.1 (clamped to [0, 1]); ``shrink=False`` gives DAM-NS.
* :func:`huem_weights` -- HUEM's grid version (Appendix A) as a sum of nested DAM disks.
* :class:`DiskChannel` -- P(y|x) = W(y - x) / Z on the output domain (the input grid
  grown by the footprint, Theorem VI.2), W = 1 off the footprint. Forward and adjoint
  maps are FFT convolutions with a precomputed kernel transform, never dense matrices.
* :class:`ClampedChannel` -- a kernel on the infinite lattice, reports remapped to the
  nearest cell of the d x d grid (planar Laplace with remapping, Andres et al. CCS'13).
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict

import numpy as np
from scipy import fft as sfft

try:  # the pocketfft bindings scipy.fft runs, called with preallocated outputs (see _Convolver)
    from scipy.fft._pocketfft import pypocketfft as _pfft
except ImportError:  # pragma: no cover - a scipy without them: the public scipy.fft functions
    _pfft = None

from ldpviz.errors import require


# ---------------------------------------------------------------------------
# radius (eq. 12) and footprints (Sec. VI-A, Appendix A)
# ---------------------------------------------------------------------------
def optimal_radius(epsilon: float, side: float = 1.0) -> float:
    """Eq. (12): b = (2 m2 + sqrt(4 m2^2 + pi e^eps m1 m2)) / (pi e^eps m1) * L.

    m1 = e^eps - 1 - eps, m2 = 1 - e^eps + eps e^eps (computed with expm1 so that small
    epsilon does not cancel). eps -> 0 gives (2 + sqrt(4 + pi)) / pi * L.
    """
    eps = float(epsilon)
    e = math.exp(eps)
    m1 = math.expm1(eps) - eps
    m2 = eps * e - math.expm1(eps)
    if m1 <= 0 or m2 <= 0:  # eps below float resolution: the limit
        return (2 + math.sqrt(4 + math.pi)) / math.pi * side
    return (2 * m2 + math.sqrt(4 * m2 * m2 + math.pi * e * m1 * m2)) / (math.pi * e * m1) * side


def _offsets(radius: int) -> tuple[np.ndarray, np.ndarray]:
    r = np.arange(-radius, radius + 1, dtype=float)
    dy, dx = np.meshgrid(r, r, indexing="ij")
    return dy, dx


def dam_weights(radius_cells: int, shrink: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """High-area fraction of every offset cell and the footprint, arrays ``(2b+1, 2b+1)``.

    A cell whose centre lies in or on the circle of radius ``b_hat`` is pure high (1).
    With ``shrink``, a cell the circle crosses (nearest point strictly inside the
    circle) but whose centre is outside gets Theorem VI.1's shrunken area
    S = 4 (delta |x| + 1/2)(delta |y| + 1/2), delta = b_hat / sqrt(x^2 + y^2) - 1,
    clamped to [0, 1]; such cells belong to the footprint (the paper's A_m) even when S
    clamps to 0. Every crossed cell has |x|, |y| <= b_hat, so the arrays have radius b_hat.
    """
    b = int(radius_cells)
    require(b >= 0, "the disk radius must be >= 0 cells")
    dy, dx = _offsets(b)
    rho2 = dx * dx + dy * dy
    inside = rho2 <= b * b
    high = inside.astype(float)
    if not shrink:
        return high, inside
    near2 = np.maximum(np.abs(dx) - 0.5, 0) ** 2 + np.maximum(np.abs(dy) - 0.5, 0) ** 2
    crossed = (~inside) & (near2 < b * b)
    rho = np.sqrt(np.where(crossed, rho2, 1.0))
    delta = b / rho - 1.0
    area = 4.0 * (delta * np.abs(dx) + 0.5) * (delta * np.abs(dy) + 0.5)
    high[crossed] = np.clip(area[crossed], 0.0, 1.0)
    return high, inside | crossed


def huem_weights(radius_cells: int, epsilon: float) -> tuple[np.ndarray, np.ndarray]:
    """HUEM's grid weights W / q (Appendix A), arrays ``(2b+1, 2b+1)``; W = 1 outside.

    Ring kappa (1..b_hat, width one cell) has level L_k = e^{(1 - (k-1)/b_hat) eps}, the
    outside level 1 = q. Written as nested disks, W = 1 + sum_k (L_k - L_{k+1}) s_k with
    s_k the shrunken DAM fraction for radius k, so a cell split by circle k gets
    s L_k + (1 - s) L_{k+1}, the Appendix's weighted sum. 1 <= W <= e^eps.

    Computed in O(b^2), not by summing b disks: s_k(cell) is 1 for every k >= the cell's
    centre distance (those terms telescope to L_kin - 1) and fractional only for a k strictly
    between the cell's nearest-point and centre distances (at most one k, as they differ by
    < 1), which gets :func:`dam_weights`' shrunken area for that radius.
    """
    b = int(radius_cells)
    _, footprint = dam_weights(b, shrink=True)
    weight = np.ones((2 * b + 1, 2 * b + 1))
    if b == 0:
        weight[0, 0] = math.exp(epsilon)
        return weight, footprint
    # levels[k] = L_k for k = 1..b, levels[b + 1] = 1 (levels[0] unused)
    levels = np.array([math.nan] + [math.exp((1.0 - (k - 1) / b) * epsilon) for k in range(1, b + 1)] + [1.0])
    dy, dx = _offsets(b)
    rho2 = dx * dx + dy * dy
    near2 = np.maximum(np.abs(dx) - 0.5, 0) ** 2 + np.maximum(np.abs(dy) - 0.5, 0) ** 2
    # smallest k >= 1 with k^2 >= rho2 (the cell's centre is inside disk k for every k >= k_in)
    k_in = np.maximum(np.ceil(np.sqrt(rho2)).astype(np.int64), 1)
    k_in = np.where((k_in - 1) ** 2 >= rho2, k_in - 1, k_in)
    k_in = np.where(k_in ** 2 < rho2, k_in + 1, k_in)
    k_in = np.maximum(k_in, 1)
    inside = k_in <= b
    weight[inside] += levels[k_in[inside]] - 1.0
    # circles crossing the cell with its centre outside: near2 < k^2 < rho2, 1 <= k <= b
    rho = np.sqrt(np.where(rho2 > 0, rho2, 1.0))
    base = np.floor(np.sqrt(near2)).astype(np.int64)
    for step in range(3):
        k = base + step
        crossed = (k >= 1) & (k <= b) & (near2 < k * k) & (rho2 > k * k)
        if not crossed.any():
            continue
        kc = k[crossed]
        delta = kc / rho[crossed] - 1.0
        area = np.clip(4.0 * (delta * np.abs(dx[crossed]) + 0.5) * (delta * np.abs(dy[crossed]) + 0.5), 0.0, 1.0)
        weight[crossed] += (levels[kc] - levels[kc + 1]) * area
    return weight, footprint


def huem_continuous_q(epsilon: float, radius: float, side: float = 1.0) -> float:
    """Def. 5's low density q generalised to an L x L input square.

    Normalisation 1 = q (pi b^2 (e^eps - 1 - eps) 2 / eps^2 + 4 L b + L^2); L = 1 gives
    q = eps^2 / (2 pi (e^eps - 1 - eps) b^2 + 4 eps^2 b + eps^2).
    """
    eps = float(epsilon)
    m1 = math.expm1(eps) - eps
    return eps * eps / (2 * math.pi * m1 * radius ** 2 + 4 * eps * eps * radius * side + eps * eps * side ** 2)


# ---------------------------------------------------------------------------
# FFT convolution helpers
# ---------------------------------------------------------------------------
#: Transforms with at least this many points per 2-D slice run on every core (scipy.fft ``workers``); smaller
#: ones stay on one thread, where thread start-up would cost more than it saves.
PARALLEL_FFT_POINTS = 256 * 256
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
        self.workers = 2 if self.size * self.size >= PARALLEL_FFT_POINTS else 1

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


def output_support(side: int, footprint: np.ndarray) -> np.ndarray:
    """The output domain: the d x d square grown by ``footprint`` (their Minkowski sum), ``(d+2R, d+2R)`` bool.

    Cell ``(R + i, R + j)`` of the box is the input cell ``(i, j)``. Exact and O(D^2): a footprint that is
    symmetric and shrinks monotonically away from its centre (every disk of this module) is a union of
    centred rectangles, so a box cell is covered iff the footprint holds the cell's offset from the nearest
    input cell -- the padded square with the footprint's rounded corners. Any other footprint is handled
    by an FFT convolution of the two indicator arrays (O(D^2 log D)); never a binary dilation, whose cost
    is (box cells) x (footprint cells).
    """
    d = int(side)
    R = (footprint.shape[0] - 1) // 2
    D = d + 2 * R
    if R == 0:
        return np.ones((d, d), bool)
    symmetric = np.array_equal(footprint, footprint[::-1, :]) and np.array_equal(footprint, footprint[:, ::-1])
    quadrant = footprint[R:, R:]
    monotone = bool(np.all(quadrant[1:, :] <= quadrant[:-1, :]) and np.all(quadrant[:, 1:] <= quadrant[:, :-1]))
    if symmetric and monotone and footprint[R, R]:
        # distance (in cells) of each box row/column from the input rows/columns [R, R + d)
        gap = np.maximum(np.maximum(R - np.arange(D), np.arange(D) - (R + d - 1)), 0)
        return quadrant[gap[:, None], gap[None, :]]
    square = np.zeros((D, D))
    square[R:R + d, R:R + d] = 1.0
    # report offset (out - in) = k - R for footprint index k: a full convolution, box cell x at index x + R
    shape = (D + 2 * R,) * 2
    conv = sfft.irfft2(sfft.rfft2(square, shape) * sfft.rfft2(footprint.astype(float), shape), shape)
    return conv[R:R + D, R:R + D] > 0.5


def _draw(cdf: np.ndarray, rng: np.random.Generator, size: int) -> np.ndarray:
    return np.minimum(np.searchsorted(cdf, rng.random(size) * cdf[-1], side="right"), len(cdf) - 1)


# ---------------------------------------------------------------------------
# Channels
# ---------------------------------------------------------------------------
class DiskChannel:
    """P(y | x) = W(y - x) / Z over the output domain (Sec. VI-A, eq. 13).

    ``weight`` (``(2R+1, 2R+1)``, values in [1, e^eps] on ``footprint``, 1 elsewhere) is
    the relative report weight of each offset. The output domain is the d x d input grid
    grown by the footprint (the union of every input's footprint, Theorem VI.2), held as
    a boolean ``mask`` on a ``(d+2R, d+2R)`` box; input cell (r, c) sits at box
    (r + R, c + R). Every footprint fits in the domain, so Z = |domain| + sum(W - 1) is
    the same for all inputs: the channel is translation invariant and
    max P(y|x) / P(y|x') = max W / min W <= e^eps.
    """

    def __init__(self, side: int, weight: np.ndarray, footprint: np.ndarray) -> None:
        self.side = int(side)
        self.radius = (weight.shape[0] - 1) // 2
        self.out_side = self.side + 2 * self.radius
        bump = np.where(footprint, np.asarray(weight, float) - 1.0, 0.0)
        require(np.all(bump >= -1e-12), "kernel weights must be >= 1")
        self.bump = np.maximum(bump, 0.0)
        self.mask = output_support(self.side, np.asarray(footprint, bool))
        self.mask_cells = np.flatnonzero(self.mask)
        self._mask_f = self.mask.astype(float)
        self.z = float(self.mask.sum() + self.bump.sum())
        self.weight = 1.0 + self.bump
        self.conv = _Convolver(self.bump, self.out_side, _precision(self.bump, floor=1.0))
        flat = self.bump.ravel()
        self._bump_cdf = np.cumsum(flat)
        self._bump_mass = float(flat.sum())

    @property
    def n_outputs(self) -> int:
        return int(self.mask.sum())

    @property
    def conv64(self) -> _Convolver:
        """The kernel's convolver in float64 whatever EM's uses (:attr:`conv` may run in float32): for numbers
        read off the channel itself, such as its local privacy (eq. 16)."""
        if self.conv.dtype == np.float64:
            return self.conv
        if getattr(self, "_conv64", None) is None:
            self._conv64 = _Convolver(self.bump, self.out_side, np.float64)
        return self._conv64

    def forward(self, f: np.ndarray) -> np.ndarray:
        """Output probabilities ``(D, D)`` for an input distribution ``f`` ``(d, d)``."""
        return self.forward_batch(np.asarray(f)[None])[0]

    def adjoint(self, r: np.ndarray) -> np.ndarray:
        """sum_y P(y | x) r(y) for every input x, ``(d, d)``."""
        return self.adjoint_batch(np.asarray(r)[None])[0]

    def forward_batch(self, f: np.ndarray) -> np.ndarray:
        """:meth:`forward` of a ``(T, d, d)`` stack in one pass of FFTs: (mask x total + max(conv, 0) x mask) / z
        per trial, computed in place on one output array as ((max(conv, 0) + total) / z) x mask (the same
        numbers: the mask is 0 or 1)."""
        totals = np.array([float(x.sum()) for x in f]).reshape(-1, 1, 1)
        out = np.maximum(self.conv.full_view(f), 0.0)
        out += totals
        out /= self.z
        out *= self._mask_f
        return out

    def adjoint_batch(self, r: np.ndarray) -> np.ndarray:
        """:meth:`adjoint` of a ``(T, D, D)`` stack in one pass of FFTs. Each trial's total is summed over its
        masked reports as one contiguous array (the same bits whatever the stack), then copied into the
        transform's padded input."""
        target, run = self.conv.corr_view(*r.shape)
        masked = self.conv._work("masked", r.shape[0], *r.shape[1:], np.dtype(float))
        np.multiply(r, self._mask_f, out=masked)
        totals = np.array([float(x.sum()) for x in masked]).reshape(-1, 1, 1)
        np.copyto(target, masked, casting="same_kind")
        out = run() + totals
        out /= self.z
        return out

    def sample(self, cells: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """One report per input cell: flat index into the ``(D, D)`` box.

        Mixture form of the channel: with probability sum(W - 1) / Z an offset drawn from
        (W - 1) (always inside the domain), otherwise a uniform domain cell.
        """
        cells = np.asarray(cells, dtype=np.int64)
        n = len(cells)
        d, D, R = self.side, self.out_side, self.radius
        out = self.mask_cells[rng.integers(0, len(self.mask_cells), size=n)]
        if self._bump_mass > 0:
            bumped = rng.random(n) < self._bump_mass / self.z
            m = int(bumped.sum())
            k = _draw(self._bump_cdf, rng, m)
            w = 2 * R + 1
            rows = cells[bumped] // d + k // w
            cols = cells[bumped] % d + k % w
            out[bumped] = rows * D + cols
        return out

    def bump_draws(self, counts: np.ndarray) -> np.ndarray:
        """Work of :meth:`aggregate` per input cell: expected bump draws, capped at the footprint size."""
        nnz = int(np.count_nonzero(self.bump))
        return np.minimum(np.asarray(counts, dtype=float) * (self._bump_mass / self.z), nnz)

    def aggregate(self, counts: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Exact report histogram (flat over the ``(D, D)`` box) of users with ``counts`` per input cell.

        The mixture form of :meth:`sample`, aggregated: Bin(n_x, sum(W - 1)/Z) users of
        cell x take an offset from (W - 1), the rest one Multinomial over the domain's
        cells. A cell's offsets are drawn one by one when it has fewer such users than
        the footprint has cells, else as one Multinomial over the footprint, so the work
        is O(D + |domain| + sum_x min(m_x, |footprint|)) and the histogram has exactly
        the distribution of :meth:`sample` followed by a bincount.
        """
        counts = np.asarray(counts, dtype=np.int64).reshape(-1)
        d, D, R = self.side, self.out_side, self.radius
        w = 2 * R + 1
        hist = np.zeros(D * D, dtype=np.int64)
        bumped = rng.binomial(counts, self._bump_mass / self.z) if self._bump_mass > 0 else np.zeros_like(counts)
        rest = int(counts.sum() - bumped.sum())
        hist[self.mask_cells] += rng.multinomial(rest, np.full(len(self.mask_cells), 1.0 / len(self.mask_cells)))
        if self._bump_mass <= 0:
            return hist
        offsets = np.flatnonzero(self.bump.ravel() > 0)
        probs = self.bump.ravel()[offsets] / self._bump_mass
        cdf = np.cumsum(probs)
        orow, ocol = offsets // w, offsets % w
        few = (bumped > 0) & (bumped < len(offsets))
        cells = np.repeat(np.flatnonzero(few), bumped[few])
        k = np.minimum(np.searchsorted(cdf, rng.random(len(cells)) * cdf[-1], side="right"), len(cdf) - 1)
        hist += np.bincount((cells // d + orow[k]) * D + cells % d + ocol[k], minlength=D * D)
        many = np.flatnonzero(bumped >= len(offsets))
        step = max(1, (1 << 22) // len(offsets))
        for start in range(0, len(many), step):
            rows = many[start:start + step]
            draws = rng.multinomial(bumped[rows], probs)                       # (rows, offsets)
            target = (rows[:, None] // d + orow[None, :]) * D + rows[:, None] % d + ocol[None, :]
            hist += np.bincount(target.ravel(), weights=draws.ravel(), minlength=D * D).astype(np.int64)
        return hist

    def dense(self) -> np.ndarray:
        """P[y, x] over domain cells y (``mask`` order) and input cells x; columns sum to 1."""
        d, D, R = self.side, self.out_side, self.radius
        P = np.empty((len(self.mask_cells), d * d))
        base = self.mask.astype(float)
        for x in range(d * d):
            r, c = divmod(x, d)
            col = base.copy()
            col[r:r + 2 * R + 1, c:c + 2 * R + 1] += self.bump
            P[:, x] = col.ravel()[self.mask_cells] / self.z
        return P


def _fold_tails(kernel: np.ndarray, radius: int) -> np.ndarray:
    """A (2K+1)^2 kernel with every offset beyond ``radius`` along an axis added onto offset +-radius."""
    K = (kernel.shape[0] - 1) // 2
    if radius >= K:
        return kernel
    k = kernel
    for axis in (0, 1):
        k = np.moveaxis(k, axis, 0)
        low, high = k[:K - radius + 1].sum(axis=0), k[K + radius:].sum(axis=0)
        k = np.moveaxis(np.concatenate([low[None], k[K - radius + 1:K + radius], high[None]]), 0, axis)
    return k


class ClampedChannel:
    """A lattice kernel k(delta) with reports remapped to the nearest grid cell.

    P(y | x) = sum over lattice cells z with clamp(z) = y of k(z - x), where clamp moves
    each coordinate into [0, d-1] (the nearest cell of the square grid). ``kernel`` has
    radius K: offsets beyond K carry negligible mass by construction of the caller.
    """

    def __init__(self, side: int, kernel: np.ndarray) -> None:
        self.side = int(side)
        k = np.asarray(kernel, float)
        self.kernel = k / k.sum()
        self.radius = (k.shape[0] - 1) // 2
        # Offsets of d or more cells along an axis clamp to the same border cell from every x in
        # [0, d-1], so the kernel folded to radius min(K, d) gives exactly the same channel; the
        # FFTs then cost O(d^2 log d) however wide the kernel (planar Laplace at small epsilon).
        self._r = min(self.radius, self.side)
        self._k = _fold_tails(self.kernel, self._r)
        self.conv = _Convolver(self._k, self.side + 2 * self._r, _precision(self._k))
        self._cdf = np.cumsum(self._k.ravel())

    @property
    def n_outputs(self) -> int:
        return self.side * self.side

    def _fold(self, a: np.ndarray) -> np.ndarray:
        """Clamp the last two axes into the grid (a leading axis is a stack of trials): lattice rows 0..K sum
        into grid row 0, rows K+d-1.. into row d-1, the rest shift by K; then the same for columns. Written
        into new arrays by slices (no axis moves or concatenations: EM folds every forward step), each border
        sum over the same memory along the same axis as a plain ``a[:K+1].sum(axis)``."""
        d, K = self.side, self._r
        lead = a.shape[:-2]
        if d == 1:                                          # one cell: both borders are it (counted once)
            rows = a[..., :K + 1, :].sum(axis=-2) + a[..., K:, :].sum(axis=-2) - a[..., K, :]
            return (rows[..., :K + 1].sum(axis=-1) + rows[..., K:].sum(axis=-1) - rows[..., K])[..., None, None]
        rows = np.empty(lead + (d, a.shape[-1]))
        np.sum(a[..., :K + 1, :], axis=-2, out=rows[..., 0, :])
        rows[..., 1:d - 1, :] = a[..., K + 1:K + d - 1, :]
        np.sum(a[..., K + d - 1:, :], axis=-2, out=rows[..., d - 1, :])
        out = np.empty(lead + (d, d))
        np.sum(rows[..., :K + 1], axis=-1, out=out[..., 0])
        out[..., 1:d - 1] = rows[..., K + 1:K + d - 1]
        np.sum(rows[..., K + d - 1:], axis=-1, out=out[..., d - 1])
        return out

    def forward(self, f: np.ndarray) -> np.ndarray:
        f = np.asarray(f)
        out = self._fold(self.conv.full_view(f.reshape((-1,) + f.shape[-2:])))
        np.maximum(out, 0.0, out=out)
        return out.reshape(f.shape[:-2] + out.shape[-2:])

    def adjoint(self, r: np.ndarray) -> np.ndarray:
        return self.adjoint_batch(np.asarray(r)[None])[0]

    #: Both maps act on the last two axes, so a ``(T, d, d)`` stack of trials goes through in one pass.
    forward_batch = forward

    def adjoint_batch(self, r: np.ndarray) -> np.ndarray:
        """:meth:`adjoint` of a ``(T, d, d)`` stack: ``r`` edge-padded by the kernel's radius (every clamped
        lattice cell reads its border cell, as ``np.pad(mode="edge")``) straight into the transform's input."""
        K, d = self._r, self.side
        T = r.shape[0]
        target, run = self.conv.corr_view(T, d + 2 * K, d + 2 * K)
        target[:, K:K + d, K:K + d] = r
        target[:, :K, K:K + d] = r[:, :1, :]
        target[:, K + d:, K:K + d] = r[:, -1:, :]
        target[:, :, :K] = target[:, :, K:K + 1]
        target[:, :, K + d:] = target[:, :, K + d - 1:K + d]
        return np.array(run(), dtype=float)

    def sample(self, cells: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        cells = np.asarray(cells, dtype=np.int64)
        d, K = self.side, self._r
        k = _draw(self._cdf, rng, len(cells))
        w = 2 * K + 1
        rows = np.clip(cells // d + k // w - K, 0, d - 1)
        cols = np.clip(cells % d + k % w - K, 0, d - 1)
        return rows * d + cols

    def aggregate_draws(self, counts: np.ndarray) -> float:
        """Work of :meth:`aggregate`: per input cell, its users or (when more) the kernel's support size."""
        return float(np.minimum(np.asarray(counts, dtype=float), np.count_nonzero(self._k)).sum())

    def crowded_cells(self, counts: np.ndarray) -> int:
        """Input cells with at least as many users as the kernel has offsets (one multinomial each in :meth:`aggregate`)."""
        return int(np.count_nonzero(np.asarray(counts) >= np.count_nonzero(self._k)))

    def aggregate(self, counts: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Exact report histogram (flat over the d x d grid) of users with ``counts`` per input cell.

        The n_x offsets of cell x's users are Multinomial(n_x, k) over the (folded) kernel's
        offsets, each then clamped: the same distribution as :meth:`sample` followed by a
        bincount. A cell with fewer users than the kernel has offsets draws them one by one (as
        :meth:`sample`), others take one multinomial over the offsets, so the work is
        O(sum_x min(n_x, |kernel|)) (:meth:`aggregate_draws`): below :meth:`sample`'s O(n)
        only where cells hold more users than the kernel has offsets (wide grids at small
        epsilon never do: the kernel then spans (2d + 1)^2 offsets).
        """
        counts = np.asarray(counts, dtype=np.int64).reshape(-1)
        d, K = self.side, self._r
        w = 2 * K + 1
        flat = self._k.ravel()
        offsets = np.flatnonzero(flat > 0)
        offsets = offsets[np.argsort(-flat[offsets], kind="stable")]   # likeliest first: numpy's multinomial
        probs = flat[offsets] / flat[offsets].sum()                    # stops once every user is placed
        few = (counts > 0) & (counts < len(offsets))
        hist = np.bincount(self.sample(np.repeat(np.flatnonzero(few), counts[few]), rng), minlength=d * d)
        orow, ocol = offsets // w - K, offsets % w - K
        many = np.flatnonzero(counts >= len(offsets))
        step = max(1, (1 << 22) // len(offsets))
        for start in range(0, len(many), step):
            cells = many[start:start + step]
            draws = rng.multinomial(counts[cells], probs)                          # (cells, offsets)
            rows = np.clip(cells[:, None] // d + orow[None, :], 0, d - 1)
            cols = np.clip(cells[:, None] % d + ocol[None, :], 0, d - 1)
            hist += np.bincount((rows * d + cols).ravel(), weights=draws.ravel(), minlength=d * d).astype(np.int64)
        return hist

    def dense(self) -> np.ndarray:
        """P[y, x] summed exactly (no FFT round-off, so tiny probabilities keep their ratios)."""
        d, K = self.side, self._r
        P = np.empty((d * d, d * d))
        box = np.zeros((d + 2 * K, d + 2 * K))
        for x in range(d * d):
            r, c = divmod(x, d)
            box[:] = 0.0
            box[r:r + 2 * K + 1, c:c + 2 * K + 1] = self._k
            P[:, x] = self._fold(box).ravel()
        return P / P.sum(axis=0, keepdims=True)
