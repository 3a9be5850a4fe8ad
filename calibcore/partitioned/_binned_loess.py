"""LOESS calibration curves from binned sufficient statistics.

:func:`calibcore.variable.loess_curves` smooths every row. A partitioned table
(:mod:`calibcore.partitioned.variables`) only gives summaries of its rows, and from them
this module computes the same curves to within :data:`LOESS_BOUND`, following
:func:`calibcore.variable.loess_many` for more than ``N_EXACT`` rows step by step:

* the rows of V per fine cell (:class:`CellDistribution`: about 2^16 cells of equal
  mass, :class:`calibcore.partitioned.FloatCells`, with each cell's count, smallest
  and largest value) give the bandwidth ``h(x0)`` (distance to the
  ``floor(n * span)``-th nearest row, rows spread evenly within a cell; a window ending
  on tied values ends exactly there, as in memory), the 65 quantile knots of the
  residual spline and the subsample of the degrees of freedom (the same ranks as in
  memory: exact wherever a cell holds one or two rows, or ties);
* per *group* of consecutive cells (:class:`GroupSums`: about 4,096 groups of equal
  mass, also cut so that none is wider than 1/128 of the smallest bandwidth) the
  count, the sums of the error, of the predicted error and of its square, and the
  centroids of V weighted by each give the window moments: they are sums of smooth
  functions of V (tricube weights are twice differentiable) times a non-negative
  weight, and evaluating each at the centroid of its weight leaves an error of second
  order in the group's width over the bandwidth. The residual sum of squares about
  the spline is summed over groups the same way.

The evaluation points (between the exact 5th and 95th percentiles) and the histogram
under the curves are exact and come from the caller. Where the curves are estimated
follows :func:`calibcore.variable._curves.gap_support` from the cells
(:meth:`CellDistribution.support`), so v* is never inside a wide gap of V here either.
Measured against :func:`calibcore.variable.loess_curves` on all rows, for normal, Cauchy, rounded
Student-t (ties), log-normal, zero-inflated, bimodal, offset (N(1e6, 1e-3)),
Poisson-integer and uniform variables, spans 0.8, 0.5, 0.2 and 0.05, and 1,001 to
1,000,000 rows in 7 parts: at most 1.3e-4 on the fits, 1.7e-4 on the bands and 8.3e-6
on ``vce_max`` (the largest at span 0.05 and a few thousand rows; 5e-6 at a million
rows). The stated bound, :data:`LOESS_BOUND` = 1e-3, is tested in
``tests/calibcore/partitioned/test_partitioned_variables.py``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy.interpolate import CubicSpline

from calibcore.partitioned._window_moments import window_sums
from calibcore.variable._curves import LoessCurves, drawn, gap_support, largest_gap
from calibcore.variable._loess_band import COVERAGE_POINTS, KNOT_SEPARATION, Smoothed, coverage
from calibcore.variable._loess_moments import hankel, intercept_rows
from calibcore.variable._loess_windows import _deltas, _operator_rows
from calibcore.variable.smoothing import MIN_NEIGHBOURS, N_EXACT, _with_band

#: Stated bound on the absolute difference from :func:`calibcore.variable.loess_curves` on
#: all rows of the curves, their bands and ``vce_max`` (measured: at most 1.7e-4).
LOESS_BOUND = 1e-3
#: Groups of about equal mass the rows are summed in for the fits.
N_GROUPS = 4096
#: No group is wider than this fraction of the smallest bandwidth (unless that would
#: make more than :data:`MAX_GROUPS` groups: then the width doubles until it does not).
GROUP_WIDTH = 1.0 / 128.0
MAX_GROUPS = 4 * N_GROUPS
#: Halvings of the bandwidth's bracket (it ends far below a cell's width).
_BISECTION_STEPS = 64
#: A window's end this close to tied values (a fraction of the range of V) ends on them.
_SNAP = 1e-9


@dataclass(frozen=True)
class CellDistribution:
    """The rows of V per occupied cell, in order.

    Attributes
    ----------
    low, high : ndarray of shape (n_occupied,)
        Smallest and largest value of V in each cell (equal: ties only, exactly).
    counts : ndarray of int64, shape (n_occupied,)
        Rows, or with row weights each cell's weight (float; a window then holds a share
        ``span`` of the weight, spread evenly within a cell as rows are).
    integral : bool
        Whether the counts are rows or integer weights (a window holds
        ``floor(n * span)``) or other weights (``n * span``, as
        :func:`calibcore.variable._loess_windows.window_mass`).
    """

    low: NDArray[np.float64]
    high: NDArray[np.float64]
    counts: NDArray[np.int64] | NDArray[np.float64]
    integral: bool = True

    @classmethod
    def of(cls, minima: NDArray[np.float64], maxima: NDArray[np.float64],
           counts: NDArray[np.int64] | NDArray[np.float64],
           integral: bool = True) -> CellDistribution:
        """The occupied cells, from every cell's smallest and largest value and count
        (or weight: float counts are kept as they are)."""
        occupied = counts > 0
        kept = counts[occupied]
        return cls(minima[occupied], maxima[occupied],
                   kept.astype(np.int64) if kept.dtype.kind in "iu" else kept, integral)

    @property
    def n(self) -> Any:
        """Rows (int), or the weight (float)."""
        total = self.counts.sum()
        return int(total) if self.counts.dtype.kind in "iu" else float(total)

    def window(self, span: float) -> float:
        """Rows (or weight) a window holds: ``floor(n * span)``, or ``n * span`` for
        weights other than integers."""
        n = self.n
        return min(n, int(np.floor(n * span))) if self.integral else min(n, n * span)

    def _cdf_knots(self) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Rows at or below each cell's ends, the rows spread evenly within a cell."""
        after = np.cumsum(self.counts).astype(np.float64)
        values = np.stack([self.low, self.high], axis=1).ravel()
        below = np.stack([after - self.counts, after], axis=1).ravel()
        return values, below

    def at_ranks(self, ranks: NDArray[np.float64]) -> NDArray[np.float64]:
        """Approximate order statistics at (0-based) ranks, a fractional rank interpolating
        the two around it as numpy's quantiles do. A cell's rows spread evenly from its
        smallest value (its first row) to its largest (its last), so cells of one or two
        rows, or of ties, give theirs exactly."""
        below = np.floor(ranks)
        fraction = ranks - below
        low = self._at_whole_ranks(below)
        high = self._at_whole_ranks(np.minimum(below + 1, self.n - 1))
        return np.asarray(low + (high - low) * fraction, dtype=np.float64)

    def _at_whole_ranks(self, ranks: NDArray[np.float64]) -> NDArray[np.float64]:
        after = np.cumsum(self.counts)
        cell = np.minimum(np.searchsorted(after, ranks, side="right"), after.size - 1)
        within = (ranks - (after[cell] - self.counts[cell])) / np.maximum(
            self.counts[cell] - 1, 1)
        return self.low[cell] + (self.high[cell] - self.low[cell]) * np.clip(within, 0.0, 1.0)

    def bandwidth(self, points: NDArray[np.float64], span: float) -> NDArray[np.float64]:
        """Distance from each point to its ``floor(n * span)``-th nearest row
        (:func:`calibcore.variable._loess_windows._bandwidth`), from the cells' counts."""
        n = self.n
        q = self.window(span)
        widest = np.maximum(np.abs(points - self.low[0]), np.abs(self.high[-1] - points))
        if q >= n:
            return widest * max(span, 1.0)
        values, below = self._cdf_knots()
        inside, outside = np.zeros_like(points), widest.copy()
        for _ in range(_BISECTION_STEPS):
            middle = (inside + outside) / 2.0
            enough = (np.interp(points + middle, values, below)
                      - np.interp(points - middle, values, below)) >= q
            outside = np.where(enough, middle, outside)
            inside = np.where(enough, inside, middle)
        return self._past_ties(points, self._onto_ties(points, outside))

    def support(self, points: NDArray[np.float64],
                span: float) -> tuple[NDArray[np.bool_], NDArray[np.float64]]:
        """:func:`calibcore.variable._curves.gap_support` from the cells: the gaps between
        occupied cells are exact (a cell's smallest and largest values are), a point
        within one cell's range counts as on a row (a gap inside a cell, narrower than
        the cell, is not seen), and the reaches read the order statistics off the cells
        (:meth:`at_ranks`: exact at cells of one or two rows, or of ties)."""
        n, last = self.n, self.low.size - 1
        q = max(self.window(span), 1)
        after = np.cumsum(self.counts)
        cell = np.searchsorted(self.low, points, side="right") - 1
        within = (cell >= 0) & (self.high[np.maximum(cell, 0)] >= points)
        below = np.where(within, points,
                         np.where(cell >= 0, self.high[np.maximum(cell, 0)], -np.inf))
        above = np.where(within, points,
                         np.where(cell < last, self.low[np.minimum(cell + 1, last)], np.inf))

        def reach_down(ends: NDArray[np.float64]) -> NDArray[np.float64]:
            # ends are cells' largest values: the rows at or below are whole cells
            own = np.searchsorted(self.high, ends, side="left")
            rank = np.maximum(after[own] - q, 0).astype(np.float64)
            reach = ends - self.at_ranks(rank)
            beyond = np.where(own > 0, ends - self.high[np.maximum(own - 1, 0)], np.inf)
            return np.where(reach > 0, reach, beyond / 2.0)

        def reach_up(ends: NDArray[np.float64]) -> NDArray[np.float64]:
            own = np.searchsorted(self.low, ends, side="left")
            rank = np.minimum(after[own] - self.counts[own] + q - 1, n - 1)
            reach = self.at_ranks(rank.astype(np.float64)) - ends
            beyond = np.where(own < last, self.low[np.minimum(own + 1, last)] - ends, np.inf)
            return np.where(reach > 0, reach, beyond / 2.0)

        return gap_support(points, below, above, reach_down, reach_up)

    def _past_ties(self, points: NDArray[np.float64],
                   bandwidth: NDArray[np.float64]) -> NDArray[np.float64]:
        """A window in which every row lies at distance h (weight 0) goes half-way to the
        next occupied distance, as
        :func:`calibcore.variable._loess_windows._past_ties` widens it."""
        inside = np.searchsorted(self.low, points, side="right") - 1
        within = (inside >= 0) & (self.high[np.maximum(inside, 0)] >= points)
        nearest = np.where(within, 0.0, self._distance_beyond(points, np.zeros_like(points)))
        empty = nearest >= bandwidth
        if not empty.any():
            return bandwidth
        widened = bandwidth.copy()
        further = self._distance_beyond(points[empty], bandwidth[empty])
        widened[empty] = np.where(np.isfinite(further), (bandwidth[empty] + further) / 2.0,
                                  np.maximum(2.0 * bandwidth[empty], 1.0))
        return widened

    def _distance_beyond(self, points: NDArray[np.float64],
                         reach: NDArray[np.float64]) -> NDArray[np.float64]:
        """The smallest distance greater than ``reach`` from each point to a cell's end
        (exact for cells of tied rows, the only ones a window can end on empty)."""
        below = np.searchsorted(self.high, points - reach, side="left") - 1
        above = np.searchsorted(self.low, points + reach, side="right")
        gap_below = np.where(below >= 0, points - self.high[np.maximum(below, 0)], np.inf)
        gap_above = np.where(above < self.low.size,
                             self.low[np.minimum(above, self.low.size - 1)] - points, np.inf)
        return np.minimum(gap_below, gap_above)

    def _onto_ties(self, points: NDArray[np.float64],
                   bandwidth: NDArray[np.float64]) -> NDArray[np.float64]:
        """The bandwidth ``|t - x0|`` where a window ends (to within :data:`_SNAP` of the
        range) on a value t of tied rows, as
        :func:`calibcore.variable._loess_windows._bandwidth` gives it: those rows then
        weigh exactly 0 there too."""
        tolerance = _SNAP * (self.high[-1] - self.low[0])
        tied = self.low == self.high
        for end in (points + bandwidth, points - bandwidth):
            below = np.searchsorted(self.low, end, side="right") - 1
            for cell in (np.clip(below, 0, self.low.size - 1),
                         np.clip(below + 1, 0, self.low.size - 1)):
                near = tied[cell] & (np.abs(self.low[cell] - end) <= tolerance)
                bandwidth = np.where(near, np.abs(self.low[cell] - points), bandwidth)
        return bandwidth


