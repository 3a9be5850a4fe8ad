"""Prediction tables: validation under column roles -> :class:`PredictionSet`.

A prediction table has one row per example: the true label, the model's class
probabilities (or logits), optionally a split column (calibration/test) and an
id, and any number of feature columns. Which column plays which role
comes from the user or from :func:`calibcore.data.infer_roles` (re-exported here).
Reading files is the app's job; this module works on a :class:`pandas.DataFrame`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from calibcore._validation import SUM_TOLERANCE, describe_rows, first_rows, row_sums
from calibcore.data.roles import (
    BINARY_PROBABILITY_NAMES,
    BOOLEAN_LABELS,
    ID_NAMES,
    LABEL_NAMES,
    PROBABILITY_PREFIXES,
    PROBABILITY_SUFFIXES,
    SPLIT_NAMES,
    SPLIT_VALUES,
    ColumnRoles,
    RoleGuess,
    Split,
    column_class_parts,
    infer_roles,
    label_codes,
    label_value_names,
    natural_order,
    normalize_name,
)
from calibcore.data.weights import (
    check_sample_weight,
    effective_sample_size,
    negative_rate_weights,
    weight_column_numbers,
)
from calibcore.exceptions import CalibrationInputError

__all__ = [
    "BINARY_PROBABILITY_NAMES",
    "ID_NAMES",
    "LABEL_NAMES",
    "MAX_CATEGORICAL_INTEGERS",
    "PROBABILITY_PREFIXES",
    "PROBABILITY_SUFFIXES",
    "SPLIT_NAMES",
    "SPLIT_VALUES",
    "SUM_TOLERANCE",
    "ColumnRoles",
    "FeatureKind",
    "PredictionSet",
    "RoleGuess",
    "Split",
    "build_prediction_set",
    "class_names_of",
    "describe_rows",
    "feature_kind",
    "first_rows",
    "infer_roles",
    "label_value_names",
]

FeatureKind = Literal["numeric", "categorical"]
#: Integer columns with at most this many distinct values are treated as categorical.
MAX_CATEGORICAL_INTEGERS = 10


@dataclass(frozen=True)
class PredictionSet:
    """A validated prediction table.

    Attributes
    ----------
    classes : tuple of str
        Class names, in the order of the probability columns.
    y_true : ndarray of shape (n,)
        Class indices into ``classes``.
    proba : ndarray of shape (n, K)
        Class probabilities, rows summing to one.
    features : DataFrame
        The feature columns (may contain missing values).
    feature_kinds : dict
        ``"numeric"`` or ``"categorical"`` per feature.
    split : ndarray of shape (n,) of str, or None
        ``"calibration"`` or ``"test"`` per row.
    ids : ndarray of shape (n,) or None
    roles : ColumnRoles
    warnings : tuple of str
        Things the user should know (renormalized rows, missing feature values, rows
        left out, ...).
    labelled : bool
        False for an unlabeled batch, whose ``y_true`` is all -1.
    left_out : ndarray of int
        Positions, in the table given to :func:`build_prediction_set`, of the rows left
        out for a missing label or probability (``drop_missing``); the other arrays hold
        the remaining rows in order.
    weights : ndarray of shape (n,) or None
        Row weights (the weight column times the ``negative_rate`` weights), or None when
        every row counts once.
    """

    classes: tuple[str, ...]
    y_true: NDArray[np.intp]
    proba: NDArray[np.float64]
    features: pd.DataFrame
    feature_kinds: dict[str, FeatureKind]
    split: NDArray[np.str_] | None
    ids: NDArray[np.object_] | None
    roles: ColumnRoles
    warnings: tuple[str, ...] = field(default=())
    labelled: bool = True
    left_out: NDArray[np.intp] = field(default_factory=lambda: np.zeros(0, dtype=np.intp))
    weights: NDArray[np.float64] | None = None

    @property
    def n_rows(self) -> int:
        return int(self.y_true.size)

    @property
    def weighted(self) -> bool:
        """Whether the rows carry weights."""
        return self.weights is not None

    def weights_of(self, mask: NDArray[np.bool_] | None = None) -> NDArray[np.float64] | None:
        """The weights of the rows of ``mask`` (all rows if None), or None if unweighted."""
        if self.weights is None:
            return None
        return self.weights if mask is None else self.weights[mask]

    def n_eff(self, mask: NDArray[np.bool_] | None = None) -> float:
        """Kish's effective sample size of the rows of ``mask`` (their count if unweighted;
        :func:`calibcore.data.weights.effective_sample_size`)."""
        weights = self.weights_of(mask)
        if weights is None:
            return float(self.n_rows if mask is None else np.count_nonzero(mask))
        return effective_sample_size(weights)

    @property
    def n_classes(self) -> int:
        return len(self.classes)

    def mask(self, split: Split) -> NDArray[np.bool_]:
        """Rows of the given split (all rows when the table has no split column)."""
        if self.split is None:
            return np.ones(self.n_rows, dtype=bool)
        return self.split == split


def feature_kind(values: pd.Series) -> FeatureKind:
    """Numeric, or categorical for strings, booleans and low-cardinality integers."""
    if pd.api.types.is_bool_dtype(values) or not pd.api.types.is_numeric_dtype(values):
        return "categorical"
    integral = pd.api.types.is_integer_dtype(values) or _whole_numbers(
        values.to_numpy(dtype=np.float64, na_value=np.nan))
    if integral and values.dropna().nunique() <= MAX_CATEGORICAL_INTEGERS:
        return "categorical"
    return "numeric"


def _whole_numbers(values: NDArray[np.float64]) -> bool:
    """Whether every value that is not missing is a whole number. The first values are
    looked at first: most float columns show a fraction there (1.5M rows: 6 ms a column
    for the whole pass)."""
    for part in (values[:1024], values):
        present = part[~np.isnan(part)]
        if not (present == np.round(present)).all():
            return False
    return True


def build_prediction_set(
    frame: pd.DataFrame, roles: ColumnRoles, *, renormalize: bool = False,
    drop_missing: bool = False, negative_rate: float | None = None,
) -> PredictionSet:
    """Validate ``frame`` under ``roles`` and return a :class:`PredictionSet`.

    Parameters
    ----------
    frame : DataFrame
        The raw table.
    roles : ColumnRoles
        Column roles (from :func:`infer_roles` or the user).
    renormalize : bool, default=False
        Rescale probability rows that do not sum to 1 (within 1e-3) instead of
        rejecting them (the rescaling is reported in ``warnings``).
    drop_missing : bool, default=False
        Leave out the rows with a missing label or a missing probability (of the
        dataset's or any compared model's columns) instead of rejecting the table; they
        are counted in ``warnings`` and listed in ``left_out``. Missing feature values
        never cost a row.
    negative_rate : float, optional
        The fraction of negatives a log kept (every positive kept): its negatives
        (class 0 of a binary problem) get weight 1 / rate, multiplying the weight
        column's weights if there is one. Binary problems only.

    Raises
    ------
    CalibrationInputError
        Naming the column, the first offending rows and their count.

    Examples
    --------
    >>> import pandas as pd
    >>> from calibcore.data import ColumnRoles, build_prediction_set
    >>> frame = pd.DataFrame({"y": [0, 1, None, 1], "p": [0.2, 0.7, 0.4, None]})
    >>> kept = build_prediction_set(frame, ColumnRoles(label="y", probabilities=("p",)),
    ...                             drop_missing=True)
    >>> kept.n_rows, kept.left_out.tolist()
    (2, [2, 3])
    """
    _check_columns_exist(frame, roles)
    if frame.shape[0] == 0:
        raise CalibrationInputError("the table has no rows.", code="empty_table")
    warnings: list[str] = []
    problems: list[CalibrationInputError] = []
    left_out = np.zeros(0, dtype=np.intp)
    if drop_missing:
        scored = [*roles.probabilities, *(c for _, group in roles.models for c in group)]
        missing = frame[list(dict.fromkeys(scored))].isna().any(axis=1).to_numpy()
        if roles.label is not None:
            missing = missing | label_value_names(frame[roles.label]).isna().to_numpy()
        if missing.all():
            raise CalibrationInputError(
                "every row has a missing label or probability; no row is left to use.",
                code="missing_values", column=roles.label or roles.probabilities[0],
                rows=first_rows(missing), count=int(missing.sum()))
        if missing.any():
            left_out = np.flatnonzero(missing)
            # positions, so a table with any index keeps the rows it names
            frame = frame.iloc[np.flatnonzero(~missing)].reset_index(drop=True)
            warnings.append(f"{left_out.size:,} row{'s' if left_out.size > 1 else ''} left "
                            f"out (missing label or probability): {describe_rows(missing)} "
                            "of the file.")
    # each row's label as a code of its name (-1: none), named once per distinct value
    codes, names = (np.full(frame.shape[0], -1, dtype=np.intp), []) if roles.label is None \
        else label_codes(frame[roles.label])
    if roles.label is not None:
        _collect(problems, _reject_missing, codes < 0, roles.label, "label")
    raw = _numeric_probabilities(frame, roles.probabilities, problems)
    if not roles.logits and not problems:
        _collect(problems, _check_range, raw, roles)
    if problems:  # every problem of the label and probability columns at once
        raise CalibrationInputError.of_all(problems)
    # the classes depend only on which label names there are
    classes, proba = _class_probabilities(raw, roles,
                                          pd.Series(list(dict.fromkeys(names)), dtype=object))
    proba = _checked_simplex(proba, roles, renormalize, warnings)
    index = {name: k for k, name in enumerate(classes)}
    code_classes = np.array([index.get(name, -1) for name in names], dtype=np.intp)
    labelled_rows = codes >= 0
    if labelled_rows.all():
        y_true = code_classes[codes]
    else:
        y_true = np.full(codes.size, -1, dtype=np.intp)
        y_true[labelled_rows] = code_classes[codes[labelled_rows]]
    unknown = labelled_rows & (y_true < 0)
    if unknown.any():
        # in order of first appearance, as the codes are numbered
        values = ", ".join(repr(v) for v in list(dict.fromkeys(
            name for name, k in zip(names, code_classes, strict=True) if k < 0))[:5])
        raise CalibrationInputError(
            f"column {roles.label!r} has label values with no probability column ({values}) "
            f"in {describe_rows(unknown)}; probability columns are for classes "
            f"{', '.join(classes)}.",
            code="label_without_probability", column=roles.label,
            rows=first_rows(unknown), count=int(unknown.sum()),
        )
    weights = _row_weights(frame, roles, y_true, classes, negative_rate)
    features = frame[list(roles.features)].reset_index(drop=True)
    kinds = {name: feature_kind(features[name]) for name in roles.features}
    missing = {name: int(n) for name, n in features.isna().sum().items() if n}
    if missing:
        listed = ", ".join(f"{name} ({n})" for name, n in list(missing.items())[:5])
        warnings.append(f"features with missing values (rows): {listed}; each diagnostic "
                        "drops or imputes them and says so.")
    return PredictionSet(
        classes=classes,
        y_true=y_true,
        proba=proba,
        features=features,
        feature_kinds=kinds,
        split=_split_values(frame, roles.split),
        ids=None if roles.id is None else frame[roles.id].to_numpy(dtype=object),
        roles=roles,
        warnings=tuple(warnings),
        labelled=roles.label is not None,
        left_out=left_out,
        weights=weights,
    )


def _row_weights(frame: pd.DataFrame, roles: ColumnRoles, y_true: NDArray[np.intp],
                 classes: tuple[str, ...], negative_rate: float | None
                 ) -> NDArray[np.float64] | None:
    """The weight column's values (checked) times the ``negative_rate`` weights."""
    weights = None
    if roles.weight is not None:
        weights = check_sample_weight(
            weight_column_numbers(frame[roles.weight], roles.weight), frame.shape[0],
            column=roles.weight)
    if negative_rate is not None:
        if len(classes) != 2 or roles.label is None:
            raise CalibrationInputError(
                f"negative_rate weights the negatives of a labelled binary problem; this "
                f"one has {len(classes)} classes{'' if roles.label else ' and no label'}. "
                "Give a weight column instead.", code="invalid_negative_rate")
        rate_weights = negative_rate_weights(y_true, negative_rate)
        weights = rate_weights if weights is None else weights * rate_weights
    return weights


