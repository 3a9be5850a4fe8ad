"""Numeric variables of a partitioned table, from their merged summaries.

Used by :mod:`calibcore.partitioned.variables`: after the second pass
(:class:`calibcore.partitioned._variable_summaries.CellCounts`), :func:`collect_plan` picks what the
third pass collects; after it, :func:`finish_numeric` gives the equal-mass bins, VECE
and the LOESS curves.

Why the bins are exact: the *target* cells hold the order statistics that numpy's
linear quantiles read (``pandas.qcut``'s edges, the curves' 5th and 95th percentiles),
and every cell that could hold an edge of the histogram under the curves. An edge
interpolates two consecutive order statistics, so the cells strictly between theirs are
empty; every other occupied cell lies wholly below or above it. So a run of non-target
cells (a *segment*) lies on one side of every edge, like any value in it: its sums stand
at its smallest value, and the target cells' distinct values stand for themselves.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from calibcore.partitioned._binned_loess import (
    CellDistribution,
    GroupSums,
    binned_curves,
    group_width,
    plan_groups,
)
from calibcore.partitioned._group_sums import summed
from calibcore.partitioned._variable_summaries import CellCounts, CollectPlan, FeatureValues
from calibcore.partitioned._weighted_numeric import qcut as weighted_qcut
from calibcore.partitioned._weighted_numeric import quantiles as weighted_quantiles
from calibcore.partitioned._weighted_numeric import target_cells, weighted_levels
from calibcore.partitioned.exact_quantiles import (
    FloatCells,
    linear_quantile_ranks,
    rank_cells,
    weighted_linear_quantiles,
)
from calibcore.variable._binning import Variable
from calibcore.variable._curves import (
    CURVE_QUANTILES,
    MAX_INTEGER_BINS,
    Errors,
    LoessCurves,
    variable_curves,
)
from calibcore.variable._loess_windows import window_mass
from calibcore.variable.smoothing import MIN_NEIGHBOURS, N_EXACT

#: Most distinct values the cells around the histogram's edges may send for its counts to
#: be made exact (beyond, they are read off the cells: within those cells' rows). A cell
#: of ties sends one value, any other at most its count.
MAX_HISTOGRAM_VALUES = 1 << 20


@dataclass(frozen=True)
class VariableSettings:
    """The parameters of a partitioned variable-based calibration (validated)."""

    n_bins: int
    max_categories: int
    span: float
    n_points: int
    confidence_level: float
    n_histogram_bins: int
    random_state: int | None
    curves: bool

    def smoothed(self, n: int, weight: float | None = None, integral: bool = True) -> bool:
        """Whether a numeric variable of n rows gets curves (``floor(n * span) >= 4``; with
        integer weights of total ``weight``, ``floor(weight * span) >= 4``, as in memory;
        with other weights n counts the rows of positive weight)."""
        if weight is not None and integral:
            return self.curves and window_mass(np.array([weight]), self.span) >= MIN_NEIGHBOURS
        return self.curves and min(n, int(np.floor(n * self.span))) >= MIN_NEIGHBOURS


@dataclass(frozen=True)
class Weights:
    """What the scan says of a numeric variable's row weights."""

    integral: bool
    n_positive: int


@dataclass(frozen=True)
class NumericResult:
    """What :func:`finish_numeric` gives for a numeric variable."""

    edges: NDArray[np.float64]
    bin_sums: NDArray[np.float64]
    vece: float
    curves: LoessCurves | None
    histogram_exact: bool


def qcut_levels(n_bins: int) -> NDArray[np.float64]:
    """The quantile levels ``pandas.qcut(v, n_bins)`` passes numpy, as numpy sees them.

    pandas 3 nudges ``linspace(0, 1, n_bins + 1)`` up by one ulp where inexact; pandas 2
    passed percentages that numpy divided by 100 again. Both are read off pandas itself:
    the linear quantile of ``[0.0, 1.0]`` at a level is that level, exactly (numpy's
    interpolation returns ``0 + 1 * t`` below 1/2 and ``1 - (1 - t)`` above).
    """
    return np.asarray(pd.qcut(np.array([0.0, 1.0]), n_bins, labels=False, retbins=True)[1],
                      dtype=np.float64)


