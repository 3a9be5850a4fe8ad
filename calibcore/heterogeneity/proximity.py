"""Random-forest proximity in the augmented space [features, probabilities].

The similarity behind SWC (Wagstaff & Dietterich 2023, §4).

The similarity of two rows is the fraction of trees in which they reach the
same leaf (Breiman, 2001). With ``A`` the (n, n_nodes) leaf-indicator matrix of
some rows and ``B`` that of the calibration rows, the shared-leaf counts are the
sparse product ``A @ B.T``: computed block by block, never as a Python loop over
pairs. Sums of proximities need no pairwise matrix at all: the weighted label
counts of SWC (eq. 5) and the calibration support (eq. 6) are ``A @ C`` with
``C`` the per-leaf class counts of the calibration rows.

A fitted forest is kept as plain node arrays (:class:`TreeEnsemble`), which is
its JSON form; leaves are found by a vectorized traversal that compares float32
features with float64 thresholds exactly as scikit-learn does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import sparse
from sklearn.ensemble import RandomForestClassifier
from sklearn.preprocessing import StandardScaler

from calibcore._validation import check_positive_int
from calibcore.heterogeneity._forest_growth import grow_forest
from calibcore.heterogeneity._forest_traversal import forest_leaves, pack_nodes

__all__ = [
    "ProximityForest",
    "TreeEnsemble",
    "fit_proximity_forest",
    "forest_proximity",
    "leaf_indicator",
    "node_class_counts",
    "shared_leaf_blocks",
]

#: Largest number of cells of a dense block of pairwise counts (32 MiB of int64).
MAX_BLOCK_CELLS = 2**22
_TRAVERSAL_BLOCK_ROWS = 16_384
#: Rows per block of :meth:`ProximityForest.apply_in_blocks` (13 MiB of leaves, 100 trees).
APPLY_BLOCK_ROWS = 16_384


@dataclass(frozen=True)
class TreeEnsemble:
    """The split structure of a forest as arrays, trees laid end to end.

    Attributes
    ----------
    left, right : ndarray of shape (n_nodes,)
        Global ids of the children; -1 at leaves.
    feature : ndarray of shape (n_nodes,)
        Feature tested at each internal node (ignored at leaves).
    threshold : ndarray of shape (n_nodes,)
        Rows with ``feature <= threshold`` (in float32) go left.
    roots : ndarray of shape (n_trees,)
        Global id of each tree's root.
    """

    left: NDArray[np.int64]
    right: NDArray[np.int64]
    feature: NDArray[np.int64]
    threshold: NDArray[np.float64]
    roots: NDArray[np.int64]

    @classmethod
    def from_forest(cls, forest: RandomForestClassifier) -> TreeEnsemble:
        """Node arrays of a fitted scikit-learn forest."""
        return cls.from_trees([estimator.tree_ for estimator in forest.estimators_])

    @classmethod
    def from_trees(cls, trees: list[Any]) -> TreeEnsemble:
        """Node arrays of scikit-learn ``Tree`` objects, in order."""
        counts = np.array([tree.node_count for tree in trees], dtype=np.int64)
        roots = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
        shift = np.repeat(roots, counts)
        left = np.concatenate([tree.children_left for tree in trees]).astype(np.int64)
        right = np.concatenate([tree.children_right for tree in trees]).astype(np.int64)
        internal = left >= 0
        left[internal] += shift[internal]
        right[internal] += shift[internal]
        feature = np.concatenate([tree.feature for tree in trees]).astype(np.int64)
        feature[~internal] = 0
        threshold = np.concatenate([tree.threshold for tree in trees]).astype(np.float64)
        return cls(left=left, right=right, feature=feature, threshold=threshold, roots=roots)

    @classmethod
    def from_arrays(cls, arrays: dict[str, Any]) -> TreeEnsemble:
        """Inverse of :meth:`to_arrays` (e.g. after a JSON round trip)."""
        return cls(
            left=np.asarray(arrays["left"], dtype=np.int64),
            right=np.asarray(arrays["right"], dtype=np.int64),
            feature=np.asarray(arrays["feature"], dtype=np.int64),
            threshold=np.asarray(arrays["threshold"], dtype=np.float64),
            roots=np.asarray(arrays["roots"], dtype=np.int64),
        )

    def to_arrays(self) -> dict[str, NDArray[Any]]:
        """The node arrays, compactly typed, for serialization."""
        return {
            "left": self.left.astype(np.int32),
            "right": self.right.astype(np.int32),
            "feature": self.feature.astype(np.int32),
            "threshold": self.threshold,
            "roots": self.roots.astype(np.int32),
        }

    @property
    def n_trees(self) -> int:
        return int(self.roots.size)

    @property
    def n_nodes(self) -> int:
        return int(self.left.size)

    def apply(
        self, features: ArrayLike, heartbeat: Callable[[], None] | None = None
    ) -> NDArray[np.int64]:
        """Global leaf id of every row in every tree, shape (n, n_trees).

        Equal to ``forest.apply(features)`` plus each tree's offset. The
        traversal is compiled (:mod:`calibcore.heterogeneity._forest_traversal`) and runs in
        blocks of rows; ``heartbeat`` is called before each block.
        """
        values = np.ascontiguousarray(features, dtype=np.float32)
        blocks = []
        for start in range(0, values.shape[0], _TRAVERSAL_BLOCK_ROWS):
            if heartbeat is not None:
                heartbeat()
            blocks.append(self._apply_block(values[start:start + _TRAVERSAL_BLOCK_ROWS]))
        if not blocks:
            return np.empty((0, self.n_trees), dtype=np.int64)
        return np.concatenate(blocks)

    def _apply_block(self, values: NDArray[np.float32]) -> NDArray[np.int64]:
        return forest_leaves(values, self._packed_nodes, self.roots)

    @cached_property
    def _packed_nodes(self) -> NDArray[np.float64]:
        return pack_nodes(self.left, self.right, self.feature, self.threshold)


def leaf_indicator(leaves: NDArray[np.int64], n_nodes: int) -> sparse.csr_array:
    """Sparse (n, n_nodes) matrix with a one at each row's leaf in each tree."""
    n_rows, n_trees = leaves.shape
    indptr = np.arange(0, n_rows * n_trees + 1, n_trees, dtype=np.int64)
    data = np.ones(n_rows * n_trees, dtype=np.int32)
    return sparse.csr_array((data, leaves.ravel(), indptr), shape=(n_rows, n_nodes))