def _check_columns_exist(frame: pd.DataFrame, roles: ColumnRoles) -> None:
    present = {str(c) for c in frame.columns}
    missing = [c for c in roles.columns() if c not in present]
    if missing:
        raise CalibrationInputError(
            f"column(s) {', '.join(map(repr, missing))} not found; the table has "
            f"{', '.join(map(repr, list(present)[:20]))}.",
            code="column_not_found", column=missing[0],
        )
    if not roles.probabilities:
        raise CalibrationInputError("choose at least one probability column.",
                                    code="no_probability_columns")
    if roles.label is not None and roles.label in roles.probabilities:
        raise CalibrationInputError(
            f"column {roles.label!r} cannot be both the label and a probability column.",
            code="conflicting_roles", column=roles.label)
    used = roles.columns()
    duplicated = sorted({c for c in used if used.count(c) > 1})
    if duplicated:
        raise CalibrationInputError(
            f"column(s) {', '.join(map(repr, duplicated))} have more than one role.",
            code="conflicting_roles", column=duplicated[0])


def _reject_missing(mask: NDArray[np.bool_], column: str, what: str) -> None:
    if mask.any():
        raise CalibrationInputError(
            f"column {column!r} ({what}) has missing values in {describe_rows(mask)}; "
            "to leave out the rows with a missing label or probability, use the "
            "drop_missing option.",
            code="missing_values", column=column, rows=first_rows(mask), count=int(mask.sum()),
        )


