"""The LOESS calibration curves of one variable (Kelly & Smyth 2023, Figure 1b), and what
they need.

:func:`calibcore.variable.loess_curves` and the ranking's largest gap use these on all rows;
:mod:`calibcore.partitioned._numeric_variables` on the rows of a partitioned table it can hold. The
public names are re-exported by :mod:`calibcore.variable`.

Private: callers validate inputs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from calibcore._validation import check_predictions
from calibcore.data.views import score_outcome
from calibcore.exceptions import CalibrationInputError
from calibcore.variable._binning import Variable, integer_weights, weighted_quantiles
from calibcore.variable._loess_windows import _neighbour_count, window_mass
from calibcore.variable.smoothing import MAX_LEVERAGE, LoessFit, loess_many

CurveRange = Literal["5-95", "1-99", "all"]
#: Quantiles of V the curves run between, per ``curve_range``: the paper's 5th-95th
#: percentiles hide the tails, where a model is often most wrong, so wider ones are offered
#: ("all": quantiles 0 and 1 are the minimum and maximum).
CURVE_RANGES: dict[CurveRange, tuple[float, float]] = {
    "5-95": (0.05, 0.95),
    "1-99": (0.01, 0.99),
    "all": (0.0, 1.0),
}
#: The default range (the paper's reference).
CURVE_QUANTILES = CURVE_RANGES["5-95"]
#: An integer-valued V with at most this many integers in the plotted range gets one
#: histogram bar per integer (edges at k +/- 0.5); otherwise equal-width bins.
MAX_INTEGER_BINS = 60
#: Relative slack of the gap rule (:func:`gap_support`): spacings of a decimal grid differ
#: by rounding (0.3 - 0.2 != 0.2 - 0.1 in floats), which must not open a gap.
GAP_SLACK = 1e-9


@dataclass(frozen=True)
class LoessCurves:
    """LOESS error and predicted-error curves against a variable (Kelly & Smyth 2023, Figure 1b).

    Attributes
    ----------
    x : ndarray of shape (n_points,)
        Equally spaced values of V between the quantiles of ``curve_range``
        (by default its 5th and 95th percentiles).
    error, error_low, error_high : ndarray of shape (n_points,)
        Smoothed error rate 1[y != argmax] and its pointwise band (fractions).
    predicted_error, predicted_error_low, predicted_error_high : ndarray of shape (n_points,)
        Smoothed predicted error ``1 - confidence`` and its band. Bands are
        ``fit +/- t s ||l(x)||`` and are not clipped to [0, 1]. All six are NaN where the
        curves are not estimated: strictly inside a wide gap of V (see ``gaps``), or where
        the fit is less certain than one row (``||l(x)||^2`` above
        :data:`calibcore.variable.MAX_LEVERAGE`).
    vce_max : float
        ``VCE(v*) = max |error - predicted_error|`` over the ``x`` where both are drawn
        (so never inside a gap of V that holds no rows).
    v_star : float
        The ``x`` where that maximum occurs.
    n : int
        Rows used (V not missing).
    n_missing : int
        Rows left out because V was missing.
    span : float
        LOESS span.
    confidence_level : float
        Pointwise coverage of the bands.
    histogram_edges : ndarray of shape (n_bars + 1,)
        Bins of the histogram of V: ``n_histogram_bins`` equal-width bins over
        ``[x[0], x[-1]]``, or, when V is integer-valued with at most
        :data:`MAX_INTEGER_BINS` integers in that range, one bin per integer k
        there with edges at ``k - 0.5`` and ``k + 0.5``.
    histogram_counts : ndarray of shape (n_bars,)
        Rows per histogram bin (rows outside ``[x[0], x[-1]]`` are not counted).
    exact : bool
        False when the band statistics were approximated (large n; see
        :mod:`calibcore.variable.smoothing`).
    curve_range : {"5-95", "1-99", "all"}
        Which quantiles of V the curves run between (:data:`CURVE_RANGES`).
    gaps : ndarray of shape (n_gaps, 2)
        The wide gaps of V that hold evaluation points, as ``(a, b)``: two consecutive
        values of V with no row between them, wider than twice what the rows on either
        side reach with a LOESS window of their own (:func:`gap_support`). The curves are
        not estimated strictly inside them.
    """

    x: NDArray[np.float64]
    error: NDArray[np.float64]
    error_low: NDArray[np.float64]
    error_high: NDArray[np.float64]
    predicted_error: NDArray[np.float64]
    predicted_error_low: NDArray[np.float64]
    predicted_error_high: NDArray[np.float64]
    vce_max: float
    v_star: float
    n: int
    n_missing: int
    span: float
    confidence_level: float
    histogram_edges: NDArray[np.float64]
    histogram_counts: NDArray[np.int64]
    exact: bool
    curve_range: CurveRange = "5-95"
    gaps: NDArray[np.float64] = field(default_factory=lambda: np.empty((0, 2)))


VariableView = Literal["top_label", "positive"]


@dataclass(frozen=True)
class Errors:
    """Per-row predicted error and error of the top-label view (internal)."""

    predicted: NDArray[np.float64]
    actual: NDArray[np.float64]


def curve_points(values: NDArray[np.float64], n_points: int,
                  curve_range: CurveRange = "5-95",
                  weights: NDArray[np.float64] | None = None) -> NDArray[np.float64]:
    """``n_points`` equally spaced values between the quantiles of ``curve_range`` of V
    (weighted quantiles with row ``weights``, all positive: those of the repeated rows for
    integer weights)."""
    if weights is None:
        low, high = np.quantile(values, CURVE_RANGES[curve_range])
    else:
        order = np.argsort(values, kind="stable")
        low, high = weighted_quantiles(values[order], weights[order],
                                       np.asarray(CURVE_RANGES[curve_range]))
    return np.linspace(float(low), float(high), n_points)


def histogram(values: NDArray[np.float64], low: float, high: float,
               n_bins: int) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """Counts and edges of V over ``[low, high]``: one bin per integer for an
    integer-valued V with few integers there (so bars sit on the integers), else
    ``n_bins`` equal-width bins."""
    first, last = np.ceil(low), np.floor(high)
    if first <= last <= first + MAX_INTEGER_BINS - 1 and np.all(values == np.round(values)):
        shown = values[(values >= first) & (values <= last)]
        counts = np.bincount((shown - first).astype(np.intp), minlength=int(last - first) + 1)
        return counts.astype(np.int64), np.arange(first - 0.5, last + 1.0)
    counts, edges = np.histogram(values, bins=n_bins, range=(low, high))
    return counts.astype(np.int64), edges


def variable_curves(
    variable: Variable,
    errors: Errors,
    span: float,
    n_points: int,
    confidence_level: float,
    n_histogram_bins: int,
    random_state: int | None,
    curve_range: CurveRange = "5-95",
    weights: NDArray[np.float64] | None = None,
) -> LoessCurves:
    """The curves of a variable; ``weights`` are those of its used rows (None: unweighted).
    Rows of weight 0 count in ``n`` and the histogram only."""
    values = variable.values
    positive = None if weights is None else weights > 0
    weighted_values = values if positive is None else values[positive]
    positive_weights = None if weights is None else weights[positive]
    x = curve_points(weighted_values, n_points, curve_range, positive_weights)
    error_fit, predicted_fit = loess_many(
        values,
        np.stack([errors.actual[variable.used], errors.predicted[variable.used]]),
        x,
        span=span,
        confidence_level=confidence_level,
        random_state=random_state,
        sample_weight=weights,
    )
    if positive_weights is None:
        supported, gaps = row_support(np.sort(values), x, span)
    else:
        order = np.argsort(weighted_values, kind="stable")
        supported, gaps = row_support(weighted_values[order], x, span, positive_weights[order])
    error, error_low, error_high, predicted, predicted_low, predicted_high = drawn(
        error_fit, predicted_fit, supported)
    vce_max, v_star = largest_gap(x, np.abs(error - predicted))
    counts, edges = histogram(values, float(x[0]), float(x[-1]), n_histogram_bins)
    return LoessCurves(
        x=x,
        error=error,
        error_low=error_low,
        error_high=error_high,
        predicted_error=predicted,
        predicted_error_low=predicted_low,
        predicted_error_high=predicted_high,
        vce_max=vce_max,
        v_star=v_star,
        n=int(values.size),
        n_missing=int(variable.used.size - values.size),
        span=error_fit.span,
        confidence_level=error_fit.confidence_level,
        histogram_edges=edges,
        histogram_counts=counts,
        exact=error_fit.exact,
        curve_range=curve_range,
        gaps=gaps,
    )


Reach = Callable[[NDArray[np.float64]], NDArray[np.float64]]


def gap_support(points: NDArray[np.float64], below: NDArray[np.float64],
                above: NDArray[np.float64], reach_down: Reach,
                reach_up: Reach) -> tuple[NDArray[np.bool_], NDArray[np.float64]]:
    """Where the curves are estimated: not strictly inside a wide gap of V.

    A *gap* is the open interval ``(a, b)`` between two consecutive values of V (no row
    lies inside it). Each edge supports the fit as far as a LOESS window built from the
    rows on its own side reaches: ``r-(a)`` is the distance from a down to its
    ``floor(n * span)``-th nearest row at or below a (to the smallest row when fewer lie
    there), ``r+(b)`` from b up likewise. The gap is *wide* when
    ``b - a > 2 min(r-(a), r+(b))``: one edge's reach stops short of the gap's middle, so
    part of the gap is nearer to that edge than to anything its rows support, and a fit
    there is a quadratic carried into values the data never visit. Points strictly inside
    a wide gap are not estimated, nor points outside the range of V.

    Ties: when the rows an edge reaches all tie at the edge, its reach is half the
    distance to the next value beyond it on its side (as LOESS widens such a window), or
    unlimited when there is none (the edge is the minimum or maximum of V). So the unit
    steps of a count or an hour (2 r = 1) are bridged at any span, while a sentinel far
    from the rest is not, at any span. The rule depends on V and the span only, never on
    the outcomes.

    Parameters
    ----------
    points : ndarray of shape (m,)
        Evaluation points.
    below, above : ndarray of shape (m,)
        The largest value of V at or below each point and the smallest at or above
        (-inf / +inf when there is none); equal to the point where a row lies there.
    reach_down, reach_up : callable
        ``r-`` at an array of values of V (the gaps' lower edges) and ``r+`` (upper edges).

    Returns
    -------
    supported : ndarray of bool, shape (m,)
    gaps : ndarray of shape (n_gaps, 2)
        The wide gaps that hold points, ``(a, b)``, in order.
    """
    inside = (below < points) & (points < above)
    supported = ~inside
    if not inside.any():
        return supported, np.empty((0, 2))
    pairs, at = np.unique(np.stack([below[inside], above[inside]], axis=1), axis=0,
                          return_inverse=True)
    reach = np.zeros(len(pairs))
    ends = np.isfinite(pairs).all(axis=1)  # a point outside the range of V: no reach
    reach[ends] = np.minimum(reach_down(pairs[ends, 0]), reach_up(pairs[ends, 1]))
    wide = pairs[:, 1] - pairs[:, 0] > 2.0 * reach * (1.0 + GAP_SLACK)
    supported[inside] = ~wide[np.ravel(at)]
    return supported, pairs[wide & ends].reshape(-1, 2)


def row_support(sorted_values: NDArray[np.float64], points: NDArray[np.float64],
                span: float, weights: NDArray[np.float64] | None = None
                ) -> tuple[NDArray[np.bool_], NDArray[np.float64]]:
    """:func:`gap_support` from the rows of V, sorted: an edge's reach is to its
    ``floor(n * span)``-th nearest row on its side; with positive row ``weights``, to the
    nearest rows on its side holding the window's weight M (:func:`window_mass`), counting
    weight as rows are counted (for integer weights the reach of the rows repeated by
    their weights)."""
    n = sorted_values.size
    if weights is None:
        q = max(_neighbour_count(n, span), 1)

        def farthest_below(at_or_below: NDArray[np.intp]) -> NDArray[np.float64]:
            return sorted_values[np.maximum(at_or_below - q, 0)]

        def farthest_above(first: NDArray[np.intp]) -> NDArray[np.float64]:
            return sorted_values[np.minimum(first + q - 1, n - 1)]
    else:
        mass = window_mass(weights, span)
        if integer_weights(weights):
            mass = max(mass, 1.0)  # as floor(n * span) is raised to one row
        cumulative = np.cumsum(weights)
        before = cumulative - weights

        def farthest_below(at_or_below: NDArray[np.intp]) -> NDArray[np.float64]:
            # the last row a with weight(a .. rows at or below the end) >= M
            held = cumulative[np.maximum(at_or_below - 1, 0)]
            start = np.searchsorted(before, held - mass, side="right") - 1
            return sorted_values[np.maximum(start, 0)]

        def farthest_above(first: NDArray[np.intp]) -> NDArray[np.float64]:
            # the first row b with weight(rows from the end .. b) >= M
            start_mass = before[np.minimum(first, n - 1)]
            stop = np.searchsorted(cumulative, start_mass + mass, side="left")
            return sorted_values[np.minimum(stop, n - 1)]

    above_index = np.searchsorted(sorted_values, points, side="left")
    below_index = np.searchsorted(sorted_values, points, side="right") - 1
    above = np.where(above_index < n, sorted_values[np.minimum(above_index, n - 1)], np.inf)
    below = np.where(below_index >= 0, sorted_values[np.maximum(below_index, 0)], -np.inf)

    def reach_down(ends: NDArray[np.float64]) -> NDArray[np.float64]:
        reach = ends - farthest_below(np.searchsorted(sorted_values, ends, side="right"))
        first = np.searchsorted(sorted_values, ends, side="left")
        beyond = np.where(first > 0, ends - sorted_values[np.maximum(first - 1, 0)], np.inf)
        return np.where(reach > 0, reach, beyond / 2.0)

    def reach_up(ends: NDArray[np.float64]) -> NDArray[np.float64]:
        reach = farthest_above(np.searchsorted(sorted_values, ends, side="left")) - ends
        after = np.searchsorted(sorted_values, ends, side="right")
        beyond = np.where(after < n, sorted_values[np.minimum(after, n - 1)] - ends, np.inf)
        return np.where(reach > 0, reach, beyond / 2.0)

    return gap_support(points, below, above, reach_down, reach_up)


def drawn(error_fit: LoessFit, predicted_fit: LoessFit,
          supported: NDArray[np.bool_]) -> tuple[NDArray[np.float64], ...]:
    """Both curves and their bands, NaN where they are not estimated: outside
    ``supported`` (:func:`gap_support`), or where the fit's leverage exceeds
    :data:`calibcore.variable.MAX_LEVERAGE` (less certain than one row)."""
    unsupported = ~supported | (error_fit.leverage > MAX_LEVERAGE)
    return tuple(np.where(unsupported, np.nan, curve) for curve in (
        error_fit.fit, error_fit.low, error_fit.high,
        predicted_fit.fit, predicted_fit.low, predicted_fit.high))


def largest_gap(x: NDArray[np.float64], gap: NDArray[np.float64]) -> tuple[float, float]:
    """VCE(v*) and v*: the largest gap where it is drawn (NaN, NaN where it is nowhere)."""
    if np.isnan(gap).all():
        return np.nan, np.nan
    worst = int(np.nanargmax(gap))
    return float(gap[worst]), float(x[worst])


def view_errors(y_true: ArrayLike, y_prob: ArrayLike,
                view: VariableView = "top_label") -> Errors:
    """Predicted error 1 - score and error 1 - outcome of a view: on the top label
    (Kelly & Smyth 2023) 1 - confidence and 1[y != argmax]; on the positive view of a
    binary model 1 - P(class 1) and 1[y != 1], whose curves and VECE follow P(class 1)
    against the frequency of class 1 along the variable."""
    if view not in ("top_label", "positive"):
        raise CalibrationInputError(f"view must be top_label or positive, not {view!r}.")
    labels, proba = check_predictions(y_true, y_prob)
    problem = score_outcome(labels, proba, view)
    return Errors(predicted=1.0 - problem.scores[0], actual=1.0 - problem.outcomes[0])
