"""The walk of :func:`calibcore.metrics.consistent.shifted_interval_rows`, compiled.

For a width w, the shift-averaged binned ECE integrates |P(x + w) - P(x)| along the
merged points {v_i - w} and {v_i} of sorted scores v. NumPy would merge them with a
stable argsort of the concatenation, gather the signed weighted residuals in that order,
take their running sum and the gaps between consecutive merged points, and sum the
products: four passes over 2n values per width, a sort and two arrays of 2n values per
row. :func:`shifted_window_sums` walks the merge once (numba, without the GIL, so the
bootstrap and the plug-in values on their own threads run side by side) and adds each
interval's |running sum| x gap as it goes: the merge of two sorted runs takes the
shifted point first on ties, as the stable argsort orders them (the shifted run comes
first in the concatenation), so every term is NumPy's; only the order of the final
additions differs (the walk's, against einsum's): 3e-14 relative on 1.5M rows.
"""

from __future__ import annotations

import numba
import numpy as np
from numpy.typing import NDArray


@numba.njit(nogil=True, cache=True)
def shifted_window_sums(scores: NDArray[np.float64], weighted: NDArray[np.float64],
                        width: float) -> NDArray[np.float64]:
    """For each row of ``weighted`` (weights times residuals, shape (b, n)): the sum over
    the intervals between consecutive merged points of |P(x + w) - P(x)| times the
    interval's length, for ascending ``scores``."""
    n = scores.size
    rows = weighted.shape[0]
    totals = np.zeros(rows)
    running = np.zeros(rows)
    shifted, plain = 0, 0
    previous = 0.0
    for k in range(2 * n):
        # the shifted point first on ties: it comes first in the concatenation
        if plain >= n or (shifted < n and scores[shifted] - width <= scores[plain]):
            point = scores[shifted] - width
            column, sign = shifted, 1.0
            shifted += 1
        else:
            point = scores[plain]
            column, sign = plain, -1.0
            plain += 1
        if k > 0:  # the interval that ends here, at the running sum before this step
            gap = point - previous
            for row in range(rows):
                totals[row] += abs(running[row]) * gap
        for row in range(rows):
            running[row] += sign * weighted[row, column]
        previous = point
    return totals
