"""Decision curves of a stored dataset, and the net benefit of its recalibrations.

:func:`calibcore.decision.decision_curve` gives the model's net benefit with its band
beside treat all and treat none; :func:`calibcore.decision.net_benefit_difference` the
change in net benefit a fitted recalibrator brings on the held-out rows, with a paired
interval. Both are vectorized (well under a second on a million rows), so they run in the
request, cached per dataset and parameters.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from app.services.cache import cache_key, cached
from app.services.datasets import sample_note
from app.services.diagnostics import Subset, rows_for
from app.services.jsonable import jsonable
from app.services.recalibration_fitting import heldout_rows
from app.services.shared import ServiceContext
from app.services.weighting import weighting
from app.store import NotFound
from calibcore.data import PredictionSet
from calibcore.decision import (
    DEFAULT_THRESHOLDS,
    MAX_THRESHOLDS,
    check_thresholds,
    decision_curve,
    net_benefit_difference,
)
from calibcore.exceptions import CalibrationInputError

#: Thresholds at which a recalibration's net benefit is compared by default.
RECALIBRATION_THRESHOLDS: tuple[float, ...] = (0.1, 0.2, 0.3)
#: Resamples of the bands and intervals by default, and the most a request may ask.
DEFAULT_BOOTSTRAP = 200
MAX_BOOTSTRAP = 2000
#: Bumped when the cached curves change (1: row weights).
_CACHE_VERSION = 1
#: What the thresholds mean, in one line (the page and the docs say the same).
THRESHOLD_NOTE = ("a row is treated when its probability of the event is at least the "
                  "threshold; at threshold t a false positive costs t / (1 - t) true "
                  "positives")


_THRESHOLD = r"0?\.[0-9]{0,5}[1-9][0-9]{0,3}"
#: What a ``thresholds`` query parameter may be: 1 to 200 numbers strictly between 0 and 1
#: written as decimals (``0.05``, ``.1``), separated by commas. Every string it matches
#: is a list :func:`parse_thresholds` accepts with ``sort=True`` (sorted, repeats dropped),
#: so the OpenAPI document says exactly which requests succeed.
THRESHOLDS_PATTERN = (rf"^ *{_THRESHOLD} *(, *{_THRESHOLD} *){{0,{MAX_THRESHOLDS - 1}}}$")


def parse_thresholds(text: str | None, default: Sequence[float] = DEFAULT_THRESHOLDS, *,
                     sort: bool = False) -> tuple[float, ...]:
    """Comma-separated thresholds (``"0.05,0.1,0.2"``) as numbers, checked; ``default``
    when ``text`` is empty. Spaces are allowed; the numbers must lie in (0, 1) and be
    sorted without repeats, or with ``sort`` are sorted and deduplicated here."""
    if text is None or not text.strip():
        return tuple(default)
    parts = [part.strip() for part in re.split(r"[,;\s]+", text.strip()) if part.strip()]
    if len(parts) > MAX_THRESHOLDS:
        raise CalibrationInputError(
            f"thresholds has {len(parts)} values; at most {MAX_THRESHOLDS} are drawn.",
            code="invalid_thresholds")
    numbers = []
    for part in parts:
        try:
            numbers.append(float(part))
        except ValueError:
            raise CalibrationInputError(
                f"thresholds must be numbers in (0, 1) separated by commas, such as "
                f"0.05,0.1,0.2; {part[:40]!r} is not a number.",
                code="invalid_thresholds") from None
    if sort:
        numbers = sorted(set(numbers))
    return tuple(float(v) for v in check_thresholds(numbers))


def checked_thresholds(values: Sequence[float]) -> tuple[float, ...]:
    """``values`` checked as decision thresholds (increasing, in (0, 1), at most 200)."""
    return tuple(float(v) for v in check_thresholds(values))


def positive_index(prediction_set: PredictionSet, name: str | None) -> int:
    """The index of class ``name`` (default the last: class 1 of a binary problem)."""
    if name is None:
        return prediction_set.n_classes - 1
    if name not in prediction_set.classes:
        raise CalibrationInputError(
            f"no class {name!r}; the classes are {', '.join(prediction_set.classes)}.",
            code="unknown_class")
    return prediction_set.classes.index(name)


def _check_bootstrap(n_bootstrap: int) -> int:
    if not 0 <= n_bootstrap <= MAX_BOOTSTRAP:
        raise CalibrationInputError(f"n_bootstrap must be in 0..{MAX_BOOTSTRAP}, got "
                                    f"{n_bootstrap}.", code="invalid_parameters")
    return n_bootstrap


def decision_for(services: ServiceContext, dataset_id: str, *,
                 thresholds: Sequence[float] = DEFAULT_THRESHOLDS, subset: Subset = "all",
                 n_bootstrap: int = DEFAULT_BOOTSTRAP,
                 positive_class: str | None = None) -> dict[str, Any]:
    """The decision curve of ``dataset_id`` on ``subset`` rows, cached: net benefit of the
    model (with its percentile bootstrap band), treat all and treat none at each
    threshold, for class ``positive_class`` against the rest (default the last class)."""
    cuts = checked_thresholds(thresholds)
    _check_bootstrap(n_bootstrap)
    prediction_set = services.datasets.prediction_set(dataset_id)
    event = positive_index(prediction_set, positive_class)
    rows = rows_for(prediction_set, subset)
    key = cache_key(dataset_id, "decision", thresholds=cuts, subset=subset,
                    n_bootstrap=n_bootstrap, positive_class=event,
                    random_state=services.settings.random_state, version=_CACHE_VERSION)

    def compute() -> dict[str, Any]:
        note = sample_note(services.datasets.record(dataset_id).meta)
        return {"dataset_id": dataset_id,
                **decision_document(prediction_set, rows, thresholds=cuts, subset=subset,
                                    n_bootstrap=n_bootstrap, positive_class=event,
                                    random_state=services.settings.random_state,
                                    notes=[note] if note else [])}

    return dict(cached(services.store, key, compute))


def decision_document(prediction_set: PredictionSet, rows: NDArray[np.bool_], *,
                      thresholds: Sequence[float] = DEFAULT_THRESHOLDS, subset: str = "all",
                      n_bootstrap: int = DEFAULT_BOOTSTRAP, positive_class: int | None = None,
                      random_state: int = 0, notes: Sequence[str] = ()) -> dict[str, Any]:
    """The decision curve of ``rows`` of ``prediction_set`` as JSON: what the route, the
    page and ``calibdash report`` give."""
    event = prediction_set.n_classes - 1 if positive_class is None else positive_class
    name = prediction_set.classes[event]
    curve = decision_curve(prediction_set.y_true[rows], prediction_set.proba[rows],
                           thresholds=thresholds, positive_class=event,
                           n_bootstrap=n_bootstrap, random_state=random_state,
                           sample_weight=prediction_set.weights_of(rows))
    weighted = prediction_set.weighted
    return jsonable({**weighting(prediction_set, rows),
        "subset": subset, "thresholds": curve.thresholds,
        "net_benefit": {"model": curve.model, "treat_all": curve.treat_all,
                        "treat_none": curve.treat_none},
        "bands": {"model": {"lower": curve.lower, "upper": curve.upper}},
        "beats_both": [None if np.isnan(low) else bool(low > max(everyone, 0.0))
                       for low, everyone in zip(curve.lower, curve.treat_all, strict=True)],
        "n": curve.n, "prevalence": curve.prevalence, "positive_class": name,
        "n_bootstrap": curve.n_bootstrap, "confidence_level": curve.confidence_level,
        "notes": [f"Net benefit of treating the rows whose P({name}) is at least the "
                  f"threshold (Vickers & Elkin 2006): at threshold t a false positive costs "
                  "t / (1 - t) true positives"
                  + (" (TP, FP and n are sums of the row weights)." if weighted else "."),
                  *([] if not n_bootstrap else [
                      f"Band: {n_bootstrap} seeded bootstrap resamples of the rows"
                      + (", each drawn row carrying its weight" if weighted else "")
                      + f", {curve.confidence_level:.0%} percentile."]),
                  *([] if prediction_set.n_classes == 2 else [
                      f"{prediction_set.n_classes} classes: class {name} against the rest."]),
                  *notes]})


def recalibration_net_benefit(services: ServiceContext, dataset_id: str,
                              recalibration_ids: Sequence[str], *,
                              thresholds: Sequence[float] = RECALIBRATION_THRESHOLDS,
                              n_bootstrap: int = DEFAULT_BOOTSTRAP,
                              positive_class: str | None = None) -> dict[str, Any]:
    """Net benefit of each stored recalibration of ``dataset_id`` on the held-out rows (the
    test rows, or every row cross-fitted) beside the uncalibrated model's, with the paired
    bootstrap interval of the difference: does recalibrating change what one would do?"""
    cuts = checked_thresholds(thresholds)
    _check_bootstrap(n_bootstrap)
    stored = {item["id"]: item for item in services.recalibrations.list(dataset_id)}
    unknown = [rid for rid in recalibration_ids if rid not in stored]
    if unknown:
        raise NotFound("recalibration", unknown[0], f"dataset {dataset_id} has no such "
                       "recalibration (GET .../recalibrations lists them)")
    prediction_set = services.datasets.prediction_set(dataset_id)
    event = positive_index(prediction_set, positive_class)
    key = cache_key(dataset_id, "recalibration_net_benefit", ids=list(recalibration_ids),
                    thresholds=cuts, n_bootstrap=n_bootstrap, positive_class=event,
                    random_state=services.settings.random_state, version=_CACHE_VERSION)

    def compute() -> dict[str, Any]:
        rows = heldout_rows(prediction_set)
        labels, before = prediction_set.y_true[rows], prediction_set.proba[rows]
        weights = prediction_set.weights_of(rows)
        methods = []
        result = None
        for rid in recalibration_ids:
            corrected = services.recalibrations.corrected_probabilities(
                rid, prediction_set.n_classes)[rows]
            result = net_benefit_difference(labels, before, corrected, thresholds=cuts,
                                            positive_class=event, n_bootstrap=n_bootstrap,
                                            random_state=services.settings.random_state,
                                            sample_weight=weights)
            methods.append({"id": rid, "name": stored[rid]["name"],
                            "method": stored[rid]["method"],
                            "net_benefit": result.candidate, "difference": result.difference,
                            "lower": result.lower, "upper": result.upper,
                            "changed": result.changed,
                            "difference_excludes_zero": _changes(result.lower, result.upper)})
        uncalibrated = (result.reference if result is not None else
                        decision_curve(labels, before, thresholds=cuts, positive_class=event,
                                       n_bootstrap=0, sample_weight=weights).model)
        prevalence = float(np.average(labels == event, weights=weights))
        return jsonable({**weighting(prediction_set, rows),
            "thresholds": cuts, "n": int(rows.sum()), "prevalence": prevalence,
            "positive_class": prediction_set.classes[event], "uncalibrated": uncalibrated,
            "treat_all": [prevalence - (1 - prevalence) * t / (1 - t) for t in cuts],
            "methods": methods, "n_bootstrap": n_bootstrap,
            "scheme": _scheme(prediction_set),
            "note": (f"held-out rows; difference = recalibrated - uncalibrated net benefit, "
                     f"paired {n_bootstrap}-resample bootstrap 95% interval; {THRESHOLD_NOTE}")})

    return dict(cached(services.store, key, compute))


def _changes(lower: np.ndarray, upper: np.ndarray) -> list[bool | None]:
    """Per threshold, whether the interval of the difference excludes 0 (None without
    one)."""
    return [None if np.isnan(low) else bool(low > 0 or high < 0)
            for low, high in zip(lower, upper, strict=True)]


def _scheme(prediction_set: PredictionSet) -> str:
    return ("the test rows of the split" if prediction_set.split is not None
            else "every row, each corrected by a model fitted without it (cross-fitting)")


__all__ = ["DEFAULT_BOOTSTRAP", "MAX_BOOTSTRAP", "RECALIBRATION_THRESHOLDS", "THRESHOLD_NOTE",
           "checked_thresholds", "decision_document", "decision_for", "parse_thresholds",
           "positive_index", "recalibration_net_benefit"]
