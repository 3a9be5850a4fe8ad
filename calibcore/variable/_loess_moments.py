"""LOESS fits from weighted window moments (used by :mod:`calibcore.variable.smoothing`).

For large inputs the smoother matrix is never formed: the local quadratic fit
at a point only needs tricube-weighted power moments of its window. The
windows hold most rows (span 0.8), so a vectorized (points x rows) weight
matrix would move about ten times more memory than this single fused pass.

Every kernel takes optional row weights (``sample_weight``, None without them): a row's
local weight is then tricube x row weight, the power sums of a block are weighted sums, and
the squared moments behind ``||l(x0)||`` are ``sum tricube^2 x row weight d^k``, those of
the rows repeated by their weights. Without weights numba compiles the kernels with the
weight branches pruned (and the row weight 1.0 folded), the same arithmetic as before.
"""

from __future__ import annotations

from collections.abc import Callable

import numba
import numpy as np
from numpy.typing import NDArray

#: Singular values below this fraction of the largest are dropped (tied windows:
#: fewer than three distinct x values, the minimum-norm fit in d is used).
PINV_RTOL = 1e-12
#: Rows per block of :func:`block_power_sums`: a point's window is summed row by row
#: only in the blocks at its ends and at the point (3 x 2,048 rows), and from the
#: blocks' power sums elsewhere (a few hundred operations per block).
FIT_BLOCK_ROWS = 2048
#: Powers of d in the tricube-weighted moments ``sum w d^k`` (k <= 4; w has degree 9)
#: and in the cross moments ``sum w y d^k`` (k <= 2).
_POWERS = 14
_CROSS_POWERS = 12

Vector = NDArray[np.float64]
Indices = NDArray[np.intp]
Matrix = NDArray[np.float64]


@numba.njit(inline="always", fastmath={"reassoc", "contract"})
def _tricube_row(
    x: float, centre: float, scale: float, weight: float, y: float,
    sums: tuple[float, float, float, float, float, float, float, float],
) -> tuple[float, float, float, float,
           tuple[float, float, float, float, float, float, float, float]]:
    """One row of a window summed row by row: its tricube weight ``k`` at
    ``d = (x - centre) * scale``, its local weight ``w = k * weight`` (``weight`` the row
    weight, 1.0 without weights), d, d^2, and ``sums`` = (sum w d^k for k <= 4,
    sum w y d^k for k <= 2) with the row added."""
    d = (x - centre) * scale
    distance = abs(d)
    inside = max(1.0 - distance * distance * distance, 0.0)
    kernel = inside * inside * inside
    w = kernel * weight
    d2 = d * d
    m0, m1, m2, m3, m4, a0, a1, a2 = sums
    wa = w * y
    return kernel, w, d, d2, (m0 + w, m1 + w * d, m2 + w * d2, m3 + w * d2 * d,
                              m4 + w * d2 * d2, a0 + wa, a1 + wa * d, a2 + wa * d2)


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
    sample_weight: Vector | None = None,
) -> None:
    """Tricube-weighted moments of each window, for two responses at once.

    For point e with ``d = (x - x0) * inverse_bandwidth[e]`` over the sorted
    window ``start[e]:stop[e]``: ``moments[e, k] = sum w d^k`` (k <= 4),
    ``*_cross[e, k] = sum w y d^k`` (k <= 2), ``squared[e, k] = sum w^2 d^k``
    (with row weights v: w = tricube x v and ``squared`` sums ``tricube^2 v d^k``).
    The outputs (shapes (m, 5), (m, 3), (m, 3), (m, 5)) are filled in place.
    """
    for e in range(points.size):
        centre = points[e]
        scale = inverse_bandwidth[e]
        sums = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
        b0 = b1 = b2 = 0.0
        s0 = s1 = s2 = s3 = s4 = 0.0
        for i in range(start[e], stop[e]):
            if sample_weight is None:
                weight = 1.0
            else:
                weight = sample_weight[i]
            kernel, w, d, d2, sums = _tricube_row(sorted_x[i], centre, scale, weight,
                                                  first_y[i], sums)
            wb = w * second_y[i]
            b0 += wb
            b1 += wb * d
            b2 += wb * d2
            w2 = w * kernel
            s0 += w2
            s1 += w2 * d
            s2 += w2 * d2
            s3 += w2 * d2 * d
            s4 += w2 * d2 * d2
        moments[e, 0] = sums[0]
        moments[e, 1] = sums[1]
        moments[e, 2] = sums[2]
        moments[e, 3] = sums[3]
        moments[e, 4] = sums[4]
        first_cross[e, 0] = sums[5]
        first_cross[e, 1] = sums[6]
        first_cross[e, 2] = sums[7]
        second_cross[e, 0] = b0
        second_cross[e, 1] = b1
        second_cross[e, 2] = b2
        squared[e, 0] = s0
        squared[e, 1] = s1
        squared[e, 2] = s2
        squared[e, 3] = s3
        squared[e, 4] = s4


