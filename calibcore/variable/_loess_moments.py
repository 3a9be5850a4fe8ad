"""LOESS fits from weighted window moments (used by :mod:`calibcore.variable.smoothing`).

For large inputs the smoother matrix is never formed: the local quadratic fit
at a point only needs tricube-weighted power moments of its window. The
windows hold most rows (span 0.8), so a vectorized (points x rows) weight
matrix would move about ten times more memory than this single fused pass.
"""

from __future__ import annotations

from collections.abc import Callable

import numba
import numpy as np
from numpy.typing import NDArray

#: Singular values below this fraction of the largest are dropped (tied windows:
#: fewer than three distinct x values, the minimum-norm fit in d is used).
PINV_RTOL = 1e-12
#: Rows summed per block by :func:`window_fit_moments` (x and y: 32 KiB, in the core's
#: cache while every point using them sums them).
FIT_BLOCK_ROWS = 2048

Vector = NDArray[np.float64]
Indices = NDArray[np.intp]
Matrix = NDArray[np.float64]


@numba.njit(fastmath={"reassoc", "contract"}, nogil=True, cache=True)
def window_moments(
    sorted_x: Vector,
    first_y: Vector,
    second_y: Vector,
    points: Vector,
    inverse_bandwidth: Vector,
    start: Indices,
    stop: Indices,
    moments: Matrix,
    first_cross: Matrix,
    second_cross: Matrix,
    squared: Matrix,
) -> None:
    """Tricube-weighted moments of each window, for two responses at once.

    For point e with ``d = (x - x0) * inverse_bandwidth[e]`` over the sorted
    window ``start[e]:stop[e]``: ``moments[e, k] = sum w d^k`` (k <= 4),
    ``*_cross[e, k] = sum w y d^k`` (k <= 2), ``squared[e, k] = sum w^2 d^k``.
    The outputs (shapes (m, 5), (m, 3), (m, 3), (m, 5)) are filled in place.
    """
    for e in range(points.size):
        centre = points[e]
        scale = inverse_bandwidth[e]
        m0 = m1 = m2 = m3 = m4 = 0.0
        a0 = a1 = a2 = b0 = b1 = b2 = 0.0
        s0 = s1 = s2 = s3 = s4 = 0.0
        for i in range(start[e], stop[e]):
            d = (sorted_x[i] - centre) * scale
            distance = abs(d)
            inside = max(1.0 - distance * distance * distance, 0.0)
            w = inside * inside * inside
            d2 = d * d
            m0 += w
            m1 += w * d
            m2 += w * d2
            m3 += w * d2 * d
            m4 += w * d2 * d2
            wa = w * first_y[i]
            a0 += wa
            a1 += wa * d
            a2 += wa * d2
            wb = w * second_y[i]
            b0 += wb
            b1 += wb * d
            b2 += wb * d2
            w2 = w * w
            s0 += w2
            s1 += w2 * d
            s2 += w2 * d2
            s3 += w2 * d2 * d
            s4 += w2 * d2 * d2
        moments[e, 0] = m0
        moments[e, 1] = m1
        moments[e, 2] = m2
        moments[e, 3] = m3
        moments[e, 4] = m4
        first_cross[e, 0] = a0
        first_cross[e, 1] = a1
        first_cross[e, 2] = a2
        second_cross[e, 0] = b0
        second_cross[e, 1] = b1
        second_cross[e, 2] = b2
        squared[e, 0] = s0
        squared[e, 1] = s1
        squared[e, 2] = s2
        squared[e, 3] = s3
        squared[e, 4] = s4


