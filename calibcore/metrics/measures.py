"""Global calibration measures.

Every measure takes ``(y_true, y_prob)``: ``y_true`` holds class indices
``0..K-1`` and ``y_prob`` is either P(class 1) of shape (n,) or class
probabilities of shape (n, K). Score-based measures take a ``view``
(``"top_label"`` by default; see :mod:`calibcore.data.views`); the classwise view
averages the per-class values.

Every measure takes ``sample_weight`` (non-negative row weights, see
:mod:`calibcore.data.weights`) and is then the measure of the weighted empirical
distribution: means become weighted means, a bin's share is its share of the total
weight and its gap that of weighted means, and equal-mass bins split the weight evenly.
Integer weights give exactly what the rows repeated by their weights give.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from calibcore._validation import check_positive_int, check_predictions
from calibcore.data.views import View, score_outcome, top_class
from calibcore.data.weights import check_sample_weight
from calibcore.exceptions import CalibrationInputError
from calibcore.metrics._sorting import stable_sort
from calibcore.metrics.binning import (
    Binning,
    bin_edges,
    bin_sums,
    equal_width_edges,
    sorted_equal_mass_edges,
    sorted_weighted_equal_mass_edges,
)

__all__ = [
    "NLL_CLIP",
    "accuracy",
    "binary_brier_score",
    "binned_ece_plus_width",
    "brier_score",
    "classwise_expected_calibration_error",
    "ece_by_bin_count",
    "ece_by_bin_count_per_binning",
    "expected_calibration_error",
    "interval_calibration_error",
    "laplace_kernel_calibration_error",
    "maximum_calibration_error",
    "negative_log_likelihood",
    "smooth_calibration_error",
    "smooth_ece",
]

#: Probabilities are clipped to [NLL_CLIP, 1] before taking logs, so NLL stays finite.
NLL_CLIP = 1e-12

_BINNINGS: tuple[Binning, ...] = ("equal_width", "equal_mass")


def _check_binning(binning: str) -> Binning:
    if binning not in _BINNINGS:
        raise CalibrationInputError(
            f"binning must be one of {', '.join(_BINNINGS)}; got {binning!r}."
        )
    return binning


def _bin_gaps(
    scores: NDArray[np.float64], outcomes: NDArray[np.float64], n_bins: int, binning: Binning,
    weights: NDArray[np.float64] | None = None,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Per-bin shares n_b / n (of the total weight) and gaps |mean score - mean outcome|
    (weighted means) of one problem."""
    counts, score_sums, outcome_sums = bin_sums(
        scores, outcomes, bin_edges(scores, n_bins, binning, weights), weights)
    filled = counts > 0
    gaps = np.abs(score_sums[filled] - outcome_sums[filled]) / counts[filled]
    return counts[filled] / counts.sum(), gaps


def _checked(y_true: ArrayLike, y_prob: ArrayLike, sample_weight: ArrayLike | None
             ) -> tuple[NDArray[np.intp], NDArray[np.float64], NDArray[np.float64] | None]:
    labels, proba = check_predictions(y_true, y_prob)
    return labels, proba, check_sample_weight(sample_weight, labels.size)


def _mean(values: NDArray[np.float64], weights: NDArray[np.float64] | None) -> float:
    return float(np.mean(values) if weights is None else np.average(values, weights=weights))


