"""Confidence intervals of proportions that contain their estimate.

statsmodels' Wilson interval of 0 hits in 7 rows starts at 2.8e-17, above the observed
rate 0 (rounding; in exact arithmetic both the Wilson and the Clopper-Pearson interval
contain k / n for every k). Every interval calibdash shows contains its estimate, so the
bounds are moved onto the estimate where rounding put them past it.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray
from statsmodels.stats.proportion import proportion_confint

#: ``wilson``: Wilson score interval; ``beta``: Clopper-Pearson.
IntervalMethod = Literal["wilson", "beta"]
INTERVAL_METHODS: tuple[IntervalMethod, ...] = ("wilson", "beta")


def proportion_interval(successes: ArrayLike, n: ArrayLike, *, confidence_level: float = 0.95,
                        method: IntervalMethod = "wilson"
                        ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Two-sided interval of ``successes / n`` (element-wise), within [0, 1].

    ``successes`` are rounded to whole counts for the interval; the estimate it contains
    is ``successes / n`` as given. ``n`` must be positive.
    """
    hits = np.asarray(successes, dtype=np.float64)
    rows = np.asarray(n, dtype=np.float64)
    low, high = proportion_confint(np.round(hits), rows, alpha=1 - confidence_level,
                                   method=method)
    estimate = hits / rows
    return (np.clip(np.minimum(low, estimate), 0.0, 1.0),
            np.clip(np.maximum(high, estimate), 0.0, 1.0))


__all__ = ["INTERVAL_METHODS", "IntervalMethod", "proportion_interval"]