@dataclass(frozen=True)
class GroupSums:
    """Sums of the rows of each (non-empty) group of cells.

    Attributes
    ----------
    n : ndarray of shape (n_groups,)
        Rows.
    centre : ndarray of shape (n_groups,)
        Mean of V.
    responses : ndarray of shape (2, n_groups)
        Sums of the error and of the predicted error.
    response_centres : ndarray of shape (2, n_groups)
        Means of V weighted by each response (the plain mean where it sums to 0).
    response_squares : ndarray of shape (2, n_groups)
        Sums of the squares of each response.
    """

    n: NDArray[np.float64]
    centre: NDArray[np.float64]
    responses: NDArray[np.float64]
    response_centres: NDArray[np.float64]
    response_squares: NDArray[np.float64]

    #: Columns of the per-partition sums (:meth:`of` reads them in this order); V enters
    #: as ``V - reference`` of its group, so large offsets cost no precision.
    COLUMNS = ("n", "v", "error", "error_v", "predicted_error", "predicted_error_v",
               "predicted_error_squares")

    @classmethod
    def of(cls, sums: NDArray[np.float64], references: NDArray[np.float64]) -> GroupSums:
        """From per-group sums in the order of :attr:`COLUMNS` (rows: groups)."""
        filled = sums[:, 0] > 0
        sums, references = sums[filled], references[filled]
        n = sums[:, 0]
        centre = references + sums[:, 1] / n
        responses = np.stack([sums[:, 2], sums[:, 4]])
        with np.errstate(invalid="ignore", divide="ignore"):
            weighted = references + np.stack([sums[:, 3], sums[:, 5]]) / responses
        response_centres = np.where(responses > 0, weighted, centre)
        # the error is 0 or 1, so it is its own square
        squares = np.stack([sums[:, 2], sums[:, 6]])
        return cls(n, centre, responses, response_centres, squares)