def collect_plan(cells: FloatCells, counted: CellCounts, n: int,
                 settings: VariableSettings, weights: Weights | None = None) -> CollectPlan:
    """Target cells and LOESS groups of a numeric variable of n finite values (weighted:
    the cells of the weighted quantiles, :mod:`calibcore.partitioned._weighted_numeric`)."""
    if weights is None or counted.weights is None:
        ranks = linear_quantile_ranks(n, np.concatenate([qcut_levels(settings.n_bins),
                                                         CURVE_QUANTILES]))
        targets = rank_cells(counted.counts, ranks)
        smoothed = settings.smoothed(n)
    else:
        targets = target_cells(counted.weights, np.concatenate(
            [weighted_levels(settings.n_bins), CURVE_QUANTILES]), weights.integral)
        smoothed = settings.smoothed(weights.n_positive, float(counted.weights.sum()),
                                     weights.integral) and bool(targets.size)
    gather = settings.curves and n <= N_EXACT
    starts, references = np.zeros(1, dtype=np.int64), np.zeros(1)
    if smoothed:
        targets = np.union1d(targets, _histogram_cells(cells, counted, n, settings, weights))
        if not gather:
            distribution = _distribution(counted, weights)
            low, high = distribution.at_ranks((distribution.n - 1)
                                              * np.asarray(CURVE_QUANTILES))
            width = group_width(distribution, settings.span, low, high, settings.n_points)
            starts = plan_groups(counted.counts, counted.minima, width)
            references = np.where(np.isfinite(counted.minima[starts]),
                                  counted.minima[starts], distribution.low[0])
    return CollectPlan(cells, targets.astype(np.int64), starts, references, gather)


def _quantile_bounds(counted: CellCounts, n: int, level: float) -> tuple[float, float]:
    """Bounds of numpy's linear quantile at ``level``: it interpolates two order
    statistics, each within its cell's smallest and largest value, and is monotone in
    both."""
    virtual = (n - 1) * level
    below = min(int(np.floor(virtual)), n - 1)
    gamma = virtual - np.floor(virtual)
    cell = rank_cells(counted.counts, np.array([below, min(below + 1, n - 1)]))
    first, second = cell[0], cell[-1]
    low, high = counted.minima, counted.maxima
    return (float(low[first] + (low[second] - low[first]) * gamma),
            float(high[first] + (high[second] - high[first]) * gamma))


def _distribution(counted: CellCounts, weights: Weights | None) -> CellDistribution:
    """The cells' rows, or their weight (other than integer weights rescaled to add up
    to the rows of positive weight, as :func:`calibcore.variable.loess_many` rescales
    them)."""
    if weights is None or counted.weights is None:
        return CellDistribution.of(counted.minima, counted.maxima, counted.counts)
    return CellDistribution.of(counted.minima, counted.maxima,
                               counted.weights * _scale(counted.weights, weights),
                               weights.integral)


def _scale(mass: NDArray[np.float64], weights: Weights) -> float:
    total = float(mass.sum())
    return 1.0 if weights.integral or total <= 0 else weights.n_positive / total


def _weighted_bounds(counted: CellCounts, weights: Weights,
                     level: float) -> tuple[float, float]:
    """Bounds of a weighted quantile: within the smallest and largest values of the cells
    its rows can lie in."""
    assert counted.weights is not None
    found = target_cells(counted.weights, np.array([level]), weights.integral)
    return float(counted.minima[found].min()), float(counted.maxima[found].max())


