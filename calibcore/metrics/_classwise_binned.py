"""Binned ECE and MCE of every class's problem at once, for a block of row weights.

The classwise problems of K classes are K binary problems over the same rows: class
k's score is P(class k) and its residual ``r_ik = p_ik - 1[y_i = k]``. Evaluated one
by one, each problem costs a pass over the (b, n) weights per class, O(b n K) in
Python-level loops. Here, for each class, the bin most of its scores fall in (with
many classes, the first bin [0, 1/M]) is the *dense* bin; only the other entries of
the (n, K) matrix (typically one or two per row) are summed per bin through one
sparse product, and the dense bin gets what remains of the class's total::

    S[b, k, d_k] = sum_i w_bi r_ik  -  sum_{j != d_k} S[b, k, j]

with the totals ``W @ R`` from one matrix product. Every binned ECE is
``sum_j |S[b, k, j]| / sum_i w_bi`` and MCE the largest ``|S| / count`` over filled
bins: the same as :func:`calibcore.metrics.consistent.binned_rows` per class, up to
the order of floating-point summation (counts are sums of integers and exact).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray
from scipy import sparse

from calibcore.metrics.binning import assign_bins, equal_width_edges


class ClasswiseBins:
    """Equal-width bins of K classwise problems, ready to sum a block of row weights.

    Parameters
    ----------
    scores : sequence of K ndarrays of shape (n,)
        P(class k) of each row.
    residuals : sequence of K ndarrays of shape (n,)
        P(class k) - 1[y = k].
    n_bins : int
    """

    def __init__(self, scores: Sequence[NDArray[np.float64]],
                 residuals: Sequence[NDArray[np.float64]], n_bins: int) -> None:
        n_classes, n_rows = len(scores), scores[0].size
        edges = equal_width_edges(n_bins)
        self.dense = np.empty(n_classes, dtype=np.intp)
        self._residuals_t = np.empty((n_rows, n_classes))  # (n, K), for one product
        # each row's entries outside its classes' dense bins, row by row and class by
        # class within a row: the compressed rows themselves, built without a sort
        outside = np.empty((n_rows, n_classes), dtype=bool)
        columns = np.empty((n_rows, n_classes), dtype=np.int32)
        # class by class: no (K, n) temporaries beside the (n, K) residuals
        for k, (class_scores, class_residuals) in enumerate(zip(scores, residuals,
                                                               strict=True)):
            bins = assign_bins(class_scores, edges)
            self.dense[k] = np.argmax(np.bincount(bins, minlength=n_bins))  # most rows
            np.not_equal(bins, self.dense[k], out=outside[:, k])
            np.add(bins, k * n_bins, out=columns[:, k], casting="unsafe")
            self._residuals_t[:, k] = class_residuals
        index_type = np.int32 if outside.size < np.iinfo(np.int32).max else np.int64
        indptr = np.zeros(n_rows + 1, dtype=index_type)
        np.cumsum(outside.sum(axis=1), out=indptr[1:])
        indices = columns[outside].astype(index_type, copy=False)
        shape = (n_rows, n_classes * n_bins)
        self._sums = sparse.csr_matrix((self._residuals_t[outside], indices, indptr),
                                       shape=shape)
        self._counts = sparse.csr_matrix((np.ones(indices.size), indices, indptr), shape=shape)
        self.n_classes, self.n_bins = n_classes, n_bins

    def rows(self, weights: NDArray[np.float64]
             ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Binned ECE and MCE of each class for each row of ``weights``: two (b, K) arrays."""
        b, k, m = weights.shape[0], self.n_classes, self.n_bins
        sums = np.asarray((self._sums.T @ weights.T).T).reshape(b, k, m)
        counts = np.asarray((self._counts.T @ weights.T).T).reshape(b, k, m)
        totals = weights.sum(axis=1)
        classes = np.arange(k)
        dense_sums = weights @ self._residuals_t - sums.sum(axis=2)
        dense_counts = totals[:, None] - counts.sum(axis=2)
        sums[:, classes, self.dense] = dense_sums
        counts[:, classes, self.dense] = dense_counts
        gaps = np.abs(sums)
        ece = gaps.sum(axis=2) / totals[:, None]
        filled = counts > 0
        mce = np.max(np.divide(gaps, counts, out=np.zeros_like(gaps), where=filled), axis=2)
        return ece, mce
