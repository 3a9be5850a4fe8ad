"""Column roles of a prediction table, and their inference from names and values.

A prediction table has one row per example: the true label, the model's class
probabilities (or logits), optionally a split column (calibration/test) and an
id, and any number of feature columns. :func:`infer_roles` guesses which
column plays which role; :mod:`calibcore.data` validates a table under given roles.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, NamedTuple

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from calibcore.data.column_names import (
    BINARY_PROBABILITY_NAMES,
    CLASS_COLUMN_FORMS,
    ID_NAMES,
    LABEL_NAMES,
    PAIRED_PROBABILITY_FORMS,
    PROBABILITY_PREFIXES,
    PROBABILITY_SUFFIXES,
    SPLIT_NAMES,
    TIME_NAMES,
    WEIGHT_NAMES,
    _class_columns,
    _class_groups,
    _find_named,
    column_class_parts,
    model_groups,
    natural_order,
    normalize_name,
    says_probability,
)
from calibcore.exceptions import RoleInferenceError

__all__ = [
    "BINARY_PROBABILITY_NAMES",
    "BOOLEAN_LABELS",
    "ID_NAMES",
    "LABEL_NAMES",
    "NO_LABEL",
    "NO_PROBABILITIES",
    "PROBABILITY_PREFIXES",
    "PROBABILITY_SUFFIXES",
    "SPLIT_NAMES",
    "SPLIT_VALUES",
    "WEIGHT_NAMES",
    "ColumnRoles",
    "RoleGuess",
    "Split",
    "column_class_parts",
    "infer_roles",
    "label_value_names",
    "natural_order",
    "normalize_name",
    "role_problems",
    "says_probability",
]

Split = Literal["calibration", "test"]

SPLIT_VALUES: dict[str, Split] = {
    "calibration": "calibration", "cal": "calibration", "calib": "calibration",
    "fit": "calibration", "train": "calibration", "recalibration": "calibration",
    "test": "test", "eval": "test", "evaluation": "test", "holdout": "test",
    "hold-out": "test", "heldout": "test", "held_out": "test", "validation": "test",
}
BOOLEAN_LABELS = {"false": 0, "true": 1, "no": 0, "yes": 1, "0": 0, "1": 1, "neg": 0,
                  "pos": 1, "negative": 0, "positive": 1, "0.0": 0, "1.0": 1}
NO_LABEL = "No label column found: name it y_true, y, label, target or class, or choose it."
NO_PROBABILITIES = (
    "No probability columns found: give one column per class named like proba_<class> "
    "(or one column y_prob with P(positive class) for a binary label), or choose them.")


@dataclass(frozen=True)
class ColumnRoles:
    """Which column plays which role.

    Attributes
    ----------
    label : str or None
        The true-label column; None for an unlabeled batch (predictions only), which
        supports the label-free diagnostics (calibration support, applying a model).
    probabilities : tuple of str
        One column per class (K >= 2), or a single column holding P(positive class)
        of a binary problem.
    features : tuple of str
        Columns describing the examples.
    split : str or None
        Column with calibration/test values.
    id : str or None
        Identifier column carried into exports.
    logits : bool
        The probability columns hold logits (softmax, or sigmoid for one column).
    time : str or None
        When each prediction was made: dates, datetimes or an ordered number (the
        calibration timeline reads it).
    models : tuple of (str, tuple of str)
        Several models' probabilities of the same rows: (model name, its probability
        columns) for each, the first being ``probabilities`` (the Compare page reads it).
    weight : str or None
        Row weights (survey, importance or downsampling weights): non-negative numbers,
        each the number of examples its row stands for (:mod:`calibcore.data.weights`).
    """

    label: str | None
    probabilities: tuple[str, ...]
    features: tuple[str, ...] = ()
    split: str | None = None
    id: str | None = None
    logits: bool = False
    time: str | None = None
    models: tuple[tuple[str, tuple[str, ...]], ...] = ()
    weight: str | None = None

    def columns(self) -> list[str]:
        """Every column with a role, label first."""
        named = [*([self.label] if self.label else []), *self.probabilities, *self.features]
        others = [c for _, columns in self.models for c in columns
                  if c not in self.probabilities]
        return named + others + [c for c in (self.split, self.id, self.time, self.weight)
                                 if c is not None]


@dataclass(frozen=True)
class RoleGuess:
    """The result of role inference: roles filled in where they could be, and why.

    ``label`` or ``probabilities`` may be missing (None / empty) when the table gave
    no clue; ``problems`` then says what to choose. ``notes`` says which roles rest on
    weak evidence (each starts "guessed:"), for the user to check.
    """

    label: str | None
    probabilities: tuple[str, ...]
    features: tuple[str, ...]
    split: str | None
    id: str | None
    problems: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    time: str | None = None
    models: tuple[tuple[str, tuple[str, ...]], ...] = ()
    weight: str | None = None

    def to_roles(self) -> ColumnRoles:
        """The guess as :class:`ColumnRoles`; raises if label or probabilities are missing."""
        if self.label is None or not self.probabilities:
            raise RoleInferenceError(
                " ".join(self.problems) or "could not find label and probability columns.",
                code="roles_not_found",
            )
        return ColumnRoles(self.label, self.probabilities, self.features, self.split, self.id,
                           time=self.time, models=self.models, weight=self.weight)






def label_value_names(values: pd.Series) -> pd.Series:
    """Label values as the strings that name classes ("1", "cat"); integral floats lose ".0".

    Each distinct value is named once (a label column has few), so a million rows cost a
    factorization, not a million Python calls.
    """
    codes, names = label_codes(values)
    named = np.array([*names, np.nan], dtype=object)  # code -1 (missing) reads the last
    return pd.Series(named[codes], index=values.index, name=values.name, dtype=object)


def label_codes(values: pd.Series) -> tuple[NDArray[np.intp], list[str]]:
    """:func:`label_value_names` as codes: each row's code (-1 where missing) and the name
    of each code, codes numbered in order of first appearance (names may repeat: 1 and
    1.0 are both "1")."""
    codes, uniques = pd.factorize(values, use_na_sentinel=True)
    if pd.api.types.is_bool_dtype(values):
        names = [{False: "0", True: "1"}[bool(v)] for v in uniques]
    elif pd.api.types.is_float_dtype(values) and np.all(
            np.asarray(uniques) == np.round(np.asarray(uniques))):
        names = [str(int(v)) for v in uniques]
    else:
        names = [str(v).strip() for v in uniques]
    return np.asarray(codes, dtype=np.intp), names












class _ValueClues:
    """What a column's values say about its role."""

    def __init__(self, frame: pd.DataFrame) -> None:
        self._frame = frame

    def class_names(self, column: str, at_most: int | None = None) -> tuple[str, ...] | None:
        """The distinct values as class names, in natural order; None beyond ``at_most``."""
        values = self._frame[column].dropna()
        if at_most is not None and values.iloc[:1000].nunique() > at_most:
            return None  # most columns stop here, after a thousand rows
        names = set(label_value_names(values.drop_duplicates()))
        if at_most is not None and len(names) > at_most:
            return None
        return tuple(sorted(names, key=natural_order))

    def boolean(self, column: str) -> bool:
        """Two values, spelled as 0/1, false/true, no/yes (the spellings of binary labels)."""
        names = self.class_names(column, at_most=2)
        codes = {BOOLEAN_LABELS.get(name.lower()) for name in names or ()}
        return codes == {0, 1}

    def in_unit_interval(self, column: str) -> bool:
        """Numbers in [0, 1], missing values aside (0 and 1 only included)."""
        return _probability_values(self._frame[column])

    def probability_like(self, column: str) -> bool:
        """Numbers in [0, 1], not only 0 and 1 (hard predictions are no probabilities)."""
        values = self._frame[column]
        if pd.api.types.is_bool_dtype(values) or not pd.api.types.is_numeric_dtype(values):
            return False
        present = values.dropna()
        if present.empty or present.min() < 0 or present.max() > 1:
            return False
        return not bool(present.isin((0, 1)).all())


