"""The sums every pass of the partitioned variables keeps of a partition's rows.

Used by :mod:`calibcore.partitioned._variable_summaries`: the top-label view of
:mod:`calibcore.variable` (errors ``1[y != argmax]``, predicted errors ``1 - max_k p_k``)
of each row, summed per value, cell, segment or LOESS group. Without weights the sums
are :data:`STATISTICS`; with row weights (a
:class:`calibcore.partitioned.weighting.Weighting`: a weight column, the negatives'
1 / rate, or both) :data:`WEIGHTED_STATISTICS`, the weighted sums beside the rows and the
weight.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from calibcore._validation import check_predictions
from calibcore.data.views import score_outcome
from calibcore.partitioned.partitions import partition_rows
from calibcore.partitioned.weighting import Weighting

#: Sums kept for every set of rows (columns of the sums' arrays and tables).
STATISTICS = ("n", "error", "predicted_error", "predicted_error_squares")
#: The sums of weighted rows: rows, then weight x error, x predicted error, x its square,
#: and the weight.
WEIGHTED_STATISTICS = (*STATISTICS, "weight")


def _row_statistics(part: pd.DataFrame, label: str, probabilities: Sequence[str],
                    classes: Sequence[str], weighting: Weighting | None = None
                    ) -> NDArray[np.float64]:
    """:data:`STATISTICS` of each row of a partition (rows x 4), or with a weighting
    :data:`WEIGHTED_STATISTICS` then the plain error and predicted error (rows x 7)."""
    weighted = weighting is not None and weighting.weighted
    if part.shape[0] == 0:
        return np.empty((0, len(WEIGHTED_STATISTICS) + 2 if weighted else len(STATISTICS)))
    labels, proba = check_predictions(*partition_rows(part, label, probabilities, classes))
    top = score_outcome(labels, proba, "top_label")
    predicted, errors = 1.0 - top.scores[0], 1.0 - top.outcomes[0]
    if not weighted or weighting is None:
        return np.column_stack([np.ones_like(errors), errors, predicted, predicted * predicted])
    weights = weighting.of(part, labels)
    assert weights is not None
    return np.column_stack([np.ones_like(errors), weights * errors, weights * predicted,
                            weights * predicted * predicted, weights, errors, predicted])


def _sums_of(statistics: NDArray[np.float64]) -> NDArray[np.float64]:
    """The columns of the row statistics that are summed (not the plain error and
    predicted error of weighted rows)."""
    return statistics[:, :len(WEIGHTED_STATISTICS)] if statistics.shape[1] > len(
        WEIGHTED_STATISTICS) else statistics


def _weights_of(statistics: NDArray[np.float64]) -> NDArray[np.float64] | None:
    return statistics[:, 4] if statistics.shape[1] > len(STATISTICS) else None


__all__ = ["STATISTICS", "WEIGHTED_STATISTICS"]
