"""Global measures and reliability diagrams of a stored dataset."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from app.jobs import Progress
from app.services.cache import cache_key, cached
from app.services.cost import CostEstimate, cost_model
from app.services.datasets import EXTERNAL_REPORT, sample_note
from app.services.jsonable import jsonable
from app.services.shared import ServiceContext
from app.services.weighting import weighting
from calibcore import metrics
from calibcore.data import PredictionSet, View, default_view
from calibcore.exceptions import CalibrationInputError
from calibcore.metrics import (
    Binning,
    CalibrationTestResult,
    MeasureName,
    ViewedCalibrationTest,
    binned_reliability,
    calibration_tests_by_view,
    global_measures,
    smooth_reliability,
)

Subset = Literal["all", "calibration", "test"]

#: How the values and intervals of the measures table are made, in one line.
INTERVAL_NOTE = ("calibration errors are bias-corrected (2 x plug-in - mean of the bootstrap "
                 "resamples; the plug-in value, which sampling noise inflates, is shown beside); "
                 "their interval spans the basic and percentile bootstrap intervals; seeded")

#: The measures drawn beside the bin-sensitivity curve: they have no bins.
BIN_FREE: list[MeasureName] = ["smooth_ece", "smooth_calibration_error",
                               "interval_calibration_error"]

#: Bin counts of the bin-sensitivity curve.
BIN_COUNTS = (5, 8, 10, 12, 15, 20, 25, 30, 40, 50, 75, 100)

#: How captions name each view.
VIEW_NAMES = {"top_label": "top-label", "positive": "positive-class", "classwise": "classwise"}

#: Level of the calibration test's verdict.
TEST_LEVEL = 0.05

#: Bumped when the cached measures change shape (2: the calibration test; 3: checked in
#: a second view; 4: external datasets' positive view and test on every row; 5: row
#: weights).
_METRICS_CACHE_VERSION = 5
#: Bumped when the cached diagrams change (1: intervals moved onto an estimate past them;
#: 2: external datasets' positive view on every row; 3: row weights).
_RELIABILITY_CACHE_VERSION = 2


def dataset_view(services: ServiceContext, dataset_id: str, view: View | None) -> View:
    """``view``, or the dataset's default: the positive view for two classes (the top-label
    view folds a binary problem and can hide its miscalibration), top label for more."""
    if view is not None:
        return view
    return default_view(len(services.datasets.record(dataset_id).meta["classes"]))


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
                   subset: Subset = "all", n_bootstrap: int = 200,
                   random_state: int = 0,
                   progress: Callable[[float], None] | None = None) -> dict[str, Any]:
    """Every global measure of one view on one subset, with basic-bootstrap 95% intervals.

    ``metrics`` maps each measure to its plug-in value (the measure on the data, as
    :mod:`calibcore.metrics` and peers compute it); ``measures`` gives the value shown
    (bias-corrected for calibration errors, see :data:`INTERVAL_NOTE`) with its interval,
    the plug-in value, whether it is a consistent calibration measure (Błasiok et al. 2023), a
    one-line meaning and any note. ``calibration_test`` is the test of calibration
    (:func:`calibration_test`) with as many resamples as the bootstrap, or None when no
    resampling is asked for (``n_bootstrap=0``).
    """
    mask = rows_for(prediction_set, subset)
    labels, proba = prediction_set.y_true[mask], prediction_set.proba[mask]
    weights = prediction_set.weights_of(mask)
    result = global_measures(labels, proba, view=view, n_bins=n_bins, binning=binning,
                             n_bootstrap=n_bootstrap, random_state=random_state,
                             interval="hybrid", progress=progress, sample_weight=weights)
    test = (calibration_test(labels, proba, n_resamples=n_bootstrap,
                             random_state=random_state, sample_weight=weights)
            if n_bootstrap > 0 else None)
    return jsonable({**weighting(prediction_set, mask),
        "view": view, "subset": subset, "n": result.n, "n_classes": result.n_classes,
        "n_bins": n_bins, "binning": binning, "n_bootstrap": n_bootstrap,
        "confidence_level": result.confidence_level,
        "interval": INTERVAL_NOTE, "resampling": result.resampling,
        "metrics": {m.key: m.plug_in for m in result.measures if m.plug_in is not None},
        "measures": {m.key: {"name": m.name, "value": m.value, "low": m.low, "high": m.high,
                             "plug_in": m.plug_in, "consistent": m.consistent,
                             "meaning": m.meaning, "note": m.note} for m in result.measures},
        "calibration_test": test,
    })


def calibration_test(labels: NDArray[np.intp], proba: NDArray[np.float64], *,
                     n_resamples: int = 200, random_state: int = 0,
                     sample_weight: NDArray[np.float64] | None = None) -> dict[str, Any]:
    """The consistency-resampling test of calibration on kCE in the default view (positive
    for two classes, top label for more), checked in a second view
    (:func:`calibcore.metrics.calibration_tests_by_view`), as a JSON-able dict
    with the headline's verdict at :data:`TEST_LEVEL` and a one-line ``summary`` that
    says when the views disagree. The test does not depend on the view the measures
    are shown in: a verdict is never read from a folded view."""
    return calibration_test_document(calibration_tests_by_view(
        labels, proba, n_resamples=n_resamples, level=TEST_LEVEL, random_state=random_state,
        sample_weight=sample_weight))


def calibration_test_document(checked: ViewedCalibrationTest) -> dict[str, Any]:
    """A test of calibration checked in a second view, as a JSON-able dict: the
    headline's fields, its verdict at :data:`TEST_LEVEL`, a one-line ``summary`` that
    says when the views disagree, and the other views' tests."""
    headline = checked.headline
    summary = calibration_test_summary(headline)
    if checked.disagreement:
        summary += f". {checked.disagreement}"
    return jsonable({**asdict(headline), "level": TEST_LEVEL,
                     "rejected": headline.rejects(TEST_LEVEL),
                     "verdict": headline.verdict(TEST_LEVEL), "summary": summary,
                     "other_views": [_view_test(other) for other in checked.others],
                     "views_disagree": checked.disagreement is not None,
                     "disagreement": checked.disagreement,
                     "other_views_note": checked.note})