class _Found(NamedTuple):
    label: str | None
    probabilities: tuple[str, ...]
    notes: tuple[str, ...] = ()


def infer_roles(frame: pd.DataFrame) -> RoleGuess:
    """Guess the role of every column from names and values.

    The label and probability columns are looked for in turn as:

    1. a label named as one (:data:`LABEL_NAMES`), with its probabilities: one column per
       class (``proba_<class>``, ``<class>_proba``, ... :data:`CLASS_COLUMN_FORMS`), one
       named after the label (``<label>_prob``, ``p_<label>``, ...
       :data:`PAIRED_PROBABILITY_FORMS`), a group of class columns, or one generic
       column (:data:`BINARY_PROBABILITY_NAMES`); failing these, for a label of at most
       two values, a guessed P(positive class) (see :func:`_guessed_probability`);
    2. any column of at most two values with a probability named after it (``delayed``
       and ``p_delayed``);
    3. a column whose values are exactly the classes of a group of class columns
       (``species`` with ``prob_setosa``, ``prob_versicolor``, ``prob_virginica``);
    4. probabilities without a label (a group, or a generic name), then, as a last
       resort, guesses from values: the only 0/1 column as the label and, when no
       probability column was found either, a guessed P(positive class) (see
       :func:`_guessed_probability`). Guesses are said in ``notes``.

    A probability column whose name does not say so (``score``, ``y_pred``,
    ``pred_<label>``), and every guessed one, must hold values in [0, 1], not only 0
    and 1. Label and probability columns are never features. A numeric column named
    ``weight``, ``weights``, ``sample_weight`` or ``sample_weights`` (any case:
    :data:`WEIGHT_NAMES`) holds the row weights.

    Parameters
    ----------
    frame : DataFrame
        The raw table.

    Returns
    -------
    RoleGuess
        Always returns; unresolved roles are explained in ``problems``.
    """
    columns = [str(c) for c in frame.columns]
    clues = _ValueClues(frame)
    models = tuple(group for group in model_groups(columns)
                   if all(_probability_values(frame[c]) for c in group[1]))
    label = _find_named(columns, LABEL_NAMES)
    single = all(len(group) == 1 for _, group in models)
    if len(models) < 2 or (single and label is not None
                           and frame[label].dropna().nunique() > 2):
        models = ()  # one column per class (setosa_proba, ...), not models of P(positive)
    if models and label is not None:
        found = _Found(label, models[0][1])
    else:
        found = (_named_label(label, columns, clues) if label is not None
                 else _paired_label(columns, clues) or _label_of_class_group(columns, clues)
                 or _guessed_label(columns, clues))
    if found.probabilities not in [group for _, group in models]:
        models = ()
    taken = {found.label, *found.probabilities, *(c for _, group in models for c in group)}
    split = _find_named([c for c in columns if c not in taken], SPLIT_NAMES)
    if split is not None and not _looks_like_split(frame[split]):
        split = None
    taken.add(split)
    id_column = _find_named([c for c in columns if c not in taken], ID_NAMES)
    taken.add(id_column)
    time = _find_named([c for c in columns if c not in taken], TIME_NAMES)
    if time is not None and not looks_like_time(frame[time]):
        time = None
    taken.add(time)
    weight = _find_named([c for c in columns if c not in taken], WEIGHT_NAMES)
    if weight is not None and (pd.api.types.is_bool_dtype(frame[weight])
                               or not pd.api.types.is_numeric_dtype(frame[weight])):
        weight = None  # text named "weight" is no row weight
    taken.add(weight)
    features = tuple(c for c in columns if c not in taken)
    return RoleGuess(found.label, found.probabilities, features, split, id_column,
                     role_problems(found.label, found.probabilities), found.notes, time,
                     models, weight)


