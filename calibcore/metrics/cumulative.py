"""Cumulative calibration errors: the Kolmogorov-Smirnov and Kuiper statistics of the
cumulative difference between outcomes and scores.

Sort the rows by score and walk along them adding up what happened minus what was
predicted: h_i = (1/n) sum_{j <= i} (o_j - v_j). A calibrated model's curve is a
random walk around 0; a model that predicts too high at some scores drifts down across
them, and the slope of the curve is the miscalibration there, with no bins and no
bandwidth. Gupta, Rahimi, Ajanthan, Mensink, Sminchisescu & Hartley (2021, "Calibration
of Neural Networks using Splines", ICLR) take its largest deviation from 0 as the KS
calibration error,

    KS = max_i |h_i|,

and the Kuiper statistic adds the largest excursions on either side,

    Kuiper = max(0, max_i h_i) + max(0, -min_i h_i)

(Kuiper 1960; the curve starts at h_0 = 0, so this is its range), which sees a model
over-confident at some scores and under-confident at others, whose curve goes up and
then down again, where KS sees only the larger of the two.

Rows that share a score have no order, so the curve is read where a run of equal scores
ends (with distinct scores, at every row, as in Gupta et al.); this makes both
statistics functions of the grouped rows, which is how the test of calibration
(:func:`calibcore.metrics.consistency_resampling_test` with ``statistic="ks"`` or
``"kuiper"``) evaluates them on its resamples. With row weights every 1/n is a 1/sum of
weights and every row's difference is weighted.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from calibcore.data.views import View
from calibcore.metrics.consistent import _mean_over_problems

__all__ = [
    "cumulative_curve",
    "ks_calibration_error",
    "ks_of_curve",
    "ks_rows",
    "kuiper_calibration_error",
    "kuiper_of_curve",
    "kuiper_rows",
]


def cumulative_curve(scores: NDArray[np.float64], residuals: NDArray[np.float64],
                     weights: NDArray[np.float64]) -> NDArray[np.float64]:
    """h at the end of each run of equal scores, for each row of weights: shape (b, m).

    ``scores`` ascending, ``residuals`` v - o in the same order, ``weights`` of shape
    (b, n); h = cumsum(w (o - v)) / sum w.
    """
    steps = np.cumsum(-weights * residuals, axis=1) / weights.sum(axis=1, keepdims=True)
    ends = np.append(scores[1:] != scores[:-1], True)
    return steps[:, ends]


def ks_rows(scores: NDArray[np.float64], residuals: NDArray[np.float64],
            weights: NDArray[np.float64]) -> NDArray[np.float64]:
    """KS calibration error max |h| for each row of weights (Gupta et al. 2021)."""
    return ks_of_curve(cumulative_curve(scores, residuals, weights))


def ks_of_curve(curve: NDArray[np.float64]) -> NDArray[np.float64]:
    """:func:`ks_rows` from the rows' :func:`cumulative_curve`."""
    return np.abs(curve).max(axis=1)


def kuiper_rows(scores: NDArray[np.float64], residuals: NDArray[np.float64],
                weights: NDArray[np.float64]) -> NDArray[np.float64]:
    """Kuiper statistic max(0, max h) + max(0, -min h) for each row of weights."""
    return kuiper_of_curve(cumulative_curve(scores, residuals, weights))


def kuiper_of_curve(curve: NDArray[np.float64]) -> NDArray[np.float64]:
    """:func:`kuiper_rows` from the rows' :func:`cumulative_curve`."""
    return np.maximum(curve.max(axis=1), 0.0) + np.maximum(-curve.min(axis=1), 0.0)


def ks_calibration_error(y_true: ArrayLike, y_prob: ArrayLike, *, view: View = "top_label",
                         sample_weight: ArrayLike | None = None) -> float:
    """KS calibration error: the largest deviation of the cumulative difference between
    outcomes and scores from 0, max_i |(1/n) sum_{j <= i} (o_j - v_j)| over the rows
    sorted by score (Gupta, Rahimi, Ajanthan, Mensink, Sminchisescu & Hartley 2021).

    Parameters
    ----------
    y_true : array-like of shape (n,)
        Class indices 0..K-1.
    y_prob : array-like of shape (n,) or (n, K)
        P(class 1) for a binary problem, or class probabilities.
    view : {"top_label", "positive", "classwise"}
        Which scores are calibrated; classwise averages over classes.
    sample_weight : array-like of shape (n,), optional
        Row weights: h_i = sum_{j <= i} w_j (o_j - v_j) / sum_j w_j.

    Returns
    -------
    float
        In [0, 1]; 0 when every outcome equals its score.

    Examples
    --------
    >>> round(ks_calibration_error([1, 0, 1, 1], [0.8, 0.2, 0.6, 0.9], view="positive"), 6)
    0.125
    """
    return _mean_over_problems(y_true, y_prob, view, ks_rows, sample_weight)


def kuiper_calibration_error(y_true: ArrayLike, y_prob: ArrayLike, *,
                             view: View = "top_label",
                             sample_weight: ArrayLike | None = None) -> float:
    """Kuiper statistic of the cumulative difference between outcomes and scores:
    max(0, max_i h_i) + max(0, -min_i h_i), h_i = (1/n) sum_{j <= i} (o_j - v_j) over
    the rows sorted by score (Kuiper 1960, on the curve of Gupta et al. 2021).

    Parameters
    ----------
    y_true, y_prob, view, sample_weight
        As in :func:`ks_calibration_error`.

    Returns
    -------
    float
        In [0, 1]; at least the KS calibration error, at most twice it.

    Examples
    --------
    >>> y, p = [1, 0, 0, 1], [0.2, 0.4, 0.6, 0.8]   # the curve rises, then falls below 0
    >>> ks_calibration_error(y, p, view="positive"), kuiper_calibration_error(
    ...     y, p, view="positive")
    (0.2, 0.25)
    """
    return _mean_over_problems(y_true, y_prob, view, kuiper_rows, sample_weight)