@numba.njit(fastmath={"reassoc", "contract"}, nogil=True, cache=True)
def block_power_sums(
    sorted_x: Vector, y: Vector, sample_weight: Vector | None = None
) -> tuple[Vector, Vector, Matrix, Matrix]:
    """Power sums of each block of :data:`FIT_BLOCK_ROWS` consecutive sorted rows.

    Block b (rows ``b * FIT_BLOCK_ROWS`` on) has centre ``c_b`` and half-width ``r_b``
    (half its range, 1 when its values are equal); with ``z = (x - c_b) / r_b`` in
    [-1, 1], ``powers[b, q] = sum z^q`` (q <= 13) and ``cross[b, q] = sum y z^q``
    (q <= 11): what :func:`window_fit_moments` needs of a block lying whole on one side
    of a point. With row weights v the sums are ``sum v z^q`` and ``sum v y z^q``.
    """
    n = sorted_x.size
    n_blocks = (n + FIT_BLOCK_ROWS - 1) // FIT_BLOCK_ROWS
    centres = np.empty(n_blocks)
    halves = np.empty(n_blocks)
    powers = np.zeros((n_blocks, _POWERS))
    cross = np.zeros((n_blocks, _CROSS_POWERS))
    for block in range(n_blocks):
        low = block * FIT_BLOCK_ROWS
        high = min(low + FIT_BLOCK_ROWS, n)
        centre = 0.5 * (sorted_x[low] + sorted_x[high - 1])
        half = 0.5 * (sorted_x[high - 1] - sorted_x[low])
        if not half > 0.0:
            half = 1.0
        centres[block] = centre
        halves[block] = half
        inverse = 1.0 / half
        for i in range(low, high):
            z = (sorted_x[i] - centre) * inverse
            if sample_weight is None:
                power = 1.0
            else:
                power = sample_weight[i]
            for q in range(_CROSS_POWERS):
                powers[block, q] += power
                cross[block, q] += power * y[i]
                power *= z
            for q in range(_CROSS_POWERS, _POWERS):
                powers[block, q] += power
                power *= z
    return centres, halves, powers, cross


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
    blocks: tuple[Vector, Vector, Matrix, Matrix],
    sample_weight: Vector | None = None,
) -> None:
    """:func:`window_moments` without the squared weights, for one response: what the
    fit alone needs (``moments`` (m, 5) and ``cross`` (m, 3), filled in place).

    ``blocks`` is :func:`block_power_sums` of the same rows (and row weights). A block
    lying whole inside a point's window and on one side of it is summed from its power
    sums, not row by row: there ``d = t + s z`` (``t = (c_b - x0) / h``,
    ``s = r_b / h``) keeps one sign, so the tricube weight is the polynomial
    ``(1 - sign d^3)^3`` and ``sum w d^k = sum_j (-sign)^j C(3, j) sum d^(3j + k)``, with
    ``sum d^p = sum_q C(p, q) t^(p - q) s^q sum z^q`` (and the same with ``y``). The
    blocks at the window's ends and the one holding the point are summed row by row.
    Both are the same sums up to rounding (|t|, |s z| <= 1 inside the window, so no
    power grows), and a point costs a few hundred operations per block instead of
    twenty per row.
    """
    centres, halves, powers, block_cross = blocks
    binomial = np.zeros((_POWERS, _POWERS))
    for p in range(_POWERS):
        binomial[p, 0] = 1.0
        for q in range(1, p + 1):
            binomial[p, q] = binomial[p - 1, q - 1] + binomial[p - 1, q]
    scaled = np.empty(_POWERS)
    scaled_cross = np.empty(_CROSS_POWERS)
    shift = np.empty(_POWERS)
    sums = np.empty(_POWERS)
    sums_y = np.empty(_CROSS_POWERS)
    n = sorted_x.size
    for e in range(points.size):
        centre = points[e]
        scale = inverse_bandwidth[e]
        low = start[e]
        high = stop[e]
        m0 = m1 = m2 = m3 = m4 = 0.0
        a0 = a1 = a2 = 0.0
        block = low // FIT_BLOCK_ROWS
        while block * FIT_BLOCK_ROWS < high:
            block_low = block * FIT_BLOCK_ROWS
            block_high = min(block_low + FIT_BLOCK_ROWS, n)
            right = sorted_x[block_low] >= centre
            if (low <= block_low and block_high <= high
                    and (right or sorted_x[block_high - 1] <= centre)):
                sign = 1.0 if right else -1.0
                t = (centres[block] - centre) * scale
                s = halves[block] * scale
                factor = 1.0
                shift[0] = 1.0
                for q in range(_POWERS):
                    scaled[q] = powers[block, q] * factor
                    if q < _CROSS_POWERS:
                        scaled_cross[q] = block_cross[block, q] * factor
                    factor *= s
                    if q > 0:
                        shift[q] = shift[q - 1] * t
                for p in range(_POWERS):
                    total = 0.0
                    for q in range(p + 1):
                        total += binomial[p, q] * shift[p - q] * scaled[q]
                    sums[p] = total
                for p in range(_CROSS_POWERS):
                    total = 0.0
                    for q in range(p + 1):
                        total += binomial[p, q] * shift[p - q] * scaled_cross[q]
                    sums_y[p] = total
                m0 += sums[0] - 3.0 * sign * sums[3] + 3.0 * sums[6] - sign * sums[9]
                m1 += sums[1] - 3.0 * sign * sums[4] + 3.0 * sums[7] - sign * sums[10]
                m2 += sums[2] - 3.0 * sign * sums[5] + 3.0 * sums[8] - sign * sums[11]
                m3 += sums[3] - 3.0 * sign * sums[6] + 3.0 * sums[9] - sign * sums[12]
                m4 += sums[4] - 3.0 * sign * sums[7] + 3.0 * sums[10] - sign * sums[13]
                a0 += sums_y[0] - 3.0 * sign * sums_y[3] + 3.0 * sums_y[6] - sign * sums_y[9]
                a1 += sums_y[1] - 3.0 * sign * sums_y[4] + 3.0 * sums_y[7] - sign * sums_y[10]
                a2 += sums_y[2] - 3.0 * sign * sums_y[5] + 3.0 * sums_y[8] - sign * sums_y[11]
            else:
                running = (m0, m1, m2, m3, m4, a0, a1, a2)
                for i in range(max(low, block_low), min(high, block_high)):
                    if sample_weight is None:
                        weight = 1.0
                    else:
                        weight = sample_weight[i]
                    _, _, _, _, running = _tricube_row(sorted_x[i], centre, scale, weight,
                                                       y[i], running)
                m0, m1, m2, m3, m4, a0, a1, a2 = running
            block += 1
        moments[e, 0] = m0
        moments[e, 1] = m1
        moments[e, 2] = m2
        moments[e, 3] = m3
        moments[e, 4] = m4
        cross[e, 0] = a0
        cross[e, 1] = a1
        cross[e, 2] = a2


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
    sample_weight: NDArray[np.float64] | None = None,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Exact fits (r, m) and ``||l(x0)||`` (m,) at ``points`` from window moments.

    ``sorted_y`` has shape (r, n); ``bandwidth`` is h(x0) of each point; ``sample_weight``
    (positive row weights, in the same order) gives the weighted fit and the norm of
    the rows repeated by their weights.
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
            sample_weight,
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
    sample_weight: NDArray[np.float64] | None = None,
) -> NDArray[np.float64]:
    """Exact fits (m,) of one response (n,) at ``points``, without the band's statistics
    (weighted by ``sample_weight`` when given).

    The points are fitted ``points_per_call`` at a time; ``heartbeat(fraction done)`` is
    called between (it may raise to stop).
    """
    start = np.searchsorted(sorted_x, points - bandwidth, side="left")
    stop = np.searchsorted(sorted_x, points + bandwidth, side="right")
    inverse = 1.0 / bandwidth
    moments = np.empty((points.size, 5))
    cross = np.empty((points.size, 3))
    blocks = block_power_sums(sorted_x, sorted_y, sample_weight)
    for first in range(0, points.size, points_per_call):
        heartbeat(first / points.size)
        chunk = slice(first, first + points_per_call)
        window_fit_moments(sorted_x, sorted_y, points[chunk], inverse[chunk], start[chunk],
                           stop[chunk], moments[chunk], cross[chunk], blocks, sample_weight)
    return np.asarray(np.einsum("mk,mk->m", intercept_rows(moments), cross), dtype=np.float64)


def compile_fit_only() -> None:
    """Compile the kernel of :func:`fit_only` (once per process; a tiny call afterwards)."""
    x = np.arange(5.0)
    fit_only(x, x, x[:1], np.ones(1), lambda fraction: None, 1)
