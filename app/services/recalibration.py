"""Recalibrations of a dataset: fitted (:mod:`app.services.recalibration_fitting`), stored,
compared honestly on held-out rows, exported and applied to files."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from app.jobs import Progress
from app.services import comparison
from app.services.cache import cache_key, cached
from app.services.cost import CostEstimate, cost_model, duration
from app.services.datasets import DatasetService, NotFound
from app.services.diagnostics import measure_values
from app.services.encoding import choose_columns
from app.services.jsonable import jsonable
from app.services.methods import MethodSpec, describe_params, make_recalibrator
from app.services.recalibration_cost import (
    COMPARISON_BOOTSTRAP,
    neighbourhood_method,
    recalibration_seconds,
    recalibration_terms,
)
from app.services.recalibration_fitting import (
    FittedModel,
    Report,
    fit_final,
    fit_recalibration,
    heldout_rows,
    silent,
    within,
)
from app.services.row_columns import load_row_columns
from app.services.saved_models import (
    apply_model,
    beside_original,
    load_model,
    model_corrections,
    model_document,
)
from app.services.tables import file_stem
from app.services.weighting import weighting
from app.store import Record, Store, new_id, now
from calibcore.data import PredictionSet, build_prediction_set, infer_roles
from calibcore.exceptions import CalibrationInputError
from calibcore.metrics import binned_reliability
from calibcore.recalibration import REGISTRY, Recalibrator

#: Bumped when the cached comparison's content changes (2: max VECE over all variables;
#: 3: the MLCE header says its gamma and representation; 4: binary positive-class diagrams;
#: 5: the recommendation weighs Brier and the calibration errors beside NLL; 7: MLCE weighted).
_COMPARISON_VERSION = 7

#: Which corrected scores a download holds: the exported model's, or the cross-fitted ones.
Scores = Literal["model", "cross_fitted"]


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
            report: Report = silent) -> dict[str, Any]:
        """Fit one method honestly, store its corrected probabilities and its model."""
        started = time.perf_counter()
        prediction_set = self._datasets.prediction_set(dataset_id)
        estimator = make_recalibrator(spec.method, spec.params)
        columns = (choose_columns(estimator, prediction_set.feature_kinds, spec.features)
                   if estimator.needs_features else ())
        try:
            fitted = fit_recalibration(estimator, prediction_set, columns,
                                       random_state=self._random_state,
                                       report=lambda fraction, message: report(0.75 * fraction,
                                                                               message))
        except CalibrationInputError:
            raise
        except (ValueError, TypeError) as exc:
            # Parameters the estimator stores unchecked (a string for a number, ...) fail
            # inside fit; that is still bad input, not a server error.
            raise CalibrationInputError(
                f"{spec.method} could not be fitted with parameters "
                f"{describe_params(estimator)}: {exc}", code="invalid_parameters") from exc
        renormalized = bool(self._datasets.record(dataset_id).meta.get("renormalized", False))
        document = model_document(fitted.model.recalibrator, prediction_set,
                                  fitted.model.encoder, renormalize=renormalized)
        label = "correcting every row with the exported model"
        report(0.75, label)
        by_model = self._apply_document(dataset_id, document, within(report, 0.75, 0.9, label))
        report(0.9, "storing")
        recalibration_id = new_id("rc")
        # The table the comparison scores: the exported model's scores with a split (its
        # test rows are held out), the cross-fitted ones without.
        heldout = (by_model if fitted.cross_fitted is None
                   else pd.DataFrame(fitted.cross_fitted, columns=by_model.columns))
        report(0.95, "scoring the held-out rows")
        rows = heldout_rows(prediction_set)
        scores = heldout.to_numpy(dtype=np.float64)
        meta = {"dataset_id": dataset_id, "method": spec.method,
                "params": describe_params(estimator), "features": list(columns),
                "feature_notes": _fit_notes(fitted.model),
                "scheme": fitted.scheme, "cross_fitted": fitted.cross_fitted is not None,
                "n_heldout": int(rows.sum()),
                **_method_weighting(estimator, prediction_set, rows),
                **_before_after(prediction_set, rows, scores[:, :prediction_set.n_classes],
                                n_bins),
                **_interval_width(scores[rows], prediction_set.n_classes),
                "seconds": round(time.perf_counter() - started, 3)}
        tables = {recalibration_id: heldout}
        if fitted.cross_fitted is not None:
            tables[_model_scores_key(recalibration_id)] = by_model
        self._store.commit(Record("recalibration", recalibration_id, dataset_id,
                                  estimator.display_name or spec.method, now(), meta),
                           tables=tables, documents={recalibration_id: document})
        report(1.0, "done")
        return self.summary(recalibration_id)

    def _apply_document(self, dataset_id: str, document: dict[str, Any],
                        report: Report = silent) -> pd.DataFrame:
        """The exported model's corrected probabilities of every row of the dataset, read
        from its stored table exactly as an applied file is read."""
        return model_corrections(load_model(document), self._datasets.frame(dataset_id),
                                 progress=report)

    def estimate(self, dataset_id: str, specs: list[MethodSpec], *,
                 n_bootstrap: int = COMPARISON_BOOTSTRAP) -> CostEstimate:
        """Seconds of fitting and comparing ``specs``, before starting
        (:func:`recalibration_terms` times the fitted model). The forests of SWC and
        SWC-HH, the neighbour searches of LECE and LECD and LoRe's kernel sums dominate,
        and each is shown apart; SWC-HH's HH filter is the part that takes minutes on
        large files, so plain SWC is the cheaper setting offered."""
        prediction_set = self._datasets.prediction_set(dataset_id)
        model = cost_model("recalibration")
        terms, fits = recalibration_terms(prediction_set, specs, n_bootstrap)
        parts: dict[str, float] = {}
        for spec in specs:
            if spec.method in ("swc", "swc_hh", "lore") or neighbourhood_method(spec):
                alone = recalibration_terms(prediction_set, [spec], n_bootstrap)[0]
                parts[spec.method] = recalibration_seconds(alone)
        estimate = replace(model.estimate(terms, ""), seconds=recalibration_seconds(terms))
        basis = "; ".join(f"{name}: {duration(seconds, estimate.spread)}"
                          for name, seconds in parts.items())
        split = prediction_set.split is not None
        fitting = ("each fitted once, on the calibration rows" if split else
                   f"each cross-fitted: {fits} fits")
        basis = f"{basis}; {fitting}" if basis else f"{len(specs)} method(s), {fitting}"
        cheaper = None
        if "swc_hh" in parts and parts["swc_hh"] > 2 * parts.get("swc", 0.0):
            cheaper = "SWC without the HH filter (its forests only)"
        return replace(estimate, basis=basis, cheaper=cheaper)

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
        key = cache_key(dataset_id, "recalibration_comparison", ids=recalibration_ids,
                        n_bins=n_bins, n_bootstrap=n_bootstrap, seed=self._random_state,
                        version=_COMPARISON_VERSION)
        return dict(cached(self._store, key, lambda: self._compare(
            dataset_id, records, n_bins, n_bootstrap, progress)))

    def _compare(self, dataset_id: str, records: list[Record], n_bins: int,
                 n_bootstrap: int, progress: comparison.ProgressCallback | None) -> dict[str, Any]:
        prediction_set = self._datasets.prediction_set(dataset_id)
        rows = heldout_rows(prediction_set)
        candidates = [comparison.Candidate("uncalibrated", prediction_set.proba[rows])]
        for record in records:
            corrected = self.corrected_probabilities(record.id, prediction_set.n_classes)
            variable = (record.meta["features"][0] if record.meta["method"] == "variable_tree"
                        else None)
            candidates.append(comparison.Candidate(record.name, corrected[rows], record.id,
                                                   record.meta["method"], variable))
        table = comparison.compare(
            prediction_set.y_true[rows], candidates, prediction_set.features[rows].reset_index(
                drop=True), n_bins=n_bins,
            n_bootstrap=n_bootstrap, random_state=self._random_state, progress=progress,
            sample_weight=prediction_set.weights_of(rows))
        scheme = records[0].meta["scheme"] if records else ""
        return {"dataset_id": dataset_id, "scheme": scheme,
                "positive_class": (prediction_set.classes[1]
                                   if prediction_set.n_classes == 2 else None), **table,
                **weighting(prediction_set, rows)}

    def corrected_probabilities(self, recalibration_id: str,
                                n_classes: int) -> NDArray[np.float64]:
        """The stored corrected probabilities of every row, shape (n_rows, n_classes): the
        scores the comparison judges (a Venn-Abers table keeps each class's interval after
        its probabilities)."""
        table = self._store.read_table(recalibration_id)
        return table.iloc[:, :n_classes].to_numpy(dtype=np.float64)

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

    def corrected_frame(self, recalibration_id: str, extra_columns: Sequence[str] = (), *,
                        scores: Scores = "model") -> pd.DataFrame:
        """The dataset's original columns, one corrected probability column per class, and
        any requested per-row diagnostic columns (``lce``, ``hh``, ``support``, ...).

        ``scores="model"``: the exported model applied to every row, the same numbers as
        applying the model document to the dataset's file. ``scores="cross_fitted"``
        (only without a split): each row corrected by the cross-fitting model fitted
        without it, the numbers the held-out comparison scored.
        """
        record = self.record(recalibration_id)
        dataset_id = record.meta["dataset_id"]
        corrected = _SCORE_TABLES[scores](self, record)
        parts = [beside_original(self._datasets.frame(dataset_id), corrected)]
        if extra_columns:
            extra = load_row_columns(self._store, dataset_id, list(extra_columns))
            taken = set(parts[0].columns)
            parts.append(extra.rename(columns={c: f"{c}_diagnostic" for c in extra.columns
                                               if c in taken}))
        return pd.concat(parts, axis=1) if len(parts) > 1 else parts[0]

    def _model_scores(self, record: Record) -> pd.DataFrame:
        if not _cross_fitted(record):
            return self._store.read_table(record.id)
        key = _model_scores_key(record.id)
        if not self._store.table_path(key).exists():
            # Stored before the model's scores were kept beside the cross-fitted ones.
            self._store.write_table(key, self._apply_document(
                record.meta["dataset_id"], self.model(record.id)))
        return self._store.read_table(key)

    def _cross_fitted_scores(self, record: Record) -> pd.DataFrame:
        if not _cross_fitted(record):
            raise CalibrationInputError(
                f"recalibration {record.id} was fitted on the calibration rows of the "
                "dataset's split, so it has no cross-fitted scores: the default download "
                "(scores=model) is the fitted model on every row, which is what the "
                "comparison scored on the test rows.", code="not_cross_fitted")
        return self._store.read_table(record.id)

    def file_stem(self, recalibration_id: str) -> str:
        """``<dataset name>-<method>``, safe as a file name: what downloads are called."""
        record = self.record(recalibration_id)
        dataset = self._datasets.record(record.meta["dataset_id"]).name
        return f"{file_stem(dataset, fallback='dataset')}-{record.meta['method']}"

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


def _model_scores_key(recalibration_id: str) -> str:
    """The table of the exported model's scores of a cross-fitted recalibration (a
    recalibration with a split keeps them as its one table)."""
    return f"{recalibration_id}.model_scores"


def _cross_fitted(record: Record) -> bool:
    """Whether a recalibration's comparison scored cross-fitted scores (no split)."""
    return bool(record.meta.get("cross_fitted", "cross-fitting" in record.meta["scheme"]))