def plan_groups(counts: NDArray[np.int64], low: NDArray[np.float64], width: float,
                n_groups: int = N_GROUPS) -> NDArray[np.int64]:
    """First cell of each group: consecutive cells of about ``n / n_groups`` rows, cut
    where a group would be wider than ``width`` (doubled until at most
    :data:`MAX_GROUPS` groups). Empty cells join the group before them."""
    occupied = np.flatnonzero(counts)
    if occupied.size == 0:
        return np.zeros(1, dtype=np.int64)
    before = (np.cumsum(counts) - counts)[occupied]
    by_mass = np.floor(before * (n_groups / before[-1] if before[-1] else 0.0))
    width = width if width > 0 and np.isfinite(width) else np.inf
    while True:
        by_width = np.floor((low[occupied] - low[occupied[0]]) / width)
        new = np.concatenate([[True], (np.diff(by_mass) != 0) | (np.diff(by_width) != 0)])
        if new.sum() <= MAX_GROUPS:
            break
        width *= 2.0
    starts = occupied[new].astype(np.int64)
    starts[0] = 0
    return starts


def group_width(distribution: CellDistribution, span: float, low_quantile: float,
                high_quantile: float, n_points: int) -> float:
    """:data:`GROUP_WIDTH` of the smallest bandwidth over the evaluation points."""
    points = np.linspace(low_quantile, high_quantile, n_points)
    return float(distribution.bandwidth(points, span).min()) * GROUP_WIDTH


