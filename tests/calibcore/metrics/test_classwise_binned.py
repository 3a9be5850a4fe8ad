"""All classes' binned ECE and MCE in one pass equal a per-class loop written here."""

from __future__ import annotations

import numpy as np
import pytest

from calibcore.metrics import global_measures
from calibcore.metrics._classwise_binned import ClasswiseBins
from calibcore.metrics._resampling import resample_counts
from calibcore.metrics._weighted_measures import WeightedMeasures


def predictions(n_rows: int, n_classes: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    logits = rng.normal(scale=2.0, size=(n_rows, n_classes))
    proba = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    labels = np.array([rng.choice(n_classes, p=row ** 1.5 / (row ** 1.5).sum()) for row in proba])
    return labels, proba


def reference(labels: np.ndarray, proba: np.ndarray, weights: np.ndarray,
              n_bins: int) -> tuple[np.ndarray, np.ndarray]:
    """ECE and MCE of each class and resample, by a loop over resamples, classes, bins."""
    n_classes = proba.shape[1]
    ece = np.zeros((weights.shape[0], n_classes))
    mce = np.zeros_like(ece)
    for b, w in enumerate(weights):
        for k in range(n_classes):
            scores = proba[:, k]
            residuals = scores - (labels == k)
            # right-closed equal-width bins, the first closed on both sides
            bins = np.clip(np.ceil(scores * n_bins).astype(int) - 1, 0, n_bins - 1)
            gaps = []
            for j in range(n_bins):
                inside = bins == j
                count, total = w[inside].sum(), (w[inside] * residuals[inside]).sum()
                ece[b, k] += abs(total) / w.sum()
                if count > 0:
                    gaps.append(abs(total) / count)
            mce[b, k] = max(gaps)
    return ece, mce


@pytest.mark.parametrize(("n_rows", "n_classes", "n_bins", "seed"),
                         [(300, 3, 15, 0), (400, 12, 10, 1), (250, 40, 15, 2), (200, 2, 7, 3)])
def test_every_class_at_once_equals_a_loop_over_classes(n_rows: int, n_classes: int,
                                                        n_bins: int, seed: int) -> None:
    labels, proba = predictions(n_rows, n_classes, seed)
    weights = np.vstack([np.ones(n_rows),
                         resample_counts(np.random.default_rng(seed), n_rows, 5)])
    residuals = proba.T - (labels[None, :] == np.arange(n_classes)[:, None])
    ece, mce = ClasswiseBins(list(proba.T), list(residuals), n_bins).rows(weights)
    expected_ece, expected_mce = reference(labels, proba, weights, n_bins)
    np.testing.assert_allclose(ece, expected_ece, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(mce, expected_mce, rtol=1e-12, atol=1e-14)


def test_scores_on_bin_edges_fall_in_the_lower_bin() -> None:
    # scores exactly on an edge belong to the bin below it (right-closed bins)
    proba = np.array([[0.2, 0.8], [0.4, 0.6], [0.6, 0.4], [1.0, 0.0], [0.0, 1.0]])
    labels = np.array([0, 1, 1, 0, 1])
    weights = np.array([[1.0, 2.0, 0.0, 1.0, 3.0]])
    residuals = proba.T - (labels[None, :] == np.arange(2)[:, None])
    ece, mce = ClasswiseBins(list(proba.T), list(residuals), 5).rows(weights)
    expected = reference(labels, proba, weights, 5)
    np.testing.assert_allclose(ece, expected[0], rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(mce, expected[1], rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("view", ["top_label", "classwise"])
def test_global_measures_keep_the_per_class_values(view: str) -> None:
    # the one-pass engine against the per-problem kernel of every class, averaged
    labels, proba = predictions(500, 25, 4)
    weights = resample_counts(np.random.default_rng(5), 500, 8)
    context = WeightedMeasures.of_rows(labels, proba, view, 15, "equal_width")
    out = context.rows(["ece", "mce", "classwise_ece"], weights, skip_smce=True)
    ece, mce = reference(labels, proba, weights, 15)
    np.testing.assert_allclose(out["classwise_ece"], ece.mean(axis=1), rtol=1e-12)
    if view == "classwise":
        np.testing.assert_allclose(out["ece"], ece.mean(axis=1), rtol=1e-12)
        np.testing.assert_allclose(out["mce"], mce.mean(axis=1), rtol=1e-12)
    result = global_measures(labels, proba, view=view, n_bootstrap=20,
                             measures=["ece", "classwise_ece"])
    assert result["classwise_ece"].plug_in == pytest.approx(
        reference(labels, proba, np.ones((1, 500)), 15)[0].mean(), rel=1e-12)


PER_PROBLEM = ("interval_calibration_error", "laplace_kernel_calibration_error", "smooth_ece")


def test_classwise_consistent_intervals_stop_at_the_budget_and_values_stay() -> None:
    # 3 classes x (200 rows + 10,000 for the smoothing grid) = 30,600 rows of work
    labels, proba = predictions(200, 3, 6)
    kept = global_measures(labels, proba, view="classwise", n_bootstrap=30)
    cut = global_measures(labels, proba, view="classwise", n_bootstrap=30,
                          consistent_bootstrap_max_rows=30_000)
    for key in PER_PROBLEM:
        assert kept[key].low is not None and kept[key].low <= kept[key].value
        assert cut[key].low is None and cut[key].high is None
        assert cut[key].value == cut[key].plug_in == kept[key].plug_in
        assert "consistent_bootstrap_max_rows=30,000" in cut[key].note
    for key in ("ece", "mce", "classwise_ece", "brier", "nll", "accuracy"):
        assert (cut[key].value, cut[key].low, cut[key].high) == (
            kept[key].value, kept[key].low, kept[key].high)
    # one problem (the top label) is never cut
    top = global_measures(labels, proba, n_bootstrap=30, consistent_bootstrap_max_rows=1)
    assert all(top[key].low is not None for key in PER_PROBLEM)