#: Where each choice of ``scores`` of a download comes from.
_SCORE_TABLES: dict[str, Callable[[RecalibrationService, Record], pd.DataFrame]] = {
    "model": RecalibrationService._model_scores,
    "cross_fitted": RecalibrationService._cross_fitted_scores,
}


def _method_weighting(estimator: Recalibrator, prediction_set: PredictionSet,
                      rows: NDArray[np.bool_]) -> dict[str, Any]:
    """Whether the method was fitted with the dataset's weights, and the note that says so
    (or that it does not take weights yet; its before/after measures are weighted alike)."""
    if not prediction_set.weighted:
        return {"weighted": False}
    if estimator.supports_weights:
        return {**weighting(prediction_set, rows),
                "weights_note": "fitted and measured with the dataset's weights: "
                + str(weighting(prediction_set, rows)["weights_note"])}
    return {"weighted": False,
            "weights_note": f"{estimator.display_name or estimator.method} does not take "
            "weights yet: fitted on every row once (its before/after measures are weighted)"}


def _before_after(prediction_set: PredictionSet, rows: NDArray[np.bool_],
                  corrected: NDArray[np.float64], n_bins: int) -> dict[str, Any]:
    labels = prediction_set.y_true[rows]
    before, after = prediction_set.proba[rows], corrected[rows]
    weights = prediction_set.weights_of(rows)
    return jsonable({
        "before": measure_values(labels, before, n_bins=n_bins, sample_weight=weights),
        "after": measure_values(labels, after, n_bins=n_bins, sample_weight=weights),
        "reliability_before": binned_reliability(labels, before, n_bins=n_bins,
                                                 sample_weight=weights)[0],
        "reliability_after": binned_reliability(labels, after, n_bins=n_bins,
                                                sample_weight=weights)[0],
    })