def binned_curves(distribution: CellDistribution, groups: GroupSums, *, x: NDArray[np.float64],
                  minimum: float, maximum: float, span: float, confidence_level: float,
                  random_state: int | None, histogram_edges: NDArray[np.float64],
                  histogram_counts: NDArray[np.int64], n_missing: int) -> LoessCurves:
    """The curves of :func:`calibcore.variable.loess_curves` from binned statistics.

    ``x`` (the exact evaluation points), ``minimum``/``maximum`` (of V) and the
    histogram are exact and given; the fits, bands and largest gap are computed here,
    as :func:`calibcore.variable.loess_many` computes them for more than
    :data:`calibcore.variable.N_EXACT` rows, with every sum over rows taken over groups.
    """
    n = distribution.n
    quantile_levels = np.linspace(0.0, 1.0, COVERAGE_POINTS)
    # numpy reads these (65 equally spaced) quantiles of the 65 values back exactly, so
    # the knots are smoothing's own rule applied to approximate quantiles of V
    approximate = distribution.at_ranks((n - 1) * quantile_levels)
    approximate[0], approximate[-1] = minimum, maximum
    grid = np.unique(np.concatenate([x, coverage(approximate, x)]))
    fits, norms = _fits(grid, distribution.bandwidth(grid, span), groups)
    separation = KNOT_SEPARATION * (maximum - minimum)
    knots = np.concatenate([[True], np.diff(grid) > separation])
    rss = _residual_sums(grid[knots], fits[:, knots], groups)
    rows = round(float(n))  # weights: ranks in the weight, each rank standing for a row
    size = min(rows, max(N_EXACT, int(np.ceil(MIN_NEIGHBOURS / span))))
    # the rows loess_many's subsample draws (the same ranks), each within its cell
    ranks = np.random.default_rng(random_state).choice(rows, size=size, replace=False)
    subsample = np.sort(distribution.at_ranks(ranks.astype(np.float64)))
    delta1, delta2 = _deltas(_operator_rows(subsample, subsample, span))
    at_points = np.searchsorted(grid, x)
    smoothed = Smoothed(fits=fits[:, at_points], operator_norms=norms[at_points], rss=rss,
                        delta1=delta1 + (n - size), delta2=delta2 + (n - size), exact=False)
    error_fit, predicted_fit = (_with_band(x, smoothed, response, span, n, confidence_level)
                                for response in range(2))
    supported, gaps = distribution.support(x, span)
    error, error_low, error_high, predicted, predicted_low, predicted_high = drawn(
        error_fit, predicted_fit, supported)
    vce_max, v_star = largest_gap(x, np.abs(error - predicted))
    return LoessCurves(
        x=x, error=error, error_low=error_low, error_high=error_high,
        predicted_error=predicted, predicted_error_low=predicted_low,
        predicted_error_high=predicted_high, vce_max=vce_max,
        v_star=v_star, n=n, n_missing=n_missing, span=span,
        confidence_level=confidence_level, histogram_edges=histogram_edges,
        histogram_counts=histogram_counts, exact=False, gaps=gaps)


