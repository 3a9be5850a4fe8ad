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

Missing values of V (NaN, None, +/-inf) are left out: n counts the rows used. The curves
themselves are drawn by :mod:`calibcore.variable._curves` (shared with the partitioned
path); their public names are re-exported here.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from typing import TypeVar

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray
from scipy.stats import t as student_t

from calibcore._progress import Heartbeat
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
    feature_table,
    prepare_variable,
)
from calibcore.variable._curves import (
    CURVE_RANGES,
    CurveRange,
    Errors,
    LoessCurves,
    VariableView,
    curve_points,
    variable_curves,
    view_errors,
)
from calibcore.variable._loess_moments import compile_fit_only
from calibcore.variable._permutation import NullCache, compile_shuffle, permutation_p_value
from calibcore.variable.smoothing import (
    MAX_LEVERAGE,
    MIN_NEIGHBOURS,
    N_EXACT,
    loess_fit,
    loess_leverage,
)

__all__ = [
    "CURVE_RANGES",
    "CurveRange",
    "LoessCurves",
    "VariableKind",
    "VariableView",
    "loess_curves",
    "rank_variables",
    "variable_bins",
    "variable_ece",
    "variable_eces",
]

#: Columns of the ranking table, in order.
RANKING_COLUMNS = ("variable", "kind", "vece", "vce_max", "v_star", "p_value", "n", "n_missing")


