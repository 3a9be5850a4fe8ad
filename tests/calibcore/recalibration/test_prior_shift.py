"""The prior-shift correction: Bayes' rule for downsampled negatives, checked against the
odds written out by hand, a GLM with an offset (statsmodels) for the fitted rate and
repeated rows for integer weights."""

from __future__ import annotations

import json

import numpy as np
import pytest
import statsmodels.api as sm
from scipy.special import expit, logit

from calibcore.exceptions import CalibrationInputError
from calibcore.recalibration import REGISTRY, PriorShift, Recalibrator


def population(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """True P(y=1) of a population and labels drawn from it."""
    rng = np.random.default_rng(seed)
    p = expit(rng.normal(-2.0, 1.5, size=n))
    return p, (rng.random(n) < p).astype(int)


def downsampled_odds(p: np.ndarray, rate: float) -> np.ndarray:
    """What a model trained on a log keeping a fraction ``rate`` of negatives predicts:
    the positive odds divided by ``rate``."""
    odds = p / (1 - p) / rate
    return odds / (1 + odds)


@pytest.mark.parametrize("rate", [0.05, 0.3, 1.0, 2.5])
def test_the_known_rate_undoes_downsampling_exactly(rate) -> None:
    p, y = population(2_000, 1)
    q = downsampled_odds(p, rate)
    model = PriorShift(negative_rate=rate).fit(q, y)
    corrected = model.predict_proba(q)
    np.testing.assert_allclose(corrected[:, 1], p, rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(corrected[:, 1], q / (q + (1 - q) / rate), rtol=1e-12)
    assert model.rate_ == rate


def test_without_a_rate_it_is_the_glm_offset_intercept() -> None:
    p, y = population(20_000, 2)
    q = downsampled_odds(p, 0.2)
    model = PriorShift().fit(q, y)
    # logit P(y=1) = a + logit(q): the maximum-likelihood a is log r
    glm = sm.GLM(y, np.ones((y.size, 1)), family=sm.families.Binomial(),
                 offset=logit(q)).fit(tol=1e-12)
    assert np.log(model.rate_) == pytest.approx(glm.params[0], abs=1e-6)
    assert model.rate_ == pytest.approx(0.2, rel=0.1)  # the planted rate, within sampling


def test_integer_weights_fit_what_repeated_rows_fit() -> None:
    p, y = population(600, 3)
    q = downsampled_odds(p, 0.4)
    weights = np.random.default_rng(4).integers(0, 4, size=y.size)
    weighted = PriorShift().fit(q, y, sample_weight=weights)
    repeated = PriorShift().fit(np.repeat(q, weights), np.repeat(y, weights))
    assert weighted.rate_ == pytest.approx(repeated.rate_, rel=1e-7)


def test_many_classes_divide_the_negative_class_and_renormalize() -> None:
    proba = np.array([[0.6, 0.3, 0.1], [0.2, 0.2, 0.6]])
    model = PriorShift(negative_rate=0.5, negative_class=2).fit(proba, np.array([0, 2]))
    expected = np.array([[0.6, 0.3, 0.2], [0.2, 0.2, 1.2]])
    np.testing.assert_allclose(model.predict_proba(proba),
                               expected / expected.sum(axis=1, keepdims=True), rtol=1e-12)


@pytest.mark.parametrize("params, phrase", [
    ({"negative_rate": 0.0}, "negative_rate must be a positive number"),
    ({"negative_rate": -0.1}, "negative_rate must be a positive number"),
    ({"negative_rate": float("nan")}, "negative_rate must be a positive number"),
    ({"negative_class": 2}, "negative_class must be a class index from 0 to 1"),
])
def test_bad_parameters_are_refused_with_a_reason(params, phrase) -> None:
    with pytest.raises(CalibrationInputError, match=phrase):
        PriorShift(**params).fit(np.array([0.2, 0.7]), np.array([0, 1]))


def test_a_stored_document_with_a_bad_rate_is_refused_when_applied() -> None:
    document = PriorShift(negative_rate=0.5).fit(np.array([0.2, 0.7]), np.array([0, 1])).to_json()
    assert REGISTRY["prior_shift"] is PriorShift
    document["state"]["rate_"] = -1.0
    rebuilt = Recalibrator.from_json(json.loads(json.dumps(document)))
    with pytest.raises(CalibrationInputError, match="rate_ must be a positive number"):
        rebuilt.predict_proba(np.array([0.5]))
