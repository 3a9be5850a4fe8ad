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

**Row weights.** With ``sample_weight`` a slice's mean score, observed rate and gap are
weighted means (integer weights give the repeated rows' values), its smooth ECE is the
weighted one, and the gap's standard error is the linearization (sandwich) estimate of a
weighted mean, ``sqrt(m / (m - 1) sum w_i^2 (r_i - gap)^2) / sum w_i`` over the slice's
``m`` rows (the unweighted t test's when the weights are equal), with Kish's n_eff - 1
degrees of freedom: weights that stand for a sampling design inform the gap as much as
n_eff rows, not as much as sum w rows. The least support counts rows.
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
from calibcore.data.weights import check_sample_weight
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
    weight, n_eff : float or None
        With row weights, the slice's total weight and Kish's effective sample size;
        None without.
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
    weight: float | None = None
    n_eff: float | None = None

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
    weighted : bool
        Whether row weights were given.
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
    weighted: bool = False


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
    sample_weight: ArrayLike | None = None,
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
    sample_weight : array-like of shape (n,), optional
        Non-negative row weights: weighted gaps, rates and smooth ECE, the sandwich
        standard error with Kish's n_eff (module docstring, "Row weights").

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
    row_weights = check_sample_weight(sample_weight, n_rows)
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
    one = np.ones(n_rows) if row_weights is None else row_weights
    residuals = {"residual": residual}
    if other_residual is not None:
        residuals["other"] = other_residual
    weights_of: list[tuple[str, NDArray[np.float64] | None]] = [
        ("n", None), ("confidence", one * confidence), ("correct", one * correct)]
    if row_weights is not None:
        weights_of += [("weight", one), ("weight_squared", one**2)]
    for name, values in residuals.items():
        weights_of += [(name, one * values), (f"{name}_squared", one**2 * values**2)]
        if row_weights is not None:
            weights_of += [(f"{name}_cross", one**2 * values)]
    sums = {}
    for number, (key, weights) in enumerate(weights_of, start=1):
        sums[key] = _pair_sums(indicator, weights)
        report(0.2 + 0.3 * number / len(weights_of))
    first, second = _slices(conditions, sums["n"], support, pairs)
    counts = sums["n"][first, second]
    totals = counts if row_weights is None else sums["weight"][first, second]
    n_eff = counts if row_weights is None else totals**2 / sums["weight_squared"][first, second]

    def tests(name: str) -> tuple[NDArray[np.float64], NDArray[np.float64],
                                  NDArray[np.float64]]:
        """The t test of one residual's gap in every slice."""
        if row_weights is None:
            return _t_tests(sums[name][first, second], sums[f"{name}_squared"][first, second],
                            counts)
        return _weighted_t_tests(sums[name][first, second],
                                 sums[f"{name}_squared"][first, second],
                                 sums[f"{name}_cross"][first, second],
                                 sums["weight_squared"][first, second], totals, counts, n_eff)

    gap, error, p_values = tests("residual")
    half = stats.t.ppf((1 + level) / 2, np.maximum(n_eff - 1, 1)) * error
    if other_residual is None:
        other_gap = np.full(counts.size, np.nan)
        adjusted = stats.false_discovery_control(p_values, method="bh")
        smallest = p_values
        moved: list[tuple[str, ...]] = [(view,)] * counts.size
    else:
        other_gap, _, other_p = tests("other")
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
            smooth = float(smooth_ece(labels[rows], proba[rows], view=view,
                                      sample_weight=None if row_weights is None
                                      else row_weights[rows]))
            report(0.7 + 0.3 * (rank + 1) / min(top, order.size))
        subgroups.append(Subgroup(
            conditions=chosen, n=int(counts[index]),
            mean_score=float(sums["confidence"][pair] / totals[index]),
            observed_rate=float(sums["correct"][pair] / totals[index]), gap=float(gap[index]),
            gap_low=float(gap[index] - half[index]), gap_high=float(gap[index] + half[index]),
            p_value=float(smallest[index]), p_adjusted=float(adjusted[index]),
            smooth_ece=smooth,
            other_gap=None if other_residual is None else float(other_gap[index]),
            significant_views=moved[index],
            weight=None if row_weights is None else float(totals[index]),
            n_eff=None if row_weights is None else float(n_eff[index])))
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
        *(["Rows weighted: gaps, rates and smooth ECE are weighted means; the gap's "
           "standard error is the sandwich estimate of a weighted mean with Kish's n_eff - 1 "
           "degrees of freedom; the least support counts rows."]
          if row_weights is not None else []),
    )
    return SubgroupAudit(tuple(subgroups), n_rows, int(order.size), support,
                         float(np.average(residual, weights=row_weights)), level, n_bins,
                         notes, view, row_weights is not None)


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


def _weighted_t_tests(sums: NDArray[np.float64], squares: NDArray[np.float64],
                      cross: NDArray[np.float64], weight_squares: NDArray[np.float64],
                      totals: NDArray[np.float64], counts: NDArray[np.float64],
                      n_eff: NDArray[np.float64]
                      ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Weighted mean residual of each slice (``sums`` = sum w r over ``totals`` = sum w),
    its sandwich standard error from ``squares`` = sum w^2 r^2, ``cross`` = sum w^2 r and
    ``weight_squares`` = sum w^2, and the two-sided t test of 0 on n_eff - 1 degrees of
    freedom (module docstring, "Row weights")."""
    gap = sums / totals
    spread = np.maximum(squares - 2 * gap * cross + gap**2 * weight_squares, 0.0)
    error = np.sqrt(counts / np.maximum(counts - 1, 1) * spread) / totals
    t_stat = np.divide(gap, error, out=np.where(gap == 0, 0.0, np.inf), where=error > 0)
    freedom = np.maximum(n_eff - 1, 1)
    return gap, error, np.clip(2 * stats.t.sf(np.abs(t_stat), freedom), 0.0, 1.0)


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