def _interval_width(heldout: NDArray[np.float64], n_classes: int) -> dict[str, float]:
    """``interval_width``: the mean of p1 - p0 over the held-out rows and the classes (a
    binary row's two classes have the same width) when the scores carry intervals, the
    table :func:`app.services.saved_models.corrected_columns` lays out; else nothing."""
    if heldout.shape[1] != 3 * n_classes:
        return {}
    lower, upper = heldout[:, n_classes:2 * n_classes], heldout[:, 2 * n_classes:]
    return {"interval_width": float(np.mean(upper - lower))}


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
    document = model_document(final.recalibrator, prediction_set, final.encoder,
                              renormalize=renormalize)
    # The model document applied as `calibdash apply` applies it: the same numbers.
    corrected_table = model_corrections(load_model(document), frame)
    corrected = corrected_table.to_numpy(dtype=np.float64)[:, :prediction_set.n_classes]
    output = beside_original(frame, corrected_table)
    if prediction_set.split is None:
        return FileRecalibration(output, document, prediction_set.n_rows, None, None)
    test = prediction_set.mask("test")
    labels = prediction_set.y_true[test]
    weights = prediction_set.weights_of(test)
    return FileRecalibration(output, document, int(prediction_set.mask("calibration").sum()),
                             measure_values(labels, prediction_set.proba[test],
                                            sample_weight=weights),
                             measure_values(labels, corrected[test], sample_weight=weights))