def _histogram_cells(cells: FloatCells, counted: CellCounts, n: int,
                     settings: VariableSettings,
                     weights: Weights | None = None) -> NDArray[np.int64]:
    """Every cell that could hold an edge of ``np.histogram(v, n_histogram_bins,
    range=(q05, q95))`` (none when they would send more than
    :data:`MAX_HISTOGRAM_VALUES`)."""
    if weights is None or counted.weights is None:
        low5, high5 = _quantile_bounds(counted, n, CURVE_QUANTILES[0])
        low95, high95 = _quantile_bounds(counted, n, CURVE_QUANTILES[1])
    else:
        low5, high5 = _weighted_bounds(counted, weights, CURVE_QUANTILES[0])
        low95, high95 = _weighted_bounds(counted, weights, CURVE_QUANTILES[1])
    steps = np.arange(settings.n_histogram_bins + 1) / settings.n_histogram_bins
    scale = max(abs(low5), abs(high5), abs(low95), abs(high95))
    slack = 1e-12 * scale + np.finfo(np.float64).tiny  # linspace's rounding, generously
    starts = [low5 + steps * (low95 - low5) - slack]
    stops = [high5 + steps * (high95 - high5) + slack]
    if low95 <= high5:  # the percentiles may be equal: numpy widens the range by 1/2
        starts.append(max(low5, low95) - 0.5 + steps - 1e-12 * (scale + 1.0))
        stops.append(min(high5, high95) - 0.5 + steps + 1e-12 * (scale + 1.0))
    first = cells.cells_of(np.concatenate(starts))
    sizes = cells.cells_of(np.concatenate(stops)) - first + 1
    found = np.unique(np.repeat(first - np.cumsum(sizes) + sizes, sizes)
                      + np.arange(sizes.sum()))
    values = np.where(counted.minima[found] == counted.maxima[found], 1, counted.counts[found])
    if values.sum() > MAX_HISTOGRAM_VALUES:
        return np.empty(0, dtype=np.int64)
    return found


def finish_numeric(plan: CollectPlan, counted: CellCounts, values: FeatureValues,
                   n_missing: int, settings: VariableSettings,
                   integral: bool = False, weights: Weights | None = None) -> NumericResult:
    """Equal-mass bins, VECE and curves of a numeric variable from its summaries (with
    ``weights``: equal-weight bins, the weighted VECE and weighted curves)."""
    sample, sums = _sample(plan, counted, values)
    n = int(sums[:, 0].sum())
    weighted = weights is not None and sums.shape[1] > 4
    if weights is not None and weighted:
        mass = sums[:, 4]
        total = float(mass.sum())
        edges, index = weighted_qcut(sample, mass, settings.n_bins, weights.integral)
        bin_sums = summed(index, sums, max(edges.size - 1, 1))
        vece = (float(np.abs(bin_sums[:, 2] - bin_sums[:, 1]).sum() / total) if total > 0
                else float("nan"))
        smoothed = total > 0 and settings.smoothed(weights.n_positive, total,
                                                   weights.integral)
    else:
        edges, index = _qcut(sample, sums, settings.n_bins)
        bin_sums = summed(index, sums, max(edges.size - 1, 1))
        vece = float(np.abs(bin_sums[:, 2] - bin_sums[:, 1]).sum() / n)
        smoothed = settings.smoothed(n)
    if not smoothed:
        return NumericResult(edges, bin_sums, vece, None, True)
    if values.rows is not None:  # few rows: gathered in the table's order, smoothed exactly
        rows = values.rows
        variable = Variable("numeric", np.ones(n, dtype=bool), rows[:, 0],
                            np.empty(0, dtype=object))
        row_weights = rows[:, 3] if rows.shape[1] > 3 and not np.all(rows[:, 3] == 1.0) else None
        curves = variable_curves(variable, Errors(predicted=rows[:, 2], actual=rows[:, 1]),
                         settings.span, settings.n_points, settings.confidence_level,
                         settings.n_histogram_bins, settings.random_state,
                         weights=row_weights)
        return NumericResult(edges, bin_sums, vece, replace(curves, n_missing=n_missing), True)
    if weights is not None and weighted:
        low, high = weighted_quantiles(sample, sums[:, 4], np.asarray(CURVE_QUANTILES),
                                       weights.integral)
    else:
        low, high = weighted_linear_quantiles(sample, sums[:, 0].astype(np.int64),
                                              np.asarray(CURVE_QUANTILES))
    x = np.linspace(float(low), float(high), settings.n_points)
    histogram, histogram_edges = _histogram(plan, counted, values, x, settings.n_histogram_bins,
                                            integral)
    edge_cells = plan.cells.cells_of(histogram_edges)
    exact = bool(np.all(np.isin(edge_cells, plan.targets) | (counted.counts[edge_cells] == 0)))
    distribution, groups = _distribution(counted, weights), values.groups
    if weights is not None and counted.weights is not None:
        scale = _scale(counted.weights, weights)
        groups = groups.copy()
        groups[:, [0, 1, 2, 3, 4, 5, 6]] *= scale  # every column is a sum weighted by w
        kept = sample[sums[:, 4] > 0]
        lowest, highest = float(kept[0]), float(kept[-1])
    else:
        lowest, highest = float(sample[0]), float(sample[-1])
    curves = binned_curves(
        distribution,
        GroupSums.of(groups, plan.group_references), x=x, minimum=lowest,
        maximum=highest, span=settings.span,
        confidence_level=settings.confidence_level, random_state=settings.random_state,
        histogram_edges=histogram_edges,
        histogram_counts=histogram, n_missing=n_missing)
    if weights is not None:
        curves = replace(curves, n=n)  # rows, as in memory (the weight is in the fits)
    return NumericResult(edges, bin_sums, vece, curves, exact)


