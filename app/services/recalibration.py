"""Fitting recalibrators on a dataset, honest held-out comparison, exports."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray
from sklearn.base import clone
from sklearn.model_selection import KFold, StratifiedKFold

from app.jobs import Progress
from app.services import comparison
from app.services.cache import cache_key, cached
from app.services.cost import CostEstimate, duration
from app.services.datasets import DatasetService, NotFound
from app.services.diagnostics import measure_values
from app.services.encoding import FeatureEncoder, choose_columns, fit_feature_encoder
from app.services.heterogeneity import HeterogeneityParams, forest_seconds
from app.services.jsonable import jsonable
from app.services.methods import MethodSpec, describe_params, make_recalibrator
from app.services.row_columns import load_row_columns
from app.services.saved_models import (
    apply_model,
    corrected_column_names,
    load_model,
    model_document,
)
from app.services.support import FOREST_ROW_SECONDS, SWC_MAX_ROWS
from app.store import Record, Store, new_id, now
from calibcore.data import PredictionSet, build_prediction_set, infer_roles
from calibcore.exceptions import CalibrationInputError
from calibcore.recalibration import REGISTRY, Recalibrator
from calibcore.reliability import binned_reliability

#: Folds used for cross-fitting when a dataset has no split column.
CROSS_FIT_FOLDS = 5
#: Bootstrap resamples of the comparison table's intervals.
COMPARISON_BOOTSTRAP = 100

#: ``report(fraction of this method done, message)``.
Report = Callable[[float, str], None]


def _silent(fraction: float, message: str) -> None:
    """A report that goes nowhere (synchronous fits without a job)."""


@dataclass(frozen=True)
class FittedModel:
    """A fitted recalibrator and the encoder of the features it reads (if any)."""

    recalibrator: Recalibrator
    encoder: FeatureEncoder | None


@dataclass(frozen=True)
class HeldOut:
    """Out-of-sample corrected probabilities and which rows they are honest for.

    ``model`` is the model fitted on the calibration rows of a split (the one users
    export); under cross-fitting it is None and the exported model is refitted on
    every row.
    """

    corrected: NDArray[np.float64]
    heldout: NDArray[np.bool_]
    scheme: str
    model: FittedModel | None = None


def heldout_rows(prediction_set: PredictionSet) -> NDArray[np.bool_]:
    """Rows the comparison is honest for: the test rows, or all rows under cross-fitting."""
    if prediction_set.split is not None:
        return prediction_set.mask("test")
    return np.ones(prediction_set.n_rows, dtype=bool)


def _within(report: Report, start: float, stop: float, label: str) -> Report:
    """``report`` for a step spanning ``start``..``stop`` of a method's progress, saying
    what the step is doing (the recalibrator's own message in brackets, if any)."""
    def step(fraction: float, message: str) -> None:
        report(start + (stop - start) * fraction, f"{label} ({message})" if message else label)

    return step


def _fit_rows(estimator: Recalibrator, prediction_set: PredictionSet, columns: tuple[str, ...],
              rows: NDArray[Any], report: Report = _silent) -> FittedModel:
    encoder = None
    features = None
    if estimator.needs_features:
        table = prediction_set.features.iloc[rows]
        encoder = fit_feature_encoder(estimator, table, columns)
        features = encoder.transform(table)
    model = clone(estimator).fit(prediction_set.proba[rows], prediction_set.y_true[rows],
                                 features=features, progress=report)
    return FittedModel(model, encoder)


def _predict_rows(fitted: FittedModel, prediction_set: PredictionSet,
                  rows: NDArray[Any], report: Report = _silent) -> NDArray[np.float64]:
    features = (None if fitted.encoder is None
                else fitted.encoder.transform(prediction_set.features.iloc[rows]))
    return fitted.recalibrator.predict_proba(prediction_set.proba[rows], features=features,
                                             progress=report)


def fit_heldout(estimator: Recalibrator, prediction_set: PredictionSet,
                columns: tuple[str, ...] = (), *, random_state: int = 0,
                report: Report = _silent) -> HeldOut:
    """Corrected probabilities for every row, honest on the held-out ones.

    With a split: fitted on the calibration rows, applied to every row (test rows are
    held out). Without: K-fold cross-fitting, every row corrected by a model fitted
    without it.
    """
    labels, proba = prediction_set.y_true, prediction_set.proba
    if prediction_set.split is not None:
        calibration, test = prediction_set.mask("calibration"), prediction_set.mask("test")
        label = "fitting on the calibration rows"
        report(0.05, label)
        fitted = _fit_rows(estimator, prediction_set, columns, calibration,
                           _within(report, 0.05, 0.45, label))
        corrected = np.empty_like(proba)
        label = "correcting the test rows"
        report(0.45, label)
        corrected[test] = _predict_rows(fitted, prediction_set, test,
                                        _within(report, 0.45, 0.75, label))
        label = "correcting the calibration rows (for the download)"
        report(0.75, label)
        corrected[calibration] = _predict_rows(fitted, prediction_set, calibration,
                                               _within(report, 0.75, 0.85, label))
        return HeldOut(corrected, test, "fitted on the calibration rows, scored on the test "
                       "rows", fitted)
    corrected = np.empty_like(proba)
    folds = _folds(labels, random_state)
    for number, (fit_rows, score_rows) in enumerate(folds, start=1):
        label = f"cross-fitting fold {number}/{len(folds)}"
        start, stop = 0.75 * (number - 1) / len(folds), 0.75 * number / len(folds)
        report(start, label)
        middle = (start + stop) / 2
        fitted = _fit_rows(estimator, prediction_set, columns, fit_rows,
                           _within(report, start, middle, label))
        corrected[score_rows] = _predict_rows(fitted, prediction_set, score_rows,
                                              _within(report, middle, stop, label))
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


def fit_final(estimator: Recalibrator, prediction_set: PredictionSet, columns: tuple[str, ...],
              heldout: HeldOut | None = None, report: Report = _silent) -> FittedModel:
    """The model users export: fitted on the calibration rows, or on every row without a split."""
    if heldout is not None and heldout.model is not None:
        return heldout.model
    rows = (prediction_set.mask("calibration") if prediction_set.split is not None
            else np.ones(prediction_set.n_rows, dtype=bool))
    return _fit_rows(estimator, prediction_set, columns, rows, report)


def _method_progress(specs: list[MethodSpec]) -> list[dict[str, Any]]:
    return [{"method": spec.method, "name": REGISTRY[spec.method].display_name or spec.method,
             "status": "queued", "fraction": 0.0, "message": "waiting"} for spec in specs]


class RecalibrationService:
    """Fit, compare, store and export recalibrations."""

    def __init__(self, store: Store, datasets: DatasetService, random_state: int = 0) -> None:
        self._store = store
        self._datasets = datasets
        self._random_state = random_state

    def check(self, dataset_id: str, specs: list[MethodSpec]) -> None:
        """Refuse unknown methods, bad parameters or features before any fitting starts."""
        if not specs:
            raise CalibrationInputError("give 'method' (e.g. \"platt\") or 'methods' (a list) "
                                        "to fit.", code="invalid_request")
        prediction_set = self._datasets.prediction_set(dataset_id)
        for spec in specs:
            estimator = make_recalibrator(spec.method, spec.params)
            if estimator.needs_features:
                choose_columns(estimator, prediction_set.feature_kinds, spec.features)

    def fit(self, dataset_id: str, spec: MethodSpec, *, n_bins: int = 15,
            report: Report = _silent) -> dict[str, Any]:
        """Fit one method honestly, store its corrected probabilities and its model."""
        started = time.perf_counter()
        prediction_set = self._datasets.prediction_set(dataset_id)
        estimator = make_recalibrator(spec.method, spec.params)
        columns = (choose_columns(estimator, prediction_set.feature_kinds, spec.features)
                   if estimator.needs_features else ())
        try:
            heldout = fit_heldout(estimator, prediction_set, columns,
                                  random_state=self._random_state, report=report)
        except CalibrationInputError:
            raise
        except (ValueError, TypeError) as exc:
            # Parameters the estimator stores unchecked (a string for a number, ...) fail
            # inside fit; that is still bad input, not a server error.
            raise CalibrationInputError(
                f"{spec.method} could not be fitted with parameters "
                f"{describe_params(estimator)}: {exc}", code="invalid_parameters") from exc
        label = "fitting the model to export" if heldout.model is None else "storing"
        report(0.85, label)
        final = fit_final(estimator, prediction_set, columns, heldout,
                          _within(report, 0.85, 0.95, label))
        renormalized = bool(self._datasets.record(dataset_id).meta.get("renormalized", False))
        recalibration_id = new_id("rc")
        names = corrected_column_names(prediction_set.classes, [])
        self._store.write_table(recalibration_id, pd.DataFrame(heldout.corrected, columns=names))
        self._store.write_document(recalibration_id, model_document(
            final.recalibrator, prediction_set, final.encoder, renormalize=renormalized))
        report(0.95, "scoring the held-out rows")
        meta = {"dataset_id": dataset_id, "method": spec.method,
                "params": describe_params(estimator), "features": list(columns),
                "feature_notes": _fit_notes(final),
                "scheme": heldout.scheme, "n_heldout": int(heldout.heldout.sum()),
                **_before_after(prediction_set, heldout, n_bins),
                "seconds": round(time.perf_counter() - started, 3)}
        self._store.put(Record("recalibration", recalibration_id, dataset_id,
                               estimator.display_name or spec.method, now(), meta))
        report(1.0, "done")
        return self.summary(recalibration_id)

    def estimate(self, dataset_id: str, specs: list[MethodSpec]) -> CostEstimate:
        """Rough seconds of fitting ``specs`` before starting: the forests of SWC and
        SWC-HH dominate (the other methods take seconds); SWC-HH's HH filter is the part
        that takes minutes on large files, so plain SWC is the cheaper setting offered."""
        prediction_set = self._datasets.prediction_set(dataset_id)
        split = prediction_set.split is not None
        n_calibration = (int(prediction_set.mask("calibration").sum()) if split
                         else prediction_set.n_rows)
        # a split fits once; cross-fitting fits every fold and then all rows
        fits = ([n_calibration] if split else
                [n_calibration * (CROSS_FIT_FOLDS - 1) // CROSS_FIT_FOLDS] * CROSS_FIT_FOLDS
                + [n_calibration])
        parts: dict[str, float] = {}
        for spec in specs:
            if spec.method not in ("swc", "swc_hh"):
                continue
            n_features = len(spec.features or prediction_set.features.columns)
            capped = np.minimum(np.asarray(fits, dtype=np.float64), float(SWC_MAX_ROWS))
            seconds = float(np.sum(FOREST_ROW_SECONDS * n_features * capped
                                   * np.log2(np.maximum(capped, 2.0))))
            if spec.method == "swc_hh":
                hh = HeterogeneityParams(sample=None, calibration_sample=None)
                seconds += len(fits) * forest_seconds(prediction_set, hh, n_features)[0]
            parts[spec.method] = seconds
        if not parts:
            return CostEstimate(5.0 * len(specs), f"{len(specs)} method(s) without forests")
        total = sum(parts.values()) + 5.0 * (len(specs) - len(parts))
        basis = "; ".join(f"{name}: {duration(seconds)}" for name, seconds in parts.items())
        cheaper = None
        if "swc_hh" in parts and parts["swc_hh"] > 2 * parts.get("swc", 0.0):
            cheaper = "SWC without the HH filter (its forests only)"
        fitting = ("each fitted once, on the calibration rows" if split else
                   f"each cross-fitted: {len(fits)} fits")
        return CostEstimate(total, f"{basis}; {fitting}", cheaper)

    def fit_many(self, dataset_id: str, specs: list[MethodSpec], *, n_bins: int = 15,
                 n_bootstrap: int = COMPARISON_BOOTSTRAP,
                 progress: Progress | None = None) -> dict[str, Any]:
        """Fit each method in turn (per-method progress in ``detail``), then compare them.

        A method that fails on this data is reported in ``failed`` and the others go on.
        """
        progress = progress or Progress()
        steps = _method_progress(specs)
        results: list[dict[str, Any]] = []
        failed: list[dict[str, Any]] = []
        for number, spec in enumerate(specs):
            def report(fraction: float, message: str, number: int = number) -> None:
                steps[number].update(status="running", fraction=round(fraction, 3),
                                     message=message)
                overall = 0.9 * (number + fraction) / len(specs)
                progress.update(overall, f"{steps[number]['name']}: {message}",
                                detail=[dict(step) for step in steps])

            try:
                results.append(self.fit(dataset_id, spec, n_bins=n_bins, report=report))
                steps[number].update(status="succeeded", fraction=1.0, message="done")
            except CalibrationInputError as exc:
                if len(specs) == 1:
                    raise
                steps[number].update(status="failed", message=exc.message)
                failed.append({"method": spec.method, "code": exc.code, "message": exc.message})
        if not results:
            raise CalibrationInputError("every method failed: " + "; ".join(
                f"{f['method']}: {f['message']}" for f in failed), code="all_methods_failed")
        detail = [dict(step) for step in steps]

        def comparing(fraction: float, message: str) -> None:
            progress.update(0.9 + 0.1 * fraction, f"comparing on held-out rows: {message}",
                            detail=detail)

        comparing(0.0, "starting")
        table = self.compare(dataset_id, [r["id"] for r in results], n_bins=n_bins,
                             n_bootstrap=n_bootstrap, progress=comparing)
        return {"recalibrations": results, "comparison": table, "failed": failed}

    def compare(self, dataset_id: str, recalibration_ids: list[str], *, n_bins: int = 15,
                n_bootstrap: int = COMPARISON_BOOTSTRAP,
                progress: comparison.ProgressCallback | None = None) -> dict[str, Any]:
        """The comparison table of stored recalibrations of one dataset (cached).

        ``progress(fraction, message)`` is called between steps of the computation (it may
        raise to stop).
        """
        records = [self.record(rid) for rid in recalibration_ids]
        others = [r.id for r in records if r.meta["dataset_id"] != dataset_id]
        if others:
            raise CalibrationInputError(
                f"recalibration(s) {', '.join(others)} belong to another dataset; a comparison "
                "is on one dataset's held-out rows.", code="invalid_request")
        # version 2: the table says the MLCE's gamma and representation
        key = cache_key(dataset_id, "recalibration_comparison", version=2, ids=recalibration_ids,
                        n_bins=n_bins, n_bootstrap=n_bootstrap, seed=self._random_state)
        return dict(cached(self._store, key, lambda: self._compare(
            dataset_id, records, n_bins, n_bootstrap, progress)))

    def _compare(self, dataset_id: str, records: list[Record], n_bins: int,
                 n_bootstrap: int, progress: comparison.ProgressCallback | None) -> dict[str, Any]:
        prediction_set = self._datasets.prediction_set(dataset_id)
        rows = heldout_rows(prediction_set)
        candidates = [comparison.Candidate("uncalibrated", prediction_set.proba[rows])]
        for record in records:
            corrected = self._store.read_table(record.id).to_numpy(dtype=np.float64)
            variable = (record.meta["features"][0] if record.meta["method"] == "variable_tree"
                        else None)
            candidates.append(comparison.Candidate(record.name, corrected[rows], record.id,
                                                   record.meta["method"], variable))
        table = comparison.compare(
            prediction_set.y_true[rows], candidates, prediction_set.features[rows].reset_index(
                drop=True), prediction_set.feature_kinds, n_bins=n_bins,
            n_bootstrap=n_bootstrap, random_state=self._random_state, progress=progress)
        scheme = records[0].meta["scheme"] if records else ""
        return {"dataset_id": dataset_id, "scheme": scheme, **table}

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
        """The portable model document (``Recalibrator.from_json`` reads it as it is)."""
        self.record(recalibration_id)
        return dict(self._store.read_document(recalibration_id))

    def corrected_frame(self, recalibration_id: str,
                        extra_columns: Sequence[str] = ()) -> pd.DataFrame:
        """The dataset's original columns, one corrected probability column per class, and
        any requested per-row diagnostic columns (``lce``, ``hh``, ``support``, ...)."""
        record = self.record(recalibration_id)
        dataset_id = record.meta["dataset_id"]
        original = self._datasets.frame(dataset_id).reset_index(drop=True)
        corrected = self._store.read_table(recalibration_id)
        parts = [original, corrected.rename(columns={
            c: f"{c}_new" for c in corrected.columns if c in original.columns})]
        if extra_columns:
            extra = load_row_columns(self._store, dataset_id, list(extra_columns))
            taken = set(original.columns) | set(parts[1].columns)
            parts.append(extra.rename(columns={c: f"{c}_diagnostic" for c in extra.columns
                                               if c in taken}))
        return pd.concat(parts, axis=1)

    def apply(self, recalibration_id: str, path: Path, filename: str) -> pd.DataFrame:
        """A new file with this recalibration's model applied (labels not needed)."""
        model = load_model(self.model(recalibration_id))
        return apply_model(model, self._datasets.read_file(path, filename).frame)

    def delete(self, recalibration_id: str) -> None:
        self.record(recalibration_id)
        self._store.delete("recalibration", recalibration_id)


def _fit_notes(fitted: FittedModel) -> list[str]:
    """How the features were encoded, and which calibration rows a method sampled."""
    notes = list(fitted.encoder.notes) if fitted.encoder is not None else []
    sampled = getattr(fitted.recalibrator, "sampling_note_", "")
    return [*notes, sampled] if sampled else notes


def _before_after(prediction_set: PredictionSet, heldout: HeldOut, n_bins: int) -> dict[str, Any]:
    rows = heldout.heldout
    labels = prediction_set.y_true[rows]
    before, after = prediction_set.proba[rows], heldout.corrected[rows]
    return jsonable({
        "before": measure_values(labels, before, n_bins=n_bins),
        "after": measure_values(labels, after, n_bins=n_bins),
        "reliability_before": binned_reliability(labels, before, n_bins=n_bins)[0],
        "reliability_after": binned_reliability(labels, after, n_bins=n_bins)[0],
    })


@dataclass(frozen=True)
class FileRecalibration:
    """A recalibrator fitted on a prediction table outside the store (the CLI).

    Attributes
    ----------
    frame : DataFrame
        The table with one corrected probability column per class appended.
    document : dict
        The portable model document.
    n_fitted : int
        Rows the model was fitted on (calibration rows, or all rows without a split).
    test_before, test_after : dict or None
        Measures on the test rows of a split (held out from the fit), else None.
    """

    frame: pd.DataFrame
    document: dict[str, Any]
    n_fitted: int
    test_before: dict[str, float] | None
    test_after: dict[str, float] | None


def recalibrate_table(frame: pd.DataFrame, spec: MethodSpec,
                      *, renormalize: bool = False) -> FileRecalibration:
    """Infer roles, fit ``spec`` on the calibration rows (or all rows) and correct every row."""
    prediction_set = build_prediction_set(frame, infer_roles(frame).to_roles(),
                                          renormalize=renormalize)
    estimator = make_recalibrator(spec.method, spec.params)
    columns = (choose_columns(estimator, prediction_set.feature_kinds, spec.features)
               if estimator.needs_features else ())
    final = fit_final(estimator, prediction_set, columns)
    every_row = np.ones(prediction_set.n_rows, dtype=bool)
    corrected = _predict_rows(final, prediction_set, every_row)
    names = corrected_column_names(prediction_set.classes, [str(c) for c in frame.columns])
    output = pd.concat([frame.reset_index(drop=True), pd.DataFrame(corrected, columns=names)],
                       axis=1)
    document = model_document(final.recalibrator, prediction_set, final.encoder,
                              renormalize=renormalize)
    if prediction_set.split is None:
        return FileRecalibration(output, document, prediction_set.n_rows, None, None)
    test = prediction_set.mask("test")
    labels = prediction_set.y_true[test]
    return FileRecalibration(output, document, int(prediction_set.mask("calibration").sum()),
                             measure_values(labels, prediction_set.proba[test]),
                             measure_values(labels, corrected[test]))
