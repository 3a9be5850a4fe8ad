"""Weighted quantiles and equal-weight bins of a numeric variable of a partitioned table.

Used by :mod:`calibcore.partitioned._numeric_variables` when the rows carry weights. The
in-memory bins (:func:`calibcore.variable._binning.weighted_qcut_bins`) are at weighted
quantiles of the rows of positive weight: for integer weights numpy's linear quantiles of
the rows repeated by their weights (positions ``floor((W - 1) q)`` and the next of the
repeated rows), for other weights the weighted inverted CDF (the first row whose
cumulative weight reaches ``q W``). Here the merged cells carry their weight, so the
cells holding those positions are found from the cells' cumulative weight and made
*target* cells (every cell between the two of an integer quantile too: they hold rows of
weight 0 only). Their distinct values come back with their weight, the rest of the rows
as runs of cells that lie on one side of every edge, so the edges are the in-memory ones:
bit for bit for integer weights (their sums are exact), and for other weights unless a
level lands within rounding of a cumulative weight (sums added in another order).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from calibcore.variable._binning import qcut_levels as weighted_levels
from calibcore.variable._binning import weighted_quantiles

#: Relative slack around a level's cumulative weight (other than integer weights), within
#: which every cell is a target cell: the cells' sums are added in another order than
#: the rows' cumulative sum in memory.
_SLACK = 1e-9


def target_cells(mass: NDArray[np.float64], levels: NDArray[np.float64],
                 integral: bool) -> NDArray[np.int64]:
    """Every cell that can hold a row a weighted quantile at ``levels`` reads."""
    cumulative = np.cumsum(mass)
    total = float(cumulative[-1]) if cumulative.size else 0.0
    last = max(mass.size - 1, 0)
    if total <= 0:
        return np.empty(0, dtype=np.int64)
    if integral:
        virtual = (total - 1.0) * levels
        below = np.floor(virtual)
        above = np.minimum(below + 1.0, total - 1.0)
        first = np.searchsorted(cumulative, below, side="right")
        stop = np.searchsorted(cumulative, above, side="right")
    else:
        reach = levels * total
        first = np.searchsorted(cumulative, reach * (1.0 - _SLACK) - _SLACK * total,
                                side="left")
        stop = np.searchsorted(cumulative, reach * (1.0 + _SLACK) + _SLACK * total,
                               side="left")
    first, stop = np.minimum(first, last), np.minimum(stop, last)
    sizes = stop - first + 1
    cells = np.repeat(first - np.cumsum(sizes) + sizes, sizes) + np.arange(sizes.sum())
    return np.unique(cells).astype(np.int64)


def quantiles(sample: NDArray[np.float64], weights: NDArray[np.float64],
              levels: NDArray[np.float64], integral: bool) -> NDArray[np.float64]:
    """Weighted quantiles of sorted distinct values with their summed weights, by the
    rows' rule (``integral``: every row's weight is a whole number)."""
    positive = weights > 0
    values, kept = sample[positive], weights[positive]
    if integral:
        return weighted_quantiles(values, kept, levels)
    cumulative = np.cumsum(kept, dtype=np.float64)
    position = np.searchsorted(cumulative, levels * cumulative[-1], side="left")
    return np.asarray(values[np.minimum(position, values.size - 1)], dtype=np.float64)


def qcut(sample: NDArray[np.float64], weights: NDArray[np.float64], n_bins: int,
         integral: bool) -> tuple[NDArray[np.float64], NDArray[np.intp]]:
    """:func:`calibcore.variable._binning.weighted_qcut_bins` of sorted distinct values
    with their weights: the edges and the bin of each value."""
    kept = sample[weights > 0]
    if kept.size == 0 or kept[0] == kept[-1]:
        first = kept[:1] if kept.size else sample[:1]
        return np.repeat(first, 2), np.zeros(sample.size, dtype=np.intp)
    edges = np.unique(quantiles(sample, weights, weighted_levels(n_bins), integral))
    index = np.searchsorted(edges, sample, side="left")
    index[sample == edges[0]] = 1
    return edges, np.clip(index - 1, 0, edges.size - 2).astype(np.intp)


__all__ = ["qcut", "quantiles", "target_cells", "weighted_levels"]