def _view_test(result: CalibrationTestResult) -> dict[str, Any]:
    return {"view": result.view, "statistic_name": result.statistic_name,
            "statistic": result.statistic, "p_value": result.p_value,
            "n_resamples": result.n_resamples, "rejected": result.rejects(TEST_LEVEL),
            "verdict": result.verdict(TEST_LEVEL),
            "summary": calibration_test_summary(result), "resampling": result.resampling,
            "description": result.description}


def calibration_test_summary(result: CalibrationTestResult) -> str:
    """'Calibration test (consistency resampling on kCE, 200 resamples, positive-class
    view): p = 0.003 — the probabilities are unlikely to be calibrated'."""
    p_value = (f"p ≤ {result.p_value:.3f} (no resample reached the observed value)"
               if result.smallest_p_value else f"p = {result.p_value:.3f}")
    return (f"Calibration test (consistency resampling on {result.statistic_name}, "
            f"{result.n_resamples} resamples, {VIEW_NAMES[result.view]} view): {p_value} — "
            f"{result.verdict(TEST_LEVEL)}")


def bin_sensitivity(prediction_set: PredictionSet, *, view: View = "top_label",
                    subset: Subset = "all", bin_counts: tuple[int, ...] = BIN_COUNTS,
                    bin_free: dict[str, Any] | None = None) -> dict[str, Any]:
    """Binned ECE for many bin counts beside the bin-free consistent measures.

    Shows users that binned ECE depends on an arbitrary choice while smooth ECE, smCE
    and intCE (Błasiok et al. 2023) do not. ``bin_free`` takes those values from a measures
    result of the same view and subset (:func:`global_metrics`) instead of computing
    them again.
    """
    mask = rows_for(prediction_set, subset)
    labels, proba = prediction_set.y_true[mask], prediction_set.proba[mask]
    weights = prediction_set.weights_of(mask)
    curves = {binning: metrics.ece_by_bin_count(labels, proba, bin_counts, binning=binning,
                                                view=view, sample_weight=weights).tolist()
              for binning in ("equal_width", "equal_mass")}
    if bin_free is None:
        fixed = global_measures(labels, proba, view=view, n_bootstrap=0, measures=BIN_FREE,
                                sample_weight=weights)
        bin_free = {m.key: {"name": m.name, "value": m.value} for m in fixed.measures
                    if m.value is not None}
    return jsonable({**weighting(prediction_set, mask),
        "view": view, "subset": subset, "n": int(mask.sum()), "n_bins": list(bin_counts),
        "ece": curves,
        "bin_free": {key: {"name": bin_free[key]["name"], "value": bin_free[key]["value"]}
                     for key in BIN_FREE if key in bin_free
                     and bin_free[key]["value"] is not None},
    })


