"""What the band of a LOESS fit needs (used by :mod:`calibcore.variable.smoothing`): the
fits and ``||l(x0)||`` at the evaluation points, the residual sum of squares and the
traces delta_1, delta_2 of the smoother (Cleveland & Devlin 1988), exactly from the
smoother matrix L for small inputs (:func:`smooth_exact`) and approximated without L for
large ones (:func:`smooth_large`, the approximations of the "Large inputs" section of
:mod:`calibcore.variable.smoothing`).

With positive row weights (rows of weight 0 dropped by the caller) every statistic is that
of the rows repeated by their weights: one copy of row j has the entry ``L_ij / w_j``, so
``||l||^2 = sum_j w_j (L_ij / w_j)^2``, RSS is ``sum w r^2``, and the traces are those of
:func:`calibcore.variable._loess_windows._deltas`.

Private: callers validate inputs. The names without an underscore are shared with
:mod:`calibcore.partitioned._binned_loess`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy.interpolate import CubicSpline

from calibcore.variable._loess_moments import fit_by_moments
from calibcore.variable._loess_windows import _bandwidth, _deltas, _operator_rows

#: Quantiles and equally spaced values of x added to the residual grid (large inputs).
COVERAGE_POINTS = 65
#: Spline knots closer than this fraction of the range of x are merged.
KNOT_SEPARATION = 1e-6


@dataclass(frozen=True)
class Smoothed:
    """Everything a band needs, for r responses sharing x."""

    fits: NDArray[np.float64]  # (r, m)
    operator_norms: NDArray[np.float64]  # (m,)  ||l(x0)||
    rss: NDArray[np.float64]  # (r,)
    delta1: float
    delta2: float
    exact: bool


def smooth_exact(
    sorted_x: NDArray[np.float64],
    sorted_y: NDArray[np.float64],
    points: NDArray[np.float64],
    span: float,
    weights: NDArray[np.float64] | None = None,
) -> Smoothed:
    """The band's statistics from the smoother matrix L (n x n; small n only)."""
    rows = _operator_rows(sorted_x, points, span, weights)
    operator = _operator_rows(sorted_x, sorted_x, span, weights)
    residuals = sorted_y - sorted_y @ operator.T
    delta1, delta2 = _deltas(operator, weights)
    squared_rows = rows * rows
    if weights is not None:
        squared_rows = squared_rows / weights[None, :]
    return Smoothed(
        fits=sorted_y @ rows.T,
        operator_norms=np.sqrt(squared_rows.sum(axis=1)),
        rss=residual_sum_of_squares(residuals, weights),
        delta1=delta1,
        delta2=delta2,
        exact=True,
    )


def smooth_large(
    sorted_x: NDArray[np.float64],
    sorted_y: NDArray[np.float64],
    points: NDArray[np.float64],
    span: float,
    subsample_size: int,
    random_state: int | None,
    weights: NDArray[np.float64] | None = None,
) -> Smoothed:
    """The band's statistics without L: exact fits and norms at the points, RSS from fits
    on a grid interpolated by a cubic spline, and the traces of a seeded random subsample
    of ``subsample_size`` rows (which must allow a local quadratic) shifted by the rows
    beyond it."""
    grid = np.unique(np.concatenate([points, coverage(sorted_x, points)]))
    bandwidth = _bandwidth(sorted_x, grid, span, weights)
    grid_fits, grid_norms = fit_by_moments(sorted_x, sorted_y, grid, bandwidth, weights)
    # near-coincident knots (a quantile one ulp from an evaluation point) would
    # make the spline amplify rounding noise, so knots closer than this are merged
    separation = KNOT_SEPARATION * (sorted_x[-1] - sorted_x[0])
    knots = np.concatenate([[True], np.diff(grid) > separation])
    if knots.sum() > 1:
        fitted = CubicSpline(grid[knots], grid_fits[:, knots], axis=1)(sorted_x)
    else:
        fitted = np.repeat(grid_fits[:, :1], sorted_x.size, axis=1)
    rng = np.random.default_rng(random_state)
    chosen = np.sort(rng.choice(sorted_x.size, size=subsample_size, replace=False))
    # n - delta_k settles to a constant, with weights as without (the repeated rows'
    # count), so the rows (or weight) beyond the subsample add to each delta
    chosen_weights = None
    extra_rows = float(sorted_x.size - subsample_size)
    if weights is not None:
        chosen_weights = weights[chosen]
        extra_rows = float(weights.sum() - chosen_weights.sum())
    delta1, delta2 = _deltas(_operator_rows(sorted_x[chosen], sorted_x[chosen], span,
                                            chosen_weights), chosen_weights)
    at_points = np.searchsorted(grid, points)
    return Smoothed(
        fits=grid_fits[:, at_points],
        operator_norms=grid_norms[at_points],
        rss=residual_sum_of_squares(sorted_y - fitted, weights),
        delta1=delta1 + extra_rows,
        delta2=delta2 + extra_rows,
        exact=False,
    )


def residual_sum_of_squares(residuals: NDArray[np.float64],
                            weights: NDArray[np.float64] | None) -> NDArray[np.float64]:
    """``sum r^2`` (or ``sum w r^2`` with row weights) of each response's residuals (r, n)."""
    squared = residuals * residuals
    if weights is not None:
        squared = squared * weights[None, :]
    return np.asarray(squared.sum(axis=1), dtype=np.float64)


def coverage(sorted_x: NDArray[np.float64], points: NDArray[np.float64]) -> NDArray[np.float64]:
    """Knots where the evaluation points leave the range of x uncovered.

    Candidates are 65 quantiles and 65 equally spaced values of x (so both dense
    regions and long tails get knots); a candidate is dropped when an evaluation
    point lies in its cell (half way to its neighbours), except the ends.
    """
    candidates = np.unique(
        np.concatenate(
            [
                np.quantile(sorted_x, np.linspace(0.0, 1.0, COVERAGE_POINTS)),
                np.linspace(sorted_x[0], sorted_x[-1], COVERAGE_POINTS),
            ]
        )
    )
    middles = (candidates[1:] + candidates[:-1]) / 2.0
    low = np.concatenate([[-np.inf], middles])
    high = np.concatenate([middles, [np.inf]])
    ordered = np.sort(points)
    covered = np.searchsorted(ordered, high, side="right") > np.searchsorted(ordered, low)
    covered[[0, -1]] = False
    return candidates[~covered]
