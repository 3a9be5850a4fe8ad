"""Portable fitted recalibrators: the model document, importing it, applying it to files.

A model document is calibcore's ``Recalibrator.to_json()`` plus an ``inputs``
entry saying which columns of a file it reads and which classes it predicts::

    {"format": "calibdash-recalibrator", "version": 1, "method": ..., "params": ...,
     "state": ..., "inputs": {"probability_columns": [...], "classes": [...],
     "logits": false, "renormalize": false, "label_column": "y", "features": null | {...}}}

``Recalibrator.from_json`` reads only its own keys, so the document loads in
Python as it is. Every document is first checked against the schema in
:mod:`app.services.model_document` (dtypes, shapes, sizes, names), so nothing is
allocated for a document that is not one calibdash could have written.

Probability columns are read as on upload: validated, and each row rescaled to
sum exactly to 1 (rows off by more than 1e-3 are refused unless the training
dataset was renormalized), so applying a model to the file it was fitted on
reproduces the corrected download exactly. Applying a model needs no labels:
the probability (and feature) columns are read by name, validated, corrected,
and written back as ``calibrated_proba_<class>`` columns beside every original
column. A Venn-Abers recalibrator adds each class's interval, ``p0_<class>`` and
``p1_<class>``, after them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from app.services.datasets import NotFound
from app.services.encoding import FeatureEncoder, check_columns
from app.services.model_document import validate_document
from app.services.tables import read_table
from app.store import Record, Store, new_id, now
from calibcore.data import (
    SUM_TOLERANCE,
    PredictionSet,
    column_class_parts,
    describe_rows,
    first_rows,
    infer_roles,
)
from calibcore.exceptions import CalibrationInputError
from calibcore.recalibration import IntervalRecalibrator, Recalibrator

_KIND = "model"
#: ``progress(fraction, message)`` of a long prediction.
ProgressCallback = Callable[[float, str], None]


@dataclass(frozen=True)
class ModelInputs:
    """The columns a fitted recalibrator reads and the classes it predicts."""

    probability_columns: tuple[str, ...]
    classes: tuple[str, ...]
    logits: bool = False
    renormalize: bool = False
    label_column: str | None = None
    features: FeatureEncoder | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"probability_columns": list(self.probability_columns),
                "classes": list(self.classes), "logits": self.logits,
                "renormalize": self.renormalize, "label_column": self.label_column,
                "features": None if self.features is None else self.features.to_dict()}

    @classmethod
    def from_dict(cls, document: Any) -> ModelInputs:
        if not isinstance(document, dict):
            raise CalibrationInputError('"inputs" of the model document must be an object.',
                                        code="invalid_model")
        features = document.get("features")
        return cls(_names(document, "probability_columns"), _names(document, "classes"),
                   bool(document.get("logits", False)),
                   bool(document.get("renormalize", False)), document.get("label_column"),
                   None if features is None else FeatureEncoder.from_dict(features))


def _names(inputs: dict[str, Any], key: str) -> tuple[str, ...]:
    value = inputs.get(key)
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        raise CalibrationInputError(
            f'"inputs.{key}" of the model document must be a non-empty list of names.',
            code="invalid_model")
    return tuple(value)


@dataclass(frozen=True)
class LoadedModel:
    """A validated model document: the fitted recalibrator and what it reads."""

    recalibrator: Recalibrator
    inputs: ModelInputs | None


def model_document(recalibrator: Recalibrator, prediction_set: PredictionSet,
                   encoder: FeatureEncoder | None, *, renormalize: bool = False) -> dict[str, Any]:
    """The portable document of a recalibrator fitted on ``prediction_set``'s columns."""
    roles = prediction_set.roles
    inputs = ModelInputs(roles.probabilities, prediction_set.classes, roles.logits, renormalize,
                         roles.label, encoder)
    return {**recalibrator.to_json(), "inputs": inputs.to_dict()}


