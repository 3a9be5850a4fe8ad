"""Role inference and validation of prediction tables."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from calibcore.data import ColumnRoles, build_prediction_set, feature_kind, infer_roles
from calibcore.exceptions import CalibrationInputError, RoleInferenceError


def binary_frame(n: int = 8) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame({"y_true": rng.integers(0, 2, n), "y_prob": rng.uniform(0, 1, n),
                         "age": rng.normal(40, 10, n), "city": rng.choice(["a", "b"], n),
                         "split": ["calibration", "test"] * (n // 2), "id": np.arange(n)})


def test_infers_binary_roles() -> None:
    guess = infer_roles(binary_frame())
    assert (guess.label, guess.probabilities, guess.split, guess.id) == (
        "y_true", ("y_prob",), "split", "id")
    assert guess.features == ("age", "city")
    assert guess.problems == ()


def test_infers_multiclass_columns_matching_label_values(shared_data) -> None:
    frame = pd.read_csv(shared_data / "digits_svm.csv")
    guess = infer_roles(frame)
    assert guess.label == "label"
    assert guess.probabilities == tuple(f"proba_{k}" for k in range(10))
    assert guess.split == "split" and len(guess.features) == 64
    prediction_set = build_prediction_set(frame, guess.to_roles())
    assert prediction_set.classes == tuple(str(k) for k in range(10))
    assert prediction_set.proba.shape == (1197, 10)
    np.testing.assert_array_equal(prediction_set.y_true, frame["label"].to_numpy())


def test_string_classes_and_prefixes() -> None:
    frame = pd.DataFrame({"target": ["cat", "dog", "bird", "cat"],
                          "prob_cat": [0.7, 0.2, 0.1, 0.5], "prob_dog": [0.2, 0.7, 0.1, 0.3],
                          "prob_bird": [0.1, 0.1, 0.8, 0.2], "x": [1.0, 2.0, 3.0, 4.0]})
    prediction_set = build_prediction_set(frame, infer_roles(frame).to_roles())
    assert prediction_set.classes == ("bird", "cat", "dog")  # sorted label values
    np.testing.assert_array_equal(prediction_set.y_true, [1, 2, 0, 1])
    np.testing.assert_allclose(prediction_set.proba[0], [0.1, 0.7, 0.2])


@pytest.mark.parametrize("labels, expected", [
    (["yes", "no", "yes", "no"], ("no", "yes")),
    ([True, False, True, False], ("0", "1")),
    (["true", "false", "true", "false"], ("false", "true")),
])
def test_binary_label_spellings(labels, expected) -> None:
    frame = pd.DataFrame({"label": labels, "score": [0.9, 0.2, 0.7, 0.4]})
    prediction_set = build_prediction_set(frame, infer_roles(frame).to_roles())
    assert prediction_set.classes == expected
    np.testing.assert_array_equal(prediction_set.y_true, [1, 0, 1, 0])
    np.testing.assert_allclose(prediction_set.proba[:, 1], [0.9, 0.2, 0.7, 0.4])


def test_no_label_or_probability_columns_is_explained() -> None:
    guess = infer_roles(pd.DataFrame({"a": [1, 2], "b": [3, 4]}))
    assert guess.label is None and guess.probabilities == ()
    with pytest.raises(RoleInferenceError, match="No label column"):
        guess.to_roles()


def rejected(frame: pd.DataFrame, roles: ColumnRoles | None = None, **kwargs) -> \
        CalibrationInputError:  # type: ignore[no-untyped-def]
    with pytest.raises(CalibrationInputError) as info:
        build_prediction_set(frame, roles or infer_roles(frame).to_roles(), **kwargs)
    return info.value


def test_probability_outside_unit_interval_names_column_and_rows() -> None:
    frame = binary_frame()
    frame.loc[[2, 5], "y_prob"] = [1.5, -0.1]
    error = rejected(frame)
    assert error.code == "probability_out_of_range"
    assert (error.column, error.rows, error.count) == ("y_prob", [2, 5], 2)
    assert "'y_prob'" in error.message and "rows 2, 5" in error.message


def test_rows_not_summing_to_one_and_the_renormalize_opt_in() -> None:
    frame = pd.DataFrame({"y": [0, 1, 2], "p_0": [0.5, 0.2, 0.3], "p_1": [0.5, 0.5, 0.3],
                          "p_2": [0.0, 0.1, 0.3]})
    error = rejected(frame)
    assert error.code == "probabilities_do_not_sum_to_one" and error.rows == [1, 2]
    fixed = build_prediction_set(frame, infer_roles(frame).to_roles(), renormalize=True)
    np.testing.assert_allclose(fixed.proba.sum(axis=1), 1.0)
    assert any("renormalized 2" in w for w in fixed.warnings)


def test_label_value_without_probability_column() -> None:
    frame = pd.DataFrame({"y": [0, 1, 3], "p_0": [0.5, 0.2, 0.3], "p_1": [0.5, 0.8, 0.7]})
    roles = ColumnRoles("y", ("p_0", "p_1"))
    error = rejected(frame, roles)
    assert error.code == "label_without_probability" and error.rows == [2]
    assert "'3'" in error.message


def test_missing_labels_and_probabilities_name_rows() -> None:
    frame = binary_frame()
    frame["y_true"] = frame["y_true"].astype(float)
    frame.loc[3, "y_true"] = np.nan
    error = rejected(frame)
    assert error.code == "missing_values" and error.column == "y_true" and error.rows == [3]
    frame = binary_frame()
    frame.loc[[1, 4], "y_prob"] = np.nan
    error = rejected(frame)
    assert error.column == "y_prob" and error.rows == [1, 4] and error.count == 2
    assert "drop_missing" in error.message  # the way out is named


def test_drop_missing_leaves_out_rows_missing_a_label_or_probability_only() -> None:
    frame = binary_frame(10).set_index(np.arange(100, 110))  # positions, whatever the index
    frame["y_true"] = frame["y_true"].astype(float)
    frame.iloc[2, frame.columns.get_loc("y_true")] = np.nan
    frame.iloc[[2, 5], frame.columns.get_loc("y_prob")] = np.nan
    frame.iloc[7, frame.columns.get_loc("age")] = np.nan  # a feature may be missing
    roles = ColumnRoles("y_true", ("y_prob",), ("age", "city"), split="split", id="id")
    kept = build_prediction_set(frame, roles, drop_missing=True)
    assert kept.left_out.tolist() == [2, 5] and kept.n_rows == 8
    rows = [0, 1, 3, 4, 6, 7, 8, 9]
    np.testing.assert_array_equal(kept.ids, frame["id"].to_numpy()[rows])
    np.testing.assert_array_equal(kept.proba[:, 1], frame["y_prob"].to_numpy()[rows])
    np.testing.assert_array_equal(kept.split, frame["split"].to_numpy()[rows])
    assert kept.features["age"].isna().tolist() == [i == 7 for i in rows]
    assert kept.warnings[0] == "2 rows left out (missing label or probability): rows 2, 5 of " \
                               "the file."
    assert build_prediction_set(binary_frame(), roles, drop_missing=True).left_out.size == 0
    compared = frame.assign(p_other=np.where(np.arange(10) == 8, np.nan, 0.5))
    models = replace(roles, models=(("a", ("y_prob",)), ("b", ("p_other",))))
    assert build_prediction_set(compared, models, drop_missing=True).left_out.tolist() == [
        2, 5, 8]  # a compared model's missing probability too
    frame["y_prob"] = np.nan
    error = rejected(frame, roles, drop_missing=True)
    assert error.code == "missing_values" and error.count == 10


def test_non_numeric_probabilities() -> None:
    frame = binary_frame()
    frame["y_prob"] = frame["y_prob"].astype(object)
    frame.loc[6, "y_prob"] = "high"
    error = rejected(frame)
    assert error.code == "non_numeric_probability" and error.rows == [6]
    assert "'high'" in error.message


def test_invalid_split_values() -> None:
    frame = binary_frame()
    frame.loc[0, "split"] = "later"
    error = rejected(frame, ColumnRoles("y_true", ("y_prob",), split="split"))
    assert error.code == "invalid_split" and error.rows == [0]


def test_unknown_and_conflicting_columns() -> None:
    assert rejected(binary_frame(), ColumnRoles("nope", ("y_prob",))).code == "column_not_found"
    assert rejected(binary_frame(), ColumnRoles("y_true", ("y_true",))).code == \
        "conflicting_roles"


def test_logits_are_converted() -> None:
    frame = pd.DataFrame({"y": [0, 1], "logit_a": [2.0, -1.0], "logit_b": [0.0, 1.0]})
    prediction_set = build_prediction_set(
        frame, ColumnRoles("y", ("logit_a", "logit_b"), logits=True))
    expected = np.exp([[2.0, 0.0], [-1.0, 1.0]])
    np.testing.assert_allclose(prediction_set.proba, expected / expected.sum(1, keepdims=True))


def test_feature_kinds_and_missing_feature_warning() -> None:
    frame = binary_frame(10)
    frame.loc[[1, 2], "age"] = np.nan
    prediction_set = build_prediction_set(frame, infer_roles(frame).to_roles())
    assert prediction_set.feature_kinds == {"age": "numeric", "city": "categorical"}
    assert any("age (2)" in w for w in prediction_set.warnings)
    assert feature_kind(pd.Series([0, 1, 2, 1])) == "categorical"
    assert feature_kind(pd.Series(np.arange(50))) == "numeric"
    assert feature_kind(pd.Series([True, False])) == "categorical"


@pytest.mark.parametrize("position", [0, 1023, 1024, 4999])
def test_one_fraction_anywhere_makes_a_float_column_numeric(position: int) -> None:
    """Whole numbers stored as floats (with missing values) are categorical; one value
    with a fraction, first or past the values looked at first, makes the column numeric."""
    values = np.tile([1.0, 2.0, np.nan, 3.0], 1250)
    assert feature_kind(pd.Series(values)) == "categorical"
    values[position] = 2.5
    assert feature_kind(pd.Series(values)) == "numeric"


def test_rows_summing_to_one_exactly_are_kept_as_they_are() -> None:
    """Two classes from one column: (1 - q) + q is 1 to the bit, so no row is divided;
    a row of three that sums to 1 only within the tolerance is divided by its sum, and
    rows of three summing to 1 exactly never leave the set sharing the caller's frame."""
    q = np.random.default_rng(0).uniform(size=1000).round(6)
    binary = build_prediction_set(pd.DataFrame({"y": (q > 0.5).astype(int), "p": q}),
                                  ColumnRoles("y", ("p",)))
    np.testing.assert_array_equal(binary.proba, np.column_stack([1.0 - q, q]))
    three = pd.DataFrame({"y": ["a", "b"], "p_a": [0.1, 0.3], "p_b": [0.2, 0.3],
                          "p_c": [0.7 + 1e-9, 0.4]})
    built = build_prediction_set(three, ColumnRoles("y", ("p_a", "p_b", "p_c")))
    sums = np.array([0.1 + 0.2 + 0.7 + 1e-9, 0.3 + 0.3 + 0.4])
    np.testing.assert_array_equal(built.proba, three[["p_a", "p_b", "p_c"]].to_numpy()
                                  / sums[:, None])
    # rows of three summing to exactly 1, read from the frame's own block: still a copy
    exact = pd.DataFrame({"y": ["a", "b"], "p_a": [0.5, 0.25], "p_b": [0.25, 0.25],
                          "p_c": [0.25, 0.5]})
    kept = build_prediction_set(exact, ColumnRoles("y", ("p_a", "p_b", "p_c")))
    assert not np.shares_memory(kept.proba, exact[["p_a", "p_b", "p_c"]].to_numpy())


