"""Role inference from the names and values people use."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calibcore.data import (
    BINARY_PROBABILITY_NAMES,
    ID_NAMES,
    LABEL_NAMES,
    NO_LABEL,
    NO_PROBABILITIES,
    SPLIT_NAMES,
    RoleGuess,
    build_prediction_set,
    infer_roles,
    role_problems,
    says_probability,
)
from calibcore.exceptions import CalibrationInputError

N = 12
#: Fixed values, so every expectation below is written out: a 0/1 label, a probability in
#: (0, 1), hard 0/1 predictions, a score on 0..100 and two ordinary features.
LABEL = [0, 1, 1, 0, 1, 0, 0, 1, 1, 0, 1, 0]
PROBABILITY = [0.2, 0.9, 0.7, 0.4, 0.6, 0.1, 0.3, 0.8, 0.55, 0.35, 0.65, 0.05]
HARD = [0, 1, 1, 1, 1, 0, 0, 0, 1, 0, 1, 0]
SCORE = [20.0, 90.0, 70.0, 40.0, 60.0, 10.0, 30.0, 80.0, 55.0, 35.0, 65.0, 5.0]
AGE = [31.0, 45.0, 52.0, 23.0, 37.0, 61.0, 29.0, 48.0, 55.0, 40.0, 33.0, 27.0]
CITY = ["a", "b", "c"] * 4


def table(**columns: object) -> pd.DataFrame:
    return pd.DataFrame(columns)


def guessed(frame: pd.DataFrame) -> tuple[str | None, tuple[str, ...], tuple[str, ...]]:
    guess = infer_roles(frame)
    return guess.label, guess.probabilities, guess.features


@pytest.mark.parametrize("target", ["purchase", "delayed", "Churned"])
@pytest.mark.parametrize("form", ["{}_prob", "{}_proba", "{}_probability", "{}_score",
                                  "p_{}", "prob_{}", "proba_{}", "pred_{}"])
def test_a_binary_target_and_its_probability_named_after_it(target: str, form: str) -> None:
    probability = form.format(target)
    frame = pd.DataFrame({"age": AGE, target: LABEL, "city": CITY, probability: PROBABILITY})
    guess = infer_roles(frame)
    assert (guess.label, guess.probabilities, guess.features) == (
        target, (probability,), ("age", "city"))
    assert guess.problems == () and guess.notes == ()
    prediction_set = build_prediction_set(frame, guess.to_roles())
    assert prediction_set.classes == ("0", "1")
    np.testing.assert_allclose(prediction_set.proba[:, 1], PROBABILITY)


@pytest.mark.parametrize("label, probability", list(itertools.product(
    ["target", "outcome", "y", "y_true", "label", "class"],
    ["score", "pred_proba", "y_pred", "y_prob", "prediction", "proba", "probability"])))
def test_generic_label_and_probability_names(label: str, probability: str) -> None:
    frame = pd.DataFrame({probability: PROBABILITY, "age": AGE, label: LABEL})
    assert guessed(frame) == (label, (probability,), ("age",))
    assert infer_roles(frame).problems == ()


@pytest.mark.parametrize("label", ["species", "target"])
@pytest.mark.parametrize("form", ["prob_{}", "proba_{}", "{}_proba", "{}_prob", "{}_score"])
def test_one_probability_column_per_class_matching_the_label_values(label: str,
                                                                    form: str) -> None:
    species = ["setosa", "virginica", "versicolor", "setosa"]
    frame = pd.DataFrame({
        "petal": [1.4, 5.1, 4.0, 1.3], label: species,
        form.format("virginica"): [0.1, 0.7, 0.2, 0.0],
        form.format("setosa"): [0.8, 0.1, 0.1, 0.9],
        form.format("versicolor"): [0.1, 0.2, 0.7, 0.1]})
    guess = infer_roles(frame)
    classes = ("setosa", "versicolor", "virginica")
    assert guess.label == label and guess.features == ("petal",)
    assert guess.probabilities == tuple(form.format(c) for c in classes)  # in class order
    assert guess.problems == () and guess.notes == ()
    prediction_set = build_prediction_set(frame, guess.to_roles())
    assert prediction_set.classes == classes
    np.testing.assert_array_equal(prediction_set.y_true, [0, 2, 1, 0])
    np.testing.assert_allclose(prediction_set.proba[1], [0.1, 0.2, 0.7])


def test_class_suffixes_are_read_as_suffixes() -> None:
    """pig_proba and pony_proba also read as prefix p + class "ig_proba": the suffix wins."""
    frame = table(animal=["pig", "pony", "pig"], pig_proba=[0.6, 0.3, 0.8],
                  pony_proba=[0.4, 0.7, 0.2])
    guess = infer_roles(frame)
    assert (guess.label, guess.probabilities) == ("animal", ("pig_proba", "pony_proba"))
    prediction_set = build_prediction_set(frame, guess.to_roles())
    assert prediction_set.classes == ("pig", "pony")
    np.testing.assert_array_equal(prediction_set.y_true, [0, 1, 0])


def test_hard_labels_in_y_pred_are_not_probabilities() -> None:
    frame = table(y=LABEL, y_pred=HARD, age=AGE)
    guess = infer_roles(frame)
    assert (guess.label, guess.probabilities, guess.features) == ("y", (), ("y_pred", "age"))
    assert guess.problems == (NO_PROBABILITIES,)
    # nor when named after the label: pred_<target> of 0/1 is a prediction, not P(target)
    assert guessed(table(age=AGE, delayed=LABEL, pred_delayed=HARD, city=CITY)) == (
        None, (), ("age", "delayed", "pred_delayed", "city"))


def test_a_score_outside_the_unit_interval_is_not_a_probability() -> None:
    frame = table(target=LABEL, score=SCORE, age=AGE)
    assert guessed(frame) == ("target", (), ("score", "age"))
    assert infer_roles(frame).problems == (NO_PROBABILITIES,)
    assert guessed(table(delayed=LABEL, delayed_score=SCORE)) == (
        None, (), ("delayed", "delayed_score"))


def test_a_name_that_says_probability_is_taken_on_its_name() -> None:
    """Logits under a probability name are still found, so validation can say 'logits?'."""
    logits = [-1.4, 2.2, 0.8, -0.4, 0.4, -2.2, -0.8, 1.4, 0.2, -0.6, 0.6, -2.9]
    frame = table(delayed=LABEL, p_delayed=logits, age=AGE)
    assert guessed(frame) == ("delayed", ("p_delayed",), ("age",))
    with pytest.raises(CalibrationInputError, match="set the logits option"):
        build_prediction_set(frame, infer_roles(frame).to_roles())


def test_a_column_of_many_values_is_no_target_of_its_score() -> None:
    assert guessed(table(age=AGE, age_prob=PROBABILITY, city=CITY))[0] is None


def test_several_pairs_take_the_first_and_say_so() -> None:
    frame = table(delayed=LABEL, p_delayed=PROBABILITY, cancelled=HARD,
                  p_cancelled=PROBABILITY[::-1])
    guess = infer_roles(frame)
    assert (guess.label, guess.probabilities) == ("delayed", ("p_delayed",))
    assert guess.features == ("cancelled", "p_cancelled")
    assert guess.notes == ("guessed: label 'delayed' with probability 'p_delayed', the first "
                           "of several such pairs (also 'cancelled' with 'p_cancelled'); "
                           "choose others if they are wrong.",)


def test_last_resort_the_only_binary_column_and_the_only_unit_interval_column() -> None:
    frame = table(age=AGE, bought=LABEL, q=PROBABILITY, city=CITY)
    guess = infer_roles(frame)
    assert (guess.label, guess.probabilities, guess.features) == (
        "bought", ("q",), ("age", "city"))
    assert guess.problems == ()
    assert guess.notes == ("guessed: label 'bought' and probability 'q', the only column of two "
                           "values like 0/1 and the only column of values between 0 and 1; "
                           "check them.",)
    yes_no = table(bought=["yes" if v else "no" for v in LABEL], q=PROBABILITY)
    assert guessed(yes_no) == ("bought", ("q",), ())


def test_last_resort_label_beside_a_probability_found_by_name() -> None:
    guess = infer_roles(table(bought=LABEL, score=PROBABILITY, age=AGE))
    assert (guess.label, guess.probabilities, guess.features) == ("bought", ("score",), ("age",))
    assert guess.notes == ("guessed: label 'bought', the only column of two values like 0/1 "
                           "beside the probability column 'score'; check it.",)


@pytest.mark.parametrize("frame", [
    table(bought=LABEL, member=HARD, q=PROBABILITY),  # two 0/1 columns
    table(bought=LABEL, q=PROBABILITY, r=PROBABILITY[::-1]),  # two [0, 1] columns
    table(bought=LABEL, q=SCORE),  # no [0, 1] column
    table(bought=["x", "z"] * 6, q=PROBABILITY),  # two values, but not spelled like 0/1
], ids=["two-binary", "two-unit-interval", "no-unit-interval", "not-boolean"])
def test_no_guess_without_a_single_candidate(frame: pd.DataFrame) -> None:
    guess = infer_roles(frame)
    assert guess.label is None and guess.probabilities == () and guess.notes == ()
    assert guess.problems == (NO_LABEL, NO_PROBABILITIES)
    assert guess.features == tuple(frame.columns)


def test_a_named_label_takes_the_only_unit_interval_column_and_says_so() -> None:
    guess = infer_roles(table(truth=LABEL, s=PROBABILITY, f=AGE))
    assert (guess.label, guess.probabilities, guess.features) == ("truth", ("s",), ("f",))
    assert guess.problems == ()
    assert guess.notes == ("guessed: probability 's' of label 'truth', the only column of "
                           "values between 0 and 1; check it.",)


def test_a_target_with_a_score_prob_column() -> None:
    """The file of a user report: target (0/1), score_prob in (0, 1) and age, 200 rows."""
    rng = np.random.default_rng(7)
    frame = pd.DataFrame({"target": rng.integers(0, 2, 200),
                          "score_prob": rng.uniform(0.01, 0.99, 200),
                          "age": rng.normal(45, 12, 200).round(1)})
    guess = infer_roles(frame)
    assert (guess.label, guess.probabilities, guess.features) == (
        "target", ("score_prob",), ("age",))
    assert guess.problems == () and guess.models == ()
    assert len(guess.notes) == 1
    assert guess.notes[0].startswith("guessed: probability 'score_prob' of label 'target', "
                                     "the only column named like a probability or a score")
    prediction_set = build_prediction_set(frame, guess.to_roles())
    assert prediction_set.classes == ("0", "1")
    np.testing.assert_allclose(prediction_set.proba[:, 1], frame["score_prob"])


@pytest.mark.parametrize("label, probability", [
    ("target", "score_prob"), ("outcome", "risk_score"), ("Outcome", "Risk Score"),
    ("y", "model-proba"), ("label", "churn_probability")])
def test_a_probability_or_score_column_of_any_binary_label(label: str,
                                                           probability: str) -> None:
    """Named like a probability, it is preferred to other columns of values in [0, 1]."""
    ratio = [0.5, 0.25, 0.75, 0.1, 0.9, 0.3, 0.6, 0.4, 0.2, 0.8, 0.7, 0.35]
    for frame, features in [(table(**{label: LABEL, probability: PROBABILITY, "age": AGE}),
                             ("age",)),
                            (table(**{"ratio": ratio, label: LABEL, probability: PROBABILITY}),
                             ("ratio",))]:
        guess = infer_roles(frame)
        assert (guess.label, guess.probabilities, guess.features) == (
            label, (probability,), features)
        assert guess.problems == ()
        assert guess.notes == (
            f"guessed: probability {probability!r} of label {label!r}, the only column named "
            "like a probability or a score (such as ..._prob or ..._score) with values "
            "between 0 and 1; check it.",)


@pytest.mark.parametrize("frame", [
    table(target=LABEL, model_score=HARD, age=AGE),  # hard 0/1 predictions
    table(target=LABEL, flagged=HARD, age=AGE),
    table(outcome=LABEL, credit_score=SCORE, age=AGE),  # a score on 0..100
    table(outcome=LABEL, risk=[v - 0.5 for v in PROBABILITY]),  # below 0
], ids=["hard-named", "hard-unnamed", "score-out-of-range", "negative"])
def test_a_named_label_never_takes_hard_predictions_or_other_scales(
        frame: pd.DataFrame) -> None:
    guess = infer_roles(frame)
    assert guess.label == frame.columns[0]
    assert guess.probabilities == () and guess.notes == ()
    assert guess.problems == (NO_PROBABILITIES,)
    assert guess.features == tuple(frame.columns[1:])


@pytest.mark.parametrize("frame", [
    table(target=LABEL, s=PROBABILITY, r=PROBABILITY[::-1], age=AGE),  # two unnamed
    table(target=LABEL, gbm_score=PROBABILITY, lr_prob=PROBABILITY[::-1]),  # two named
], ids=["two-unnamed", "two-named"])
def test_a_named_label_with_several_candidates_is_not_guessed(frame: pd.DataFrame) -> None:
    guess = infer_roles(frame)
    assert (guess.label, guess.probabilities, guess.notes) == ("target", (), ())
    assert guess.problems == (NO_PROBABILITIES,)
    assert guess.features == tuple(frame.columns[1:])


def test_a_named_label_of_many_classes_takes_no_single_column() -> None:
    species = ["setosa", "virginica", "versicolor"] * 4
    assert guessed(table(species=species, label=species, s=PROBABILITY)) == (
        "label", (), ("species", "s"))


def test_two_models_of_a_named_label_are_still_models() -> None:
    guess = infer_roles(table(target=LABEL, gbm_prob=PROBABILITY, lr_prob=PROBABILITY[::-1],
                              age=AGE))
    assert (guess.label, guess.probabilities, guess.features) == (
        "target", ("gbm_prob",), ("age",))
    assert guess.models == (("gbm", ("gbm_prob",)), ("lr", ("lr_prob",)))
    assert guess.notes == ()


def test_last_resort_prefers_a_column_named_like_a_score() -> None:
    frame = table(bought=LABEL, q=PROBABILITY[::-1], risk_score=PROBABILITY, age=AGE)
    guess = infer_roles(frame)
    assert (guess.label, guess.probabilities, guess.features) == (
        "bought", ("risk_score",), ("q", "age"))
    assert guess.notes == (
        "guessed: label 'bought' and probability 'risk_score', the only column of two values "
        "like 0/1 and the only column named like a probability or a score (such as ..._prob "
        "or ..._score) with values between 0 and 1; check them.",)


def test_role_problems_follow_the_choice() -> None:
    assert role_problems(None, ()) == (NO_LABEL, NO_PROBABILITIES)
    assert role_problems("delayed", ()) == (NO_PROBABILITIES,)
    assert role_problems(None, ("p",), unlabeled=True) == ()
    assert role_problems("delayed", ("p_delayed",), "delayed") == (
        "Column 'delayed' is chosen as label and split: give it one role.",)
    assert role_problems("p", ("p", "q"), id_column="q") == (
        "Column 'p' is chosen as label and probability: give it one role.",
        "Column 'q' is chosen as probability and id: give it one role.")


@pytest.mark.parametrize("name, says", [
    ("p_delayed", True), ("delayed_prob", True), ("cat_proba", True), ("y_prob", True),
    ("p1", True), ("Predicted Probability", True), ("score", False), ("y_pred", False),
    ("pred_delayed", False), ("prediction", False), ("property", False), ("top", False),
])
def test_says_probability(name: str, says: bool) -> None:
    assert says_probability(name) is says


# -- properties ------------------------------------------------------------------------
ROLE_WORDS = {*LABEL_NAMES, *BINARY_PROBABILITY_NAMES, *SPLIT_NAMES, *ID_NAMES}
COLUMN_VALUES = {
    "binary": st.lists(st.sampled_from([0, 1]), min_size=N, max_size=N),
    "unit": st.lists(st.floats(0, 1), min_size=N, max_size=N),
    "wide": st.lists(st.floats(-50, 50), min_size=N, max_size=N),
    "text": st.lists(st.sampled_from(["yes", "no", "cat", "dog"]), min_size=N, max_size=N),
}
POOL = ["y", "target", "score", "y_pred", "p", "proba_0", "proba_1", "cat_proba",
        "delayed", "p_delayed", "pred_delayed", "age", "q", "split", "id", "flag"]


@st.composite
def any_table(draw: st.DrawFn) -> pd.DataFrame:
    names = draw(st.lists(st.sampled_from(POOL), min_size=1, max_size=7, unique=True))
    return pd.DataFrame({name: draw(st.one_of(*COLUMN_VALUES.values())) for name in names})


@pytest.mark.slow
@settings(max_examples=150)
@given(any_table())
def test_every_column_gets_one_role_and_probabilities_are_checked(frame: pd.DataFrame) -> None:
    guess = infer_roles(frame)
    roles = [guess.label, *guess.probabilities, guess.split, guess.id, *guess.features]
    assert sorted(c for c in roles if c is not None) == sorted(frame.columns)
    assert guess.label not in guess.features
    assert not set(guess.probabilities) & set(guess.features)
    assert (guess.problems == ()) == (guess.label is not None and bool(guess.probabilities))
    assert all(note.startswith("guessed: ") for note in guess.notes)
    if len(guess.probabilities) == 1 and not says_probability(guess.probabilities[0]):
        values = frame[guess.probabilities[0]]
        assert values.between(0, 1).all() and not values.isin((0, 1)).all()


def _target_name() -> st.SearchStrategy[str]:
    return st.from_regex(r"[a-z]{3,10}", fullmatch=True).filter(
        lambda name: name not in ROLE_WORDS and not says_probability(name))


@settings(max_examples=60)
@given(target=_target_name(),
       form=st.sampled_from(["{}_prob", "{}_proba", "{}_probability", "p_{}", "prob_{}",
                             "proba_{}", "{}_score", "pred_{}"]),
       n_features=st.integers(0, 6), position=st.integers(0, 6))
def test_a_pair_is_found_among_any_number_of_features(target: str, form: str, n_features: int,
                                                      position: int) -> None:
    rng = np.random.default_rng(n_features)
    frame = pd.DataFrame({f"x{k}": rng.normal(size=N) for k in range(n_features)})
    frame.insert(min(position, n_features), target, LABEL)
    frame[form.format(target)] = PROBABILITY
    guess = infer_roles(frame)
    assert guess == RoleGuess(target, (form.format(target),),
                              tuple(f"x{k}" for k in range(n_features)), None, None)


@pytest.mark.parametrize("names", [("0", "1", "2", "3"), ("cat", "dog", "fox", "owl")])
def test_a_class_no_row_is_labelled_with_keeps_its_probability_column(names) -> None:
    # a test set without the rare class: its probability column is a class, not a
    # feature (without it the rows' probabilities would not sum to 1)
    proba = np.array([[0.5, 0.2, 0.2, 0.1], [0.1, 0.6, 0.2, 0.1], [0.2, 0.1, 0.6, 0.1],
                      [0.7, 0.1, 0.1, 0.1]])
    frame = pd.DataFrame(proba, columns=[f"proba_{c}" for c in names])
    frame.insert(0, "label", [names[0], names[1], names[2], names[0]])
    frame["age"] = [30.0, 41.0, 52.0, 63.0]
    guess = infer_roles(frame)
    assert guess.probabilities == tuple(f"proba_{c}" for c in names)
    assert guess.features == ("age",) and guess.problems == ()
    prediction_set = build_prediction_set(frame, guess.to_roles())
    assert prediction_set.classes == names
    np.testing.assert_array_equal(prediction_set.y_true, [0, 1, 2, 0])
    np.testing.assert_allclose(prediction_set.proba, proba, rtol=1e-12)


def test_an_unseen_class_column_outside_the_unit_interval_stays_a_feature() -> None:
    frame = pd.DataFrame({"label": ["a", "b", "a"], "proba_a": [0.7, 0.2, 0.6],
                          "proba_b": [0.3, 0.8, 0.4], "proba_c": [3.0, 1.0, 2.0]})
    guess = infer_roles(frame)
    assert guess.probabilities == ("proba_a", "proba_b") and guess.features == ("proba_c",)
