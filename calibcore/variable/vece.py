"""Variable-based calibration: VECE, LOESS calibration curves, variable ranking.

Kelly & Smyth (2023), "Variable-Based Calibration for Machine Learning Classifiers"
(AAAI; arXiv:2209.15154). As in the paper, everything uses the top-label view by
default: the *predicted error* of a row is ``1 - max_k p_k`` and its *error* is
``1[y != argmax_k p_k]``. For a binary model ``view="positive"`` gives the counterpart
on P(class 1): predicted error ``1 - p_1`` and error ``1[y != 1]``, so the curves follow
P(class 1) against the frequency of class 1 along V. The top-label view folds a binary
problem at 1/2 and can hide a P(class 1) that runs high (or low) everywhere.

* VCE(v) is the gap between the expected error and the expected predicted
  error given V = v (eq. 4-5); VECE its expectation over V (eq. 6), estimated
  with equal-mass bins over V (eq. 7):
  ``VECE = sum_b (n_b / n) |mean predicted error_b - mean error_b|``.
* The calibration plot (Figure 1b) shows LOESS curves of both against V with
  95% bands (:mod:`calibcore.variable.smoothing`); ``VCE(v*)`` is their largest gap.
* The ranking orders variables by VECE, with a permutation p-value (beyond
  the paper) so that signal can be told from noise.

Row weights (``sample_weight``, e.g. survey weights or 1 / rate on the negatives of a log
that kept a fraction of them) make every quantity that of the weighted rows: each bin's
weighted means, weighted by its share of the total weight; equal-weight bins; LOESS
windows that hold a share ``span`` of the weight, with tricube x row weights. Integer weights
give what the rows repeated by their weights give (see each function).

Missing values of V (NaN, None, +/-inf) are left out: n counts the rows used. The curves
themselves are drawn by :mod:`calibcore.variable._curves` (shared with the partitioned
path); their public names are re-exported here.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray
from scipy.stats import t as student_t

from calibcore._validation import check_in_range, check_positive_int
from calibcore.exceptions import CalibrationInputError
from calibcore.metrics.proportions import proportion_interval
from calibcore.variable._binning import (
    Variable,
    VariableKind,
    bin_index,
    bin_labels,
    binned_vece,
    check_kind,
    prepare_variable,
    used_weights,
)
from calibcore.variable._curves import (
    CURVE_RANGES,
    CurveRange,
    Errors,
    LoessCurves,
    VariableView,
    variable_curves,
    view_errors,
)

__all__ = [
    "CURVE_RANGES",
    "CurveRange",
    "LoessCurves",
    "VariableKind",
    "VariableView",
    "loess_curves",
    "variable_bins",
    "variable_ece",
    "variable_eces",
]

def variable_ece(
    v: ArrayLike,
    y_true: ArrayLike,
    y_prob: ArrayLike,
    *,
    n_bins: int = 10,
    kind: VariableKind = "auto",
    view: VariableView = "top_label",
    sample_weight: ArrayLike | None = None,
) -> float:
    """Variable-based expected calibration error, VECE (Kelly & Smyth 2023, eq. 7).

    Parameters
    ----------
    v : array-like of shape (n,)
        The variable; missing values are left out (n then counts the rest).
    y_true : array-like of shape (n,)
        Class indices 0..K-1.
    y_prob : array-like of shape (n,) or (n, K)
        P(class 1) for a binary problem, or class probabilities.
    n_bins : int, default=10
        Equal-mass bins over a numeric V, with ``pandas.qcut(v, n_bins,
        duplicates="drop")`` semantics (so ties may leave fewer bins).
    kind : {"auto", "numeric", "categorical"}
        "categorical" uses one bin per distinct value; "auto" does so for
        strings, booleans and categoricals and bins numbers. (:func:`rank_variables`
        also treats low-cardinality numbers as categorical and reports the
        ``kind`` it used; pass it here to reproduce its VECE.)

    view : {"top_label", "positive"}, default="top_label"
        The paper's top-label errors, or (binary only) those of P(class 1).
    sample_weight : array-like of shape (n,), optional
        Non-negative row weights. The bins then hold equal shares of the weight
        (weighted quantiles of V: for integer weights those of the rows repeated by their
        weights, bit for bit) and VECE is ``sum_b (W_b / W) |weighted mean predicted
        error_b - weighted mean error_b|`` with W_b the bin's weight and W the total, so
        integer weights give the VECE of the repeated rows. Rows whose V is missing are
        left out with their weight; at least one row left must weigh more than zero.

    Returns
    -------
    float
        ``sum_b (n_b / n) |mean predicted error_b - mean error_b|`` in [0, 1].
    """
    errors = view_errors(y_true, y_prob, view)
    n_bins = check_positive_int(n_bins, "n_bins")
    variable = prepare_variable(v, errors.predicted.size, check_kind(kind), "v")
    if not variable.used.any():
        raise CalibrationInputError("v has no non-missing values; VECE is undefined.", column="v")
    weights = used_weights(sample_weight, variable.used)
    index, size = bin_index(variable, n_bins, weights)
    residual = (errors.predicted - errors.actual)[variable.used]
    return binned_vece(index, size, residual, weights)


def variable_eces(
    variables: Sequence[ArrayLike],
    y_true: ArrayLike,
    y_probs: Sequence[ArrayLike],
    *,
    n_bins: int = 10,
    kind: VariableKind = "auto",
    sample_weight: ArrayLike | None = None,
) -> NDArray[np.float64]:
    """VECE of several variables for several sets of probabilities of the same rows.

    Entry ``[i, j]`` equals ``variable_ece(variables[i], y_true, y_probs[j], ...)``;
    the bins of each variable are found once and the errors of each set of
    probabilities once (sorting V and validating the probabilities are most of the
    cost on large inputs).

    Parameters
    ----------
    variables : sequence of array-like of shape (n,)
        The variables; missing values are left out, and each must have some left.
    y_true, n_bins, kind
        As in :func:`variable_ece` (``kind`` applies to every variable).
    y_probs : sequence of array-like of shape (n,) or (n, K)
        Probabilities to score (e.g. uncalibrated and recalibrated).
    sample_weight : array-like of shape (n,), optional
        Row weights, as in :func:`variable_ece`.

    Returns
    -------
    ndarray of shape (len(variables), len(y_probs))
    """
    n_bins = check_positive_int(n_bins, "n_bins")
    kind = check_kind(kind)
    residuals = []
    for y_prob in y_probs:
        errors = view_errors(y_true, y_prob)
        residuals.append(errors.predicted - errors.actual)
    table = np.empty((len(variables), len(residuals)))
    if not residuals:
        return table
    for row, v in enumerate(variables):
        variable = prepare_variable(v, residuals[0].size, kind, "v")
        if not variable.used.any():
            raise CalibrationInputError("v has no non-missing values; VECE is undefined.",
                                        column="v")
        weights = used_weights(sample_weight, variable.used)
        index, size = bin_index(variable, n_bins, weights)
        table[row] = [binned_vece(index, size, residual[variable.used], weights)
                      for residual in residuals]
    return table


def variable_bins(
    v: ArrayLike,
    y_true: ArrayLike,
    y_prob: ArrayLike,
    *,
    n_bins: int = 10,
    kind: VariableKind = "auto",
    confidence_level: float = 0.95,
    view: VariableView = "top_label",
    sample_weight: ArrayLike | None = None,
) -> pd.DataFrame:
    """Per-bin (or per-category) error and predicted error, the table behind VECE.

    Parameters
    ----------
    v, y_true, y_prob, n_bins, kind
        As in :func:`variable_ece`.
    confidence_level : float, default=0.95
        Coverage of the intervals.

    view : {"top_label", "positive"}, default="top_label"
        The paper's top-label errors, or (binary only) those of P(class 1).

    Returns
    -------
    pandas.DataFrame
        One row per non-empty bin, in order of V (categories sorted), with
        columns ``bin`` (the category, or an interval label), ``left``,
        ``right`` (bin edges; NaN for categories), ``n``, ``error`` with its
        Wilson interval ``error_low``/``error_high``, ``predicted_error`` with
        a t interval of its mean ``predicted_error_low``/``predicted_error_high``
        (NaN for a single row), and ``gap = error - predicted_error``
        (positive: over-confident).

        With ``sample_weight`` (as in :func:`variable_ece`) the bins hold equal shares
        of the weight, ``error`` and ``predicted_error`` are weighted means, and two
        columns are added: ``weight`` (the bin's total weight) and ``n_eff``, its Kish
        effective size ``(sum w)^2 / sum w^2`` (Kish 1965), on which the intervals are
        computed (so weights that add up to many rows do not narrow them); ``n`` still
        counts rows.
    """
    errors = view_errors(y_true, y_prob, view)
    n_bins = check_positive_int(n_bins, "n_bins")
    level = check_in_range(confidence_level, "confidence_level", low=0, high=1, inclusive=False)
    variable = prepare_variable(v, errors.predicted.size, check_kind(kind), "v")
    weights = (used_weights(sample_weight, variable.used) if sample_weight is not None
               and variable.used.any() else None)
    if weights is not None:
        return _weighted_bins(variable, errors, n_bins, level, weights)
    index, size = bin_index(variable, n_bins)
    counts = np.bincount(index, minlength=size)
    filled = counts > 0
    wrong = np.bincount(index, weights=errors.actual[variable.used], minlength=size)[filled]
    predicted = errors.predicted[variable.used]
    total = np.bincount(index, weights=predicted, minlength=size)[filled]
    total_squares = np.bincount(index, weights=predicted * predicted, minlength=size)[filled]
    n = counts[filled]
    error_low, error_high = proportion_interval(wrong, n, confidence_level=level)
    mean = total / n
    with np.errstate(invalid="ignore", divide="ignore"):
        spread = np.sqrt(np.maximum(total_squares - n * mean * mean, 0.0) / (n - 1))
        half_width = student_t.ppf(0.5 + level / 2, np.maximum(n - 1, 1)) * spread / np.sqrt(n)
    half_width = np.where(n > 1, half_width, np.nan)
    labels, left, right = bin_labels(variable, n_bins, filled)
    return pd.DataFrame(
        {
            "bin": labels,
            "left": left,
            "right": right,
            "n": n.astype(np.int64),
            "error": wrong / n,
            "error_low": np.asarray(error_low, dtype=np.float64),
            "error_high": np.asarray(error_high, dtype=np.float64),
            "predicted_error": mean,
            "predicted_error_low": mean - half_width,
            "predicted_error_high": mean + half_width,
            "gap": wrong / n - mean,
        }
    )


def _weighted_bins(variable: Variable, errors: Errors, n_bins: int, level: float,
                   weights: NDArray[np.float64]) -> pd.DataFrame:
    """:func:`variable_bins` with row weights: weighted means, Kish-sized intervals."""
    index, size = bin_index(variable, n_bins, weights)
    counts = np.bincount(index, minlength=size)
    mass = np.bincount(index, weights=weights, minlength=size)
    filled = mass > 0
    squares = np.bincount(index, weights=weights * weights, minlength=size)[filled]
    mass, n = mass[filled], counts[filled]
    n_eff = mass * mass / squares
    actual = errors.actual[variable.used]
    predicted = errors.predicted[variable.used]
    error = np.bincount(index, weights=weights * actual, minlength=size)[filled] / mass
    mean = np.bincount(index, weights=weights * predicted, minlength=size)[filled] / mass
    second = np.bincount(index, weights=weights * predicted * predicted,
                         minlength=size)[filled] / mass
    error_low, error_high = proportion_interval(error * n_eff, n_eff, confidence_level=level)
    with np.errstate(invalid="ignore", divide="ignore"):
        # the weighted variance with Kish's n_eff in place of n (n_eff / (n_eff - 1) times
        # the weighted second central moment), the standard error of the mean sd / sqrt(n_eff)
        spread = np.sqrt(np.maximum(second - mean * mean, 0.0) * n_eff / (n_eff - 1.0))
        half_width = (student_t.ppf(0.5 + level / 2, np.maximum(n_eff - 1.0, 1.0)) * spread
                      / np.sqrt(n_eff))
    half_width = np.where(n_eff > 1.0 + 1e-9, half_width, np.nan)
    labels, left, right = bin_labels(variable, n_bins, filled, weights)
    return pd.DataFrame(
        {
            "bin": labels,
            "left": left,
            "right": right,
            "n": n.astype(np.int64),
            "error": error,
            "error_low": np.asarray(error_low, dtype=np.float64),
            "error_high": np.asarray(error_high, dtype=np.float64),
            "predicted_error": mean,
            "predicted_error_low": mean - half_width,
            "predicted_error_high": mean + half_width,
            "gap": error - mean,
            "weight": mass,
            "n_eff": n_eff,
        }
    )


def loess_curves(
    v: ArrayLike,
    y_true: ArrayLike,
    y_prob: ArrayLike,
    *,
    span: float = 0.8,
    n_points: int = 500,
    confidence_level: float = 0.95,
    n_histogram_bins: int = 30,
    random_state: int | None = 0,
    curve_range: CurveRange = "5-95",
    view: VariableView = "top_label",
    sample_weight: ArrayLike | None = None,
) -> LoessCurves:
    """LOESS curves of error and predicted error against a numeric variable.

    The paper's variable-based calibration plot (Kelly & Smyth 2023, Figure 1b and Appendix
    B): local quadratic LOESS (:func:`calibcore.variable.loess_many`) of
    ``1[y != argmax]`` and of ``1 - confidence`` on V, evaluated at
    ``n_points`` equally spaced values between the 5th and 95th percentiles of
    V (or a wider ``curve_range``), with pointwise bands
    ``fit +/- t(0.975, df) s ||l(x)||``. The fits use every row whatever the
    range; the range only chooses where they are evaluated and drawn.

    The curves are not estimated (NaN) strictly inside a *wide gap* of V: two
    consecutive values a < b with no row between them and
    ``b - a > 2 min(r-(a), r+(b))``, where ``r-(a)`` is the distance from a down to its
    ``floor(n * span)``-th nearest row at or below a, ``r+(b)`` likewise up from b
    (ties: half-way to the next value beyond). There no row is near and the local
    quadratic only extrapolates the rows of one side, so ``vce_max`` and ``v_star`` are
    never taken there (a sentinel such as 999 beside values in [0, 60] no longer puts v*
    in between); the gaps are listed in ``LoessCurves.gaps``. Nor are they estimated
    where the fit is less certain than one row (``||l(x)||^2 > 1``).

    Parameters
    ----------
    v : array-like of shape (n,)
        A numeric variable; missing values are left out. (Categorical
        variables have no curve: see :func:`variable_bins`.)
    y_true, y_prob
        As in :func:`variable_ece`.
    span : float, default=0.8
        LOESS span (fraction of rows in each neighbourhood).
    n_points : int, default=500
        Evaluation points.
    confidence_level : float, default=0.95
        Pointwise coverage of the bands.
    n_histogram_bins : int, default=30
        Equal-width bins of the histogram of V drawn under the curves (an
        integer-valued V gets one bin per integer instead; see
        :class:`LoessCurves`).
    random_state : int or None, default=0
        Seed of the subsample used for the band statistics of large inputs.
    curve_range : {"5-95", "1-99", "all"}, default="5-95"
        Quantiles of V the curves run between: the 5th-95th or 1st-99th
        percentiles, or the minimum to the maximum.

    view : {"top_label", "positive"}, default="top_label"
        The paper's top-label errors, or (binary only) those of P(class 1).
    sample_weight : array-like of shape (n,), optional
        Non-negative row weights. Each local fit is then weighted least squares with
        weights tricube x row weight, its window the nearest rows holding a share
        ``span`` of the weight (``floor(W * span)`` for integer weights, W the total, so
        that they give the curves of the rows repeated by their weights: the fits exactly,
        and the bands too while both are computed exactly); the range's quantiles are
        weighted, the band's residual scale and degrees of freedom those of the weighted
        fit (:func:`calibcore.variable.loess_many`). The gap rule counts weight as it
        counts rows; the histogram still counts rows.

    Returns
    -------
    LoessCurves
    """
    errors = view_errors(y_true, y_prob, view)
    n_points = check_positive_int(n_points, "n_points")
    n_histogram_bins = check_positive_int(n_histogram_bins, "n_histogram_bins")
    if curve_range not in CURVE_RANGES:
        raise CalibrationInputError(f"curve_range must be one of {', '.join(CURVE_RANGES)}; "
                                    f"got {curve_range!r}.")
    variable = prepare_variable(v, errors.predicted.size, "numeric", "v")
    if not variable.used.any():
        raise CalibrationInputError("v has no non-missing values; there is nothing to smooth.")
    weights = used_weights(sample_weight, variable.used)
    return variable_curves(variable, errors, span, n_points, confidence_level, n_histogram_bins,
                           random_state, curve_range, weights)
