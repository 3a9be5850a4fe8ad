"""Weighted decision curves: integer weights give exactly the net benefit of the rows
repeated by their weights; the weighted formula written out by hand here; the weighted
bootstrap resamples rows carrying their weights (seeded, a band around the estimate)."""

from __future__ import annotations

import numpy as np
import pytest

from calibcore.decision import decision_curve, net_benefit, net_benefit_difference
from calibcore.exceptions import CalibrationInputError

THRESHOLDS = [0.05, 0.1, 0.2, 0.35, 0.5, 0.7, 0.9]


def _data(n: int = 600, seed: int = 3) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    scores = rng.beta(2, 3, n)
    labels = (rng.random(n) < scores ** 1.3).astype(int)
    weights = rng.integers(0, 5, n)
    weights[0] = 1
    return labels, scores, weights


def _weighted_by_hand(labels: np.ndarray, scores: np.ndarray, weights: np.ndarray,
                      thresholds: list[float]) -> list[float]:
    """(sum w TP - sum w FP * t / (1 - t)) / sum w, a loop over rows."""
    total = float(sum(weights))
    out = []
    for t in thresholds:
        tp = fp = 0.0
        for label, score, weight in zip(labels, scores, weights, strict=True):
            if score >= t:
                if label == 1:
                    tp += weight
                else:
                    fp += weight
        out.append((tp - fp * t / (1 - t)) / total)
    return out


def test_integer_weights_give_the_net_benefit_of_the_repeated_rows() -> None:
    labels, scores, weights = _data()
    weighted = decision_curve(labels, scores, thresholds=THRESHOLDS, n_bootstrap=0,
                              sample_weight=weights)
    repeated = decision_curve(np.repeat(labels, weights), np.repeat(scores, weights),
                              thresholds=THRESHOLDS, n_bootstrap=0)
    np.testing.assert_allclose(weighted.model, repeated.model, rtol=0, atol=1e-12)
    np.testing.assert_allclose(weighted.treat_all, repeated.treat_all, rtol=0, atol=1e-12)
    assert weighted.prevalence == pytest.approx(repeated.prevalence, abs=1e-12)
    # the weights matter: the unweighted curve is another curve
    assert np.abs(decision_curve(labels, scores, thresholds=THRESHOLDS, n_bootstrap=0).model
                  - weighted.model).max() > 1e-3


def test_weighted_net_benefit_is_the_formula_by_hand_with_fractional_weights() -> None:
    labels, scores, _ = _data(200, seed=5)
    weights = np.random.default_rng(1).gamma(0.7, 2.0, labels.size)
    ours = net_benefit(labels, scores, thresholds=THRESHOLDS, sample_weight=weights)
    np.testing.assert_allclose(ours, _weighted_by_hand(labels, scores, weights, THRESHOLDS),
                               rtol=0, atol=1e-12)


def test_unit_weights_change_nothing_but_the_band_draws() -> None:
    labels, scores, _ = _data()
    plain = decision_curve(labels, scores, thresholds=THRESHOLDS, n_bootstrap=50)
    ones = decision_curve(labels, scores, thresholds=THRESHOLDS, n_bootstrap=50,
                          sample_weight=np.ones(labels.size))
    np.testing.assert_allclose(ones.model, plain.model, atol=1e-12)
    # both bands are bootstraps of the same rows: close, though drawn differently
    np.testing.assert_allclose(ones.lower, plain.lower, atol=0.03)
    np.testing.assert_allclose(ones.upper, plain.upper, atol=0.03)


def test_weighted_band_is_seeded_and_holds_the_estimate() -> None:
    labels, scores, weights = _data()
    first = decision_curve(labels, scores, thresholds=THRESHOLDS, n_bootstrap=200,
                           sample_weight=weights, random_state=4)
    again = decision_curve(labels, scores, thresholds=THRESHOLDS, n_bootstrap=200,
                           sample_weight=weights, random_state=4)
    np.testing.assert_array_equal(first.lower, again.lower)
    assert np.all(first.lower <= first.model + 1e-12) and np.all(first.model <= first.upper
                                                                  + 1e-12)
    # thresholds below 0.7 treat many rows: their bands have width
    assert np.all((first.upper - first.lower)[:5] > 0)