def _histogram(plan: CollectPlan, counted: CellCounts, values: FeatureValues,
               x: NDArray[np.float64], n_bins: int, integral: bool = False
               ) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """The histogram :func:`calibcore.variable.loess_curves` draws (one bar per integer
    of a whole-valued variable with few integers in ``[x[0], x[-1]]``, else
    ``np.histogram(v, n_bins, range=(x[0], x[-1]))``) from the target cells' values and
    every other occupied cell's rows at the middle of its smallest and largest value: a
    cell holding no edge is on one side of each, so this is exact when the cells that hold
    edges are target cells, and otherwise off by at most their rows."""
    others = np.setdiff1d(np.flatnonzero(counted.counts), plan.targets)
    middles = counted.minima[others] / 2.0 + counted.maxima[others] / 2.0
    sample = np.concatenate([values.values.index.to_numpy(dtype=np.float64), middles])
    weights = np.concatenate([values.values["n"].to_numpy(dtype=np.float64),
                              counted.counts[others].astype(np.float64)])
    first, last = np.ceil(x[0]), np.floor(x[-1])
    if integral and first <= last <= first + MAX_INTEGER_BINS - 1:
        edges = np.arange(first - 0.5, last + 1.0)
        histogram, _ = np.histogram(sample, bins=edges, weights=weights)
        return np.round(histogram).astype(np.int64), edges
    histogram, edges = np.histogram(sample, bins=n_bins, range=(x[0], x[-1]), weights=weights)
    return np.round(histogram).astype(np.int64), edges


def _sample(plan: CollectPlan, counted: CellCounts,
            values: FeatureValues) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The rows as distinct values with their sums: the target cells' values, and each
    segment at the smallest value of its first occupied cell. Sorted by value."""
    occupied = np.setdiff1d(np.flatnonzero(counted.counts), plan.targets)
    segments, first = np.unique(np.searchsorted(plan.targets, occupied), return_index=True)
    first_cell = np.full(plan.targets.size + 1, -1, dtype=np.int64)
    first_cell[segments] = occupied[first]
    filled = values.segments[:, 0] > 0
    sample = np.concatenate([values.values.index.to_numpy(dtype=np.float64),
                             counted.minima[first_cell[filled]]])
    sums = np.concatenate([values.values.to_numpy(dtype=np.float64), values.segments[filled]])
    order = np.argsort(sample, kind="stable")
    return sample[order], sums[order]


def _qcut(sample: NDArray[np.float64], sums: NDArray[np.float64],
          n_bins: int) -> tuple[NDArray[np.float64], NDArray[np.intp]]:
    """``pandas.qcut(v, n_bins, duplicates="drop")``'s edges and the bin of each sample
    value (:func:`calibcore.variable._binning.qcut_bins`: a constant V is one bin)."""
    if sample[0] == sample[-1]:
        return np.repeat(sample[:1], 2), np.zeros(sample.size, dtype=np.intp)
    quantiles = weighted_linear_quantiles(sample, sums[:, 0].astype(np.int64),
                                          qcut_levels(n_bins))
    edges = pd.unique(quantiles)
    if edges.size == quantiles.size or quantiles.size == 2:
        edges = quantiles
    # right-closed bins, the first holding its left edge
    index = np.searchsorted(edges, sample, side="left") - 1
    index[sample == edges[0]] = 0
    return np.asarray(edges, dtype=np.float64), index.astype(np.intp)


__all__ = ["MAX_HISTOGRAM_VALUES", "NumericResult", "VariableSettings", "Weights", "collect_plan",
           "finish_numeric", "qcut_levels"]
