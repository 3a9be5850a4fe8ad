"""Fitting one recalibrator on a dataset's rows: the model users export, and without a
split column the K-fold cross-fitted scores the held-out comparison measures (split from
:mod:`app.services.recalibration`, which stores, compares and exports them)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray
from sklearn.base import clone
from sklearn.model_selection import KFold, StratifiedKFold

from app.services.encoding import FeatureEncoder, fit_feature_encoder
from app.services.saved_models import corrected_columns
from calibcore.data import PredictionSet
from calibcore.exceptions import CalibrationInputError
from calibcore.recalibration import IntervalRecalibrator, Recalibrator

#: Folds used for cross-fitting when a dataset has no split column.
CROSS_FIT_FOLDS = 5
#: ``report(fraction of this method done, message)``.
Report = Callable[[float, str], None]


def silent(fraction: float, message: str) -> None:
    """A report that goes nowhere (synchronous fits without a job)."""


@dataclass(frozen=True)
class FittedModel:
    """A fitted recalibrator and the encoder of the features it reads (if any)."""

    recalibrator: Recalibrator
    encoder: FeatureEncoder | None


@dataclass(frozen=True)
class FittedRecalibration:
    """The model users export and, without a split, the cross-fitted scores.

    Attributes
    ----------
    model : FittedModel
        Fitted on the calibration rows of a split, or on every row without one.
    cross_fitted : ndarray of shape (n_rows, n_classes) or None
        Without a split: every row corrected by one of the K models fitted without it
        (what the held-out comparison scores), and for Venn-Abers each class's interval
        after the probabilities (n_rows, 3 n_classes). None with a split, where the
        comparison scores the exported model on the test rows.
    scheme : str
        How the held-out rows were scored, in words.
    """

    model: FittedModel
    cross_fitted: NDArray[np.float64] | None
    scheme: str


def heldout_rows(prediction_set: PredictionSet) -> NDArray[np.bool_]:
    """Rows the comparison is honest for: the test rows, or all rows under cross-fitting."""
    if prediction_set.split is not None:
        return prediction_set.mask("test")
    return np.ones(prediction_set.n_rows, dtype=bool)


def within(report: Report, start: float, stop: float, label: str) -> Report:
    """``report`` for a step spanning ``start``..``stop`` of a method's progress, saying
    what the step is doing (the recalibrator's own message in brackets, if any)."""
    def step(fraction: float, message: str) -> None:
        report(start + (stop - start) * fraction, f"{label} ({message})" if message else label)

    return step


def _fit_rows(estimator: Recalibrator, prediction_set: PredictionSet, columns: tuple[str, ...],
              rows: NDArray[Any], report: Report = silent) -> FittedModel:
    encoder = None
    features = None
    if estimator.needs_features:
        table = prediction_set.features.iloc[rows]
        encoder = fit_feature_encoder(estimator, table, columns)
        features = encoder.transform(table)
    # the dataset's row weights, for every method that takes them (the others fit every
    # row once, and their result says so: app.services.recalibration)
    weights = prediction_set.weights_of(rows) if estimator.supports_weights else None
    model = clone(estimator).fit(prediction_set.proba[rows], prediction_set.y_true[rows],
                                 features=features, progress=report, sample_weight=weights)
    return FittedModel(model, encoder)


def _predict_rows(fitted: FittedModel, prediction_set: PredictionSet,
                  rows: NDArray[Any], report: Report = silent) -> NDArray[np.float64]:
    features = (None if fitted.encoder is None
                else fitted.encoder.transform(prediction_set.features.iloc[rows]))
    return corrected_columns(fitted.recalibrator, prediction_set.proba[rows], features, report)


def fit_recalibration(estimator: Recalibrator, prediction_set: PredictionSet,
                      columns: tuple[str, ...] = (), *, random_state: int = 0,
                      report: Report = silent) -> FittedRecalibration:
    """The model to export, and the cross-fitted scores when there is no split.

    With a split the model is fitted on the calibration rows and the test rows are
    held out from it. Without one, K-fold cross-fitting corrects every row by a model
    fitted without it, and the exported model is fitted on every row.
    """
    if prediction_set.split is not None:
        label = "fitting on the calibration rows"
        report(0.05, label)
        model = fit_final(estimator, prediction_set, columns, within(report, 0.05, 1.0, label))
        return FittedRecalibration(model, None, "fitted on the calibration rows, scored on the "
                                   "test rows")
    cross_fitted = cross_fit(estimator, prediction_set, columns, random_state=random_state,
                             report=lambda fraction, message: report(0.8 * fraction, message))
    label = "fitting the model to export on every row"
    report(0.8, label)
    model = fit_final(estimator, prediction_set, columns, within(report, 0.8, 1.0, label))
    return FittedRecalibration(model, cross_fitted, f"{CROSS_FIT_FOLDS}-fold cross-fitting: "
                               "every row scored by a model fitted without it")


def cross_fit(estimator: Recalibrator, prediction_set: PredictionSet,
              columns: tuple[str, ...] = (), *, random_state: int = 0,
              report: Report = silent) -> NDArray[np.float64]:
    """Out-of-fold corrected probabilities, shape (n_rows, n_classes): K-fold, each row
    corrected by the model fitted on the other folds; a recalibrator that bounds its
    probabilities (Venn-Abers) adds each class's interval, (n_rows, 3 n_classes), laid out
    as :func:`app.services.saved_models.corrected_columns` lays out the model's."""
    width = prediction_set.n_classes * (3 if isinstance(estimator, IntervalRecalibrator) else 1)
    corrected = np.empty((prediction_set.n_rows, width))
    folds = _folds(prediction_set.y_true, random_state)
    for number, (fit_rows, score_rows) in enumerate(folds, start=1):
        label = f"cross-fitting fold {number}/{len(folds)}"
        start, stop = (number - 1) / len(folds), number / len(folds)
        report(start, label)
        middle = (start + stop) / 2
        fitted = _fit_rows(estimator, prediction_set, columns, fit_rows,
                           within(report, start, middle, label))
        corrected[score_rows] = _predict_rows(fitted, prediction_set, score_rows,
                                              within(report, middle, stop, label))
    return corrected


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
              report: Report = silent) -> FittedModel:
    """The model users export: fitted on the calibration rows, or on every row without a split."""
    rows = (prediction_set.mask("calibration") if prediction_set.split is not None
            else np.ones(prediction_set.n_rows, dtype=bool))
    return _fit_rows(estimator, prediction_set, columns, rows, report)
