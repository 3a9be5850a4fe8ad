"""Hidden heterogeneity's forests of one neighbourhood, scored: the chunks of trees the
compiled kernels of :mod:`calibcore.heterogeneity._local_forest` grow, prune and score,
driven with progress, and scikit-learn's loop as the reference and the fallback."""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np
from numpy.typing import NDArray

from calibcore._progress import Heartbeat
from calibcore.heterogeneity._bagging import (
    GrownTrees,
    TreeSeeds,
    forest_proba,
    grow_trees,
    oob_correct,
)
from calibcore.heterogeneity._local_forest import bootstrap_counts, score_trees

#: Rows x trees per kernel call: bounds the time between two heartbeats (about 10-50 ms).
_ROW_TREES_PER_CALL = 200_000


@dataclass(frozen=True)
class ForestScores:
    """The seven pruned forests of one neighbourhood, scored on its rows.

    Attributes
    ----------
    oob_correct : ndarray of shape (m,)
        Rows whose OOB prediction is right (OOB accuracy x n), per alpha; with row
        weights, the sum of their weights (weighted OOB accuracy x sum w).
    in_sample : ndarray of shape (m, n, n_classes)
        Each forest's ``predict_proba`` on the rows it was trained on.
    """

    oob_correct: NDArray[np.int64] | NDArray[np.float64]
    in_sample: NDArray[np.float64]


