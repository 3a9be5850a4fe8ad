"""The walk of :func:`calibcore.metrics.consistent.shifted_interval_rows`, compiled.

For a width w, the shift-averaged binned ECE walks up the merged points {v_i - w} and
{v_i} of sorted scores v: NumPy merges them with a stable argsort of the concatenation,
gathers the signed weighted residuals in that order, takes their running sum and the
gaps between consecutive merged points, four passes over 2n values per width and a sort.
:func:`shifted_window` does the same in one pass (numba, without the GIL, so the
bootstrap and the plug-in values on their own threads run side by side): the merge of
two sorted runs taking the shifted point first on ties, as the stable argsort orders
them (the shifted run comes first in the concatenation), and every value computed with
the same floating-point operations in the same order, so the arrays are NumPy's to the
last bit and the measure computed from them is unchanged.
"""

from __future__ import annotations

import numba
import numpy as np
from numpy.typing import NDArray


@numba.njit(nogil=True, cache=True)
def shifted_window(scores: NDArray[np.float64], weighted: NDArray[np.float64], width: float
                   ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """|P(x + w) - P(x)| on each interval of the merged points (shape (b, 2n)) and the
    interval lengths (2n, the last 0), for ascending ``scores`` and rows of ``weighted``
    (weights times residuals), as ``shifted_interval_rows`` computes them."""
    n = scores.size
    rows = weighted.shape[0]
    # (2n, b) in memory, returned as its (b, 2n) transpose: the layout NumPy gives the
    # gathered steps (the gathered axis outermost), which einsum then sums in its order
    window = np.empty((2 * n, rows))
    lengths = np.empty(2 * n)
    running = np.zeros(rows)
    shifted, plain = 0, 0
    previous = 0.0
    for k in range(2 * n):
        # the shifted point first on ties: it comes first in the concatenation
        if plain >= n or (shifted < n and scores[shifted] - width <= scores[plain]):
            point = scores[shifted] - width
            for row in range(rows):
                step = weighted[row, shifted]
                running[row] = step if k == 0 else running[row] + step
                window[k, row] = abs(running[row])
            shifted += 1
        else:
            point = scores[plain]
            for row in range(rows):
                step = -weighted[row, plain]
                running[row] = step if k == 0 else running[row] + step
                window[k, row] = abs(running[row])
            plain += 1
        if k > 0:
            lengths[k - 1] = point - previous
        previous = point
    lengths[2 * n - 1] = 0.0
    return window.T, lengths
