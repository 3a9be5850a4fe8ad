"""Column roles of a prediction table, and their inference from names and values.

A prediction table has one row per example: the true label, the model's class
probabilities (or logits), optionally a split column (calibration/test) and an
id, and any number of feature columns (SPEC §2). :func:`infer_roles` guesses which
column plays which role; :mod:`calibcore.data` validates a table under given roles.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd

from calibcore.exceptions import RoleInferenceError

Split = Literal["calibration", "test"]

LABEL_NAMES = ("y_true", "y", "label", "labels", "target", "class", "truth", "ground_truth",
               "outcome", "true_label")
BINARY_PROBABILITY_NAMES = ("y_prob", "y_proba", "y_pred_proba", "y_score", "p", "proba",
                            "prob", "probability", "score", "pred_prob", "p1", "prob_1",
                            "proba_1", "p_1")
PROBABILITY_PREFIXES = ("y_proba_", "y_prob_", "proba_", "probability_", "prob_", "pred_",
                        "score_", "p_", "proba", "prob", "p")
SPLIT_NAMES = ("split", "fold", "subset", "set", "partition")
ID_NAMES = ("id", "row_id", "sample_id", "example_id", "uid", "uuid", "key", "index")
SPLIT_VALUES: dict[str, Split] = {
    "calibration": "calibration", "cal": "calibration", "calib": "calibration",
    "fit": "calibration", "train": "calibration", "recalibration": "calibration",
    "test": "test", "eval": "test", "evaluation": "test", "holdout": "test",
    "hold-out": "test", "heldout": "test", "held_out": "test", "validation": "test",
}
BOOLEAN_LABELS = {"false": 0, "true": 1, "no": 0, "yes": 1, "0": 0, "1": 1, "neg": 0,
                  "pos": 1, "negative": 0, "positive": 1, "0.0": 0, "1.0": 1}


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
    """

    label: str | None
    probabilities: tuple[str, ...]
    features: tuple[str, ...] = ()
    split: str | None = None
    id: str | None = None
    logits: bool = False

    def columns(self) -> list[str]:
        """Every column with a role, label first."""
        named = [*([self.label] if self.label else []), *self.probabilities, *self.features]
        return named + [c for c in (self.split, self.id) if c is not None]


@dataclass(frozen=True)
class RoleGuess:
    """The result of role inference: roles filled in where they could be, and why.

    ``label`` or ``probabilities`` may be missing (None / empty) when the table gave
    no clue; ``problems`` then says what to choose.
    """

    label: str | None
    probabilities: tuple[str, ...]
    features: tuple[str, ...]
    split: str | None
    id: str | None
    problems: tuple[str, ...] = ()

    def to_roles(self) -> ColumnRoles:
        """The guess as :class:`ColumnRoles`; raises if label or probabilities are missing."""
        if self.label is None or not self.probabilities:
            raise RoleInferenceError(
                " ".join(self.problems) or "could not find label and probability columns.",
                code="roles_not_found",
            )
        return ColumnRoles(self.label, self.probabilities, self.features, self.split, self.id)


def normalize_name(name: str) -> str:
    """Lower case, spaces and hyphens as underscores: how names are compared."""
    return re.sub(r"[\s\-]+", "_", str(name).strip().lower())


def _find_named(columns: Sequence[str], names: Sequence[str]) -> str | None:
    by_normal = {normalize_name(c): c for c in columns}
    for candidate in names:
        if candidate in by_normal:
            return by_normal[candidate]
    return None


def label_value_names(values: pd.Series) -> pd.Series:
    """Label values as the strings that name classes ("1", "cat"); integral floats lose ".0".

    Each distinct value is named once (a label column has few), so a million rows cost a
    factorization, not a million Python calls.
    """
    codes, uniques = pd.factorize(values, use_na_sentinel=True)
    if pd.api.types.is_bool_dtype(values):
        names = [{False: "0", True: "1"}[bool(v)] for v in uniques]
    elif pd.api.types.is_float_dtype(values) and np.all(
            np.asarray(uniques) == np.round(np.asarray(uniques))):
        names = [str(int(v)) for v in uniques]
    else:
        names = [str(v).strip() for v in uniques]
    named = np.array([*names, np.nan], dtype=object)  # code -1 (missing) reads the last
    return pd.Series(named[codes], index=values.index, name=values.name, dtype=object)


def _class_columns(columns: Sequence[str], class_names: Sequence[str]) -> tuple[str, ...]:
    """Columns ``<prefix><class>`` for every class, trying the known prefixes in turn."""
    by_normal = {normalize_name(c): c for c in columns}
    wanted = [normalize_name(c) for c in class_names]
    for prefix in PROBABILITY_PREFIXES:
        found = [by_normal.get(prefix + name) for name in wanted]
        if all(found):
            return tuple(str(c) for c in found)
    return ()


def _prefixed_groups(columns: Sequence[str]) -> tuple[str, ...]:
    """The largest group of >= 2 columns sharing a probability prefix (proba_0, proba_1, ...)."""
    best: tuple[str, ...] = ()
    for prefix in (p for p in PROBABILITY_PREFIXES if p.endswith("_")):
        group = tuple(c for c in columns if normalize_name(c).startswith(prefix)
                      and len(normalize_name(c)) > len(prefix))
        if len(group) > len(best):
            best = group
    return best if len(best) >= 2 else ()


def infer_roles(frame: pd.DataFrame) -> RoleGuess:
    """Guess the role of every column from names and values (SPEC §2).

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
    problems: list[str] = []
    label = _find_named(columns, LABEL_NAMES)
    probabilities: tuple[str, ...] = ()
    if label is None:
        problems.append(
            "No label column found: name it y_true, y, label, target or class, or choose it."
        )
    else:
        class_names = sorted(label_value_names(frame[label]).dropna().unique(), key=natural_order)
        probabilities = _class_columns([c for c in columns if c != label], class_names)
    if not probabilities:
        probabilities = _prefixed_groups([c for c in columns if c != label])
    if not probabilities:
        single = _find_named([c for c in columns if c != label], BINARY_PROBABILITY_NAMES)
        probabilities = (single,) if single else ()
    if not probabilities:
        problems.append(
            "No probability columns found: give one column per class named like proba_<class> "
            "(or one column y_prob with P(positive class) for a binary label), or choose them."
        )
    taken = {label, *probabilities}
    split = _find_named([c for c in columns if c not in taken], SPLIT_NAMES)
    if split is not None and not _looks_like_split(frame[split]):
        split = None
    taken.add(split)
    id_column = _find_named([c for c in columns if c not in taken], ID_NAMES)
    taken.add(id_column)
    features = tuple(c for c in columns if c not in taken)
    return RoleGuess(label, probabilities, features, split, id_column, tuple(problems))


def natural_order(value: str) -> tuple[int, float | str]:
    """Sort key: numbers by value before other names."""
    try:
        return (0, float(value))
    except ValueError:
        return (1, value)


def _looks_like_split(values: pd.Series) -> bool:
    seen = {str(v).strip().lower() for v in values.dropna().unique()[:50]}
    return bool(seen) and seen <= set(SPLIT_VALUES)
