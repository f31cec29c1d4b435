"""The grid channels: the output domain, DiskChannel (DAM, HUEM) and ClampedChannel (planar Laplace, remapped)."""

from __future__ import annotations

import numpy as np
from scipy import fft as sfft

from ldpviz.errors import require
from ldpviz.mechanisms.dam.kernels._fft import _Convolver, _precision


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
        d, R = self.side, self.radius
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
        """Input cells with at least as many users as the kernel has offsets (one multinomial each in
        :meth:`aggregate`)."""
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