def expected_calibration_error(
    y_true: ArrayLike,
    y_prob: ArrayLike,
    *,
    n_bins: int = 15,
    binning: Binning = "equal_width",
    view: View = "top_label",
    sample_weight: ArrayLike | None = None,
) -> float:
    """Binned expected calibration error, sum_b (n_b / n) |conf_b - acc_b|.

    Parameters
    ----------
    y_true : array-like of shape (n,)
        Class indices 0..K-1.
    y_prob : array-like of shape (n,) or (n, K)
        P(class 1) for a binary problem, or class probabilities.
    n_bins : int, default=15
        Number of bins.
    binning : {"equal_width", "equal_mass"}
        Equal-width bins on [0, 1] or equal-mass (quantile) bins.
    view : {"top_label", "positive", "classwise"}
        Which scores are calibrated; classwise averages over classes.
    sample_weight : array-like of shape (n,), optional
        Row weights: n_b / n becomes the bin's share of the total weight and the
        bin's means weighted means (see the module docstring).

    Returns
    -------
    float
        In [0, 1].

    Examples
    --------
    Integer weights give what the repeated rows give:

    >>> y, p, w = [0, 1, 1, 0], [0.2, 0.9, 0.6, 0.4], [2, 1, 3, 1]
    >>> a = expected_calibration_error(y, p, sample_weight=w, n_bins=5)
    >>> b = expected_calibration_error([0, 0, 1, 1, 1, 1, 0], [.2, .2, .9, .6, .6, .6, .4],
    ...                                n_bins=5)
    >>> bool(abs(a - b) < 1e-12)
    True
    """
    labels, proba, weights = _checked(y_true, y_prob, sample_weight)
    n_bins = check_positive_int(n_bins, "n_bins")
    binning = _check_binning(binning)
    problems = score_outcome(labels, proba, view)
    values = [
        float(np.dot(*_bin_gaps(scores, outcomes, n_bins, binning, weights)))
        for scores, outcomes in zip(problems.scores, problems.outcomes, strict=True)
    ]
    return float(np.mean(values))


def ece_by_bin_count(
    y_true: ArrayLike,
    y_prob: ArrayLike,
    bin_counts: Sequence[int],
    *,
    binning: Binning = "equal_width",
    view: View = "top_label",
    sample_weight: ArrayLike | None = None,
) -> NDArray[np.float64]:
    """:func:`expected_calibration_error` for each number of bins in ``bin_counts``.

    One sort serves every bin count: with scores sorted and R the running sum of the
    (weighted) residuals w (score - outcome), a bin's gap times its share is
    |R(last) - R(first)| / sum w, so each bin count costs O(bins log n).
    :func:`ece_by_bin_count_per_binning` gives several binnings from the same sort.

    Returns
    -------
    ndarray of shape (len(bin_counts),)
    """
    return ece_by_bin_count_per_binning(y_true, y_prob, bin_counts, binnings=(binning,),
                                        view=view, sample_weight=sample_weight)[binning]


def ece_by_bin_count_per_binning(
    y_true: ArrayLike,
    y_prob: ArrayLike,
    bin_counts: Sequence[int],
    *,
    binnings: Sequence[Binning] = ("equal_width", "equal_mass"),
    view: View = "top_label",
    sample_weight: ArrayLike | None = None,
) -> dict[Binning, NDArray[np.float64]]:
    """:func:`ece_by_bin_count` of each binning in ``binnings``, validating the inputs and
    sorting each problem's scores once for all of them (the values are those of
    :func:`ece_by_bin_count` called once per binning, to the last digit).

    Returns
    -------
    dict
        Binning -> ndarray of shape (len(bin_counts),).
    """
    labels, proba, weights = _checked(y_true, y_prob, sample_weight)
    counts = [check_positive_int(count, "n_bins") for count in bin_counts]
    chosen = [_check_binning(binning) for binning in binnings]
    problems = score_outcome(labels, proba, view)
    values = {binning: np.zeros(len(counts)) for binning in chosen}
    for scores, outcomes in zip(problems.scores, problems.outcomes, strict=True):
        order, sorted_scores = stable_sort(scores)  # the measures' sort, reused
        residuals = sorted_scores - outcomes[order]
        sorted_weights = None if weights is None else weights[order]
        total = float(scores.size if weights is None else weights.sum())
        if sorted_weights is not None:
            residuals = residuals * sorted_weights
        running = np.concatenate([[0.0], np.cumsum(residuals)])
        for binning in chosen:
            for position, n_bins in enumerate(counts):
                edges = (equal_width_edges(n_bins) if binning != "equal_mass" else
                         sorted_equal_mass_edges(sorted_scores, n_bins) if sorted_weights is None
                         else sorted_weighted_equal_mass_edges(sorted_scores, sorted_weights,
                                                               n_bins))
                # bins are right-closed: a bin ends after the last score <= its right edge
                ends = np.searchsorted(sorted_scores, edges[1:-1], side="right")
                bounds = np.concatenate([[0], ends, [scores.size]])
                values[binning][position] += np.abs(np.diff(running[bounds])).sum() / total
    return {binning: curve / problems.scores.shape[0] for binning, curve in values.items()}


