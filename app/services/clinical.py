"""The clinical calibration report of a stored dataset, cached per class and rows.

:func:`calibcore.clinical.clinical_calibration` gives O:E, calibration-in-the-large,
the calibration intercept and slope, Spiegelhalter's z, ICI/E50/E90/Emax, Hosmer-Lemeshow,
the flexible curve with its bands and the level of the calibration hierarchy, for
P(class) against the rest: class 1 of a binary file, any chosen class of more. The
report is quick enough (a second or two on 1.5M rows) to answer a plain GET.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from app.services.cache import cache_key, cached
from app.services.datasets import rows_caption, sample_note
from app.services.diagnostics import Subset, rows_for
from app.services.jsonable import jsonable
from app.services.shared import ServiceContext
from app.services.weighting import weighting
from calibcore.clinical import (
    HOSMER_LEMESHOW_CAVEAT,
    O_E_INTERVAL,
    UNWEIGHTED_CURVE_NOTE,
    ClinicalCalibration,
    Estimate,
    clinical_calibration,
)
from calibcore.data import PredictionSet
from calibcore.exceptions import CalibrationInputError

#: The quantities of the report that are a value (with an interval where one exists).
QUANTITIES = ("oe_ratio", "calibration_in_the_large", "calibration_intercept",
              "calibration_slope", "spiegelhalter_z", "spiegelhalter_p", "ici", "e50", "e90",
              "emax")
#: The quantities a weighted report weighs (the others: the lowess curve's, unweighted).
WEIGHTED_QUANTITIES = ("oe_ratio", "calibration_in_the_large", "calibration_intercept",
                       "calibration_slope", "spiegelhalter_z", "spiegelhalter_p",
                       "hosmer_lemeshow")
#: Bins of the histogram of predicted probabilities under the curve.
HISTOGRAM_BINS = 50
#: Classes of a multi-class file reported one against the rest in ``calibdash report``.
MAX_REPORT_CLASSES = 20
#: Bumped when the cached report changes shape (2: row weights).
_CACHE_VERSION = 2

#: How each quantity is computed, in one line each (the page, the HTML report, the docs).
CONVENTIONS = {
    "oe_ratio": f"observed / expected events, sum(y) / sum(p); 95% CI {O_E_INTERVAL}",
    "calibration_in_the_large": "a in logit P(y=1) = a + logit(p), slope fixed at 1 (logistic "
                                "regression with logit(p) as an offset); Wald 95% CI",
    "calibration_intercept": "a in logit P(y=1) = a + b·logit(p), a and b free (rms::val.prob's "
                             "Intercept); Wald 95% CI",
    "calibration_slope": "b in logit P(y=1) = a + b·logit(p) (rms::val.prob's Slope): below 1, "
                         "predictions too extreme; above 1, too moderate; Wald 95% CI",
    "spiegelhalter_z": "Spiegelhalter (1986): sum (y−p)(1−2p) / sqrt(sum (1−2p)² p(1−p)) "
                       "(rms::val.prob's S:z)",
    "spiegelhalter_p": "two-sided p-value of Spiegelhalter's z (rms::val.prob's S:p)",
    "ici": "mean |lowess(p) − p| over the rows (ICI, rms::val.prob's Eavg)",
    "e50": "median |lowess(p) − p| (Austin & Steyerberg 2019)",
    "e90": "90th percentile of |lowess(p) − p| (rms::val.prob's E90)",
    "emax": "largest |lowess(p) − p| over the rows (rms::val.prob's Emax)",
    "hosmer_lemeshow": "ten groups at the deciles of p, groups − 2 degrees of freedom; "
                       + HOSMER_LEMESHOW_CAVEAT,
    "curve": "Cleveland's lowess of y on p without robustness steps (R's lowess(p, y, "
             "iter = 0): span 2/3, fits 1% of the range of p apart); pointwise 95% band "
             "from the smoother's binomial variance; the moderate level is judged on the "
             "simultaneous 95% band",
}


def target_index(classes: list[str], target: str | None) -> int:
    """The index of class ``target`` (default: class 1 of two, the first of more)."""
    if target is None:
        return 1 if len(classes) == 2 else 0
    if target not in classes:
        raise CalibrationInputError(
            f"target {target!r} is not a class of this dataset; its classes are "
            f"{', '.join(classes[:20])}.", code="unknown_class")
    return classes.index(target)


def clinical_for(services: ServiceContext, dataset_id: str, *, target: str | None = None,
                 subset: Subset = "all") -> dict[str, Any]:
    """The clinical calibration report of P(``target``) on ``subset`` rows, cached."""
    record = services.datasets.record(dataset_id)
    meta = record.meta
    classes = [str(c) for c in meta["classes"]]
    index = target_index(classes, target)
    key = cache_key(dataset_id, "clinical", target=index, subset=subset,
                    random_state=services.settings.random_state, version=_CACHE_VERSION)

    def compute() -> dict[str, Any]:
        prediction_set = services.datasets.prediction_set(dataset_id)
        mask = rows_for(prediction_set, subset)
        labels, proba = prediction_set.y_true[mask], prediction_set.proba[mask]
        result = clinical_calibration(labels, proba, target=index,
                                      random_state=services.settings.random_state,
                                      sample_weight=prediction_set.weights_of(mask))
        note = sample_note(meta)
        return clinical_document(result, proba[:, index], classes=classes, index=index,
                                 extra={"dataset_id": dataset_id, "name": record.name,
                                        "subset": subset, "rows": rows_caption(meta),
                                        **weighting(prediction_set, mask)},
                                 notes=[note] if note else [])

    return dict(cached(services.store, key, compute))


def clinical_section(prediction_set: PredictionSet, *, random_state: int = 0,
                     max_classes: int = MAX_REPORT_CLASSES) -> dict[str, Any]:
    """The section of ``calibdash report``: the report of class 1 of a binary file, of
    each class against the rest (the first ``max_classes``) for more; a class whose rows
    hold only one outcome is listed in ``skipped`` with the reason."""
    classes = [str(c) for c in prediction_set.classes]
    targets = [1] if len(classes) == 2 else list(range(min(len(classes), max_classes)))
    problems, skipped = [], []
    for index in targets:
        try:
            result = clinical_calibration(prediction_set.y_true, prediction_set.proba,
                                          target=index, random_state=random_state,
                                          sample_weight=prediction_set.weights)
        except CalibrationInputError as exc:
            skipped.append({"target": classes[index], "reason": str(exc)})
            continue
        problems.append(clinical_document(result, prediction_set.proba[:, index],
                                          classes=classes, index=index,
                                          extra={"subset": "all"}))
    return {**weighting(prediction_set), "problems": problems, "skipped": skipped,
            "note": None if len(targets) == len(classes) or len(classes) == 2 else
            f"the first {max_classes} of {len(classes)} classes"}


def _estimate(estimate: Estimate) -> dict[str, float | None]:
    """``{"value"}``, with ``"lower"`` and ``"upper"`` where there is an interval."""
    if estimate.lower is None:
        return {"value": estimate.value}
    return {"value": estimate.value, "lower": estimate.lower, "upper": estimate.upper}


def clinical_document(result: ClinicalCalibration, probabilities: np.ndarray, *,
                      classes: list[str], index: int, extra: dict[str, Any] | None = None,
                      notes: list[str] | None = None) -> dict[str, Any]:
    """The JSON document of one report (the REST answer, the report's section)."""
    counts, edges = np.histogram(probabilities, bins=HISTOGRAM_BINS, range=(0.0, 1.0))
    curve = result.curve
    return jsonable({
        **(extra or {}), "classes": classes, "target": classes[index],
        "problem": (f"P({classes[index]})" if len(classes) == 2 else
                    f"P({classes[index]}) against the rest (one-vs-rest)"),
        "n": result.n, "n_events": result.n_events, "n_logistic": result.n_logistic,
        **{name: _estimate(getattr(result, name)) for name in QUANTITIES},
        "hosmer_lemeshow": result.hosmer_lemeshow,
        "curve": {"predicted": curve.predicted, "observed": curve.observed,
                  "lower": curve.lower, "upper": curve.upper,
                  "standard_error": curve.standard_error,
                  "simultaneous": curve.simultaneous,
                  "judged_range": list(curve.judged_range), "span": curve.span,
                  "delta": curve.delta,
                  "histogram": {"edges": edges, "counts": counts}},
        "levels": result.levels, "verdict": result.verdict,
        "notes": [*result.notes, *(notes or [])],
        "conventions": CONVENTIONS if not result.weighted else {
            key: (f"rows weighted as frequency weights (sums and likelihood of w·row): {text}"
                  if key in WEIGHTED_QUANTITIES else text)
            for key, text in CONVENTIONS.items()},
        **({} if not result.weighted else {
            "total_weight": result.total_weight, "events_weight": result.events_weight,
            "unweighted": list(result.unweighted), "unweighted_note": UNWEIGHTED_CURVE_NOTE})})


__all__ = [
    "CONVENTIONS",
    "MAX_REPORT_CLASSES",
    "QUANTITIES",
    "clinical_document",
    "clinical_for",
    "clinical_section",
    "target_index",
]