def test_weighted_band_matches_a_row_bootstrap_written_out() -> None:
    """The band is the percentile band of row resamples whose drawn rows carry their
    weights: a brute-force loop over the same draws gives the same band."""
    labels, scores, weights = _data(150, seed=9)
    curve = decision_curve(labels, scores, thresholds=THRESHOLDS, n_bootstrap=40,
                           sample_weight=weights, random_state=11)
    rng = np.random.default_rng(11)
    resampled = []
    for _ in range(40):
        rows = rng.integers(0, labels.size, size=labels.size)
        resampled.append(_weighted_by_hand(labels[rows], scores[rows], weights[rows],
                                           THRESHOLDS))
    low, high = np.quantile(np.array(resampled), [0.025, 0.975], axis=0)
    np.testing.assert_allclose(curve.lower, low, atol=1e-12)
    np.testing.assert_allclose(curve.upper, high, atol=1e-12)


def test_weighted_difference_equals_the_repeated_rows_and_its_band_is_paired() -> None:
    labels, scores, weights = _data()
    candidate = np.clip(scores * 0.8 + 0.05, 0, 1)
    weighted = net_benefit_difference(labels, scores, candidate, thresholds=THRESHOLDS,
                                      n_bootstrap=0, sample_weight=weights)
    repeated = net_benefit_difference(np.repeat(labels, weights), np.repeat(scores, weights),
                                      np.repeat(candidate, weights), thresholds=THRESHOLDS,
                                      n_bootstrap=0)
    for field in ("reference", "candidate", "difference", "changed"):
        np.testing.assert_allclose(getattr(weighted, field), getattr(repeated, field),
                                   rtol=0, atol=1e-12)
    assert weighted.prevalence == pytest.approx(repeated.prevalence, abs=1e-12)
    banded = net_benefit_difference(labels, scores, candidate, thresholds=THRESHOLDS,
                                    n_bootstrap=100, sample_weight=weights)
    assert np.all(banded.lower <= banded.difference + 1e-12)
    assert np.all(banded.difference <= banded.upper + 1e-12)
    # same scores: the paired difference is exactly 0 in every resample
    same = net_benefit_difference(labels, scores, scores, thresholds=THRESHOLDS,
                                  n_bootstrap=30, sample_weight=weights)
    assert np.all(same.lower == 0) and np.all(same.upper == 0)


def test_bad_weights_are_refused_naming_the_argument() -> None:
    labels, scores, weights = _data(50)
    with pytest.raises(CalibrationInputError, match="sample_weight"):
        decision_curve(labels, scores, sample_weight=-weights - 1.0)
    with pytest.raises(CalibrationInputError, match="sample_weight"):
        net_benefit_difference(labels, scores, scores, sample_weight=weights[:10])


def test_above_the_row_limit_cells_draw_the_row_bootstrap_band() -> None:
    """Above 20,000 rows a resample draws cells' counts and weights (exact for one weight
    per outcome, as negative downsampling's): its band matches a brute-force row
    bootstrap of the same data within the resampling noise."""
    rng = np.random.default_rng(12)
    n = 30_000
    scores = rng.beta(2, 5, n)
    labels = (rng.random(n) < scores).astype(int)
    weights = np.where(labels == 0, 10.0, 1.0) * rng.uniform(0.8, 1.2, n)
    cuts = [0.1, 0.2, 0.3, 0.5]
    curve = decision_curve(labels, scores, thresholds=cuts, n_bootstrap=300,
                           sample_weight=weights, random_state=1)
    draws = np.random.default_rng(2)
    treated = scores[None, :] >= np.array(cuts)[:, None]
    odds = np.array(cuts) / (1 - np.array(cuts))
    resampled = []
    for _ in range(300):
        rows = draws.integers(0, n, n)
        w, hit, take = weights[rows], labels[rows] == 1, treated[:, rows]
        resampled.append(((take * (w * hit)).sum(1) - (take * (w * ~hit)).sum(1) * odds)
                         / w.sum())
    low, high = np.quantile(np.array(resampled), [0.025, 0.975], axis=0)
    width = high - low
    np.testing.assert_allclose(curve.lower, low, atol=0.2 * width.max())
    np.testing.assert_allclose(curve.upper, high, atol=0.2 * width.max())
    np.testing.assert_allclose(curve.upper - curve.lower, width, rtol=0.25)
