"""Bin edges and bin assignment shared by every binned measure."""

from __future__ import annotations

from typing import Literal

import numba
import numpy as np
from numpy.typing import NDArray

__all__ = [
    "Binning",
    "assign_bins",
    "bin_edges",
    "bin_sums",
    "equal_mass_edges",
    "equal_width_edges",
    "sorted_equal_mass_edges",
    "sorted_weighted_equal_mass_edges",
    "weighted_equal_mass_edges",
]

Binning = Literal["equal_width", "equal_mass"]


def equal_width_edges(n_bins: int) -> NDArray[np.float64]:
    """``n_bins + 1`` equally spaced edges on [0, 1]."""
    return np.linspace(0.0, 1.0, n_bins + 1)


def equal_mass_edges(scores: NDArray[np.float64], n_bins: int) -> NDArray[np.float64]:
    """Quantile edges with about the same number of scores per bin.

    Duplicate edges (ties in the scores) are dropped, so fewer bins may result;
    the outer edges are stretched to 0 and 1 so every score in [0, 1] falls in a bin.
    """
    return _stretched(np.quantile(scores, np.linspace(0.0, 1.0, n_bins + 1)))


def weighted_equal_mass_edges(
    scores: NDArray[np.float64], counts: NDArray[np.float64], n_bins: int
) -> NDArray[np.float64]:
    """``equal_mass_edges(np.repeat(scores, counts), n_bins)`` without repeating: the
    same linear-interpolation quantiles (numpy's default method, bit for bit) read off
    the cumulative counts, O(n log n) instead of O(sum of counts)."""
    order = np.argsort(scores, kind="stable")
    return sorted_weighted_equal_mass_edges(scores[order], counts[order], n_bins)


def sorted_weighted_equal_mass_edges(
    sorted_scores: NDArray[np.float64], counts: NDArray[np.float64], n_bins: int
) -> NDArray[np.float64]:
    """:func:`weighted_equal_mass_edges` of scores already sorted ascending.

    Integer ``counts`` (bootstrap counts, frequency weights) give numpy's quantiles of the
    repeated scores bit for bit. Other weights (survey weights) give the weighted
    inverted-CDF quantiles: the smallest score whose cumulative share of the weight
    reaches each level, which do not change when every weight is scaled.
    """
    cumulative = np.cumsum(counts, dtype=np.float64)
    total = cumulative[-1]
    levels = np.linspace(0.0, 1.0, n_bins + 1)
    if not np.array_equal(counts, np.round(counts)):
        position = np.searchsorted(cumulative, levels * total, side="left")
        return _stretched(sorted_scores[np.minimum(position, sorted_scores.size - 1)])
    virtual = (total - 1) * levels
    previous = np.floor(virtual)
    gamma = virtual - previous
    below = previous
    above = np.minimum(below + 1, total - 1)
    low = sorted_scores[np.searchsorted(cumulative, below, side="right")]
    high = sorted_scores[np.searchsorted(cumulative, above, side="right")]
    difference = high - low  # numpy's _lerp, so the edges equal np.quantile's exactly
    quantiles = low + difference * gamma
    np.subtract(high, difference * (1 - gamma), out=quantiles, where=gamma >= 0.5)
    return _stretched(quantiles)


def sorted_equal_mass_edges(sorted_scores: NDArray[np.float64], n_bins: int
                            ) -> NDArray[np.float64]:
    """:func:`equal_mass_edges` of scores already sorted ascending, read off them: numpy's
    linear-interpolation quantiles bit for bit (the same virtual indices, neighbours and
    ``_lerp``), without the partition ``np.quantile`` makes of all of them (1.5M scores:
    9 ms an edge set, a tenth of the bin-sensitivity curves' time)."""
    size = sorted_scores.size
    virtual = (size - 1) * np.linspace(0.0, 1.0, n_bins + 1)
    previous = np.floor(virtual)
    gamma = virtual - previous
    below = previous.astype(np.intp)
    low = sorted_scores[below]
    high = sorted_scores[np.minimum(below + 1, size - 1)]
    difference = high - low  # numpy's _lerp, so the edges equal np.quantile's exactly
    quantiles = low + difference * gamma
    np.subtract(high, difference * (1 - gamma), out=quantiles, where=gamma >= 0.5)
    return _stretched(quantiles)


