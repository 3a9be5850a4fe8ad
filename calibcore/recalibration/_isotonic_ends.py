"""Isotonic fits with one more row, for every place the row can take, in linear time.

A Venn-Abers predictor needs, for a test score s, the isotonic regression of the
calibration rows plus (s, 0) and plus (s, 1), read at s. Which fit that is depends only on
where s falls among the distinct calibration scores, so the k + 1 possible values of each
are computed once, after sorting, from the cumulative sum diagram (CSD) of the
calibration rows: the value of an isotonic fit on a block is the slope of the greatest
convex minorant (GCM) of the CSD there (Barlow et al. 1972, Theorem 1.1). Adding the test
row moves the CSD's points on one side of it by (1, 1) (label 1) or (1, 0) (label 0); the
GCM is then updated point by point with a stack, each point pushed and popped at most
once (Vovk, Petej & Fedorova 2015, Section 2, Algorithms 1-4).

The points have integer coordinates (row counts and label sums), so the turn and
above-the-line tests are exact products of integers below 2**53, and each value is one
division of two such integers, as in a direct isotonic fit.

With row weights the CSD's steps are the weights (and weighted label sums) instead of
counts: the GCM's slopes are then the weighted isotonic regression (weighted pool
adjacent violators), the test row weighing 1. Integer weights keep the coordinates
integers, so they give bit for bit what the rows repeated by their weights give.

Private: :mod:`calibcore.recalibration.venn_abers` is the public interface.
"""

from __future__ import annotations

import numba
import numpy as np
from numpy.typing import NDArray


@numba.njit(nogil=True, cache=True, inline="always")
def _turn(ax: float, ay: float, bx: float, by: float, cx: float, cy: float) -> float:
    """Cross product of b - a and c - b: > 0 turns left (counter-clockwise) at b."""
    return (bx - ax) * (cy - by) - (by - ay) * (cx - bx)


@numba.njit(nogil=True, cache=True, inline="always")
def _on_or_above(tx: float, ty: float, ax: float, ay: float, bx: float, by: float) -> bool:
    """Whether (tx, ty) lies on or above the line through a and b."""
    if ax > bx:
        ax, ay, bx, by = bx, by, ax, ay
    return (bx - ax) * (ty - ay) - (by - ay) * (tx - ax) >= 0.0


@numba.njit(nogil=True, cache=True)
def _upper_ends(cum_rows: NDArray[np.float64], cum_labels: NDArray[np.float64]
                ) -> NDArray[np.float64]:
    """p1 for a test row pooled with distinct score 0..k-1 (and 1 beyond the last).

    Algorithm 1 (the GCM of P_{-1} = (-1, -1), P_0, ..., P_k) and Algorithm 2 (slide the
    test row to the right, replacing P_{i-1} by P_{i-2} + P_i - P_{i-1}).
    """
    k = cum_rows.size - 1
    px = np.empty(k + 2)
    py = np.empty(k + 2)
    px[0] = -1.0
    py[0] = -1.0
    px[1:] = cum_rows
    py[1:] = cum_labels
    sx = np.empty(k + 2)
    sy = np.empty(k + 2)
    n = 0
    for j in range(k + 2):
        while n >= 2 and _turn(sx[n - 2], sy[n - 2], sx[n - 1], sy[n - 1], px[j], py[j]) <= 0.0:
            n -= 1
        sx[n] = px[j]
        sy[n] = py[j]
        n += 1
    sx[:n] = sx[:n][::-1].copy()  # the top of the stack is now the leftmost corner
    sy[:n] = sy[:n][::-1].copy()
    upper = np.empty(k + 1)
    for i in range(1, k + 1):
        upper[i - 1] = (sy[n - 2] - sy[n - 1]) / (sx[n - 2] - sx[n - 1])
        qx = px[i - 1] + px[i + 1] - px[i]
        qy = py[i - 1] + py[i + 1] - py[i]
        px[i] = qx
        py[i] = qy
        if _on_or_above(qx, qy, sx[n - 1], sy[n - 1], sx[n - 2], sy[n - 2]):
            continue
        n -= 1
        while n >= 2 and _turn(qx, qy, sx[n - 1], sy[n - 1], sx[n - 2], sy[n - 2]) <= 0.0:
            n -= 1
        sx[n] = qx
        sy[n] = qy
        n += 1
    upper[k] = 1.0  # a label 1 beyond every calibration score is never pooled
    return upper


