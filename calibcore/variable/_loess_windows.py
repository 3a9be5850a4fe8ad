"""The local windows of LOESS: how many neighbours a span gives, the bandwidth (widened
past ties at its edge), the tricube weights, the rows of the smoother matrix and its
degrees of freedom (Cleveland & Devlin 1988, the delta_1 and delta_2 of the band)."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from calibcore.variable._loess_moments import intercept_rows


def _neighbour_count(n: int, span: float) -> int:
    return min(n, int(np.floor(n * span)))


def _bandwidth(
    sorted_x: NDArray[np.float64], points: NDArray[np.float64], span: float
) -> NDArray[np.float64]:
    """Distance from each point to its q-th nearest observation (R's loess rule).

    The q nearest observations are q consecutive sorted values ``x[i .. i+q-1]``;
    ``x[i] + x[i+q-1]`` is non-decreasing in i, so the best window starts where
    that sum crosses ``2 * x0``. A window in which every row weighs 0 is widened
    (:func:`_past_ties`).
    """
    n = sorted_x.size
    q = _neighbour_count(n, span)
    if q >= n:
        widest = np.maximum(np.abs(points - sorted_x[0]), np.abs(sorted_x[-1] - points))
        bandwidth = widest * max(span, 1.0)
    else:
        window_sums = sorted_x[: n - q + 1] + sorted_x[q - 1 :]
        crossing = np.searchsorted(window_sums, 2.0 * points)
        bandwidth = np.full(points.shape, np.inf)
        for start in (np.clip(crossing - 1, 0, n - q), np.clip(crossing, 0, n - q)):
            reach = np.maximum(
                np.abs(points - sorted_x[start]), np.abs(sorted_x[start + q - 1] - points)
            )
            bandwidth = np.minimum(bandwidth, reach)
    return _past_ties(sorted_x, points, bandwidth)


def _past_ties(
    sorted_x: NDArray[np.float64], points: NDArray[np.float64], bandwidth: NDArray[np.float64]
) -> NDArray[np.float64]:
    """Widen a window in which no row has positive weight.

    Rows at distance h weigh 0, so when the q nearest rows all lie at distance h (ties
    longer than q at x0, h = 0; or at the window's end, say x0 between the values 0 and 1
    of a variable with most rows at 1) the fit would be 0/0. h becomes half-way to the next
    distance at which rows lie: the fit is then the mean of the tied responses at x0, or
    the local fit over the tied rows at h.
    """
    at_or_below = np.searchsorted(sorted_x, points, side="right") - 1
    at_or_above = np.searchsorted(sorted_x, points, side="left")
    nearest = np.minimum(
        np.where(at_or_below >= 0, points - sorted_x[np.maximum(at_or_below, 0)], np.inf),
        np.where(at_or_above < sorted_x.size,
                 sorted_x[np.minimum(at_or_above, sorted_x.size - 1)] - points, np.inf))
    empty = nearest >= bandwidth
    if not empty.any():
        return bandwidth
    widened = bandwidth.copy()
    further = _distance_beyond(sorted_x, points[empty], bandwidth[empty])
    widened[empty] = np.where(np.isfinite(further), (bandwidth[empty] + further) / 2.0,
                              np.maximum(2.0 * bandwidth[empty], 1.0))
    return widened


def _distance_beyond(
    sorted_x: NDArray[np.float64], points: NDArray[np.float64], reach: NDArray[np.float64]
) -> NDArray[np.float64]:
    """The smallest distance ``|x - x0|`` greater than ``reach`` of a row (inf if none)."""
    below = np.searchsorted(sorted_x, points - reach, side="left") - 1
    above = np.searchsorted(sorted_x, points + reach, side="right")
    gap_below = np.where(below >= 0, points - sorted_x[np.maximum(below, 0)], np.inf)
    gap_above = np.where(
        above < sorted_x.size, sorted_x[np.minimum(above, sorted_x.size - 1)] - points, np.inf
    )
    return np.minimum(gap_below, gap_above)


def _tricube(scaled: NDArray[np.float64]) -> NDArray[np.float64]:
    distance = np.minimum(np.abs(scaled), 1.0)
    inside = 1.0 - distance * distance * distance
    return inside * inside * inside


def _operator_rows(
    sorted_x: NDArray[np.float64], points: NDArray[np.float64], span: float
) -> NDArray[np.float64]:
    """Rows ``l(x0)`` of the smoother for each point: an (m, n) matrix (small n only)."""
    bandwidth = _bandwidth(sorted_x, points, span)
    scaled = (sorted_x[None, :] - points[:, None]) / bandwidth[:, None]
    weights = _tricube(scaled)
    weighted = [weights]
    for _ in range(4):
        weighted.append(weighted[-1] * scaled)
    moments = np.stack([term.sum(axis=1) for term in weighted], axis=1)
    first = intercept_rows(moments)
    return (
        weighted[0] * first[:, 0, None]
        + weighted[1] * first[:, 1, None]
        + weighted[2] * first[:, 2, None]
    )


def _deltas(operator: NDArray[np.float64]) -> tuple[float, float]:
    residual_maker = np.eye(operator.shape[0]) - operator
    gram = residual_maker.T @ residual_maker
    return float(np.trace(gram)), float(np.sum(gram * gram))
