"""Sums of a partition's rows per group, compiled: the per-variable passes' inner loop.

Each pass over a partition reduces its rows to sums per group (per distinct value, per
segment between target cells, per LOESS group). NumPy did it one ``np.bincount`` per
column of a (rows, columns) matrix built for the purpose: the matrix, a contiguous copy
of each column and the boolean selections were most of a Dask report's per-variable
time (100M rows: a fifth of its CPU). These kernels read the rows once and add them to
their group in row order, as ``np.bincount`` does, so every sum is the same double,
bit for bit.

Private. A group outside ``0 <= group < size``, or columns of other lengths than the
groups, raise ``ValueError``.
"""

from __future__ import annotations

import numba
import numpy as np
from numpy.typing import NDArray


def summed(index: NDArray[np.intp], statistics: NDArray[np.float64],
           size: int) -> NDArray[np.float64]:
    """Column sums of ``statistics`` (rows x columns) per index value: (size, columns),
    ``np.bincount(index, weights=column, minlength=size)`` of each column."""
    return _summed(*_rows(index, statistics), None, int(size))


def summed_where(index: NDArray[np.intp], keep: NDArray[np.bool_],
                 statistics: NDArray[np.float64], size: int) -> NDArray[np.float64]:
    """:func:`summed` of the rows where ``keep`` holds (``index`` and ``statistics`` of
    every row), without selecting them first."""
    index, statistics = _rows(index, statistics)
    keep = np.asarray(keep, dtype=np.bool_)
    if keep.shape != index.shape:
        raise ValueError("keep must have a value for each row.")
    return _summed(index, statistics, keep, int(size))


def _rows(index: NDArray[np.intp], statistics: NDArray[np.float64]
          ) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """The groups (1-D) and statistics (2-D, a row per group) as the kernels take them."""
    index = np.asarray(index, dtype=np.int64)
    statistics = np.asarray(statistics, dtype=np.float64)
    if index.ndim != 1 or statistics.ndim != 2 or statistics.shape[0] != index.size:
        raise ValueError("statistics must have a row for each group index.")
    return index, statistics


@numba.njit(nogil=True, cache=True)
def _summed(index: NDArray[np.int64], statistics: NDArray[np.float64],
            keep: NDArray[np.bool_] | None, size: int) -> NDArray[np.float64]:
    sums = np.zeros((size, statistics.shape[1]))
    for row in range(index.size):
        if keep is not None and not keep[row]:
            continue
        group = index[row]
        if group < 0 or group >= size:
            raise ValueError("a row's group is outside the groups")
        for column in range(statistics.shape[1]):
            sums[group, column] += statistics[row, column]
    return sums


def loess_group_sums(group: NDArray[np.intp], mass: NDArray[np.float64],
                     offset: NDArray[np.float64], errors: NDArray[np.float64],
                     predicted: NDArray[np.float64], last: NDArray[np.float64],
                     size: int, *, weighted: bool) -> NDArray[np.float64]:
    """Sums per LOESS group of the columns of
    :attr:`calibcore.partitioned._binned_loess.GroupSums.COLUMNS`: mass, mass x offset
    (the offset alone when the mass is a row count), error, error x offset, predicted
    error, predicted error x offset and ``last``; (size, 7), the :func:`summed` of
    those columns stacked."""
    group = np.asarray(group, dtype=np.int64)
    mass, offset, errors, predicted, last = (
        np.asarray(column, dtype=np.float64)
        for column in (mass, offset, errors, predicted, last))
    if group.ndim != 1 or any(column.shape != group.shape
                              for column in (mass, offset, errors, predicted, last)):
        raise ValueError("every column must have a value for each group index.")
    return _loess_group_sums(group, mass, offset, errors, predicted, last, int(size),
                             weighted)


@numba.njit(nogil=True, cache=True)
def _loess_group_sums(group: NDArray[np.int64], mass: NDArray[np.float64],
                      offset: NDArray[np.float64], errors: NDArray[np.float64],
                      predicted: NDArray[np.float64], last: NDArray[np.float64],
                      size: int, weighted: bool) -> NDArray[np.float64]:
    sums = np.zeros((size, 7))
    for row in range(group.size):
        at = group[row]
        if at < 0 or at >= size:
            raise ValueError("a row's group is outside the groups")
        distance = offset[row]
        sums[at, 0] += mass[row]
        sums[at, 1] += mass[row] * distance if weighted else distance
        sums[at, 2] += errors[row]
        sums[at, 3] += errors[row] * distance
        sums[at, 4] += predicted[row]
        sums[at, 5] += predicted[row] * distance
        sums[at, 6] += last[row]
    return sums