@numba.njit(fastmath={"reassoc", "contract"}, nogil=True, cache=True)
def window_fit_moments(
    sorted_x: Vector,
    y: Vector,
    points: Vector,
    inverse_bandwidth: Vector,
    start: Indices,
    stop: Indices,
    moments: Matrix,
    cross: Matrix,
) -> None:
    """:func:`window_moments` without the squared weights, for one response: what the
    fit alone needs (``moments`` (m, 5) and ``cross`` (m, 3), filled in place).

    The rows are read in blocks of :data:`FIT_BLOCK_ROWS` (a few dozen KiB, held in the
    core's cache), and every point whose window meets a block sums that block before the
    next is read: with wide windows (span 0.8: a point's window holds most rows) the
    rows come from memory once per call instead of once per point. Each point's sums
    run over its window in the same order; only where partial sums are added differs
    (rounding).
    """
    m = points.size
    totals = np.zeros((m, 8))
    if m == 0:
        return
    first = start.min()
    last = stop.max()
    for block_start in range(first, last, FIT_BLOCK_ROWS):
        block_stop = min(block_start + FIT_BLOCK_ROWS, last)
        for e in range(m):
            low = max(start[e], block_start)
            high = min(stop[e], block_stop)
            if low >= high:
                continue
            centre = points[e]
            scale = inverse_bandwidth[e]
            m0 = m1 = m2 = m3 = m4 = 0.0
            a0 = a1 = a2 = 0.0
            for i in range(low, high):
                d = (sorted_x[i] - centre) * scale
                distance = abs(d)
                inside = max(1.0 - distance * distance * distance, 0.0)
                w = inside * inside * inside
                d2 = d * d
                m0 += w
                m1 += w * d
                m2 += w * d2
                m3 += w * d2 * d
                m4 += w * d2 * d2
                wa = w * y[i]
                a0 += wa
                a1 += wa * d
                a2 += wa * d2
            totals[e, 0] += m0
            totals[e, 1] += m1
            totals[e, 2] += m2
            totals[e, 3] += m3
            totals[e, 4] += m4
            totals[e, 5] += a0
            totals[e, 6] += a1
            totals[e, 7] += a2
    for e in range(m):
        for k in range(5):
            moments[e, k] = totals[e, k]
        for k in range(3):
            cross[e, k] = totals[e, 5 + k]


def hankel(moments: NDArray[np.float64]) -> NDArray[np.float64]:
    """(m, 5) power moments -> (m, 3, 3) matrices ``sum w z z^T``, z = (1, d, d^2)."""
    return np.stack([moments[:, 0:3], moments[:, 1:4], moments[:, 2:5]], axis=1)


def intercept_rows(moments: NDArray[np.float64]) -> NDArray[np.float64]:
    """First row of ``(sum w z z^T)^+``: maps weighted moments to the intercept."""
    inverse = np.linalg.pinv(hankel(moments), rtol=PINV_RTOL, hermitian=True)
    return np.asarray(inverse[:, 0, :], dtype=np.float64)


def fit_by_moments(
    sorted_x: NDArray[np.float64],
    sorted_y: NDArray[np.float64],
    points: NDArray[np.float64],
    bandwidth: NDArray[np.float64],
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Exact fits (r, m) and ``||l(x0)||`` (m,) at ``points`` from window moments.

    ``sorted_y`` has shape (r, n); ``bandwidth`` is h(x0) of each point.
    """
    start = np.searchsorted(sorted_x, points - bandwidth, side="left")
    stop = np.searchsorted(sorted_x, points + bandwidth, side="right")
    n_points = points.size
    moments = np.empty((n_points, 5))
    squared = np.empty((n_points, 5))
    cross = np.empty((sorted_y.shape[0], n_points, 3))
    for pair in range(0, sorted_y.shape[0], 2):
        second = min(pair + 1, sorted_y.shape[0] - 1)
        window_moments(
            sorted_x,
            sorted_y[pair],
            sorted_y[second],
            points,
            1.0 / bandwidth,
            start,
            stop,
            moments,
            cross[pair],
            cross[second],
            squared,
        )
    first = intercept_rows(moments)
    fits = np.einsum("mk,rmk->rm", first, cross)
    norms_squared = np.einsum("mi,mij,mj->m", first, hankel(squared), first)
    return fits, np.sqrt(np.maximum(norms_squared, 0.0))


def fit_only(
    sorted_x: NDArray[np.float64],
    sorted_y: NDArray[np.float64],
    points: NDArray[np.float64],
    bandwidth: NDArray[np.float64],
    heartbeat: Callable[[float], None],
    points_per_call: int,
) -> NDArray[np.float64]:
    """Exact fits (m,) of one response (n,) at ``points``, without the band's statistics.

    The points are fitted ``points_per_call`` at a time; ``heartbeat(fraction done)`` is
    called between (it may raise to stop).
    """
    start = np.searchsorted(sorted_x, points - bandwidth, side="left")
    stop = np.searchsorted(sorted_x, points + bandwidth, side="right")
    inverse = 1.0 / bandwidth
    moments = np.empty((points.size, 5))
    cross = np.empty((points.size, 3))
    for first in range(0, points.size, points_per_call):
        heartbeat(first / points.size)
        chunk = slice(first, first + points_per_call)
        window_fit_moments(sorted_x, sorted_y, points[chunk], inverse[chunk], start[chunk],
                           stop[chunk], moments[chunk], cross[chunk])
    return np.asarray(np.einsum("mk,mk->m", intercept_rows(moments), cross), dtype=np.float64)


def compile_fit_only() -> None:
    """Compile the kernel of :func:`fit_only` (once per process; a tiny call afterwards)."""
    x = np.arange(5.0)
    fit_only(x, x, x[:1], np.ones(1), lambda fraction: None, 1)
