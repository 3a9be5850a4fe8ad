"""The bin sums of prediction rows: mergeable, and exact for the binned global measures on
any partitioning.

A :class:`BinnedSummary` of some rows holds, for the top-label problem and for every
class k (P(class k) against 1[y = k]), the rows, score sums and outcome sums of each
equal-width bin, and the sums of the per-row losses (NLL, Brier, correct top labels,
binary Brier). The summary of disjoint parts is the sum of their summaries
(:meth:`BinnedSummary.merge`), so the measures read off a merged summary equal the
in-memory functions of :mod:`calibcore.metrics` on all the rows, whatever the parts
(up to the order of additions, about 1e-15 relative): accuracy, NLL, Brier, binary
Brier, ECE, MCE and binnedECE + width, classwise ECE. It serves the views of
:mod:`calibcore.partitioned.summaries`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import reduce

import numpy as np
from numpy.typing import ArrayLike, NDArray

from calibcore._validation import check_positive_int, check_predictions
from calibcore.data.views import View, top_class
from calibcore.exceptions import CalibrationInputError
from calibcore.metrics._weighted_measures import row_losses
from calibcore.metrics.binning import assign_bins, bin_sums, equal_width_edges
from calibcore.metrics.reliability import BinnedReliability, diagram_of_sums
from calibcore.partitioned.summaries import VIEW_LABELS, check_summary_view, empty_classes
from calibcore.partitioned.weighting import row_weights

#: The per-row losses whose sums a summary keeps.
LOSSES = ("nll", "brier", "accuracy", "binary_brier")


@dataclass(frozen=True)
class BinnedSummary:
    """Sums over some rows from which the binned measures follow exactly.

    Attributes
    ----------
    n_rows : int
    n_bins : int
        Equal-width bins on [0, 1] (right-closed, as :func:`calibcore.metrics.assign_bins`).
    losses : ndarray of shape (4,)
        Sums of :data:`LOSSES` over the rows (binary Brier 0 unless two classes).
    top_label : ndarray of shape (3, n_bins)
        Rows, confidence sums and correct-prediction counts per bin of the confidence.
    classwise : ndarray of shape (K, 3, n_bins)
        The same for each class k: rows, sums of P(class k) and of 1[y = k] per bin.
    weights : ndarray of shape (2,) or None
        With row weights: their sum and the sum of their squares (Kish's effective n is
        the first squared over the second). The losses and bin sums are then weighted
        sums, the first row of each bin array the bins' weight, and two rows follow the
        three above: each bin's rows and its sum of squared weights (shape (5, n_bins)).
        None for unweighted rows.
    """

    n_rows: int
    n_bins: int
    losses: NDArray[np.float64]
    top_label: NDArray[np.float64]
    classwise: NDArray[np.float64]
    weights: NDArray[np.float64] | None = None

    @classmethod
    def of(cls, y_true: ArrayLike, y_prob: ArrayLike, *, n_bins: int = 15,
           sample_weight: ArrayLike | None = None) -> BinnedSummary:
        """The summary of these rows (validated as the measures validate them); no rows
        (an empty partition) give the empty summary of the classes ``y_prob`` has
        (two when it is 1-D). ``sample_weight`` (non-negative row weights) gives the
        weighted summary: integer weights sum what the rows repeated by them sum."""
        n_bins = check_positive_int(n_bins, "n_bins")
        if (n_classes := empty_classes(y_true, y_prob)) is not None:
            return cls.empty(n_classes, n_bins, weighted=sample_weight is not None)
        labels, proba = check_predictions(y_true, y_prob)
        weights = row_weights(sample_weight, labels.size)
        edges = equal_width_edges(n_bins)
        per_row = row_losses(labels, proba)

        def total(values: NDArray[np.float64]) -> float:
            # unweighted: a plain sum (a dot product with ones rounds differently)
            return float(values.sum()) if weights is None else float(values @ weights)

        def binned(scores: NDArray[np.float64],
                   outcomes: NDArray[np.float64]) -> NDArray[np.float64]:
            if weights is None:
                return bin_sums(scores, outcomes, edges)
            return _weighted_bins(scores, outcomes, edges, weights)

        losses = np.array([total(per_row[key]) if key in per_row else 0.0 for key in LOSSES])

        classwise = np.stack([binned(proba[:, k], (labels == k).astype(np.float64))
                              for k in range(proba.shape[1])])
        return cls(int(labels.size), n_bins, losses,
                   binned(top_class(proba)[1], per_row["accuracy"]), classwise,
                   None if weights is None else np.array([weights.sum(), weights @ weights]))

    @classmethod
    def empty(cls, n_classes: int, n_bins: int = 15, *,
              weighted: bool = False) -> BinnedSummary:
        """The summary of no rows (the identity of :meth:`merge`), weighted or not."""
        rows = 5 if weighted else 3
        return cls(0, n_bins, np.zeros(len(LOSSES)), np.zeros((rows, n_bins)),
                   np.zeros((n_classes, rows, n_bins)), np.zeros(2) if weighted else None)

    @property
    def weighted(self) -> bool:
        return self.weights is not None

    @property
    def total(self) -> float:
        """The rows, or their total weight: what the means divide by."""
        return float(self.n_rows) if self.weights is None else float(self.weights[0])

    @property
    def n_eff(self) -> float:
        """Kish's effective sample size, (sum w)^2 / sum w^2 (Kish 1965): the rows when
        unweighted."""
        if self.weights is None:
            return float(self.n_rows)
        return float(self.weights[0] ** 2 / self.weights[1]) if self.weights[1] > 0 else 0.0

    def merge(self, other: BinnedSummary) -> BinnedSummary:
        """The summary of both sets of rows."""
        if (other.n_bins, other.classwise.shape) != (self.n_bins, self.classwise.shape):
            raise CalibrationInputError(
                f"summaries with {self.classwise.shape[0]} classes and {self.n_bins} bins "
                f"cannot merge with {other.classwise.shape[0]} classes and {other.n_bins} "
                "bins" + (", or weighted with unweighted ones." if self.weighted
                          != other.weighted else "."))
        weights = (None if self.weights is None or other.weights is None
                   else self.weights + other.weights)
        return BinnedSummary(self.n_rows + other.n_rows, self.n_bins,
                             self.losses + other.losses, self.top_label + other.top_label,
                             self.classwise + other.classwise, weights)

    def measures(self, view: View = "top_label") -> dict[str, float]:
        """The measures of the summarized rows, keyed as :data:`calibcore.metrics.MEASURES`:
        ECE, MCE and binnedECE + width of ``view`` ("top_label", or "positive" for two
        classes), the others (which do not depend on it) as they are.

        ``binary_brier`` and ``positive_ece`` (the positive view's ECE, whatever the
        view) only for two classes.
        """
        if self.n_rows == 0 or self.total <= 0:
            raise CalibrationInputError("no rows (or no weight) were summarized.")
        n, n_classes = self.total, self.classwise.shape[0]
        nll, brier, correct, binary_brier = self.losses / n
        bins = self.view_bins(view)
        ece = binned_ece(bins, n)
        out = {"accuracy": float(correct), "nll": float(nll), "brier": float(brier),
               "ece": ece, "mce": binned_mce(bins),
               "classwise_ece": float(np.mean([binned_ece(bins, n) for bins in self.classwise])),
               "binned_ece_plus_width": ece + 1.0 / self.n_bins}
        if n_classes == 2:
            out["binary_brier"] = float(binary_brier)
            out["positive_ece"] = binned_ece(self.classwise[1], n)
        return out

    def view_bins(self, view: View) -> NDArray[np.float64]:
        """Rows (their weight, when weighted), score sums and outcome sums per bin of
        ``view``'s problem, shape (3, n_bins)."""
        check_summary_view(view, self.classwise.shape[0])
        return (self.top_label if view == "top_label" else self.classwise[1])[:3]

    def diagrams(self, *, classwise: bool = False, view: View = "top_label",
                 class_names: Sequence[str] | None = None) -> list[BinnedReliability]:
        """The binned reliability diagrams with Wilson 95% intervals (equal-width bins):
        ``view``'s ("top label", or "class 1" for the positive view), or with
        ``classwise`` one per class; equal to :func:`calibcore.metrics.binned_reliability`
        on the summarized rows (with its ``sample_weight`` when weighted: weighted means,
        each bin's interval on its Kish effective size)."""
        edges = equal_width_edges(self.n_bins)
        if not classwise:
            check_summary_view(view, self.classwise.shape[0])
            bins = self.top_label if view == "top_label" else self.classwise[1]
            return [self._diagram(VIEW_LABELS[view], edges, bins)]
        names = class_names or [str(k) for k in range(self.classwise.shape[0])]
        return [self._diagram(f"class {name}", edges, bins)
                for name, bins in zip(names, self.classwise, strict=True)]

    def _diagram(self, label: str, edges: NDArray[np.float64],
                 bins: NDArray[np.float64]) -> BinnedReliability:
        if self.weights is None:
            return diagram_of_sums(label, edges, *bins)
        return diagram_of_sums(label, edges, bins[3], bins[1], bins[2], weight=bins[0],
                               square_weight=bins[4])

