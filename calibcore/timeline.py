"""Calibration over time (issue 15): measures per time window and a change test.

The rows are grouped into windows of their time: calendar periods of dates
(``pandas.Period``: day, week, month, quarter, year) or, for an ordered number, one
window per distinct value up to :data:`MAX_VALUE_WINDOWS` values and equal-mass ranges
beyond. Each window gets n, accuracy, mean confidence, ECE and smooth ECE with their
bootstrap 95% intervals (:func:`calibcore.uncertainty.global_measures`).

**The change test.** Each window's calibration gap, mean confidence - accuracy on the
top label, is compared with the reference window's by Welch's two-sample t test on the
per-row residuals (confidence - 1[correct]), and the p-values are adjusted over the
windows with Holm's method; a window is flagged when the adjusted p-value is below
``alpha``. Why this test: a deployed model most often drifts in calibration-in-the-large
(it becomes over- or under-confident as the base rate or the inputs move); the gap is
the quantity that moves, Welch's test keeps its size for windows of any sizes and
variances, and Holm's adjustment keeps the chance of flagging *any* unchanged window at
``alpha``, however long the timeline (a flag is read as "this window changed", so the
family-wise error is the one to control; Benjamini-Hochberg would let a few calm
windows be flagged among many changed ones). A change of shape at a constant mean gap
shows in the ECE and smooth ECE bands, not in this test.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray
from scipy import stats
from statsmodels.stats.multitest import multipletests

from calibcore._validation import check_in_range, check_positive_int, check_predictions
from calibcore.exceptions import CalibrationInputError
from calibcore.uncertainty import global_measures
from calibcore.views import score_outcome

Frequency = Literal["auto", "D", "W", "M", "Q", "Y"]
#: Calendar periods, finest first (``auto`` takes the finest giving at most MAX_WINDOWS).
PERIODS: dict[str, str] = {"D": "day", "W": "week", "M": "month", "Q": "quarter", "Y": "year"}
MAX_WINDOWS = 60
#: An ordered number with at most this many distinct values gets a window per value.
MAX_VALUE_WINDOWS = 100
#: Windows of an ordered number with more distinct values (equal-mass ranges).
VALUE_WINDOWS = 20
#: A window needs this many rows for measures and the test.
MIN_WINDOW_ROWS = 30


@dataclass(frozen=True)
class Window:
    """One window of the timeline.

    Attributes
    ----------
    label : str
        The period (``2026-03``, ``2026-03-02/2026-03-08``) or value range.
    start, end : str
        Its first and last time, as text.
    n : int
    accuracy, mean_confidence, gap : float
        gap = mean_confidence - accuracy (positive: over-confident).
    ece, ece_low, ece_high, smooth_ece, smooth_ece_low, smooth_ece_high : float
        The estimates and bootstrap 95% intervals (NaN below MIN_WINDOW_ROWS rows).
    accuracy_low, accuracy_high : float
    p_value, p_adjusted : float
        Welch's test of this window's gap against the reference's (NaN for the
        reference and windows too small), and its Holm adjustment.
    flagged : bool
        ``p_adjusted < alpha``.
    """

    label: str
    start: str
    end: str
    n: int
    accuracy: float
    accuracy_low: float
    accuracy_high: float
    mean_confidence: float
    gap: float
    ece: float
    ece_low: float
    ece_high: float
    smooth_ece: float
    smooth_ece_low: float
    smooth_ece_high: float
    p_value: float
    p_adjusted: float
    flagged: bool


@dataclass(frozen=True)
class Timeline:
    """Calibration per window.

    Attributes
    ----------
    windows : tuple of Window
        In time order.
    reference : int
        Index of the reference window.
    period : str
        "day", "week", ... or "value" / "range" for an ordered number.
    alpha : float
    test : str
        The change test, in words.
    notes : tuple of str
    assignments : ndarray of shape (n,)
        The window of each row (-1 for rows without a time).
    """

    windows: tuple[Window, ...]
    reference: int
    period: str
    alpha: float
    test: str
    notes: tuple[str, ...]
    assignments: NDArray[np.intp]


TEST = ("Welch's two-sample t test of the calibration gap (mean confidence - accuracy) "
        "against the reference window, Holm-adjusted over the windows: a drift of "
        "calibration-in-the-large, the usual failure of a deployed model, tested with a "
        "size that holds for windows of any sizes, and at most a 5% chance of flagging any "
        "unchanged window")


def calibration_timeline(
    times: ArrayLike,
    y_true: ArrayLike,
    y_prob: ArrayLike,
    *,
    freq: Frequency = "auto",
    reference: int = 0,
    alpha: float = 0.05,
    n_bootstrap: int = 100,
    random_state: int = 0,
    progress: Callable[[float], None] | None = None,
) -> Timeline:
    """Measures per time window and the windows whose calibration changed.

    Parameters
    ----------
    times : array-like of shape (n,)
        Dates, datetimes (or text that parses as them), or an ordered number. Rows
        without a time are left out.
    y_true, y_prob
        As in :func:`calibcore.metrics.expected_calibration_error` (top-label view).
    freq : {"auto", "D", "W", "M", "Q", "Y"}, default="auto"
        Calendar period of dates; "auto" takes the finest with at most 60 windows.
        Ignored for an ordered number.
    reference : int, default=0
        Index of the reference window (the first by default).
    alpha : float, default=0.05
        Level of the change test, after adjustment.
    n_bootstrap : int, default=100
        Resamples of each window's intervals.
    random_state : int, default=0
    progress : callable, optional
        Called with the fraction done.

    Returns
    -------
    Timeline
    """
    labels, proba = check_predictions(y_true, y_prob)
    values = pd.Series(np.asarray(times, dtype=object) if not isinstance(times, pd.Series)
                       else times.to_numpy()).reset_index(drop=True)
    if len(values) != labels.size:
        raise CalibrationInputError(f"times has {len(values)} values for {labels.size} rows.")
    if freq not in ("auto", *PERIODS):
        raise CalibrationInputError(f"freq must be auto, D, W, M, Q or Y, not {freq!r}.",
                                    code="invalid_parameters")
    level = check_in_range(alpha, "alpha", low=0, high=1, inclusive=False)
    n_bootstrap = check_positive_int(n_bootstrap, "n_bootstrap", minimum=0)
    assignments, names, bounds, period = _windows(values, freq)
    n_windows = len(names)
    if not 0 <= reference < n_windows:
        raise CalibrationInputError(f"reference must be a window index in [0, {n_windows}).",
                                    code="invalid_parameters")
    view = score_outcome(labels, proba, "top_label")
    residual = view.scores[0] - view.outcomes[0]
    report = progress or (lambda fraction: None)
    done = [0]

    def measure(index: int) -> dict[str, float]:
        rows = assignments == index
        if rows.sum() < MIN_WINDOW_ROWS:
            return {}
        result = global_measures(labels[rows], proba[rows], n_bootstrap=n_bootstrap,
                                 measures=["accuracy", "ece", "smooth_ece"],
                                 interval="hybrid", random_state=random_state + index)
        done[0] += 1
        report(done[0] / n_windows)
        return {f"{m.key}{suffix}": float(np.nan if value is None else value)
                for m in result.measures
                for suffix, value in (("", m.value), ("_low", m.low), ("_high", m.high))}

    with ThreadPoolExecutor(max_workers=2) as pool:  # numpy and the smoother release the GIL
        measured = list(pool.map(measure, range(n_windows)))
    base = residual[assignments == reference]
    p_values = np.full(n_windows, np.nan)
    for index in range(n_windows):
        rows = residual[assignments == index]
        if index != reference and rows.size >= MIN_WINDOW_ROWS and base.size >= MIN_WINDOW_ROWS:
            p_values[index] = stats.ttest_ind(rows, base, equal_var=False).pvalue
    tested = np.isfinite(p_values)
    adjusted = np.full(n_windows, np.nan)
    if tested.any():
        adjusted[tested] = multipletests(p_values[tested], method="holm")[1]
    windows = []
    for index in range(n_windows):
        rows = assignments == index
        numbers = measured[index]
        nan = float("nan")
        windows.append(Window(
            label=names[index], start=bounds[index][0], end=bounds[index][1],
            n=int(rows.sum()), accuracy=float(view.outcomes[0][rows].mean()),
            accuracy_low=numbers.get("accuracy_low", nan),
            accuracy_high=numbers.get("accuracy_high", nan),
            mean_confidence=float(view.scores[0][rows].mean()),
            gap=float(residual[rows].mean()), ece=numbers.get("ece", nan),
            ece_low=numbers.get("ece_low", nan), ece_high=numbers.get("ece_high", nan),
            smooth_ece=numbers.get("smooth_ece", nan),
            smooth_ece_low=numbers.get("smooth_ece_low", nan),
            smooth_ece_high=numbers.get("smooth_ece_high", nan),
            p_value=float(p_values[index]), p_adjusted=float(adjusted[index]),
            flagged=bool(tested[index] and adjusted[index] < level)))
    small = sum(1 for w in windows if w.n < MIN_WINDOW_ROWS)
    notes = (f"{n_windows} windows ({period}); reference: {names[reference]}.",
             f"Intervals: {n_bootstrap} bootstrap resamples per window.",
             *([f"{small} window(s) with fewer than {MIN_WINDOW_ROWS} rows have no measures "
                "or test."] if small else []),
             *([f"{int((assignments < 0).sum()):,} rows without a time left out."]
               if (assignments < 0).any() else []))
    return Timeline(tuple(windows), reference, period, level, TEST, notes, assignments)


def _windows(values: pd.Series, freq: Frequency
             ) -> tuple[NDArray[np.intp], list[str], list[tuple[str, str]], str]:
    """The window of each row (-1 without a time), window names, first and last time of
    each, and the kind of period."""
    if pd.api.types.is_numeric_dtype(values.infer_objects()) and not \
            pd.api.types.is_bool_dtype(values.infer_objects()):
        return _value_windows(pd.to_numeric(values, errors="coerce"))
    moments = pd.to_datetime(values, errors="coerce", format="mixed", utc=True)
    if moments.notna().sum() == 0:
        raise CalibrationInputError("the time column holds neither dates nor numbers.",
                                    code="invalid_time")
    moments = moments.dt.tz_localize(None)
    present = moments.dropna()
    chosen = freq if freq != "auto" else next(
        (code for code in PERIODS
         if present.dt.to_period(code).nunique() <= MAX_WINDOWS), "Y")
    periods = moments.dt.to_period(chosen)
    codes, order = pd.factorize(periods, sort=True)  # no time: -1
    assignments = np.asarray(codes, dtype=np.intp)
    spans = moments[assignments >= 0].groupby(assignments[assignments >= 0]).agg(["min", "max"])
    bounds = [(str(low), str(high)) for low, high in zip(spans["min"], spans["max"],
                                                            strict=True)]
    return assignments, [str(p) for p in order], bounds, PERIODS[chosen]


def _value_windows(numbers: pd.Series
                   ) -> tuple[NDArray[np.intp], list[str], list[tuple[str, str]], str]:
    present = numbers.dropna()
    if present.empty:
        raise CalibrationInputError("the time column has no values.", code="invalid_time")
    distinct = np.sort(present.unique())
    if distinct.size <= MAX_VALUE_WINDOWS:
        codes = pd.Index(distinct).get_indexer(numbers)
        names = [f"{v:g}" for v in distinct]
        return (np.asarray(codes, dtype=np.intp), names, [(n, n) for n in names], "value")
    codes, edges = pd.qcut(numbers, VALUE_WINDOWS, labels=False, retbins=True,
                           duplicates="drop")
    assignments = np.where(codes.isna(), -1, codes.fillna(-1)).astype(np.intp)
    names = [f"{'[' if i == 0 else '('}{low:.6g}, {high:.6g}]"
             for i, (low, high) in enumerate(itertools.pairwise(edges))]
    bounds = [(f"{low:.6g}", f"{high:.6g}") for low, high in itertools.pairwise(edges)]
    return assignments, names, bounds, "range"


__all__ = ["PERIODS", "TEST", "Frequency", "Timeline", "Window", "calibration_timeline"]
