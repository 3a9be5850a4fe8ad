"""The cell of every row of :func:`calibcore.metrics._resampling.row_cells`, compiled.

A row's cell is its label, the equal-width bin of its top-label score and, for each
class, the sub-cell of its probability (:func:`~calibcore.metrics._resampling.cell_columns`),
numbered as one integer in that lexicographic order. NumPy builds it from one array per
coordinate and the bins' temporaries, about 100 MiB and 0.11 s for 1.5M binary rows;
:func:`cell_keys` computes each row's key in one pass with the same bins
(``searchsorted(side="left") - 1``, clipped, which is what
:func:`calibcore.metrics.assign_bins` gives on any path) and the same arithmetic for the
position within a bin (``(value - left) / (right - left) * per_bin``), so the keys are
the same integers.
"""

from __future__ import annotations

import numba
import numpy as np
from numpy.typing import NDArray

from calibcore.metrics.binning import _walked_bin


@numba.njit(nogil=True, cache=True)
def cell_keys(labels: NDArray[np.int64], proba: NDArray[np.float64],
              edges: NDArray[np.float64], per_bin: int) -> NDArray[np.int64]:
    """The key of each row: ((label * bins + top bin) * S + cell_0) * S + ... with S =
    bins * ``per_bin``, for ``labels`` in [0, K) and ``proba`` of shape (n, K)."""
    n, n_classes = proba.shape
    n_bins = edges.size - 1
    size = n_bins * per_bin
    scale = np.float64(n_bins)  # edges from 0 to 1: a score's bin is about score x bins
    keys = np.empty(n, dtype=np.int64)
    for row in range(n):
        top = proba[row, 0]
        for k in range(1, n_classes):
            top = max(top, proba[row, k])
        key = labels[row] * n_bins + _walked_bin(top, edges, 0.0, scale)
        for k in range(n_classes):
            value = proba[row, k]
            bin_ = _walked_bin(value, edges, 0.0, scale)
            position = (value - edges[bin_]) / (edges[bin_ + 1] - edges[bin_]) * per_bin
            within = min(max(np.int64(np.ceil(position)) - 1, 0), per_bin - 1)
            key = key * size + bin_ * per_bin + within
        keys[row] = key
    return keys
