"""Confidence intervals of proportions that contain their estimate.

Two intervals of a binomial proportion k / n:

- ``"wilson"``: the Wilson (1927) score interval, the inversion of the score test
  (statsmodels' ``proportion_confint``); close to nominal coverage on average, a little
  below it at some (n, p).
- ``"clopper_pearson"``: the exact interval of Clopper & Pearson (1934), the inversion of
  two one-sided binomial tests: ``[Beta(k, n - k + 1).ppf(alpha / 2),
  Beta(k + 1, n - k).ppf(1 - alpha / 2)]``, 0 below when k = 0 and 1 above when k = n.
  Its coverage is at least the nominal level at every (n, p), at the price of width.

statsmodels' Wilson interval of 0 hits in 7 rows starts at 2.8e-17, above the observed
rate 0 (rounding; in exact arithmetic both the Wilson and the Clopper-Pearson interval
contain k / n for every k). Every interval calibdash shows contains its estimate, so the
bounds are moved onto the estimate where rounding put them past it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

#: ``wilson``: Wilson score interval; ``clopper_pearson``: the exact (beta) interval.
IntervalMethod = Literal["wilson", "clopper_pearson"]
INTERVAL_METHODS: tuple[IntervalMethod, ...] = ("wilson", "clopper_pearson")
#: How captions and legends name each interval.
INTERVAL_NAMES: dict[IntervalMethod, str] = {"wilson": "Wilson",
                                             "clopper_pearson": "Clopper-Pearson"}

Bounds = tuple[NDArray[np.float64], NDArray[np.float64]]


def _wilson(hits: NDArray[np.float64], rows: NDArray[np.float64], alpha: float) -> Bounds:
    low, high = proportion_confint(hits, rows, alpha=alpha, method="wilson")
    return np.asarray(low, dtype=np.float64), np.asarray(high, dtype=np.float64)


def _clopper_pearson(hits: NDArray[np.float64], rows: NDArray[np.float64],
                     alpha: float) -> Bounds:
    """Clopper & Pearson 1934: beta quantiles. ``rows`` may be fractional (a Kish
    effective size), so the hits are held within [0, rows]."""
    hits = np.clip(hits, 0.0, rows)
    with np.errstate(invalid="ignore", divide="ignore"):
        low = np.where(hits > 0, stats.beta.ppf(alpha / 2, np.maximum(hits, 1e-300),
                                                rows - hits + 1), 0.0)
        high = np.where(hits < rows, stats.beta.ppf(1 - alpha / 2, hits + 1,
                                                    np.maximum(rows - hits, 1e-300)), 1.0)
    return low.astype(np.float64), high.astype(np.float64)


_INTERVALS: dict[IntervalMethod, Callable[[NDArray[np.float64], NDArray[np.float64], float],
                                          Bounds]] = {
    "wilson": _wilson, "clopper_pearson": _clopper_pearson}


def proportion_interval(successes: ArrayLike, n: ArrayLike, *, confidence_level: float = 0.95,
                        method: IntervalMethod = "wilson") -> Bounds:
    """Two-sided interval of ``successes / n`` (element-wise), within [0, 1].

    ``successes`` are rounded to whole counts for the interval; the estimate it contains
    is ``successes / n`` as given. ``n`` must be positive (it may be fractional, e.g. a
    Kish effective sample size).

    Examples
    --------
    >>> low, high = proportion_interval([3], [10], method="clopper_pearson")
    >>> round(float(low[0]), 4), round(float(high[0]), 4)
    (0.0667, 0.6525)
    """
    hits = np.asarray(successes, dtype=np.float64)
    rows = np.asarray(n, dtype=np.float64)
    low, high = _INTERVALS[method](np.round(hits), rows, 1 - confidence_level)
    estimate = hits / rows
    return (np.clip(np.minimum(low, estimate), 0.0, 1.0),
            np.clip(np.maximum(high, estimate), 0.0, 1.0))


__all__ = ["INTERVAL_METHODS", "INTERVAL_NAMES", "IntervalMethod", "proportion_interval"]
