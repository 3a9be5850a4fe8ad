"""Mergeable per-partition summaries of feature columns.

Used by :mod:`calibcore.partitioned.variables`, which reads every partition three
times; each pass reduces a partition to one summary per feature where it lies, and
two summaries of the same pass merge into the summary of both partitions (pairwise,
in any grouping, so the result is the same on any partitioning):

1. :func:`scan_partition` -> :class:`FeatureScan`: rows, missing rows and sums per
   distinct value (every value of a categorical column; of a numeric column only while
   it has at most ``limit`` values, since a column with more is binned), and for a
   numeric column the coarse cell counts and the extreme order keys of its finite
   values (:mod:`calibcore.partitioned.exact_quantiles`).
2. :func:`count_partition` -> :class:`CellCounts`: the finite values of each numeric
   feature per cell of its :class:`calibcore.partitioned.FloatCells`, with each
   cell's smallest and largest value.
3. :func:`collect_partition` -> :class:`FeatureValues`: the distinct values of a few
   *target* cells with their sums, the sums of the runs of cells between target cells
   (*segments*), the sums of the LOESS groups (:mod:`calibcore.partitioned._binned_loess`) and, for
   a variable of few rows, the rows themselves.

The sums of a set of rows are :data:`STATISTICS`, of the top-label view
(:mod:`calibcore.variable`): rows, errors ``1[y != argmax]``, predicted errors
``1 - max_k p_k`` and their squares. With row weights (a
:class:`calibcore.partitioned.weighting.Weighting`: a weight column, the negatives'
1 / rate, or both) the sums are :data:`WEIGHTED_STATISTICS`: rows, the weighted sums of
the same three and the weight, and every pass sums weight where it counted rows (the
cells' weight, the LOESS groups' weight).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from calibcore.partitioned._group_sums import loess_group_sums, summed, summed_where
from calibcore.partitioned._row_statistics import (
    STATISTICS,
    WEIGHTED_STATISTICS,
    _row_statistics,
    _sums_of,
    _weights_of,
)
from calibcore.partitioned.exact_quantiles import (
    FloatCells,
    coarse_counts,
    float_keys,
    merge_coarse_counts,
)
from calibcore.partitioned.partitions import partition_rows
from calibcore.partitioned.weighting import Weighting

_Rows = TypeVar("_Rows", pd.Series, NDArray[np.float64])

CoarseCounts = tuple[NDArray[np.int64], NDArray[np.int64]]
#: Values looked at before hashing a whole capped column.
_PREFIX = 4096


@dataclass(frozen=True)
class FeatureSpec:
    """A feature as the first pass reads it.

    Attributes
    ----------
    name : str
    numeric : bool
        Numeric dtype (not boolean): binned unless it has few distinct values.
    limit : int or None
        Most distinct non-missing values whose sums are kept (None: all of them).
    """

    name: str
    numeric: bool
    limit: int | None


@dataclass(frozen=True)
class FeatureScan:
    """Pass one's summary of a feature.

    Attributes
    ----------
    n_rows, n_missing, n_finite : int
        Rows, rows where the value is missing (NaN, None, NA) and rows with a finite
        number (numeric columns; 0 otherwise).
    values : pandas.DataFrame or None
        :data:`STATISTICS` per distinct non-missing value (index), unordered; None
        once there are more than ``limit`` values.
    limit : int or None
    coarse : tuple of two ndarrays or None
        Coarse cells of the finite values and their counts (numeric columns).
    min_key, max_key : int or None
        Extreme order keys of the finite values (None without any).
    integral : bool
        Whether every finite value is a whole number (the histogram under the curves
        then has a bar per integer, as :func:`calibcore.variable.loess_curves` draws it).
    integral_weights : bool
        Whether every weight of a row where the value is present is a whole number
        (integer weights: quantiles of the repeated rows; else the weighted inverted CDF).
    n_positive : int
        Rows where the value is present (finite, for a numeric column) of positive weight
        (every such row when unweighted).
    """

    n_rows: int
    n_missing: int
    n_finite: int
    values: pd.DataFrame | None
    limit: int | None
    coarse: CoarseCounts | None
    min_key: int | None
    max_key: int | None
    integral: bool = True
    integral_weights: bool = True
    n_positive: int = 0

    def merge(self, other: FeatureScan) -> FeatureScan:
        values = None
        if self.values is not None and other.values is not None:
            values = _capped(merge_value_sums(self.values, other.values), self.limit)
        coarse = (None if self.coarse is None or other.coarse is None
                  else merge_coarse_counts(self.coarse, other.coarse))
        keys = [key for key in (self.min_key, other.min_key) if key is not None]
        top = [key for key in (self.max_key, other.max_key) if key is not None]
        return FeatureScan(self.n_rows + other.n_rows, self.n_missing + other.n_missing,
                           self.n_finite + other.n_finite, values, self.limit, coarse,
                           min(keys) if keys else None, max(top) if top else None,
                           self.integral and other.integral,
                           self.integral_weights and other.integral_weights,
                           self.n_positive + other.n_positive)


@dataclass(frozen=True)
class CollectPlan:
    """What pass three collects of a numeric feature.

    Attributes
    ----------
    cells : FloatCells
    targets : ndarray of int64
        Target cells, ascending: their distinct values are collected.
    group_starts : ndarray of int64
        First cell of each LOESS group, ascending (the first is 0).
    group_references : ndarray of float64
        A value in each group, subtracted from V before summing (no precision lost to
        a large offset).
    gather_rows : bool
        Collect the rows too (a variable of few rows, smoothed exactly).
    """

    cells: FloatCells
    targets: NDArray[np.int64]
    group_starts: NDArray[np.int64]
    group_references: NDArray[np.float64]
    gather_rows: bool

    @functools.cached_property
    def lookup(self) -> tuple[NDArray[np.bool_], NDArray[np.intp], NDArray[np.intp]]:
        """Per cell: whether it is a target cell, its segment and its LOESS group (built
        once per plan where it is used, so a row's are three reads, not three searches)."""
        every = np.arange(self.cells.n_cells)
        target = np.zeros(self.cells.n_cells, dtype=bool)
        target[self.targets] = True
        segment = np.searchsorted(self.targets, every)
        group = np.searchsorted(self.group_starts, every, side="right") - 1
        return target, segment, group


@dataclass(frozen=True)
class FeatureValues:
    """Pass three's summary of a numeric feature.

    Attributes
    ----------
    values : pandas.DataFrame
        :data:`STATISTICS` per distinct finite value lying in a target cell (index).
    segments : ndarray of shape (n_targets + 1, 4)
        :data:`STATISTICS` of the rows in the cells before the first target cell,
        between consecutive ones and after the last.
    groups : ndarray of shape (n_groups, 7)
        Sums per LOESS group, columns as
        :attr:`calibcore.partitioned._binned_loess.GroupSums.COLUMNS`.
    rows : ndarray of shape (n_rows, 3), or (n_rows, 4) when weighted, or None
        V, error, predicted error (and weight) of every row in the table's order (when
        gathered).
    """

    values: pd.DataFrame
    segments: NDArray[np.float64]
    groups: NDArray[np.float64]
    rows: NDArray[np.float64] | None

    def merge(self, other: FeatureValues) -> FeatureValues:
        rows = (None if self.rows is None or other.rows is None
                else np.concatenate([self.rows, other.rows]))
        return FeatureValues(merge_value_sums(self.values, other.values),
                             self.segments + other.segments, self.groups + other.groups, rows)


def merge_value_sums(first: pd.DataFrame, second: pd.DataFrame) -> pd.DataFrame:
    """Sums per value of two tables (values present in both are added)."""
    return pd.concat([first, second]).groupby(level=0, sort=False).sum()


def _capped(values: pd.DataFrame, limit: int | None) -> pd.DataFrame | None:
    return None if limit is not None and len(values) > limit else values


def _value_sums(values: pd.Series | NDArray[np.float64], statistics: NDArray[np.float64],
                limit: int | None = None) -> pd.DataFrame | None:
    """:data:`STATISTICS` (or :data:`WEIGHTED_STATISTICS`) per distinct value (None beyond
    ``limit`` values)."""
    if limit is not None:
        head = values.iloc[:_PREFIX] if isinstance(values, pd.Series) else values[:_PREFIX]
        if len(pd.unique(head)) > limit:
            return None  # a continuous column: no need to hash all of it to know
    codes, uniques = pd.factorize(values)
    if limit is not None and len(uniques) > limit:
        return None
    index = pd.Index(uniques)
    if index.dtype.kind not in "iuf":  # strings, booleans, categories: plain objects
        index = pd.Index(np.asarray(uniques, dtype=object), dtype=object)
    return pd.DataFrame(summed(codes, statistics, len(index)), index=index,
                        columns=_names(statistics.shape[1]))


def _names(n_columns: int) -> list[str]:
    return list(WEIGHTED_STATISTICS if n_columns == len(WEIGHTED_STATISTICS) else STATISTICS)


def _finite(part: pd.DataFrame, name: str) -> tuple[NDArray[np.bool_], NDArray[np.float64]]:
    """Rows where a numeric feature is finite, and their values."""
    numbers = part[name].to_numpy(dtype=np.float64, na_value=np.nan)
    finite = np.isfinite(numbers)
    return finite, _kept(finite, numbers) + 0.0  # -0.0 is 0.0, as for the order keys


def _kept(keep: NDArray[np.bool_], rows: _Rows) -> _Rows:
    """``rows[keep]``, or ``rows`` themselves when every row is kept (most partitions of
    most columns: no copy of every row, and no new index for a series)."""
    return rows if keep.all() else rows[keep]


def scan_partition(part: pd.DataFrame, label: str, probabilities: Sequence[str],
                   classes: Sequence[str], features: Sequence[FeatureSpec],
                   weighting: Weighting | None = None) -> list[FeatureScan]:
    """Pass one: a :class:`FeatureScan` of each feature."""
    statistics = _row_statistics(part, label, probabilities, classes, weighting)
    weights = _weights_of(statistics)
    sums = _sums_of(statistics)
    scans = []
    for feature in features:
        series = part[feature.name]
        missing = series.isna().to_numpy()
        present = ~missing
        values = _value_sums(_kept(present, series), _kept(present, sums), feature.limit)
        if feature.numeric:
            finite, numbers = _finite(part, feature.name)
            present = finite
        kept = None if weights is None else weights[present]
        integral_weights = kept is None or bool(np.all(kept == np.round(kept)))
        n_positive = int(present.sum()) if kept is None else int((kept > 0).sum())
        if not feature.numeric:
            scans.append(FeatureScan(len(series), int(missing.sum()), 0, values,
                                     feature.limit, None, None, None, True, integral_weights,
                                     n_positive))
            continue
        keys = float_keys(numbers)
        scans.append(FeatureScan(
            len(series), int(missing.sum()), int(finite.sum()), values, feature.limit,
            coarse_counts(keys), int(keys.min()) if keys.size else None,
            int(keys.max()) if keys.size else None,
            bool(np.all(numbers == np.round(numbers))), integral_weights, n_positive))
    return scans


def merge_scans(first: list[FeatureScan], second: list[FeatureScan]) -> list[FeatureScan]:
    return [a.merge(b) for a, b in zip(first, second, strict=True)]


@dataclass(frozen=True)
class CellCounts:
    """Pass two's summary of a numeric feature: per cell, its finite values' count,
    smallest and largest (+inf and -inf in an empty cell), and with row weights the
    cell's weight. A cell whose smallest and largest values are equal holds ties only
    (exactly; LOESS windows end on ties)."""

    counts: NDArray[np.int64]
    minima: NDArray[np.float64]
    maxima: NDArray[np.float64]
    weights: NDArray[np.float64] | None = None

    @classmethod
    def of(cls, cells: FloatCells, numbers: NDArray[np.float64],
           weights: NDArray[np.float64] | None = None) -> CellCounts:
        cell = cells.cells_of(numbers)
        minima = np.full(cells.n_cells, np.inf)
        maxima = np.full(cells.n_cells, -np.inf)
        np.minimum.at(minima, cell, numbers)
        np.maximum.at(maxima, cell, numbers)
        mass = (None if weights is None
                else np.bincount(cell, weights=weights, minlength=cells.n_cells).astype(
                    np.float64))
        return cls(np.bincount(cell, minlength=cells.n_cells).astype(np.int64), minima, maxima,
                   mass)

    def merge(self, other: CellCounts) -> CellCounts:
        mass = (None if self.weights is None or other.weights is None
                else self.weights + other.weights)
        return CellCounts(self.counts + other.counts, np.minimum(self.minima, other.minima),
                          np.maximum(self.maxima, other.maxima), mass)


def count_partition(part: pd.DataFrame, label: str, probabilities: Sequence[str],
                    classes: Sequence[str], cells: Sequence[tuple[str, FloatCells]],
                    weighting: Weighting | None = None) -> list[CellCounts]:
    """Pass two: the finite values of each numeric feature per cell (and their weight)."""
    weights = None
    if weighting is not None and weighting.weighted and part.shape[0]:
        labels, _ = partition_rows(part, label, probabilities, classes)
        weights = weighting.of(part, labels)
    elif weighting is not None and weighting.weighted:
        weights = np.empty(0)
    counted = []
    for name, feature_cells in cells:
        finite, numbers = _finite(part, name)
        counted.append(CellCounts.of(feature_cells, numbers,
                                     None if weights is None else weights[finite]))
    return counted


def merge_counts(first: list[CellCounts], second: list[CellCounts]) -> list[CellCounts]:
    return [a.merge(b) for a, b in zip(first, second, strict=True)]


def collect_partition(part: pd.DataFrame, label: str, probabilities: Sequence[str],
                      classes: Sequence[str], plans: Sequence[tuple[str, CollectPlan]],
                      weighting: Weighting | None = None) -> list[FeatureValues]:
    """Pass three: a :class:`FeatureValues` of each numeric feature."""
    statistics = _row_statistics(part, label, probabilities, classes, weighting)
    collected = []
    for name, plan in plans:
        finite, numbers = _finite(part, name)
        collected.append(_collect(numbers, _kept(finite, statistics), plan))
    return collected


def _collect(numbers: NDArray[np.float64], statistics: NDArray[np.float64],
             plan: CollectPlan) -> FeatureValues:
    cell = plan.cells.cells_of(numbers)
    is_target, segment_of, group_of = plan.lookup
    in_target = is_target[cell]
    weights, sums = _weights_of(statistics), _sums_of(statistics)
    values = _value_sums(numbers[in_target], sums[in_target])
    segments = summed_where(segment_of[cell], ~in_target, sums, plan.targets.size + 1)
    group = group_of[cell]
    offset = numbers - plan.group_references[group]
    errors, predicted = statistics[:, 1], statistics[:, 2]  # weighted, with weights
    mass = statistics[:, 0] if weights is None else weights
    groups = loess_group_sums(group, mass, offset, errors, predicted, statistics[:, 3],
                              plan.group_starts.size, weighted=weights is not None)
    rows = None
    if plan.gather_rows:
        rows = (np.column_stack([numbers, errors, predicted]) if weights is None else
                np.column_stack([numbers, statistics[:, 5], statistics[:, 6], weights]))
    return FeatureValues(values if values is not None else _no_values(sums.shape[1]),
                         segments, groups, rows)


def _no_values(n_columns: int = len(STATISTICS)) -> pd.DataFrame:
    return pd.DataFrame(np.empty((0, n_columns)), index=pd.Index([], dtype=np.float64),
                        columns=_names(n_columns))


def merge_collected(first: list[FeatureValues],
                    second: list[FeatureValues]) -> list[FeatureValues]:
    return [a.merge(b) for a, b in zip(first, second, strict=True)]


__all__ = ["STATISTICS", "WEIGHTED_STATISTICS", "CellCounts", "CollectPlan", "FeatureScan",
           "FeatureSpec", "FeatureValues", "collect_partition", "count_partition",
           "merge_collected", "merge_counts", "merge_scans", "merge_value_sums",
           "scan_partition"]
