"""Mergeable summaries of prediction rows: exact global measures on any partitioning.

A :class:`BinnedSummary` of some rows holds, for the top-label problem and for every
class k (P(class k) against 1[y = k]), the rows, score sums and outcome sums of each
equal-width bin, and the sums of the per-row losses (NLL, Brier, correct top labels,
binary Brier). The summary of disjoint parts is the sum of their summaries
(:meth:`BinnedSummary.merge`), so the measures read off a merged summary equal the
in-memory functions of :mod:`calibcore.metrics` on all the rows, whatever the parts
(up to the order of additions, about 1e-15 relative): accuracy, NLL, Brier, binary
Brier, ECE, MCE and binnedECE + width (top-label and positive views), classwise ECE.

This is the reduction a partitioned table needs (issue 14): each partition is
summarized where it lies and only the summaries, O(K x bins) numbers each, travel.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import reduce

import numpy as np
from numpy.typing import ArrayLike, NDArray

from calibcore._validation import check_positive_int, check_predictions
from calibcore._weighted_measures import row_losses
from calibcore.binning import bin_sums, equal_width_edges
from calibcore.exceptions import CalibrationInputError
from calibcore.views import top_class

#: The per-row losses whose sums a summary keeps.
LOSSES = ("nll", "brier", "accuracy", "binary_brier")


@dataclass(frozen=True)
class BinnedSummary:
    """Sums over some rows from which the binned measures follow exactly.

    Attributes
    ----------
    n_rows : int
    n_bins : int
        Equal-width bins on [0, 1] (right-closed, as :func:`calibcore.binning.assign_bins`).
    losses : ndarray of shape (4,)
        Sums of :data:`LOSSES` over the rows (binary Brier 0 unless two classes).
    top_label : ndarray of shape (3, n_bins)
        Rows, confidence sums and correct-prediction counts per bin of the confidence.
    classwise : ndarray of shape (K, 3, n_bins)
        The same for each class k: rows, sums of P(class k) and of 1[y = k] per bin.
    """

    n_rows: int
    n_bins: int
    losses: NDArray[np.float64]
    top_label: NDArray[np.float64]
    classwise: NDArray[np.float64]

    @classmethod
    def of(cls, y_true: ArrayLike, y_prob: ArrayLike, *, n_bins: int = 15) -> BinnedSummary:
        """The summary of these rows (validated as the measures validate them); no rows
        (an empty partition) give the empty summary of the classes ``y_prob`` has
        (two when it is 1-D)."""
        n_bins = check_positive_int(n_bins, "n_bins")
        shape = np.shape(y_prob)
        if len(shape) in (1, 2) and shape[0] == 0 and np.size(y_true) == 0:
            return cls.empty(2 if len(shape) == 1 else shape[1], n_bins)
        labels, proba = check_predictions(y_true, y_prob)
        edges = equal_width_edges(n_bins)
        per_row = row_losses(labels, proba)
        losses = np.array([per_row[key].sum() if key in per_row else 0.0 for key in LOSSES])
        classwise = np.stack([bin_sums(proba[:, k], (labels == k).astype(np.float64), edges)
                              for k in range(proba.shape[1])])
        return cls(int(labels.size), n_bins, losses,
                   bin_sums(top_class(proba)[1], per_row["accuracy"], edges), classwise)

    @classmethod
    def empty(cls, n_classes: int, n_bins: int = 15) -> BinnedSummary:
        """The summary of no rows (the identity of :meth:`merge`)."""
        return cls(0, n_bins, np.zeros(len(LOSSES)), np.zeros((3, n_bins)),
                   np.zeros((n_classes, 3, n_bins)))

    def merge(self, other: BinnedSummary) -> BinnedSummary:
        """The summary of both sets of rows."""
        if (other.n_bins, other.classwise.shape) != (self.n_bins, self.classwise.shape):
            raise CalibrationInputError(
                f"summaries with {self.classwise.shape[0]} classes and {self.n_bins} bins "
                f"cannot merge with {other.classwise.shape[0]} classes and {other.n_bins} "
                "bins.")
        return BinnedSummary(self.n_rows + other.n_rows, self.n_bins,
                             self.losses + other.losses, self.top_label + other.top_label,
                             self.classwise + other.classwise)

    def measures(self) -> dict[str, float]:
        """The measures of the summarized rows, keyed as :data:`calibcore.uncertainty.MEASURES`.

        ``binary_brier`` and the positive view's ``positive_ece`` only for two classes.
        """
        if self.n_rows == 0:
            raise CalibrationInputError("no rows were summarized.")
        n, n_classes = self.n_rows, self.classwise.shape[0]
        nll, brier, correct, binary_brier = self.losses / n
        ece = _ece(self.top_label, n)
        out = {"accuracy": float(correct), "nll": float(nll), "brier": float(brier),
               "ece": ece, "mce": _mce(self.top_label),
               "classwise_ece": float(np.mean([_ece(bins, n) for bins in self.classwise])),
               "binned_ece_plus_width": ece + 1.0 / self.n_bins}
        if n_classes == 2:
            out["binary_brier"] = float(binary_brier)
            out["positive_ece"] = _ece(self.classwise[1], n)
        return out


def merge_all(summaries: Iterable[BinnedSummary]) -> BinnedSummary:
    """The merge of every summary (at least one)."""
    return reduce(BinnedSummary.merge, summaries)


def _ece(bins: NDArray[np.float64], n_rows: int) -> float:
    """sum_b (n_b / n) |mean score - mean outcome| = sum_b |S_b - O_b| / n."""
    return float(np.abs(bins[1] - bins[2]).sum() / n_rows)


def _mce(bins: NDArray[np.float64]) -> float:
    filled = bins[0] > 0
    return float((np.abs(bins[1] - bins[2])[filled] / bins[0][filled]).max())


__all__ = ["LOSSES", "BinnedSummary", "merge_all"]
