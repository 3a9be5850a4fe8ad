"""Random-forest proximity (Wagstaff & Dietterich 2023, §4): our traversal against
scikit-learn's, the sparse co-occurrence products against pairwise loops, and the
augmented space."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.ensemble import RandomForestClassifier
from sklearn.preprocessing import StandardScaler

from calibcore.heterogeneity import (
    TreeEnsemble,
    fit_proximity_forest,
    forest_proximity,
    leaf_indicator,
    node_class_counts,
    shared_leaf_blocks,
)
from calibcore.recalibration._base import decode_json, encode_json


def fitted_forest(seed: int, n_rows: int = 120, n_features: int = 4, n_trees: int = 15):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_rows, n_features))
    y = (X[:, 0] + rng.normal(size=n_rows) > 0).astype(int) + (X[:, 1] > 1)
    return RandomForestClassifier(n_estimators=n_trees, random_state=seed).fit(X, y), X, rng


def offsets_of(forest: RandomForestClassifier) -> np.ndarray:
    counts = [tree.tree_.node_count for tree in forest.estimators_]
    return np.concatenate([[0], np.cumsum(counts)[:-1]])


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_traversal_equals_sklearn_apply(seed):
    forest, X, rng = fitted_forest(seed)
    ensemble = TreeEnsemble.from_forest(forest)
    query = np.vstack([X, rng.normal(scale=3.0, size=(50, X.shape[1]))])
    np.testing.assert_array_equal(ensemble.apply(query), forest.apply(query) + offsets_of(forest))


def test_values_on_a_threshold_go_left_in_float32_like_sklearn():
    forest, X, _ = fitted_forest(1)
    ensemble = TreeEnsemble.from_forest(forest)
    internal = ensemble.left >= 0
    query = np.repeat(X[:40], 3, axis=0)
    # put features exactly on thresholds, and one float64 ulp either side
    picks = np.flatnonzero(internal)[:120]
    for row, node in enumerate(picks):
        nudge = (row % 3 - 1) * np.spacing(ensemble.threshold[node])
        query[row, ensemble.feature[node]] = ensemble.threshold[node] + nudge
    np.testing.assert_array_equal(ensemble.apply(query), forest.apply(query) + offsets_of(forest))


def test_single_leaf_trees_and_blocks_of_rows():
    X = np.zeros((30, 2))
    forest = RandomForestClassifier(n_estimators=3, random_state=0).fit(X, np.arange(30) % 2)
    ensemble = TreeEnsemble.from_forest(forest)
    np.testing.assert_array_equal(ensemble.apply(X), np.tile(ensemble.roots, (30, 1)))
    assert ensemble.apply(np.empty((0, 2))).shape == (0, 3)


def test_tree_arrays_survive_json_exactly():
    forest, X, _ = fitted_forest(2)
    ensemble = TreeEnsemble.from_forest(forest)
    document = json.loads(json.dumps(encode_json(ensemble.to_arrays())))
    rebuilt = TreeEnsemble.from_arrays(decode_json(document))
    np.testing.assert_array_equal(rebuilt.threshold, ensemble.threshold)
    np.testing.assert_array_equal(rebuilt.apply(X), ensemble.apply(X))


def test_proximity_equals_the_pairwise_definition():
    forest, X, rng = fitted_forest(3)
    ensemble = TreeEnsemble.from_forest(forest)
    query = rng.normal(size=(25, X.shape[1]))
    a, b = ensemble.apply(query), ensemble.apply(X)
    expected = np.empty((25, X.shape[0]))
    for i in range(25):  # the reference's double loop
        for j in range(X.shape[0]):
            expected[i, j] = np.mean(a[i] == b[j])
    np.testing.assert_array_equal(forest_proximity(a, b, ensemble.n_nodes), expected)
    np.testing.assert_array_equal(forest_proximity(b, b, ensemble.n_nodes).diagonal(), 1.0)


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 1000), max_cells=st.integers(1, 400))
def test_blocked_products_equal_one_product(seed, max_cells):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 30, size=(13, 4))
    b = rng.integers(0, 30, size=(21, 4))
    dense = (leaf_indicator(a, 30) @ leaf_indicator(b, 30).T).toarray()
    seen = np.zeros(13, dtype=int)
    for rows, counts in shared_leaf_blocks(a, b, 30, max_block_cells=max_cells):
        np.testing.assert_array_equal(counts, dense[rows])
        seen[rows] += 1
    np.testing.assert_array_equal(seen, 1)


def test_node_class_counts_by_hand():
    leaves = np.array([[0, 3], [0, 4], [1, 3]])
    counts = node_class_counts(leaves, np.array([0, 1, 1]), 5, 2)
    expected = np.zeros((5, 2), dtype=int)
    for row, label in enumerate([0, 1, 1]):
        for leaf in leaves[row]:
            expected[leaf, label] += 1
    np.testing.assert_array_equal(counts, expected)


def test_proximity_forest_is_the_references_forest_in_the_augmented_space():
    rng = np.random.default_rng(4)
    features = rng.normal(size=(150, 2))
    proba = rng.dirichlet(np.ones(3), size=150)
    labels = rng.integers(0, 3, 150)
    fitted = fit_proximity_forest(features, proba, labels, n_estimators=20, random_state=0)
    scaler = StandardScaler().fit(proba)
    augmented = np.hstack((features, scaler.transform(proba)))
    reference = RandomForestClassifier(n_estimators=20, random_state=0).fit(augmented, labels)
    np.testing.assert_array_equal(fitted.augment(features, proba), augmented)
    np.testing.assert_array_equal(
        fitted.apply(features, proba), reference.apply(augmented) + offsets_of(reference)
    )


@pytest.mark.parametrize("n_rows", [1, 7])
def test_leaf_indicator_has_one_entry_per_tree(n_rows):
    leaves = np.arange(n_rows * 3).reshape(n_rows, 3)
    indicator = leaf_indicator(leaves, n_rows * 3)
    np.testing.assert_array_equal(indicator.sum(axis=1), 3)
    np.testing.assert_array_equal(indicator.toarray().argmax(axis=1), leaves[:, 0])


@pytest.mark.parametrize("n_threads", [1, 2, 3])
def test_compiled_walk_does_not_depend_on_threads(n_threads):
    from calibcore.heterogeneity._forest_traversal import forest_leaves, pack_nodes

    forest, X, _ = fitted_forest(7, n_rows=300, n_trees=7)
    ensemble = TreeEnsemble.from_forest(forest)
    nodes = pack_nodes(ensemble.left, ensemble.right, ensemble.feature, ensemble.threshold)
    np.testing.assert_array_equal(
        forest_leaves(X.astype(np.float32), nodes, ensemble.roots, n_threads=n_threads),
        forest.apply(X) + offsets_of(forest))