def measure_values(labels: NDArray[np.intp], proba: NDArray[np.float64], *,
                   view: View = "top_label", n_bins: int = 15,
                   binning: Binning = "equal_width",
                   sample_weight: NDArray[np.float64] | None = None) -> dict[str, float]:
    """The global measures as plain numbers (view-dependent ones on ``view``; weighted
    by ``sample_weight`` when given)."""
    weights = sample_weight
    values = {
        "accuracy": metrics.accuracy(labels, proba, sample_weight=weights),
        "ece": metrics.expected_calibration_error(labels, proba, n_bins=n_bins,
                                                  binning=binning, view=view,
                                                  sample_weight=weights),
        "mce": metrics.maximum_calibration_error(labels, proba, n_bins=n_bins,
                                                 binning=binning, view=view,
                                                 sample_weight=weights),
        "classwise_ece": metrics.classwise_expected_calibration_error(
            labels, proba, n_bins=n_bins, binning=binning, sample_weight=weights),
        "brier": metrics.brier_score(labels, proba, sample_weight=weights),
        "nll": metrics.negative_log_likelihood(labels, proba, sample_weight=weights),
    }
    if proba.shape[1] == 2:
        values["binary_brier"] = metrics.binary_brier_score(labels, proba,
                                                            sample_weight=weights)
    return values


def reliability(prediction_set: PredictionSet, *, view: View = "top_label", n_bins: int = 15,
                binning: Binning = "equal_width", subset: Subset = "all",
                n_bootstrap: int = 200, random_state: int = 0) -> dict[str, Any]:
    """Binned diagrams (Wilson 95% interval per bin) and smooth diagrams (kernel-smoothed
    curve with a bootstrap 95% band and the density of predictions), one per problem."""
    mask = rows_for(prediction_set, subset)
    labels, proba = prediction_set.y_true[mask], prediction_set.proba[mask]
    weights = prediction_set.weights_of(mask)
    diagrams = binned_reliability(labels, proba, n_bins=n_bins, binning=binning, view=view,
                                  sample_weight=weights)
    smooth = smooth_reliability(labels, proba, view=view, n_bootstrap=n_bootstrap,
                                random_state=random_state, sample_weight=weights)
    if view == "classwise":
        names = [f"class {name}" for name in prediction_set.classes]
        diagrams = [replace(d, label=name) for d, name in zip(diagrams, names, strict=True)]
        smooth = [replace(d, label=name) for d, name in zip(smooth, names, strict=True)]
    return jsonable({"view": view, "subset": subset, "n": int(mask.sum()), "n_bins": n_bins,
                     "binning": binning, "diagrams": diagrams, "smooth": smooth,
                     **weighting(prediction_set, mask)})