def variable_ece(
    v: ArrayLike,
    y_true: ArrayLike,
    y_prob: ArrayLike,
    *,
    n_bins: int = 10,
    kind: VariableKind = "auto",
    view: VariableView = "top_label",
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
    index, size = bin_index(variable, n_bins)
    residual = (errors.predicted - errors.actual)[variable.used]
    return binned_vece(index, size, residual)


def variable_eces(
    variables: Sequence[ArrayLike],
    y_true: ArrayLike,
    y_probs: Sequence[ArrayLike],
    *,
    n_bins: int = 10,
    kind: VariableKind = "auto",
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
        index, size = bin_index(variable, n_bins)
        table[row] = [binned_vece(index, size, residual[variable.used])
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
    """
    errors = view_errors(y_true, y_prob, view)
    n_bins = check_positive_int(n_bins, "n_bins")
    level = check_in_range(confidence_level, "confidence_level", low=0, high=1, inclusive=False)
    variable = prepare_variable(v, errors.predicted.size, check_kind(kind), "v")
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
) -> LoessCurves:
    """LOESS curves of error and predicted error against a numeric variable.

    The paper's variable-based calibration plot (Kelly & Smyth 2023, Figure 1b and Appendix
    B): local quadratic LOESS (:func:`calibcore.variable.loess_many`) of
    ``1[y != argmax]`` and of ``1 - confidence`` on V, evaluated at
    ``n_points`` equally spaced values between the 5th and 95th percentiles of
    V (or a wider ``curve_range``), with pointwise bands
    ``fit +/- t(0.975, df) s ||l(x)||``. The fits use every row whatever the
    range; the range only chooses where they are evaluated and drawn.

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
    return variable_curves(variable, errors, span, n_points, confidence_level, n_histogram_bins,
                           random_state, curve_range)


def rank_variables(
    features: object,
    y_true: ArrayLike,
    y_prob: ArrayLike,
    *,
    n_bins: int = 10,
    span: float = 0.8,
    n_points: int = 500,
    n_permutations: int = 200,
    max_categories: int = 10,
    random_state: int | None = 0,
    progress: Callable[[int, int], None] | None = None,
    view: VariableView = "top_label",
) -> pd.DataFrame:
    """Rank variables by VECE, with VCE(v*), v* and a permutation p-value.

    As in Kelly & Smyth 2023, Table 1.

    Parameters
    ----------
    features : pandas.DataFrame or array-like of shape (n, n_variables)
        One column per variable (columns of an array are named ``x0, x1, ...``).
        Strings, booleans, categoricals and numeric columns with at most
        ``max_categories`` distinct values are *categorical*: one bin per
        category. Other columns are *numeric*: equal-mass bins and LOESS curves.
    y_true, y_prob
        As in :func:`variable_ece`.
    n_bins : int, default=10
        Equal-mass bins for numeric variables.
    span, n_points
        As in :func:`loess_curves` (used for ``vce_max`` and ``v_star``).
    n_permutations : int, default=200
        Permutations of V against the (confidence, error) pairs; 0 skips the
        test (``p_value`` NaN).
    max_categories : int, default=10
        Numeric columns with at most this many distinct values are categorical.
    random_state : int or None, default=0
        Seed of the permutations (every variable uses the same seed, so a
        variable's p-value does not depend on the other columns).
    progress : callable, optional
        Called as ``progress(done, total)`` at most every 0.25 s, ``done`` rising
        from 0 to ``total`` (the number of variables) with the curves and the
        permutations (which are drawn in a background thread meanwhile), and
        ``(total, total)`` at the end; an exception raised by it stops the ranking
        and propagates.

    view : {"top_label", "positive"}, default="top_label"
        The paper's top-label errors, or (binary only) those of P(class 1).

    Returns
    -------
    pandas.DataFrame
        One row per variable, sorted by ``vece`` descending (NaN last), with
        columns ``variable``, ``kind`` ("numeric"/"categorical"), ``vece``,
        ``vce_max``, ``v_star``, ``p_value = (1 + #{permuted VECE >= VECE}) /
        (1 + n_permutations)``, ``n`` (rows used) and ``n_missing``.
        For a numeric variable ``vce_max`` and ``v_star`` are the largest gap
        between the LOESS curves and where it occurs (NaN when there are too
        few rows to smooth); for a categorical one they are the largest
        ``|error - predicted error|`` over categories and that category.
    """
    errors = view_errors(y_true, y_prob, view)
    settings = _RankSettings(
        n_bins=check_positive_int(n_bins, "n_bins"),
        span=check_in_range(span, "span", low=0.0, high=np.inf, inclusive=False),
        n_points=check_positive_int(n_points, "n_points"),
        n_permutations=check_positive_int(n_permutations, "n_permutations", minimum=0),
        max_categories=check_positive_int(max_categories, "max_categories", minimum=0),
        random_state=random_state,
    )
    table = feature_table(features, errors.predicted.size)
    tracker = _Tracker(table.shape[1], settings.n_permutations, Heartbeat(progress, 0,
                                                                           table.shape[1]))
    stop = threading.Event()
    # One background thread draws the permutation nulls while this one smooths curves.
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="calibcore-permutations")
    nulls = NullCache(pool, stop, tracker.permutation_drawn)
    try:
        # Compiling the kernels (seconds, once per process) is done in the background
        # while the variables are binned.
        compiled = pool.submit(compile_fit_only)
        pool.submit(compile_shuffle)
        prepared = []
        for position in range(table.shape[1]):
            prepared.append(_prepare_one(table.iloc[:, position], str(table.columns[position]),
                                         errors, settings, nulls))
            tracker.curves((position + 1) * _PREPARE_SHARE / table.shape[1])
        tracker.expect_nulls(nulls.n_nulls)
        _wait(compiled, tracker)
        rows = [_finish_one(item, errors, settings, tracker, position)
                for position, item in enumerate(prepared)]
    finally:
        # On a cancel or an error, do not wait for the thread: a draw in progress stops
        # at its next permutation (a compilation at its end), queued ones never start.
        stop.set()
        pool.shutdown(wait=False, cancel_futures=True)
    tracker.finished()
    ranking = pd.DataFrame(rows, columns=list(RANKING_COLUMNS))
    ranking = ranking.sort_values("vece", ascending=False, kind="mergesort", na_position="last")
    return ranking.reset_index(drop=True)


T = TypeVar("T")

#: Share of the curves' side of the progress taken by validating and binning the variables.
_PREPARE_SHARE = 0.1
#: Share of a large variable's curve work taken by sorting it.
_SORT_SHARE = 0.1
#: Seconds between progress reports while waiting for a permutation null.
_WAIT_SECONDS = 0.1
#: Candidate points of the largest gap whose leverage is computed at once.
_LEVERAGE_BATCH = 8


class _Tracker:
    """Progress of a ranking from its two threads: ``done`` (of ``total`` variables) is
    the mean of the fractions of curves and of permutations done, never decreasing."""

    def __init__(self, total: int, n_permutations: int, heartbeat: Heartbeat) -> None:
        self._total = total
        self._n_permutations = n_permutations
        self._heartbeat = heartbeat
        self._lock = threading.Lock()
        self._curves = 0.0
        self._drawn = 0
        self._needed = 0
        self._done = 0.0

    @property
    def n_variables(self) -> int:
        return self._total

    def curves(self, fraction: float) -> None:
        with self._lock:
            self._curves = max(self._curves, fraction)
        self._report()

    def expect_nulls(self, n_nulls: int) -> None:
        with self._lock:
            self._needed = n_nulls * self._n_permutations
        self._report()

    def permutation_drawn(self) -> None:
        with self._lock:
            self._drawn += 1
        self._report()

    def waiting(self) -> None:
        self._report()

    def finished(self) -> None:
        self._heartbeat.now(self._total, self._total)

    def _report(self) -> None:
        with self._lock:
            permutations = self._drawn / self._needed if self._needed else None
            fraction = (self._curves if permutations is None
                        else (self._curves + permutations) / 2.0)
            self._done = max(self._done, min(fraction, 1.0) * self._total)
            done = self._done
        self._heartbeat(done, self._total)


@dataclass
class _Prepared:
    """A variable validated and binned, its row begun and its null (if any) submitted."""

    variable: Variable
    index: NDArray[np.intp]
    size: int
    row: dict[str, object]
    null: Future[NDArray[np.float64]] | None


@dataclass(frozen=True)
class _RankSettings:
    n_bins: int
    span: float
    n_points: int
    n_permutations: int
    max_categories: int
    random_state: int | None


def _prepare_one(
    column: pd.Series,
    name: str,
    errors: Errors,
    settings: _RankSettings,
    nulls: NullCache,
) -> _Prepared:
    """Validate and bin one variable, compute its VECE and submit its permutation null."""
    variable = prepare_variable(column, errors.predicted.size, "auto", name)
    if variable.kind == "numeric" and np.unique(variable.values).size <= settings.max_categories:
        variable = prepare_variable(column, errors.predicted.size, "categorical", name)
    row: dict[str, object] = {
        "variable": name,
        "kind": variable.kind,
        "vece": np.nan,
        "vce_max": np.nan,
        "v_star": np.nan,
        "p_value": np.nan,
        "n": int(variable.values.size),
        "n_missing": variable.n_missing,
    }
    if variable.values.size == 0:
        return _Prepared(variable, np.empty(0, dtype=np.intp), 0, row, None)
    index, size = bin_index(variable, settings.n_bins)
    residual = (errors.predicted - errors.actual)[variable.used]
    row["vece"] = binned_vece(index, size, residual)
    null = None
    if settings.n_permutations > 0:
        sizes = np.bincount(index, minlength=size)
        null = nulls.submit(residual, variable.used, sizes[sizes > 0],
                            settings.n_permutations, settings.random_state)
    return _Prepared(variable, index, size, row, null)


def _finish_one(
    item: _Prepared,
    errors: Errors,
    settings: _RankSettings,
    tracker: _Tracker,
    position: int,
) -> dict[str, object]:
    """VCE(v*) and v* of a prepared variable, then its p-value once its null is drawn."""
    row = dict(item.row)
    n_variables = tracker.n_variables
    if item.variable.values.size:
        def curves(fraction: float) -> None:
            tracker.curves(_PREPARE_SHARE + (1 - _PREPARE_SHARE) * (position + fraction)
                           / n_variables)

        row["vce_max"], row["v_star"] = _largest_gap(item.variable, errors, item.index,
                                                     item.size, settings, curves)
        curves(1.0)
    if item.null is not None:
        null = _wait(item.null, tracker)
        row["p_value"] = permutation_p_value(float(row["vece"]), null)  # type: ignore[arg-type]
    return row


def _wait(future: Future[T], tracker: _Tracker) -> T:
    """The future's result, reporting progress while it is not ready."""
    while True:
        try:
            return future.result(timeout=_WAIT_SECONDS)
        except FutureTimeout:
            tracker.waiting()


def _largest_gap(
    variable: Variable,
    errors: Errors,
    index: NDArray[np.intp],
    size: int,
    settings: _RankSettings,
    progress: Callable[[float], None],
) -> tuple[float, object]:
    """VCE(v*) and v*: from the LOESS curves (numeric) or over categories.

    Large numeric variables fit the gap alone: by linearity the difference of the
    error and predicted-error curves is the LOESS fit of ``error - predicted error``,
    and VCE(v*) needs no band (the bands' statistics would double the cost).
    """
    if variable.kind == "categorical":
        counts = np.bincount(index, minlength=size)
        residual = (errors.predicted - errors.actual)[variable.used]
        gaps = np.abs(np.bincount(index, weights=residual, minlength=size)) / np.maximum(counts, 1)
        worst = int(np.argmax(gaps))
        return float(gaps[worst]), variable.categories[worst]
    if min(variable.values.size, np.floor(variable.values.size * settings.span)) < MIN_NEIGHBOURS:
        return np.nan, np.nan
    if variable.values.size <= N_EXACT:
        curves = variable_curves(
            variable, errors, settings.span, settings.n_points, 0.95, 1, settings.random_state
        )
        return curves.vce_max, curves.v_star
    order = np.argsort(variable.values, kind="stable")
    sorted_values = variable.values[order]
    progress(_SORT_SHARE)
    x = curve_points(sorted_values, settings.n_points)
    gap = np.abs(loess_fit(sorted_values, (errors.actual - errors.predicted)[variable.used][order],
                           x, span=settings.span, progress=lambda fraction: progress(
                               _SORT_SHARE + (1.0 - _SORT_SHARE) * fraction)))
    # the largest gap where the curves are drawn: leverage only at the candidates, largest
    # first (almost always the first is drawn)
    ranked = np.argsort(-gap, kind="stable")
    for start in range(0, x.size, _LEVERAGE_BATCH):
        candidates = ranked[start:start + _LEVERAGE_BATCH]
        drawn = loess_leverage(sorted_values, x[candidates], span=settings.span) <= MAX_LEVERAGE
        if drawn.any():
            worst = int(candidates[np.argmax(drawn)])
            return float(gap[worst]), float(x[worst])
    return np.nan, np.nan
