"""Venn-Abers predictors against two independent references: an isotonic regression fitted
for every test row (scikit-learn), and the ``venn-abers`` package (Petej's reference
implementation of Vovk, Petej & Fedorova 2015 and of Manokhin 2017's multiclass use)."""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.isotonic import IsotonicRegression
from sklearn.model_selection import StratifiedKFold

from calibcore.exceptions import CalibrationInputError
from calibcore.recalibration import REGISTRY, IntervalRecalibrator, VennAbers
from calibcore.recalibration._isotonic_ends import ends_at, isotonic_ends


def _reference() -> ModuleType:
    """The package's module; importing it calls ``np.seterr(divide="ignore",
    invalid="ignore")`` for the whole process, which is undone here."""
    saved = np.geterr()
    try:
        return importlib.import_module("venn_abers.venn_abers")
    finally:
        np.seterr(**saved)


reference = _reference()


@contextmanager
def quiet() -> Iterator[None]:
    """The package divides 0 by 0 and takes nanmin of all-NaN slices on purpose."""
    with np.errstate(divide="ignore", invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


def brute_force(scores: np.ndarray, labels: np.ndarray, test: float) -> tuple[float, float]:
    """(p0, p1): isotonic regression of the calibration rows plus (test, 0), plus (test, 1)."""
    ends = []
    for label in (0.0, 1.0):
        model = IsotonicRegression().fit(np.append(scores, test), np.append(labels, label))
        ends.append(float(model.predict([test])[0]))
    return ends[0], ends[1]


def scored_rows(n: int, seed: int, decimals: int | None = None, n_classes: int = 2):
    """A model whose scores are too extreme (true P = p ** 0.5), optionally rounded to make
    ties; binary: (p, labels); multiclass: (proba, labels)."""
    rng = np.random.default_rng(seed)
    if n_classes == 2:
        p = rng.uniform(0.0, 1.0, n)
        if decimals is not None:
            p = np.round(p, decimals)
        return p, (rng.random(n) < np.sqrt(p)).astype(int)
    logits = rng.normal(scale=1.5, size=(n, n_classes))
    truth = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    labels = (rng.random(n)[:, None] > np.cumsum(truth, axis=1)).sum(axis=1)
    proba = np.exp(2.0 * logits)
    proba /= proba.sum(axis=1, keepdims=True)
    if decimals is not None:
        proba = np.round(proba, decimals)
        proba[:, -1] = 1.0 - proba[:, :-1].sum(axis=1)
        proba = np.clip(proba, 0.0, 1.0)
        proba /= proba.sum(axis=1, keepdims=True)
    return proba, np.minimum(labels, n_classes - 1)


# ------------------------------------------------------------------ the precomputed fits


@pytest.mark.parametrize(("n", "decimals"), [(1, None), (7, 1), (40, 1), (60, 2), (150, None)])
def test_precomputed_fits_equal_an_isotonic_fit_per_test_row(n, decimals):
    scores, labels = scored_rows(n, seed=n, decimals=decimals)
    grid, lower, upper = isotonic_ends(scores, labels.astype(float))
    rng = np.random.default_rng(n + 1)
    # tied with calibration scores, between them, below and above them all
    tests = np.concatenate([np.unique(scores)[:20], rng.uniform(-0.05, 1.05, 20),
                            [scores.min() - 0.01, scores.max() + 0.01]])
    p0, p1 = ends_at(grid, lower, upper, tests)
    expected = np.array([brute_force(scores, labels.astype(float), s) for s in tests])
    np.testing.assert_allclose(p0, expected[:, 0], rtol=0, atol=1e-12)
    np.testing.assert_allclose(p1, expected[:, 1], rtol=0, atol=1e-12)


def test_fits_by_hand_at_the_ends_and_between():
    scores = np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6])
    labels = np.array([0, 0, 1, 0, 1, 1], dtype=float)
    grid, lower, upper = isotonic_ends(scores, labels)
    # below every score: (s, 0) stays alone at 0; (s, 1) pools with 0.1, 0.2: 1/3
    # above every score: (s, 1) stays alone at 1; (s, 0) pools with 0.5, 0.6: 2/3
    # between 0.3 and 0.4: labels 0 0 1 [s] 0 1 1 -> p0 = (1 + 0 + 0) / 3, p1 = (1 + 1 + 0) / 3
    p0, p1 = ends_at(grid, lower, upper, np.array([0.0, 0.35, 0.9]))
    np.testing.assert_allclose(p0, [0.0, 1 / 3, 2 / 3])
    np.testing.assert_allclose(p1, [1 / 3, 2 / 3, 1.0])


def test_no_calibration_rows_give_the_widest_interval():
    grid, lower, upper = isotonic_ends(np.array([]), np.array([]))
    assert grid.size == 0 and lower.tolist() == [0.0] and upper.tolist() == [1.0]


