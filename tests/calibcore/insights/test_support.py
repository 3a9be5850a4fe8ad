"""Calibration support (Wagstaff & Dietterich 2023, eq. 6): the definition, the
cross-fitted reference, and the covariate-shift comparison (the paper's rotated-batch
experiment, in 2-D)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import ks_2samp
from sklearn.model_selection import KFold

from calibcore.exceptions import CalibrationInputError
from calibcore.insights import calibration_support, compare_support
from calibcore.recalibration.similarity import SWC
from tests.calibcore.recalibration.test_similarity import reference_similarity


def blobs(seed: int, n: int, shift: float = 0.0):
    """Two features; the classifier sees only the first, the label needs both."""
    rng = np.random.default_rng(seed)
    features = rng.normal(size=(n, 2)) + np.array([shift, 0.0])
    score = 1 / (1 + np.exp(-features[:, 0]))
    labels = rng.random(n) < 1 / (1 + np.exp(-2 * features[:, 0] * np.sign(features[:, 1])))
    return features, labels.astype(int), np.column_stack([1 - score, score])


def test_support_is_the_sum_of_proximities_to_all_calibration_rows():
    X_cal, y_cal, p_cal = blobs(0, 120)
    X, _, p = blobs(1, 20)
    support = calibration_support(X_cal, y_cal, p_cal, X, p, n_estimators=30, random_state=2)
    similarity = reference_similarity(X_cal, y_cal, p_cal, X, p, n_estimators=30, seed=2)
    np.testing.assert_allclose(support.values, similarity.sum(axis=1), rtol=1e-12)
    np.testing.assert_array_equal(support.lowest(3), np.argsort(similarity.sum(axis=1))[:3])


def test_reference_support_is_cross_fitted_and_rescaled():
    X_cal, y_cal, p_cal = blobs(2, 90)
    X, _, p = blobs(3, 12)
    support = calibration_support(
        X_cal, y_cal, p_cal, X, p, n_estimators=20, n_folds=3, random_state=5
    )
    expected = np.empty(90)
    for train, test in KFold(3, shuffle=True, random_state=5).split(X_cal):
        similarity = reference_similarity(
            X_cal[train],
            y_cal[train],
            p_cal[train],
            X_cal[test],
            p_cal[test],
            n_estimators=20,
            seed=5,
        )
        expected[test] = similarity.sum(axis=1) * 90 / train.size
    np.testing.assert_allclose(support.reference, expected, rtol=1e-12)
    assert support.held_out.shape == (12,) and np.all(support.held_out > 0)
    assert (support.n_calibration, support.n_folds, support.n_estimators) == (90, 3, 20)


def test_held_out_rows_are_scored_like_the_reference():
    X_cal, y_cal, p_cal = blobs(4, 90)
    support = calibration_support(
        X_cal, y_cal, p_cal, X_cal[:30], p_cal[:30], n_estimators=20, n_folds=3, random_state=1
    )
    fold = np.random.default_rng(1).integers(3, size=30)
    splits = list(KFold(3, shuffle=True, random_state=1).split(X_cal))
    for row in range(30):
        train = splits[fold[row]][0]
        model = SWC(n_estimators=20, random_state=1)
        model.fit(p_cal[train], y_cal[train], features=X_cal[train])
        expected = model.calibration_support(p_cal[row : row + 1], X_cal[row : row + 1]) * 90 / 60
        assert support.held_out[row] == pytest.approx(expected[0], rel=1e-12)


def test_shift_warning_fires_for_a_moved_batch_only():
    X_cal, y_cal, p_cal = blobs(5, 800)
    X_same, _, p_same = blobs(6, 300)
    X_moved, _, p_moved = blobs(7, 300, shift=2.5)
    same = compare_support(
        calibration_support(X_cal, y_cal, p_cal, X_same, p_same, n_estimators=40, n_jobs=2)
    )
    moved = compare_support(
        calibration_support(X_cal, y_cal, p_cal, X_moved, p_moved, n_estimators=40, n_jobs=2)
    )
    assert not same.shifted and "No evidence" in same.message
    assert moved.shifted and "Covariate-shift warning" in moved.message
    # Rows moved beyond the data land in the trees' unbounded edge leaves, which hold
    # many calibration rows: support can rise as well as fall, so the test is two-sided.
    assert moved.batch_median != pytest.approx(moved.reference_median, rel=0.2)
    assert moved.test == "two-sample Kolmogorov-Smirnov" and moved.n_batch == 300


def test_comparison_is_the_two_sample_ks_test():
    X_cal, y_cal, p_cal = blobs(8, 100)
    X, _, p = blobs(9, 40, shift=1.0)
    support = calibration_support(X_cal, y_cal, p_cal, X, p, n_estimators=15)
    shift = compare_support(support, alpha=0.2)
    expected = ks_2samp(support.reference, support.held_out)
    assert shift.statistic == pytest.approx(expected.statistic)
    assert shift.p_value == pytest.approx(expected.pvalue)
    assert shift.shifted == (expected.pvalue < 0.2)


def test_without_rows_only_the_reference_is_computed():
    X_cal, y_cal, p_cal = blobs(10, 60)
    support = calibration_support(X_cal, y_cal, p_cal, n_estimators=10)
    assert support.values.size == 0 and support.held_out.size == 0
    assert support.reference.shape == (60,)
    with pytest.raises(CalibrationInputError, match="no batch rows"):
        compare_support(support)


def test_bad_inputs_are_rejected():
    X_cal, y_cal, p_cal = blobs(11, 30)
    with pytest.raises(CalibrationInputError, match="both X and p"):
        calibration_support(X_cal, y_cal, p_cal, X_cal)
    with pytest.raises(CalibrationInputError, match="n_folds"):
        calibration_support(X_cal, y_cal, p_cal, n_folds=31)
    with pytest.raises(CalibrationInputError, match="3 features but X_cal has 2"):
        calibration_support(X_cal, y_cal, p_cal, np.ones((4, 3)), p_cal[:4])
    with pytest.raises(CalibrationInputError, match="alpha"):
        compare_support(
            calibration_support(X_cal, y_cal, p_cal, X_cal[:5], p_cal[:5], n_estimators=5),
            alpha=1.5,
        )
