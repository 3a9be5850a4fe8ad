"""Several models' probabilities of one dataset compared on its rows."""

from __future__ import annotations

from dataclasses import asdict, replace
from typing import Any

import numpy as np

from app.services.cache import cache_key, cached
from app.services.datasets import sample_note
from app.services.jsonable import jsonable
from app.services.shared import ServiceContext
from app.services.weighting import weighting
from calibcore.data import PredictionSet, View, build_prediction_set, default_view
from calibcore.exceptions import CalibrationInputError
from calibcore.insights import ModelComparison, compare_models
from calibcore.metrics import binned_reliability


def model_probabilities(prediction_set: PredictionSet, frame: Any,
                        renormalize: bool = False) -> dict[str, np.ndarray]:
    """Each model's validated probabilities (the dataset's ``models`` role)."""
    roles = prediction_set.roles
    if len(roles.models) < 2:
        raise CalibrationInputError(
            "this dataset holds one model's probabilities: to compare models, upload a "
            "file with each model's columns named <model>_proba_<class> (or "
            "<model>_prob for P(positive)).", code="no_models")
    out = {}
    for name, columns in roles.models:
        if tuple(columns) == tuple(roles.probabilities):
            out[name] = prediction_set.proba
        else:
            single = replace(roles, probabilities=tuple(columns), models=(), features=())
            out[name] = build_prediction_set(frame, single, renormalize=renormalize).proba
    return out


def comparison_document(prediction_set: PredictionSet, probabilities: dict[str, np.ndarray],
                        *, reference: str | None, n_bootstrap: int, random_state: int,
                        view: View | None = None, progress: Any = None) -> dict[str, Any]:
    """The comparison as JSON: measures per model, paired differences, diagrams, on
    ``view`` (default: positive for two classes, top label for more; a classwise view
    draws the top-label diagrams)."""
    columns = dict(prediction_set.roles.models)
    view = view or default_view(prediction_set.n_classes)
    result: ModelComparison = compare_models(
        prediction_set.y_true, probabilities, reference=reference, view=view,
        n_bootstrap=n_bootstrap, random_state=random_state, progress=progress,
        sample_weight=prediction_set.weights)
    diagram_view: View = "top_label" if view == "classwise" else view
    models = []
    for model in result.models:
        (diagram,) = binned_reliability(prediction_set.y_true, probabilities[model.name],
                                        view=diagram_view, sample_weight=prediction_set.weights)
        models.append({
            "name": model.name, "columns": list(columns.get(model.name, ())),
            "measures": {m.key: {"name": m.name, "value": m.value, "low": m.low,
                                 "high": m.high, "plug_in": m.plug_in,
                                 "consistent": m.consistent} for m in model.measures.measures},
            "differences": {d.key: asdict(d) for d in model.differences},
            "reliability": diagram})
    return jsonable({
        **weighting(prediction_set),
        "reference": result.reference, "view": result.view, "diagram_view": diagram_view,
        "n": result.n, "n_bootstrap": result.n_bootstrap,
        "confidence_level": result.confidence_level, "models": models,
        "note": "each model's measures with its own 95% interval; differences (model - "
                "reference) with a paired bootstrap over the shared rows (one resample "
                "serves every model; above 20,000 rows an m-out-of-n bootstrap of a seeded "
                "20,000-row subsample, scaled), p-value of no difference"
                + ("; rows weighted, each drawn row carrying its weight"
                   if prediction_set.weighted else "")})


def compare_for(services: ServiceContext, dataset_id: str, *, reference: str | None = None,
                n_bootstrap: int = 200, view: View | None = None) -> dict[str, Any]:
    """:func:`comparison_document` of a stored dataset, cached per reference, view and
    resamples."""
    meta = services.datasets.record(dataset_id).meta
    view = view or default_view(len(meta["classes"]))
    key = cache_key(dataset_id, "compare", reference=reference, n_bootstrap=n_bootstrap,
                    view=view, random_state=services.settings.random_state,
                    version=1)  # 1: row weights

    def compute() -> dict[str, Any]:
        prediction_set = services.datasets.prediction_set(dataset_id)
        probabilities = model_probabilities(prediction_set, services.datasets.frame(dataset_id),
                                            meta.get("renormalized", False))
        document = comparison_document(prediction_set, probabilities, reference=reference,
                                       n_bootstrap=n_bootstrap, view=view,
                                       random_state=services.settings.random_state)
        note = sample_note(meta)
        return {"dataset_id": dataset_id, **document,
                **({"sample_note": note} if note else {})}

    return dict(cached(services.store, key, compute))


__all__ = ["compare_for", "comparison_document", "model_probabilities"]
