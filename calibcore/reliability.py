"""Reliability diagrams: binned, with per-bin 95% intervals (SPEC §4.1)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray
from statsmodels.stats.proportion import proportion_confint

from calibcore._validation import check_in_range, check_positive_int, check_predictions
from calibcore.binning import Binning, assign_bins, bin_edges
from calibcore.exceptions import CalibrationInputError
from calibcore.views import View, score_outcome

IntervalMethod = Literal["wilson", "beta"]
_INTERVAL_METHODS: tuple[IntervalMethod, ...] = ("wilson", "beta")


@dataclass(frozen=True)
class BinnedReliability:
    """A binned reliability diagram of one binary problem.

    Attributes
    ----------
    label : str
        Which problem ("top label", "class 3", ...).
    edges : ndarray of shape (B + 1,)
        Bin edges on [0, 1].
    count : ndarray of shape (B,)
        Rows per bin (empty bins included, with NaN statistics).
    mean_score : ndarray of shape (B,)
        Mean confidence (score) per bin.
    observed : ndarray of shape (B,)
        Observed frequency of the outcome per bin.
    observed_low, observed_high : ndarray of shape (B,)
        Two-sided confidence interval of ``observed`` (Wilson or Clopper-Pearson).
    n : int
        Rows in total.
    confidence_level : float
        Coverage of the interval, e.g. 0.95.
    """

    label: str
    edges: NDArray[np.float64]
    count: NDArray[np.int64]
    mean_score: NDArray[np.float64]
    observed: NDArray[np.float64]
    observed_low: NDArray[np.float64]
    observed_high: NDArray[np.float64]
    n: int
    confidence_level: float


def binned_reliability(
    y_true: ArrayLike,
    y_prob: ArrayLike,
    *,
    n_bins: int = 15,
    binning: Binning = "equal_width",
    view: View = "top_label",
    interval: IntervalMethod = "wilson",
    confidence_level: float = 0.95,
) -> list[BinnedReliability]:
    """Per-bin counts, mean score, observed rate and its interval.

    Parameters
    ----------
    y_true, y_prob, n_bins, binning, view
        As in :func:`calibcore.metrics.expected_calibration_error`.
    interval : {"wilson", "beta"}
        Wilson score interval or Clopper-Pearson ("beta") via statsmodels.
    confidence_level : float, default=0.95

    Returns
    -------
    list of BinnedReliability
        One per binary problem of the view (one, or K for the classwise view).
    """
    labels, proba = check_predictions(y_true, y_prob)
    n_bins = check_positive_int(n_bins, "n_bins")
    level = check_in_range(confidence_level, "confidence_level", low=0, high=1, inclusive=False)
    if interval not in _INTERVAL_METHODS:
        raise CalibrationInputError(
            f"interval must be one of {', '.join(_INTERVAL_METHODS)}; got {interval!r}."
        )
    problems = score_outcome(labels, proba, view)
    return [
        _one_diagram(scores, outcomes, name, n_bins, binning, interval, level)
        for scores, outcomes, name in zip(
            problems.scores, problems.outcomes, problems.labels, strict=True
        )
    ]


def _one_diagram(
    scores: NDArray[np.float64],
    outcomes: NDArray[np.float64],
    name: str,
    n_bins: int,
    binning: Binning,
    interval: IntervalMethod,
    level: float,
) -> BinnedReliability:
    edges = bin_edges(scores, n_bins, binning)
    index = assign_bins(scores, edges)
    size = edges.size - 1
    count = np.bincount(index, minlength=size)
    successes = np.bincount(index, weights=outcomes, minlength=size)
    score_sums = np.bincount(index, weights=scores, minlength=size)
    filled = count > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_score = np.where(filled, score_sums / count, np.nan)
        observed = np.where(filled, successes / count, np.nan)
    low = np.full(size, np.nan)
    high = np.full(size, np.nan)
    if filled.any():
        low[filled], high[filled] = proportion_confint(
            np.round(successes[filled]), count[filled], alpha=1 - level, method=interval
        )
    return BinnedReliability(
        label=name,
        edges=edges,
        count=count.astype(np.int64),
        mean_score=mean_score,
        observed=observed,
        observed_low=np.clip(low, 0.0, 1.0),
        observed_high=np.clip(high, 0.0, 1.0),
        n=int(scores.size),
        confidence_level=level,
    )