def _weighted_bins(scores: NDArray[np.float64], outcomes: NDArray[np.float64],
                   edges: NDArray[np.float64], weights: NDArray[np.float64]
                   ) -> NDArray[np.float64]:
    """Weight, weighted score and outcome sums, rows and squared weights per bin,
    shape (5, bins)."""
    index = assign_bins(scores, edges)
    size = edges.size - 1
    return np.stack([np.bincount(index, weights=weights, minlength=size),
                     np.bincount(index, weights=weights * scores, minlength=size),
                     np.bincount(index, weights=weights * outcomes, minlength=size),
                     np.bincount(index, minlength=size).astype(np.float64),
                     np.bincount(index, weights=np.square(weights), minlength=size)])


def merge_all(summaries: Iterable[BinnedSummary]) -> BinnedSummary:
    """The merge of every summary (at least one)."""
    return reduce(BinnedSummary.merge, summaries)


def binned_ece(bins: NDArray[np.float64], n_rows: float) -> float:
    """The ECE of bin sums (rows or weight, score sums, outcome sums):
    sum_b (n_b / n) |mean score - mean outcome| = sum_b |S_b - O_b| / n.

    Examples
    --------
    >>> binned_ece(np.array([[2.0, 2.0], [0.5, 1.5], [1.0, 2.0]]), 4.0)
    0.25
    """
    return float(np.abs(bins[1] - bins[2]).sum() / n_rows)


def binned_mce(bins: NDArray[np.float64]) -> float:
    """The MCE of bin sums: the largest |S_b - O_b| / n_b of a
    filled bin.

    Examples
    --------
    >>> binned_mce(np.array([[2.0, 0.0], [0.5, 0.0], [1.0, 0.0]]))
    0.25
    """
    filled = bins[0] > 0
    return float((np.abs(bins[1] - bins[2])[filled] / bins[0][filled]).max())



__all__ = ["LOSSES", "BinnedSummary", "binned_ece", "binned_mce", "merge_all"]
