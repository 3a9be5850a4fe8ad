"""Global measures and reliability diagrams of a stored dataset."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, replace
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from app.jobs import Progress
from app.services.cache import cache_key, cached, settled
from app.services.cost import CostEstimate, cost_model
from app.services.datasets import EXTERNAL_REPORT, sample_note
from app.services.jsonable import jsonable
from app.services.shared import ServiceContext
from app.services.weighting import weighting
from calibcore import metrics
from calibcore.data import PredictionSet, View, default_view
from calibcore.exceptions import CalibrationInputError
from calibcore.metrics import (
    CUMULATIVE_STATISTICS,
    ROW_BOOTSTRAP_MAX_ROWS,
    Binning,
    CalibrationTestResult,
    GlobalMeasures,
    IntervalMethod,
    MeasureName,
    ViewedCalibrationTest,
    binned_reliability,
    calibration_and_cumulative_tests,
    global_measures,
    proportion_interval,
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

#: From this many rows the measures table runs its test of calibration on a second
#: thread, beside the measures (below, a thread costs more than it saves).
PARALLEL_TEST_MIN_ROWS = 100_000

#: Level of the calibration test's verdict.
TEST_LEVEL = 0.05

#: Bumped when the cached measures change shape (2: the calibration test; 3: checked in
#: a second view; 4: external datasets' positive view and test on every row; 5: row
#: weights; 6: no per-class intervals of intCE, kCE and smooth ECE above a budget in the
#: classwise view; 7: the KS and Kuiper tests beside the test of calibration).
_METRICS_CACHE_VERSION = 7
#: Bumped when the cached diagrams change (1: intervals moved onto an estimate past them;
#: 2: external datasets' positive view on every row; 3: row weights; 4: the interval
#: method, Wilson or Clopper-Pearson, in each diagram).
_RELIABILITY_CACHE_VERSION = 4


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


def subset_arrays(prediction_set: PredictionSet, subset: Subset
                  ) -> tuple[NDArray[np.bool_], NDArray[np.intp], NDArray[np.float64],
                             NDArray[np.float64] | None]:
    """The mask of ``subset`` (:func:`rows_for`) and its rows' labels, probabilities and
    weights. For all rows these are the prediction set's own arrays as read-only views,
    not copies (36 MiB per request at 1.5M binary rows, three requests per overview)."""
    mask = rows_for(prediction_set, subset)
    if subset != "all":
        return (mask, prediction_set.y_true[mask], prediction_set.proba[mask],
                prediction_set.weights_of(mask))
    labels, proba = prediction_set.y_true.view(), prediction_set.proba.view()
    weights = prediction_set.weights_of(None)
    weights = None if weights is None else weights.view()
    for array in (labels, proba, weights):
        if array is not None:
            array.flags.writeable = False
    return mask, labels, proba, weights


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
    mask, labels, proba, weights = subset_arrays(prediction_set, subset)

    def test_of_rows() -> dict[str, Any] | None:
        return (calibration_test(labels, proba, n_resamples=n_bootstrap,
                                 random_state=random_state, sample_weight=weights)
                if n_bootstrap > 0 else None)

    def measures() -> GlobalMeasures:
        return global_measures(labels, proba, view=view, n_bins=n_bins, binning=binning,
                               n_bootstrap=n_bootstrap, random_state=random_state,
                               interval="hybrid", progress=progress, sample_weight=weights)

    if n_bootstrap == 0 or labels.size < PARALLEL_TEST_MIN_ROWS:
        result, test = measures(), test_of_rows()
    else:
        # the test beside the measures, on a thread of its own: both spend their time in
        # NumPy, which lets the other run meanwhile (1.5M rows: the test is a sixth of
        # the measures' time, and the overview's other requests leave a core to it)
        with ThreadPoolExecutor(1, thread_name_prefix="calibration-test") as pool:
            testing = pool.submit(test_of_rows)
            try:
                result = measures()
            except BaseException:
                testing.cancel()
                raise
            test = testing.result()
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
    says when the views disagree; beside it (``cumulative``) the KS calibration error and
    the Kuiper statistic with their own p-values, in the positive and top-label views
    (:func:`calibcore.metrics.cumulative_tests_by_view`, same resamples). The test does
    not depend on the view the measures are shown in: a verdict is never read from a
    folded view. Each view's resamples are drawn once for kCE, KS and Kuiper
    (:func:`calibcore.metrics.calibration_and_cumulative_tests`)."""
    return calibration_test_document(*calibration_and_cumulative_tests(
        labels, proba, n_resamples=n_resamples, level=TEST_LEVEL, random_state=random_state,
        sample_weight=sample_weight))


