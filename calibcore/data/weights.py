"""Row weights of a prediction table: their validation, the weights of a log that kept a
fraction of its negatives, and Kish's effective sample size.

A weight says how many examples of the population a row stands for: a survey or
importance weight, or 1 / rate for the negatives of a log that kept that ``rate`` of
them. Every weighted measure of calibcore is the measure of the weighted empirical
distribution, sum_i w_i f(x_i) / sum_i w_i, so integer weights give exactly what the
rows repeated by their weights give.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from calibcore._validation import describe_rows, first_rows
from calibcore.exceptions import CalibrationInputError

__all__ = ["MAX_WEIGHT", "MIN_WEIGHT", "check_sample_weight", "effective_sample_size",
           "negative_rate_weights", "weight_column_numbers"]

#: The smallest positive weight and the largest taken. Weights are relative (every
#: measure divides by their sum), but the sums of squared weights that Kish's effective
#: sizes read overflow float64 from weights of about 1e154 and vanish below about 1e-154,
#: and the measures then come out NaN.
MIN_WEIGHT, MAX_WEIGHT = 1e-100, 1e100


def check_sample_weight(sample_weight: ArrayLike | None, n_rows: int, *,
                        column: str = "sample_weight") -> NDArray[np.float64] | None:
    """Validated row weights: zero, or from :data:`MIN_WEIGHT` to :data:`MAX_WEIGHT`;
    not all zero.

    Parameters
    ----------
    sample_weight : array-like of shape (n,) or None
        The weights; None means every row counts once (and is returned as None).
    n_rows : int
        Rows of the data the weights go with.
    column : str
        The column (or argument) named in error messages.

    Returns
    -------
    ndarray of shape (n,) or None

    Raises
    ------
    CalibrationInputError
        Naming ``column``, the first offending rows and their count.

    Examples
    --------
    >>> check_sample_weight([1, 0, 2.5], 3).tolist()
    [1.0, 0.0, 2.5]
    """
    if sample_weight is None:
        return None
    try:
        weights = np.asarray(sample_weight, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise CalibrationInputError(f"column {column!r} (weight) must hold numbers: {exc}",
                                    code="invalid_weight", column=column) from exc
    if weights.ndim != 1 or weights.size != n_rows:
        raise CalibrationInputError(
            f"column {column!r} (weight) must have one weight per row: {n_rows:,} rows, "
            f"got shape {weights.shape}.", code="invalid_weight", column=column)
    kinds = [(np.isnan(weights), "missing (NaN)"), (np.isinf(weights), "infinite"),
             (weights < 0, "negative"),
             (np.isfinite(weights) & (weights > MAX_WEIGHT), f"larger than {MAX_WEIGHT:g}"),
             ((weights > 0) & (weights < MIN_WEIGHT), f"positive but below {MIN_WEIGHT:g}")]
    bad = np.zeros(weights.size, dtype=bool)
    for mask, _ in kinds:
        bad |= mask
    if bad.any():
        what = " or ".join(name for mask, name in kinds if mask.any())
        raise CalibrationInputError(
            f"column {column!r} (weight) has {what} values in {describe_rows(bad)}; "
            f"weights must be 0 or from {MIN_WEIGHT:g} to {MAX_WEIGHT:g} (only their "
            "ratios count, so a column beyond that can be divided or multiplied by a "
            "constant).", code="invalid_weight", column=column, rows=first_rows(bad),
            count=int(bad.sum()))
    if not (weights > 0).any():
        zero = weights == 0
        raise CalibrationInputError(
            f"column {column!r} (weight) is zero in every row ({describe_rows(zero)}); "
            "at least one row must have a positive weight.", code="invalid_weight",
            column=column, rows=first_rows(zero), count=int(zero.sum()))
    return weights


def negative_rate_weights(y_true: ArrayLike, rate: float) -> NDArray[np.float64]:
    """Weights of a log that kept every positive and a fraction ``rate`` of the negatives:
    1 / rate on the negatives (class index 0 of a binary problem), 1 on the positives.

    Parameters
    ----------
    y_true : array-like of shape (n,)
        Class indices 0 (negative) and 1 (positive).
    rate : float
        The fraction of negatives kept, in (0, 1].

    Examples
    --------
    >>> negative_rate_weights([0, 1, 0], 0.25).tolist()
    [4.0, 1.0, 4.0]
    """
    labels = np.asarray(y_true)
    if not (isinstance(rate, int | float) and 0 < float(rate) <= 1):
        raise CalibrationInputError(
            f"negative_rate must be a number in (0, 1], the fraction of negatives the log "
            f"kept; got {rate!r}.", code="invalid_negative_rate")
    outside = (labels != 0) & (labels != 1)
    if outside.any():
        raise CalibrationInputError(
            "negative_rate weights the negatives of a binary problem (labels 0 and 1); "
            f"this one has other classes in {describe_rows(outside)}.",
            code="invalid_negative_rate", rows=first_rows(outside), count=int(outside.sum()))
    return np.where(labels == 0, 1.0 / float(rate), 1.0)


def effective_sample_size(sample_weight: ArrayLike) -> float:
    """Kish's effective sample size, (sum w)^2 / sum w^2 (Kish 1965): the rows an
    unweighted sample of the same precision would have.

    Equals the number of rows when every weight is the same.

    Examples
    --------
    >>> effective_sample_size([1, 1, 1, 1])
    4.0
    >>> round(effective_sample_size([1, 1, 1, 5]), 3)
    2.286
    """
    weights = np.asarray(sample_weight, dtype=np.float64)
    with np.errstate(over="ignore", under="ignore"):
        total_squared = float(np.square(weights.sum()))
        squares = float(np.dot(weights, weights))
    if 0.0 < squares < np.inf and total_squared < np.inf:
        return total_squared / squares
    # weights near the ends of float64 (1e300, 1e-200): their squares overflow or vanish,
    # and the ratio does not depend on their scale
    largest = float(weights.max(initial=0.0))
    if not 0.0 < largest < np.inf:
        return 0.0
    scaled = weights / largest
    return float(scaled.sum()) ** 2 / float(np.dot(scaled, scaled))


def weight_column_numbers(values: pd.Series, column: str, *,
                          locate: bool = True) -> NDArray[np.float64]:
    """A weight column's values as numbers (NaN where missing), before
    :func:`check_sample_weight` checks them.

    Text that is not a number, and a boolean column, are refused naming the column (and,
    with ``locate``, the rows that hold them: not for a partition of a larger table,
    whose row numbers would mislead).
    """
    numbers = pd.to_numeric(values, errors="coerce")
    text = (numbers.isna() & values.notna()).to_numpy()
    if text.any() or pd.api.types.is_bool_dtype(values):
        if not locate:
            raise CalibrationInputError(
                f"column {column!r} (weight) has non-numeric values; weights must be "
                "non-negative numbers.", code="invalid_weight", column=column)
        bad = text if text.any() else np.ones(values.size, dtype=bool)
        raise CalibrationInputError(
            f"column {column!r} (weight) has non-numeric values in {describe_rows(bad)}; "
            "weights must be non-negative numbers.", code="invalid_weight", column=column,
            rows=first_rows(bad), count=int(bad.sum()))
    return numbers.to_numpy(dtype=np.float64, na_value=np.nan)