def score_forests(
    features: NDArray[np.float64],
    classes: NDArray[np.intp],
    n_classes: int,
    seeds: TreeSeeds,
    alphas: NDArray[np.float64],
    heartbeat: Heartbeat,
    weights: NDArray[np.float64] | None = None,
) -> ForestScores:
    """OOB accuracy and in-sample probabilities of the forest for each pruning alpha.

    Parameters
    ----------
    features : ndarray of shape (n, d)
        The neighbourhood's rows, in the reference's order (bootstrap draws are
        positions in it).
    classes : ndarray of shape (n,)
        Class indices 0..n_classes-1, every one present.
    seeds : TreeSeeds
    alphas : ndarray of shape (m,)
    heartbeat : Heartbeat
        Called between chunks of trees (it may raise to stop).
    weights : ndarray of shape (n,), optional
        Row weights (non-negative, positive sum): each tree's bootstrap sample draws n
        rows with probability proportional to them, as ``RandomForestClassifier.fit(...,
        sample_weight=weights)`` draws it in scikit-learn 1.9
        (``RandomState(seed).choice(n, n, p=w / sum(w))``, the tree weighing rows by
        their counts), and the OOB accuracy is weighted (scikit-learn's ``oob_score_``
        is not).
    """
    values = np.ascontiguousarray(features, dtype=np.float32)
    n_rows = values.shape[0]
    labels = np.ascontiguousarray(classes, dtype=np.intp)
    if weights is None:
        counts, complete = bootstrap_counts(seeds.raw, n_rows)
        for tree in np.flatnonzero(~complete):  # rare: the stream ran short
            draws = np.random.RandomState(int(seeds.seeds[tree])).randint(0, n_rows, n_rows)
            counts[tree] = np.bincount(draws, minlength=n_rows)
    else:
        counts = weighted_bootstrap_counts(seeds, weights)
    order = np.ascontiguousarray(np.argsort(values.T, axis=1, kind="stable"), dtype=np.intp)
    oob_sums = np.zeros((n_rows, alphas.size, n_classes))
    in_sums = np.zeros((n_rows, alphas.size, n_classes))
    oob_votes = np.zeros(n_rows, dtype=np.int64)
    per_call = max(1, _ROW_TREES_PER_CALL // max(n_rows, 1))
    for first in range(0, counts.shape[0], per_call):
        heartbeat()
        chunk = slice(first, first + per_call)
        if not score_trees(values, labels, n_classes, counts[chunk],
                           seeds.splitter_seeds[chunk], order, alphas, oob_sums, oob_votes,
                           in_sums):  # pragma: no cover - a split the kernel cannot place
            return _score_with_sklearn(values, labels, n_classes, counts, seeds, alphas,
                                       heartbeat, weights)
    oob_votes[oob_votes == 0] = 1  # as scikit-learn: rows never out of bag predict all zeros
    oob = oob_sums / oob_votes[:, None, None]
    right = np.argmax(oob, axis=2) == labels[:, None]
    correct = (np.count_nonzero(right, axis=0) if weights is None
               else weights @ right.astype(np.float64))
    return ForestScores(oob_correct=correct,
                        in_sample=in_sums.transpose(1, 0, 2) / counts.shape[0])


def _score_with_sklearn(
    values: NDArray[np.float32],
    labels: NDArray[np.intp],
    n_classes: int,
    counts: NDArray[np.int32],
    seeds: TreeSeeds,
    alphas: NDArray[np.float64],
    heartbeat: Heartbeat,
    row_weights: NDArray[np.float64] | None = None,
) -> ForestScores:
    """:func:`score_forests` with scikit-learn's tree builder (the slow, safe path)."""
    weights = counts.astype(np.float64)
    trees = grow_trees(values, labels, n_classes, weights, seeds, heartbeat=heartbeat)
    grown, offsets = GrownTrees.concatenate(trees, n_classes)
    leaf_of = grown.pruned_leaves(alphas)
    leaves = np.stack([tree.apply(values) for tree in trees]) + offsets[:, None]
    correct = oob_correct(grown.value, leaf_of, leaves, weights == 0, labels, row_weights)
    in_sample = np.stack([forest_proba(grown.value, leaf_of[:, column], leaves)
                          for column in range(alphas.size)])
    return ForestScores(oob_correct=correct, in_sample=in_sample)


@numba.njit(nogil=True, cache=True)
def _choice_counts(raw: NDArray[np.uint32], cdf: NDArray[np.float64],
                   counts: NDArray[np.int32]) -> None:
    """Add each tree's n draws ``searchsorted(cdf, uniform, side="right")`` to ``counts``,
    the uniforms made from the raw streams as numpy's legacy ``random_sample`` makes them."""
    n_rows = cdf.size
    for tree in range(raw.shape[0]):
        for draw in range(n_rows):
            high = np.float64(raw[tree, 2 * draw] >> np.uint32(5))
            low = np.float64(raw[tree, 2 * draw + 1] >> np.uint32(6))
            uniform = (high * 67108864.0 + low) / 9007199254740992.0
            first, last = 0, n_rows  # the first position whose cdf exceeds the uniform
            while first < last:
                middle = (first + last) >> 1
                if cdf[middle] <= uniform:
                    first = middle + 1
                else:
                    last = middle
            counts[tree, first] += 1


def weighted_bootstrap_counts(seeds: TreeSeeds,
                              weights: NDArray[np.float64]) -> NDArray[np.int32]:
    """Each tree's bootstrap counts, (n_trees, n), drawn as scikit-learn 1.9's forest draws
    them with sample weights: ``RandomState(seed).choice(n, n, replace=True, p=w / sum(w))``.
    Rows of weight 0 are never drawn (always out of bag).

    numpy's legacy ``choice`` searches ``n`` uniforms in the cumulative ``p`` (normalized by
    its last value); each uniform is ``((a >> 5) * 2**26 + (b >> 6)) / 2**53`` from two raw
    32-bit outputs ``a, b``. They are read from the trees' raw streams, all trees at once
    (one ``RandomState`` per tree took 28 ms per neighbourhood of 700 rows, numpy's
    ``searchsorted`` of all trees' uniforms 26 ms for 2,400 rows; this kernel releases the
    GIL); a stream too
    short for some tree falls back to the generator."""
    n_rows = weights.size
    probabilities = weights / np.sum(weights)
    cdf = probabilities.cumsum()
    cdf /= cdf[-1]
    n_trees = seeds.seeds.size
    counts = np.empty((n_trees, n_rows), dtype=np.int32)
    if seeds.raw.shape[1] >= 2 * n_rows:
        counts[:] = 0
        _choice_counts(seeds.raw, cdf, counts)
        return counts
    for tree, seed in enumerate(seeds.seeds):  # pragma: no cover - callers draw enough
        draws = np.random.RandomState(int(seed)).choice(n_rows, n_rows, replace=True,
                                                        p=probabilities)
        counts[tree] = np.bincount(draws, minlength=n_rows)
    return counts