def test_unlabeled_batch_takes_classes_from_column_names(shared_data) -> None:
    frame = pd.read_csv(shared_data / "digits_svm.csv").drop(columns="label")
    roles = ColumnRoles(None, tuple(f"proba_{k}" for k in range(10)),
                        tuple(f"px{k}" for k in range(64)))
    batch = build_prediction_set(frame, roles)
    assert not batch.labelled and batch.classes == tuple(str(k) for k in range(10))
    assert (batch.y_true == -1).all() and batch.proba.shape == (1197, 10)
    binary = build_prediction_set(pd.DataFrame({"y_prob": [0.2, 0.9]}),
                                  ColumnRoles(None, ("y_prob",)))
    assert binary.classes == ("0", "1") and not binary.labelled


def test_every_problem_of_the_label_and_probabilities_is_reported_at_once() -> None:
    """A missing label, a non-numeric probability, a missing one and an infinite one, in
    different columns and rows: one error names all four with their rows and counts."""
    frame = pd.DataFrame({"y": [0, 1, None, 1, 0, None],
                          "p_0": [0.2, "x", 0.5, 0.3, 0.1, "?"],
                          "p_1": [0.8, 0.3, np.inf, 0.7, None, 0.5]})
    with pytest.raises(CalibrationInputError) as caught:
        build_prediction_set(frame, ColumnRoles("y", ("p_0", "p_1")))
    error = caught.value
    assert error.message.startswith("4 problems in the table: (1) column 'y' (label)")
    assert [(p["code"], p["column"], p["rows"], p["count"])
            for p in error.details()["problems"]] == [
        ("missing_values", "y", [2, 5], 2), ("non_numeric_probability", "p_0", [1, 5], 2),
        ("missing_values", "p_1", [4], 1), ("non_finite_probability", "p_1", [2], 1)]
    assert error.code == "missing_values" and error.column == "y"