def _collect(problems: list[CalibrationInputError], check: Callable[..., None],
             *args: Any) -> None:
    """Run ``check``; keep its problem instead of stopping at it."""
    try:
        check(*args)
    except CalibrationInputError as problem:
        problems.append(problem)


def _numeric_probabilities(frame: pd.DataFrame, columns: Sequence[str],
                           problems: list[CalibrationInputError]) -> NDArray[np.float64]:
    """The probability columns as numbers; each column's problem (non-numeric, missing or
    infinite values) is added to ``problems``."""
    dtypes = frame.dtypes
    if all(isinstance(dtypes[column], np.dtype) and dtypes[column].kind in "fiu"
           for column in columns):
        # numbers already (the usual file; with 1,000 classes a loop over the columns
        # dominated the upload): one block copy, the loop only to name any problem
        block = frame[list(columns)].to_numpy(dtype=np.float64)
        if np.isfinite(block).all():
            return block
    out = np.empty((frame.shape[0], len(columns)))
    for k, column in enumerate(columns):
        values = pd.to_numeric(frame[column], errors="coerce")
        not_numbers = (values.isna() & frame[column].notna()).to_numpy()
        if not_numbers.any():
            examples = ", ".join(repr(v) for v in frame[column][not_numbers].unique()[:3])
            problems.append(CalibrationInputError(
                f"column {column!r} (probability) has non-numeric values ({examples}) in "
                f"{describe_rows(not_numbers)}.",
                code="non_numeric_probability", column=column,
                rows=first_rows(not_numbers), count=int(not_numbers.sum())))
        _collect(problems, _reject_missing, frame[column].isna().to_numpy(), column,
                 "probability")
        out[:, k] = values.to_numpy(dtype=np.float64, na_value=np.nan)
        infinite = np.isinf(out[:, k])
        if infinite.any():
            problems.append(CalibrationInputError(
                f"column {column!r} (probability) has infinite values in "
                f"{describe_rows(infinite)}.",
                code="non_finite_probability", column=column,
                rows=first_rows(infinite), count=int(infinite.sum())))
    return out


