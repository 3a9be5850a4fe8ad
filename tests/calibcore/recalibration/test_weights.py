"""Recalibrators fitted with row weights: integer weights fit what the repeated rows fit."""

from __future__ import annotations

import numpy as np
import pytest

from calibcore.exceptions import CalibrationInputError
from calibcore.recalibration import REGISTRY

WEIGHTED = ["temperature", "platt", "beta", "dirichlet", "isotonic", "histogram",
            "scaling_binning", "prior_shift"]
#: Closed forms and sorts agree to rounding; L-BFGS-B stops at its tolerances.
TOLERANCE = {"temperature": 1e-9, "platt": 1e-7, "isotonic": 1e-12, "histogram": 1e-12,
             "scaling_binning": 1e-7, "beta": 1e-5, "dirichlet": 1e-4, "prior_shift": 1e-9}


def _data(n_classes: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(400, n_classes)) * 2.0
    proba = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    truth = np.exp(logits / 2) / np.exp(logits / 2).sum(axis=1, keepdims=True)
    labels = (rng.random(400)[:, None] > np.cumsum(truth, axis=1)).sum(axis=1)
    weights = rng.integers(0, 4, 400).astype(np.float64)
    return np.minimum(labels, n_classes - 1), proba, weights


def test_the_registry_says_which_methods_take_weights() -> None:
    assert sorted(name for name, cls in REGISTRY.items() if cls.supports_weights) == sorted(
        WEIGHTED)


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("method", WEIGHTED)
def test_integer_weights_fit_the_repeated_rows(method: str, n_classes: int) -> None:
    labels, proba, weights = _data(n_classes, seed=n_classes)
    repeated = np.repeat(np.arange(labels.size), weights.astype(int))
    weighted = REGISTRY[method]().fit(proba, labels, sample_weight=weights)
    plain = REGISTRY[method]().fit(proba[repeated], labels[repeated])
    grid = _data(n_classes, seed=99)[1]
    np.testing.assert_allclose(weighted.predict_proba(grid), plain.predict_proba(grid),
                               atol=TOLERANCE[method], rtol=0)


@pytest.mark.parametrize("method", WEIGHTED)
def test_weights_of_one_fit_as_no_weights(method: str) -> None:
    labels, proba, _ = _data(2, seed=5)
    ones = REGISTRY[method]().fit(proba, labels, sample_weight=np.ones(labels.size))
    plain = REGISTRY[method]().fit(proba, labels)
    np.testing.assert_allclose(ones.predict_proba(proba), plain.predict_proba(proba),
                               atol=1e-9)


def test_temperature_by_hand_on_two_rows() -> None:
    """Binary, one row of margin m right (y = 1) with weight 3 and one of margin m wrong
    with weight 1: the weighted NLL 3 log(1 + e^-bm) + log(1 + e^bm) is least where
    3 / (1 + e^bm) = 1 / (1 + e^-bm), i.e. e^bm = 3, so T = m / log 3."""
    p = np.array([0.8, 0.8])
    margin = np.log(0.8 / 0.2)
    fitted = REGISTRY["temperature"]().fit(p, np.array([1, 0]), sample_weight=[3.0, 1.0])
    assert fitted.temperature_ == pytest.approx(margin / np.log(3.0), rel=1e-9)


@pytest.mark.parametrize("method", sorted(set(REGISTRY) - set(WEIGHTED)))
def test_methods_without_weights_refuse_them_by_name(method: str) -> None:
    labels, proba, weights = _data(2)
    estimator = REGISTRY[method]()
    features = np.random.default_rng(0).normal(size=(labels.size, 2))
    with pytest.raises(CalibrationInputError, match="does not take sample weights") as caught:
        estimator.fit(proba, labels, features if estimator.needs_features else None,
                      sample_weight=weights)
    assert caught.value.code == "weights_not_supported"
    assert "temperature" in str(caught.value)


def test_bad_weights_are_refused() -> None:
    labels, proba, weights = _data(2)
    weights[[2, 5]] = -1
    with pytest.raises(CalibrationInputError, match="negative") as caught:
        REGISTRY["platt"]().fit(proba, labels, sample_weight=weights)
    assert caught.value.rows == [2, 5]