def _probability_values(values: pd.Series) -> bool:
    """Numbers in [0, 1] (missing values aside)."""
    if not pd.api.types.is_numeric_dtype(values) or pd.api.types.is_bool_dtype(values):
        return False
    present = values.dropna()
    return bool(len(present)) and bool(((present >= 0) & (present <= 1)).all())






def looks_like_time(values: pd.Series) -> bool:
    """Datetimes, or text of which the first 50 values all parse as dates."""
    if pd.api.types.is_datetime64_any_dtype(values):
        return True
    if pd.api.types.is_numeric_dtype(values) or pd.api.types.is_bool_dtype(values):
        return False
    head = values.dropna().astype(str).head(50)
    if head.empty:
        return False
    try:
        parsed = pd.to_datetime(head, errors="coerce", format="mixed")
    except (ValueError, TypeError):
        return False
    return bool(parsed.notna().all())


def role_problems(label: str | None, probabilities: Sequence[str], split: str | None = None,
                  id_column: str | None = None, *, unlabeled: bool = False,
                  time: str | None = None, weight: str | None = None) -> tuple[str, ...]:
    """What stops these roles from making a prediction set: a missing label (unless the
    table is an ``unlabeled`` batch), no probability column, a column in two roles.
    Features are left out: they are whatever the other roles leave."""
    problems = [*([NO_LABEL] if label is None and not unlabeled else []),
                *([NO_PROBABILITIES] if not probabilities else [])]
    roles = [(label, "label"), *((p, "probability") for p in probabilities),
             (split, "split"), (id_column, "id"), (time, "time"), (weight, "weight")]
    for column in dict.fromkeys(c for c, _ in roles if c is not None):
        held = [role for c, role in roles if c == column]
        if len(held) > 1:
            problems.append(f"Column {column!r} is chosen as {' and '.join(held)}: "
                            "give it one role.")
    return tuple(problems)


