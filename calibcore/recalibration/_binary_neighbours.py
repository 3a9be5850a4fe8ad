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

With row weights the neighbourhood is the nearest ``mass`` units of weight (the last
row taken in part): the nearest c rows are still a window, so a binary search over c
finds the fewest whose weights reach the mass, each step a window search
(O(log^2 n) per query row), and prefix sums of the weights and of the weighted targets
give the sums.

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
#: The same for the weighted search: a binary search over the count per row and mass,
#: each step a window search (0.33 s for a block of 8,192 rows and 9 masses against
#: 150,000 calibration rows), so a cancel between blocks is seen within a second.
WEIGHTED_QUERY_BLOCK = 8_192


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
        return self.window_totals(self.prefix, start, count).astype(np.float64)

    def window_totals(self, prefix: NDArray[np.longdouble], start: IndexArray,
                      count: int | IndexArray) -> NDArray[np.longdouble]:
        """Sums of a prefix-summed column (in sorted order) over the windows of ``count``
        rows from ``start``, each of at least one row."""
        stop = start + count
        left_start, left_stop = self.group_start[start], self.group_stop[start]
        right_start = self.group_start[stop - 1]
        # Runs of identical rows cut by the window edges contribute their lowest-index
        # members: the first ones of the run in the (stable) sorted order.
        taken_left = np.minimum(left_stop, stop) - start
        taken_right = stop - right_start
        one_run = left_stop >= stop
        first_end = np.where(one_run, left_start + count, left_start + taken_left)
        sums = prefix[first_end] - prefix[left_start]
        rest = ~one_run
        sums[rest] += (prefix[right_start[rest] + taken_right[rest]]
                       - prefix[left_stop[rest]])
        return sums

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
    starts = np.empty(query.shape[0], dtype=np.intp)
    for row in range(query.shape[0]):
        starts[row] = _window_start(query, row, negative_log, count, lowest[row])
    return starts


@numba.njit(nogil=True, cache=True, inline="always")
def _window_start(query: FloatArray, row: int, negative_log: FloatArray, count: int,
                  lowest: int) -> int:
    """:func:`_search_window_starts` for one query row."""
    n_rows = negative_log.shape[0]
    low, high = 0, n_rows - count
    while low < high:
        middle = (low + high) // 2
        end = middle + count
        near = _distance(query, row, negative_log, middle)
        far = _distance(query, row, negative_log, min(end, n_rows - 1))
        tie_near = middle if middle >= lowest else -middle
        tie_far = end if end >= lowest else -end
        if near > far or (near == far and tie_near > tie_far):
            low = middle + 1
        else:
            high = middle
    return low


@numba.njit(nogil=True, cache=True)
def _search_weighted_counts(query: FloatArray, negative_log: FloatArray, lowest: IndexArray,
                            group_start: IndexArray, group_stop: IndexArray,
                            prefix_weight: FloatArray, masses: FloatArray,
                            ) -> tuple[IndexArray, IndexArray, IndexArray]:
    """Per mass and query row, the fewest nearest rows whose weights reach the mass, and
    the starts of the windows of that many rows and of one row fewer (0 for none).

    A binary search over the count, each step a window search; the window's weight is
    read off ``prefix_weight`` as :meth:`SortedReference.window_totals` reads a sum.
    """
    n_rows = negative_log.shape[0]
    counts = np.empty((masses.size, query.shape[0]), dtype=np.intp)
    starts = np.zeros((masses.size, query.shape[0]), dtype=np.intp)
    starts_before = np.zeros((masses.size, query.shape[0]), dtype=np.intp)
    for row in range(query.shape[0]):
        for which in range(masses.size):
            low, high = 1, n_rows
            while low < high:
                middle = (low + high) // 2
                start = _window_start(query, row, negative_log, middle, lowest[row])
                stop = start + middle
                left_start, left_stop = group_start[start], group_stop[start]
                if left_stop >= stop:
                    weight = prefix_weight[left_start + middle] - prefix_weight[left_start]
                else:
                    weight = (prefix_weight[left_stop - start + left_start]
                              - prefix_weight[left_start]
                              + prefix_weight[stop] - prefix_weight[left_stop])
                if weight >= masses[which]:
                    high = middle
                else:
                    low = middle + 1
            counts[which, row] = low
            starts[which, row] = _window_start(query, row, negative_log, low, lowest[row])
            if low > 1:
                starts_before[which, row] = _window_start(query, row, negative_log, low - 1,
                                                          lowest[row])
    return counts, starts, starts_before


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


def weighted_binary_neighbour_sums(
    query: FloatArray,
    reference: FloatArray,
    targets: FloatArray,
    weights: FloatArray,
    masses: FloatArray,
    *,
    clip: float,
    heartbeat: Callable[[float], None] | None = None,
) -> FloatArray:
    """Sums of w_i-weighted ``targets`` over the nearest ``mass`` units of weight (by KL)
    for each mass in ``masses``: the rows nearest first (ties as :func:`binary_neighbour_sums`
    takes them), the last one taken with the part of its weight that fits.

    The nearest c rows are a window, so the fewest that reach a mass are found by a
    binary search over c (each step a window search, O(log^2 n) per query row and mass);
    the sum is that of the first c - 1 rows plus the c-th row's target times the weight
    still missing. ``reference`` must satisfy :func:`on_binary_curve`; ``masses`` lie in
    (0, sum(weights)).

    Returns
    -------
    ndarray of shape (len(masses), n_query, d)
    """
    # one sort and one prefix sum for the weighted targets and, last, the weights
    sorted_reference = SortedReference.build(
        reference, np.column_stack((weights[:, None] * targets, weights)), clip)
    n_targets = targets.shape[1]
    prefix_weight = sorted_reference.prefix[:, n_targets].astype(np.float64)
    clipped = np.clip(query, clip, 1.0)
    mass_array = np.asarray(masses, dtype=np.float64)
    sums = np.empty((mass_array.size, query.shape[0], n_targets))
    for first in range(0, query.shape[0], WEIGHTED_QUERY_BLOCK):
        if heartbeat is not None:
            heartbeat(first / query.shape[0])
        block = clipped[first:first + WEIGHTED_QUERY_BLOCK]
        rows = slice(first, first + block.shape[0])
        lowest = sorted_reference.lowest_rows(block)
        counts, starts, starts_before = _search_weighted_counts(
            block, sorted_reference.negative_log, lowest, sorted_reference.group_start,
            sorted_reference.group_stop, prefix_weight, mass_array)
        for which, mass in enumerate(mass_array):
            count = counts[which]
            with_last = sorted_reference.window_totals(sorted_reference.prefix, starts[which],
                                                       count)
            # the window of one row fewer (none: zeros)
            before = np.where((count == 1)[:, None], 0.0, sorted_reference.window_totals(
                sorted_reference.prefix, starts_before[which], np.maximum(count - 1, 1)))
            sum_before, weight_before = before[:, :n_targets], before[:, n_targets:]
            last_target = ((with_last[:, :n_targets] - sum_before)
                           / (with_last[:, n_targets:] - weight_before))
            sums[which, rows] = (sum_before + (mass - weight_before) * last_target).astype(
                np.float64)
    return sums
