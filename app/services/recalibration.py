"""Fitting recalibrators on a dataset, honest held-out comparison, exports."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray
from sklearn.base import clone
from sklearn.model_selection import KFold, StratifiedKFold

from app.jobs import Progress
from app.services.datasets import DatasetService, NotFound
from app.services.diagnostics import measure_values
from app.services.jsonable import jsonable
from app.services.tables import ExportFormat, export_bytes
from app.store import Record, Store, new_id, now
from calibcore.data import PredictionSet
from calibcore.exceptions import CalibrationInputError
from calibcore.recalibration import REGISTRY, Recalibrator
from calibcore.reliability import binned_reliability

#: Folds used for cross-fitting when a dataset has no split column.
CROSS_FIT_FOLDS = 5


@dataclass(frozen=True)
class HeldOut:
    """Out-of-sample corrected probabilities and which rows they are honest for."""

    corrected: NDArray[np.float64]
    heldout: NDArray[np.bool_]
    scheme: str


def make_recalibrator(method: str, params: dict[str, Any] | None = None) -> Recalibrator:
    """An unfitted recalibrator from its registry name and keyword parameters."""
    if method not in REGISTRY:
        raise CalibrationInputError(
            f"unknown method {method!r}; choose one of {', '.join(sorted(REGISTRY))}.",
            code="unknown_method")
    try:
        return REGISTRY[method](**(params or {}))
    except TypeError as exc:
        valid = sorted(REGISTRY[method]().get_params())
        raise CalibrationInputError(
            f"invalid parameters for {method}: {exc}. Valid parameters: "
            f"{', '.join(valid) or 'none'}.", code="invalid_parameters") from exc


def method_catalogue() -> list[dict[str, Any]]:
    """Registered methods with their display names and default parameters."""
    return [{"method": name, "name": cls.display_name or cls.__name__,
             "needs_features": cls.needs_features, "params": jsonable(cls().get_params())}
            for name, cls in sorted(REGISTRY.items())]


def _features_for(estimator: Recalibrator, prediction_set: PredictionSet,
                  rows: NDArray[np.bool_] | NDArray[np.intp]) -> NDArray[np.float64] | None:
    if not estimator.needs_features:
        return None
    numeric = [name for name, kind in prediction_set.feature_kinds.items() if kind == "numeric"]
    if not numeric:
        raise CalibrationInputError(
            f"{type(estimator).__name__} needs numeric feature columns; this dataset has none.",
            code="no_features")
    values = prediction_set.features[numeric].to_numpy(dtype=np.float64)[rows]
    return np.where(np.isnan(values), np.nanmean(values, axis=0), values)


def fit_heldout(estimator: Recalibrator, prediction_set: PredictionSet, *,
                random_state: int = 0, progress: Progress | None = None) -> HeldOut:
    """Corrected probabilities for held-out rows: test rows of a split, or cross-fitting."""
    labels, proba = prediction_set.y_true, prediction_set.proba
    if prediction_set.split is not None:
        cal = prediction_set.mask("calibration")
        model = clone(estimator).fit(proba[cal], labels[cal],
                                     features=_features_for(estimator, prediction_set, cal))
        everything = np.ones(labels.size, dtype=bool)
        corrected = model.predict_proba(proba, features=_features_for(
            estimator, prediction_set, everything))
        return HeldOut(corrected, prediction_set.mask("test"),
                       "fitted on the calibration rows, scored on the test rows")
    corrected = np.empty_like(proba)
    folds = _folds(labels, random_state)
    for number, (fit_rows, score_rows) in enumerate(folds, start=1):
        model = clone(estimator).fit(proba[fit_rows], labels[fit_rows],
                                     features=_features_for(estimator, prediction_set, fit_rows))
        corrected[score_rows] = model.predict_proba(
            proba[score_rows], features=_features_for(estimator, prediction_set, score_rows))
        if progress is not None:
            progress.update(0.8 * number / len(folds), f"cross-fitting fold {number}/{len(folds)}")
    return HeldOut(corrected, np.ones(labels.size, dtype=bool),
                   f"{len(folds)}-fold cross-fitting: every row scored by a model fitted "
                   "without it")


def _folds(labels: NDArray[np.intp], random_state: int) -> list[tuple[NDArray[np.intp], ...]]:
    """Stratified folds when every class has enough rows, plain shuffled folds otherwise."""
    if labels.size < 2 * CROSS_FIT_FOLDS:
        raise CalibrationInputError(
            f"cross-fitting needs at least {2 * CROSS_FIT_FOLDS} rows; this dataset has "
            f"{labels.size}.", code="too_few_rows")
    counts = np.bincount(labels)
    stratify = counts[counts > 0].min() >= CROSS_FIT_FOLDS
    splitter_class = StratifiedKFold if stratify else KFold
    splitter = splitter_class(n_splits=CROSS_FIT_FOLDS, shuffle=True, random_state=random_state)
    return list(splitter.split(np.zeros(labels.size), labels))


class RecalibrationService:
    """Fit, compare, store and export recalibrations."""

    def __init__(self, store: Store, datasets: DatasetService, random_state: int = 0) -> None:
        self._store = store
        self._datasets = datasets
        self._random_state = random_state

    def fit(self, dataset_id: str, method: str, params: dict[str, Any] | None = None,
            *, n_bins: int = 15, progress: Progress | None = None) -> dict[str, Any]:
        """Fit ``method`` honestly, store corrected probabilities and the model."""
        prediction_set = self._datasets.prediction_set(dataset_id)
        estimator = make_recalibrator(method, params)
        if progress is not None:
            progress.update(0.05, f"fitting {estimator.display_name or method}")
        heldout = fit_heldout(estimator, prediction_set, random_state=self._random_state,
                              progress=progress)
        final = self._final_model(estimator, prediction_set)
        if progress is not None:
            progress.update(0.9, "scoring held-out rows")
        comparison = _comparison(prediction_set, heldout, n_bins)
        recalibration_id = new_id("rc")
        self._store.write_table(recalibration_id, pd.DataFrame(
            heldout.corrected, columns=_corrected_columns(prediction_set)))
        self._store.write_document(recalibration_id, final.to_json())
        meta = {"dataset_id": dataset_id, "method": method,
                "params": jsonable(estimator.get_params()), "scheme": heldout.scheme,
                "n_heldout": int(heldout.heldout.sum()), **comparison}
        self._store.put(Record("recalibration", recalibration_id, dataset_id,
                               estimator.display_name or method, now(), meta))
        return self.summary(recalibration_id)

    def _final_model(self, estimator: Recalibrator, prediction_set: PredictionSet) -> Recalibrator:
        """The model users export: fitted on calibration rows (or all rows when cross-fitting)."""
        rows = (prediction_set.mask("calibration") if prediction_set.split is not None
                else np.ones(prediction_set.n_rows, dtype=bool))
        return clone(estimator).fit(prediction_set.proba[rows], prediction_set.y_true[rows],
                                    features=_features_for(estimator, prediction_set, rows))

    def record(self, recalibration_id: str) -> Record:
        record = self._store.get("recalibration", recalibration_id)
        if record is None:
            raise NotFound("recalibration", recalibration_id)
        return record

    def summary(self, recalibration_id: str) -> dict[str, Any]:
        record = self.record(recalibration_id)
        return {"id": record.id, "name": record.name, "created": record.created, **record.meta}

    def list(self, dataset_id: str) -> list[dict[str, Any]]:
        self._datasets.record(dataset_id)
        return [{"id": r.id, "name": r.name, "created": r.created, **r.meta}
                for r in self._store.find("recalibration", parent=dataset_id)]

    def model(self, recalibration_id: str) -> dict[str, Any]:
        self.record(recalibration_id)
        return dict(self._store.read_document(recalibration_id))

    def corrected_frame(self, recalibration_id: str) -> pd.DataFrame:
        """The dataset's original columns plus one corrected probability column per class."""
        record = self.record(recalibration_id)
        original = self._datasets.frame(record.meta["dataset_id"])
        corrected = self._store.read_table(recalibration_id)
        return pd.concat([original.reset_index(drop=True), corrected], axis=1)

    def download(self, recalibration_id: str, export_format: ExportFormat) -> bytes:
        return export_bytes(self.corrected_frame(recalibration_id), export_format)

    def delete(self, recalibration_id: str) -> None:
        self.record(recalibration_id)
        self._store.delete("recalibration", recalibration_id)


def _corrected_columns(prediction_set: PredictionSet) -> list[str]:
    existing = set(prediction_set.features.columns) | set(prediction_set.roles.columns())
    names = [f"calibrated_proba_{name}" for name in prediction_set.classes]
    return [name if name not in existing else f"{name}_new" for name in names]


def _comparison(prediction_set: PredictionSet, heldout: HeldOut, n_bins: int) -> dict[str, Any]:
    rows = heldout.heldout
    labels = prediction_set.y_true[rows]
    before, after = prediction_set.proba[rows], heldout.corrected[rows]
    return jsonable({
        "before": measure_values(labels, before, n_bins=n_bins),
        "after": measure_values(labels, after, n_bins=n_bins),
        "reliability_before": binned_reliability(labels, before, n_bins=n_bins)[0],
        "reliability_after": binned_reliability(labels, after, n_bins=n_bins)[0],
    })
