"""The k nearest calibration rows by KL on the binary simplex: a window of the sorted rows.

The neighbourhoods of Valk & Kull 2023 (see :mod:`calibcore.recalibration.lece`) in the
binary case. When every calibration row is exactly ``(1 - b, b)``, the quantity that
ranks them for a query (a0, a1),

    CE(b) = -a0 log(1 - b) - a1 log b      (KL(a || (1 - b, b)) minus a constant),

is convex in b (its minimum is at b = a1 / (a0 + a1)). Along the calibration rows
sorted by b it therefore falls and then rises, so a query's k nearest rows are k
*consecutive* sorted rows, and a sum over them is a difference of prefix sums.
Two binary searches per query row find the window: the lowest row (where CE stops
falling), then the window's start. That is O((n_query + n) log n) in place of the
O(n_query n) distances of the general case.

Ties. Identical calibration rows are equally distant: they are taken lowest index
first, as a stable sort of the distances would take them (the general search
takes them in no documented order). Distinct rows at exactly the same distance
(a measure-zero event) are taken in sorted order.

The distances are evaluated with the same clipping as the general case
(:data:`~calibcore.recalibration.lece.KL_CLIP`), so the neighbourhoods are the
same up to rounding in the last bit. The binary searches run in compiled loops, one
query row at a time (:func:`_search_lowest_rows`, :func:`_search_window_starts`): as
NumPy operations over a block of rows they were half of LECE's cross-validation on
300,000 rows.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numba
import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]
IndexArray = NDArray[np.intp]

#: Query rows per block (bounds the temporaries; the heartbeat is called between blocks).
QUERY_BLOCK = 65_536


def on_binary_curve(reference: FloatArray) -> bool:
    """Whether every row is exactly ``(1 - b, b)`` (how one-column binary input is stored)."""
    return reference.shape[1] == 2 and bool(
        np.array_equal(reference[:, 0], 1.0 - reference[:, 1]))


def onto_binary_curve(proba: FloatArray) -> FloatArray:
    """Two-class rows written as ``(1 - b, b)``, b = P(class 1); other rows as they are.

    Two columns computed apart (a softmax, as temperature scaling's) sum to 1 up to a
    rounding, so about half the rows have a P(class 0) one bit away from ``1 - b``: the
    same points, but not exactly on the curve, and the neighbour search then compares
    every pair of rows. Written on the curve they take the sorted search.
    """
    if proba.shape[1] != 2 or on_binary_curve(proba):
        return proba
    positive = proba[:, 1]
    return np.column_stack((1.0 - positive, positive))


@dataclass(frozen=True, eq=False)
class SortedReference:
    """Calibration rows sorted by b (stable), with what the window searches read.

    Attributes
    ----------
    negative_log : ndarray of shape (n, 2)
        -log of the clipped sorted rows.
    group_start, group_stop : ndarray of shape (n,)
        Sorted positions where the run of rows equal to each row starts and stops.
    distinct : ndarray of shape (m,)
        The first sorted position of each distinct row.
    prefix : ndarray of shape (n + 1, d), extended precision
        Prefix sums of the targets in sorted order (prefix[0] = 0).
    """

    negative_log: FloatArray
    group_start: IndexArray
    group_stop: IndexArray
    distinct: IndexArray
    prefix: NDArray[np.longdouble]

    @classmethod
    def build(cls, reference: FloatArray, targets: FloatArray, clip: float) -> SortedReference:
        order = np.argsort(reference[:, 1], kind="stable")
        values = reference[order, 1]
        prefix = np.zeros((values.size + 1, targets.shape[1]), dtype=np.longdouble)
        # Extended precision keeps differences of large prefix sums exact to ~1e-15.
        np.cumsum(targets[order].astype(np.longdouble), axis=0, out=prefix[1:])
        return cls(
            negative_log=-np.log(np.clip(reference[order], clip, 1.0)),
            group_start=np.searchsorted(values, values, side="left"),
            group_stop=np.searchsorted(values, values, side="right"),
            distinct=np.flatnonzero(np.r_[True, values[1:] != values[:-1]]),
            prefix=prefix,
        )

    @property
    def n_rows(self) -> int:
        return int(self.group_start.size)

    def window_sums(self, query: FloatArray, count: int, lowest: IndexArray) -> FloatArray:
        """Sum of the targets over each query row's ``count`` nearest rows.

        ``lowest`` is the first sorted position of each query row's nearest distinct row
        (:meth:`lowest_rows`).
        """
        start = self._window_starts(query, count, lowest)
        stop = start + count
        left_start, left_stop = self.group_start[start], self.group_stop[start]
        right_start = self.group_start[stop - 1]
        # Runs of identical rows cut by the window edges contribute their lowest-index
        # members: the first ones of the run in the (stable) sorted order.
        taken_left = np.minimum(left_stop, stop) - start
        taken_right = stop - right_start
        one_run = left_stop >= stop
        first_end = np.where(one_run, left_start + count, left_start + taken_left)
        sums = self.prefix[first_end] - self.prefix[left_start]
        rest = ~one_run
        sums[rest] += (self.prefix[right_start[rest] + taken_right[rest]]
                       - self.prefix[left_stop[rest]])
        return sums.astype(np.float64)

    def lowest_rows(self, query: FloatArray) -> IndexArray:
        """Sorted position of the first of the nearest distinct rows, per query row."""
        return _search_lowest_rows(np.ascontiguousarray(query), self.negative_log,
                                   self.distinct)

    def _window_starts(self, query: FloatArray, count: int, lowest: IndexArray) -> IndexArray:
        """First sorted position of each query row's window of ``count`` nearest rows
        (:func:`_search_window_starts`)."""
        return _search_window_starts(np.ascontiguousarray(query), self.negative_log, count,
                                     lowest)


@numba.njit(nogil=True, cache=True, inline="always")
def _distance(query: FloatArray, row: int, negative_log: FloatArray, position: int) -> float:
    """CE of sorted row ``position`` for query row ``row``: a product per class, then
    their sum (the same two roundings as the NumPy expression)."""
    first = query[row, 0] * negative_log[position, 0]
    second = query[row, 1] * negative_log[position, 1]
    return first + second


@numba.njit(nogil=True, cache=True)
def _search_lowest_rows(query: FloatArray, negative_log: FloatArray,
                        distinct: IndexArray) -> IndexArray:
    """Per query row, a binary search over the distinct sorted rows for where CE stops
    falling; the sorted position of the first of those rows."""
    lowest = np.empty(query.shape[0], dtype=np.intp)
    for row in range(query.shape[0]):
        low, high = 0, distinct.size - 1
        while low < high:
            middle = (low + high) // 2
            if (_distance(query, row, negative_log, distinct[middle])
                    > _distance(query, row, negative_log, distinct[min(middle + 1, high)])):
                low = middle + 1
            else:
                high = middle
        lowest[row] = distinct[low]
    return lowest


@numba.njit(nogil=True, cache=True)
def _search_window_starts(query: FloatArray, negative_log: FloatArray, count: int,
                          lowest: IndexArray) -> IndexArray:
    """First sorted position of each query row's window of ``count`` nearest rows.

    Rows are compared by (distance, t) with t = position right of the lowest row
    and -position left of it: a strictly falling-then-rising key along the sorted
    rows even through runs of identical rows, so "the window's first row is farther
    than the row just past its end" holds for every start before the answer and
    for none from it on.
    """
    n_rows = negative_log.shape[0]
    starts = np.empty(query.shape[0], dtype=np.intp)
    for row in range(query.shape[0]):
        low, high = 0, n_rows - count
        while low < high:
            middle = (low + high) // 2
            end = middle + count
            near = _distance(query, row, negative_log, middle)
            far = _distance(query, row, negative_log, min(end, n_rows - 1))
            tie_near = middle if middle >= lowest[row] else -middle
            tie_far = end if end >= lowest[row] else -end
            if near > far or (near == far and tie_near > tie_far):
                low = middle + 1
            else:
                high = middle
        starts[row] = low
    return starts


def binary_neighbour_sums(
    query: FloatArray,
    reference: FloatArray,
    targets: FloatArray,
    counts: IndexArray,
    *,
    clip: float,
    heartbeat: Callable[[float], None] | None = None,
) -> FloatArray:
    """Sums of ``targets`` over the k nearest reference rows (by KL) for each k in ``counts``.

    ``reference`` must satisfy :func:`on_binary_curve`; ``counts`` lie in 1..n_reference.
    ``heartbeat(fraction of query rows done)`` is called before each block.

    Returns
    -------
    ndarray of shape (len(counts), n_query, d)
    """
    sorted_reference = SortedReference.build(reference, targets, clip)
    clipped = np.clip(query, clip, 1.0)
    sums = np.empty((counts.size, query.shape[0], targets.shape[1]))
    for start in range(0, query.shape[0], QUERY_BLOCK):
        if heartbeat is not None:
            heartbeat(start / query.shape[0])
        block = clipped[start:start + QUERY_BLOCK]
        lowest = sorted_reference.lowest_rows(block)
        for position, count in enumerate(counts):
            sums[position, start:start + block.shape[0]] = sorted_reference.window_sums(
                block, int(count), lowest)
    return sums
