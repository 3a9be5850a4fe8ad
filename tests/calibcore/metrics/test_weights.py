"""Weighted measures: integer weights give what the repeated rows give, exactly."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calibcore import metrics as M

MEASURES: list[Callable[..., Any]] = [
    M.expected_calibration_error, M.maximum_calibration_error, M.binned_ece_plus_width,
    M.laplace_kernel_calibration_error, M.interval_calibration_error,
    M.smooth_calibration_error, M.smooth_ece]


def _data(n: int, n_classes: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    proba = rng.dirichlet(np.full(n_classes, 0.7), n)
    truth = proba ** 1.3 / (proba ** 1.3).sum(axis=1, keepdims=True)
    labels = (rng.random(n)[:, None] > np.cumsum(truth, axis=1)).sum(axis=1)
    weights = rng.integers(0, 5, n).astype(np.float64)
    weights[0] = 1.0
    return np.minimum(labels, n_classes - 1), proba, weights


@pytest.mark.parametrize("n_classes", [2, 4])
@pytest.mark.parametrize("view", ["top_label", "positive", "classwise"])
def test_every_measure_with_integer_weights_equals_the_repeated_rows(
        n_classes: int, view: str) -> None:
    if view == "positive" and n_classes > 2:
        return
    labels, proba, weights = _data(600, n_classes, seed=n_classes)
    repeated = np.repeat(np.arange(labels.size), weights.astype(int))
    for measure in MEASURES:
        ours = measure(labels, proba, view=view, sample_weight=weights)
        theirs = measure(labels[repeated], proba[repeated], view=view)
        assert ours == pytest.approx(theirs, abs=1e-9), measure.__name__
    for binning in ("equal_width", "equal_mass"):
        for measure in (M.expected_calibration_error, M.maximum_calibration_error):
            assert measure(labels, proba, view=view, binning=binning, sample_weight=weights) \
                == pytest.approx(measure(labels[repeated], proba[repeated], view=view,
                                         binning=binning), abs=1e-12)
        np.testing.assert_allclose(
            M.ece_by_bin_count(labels, proba, [3, 15, 40], binning=binning, view=view,
                               sample_weight=weights),
            M.ece_by_bin_count(labels[repeated], proba[repeated], [3, 15, 40],
                               binning=binning, view=view), atol=1e-12)
        table = M.global_measures(labels, proba, view=view, binning=binning, n_bootstrap=0,
                                  sample_weight=weights)
        plain = M.global_measures(labels[repeated], proba[repeated], view=view,
                                  binning=binning, n_bootstrap=0)
        for estimate in table.measures:
            if estimate.value is not None:
                assert estimate.value == pytest.approx(plain[estimate.key].value, abs=1e-9)
    for measure in (M.brier_score, M.negative_log_likelihood, M.accuracy):
        assert measure(labels, proba, sample_weight=weights) == pytest.approx(
            measure(labels[repeated], proba[repeated]), abs=1e-12)


def test_the_weighted_means_by_hand() -> None:
    labels = np.array([0, 1, 1, 0])
    positive = np.array([0.2, 0.9, 0.6, 0.4])
    weights = np.array([2.0, 1.0, 3.0, 0.5])
    brier = (2 * 0.2**2 + 0.1**2 + 3 * 0.4**2 + 0.5 * 0.4**2) / 6.5
    assert M.binary_brier_score(labels, positive, sample_weight=weights) == pytest.approx(brier)
    # one bin over [0, 1]: |sum w (p - y)| / sum w
    gap = abs(2 * 0.2 - 0.1 - 3 * 0.4 + 0.5 * 0.4) / 6.5
    assert M.expected_calibration_error(labels, positive, n_bins=1, view="positive",
                                        sample_weight=weights) == pytest.approx(gap)
    # top label: rows 0, 1 and 3 are right (row 2 predicts class 1 and is class 1: right too)
    assert M.accuracy(labels, positive, sample_weight=[1, 1, 1, 3]) == pytest.approx(1.0)
    assert M.accuracy(labels, np.array([0.2, 0.9, 0.4, 0.4]),
                      sample_weight=[1, 1, 2, 4]) == pytest.approx(6 / 8)


@settings(max_examples=6, deadline=None, derandomize=True)
@given(seed=st.integers(0, 10_000), scale=st.floats(0.5, 50))
def test_scaling_every_weight_changes_nothing(seed: int, scale: float) -> None:
    """Up to the smooth ECE's density floor (relplot's 1e-4 added to the unnormalized
    density), which weighs a little more against a smaller total weight."""
    labels, proba, weights = _data(200, 3, seed)
    weights = weights + np.random.default_rng(seed).random(weights.size)
    for measure in (*MEASURES, M.brier_score, M.negative_log_likelihood, M.accuracy):
        assert measure(labels, proba, sample_weight=weights * scale) == pytest.approx(
            measure(labels, proba, sample_weight=weights), rel=1e-5, abs=1e-12)


def test_zero_weight_rows_are_as_if_left_out() -> None:
    labels, proba, weights = _data(300, 3, seed=9)
    kept = weights > 0
    for measure in (*MEASURES, M.brier_score, M.accuracy):
        assert measure(labels, proba, sample_weight=weights) == pytest.approx(
            measure(labels[kept], proba[kept], sample_weight=weights[kept]), abs=1e-12)


def test_weights_of_one_resample_exactly_as_no_weights() -> None:
    labels, proba, _ = _data(400, 3, seed=2)
    ones = M.global_measures(labels, proba, n_bootstrap=40, sample_weight=np.ones(400))
    plain = M.global_measures(labels, proba, n_bootstrap=40)
    for estimate in ones.measures:
        assert (estimate.value, estimate.low, estimate.high) == pytest.approx(
            (plain[estimate.key].value, plain[estimate.key].low, plain[estimate.key].high))
    assert ones.n_eff == pytest.approx(400) and plain.n_eff is None
    test = M.consistency_resampling_test(labels, proba, sample_weight=np.ones(400))
    assert test.p_value == M.consistency_resampling_test(labels, proba).p_value


def test_the_bootstrap_resamples_rows_carrying_their_weights() -> None:
    """Doubling one half of the rows' weights moves the estimate; the interval still
    rests on the 2,000 rows there are (it is not the interval of 3,000 rows)."""
    rng = np.random.default_rng(4)
    positive = rng.uniform(0.05, 0.95, 2000)
    labels = (rng.random(2000) < positive).astype(int)
    weights = np.where(np.arange(2000) < 1000, 2.0, 1.0)
    weighted = M.global_measures(labels, positive, view="positive", sample_weight=weights,
                                 n_bootstrap=200, measures=["brier"])
    repeated = np.repeat(np.arange(2000), weights.astype(int))
    plain = M.global_measures(labels[repeated], positive[repeated], view="positive",
                              n_bootstrap=200, measures=["brier"])
    width = weighted["brier"].high - weighted["brier"].low
    assert weighted["brier"].plug_in == pytest.approx(plain["brier"].plug_in, abs=1e-12)
    # the repeated rows pretend to be 3,000 rows: narrower by about sqrt(3000 / n_eff)
    assert width > 1.1 * (plain["brier"].high - plain["brier"].low)


def test_large_tables_resample_cells_with_the_weights_of_each_label() -> None:
    rng = np.random.default_rng(5)
    positive = rng.beta(2, 5, 60_000)
    labels = (rng.random(positive.size) < positive).astype(int)
    weights = np.where(labels == 0, 4.0, 1.0)  # a log that kept a quarter of the negatives
    table = M.global_measures(labels, positive, view="positive", sample_weight=weights,
                              n_bootstrap=50, measures=["ece", "brier"])
    assert "cells" in table.resampling and "carries its weight" in table.resampling
    assert table["ece"].plug_in == pytest.approx(M.expected_calibration_error(
        labels, positive, view="positive", sample_weight=weights), abs=1e-12)
    assert table["ece"].low <= table["ece"].value <= table["ece"].high


def test_weighted_reliability_diagram_by_hand() -> None:
    labels = np.array([0, 1, 1, 0, 1])
    positive = np.array([0.1, 0.2, 0.8, 0.9, 0.7])
    weights = np.array([3.0, 1.0, 2.0, 2.0, 0.0])
    (diagram,) = M.binned_reliability(labels, positive, n_bins=2, view="positive",
                                      sample_weight=weights)
    np.testing.assert_allclose(diagram.weight, [4.0, 4.0])
    np.testing.assert_allclose(diagram.observed, [1 / 4, 2 / 4])
    np.testing.assert_allclose(diagram.mean_score, [(0.3 + 0.2) / 4, (1.6 + 1.8) / 4])
    np.testing.assert_allclose(diagram.n_eff, [16 / 10, 16 / 8])
    assert diagram.count.tolist() == [2, 3]


def test_weighted_calibration_test_holds_its_level() -> None:
    rejected = 0
    for seed in range(60):
        rng = np.random.default_rng(seed)
        positive = rng.beta(2, 3, 400)
        labels = (rng.random(400) < positive).astype(int)
        result = M.consistency_resampling_test(labels, positive, view="positive",
                                               sample_weight=rng.gamma(1.0, 1.0, 400),
                                               n_resamples=99, random_state=seed)
        rejected += result.p_value <= 0.05
    assert rejected <= 8  # 5% of 60 is 3; 8 or more has probability < 2%