@numba.njit(nogil=True, cache=True)
def _lower_ends(cum_rows: NDArray[np.float64], cum_labels: NDArray[np.float64]
                ) -> NDArray[np.float64]:
    """p0 for a test row pooled with distinct score 0..k-1 (at index 1..k; 0 below all).

    Algorithm 3 (the GCM of P_0, ..., P_k, P_{k+1} = P_k + (1, 0), from the right) and
    Algorithm 4 (slide the test row to the left, replacing P_i by P_{i-1} + P_{i+1} - P_i).
    """
    k = cum_rows.size - 1
    px = np.empty(k + 2)
    py = np.empty(k + 2)
    px[: k + 1] = cum_rows
    py[: k + 1] = cum_labels
    px[k + 1] = cum_rows[k] + 1.0
    py[k + 1] = cum_labels[k]
    sx = np.empty(k + 2)
    sy = np.empty(k + 2)
    n = 0
    for j in range(k + 1, -1, -1):
        while n >= 2 and _turn(sx[n - 2], sy[n - 2], sx[n - 1], sy[n - 1], px[j], py[j]) >= 0.0:
            n -= 1
        sx[n] = px[j]
        sy[n] = py[j]
        n += 1
    sx[:n] = sx[:n][::-1].copy()  # the top of the stack is now the rightmost corner
    sy[:n] = sy[:n][::-1].copy()
    lower = np.empty(k + 1)
    lower[0] = 0.0  # a label 0 below every calibration score is never pooled
    for i in range(k, 0, -1):
        lower[i] = (sy[n - 1] - sy[n - 2]) / (sx[n - 1] - sx[n - 2])  # +0.0, never -0.0
        qx = px[i - 1] + px[i + 1] - px[i]
        qy = py[i - 1] + py[i + 1] - py[i]
        px[i] = qx
        py[i] = qy
        if _on_or_above(qx, qy, sx[n - 1], sy[n - 1], sx[n - 2], sy[n - 2]):
            continue
        n -= 1
        while n >= 2 and _turn(qx, qy, sx[n - 1], sy[n - 1], sx[n - 2], sy[n - 2]) >= 0.0:
            n -= 1
        sx[n] = qx
        sy[n] = qy
        n += 1
    return lower


def isotonic_ends(scores: NDArray[np.float64], labels: NDArray[np.float64],
                  weights: NDArray[np.float64] | None = None
                  ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """The distinct calibration scores and the two fits at every place of a test score.

    Parameters
    ----------
    scores : ndarray of shape (n,)
        Calibration scores (ties allowed).
    labels : ndarray of shape (n,)
        Their 0/1 labels.
    weights : ndarray of shape (n,), optional
        Row weights (non-negative); rows of weight 0 are left out, as if absent. The
        test row weighs 1.

    Returns
    -------
    grid : ndarray of shape (k,)
        The distinct scores, sorted.
    lower, upper : ndarray of shape (k + 1,)
        For a test score s, p0 is ``lower[searchsorted(grid, s, "right")]`` and p1 is
        ``upper[searchsorted(grid, s, "left")]``: the isotonic fit at s with (s, 0), and
        with (s, 1), added to the calibration rows (a tied test score is pooled with its
        calibration rows, as a direct isotonic fit pools ties).
    """
    if weights is not None:
        present = weights > 0
        scores, labels, weights = scores[present], labels[present], weights[present]
    grid, inverse, counts = np.unique(scores, return_inverse=True, return_counts=True)
    if weights is None:
        sums = np.bincount(inverse.ravel(), weights=labels, minlength=grid.size)
    else:
        counts = np.bincount(inverse.ravel(), weights=weights, minlength=grid.size)
        sums = np.bincount(inverse.ravel(), weights=labels * weights, minlength=grid.size)
    cum_rows = np.concatenate([[0.0], np.cumsum(counts, dtype=np.float64)])
    cum_labels = np.concatenate([[0.0], np.cumsum(sums)])
    return grid, _lower_ends(cum_rows, cum_labels), _upper_ends(cum_rows, cum_labels)


def ends_at(grid: NDArray[np.float64], lower: NDArray[np.float64], upper: NDArray[np.float64],
            scores: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """(p0, p1) of each test score from :func:`isotonic_ends`'s output.

    Both step at every calibration score, so a score equal to one is pooled with it and a
    score one unit in the last place away is not, as a direct isotonic fit would have it.
    """
    # Sorted keys let searchsorted start each search where the last ended: 5x faster on a
    # million rows against a million distinct calibration scores (1.2 s instead of 6.2 s).
    order = np.argsort(scores, kind="stable")
    ordered = scores[order]
    below, above = np.empty_like(order), np.empty_like(order)
    below[order] = np.searchsorted(grid, ordered, side="right")
    above[order] = np.searchsorted(grid, ordered, side="left")
    return lower[below], upper[above]
