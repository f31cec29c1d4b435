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

The parts, one job each: ``_footprints`` (the radius and the disks' weights), ``_fft`` (FFT convolution with
cached kernel transforms and per-thread work arrays), ``_channels`` (the channels over them); this face
re-exports every name they define. Tests that change ``WORK_BYTES`` or ``_pfft`` patch ``kernels._fft``, where
they are read.
"""

from __future__ import annotations

from ldpviz.mechanisms.dam.kernels._footprints import (optimal_radius, _offsets, dam_weights, huem_weights,
                                                       huem_continuous_q)
from ldpviz.mechanisms.dam.kernels._fft import (_pfft, FFT_WORKERS, FLOAT32_MAX_RANGE, WORK_BYTES, _WORK,
                                                _work_array, _Convolver, _precision)
from ldpviz.mechanisms.dam.kernels._channels import (output_support, _draw, DiskChannel, _fold_tails, ClampedChannel)