@dataclass(frozen=True)
class MetricsRequest:
    """The parameters of a measures table (the cache key, with the seed)."""

    view: View = "top_label"
    n_bins: int = 15
    binning: Binning = "equal_width"
    subset: Subset = "all"
    n_bootstrap: int = 200


def _metrics_key(services: ServiceContext, dataset_id: str, request: MetricsRequest) -> str:
    return cache_key(dataset_id, "metrics", **asdict(request),
                     random_state=services.settings.random_state,
                     version=_METRICS_CACHE_VERSION)


def estimate_metrics(services: ServiceContext, dataset_id: str,
                     request: MetricsRequest) -> CostEstimate:
    """Seconds of the measures with bootstrap intervals, before starting: the rows, and
    the rows times the resamples, times the fitted ``metrics`` model; none when cached."""
    if services.store.has_document(_metrics_key(services, dataset_id, request)):
        return CostEstimate(0.0, "computed before with these settings: cached")
    prediction_set = services.datasets.prediction_set(dataset_id)
    n_rows = float(rows_for(prediction_set, request.subset).sum())
    terms = {"fixed": 1.0, "rows": n_rows,
             "bootstrap_rows": n_rows * request.n_bootstrap * prediction_set.n_classes}
    return cost_model("metrics").estimate(
        terms, f"{request.n_bootstrap} bootstrap resamples of {n_rows:,.0f} rows")


def metrics_for(services: ServiceContext, dataset_id: str, request: MetricsRequest,
                progress: Progress | None = None) -> dict[str, Any]:
    """:func:`global_metrics` of a stored dataset, cached per parameter set."""

    def report(done: float) -> None:
        if progress is not None:
            progress.update(done, f"bootstrap intervals: {done:.0%} of "
                                  f"{request.n_bootstrap} resamples")

    def compute() -> dict[str, Any]:
        exact = _external_metrics(services, dataset_id, request)
        if exact is not None and "calibration_test" in exact:  # every row's test
            return {"dataset_id": dataset_id, **exact}
        if exact is not None:  # no test of every row was stored: it runs on the sample
            prediction_set = services.datasets.prediction_set(dataset_id)
            mask = rows_for(prediction_set, request.subset)
            test = (calibration_test(prediction_set.y_true[mask], prediction_set.proba[mask],
                                     n_resamples=request.n_bootstrap,
                                     random_state=services.settings.random_state)
                    if request.n_bootstrap else None)
            note = sample_note(services.datasets.record(dataset_id).meta)
            if test is not None and note:
                test["summary"] += f" ({note})"
            return {"dataset_id": dataset_id, **exact, "calibration_test": test}
        prediction_set = services.datasets.prediction_set(dataset_id)
        return {"dataset_id": dataset_id,
                **global_metrics(prediction_set, **asdict(request),
                                 random_state=services.settings.random_state,
                                 progress=report), **_sampled(services, dataset_id)}

    return dict(cached(services.store, _metrics_key(services, dataset_id, request), compute))


def _sampled(services: ServiceContext, dataset_id: str) -> dict[str, str]:
    """``{"sample_note": ...}`` for a sampled external dataset, else nothing."""
    note = sample_note(services.datasets.record(dataset_id).meta)
    return {} if note is None else {"sample_note": note}


def _exact_report(services: ServiceContext, dataset_id: str,
                  request: MetricsRequest) -> dict[str, Any] | None:
    """The exact report of every row of an external dataset in ``request``'s view when
    it answers ``request`` (a view it holds: top label, and positive for two classes;
    equal-width bins, its bin count), else None; None for a weighted dataset (the Dask
    engine does not take weights yet: its measures are the weighted sample's)."""
    meta = services.datasets.record(dataset_id).meta
    if not meta.get("external") or meta.get("weighted"):
        return None
    report = services.datasets.document(dataset_id, EXTERNAL_REPORT)
    if report is None or (request.binning, request.n_bins) != ("equal_width",
                                                               report["n_bins"]):
        return None
    # a report stored before it held views is the top label's
    views = report.get("views") or {"top_label": report}
    if request.view not in views:
        return None
    return {**report, **views[request.view]}


