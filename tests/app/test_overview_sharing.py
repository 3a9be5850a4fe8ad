"""The overview's requests share work without changing a digit of what they return.

The measures table runs its test of calibration on a second thread above
``PARALLEL_TEST_MIN_ROWS`` rows, and the bin-sensitivity request asks for the bin-free
values only once its curves are done, so that it can take them from the measures being
computed at the same time.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from app.services import diagnostics
from calibcore import metrics
from calibcore.data import PredictionSet, build_prediction_set, infer_roles


def _prediction_set(n_rows: int = 3_000, seed: int = 5) -> PredictionSet:
    rng = np.random.default_rng(seed)
    proba = rng.uniform(size=n_rows)
    frame = pd.DataFrame({"y_true": (rng.uniform(size=n_rows) < proba**1.3).astype(int),
                          "y_prob": np.round(proba, 4), "x0": rng.normal(size=n_rows)})
    return build_prediction_set(frame, infer_roles(frame).to_roles())


def test_the_test_on_its_own_thread_gives_the_same_table(
        monkeypatch: pytest.MonkeyPatch) -> None:
    prediction_set = _prediction_set()
    monkeypatch.setattr(diagnostics, "PARALLEL_TEST_MIN_ROWS", 10**9)
    alone = diagnostics.global_metrics(prediction_set, n_bootstrap=30)
    monkeypatch.setattr(diagnostics, "PARALLEL_TEST_MIN_ROWS", 0)
    beside = diagnostics.global_metrics(prediction_set, n_bootstrap=30)
    assert beside["calibration_test"] is not None
    assert json.dumps(beside, sort_keys=True) == json.dumps(alone, sort_keys=True)


def test_a_failure_of_the_measures_is_raised_with_the_test_on_its_own_thread(
        monkeypatch: pytest.MonkeyPatch) -> None:
    def failing(*args: object, **kwargs: object) -> None:
        raise RuntimeError("cancelled")

    monkeypatch.setattr(diagnostics, "PARALLEL_TEST_MIN_ROWS", 0)
    monkeypatch.setattr(diagnostics, "global_measures", failing)
    with pytest.raises(RuntimeError, match="cancelled"):
        diagnostics.global_metrics(_prediction_set(500), n_bootstrap=10)


def test_bin_free_values_are_asked_for_after_the_curves_and_used() -> None:
    prediction_set = _prediction_set()
    labels, proba = prediction_set.y_true, prediction_set.proba
    asked = []

    def from_measures() -> dict[str, dict[str, object]]:
        asked.append(True)
        return {"smooth_ece": {"name": "smooth ECE", "value": 0.125}}

    result = diagnostics.bin_sensitivity(prediction_set, bin_counts=(5, 15),
                                         bin_free=from_measures)
    assert asked == [True]
    assert result["bin_free"] == {"smooth_ece": {"name": "smooth ECE", "value": 0.125}}
    # the curves: the ECE of each bin count in each binning (the one-count function)
    for binning in ("equal_width", "equal_mass"):
        expected = [metrics.expected_calibration_error(labels, proba, n_bins=count,
                                                       binning=binning)
                    for count in (5, 15)]
        np.testing.assert_allclose(result["ece"][binning], expected, rtol=0, atol=1e-12)


def test_bin_free_values_are_computed_when_none_are_under_way() -> None:
    prediction_set = _prediction_set()
    computed = diagnostics.bin_sensitivity(prediction_set, bin_counts=(5,),
                                           bin_free=lambda: None)
    expected = metrics.smooth_ece(prediction_set.y_true, prediction_set.proba)
    assert computed["bin_free"]["smooth_ece"]["value"] == pytest.approx(expected, abs=1e-12)
