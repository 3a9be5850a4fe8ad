"""Equal-mass bin edges of scores spread over many parts, exactly, in two passes.

:func:`calibcore.metrics.equal_mass_edges` takes numpy's linear-interpolation
quantiles of all the scores, which needs a few order statistics and nothing else.
Pass one counts each part's scores in :data:`CELLS` equal-width cells of [0, 1]
(:func:`cell_counts`); the merged counts say which cells hold the order statistics
the quantiles need (:func:`target_cells`). Pass two collects, from each part, the
distinct scores in those cells only, with their counts (:func:`cell_values`). The
merged counts and values then give the same edges as ``equal_mass_edges`` on all the
scores, bit for bit (:func:`merged_equal_mass_edges`): every other cell stands for
its rows by its left end, which keeps the order and the ranks and is never read.

Only summaries travel: 2^16 counts per part, then the scores of at most two cells
per quantile.

Any finite floats
-----------------
Scores outside [0, 1] (a feature's values) need cells that follow the data. Each float
has an order key, an int64 that sorts as the float does (:func:`float_keys`, the
IEEE-754 bits with the magnitude bits of negatives flipped). Its top 16 bits (sign,
exponent, 4 mantissa bits: 1/16 of a binade) pick one of 2^16 *coarse* cells, fixed in
advance, so a first pass can count them (:func:`coarse_counts`). :class:`FloatCells`
then splits each occupied coarse cell, cut to the data's [min, max] keys, into a power
of two of equal key ranges, in proportion to its count, about :data:`CELLS` cells in
all: a non-decreasing map of the floats to cells (a second pass counts them), fine
where the rows are dense whatever the location, scale or tails of the data.
:func:`weighted_linear_quantiles` reads numpy's linear quantiles off distinct values
with counts, as above.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numba
import numpy as np
import pandas as pd
from numpy.typing import NDArray

from calibcore.metrics.binning import sorted_weighted_equal_mass_edges

#: Equal-width cells of [0, 1] counted in the first pass.
CELLS = 1 << 16


def cell_of(scores: NDArray[np.float64]) -> NDArray[np.int64]:
    """Cell of each score in [0, 1] (``floor(score * CELLS)``, 1 in the last cell): a
    non-decreasing function of the score, since multiplying by a power of 2 is exact."""
    return np.minimum((scores * CELLS).astype(np.int64), CELLS - 1)


def cell_counts(scores: NDArray[np.float64],
                weights: NDArray[np.float64] | None = None) -> NDArray[Any]:
    """Scores per cell (pass one); with row ``weights``, their weight per cell (floats)."""
    if weights is not None:
        return np.bincount(cell_of(scores), weights=weights, minlength=CELLS)
    return np.bincount(cell_of(scores), minlength=CELLS).astype(np.int64)


def _ranks(total: int, n_bins: int) -> NDArray[np.int64]:
    """The order statistics (0-based ranks) numpy's linear quantiles at
    ``linspace(0, 1, n_bins + 1)`` read: the one below each virtual index and the next."""
    virtual = (total - 1) * np.linspace(0.0, 1.0, n_bins + 1)
    below = np.floor(virtual).astype(np.int64)
    return np.unique(np.concatenate([below, np.minimum(below + 1, total - 1)]))


def target_cells(counts: NDArray[Any], n_bins: int) -> NDArray[np.int64]:
    """The cells holding the order statistics the quantiles need (from merged counts).

    Weights per cell (floats, :func:`cell_counts` with weights) are read as
    :func:`calibcore.metrics.binning.sorted_weighted_equal_mass_edges` reads row
    weights: whole numbers as frequencies (the cells of the repeated rows' order
    statistics), others as the cells where the cumulative share of the weight first
    reaches each level."""
    if counts.dtype.kind == "f":
        total_weight = float(counts.sum())
        if total_weight <= 0:
            return np.empty(0, dtype=np.int64)
        cumulative_weight = np.cumsum(counts, dtype=np.float64)
        if np.array_equal(counts, np.round(counts)):
            ranks = _ranks(round(total_weight), n_bins)
            return np.unique(np.searchsorted(cumulative_weight, ranks, side="right"))
        levels = np.linspace(0.0, 1.0, n_bins + 1) * cumulative_weight[-1]
        return np.unique(np.minimum(np.searchsorted(cumulative_weight, levels, side="left"),
                                    counts.size - 1))
    total = int(counts.sum())
    if total == 0:
        return np.empty(0, dtype=np.int64)
    cumulative = np.cumsum(counts)
    return np.unique(np.searchsorted(cumulative, _ranks(total, n_bins), side="right"))


def cell_values(scores: NDArray[np.float64], cells: NDArray[np.int64],
                weights: NDArray[np.float64] | None = None) -> pd.Series:
    """Counts of each distinct score lying in ``cells`` (pass two), indexed by score; with
    row ``weights``, their weight at each."""
    inside = np.isin(cell_of(scores), cells)
    if weights is not None:
        return pd.Series(weights[inside]).groupby(scores[inside], sort=False).sum()
    return pd.Series(scores[inside]).value_counts(sort=False)


def merge_values(parts: list[pd.Series]) -> pd.Series:
    """The counts of each score over all parts, sorted by score."""
    if not parts:
        return pd.Series(dtype=np.int64)
    merged = pd.concat(parts)
    return merged.groupby(level=0, sort=True).sum()


def merged_equal_mass_edges(counts: NDArray[Any], values: pd.Series,
                            n_bins: int) -> NDArray[np.float64]:
    """``equal_mass_edges`` of all the scores, from the merged cell counts and the merged
    values of the target cells (of weighted scores: weights per cell and per value, the
    weighted edges of :func:`calibcore.metrics.binning.weighted_equal_mass_edges`)."""
    targets = target_cells(counts, n_bins)
    others = np.setdiff1d(np.flatnonzero(counts), targets)
    scores = np.concatenate([values.index.to_numpy(dtype=np.float64), others / CELLS])
    weights = np.concatenate([values.to_numpy(dtype=counts.dtype), counts[others]])
    order = np.argsort(scores, kind="stable")
    return sorted_weighted_equal_mass_edges(scores[order], weights[order], n_bins)


#: Key bits below a coarse cell: the sign, the 11 exponent bits and the 4 leading mantissa
#: bits of a float pick its coarse cell (``key >> COARSE_SHIFT``).
COARSE_SHIFT = 48
#: The 63 bits below the sign, flipped for negative floats so that keys sort as floats.
_MAGNITUDE_BITS = np.int64(0x7FFF_FFFF_FFFF_FFFF)


def float_keys(values: NDArray[np.float64]) -> NDArray[np.int64]:
    """Order keys of finite floats: ``key(a) < key(b)`` exactly when ``a < b``, and
    ``key(a) == key(b)`` when ``a == b`` (-0.0 is taken as 0.0)."""
    bits = (np.asarray(values, dtype=np.float64) + 0.0).view(np.int64)
    return bits ^ ((bits >> 63) & _MAGNITUDE_BITS)


def key_floats(keys: NDArray[np.int64]) -> NDArray[np.float64]:
    """The floats of order keys (the inverse of :func:`float_keys`)."""
    keys = np.asarray(keys, dtype=np.int64)
    return (keys ^ ((keys >> 63) & _MAGNITUDE_BITS)).view(np.float64)


def coarse_counts(keys: NDArray[np.int64]) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """The occupied coarse cells of some keys, ascending, and their counts (counted in
    the 2^16 coarse cells, not sorted: a sixth of ``np.unique``'s time on 500k keys)."""
    half = 1 << 15  # coarse cells run from -2^15 to 2^15 - 1
    every = np.bincount((np.asarray(keys, dtype=np.int64) >> COARSE_SHIFT) + half,
                        minlength=2 * half)
    cells = np.flatnonzero(every)
    return (cells - half).astype(np.int64), every[cells].astype(np.int64)


def merge_coarse_counts(
    first: tuple[NDArray[np.int64], NDArray[np.int64]],
    second: tuple[NDArray[np.int64], NDArray[np.int64]],
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """The coarse counts of two parts together."""
    cells, inverse = np.unique(np.concatenate([first[0], second[0]]), return_inverse=True)
    counts = np.zeros(cells.size, dtype=np.int64)
    np.add.at(counts, inverse, np.concatenate([first[1], second[1]]))
    return cells, counts


@dataclass(frozen=True)
class FloatCells:
    """A non-decreasing map of finite floats to about :data:`CELLS` cells, fine where
    the rows are dense (built from their coarse counts and their min and max keys).

    Occupied coarse cell j, cut to the keys ``[base[j], top[j]]``, is split into the
    key ranges of ``2**shift[j]`` keys starting at ``base[j]``; they are cells
    ``offset[j]``, ``offset[j] + 1``, ... A float outside every occupied coarse cell
    maps to the nearest cell below it (or the first), which keeps the map monotone.

    Attributes
    ----------
    coarse, base, top, shift, offset : ndarray of int64, shape (n_coarse,)
    n_cells : int
    """

    coarse: NDArray[np.int64]
    base: NDArray[np.int64]
    top: NDArray[np.int64]
    shift: NDArray[np.int64]
    offset: NDArray[np.int64]
    n_cells: int

    @classmethod
    def of(cls, coarse: NDArray[np.int64], counts: NDArray[np.int64], min_key: int,
           max_key: int, n_cells: int = CELLS) -> FloatCells:
        """Cells for rows with these coarse counts and keys in ``[min_key, max_key]``:
        coarse cell j gets at most ``max(1, counts[j] * n_cells / n)`` cells (a power of
        two), so each holds about ``n / n_cells`` rows when the rows spread evenly within
        it, and never more keys than it has."""
        total = max(int(counts.sum()), 1)
        base = np.maximum(coarse << COARSE_SHIFT, min_key)
        top = np.minimum((coarse << COARSE_SHIFT) + ((1 << COARSE_SHIFT) - 1), max_key)
        wanted = np.floor(np.log2(np.maximum(counts * (n_cells / total), 1.0)))
        wanted = np.clip(wanted, 0, COARSE_SHIFT).astype(np.int64)
        key_bits = np.frexp((top - base).astype(np.float64))[1].astype(np.int64)
        shift = np.maximum(key_bits - wanted, 0)
        sizes = ((top - base) >> shift) + 1
        offset = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
        return cls(coarse, base, top, shift, offset, int(sizes.sum()))

    @functools.cached_property
    def _tables(self) -> NDArray[np.int64]:
        """(4, 2^16) base, top, offset and shift of every coarse cell: an unoccupied one
        maps every key to the last cell of the occupied one below it (or to cell 0)."""
        every = np.arange(-(1 << 15), 1 << 15, dtype=np.int64)
        below = np.searchsorted(self.coarse, every, side="right") - 1
        occupied = (below >= 0) & (self.coarse[np.maximum(below, 0)] == every)
        below = np.maximum(below, 0)
        last = self.offset + ((self.top - self.base) >> self.shift)
        tables = np.zeros((4, every.size), dtype=np.int64)
        tables[0] = np.where(occupied, self.base[below], 0)
        tables[1] = np.where(occupied, self.top[below], 0)
        tables[2] = np.where(occupied, self.offset[below],
                             np.where(every > self.coarse[0], last[below], 0))
        tables[3] = np.where(occupied, self.shift[below], 0)
        return tables

    def cells_of_keys(self, keys: NDArray[np.int64]) -> NDArray[np.int64]:
        """The cell of each key (any int64 key: a non-decreasing function of it)."""
        keys = np.asarray(keys, dtype=np.int64)
        return _cells_of_keys(np.ascontiguousarray(keys.ravel()), self._tables).reshape(
            keys.shape)

    def cells_of(self, values: NDArray[np.float64]) -> NDArray[np.int64]:
        """The cell of each finite float."""
        return self.cells_of_keys(float_keys(values))

    def counts(self, values: NDArray[np.float64]) -> NDArray[np.int64]:
        """Floats per cell."""
        return np.bincount(self.cells_of(values), minlength=self.n_cells).astype(np.int64)

    def bounds(self) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """The smallest and the largest float of each cell."""
        sizes = np.diff(np.append(self.offset, self.n_cells))
        coarse = np.repeat(np.arange(self.coarse.size), sizes)
        step = np.arange(self.n_cells, dtype=np.int64) - self.offset[coarse]
        low = self.base[coarse] + (step << self.shift[coarse])
        high = np.minimum(low + ((np.int64(1) << self.shift[coarse]) - 1), self.top[coarse])
        return key_floats(low), key_floats(high)


@numba.njit(nogil=True, cache=True)
def _cells_of_keys(keys: NDArray[np.int64], tables: NDArray[np.int64]) -> NDArray[np.int64]:
    """:meth:`FloatCells.cells_of_keys` in one pass: each key's coarse cell picks its row
    of ``tables`` (base, top, offset, shift), and the key, clipped to [base, top] (first:
    no overflow), is ``offset + ((key - base) >> shift)``. NumPy's version gathered four
    tables and made five temporaries of the keys' size (a third of a Dask report's
    per-variable passes)."""
    cells = np.empty(keys.size, dtype=np.int64)
    for row in range(keys.size):
        key = keys[row]
        coarse = (key >> COARSE_SHIFT) + (1 << 15)
        base = tables[0, coarse]
        local = min(max(key, base), tables[1, coarse]) - base
        cells[row] = tables[2, coarse] + (local >> tables[3, coarse])
    return cells


def linear_quantile_ranks(total: int, levels: NDArray[np.float64]) -> NDArray[np.int64]:
    """The order statistics (0-based ranks) numpy's linear quantiles at ``levels`` of
    ``total`` values read: the one below each virtual index ``(total - 1) * level``
    and the next."""
    virtual = (total - 1) * np.asarray(levels, dtype=np.float64)
    below = np.minimum(np.floor(virtual).astype(np.int64), total - 1)
    return np.unique(np.concatenate([below, np.minimum(below + 1, total - 1)]))


def rank_cells(counts: NDArray[np.int64], ranks: NDArray[np.int64]) -> NDArray[np.int64]:
    """The cells holding the order statistics of these ranks (from merged cell counts)."""
    return np.unique(np.searchsorted(np.cumsum(counts), ranks, side="right")).astype(np.int64)


def weighted_linear_quantiles(sorted_values: NDArray[np.float64], counts: NDArray[np.int64],
                              levels: NDArray[np.float64]) -> NDArray[np.float64]:
    """``np.quantile(values, levels)`` (method "linear") of the values ``sorted_values``
    repeated ``counts`` times, bit for bit: the same virtual indices, order statistics
    and interpolation (numpy's ``_lerp``)."""
    levels = np.asarray(levels, dtype=np.float64)
    cumulative = np.cumsum(counts.astype(np.int64))
    total = int(cumulative[-1])
    virtual = (total - 1) * levels
    previous = np.floor(virtual)
    gamma = virtual - previous
    below = previous.astype(np.int64)
    above = np.minimum(below + 1, total - 1)
    below = np.minimum(below, total - 1)  # virtual indices at the end read the last value
    low = sorted_values[np.searchsorted(cumulative, below, side="right")]
    high = sorted_values[np.searchsorted(cumulative, above, side="right")]
    difference = high - low
    quantiles = low + difference * gamma
    np.subtract(high, difference * (1 - gamma), out=quantiles, where=gamma >= 0.5)
    return quantiles


__all__ = ["CELLS", "COARSE_SHIFT", "FloatCells", "cell_counts", "cell_of", "cell_values",
           "coarse_counts", "float_keys", "key_floats", "linear_quantile_ranks",
           "merge_coarse_counts", "merge_values", "merged_equal_mass_edges", "rank_cells",
           "target_cells", "weighted_linear_quantiles"]
