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
``1 - max_k p_k`` and their squares.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from calibcore._validation import check_predictions
from calibcore.data.views import score_outcome
from calibcore.partitioned.exact_quantiles import (
    FloatCells,
    coarse_counts,
    float_keys,
    merge_coarse_counts,
)
from calibcore.partitioned.partitions import partition_rows

#: Sums kept for every set of rows (columns of the sums' arrays and tables).
STATISTICS = ("n", "error", "predicted_error", "predicted_error_squares")

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
                           self.integral and other.integral)


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
    rows : ndarray of shape (n_rows, 3) or None
        V, error and predicted error of every row in the table's order (when gathered).
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


def summed(index: NDArray[np.intp], statistics: NDArray[np.float64],
           size: int) -> NDArray[np.float64]:
    """Column sums of ``statistics`` (rows x columns) per index value: (size, columns)."""
    sums = np.stack([np.bincount(index, weights=column, minlength=size)
                     for column in statistics.T], axis=1)
    return np.asarray(sums, dtype=np.float64).reshape(size, statistics.shape[1])


def merge_value_sums(first: pd.DataFrame, second: pd.DataFrame) -> pd.DataFrame:
    """Sums per value of two tables (values present in both are added)."""
    return pd.concat([first, second]).groupby(level=0, sort=False).sum()


def _capped(values: pd.DataFrame, limit: int | None) -> pd.DataFrame | None:
    return None if limit is not None and len(values) > limit else values


def _value_sums(values: pd.Series | NDArray[np.float64], statistics: NDArray[np.float64],
                limit: int | None = None) -> pd.DataFrame | None:
    """:data:`STATISTICS` per distinct value (None beyond ``limit`` values)."""
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
                        columns=list(STATISTICS))


def _row_statistics(part: pd.DataFrame, label: str, probabilities: Sequence[str],
                    classes: Sequence[str]) -> NDArray[np.float64]:
    """:data:`STATISTICS` of each row of a partition (rows x 4)."""
    if part.shape[0] == 0:
        return np.empty((0, len(STATISTICS)))
    labels, proba = check_predictions(*partition_rows(part, label, probabilities, classes))
    top = score_outcome(labels, proba, "top_label")
    predicted, errors = 1.0 - top.scores[0], 1.0 - top.outcomes[0]
    return np.column_stack([np.ones_like(errors), errors, predicted, predicted * predicted])


def _finite(part: pd.DataFrame, name: str) -> tuple[NDArray[np.bool_], NDArray[np.float64]]:
    """Rows where a numeric feature is finite, and their values."""
    numbers = part[name].to_numpy(dtype=np.float64, na_value=np.nan)
    finite = np.isfinite(numbers)
    return finite, numbers[finite] + 0.0  # -0.0 is 0.0, as for the order keys


def scan_partition(part: pd.DataFrame, label: str, probabilities: Sequence[str],
                   classes: Sequence[str], features: Sequence[FeatureSpec]
                   ) -> list[FeatureScan]:
    """Pass one: a :class:`FeatureScan` of each feature."""
    statistics = _row_statistics(part, label, probabilities, classes)
    scans = []
    for feature in features:
        series = part[feature.name]
        missing = series.isna().to_numpy()
        values = _value_sums(series[~missing], statistics[~missing], feature.limit)
        if not feature.numeric:
            scans.append(FeatureScan(len(series), int(missing.sum()), 0, values,
                                     feature.limit, None, None, None))
            continue
        finite, numbers = _finite(part, feature.name)
        keys = float_keys(numbers)
        scans.append(FeatureScan(
            len(series), int(missing.sum()), int(finite.sum()), values, feature.limit,
            coarse_counts(keys), int(keys.min()) if keys.size else None,
            int(keys.max()) if keys.size else None,
            bool(np.all(numbers == np.round(numbers)))))
    return scans


def merge_scans(first: list[FeatureScan], second: list[FeatureScan]) -> list[FeatureScan]:
    return [a.merge(b) for a, b in zip(first, second, strict=True)]


