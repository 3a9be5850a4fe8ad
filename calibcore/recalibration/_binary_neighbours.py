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
same up to rounding in the last bit.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

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
        low = np.zeros(query.shape[0], dtype=np.intp)
        high = np.full(query.shape[0], self.distinct.size - 1, dtype=np.intp)
        rows = np.arange(query.shape[0])
        while True:
            open_rows = low < high
            if not open_rows.any():
                break
            middle = (low + high) // 2
            falling = (self._distance(query, rows, self.distinct[middle])
                       > self._distance(query, rows, self.distinct[np.minimum(middle + 1,
                                                                              high)]))
            low = np.where(open_rows & falling, middle + 1, low)
            high = np.where(open_rows & ~falling, middle, high)
        return self.distinct[low]

    def _window_starts(self, query: FloatArray, count: int, lowest: IndexArray) -> IndexArray:
        """First sorted position of each query row's window of ``count`` nearest rows.

        Rows are compared by (distance, t) with t = position right of the lowest row
        and -position left of it: a strictly falling-then-rising key along the sorted
        rows even through runs of identical rows, so "the window's first row is farther
        than the row just past its end" holds for every start before the answer and
        for none from it on.
        """
        rows = np.arange(query.shape[0])
        low = np.zeros(query.shape[0], dtype=np.intp)
        high = np.full(query.shape[0], self.n_rows - count, dtype=np.intp)
        while True:
            open_rows = low < high
            if not open_rows.any():
                break
            middle = (low + high) // 2
            end = middle + count
            near, far = (self._distance(query, rows, middle),
                         self._distance(query, rows, np.minimum(end, self.n_rows - 1)))
            tie_near = np.where(middle >= lowest, middle, -middle)
            tie_far = np.where(end >= lowest, end, -end)
            farther = (near > far) | ((near == far) & (tie_near > tie_far))
            low = np.where(open_rows & farther, middle + 1, low)
            high = np.where(open_rows & ~farther, middle, high)
        return low

    def _distance(self, query: FloatArray, rows: IndexArray, positions: IndexArray) -> FloatArray:
        return (query[rows, 0] * self.negative_log[positions, 0]
                + query[rows, 1] * self.negative_log[positions, 1])


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
