"""The prefix sums of :class:`calibcore.metrics.kernel_smoothing.GridSplitter`, compiled.

The splitter needs, for each row of values (and then each row of weights), the running
sums of the values and of value * score over the sorted scores, each behind a leading 0.
NumPy builds them in seven passes over the rows (the rows stacked, two running sums, a
product, a column of zeros put in front of each); :func:`prefix_sums` writes both in
one pass (numba, without the GIL). Each entry is the same product and the same
left-to-right addition ``np.cumsum`` makes, so the arrays are NumPy's to the last bit.
"""

from __future__ import annotations

import numba
import numpy as np
from numpy.typing import NDArray


@numba.njit(nogil=True, cache=True)
def prefix_sums(scores: NDArray[np.float64], values: NDArray[np.float64],
                weights: NDArray[np.float64]
                ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Running sums, shape (b + c, n + 1) each, of the rows of ``values`` ((b, n)) then of
    ``weights`` ((c, n)) and of those rows times ``scores``, each row starting at 0."""
    rows, n = values.shape
    total_rows = rows + weights.shape[0]
    sums = np.empty((total_rows, n + 1))
    moments = np.empty((total_rows, n + 1))
    for row in range(total_rows):
        source = values[row] if row < rows else weights[row - rows]
        total = 0.0
        moment = 0.0
        sums[row, 0] = 0.0
        moments[row, 0] = 0.0
        for i in range(n):
            value = source[i]
            # np.cumsum starts from the first element itself (0.0 + x would turn -0.0 to 0.0)
            total = value if i == 0 else total + value
            product = value * scores[i]
            moment = product if i == 0 else moment + product
            sums[row, i + 1] = total
            moments[row, i + 1] = moment
    return sums, moments
