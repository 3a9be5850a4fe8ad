"""The intervals shown beside the measures: they contain the estimate shown, and cover the
true value as often as they claim.

Synthetic families (binary, top-label view): the positive-class probability p is uniform
on [0, 1] and P(y = 1 | p) = 0.5 + s (p - 0.5) with s < 1, an over-confident model. The
confidence c = max(p, 1 - p) is then uniform on [0.5, 1] and the top-label residual is
E[c - correct | c] = (1 - s)(c - 0.5), so the true values follow by integration
(ECE (1 - s) / 4: 0.10 at s = 0.6, 0.025 at s = 0.9).

Measured coverage at n = 2,000 (200 replications, 200 resamples), ECE / smooth ECE / kCE:

| ECE | basic | percentile | hybrid (shown) |
| --- | --- | --- | --- |
| 0.10 | 92.5 / 90.5 / 91.5% | 91 / 94 / 94% | 95 / 94.5 / 94% |
| 0.05 | 90.5 / 88 / 94% | 84.5 / 94 / 96% | 95.5 / 96.5 / 96.5% |
| 0.025 | 90.5 / 86 / 85% | 56.5 / 69 / 95% | 94.5 / 95.5 / 96.5% |
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calibcore import metrics
from calibcore.metrics import MEASURES, global_measures
from tests.replications import coverage

SHRINK = 0.6  # the family of the convergence test
COVERED = ("ece", "smooth_ece", "laplace_kernel_calibration_error")


def sample_family(rng: np.random.Generator, n_rows: int, shrink: float = SHRINK,
                  ) -> tuple[np.ndarray, np.ndarray]:
    proba = rng.random(n_rows)
    labels = (rng.random(n_rows) < 0.5 + shrink * (proba - 0.5)).astype(int)
    return labels, proba


def residual(confidence: np.ndarray, shrink: float = SHRINK) -> np.ndarray:
    return (1.0 - shrink) * (confidence - 0.5)


def true_ece(shrink: float = SHRINK, n_bins: int = 15) -> float:
    """Population binned ECE (equal-width bins on [0, 1]): a fine midpoint grid of c."""
    confidence = 0.5 + (np.arange(2_000_000) + 0.5) / 4_000_000
    bins = np.minimum((confidence * n_bins).astype(int), n_bins - 1)
    mass = np.bincount(bins, minlength=n_bins) / confidence.size
    mean_residual = np.bincount(bins, residual(confidence, shrink), minlength=n_bins) / np.maximum(
        np.bincount(bins, minlength=n_bins), 1)
    return float(np.sum(mass * np.abs(mean_residual)))


def true_kce(shrink: float = SHRINK) -> float:
    """sqrt(E[r(c) r(c') exp(-|c - c'|)]) for independent c, c' ~ U(0.5, 1), midpoint rule."""
    confidence = 0.5 + (np.arange(3_000) + 0.5) / 6_000
    weights = residual(confidence, shrink)
    kernel = np.exp(-np.abs(confidence[:, None] - confidence[None, :]))
    return float(np.sqrt(weights @ kernel @ weights / confidence.size**2))


def true_smooth_ece(shrink: float = SHRINK) -> float:
    """smooth ECE has no closed form; its value on 4 million rows stands for the truth
    (its sampling error there is about 1e-4, a fiftieth of an interval's width at n=2,000)."""
    labels, proba = sample_family(np.random.default_rng(2024), 4_000_000, shrink)
    return metrics.smooth_ece(labels, proba)


def test_the_true_values_are_what_the_measures_converge_to() -> None:
    labels, proba = sample_family(np.random.default_rng(7), 1_000_000)
    # the plug-in overshoots by O(1/sqrt(n)) at most; a million rows leave a few 1e-4
    assert metrics.expected_calibration_error(labels, proba) == pytest.approx(
        true_ece(), abs=2e-3)
    assert metrics.laplace_kernel_calibration_error(labels, proba) == pytest.approx(
        true_kce(), abs=2e-3)
    assert true_ece() == pytest.approx(0.10, abs=2e-3)  # 0.4 x mean(c - 0.5) = 0.4 x 0.25


@pytest.mark.slow
@pytest.mark.parametrize("shrink", [0.6, 0.9], ids=["ece_0.10", "ece_0.025"])
def test_nominal_95_percent_intervals_cover_the_truth(shrink: float) -> None:
    truth = {"ece": true_ece(shrink), "smooth_ece": true_smooth_ece(shrink),
             "laplace_kernel_calibration_error": true_kce(shrink)}
    rng = np.random.default_rng(11)

    def covered(replication: int) -> dict[str, bool]:
        labels, proba = sample_family(rng, 2_000, shrink)
        result = global_measures(labels, proba, measures=list(COVERED), n_bootstrap=200,
                                 random_state=replication, interval="hybrid")
        for key in COVERED:
            assert result[key].low <= result[key].value <= result[key].high
        return {key: result[key].low <= truth[key] <= result[key].high for key in COVERED}

    # 200 replications, or the first 100 when every interval covered in 94% of them
    rates = coverage(covered, 200)
    assert all(value >= 0.90 for value in rates.values()), rates


@pytest.mark.slow
@settings(max_examples=40)
@given(seed=st.integers(0, 2**31), n_rows=st.integers(2, 300), n_classes=st.integers(2, 4),
       method=st.sampled_from(["basic", "percentile", "hybrid"]))
def test_every_interval_contains_the_value_shown(seed, n_rows, n_classes, method) -> None:
    rng = np.random.default_rng(seed)
    logits = rng.normal(scale=rng.uniform(0.1, 4.0), size=(n_rows, n_classes))
    proba = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    labels = rng.integers(0, n_classes, n_rows)
    result = global_measures(labels, proba, n_bootstrap=30, random_state=seed,
                             interval=method)
    for estimate in result.measures:
        if estimate.low is None:
            continue
        assert estimate.low <= estimate.value <= estimate.high, estimate
        assert estimate.low >= 0.0
        if method == "percentile" or estimate.key in ("accuracy", "brier", "nll"):
            assert estimate.value == estimate.plug_in
    assert {m.key for m in result.measures} == set(MEASURES)