def _stretched(quantiles: NDArray[np.float64]) -> NDArray[np.float64]:
    """Distinct quantiles with the outer edges stretched to 0 and 1."""
    edges = np.unique(quantiles)
    edges[0], edges[-1] = min(edges[0], 0.0), max(edges[-1], 1.0)
    if edges.size < 2:
        edges = np.array([0.0, 1.0])
    return edges


def bin_edges(scores: NDArray[np.float64], n_bins: int, binning: Binning,
              weights: NDArray[np.float64] | None = None) -> NDArray[np.float64]:
    """Edges for ``binning`` (validated by the caller); equal-mass edges split the
    ``weights`` (row weights) evenly when given."""
    if binning == "equal_mass":
        if weights is not None:
            return weighted_equal_mass_edges(scores, weights, n_bins)
        return equal_mass_edges(scores, n_bins)
    return equal_width_edges(n_bins)


def assign_bins(scores: NDArray[np.float64], edges: NDArray[np.float64]) -> NDArray[np.intp]:
    """Bin index of each score: bins are right-closed, ``(e_{b-1}, e_b]``, the first also
    holding its left edge, so a score of exactly 0 is in bin 0 and 1 in the last bin.

    This is the convention of the LCE and calibration papers' code
    (``searchsorted(..., side="left") - 1``, clipped).
    """
    n_bins = edges.size - 1
    if scores.size >= _ARITHMETIC_MIN_ROWS and _evenly_spaced(edges):
        return _assign_equal_width(scores, edges, (edges[-1] - edges[0]) / n_bins)
    if scores.ndim == 1 and scores.size >= _ARITHMETIC_MIN_ROWS and _countable(edges):
        return _count_edges_below(np.asarray(scores, dtype=np.float64),
                                  np.asarray(edges, dtype=np.float64))
    index = np.searchsorted(edges, scores, side="left") - 1
    return np.clip(index, 0, n_bins - 1)


def bin_sums(
    scores: NDArray[np.float64], outcomes: NDArray[np.float64], edges: NDArray[np.float64],
    weights: NDArray[np.float64] | None = None,
) -> NDArray[np.float64]:
    """Rows (or their total weight), weighted score sums and weighted outcome sums of each
    bin, shape (3, bins); the rows' values taken as float64."""
    scores = np.asarray(scores, dtype=np.float64)
    outcomes = np.asarray(outcomes, dtype=np.float64)
    weights = None if weights is None else np.asarray(weights, dtype=np.float64)
    if outcomes.shape != scores.shape or (weights is not None and weights.shape != scores.shape):
        raise ValueError("scores, outcomes and weights must have the same shape.")
    if scores.ndim == 1 and scores.size >= _ARITHMETIC_MIN_ROWS and _countable(edges):
        # one pass: the bins of assign_bins and the sums of np.bincount, in row order
        edges = np.asarray(edges, dtype=np.float64)
        return _counted_bin_sums(scores, outcomes, edges, weights, _evenly_spaced(edges))
    index = assign_bins(scores, edges)
    size = edges.size - 1
    if weights is None:
        return np.stack([np.bincount(index, minlength=size).astype(np.float64),
                         np.bincount(index, weights=scores, minlength=size),
                         np.bincount(index, weights=outcomes, minlength=size)])
    return np.stack([np.bincount(index, weights=weights, minlength=size),
                     np.bincount(index, weights=weights * scores, minlength=size),
                     np.bincount(index, weights=weights * outcomes, minlength=size)])


#: From this many scores, equal-width edges are found by arithmetic (a tenth of
#: ``searchsorted``'s time on 1.5M scores), then corrected to the same bins exactly.
_ARITHMETIC_MIN_ROWS = 4_096
#: Up to this many bins, other sorted edges are counted (:func:`_count_edges_below`).
_COUNTED_MAX_BINS = 32


def _evenly_spaced(edges: NDArray[np.float64]) -> bool:
    """Whether the edges are evenly spaced (to 1e-9 of the width) over a positive range."""
    n_bins = edges.size - 1
    if n_bins < 1:
        return False
    width = (edges[-1] - edges[0]) / n_bins
    return bool(width > 0 and np.allclose(np.diff(edges), width, rtol=1e-9, atol=0))


def _countable(edges: NDArray[np.float64]) -> bool:
    """Whether :func:`_count_edges_below` may place scores in these edges: at most
    :data:`_COUNTED_MAX_BINS` bins, edges sorted (and so no NaN)."""
    return 1 <= edges.size - 1 <= _COUNTED_MAX_BINS and bool(np.all(edges[1:] >= edges[:-1]))


