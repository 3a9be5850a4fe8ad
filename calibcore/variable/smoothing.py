"""LOESS: local quadratic regression with pointwise confidence bands.

This is the smoother of Cleveland and Grosse (1991) that the variable-based
calibration paper (Kelly & Smyth 2023, Section 4 and Appendix B) uses for its calibration
plots, i.e. R's ``loess(degree=2, family="gaussian")`` without robustness
iterations, computed directly (no kd-tree interpolation) with exact statistics:

* the fit at ``x0`` is the intercept of a weighted least-squares quadratic in
  ``d = (x - x0) / h(x0)`` with tricube weights ``(1 - |d|^3)^3`` on ``|d| < 1``;
* ``h(x0)`` is the distance from ``x0`` to its q-th nearest observation,
  ``q = floor(n * span)``; for ``span > 1`` it is the largest distance times span;
* the fit is linear in y: ``fit(x0) = l(x0)^T y``; the smoother matrix L has
  rows ``l(x_i)``;
* ``delta_k = tr(((I - L)^T (I - L))^k)``, ``s^2 = RSS / delta_1`` and the
  lookup degrees of freedom ``df = delta_1^2 / delta_2``;
* the 95% band is ``fit +/- t(0.975, df) * s * ||l(x0)||``.

Row weights (``sample_weight``) say how many rows each row stands for: the local
weights are tricube x row weight, the window holds the nearest rows making up a share
``span`` of the total weight W (``floor(W * span)`` for integer weights), RSS is
``sum w r^2`` and ``||l(x0)||``, delta_1 and delta_2 are those of the rows repeated by
their weights (:func:`calibcore.variable._loess_windows._deltas`). So integer weights give
exactly the fit and band of the repeated rows (while both are computed exactly); other
weights (survey weights) are first rescaled to add up to the number of rows, so that the
band does not change when every weight is scaled. Rows of weight zero are left out; weights
that are all 1 are no weights (the unweighted computation).

Ties: a window with fewer than three distinct x values gets the minimum-norm
quadratic in d (R also falls back to a pseudo-inverse); when every row of a
window lies at distance h (more than q rows tie at x0, so h = 0, or the window
ends on a tie with no row inside), h goes half-way to the next distance at
which rows lie: the fit is the mean response of the ties at x0, or the local
fit over the tied rows at h, never the 0/0 of a window without weight.

Large inputs
------------
Up to ``n_exact`` rows everything above is computed exactly from L. Above that,
L (n x n) is never formed:

* the fit and ``||l(x0)||`` at the evaluation points stay exact: the weighted
  moments of each window are accumulated in one compiled pass over sorted x;
* RSS needs the fit at every row. It is computed exactly on a grid (the
  evaluation points, plus some of 65 quantiles and 65 equally spaced values of
  x where the evaluation points leave gaps) and interpolated by a cubic
  spline; the fit is smooth on the scale of the bandwidth, which is much
  coarser than the grid;
* ``delta_1`` and ``delta_2`` are computed exactly on a seeded random subsample
  of ``m = n_exact`` rows and shifted by the extra rows,
  ``delta_k(n) ~= delta_k(m) + (n - m)``: for a fixed span ``n - delta_k``
  settles to a constant (an equivalent number of parameters, about 5 for
  span 0.8), so the relative error is of order 1/n (below 1e-3 at n = 2,000,
  see ``tests/calibcore/variable/test_smoothing.py``). Small spans (about 0.05) bring
  the errors of s and of the bands close to 1e-3.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.stats import t as student_t

from calibcore._validation import check_in_range, check_positive_int, describe_rows, first_rows
from calibcore.exceptions import CalibrationInputError
from calibcore.variable._binning import plain_weights
from calibcore.variable._loess_band import Smoothed, smooth_exact, smooth_large
from calibcore.variable._loess_moments import fit_by_moments, fit_only
from calibcore.variable._loess_windows import (
    _bandwidth,
    _neighbour_count,
    enough_neighbours,
    relative_weights,
    window_mass,
)

__all__ = [
    "MAX_LEVERAGE",
    "MIN_NEIGHBOURS",
    "N_EXACT",
    "LoessFit",
    "loess",
    "loess_fit",
    "loess_leverage",
    "loess_many",
]

#: Default largest number of rows smoothed exactly (with the n x n smoother matrix).
N_EXACT = 1000
#: Largest ``||l(x0)||^2`` of a fit worth drawing: above it the fit varies more than one
#: row does. Measured on a variable with a sentinel (10% at 999, the rest in [0, 60]): about
#: 1e-4 where rows surround x0 (ties included), 2 to 1e7 in the gap, where the fits reached
#: error rates of 3 to 2,970.
MAX_LEVERAGE = 1.0
#: Smallest floor(n * span): three points with positive weight plus the farthest (weight 0).
MIN_NEIGHBOURS = 4
#: delta1 below this many per row means L = I (up to rounding): no band.
_NO_FREEDOM = 1e-9
#: Window rows per compiled call of :func:`loess_fit` (at most about 0.1 s: most are
#: summed from block power sums, far faster), so that progress reports and cancels are
#: prompt.
_ROW_OPERATIONS_PER_CALL = 30_000_000


@dataclass(frozen=True)
class LoessFit:
    """A LOESS fit at evaluation points with its pointwise confidence band.

    Attributes
    ----------
    x : ndarray of shape (m,)
        Evaluation points, in the order given.
    fit : ndarray of shape (m,)
        Smoothed value ``l(x0)^T y``.
    low, high : ndarray of shape (m,)
        ``fit -/+ t((1 + level) / 2, df) * standard_error`` (not clipped).
    standard_error : ndarray of shape (m,)
        ``s * ||l(x0)||``.
    residual_scale : float
        ``s = sqrt(RSS / delta1)`` (NaN when delta1 is 0, i.e. L = I).
    delta1, delta2 : float
        ``tr((I - L)^T (I - L))`` and ``tr(((I - L)^T (I - L))^2)``.
    degrees_of_freedom : float
        ``delta1^2 / delta2``, used for the t quantile.
    span : float
        Fraction of rows in each neighbourhood.
    n : int
        Number of observations.
    exact : bool
        False when RSS and the deltas were approximated (n > n_exact).
    confidence_level : float
        Coverage of the band, e.g. 0.95.
    leverage : ndarray of shape (m,)
        ``||l(x0)||^2``, the fit's variance in units of one row's: about 1 / (rows in the
        window) where rows surround x0; above 1 where the fit is less certain than a single
        observation (a local quadratic extrapolated into a gap of x). See
        :data:`MAX_LEVERAGE`.
    """

    x: NDArray[np.float64]
    fit: NDArray[np.float64]
    low: NDArray[np.float64]
    high: NDArray[np.float64]
    standard_error: NDArray[np.float64]
    residual_scale: float
    delta1: float
    delta2: float
    degrees_of_freedom: float
    span: float
    n: int
    exact: bool
    confidence_level: float
    leverage: NDArray[np.float64]


def loess(
    x: ArrayLike,
    y: ArrayLike,
    x_eval: ArrayLike,
    *,
    span: float = 0.8,
    confidence_level: float = 0.95,
    n_exact: int = N_EXACT,
    random_state: int | None = 0,
    sample_weight: ArrayLike | None = None,
) -> LoessFit:
    """Local quadratic LOESS of ``y`` on ``x`` at ``x_eval`` with a confidence band.

    Parameters
    ----------
    x, y : array-like of shape (n,)
        Finite predictor and response.
    x_eval : array-like of shape (m,)
        Where to evaluate the fit (any finite values; outside the data range
        the local quadratic extrapolates).
    span : float, default=0.8
        Fraction of rows in each neighbourhood, ``q = floor(n * span) >= 4``.
    confidence_level : float, default=0.95
        Pointwise coverage of the band.
    n_exact : int, default=1000
        Inputs with at most this many rows are smoothed exactly; larger ones
        use the approximations of the module docstring with a subsample of
        this size.
    random_state : int or None, default=0
        Seed of the subsample (large inputs only).
    sample_weight : array-like of shape (n,), optional
        Non-negative row weights (see the module docstring); rows of weight 0 are left
        out, and ``n_exact`` counts the rows left.

    Returns
    -------
    LoessFit
    """
    return loess_many(
        x,
        np.asarray(y, dtype=np.float64)[None, ...],
        x_eval,
        span=span,
        confidence_level=confidence_level,
        n_exact=n_exact,
        random_state=random_state,
        sample_weight=sample_weight,
    )[0]


def loess_many(
    x: ArrayLike,
    ys: ArrayLike,
    x_eval: ArrayLike,
    *,
    span: float = 0.8,
    confidence_level: float = 0.95,
    n_exact: int = N_EXACT,
    random_state: int | None = 0,
    sample_weight: ArrayLike | None = None,
) -> tuple[LoessFit, ...]:
    """LOESS of several responses on the same ``x`` (the weights are shared).

    Parameters
    ----------
    ys : array-like of shape (r, n)
        One response per row.
    x, x_eval, span, confidence_level, n_exact, random_state, sample_weight
        As in :func:`loess`.

    Returns
    -------
    tuple of LoessFit
        One per response, in order.
    """
    predictor = _check_finite_vector(x, "x")
    responses = np.asarray(ys, dtype=np.float64)
    if responses.ndim != 2 or responses.shape[1] != predictor.size or responses.shape[0] == 0:
        raise CalibrationInputError(
            f"ys must have shape (r, {predictor.size}) to match x; got {responses.shape}."
        )
    for row in responses:
        _check_finite_vector(row, "y")
    points = _check_finite_vector(x_eval, "x_eval")
    span = check_in_range(span, "span", low=0.0, high=np.inf, inclusive=False)
    level = check_in_range(confidence_level, "confidence_level", low=0, high=1, inclusive=False)
    n_exact = check_positive_int(n_exact, "n_exact", minimum=3)
    weights = plain_weights(sample_weight, predictor.size)
    if weights is not None:
        positive = weights > 0
        predictor, responses = predictor[positive], responses[:, positive]
        weights = relative_weights(weights[positive])
    n = predictor.size
    if not enough_neighbours(n, span, weights, MIN_NEIGHBOURS):
        held = (_neighbour_count(n, span) if weights is None
                else f"{window_mass(weights, span):g} of weight")
        raise CalibrationInputError(
            f"span={span:g} gives windows of {held} for n={n} rows; a local quadratic "
            f"needs at least {MIN_NEIGHBOURS} (the farthest gets zero weight). Increase span "
            "or add rows."
        )
    order = np.argsort(predictor, kind="stable")
    sorted_x = predictor[order]
    sorted_y = np.take(responses, order, axis=1)
    sorted_w = None if weights is None else np.ascontiguousarray(weights[order])
    if n <= n_exact:
        smoothed = smooth_exact(sorted_x, sorted_y, points, span, sorted_w)
    else:
        # the subsample must itself allow a local quadratic (floor(m * span) >= 4)
        size = min(n, max(n_exact, int(np.ceil(MIN_NEIGHBOURS / span))))
        smoothed = smooth_large(sorted_x, sorted_y, points, span, size, random_state, sorted_w)
    return tuple(
        _with_band(points, smoothed, response, span, n, level)
        for response in range(responses.shape[0])
    )


def loess_fit(
    sorted_x: NDArray[np.float64],
    sorted_y: NDArray[np.float64],
    points: NDArray[np.float64],
    *,
    span: float,
    progress: Callable[[float], None] | None = None,
    sample_weight: NDArray[np.float64] | None = None,
) -> NDArray[np.float64]:
    """The LOESS fit alone (no band) at ``points``, from window moments (any n).

    For callers that only need the curve (e.g. the largest gap between two
    curves, which by linearity is the fit of their difference): the same fit as
    :func:`loess_many` (up to rounding), without the smoother's residuals and
    traces that the band needs, which on large inputs cost as much again.

    Parameters
    ----------
    sorted_x : ndarray of shape (n,)
        Finite predictor, sorted ascending (trusted: a private helper's input).
    sorted_y : ndarray of shape (n,)
        Response in the same order.
    points : ndarray of shape (m,)
        Evaluation points.
    span : float
        As in :func:`loess`; ``floor(n * span)`` must be at least :data:`MIN_NEIGHBOURS`.
    progress : callable, optional
        Called with the fraction of points fitted, every few million row operations
        (it may raise to stop).
    sample_weight : ndarray of shape (n,), optional
        Positive row weights in the same order (trusted; callers drop rows of weight 0).

    Returns
    -------
    ndarray of shape (m,)
    """
    bandwidth = _bandwidth(sorted_x, points, span, sample_weight)
    window = max(_neighbour_count(sorted_x.size, span), 1)
    return fit_only(sorted_x, sorted_y, points, bandwidth, progress or _ignore,
                    points_per_call=max(1, _ROW_OPERATIONS_PER_CALL // window),
                    sample_weight=sample_weight)


def loess_leverage(sorted_x: NDArray[np.float64], points: NDArray[np.float64], *,
                   span: float, sample_weight: NDArray[np.float64] | None = None
                   ) -> NDArray[np.float64]:
    """``||l(x0)||^2`` at ``points`` (:attr:`LoessFit.leverage`) alone, for callers of
    :func:`loess_fit`; ``sorted_x`` and ``sample_weight`` as there."""
    bandwidth = _bandwidth(sorted_x, points, span, sample_weight)
    _, norms = fit_by_moments(sorted_x, np.zeros((1, sorted_x.size)), points, bandwidth,
                              sample_weight)
    return norms * norms


def _ignore(fraction: float) -> None:
    """The default progress callback."""


def _check_finite_vector(values: ArrayLike, name: str) -> NDArray[np.float64]:
    try:
        vector = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise CalibrationInputError(f"{name} must be numeric: {exc}") from exc
    if vector.ndim != 1 or vector.size == 0:
        raise CalibrationInputError(
            f"{name} must be a non-empty 1-D array; got shape {vector.shape}."
        )
    bad = ~np.isfinite(vector)
    if bad.any():
        raise CalibrationInputError(
            f"{name} has missing or non-finite values in {describe_rows(bad)}.",
            code="non_finite_value",
            rows=first_rows(bad),
            count=int(bad.sum()),
        )
    return vector


def _with_band(
    points: NDArray[np.float64],
    smoothed: Smoothed,
    response: int,
    span: float,
    n: int,
    level: float,
) -> LoessFit:
    delta1, delta2 = smoothed.delta1, smoothed.delta2
    # L = I up to rounding (every window interpolates): no residual degrees of freedom
    interpolates = delta1 <= _NO_FREEDOM * n
    residual_scale = np.nan if interpolates else float(np.sqrt(smoothed.rss[response] / delta1))
    dof = np.nan if interpolates else delta1 * delta1 / delta2
    quantile = float(student_t.ppf(0.5 + level / 2.0, dof)) if np.isfinite(dof) else np.nan
    fit = smoothed.fits[response]
    standard_error = residual_scale * smoothed.operator_norms
    return LoessFit(
        x=points,
        fit=fit,
        low=fit - quantile * standard_error,
        high=fit + quantile * standard_error,
        standard_error=standard_error,
        residual_scale=residual_scale,
        delta1=delta1,
        delta2=delta2,
        degrees_of_freedom=float(dof),
        span=span,
        n=n,
        exact=smoothed.exact,
        confidence_level=level,
        leverage=smoothed.operator_norms * smoothed.operator_norms,
    )
