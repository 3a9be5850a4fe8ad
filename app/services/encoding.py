"""Feature columns -> what a recalibrator's ``features=`` expects, fitted and portable.

Recalibrators that use features want different things:

* ``"variable"`` (the variable-based tree, Kelly & Smyth 2023): one numeric column as it is;
  missing values stay missing (the tree sends them to its global fit);
* ``"table"`` (LoRe): the chosen columns as a table, which LoRe encodes itself
  (its fitted encoding is part of its own JSON);
* ``"encoded"`` (SWC, SWC-HH): a numeric matrix, built by
  :func:`calibcore.local.fit_representation`: numeric columns standardized,
  categorical ones one-hot, missing values imputed (the fitted median or most
  frequent level).

A :class:`FeatureEncoder` is fitted on the rows a recalibrator is fitted on and
serializes to JSON, so a saved recalibrator applies to a new file exactly as it
was fitted.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from calibcore.exceptions import CalibrationInputError
from calibcore.local import Representation, fit_representation
from calibcore.recalibration import Recalibrator

EncoderKind = Literal["variable", "table", "encoded"]
FeatureValues: TypeAlias = NDArray[np.float64] | pd.DataFrame

#: How each feature-using method takes its features (others: "encoded").
METHOD_ENCODER_KIND: dict[str, EncoderKind] = {"variable_tree": "variable", "lore": "table"}


@dataclass(frozen=True)
class FeatureEncoder:
    """The fitted map from a file's feature columns to a recalibrator's ``features=``.

    Attributes
    ----------
    kind : {"variable", "table", "encoded"}
    columns : tuple of str
        The feature columns read from a table, in order.
    representation : Representation or None
        The fitted encoding of ``"encoded"``.
    notes : tuple of str
        What was done (imputation, one-hot), in words.
    """

    kind: EncoderKind
    columns: tuple[str, ...]
    representation: Representation | None = None
    notes: tuple[str, ...] = ()

    def transform(self, table: pd.DataFrame) -> FeatureValues:
        """The recalibrator's features for the rows of ``table``."""
        check_columns(table, self.columns, "feature")
        return _TRANSFORMS[self.kind](self, table)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON; :meth:`from_dict` reads it back exactly."""
        return {"kind": self.kind, "columns": list(self.columns),
                "representation": None if self.representation is None
                else self.representation.to_dict()}

    @classmethod
    def from_dict(cls, document: Any) -> FeatureEncoder:
        """Inverse of :meth:`to_dict`; a malformed document is an input error."""
        if not isinstance(document, dict) or document.get("kind") not in _TRANSFORMS:
            raise CalibrationInputError(
                'the "features" entry of the model document must be an object with "kind" '
                f"one of {', '.join(_TRANSFORMS)}.", code="invalid_model")
        columns = document.get("columns")
        if not isinstance(columns, list) or not columns or not all(
                isinstance(c, str) for c in columns):
            raise CalibrationInputError(
                'the "features" entry of the model document must list its "columns".',
                code="invalid_model")
        representation = document.get("representation")
        if document["kind"] == "encoded":
            if representation is None:
                raise CalibrationInputError(
                    'encoded features need their "representation" in the model document.',
                    code="invalid_model")
            representation = Representation.from_dict(representation)
        return cls(document["kind"], tuple(columns),
                   representation if document["kind"] == "encoded" else None)


def check_columns(table: pd.DataFrame, columns: tuple[str, ...] | list[str], role: str) -> None:
    """Every one of ``columns`` is in ``table``; otherwise one error naming all missing ones."""
    present = [str(c) for c in table.columns]
    missing = [c for c in columns if c not in set(present)]
    if missing:
        raise CalibrationInputError(
            f"the file lacks the {role} column(s) {', '.join(map(repr, missing))} that the "
            f"recalibrator was fitted with; it has {', '.join(map(repr, present[:20]))}.",
            code="missing_columns", column=missing[0])


def _variable(encoder: FeatureEncoder, table: pd.DataFrame) -> FeatureValues:
    column = encoder.columns[0]
    values = pd.to_numeric(table[column], errors="coerce")
    text = (values.isna() & table[column].notna()).to_numpy()
    if text.any():
        raise CalibrationInputError(
            f"the variable {column!r} must be numeric; it has text values such as "
            f"{table[column][text].iloc[0]!r}.", code="non_numeric_feature", column=column,
            count=int(text.sum()))
    return values.to_numpy(dtype=np.float64, na_value=np.nan)[:, None]


def _table(encoder: FeatureEncoder, table: pd.DataFrame) -> FeatureValues:
    return table[list(encoder.columns)].reset_index(drop=True)


def _encoded(encoder: FeatureEncoder, table: pd.DataFrame) -> FeatureValues:
    if encoder.representation is None:
        raise CalibrationInputError("encoded features need a fitted representation.",
                                    code="invalid_model")
    return encoder.representation.transform(table[list(encoder.columns)])


_TRANSFORMS: dict[EncoderKind, Callable[[FeatureEncoder, pd.DataFrame], FeatureValues]] = {
    "variable": _variable, "table": _table, "encoded": _encoded}


def choose_columns(estimator: Recalibrator, feature_kinds: Mapping[str, str],
                   requested: list[str] | None) -> tuple[str, ...]:
    """The feature columns ``estimator`` uses: the request, or all of the dataset's.

    The variable-based tree follows exactly one numeric column, which must be named.
    """
    kind = METHOD_ENCODER_KIND.get(estimator.method, "encoded")
    numeric = [name for name, k in feature_kinds.items() if k == "numeric"]
    if not feature_kinds:
        raise CalibrationInputError(
            f"{type(estimator).__name__} uses features, but this dataset has no feature "
            "columns.", code="no_features")
    unknown = [c for c in requested or [] if c not in feature_kinds]
    if unknown:
        raise CalibrationInputError(
            f"no feature column {', '.join(map(repr, unknown))}; the dataset's features are "
            f"{', '.join(map(repr, feature_kinds))}.", code="unknown_feature", column=unknown[0])
    if kind == "variable":
        if not requested or len(requested) != 1 or requested[0] not in numeric:
            raise CalibrationInputError(
                "the variable-based tree follows one numeric variable: give \"features\": "
                f"[name] with one of {', '.join(map(repr, numeric)) or '(none)'}.",
                code="invalid_features")
    if requested is not None and not requested:
        raise CalibrationInputError("choose at least one feature column (or null for all).",
                                    code="invalid_features")
    return tuple(dict.fromkeys(requested)) if requested else tuple(feature_kinds)


def fit_feature_encoder(estimator: Recalibrator, table: pd.DataFrame,
                        columns: tuple[str, ...]) -> FeatureEncoder:
    """Fit the encoder of ``estimator`` on the rows of ``table`` (the fitting rows)."""
    kind = METHOD_ENCODER_KIND.get(estimator.method, "encoded")
    if kind != "encoded":
        missing = int(table[list(columns)].isna().to_numpy().sum())
        notes = (f"{missing:,} missing values left to the method (LoRe imputes them; the "
                 "tree uses its global fit for them).",) if missing else ()
        return FeatureEncoder(kind, columns, notes=notes)
    representation = fit_representation(table[list(columns)], reducer="none")
    return FeatureEncoder(kind, columns, representation, representation.notes)
