"""One variable (a feature column) for variable-based calibration: validation and bins.

Used by :mod:`calibcore.variable`. A variable is *numeric* (equal-mass bins
with ``pandas.qcut(..., duplicates="drop")`` semantics) or *categorical* (one
bin per distinct value). Missing values (NaN, None, NA, +/-inf) are left out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from calibcore.data.weights import check_sample_weight
from calibcore.exceptions import CalibrationInputError

VariableKind = Literal["auto", "numeric", "categorical"]
KINDS: tuple[VariableKind, ...] = ("auto", "numeric", "categorical")


@dataclass(frozen=True)
class Variable:
    """A validated variable.

    Attributes
    ----------
    kind : {"numeric", "categorical"}
    used : ndarray of bool, shape (n_rows,)
        Rows where V is present.
    values : ndarray of shape (n_used,)
        V on the used rows (numeric) or the category codes (categorical).
    categories : ndarray of object
        Category labels by code (empty when numeric).
    """

    kind: Literal["numeric", "categorical"]
    used: NDArray[np.bool_]
    values: NDArray[np.float64]
    categories: NDArray[np.object_]

    @property
    def n_missing(self) -> int:
        return int(self.used.size - self.values.size)


def check_kind(kind: str) -> VariableKind:
    """A valid ``kind`` option."""
    for known in KINDS:
        if kind == known:
            return known
    raise CalibrationInputError(f"kind must be one of {', '.join(KINDS)}; got {kind!r}.")


def feature_table(features: object, n_rows: int) -> pd.DataFrame:
    """Features as a DataFrame of n_rows (array columns are named x0, x1, ...)."""
    if isinstance(features, pd.Series):
        features = features.to_frame()
    if isinstance(features, pd.DataFrame):
        table = features.reset_index(drop=True)
    else:
        array = np.asarray(features)
        if array.ndim != 2:
            raise CalibrationInputError(
                f"features must be 2-D (rows x variables); got shape {array.shape}."
            )
        names = [f"x{j}" for j in range(array.shape[1])]
        table = pd.DataFrame(array, columns=names).infer_objects()
    if table.shape[0] != n_rows:
        raise CalibrationInputError(
            f"features have {table.shape[0]} rows but there are {n_rows} predictions."
        )
    return table


def prepare_variable(v: object, n_rows: int, kind: VariableKind, name: str) -> Variable:
    """Validate V and decide numeric vs categorical.

    ``"auto"`` makes strings, booleans and pandas categoricals categorical and
    everything numeric numeric.
    """
    if isinstance(v, pd.Series):
        series = v.reset_index(drop=True)
    else:
        array = np.asarray(v)
        if array.ndim != 1:
            raise CalibrationInputError(
                f"{name} must be 1-D with one value per row; got shape {array.shape}.", column=name
            )
        series = pd.Series(array).infer_objects()
    if len(series) != n_rows:
        raise CalibrationInputError(
            f"{name} has {len(series)} values but there are {n_rows} predictions.", column=name
        )
    numeric = pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series)
    if kind == "numeric" and not numeric:
        raise CalibrationInputError(
            f"{name} is not numeric (dtype {series.dtype}); treat it as categorical instead.",
            column=name,
        )
    missing = series.isna().to_numpy()
    if kind == "categorical" or not numeric:
        codes, labels = _factorize(series[~missing])
        return Variable("categorical", ~missing, codes.astype(np.float64), labels)
    values = series.to_numpy(dtype=np.float64, na_value=np.nan)
    used = np.isfinite(values)
    return Variable("numeric", used, values[used], np.empty(0, dtype=object))


def _factorize(values: pd.Series) -> tuple[NDArray[np.intp], NDArray[np.object_]]:
    try:
        codes, uniques = pd.factorize(values, sort=True)
    except TypeError:  # mixed types that do not sort: keep first-seen order
        codes, uniques = pd.factorize(values, sort=False)
    return np.asarray(codes, dtype=np.intp), np.asarray(uniques, dtype=object)


def qcut_bins(
    values: NDArray[np.float64], n_bins: int
) -> tuple[NDArray[np.intp], NDArray[np.float64]]:
    """Bin index and edges of ``pandas.qcut(values, n_bins, duplicates="drop")``.

    pandas itself is called: its quantile arithmetic (which nudges inexact
    quantile levels such as 1/3 up by one ulp) decides which bin a value lying
    on an edge falls in. A constant variable (one edge) is one bin.
    """
    if values.size == 0 or values.min() == values.max():
        return np.zeros(values.size, dtype=np.intp), np.repeat(values[:1], 2)
    codes, edges = pd.qcut(values, n_bins, labels=False, retbins=True, duplicates="drop")
    return np.asarray(codes, dtype=np.intp), np.asarray(edges, dtype=np.float64)


def integer_weights(weights: NDArray[np.float64]) -> bool:
    """Whether every weight is a whole number (frequency weights: rows repeated)."""
    return bool(np.array_equal(weights, np.round(weights)))


def weighted_quantiles(sorted_values: NDArray[np.float64], weights: NDArray[np.float64],
                       levels: NDArray[np.float64]) -> NDArray[np.float64]:
    """Quantiles of sorted values whose row i stands for ``weights[i]`` rows (all > 0).

    Integer weights (frequency weights) give numpy's "linear" quantiles of the rows
    repeated by their weights bit for bit: position ``h = (sum w - 1) q`` of the repeated
    rows, between the rows holding positions floor(h) and floor(h) + 1, with numpy's
    lerp. Other weights (survey weights) give the weighted inverted-CDF quantile, the
    smallest value whose cumulative share of the weight reaches q, which does not change
    when every weight is scaled (the convention of
    :func:`calibcore.metrics.binning.sorted_weighted_equal_mass_edges`).
    """
    cumulative = np.cumsum(weights, dtype=np.float64)
    total = cumulative[-1]
    last = sorted_values.size - 1
    if not integer_weights(weights):
        position = np.searchsorted(cumulative, levels * total, side="left")
        return np.asarray(sorted_values[np.minimum(position, last)], dtype=np.float64)
    virtual = (total - 1.0) * levels
    below = np.floor(virtual)
    above = np.minimum(below + 1.0, total - 1.0)
    gamma = virtual - below
    low = sorted_values[np.minimum(np.searchsorted(cumulative, below, side="right"), last)]
    high = sorted_values[np.minimum(np.searchsorted(cumulative, above, side="right"), last)]
    difference = high - low  # numpy's _lerp, so the edges equal np.quantile's exactly
    quantiles = low + difference * gamma
    np.subtract(high, difference * (1.0 - gamma), out=quantiles, where=gamma >= 0.5)
    return np.asarray(quantiles, dtype=np.float64)


def qcut_levels(n_bins: int) -> NDArray[np.float64]:
    """The quantile levels of ``pandas.qcut(values, n_bins)``: ``linspace(0, 1, n_bins + 1)``
    with the levels that are not exact in binary nudged up by one ulp, as pandas does."""
    levels = np.linspace(0.0, 1.0, n_bins + 1)
    inexact = n_bins * levels != np.arange(n_bins + 1)
    return np.where(inexact, np.nextafter(levels, 1.0), levels)


def weighted_qcut_bins(
    values: NDArray[np.float64], weights: NDArray[np.float64], n_bins: int
) -> tuple[NDArray[np.intp], NDArray[np.float64]]:
    """:func:`qcut_bins` with row weights: equal-weight bins.

    The edges are :func:`weighted_quantiles` of the rows of positive weight at
    :func:`qcut_levels`, duplicates dropped, and the bins right-closed with the first
    holding its left edge, as ``pandas.qcut`` does; so integer weights give exactly the
    bins of the rows repeated by their weights. Rows of zero weight weigh nothing; they
    are put in the bin their value falls in (the nearest end bin outside the edges).
    """
    positive = weights > 0
    kept = values[positive]
    if kept.size == 0 or kept.min() == kept.max():
        first = kept[:1] if kept.size else values[:1]
        return np.zeros(values.size, dtype=np.intp), np.repeat(first, 2)
    order = np.argsort(kept, kind="stable")
    edges = np.unique(weighted_quantiles(kept[order], weights[positive][order],
                                         qcut_levels(n_bins)))
    index = np.searchsorted(edges, values, side="left")
    index[values == edges[0]] = 1
    return np.clip(index - 1, 0, edges.size - 2).astype(np.intp), edges


def bin_index(variable: Variable, n_bins: int, weights: NDArray[np.float64] | None = None
              ) -> tuple[NDArray[np.intp], int]:
    """Bin of each used row and the number of bins.

    Numeric bins are right-closed with the first one holding its left edge, as
    in ``pandas.qcut``; categorical bins are the category codes. ``weights`` (of the
    used rows) make numeric bins of equal weight (:func:`weighted_qcut_bins`).
    """
    if variable.kind == "categorical":
        return variable.values.astype(np.intp), max(variable.categories.size, 1)
    index, edges = _numeric_bins(variable.values, n_bins, weights)
    return index, max(edges.size - 1, 1)


def _numeric_bins(values: NDArray[np.float64], n_bins: int,
                  weights: NDArray[np.float64] | None
                  ) -> tuple[NDArray[np.intp], NDArray[np.float64]]:
    if weights is None:
        return qcut_bins(values, n_bins)
    return weighted_qcut_bins(values, weights, n_bins)


def bin_labels(
    variable: Variable, n_bins: int, filled: NDArray[np.bool_],
    weights: NDArray[np.float64] | None = None,
) -> tuple[NDArray[np.object_], NDArray[np.float64], NDArray[np.float64]]:
    """Label, left and right edge of each non-empty bin (edges NaN for categories)."""
    if variable.kind == "categorical":
        empty = np.full(int(filled.sum()), np.nan)
        return variable.categories[filled[: variable.categories.size]], empty, empty.copy()
    edges = _numeric_bins(variable.values, n_bins, weights)[1]
    positions = np.flatnonzero(filled)
    left, right = edges[:-1][positions], edges[1:][positions]
    labels = [
        f"{'[' if position == 0 else '('}{low:.6g}, {high:.6g}]"
        for position, low, high in zip(positions, left, right, strict=True)
    ]
    return np.asarray(labels, dtype=object), left, right


def binned_vece(index: NDArray[np.intp], size: int, residual: NDArray[np.float64],
                weights: NDArray[np.float64] | None = None) -> float:
    """``(1/n) sum_b |sum_{i in b} residual_i|``, residual = predicted error - error.

    Equal to ``sum_b (n_b / n) |mean predicted error_b - mean error_b|``, the VECE of
    Kelly & Smyth 2023, eq. 7. With row ``weights``: ``(1/W) sum_b |sum_{i in b} w_i
    residual_i|`` (W the total weight), i.e. ``sum_b (W_b / W) |weighted mean predicted
    error_b - weighted mean error_b|``.
    """
    if residual.size == 0:
        return float("nan")
    if weights is None:
        sums = np.bincount(index, weights=residual, minlength=size)
        return float(np.abs(sums).sum() / residual.size)
    sums = np.bincount(index, weights=weights * residual, minlength=size)
    return float(np.abs(sums).sum() / weights.sum())


def plain_weights(sample_weight: ArrayLike | None, n_rows: int,
                  column: str = "sample_weight") -> NDArray[np.float64] | None:
    """Validated row weights, None without them or when every weight is 1 (each row
    repeated once: the unweighted computation, bit for bit)."""
    weights = check_sample_weight(sample_weight, n_rows, column=column)
    if weights is None or bool(np.all(weights == 1.0)):
        return None
    return weights


def used_weights(sample_weight: ArrayLike | None,
                 used: NDArray[np.bool_]) -> NDArray[np.float64] | None:
    """The validated weights of the rows where V is present (None without weights, or when
    all are 1); some must be positive."""
    weights = plain_weights(sample_weight, used.size)
    if weights is None:
        return None
    kept = weights[used]
    if not (kept > 0).any():
        raise CalibrationInputError(
            "every row where v is present has weight 0; the weighted VECE and curves are "
            "undefined.", code="invalid_weight", column="sample_weight")
    return kept