def test_a_large_calibration_set_is_fitted_without_a_fit_per_row():
    """200,000 distinct scores: the precomputed fits agree with the per-row fit where
    checked, and fitting is one pass (well under the ~200,000 isotonic fits it replaces)."""
    scores, labels = scored_rows(200_000, seed=3)
    grid, lower, upper = isotonic_ends(scores, labels.astype(float))
    assert grid.size == np.unique(scores).size and lower.size == upper.size == grid.size + 1
    tests = np.random.default_rng(4).uniform(0, 1, 3)
    p0, p1 = ends_at(grid, lower, upper, tests)
    for s, low, high in zip(tests, p0, p1, strict=True):
        assert (low, high) == pytest.approx(brute_force(scores, labels.astype(float), s),
                                            abs=1e-12)


# ------------------------------------------------------------- the venn-abers package


@pytest.mark.parametrize(("n", "decimals"), [(10, 1), (100, 2), (1000, 2), (3000, None)])
def test_binary_equals_the_package(n, decimals):
    p, labels = scored_rows(n, seed=10 + n, decimals=decimals)
    test, _ = scored_rows(500, seed=11 + n, decimals=decimals)
    test = np.concatenate([test, [0.0, 1.0], p[:10]])
    with quiet():
        package = reference.VennAbers().fit(np.column_stack([1 - p, p]), labels)
        expected, expected_p0_p1 = package.predict_proba(np.column_stack([1 - test, test]))
    model = VennAbers().fit(p, labels)
    np.testing.assert_allclose(model.predict_proba(test), expected, rtol=0, atol=1e-9)
    lower, upper = model.predict_interval(test)
    np.testing.assert_allclose(lower[:, 1], expected_p0_p1[:, 0], rtol=0, atol=1e-9)
    np.testing.assert_allclose(upper[:, 1], expected_p0_p1[:, 1], rtol=0, atol=1e-9)
    np.testing.assert_allclose(lower[:, 0], 1 - upper[:, 1], rtol=0, atol=0)


@pytest.mark.parametrize("multiclass", ["one_vs_one", "one_vs_rest"])
@pytest.mark.parametrize(("n", "n_classes", "decimals"), [(60, 3, 2), (600, 3, None),
                                                          (1500, 4, 2), (800, 6, 3)])
def test_multiclass_equals_the_package(multiclass, n, n_classes, decimals):
    proba, labels = scored_rows(n, seed=n + n_classes, decimals=decimals, n_classes=n_classes)
    test, _ = scored_rows(300, seed=n + 1, decimals=decimals, n_classes=n_classes)
    test = test[(test > 0).all(axis=1)]  # the package divides 0 by 0 for a pair of zeros
    proba_fit = proba[(proba > 0).all(axis=1)]
    labels_fit = labels[(proba > 0).all(axis=1)]
    with quiet():
        expected, pairs = reference.predict_proba_prefitted_va(proba_fit, labels_fit, test,
                                                               va_tpe=multiclass)
    model = VennAbers(multiclass=multiclass).fit(proba_fit, labels_fit)
    np.testing.assert_allclose(model.predict_proba(test), expected, rtol=0, atol=1e-9)
    if multiclass == "one_vs_rest":
        # each class's interval is the package's (p0, p1) of that class against the rest,
        # divided by the row total of the merged probabilities (at most 1)
        merged = np.column_stack([pp[:, 1] / (1 - pp[:, 0] + pp[:, 1]) for pp in pairs])
        total = merged.sum(axis=1, keepdims=True)
        lower, upper = model.predict_interval(test)
        for got, end in ((lower, 0), (upper, 1)):
            scaled = np.column_stack([pp[:, end] for pp in pairs]) / total
            np.testing.assert_allclose(got, np.minimum(scaled, 1.0), rtol=0, atol=1e-9)


@pytest.mark.parametrize("folds", [2, 5])
def test_cross_venn_abers_merges_the_folds_as_the_package_does(folds):
    """One package predictor per stratified fold, merged with its geometric-mean formula
    (the package's VennAbersCV with loss="log")."""
    p, labels = scored_rows(900, seed=folds, decimals=2)
    test, _ = scored_rows(400, seed=folds + 100, decimals=2)
    splitter = StratifiedKFold(n_splits=folds, shuffle=True, random_state=7)
    p0, p1 = [], []
    with quiet():
        for _, rows in splitter.split(np.zeros(p.size), labels):
            fold = reference.VennAbers().fit(np.column_stack([1 - p[rows], p[rows]]),
                                             labels[rows])
            ends = fold.predict_proba(np.column_stack([1 - test, test]))[1]
            p0.append(ends[:, 0])
            p1.append(ends[:, 1])
    p0_stack, p1_stack = np.column_stack(p0), np.column_stack(p1)
    geo_mean = reference.geo_mean
    expected = geo_mean(p1_stack) / (geo_mean(1 - p0_stack) + geo_mean(p1_stack))
    model = VennAbers(cross_folds=folds, random_state=7).fit(p, labels)
    np.testing.assert_allclose(model.predict_proba(test)[:, 1], expected, rtol=0, atol=1e-9)
    lower, upper = model.predict_interval(test)
    np.testing.assert_array_equal(lower[:, 1], p0_stack.min(axis=1))
    np.testing.assert_array_equal(upper[:, 1], p1_stack.max(axis=1))


