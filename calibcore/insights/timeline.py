"""Calibration over time: measures per time window and a change test.

The rows are grouped into windows of their time: calendar periods of dates
(``pandas.Period``: day, week, month, quarter, year) or, for an ordered number, one
window per distinct value up to :data:`MAX_VALUE_WINDOWS` values and equal-mass ranges
beyond. Each window gets n, accuracy, mean confidence, ECE and smooth ECE with their
bootstrap 95% intervals (:func:`calibcore.metrics.global_measures`).

Every score-based quantity is on one view: the positive view (P(class 1) against the
frequency of class 1) is the right one for a binary model, whose top-label view can
fold over- and under-prediction of class 1 into a gap of zero; the top label otherwise.

**The change test.** Each window's calibration gap, mean score - observed frequency of
the view (mean confidence - accuracy on the top label), is compared with the reference
window's by Welch's two-sample t test on the per-row residuals (score - outcome), and
the p-values are adjusted over the windows with Holm's method; a window is flagged when
the adjusted p-value is below ``alpha``. Why this test: a deployed model most often
drifts in calibration-in-the-large (it becomes over- or under-confident as the base rate
or the inputs move); the gap is the quantity that moves, Welch's test keeps its size for
windows of any sizes and variances, and Holm's adjustment keeps the chance of flagging
*any* unchanged window at ``alpha``, however long the timeline (a flag is read as "this
window changed", so the family-wise error is the one to control; Benjamini-Hochberg
would let a few calm windows be flagged among many changed ones). A change of shape at a
constant mean gap shows in the ECE and smooth ECE bands, not in this test.

For two classes the test runs on both gaps, each window against the reference in the
positive view and in the top-label view, all adjusted together: the positive gap misses a
model that grows over-confident symmetrically about 1/2 (its P(class 1) errors cancel in
the mean), the top-label gap misses one whose P(class 1) drifts high everywhere (its
errors cancel at each confidence).

**Row weights.** With ``sample_weight`` each window's measures are those of its weighted
rows (integer weights give the repeated rows' values), its observed rate's Wilson
interval is taken at Kish's n_eff, and the change test compares weighted mean residuals
with their sandwich standard errors (``sqrt(m / (m - 1) sum w^2 (r - mean)^2) / sum w``
over a window's ``m`` rows) and Welch-Satterthwaite degrees of freedom at the windows'
n_eff; a window still needs :data:`MIN_WINDOW_ROWS` rows.
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
from calibcore.data.views import score_outcome
from calibcore.data.weights import check_sample_weight, effective_sample_size
from calibcore.exceptions import CalibrationInputError
from calibcore.metrics.proportions import proportion_interval
from calibcore.metrics.uncertainty import global_measures

Frequency = Literal["auto", "D", "W", "M", "Q", "Y"]
TimelineView = Literal["top_label", "positive"]
_VIEW_WORDS = {"top_label": "top-label view (confidence against accuracy)",
               "positive": "positive-class view (P(class 1) against the frequency of class 1)"}
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
    accuracy, mean_confidence : float
        Top-label accuracy and mean confidence, whatever the view.
    mean_score, observed_rate : float
        The view's mean score and the frequency of its outcome (on the top label: mean
        confidence and accuracy; on the positive view: mean P(class 1) and the frequency
        of class 1).
    observed_rate_low, observed_rate_high : float
        Wilson 95% interval of ``observed_rate``.
    gap : float
        mean_score - observed_rate (positive: the view's score runs high).
    ece, ece_low, ece_high, smooth_ece, smooth_ece_low, smooth_ece_high : float
        The estimates and bootstrap 95% intervals (NaN below MIN_WINDOW_ROWS rows).
    accuracy_low, accuracy_high : float
    p_value, p_adjusted : float
        Welch's test of this window's gap against the reference's (NaN for the
        reference and windows too small), and its Holm adjustment; for two classes the
        smaller over the two views' tests.
    flagged : bool
        ``p_adjusted < alpha``.
    changed_views : tuple of str
        The views whose gap changed (adjusted p-value below ``alpha``).
    weight, n_eff : float or None
        With row weights, the window's total weight and Kish's effective sample size;
        None without.
    """

    label: str
    start: str
    end: str
    n: int
    accuracy: float
    accuracy_low: float
    accuracy_high: float
    mean_confidence: float
    mean_score: float
    observed_rate: float
    observed_rate_low: float
    observed_rate_high: float
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
    changed_views: tuple[str, ...] = ()
    weight: float | None = None
    n_eff: float | None = None


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
    view : str
        The view of the scores, ECEs and gaps ("top_label" or "positive").
    """

    windows: tuple[Window, ...]
    reference: int
    period: str
    alpha: float
    test: str
    notes: tuple[str, ...]
    assignments: NDArray[np.intp]
    view: str = "top_label"


TEST = ("Welch's two-sample t test of the calibration gap (mean score - observed frequency) "
        "against the reference window, for two classes in both views (P(class 1): over- or "
        "under-prediction of class 1; top label: over- or under-confidence), "
        "Holm-adjusted over every window and view: a drift of calibration-in-the-large, the "
        "usual failure of a deployed model, tested with a size that holds for windows of "
        "any sizes, and at most a 5% chance of flagging any unchanged window")


def calibration_timeline(
    times: ArrayLike,
    y_true: ArrayLike,
    y_prob: ArrayLike,
    *,
    freq: Frequency = "auto",
    reference: int = 0,
    view: TimelineView = "top_label",
    alpha: float = 0.05,
    n_bootstrap: int = 100,
    random_state: int = 0,
    progress: Callable[[float], None] | None = None,
    sample_weight: ArrayLike | None = None,
) -> Timeline:
    """Measures per time window and the windows whose calibration changed.

    Parameters
    ----------
    times : array-like of shape (n,)
        Dates, datetimes (or text that parses as them), or an ordered number. Rows
        without a time are left out.
    y_true, y_prob
        As in :func:`calibcore.metrics.expected_calibration_error`.
    freq : {"auto", "D", "W", "M", "Q", "Y"}, default="auto"
        Calendar period of dates; "auto" takes the finest with at most 60 windows.
        Ignored for an ordered number.
    reference : int, default=0
        Index of the reference window (the first by default).
    view : {"top_label", "positive"}, default="top_label"
        The scores whose calibration is followed; "positive" (binary only) is
        P(class 1) against the frequency of class 1.
    alpha : float, default=0.05
        Level of the change test, after adjustment.
    n_bootstrap : int, default=100
        Resamples of each window's intervals.
    random_state : int, default=0
    progress : callable, optional
        Called with the fraction done.
    sample_weight : array-like of shape (n,), optional
        Non-negative row weights (module docstring, "Row weights").

    Returns
    -------
    Timeline
    """
    labels, proba = check_predictions(y_true, y_prob)
    weights = check_sample_weight(sample_weight, labels.size)
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
    if view not in ("top_label", "positive"):
        raise CalibrationInputError(f"view must be top_label or positive, not {view!r}.",
                                    code="invalid_parameters")
    problem = score_outcome(labels, proba, view)
    residual = problem.scores[0] - problem.outcomes[0]
    top = score_outcome(labels, proba, "top_label") if view != "top_label" else problem
    report = progress or (lambda fraction: None)
    done = [0]

    def measure(index: int) -> dict[str, float]:
        rows = assignments == index
        if rows.sum() < MIN_WINDOW_ROWS:
            return {}
        result = global_measures(labels[rows], proba[rows], view=view,
                                 n_bootstrap=n_bootstrap,
                                 measures=["accuracy", "ece", "smooth_ece"],
                                 interval="hybrid", random_state=random_state + index,
                                 sample_weight=None if weights is None else weights[rows])
        done[0] += 1
        report(done[0] / n_windows)
        return {f"{m.key}{suffix}": float(np.nan if value is None else value)
                for m in result.measures
                for suffix, value in (("", m.value), ("_low", m.low), ("_high", m.high))}

    with ThreadPoolExecutor(max_workers=2) as pool:  # numpy and the smoother release the GIL
        measured = list(pool.map(measure, range(n_windows)))
    residuals = {view: residual}
    if proba.shape[1] == 2:  # both gaps of a binary model: each view has a blind spot
        other: TimelineView = "top_label" if view == "positive" else "positive"
        folded = score_outcome(labels, proba, other)
        residuals[other] = folded.scores[0] - folded.outcomes[0]
    raw, adjusted = _change_tests(residuals, assignments, n_windows, reference, weights)
    smallest_raw = np.fmin.reduce(list(raw.values()))
    smallest_adjusted = np.fmin.reduce(list(adjusted.values()))
    windows = []
    for index in range(n_windows):
        rows = assignments == index
        numbers = measured[index]
        nan = float("nan")
        count = int(rows.sum())
        row_weights = np.ones(count) if weights is None else weights[rows]
        total = float(row_weights.sum())
        # Wilson's interval at Kish's n_eff with weights (the rows themselves without)
        size = (float(count) if weights is None else effective_sample_size(row_weights))
        rate = float(row_weights @ problem.outcomes[0][rows]) / total if total > 0 else nan
        low, high = (proportion_interval(rate * size, size) if total > 0 and size > 0
                     else (nan, nan))
        windows.append(Window(
            label=names[index], start=bounds[index][0], end=bounds[index][1],
            n=count, accuracy=_mean(top.outcomes[0][rows], row_weights),
            accuracy_low=numbers.get("accuracy_low", nan),
            accuracy_high=numbers.get("accuracy_high", nan),
            mean_confidence=_mean(top.scores[0][rows], row_weights),
            mean_score=_mean(problem.scores[0][rows], row_weights),
            observed_rate=rate if count else nan,
            observed_rate_low=float(low) if count else nan,
            observed_rate_high=float(high) if count else nan,
            gap=_mean(residual[rows], row_weights), ece=numbers.get("ece", nan),
            ece_low=numbers.get("ece_low", nan), ece_high=numbers.get("ece_high", nan),
            smooth_ece=numbers.get("smooth_ece", nan),
            smooth_ece_low=numbers.get("smooth_ece_low", nan),
            smooth_ece_high=numbers.get("smooth_ece_high", nan),
            p_value=float(smallest_raw[index]), p_adjusted=float(smallest_adjusted[index]),
            flagged=bool(smallest_adjusted[index] < level),
            changed_views=tuple(name for name, values in adjusted.items()
                                if values[index] < level),
            weight=None if weights is None else total,
            n_eff=None if weights is None else size))
    small = sum(1 for w in windows if w.n < MIN_WINDOW_ROWS)
    notes = (f"{n_windows} windows ({period}); reference: {names[reference]}; "
             f"{_VIEW_WORDS[view]}.",
             f"Intervals: {n_bootstrap} bootstrap resamples per window.",
             *([f"{small} window(s) with fewer than {MIN_WINDOW_ROWS} rows have no measures "
                "or test."] if small else []),
             *([f"{int((assignments < 0).sum()):,} rows without a time left out."]
               if (assignments < 0).any() else []),
             *(["Rows weighted: each window's measures are weighted; the change test "
                "compares weighted mean residuals (sandwich standard errors, "
                "Welch-Satterthwaite degrees of freedom at Kish's n_eff)."]
               if weights is not None else []))
    return Timeline(tuple(windows), reference, period, level, TEST, notes, assignments, view)


def _change_tests(residuals: dict[TimelineView, NDArray[np.float64]],
                  assignments: NDArray[np.intp], n_windows: int, reference: int,
                  weights: NDArray[np.float64] | None = None
                  ) -> tuple[dict[TimelineView, NDArray[np.float64]],
                             dict[TimelineView, NDArray[np.float64]]]:
    """Welch's test of each window's mean residual against the reference window's, per
    view, and Holm's adjustment over every (window, view) test together (NaN where a
    window is the reference or too small)."""
    raw = {}
    base_rows = assignments == reference
    for view, residual in residuals.items():
        base = residual[base_rows]
        p_values = np.full(n_windows, np.nan)
        for index in range(n_windows):
            window = assignments == index
            rows = residual[window]
            if not (index != reference and rows.size >= MIN_WINDOW_ROWS
                    and base.size >= MIN_WINDOW_ROWS):
                continue
            p_values[index] = (
                stats.ttest_ind(rows, base, equal_var=False).pvalue if weights is None
                else _weighted_welch(rows, weights[window], base, weights[base_rows]))
        raw[view] = p_values
    stacked = np.concatenate(list(raw.values()))
    tested = np.isfinite(stacked)
    adjusted_all = np.full(stacked.size, np.nan)
    if tested.any():
        adjusted_all[tested] = multipletests(stacked[tested], method="holm")[1]
    adjusted = dict(zip(raw, np.split(adjusted_all, len(raw)), strict=True))
    return raw, adjusted


def _mean(values: NDArray[np.float64], weights: NDArray[np.float64]) -> float:
    """Weighted mean of a window's values (NaN for a window of no weight)."""
    total = float(weights.sum())
    return float(weights @ values) / total if total > 0 else float("nan")


