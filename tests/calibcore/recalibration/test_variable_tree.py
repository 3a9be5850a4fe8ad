"""VariableTreeCalibration (Kelly & Smyth 2023, Section 6): regions from a tree on v alone,
a map per region, the global map where a region cannot carry its own."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import expit, softmax
from sklearn.tree import DecisionTreeClassifier

from calibcore.exceptions import CalibrationInputError
from calibcore.recalibration._base import Recalibrator
from calibcore.recalibration.beta import BetaCalibration, DirichletCalibration
from calibcore.recalibration.scaling import TemperatureScaling
from calibcore.recalibration.variable_tree import VariableTreeCalibration, assign_regions


def brute_force_vece(v, labels, proba, n_bins=10):
    """VECE of Kelly & Smyth 2023, eq. 7: equal-mass bins over v (pandas.qcut, duplicate
    edges dropped), sum over bins of (n_b / n) |mean predicted error - mean error|,
    top-label view."""
    frame = pd.DataFrame(
        {
            "bin": pd.qcut(v, n_bins, duplicates="drop"),
            "predicted_error": 1.0 - proba.max(axis=1),
            "error": (proba.argmax(axis=1) != labels).astype(float),
        }
    )
    grouped = frame.groupby("bin", observed=True).agg(["mean", "size"])
    weights = grouped[("error", "size")] / len(frame)
    gaps = (grouped[("predicted_error", "mean")] - grouped[("error", "mean")]).abs()
    return float((weights * gaps).sum())


def sample_labels(true_proba, rng):
    cumulative = np.cumsum(true_proba, axis=1)
    return np.minimum(
        (rng.random(len(true_proba))[:, None] > cumulative).sum(axis=1), true_proba.shape[1] - 1
    )


def binary_world(n, seed):
    """Calibrated overall at v ~ 1/2, under-confident for v < 0.5, over-confident above."""
    rng = np.random.default_rng(seed)
    v = rng.uniform(size=n)
    z = rng.normal(scale=1.5, size=n)
    reported = expit(z * np.where(v < 0.5, 0.4, 2.5))
    labels = (rng.random(n) < expit(z)).astype(int)
    return np.column_stack([1 - reported, reported]), labels, v


def multiclass_world(n, seed, n_classes=4):
    """Temperature drifting with v: sharpness 0.5 at v = 0 up to 3 at v = 1."""
    rng = np.random.default_rng(seed)
    v = rng.uniform(size=n)
    logits = rng.normal(scale=1.5, size=(n, n_classes))
    labels = sample_labels(softmax(logits, axis=1), rng)
    return softmax(logits * (0.5 + 2.5 * v)[:, None], axis=1), labels, v


def split(data, n_fit):
    return [a[:n_fit] for a in data], [a[n_fit:] for a in data]


def test_fixes_a_miscalibration_that_depends_on_v_binary():
    (p_fit, y_fit, v_fit), (p_test, y_test, v_test) = split(binary_world(10_000, 1), 5000)
    tree = VariableTreeCalibration().fit(p_fit, y_fit, features=v_fit)
    global_beta = BetaCalibration().fit(p_fit, y_fit)
    before = brute_force_vece(v_test, y_test, p_test)
    after_global = brute_force_vece(v_test, y_test, global_beta.predict_proba(p_test))
    after_tree = brute_force_vece(v_test, y_test, tree.predict_proba(p_test, features=v_test))
    assert before > 0.08
    assert after_tree < 0.25 * after_global
    assert after_tree < 0.03


@pytest.mark.parametrize("multiclass_map", ["temperature", "dirichlet"])
def test_fixes_a_miscalibration_that_depends_on_v_multiclass(multiclass_map):
    (p_fit, y_fit, v_fit), (p_test, y_test, v_test) = split(multiclass_world(6000, 2), 3000)
    tree = VariableTreeCalibration(multiclass_map=multiclass_map).fit(p_fit, y_fit, features=v_fit)
    global_ts = TemperatureScaling().fit(p_fit, y_fit)
    after_global = brute_force_vece(v_test, y_test, global_ts.predict_proba(p_test))
    after_tree = brute_force_vece(v_test, y_test, tree.predict_proba(p_test, features=v_test))
    assert brute_force_vece(v_test, y_test, p_test) > 0.1
    assert after_tree < 0.5 * after_global
    expected = TemperatureScaling if multiclass_map == "temperature" else DirichletCalibration
    assert all(isinstance(m, expected) for m in tree.region_models_ if m is not None)


def test_matches_a_reference_built_from_sklearn_tree_leaves():
    rng = np.random.default_rng(3)
    n = 2000
    v = rng.integers(0, 20, n).astype(float)  # integer v: thresholds at exact half-integers
    z = rng.normal(scale=1.5, size=n)
    labels = (rng.random(n) < expit(z + (v > 9))).astype(int)
    proba = np.column_stack([1 - expit(2 * z), expit(2 * z)])
    fitted = VariableTreeCalibration(min_region_size=1).fit(proba, labels, features=v)

    tree = DecisionTreeClassifier(max_depth=3, min_samples_leaf=200, random_state=0)
    leaves = tree.fit(v[:, None], labels).apply(v[:, None])
    expected = np.empty_like(proba)
    for leaf in np.unique(leaves):
        rows = leaves == leaf
        expected[rows] = BetaCalibration().fit(proba[rows], labels[rows]).predict_proba(proba[rows])
    assert fitted.thresholds_.size + 1 == np.unique(leaves).size
    np.testing.assert_allclose(fitted.predict_proba(proba, features=v), expected, atol=1e-12)


def test_single_class_regions_fall_back_to_the_global_map():
    rng = np.random.default_rng(4)
    n = 3000
    v = rng.uniform(size=n)
    p = rng.uniform(0.05, 0.95, n)
    labels = np.where(v < 0.3, 0, (rng.random(n) < p).astype(int))  # v < 0.3: class 0 only
    fitted = VariableTreeCalibration().fit(p, labels, features=v)
    pure = assign_regions(np.array([0.05]), fitted.thresholds_)[0]
    assert fitted.region_models_[pure] is None
    assert any(m is not None for m in fitted.region_models_)
    low = np.linspace(0.01, 0.15, 7)
    assert np.all(assign_regions(low, fitted.thresholds_) == pure)
    np.testing.assert_array_equal(
        fitted.predict_proba(p[:7], features=low), fitted.global_model_.predict_proba(p[:7])
    )


def test_regions_without_top_label_errors_fall_back_to_the_global_map():
    proba, labels, v = multiclass_world(3000, 10)
    labels = np.where(v < 0.3, proba.argmax(axis=1), labels)  # v < 0.3: never wrong
    fitted = VariableTreeCalibration(split_criterion="residual").fit(proba, labels, features=v)
    flawless = assign_regions(np.array([0.05]), fitted.thresholds_)[0]
    assert fitted.thresholds_[flawless] <= 0.3  # the region holds error-free rows only
    assert fitted.region_models_[flawless] is None  # its own temperature would run to 0
    assert any(m is not None for m in fitted.region_models_)


def test_regions_smaller_than_min_region_size_fall_back_to_the_global_map():
    proba, labels, v = binary_world(400, 5)
    fitted = VariableTreeCalibration(min_region_size=1000).fit(proba, labels, features=v)
    assert fitted.thresholds_.size > 0
    assert all(m is None for m in fitted.region_models_)
    np.testing.assert_array_equal(
        fitted.predict_proba(proba, features=v),
        BetaCalibration().fit(proba, labels).predict_proba(proba),
    )


def test_too_few_rows_to_split_gives_one_region():
    proba, labels, v = binary_world(15, 6)
    fitted = VariableTreeCalibration(min_leaf_fraction=0.45, min_region_size=5).fit(
        proba, labels, features=v
    )
    assert fitted.thresholds_.size <= 1
    fitted = VariableTreeCalibration(max_depth=1, min_leaf_fraction=0.4).fit(
        proba[:4], labels[:4], features=v[:4]
    )
    assert fitted.region_sizes_.sum() == 4


def test_missing_v_uses_the_global_map_in_fit_and_predict():
    proba, labels, v = binary_world(3000, 7)
    holed = v.copy()
    holed[::10] = np.nan
    fitted = VariableTreeCalibration().fit(proba, labels, features=holed)
    assert fitted.region_sizes_.sum() == 2700
    probe = np.array([np.nan, np.inf, 0.2])
    out = fitted.predict_proba(proba[:3], features=probe)
    np.testing.assert_array_equal(out[:2], fitted.global_model_.predict_proba(proba[:2]))
    rebuilt = Recalibrator.from_json(json.loads(json.dumps(fitted.to_json())))
    np.testing.assert_array_equal(
        rebuilt.predict_proba(proba, features=holed), fitted.predict_proba(proba, features=holed)
    )


def test_residual_criterion_cuts_where_the_miscalibration_changes():
    proba, labels, v = binary_world(6000, 8)
    by_residual = VariableTreeCalibration(max_depth=1, split_criterion="residual").fit(
        proba, labels, features=v
    )
    assert by_residual.thresholds_ == pytest.approx([0.5], abs=0.05)


def test_values_on_a_threshold_go_left_like_the_tree():
    thresholds = np.array([1.0, 2.5])
    np.testing.assert_array_equal(
        assign_regions(np.array([0.0, 1.0, 1.5, 2.5, 3.0]), thresholds), [0, 0, 1, 1, 2]
    )


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"split_criterion": "gini"}, "split_criterion"),
        ({"multiclass_map": "isotonic"}, "multiclass_map"),
        ({"min_leaf_fraction": 0.7}, "min_leaf_fraction"),
        ({"max_depth": 0}, "max_depth"),
    ],
)
def test_bad_parameters_are_reported_at_fit(params, message):
    proba, labels, v = multiclass_world(200, 9)
    with pytest.raises(CalibrationInputError, match=message):
        VariableTreeCalibration(**params).fit(proba, labels, features=v)


@settings(max_examples=20, deadline=None)
@given(
    n=st.integers(20, 400),
    depth=st.integers(1, 4),
    fraction=st.sampled_from([0.05, 0.1, 0.2]),
    seed=st.integers(0, 10_000),
)
def test_regions_are_intervals_of_at_least_the_minimum_leaf(n, depth, fraction, seed):
    proba, labels, v = binary_world(n, seed)
    fitted = VariableTreeCalibration(max_depth=depth, min_leaf_fraction=fraction).fit(
        proba, labels, features=v[:, None]
    )
    assert np.all(np.diff(fitted.thresholds_) > 0)
    assert fitted.thresholds_.size + 1 <= 2**depth
    assert fitted.region_sizes_.sum() == n
    assert np.all(fitted.region_sizes_ >= max(1, int(fraction * n)))
    out = fitted.predict_proba(proba, features=v)
    np.testing.assert_allclose(out.sum(axis=1), 1.0, atol=1e-12)