# --------------------------------------------------------------------------- properties


@pytest.mark.parametrize(("params", "n_classes"), [
    ({}, 2), ({"cross_folds": 4}, 2), ({}, 4), ({"multiclass": "one_vs_one"}, 4),
    ({"cross_folds": 3, "multiclass": "one_vs_one"}, 3), ({"cross_folds": 3}, 5)])
def test_every_probability_lies_in_its_interval(params, n_classes):
    proba, labels = scored_rows(700, seed=n_classes, decimals=2, n_classes=n_classes)
    model = VennAbers(**params).fit(proba[:400], labels[:400])
    out = model.predict_proba(proba[400:])
    lower, upper = model.predict_interval(proba[400:])
    assert isinstance(model, IntervalRecalibrator)
    assert lower.shape == upper.shape == out.shape == (300, n_classes)
    assert np.all(lower >= 0) and np.all(upper <= 1)
    assert np.all(lower <= out + 1e-12) and np.all(out <= upper + 1e-12)
    assert np.all(upper - lower > 0)  # a finite calibration set never pins p down exactly
    assert np.all(out > 0)


@settings(max_examples=40)
@given(scores=st.lists(st.integers(0, 8), min_size=1, max_size=30),
       labels=st.lists(st.integers(0, 1), min_size=30, max_size=30),
       test=st.integers(-1, 9))
def test_any_calibration_rows_match_the_brute_force_fit(scores, labels, test):
    values = np.array(scores, dtype=float) / 8
    targets = np.array(labels[: len(scores)], dtype=float)
    grid, lower, upper = isotonic_ends(values, targets)
    p0, p1 = ends_at(grid, lower, upper, np.array([test / 8]))
    assert (p0[0], p1[0]) == pytest.approx(brute_force(values, targets, test / 8), abs=1e-12)
    assert 0.0 <= p0[0] <= p1[0] <= 1.0


def test_the_interval_narrows_as_calibration_rows_grow():
    """p1 - p0 shrinks roughly like 1 / n (Vovk, Petej & Fedorova 2015, Section 4)."""
    widths = []
    for n in (100, 1000, 10000):
        p, labels = scored_rows(n, seed=50)
        test, _ = scored_rows(2000, seed=51)
        lower, upper = VennAbers().fit(p, labels).predict_interval(test)
        widths.append(float(np.mean(upper[:, 1] - lower[:, 1])))
    assert widths[0] > 3 * widths[1] > 9 * widths[2], widths


def test_registered_with_the_recalibrator_contract():
    assert REGISTRY["venn_abers"] is VennAbers
    assert VennAbers().get_params() == {"cross_folds": 1, "multiclass": "one_vs_rest",
                                        "random_state": 0}


@pytest.mark.parametrize(("params", "message"), [
    ({"cross_folds": 0}, "cross_folds must be an integer >= 1"),
    ({"cross_folds": 2.5}, "cross_folds must be an integer >= 1"),
    ({"cross_folds": 31}, "more folds than the 30 calibration rows"),
    ({"multiclass": "all_pairs"}, "multiclass must be one of one_vs_rest, one_vs_one"),
])
def test_bad_parameters_are_refused_naming_them(params, message):
    proba, labels = scored_rows(30, seed=1, n_classes=3)
    with pytest.raises(CalibrationInputError, match=message):
        VennAbers(**params).fit(proba, labels)


@pytest.mark.slow
def test_the_probability_of_the_true_label_is_calibrated_by_simulation():
    """Venn validity (Vovk & Petej 2014, Theorem 1): with P_Y the end of [p0, p1] that the
    true label picks (p0 when Y = 0, p1 when Y = 1), E[Y | P_Y] = P_Y whatever the data's
    distribution. Checked where it bites: 30 calibration rows of a badly miscalibrated
    score, 400 independent calibration sets; every bin of P_Y within 4 standard errors."""
    rng = np.random.default_rng(2024)
    errors, bins = [], []
    for _ in range(400):
        p, labels = scored_rows(30, seed=int(rng.integers(1 << 31)), decimals=1)
        test, test_labels = scored_rows(50, seed=int(rng.integers(1 << 31)), decimals=1)
        lower, upper = VennAbers().fit(p, labels).predict_interval(test)
        picked = np.where(test_labels == 1, upper[:, 1], lower[:, 1])
        errors.append(test_labels - picked)
        bins.append(np.minimum((picked * 5).astype(int), 4))
    error, which = np.stack(errors), np.stack(bins)
    for b in range(5):
        per_set = [row[mask].sum() for row, mask in zip(error, which == b, strict=True)]
        count = (which == b).sum()
        mean = np.sum(per_set) / count
        standard_error = np.std(per_set, ddof=1) * np.sqrt(len(per_set)) / count
        assert abs(mean) < 4 * standard_error + 1e-12, (b, mean, standard_error, count)
    # ... while the scores themselves are far off (true P = p ** 0.5)
    assert abs(np.mean(test_labels - test)) > 0.1
