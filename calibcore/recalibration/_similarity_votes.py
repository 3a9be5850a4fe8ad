"""The votes of SWC and SWC-HH (Wagstaff & Dietterich 2023, eq. 5), given the fitted forest.

The owner is :mod:`calibcore.recalibration.similarity`, which documents the method. SWC's
votes are sums over each row's leaves of per-node class counts (weights, when fitted
with row weights); SWC-HH's keep only the calibration rows with s(t, i) >= HH_t / 2, so
they need the similarities themselves, a block of rows at a time.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import NDArray

from calibcore._progress import Heartbeat
from calibcore.heterogeneity.proximity import (
    ProximityForest,
    TreeEnsemble,
    node_class_counts,
    shared_leaf_blocks,
)

FloatArray = NDArray[np.float64]


def _proximity_forest(arrays: dict[str, Any]) -> ProximityForest:
    """The forest of a fitted ``forest_`` (its node arrays and probability scaling)."""
    return ProximityForest(
        trees=TreeEnsemble.from_arrays(arrays),
        probability_mean=np.asarray(arrays["probability_mean"], dtype=np.float64),
        probability_scale=np.asarray(arrays["probability_scale"], dtype=np.float64),
    )


def node_votes(
    arrays: dict[str, Any], calibration_leaves: Any, calibration_labels: Any, n_classes: int,
    calibration_weights: FloatArray | None,
) -> NDArray[np.int64] | FloatArray:
    """Calibration rows (weight, when fitted with weights) of each class reaching each node
    of the forest ``arrays``: shape (n_nodes, n_classes)."""
    return node_class_counts(
        np.asarray(calibration_leaves, dtype=np.int64),
        np.asarray(calibration_labels, dtype=np.intp),
        int(np.asarray(arrays["left"]).size), n_classes, calibration_weights,
    )


def leaf_means(
    arrays: dict[str, Any],
    node_values: NDArray[np.int64] | FloatArray,
    features: FloatArray,
    proba: FloatArray,
    heartbeat: Heartbeat | None = None,
    message: str = "",
) -> FloatArray:
    """Mean over the trees of the forest ``arrays`` (a fitted ``forest_``) of ``node_values``
    (shape (n_nodes, ...)) at each row's leaf:
    sum_i s(t, i) v_i when the nodes hold the sums of v over the calibration rows reaching
    them. ``heartbeat(fraction done, message)`` is called after each block of rows."""
    forest = _proximity_forest(arrays)
    sums = np.empty((proba.shape[0], *node_values.shape[1:]))
    for rows, leaves in forest.apply_in_blocks(features, proba, heartbeat):
        # unweighted the values are integers, so the sum is exact in any order
        sums[rows] = node_values[leaves].sum(axis=1)
        if heartbeat is not None:
            heartbeat(rows.stop / proba.shape[0], message)
    return sums / forest.trees.n_trees


def filtered_votes(
    arrays: dict[str, Any],
    features: FloatArray,
    proba: FloatArray,
    thresholds: FloatArray,
    calibration_leaves: Any,
    calibration_labels: Any,
    calibration_weights: FloatArray | None,
    heartbeat: Callable[[], None] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> FloatArray:
    """sum_i s(t, i) w_i 1[s(t, i) >= thresholds_t] 1[y_i = k] per row and class k
    (SWC-HH's votes; w_i = 1 without weights).

    A row that no calibration row passes keeps its most similar one. ``progress(done,
    total)`` is called with the rows voted after each block of them (``heartbeat`` then
    only keeps the forest's leaf search alive).

    Parameters
    ----------
    thresholds : ndarray of shape (n,)
        HH_t / 2 of each row.
    calibration_leaves : ndarray of shape (n_cal, n_trees)
    calibration_labels : ndarray of shape (n_cal,)
    calibration_weights : ndarray of shape (n_cal,) or None

    Returns
    -------
    ndarray of shape (n, K), K = ``proba.shape[1]``
    """
    class_weights = np.eye(proba.shape[1])[np.asarray(calibration_labels, dtype=np.intp)]
    if calibration_weights is not None:
        class_weights = class_weights * calibration_weights[:, None]
    forest = _proximity_forest(arrays)
    reference = np.asarray(calibration_leaves, dtype=np.int64)
    votes = np.empty_like(proba)
    if progress is not None:  # (the first block's leaf search comes before its votes)
        progress(0, proba.shape[0])
    for block, leaves in forest.apply_in_blocks(features, proba, heartbeat):
        block_votes, block_thresholds = votes[block], thresholds[block]
        for rows, shared in shared_leaf_blocks(leaves, reference, forest.trees.n_nodes):
            if heartbeat is not None:
                heartbeat()
            similarity = shared / forest.trees.n_trees
            kept = similarity >= block_thresholds[rows, None]
            nobody = ~kept.any(axis=1)
            kept[nobody, np.argmax(similarity[nobody], axis=1)] = True
            block_votes[rows] = np.where(kept, similarity, 0.0) @ class_weights
            if progress is not None:
                progress(block.start + rows.stop, proba.shape[0])
    return votes


def normalize_votes(votes: FloatArray, proba: FloatArray, prior_strength: float) -> FloatArray:
    """Eq. 5 with ``prior_strength`` pseudo-rows of the row's own probabilities; rows with
    no mass at all keep p_t."""
    votes = votes + prior_strength * proba
    mass = votes.sum(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(mass > 0, votes / mass, proba)