def _external_metrics(services: ServiceContext, dataset_id: str,
                      request: MetricsRequest) -> dict[str, Any] | None:
    """The measures table of every row of an external dataset, from its exact report."""
    report = _exact_report(services, dataset_id, request)
    if report is None:
        return None
    result = report["metrics_by_subset"].get(request.subset)
    if result is None or result["n_bootstrap"] != request.n_bootstrap:
        return None
    fields = ("name", "value", "low", "high", "plug_in", "consistent", "meaning", "note")
    measures = {key: {field: item[field] for field in fields}
                for key, item in result["measures"].items()}
    return {"view": request.view, "subset": request.subset, "n": result["n"],
            "n_classes": len(report["classes"]), "n_bins": request.n_bins,
            "binning": "equal_width", "n_bootstrap": request.n_bootstrap,
            "confidence_level": 0.95, "interval": result["interval"],
            "resampling": result["resampling"],
            "metrics": {key: item["plug_in"] for key, item in measures.items()
                        if item["plug_in"] is not None},
            "measures": measures,
            "exact_note": f"every one of the {result['n']:,} rows ({result['note']})",
            # without a test of every row (none stored, or too many distinct scores to
            # gather) the test runs on the stored sample and says so
            **({"calibration_test": result["calibration_test"]}
               if result.get("calibration_test") is not None else {})}


def reliability_for(services: ServiceContext, dataset_id: str,
                    request: MetricsRequest) -> dict[str, Any]:
    """:func:`reliability` of a stored dataset, cached per parameter set."""
    key = cache_key(dataset_id, "reliability", **asdict(request),
                    random_state=services.settings.random_state,
                    version=_RELIABILITY_CACHE_VERSION)

    def compute() -> dict[str, Any]:
        prediction_set = services.datasets.prediction_set(dataset_id)
        result = {"dataset_id": dataset_id,
                  **reliability(prediction_set, **asdict(request),
                                random_state=services.settings.random_state),
                  **_sampled(services, dataset_id)}
        report = _exact_report(services, dataset_id, request)
        if report is not None and request.subset == "all":
            exact = report["reliability"]
            result.update(diagrams=exact["diagrams"], n_binned=report["n_rows"])
            if "smooth" in exact:
                result["smooth"] = exact["smooth"]
                result.pop("sample_note", None)
            sampled = result.get("sample_note")
            result["exact_note"] = (f"every one of the {report['n_rows']:,} rows: "
                                    + exact["note"] + (f"; smooth diagram {sampled}"
                                                       if sampled else ""))
        return result

    return dict(cached(services.store, key, compute))


def bin_sensitivity_for(services: ServiceContext, dataset_id: str, *, view: View, subset: Subset,
                        bin_free: dict[str, Any] | None = None) -> dict[str, Any]:
    """:func:`bin_sensitivity` of a stored dataset, cached per view and subset."""
    key = cache_key(dataset_id, "bins", view=view, subset=subset, version=1)  # 1: weights

    def compute() -> dict[str, Any]:
        prediction_set = services.datasets.prediction_set(dataset_id)
        return {"dataset_id": dataset_id,
                **bin_sensitivity(prediction_set, view=view, subset=subset,
                                  bin_free=bin_free)}

    return dict(cached(services.store, key, compute))


def cached_metrics(services: ServiceContext, dataset_id: str,
                   request: MetricsRequest) -> dict[str, Any] | None:
    """The cached result of :func:`metrics_for`, if it was computed before."""
    key = _metrics_key(services, dataset_id, request)
    return dict(services.store.read_document(key)) if services.store.has_document(key) else None