def test_every_column_out_of_range_is_named() -> None:
    frame = pd.DataFrame({"y": [0, 1, 2], "p_0": [1.2, 0.1, 0.1], "p_1": [0.1, -0.1, 0.1],
                          "p_2": [0.1, 0.1, 0.8]})
    with pytest.raises(CalibrationInputError, match=r"^2 problems in the table: \(1\) column "
                       r"'p_0' has probabilities outside \[0, 1\] in row 0"):
        build_prediction_set(frame, ColumnRoles("y", ("p_0", "p_1", "p_2")))


@pytest.mark.parametrize("n_classes", [2, 3, 7])
def test_probabilities_are_divided_by_numpys_row_sums(n_classes: int) -> None:
    # below eight columns the row sums are added column by column, which must be
    # numpy's row sum to the bit: every stored probability is p / sum(p), as before
    rng = np.random.default_rng(n_classes)
    raw = rng.dirichlet(np.ones(n_classes), size=5000)
    raw *= rng.choice([1.0, 1.0 + 3e-7, 1.0 - 4e-8], size=(5000, 1))  # within tolerance
    frame = pd.DataFrame(raw, columns=[f"p_{k}" for k in range(n_classes)])
    frame.insert(0, "y", rng.integers(0, n_classes, size=5000))
    built = build_prediction_set(frame, infer_roles(frame).to_roles(), renormalize=True)
    assert built.proba.tobytes() == (raw / raw.sum(axis=1)[:, None]).tobytes()


def test_row_sums_are_numpys_to_the_bit() -> None:
    from calibcore._validation import row_sums

    rng = np.random.default_rng(11)
    for n_columns in range(1, 12):  # both sides of the eight columns from which NumPy pairs
        for order in "CF":
            matrix = np.asarray(rng.dirichlet(np.ones(n_columns), size=2000), order=order)
            matrix[:3] = -0.0  # a row of -0.0 sums to +0.0
            matrix[3:9] *= rng.choice([-0.0, 1.0], size=(6, n_columns))  # some -0.0 entries
            assert row_sums(matrix).tobytes() == matrix.sum(axis=1).tobytes(), (n_columns, order)
