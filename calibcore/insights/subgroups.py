"""The worst-calibrated subgroups: slices of one or two feature conditions.

A slice is the rows meeting one condition on a feature (a categorical level, a numeric
quantile bin, or "missing"), or two conditions on two different features. Each slice of
at least ``min_support`` rows gets its signed calibration gap on a view,

    gap = mean score - observed frequency = mean_i (s_i - o_i),

on the top-label view the mean confidence minus the accuracy (s_i the confidence, o_i =
1[correct_i]), on the positive view of a binary model the mean P(class 1) minus the
frequency of class 1 (where the top-label view could fold over- and under-prediction of
class 1 into a gap of zero),

with a t interval and the two-sided t test of "gap = 0" (the rows are independent, so
the mean residual of a slice is asymptotically normal; a slice has at least 100 rows).
A calibrated model has gap 0 on every slice defined by features only if it is
calibrated given those features (multicalibration), which is what the audit tests. The
p-values are adjusted for the number of slices tried with Benjamini-Hochberg
(``scipy.stats.false_discovery_control``). Slices are ranked by |gap|; the first
``top`` also get smooth ECE inside the slice.

All slices' counts and sums come from one sparse indicator matrix M (rows x conditions):
``M.T @ (w * M)`` gives every pair's sums at once, so the cost is about n x features^2
whatever the number of slices.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray
from scipy import sparse, stats

from calibcore._validation import check_in_range, check_positive_int, check_predictions
from calibcore.data.views import score_outcome
from calibcore.exceptions import CalibrationInputError
from calibcore.metrics.measures import smooth_ece

#: Default least support: 1% of the rows, and at least this many.
MIN_SUPPORT_ROWS = 100
SubgroupView = Literal["top_label", "positive"]
_VIEW_NAMES = {"top_label": "top-label", "positive": "positive-class"}
_GAP_WORDS = {"top_label": "mean confidence - accuracy on the top-label view",
              "positive": "mean P(class 1) - frequency of class 1 on the positive-class view"}
MIN_SUPPORT_FRACTION = 0.01

ConditionKind = Literal["level", "range", "missing"]


@dataclass(frozen=True)
class Condition:
    """One condition on one feature.

    Attributes
    ----------
    feature : str
    kind : {"level", "range", "missing"}
        ``feature == level``; ``low < feature <= high`` (the lowest bin includes its low
        edge); or the feature is missing.
    level : object
        The categorical level (kind "level").
    low, high : float
        The numeric bin's edges (kind "range").
    first : bool
        Whether this is the lowest bin (its low edge included).
    """

    feature: str
    kind: ConditionKind
    level: object = None
    low: float = math.nan
    high: float = math.nan
    first: bool = False

    def describe(self) -> str:
        """The condition in words, e.g. ``month = 7`` or ``dep_hour in (18, 21]``."""
        if self.kind == "missing":
            return f"{self.feature} is missing"
        if self.kind == "level":
            return f"{self.feature} = {self.level}"
        return f"{self.feature} in {'[' if self.first else '('}{self.low:.4g}, {self.high:.4g}]"

    def mask(self, values: pd.Series) -> NDArray[np.bool_]:
        """The rows of ``values`` (the feature's column) meeting the condition."""
        if self.kind == "missing":
            return values.isna().to_numpy()
        if self.kind == "level":
            return (values == self.level).fillna(False).to_numpy(dtype=bool)
        numbers = pd.to_numeric(values, errors="coerce").to_numpy(dtype=np.float64)
        above = numbers >= self.low if self.first else numbers > self.low
        return above & (numbers <= self.high)


@dataclass(frozen=True)
class Subgroup:
    """One slice and its calibration.

    Attributes
    ----------
    conditions : tuple of Condition
        One or two conditions (on different features).
    n : int
        Rows in the slice.
    mean_score, observed_rate : float
        The view's mean score and outcome frequency (top label: mean confidence and
        accuracy; positive view: mean P(class 1) and the frequency of class 1).
    gap : float
        mean_score - observed_rate (positive: the score runs high, over-confident).
    gap_low, gap_high : float
        t interval of the gap at ``confidence_level``.
    p_value : float
        Two-sided t test of gap = 0 (for two classes the smaller of the two views').
    p_adjusted : float
        Benjamini-Hochberg adjusted over every test made (two per slice for two
        classes).
    smooth_ece : float or None
        smooth ECE inside the slice (the first ``top`` slices only).
    other_gap : float or None
        For two classes, the other view's gap (top-label when ``gap`` is positive-class).
    significant_views : tuple of str
        The views whose adjusted p-value is below 0.05.
    """

    conditions: tuple[Condition, ...]
    n: int
    mean_score: float
    observed_rate: float
    gap: float
    gap_low: float
    gap_high: float
    p_value: float
    p_adjusted: float
    smooth_ece: float | None
    other_gap: float | None = None
    significant_views: tuple[str, ...] = ()

    def describe(self) -> str:
        return " and ".join(condition.describe() for condition in self.conditions)

    def mask(self, features: pd.DataFrame) -> NDArray[np.bool_]:
        """The slice's rows among the rows of ``features``."""
        rows = np.ones(len(features), dtype=bool)
        for condition in self.conditions:
            rows &= condition.mask(features[condition.feature])
        return rows


@dataclass(frozen=True)
class SubgroupAudit:
    """The ranked slices.

    Attributes
    ----------
    subgroups : tuple of Subgroup
        Every slice tried, worst |gap| first.
    n_rows : int
    n_tried : int
        Slices tried (the number the p-values are adjusted for).
    min_support : int
        Least rows of a slice.
    gap : float
        The whole data's gap, for reference.
    confidence_level : float
    n_bins : int
        Quantile bins per numeric feature.
    notes : tuple of str
    view : str
        The view of the gaps ("top_label" or "positive").
    """

    subgroups: tuple[Subgroup, ...]
    n_rows: int
    n_tried: int
    min_support: int
    gap: float
    confidence_level: float
    n_bins: int
    notes: tuple[str, ...]
    view: str = "top_label"


def worst_subgroups(
    features: pd.DataFrame,
    y_true: ArrayLike,
    y_prob: ArrayLike,
    *,
    kinds: Mapping[str, str] | None = None,
    n_bins: int = 5,
    max_levels: int = 20,
    min_support: int | float | None = None,
    pairs: bool = True,
    top: int = 50,
    view: SubgroupView = "top_label",
    confidence_level: float = 0.95,
    progress: Callable[[float], None] | None = None,
) -> SubgroupAudit:
    """Slices of one or two feature conditions ranked by their calibration gap.

    Parameters
    ----------
    features : DataFrame of shape (n, d)
        The features the slices are defined on.
    y_true, y_prob
        As in :func:`calibcore.metrics.expected_calibration_error`.
    kinds : dict, optional
        "numeric" or "categorical" per feature (e.g. ``PredictionSet.feature_kinds``);
        by default strings, booleans and categoricals are categorical.
    n_bins : int, default=5
        Equal-mass bins per numeric feature (``pandas.qcut``; ties may leave fewer).
    max_levels : int, default=20
        The most frequent levels of a categorical feature that get a slice.
    min_support : int or float, optional
        Least rows of a slice: a count (>= 1) or a fraction of the rows (< 1); by
        default 1% of the rows and at least 100.
    pairs : bool, default=True
        Also slice by two conditions on two different features.
    top : int, default=50
        The worst slices that also get smooth ECE.
    view : {"top_label", "positive"}, default="top_label"
        The scores whose gap is audited; "positive" (binary only) is P(class 1) against
        the frequency of class 1.
    confidence_level : float, default=0.95
    progress : callable, optional
        Called with the fraction done.

    Returns
    -------
    SubgroupAudit
    """
    labels, proba = check_predictions(y_true, y_prob)
    if not isinstance(features, pd.DataFrame) or len(features) != labels.size:
        raise CalibrationInputError("features must be a DataFrame with one row per prediction.")
    if features.shape[1] == 0:
        raise CalibrationInputError("there are no feature columns to slice by.",
                                    code="no_features")
    n_bins = check_positive_int(n_bins, "n_bins", minimum=2)
    max_levels = check_positive_int(max_levels, "max_levels")
    top = check_positive_int(top, "top", minimum=0)
    level = check_in_range(confidence_level, "confidence_level", low=0, high=1,
                           inclusive=False)
    n_rows = labels.size
    support = _support(min_support, n_rows)
    report = progress or (lambda fraction: None)
    if view not in ("top_label", "positive"):
        raise CalibrationInputError(f"view must be top_label or positive, not {view!r}.",
                                    code="invalid_parameters")
    problem = score_outcome(labels, proba, view)
    confidence, correct = problem.scores[0], problem.outcomes[0]
    residual = confidence - correct

    conditions, columns = [], []
    for number, name in enumerate(features.columns, start=1):
        kind = (kinds or {}).get(str(name)) or _kind(features[name])
        for condition in _conditions(str(name), features[name], kind, n_bins, max_levels):
            rows = condition.mask(features[name])
            if rows.sum() >= support:
                conditions.append(condition)
                columns.append(rows)
        report(0.2 * number / features.shape[1])
    if not conditions:
        raise CalibrationInputError(
            f"no condition on the features holds {support:,} rows or more (the least "
            "support); lower min_support.", code="invalid_parameters")
    indicator = sparse.csc_matrix(np.column_stack(columns).astype(np.float64))
    other_view, other_residual = _other_gap(labels, proba, view)
    weights_of = [("n", None), ("confidence", confidence), ("correct", correct),
                  ("residual", residual), ("squared", residual**2)]
    if other_residual is not None:
        weights_of += [("other", other_residual), ("other_squared", other_residual**2)]
    sums = {}
    for number, (key, weights) in enumerate(weights_of, start=1):
        sums[key] = _pair_sums(indicator, weights)
        report(0.2 + 0.3 * number / len(weights_of))
    first, second = _slices(conditions, sums["n"], support, pairs)
    counts = sums["n"][first, second]
    gap, error, p_values = _t_tests(sums["residual"][first, second],
                                    sums["squared"][first, second], counts)
    half = stats.t.ppf((1 + level) / 2, counts - 1) * error
    if other_residual is None:
        other_gap = np.full(counts.size, np.nan)
        adjusted = stats.false_discovery_control(p_values, method="bh")
        smallest = p_values
        moved: list[tuple[str, ...]] = [(view,)] * counts.size
    else:
        other_gap, _, other_p = _t_tests(sums["other"][first, second],
                                         sums["other_squared"][first, second], counts)
        both = stats.false_discovery_control(np.concatenate([p_values, other_p]), method="bh")
        own, folded = both[:counts.size], both[counts.size:]
        adjusted, smallest = np.minimum(own, folded), np.minimum(p_values, other_p)
        moved = [tuple(name for name, value in ((view, a), (other_view, b)) if value < 0.05)
                 for a, b in zip(own, folded, strict=True)]
    order = np.argsort(-np.fmax(np.abs(gap), np.abs(other_gap)), kind="stable")
    report(0.7)
    subgroups = []
    for rank, index in enumerate(order):
        pair = (first[index], second[index])
        chosen = tuple(conditions[i] for i in dict.fromkeys(pair))
        smooth = None
        if rank < top:
            rows = _rows(columns, pair)
            smooth = float(smooth_ece(labels[rows], proba[rows], view=view))
            report(0.7 + 0.3 * (rank + 1) / min(top, order.size))
        subgroups.append(Subgroup(
            conditions=chosen, n=int(counts[index]),
            mean_score=float(sums["confidence"][pair] / counts[index]),
            observed_rate=float(sums["correct"][pair] / counts[index]), gap=float(gap[index]),
            gap_low=float(gap[index] - half[index]), gap_high=float(gap[index] + half[index]),
            p_value=float(smallest[index]), p_adjusted=float(adjusted[index]),
            smooth_ece=smooth,
            other_gap=None if other_residual is None else float(other_gap[index]),
            significant_views=moved[index]))
    notes = (
        f"{order.size:,} slices of at least {support:,} rows tried ({len(conditions)} "
        f"conditions{' and their pairs on two features' if pairs else ''}); p-values "
        "adjusted for all of them (Benjamini-Hochberg).",
        f"gap = {_GAP_WORDS[view]}, with a t interval and the two-sided t test of gap = 0 "
        f"(rows independent); smooth ECE for the first {min(top, order.size)} slices.",
        *([f"Two classes: each slice's gap is also tested on the {_VIEW_NAMES[other_view]} "
           f"view (other_gap: {_GAP_WORDS[other_view]}), with both tests in the adjustment; "
           "a slice's p-value is the smaller of the two and slices are ranked by the larger "
           "gap, since each view can hide what the other shows."]
          if other_residual is not None else []),
    )
    return SubgroupAudit(tuple(subgroups), n_rows, int(order.size), support,
                         float(residual.mean()), level, n_bins, notes, view)


def _other_gap(labels: NDArray[np.intp], proba: NDArray[np.float64],
               view: SubgroupView) -> tuple[SubgroupView, NDArray[np.float64] | None]:
    """For two classes the other view and its residuals (score - outcome): the positive
    gap misses a slice over-confident symmetrically about 1/2, the top-label gap one
    whose P(class 1) runs high everywhere."""
    other: SubgroupView = "top_label" if view == "positive" else "positive"
    if proba.shape[1] != 2:
        return other, None
    folded = score_outcome(labels, proba, other)
    return other, folded.scores[0] - folded.outcomes[0]


def _t_tests(sums: NDArray[np.float64], squares: NDArray[np.float64],
             counts: NDArray[np.float64]
             ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Mean residual of each slice, its standard error and the two-sided t test of 0."""
    gap = sums / counts
    variance = np.maximum(squares - counts * gap**2, 0.0) / np.maximum(counts - 1, 1)
    error = np.sqrt(variance / counts)
    t_stat = np.divide(gap, error, out=np.where(gap == 0, 0.0, np.inf), where=error > 0)
    return gap, error, np.clip(2 * stats.t.sf(np.abs(t_stat), counts - 1), 0.0, 1.0)


def _support(min_support: int | float | None, n_rows: int) -> int:
    if min_support is None:
        return max(MIN_SUPPORT_ROWS, math.ceil(MIN_SUPPORT_FRACTION * n_rows))
    if isinstance(min_support, bool) or not isinstance(min_support, int | float) or not (
            min_support > 0) or not math.isfinite(min_support):
        raise CalibrationInputError(f"min_support must be a positive count or a fraction "
                                    f"of the rows, not {min_support!r}.",
                                    code="invalid_parameters")
    return max(2, math.ceil(min_support * n_rows) if min_support < 1 else int(min_support))


def _kind(values: pd.Series) -> str:
    numeric = pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values)
    return "numeric" if numeric else "categorical"


def _conditions(name: str, values: pd.Series, kind: str, n_bins: int,
                max_levels: int) -> list[Condition]:
    present = values.dropna()
    out = [Condition(name, "missing")] if len(present) < len(values) else []
    if present.empty:
        return out
    if kind == "categorical":
        levels = present.value_counts().index[:max_levels]
        return out + [Condition(name, "level", level=_plain(level)) for level in levels]
    numbers = pd.to_numeric(present, errors="coerce").dropna().to_numpy(dtype=np.float64)
    if numbers.size == 0 or numbers.min() == numbers.max():
        return out
    edges = np.unique(np.quantile(numbers, np.linspace(0, 1, n_bins + 1)))
    return out + [Condition(name, "range", low=float(low), high=float(high), first=i == 0)
                  for i, (low, high) in enumerate(itertools.pairwise(edges))]


def _plain(value: object) -> object:
    return value.item() if isinstance(value, np.generic) else value


def _pair_sums(indicator: sparse.csc_matrix,
               weights: NDArray[np.float64] | None) -> NDArray[np.float64]:
    """(C, C) sums of ``weights`` over the rows meeting conditions i and j (counts
    without weights); the diagonal holds single conditions."""
    weighted = indicator if weights is None else sparse.diags(weights) @ indicator
    return np.asarray((indicator.T @ weighted).todense())


def _slices(conditions: Sequence[Condition], counts: NDArray[np.float64], support: int,
            pairs: bool) -> tuple[NDArray[np.intp], NDArray[np.intp]]:
    """Index pairs (i, j) of the slices tried: (i, i) for single conditions, i < j on
    different features for pairs, with at least ``support`` rows."""
    size = len(conditions)
    first, second = np.triu_indices(size)
    features = np.array([condition.feature for condition in conditions], dtype=object)
    keep = first == second
    if pairs:
        keep |= features[first] != features[second]
    keep &= counts[first, second] >= support
    return first[keep], second[keep]


def _rows(columns: list[NDArray[np.bool_]], pair: tuple[int, int]) -> NDArray[np.bool_]:
    return columns[pair[0]] & columns[pair[1]]


__all__ = ["Condition", "Subgroup", "SubgroupAudit", "SubgroupView", "worst_subgroups"]
