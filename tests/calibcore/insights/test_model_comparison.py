"""Comparing models on the same rows against a paired bootstrap written out
by hand: the same resample counts expanded into rows, the measures of calibcore.metrics
on them, differences, intervals and p-values computed here."""

from __future__ import annotations

import numpy as np
import pytest

from calibcore import metrics
from calibcore.exceptions import CalibrationInputError
from calibcore.insights import compare_models
from calibcore.metrics import global_measures, resample_blocks

BY_HAND = {"accuracy": metrics.accuracy, "nll": metrics.negative_log_likelihood,
           "brier": metrics.brier_score, "ece": metrics.expected_calibration_error}


def three_models(n_rows: int, seed: int = 0) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n_rows)
    truth = 1 / (1 + np.exp(-x))
    labels = (rng.random(n_rows) < truth).astype(int)
    return labels, {"truth": truth, "hot": 1 / (1 + np.exp(-1.6 * x)),
                    "near": 1 / (1 + np.exp(-1.02 * x))}


def test_paired_differences_equal_a_bootstrap_by_hand() -> None:
    labels, models = three_models(1_500)
    n_bootstrap, seed = 60, 4
    result = compare_models(labels, models, reference="truth", n_bootstrap=n_bootstrap,
                            random_state=seed)
    assert result.reference == "truth" and result.n == 1_500
    counts = np.concatenate(list(resample_blocks(labels.size, n_bootstrap, seed)))
    for model in result.models[1:]:
        got = {d.key: d for d in model.differences}
        for key, measure in BY_HAND.items():
            estimate = measure(labels, models[model.name]) - measure(labels, models["truth"])
            resampled = []
            for row_counts in counts:
                rows = np.repeat(np.arange(labels.size), row_counts.astype(int))
                resampled.append(measure(labels[rows], models[model.name][rows])
                                 - measure(labels[rows], models["truth"][rows]))
            resampled = np.array(resampled)
            low_q, high_q = np.quantile(resampled, [0.025, 0.975])
            low = min(low_q, 2 * estimate - high_q, estimate)
            high = max(high_q, 2 * estimate - low_q, estimate)
            p_value = (1 + np.sum(np.abs(resampled - estimate) >= abs(estimate))) / (
                1 + n_bootstrap)
            assert got[key].value == pytest.approx(estimate, abs=1e-12), key
            assert got[key].low == pytest.approx(low, abs=1e-9), key
            assert got[key].high == pytest.approx(high, abs=1e-9), key
            assert got[key].p_value == pytest.approx(min(p_value, 1.0), abs=1e-12), key
            assert got[key].low <= got[key].value <= got[key].high
    hot = {d.key: d for d in result.models[1].differences}
    assert hot["ece"].value > 0 and hot["ece"].low > 0 and hot["ece"].p_value < 0.05
    near = {d.key: d for d in result.models[2].differences}
    assert near["nll"].low <= 0 <= near["nll"].high  # indistinguishable from the truth


def test_each_model_keeps_its_own_measures_and_intervals() -> None:
    labels, models = three_models(3_000, seed=2)
    result = compare_models(labels, models, n_bootstrap=50, random_state=1)
    assert result.reference == "truth" and result.models[0].differences == ()
    for model in result.models:
        alone = global_measures(labels, models[model.name], n_bootstrap=50, random_state=1,
                                interval="hybrid")
        for estimate in alone.measures:
            assert model.measures[estimate.key] == estimate


def test_large_files_resample_a_subsample_and_still_hold_their_estimates() -> None:
    labels, models = three_models(60_000, seed=5)
    result = compare_models(labels, models, n_bootstrap=40)
    for model in result.models[1:]:
        for difference in model.differences:
            assert difference.low <= difference.value <= difference.high
            assert 0 < difference.p_value <= 1


def test_bad_comparisons_are_refused() -> None:
    labels, models = three_models(200)
    with pytest.raises(CalibrationInputError, match="two models"):
        compare_models(labels, {"truth": models["truth"]})
    with pytest.raises(CalibrationInputError, match="no model named"):
        compare_models(labels, models, reference="nope")
    with pytest.raises(CalibrationInputError, match="same rows"):
        compare_models(labels, {"a": models["truth"], "b": np.column_stack(
            [1 - models["hot"], models["hot"] * 0.5, models["hot"] * 0.5])})
