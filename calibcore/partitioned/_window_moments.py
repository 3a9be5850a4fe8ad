"""Tricube window moments of grouped rows at many points, compiled.

The binned LOESS of a partitioned table (Cleveland 1979's local regression on group
sums) needs, at each point x0 with bandwidth h, ``sum_g weights_g w(d_g)^(1 or 2)
d_g^k`` over the groups g, with ``d = (centre_g - x0) / h`` and w the tricube weight.
NumPy built a (points x groups) matrix for the distances, the weights and each power,
then summed each row: a wide table's registration (85 numeric columns) spent four
fifths of its time there. :func:`window_sums` computes one point's row at a time in
a buffer of the groups' size and sums it as NumPy sums a row of a C-ordered matrix:
``0.0`` plus NumPy's pairwise sum (blocks of at most 128 values added in eight
interleaved partial sums, halves of longer runs summed separately, the split a
multiple of eight; Higham 1993's pairwise summation, as ``numpy.add.reduce`` does it),
with every element computed by the same floating-point expressions in the same order,
so every moment is the same double.
"""

from __future__ import annotations

import numba
import numpy as np
from numpy.typing import NDArray


def window_sums(points: NDArray[np.float64], bandwidth: NDArray[np.float64],
                centres: NDArray[np.float64], weights: NDArray[np.float64], n_powers: int,
                *, squared: bool) -> NDArray[np.float64]:
    """``sum_g weights_g w(d_g)^(1 or 2) d_g^k`` for k < n_powers, ``d = (centre - x0) / h``,
    shape (points, n_powers); ``d`` is taken times 1/h (a row at exactly h, a tie ending
    the window, then weighs what it weighs there, 0 or a rounding's worth)."""
    points = np.ascontiguousarray(points, dtype=np.float64)
    inverse = 1.0 / np.ascontiguousarray(bandwidth, dtype=np.float64)
    centres = np.ascontiguousarray(centres, dtype=np.float64)
    weights = np.ascontiguousarray(weights, dtype=np.float64)
    if inverse.shape != points.shape or weights.shape != centres.shape:
        raise ValueError("each point needs a bandwidth and each centre a weight.")
    return _window_sums(points, inverse, centres, weights, int(n_powers), bool(squared))


@numba.njit(nogil=True, cache=True)
def _window_sums(points: NDArray[np.float64], inverse: NDArray[np.float64],
                 centres: NDArray[np.float64], weights: NDArray[np.float64], n_powers: int,
                 squared: bool) -> NDArray[np.float64]:
    n_groups = centres.size
    sums = np.empty((points.size, n_powers))
    scaled = np.empty(n_groups)
    term = np.empty(n_groups)
    for point in range(points.size):
        at, scale = points[point], inverse[point]
        for group in range(n_groups):
            distance = (centres[group] - at) * scale
            scaled[group] = distance
            # np.minimum(np.abs(d), 1.0): NaN stays NaN
            distance = abs(distance)
            distance = 1.0 if distance > 1.0 else distance
            inside = 1.0 - distance * distance * distance
            kernel = inside * inside * inside
            term[group] = (kernel * kernel if squared else kernel) * weights[group]
        for power in range(n_powers):
            sums[point, power] = 0.0 + _pairwise_sum(term, 0, n_groups)
            for group in range(n_groups):
                term[group] = term[group] * scaled[group]
    return sums


@numba.njit(nogil=True, cache=True)
def _pairwise_sum(values: NDArray[np.float64], start: int, count: int) -> float:
    """``values[start:start + count]`` summed as NumPy's pairwise sum of doubles adds them:
    a run of more than 128 values is the sum of its two halves' sums (the first half a
    multiple of eight long), each summed the same way. Walked with a stack of its own
    (numba's cache cannot hold a recursive function), the halves added left to right."""
    starts = np.empty(64, dtype=np.intp)
    counts = np.empty(64, dtype=np.intp)
    visits = np.zeros(64, dtype=np.intp)
    totals = np.empty(64)
    depth = 0
    n_totals = 0
    starts[0], counts[0] = start, count
    while depth >= 0:
        run_start, run_count = starts[depth], counts[depth]
        if run_count <= 128:
            totals[n_totals] = _block_sum(values, run_start, run_count)
            n_totals += 1
            depth -= 1
            continue
        half = run_count // 2
        half -= half % 8
        if visits[depth] == 0:  # the first half next
            visits[depth] = 1
            starts[depth + 1], counts[depth + 1], visits[depth + 1] = run_start, half, 0
            depth += 1
        elif visits[depth] == 1:  # then the second
            visits[depth] = 2
            starts[depth + 1] = run_start + half
            counts[depth + 1] = run_count - half
            visits[depth + 1] = 0
            depth += 1
        else:  # both halves summed: their sum stands for this run
            n_totals -= 1
            totals[n_totals - 1] = totals[n_totals - 1] + totals[n_totals]
            depth -= 1
    return totals[0]


@numba.njit(nogil=True, cache=True)
def _block_sum(values: NDArray[np.float64], start: int, count: int) -> float:
    """NumPy's pairwise sum of at most 128 doubles: one by one below eight, else in eight
    interleaved partial sums combined as a balanced tree, then the leftovers."""
    if count < 8:
        total = 0.0
        for offset in range(count):
            total += values[start + offset]
        return total
    r0, r1, r2, r3 = values[start], values[start + 1], values[start + 2], values[start + 3]
    r4, r5, r6, r7 = (values[start + 4], values[start + 5], values[start + 6],
                      values[start + 7])
    offset = 8
    whole = count - count % 8
    while offset < whole:
        at = start + offset
        r0 += values[at]
        r1 += values[at + 1]
        r2 += values[at + 2]
        r3 += values[at + 3]
        r4 += values[at + 4]
        r5 += values[at + 5]
        r6 += values[at + 6]
        r7 += values[at + 7]
        offset += 8
    total = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while offset < count:
        total += values[start + offset]
        offset += 1
    return total
