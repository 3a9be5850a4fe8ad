"""Consistent calibration measures of Błasiok et al. 2023, "A Unifying Theory of Distance
from Calibration".

Public measures take ``(y_true, y_prob)`` like :mod:`calibcore.metrics` and a
``view`` (top-label by default; the classwise view averages over classes):

- :func:`laplace_kernel_calibration_error` (kCE, §8), exact in O(n log n);
- :func:`smooth_calibration_error` (smCE, §7), exact path-LP solver;
- :func:`interval_calibration_error` (surrogate intCE, §6.2), exact expectation
  over the random shift, so deterministic;
- :func:`smooth_ece` (Błasiok & Nakkiran's smooth ECE, as relplot 1.0.3);
- :func:`binned_ece_plus_width` (binnedECE + bin width, eq. 5: an upper bound on
  the distance to calibration, not a consistent measure).

Each measure has a ``*_rows`` kernel taking sorted scores, residuals and a
``(b, n)`` matrix of row weights, so bootstrap resamples (count weights) are
evaluated as rows of one array operation; the public function is the kernel
with a single row of ones, or of the ``sample_weight`` given: each measure is then
that of the weighted empirical distribution (every sum over rows weighted, every
1/n a 1/sum of weights), which integer weights make exactly the measure of the rows
repeated by their weights (kCE, intCE, smCE and the smooth ECE alike, the smooth
ECE's fixed-point bandwidth included).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import numpy as np
from numpy.typing import ArrayLike, NDArray

from calibcore._validation import check_in_range, check_positive_int, check_predictions
from calibcore.data.views import View, score_outcome
from calibcore.data.weights import check_sample_weight
from calibcore.metrics._interval_merge import shifted_window_sums
from calibcore.metrics._sorting import sort_order
from calibcore.metrics.binning import (
    Binning,
    assign_bins,
    equal_width_edges,
    sorted_weighted_equal_mass_edges,
)
from calibcore.metrics.kernel_smoothing import smooth_ece_rows
from calibcore.metrics.smooth_calibration import smooth_calibration_rows

__all__ = [
    "INTERVAL_PRECISION",
    "RowKernel",
    "Vector",
    "ViewProblem",
    "binned_ece_plus_width",
    "binned_rows",
    "interval_calibration_error",
    "interval_rows",
    "laplace_kernel_calibration_error",
    "laplace_kernel_rows",
    "shifted_interval_rows",
    "smooth_calibration_error",
    "smooth_ece",
    "view_problems",
]

Vector = NDArray[np.float64]
#: A measure on sorted scores, residuals and a (b, n) weight matrix -> (b,) values.
RowKernel = Callable[[Vector, Vector, Vector], Vector]

#: Default precision of the interval calibration error (relplot ``intCE_rand`` eps).
INTERVAL_PRECISION = 1e-3


@dataclass(frozen=True)
class ViewProblem:
    """One binary problem of a view, its rows sorted by score unless told otherwise.

    Attributes
    ----------
    label : str
        Which problem ("top label", "class 2", ...).
    scores : ndarray of shape (n,)
        Scores v_i (ascending when sorted).
    residuals : ndarray of shape (n,)
        v_i - o_i (score minus outcome), same order.
    order : ndarray of shape (n,) or None
        Original row of each position (to reorder row weights); None if unsorted.
    """

    label: str
    scores: NDArray[np.float64]
    residuals: NDArray[np.float64]
    order: NDArray[np.intp] | None

    def reorder(self, weights: NDArray[np.float64]) -> NDArray[np.float64]:
        """Columns of a (b, n) weight matrix in this problem's row order (C-ordered:
        ``weights[:, order]`` would be Fortran-ordered, and every ravel and compiled kernel
        after it would copy it again)."""
        return weights if self.order is None else np.take(weights, self.order, axis=1)


def view_problems(
    labels: NDArray[np.intp], proba: NDArray[np.float64], view: View, *, sort: bool = True
) -> list[ViewProblem]:
    """The view's binary problems, scores sorted ascending unless ``sort=False``.

    Inputs are already validated. Binned measures do not need the sort.
    """
    problems = score_outcome(labels, proba, view)
    out = []
    for scores, outcomes, name in zip(
        problems.scores, problems.outcomes, problems.labels, strict=True
    ):
        if not sort:
            out.append(ViewProblem(name, scores, scores - outcomes, None))
            continue
        order = sort_order(scores)
        sorted_scores = scores[order]  # gathered once (1.5M rows: 10 ms a gather)
        out.append(ViewProblem(name, sorted_scores, sorted_scores - outcomes[order], order))
    return out


def laplace_kernel_rows(
    scores: NDArray[np.float64], residuals: NDArray[np.float64], weights: NDArray[np.float64]
) -> NDArray[np.float64]:
    """kCE for each row of weights: sqrt(sum_ij a_i a_j exp(-|v_i - v_j|)) / sum_i w_i.

    With a_i = w_i r_i and scores sorted, exp(-|v_i - v_j|) = exp(c - v_i) exp(v_j - c)
    for j <= i, so the double sum is sum_i a_i^2 + 2 sum_i a_i exp(c - v_i) A_i with
    A_i = sum_{j<i} a_j exp(v_j - c): a running sum, O(n) after sorting. The centre
    c keeps both factors within [e^-1/2, e^1/2] for scores in [0, 1].
    """
    centre = 0.5 * (scores[0] + scores[-1])
    weighted = weights * residuals
    rising = weighted * np.exp(scores - centre)
    # the running sum before each row, written in place behind a 0 (the first n - 1
    # entries of the full running sum, without a copy of it)
    earlier = np.empty_like(rising)
    earlier[:, 0] = 0.0
    np.cumsum(rising[:, :-1], axis=1, out=earlier[:, 1:])
    falling = weighted * np.exp(centre - scores)
    double_sum = np.einsum("bi,bi->b", weighted, weighted) + 2.0 * np.einsum(
        "bi,bi->b", falling, earlier
    )
    return np.sqrt(np.maximum(double_sum, 0.0)) / weights.sum(axis=1)


def shifted_interval_rows(
    scores: NDArray[np.float64],
    residuals: NDArray[np.float64],
    weights: NDArray[np.float64],
    width: float,
) -> NDArray[np.float64]:
    """E_u[binnedECE] over bins [(k - u) w, (k + 1 - u) w), u ~ U[0, 1) (Definition 6.5).

    Substituting x = (k - u) w turns the average over shifts into one integral,
    E_u = (1 / (w N)) int |P(x + w) - P(x)| dx with P(x) = sum_{v_i < x} w_i r_i,
    a step function. The integrand is constant between consecutive points of
    {v_i} and {v_i - w}; merging the two sorted lists gives it exactly.
    """
    # Walking up the merged points, P(x + w) gains a_j at v_j - w and P(x) gains a_i at v_i:
    # one compiled pass (the merge of the two sorted runs, the running sum, the gaps and
    # the sum of their products, without an array of either)
    weighted = np.ascontiguousarray(weights * residuals)
    totals = shifted_window_sums(np.ascontiguousarray(scores, dtype=np.float64), weighted,
                                 float(width))
    return totals / (width * weights.sum(axis=1))


def interval_rows(
    scores: NDArray[np.float64],
    residuals: NDArray[np.float64],
    weights: NDArray[np.float64],
    precision: float = INTERVAL_PRECISION,
) -> NDArray[np.float64]:
    """Surrogate intCE per row: min over widths w = 2^-k > precision of E_u[binnedECE] + w.

    Widths are tried from the smallest up; once a width exceeds the current
    minimum of every row it cannot win (E_u >= 0) and larger ones are skipped.
    """
    widths = []
    width = 1.0
    while width > precision:
        widths.append(width)
        width /= 2.0
    best = np.full(weights.shape[0], np.inf)
    for width in reversed(widths):
        if width >= best.max():
            break
        best = np.minimum(best, shifted_interval_rows(scores, residuals, weights, width) + width)
    return best


def binned_rows(
    scores: NDArray[np.float64],
    residuals: NDArray[np.float64],
    weights: NDArray[np.float64],
    n_bins: int,
    binning: Binning,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Binned ECE and MCE per row of weights, as :mod:`calibcore.metrics` bins.

    Equal-mass edges are recomputed from each row's weights (for counts, its scores
    repeated by their counts), so a bootstrap resample is binned like data.
    """
    if binning == "equal_width":
        return _binned_with_edges(scores, residuals, weights, equal_width_edges(n_bins))
    order = np.argsort(scores, kind="stable")  # once for every row of weights
    pairs = [
        _binned_with_edges(scores, residuals, row[None, :],
                           sorted_weighted_equal_mass_edges(scores[order], row[order], n_bins))
        for row in weights
    ]
    return np.concatenate([ece for ece, _ in pairs]), np.concatenate([mce for _, mce in pairs])