def calibration_test_document(checked: ViewedCalibrationTest,
                              cumulative: tuple[CalibrationTestResult, ...] = ()
                              ) -> dict[str, Any]:
    """A test of calibration checked in a second view, as a JSON-able dict: the
    headline's fields, its verdict at :data:`TEST_LEVEL`, a one-line ``summary`` that
    says when the views disagree, and the other views' tests; ``cumulative`` are the KS
    and Kuiper tests shown beside it (each view's KS then Kuiper), with a one-line
    ``cumulative_summary``."""
    headline = checked.headline
    summary = calibration_test_summary(headline)
    if checked.disagreement:
        summary += f". {checked.disagreement}"
    keys = [CUMULATIVE_STATISTICS[number % len(CUMULATIVE_STATISTICS)]
            for number in range(len(cumulative))]
    return jsonable({**asdict(headline), "level": TEST_LEVEL,
                     "rejected": headline.rejects(TEST_LEVEL),
                     "verdict": headline.verdict(TEST_LEVEL), "summary": summary,
                     "other_views": [_view_test(other) for other in checked.others],
                     "views_disagree": checked.disagreement is not None,
                     "disagreement": checked.disagreement,
                     "other_views_note": checked.note,
                     "cumulative": [{**_view_test(result), "key": key,
                                     "null_quantile": result.null_quantile}
                                    for key, result in zip(keys, cumulative, strict=True)],
                     "cumulative_summary": cumulative_summary(cumulative)})


def _p_text(result: CalibrationTestResult) -> str:
    return (f"p ≤ {result.p_value:.3f}" if result.smallest_p_value
            else f"p = {result.p_value:.3f}")


def cumulative_summary(results: tuple[CalibrationTestResult, ...]) -> str | None:
    """'KS and Kuiper tests of the cumulative curve (Gupta et al. 2021; 200 resamples):
    positive-class view: KS 0.0718, p ≤ 0.005; Kuiper 0.0718, p ≤ 0.005. top-label
    view: ...', or None without results."""
    if not results:
        return None
    views = dict.fromkeys(result.view for result in results)
    parts = [f"{VIEW_NAMES[view]} view: " + "; ".join(
        f"{'KS' if result.statistic_name.startswith('KS') else 'Kuiper'} "
        f"{result.statistic:.4f}, {_p_text(result)}"
        for result in results if result.view == view) for view in views]
    return (f"KS and Kuiper tests of the cumulative curve (Gupta et al. 2021; "
            f"{results[0].n_resamples} resamples): " + ". ".join(parts))


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
    p_value = (f"{_p_text(result)} (no resample reached the observed value)"
               if result.smallest_p_value else _p_text(result))
    return (f"Calibration test (consistency resampling on {result.statistic_name}, "
            f"{result.n_resamples} resamples, {VIEW_NAMES[result.view]} view): {p_value} — "
            f"{result.verdict(TEST_LEVEL)}")