def _named_label(label: str, columns: Sequence[str], clues: _ValueClues) -> _Found:
    """A label named as one, with its probabilities found by name or, for a label of at
    most two values, guessed (:func:`_guessed_probability`) and said in a note."""
    probabilities = _probabilities_of(label, columns, clues)
    if probabilities or not clues.class_names(label, at_most=2):
        return _Found(label, probabilities)
    guess = _guessed_probability(label, columns, clues)
    if guess is None:
        return _Found(label, ())
    probability, why = guess
    return _Found(label, (probability,), (
        f"guessed: probability {probability!r} of label {label!r}, {why}; check it.",))


def _guessed_probability(label: str, columns: Sequence[str], clues: _ValueClues
                         ) -> tuple[str, str] | None:
    """P(positive class) of a binary ``label`` when no name says which column holds it.

    The candidates are the columns of values in [0, 1], not only 0 and 1 (hard
    predictions and scores on other scales are never taken), besides the label and the
    columns named as a split, id or time. The only candidate named like a probability
    or a score (``risk_score``, ``score_prob``: :data:`PROBABILITY_SUFFIXES`) is taken,
    else the only candidate.

    Parameters
    ----------
    label : str
        The label column.
    columns : sequence of str
        Every column of the table.
    clues : _ValueClues
        What the values of the columns say.

    Returns
    -------
    tuple of (str, str) or None
        The column and why it was taken (for the note), or None when there is no
        candidate or several of equal standing.
    """
    reserved = {*SPLIT_NAMES, *ID_NAMES, *TIME_NAMES, *WEIGHT_NAMES}
    candidates = [c for c in columns if c != label and normalize_name(c) not in reserved
                  and clues.probability_like(c)]
    named = [c for c in candidates if normalize_name(c).endswith(PROBABILITY_SUFFIXES)]
    if len(named) == 1:
        return named[0], ("the only column named like a probability or a score (such as "
                          "..._prob or ..._score) with values between 0 and 1")
    if len(candidates) == 1:
        return candidates[0], "the only column of values between 0 and 1"
    return None


def _with_unseen_classes(found: tuple[str, ...], columns: Sequence[str], clues: _ValueClues
                         ) -> tuple[str, ...]:
    """The class columns found for the label's values and, written in the same form, those
    of classes no row is labelled with (a test set without a rare class still carries its
    probability, and the rows' probabilities sum to 1 only with it): the whole group, in
    file order, when every column of it holds values in [0, 1]."""
    if not found:
        return found
    for group, _ in _class_groups(columns, CLASS_COLUMN_FORMS):
        if set(found) < set(group) and all(clues.in_unit_interval(c) for c in group):
            return group
    return found


