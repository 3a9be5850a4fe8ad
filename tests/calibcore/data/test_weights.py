"""The weight role: inference by name, validation, negative downsampling, Kish's n_eff."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from calibcore.data import (
    ColumnRoles,
    build_prediction_set,
    effective_sample_size,
    infer_roles,
)
from calibcore.exceptions import CalibrationInputError


def _frame(weights: list[float], name: str = "sample_weight") -> pd.DataFrame:
    return pd.DataFrame({"y": [0, 1, 0, 1, 0], "p": [0.2, 0.7, 0.4, 0.9, 0.1],
                         name: weights, "x": [1.0, 2.0, 3.0, 4.0, 5.0]})


@pytest.mark.parametrize("name", ["weight", "Weights", "SAMPLE_WEIGHT", "sample weights"])
def test_a_column_named_as_weights_is_the_weight_role_not_a_feature(name: str) -> None:
    guess = infer_roles(_frame([1, 2, 0, 1, 3], name))
    assert guess.weight == name
    assert name not in guess.features and guess.features == ("x",)
    roles = guess.to_roles()
    kept = build_prediction_set(_frame([1, 2, 0, 1, 3], name), roles)
    np.testing.assert_array_equal(kept.weights, [1, 2, 0, 1, 3])
    assert name not in kept.features.columns


def test_text_named_weight_stays_a_feature() -> None:
    guess = infer_roles(_frame(["a", "b", "c", "d", "e"], "weight"))  # type: ignore[list-item]
    assert guess.weight is None and "weight" in guess.features


@pytest.mark.parametrize(("weights", "rows", "count", "what"), [
    ([1, -2, 1, -1, 1], [1, 3], 2, "negative"),
    ([1, np.nan, 1, 1, 1], [1], 1, "missing"),
    ([0, 0, 0, 0, 0], [0, 1, 2, 3, 4], 5, "zero in every row"),
])
def test_bad_weights_are_refused_naming_column_rows_and_count(
        weights: list[float], rows: list[int], count: int, what: str) -> None:
    roles = ColumnRoles("y", ("p",), weight="sample_weight")
    with pytest.raises(CalibrationInputError) as caught:
        build_prediction_set(_frame(weights), roles)
    error = caught.value
    assert error.column == "sample_weight" and error.rows == rows and error.count == count
    assert what in str(error) and "'sample_weight'" in str(error)


def test_negative_rate_weights_the_negatives_by_one_over_the_rate() -> None:
    frame = _frame([1, 1, 2, 1, 1])
    roles = ColumnRoles("y", ("p",), weight="sample_weight")
    kept = build_prediction_set(frame, roles, negative_rate=0.25)
    # negatives are rows 0, 2, 4: 1/0.25 = 4 times their weight column's value
    np.testing.assert_array_equal(kept.weights, [4, 1, 8, 1, 4])
    alone = build_prediction_set(frame, ColumnRoles("y", ("p",)), negative_rate=0.5)
    np.testing.assert_array_equal(alone.weights, [2, 1, 2, 1, 2])


@pytest.mark.parametrize("rate", [0.0, 1.5, -0.1])
def test_negative_rate_outside_zero_one_is_refused(rate: float) -> None:
    with pytest.raises(CalibrationInputError, match="negative_rate"):
        build_prediction_set(_frame([1] * 5), ColumnRoles("y", ("p",)), negative_rate=rate)


def test_negative_rate_needs_a_binary_problem() -> None:
    frame = pd.DataFrame({"y": [0, 1, 2], "proba_0": [0.5, 0.2, 0.1],
                          "proba_1": [0.3, 0.6, 0.1], "proba_2": [0.2, 0.2, 0.8]})
    roles = ColumnRoles("y", ("proba_0", "proba_1", "proba_2"))
    with pytest.raises(CalibrationInputError, match="binary") as caught:
        build_prediction_set(frame, roles, negative_rate=0.5)
    assert caught.value.code == "invalid_negative_rate"


def test_kish_effective_sample_size_at_the_ends_of_float64() -> None:
    """Only the weights' ratios count: squares of 1e200 overflow and of 1e-200 vanish,
    and the size is still the by-hand one."""
    assert effective_sample_size([1e200, 1e200, 5e200]) == pytest.approx(49 / 27, rel=1e-15)
    assert effective_sample_size([1e-200] * 3) == pytest.approx(3.0, rel=1e-15)
    assert effective_sample_size([1e100, 1.0]) == pytest.approx(1.0, rel=1e-15)
    assert effective_sample_size([0.0, 0.0]) == 0.0


def test_kish_effective_sample_size_by_hand() -> None:
    # (1 + 1 + 1 + 5)^2 / (1 + 1 + 1 + 25) = 64 / 28
    assert effective_sample_size([1, 1, 1, 5]) == pytest.approx(64 / 28, rel=1e-15)
    assert effective_sample_size(np.full(7, 3.0)) == pytest.approx(7.0)
    kept = build_prediction_set(_frame([1, 1, 1, 5, 0]),
                                ColumnRoles("y", ("p",), weight="sample_weight"))
    assert kept.n_eff() == pytest.approx(64 / 28)
    assert build_prediction_set(_frame([1] * 5), ColumnRoles("y", ("p",))).n_eff() == 5