def parse_document(raw: bytes) -> Any:
    """A model document's JSON; unreadable, or nested past Python's recursion limit, is a
    422-style input error (its structure is :func:`load_model`'s to check)."""
    try:
        return json.loads(raw)
    except (ValueError, RecursionError) as exc:
        reason = "it nests too deeply" if isinstance(exc, RecursionError) else str(exc)[:200]
        raise CalibrationInputError(f"the model document is not readable JSON: {reason}.",
                                    code="invalid_model") from None


def load_model(document: Any, *, max_values: int | None = None) -> LoadedModel:
    """Validate a model document; anything wrong with it is a 422-style input error.

    The document is checked against :class:`app.services.model_document.ModelDocument`
    before anything is decoded. ``max_values`` caps the numbers it may hold
    (``Settings.max_model_values`` for uploads; None for documents calibdash wrote).
    """
    validate_document(document, max_values=max_values)
    try:
        recalibrator = Recalibrator.from_json(document)
    except CalibrationInputError as exc:
        raise CalibrationInputError(exc.message, code="invalid_model") from exc
    except (AttributeError, IndexError, RecursionError) as exc:
        raise CalibrationInputError(f"malformed recalibrator document: {exc}",
                                    code="invalid_model") from exc
    inputs = None if document.get("inputs") is None else ModelInputs.from_dict(
        document["inputs"])
    n_classes = getattr(recalibrator, "n_classes_", None)
    if not isinstance(n_classes, int) or n_classes < 2:
        raise CalibrationInputError("the model document's state lacks a class count "
                                    "(n_classes_ >= 2).", code="invalid_model")
    if inputs is None and recalibrator.needs_features:
        raise CalibrationInputError(
            f"{type(recalibrator).__name__} reads feature columns, but the document has no "
            '"inputs" entry naming them; export the model from calibdash.', code="invalid_model")
    if inputs is not None:
        _check_inputs(inputs, n_classes, recalibrator)
    if not recalibrator.needs_features:
        _predict(recalibrator, np.full((1, n_classes), 1.0 / n_classes), None)
    return LoadedModel(recalibrator, inputs)


def _check_inputs(inputs: ModelInputs, n_classes: int, recalibrator: Recalibrator) -> None:
    n_columns = len(inputs.probability_columns)
    if len(inputs.classes) != n_classes or n_columns not in (1, n_classes) or (
            n_columns == 1 and n_classes != 2):
        raise CalibrationInputError(
            f"the model predicts {n_classes} classes but its inputs list "
            f"{len(inputs.classes)} classes and {n_columns} probability columns.",
            code="invalid_model")
    if recalibrator.needs_features and inputs.features is None:
        raise CalibrationInputError(
            f'{type(recalibrator).__name__} reads feature columns: "inputs.features" must '
            "name them.", code="invalid_model")


def corrected_columns(recalibrator: Recalibrator, proba: NDArray[np.float64], features: Any,
                      progress: ProgressCallback | None = None) -> NDArray[np.float64]:
    """The corrected probabilities (n, K), followed, for a recalibrator that bounds them
    (Venn-Abers), by each class's lower ends and then upper ends: (n, 3K).

    The one layout of a corrected table's numbers, named by :func:`correction_names`;
    only the first K columns are probabilities.
    """
    corrected = recalibrator.predict_proba(proba, features=features, progress=progress)
    if not isinstance(recalibrator, IntervalRecalibrator):
        return corrected
    lower, upper = recalibrator.predict_interval(proba, features=features)
    return np.column_stack([corrected, lower, upper])


def correction_names(classes: tuple[str, ...] | list[str], recalibrator: Recalibrator
                     ) -> list[str]:
    """``calibrated_proba_<class>`` per class and, for a recalibrator that bounds its
    probabilities, ``p0_<class>`` (lower end) and ``p1_<class>`` (upper end) per class."""
    names = corrected_column_names(classes, [])
    if isinstance(recalibrator, IntervalRecalibrator):
        names += [f"p0_{name}" for name in classes] + [f"p1_{name}" for name in classes]
    return names