def node_class_counts(
    leaves: NDArray[np.int64], labels: NDArray[np.intp], n_nodes: int, n_classes: int,
    weights: NDArray[np.float64] | None = None,
) -> NDArray[np.int64] | NDArray[np.float64]:
    """How many rows of each class reach each node: shape (n_nodes, n_classes).

    With ``weights`` (shape (n,)), the sum of the weights of those rows instead (floats).
    """
    cells = leaves * n_classes + labels[:, None]
    cell_weights = None if weights is None else np.repeat(weights, leaves.shape[1])
    counts = np.bincount(cells.ravel(), weights=cell_weights, minlength=n_nodes * n_classes)
    return counts.reshape(n_nodes, n_classes)


def shared_leaf_blocks(
    query_leaves: NDArray[np.int64],
    reference_leaves: NDArray[np.int64],
    n_nodes: int,
    *,
    max_block_cells: int = MAX_BLOCK_CELLS,
) -> Iterator[tuple[slice, NDArray[np.int64]]]:
    """Blocks of shared-leaf counts between query and reference rows.

    Yields
    ------
    rows : slice
        The query rows of the block.
    counts : ndarray of shape (rows, n_reference)
        Number of trees in which the two rows share a leaf (``A @ B.T``).
    """
    reference = leaf_indicator(reference_leaves, n_nodes).T.tocsr()
    block_rows = max(1, max_block_cells // max(1, reference_leaves.shape[0]))
    for start in range(0, query_leaves.shape[0], block_rows):
        rows = slice(start, min(start + block_rows, query_leaves.shape[0]))
        block = leaf_indicator(query_leaves[rows], n_nodes) @ reference
        yield rows, block.toarray().astype(np.int64)


def forest_proximity(
    query_leaves: NDArray[np.int64], reference_leaves: NDArray[np.int64], n_nodes: int
) -> NDArray[np.float64]:
    """Dense proximity matrix: fraction of trees in which two rows share a leaf.

    For moderate sizes (inspection, tests); large problems use
    :func:`shared_leaf_blocks` and never hold the whole matrix.
    """
    out = np.empty((query_leaves.shape[0], reference_leaves.shape[0]))
    for rows, counts in shared_leaf_blocks(query_leaves, reference_leaves, n_nodes):
        out[rows] = counts / query_leaves.shape[1]
    return out


def augmented_rows(
    features: NDArray[np.float64],
    proba: NDArray[np.float64],
    mean: NDArray[np.float64],
    scale: NDArray[np.float64],
) -> NDArray[np.float64]:
    """[features, (p - mean) / scale]: the augmented space X+ of the paper, shape (n, d + K)."""
    return np.hstack((features, (proba - mean) / scale))


@dataclass(frozen=True)
class ProximityForest:
    """A random forest trained to predict y in [features, standardized probabilities].

    As the reference: the probability columns are standardized with the mean
    and (population) standard deviation of the calibration rows, and the
    forest is ``RandomForestClassifier(n_estimators, random_state)`` with
    scikit-learn's defaults (fully grown, sqrt(d) features per split).
    """

    trees: TreeEnsemble
    probability_mean: NDArray[np.float64]
    probability_scale: NDArray[np.float64]

    def augment(
        self, features: NDArray[np.float64], proba: NDArray[np.float64]
    ) -> NDArray[np.float64]:
        """The augmented rows [features, (p - mean) / scale], shape (n, d + K)."""
        return augmented_rows(features, proba, self.probability_mean, self.probability_scale)

    def apply(
        self,
        features: NDArray[np.float64],
        proba: NDArray[np.float64],
        heartbeat: Callable[[], None] | None = None,
    ) -> NDArray[np.int64]:
        """Global leaf ids of the augmented rows, shape (n, n_trees)."""
        return self.trees.apply(self.augment(features, proba), heartbeat)

    def apply_in_blocks(
        self,
        features: NDArray[np.float64],
        proba: NDArray[np.float64],
        heartbeat: Callable[[], None] | None = None,
    ) -> Iterator[tuple[slice, NDArray[np.int64]]]:
        """:meth:`apply`, :data:`APPLY_BLOCK_ROWS` rows at a time: (rows, their leaf ids).

        Whoever only sums over each row's leaves needs no more at once: the leaves of
        300,000 rows in 100 trees take 229 MiB, and a sparse indicator of them as much
        again (SWC's votes held over 1 GiB that way)."""
        for start in range(0, proba.shape[0], APPLY_BLOCK_ROWS):
            rows = slice(start, min(start + APPLY_BLOCK_ROWS, proba.shape[0]))
            yield rows, self.apply(features[rows], proba[rows], heartbeat)


def fit_proximity_forest(
    features: NDArray[np.float64],
    proba: NDArray[np.float64],
    labels: NDArray[np.intp],
    *,
    n_estimators: int = 100,
    random_state: int = 0,
    n_jobs: int | None = None,
    heartbeat: Callable[[float], None] | None = None,
    sample_weight: NDArray[np.float64] | None = None,
) -> ProximityForest:
    """Fit the proximity forest of SWC on calibration rows (Wagstaff & Dietterich 2023, §4).

    Parameters
    ----------
    features : ndarray of shape (n, d)
    proba : ndarray of shape (n, K)
    labels : ndarray of shape (n,)
    n_estimators : int
    random_state : int
    n_jobs : int or None
        Threads for fitting; the forest does not depend on it.
    heartbeat : callable, optional
        Called with the fraction of trees grown, before the first tree and after each
        (it may raise to stop).
    sample_weight : ndarray of shape (n,), optional
        Row weights: the probability columns are standardized with the weighted mean and
        standard deviation, and the forest is grown as ``RandomForestClassifier.fit(...,
        sample_weight=sample_weight)`` grows it in scikit-learn 1.9 (each tree's
        bootstrap sample draws n rows with probability proportional to the weights).
        The repeated rows would draw sum(w) rows, so integer weights give their forest
        only approximately. Weights must be positive (drop rows of weight 0 first).
    """
    n_estimators = check_positive_int(n_estimators, "n_estimators")
    random_state = check_positive_int(random_state, "random_state", minimum=0)
    scaler = StandardScaler().fit(proba, sample_weight=sample_weight)
    augmented = augmented_rows(features, proba, scaler.mean_, scaler.scale_)
    # RandomForestClassifier's trees, not its fit: with n_jobs > 1 that fit corrupts
    # the process's warning filters (see calibcore.heterogeneity._forest_growth).
    trees = grow_forest(augmented, labels, n_estimators=n_estimators,
                        random_state=random_state, n_jobs=n_jobs, heartbeat=heartbeat,
                        sample_weight=sample_weight)
    return ProximityForest(
        trees=TreeEnsemble.from_trees(trees),
        probability_mean=scaler.mean_,
        probability_scale=scaler.scale_,
    )
