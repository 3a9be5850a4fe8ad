"""Calibration support of a stored dataset, optionally against a new batch.

S_t (Wagstaff & Dietterich 2023, eq. 6) comes from the SWC proximity forest on the calibration
rows (features encoded as for HH, see :mod:`app.services.heterogeneity`). The
calibration rows' own support is cross-fitted; test rows (and a batch: another
stored dataset with the same feature columns) get their support against all
calibration rows, and are compared with the calibration rows by a
two-sample Kolmogorov-Smirnov test on comparable (one-fold, scaled) scores.

Without a split column every row is a calibration row: its support is the
cross-fitted one and there is no test comparison.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from app.jobs import Job, Progress
from app.services.cost import CostEstimate, cost_model
from app.services.heterogeneity import (
    ForestFeatures,
    class_names,
    forest_features,
    params_key,
    resolve_columns,
    row_ids,
)
from app.services.jsonable import jsonable
from app.services.row_columns import save_row_column
from app.services.shared import ServiceContext
from app.services.weighting import weighting
from app.store import Store
from calibcore.data import PredictionSet
from calibcore.exceptions import CalibrationInputError
from calibcore.insights import CalibrationSupport, calibration_support, compare_support
from calibcore.metrics import proportion_interval

#: Calibration rows a proximity forest is grown on at most (SWC's default sample).
SWC_MAX_ROWS = 20_000


MAX_HISTOGRAM_BINS = 40
#: The exponent of the column count in the work of a proximity forest: it considers
#: sqrt(columns) of them at each split and its trees grow somewhat deeper with more
#: columns (measured: columns linearly made an 85-column file's estimate 9 min for a
#: 3-5 s job). The seconds per unit of work are fitted (:mod:`app.services.cost_table`).
COLUMN_EXPONENT = 0.7


def proximity_forest_work(rows: list[float], n_columns: int) -> float:
    """Work of proximity forests grown on ``rows`` rows each (capped at
    :data:`SWC_MAX_ROWS`) with ``n_columns`` columns (features and probabilities):
    rows x log2(rows) x columns ** :data:`COLUMN_EXPONENT`, summed over the forests."""
    capped = np.minimum(np.asarray(rows, dtype=np.float64), float(SWC_MAX_ROWS))
    return float(np.sum(n_columns**COLUMN_EXPONENT * capped
                        * np.log2(np.maximum(capped, 2.0))))


@dataclass(frozen=True)
class SupportParams:
    """Batch to compare (another dataset id, or none), seed, folds, test level, table size."""

    batch_dataset_id: str | None = None
    random_state: int = 0
    n_folds: int = 5
    alpha: float = 0.01
    n_lowest: int = 10
    features: tuple[str, ...] | None = None


def support_terms(prediction_set: PredictionSet, params: SupportParams,
                  n_features: int) -> dict[str, float]:
    """The work a support job does, counted before starting (see
    :class:`app.services.cost.CostModel`): the proximity forests (one per fold, one on
    every calibration row when there are test or batch rows to score) and the rows scored."""
    n_calibration = (int(prediction_set.mask("calibration").sum())
                     if prediction_set.split is not None else prediction_set.n_rows)
    queries = prediction_set.split is not None or params.batch_dataset_id is not None
    sizes = [n_calibration * (params.n_folds - 1) / params.n_folds] * params.n_folds + (
        [float(n_calibration)] if queries else [])
    return {"fixed": 1.0, "rows": float(prediction_set.n_rows),
            "forest": proximity_forest_work(sizes, n_features + prediction_set.n_classes)}


def estimate_support(services: ServiceContext, dataset_id: str,
                     params: SupportParams) -> CostEstimate:
    """Seconds of a support job, before starting (:func:`support_terms` times the fitted
    model)."""
    prediction_set = services.datasets.prediction_set(dataset_id)
    columns = resolve_columns(prediction_set, params.features)
    if services.store.has_document(
            params_key(dataset_id, "support", {**asdict(params), "features": list(columns)})):
        return CostEstimate(0.0, "computed before with these settings: cached")
    n_features = len(columns)
    n_calibration = (int(prediction_set.mask("calibration").sum())
                     if prediction_set.split is not None else prediction_set.n_rows)
    queries = prediction_set.split is not None or params.batch_dataset_id is not None
    model = cost_model("support")

    def seconds(option: SupportParams, n_columns: int) -> CostEstimate:
        return model.estimate(support_terms(prediction_set, option, n_columns), "")

    n_forests = params.n_folds + int(queries)
    basis = (f"{n_forests} proximity forests of 100 trees on up to "
             f"{min(n_calibration, SWC_MAX_ROWS):,} calibration rows, {n_features} feature "
             "columns")
    cheaper = None
    if n_features > 3:
        cheaper = (f"choose 3 feature columns (the forests' cost grows with them): "
                   f"{seconds(params, 3).text()}")
    elif params.n_folds > 2:
        cheaper = (f"2 folds (REST: n_folds=2): "
                   f"{seconds(replace(params, n_folds=2), n_features).text()}")
    return model.estimate(support_terms(prediction_set, params, n_features), basis, cheaper)


def start_support(services: ServiceContext, dataset_id: str, params: SupportParams) -> Job:
    """Validate the request now (dataset, features, batch compatibility), then submit the job."""
    prediction_set = services.datasets.prediction_set(dataset_id)
    batch, batch_name = None, None
    if params.batch_dataset_id is not None:
        if params.batch_dataset_id == dataset_id:
            raise CalibrationInputError(
                "the batch must be another dataset: this dataset's own test rows are already "
                "compared with its calibration rows.", code="invalid_parameters")
        batch = services.datasets.prediction_set(params.batch_dataset_id, allow_unlabeled=True)
        batch_name = str(services.datasets.summary(params.batch_dataset_id)["name"])
    task = _SupportTask.prepare(services.store, dataset_id, prediction_set, params, batch,
                                batch_name)
    return services.jobs.submit("support", task.run,
                                params={"dataset_id": dataset_id, **asdict(params)},
                                estimate=estimate_support(services, dataset_id, params).as_dict())


@dataclass(frozen=True, eq=False)
class _SupportTask:
    store: Store
    dataset_id: str
    prediction_set: PredictionSet
    params: SupportParams
    features: ForestFeatures
    calibration: NDArray[np.intp]
    test: NDArray[np.intp]
    batch: PredictionSet | None
    batch_features: NDArray[np.float64] | None
    batch_name: str | None
    key: str

    @classmethod
    def prepare(cls, store: Store, dataset_id: str, prediction_set: PredictionSet,
                params: SupportParams, batch: PredictionSet | None,
                batch_name: str | None = None) -> _SupportTask:
        columns = resolve_columns(prediction_set, params.features)
        features = forest_features(prediction_set, columns)
        if prediction_set.split is not None:
            calibration = np.flatnonzero(prediction_set.mask("calibration"))
            test = np.flatnonzero(prediction_set.mask("test"))
        else:
            calibration = np.arange(prediction_set.n_rows)
            test = np.empty(0, dtype=np.intp)
        if calibration.size < params.n_folds:
            raise CalibrationInputError(
                f"cross-fitting the support with {params.n_folds} folds needs at least "
                f"{params.n_folds} calibration rows; this dataset has {calibration.size}.",
                code="too_few_rows")
        batch_features = None if batch is None else _batch_features(
            prediction_set, batch, features)
        key = params_key(dataset_id, "support", {**asdict(params), "features": list(columns)})
        return cls(store, dataset_id, prediction_set, params, features, calibration, test,
                   batch, batch_features, batch_name, key)

    def run(self, progress: Progress) -> dict[str, Any]:
        if self.store.has_document(self.key):
            result: dict[str, Any] = self.store.read_document(self.key)
            progress.update(0.99, "loaded the cached result")
        else:
            result = self._compute(progress)
            self.store.write_document(self.key, result)
        values = np.full(self.prediction_set.n_rows, np.nan)
        for part in ("calibration", "test"):
            values[np.asarray(result[part]["row"], dtype=np.intp)] = np.asarray(
                result[part]["support"], dtype=np.float64)
        save_row_column(self.store, self.dataset_id, "support", values)
        return result

    def _compute(self, progress: Progress) -> dict[str, Any]:
        progress.update(0.05, f"fitting {self.params.n_folds + 1} proximity forests")
        cal, test = self.calibration, self.test
        data = self.prediction_set
        query_x: NDArray[np.float64] | None = self.features.values[test]
        query_p: NDArray[np.float64] | None = data.proba[test]
        if self.batch is not None and self.batch_features is not None:
            query_x = np.vstack([self.features.values[test], self.batch_features])
            query_p = np.vstack([data.proba[test], self.batch.proba])
        elif test.size == 0:
            query_x = query_p = None  # every row is a calibration row: nothing else to score

        def report(done: float, total: int) -> None:
            progress.update(0.05 + 0.85 * done / total,
                            f"proximity forests: {int(done)} of {total} fitted, forest "
                            f"{min(int(done) + 1, total)} {done % 1:.0%} grown")

        support = calibration_support(
            self.features.values[cal], data.y_true[cal], data.proba[cal], query_x, query_p,
            n_folds=self.params.n_folds, random_state=self.params.random_state,
            progress=report,
            sample_weight=None if data.weights is None else data.weights[cal])
        progress.update(0.9, "comparing distributions")
        tested = _part(support, slice(0, test.size))
        batched = _part(support, slice(test.size, None)) if self.batch is not None else None
        result: dict[str, Any] = {
            "dataset_id": self.dataset_id,
            "params": {**asdict(self.params), "features": list(self.features.columns)},
            "scheme": self._scheme(),
            "n_calibration": int(cal.size),
            "n_test": int(test.size),
            "n_folds": support.n_folds,
            "n_estimators": support.n_estimators,
            **weighting(data, _mask(data.n_rows, cal)),
            "calibration": {"row": cal, "support": support.reference},
            "test": {"row": test, "support": tested.values, "held_out": tested.held_out},
            "test_shift": (compare_support(tested, alpha=self.params.alpha)
                           if test.size else None),
            "lowest": self._lowest(support, test),
            "batch": None,
            "notes": [*self.features.notes, _comparison_note(),
                      *([_WEIGHTED_NOTE] if data.weighted else [])],
        }
        if batched is not None and self.batch is not None:
            shift = compare_support(batched, alpha=self.params.alpha)
            result["batch"] = {
                "dataset_id": self.params.batch_dataset_id, "name": self.batch_name,
                "n_rows": self.batch.n_rows,
                "support": batched.values, "held_out": batched.held_out, "shift": shift,
                "lowest": _lowest_rows(self.batch, np.arange(self.batch.n_rows),
                                       batched.values, self.params.n_lowest, "batch"),
            }
        result["histogram"] = _histogram(support.reference, tested.held_out,
                                         None if batched is None else batched.held_out)
        return dict(jsonable(result))

    def _lowest(self, support: CalibrationSupport,
                test: NDArray[np.intp]) -> list[dict[str, Any]]:
        if test.size:
            return _lowest_rows(self.prediction_set, test, support.values[:test.size],
                                self.params.n_lowest, "test")
        return _lowest_rows(self.prediction_set, self.calibration, support.reference,
                            self.params.n_lowest, "calibration (cross-fitted)")

    def _scheme(self) -> str:
        if self.test.size:
            return (f"split column: proximity forests on the {self.calibration.size:,} "
                    f"calibration rows ({self.params.n_folds}-fold cross-fitted for their own "
                    f"support); {self.test.size:,} test rows scored against all of them")
        return (f"no split column: every row is a calibration row; its support is "
                f"{self.params.n_folds}-fold cross-fitted")


def _mask(n_rows: int, rows: NDArray[np.intp]) -> NDArray[np.bool_]:
    """Boolean mask of ``rows``."""
    mask = np.zeros(n_rows, dtype=bool)
    mask[rows] = True
    return mask


def _batch_features(prediction_set: PredictionSet, batch: PredictionSet,
                    features: ForestFeatures) -> NDArray[np.float64]:
    """The batch encoded like the reference; different classes or missing columns are refused."""
    if batch.classes != prediction_set.classes:
        raise CalibrationInputError(
            f"the batch's classes {list(batch.classes)} differ from this dataset's "
            f"{list(prediction_set.classes)}; the support compares predictions of the same "
            "model.", code="batch_mismatch")
    absent = [c for c in features.columns if c not in batch.features.columns]
    if absent:
        raise CalibrationInputError(
            f"the batch lacks the feature column(s) {', '.join(map(repr, absent))}; it needs "
            "the same feature columns as this dataset.", code="batch_mismatch",
            column=str(absent[0]))
    return features.representation.transform(batch.features)


def _part(support: CalibrationSupport, rows: slice) -> CalibrationSupport:
    return replace(support, values=support.values[rows], held_out=support.held_out[rows])


def _lowest_rows(prediction_set: PredictionSet, rows: NDArray[np.intp],
                 values: NDArray[np.float64], count: int, group: str) -> list[dict[str, Any]]:
    """The ``count`` rows with the lowest support: position, id, label, prediction, support."""
    order = np.argsort(values, kind="stable")[:count]
    chosen = rows[order]
    proba = prediction_set.proba[chosen]
    return [{"row": int(row), "id": identifier, "label": label, "predicted": predicted,
             "confidence": float(confidence), "support": float(value), "set": group}
            for row, identifier, label, predicted, confidence, value in zip(
                chosen, row_ids(prediction_set, chosen),
                class_names(prediction_set, prediction_set.y_true[chosen]),
                class_names(prediction_set, proba.argmax(axis=1)), proba.max(axis=1),
                values[order], strict=True)]


def _histogram(reference: NDArray[np.float64], test: NDArray[np.float64],
               batch: NDArray[np.float64] | None) -> dict[str, Any]:
    """Common bins; per set the share of rows per bin with a 95% Wilson interval."""
    sets = {"calibration": reference, "test": test}
    if batch is not None:
        sets["batch"] = batch
    pooled = np.concatenate([v for v in sets.values() if v.size])
    n_bins = min(MAX_HISTOGRAM_BINS, max(10, int(np.ceil(np.sqrt(pooled.size) / 2))))
    edges = np.linspace(0.0, float(pooled.max()) if pooled.max() > 0 else 1.0, n_bins + 1)
    out: dict[str, Any] = {"edges": edges}
    for name, values in sets.items():
        if values.size == 0:
            out[name] = None
            continue
        counts, _ = np.histogram(values, bins=edges)
        low, high = proportion_interval(counts, values.size)
        out[name] = {"n": int(values.size), "count": counts, "share": counts / values.size,
                     "share_low": low, "share_high": high,
                     "median": float(np.median(values))}
    return out


#: What the weights change in a support result, and what they leave.
_WEIGHTED_NOTE = ("Row weights: support is the weight of the calibration rows sharing a "
                  "row's leaves (forests grown with the weights); the histogram and the "
                  "Kolmogorov-Smirnov comparison count each row once.")


def _comparison_note() -> str:
    return ("Histogram and shift test: test and batch rows are scored like the calibration "
            "rows' cross-fitted support (by one fold's forest, scaled to the full calibration "
            "set), so the distributions are comparable; the per-row support listed and "
            "downloaded for test rows is against all calibration rows.")
