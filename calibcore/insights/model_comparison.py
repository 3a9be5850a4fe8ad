"""Several models' probabilities of the same rows, compared.

Each model gets every global measure with its own 95% interval
(:func:`calibcore.metrics.global_measures`). Against a reference model, each
measure's difference (model - reference) gets a **paired** bootstrap: the rows are
shared, so one resample of the rows serves every model. Resample ``b`` draws the count
of each row (:func:`calibcore.metrics.resample_blocks`; above 20,000 rows an
m-out-of-n bootstrap of a seeded 20,000-row subsample, its spread scaled by sqrt(m/n)),
and every model's measures are computed on those counts; the difference's interval spans
the basic and percentile intervals (as the measures' own do, so it holds its estimate)
and its two-sided p-value is ``(1 + #{|d*_b - d| >= |d|}) / (1 + B)``, the bootstrap
test of "no difference" (the resampled differences shifted to the null).

With ``sample_weight`` every measure is that of the weighted rows (integer weights give
the repeated rows' values) and each drawn row of a resample carries its weight.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import ArrayLike, NDArray

from calibcore._validation import check_in_range, check_positive_int, check_predictions
from calibcore.data.views import View
from calibcore.data.weights import check_sample_weight, effective_sample_size
from calibcore.exceptions import CalibrationInputError
from calibcore.metrics._resampling import subsample_plan
from calibcore.metrics._weighted_measures import MeasureName, WeightedMeasures
from calibcore.metrics.uncertainty import MEASURES, GlobalMeasures, global_measures

#: The measures whose paired differences are computed (kCE and smCE would cost a
#: sort or a linear program per resample and model).
DIFFERENCES: tuple[MeasureName, ...] = ("accuracy", "nll", "brier", "ece", "smooth_ece")


@dataclass(frozen=True)
class Difference:
    """A measure of one model minus the reference's, with its paired bootstrap.

    Attributes
    ----------
    key, name : str
    value : float
        Plug-in difference (model - reference).
    low, high : float
        95% interval (the span of the basic and percentile paired-bootstrap intervals).
    p_value : float
        Two-sided bootstrap p-value of "no difference".
    """

    key: str
    name: str
    value: float
    low: float
    high: float
    p_value: float


@dataclass(frozen=True)
class ModelResult:
    """One model: its measures with intervals, and its differences to the reference
    (empty for the reference itself)."""

    name: str
    measures: GlobalMeasures
    differences: tuple[Difference, ...]


@dataclass(frozen=True)
class ModelComparison:
    """Every model on the same rows.

    Attributes
    ----------
    models : tuple of ModelResult
        In the order given.
    reference : str
    n : int
        Rows.
    n_bootstrap : int
    confidence_level : float
    view : str
        The view of the calibration measures.
    n_eff : float or None
        With row weights, Kish's effective sample size of the rows; None without.
    """

    models: tuple[ModelResult, ...]
    reference: str
    n: int
    n_bootstrap: int
    confidence_level: float
    view: View = "top_label"
    n_eff: float | None = None


def compare_models(
    y_true: ArrayLike,
    probabilities: Mapping[str, ArrayLike],
    *,
    reference: str | None = None,
    view: View = "top_label",
    n_bins: int = 15,
    n_bootstrap: int = 200,
    confidence_level: float = 0.95,
    random_state: int = 0,
    progress: Callable[[float], None] | None = None,
    sample_weight: ArrayLike | None = None,
) -> ModelComparison:
    """Every model's measures, and each one's paired differences to ``reference``.

    Parameters
    ----------
    y_true : array-like of shape (n,)
        Class indices.
    probabilities : mapping of str to array-like of shape (n,) or (n, K)
        Each model's probabilities of the same rows and classes.
    reference : str, optional
        The model the others are compared with (the first by default).
    view : {"top_label", "positive", "classwise"}, default="top_label"
        The view of the calibration measures (``"positive"``: P(class 1) against the
        frequency of class 1, binary only).
    n_bins, n_bootstrap, confidence_level, random_state
        As in :func:`calibcore.metrics.global_measures` (equal-width bins); the
        paired resamples use ``random_state`` too.
    progress : callable, optional
        Called with the fraction done.
    sample_weight : array-like of shape (n,), optional
        Non-negative row weights: each model's measures are weighted
        (:func:`calibcore.metrics.global_measures`) and the paired resamples draw rows
        carrying their weights.

    Returns
    -------
    ModelComparison
    """
    if len(probabilities) < 2:
        raise CalibrationInputError("give at least two models to compare.",
                                    code="invalid_parameters")
    names = list(probabilities)
    reference = names[0] if reference is None else reference
    if reference not in probabilities:
        raise CalibrationInputError(f"no model named {reference!r}; the models are "
                                    f"{', '.join(map(repr, names))}.", code="unknown_model")
    n_bins = check_positive_int(n_bins, "n_bins")
    n_bootstrap = check_positive_int(n_bootstrap, "n_bootstrap", minimum=0)
    level = check_in_range(confidence_level, "confidence_level", low=0, high=1,
                           inclusive=False)
    checked = {name: check_predictions(y_true, proba) for name, proba in probabilities.items()}
    labels = checked[names[0]][0]
    weights = check_sample_weight(sample_weight, labels.size)
    shapes = {proba.shape for _, proba in checked.values()}
    if len(shapes) != 1:
        raise CalibrationInputError("every model must give probabilities of the same rows "
                                    "and classes.", code="invalid_parameters")
    report = progress or (lambda fraction: None)
    finished = [0]

    def measure(name: str) -> GlobalMeasures:
        result = global_measures(labels, checked[name][1], view=view, n_bins=n_bins,
                                 n_bootstrap=n_bootstrap, confidence_level=level,
                                 random_state=random_state, interval="hybrid",
                                 sample_weight=weights)
        finished[0] += 1
        report(0.5 * finished[0] / len(names))
        return result

    with ThreadPoolExecutor(max_workers=2) as pool:  # numpy releases the GIL in the sums
        own = dict(zip(names, pool.map(measure, names), strict=True))
    present = {estimate.key for estimate in own[reference].measures}
    keys = [key for key in DIFFERENCES if key in present]
    deviations = _paired_resamples(labels, {name: proba for name, (_, proba) in checked.items()},
                                   keys, view, n_bins, n_bootstrap, random_state,
                                   lambda done: report(0.5 + 0.5 * done), weights)
    results = []
    for name in names:
        differences = () if name == reference else tuple(
            _difference(key, own[name][key].plug_in, own[reference][key].plug_in,
                        deviations[name][key] - deviations[reference][key], level)
            for key in keys)
        results.append(ModelResult(name, own[name], differences))
    return ModelComparison(tuple(results), reference, int(labels.size), n_bootstrap, level,
                           view, None if weights is None else effective_sample_size(weights))


def _paired_resamples(labels: NDArray[np.intp], probas: Mapping[str, NDArray[np.float64]],
                      keys: Sequence[MeasureName], view: View, n_bins: int, n_bootstrap: int,
                      random_state: int, progress: Callable[[float], None],
                      weights: NDArray[np.float64] | None = None
                      ) -> dict[str, dict[MeasureName, NDArray[np.float64]]]:
    """Each model's measures on the same B resamples of the rows, centred so that a
    model's resampled values spread around its own value on all rows.

    Up to 20,000 rows the rows are resampled; above, an m-out-of-n bootstrap of a seeded
    20,000-row subsample with the spread scaled by sqrt(m / n)
    (:func:`calibcore.metrics.subsample_plan`, as the recalibration comparison does).
    """
    plan = subsample_plan(labels.size, random_state)
    rows = np.arange(labels.size) if plan.groups is None else plan.groups
    if weights is not None:  # each drawn row carries its weight
        plan = replace(plan, unit_weights=weights[rows])
    weighted = {name: WeightedMeasures.of_rows(labels[rows], proba[rows], view,
                                               n_bins, "equal_width")
                for name, proba in probas.items()}
    ones = np.ones((1, rows.size)) if weights is None else weights[rows][None, :]
    centres = {name: measures.rows(keys, ones, True) for name, measures in weighted.items()}
    out: dict[str, dict[MeasureName, list[NDArray[np.float64]]]] = {
        name: {key: [] for key in keys} for name in weighted}
    done = 0
    for counts in plan.blocks(n_bootstrap, random_state):
        for name, measures in weighted.items():
            for key, values in measures.rows(keys, counts, True).items():
                if key in out[name]:
                    out[name][key].append(plan.scale * (values - centres[name][key][0]))
        done += counts.shape[0]
        progress(done / max(n_bootstrap, 1))
    return {name: {key: np.concatenate(parts) if parts else np.empty(0)
                   for key, parts in per_key.items()} for name, per_key in out.items()}


def _difference(key: MeasureName, value: float | None, reference: float | None,
                deviations: NDArray[np.float64], level: float) -> Difference:
    """The difference with its interval and p-value, from the resampled differences'
    deviations from their centre."""
    name = MEASURES[key].name
    if value is None or reference is None:
        nan = float("nan")
        return Difference(key, name, nan, nan, nan, nan)
    estimate = value - reference
    resampled = estimate + deviations
    if resampled.size == 0:
        return Difference(key, name, estimate, estimate, estimate, float("nan"))
    tail = (1.0 - level) / 2.0
    low_q, high_q = np.quantile(resampled, [tail, 1.0 - tail])
    low = min(low_q, 2 * estimate - high_q, estimate)
    high = max(high_q, 2 * estimate - low_q, estimate)
    extreme = np.abs(resampled - estimate) >= abs(estimate)
    p_value = (1.0 + float(extreme.sum())) / (1.0 + resampled.size)
    return Difference(key, name, estimate, float(low), float(high), min(p_value, 1.0))


__all__ = ["DIFFERENCES", "Difference", "ModelComparison", "ModelResult", "compare_models"]
