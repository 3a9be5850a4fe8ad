"""Global measures and reliability diagrams of a stored dataset."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from app.services.jsonable import jsonable
from calibcore import metrics
from calibcore.binning import Binning
from calibcore.data import PredictionSet
from calibcore.exceptions import CalibrationInputError
from calibcore.reliability import binned_reliability
from calibcore.views import View

Subset = Literal["all", "calibration", "test"]


@dataclass(frozen=True)
class MeasureInfo:
    """How a measure is shown: label, one-line meaning, whether it is consistent (paper 001)."""

    label: str
    meaning: str
    consistent: bool = False


MEASURES: dict[str, MeasureInfo] = {
    "accuracy": MeasureInfo("Accuracy", "share of rows whose top class is right"),
    "ece": MeasureInfo("ECE", "binned mean |confidence − accuracy|; moves with the bins"),
    "mce": MeasureInfo("MCE", "largest bin gap |confidence − accuracy|"),
    "classwise_ece": MeasureInfo("Classwise ECE", "ECE of each class probability, averaged"),
    "brier": MeasureInfo("Brier (sum over classes)", "mean squared error of the probability "
                         "vector, 0 (perfect) to 2"),
    "binary_brier": MeasureInfo("Brier (positive class)", "mean squared error of P(class 1)"),
    "nll": MeasureInfo("NLL", "mean −log probability of the true class"),
}


def rows_for(prediction_set: PredictionSet, subset: Subset) -> NDArray[np.bool_]:
    """Mask of the rows in ``subset`` ("all", or a split that the dataset must have)."""
    if subset == "all":
        return np.ones(prediction_set.n_rows, dtype=bool)
    if prediction_set.split is None:
        raise CalibrationInputError(
            f"this dataset has no split column, so there are no {subset} rows; "
            "use subset=all.", code="no_split")
    return prediction_set.mask(subset)


def global_metrics(prediction_set: PredictionSet, *, view: View = "top_label",
                   n_bins: int = 15, binning: Binning = "equal_width",
                   subset: Subset = "all") -> dict[str, Any]:
    """All global measures of one view on one subset, with their sample size."""
    mask = rows_for(prediction_set, subset)
    labels, proba = prediction_set.y_true[mask], prediction_set.proba[mask]
    values = measure_values(labels, proba, view=view, n_bins=n_bins, binning=binning)
    return jsonable({
        "view": view, "subset": subset, "n": int(mask.sum()),
        "n_classes": prediction_set.n_classes, "n_bins": n_bins, "binning": binning,
        "metrics": values,
        "measures": {key: {"value": value, **MEASURES[key].__dict__}
                     for key, value in values.items()},
    })


def measure_values(labels: NDArray[np.intp], proba: NDArray[np.float64], *,
                   view: View = "top_label", n_bins: int = 15,
                   binning: Binning = "equal_width") -> dict[str, float]:
    """The global measures as plain numbers (view-dependent ones on ``view``)."""
    values = {
        "accuracy": metrics.accuracy(labels, proba),
        "ece": metrics.expected_calibration_error(labels, proba, n_bins=n_bins,
                                                  binning=binning, view=view),
        "mce": metrics.maximum_calibration_error(labels, proba, n_bins=n_bins,
                                                 binning=binning, view=view),
        "classwise_ece": metrics.classwise_expected_calibration_error(
            labels, proba, n_bins=n_bins, binning=binning),
        "brier": metrics.brier_score(labels, proba),
        "nll": metrics.negative_log_likelihood(labels, proba),
    }
    if proba.shape[1] == 2:
        values["binary_brier"] = metrics.binary_brier_score(labels, proba)
    return values


def reliability(prediction_set: PredictionSet, *, view: View = "top_label", n_bins: int = 15,
                binning: Binning = "equal_width", subset: Subset = "all",
                class_index: int | None = None) -> dict[str, Any]:
    """Binned reliability diagram(s) with Wilson 95% intervals per bin."""
    mask = rows_for(prediction_set, subset)
    diagrams = binned_reliability(prediction_set.y_true[mask], prediction_set.proba[mask],
                                  n_bins=n_bins, binning=binning, view=view)
    if view == "classwise":
        diagrams = [replace(diagram, label=f"class {name}")
                    for diagram, name in zip(diagrams, prediction_set.classes, strict=True)]
        if class_index is not None:
            diagrams = [diagrams[class_index]]
    return jsonable({"view": view, "subset": subset, "n": int(mask.sum()), "n_bins": n_bins,
                     "binning": binning, "diagrams": diagrams})
