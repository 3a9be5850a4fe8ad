"""Equal-mass bin edges of scores spread over many parts, exactly, in two passes.

:func:`calibcore.binning.equal_mass_edges` takes numpy's linear-interpolation
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
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from calibcore.binning import sorted_weighted_equal_mass_edges

#: Equal-width cells of [0, 1] counted in the first pass.
CELLS = 1 << 16


def cell_of(scores: NDArray[np.float64]) -> NDArray[np.int64]:
    """Cell of each score in [0, 1] (``floor(score * CELLS)``, 1 in the last cell): a
    non-decreasing function of the score, since multiplying by a power of 2 is exact."""
    return np.minimum((scores * CELLS).astype(np.int64), CELLS - 1)


def cell_counts(scores: NDArray[np.float64]) -> NDArray[np.int64]:
    """Scores per cell (pass one)."""
    return np.bincount(cell_of(scores), minlength=CELLS).astype(np.int64)


def _ranks(total: int, n_bins: int) -> NDArray[np.int64]:
    """The order statistics (0-based ranks) numpy's linear quantiles at
    ``linspace(0, 1, n_bins + 1)`` read: the one below each virtual index and the next."""
    virtual = (total - 1) * np.linspace(0.0, 1.0, n_bins + 1)
    below = np.floor(virtual).astype(np.int64)
    return np.unique(np.concatenate([below, np.minimum(below + 1, total - 1)]))


def target_cells(counts: NDArray[np.int64], n_bins: int) -> NDArray[np.int64]:
    """The cells holding the order statistics the quantiles need (from merged counts)."""
    total = int(counts.sum())
    if total == 0:
        return np.empty(0, dtype=np.int64)
    cumulative = np.cumsum(counts)
    return np.unique(np.searchsorted(cumulative, _ranks(total, n_bins), side="right"))


def cell_values(scores: NDArray[np.float64], cells: NDArray[np.int64]) -> pd.Series:
    """Counts of each distinct score lying in ``cells`` (pass two), indexed by score."""
    inside = np.isin(cell_of(scores), cells)
    return pd.Series(scores[inside]).value_counts(sort=False)


def merge_values(parts: list[pd.Series]) -> pd.Series:
    """The counts of each score over all parts, sorted by score."""
    if not parts:
        return pd.Series(dtype=np.int64)
    merged = pd.concat(parts)
    return merged.groupby(level=0, sort=True).sum()


def merged_equal_mass_edges(counts: NDArray[np.int64], values: pd.Series,
                            n_bins: int) -> NDArray[np.float64]:
    """``equal_mass_edges`` of all the scores, from the merged cell counts and the merged
    values of the target cells."""
    targets = target_cells(counts, n_bins)
    others = np.setdiff1d(np.flatnonzero(counts), targets)
    scores = np.concatenate([values.index.to_numpy(dtype=np.float64), others / CELLS])
    weights = np.concatenate([values.to_numpy(dtype=np.int64), counts[others]])
    order = np.argsort(scores, kind="stable")
    return sorted_weighted_equal_mass_edges(scores[order], weights[order], n_bins)


__all__ = ["CELLS", "cell_counts", "cell_of", "cell_values", "merge_values",
           "merged_equal_mass_edges", "target_cells"]
