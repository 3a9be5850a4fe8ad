"""Decision curves against Vickers & Elkin's net benefit written out as a loop here and
against the ``dcurves`` package; the bootstrap band and the paired difference; properties
(treat all at t -> 0 is the prevalence, nothing beats perfect foresight, row order does not
matter); refusals; the band's coverage by simulation (slow)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calibcore.decision import (
    DEFAULT_THRESHOLDS,
    MAX_THRESHOLDS,
    check_thresholds,
    decision_curve,
    net_benefit,
    net_benefit_difference,
)
from calibcore.exceptions import CalibrationInputError


def by_hand(labels: np.ndarray, scores: np.ndarray, thresholds: list[float],
            event: int = 1) -> list[float]:
    """Vickers & Elkin 2006: NB(t) = TP/n - FP/n * t / (1 - t), treating p >= t."""
    n = len(labels)
    out = []
    for t in thresholds:
        tp = fp = 0
        for label, score in zip(labels, scores, strict=True):
            if score >= t:
                if label == event:
                    tp += 1
                else:
                    fp += 1
        out.append(tp / n - fp / n * t / (1 - t))
    return out


def miscalibrated(n: int = 3_000, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """A binary model, over-confident, with scores rounded to 2 decimals (so many rows sit
    exactly on a threshold of the default grid: p >= t must treat them)."""
    rng = np.random.default_rng(seed)
    truth = rng.beta(1.2, 3.0, n)
    labels = (rng.random(n) < truth).astype(int)
    scores = np.clip(0.5 + 1.6 * (truth - 0.5), 0.0, 1.0).round(2)
    return labels, scores


def test_net_benefit_equals_the_formula_by_hand_at_every_threshold() -> None:
    labels, scores = miscalibrated()
    thresholds = list(DEFAULT_THRESHOLDS)
    curve = decision_curve(labels, scores, n_bootstrap=0)
    np.testing.assert_allclose(curve.model, by_hand(labels, scores, thresholds), rtol=0,
                               atol=1e-9)
    prevalence = labels.mean()
    np.testing.assert_allclose(
        curve.treat_all, [prevalence - (1 - prevalence) * t / (1 - t) for t in thresholds],
        rtol=0, atol=1e-12)
    assert (curve.treat_none == 0).all() and curve.prevalence == pytest.approx(prevalence)
    assert curve.n == labels.size and curve.positive_class == 1
    # a row exactly at a threshold is treated there (p >= t), not at the next one
    assert np.isin(scores, np.round(curve.thresholds, 2)).mean() > 0.5


def test_more_classes_are_one_class_against_the_rest_default_the_last() -> None:
    rng = np.random.default_rng(4)
    proba = rng.dirichlet([1.0, 2.0, 0.7], 800)
    labels = np.array([rng.choice(3, p=row) for row in proba])
    thresholds = [0.05, 0.2, 0.35, 0.5, 0.8]
    for event in (0, 1, 2):
        expected = by_hand(labels, proba[:, event], thresholds, event=event)
        np.testing.assert_allclose(net_benefit(labels, proba, thresholds=thresholds,
                                               positive_class=event), expected, atol=1e-9)
    default = decision_curve(labels, proba, thresholds=thresholds, n_bootstrap=0)
    assert default.positive_class == 2
    assert default.prevalence == pytest.approx((labels == 2).mean())
    # two columns and one column of P(class 1) are the same problem
    labels2, scores = miscalibrated(500, seed=1)
    np.testing.assert_array_equal(
        net_benefit(labels2, scores, thresholds=thresholds),
        net_benefit(labels2, np.column_stack([1 - scores, scores]), thresholds=thresholds))


def test_equals_the_dcurves_package() -> None:
    from dcurves import dca  # its import takes seconds (lifelines, matplotlib): only here

    labels, scores = miscalibrated(2_000, seed=7)
    thresholds = [round(k / 20, 2) for k in range(1, 20)]
    reference = dca(data=pd.DataFrame({"event": labels, "model": scores}), outcome="event",
                    modelnames=["model"], thresholds=thresholds)
    curve = decision_curve(labels, scores, thresholds=thresholds, n_bootstrap=0)
    by_strategy = {name: group.sort_values("threshold")["net_benefit"].to_numpy()
                   for name, group in reference.groupby("model")}
    np.testing.assert_allclose(curve.model, by_strategy["model"], rtol=0, atol=1e-9)
    np.testing.assert_allclose(curve.treat_all, by_strategy["all"], rtol=0, atol=1e-9)
    np.testing.assert_allclose(curve.treat_none, by_strategy["none"], rtol=0, atol=1e-9)


def test_band_contains_the_estimate_is_seeded_and_narrows_with_rows() -> None:
    labels, scores = miscalibrated(4_000, seed=2)
    thresholds = np.arange(1, 20) / 20
    curve = decision_curve(labels, scores, thresholds=thresholds, n_bootstrap=300,
                           random_state=5)
    assert (curve.lower <= curve.model + 1e-12).all()
    assert (curve.model <= curve.upper + 1e-12).all()
    assert (curve.upper - curve.lower > 0).all()
    again = decision_curve(labels, scores, thresholds=thresholds, n_bootstrap=300,
                           random_state=5)
    np.testing.assert_array_equal(curve.lower, again.lower)
    other = decision_curve(labels, scores, thresholds=thresholds, n_bootstrap=300,
                           random_state=6)
    assert not np.array_equal(curve.lower, other.lower)
    small = decision_curve(labels[:1_000], scores[:1_000], thresholds=thresholds,
                           n_bootstrap=300, random_state=5)
    # the band's width falls as 1/sqrt(n): a quarter of the rows, about twice the width
    ratio = np.median((small.upper - small.lower) / (curve.upper - curve.lower))
    assert 1.6 < ratio < 2.5
    # the band's spread matches the standard error of a mean of per-row benefits
    odds = thresholds / (1 - thresholds)
    per_row = ((scores[:, None] >= thresholds) *
               np.where(labels[:, None] == 1, 1.0, -odds))
    se = per_row.std(axis=0, ddof=1) / np.sqrt(labels.size)
    np.testing.assert_allclose((curve.upper - curve.lower) / (2 * 1.96 * se), 1.0, atol=0.2)
    unbanded = decision_curve(labels, scores, thresholds=thresholds, n_bootstrap=0)
    assert np.isnan(unbanded.lower).all() and np.isnan(unbanded.upper).all()


def test_paired_difference_of_a_recalibration() -> None:
    labels, scores = miscalibrated(3_000, seed=3)
    shrunk = 0.5 + (scores - 0.5) / 1.6  # undo the over-confidence: the truth's scale
    thresholds = [0.1, 0.2, 0.3, 0.6]
    result = net_benefit_difference(labels, scores, shrunk, thresholds=thresholds,
                                    n_bootstrap=400, random_state=1)
    np.testing.assert_allclose(result.reference, by_hand(labels, scores, thresholds),
                               atol=1e-9)
    np.testing.assert_allclose(result.candidate, by_hand(labels, shrunk, thresholds),
                               atol=1e-9)
    np.testing.assert_allclose(result.difference, result.candidate - result.reference)
    np.testing.assert_allclose(
        result.changed, [((scores >= t) != (shrunk >= t)).mean() for t in thresholds],
        atol=1e-12)
    assert (result.changed > 0).all()
    assert (result.lower <= result.difference + 1e-12).all()
    assert (result.difference <= result.upper + 1e-12).all()
    # paired: the interval of the difference is narrower than the two curves' bands
    # would suggest if the rows were resampled independently
    alone = decision_curve(labels, scores, thresholds=thresholds, n_bootstrap=400)
    assert ((result.upper - result.lower) < (alone.upper - alone.lower) * np.sqrt(2)).all()
    same = net_benefit_difference(labels, scores, scores, thresholds=thresholds,
                                  n_bootstrap=100)
    assert (same.difference == 0).all() and (same.lower == 0).all() and (same.upper == 0).all()
    assert (same.changed == 0).all()


def test_treat_all_is_the_model_when_every_row_is_treated() -> None:
    labels, scores = miscalibrated(1_000, seed=8)
    lifted = np.clip(scores, 0.05, 1.0)
    curve = decision_curve(labels, lifted, thresholds=[0.01, 0.05], n_bootstrap=0)
    np.testing.assert_allclose(curve.model, curve.treat_all, atol=1e-12)


@settings(max_examples=40)
@given(seed=st.integers(0, 10_000), n=st.integers(1, 300),
       low=st.floats(1e-9, 1e-6))
def test_properties(seed: int, n: int, low: float) -> None:
    rng = np.random.default_rng(seed)
    scores = rng.uniform(size=n)
    labels = (rng.random(n) < scores).astype(int)
    thresholds = np.concatenate([[low], np.arange(1, 10) / 10])
    curve = decision_curve(labels, scores, thresholds=thresholds, n_bootstrap=0)
    # treat all at t -> 0 is the prevalence
    assert curve.treat_all[0] == pytest.approx(labels.mean(), abs=1e-5)
    # no strategy beats treating exactly the events: NB <= prevalence
    assert (curve.model <= labels.mean() + 1e-12).all()
    assert (curve.treat_all <= labels.mean() + 1e-12).all()
    # the order of the rows does not matter
    order = rng.permutation(n)
    np.testing.assert_allclose(
        decision_curve(labels[order], scores[order], thresholds=thresholds,
                       n_bootstrap=0).model, curve.model, atol=1e-12)


@pytest.mark.parametrize(("thresholds", "words"), [
    ([0.1, 1.0], "strictly between 0 and 1"),
    ([0.0, 0.5], "strictly between 0 and 1"),
    ([-0.2], "strictly between 0 and 1"),
    ([0.1, float("nan")], "strictly between 0 and 1"),
    ([0.3, 0.1], "increase without repeats; 0.3 is followed by 0.1"),
    ([0.1, 0.1], "increase without repeats"),
    (["a", 0.2], "must be numbers"),
    ([], "non-empty"),
    (list(np.linspace(0.001, 0.999, MAX_THRESHOLDS + 1)), f"at most {MAX_THRESHOLDS}"),
])
def test_bad_thresholds_are_refused_with_a_message(thresholds: list[float], words: str) -> None:
    with pytest.raises(CalibrationInputError, match="thresholds") as caught:
        check_thresholds(thresholds)
    assert words in caught.value.message and caught.value.code == "invalid_thresholds"


def test_other_refusals() -> None:
    labels, scores = miscalibrated(100)
    with pytest.raises(CalibrationInputError, match="positive_class"):
        decision_curve(labels, scores, positive_class=2)
    with pytest.raises(CalibrationInputError, match="candidate_prob has shape"):
        net_benefit_difference(labels, scores, scores[:50])
    with pytest.raises(CalibrationInputError, match="n_bootstrap"):
        decision_curve(labels, scores, n_bootstrap=-1)


def _true_net_benefit(thresholds: np.ndarray) -> np.ndarray:
    """The population net benefit when p ~ U(0, 1) and P(event | p) = 0.15 + 0.7 p:
    the integral over p >= t of (q(p) - (1 - q(p)) t / (1 - t)) dp, in closed form."""
    odds = thresholds / (1 - thresholds)
    width = 1 - thresholds
    mean_q = 0.15 + 0.7 * (1 + thresholds) / 2  # average of q over [t, 1]
    return width * (mean_q - (1 - mean_q) * odds)


@pytest.mark.slow
def test_band_covers_the_population_net_benefit() -> None:
    """95% bands of 400 samples of 600 rows cover the true curve 93-97% of the time at
    each threshold (binomial sd of a 95% rate over 400 samples: 1.1 points)."""
    thresholds = np.array([0.1, 0.3, 0.5, 0.7])
    truth = _true_net_benefit(thresholds)
    rng = np.random.default_rng(11)
    covered = np.zeros(thresholds.size)
    samples = 400
    for sample in range(samples):
        scores = rng.uniform(size=600)
        labels = (rng.random(600) < 0.15 + 0.7 * scores).astype(int)
        curve = decision_curve(labels, scores, thresholds=thresholds, n_bootstrap=400,
                               random_state=sample)
        covered += (curve.lower <= truth) & (truth <= curve.upper)
    rate = covered / samples
    assert ((rate > 0.92) & (rate < 0.98)).all(), rate


@pytest.mark.slow
def test_paired_interval_covers_the_population_difference() -> None:
    """The candidate is the truth q(p) itself; the true difference is closed form."""
    thresholds = np.array([0.2, 0.4, 0.6])
    odds = thresholds / (1 - thresholds)
    # candidate treats q(p) >= t, i.e. p >= (t - 0.15) / 0.7
    cut = np.clip((thresholds - 0.15) / 0.7, 0, 1)
    mean_q = 0.15 + 0.7 * (1 + cut) / 2
    candidate_truth = (1 - cut) * (mean_q - (1 - mean_q) * odds)
    truth = candidate_truth - _true_net_benefit(thresholds)
    rng = np.random.default_rng(12)
    covered = np.zeros(thresholds.size)
    samples = 300
    for sample in range(samples):
        scores = rng.uniform(size=800)
        labels = (rng.random(800) < 0.15 + 0.7 * scores).astype(int)
        result = net_benefit_difference(labels, scores, 0.15 + 0.7 * scores,
                                        thresholds=thresholds, n_bootstrap=400,
                                        random_state=sample)
        covered += (result.lower <= truth) & (truth <= result.upper)
    rate = covered / samples
    assert ((rate > 0.91) & (rate < 0.985)).all(), rate
