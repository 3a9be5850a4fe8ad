"""Percentile bootstrap interval of any scalar measure, resampling rows.

:func:`calibcore.metrics.global_measures` is the fast path for the global
measures (blocks of resamples evaluated at once); this one calls the measure once
per resample, so it takes any function of (labels, probabilities).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from calibcore._validation import check_in_range, check_positive_int, check_predictions


@dataclass(frozen=True)
class Interval:
    """A point estimate and its percentile bootstrap interval.

    Attributes
    ----------
    estimate : float
        The measure on the data.
    low, high : float
        Bootstrap percentiles (1 - level) / 2 and (1 + level) / 2.
    n_resamples : int
    confidence_level : float
    """

    estimate: float
    low: float
    high: float
    n_resamples: int
    confidence_level: float


def percentiles(values: NDArray[np.float64], level: float) -> tuple[float, float]:
    low, high = np.quantile(values, [(1.0 - level) / 2.0, (1.0 + level) / 2.0])
    return float(low), float(high)


def bootstrap_interval(
    measure: Callable[[NDArray[np.generic], NDArray[np.float64]], float],
    y_true: ArrayLike,
    y_prob: ArrayLike,
    *,
    n_resamples: int = 200,
    confidence_level: float = 0.95,
    random_state: int | np.random.Generator | None = 0,
) -> Interval:
    """Percentile bootstrap interval of any scalar measure ``measure(y_true, y_prob)``.

    Rows are resampled with replacement (one resample of row indices per call
    of ``measure``). For the global measures, :func:`global_measures` is much
    faster: it evaluates blocks of resamples at once.

    Parameters
    ----------
    measure : callable
        ``measure(y_true, y_prob) -> float``, e.g. a :mod:`calibcore.metrics` function
        (wrap it in ``functools.partial`` to fix options such as ``view``).
    y_true : array-like of shape (n,)
    y_prob : array-like of shape (n,) or (n, K)
        Passed to ``measure`` resampled, in the shape given.
    n_resamples : int, default=200
    confidence_level : float, default=0.95
    random_state : int, Generator or None, default=0
        Seed of the resampling.

    Returns
    -------
    Interval
    """
    labels, _ = check_predictions(y_true, y_prob)
    n_resamples = check_positive_int(n_resamples, "n_resamples")
    level = check_in_range(confidence_level, "confidence_level", low=0, high=1, inclusive=False)
    raw_labels, raw_proba = np.asarray(y_true), np.asarray(y_prob, dtype=np.float64)
    rng = np.random.default_rng(random_state)
    values = np.empty(n_resamples)
    for resample in range(n_resamples):
        rows = rng.integers(0, labels.size, size=labels.size)
        values[resample] = measure(raw_labels[rows], raw_proba[rows])
    low, high = percentiles(values, level)
    return Interval(float(measure(raw_labels, raw_proba)), low, high, n_resamples, level)


__all__ = ["Interval", "bootstrap_interval", "percentiles"]