@dataclass(frozen=True)
class CellCounts:
    """Pass two's summary of a numeric feature: per cell, its finite values' count,
    smallest and largest (+inf and -inf in an empty cell). A cell whose smallest and
    largest values are equal holds ties only (exactly; LOESS windows end on ties)."""

    counts: NDArray[np.int64]
    minima: NDArray[np.float64]
    maxima: NDArray[np.float64]

    @classmethod
    def of(cls, cells: FloatCells, numbers: NDArray[np.float64]) -> CellCounts:
        cell = cells.cells_of(numbers)
        minima = np.full(cells.n_cells, np.inf)
        maxima = np.full(cells.n_cells, -np.inf)
        np.minimum.at(minima, cell, numbers)
        np.maximum.at(maxima, cell, numbers)
        return cls(np.bincount(cell, minlength=cells.n_cells).astype(np.int64), minima, maxima)

    def merge(self, other: CellCounts) -> CellCounts:
        return CellCounts(self.counts + other.counts, np.minimum(self.minima, other.minima),
                          np.maximum(self.maxima, other.maxima))


def count_partition(part: pd.DataFrame, label: str, probabilities: Sequence[str],
                    classes: Sequence[str], cells: Sequence[tuple[str, FloatCells]]
                    ) -> list[CellCounts]:
    """Pass two: the finite values of each numeric feature per cell."""
    return [CellCounts.of(feature_cells, _finite(part, name)[1])
            for name, feature_cells in cells]


def merge_counts(first: list[CellCounts], second: list[CellCounts]) -> list[CellCounts]:
    return [a.merge(b) for a, b in zip(first, second, strict=True)]


def collect_partition(part: pd.DataFrame, label: str, probabilities: Sequence[str],
                      classes: Sequence[str], plans: Sequence[tuple[str, CollectPlan]]
                      ) -> list[FeatureValues]:
    """Pass three: a :class:`FeatureValues` of each numeric feature."""
    statistics = _row_statistics(part, label, probabilities, classes)
    collected = []
    for name, plan in plans:
        finite, numbers = _finite(part, name)
        collected.append(_collect(numbers, statistics[finite], plan))
    return collected


def _collect(numbers: NDArray[np.float64], statistics: NDArray[np.float64],
             plan: CollectPlan) -> FeatureValues:
    cell = plan.cells.cells_of(numbers)
    is_target, segment_of, group_of = plan.lookup
    in_target = is_target[cell]
    values = _value_sums(numbers[in_target], statistics[in_target])
    segments = summed(segment_of[cell[~in_target]], statistics[~in_target],
                      plan.targets.size + 1)
    group = group_of[cell]
    offset = numbers - plan.group_references[group]
    errors, predicted = statistics[:, 1], statistics[:, 2]
    # in the order of calibcore.partitioned._binned_loess.GroupSums.COLUMNS
    columns = np.column_stack([statistics[:, 0], offset, errors, errors * offset, predicted,
                               predicted * offset, statistics[:, 3]])
    groups = summed(group, columns, plan.group_starts.size)
    rows = np.column_stack([numbers, errors, predicted]) if plan.gather_rows else None
    return FeatureValues(values if values is not None else _no_values(), segments, groups,
                         rows)


def _no_values() -> pd.DataFrame:
    return pd.DataFrame(np.empty((0, len(STATISTICS))), index=pd.Index([], dtype=np.float64),
                        columns=list(STATISTICS))


def merge_collected(first: list[FeatureValues],
                    second: list[FeatureValues]) -> list[FeatureValues]:
    return [a.merge(b) for a, b in zip(first, second, strict=True)]


__all__ = ["STATISTICS", "CellCounts", "CollectPlan", "FeatureScan", "FeatureSpec",
           "FeatureValues", "collect_partition", "count_partition", "merge_collected",
           "merge_counts", "merge_scans", "merge_value_sums", "scan_partition", "summed"]