def _class_probabilities(
    raw: NDArray[np.float64], roles: ColumnRoles, labels: pd.Series
) -> tuple[tuple[str, ...], NDArray[np.float64]]:
    """Class names and an (n, K) probability matrix (logits converted)."""
    if len(roles.probabilities) == 1:
        scores = raw[:, 0]
        if roles.logits:
            scores = 1.0 / (1.0 + np.exp(-scores))
        return _binary_classes(labels, roles), np.column_stack([1.0 - scores, scores])
    if roles.logits:
        shifted = raw - raw.max(axis=1, keepdims=True)
        raw = np.exp(shifted) / np.exp(shifted).sum(axis=1, keepdims=True)
    classes = _classes_from_columns(roles.probabilities, labels)
    return classes, raw


def class_names_of(roles: ColumnRoles, label_names: pd.Series) -> tuple[str, ...]:
    """The classes of the probability columns, as :func:`build_prediction_set` names them,
    from the label values (:func:`label_value_names`; the distinct ones are enough)."""
    if len(roles.probabilities) == 1:
        return _binary_classes(label_names, roles)
    return _classes_from_columns(roles.probabilities, label_names)


def _binary_classes(labels: pd.Series, roles: ColumnRoles) -> tuple[str, str]:
    """(negative, positive) class names when one column holds P(positive)."""
    values = sorted(labels.dropna().unique(), key=natural_order)
    if len(values) > 2:
        raise CalibrationInputError(
            f"column {roles.label!r} has {len(values)} distinct labels "
            f"({', '.join(map(repr, values[:6]))}) but only one probability column "
            f"({roles.probabilities[0]!r}); give one probability column per class.",
            code="label_without_probability", column=roles.label,
        )
    if not values:  # an unlabeled batch
        return ("0", "1")
    lowered = {v: BOOLEAN_LABELS.get(v.lower()) for v in values}
    if all(code is not None for code in lowered.values()):
        by_code = {code: v for v, code in lowered.items()}
        negative = by_code.get(0, "0" if "1" in by_code.values() else "false")
        positive = by_code.get(1, "1" if negative == "0" else "true")
        return (negative, positive)
    if len(values) == 2:
        return (values[0], values[1])
    return (values[0] + " (not)", values[0])