@numba.njit(nogil=True, cache=True)
def _counted_bin(value: float, edges: NDArray[np.float64]) -> int:
    """``clip(searchsorted(edges, value, side="left") - 1, 0, len(edges) - 2)`` for sorted
    edges: that search is the count of edges below ``value`` (NaN, which NumPy sorts
    last, is above every edge). A count over a few dozen edges has no branch to mispredict."""
    last = edges.size - 2
    if value != value:
        return last
    below = 0
    for edge in edges:
        below += edge < value
    return min(max(below - 1, 0), last)


@numba.njit(nogil=True, cache=True)
def _count_edges_below(scores: NDArray[np.float64],
                       edges: NDArray[np.float64]) -> NDArray[np.intp]:
    """:func:`assign_bins` on sorted edges by :func:`_counted_bin`: a third of
    ``searchsorted``'s time on 500k scores of 15 equal-mass bins, two thirds at 32 bins,
    slower from about 64."""
    index = np.empty(scores.size, dtype=np.intp)
    for row in range(scores.size):
        index[row] = _counted_bin(scores[row], edges)
    return index


@numba.njit(nogil=True, cache=True)
def _walked_bin(value: float, edges: NDArray[np.float64], low: float, scale: float) -> int:
    """:func:`_counted_bin` for evenly spaced edges: the bin by arithmetic, then moved
    until ``edges[b] < value <= edges[b + 1]`` (first and last bins open outward), which
    is the counted bin whatever the first guess; here the guess is off by at most a step."""
    last = edges.size - 2
    if value != value:
        return last
    guess = (value - low) * scale
    index = 0 if not guess > 0.0 else (last if not guess < last else int(guess))
    while index > 0 and edges[index] >= value:
        index -= 1
    while index < last and edges[index + 1] < value:
        index += 1
    return index


@numba.njit(nogil=True, cache=True)
def _counted_bin_sums(scores: NDArray[np.float64], outcomes: NDArray[np.float64],
                      edges: NDArray[np.float64], weights: NDArray[np.float64] | None,
                      evenly_spaced: bool) -> NDArray[np.float64]:
    """:func:`bin_sums` in one pass: each row's bin by :func:`_walked_bin` for evenly
    spaced edges, else by :func:`_counted_bin` (equal-mass edges: the walk from an even
    guess would take many steps), its count (or weight), score and outcome added to the
    bin's in row order, as ``np.bincount`` adds them (the same doubles)."""
    sums = np.zeros((3, edges.size - 1))
    low = edges[0]
    scale = (edges.size - 1) / (edges[-1] - edges[0]) if evenly_spaced else 0.0
    for row in range(scores.size):
        value = scores[row]
        index = (_walked_bin(value, edges, low, scale) if evenly_spaced
                 else _counted_bin(value, edges))
        if weights is None:
            sums[0, index] += 1.0
            sums[1, index] += value
            sums[2, index] += outcomes[row]
        else:
            weight = weights[row]
            sums[0, index] += weight
            sums[1, index] += weight * value
            sums[2, index] += weight * outcomes[row]
    return sums


def _assign_equal_width(
    scores: NDArray[np.float64], edges: NDArray[np.float64], width: float
) -> NDArray[np.intp]:
    """:func:`assign_bins` for evenly spaced edges: the bin by division; the few scores
    within rounding of an edge (or NaN) are placed by ``searchsorted`` on the edges
    themselves, so the bins are exactly those of the general path."""
    position = np.subtract(scores, edges[0], dtype=np.float64)  # integer scores too
    position /= width
    index = np.ceil(position)
    index -= 1.0
    np.fmax(index, 0.0, out=index)  # fmax, not clip: NaN becomes 0 (and doubtful below)
    np.fmin(index, edges.size - 2, out=index)
    with np.errstate(invalid="ignore"):  # inf - inf: NaN, doubtful below
        position -= np.rint(position)
    doubtful = ~(np.abs(position, out=position) > 1e-6)  # NaN is doubtful too
    index = index.astype(np.intp)
    if doubtful.any():
        near = scores[doubtful]
        index[doubtful] = np.clip(np.searchsorted(edges, near, side="left") - 1,
                                  0, edges.size - 2)
    return index