def _binned_with_edges(
    scores: NDArray[np.float64],
    residuals: NDArray[np.float64],
    weights: NDArray[np.float64],
    edges: NDArray[np.float64],
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Binned ECE and MCE per row with the same bin edges for every row."""
    rows, n_bins = weights.shape[0], edges.size - 1
    index = (assign_bins(scores, edges) + (np.arange(rows) * n_bins)[:, None]).ravel()
    counts = np.bincount(index, weights=weights.ravel(), minlength=rows * n_bins)
    sums = np.bincount(index, weights=(weights * residuals).ravel(), minlength=rows * n_bins)
    counts, gaps = counts.reshape(rows, n_bins), np.abs(sums).reshape(rows, n_bins)
    ece = gaps.sum(axis=1) / counts.sum(axis=1)
    filled = counts > 0
    mce = np.max(np.divide(gaps, counts, out=np.zeros_like(gaps), where=filled), axis=1)
    return ece, mce


def _mean_over_problems(
    y_true: ArrayLike, y_prob: ArrayLike, view: View, kernel: RowKernel,
    sample_weight: ArrayLike | None = None,
) -> float:
    """Validate, split into the view's problems, apply ``kernel`` to the data (rows
    weighted by ``sample_weight``), average."""
    labels, proba = check_predictions(y_true, y_prob)
    weights = check_sample_weight(sample_weight, labels.size)
    row = np.ones((1, labels.size)) if weights is None else weights[None, :]
    values = [
        # a row of ones is the same in any order: no gather of it
        float(kernel(problem.scores, problem.residuals,
                     row if weights is None else problem.reorder(row))[0])
        for problem in view_problems(labels, proba, view)
    ]
    return float(np.mean(values))


def laplace_kernel_calibration_error(
    y_true: ArrayLike, y_prob: ArrayLike, *, view: View = "top_label",
    sample_weight: ArrayLike | None = None,
) -> float:
    """Laplace kernel calibration error, computed exactly (Błasiok et al. 2023, §8, eq. 28).

    kCE = sqrt((1/n^2) sum_{i,j} r_i r_j exp(-|v_i - v_j|)) with r = v - outcome.
    The full double sum is evaluated in O(n log n) (sort, then running sums of
    r_j exp(v_j)); no pairs are sampled, unlike relplot's
    ``laplace_calibration_approx``.

    Parameters
    ----------
    y_true : array-like of shape (n,)
        Class indices 0..K-1.
    y_prob : array-like of shape (n,) or (n, K)
        P(class 1) for a binary problem, or class probabilities.
    view : {"top_label", "positive", "classwise"}
        Which scores are calibrated; classwise averages over classes.
    sample_weight : array-like of shape (n,), optional
        Row weights: sqrt(sum_ij w_i w_j r_i r_j exp(-|v_i - v_j|)) / sum_i w_i.

    Returns
    -------
    float
        In [0, 1]; 0 when every residual is 0.
    """
    return _mean_over_problems(y_true, y_prob, view, laplace_kernel_rows, sample_weight)


def smooth_calibration_error(
    y_true: ArrayLike, y_prob: ArrayLike, *, view: View = "top_label",
    sample_weight: ArrayLike | None = None,
) -> float:
    """Smooth calibration error smCE (Błasiok et al. 2023, §7, Theorem 7.14), exactly.

    smCE = max over w 1-Lipschitz with |w| <= 1 of (1/n) sum_i w(v_i) (v_i - o_i).
    Solved through its LP dual, a convex path problem, by a slope-clipping
    dynamic program with two heaps in O(n log n) (see
    :mod:`calibcore.metrics.smooth_calibration`); about 0.3 s per 100,000 rows.

    Parameters are those of :func:`laplace_kernel_calibration_error`.

    Returns
    -------
    float
        In [0, 1].
    """
    return _mean_over_problems(y_true, y_prob, view, smooth_calibration_rows, sample_weight)


def interval_calibration_error(
    y_true: ArrayLike,
    y_prob: ArrayLike,
    *,
    precision: float = INTERVAL_PRECISION,
    view: View = "top_label",
    sample_weight: ArrayLike | None = None,
) -> float:
    """Surrogate interval calibration error (Błasiok et al. 2023, Definition 6.10), deterministic.

    min over widths w = 1, 1/2, 1/4, ... (> ``precision``) of
    E_u[binnedECE with bins [(k - u) w, (k + 1 - u) w)] + w, the expectation over
    the uniform shift u taken exactly (an integral of the cumulative residual),
    so no random numbers are drawn. relplot's ``intCE_rand`` estimates the same
    expectations with 100 random shifts per width.

    Parameters
    ----------
    y_true, y_prob, view
        As in :func:`laplace_kernel_calibration_error`.
    precision : float, default=1e-3
        Smallest bin width tried is the last power of 1/2 above it.

    Returns
    -------
    float
        In [0, 2].
    """
    precision = check_in_range(precision, "precision", low=0, high=1, inclusive=False)
    return _mean_over_problems(
        y_true, y_prob, view, partial(interval_rows, precision=precision), sample_weight)


def smooth_ece(
    y_true: ArrayLike,
    y_prob: ArrayLike,
    *,
    bandwidth: float | None = None,
    view: View = "top_label",
    sample_weight: ArrayLike | None = None,
) -> float:
    """Smooth ECE with a reflected Gaussian kernel (Błasiok & Nakkiran 2023; relplot 1.0.3).

    Residuals and scores are kernel-smoothed on a grid; smECE_sigma integrates
    the absolute smoothed residual against the smoothed score density, and the
    bandwidth is the fixed point sigma = smECE_sigma (relplot's ``smECE``).
    See :mod:`calibcore.metrics.kernel_smoothing`; values match relplot to rounding.

    Parameters
    ----------
    y_true, y_prob, view
        As in :func:`laplace_kernel_calibration_error`.
    bandwidth : float, optional
        Fixed kernel bandwidth (relplot's ``smECE_sigma``); the fixed point if None.

    Returns
    -------
    float
        In [0, 1].
    """
    if bandwidth is not None:
        bandwidth = check_in_range(bandwidth, "bandwidth", low=0, high=10, inclusive=False)

    def kernel(
        scores: NDArray[np.float64], residuals: NDArray[np.float64], weights: NDArray[np.float64]
    ) -> NDArray[np.float64]:
        return smooth_ece_rows(scores, residuals, weights, bandwidth)[0]

    return _mean_over_problems(y_true, y_prob, view, kernel, sample_weight)


def binned_ece_plus_width(
    y_true: ArrayLike, y_prob: ArrayLike, *, n_bins: int = 15, view: View = "top_label",
    sample_weight: ArrayLike | None = None,
) -> float:
    """binnedECE with ``n_bins`` equal-width bins plus the bin width 1 / n_bins.

    Błasiok et al. 2023, eq. 5. Adding the width turns the binned ECE into an upper bound on
    the distance to calibration; it is not a consistent measure (it jumps with the bins).

    Parameters
    ----------
    y_true, y_prob, view
        As in :func:`laplace_kernel_calibration_error`.
    n_bins : int, default=15

    Returns
    -------
    float
    """
    n_bins = check_positive_int(n_bins, "n_bins")

    def kernel(
        scores: NDArray[np.float64], residuals: NDArray[np.float64], weights: NDArray[np.float64]
    ) -> NDArray[np.float64]:
        return binned_rows(scores, residuals, weights, n_bins, "equal_width")[0]

    return _mean_over_problems(y_true, y_prob, view, kernel, sample_weight) + 1.0 / n_bins