def _fits(points: NDArray[np.float64], bandwidth: NDArray[np.float64],
          groups: GroupSums) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Fits (2, m) and ``||l(x0)||`` (m,) at ``points`` from window moments over groups."""
    moments = window_sums(points, bandwidth, groups.centre, groups.n, 5, squared=False)
    squared = window_sums(points, bandwidth, groups.centre, groups.n, 5, squared=True)
    first = intercept_rows(moments)
    fits = np.stack([
        np.einsum("mk,mk->m", first, window_sums(points, bandwidth, centres, weights, 3,
                                                  squared=False))
        for centres, weights in zip(groups.response_centres, groups.responses, strict=True)])
    norms_squared = np.einsum("mi,mij,mj->m", first, hankel(squared), first)
    return fits, np.sqrt(np.maximum(norms_squared, 0.0))


def _residual_sums(knots: NDArray[np.float64], knot_fits: NDArray[np.float64],
                   groups: GroupSums) -> NDArray[np.float64]:
    """RSS of each response about the spline through the fits at the knots, by groups:
    ``sum y^2 - 2 f(centre_y) sum y + n f(centre)^2``."""
    if knots.size > 1:
        spline = CubicSpline(knots, knot_fits, axis=1)
        at_centres = spline(groups.centre)
        at_response_centres = np.stack([spline(centres)[response] for response, centres
                                        in enumerate(groups.response_centres)])
    else:
        at_centres = np.repeat(knot_fits[:, :1], groups.centre.size, axis=1)
        at_response_centres = at_centres
    rss = (groups.response_squares - 2.0 * at_response_centres * groups.responses
           + groups.n * at_centres * at_centres).sum(axis=1)
    return np.asarray(np.maximum(rss, 0.0), dtype=np.float64)


__all__ = ["LOESS_BOUND", "CellDistribution", "GroupSums", "binned_curves", "group_width",
           "plan_groups"]
