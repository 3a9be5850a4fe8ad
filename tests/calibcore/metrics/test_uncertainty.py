"""Bootstrap intervals (calibcore.metrics.uncertainty): values equal the plain measures,
vectorized resamples equal an explicit resample-and-recompute loop, seeding."""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calibcore import metrics
from calibcore.exceptions import CalibrationInputError
from calibcore.metrics import (
    MEASURES,
    binned_rows,
    bootstrap_interval,
    global_measures,
    interval_rows,
    laplace_kernel_rows,
    resample_blocks,
    resample_counts,
    smooth_calibration_rows,
    smooth_ece_rows,
    view_problems,
)

PLAIN = {
    "ece": metrics.expected_calibration_error,
    "mce": metrics.maximum_calibration_error,
    "binned_ece_plus_width": metrics.binned_ece_plus_width,
    "interval_calibration_error": metrics.interval_calibration_error,
    "laplace_kernel_calibration_error": metrics.laplace_kernel_calibration_error,
    "smooth_calibration_error": metrics.smooth_calibration_error,
    "smooth_ece": metrics.smooth_ece,
}


def binary_data(n: int = 400, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    truth = rng.uniform(size=n)
    return (rng.uniform(size=n) < truth).astype(int), np.clip(truth**1.5 + 0.05, 0, 1)


def multiclass_data(n: int = 300, k: int = 4, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    proba = rng.dirichlet(np.full(k, 0.7), size=n)
    labels = np.array([rng.choice(k, p=np.sqrt(row) / np.sqrt(row).sum()) for row in proba])
    return labels, proba


def plain_value(key: str, y, p, view: str, n_bins: int, binning: str) -> float:
    options = {"view": view}
    if key in ("ece", "mce"):
        options |= {"n_bins": n_bins, "binning": binning}
    if key == "binned_ece_plus_width":
        options |= {"n_bins": n_bins}
    if key == "classwise_ece":
        return metrics.classwise_expected_calibration_error(y, p, n_bins=n_bins, binning=binning)
    simple = {
        "brier": metrics.brier_score,
        "binary_brier": metrics.binary_brier_score,
        "nll": metrics.negative_log_likelihood,
        "accuracy": metrics.accuracy,
    }
    if key in simple:
        return simple[key](y, p)
    return PLAIN[key](y, p, **options)


@pytest.mark.parametrize(
    ("data", "view", "binning"),
    [
        (binary_data, "top_label", "equal_width"),
        (binary_data, "positive", "equal_mass"),
        (multiclass_data, "top_label", "equal_mass"),
        (multiclass_data, "classwise", "equal_width"),
    ],
)
def test_values_equal_the_plain_measures(data, view: str, binning: str) -> None:
    y, p = data()
    result = global_measures(y, p, view=view, n_bins=10, binning=binning, n_bootstrap=0)
    assert result.n == y.size and result.view == view
    for measure in result.measures:
        if measure.value is None:
            assert measure.key == "binary_brier" and p.ndim == 2
            continue
        expected = plain_value(measure.key, y, p, view, 10, binning)
        assert measure.value == pytest.approx(expected, abs=1e-12), measure.key
        assert measure.low is None and measure.high is None


def test_every_measure_is_listed_once_with_its_meaning() -> None:
    y, p = binary_data()
    result = global_measures(y, p, n_bootstrap=0)
    assert [m.key for m in result.measures] == list(MEASURES)
    consistent = {m.key for m in result.measures if m.consistent}
    assert consistent == {
        "interval_calibration_error",
        "laplace_kernel_calibration_error",
        "smooth_calibration_error",
        "smooth_ece",
    }
    assert all(m.meaning and len(m.meaning) < 90 for m in result.measures)
    assert result["smooth_ece"].name == "smooth ECE"


def test_resample_counts_are_bootstrap_resamples() -> None:
    counts = resample_counts(np.random.default_rng(0), 50, 300)
    assert counts.shape == (300, 50)
    assert np.all(counts.sum(axis=1) == 50) and np.all(counts == np.round(counts))
    # Each row is drawn with probability 1/n per draw: about 63% distinct rows.
    assert np.mean(counts > 0) == pytest.approx(1 - (1 - 1 / 50) ** 50, abs=0.02)


KERNELS = [
    laplace_kernel_rows,
    interval_rows,
    smooth_calibration_rows,
    lambda s, r, w: smooth_ece_rows(s, r, w)[0],
    lambda s, r, w: binned_rows(s, r, w, 8, "equal_width")[0],
    lambda s, r, w: binned_rows(s, r, w, 8, "equal_width")[1],
    lambda s, r, w: binned_rows(s, r, w, 8, "equal_mass")[0],
    lambda s, r, w: binned_rows(s, r, w, 8, "equal_mass")[1],
]
PUBLIC = [
    metrics.laplace_kernel_calibration_error,
    metrics.interval_calibration_error,
    metrics.smooth_calibration_error,
    metrics.smooth_ece,
    partial(metrics.expected_calibration_error, n_bins=8),
    partial(metrics.maximum_calibration_error, n_bins=8),
    partial(metrics.expected_calibration_error, n_bins=8, binning="equal_mass"),
    partial(metrics.maximum_calibration_error, n_bins=8, binning="equal_mass"),
]


@pytest.mark.parametrize(("kernel", "public"), list(zip(KERNELS, PUBLIC, strict=True)))
def test_count_weights_equal_explicitly_resampled_data(kernel, public) -> None:
    y, p = binary_data(n=150, seed=5)
    counts = resample_counts(np.random.default_rng(9), y.size, 6)
    (problem,) = view_problems(y, np.column_stack([1 - p, p]), "top_label")
    vectorized = kernel(problem.scores, problem.residuals, problem.reorder(counts))
    rows = [np.repeat(np.arange(y.size), row.astype(int)) for row in counts]
    explicit = [public(y[r], p[r]) for r in rows]
    np.testing.assert_allclose(vectorized, explicit, rtol=1e-10, atol=1e-12)


def test_intervals_equal_a_resample_and_recompute_loop() -> None:
    y, p = multiclass_data(n=200)
    result = global_measures(y, p, n_bins=6, n_bootstrap=40, random_state=11)
    draws = np.concatenate(list(resample_blocks(y.size, 40, 11)))
    rows = [np.repeat(np.arange(y.size), row.astype(int)) for row in draws]
    for key in ("ece", "nll", "laplace_kernel_calibration_error", "smooth_calibration_error"):
        options = {"n_bins": 6} if key == "ece" else {}
        measure = PLAIN.get(key, metrics.negative_log_likelihood)
        values = [measure(y[r], p[r], **options) for r in rows]
        low, high = np.quantile(values, [0.025, 0.975])
        assert result[key].low == pytest.approx(low, abs=1e-12), key
        assert result[key].high == pytest.approx(high, abs=1e-12), key


def test_intervals_are_seeded() -> None:
    y, p = binary_data()
    first = global_measures(y, p, n_bootstrap=30, random_state=3)
    assert first == global_measures(y, p, n_bootstrap=30, random_state=3)
    assert first != global_measures(y, p, n_bootstrap=30, random_state=4)


def test_accuracy_interval_matches_the_binomial_standard_error() -> None:
    y, p = binary_data(n=2000, seed=2)
    result = global_measures(y, p, n_bootstrap=400, measures=["accuracy"])
    accuracy = result["accuracy"]
    half_width = 1.96 * np.sqrt(accuracy.value * (1 - accuracy.value) / y.size)
    assert accuracy.high - accuracy.low == pytest.approx(2 * half_width, rel=0.15)
    assert accuracy.low < accuracy.value < accuracy.high


def test_smce_is_skipped_above_its_row_limits_with_a_note() -> None:
    y, p = binary_data(n=300)
    skipped = global_measures(y, p, n_bootstrap=5, smce_max_rows=100)["smooth_calibration_error"]
    assert skipped.value is None and "smce_max_rows" in skipped.note
    no_band = global_measures(y, p, n_bootstrap=5, smce_bootstrap_max_rows=100)[
        "smooth_calibration_error"
    ]
    assert no_band.value is not None and no_band.low is None
    assert "smce_bootstrap_max_rows" in no_band.note


def test_binary_brier_is_marked_not_applicable_for_multiclass() -> None:
    y, p = multiclass_data()
    measure = global_measures(y, p, n_bootstrap=0, measures=["binary_brier"])["binary_brier"]
    assert measure.value is None and measure.note == "binary problems only"


@pytest.mark.parametrize(
    "options",
    [
        {"measures": ["ece", "ECE"]},
        {"n_bootstrap": -1},
        {"confidence_level": 1.0},
        {"binning": "quantile"},
        {"view": "positive"},
    ],
)
def test_bad_options_are_rejected(options) -> None:
    y, p = multiclass_data(n=30)
    with pytest.raises(CalibrationInputError):
        global_measures(y, p, **options)


def test_bootstrap_interval_of_any_measure() -> None:
    y, p = binary_data(n=500)
    measure = partial(metrics.laplace_kernel_calibration_error, view="positive")
    interval = bootstrap_interval(measure, y, p, n_resamples=50, random_state=1)
    assert interval.estimate == measure(y, p)
    assert 0 <= interval.low <= interval.high and interval.n_resamples == 50
    assert interval == bootstrap_interval(measure, y, p, n_resamples=50, random_state=1)


@settings(max_examples=25, deadline=None)
@given(st.integers(5, 60), st.integers(0, 10_000))
def test_intervals_bracket_plausible_values(n: int, seed: int) -> None:
    y, p = binary_data(n=n, seed=seed)
    result = global_measures(y, p, n_bootstrap=20, random_state=seed, smce_max_rows=0)
    for measure in result.measures:
        if measure.low is None:
            continue
        assert measure.low <= measure.high
        assert np.isfinite([measure.low, measure.high]).all()
        if measure.key != "nll":
            assert -1e-12 <= measure.low and measure.high <= 2 + 1e-12


def test_accuracy_interval_covers_the_truth_about_95_percent_of_the_time() -> None:
    rng = np.random.default_rng(0)
    covered = 0
    for _ in range(200):
        p = rng.uniform(size=300)
        y = (rng.uniform(size=300) < p).astype(int)
        truth = 0.75  # E[max(p, 1 - p)] for p ~ U[0, 1] with y ~ Bernoulli(p)
        accuracy = global_measures(y, p, n_bootstrap=200, measures=["accuracy"], random_state=rng)[
            "accuracy"
        ]
        covered += accuracy.low <= truth <= accuracy.high
    assert 0.90 <= covered / 200 <= 0.99


def test_basic_interval_reflects_the_percentiles_about_the_estimate() -> None:
    rng = np.random.default_rng(3)
    positive = rng.uniform(0, 1, 800)
    labels = (rng.uniform(0, 1, 800) < positive ** 1.3).astype(int)
    percentile = global_measures(labels, positive, n_bootstrap=100, measures=["ece", "nll"])
    basic = global_measures(labels, positive, n_bootstrap=100, measures=["ece", "nll"],
                            interval="basic")
    for key in ("ece", "nll"):
        p, b = percentile[key], basic[key]
        assert b.plug_in == p.value == p.plug_in
        assert b.low == pytest.approx(max(2 * p.value - p.high, 0.0))
        assert b.high == pytest.approx(2 * p.value - p.low)
        assert b.low <= b.value <= b.high
    assert basic["nll"].value == basic["nll"].plug_in  # a plain mean: no bias correction
    assert basic["ece"].value < basic["ece"].plug_in  # corrected down
    # binned ECE is biased upwards under resampling: the basic interval sits lower
    assert basic["ece"].low < percentile["ece"].low


def test_hybrid_interval_spans_the_basic_and_percentile_ones() -> None:
    rng = np.random.default_rng(4)
    positive = rng.uniform(0, 1, 800)
    labels = (rng.uniform(0, 1, 800) < positive ** 1.2).astype(int)
    measures = ["ece", "smooth_ece", "nll"]
    by_method = {method: global_measures(labels, positive, n_bootstrap=100, measures=measures,
                                         interval=method)
                 for method in ("percentile", "basic", "hybrid")}
    percentile, basic, hybrid = by_method["percentile"], by_method["basic"], by_method["hybrid"]
    for key in ("ece", "smooth_ece"):
        assert hybrid[key].value == basic[key].value  # the same bias-corrected estimate
        assert hybrid[key].low == pytest.approx(min(basic[key].low, percentile[key].low))
        assert hybrid[key].high == pytest.approx(max(basic[key].high, percentile[key].high))
        assert hybrid[key].low <= hybrid[key].value <= hybrid[key].high
    # NLL is a plain mean: no correction, and the basic interval as it is
    assert (hybrid["nll"].value, hybrid["nll"].low, hybrid["nll"].high) == (
        basic["nll"].value, basic["nll"].low, basic["nll"].high)