def bin_sensitivity(prediction_set: PredictionSet, *, view: View = "top_label",
                    subset: Subset = "all", bin_counts: tuple[int, ...] = BIN_COUNTS,
                    bin_free: dict[str, Any] | Callable[[], dict[str, Any] | None] | None = None,
                    ) -> dict[str, Any]:
    """Binned ECE for many bin counts beside the bin-free consistent measures.

    Shows users that binned ECE depends on an arbitrary choice while smooth ECE, smCE
    and intCE (Błasiok et al. 2023) do not. ``bin_free`` takes those values from a measures
    result of the same view and subset (:func:`global_metrics`) instead of computing
    them again; a callable is asked for them after the curves are computed (None: compute
    them here).
    """
    mask, labels, proba, weights = subset_arrays(prediction_set, subset)
    # both binnings from one validation and one sort of the scores
    curves = {binning: curve.tolist() for binning, curve in metrics.ece_by_bin_count_per_binning(
        labels, proba, bin_counts, binnings=("equal_width", "equal_mass"), view=view,
        sample_weight=weights).items()}
    if callable(bin_free):
        bin_free = bin_free()
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
                n_bootstrap: int = 200, random_state: int = 0,
                interval: IntervalMethod = "wilson") -> dict[str, Any]:
    """Binned diagrams (a 95% interval per bin: Wilson's, or Clopper-Pearson's exact one)
    and smooth diagrams (kernel-smoothed curve with a bootstrap 95% band and the density
    of predictions), one per problem."""
    mask, labels, proba, weights = subset_arrays(prediction_set, subset)
    diagrams = binned_reliability(labels, proba, n_bins=n_bins, binning=binning, view=view,
                                  interval=interval, sample_weight=weights)
    smooth = smooth_reliability(labels, proba, view=view, n_bootstrap=n_bootstrap,
                                random_state=random_state, sample_weight=weights)
    if view == "classwise":
        names = [f"class {name}" for name in prediction_set.classes]
        diagrams = [replace(d, label=name) for d, name in zip(diagrams, names, strict=True)]
        smooth = [replace(d, label=name) for d, name in zip(smooth, names, strict=True)]
    return jsonable({"view": view, "subset": subset, "n": int(mask.sum()), "n_bins": n_bins,
                     "binning": binning, "interval": interval, "diagrams": diagrams,
                     "smooth": smooth, **weighting(prediction_set, mask)})


