"""Row weights of a partitioned table: where each partition's weights come from (a weight
column, the negatives' 1 / rate of a sampled log, or both), checked as an upload checks
them, partition by partition.

A partition may hold only rows of weight zero (its summary then weighs nothing); the
merged summaries refuse a total weight of zero.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from calibcore.data.weights import (
    check_sample_weight,
    negative_rate_weights,
    weight_column_numbers,
)
from calibcore.exceptions import CalibrationInputError


@dataclass(frozen=True)
class Weighting:
    """Where a partition's row weights come from: a weight column, the negatives'
    1 / rate, both (multiplied) or neither.

    Attributes
    ----------
    column : str or None
        A column of non-negative row weights.
    negative_rate : float or None
        Two classes: the fraction of negatives a sampled log kept; they weigh 1 / rate
        (:func:`calibcore.data.negative_rate_weights`), checked by
        :func:`checked_negative_rate`.

    Examples
    --------
    >>> import pandas as pd
    >>> import numpy as np
    >>> part = pd.DataFrame({"w": [1.0, 2.0, 0.5]})
    >>> Weighting("w", 0.5).of(part, np.array([0, 1, 0])).tolist()
    [2.0, 2.0, 1.0]
    >>> Weighting().of(part, np.array([0, 1, 0])) is None
    True
    """

    column: str | None = None
    negative_rate: float | None = None

    @property
    def weighted(self) -> bool:
        return self.column is not None or self.negative_rate is not None

    @property
    def columns(self) -> tuple[str, ...]:
        """The columns to read besides the label and probabilities: the weight column,
        if any."""
        return () if self.column is None else (self.column,)

    def of(self, part: pd.DataFrame, labels: NDArray[np.intp]) -> NDArray[np.float64] | None:
        """The weights of a partition's rows (checked as an upload checks its weight
        column; a partition of weight zero is allowed), or None when unweighted."""
        weights = None
        if self.column is not None:
            weights = weight_column_numbers(part[self.column], self.column, locate=False)
            if not np.all(np.isfinite(weights) & (weights >= 0)):
                check_sample_weight(weights, weights.size, column=self.column)  # raises
        if self.negative_rate is not None:
            rate_weights = negative_rate_weights(labels, self.negative_rate)
            weights = rate_weights if weights is None else weights * rate_weights
        return weights


def checked_negative_rate(negative_rate: float | None,
                          classes: Sequence[str]) -> float | None:
    """``negative_rate``, refused unless the problem is binary and the rate in (0, 1].

    Examples
    --------
    >>> checked_negative_rate(0.25, ["no", "yes"])
    0.25
    """
    if negative_rate is None:
        return None
    if len(classes) != 2:
        raise CalibrationInputError(
            f"negative_rate weights the negatives of a binary problem; this one has "
            f"{len(classes)} classes. Give a weight column instead.",
            code="invalid_negative_rate")
    negative_rate_weights(np.zeros(0, dtype=np.intp), negative_rate)  # checks the rate
    return float(negative_rate)


def row_weights(sample_weight: ArrayLike | None, n_rows: int) -> NDArray[np.float64] | None:
    """Validated row weights (:func:`calibcore.data.check_sample_weight`), zero total
    allowed (a partition may hold only rows of weight zero).

    Examples
    --------
    >>> row_weights([0, 0], 2).tolist()
    [0.0, 0.0]
    """
    if sample_weight is None:
        return None
    weights = np.asarray(sample_weight, dtype=np.float64)
    if weights.shape != (n_rows,) or not np.all(np.isfinite(weights) & (weights >= 0)):
        return check_sample_weight(weights, n_rows)  # raises, naming the bad rows
    return weights


__all__ = ["Weighting", "checked_negative_rate", "row_weights"]
