"""Weighted summaries of the per-row LCE for :mod:`calibcore.local.lce`: over rows (the
MLCE and the mean LCE, Luo et al. 2022, eq. 5) and per confidence bin (|conf - acc|
against the local errors and the CDF of the LCE, Luo et al. 2022, §3.3 and Figure 2).

With row weights the means are weighted, the maxima are over the rows of positive weight
and the CDFs are of the bins' weight; without them every row counts once.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from calibcore.exceptions import CalibrationInputError


def row_maximum(values: NDArray[np.float64],
                weights: NDArray[np.float64] | None) -> NDArray[np.float64]:
    """Row maximum of (g, n) values, over the rows of positive weight."""
    if weights is None:
        return values.max(axis=1)
    return values[:, weights > 0].max(axis=1)


def row_mean(values: NDArray[np.float64],
             weights: NDArray[np.float64] | None) -> NDArray[np.float64]:
    """Row mean of (g, n) values, weighted (rows of weight 0 left out, NaN or not)."""
    if weights is None:
        return values.mean(axis=1)
    positive = weights > 0
    # Contiguous rows: summed in the same order as the unweighted mean (unit weights give
    # its value bit for bit).
    return np.average(np.ascontiguousarray(values[:, positive]), axis=1,
                      weights=weights[positive])


@dataclass(frozen=True, eq=False)
class LCEDistribution:
    """Empirical CDF of the LCE in one confidence bin (Luo et al. 2022, Figure 2).

    Attributes
    ----------
    bin_index, count : int
    lower, upper : float
        The bin's edges.
    gap : float
        The bin's |conf - acc| (what a global measure sees), NaN if empty.
    mean_lce : float
    values : ndarray of shape (count,)
        LCE of the bin's rows, sorted.
    cumulative : ndarray of shape (count,)
        Fraction of the bin's rows with LCE <= ``values[i]`` ((i + 1) / count), or of
        the bin's weight with row weights.
    """

    bin_index: int
    count: int
    lower: float
    upper: float
    gap: float
    mean_lce: float
    values: NDArray[np.float64]
    cumulative: NDArray[np.float64]


@dataclass(frozen=True, eq=False)
class LCEBinSummary:
    """Per confidence bin: global gap against local errors (Luo et al. 2022, §3.3).

    Arrays have one entry per bin; empty bins have count 0 and NaN statistics. With row
    weights the means are weighted, the maximum is over rows of positive weight, ``weight``
    holds each bin's total weight and ``sorted_weight`` the weights in the order of
    ``sorted_lce`` (both None without weights).

    Attributes
    ----------
    edges : ndarray of shape (n_bins + 1,)
    count : ndarray of shape (n_bins,)
    confidence, accuracy : ndarray
        Mean confidence and accuracy of the bin.
    gap : ndarray
        |conf - acc|, the bin's calibration error.
    mean_lce, mean_signed_lce, max_lce : ndarray
    sorted_lce : ndarray of shape (n,)
        Each bin's LCE values, sorted, bins one after another; bin b is
        ``sorted_lce[offsets[b]:offsets[b + 1]]``.
    offsets : ndarray of shape (n_bins + 1,)
    """

    edges: NDArray[np.float64]
    count: NDArray[np.intp]
    confidence: NDArray[np.float64]
    accuracy: NDArray[np.float64]
    gap: NDArray[np.float64]
    mean_lce: NDArray[np.float64]
    mean_signed_lce: NDArray[np.float64]
    max_lce: NDArray[np.float64]
    sorted_lce: NDArray[np.float64]
    offsets: NDArray[np.intp]
    weight: NDArray[np.float64] | None = None
    sorted_weight: NDArray[np.float64] | None = None

    @property
    def best_bin(self) -> int:
        """Non-empty bin with the smallest |conf - acc| (Luo et al. 2022, Figure 2 top)."""
        return int(np.nanargmin(self.gap))

    @property
    def worst_bin(self) -> int:
        """Non-empty bin with the largest |conf - acc| (Luo et al. 2022, Figure 2 bottom)."""
        return int(np.nanargmax(self.gap))

    def distribution(self, bin_index: int) -> LCEDistribution:
        """The CDF of the LCE in bin ``bin_index``."""
        n_bins = self.count.size
        if not 0 <= int(bin_index) < n_bins:
            raise CalibrationInputError(f"bin_index must be in 0..{n_bins - 1}; got {bin_index!r}.")
        b = int(bin_index)
        values = self.sorted_lce[self.offsets[b]:self.offsets[b + 1]]
        if self.sorted_weight is None:
            cumulative = np.arange(1, values.size + 1) / max(values.size, 1)
        else:
            mass = np.cumsum(self.sorted_weight[self.offsets[b]:self.offsets[b + 1]])
            cumulative = mass / mass[-1] if mass.size and mass[-1] > 0 else np.zeros(mass.size)
        return LCEDistribution(
            bin_index=b, count=int(self.count[b]), lower=float(self.edges[b]),
            upper=float(self.edges[b + 1]), gap=float(self.gap[b]),
            mean_lce=float(self.mean_lce[b]), values=values, cumulative=cumulative,
        )


def bin_summary(signed_lce: NDArray[np.float64], confidence: NDArray[np.float64],
                correct: NDArray[np.float64], bin_index: NDArray[np.intp],
                edges: NDArray[np.float64],
                weights: NDArray[np.float64] | None) -> LCEBinSummary:
    """Per-bin |conf - acc|, mean and max LCE, and the sorted LCE for CDFs, of rows in
    bins ``bin_index`` of ``edges`` (weighted by ``weights``, if any)."""
    size = edges.size - 1
    count = np.bincount(bin_index, minlength=size)
    # Without weights a bin's mass is its count and every row is summed as it is.
    mass = np.asarray(count if weights is None else
                      np.bincount(bin_index, weights=weights, minlength=size), dtype=np.float64)
    positive = np.ones(bin_index.size, dtype=bool) if weights is None else weights > 0

    def mean_of(values: NDArray[np.float64]) -> NDArray[np.float64]:
        summed = values if weights is None else np.where(positive, weights * values, 0.0)
        totals = np.bincount(bin_index, weights=summed, minlength=size)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(mass > 0, totals / mass, np.nan)

    lce = np.abs(signed_lce)
    bin_confidence, accuracy = mean_of(confidence), mean_of(correct)
    order = np.lexsort((lce, bin_index))
    max_lce = np.full(size, np.nan)
    np.fmax.at(max_lce, bin_index[positive], lce[positive])
    return LCEBinSummary(
        edges=edges, count=count, confidence=bin_confidence, accuracy=accuracy,
        gap=np.abs(bin_confidence - accuracy), mean_lce=mean_of(lce),
        mean_signed_lce=mean_of(signed_lce), max_lce=max_lce,
        sorted_lce=lce[order], offsets=np.concatenate([[0], np.cumsum(count)]),
        weight=None if weights is None else mass,
        sorted_weight=None if weights is None else weights[order],
    )
