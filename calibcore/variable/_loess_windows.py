"""The local windows of LOESS: how many neighbours a span gives, the bandwidth (widened
past ties at its edge), the tricube weights, the rows of the smoother matrix and its
degrees of freedom (Cleveland & Devlin 1988, the delta_1 and delta_2 of the band).

Row weights (every one positive: callers drop rows of zero weight; weights that are not all
whole numbers are first rescaled to add up to the number of rows, :func:`relative_weights`)
are read as the number of rows each row stands for: a window holds the nearest rows making
up a share ``span`` of the total weight W (``floor(W * span)`` of it for integer weights, as
many as the rows repeated by their weights would hold), the local fit's weights are tricube
x row weight, and the smoother's traces are those of the repeated rows (:func:`_deltas`).
So integer weights give the fits, ``||l(x0)||`` and traces of the repeated rows."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from calibcore.variable._binning import integer_weights
from calibcore.variable._loess_moments import intercept_rows


def _neighbour_count(n: int, span: float) -> int:
    return min(n, int(np.floor(n * span)))


def relative_weights(weights: NDArray[np.float64]) -> NDArray[np.float64]:
    """Integer weights as they are (counts of rows); other weights (survey weights, whose
    scale means nothing) rescaled to add up to the number of rows, so that the band's
    ``||l(x0)||`` and traces, and the leverage rule, do not change when every weight is
    scaled."""
    if integer_weights(weights):
        return weights
    return np.asarray(weights * (weights.size / float(weights.sum())), dtype=np.float64)


def window_mass(weights: NDArray[np.float64], span: float) -> float:
    """The weight a window holds: ``floor(W * span)`` for integer weights (the rows a
    window of the repeated rows holds), ``W * span`` otherwise (W the total weight)."""
    total = float(weights.sum())
    return float(min(total, np.floor(total * span))) if integer_weights(weights) else (
        min(total, total * span))


def enough_neighbours(n: int, span: float, weights: NDArray[np.float64] | None,
                      minimum: int) -> bool:
    """Whether a window holds at least ``minimum`` rows: ``floor(n * span)``, or with
    integer weights ``floor(W * span)`` (the repeated rows); with other weights rows are
    counted as without weights (a rescaling of the weights changes nothing)."""
    if weights is not None and integer_weights(weights):
        return window_mass(weights, span) >= minimum
    return min(n, int(np.floor(n * span))) >= minimum


def _bandwidth(
    sorted_x: NDArray[np.float64], points: NDArray[np.float64], span: float,
    weights: NDArray[np.float64] | None = None,
) -> NDArray[np.float64]:
    """Distance from each point to its q-th nearest observation (R's loess rule).

    The q nearest observations are q consecutive sorted values ``x[i .. i+q-1]``;
    ``x[i] + x[i+q-1]`` is non-decreasing in i, so the best window starts where
    that sum crosses ``2 * x0``. A window in which every row weighs 0 is widened
    (:func:`_past_ties`). With row ``weights`` (positive) the window is the nearest rows
    holding :func:`window_mass`: :func:`_weighted_bandwidth`.
    """
    if weights is not None:
        return _past_ties(sorted_x, points, _weighted_bandwidth(sorted_x, points, span,
                                                                weights))
    n = sorted_x.size
    q = _neighbour_count(n, span)
    if q >= n:
        bandwidth = _whole_range(sorted_x, points, span)
    else:
        bandwidth = _nearest_window(sorted_x[: n - q + 1], sorted_x[q - 1 :], points)
    return _past_ties(sorted_x, points, bandwidth)


def _weighted_bandwidth(
    sorted_x: NDArray[np.float64], points: NDArray[np.float64], span: float,
    weights: NDArray[np.float64],
) -> NDArray[np.float64]:
    """The smallest h such that the rows within h of x0 weigh at least M =
    :func:`window_mass` (before :func:`_past_ties`).

    A window of consecutive sorted rows a..b holds weight M when b = b(a) is the first row
    with ``cumulative weight(b) >= weight before a + M``; b(a) rises with a, so
    ``x[a] + x[b(a)]`` is non-decreasing and, as without weights, the best window starts
    where that sum crosses ``2 * x0``. For integer weights these are the windows of the rows
    repeated by their weights (a window starting inside a repeated row's copies never
    reaches less far), so h is the distance to the ``floor(W * span)``-th nearest repeated
    row, the same floats.
    """
    mass = window_mass(weights, span)
    total = float(weights.sum())
    if mass >= total:
        return _whole_range(sorted_x, points, span)
    cumulative = np.cumsum(weights)
    before = cumulative - weights
    starts = np.flatnonzero(before + mass <= total)
    ends = np.minimum(np.searchsorted(cumulative, before[starts] + mass, side="left"),
                      sorted_x.size - 1)
    return _nearest_window(sorted_x[starts], sorted_x[ends], points)


def _whole_range(sorted_x: NDArray[np.float64], points: NDArray[np.float64],
                 span: float) -> NDArray[np.float64]:
    """The bandwidth when a window holds every row: the largest distance, times span when
    span > 1 (R's rule)."""
    widest = np.maximum(np.abs(points - sorted_x[0]), np.abs(sorted_x[-1] - points))
    return np.asarray(widest * max(span, 1.0), dtype=np.float64)


def _nearest_window(lowest: NDArray[np.float64], highest: NDArray[np.float64],
                    points: NDArray[np.float64]) -> NDArray[np.float64]:
    """The reach of the nearest of the candidate windows ``[lowest[i], highest[i]]``
    (both non-decreasing in i) from each point: the best starts where
    ``lowest + highest`` crosses ``2 * x0``, so only the two windows there are compared."""
    crossing = np.searchsorted(lowest + highest, 2.0 * points)
    bandwidth = np.full(points.shape, np.inf)
    last = lowest.size - 1
    for candidate in (np.clip(crossing - 1, 0, last), np.clip(crossing, 0, last)):
        reach = np.maximum(np.abs(points - lowest[candidate]),
                           np.abs(highest[candidate] - points))
        bandwidth = np.minimum(bandwidth, reach)
    return bandwidth


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
    sorted_x: NDArray[np.float64], points: NDArray[np.float64], span: float,
    sample_weight: NDArray[np.float64] | None = None,
) -> NDArray[np.float64]:
    """Rows ``l(x0)`` of the smoother for each point: an (m, n) matrix (small n only).

    With ``sample_weight`` the local weights are tricube x row weight, and ``l(x0)_j`` is
    the weight of row j as a whole (its repeated copies' entries added up).
    """
    bandwidth = _bandwidth(sorted_x, points, span, sample_weight)
    scaled = (sorted_x[None, :] - points[:, None]) / bandwidth[:, None]
    weights = _tricube(scaled)
    if sample_weight is not None:
        weights = weights * sample_weight[None, :]
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


def _deltas(operator: NDArray[np.float64],
            sample_weight: NDArray[np.float64] | None = None) -> tuple[float, float]:
    """``delta_k = tr(((I - L)^T (I - L))^k)``, k = 1, 2.

    With row weights w (L from :func:`_operator_rows` with them) these are the traces of the
    smoother of the rows repeated by their weights, W x W with W = sum w, computed on n x n:
    with ``B = W^(1/2) A W^(1/2)``, ``A_ij = L_ij / w_j`` (the entry of one copy of row j),
    the repeated smoother is ``Q B Q^T`` for Q with orthonormal columns, so
    ``delta_k = tr(G^k) + (W - n)``, ``G = (I - B)^T (I - B)``: the copies add one
    residual degree of freedom each.
    """
    if sample_weight is not None:
        root = np.sqrt(sample_weight)
        scaled = operator * (root[:, None] / root[None, :])
        delta1, delta2 = _deltas(scaled)
        extra = float(sample_weight.sum()) - sample_weight.size
        return delta1 + extra, delta2 + extra
    residual_maker = np.eye(operator.shape[0]) - operator
    gram = residual_maker.T @ residual_maker
    return float(np.trace(gram)), float(np.sum(gram * gram))