def _probabilities_of(label: str, columns: Sequence[str], clues: _ValueClues
                      ) -> tuple[str, ...]:
    others = [c for c in columns if c != label]
    paired = [form.format(normalize_name(label)) for form in PAIRED_PROBABILITY_FORMS]
    groups = _class_groups(others, [f for f in CLASS_COLUMN_FORMS if says_probability(f)])
    return (_with_unseen_classes(_class_columns(others, clues.class_names(label) or ()),
                                 others, clues)
            or _named_probability(others, paired, clues)
            or (groups[0][0] if groups else ())
            or _named_probability(others, BINARY_PROBABILITY_NAMES, clues))


def _named_probability(columns: Sequence[str], names: Sequence[str], clues: _ValueClues
                       ) -> tuple[str, ...]:
    """The first column with one of ``names`` whose name or values say it is a probability."""
    by_normal = {normalize_name(c): c for c in columns}
    for name in names:
        column = by_normal.get(name)
        if column is not None and (says_probability(name) or clues.probability_like(column)):
            return (column,)
    return ()


def _paired_label(columns: Sequence[str], clues: _ValueClues) -> _Found | None:
    """A column of at most two values and a probability named after it (delayed, p_delayed)."""
    by_normal = {normalize_name(c): c for c in columns}
    pairs = []
    for label in columns:
        paired = [form.format(normalize_name(label)) for form in PAIRED_PROBABILITY_FORMS]
        named = [by_normal[name] for name in paired if name in by_normal]
        if named and clues.class_names(label, at_most=2):
            probability = _named_probability(named, paired, clues)
            if probability:
                pairs.append((label, probability))
    if not pairs:
        return None
    label, probability = pairs[0]
    others = ", ".join(f"{lab!r} with {prob[0]!r}" for lab, prob in pairs[1:])
    notes = (f"guessed: label {label!r} with probability {probability[0]!r}, the first of "
             f"several such pairs (also {others}); choose others if they are wrong.",
             ) if others else ()
    return _Found(label, probability, notes)


def _label_of_class_group(columns: Sequence[str], clues: _ValueClues) -> _Found | None:
    """A column whose values are exactly the classes of a group of class columns."""
    for group, class_names in _class_groups(columns, CLASS_COLUMN_FORMS):
        classes = set(class_names)
        matching = []
        for column in (c for c in columns if c not in group):
            names = clues.class_names(column, at_most=len(classes))
            if names and {normalize_name(n) for n in names} == classes:
                matching.append(column)
        if matching:
            label = matching[0]
            probabilities = _class_columns(group, clues.class_names(label) or ())
            notes = (f"guessed: label {label!r}, the first of the columns whose values are "
                     f"the classes of {group[0]!r}, ... ({', '.join(map(repr, matching))}); "
                     "choose another if it is wrong.",) if len(matching) > 1 else ()
            return _Found(label, probabilities, notes)
    return None


def _guessed_label(columns: Sequence[str], clues: _ValueClues) -> _Found:
    """Probabilities without a label, then guesses from values (the last resort)."""
    groups = _class_groups(columns, [f for f in CLASS_COLUMN_FORMS if says_probability(f)])
    probabilities = groups[0][0] if groups else _named_probability(
        columns, BINARY_PROBABILITY_NAMES, clues)
    rest = [c for c in columns if c not in probabilities]
    booleans = [c for c in rest if clues.boolean(c)]
    if len(booleans) != 1 or len(probabilities) > 1:  # a 0/1 label goes with one column
        return _Found(None, probabilities)
    label = booleans[0]
    if probabilities:
        return _Found(label, probabilities, (
            f"guessed: label {label!r}, the only column of two values like 0/1 beside the "
            f"probability column {probabilities[0]!r}; check it.",))
    guess = _guessed_probability(label, rest, clues)
    if guess is None:
        return _Found(None, ())
    probability, why = guess
    return _Found(label, (probability,), (
        f"guessed: label {label!r} and probability {probability!r}, the only column of two "
        f"values like 0/1 and {why}; check them.",))




def _looks_like_split(values: pd.Series) -> bool:
    seen = {str(v).strip().lower() for v in values.dropna().unique()[:50]}
    return bool(seen) and seen <= set(SPLIT_VALUES)