def _predict(recalibrator: Recalibrator, proba: NDArray[np.float64], features: Any,
             progress: ProgressCallback | None = None) -> NDArray[np.float64]:
    """:func:`corrected_columns`, with a broken imported state reported as an input error."""
    try:
        return corrected_columns(recalibrator, proba, features, progress)
    except CalibrationInputError:
        raise
    except (ValueError, TypeError, IndexError, KeyError, AttributeError) as exc:
        raise CalibrationInputError(
            f"the recalibrator in this document cannot be applied ({type(exc).__name__}: "
            f"{exc}); its state is inconsistent.", code="invalid_model") from exc


def apply_model(model: LoadedModel, frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with one ``calibrated_proba_<class>`` column per class appended."""
    return beside_original(frame, model_corrections(model, frame))


def model_corrections(model: LoadedModel, frame: pd.DataFrame, *,
                      progress: ProgressCallback | None = None) -> pd.DataFrame:
    """The corrected probabilities of ``frame``'s rows, one ``calibrated_proba_<class>``
    column per class (not yet renamed around ``frame``'s columns), and for Venn-Abers
    each class's interval, ``p0_<class>`` and ``p1_<class>``.

    This is the one path from a model document to corrected scores: files applied
    through the API or the CLI and a recalibration's default download all come from it,
    so they agree to the bit.
    """
    inputs = model.inputs or _inferred_inputs(frame, model.recalibrator)
    feature_columns = inputs.features.columns if inputs.features is not None else ()
    check_columns(frame, [*inputs.probability_columns, *feature_columns], "probability/feature")
    proba = read_probabilities(frame, inputs)
    features = inputs.features.transform(frame) if inputs.features is not None else None
    corrected = _predict(model.recalibrator, proba, features, progress)
    return pd.DataFrame(corrected, columns=correction_names(inputs.classes, model.recalibrator))


def apply_model_to_file(model: LoadedModel, path: Path, filename: str) -> pd.DataFrame:
    """Read a CSV/Parquet file and apply ``model`` to it."""
    return apply_model(model, read_table(path, filename))


def beside_original(frame: pd.DataFrame, corrected: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with the corrected columns appended, each suffixed ``_new`` where
    ``frame`` already has a column of that name."""
    existing = {str(c) for c in frame.columns}
    return pd.concat([frame.reset_index(drop=True), corrected.rename(columns={
        c: f"{c}_new" for c in corrected.columns if c in existing})], axis=1)


def corrected_column_names(classes: tuple[str, ...] | list[str], existing: list[str]) -> list[str]:
    """``calibrated_proba_<class>``, suffixed ``_new`` where a column has that name."""
    names = [f"calibrated_proba_{name}" for name in classes]
    return [name if name not in existing else f"{name}_new" for name in names]


def _inferred_inputs(frame: pd.DataFrame, recalibrator: Recalibrator) -> ModelInputs:
    """Inputs of a bare calibcore document: the file's probability columns, by their names."""
    columns = sorted(infer_roles(frame).probabilities, key=_natural_key)
    n_classes = int(recalibrator.n_classes_)
    if len(columns) not in (1, n_classes) or (len(columns) == 1 and n_classes != 2):
        raise CalibrationInputError(
            f"this recalibrator predicts {n_classes} classes; the file's probability columns "
            f"could not be matched ({', '.join(columns) or 'none found'}). Export the model "
            "from calibdash, which records its columns.", code="missing_columns")
    parts = column_class_parts(columns)  # proba_<class> or <class>_proba
    classes = (parts[0] if parts and len(columns) == n_classes
               else tuple(str(k) for k in range(n_classes)))
    return ModelInputs(tuple(columns), classes)


def _natural_key(name: str) -> list[Any]:
    """proba_2 before proba_10: digit runs compare as numbers."""
    return [(0, int(part), "") if part.isdigit() else (1, 0, part)
            for part in re.split(r"(\d+)", name)]


def read_probabilities(frame: pd.DataFrame, inputs: ModelInputs) -> NDArray[np.float64]:
    """Class probabilities (n, K) from the named columns, validated as on upload."""
    raw = np.column_stack([_numeric_column(frame, column) for column in
                           inputs.probability_columns])
    if not inputs.logits:
        for k, column in enumerate(inputs.probability_columns):
            _reject(((raw[:, k] < 0) | (raw[:, k] > 1)), column,
                    "has probabilities outside [0, 1]", "probability_out_of_range",
                    " (logits? the recalibrator was fitted on probabilities)")
    if raw.shape[1] == 1:
        scores = 1 / (1 + np.exp(-raw[:, 0])) if inputs.logits else raw[:, 0]
        return np.column_stack([1.0 - scores, scores])
    if inputs.logits:
        shifted = np.exp(raw - raw.max(axis=1, keepdims=True))
        return shifted / shifted.sum(axis=1, keepdims=True)
    totals = raw.sum(axis=1)
    off = np.abs(totals - 1.0) > SUM_TOLERANCE
    if off.any() and not inputs.renormalize:
        _reject(off, inputs.probability_columns[0], "and the other probability columns do "
                f"not sum to 1 (within {SUM_TOLERANCE:g})", "probabilities_do_not_sum_to_one")
    return raw / totals[:, None]


def _numeric_column(frame: pd.DataFrame, column: str) -> NDArray[np.float64]:
    values = pd.to_numeric(frame[column], errors="coerce")
    _reject((values.isna() & frame[column].notna()).to_numpy(), column, "has non-numeric "
            "values", "non_numeric_probability")
    _reject(values.isna().to_numpy(), column, "has missing values", "missing_values")
    array = values.to_numpy(dtype=np.float64)
    _reject(~np.isfinite(array), column, "has infinite values", "non_finite_probability")
    return array


def _reject(mask: NDArray[np.bool_], column: str, problem: str, code: str,
            hint: str = "") -> None:
    if mask.any():
        raise CalibrationInputError(
            f"column {column!r} {problem} in {describe_rows(mask)}{hint}.", code=code,
            column=column, rows=first_rows(mask), count=int(mask.sum()))


# -- stored models -----------------------------------------------------------------
def import_model(store: Store, document: Any, name: str | None = None, *,
                 max_values: int) -> dict[str, Any]:
    """Validate and store an uploaded model document; returns its summary (with ``id``).

    ``max_values``: most numbers the document may hold (``Settings.max_model_values``).
    """
    model = load_model(document, max_values=max_values)
    model_id = new_id("md")
    recalibrator = model.recalibrator
    inputs = model.inputs
    display_name = recalibrator.display_name or recalibrator.method
    meta = {"method": recalibrator.method, "display_name": display_name,
            "n_classes": int(recalibrator.n_classes_),
            "inputs": None if inputs is None else {
                "probability_columns": list(inputs.probability_columns),
                "classes": list(inputs.classes),
                "feature_columns": [] if inputs.features is None else list(
                    inputs.features.columns)}}
    store.commit(Record(_KIND, model_id, None, name or display_name, now(), meta),
                 documents={model_id: document})
    return model_summary(store, model_id)


def _record(store: Store, model_id: str) -> Record:
    record = store.get(_KIND, model_id)
    if record is None:
        raise NotFound("model", model_id)
    return record


def model_summary(store: Store, model_id: str) -> dict[str, Any]:
    record = _record(store, model_id)
    return {"id": record.id, "name": record.name, "created": record.created, **record.meta}


def list_models(store: Store) -> list[dict[str, Any]]:
    return [model_summary(store, record.id) for record in store.find(_KIND)]


def read_model(store: Store, model_id: str) -> LoadedModel:
    _record(store, model_id)
    return load_model(store.read_document(model_id))


def delete_model(store: Store, model_id: str) -> None:
    _record(store, model_id)
    store.delete(_KIND, model_id)
