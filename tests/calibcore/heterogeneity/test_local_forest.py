"""The compiled local-forest kernel against scikit-learn's own trees and forests."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from calibcore._progress import silent
from calibcore.heterogeneity import CCP_ALPHAS
from calibcore.heterogeneity._bagging import TreeSeeds, grow_trees
from calibcore.heterogeneity._forest_scores import _score_with_sklearn, score_forests
from calibcore.heterogeneity._local_forest import _grow_tree


def random_problem(seed: int, n_rows: int, n_features: int, n_classes: int, kind: int):
    """Features with ties, a constant column or integer codes (by ``kind``); labels 0..K-1."""
    rng = np.random.default_rng(seed)
    features = rng.normal(size=(n_rows, n_features))
    if kind == 1:
        features = np.round(features, 1)
    elif kind == 2:
        features[:, 0] = 1.0
    elif kind == 3:
        features = rng.integers(0, 3, size=(n_rows, n_features)).astype(float)
    labels = rng.integers(0, n_classes, n_rows)
    labels[: n_classes] = np.arange(n_classes)  # every class present
    return features.astype(np.float32), labels.astype(np.intp)


def kernel_tree(features, labels, n_classes, weight, seed):
    n_rows, n_features = features.shape
    capacity = 2 * n_rows + 1
    arrays = {name: np.empty(capacity, dtype=np.intp) for name in ("left", "right", "feature")}
    arrays.update({name: np.empty(capacity) for name in ("threshold", "impurity", "weight")})
    value = np.empty((capacity, n_classes))
    order = np.ascontiguousarray(np.argsort(features.T, axis=1, kind="stable"), dtype=np.intp)
    row_leaf = np.full(n_rows, -1, dtype=np.intp)
    n_nodes = _grow_tree(
        features, labels, n_classes, weight, order, seed, float(weight.sum()), arrays["left"],
        arrays["right"], arrays["feature"], arrays["threshold"], value, arrays["impurity"],
        arrays["weight"], np.empty((n_features, n_rows), dtype=np.intp),
        np.empty(n_rows, dtype=np.intp), np.zeros(n_rows, dtype=np.bool_), row_leaf)
    arrays = {name: array[:n_nodes] for name, array in arrays.items()}
    return n_nodes, {**arrays, "row_leaf": row_leaf}, value[:n_nodes]


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), n_rows=st.integers(2, 300), n_features=st.integers(1, 4),
       n_classes=st.integers(2, 4), kind=st.integers(0, 3))
def test_kernel_trees_are_scikit_learns_trees(seed, n_rows, n_features, n_classes, kind):
    n_classes = min(n_classes, n_rows)
    features, labels = random_problem(seed, n_rows, n_features, n_classes, kind)
    seeds = TreeSeeds.draw(seed % 7, 8, n_raw=2 * n_rows + 256)
    weights = seeds.bootstrap_counts(n_rows)
    theirs = grow_trees(features, labels, n_classes, weights, seeds)
    for tree, (weight, splitter_seed) in enumerate(zip(weights, seeds.splitter_seeds,
                                                       strict=True)):
        n_nodes, ours, value = kernel_tree(features, labels, n_classes, weight, splitter_seed)
        assert n_nodes == theirs[tree].node_count
        np.testing.assert_array_equal(ours["left"], theirs[tree].children_left)
        np.testing.assert_array_equal(ours["right"], theirs[tree].children_right)
        np.testing.assert_array_equal(ours["feature"], theirs[tree].feature)
        np.testing.assert_array_equal(ours["threshold"], theirs[tree].threshold)
        np.testing.assert_array_equal(ours["impurity"], theirs[tree].impurity)
        np.testing.assert_array_equal(ours["weight"], theirs[tree].weighted_n_node_samples)
        np.testing.assert_array_equal(value, theirs[tree].value[:, 0, :])
        # the leaf recorded for each in-bag row as the tree grew is where apply sends it;
        # rows out of the bag are left alone
        in_bag = weight > 0
        np.testing.assert_array_equal(ours["row_leaf"][in_bag],
                                      theirs[tree].apply(features)[in_bag])
        assert (ours["row_leaf"][~in_bag] == -1).all()


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), n_rows=st.integers(2, 400), n_features=st.integers(1, 3),
       n_classes=st.integers(2, 3), kind=st.integers(0, 3))
def test_kernel_scores_equal_the_scikit_learn_path(seed, n_rows, n_features, n_classes, kind):
    n_classes = min(n_classes, n_rows)
    features, labels = random_problem(seed, n_rows, n_features, n_classes, kind)
    seeds = TreeSeeds.draw(seed % 5, 100, n_raw=2 * n_rows + 256)
    ours = score_forests(features, labels, n_classes, seeds, CCP_ALPHAS, silent())
    counts = seeds.bootstrap_counts(n_rows).astype(np.int32)
    theirs = _score_with_sklearn(features, labels, n_classes, counts, seeds, CCP_ALPHAS, silent())
    np.testing.assert_array_equal(ours.oob_correct, theirs.oob_correct)
    np.testing.assert_array_equal(ours.in_sample, theirs.in_sample)


def test_two_class_kernel_equals_the_scikit_learn_path_on_large_noisy_neighbourhoods():
    """The two-class split search (class sums in registers) and the shortcuts taken while
    growing (sums from the parent, in-bag leaves, the split feature not re-partitioned)
    on a neighbourhood shaped like a large file's: 1,500 rows, 4 features (one rounded,
    so with ties), labels barely predictable, so the trees grow to ~1,000 nodes."""
    rng = np.random.default_rng(20_260_127)
    features = rng.normal(size=(1_500, 4))
    features[:, 3] = np.round(features[:, 3], 1)
    labels = (rng.random(1_500) < 1 / (1 + np.exp(-0.4 * features[:, 0]))).astype(np.intp)
    features = features.astype(np.float32)
    seeds = TreeSeeds.draw(3, 100, n_raw=2 * 1_500 + 256)
    ours = score_forests(features, labels, 2, seeds, CCP_ALPHAS, silent())
    counts = seeds.bootstrap_counts(1_500).astype(np.int32)
    theirs = _score_with_sklearn(features, labels, 2, counts, seeds, CCP_ALPHAS, silent())
    np.testing.assert_array_equal(ours.oob_correct, theirs.oob_correct)
    np.testing.assert_array_equal(ours.in_sample, theirs.in_sample)
    assert len(set(ours.oob_correct.tolist())) > 1  # the pruning levels differ here


def test_short_raw_streams_fall_back_to_the_generator():
    features, labels = random_problem(0, 60, 2, 2, 0)
    short = TreeSeeds.draw(0, 100, n_raw=40)  # too short for 60 draws: every tree falls back
    full = TreeSeeds.draw(0, 100, n_raw=400)
    ours = score_forests(features, labels, 2, short, CCP_ALPHAS, silent())
    expected = score_forests(features, labels, 2, full, CCP_ALPHAS, silent())
    np.testing.assert_array_equal(ours.oob_correct, expected.oob_correct)
    np.testing.assert_array_equal(ours.in_sample, expected.in_sample)