def diagram_with_interval(diagram: dict[str, Any], interval: IntervalMethod) -> dict[str, Any]:
    """A binned diagram's JSON (e.g. an external dataset's exact one, made with Wilson's
    intervals) with its per-bin intervals made by ``interval`` from its counts (or Kish
    sizes) and observed rates, as :func:`calibcore.metrics.with_interval` does."""
    sizes = np.asarray(diagram["n_eff"] if diagram.get("n_eff") is not None
                       else diagram["count"], dtype=np.float64)
    observed = np.array([np.nan if v is None else v for v in diagram["observed"]])
    filled = np.isfinite(observed) & (sizes > 0)
    low, high = np.full(sizes.size, np.nan), np.full(sizes.size, np.nan)
    if filled.any():
        low[filled], high[filled] = proportion_interval(
            (observed * sizes)[filled], sizes[filled],
            confidence_level=diagram.get("confidence_level", 0.95), method=interval)
    return dict(jsonable({**diagram, "observed_low": low, "observed_high": high,
                          "interval": interval}))



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
    the rows resampled times the resamples, times the fitted ``metrics`` model; none when
    cached. Above ``ROW_BOOTSTRAP_MAX_ROWS`` rows the resamples are drawn on a summary of
    bounded size, so only that many rows count as resampled."""
    if services.store.has_document(_metrics_key(services, dataset_id, request)):
        return CostEstimate(0.0, "computed before with these settings: cached")
    prediction_set = services.datasets.prediction_set(dataset_id)
    n_rows = float(rows_for(prediction_set, request.subset).sum())
    terms = {"fixed": 1.0, "rows": n_rows,
             "bootstrap_rows": min(n_rows, ROW_BOOTSTRAP_MAX_ROWS) * request.n_bootstrap
             * prediction_set.n_classes}
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
    equal-width bins, its bin count), else None; None for a weighted dataset whose report
    was stored unweighted (before the Dask engine took weights: the weighted sample's
    measures are then shown)."""
    meta = services.datasets.record(dataset_id).meta
    if not meta.get("external"):
        return None
    report = services.datasets.document(dataset_id, EXTERNAL_REPORT)
    if report is None or (request.binning, request.n_bins) != ("equal_width",
                                                               report["n_bins"]):
        return None
    if bool(meta.get("weighted")) != bool(report.get("weighted")):
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
    return {**_weights_of(result), "view": request.view, "subset": request.subset,
            "n": result["n"], "n_classes": len(report["classes"]), "n_bins": request.n_bins,
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


def _weights_of(section: dict[str, Any]) -> dict[str, Any]:
    """The weighting fields (``weighted``, ``n_eff``, ``weights_note``) of a section of an
    exact report (a report stored before it held them: none)."""
    return {key: section[key] for key in ("weighted", "n_eff", "weights_note")
            if key in section}


def reliability_for(services: ServiceContext, dataset_id: str, request: MetricsRequest,
                    interval: IntervalMethod = "wilson") -> dict[str, Any]:
    """:func:`reliability` of a stored dataset, cached per parameter set and per-bin
    interval (Wilson or Clopper-Pearson)."""
    key = cache_key(dataset_id, "reliability", **asdict(request), interval=interval,
                    random_state=services.settings.random_state,
                    version=_RELIABILITY_CACHE_VERSION)

    def compute() -> dict[str, Any]:
        prediction_set = services.datasets.prediction_set(dataset_id)
        result = {"dataset_id": dataset_id,
                  **reliability(prediction_set, **asdict(request), interval=interval,
                                random_state=services.settings.random_state),
                  **_sampled(services, dataset_id)}
        report = _exact_report(services, dataset_id, request)
        if report is not None and request.subset == "all":
            exact = report["reliability"]
            result.update(diagrams=[diagram_with_interval(diagram, interval)
                                    for diagram in exact["diagrams"]],
                          n_binned=report["n_rows"], **_weights_of(exact))
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
        # the bin-free values are looked for once the curves are done: the overview asks
        # for the measures at the same time, and their computation is then under way
        return {"dataset_id": dataset_id,
                **bin_sensitivity(prediction_set, view=view, subset=subset,
                                  bin_free=bin_free or (lambda: _cached_bin_free(
                                      services, dataset_id, view, subset)))}

    return dict(cached(services.store, key, compute))


def _cached_bin_free(services: ServiceContext, dataset_id: str, view: View,
                     subset: Subset) -> dict[str, Any] | None:
    """The bin-free measures' plug-in values from a measures table of the same rows and
    view computed before or being computed (the overview asks for it at the same time:
    waiting for it leaves both cores to it instead of computing the same values twice),
    else None: they do not depend on the bins or the resamples, and with many classes
    each is a solve per class. An external dataset's table (every row, where the
    diagram has a sample) is not used."""
    for n_bootstrap in (MetricsRequest.n_bootstrap, 0):
        result = cached_metrics(services, dataset_id, MetricsRequest(
            view=view, subset=subset, n_bootstrap=n_bootstrap), wait=True)
        if result is not None and "exact_note" not in result:
            return {key: {"name": item["name"], "value": item["plug_in"]}
                    for key, item in result["measures"].items()}
    return None


def cached_metrics(services: ServiceContext, dataset_id: str,
                   request: MetricsRequest, *, wait: bool = False) -> dict[str, Any] | None:
    """The cached result of :func:`metrics_for`, if it was computed before (or, with
    ``wait``, once a computation of it under way ends)."""
    key = _metrics_key(services, dataset_id, request)
    if wait:
        result = settled(services.store, key)
        return None if result is None else dict(result)
    return dict(services.store.read_document(key)) if services.store.has_document(key) else None