def _classes_from_columns(columns: Sequence[str], labels: pd.Series) -> tuple[str, ...]:
    """Class names from ``<prefix><class>`` or ``<class><suffix>`` column names matched
    against label values."""
    values = set(labels.dropna().unique())
    normal_values = {normalize_name(v): v for v in values}
    for parts in column_class_parts(columns):
        normal_parts = [normalize_name(part) for part in parts]
        if any(part in normal_values for part in normal_parts) or not values:
            return tuple(normal_values.get(normal, part)
                         for normal, part in zip(normal_parts, parts, strict=True))
    if len(values) == len(columns) and all(v.isdigit() for v in values):
        return tuple(sorted(values, key=int))
    return tuple(str(c) for c in columns)


def _check_range(raw: NDArray[np.float64], roles: ColumnRoles) -> None:
    """Every probability column with values outside [0, 1], at once."""
    problems = []
    for k, column in enumerate(roles.probabilities):
        outside = (raw[:, k] < 0.0) | (raw[:, k] > 1.0)
        if outside.any():
            problems.append(CalibrationInputError(
                f"column {column!r} has probabilities outside [0, 1] in "
                f"{describe_rows(outside)}; if these are logits, set the logits option.",
                code="probability_out_of_range", column=column,
                rows=first_rows(outside), count=int(outside.sum())))
    if problems:
        raise CalibrationInputError.of_all(problems)


def _checked_simplex(
    proba: NDArray[np.float64], roles: ColumnRoles, renormalize: bool, warnings: list[str]
) -> NDArray[np.float64]:
    totals = row_sums(proba)
    off = np.abs(totals - 1.0) > SUM_TOLERANCE
    if off.any():
        if not renormalize or (totals[off] <= 0).any():
            worst = int(np.flatnonzero(off)[0])
            raise CalibrationInputError(
                f"probability columns {', '.join(roles.probabilities[:4])}"
                f"{'...' if len(roles.probabilities) > 4 else ''} must sum to 1 per row "
                f"(within {SUM_TOLERANCE:g}); {describe_rows(off)} do not (row {worst} sums "
                f"to {totals[worst]:.6g}). Turn on 'renormalize' to rescale them.",
                code="probabilities_do_not_sum_to_one", column=roles.probabilities[0],
                rows=first_rows(off), count=int(off.sum()))
        warnings.append(f"renormalized {int(off.sum())} probability rows that did not sum to 1.")
    # dividing by 1 changes no bit; an array that may be a view of the caller's frame
    # (many classes) is divided all the same, so the result is always the set's own
    if not off.any() and proba.flags.owndata and (totals == 1.0).all():
        return proba
    return proba / totals[:, None]


def _split_values(frame: pd.DataFrame, column: str | None) -> NDArray[np.str_] | None:
    if column is None:
        return None
    raw = frame[column].map(lambda v: v if pd.isna(v) else str(v).strip().lower())
    mapped = raw.map(SPLIT_VALUES)
    bad = mapped.isna().to_numpy()
    if bad.any():
        examples = ", ".join(repr(v) for v in frame[column][bad].unique()[:3])
        raise CalibrationInputError(
            f"column {column!r} (split) has values {examples} in {describe_rows(bad)}; use "
            "calibration/cal/fit for calibration rows and test/eval/holdout for held-out rows.",
            code="invalid_split", column=column, rows=first_rows(bad), count=int(bad.sum()))
    values = mapped.to_numpy(dtype=str)
    for needed in ("calibration", "test"):
        if not (values == needed).any():
            raise CalibrationInputError(
                f"column {column!r} (split) has no {needed} rows; give both calibration and "
                "test rows, or drop the split role to use cross-fitting.",
                code="invalid_split", column=column)
    return values
