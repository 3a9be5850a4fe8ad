"""Calibration over time of a stored dataset, cached per settings.

:func:`calibcore.insights.calibration_timeline` gives the measures per window and the
change test; beside them, the honest comparison for a deployed model: a recalibrator
fitted on each window and scored on the next one (``rolling``).
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any, cast

import numpy as np

from app.services.cache import cache_key, cached
from app.services.datasets import sample_note
from app.services.jsonable import jsonable
from app.services.shared import ServiceContext
from app.services.weighting import weighting
from calibcore import metrics
from calibcore.data.views import default_view
from calibcore.exceptions import CalibrationInputError
from calibcore.insights.timeline import (
    MIN_WINDOW_ROWS,
    Frequency,
    TimelineView,
    calibration_timeline,
)
from calibcore.recalibration import REGISTRY

#: Recalibrators the rolling comparison may fit (global ones: no features needed).
ROLLING_METHODS = ("temperature", "platt", "isotonic", "beta", "histogram")


def timeline_for(services: ServiceContext, dataset_id: str, *, freq: Frequency = "auto",
                 reference: int = 0, method: str = "temperature",
                 time: str | None = None, view: TimelineView | None = None) -> dict[str, Any]:
    """The timeline of ``dataset_id`` on its time column (or ``time``), cached; on
    ``view`` (default: positive for two classes, top label for more)."""
    if method not in ROLLING_METHODS:
        raise CalibrationInputError(f"method must be one of {', '.join(ROLLING_METHODS)}, "
                                    f"not {method!r}.", code="invalid_parameters")
    meta = services.datasets.record(dataset_id).meta
    chosen = view or cast(TimelineView, default_view(len(meta["classes"])))
    column = time or meta["roles"].get("time")
    frame = services.datasets.frame(dataset_id)
    if column is None:
        raise CalibrationInputError(
            "this dataset has no time column: choose one (dates, datetimes or an ordered "
            "number) with time=<column>, or give it the time role when uploading.",
            code="no_time")
    if column not in frame.columns:
        raise CalibrationInputError(f"no column named {column!r}.", code="unknown_column",
                                    column=column)
    key = cache_key(dataset_id, "timeline", freq=freq, reference=reference, method=method,
                    time=column, view=chosen, random_state=services.settings.random_state,
                    version=1)  # 1: row weights

    def compute() -> dict[str, Any]:
        prediction_set = services.datasets.prediction_set(dataset_id)
        result = calibration_timeline(frame[column], prediction_set.y_true,
                                      prediction_set.proba, freq=freq, reference=reference,
                                      view=chosen, random_state=services.settings.random_state,
                                      sample_weight=prediction_set.weights)
        rolling = _rolling(method, result.assignments, prediction_set.y_true,
                           prediction_set.proba, len(result.windows), prediction_set.weights)
        note = sample_note(meta)
        return jsonable({
            **weighting(prediction_set, result.assignments >= 0),
            "dataset_id": dataset_id, "time": column, "period": result.period,
            "reference": result.reference, "view": result.view, "alpha": result.alpha,
            "test": result.test,
            "notes": [*result.notes, *([note] if note else [])],
            "windows": [asdict(window) for window in result.windows],
            "rolling": {"method": method, "windows": rolling,
                        "note": f"{method} fitted on each window and scored on the next: "
                                "what a model recalibrated on last period's data would "
                                "have scored"
                                + (" (fitted and scored on the weighted rows)"
                                   if prediction_set.weighted else "")}})

    return dict(cached(services.store, key, compute))


def _rolling(method: str, assignments: np.ndarray, labels: np.ndarray, proba: np.ndarray,
             n_windows: int, weights: np.ndarray | None = None) -> list[dict[str, Any]]:
    """NLL and ECE of each window before and after ``method`` fitted on the window before."""
    out = []
    for index in range(1, n_windows):
        fit, score = assignments == index - 1, assignments == index
        if fit.sum() < MIN_WINDOW_ROWS or score.sum() < MIN_WINDOW_ROWS or np.unique(
                labels[fit]).size < 2:
            continue
        fit_weights = None if weights is None else weights[fit]
        scored = None if weights is None else weights[score]
        model = REGISTRY[method]().fit(proba[fit], labels[fit], sample_weight=fit_weights)
        after = model.predict_proba(proba[score])
        before = proba[score]
        out.append({"window": index, "fitted_on": index - 1,
                    "nll_before": metrics.negative_log_likelihood(labels[score], before,
                                                                  sample_weight=scored),
                    "nll_after": metrics.negative_log_likelihood(labels[score], after,
                                                                 sample_weight=scored),
                    "ece_before": metrics.expected_calibration_error(
                        labels[score], before, sample_weight=scored),
                    "ece_after": metrics.expected_calibration_error(
                        labels[score], after, sample_weight=scored)})
    return out


__all__ = ["ROLLING_METHODS", "timeline_for"]