def maximum_calibration_error(
    y_true: ArrayLike,
    y_prob: ArrayLike,
    *,
    n_bins: int = 15,
    binning: Binning = "equal_width",
    view: View = "top_label",
    sample_weight: ArrayLike | None = None,
) -> float:
    """Largest |conf_b - acc_b| over non-empty bins (averaged over classes when classwise).

    Parameters are those of :func:`expected_calibration_error`; with ``sample_weight``
    the gaps are those of weighted means (a bin of zero weight is empty).
    """
    labels, proba, weights = _checked(y_true, y_prob, sample_weight)
    n_bins = check_positive_int(n_bins, "n_bins")
    binning = _check_binning(binning)
    problems = score_outcome(labels, proba, view)
    values = [
        float(_bin_gaps(scores, outcomes, n_bins, binning, weights)[1].max())
        for scores, outcomes in zip(problems.scores, problems.outcomes, strict=True)
    ]
    return float(np.mean(values))


def classwise_expected_calibration_error(
    y_true: ArrayLike, y_prob: ArrayLike, *, n_bins: int = 15, binning: Binning = "equal_width",
    sample_weight: ArrayLike | None = None,
) -> float:
    """Mean over classes k of the ECE of P(class k) against 1[y = k]."""
    return expected_calibration_error(
        y_true, y_prob, n_bins=n_bins, binning=binning, view="classwise",
        sample_weight=sample_weight)


def brier_score(y_true: ArrayLike, y_prob: ArrayLike, *,
                sample_weight: ArrayLike | None = None) -> float:
    """Multiclass Brier score, (1/n) sum_i sum_k (p_ik - 1[y_i = k])^2, in [0, 2].

    This sums over classes, as Wagstaff & Dietterich 2023 do; for a
    binary problem it is twice :func:`binary_brier_score`. With ``sample_weight``, the
    weighted mean over rows.
    """
    labels, proba, weights = _checked(y_true, y_prob, sample_weight)
    return _brier(labels, proba, weights)


def _brier(labels: NDArray[np.intp], proba: NDArray[np.float64],
           weights: NDArray[np.float64] | None = None) -> float:
    squared = np.square(proba).sum(axis=1)
    squared -= 2.0 * proba[np.arange(labels.size), labels]
    return _mean(squared + 1.0, weights)


def binary_brier_score(y_true: ArrayLike, y_prob: ArrayLike, *,
                       sample_weight: ArrayLike | None = None) -> float:
    """Brier score of the positive class, (1/n) sum_i (p_i1 - 1[y_i = 1])^2 (binary only;
    weighted mean with ``sample_weight``)."""
    labels, proba, weights = _checked(y_true, y_prob, sample_weight)
    if proba.shape[1] != 2:
        raise CalibrationInputError(
            f"binary_brier_score needs a binary problem; this one has {proba.shape[1]} classes."
        )
    return _mean(np.square(proba[:, 1] - (labels == 1)), weights)


def negative_log_likelihood(y_true: ArrayLike, y_prob: ArrayLike, *,
                            sample_weight: ArrayLike | None = None) -> float:
    """Mean negative log probability of the true class, probabilities clipped at 1e-12
    (weighted mean with ``sample_weight``)."""
    labels, proba, weights = _checked(y_true, y_prob, sample_weight)
    true_class = np.clip(proba[np.arange(labels.size), labels], NLL_CLIP, 1.0)
    return -_mean(np.log(true_class), weights)


def accuracy(y_true: ArrayLike, y_prob: ArrayLike, *,
             sample_weight: ArrayLike | None = None) -> float:
    """Fraction of rows (of the total weight, with ``sample_weight``) whose most probable
    class is the true class."""
    labels, proba, weights = _checked(y_true, y_prob, sample_weight)
    return _mean((top_class(proba)[0] == labels).astype(np.float64), weights)


# The consistent measures of Błasiok et al. 2023 live in calibcore.metrics.consistent; they are
# re-exported here so every global measure is reachable from calibcore.metrics.
from calibcore.metrics.consistent import (  # noqa: E402
    binned_ece_plus_width,
    interval_calibration_error,
    laplace_kernel_calibration_error,
    smooth_calibration_error,
    smooth_ece,
)
