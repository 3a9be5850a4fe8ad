"""Binning recalibrators: histogram binning and scaling-binning.

Both map each class probability through a step function over equal-mass bins
(one-vs-rest; a binary problem fits one map, for P(class 1)) and renormalize
the rows of multiclass outputs.

References
----------
Zadrozny, B. and Elkan, C. (2001). Obtaining calibrated probability estimates
from decision trees and naive Bayesian classifiers. ICML. (Histogram binning.)

Kumar, A., Liang, P. and Ma, T. (2019). Verified uncertainty calibration.
NeurIPS. (Scaling-binning, their Algorithm 1.)
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray
from scipy.special import expit

from calibcore._progress import Heartbeat
from calibcore._validation import check_in_range, check_positive_int
from calibcore.metrics.binning import assign_bins
from calibcore.recalibration._base import (
    Recalibrator,
    combine_one_vs_rest,
    one_vs_rest_columns,
    register,
)
from calibcore.recalibration.scaling import fit_sigmoid, logit, platt_targets

__all__ = ["HistogramBinning", "ScalingBinning", "equal_mass_bins"]


def equal_mass_bins(scores: NDArray[np.float64], n_bins: int,
                    weights: NDArray[np.float64] | None = None) -> NDArray[np.float64]:
    """Edges of at most ``n_bins`` equal-mass bins of ``scores``, none of them empty.

    The sorted scores are cut into ``n_bins`` groups of (almost) equal size, as
    ``numpy.array_split`` does; each inner edge lies halfway between the last
    score of one group and the first of the next. Ties can make two groups share
    an edge or leave a bin without scores; such bins are merged into their
    neighbour, so every bin of the result holds at least one score.

    Parameters
    ----------
    scores : ndarray of shape (n,)
        Values in [0, 1].
    n_bins : int
        Requested number of bins (fewer result when n < n_bins or with ties).
    weights : ndarray of shape (n,), optional
        Row weights: the groups split the total weight instead of the rows, as if each
        row were repeated by its (integer) weight; rows of zero weight are left out.

    Returns
    -------
    ndarray of shape (m + 1,)
        Increasing edges, the first 0 and the last 1; the bins are right-closed,
        ``(e_{b-1}, e_b]``, as in :func:`calibcore.metrics.assign_bins`.
    """
    if weights is not None:
        order = np.argsort(scores, kind="stable")
        kept = order[weights[order] > 0]
        ordered = scores[kept]
        before, after = _weighted_boundaries(weights[kept], n_bins)
        inner = np.unique((ordered[before] + ordered[after]) / 2.0)
    else:
        ordered = np.sort(scores)
        group_sizes = [len(g) for g in np.array_split(ordered, min(n_bins, ordered.size))]
        boundaries = np.cumsum(group_sizes)[:-1]
        inner = np.unique((ordered[boundaries - 1] + ordered[boundaries]) / 2.0)
    edges = np.concatenate([[0.0], inner[(inner > 0.0) & (inner < 1.0)], [1.0]])
    # rows at or below each edge, counted on the sorted scores (bins are right-closed)
    counts = np.diff(np.searchsorted(ordered, edges[1:], side="right"), prepend=0)
    filled = np.flatnonzero(counts > 0)
    # Keep the left edge of every non-empty bin but the first: an empty bin
    # then joins the non-empty bin to its right (or, at the top, to its left).
    return np.concatenate([[0.0], edges[filled[1:]], [1.0]])


def _weighted_boundaries(weights: NDArray[np.float64], n_bins: int
                         ) -> tuple[NDArray[np.intp], NDArray[np.intp]]:
    """The rows (positions among the sorted rows of positive ``weights``) on either side of
    each inner group boundary when the total weight is cut as ``numpy.array_split`` cuts
    the rows repeated by their (integer) weights; other weights cut it at equal shares."""
    cumulative = np.cumsum(weights)
    total = float(cumulative[-1])
    if np.array_equal(weights, np.round(weights)):
        groups = min(n_bins, int(total))
        size, extra = divmod(int(total), groups)
        virtual = np.cumsum([size + 1] * extra + [size] * (groups - extra))[:-1]
        # the repeated row at virtual position v is the row whose cumulative weight passes v
        before = np.searchsorted(cumulative, virtual - 1, side="right")
        after = np.searchsorted(cumulative, virtual, side="right")
        return before, after
    groups = min(n_bins, weights.size)
    before = np.searchsorted(cumulative, total * np.arange(1, groups) / groups, side="left")
    before = np.minimum(before, weights.size - 1)
    return before, np.minimum(before + 1, weights.size - 1)


def bin_means(
    scores: NDArray[np.float64], values: NDArray[np.float64], edges: NDArray[np.float64],
    weights: NDArray[np.float64] | None = None,
) -> NDArray[np.float64]:
    """Mean of ``values`` over the rows whose score falls in each bin (bins non-empty;
    weighted means with row ``weights``)."""
    index = assign_bins(scores, edges)
    size = edges.size - 1
    if weights is None:
        return (np.bincount(index, weights=values, minlength=size)
                / np.bincount(index, minlength=size))
    mass = np.bincount(index, weights=weights, minlength=size)
    sums = np.bincount(index, weights=weights * values, minlength=size)
    plain = np.bincount(index, weights=values, minlength=size) / np.maximum(
        np.bincount(index, minlength=size), 1)
    return np.divide(sums, mass, out=plain, where=mass > 0)


@register
class HistogramBinning(Recalibrator):
    """Histogram binning: the observed class frequency in equal-mass bins of p_k.

    For each class k (only class 1 when binary) the calibration rows are sorted
    by p_k and cut into ``n_bins`` bins of equal size (see
    :func:`equal_mass_bins`); a new row gets the frequency of class k in its bin
    (Zadrozny and Elkan 2001), smoothed by a Beta prior: (hits + s m) / (rows + s),
    with m = (N_k + 1) / (N + 2) the Laplace-smoothed frequency of class k over all
    calibration rows and s = ``prior_strength`` pseudo-rows. A bin that held no row
    of class k thus gives it a small probability, not 0. Multiclass rows are then
    renormalized (one-vs-rest).

    Parameters
    ----------
    n_bins : int, default=10
        Bins per class. Fewer are used with fewer distinct scores.
    prior_strength : float, default=1.0
        Pseudo-rows of the Beta prior per bin (0: raw frequencies).

    Attributes
    ----------
    bin_edges_ : list of ndarray
        Edges (0 .. 1, right-closed bins) of each fitted problem.
    bin_values_ : list of ndarray
        Calibrated probability of each bin.
    """

    method = "histogram"
    display_name = "Histogram binning"
    fitted_attributes = ("bin_edges_", "bin_values_")
    supports_weights = True

    def __init__(self, *, n_bins: int = 10, prior_strength: float = 1.0) -> None:
        self.n_bins = n_bins
        self.prior_strength = prior_strength

    def _fit(
        self,
        proba: NDArray[np.float64],
        labels: NDArray[np.intp],
        features: NDArray[np.float64] | None,
        heartbeat: Heartbeat,
        weights: NDArray[np.float64] | None = None,
    ) -> None:
        n_bins = check_positive_int(self.n_bins, "n_bins")
        strength = check_in_range(self.prior_strength, "prior_strength", low=0.0, high=1e6)
        self.bin_edges_: list[NDArray[np.float64]] = []
        self.bin_values_: list[NDArray[np.float64]] = []
        rows = np.ones(labels.size) if weights is None else weights
        for k in one_vs_rest_columns(proba.shape[1]):
            edges = equal_mass_bins(proba[:, k], n_bins, weights)
            is_k = (labels == k).astype(np.float64)
            # Beta prior centred on the Laplace-smoothed overall frequency of class k
            prior = (np.dot(rows, is_k) + 1.0) / (rows.sum() + 2.0)
            index = assign_bins(proba[:, k], edges)
            hits = np.bincount(index, weights=rows * is_k, minlength=edges.size - 1)
            sizes = np.bincount(index, weights=rows, minlength=edges.size - 1)
            self.bin_edges_.append(edges)
            self.bin_values_.append((hits + strength * prior) / (sizes + strength))

    def _predict(
        self,
        proba: NDArray[np.float64],
        features: NDArray[np.float64] | None,
        heartbeat: Heartbeat,
    ) -> NDArray[np.float64]:
        columns = one_vs_rest_columns(proba.shape[1])
        mapped = [
            values[assign_bins(proba[:, k], edges)]
            for k, edges, values in zip(columns, self.bin_edges_, self.bin_values_, strict=True)
        ]
        return combine_one_vs_rest(proba, mapped)


@register
class ScalingBinning(Recalibrator):
    """Scaling-binning (Kumar, Liang and Ma 2019): Platt scaling, then binning.

    For each class k (only class 1 when binary) a sigmoid g(p) =
    sigmoid(a logit p_k + b) is fitted with Platt's smoothed targets; the
    scaled calibration scores g(p_k) are cut into ``n_bins`` equal-mass bins
    and a new row gets the mean *scaled* score of its bin (not the label
    frequency, which is what distinguishes it from histogram binning and gives
    its lower variance). Multiclass rows are renormalized.

    As in the authors' reference library (``PlattBinnerMarginalCalibrator``),
    the scaling, the bin edges and the bin means all use every calibration row;
    the paper's Algorithm 1 splits them across three subsets, which only
    matters for its guarantee on the ECE estimate.

    Parameters
    ----------
    n_bins : int, default=10
        Bins per class.

    Attributes
    ----------
    slopes_, intercepts_ : ndarray of shape (m,)
        Sigmoid of each fitted problem (m = 1 when binary, K otherwise).
    bin_edges_ : list of ndarray
        Edges (0 .. 1) of the bins over the scaled scores.
    bin_values_ : list of ndarray
        Mean scaled score of each bin.
    """

    method = "scaling_binning"
    display_name = "Scaling-binning"
    fitted_attributes = ("slopes_", "intercepts_", "bin_edges_", "bin_values_")
    supports_weights = True

    def __init__(self, *, n_bins: int = 10) -> None:
        self.n_bins = n_bins

    def _fit(
        self,
        proba: NDArray[np.float64],
        labels: NDArray[np.intp],
        features: NDArray[np.float64] | None,
        heartbeat: Heartbeat,
        weights: NDArray[np.float64] | None = None,
    ) -> None:
        n_bins = check_positive_int(self.n_bins, "n_bins")
        columns = one_vs_rest_columns(proba.shape[1])
        fits = [fit_sigmoid(logit(proba[:, k]), platt_targets(labels == k, weights), weights)
                for k in columns]
        self.slopes_ = np.array([slope for slope, _ in fits])
        self.intercepts_ = np.array([intercept for _, intercept in fits])
        self.bin_edges_: list[NDArray[np.float64]] = []
        self.bin_values_: list[NDArray[np.float64]] = []
        for scaled in self._scaled(proba, columns):
            edges = equal_mass_bins(scaled, n_bins, weights)
            self.bin_edges_.append(edges)
            self.bin_values_.append(bin_means(scaled, scaled, edges, weights))

    def _scaled(
        self, proba: NDArray[np.float64], columns: list[int]
    ) -> list[NDArray[np.float64]]:
        return [
            expit(slope * logit(proba[:, k]) + intercept)
            for k, slope, intercept in zip(columns, self.slopes_, self.intercepts_, strict=True)
        ]

    def _predict(
        self,
        proba: NDArray[np.float64],
        features: NDArray[np.float64] | None,
        heartbeat: Heartbeat,
    ) -> NDArray[np.float64]:
        columns = one_vs_rest_columns(proba.shape[1])
        mapped = [
            values[assign_bins(scaled, edges)]
            for scaled, edges, values in zip(
                self._scaled(proba, columns), self.bin_edges_, self.bin_values_, strict=True
            )
        ]
        return combine_one_vs_rest(proba, mapped)
