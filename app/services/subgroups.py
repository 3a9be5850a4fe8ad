"""The worst-calibrated subgroups of a stored dataset, as a job.

:func:`calibcore.insights.worst_subgroups` ranks slices of one or two feature
conditions by their calibration gap; the job keeps the worst :data:`MAX_LISTED` with
their reliability diagrams (the first :data:`MAX_DIAGRAMS`) beside the whole data's, and
caches the result per dataset and settings.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any, cast

import numpy as np

from app.jobs import Job, Progress
from app.services.cost import CostEstimate, cost_model
from app.services.datasets import sample_note
from app.services.diagnostics import Subset, rows_for
from app.services.heterogeneity import params_key, resolve_columns
from app.services.jsonable import jsonable
from app.services.shared import ServiceContext
from app.services.weighting import weighting
from calibcore.data import PredictionSet
from calibcore.data.views import default_view
from calibcore.insights import Subgroup, SubgroupView, worst_subgroups
from calibcore.metrics import binned_reliability

#: Slices listed in a result (the worst first); the count tried is always given.
MAX_LISTED = 200
#: Slices whose reliability diagram comes with the result.
MAX_DIAGRAMS = 50
#: Bins of those diagrams.
DIAGRAM_BINS = 10
#: Bumped when the cached result changes (1: row weights).
_CACHE_VERSION = 1
#: Values of a text feature counted for the cost estimate at most.
MAX_VALUES = 50


@dataclass(frozen=True)
class SubgroupParams:
    """What to slice by and how.

    Attributes
    ----------
    features : tuple of str, optional
        Feature columns to slice by (default: all).
    n_bins : int
        Equal-mass bins per numeric feature.
    min_support : float, optional
        Least rows of a slice: a count (>= 1) or a fraction of the rows (< 1); default
        1% of the rows and at least 100.
    pairs : bool
        Also slices of two conditions on two features.
    subset : {"all", "calibration", "test"}
        Which rows are audited.
    view : {"top_label", "positive"}, optional
        The view of the gaps; default positive for two classes, top label for more.
    """

    features: tuple[str, ...] | None = None
    n_bins: int = 5
    min_support: float | None = None
    pairs: bool = True
    subset: Subset = "all"
    view: SubgroupView | None = None


def start_subgroups(services: ServiceContext, dataset_id: str, params: SubgroupParams) -> Job:
    """Check the request now (unknown dataset, features or subset fail at once), then
    submit the job."""
    prediction_set = services.datasets.prediction_set(dataset_id)
    if params.view is None:
        params = replace(params, view=cast(SubgroupView, default_view(prediction_set.n_classes)))
    view: SubgroupView = params.view or "top_label"
    columns = resolve_columns(prediction_set, params.features)
    rows = rows_for(prediction_set, params.subset)
    key = params_key(dataset_id, "subgroups", {**asdict(params), "features": list(columns),
                                               "version": _CACHE_VERSION})
    note = sample_note(services.datasets.record(dataset_id).meta)
    estimate = estimate_subgroups(services, dataset_id, params)

    def run(progress: Progress) -> dict[str, Any]:
        if services.store.has_document(key):
            progress.update(0.99, "loaded the cached result")
            return dict(services.store.read_document(key))
        features = prediction_set.features.iloc[np.flatnonzero(rows)][list(columns)].reset_index(
            drop=True)
        labels, proba = prediction_set.y_true[rows], prediction_set.proba[rows]
        weights = prediction_set.weights_of(rows)
        kinds = {name: prediction_set.feature_kinds[name] for name in columns}
        progress.update(0.02, f"slicing {rows.sum():,} rows by {len(columns)} features")
        audit = worst_subgroups(
            features, labels, proba, kinds=kinds, n_bins=params.n_bins,
            min_support=params.min_support, pairs=params.pairs, top=MAX_DIAGRAMS, view=view,
            progress=lambda done: progress.update(0.02 + 0.9 * done,
                                                  f"slices: {done:.0%}"),
            sample_weight=weights)
        listed = audit.subgroups[:MAX_LISTED]
        diagrams = []
        for subgroup in listed[:MAX_DIAGRAMS]:
            mask = subgroup.mask(features)
            (diagram,) = binned_reliability(labels[mask], proba[mask], n_bins=DIAGRAM_BINS,
                                            view=view, sample_weight=None if weights is None
                                            else weights[mask])
            diagrams.append(diagram)
        (whole,) = binned_reliability(labels, proba, n_bins=DIAGRAM_BINS, view=view,
                                      sample_weight=weights)
        result = jsonable({
            **weighting(prediction_set, rows),
            "dataset_id": dataset_id, "params": {**asdict(params), "features": list(columns)},
            "view": audit.view,
            "n_rows": audit.n_rows, "n_tried": audit.n_tried, "min_support": audit.min_support,
            "gap": audit.gap, "confidence_level": audit.confidence_level,
            "notes": [*audit.notes, *([note] if note else [])],
            "subgroups": [_subgroup(rank, subgroup, audit.n_rows, view)
                          for rank, subgroup in enumerate(listed, start=1)],
            "diagrams": diagrams, "whole": whole})
        services.store.write_document(key, result)
        return dict(result)

    return services.jobs.submit("subgroups", run,
                                params={"dataset_id": dataset_id, **asdict(params)},
                                estimate=estimate.as_dict())


def subgroups_terms(prediction_set: PredictionSet, params: SubgroupParams,
                    columns: Sequence[str], n_rows: int) -> dict[str, float]:
    """The work of a subgroup audit, counted before starting (see
    :class:`app.services.cost.CostModel`): the rows times the one-condition slices (a
    numeric feature's ``n_bins`` bins, a text feature's values) and, with ``pairs``, the
    rows times the two-condition slices."""
    sizes = []
    for name in columns:
        if prediction_set.feature_kinds[name] == "numeric":
            sizes.append(float(params.n_bins))
        else:
            sizes.append(float(min(prediction_set.features[name].nunique(), MAX_VALUES)))
    single = float(sum(sizes))
    pairs = (single**2 - sum(size**2 for size in sizes)) / 2 if params.pairs else 0.0
    return {"fixed": 1.0, "rows": float(n_rows), "slice_rows": n_rows * single,
            "pair_rows": n_rows * pairs}


def estimate_subgroups(services: ServiceContext, dataset_id: str,
                       params: SubgroupParams) -> CostEstimate:
    """Seconds of a subgroup audit, before starting (:func:`subgroups_terms` times the
    fitted model); slicing by single features only is the cheaper setting offered."""
    prediction_set = services.datasets.prediction_set(dataset_id)
    columns = resolve_columns(prediction_set, params.features)
    n_rows = int(rows_for(prediction_set, params.subset).sum())
    model = cost_model("subgroups")
    terms = subgroups_terms(prediction_set, params, columns, n_rows)
    basis = (f"{n_rows:,} rows sliced by {len(columns)} feature columns"
             + (", and pairs of them" if params.pairs else ""))
    cheaper = None
    if params.pairs:
        alone = model.estimate(subgroups_terms(prediction_set, replace(params, pairs=False),
                                               columns, n_rows), "")
        cheaper = f"single-feature slices only (pairs off): {alone.text()}"
    return model.estimate(terms, basis, cheaper)


def _subgroup(rank: int, subgroup: Subgroup, n_rows: int, view: str) -> dict[str, Any]:
    """One slice as JSON; ``mean_confidence`` and ``accuracy`` name the top-label view's
    score and rate and are given only on that view."""
    top_label = ({"mean_confidence": subgroup.mean_score, "accuracy": subgroup.observed_rate}
                 if view == "top_label" else {})
    return {"rank": rank, "slice": subgroup.describe(),
            "conditions": [{key: value for key, value in asdict(condition).items()
                            if not (isinstance(value, float) and np.isnan(value))}
                           for condition in subgroup.conditions],
            "n": subgroup.n, "support": subgroup.n / n_rows,
            "mean_score": subgroup.mean_score, "observed_rate": subgroup.observed_rate,
            **top_label,
            "gap": subgroup.gap, "gap_low": subgroup.gap_low, "gap_high": subgroup.gap_high,
            "p_value": subgroup.p_value, "p_adjusted": subgroup.p_adjusted,
            "smooth_ece": subgroup.smooth_ece, "other_gap": subgroup.other_gap,
            "significant_views": list(subgroup.significant_views),
            **({} if subgroup.n_eff is None else {"weight": subgroup.weight,
                                                  "n_eff": subgroup.n_eff})}


__all__ = ["MAX_DIAGRAMS", "MAX_LISTED", "SubgroupParams", "estimate_subgroups",
           "start_subgroups", "subgroups_terms"]