def _weighted_mean_error(values: NDArray[np.float64], weights: NDArray[np.float64]
                         ) -> tuple[float, float, float]:
    """Weighted mean, its squared sandwich standard error and Kish's n_eff."""
    total = float(weights.sum())
    mean = float(weights @ values) / total
    count = values.size
    variance = (count / max(count - 1, 1) * float(np.sum((weights * (values - mean)) ** 2))
                / total**2)
    return mean, variance, effective_sample_size(weights)


def _weighted_welch(first: NDArray[np.float64], first_weights: NDArray[np.float64],
                    second: NDArray[np.float64], second_weights: NDArray[np.float64]) -> float:
    """Two-sided p-value of Welch's test of two weighted means: sandwich variances and
    Welch-Satterthwaite degrees of freedom at each sample's n_eff (equal weights give
    ``scipy.stats.ttest_ind(..., equal_var=False)``)."""
    if first_weights.sum() <= 0 or second_weights.sum() <= 0:
        return float("nan")
    mean_a, var_a, eff_a = _weighted_mean_error(first, first_weights)
    mean_b, var_b, eff_b = _weighted_mean_error(second, second_weights)
    spread = var_a + var_b
    if spread <= 0:
        return 1.0 if mean_a == mean_b else 0.0
    freedom = spread**2 / (var_a**2 / max(eff_a - 1, 1) + var_b**2 / max(eff_b - 1, 1))
    return float(2 * stats.t.sf(abs(mean_a - mean_b) / np.sqrt(spread), freedom))


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


__all__ = ["PERIODS", "TEST", "Frequency", "Timeline", "TimelineView", "Window",
           "calibration_timeline"]
