"""The calibration of clinical risk predictions, as clinical prediction research reports it.

For P(y = 1) of a binary outcome (one class against the rest for more classes), on the
levels of the calibration hierarchy of Van Calster et al. (2016):

- **mean calibration**: the ratio of observed to expected events
  ``O:E = sum(y) / sum(p)``, with the interval ``exp(log(O/E) +- 1.96 sqrt(1/O))``
  (the Poisson approximation of the variance of ``log O``; Debray et al. 2017), and the
  calibration-in-the-large ``a`` of ``logit P(y = 1) = a + logit(p)`` (the logit as an
  offset; Van Calster et al. 2019), with its Wald interval;
- **weak calibration**: the calibration intercept and slope of
  ``logit P(y = 1) = a + b logit(p)``, both free (Cox 1958), with Wald intervals: R's
  ``rms::val.prob`` "Intercept" and "Slope";
- **moderate calibration**: the flexible calibration curve, Cleveland's lowess of y on p
  without robustness steps (R's ``lowess(p, y, iter = 0)``, span 2/3, ``delta`` 1% of the
  range of p) with a pointwise 95% band, and its absolute distance from the diagonal at
  every row: mean (ICI, "Eavg"), median (E50), 90th percentile (E90, numpy's and R's
  default quantile) and maximum (Emax), as ``rms::val.prob`` and Austin & Steyerberg
  (2019) compute them;

with Spiegelhalter's (1986) z test of ``sum (y - p)(1 - 2p)`` and the Hosmer-Lemeshow
(1980) statistic over ten groups at the deciles of p.

Rows whose p is exactly 0 or 1 have no logit: they are left out of the three logistic
fits (as ``rms::val.prob`` does, and counted in ``n_logistic``) and kept everywhere else.

**Row weights.** With ``sample_weight`` each row counts ``w_i`` times, as frequency
weights: O:E is ``sum w y / sum w p`` (and O in its interval ``sum w y``), the three
logistic fits maximise the weighted likelihood (statsmodels' ``GLM(..., freq_weights=w)``),
Spiegelhalter's z has weighted sums, and Hosmer-Lemeshow groups at the weighted deciles
with weighted events, summed p and sizes; integer weights give exactly what the rows
repeated by their weights give. Their intervals and p-values are those of the repeated
rows too, which overstates the precision of sampling or importance weights (whose
information is nearer Kish's n_eff rows). Lowess takes no weights (Cleveland 1979; R's
``lowess`` and statsmodels' neither), so the flexible curve, its bands, ICI/E50/E90/Emax
and the moderate level are computed on the rows unweighted (``unweighted`` names them).

**The band.** The curve is a linear smoother, ``c(x) = sum_j l_j(x) y_j``, so
``var c(x) = sum_j l_j(x)^2 var(y_j)``; with ``var(y_j) = c_j (1 - c_j)`` at the curve's
own values (binomial outcomes), the pointwise band is ``c(x) +- 1.96 sqrt(var c(x))``,
clipped to [0, 1]. It is computed at the anchors where lowess fits (the curve is the
line through them) and, like every smoother's band, it ignores the smoothing bias.
A pointwise band misses a true curve somewhere far more often than 5% of the time, so
the moderate level is judged on the simultaneous 95% band over the anchors between the
1st and 99th percentiles of p (the sup-t band, ``c(x) +- k sqrt(var c(x))`` with ``k``
the 95% quantile of the largest standardised deviation; Ruppert, Wand & Carroll 2003),
its ends resting on few rows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special, stats

from calibcore._validation import check_in_range, check_positive_int, check_predictions
from calibcore.clinical._band import anchor_covariance, simultaneous_critical_value
from calibcore.clinical._logistic import fit_recalibration
from calibcore.clinical._lowess import lowess_sorted
from calibcore.clinical.hosmer_lemeshow import HosmerLemeshow, grouped_on_sorted
from calibcore.data.weights import check_sample_weight, effective_sample_size
from calibcore.exceptions import CalibrationInputError

#: The normal quantile of two-sided 95% intervals.
Z95 = float(stats.norm.ppf(0.975))
#: R's lowess default: fits at points this fraction of the range of p apart.
DELTA_FRACTION = 0.01
#: The moderate level is judged on the band between these quantiles of p (the band's
#: ends rest on a few rows).
BAND_QUANTILES = (0.01, 0.99)
O_E_INTERVAL = ("exp(log(O/E) ± 1.96·sqrt(1/O)): the Poisson approximation of the "
                "variance of log O (Debray et al. 2017)")
#: The quantities of a weighted report computed on the rows unweighted (lowess takes no
#: weights).
UNWEIGHTED_QUANTITIES = ("curve", "ici", "e50", "e90", "emax")
#: What a weighted report says about them.
UNWEIGHTED_CURVE_NOTE = (
    "lowess takes no weights: the flexible curve, its bands, ICI, E50, E90, Emax and the "
    "moderate level are computed on the rows unweighted (each row once), so they describe "
    "the rows as sampled, not the weighted population")


@dataclass(frozen=True)
class Estimate:
    """A value with its 95% interval (``lower``/``upper`` None where there is none)."""

    value: float
    lower: float | None = None
    upper: float | None = None


@dataclass(frozen=True)
class FlexibleCurve:
    """The lowess calibration curve at its anchors, with its pointwise 95% band.

    Attributes
    ----------
    predicted : ndarray of shape (m,)
        The anchors' p, increasing; the curve is the line through them.
    observed : ndarray of shape (m,)
        The curve: the observed proportion at each anchor.
    lower, upper : ndarray of shape (m,)
        The pointwise 95% band.
    standard_error : ndarray of shape (m,)
        Of the curve at each anchor.
    simultaneous : float
        The multiplier of ``standard_error`` giving the simultaneous 95% band over the
        anchors between the 1st and 99th percentiles of p (the moderate level's test).
    judged_range : tuple of float
        The 1st and 99th percentiles of p.
    span, delta : float
        The lowess span and the distance between anchors it computes at.
    """

    predicted: NDArray[np.float64]
    observed: NDArray[np.float64]
    lower: NDArray[np.float64]
    upper: NDArray[np.float64]
    standard_error: NDArray[np.float64]
    simultaneous: float
    judged_range: tuple[float, float]
    span: float
    delta: float


@dataclass(frozen=True)
class Level:
    """One level of the calibration hierarchy: whether the data are consistent with it,
    and why, in words."""

    name: str
    met: bool
    reason: str


@dataclass(frozen=True)
class ClinicalCalibration:
    """The clinical calibration report of one binary problem.

    Attributes
    ----------
    target : str
        The event P(y = 1) predicts ("class 1", or a class against the rest).
    n, n_events, n_logistic : int
        Rows, events and the rows of the logistic fits (p strictly inside (0, 1)).
    oe_ratio, calibration_in_the_large, calibration_intercept, calibration_slope : Estimate
    spiegelhalter_z, spiegelhalter_p : Estimate
        No interval.
    ici, e50, e90, emax : Estimate
        Absolute differences between the curve and p over the rows; no interval.
    hosmer_lemeshow : HosmerLemeshow
    curve : FlexibleCurve
    levels : tuple of Level
        Mean, weak and moderate calibration (Van Calster et al. 2016).
    verdict : str
        The highest level the data are consistent with, and what fails above it.
    notes : tuple of str
    weighted : bool
        Whether row weights were given.
    total_weight, events_weight, n_eff : float or None
        With row weights: their sum, their sum over events and Kish's effective sample
        size; None without.
    unweighted : tuple of str
        With row weights, the quantities computed on the rows unweighted
        (:data:`UNWEIGHTED_QUANTITIES`); empty without.
    """

    target: str
    n: int
    n_events: int
    n_logistic: int
    oe_ratio: Estimate
    calibration_in_the_large: Estimate
    calibration_intercept: Estimate
    calibration_slope: Estimate
    spiegelhalter_z: Estimate
    spiegelhalter_p: Estimate
    ici: Estimate
    e50: Estimate
    e90: Estimate
    emax: Estimate
    hosmer_lemeshow: HosmerLemeshow
    curve: FlexibleCurve
    levels: tuple[Level, ...]
    verdict: str
    notes: tuple[str, ...] = ()
    weighted: bool = False
    total_weight: float | None = None
    events_weight: float | None = None
    n_eff: float | None = None
    unweighted: tuple[str, ...] = ()


def clinical_calibration(y_true: ArrayLike, y_prob: ArrayLike, *, target: int = 1,
                         span: float = 2 / 3, n_groups: int = 10,
                         random_state: int | None = 0,
                         sample_weight: ArrayLike | None = None) -> ClinicalCalibration:
    """The clinical calibration report of P(y = ``target``) against 1[y = ``target``].

    Parameters
    ----------
    y_true : array-like of shape (n,)
        Class indices 0..K-1.
    y_prob : array-like of shape (n,) or (n, K)
        P(class 1) of a binary problem, or one column per class.
    target : int, default=1
        The class whose probability is judged, against the rest (one-vs-rest for K > 2).
    span : float, default=2/3
        The lowess span f (R's default).
    n_groups : int, default=10
        Hosmer-Lemeshow risk groups at the quantiles of p.
    random_state : int or None, default=0
        Seeds the Gaussian draws of the simultaneous band's critical value.
    sample_weight : array-like of shape (n,), optional
        Non-negative frequency weights of the rows (module docstring, "Row weights"):
        O:E, the logistic fits, Spiegelhalter's z and Hosmer-Lemeshow are weighted; the
        lowess curve and its E-statistics are not (``unweighted``).

    Returns
    -------
    ClinicalCalibration

    Notes
    -----
    Definitions: module docstring; they reproduce R's ``rms::val.prob`` (intercept,
    slope, Spiegelhalter's z and p, Eavg, E90, Emax) and
    ``glm(y ~ 1, offset = qlogis(p), family = binomial)`` (calibration-in-the-large).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(0.05, 0.95, 2000)
    >>> y = (rng.random(2000) < p).astype(int)
    >>> report = clinical_calibration(y, p)
    >>> bool(report.calibration_slope.lower < 1 < report.calibration_slope.upper)
    True
    >>> [level.met for level in report.levels]
    [True, True, True]
    """
    labels, proba = check_predictions(y_true, y_prob)
    n_classes = proba.shape[1]
    target = check_positive_int(target, "target", minimum=0)
    if target >= n_classes:
        raise CalibrationInputError(f"target must be a class index below {n_classes}, "
                                    f"got {target}.", code="invalid_parameters")
    span = check_in_range(span, "span", low=0.0, high=1.0, inclusive=False)
    n_groups = check_positive_int(n_groups, "n_groups", minimum=3)
    weights = check_sample_weight(sample_weight, labels.size)
    p = proba[:, target]
    y = (labels == target).astype(np.float64)
    name = f"class {target}" if n_classes == 2 else f"class {target} against the rest"
    counted = slice(None) if weights is None else weights > 0
    if y[counted].min() == y[counted].max():
        raise CalibrationInputError(
            f"y_true has {'only' if y[counted][0] else 'no'} rows of {name}"
            f"{'' if weights is None else ' of positive weight'}: calibration needs both "
            "events and non-events.", code="single_class")
    if p.min() == p.max():
        raise CalibrationInputError(
            f"every row has the same probability of {name} ({p[0]:g}): a calibration curve "
            "needs at least two distinct probabilities.", code="constant_probability")
    return _report(y, p, name, span, n_groups, random_state, weights)


def _report(y: NDArray[np.float64], p: NDArray[np.float64], name: str, span: float,
            n_groups: int, random_state: int | None,
            weights: NDArray[np.float64] | None = None) -> ClinicalCalibration:
    inside = (p > 0.0) & (p < 1.0)
    logit = special.logit(p[inside])
    y_fit = y[inside]
    w_fit = None if weights is None else weights[inside]
    notes = []
    if not inside.all():
        notes.append(f"{int((~inside).sum()):,} rows with p exactly 0 or 1 (no logit) are "
                     "left out of the logistic fits (as rms::val.prob does)")
    if weights is not None:
        notes.append("rows weighted as frequency weights: O:E, calibration-in-the-large, "
                     "intercept, slope, Spiegelhalter's z and Hosmer-Lemeshow are those of "
                     "the rows repeated by their weights, intervals and p-values included "
                     "(for sampling weights they overstate the precision: read them beside "
                     f"Kish's n_eff = {effective_sample_size(weights):,.0f})")
        notes.append(UNWEIGHTED_CURVE_NOTE)
    large, large_covariance, ok_large = fit_recalibration(logit, y_fit, free_slope=False,
                                                          weight=w_fit)
    free, free_covariance, ok_free = fit_recalibration(logit, y_fit, free_slope=True,
                                                       start=float(large[0]) if ok_large else 0.0,
                                                       weight=w_fit)
    if not (ok_large and ok_free):
        notes.append("the logistic recalibration did not converge (the outcome is "
                     "separated by logit(p)): its intercept and slope are not estimable")
    citl = _wald(large[0], large_covariance[0, 0])
    intercept = _wald(free[0], free_covariance[0, 0])
    slope = _wald(free[1], free_covariance[1, 1])
    order = np.argsort(p, kind="stable")
    curve, distances = _flexible(p[order], y[order], span, random_state)
    z, z_p = _spiegelhalter(y, p, weights)
    levels = _levels(oe := _oe_ratio(y, p, weights), citl, intercept, slope, curve)
    if weights is not None:  # the moderate level reads the unweighted lowess curve
        moderate = levels[2]
        levels = (*levels[:2], Level(moderate.name, moderate.met,
                                     moderate.reason + " (rows unweighted: lowess takes no "
                                                       "weights)"))
    weighted = weights is not None
    return ClinicalCalibration(
        target=name, n=int(y.size), n_events=int(y.sum()), n_logistic=int(inside.sum()),
        oe_ratio=oe, calibration_in_the_large=citl, calibration_intercept=intercept,
        calibration_slope=slope, spiegelhalter_z=Estimate(z), spiegelhalter_p=Estimate(z_p),
        ici=Estimate(float(distances.mean())), e50=Estimate(float(np.median(distances))),
        e90=Estimate(float(np.quantile(distances, 0.9))),
        emax=Estimate(float(distances.max())),
        hosmer_lemeshow=grouped_on_sorted(y[order], p[order], n_groups,
                                          None if weights is None else weights[order]),
        curve=curve, levels=levels, verdict=_verdict(levels), notes=tuple(notes),
        weighted=weighted,
        total_weight=None if weights is None else float(weights.sum()),
        events_weight=None if weights is None else float(weights @ y),
        n_eff=None if weights is None else effective_sample_size(weights),
        unweighted=UNWEIGHTED_QUANTITIES if weighted else ())


def _wald(value: float, variance: float) -> Estimate:
    if not np.isfinite(variance):
        return Estimate(float("nan"))
    half = Z95 * float(np.sqrt(variance))
    return Estimate(float(value), float(value) - half, float(value) + half)


def _oe_ratio(y: NDArray[np.float64], p: NDArray[np.float64],
              weights: NDArray[np.float64] | None = None) -> Estimate:
    observed, expected = ((float(y.sum()), float(p.sum())) if weights is None
                          else (float(weights @ y), float(weights @ p)))
    ratio = observed / expected
    half = Z95 * np.sqrt(1.0 / observed)
    return Estimate(ratio, float(ratio * np.exp(-half)), float(ratio * np.exp(half)))


def _spiegelhalter(y: NDArray[np.float64], p: NDArray[np.float64],
                   weights: NDArray[np.float64] | None = None) -> tuple[float, float]:
    """Spiegelhalter's (1986) z: ``sum (y - p)(1 - 2p) / sqrt(sum (1 - 2p)^2 p (1 - p))``,
    two-sided p-value (``rms::val.prob``'s "S:z" and "S:p"); each sum weighted by
    ``weights`` when given."""
    lever = 1.0 - 2.0 * p
    row = np.ones(p.size) if weights is None else weights
    z = float((row * (y - p) * lever).sum()
              / np.sqrt((row * lever * lever * p * (1.0 - p)).sum()))
    return z, float(2.0 * stats.norm.sf(abs(z)))


def _flexible(p: NDArray[np.float64], y: NDArray[np.float64], span: float,
              random_state: int | None) -> tuple[FlexibleCurve, NDArray[np.float64]]:
    """The lowess curve (sorted p) with its bands, and |curve - p| at every row."""
    delta = DELTA_FRACTION * float(p[-1] - p[0])
    fit = lowess_sorted(p, y, span=span, delta=delta)
    # one anchor per distinct p (tied rows copy the anchor's fit)
    distinct = np.append(p[fit.anchors[1:]] != p[fit.anchors[:-1]], True)
    anchors, lines = fit.anchors[distinct], fit.lines[distinct]
    points, observed = p[anchors], fit.fitted[anchors]
    # c (1 - c) at the curve clipped to [0, 1]: 0 outside it (np.clip is slow on 1.5M rows)
    binomial = np.maximum(fit.fitted * (1.0 - fit.fitted), 0.0)
    covariance = anchor_covariance(p, binomial, lines, points)
    error = np.sqrt(np.maximum(np.diag(covariance), 0.0))
    low, high = np.quantile(p, BAND_QUANTILES)
    judged = np.flatnonzero((points >= low) & (points <= high) & (error > 0))
    critical = simultaneous_critical_value(covariance[np.ix_(judged, judged)], level=0.95,
                                           random_state=random_state)
    curve = FlexibleCurve(predicted=points, observed=observed,
                          lower=np.clip(observed - Z95 * error, 0.0, 1.0),
                          upper=np.clip(observed + Z95 * error, 0.0, 1.0),
                          standard_error=error, simultaneous=critical,
                          judged_range=(float(low), float(high)), span=span, delta=delta)
    return curve, np.abs(fit.fitted - p)


def _contains(estimate: Estimate, value: float) -> bool:
    return (estimate.lower is not None and estimate.upper is not None
            and estimate.lower <= value <= estimate.upper)


def _interval(estimate: Estimate) -> str:
    return (f"{estimate.value:.3f} (95% CI {estimate.lower:.3f} to {estimate.upper:.3f})"
            if estimate.lower is not None else "not estimable")


def _levels(oe: Estimate, citl: Estimate, intercept: Estimate, slope: Estimate,
            curve: FlexibleCurve) -> tuple[Level, ...]:
    """Van Calster et al.'s (2016) levels, each judged by its intervals: consistent with
    the data when the interval holds the perfect value."""
    mean_met = _contains(citl, 0.0) and _contains(oe, 1.0)
    direction = ("" if mean_met else " — predicted risks run " + (
        "low on average (under-prediction)" if citl.value > 0 else
        "high on average (over-prediction)"))
    mean = Level("mean", mean_met, f"calibration-in-the-large {_interval(citl)}, "
                                   f"{'contains' if _contains(citl, 0.0) else 'excludes'} 0; "
                                   f"O:E {_interval(oe)}, "
                                   f"{'contains' if _contains(oe, 1.0) else 'excludes'} 1"
                                   + direction)
    slope_met = _contains(slope, 1.0)
    weak_met = _contains(intercept, 0.0) and slope_met
    spread = "" if slope_met else (" — predictions too extreme (typical of overfitting)"
                                   if slope.value < 1 else " — predictions too moderate")
    weak = Level("weak", weak_met, f"calibration intercept {_interval(intercept)}, "
                                   f"{'contains' if _contains(intercept, 0.0) else 'excludes'}"
                                   f" 0; slope {_interval(slope)}, "
                                   f"{'contains' if slope_met else 'excludes'} 1" + spread)
    judged = np.isfinite(curve.simultaneous) & (curve.standard_error > 0)
    judged &= (curve.predicted >= curve.judged_range[0]) & (
        curve.predicted <= curve.judged_range[1])
    low, high = curve.judged_range
    half = curve.simultaneous * curve.standard_error
    outside = judged & (np.abs(curve.observed - curve.predicted) > half)
    moderate_met = not outside.any()
    where = "" if moderate_met else (
        f" — it misses the diagonal at p from {curve.predicted[outside].min():.3f} to "
        f"{curve.predicted[outside].max():.3f}")
    moderate = Level("moderate", moderate_met,
                     f"the flexible curve's simultaneous 95% band "
                     f"(±{curve.simultaneous:.2f} standard errors) "
                     f"{'covers' if moderate_met else 'does not cover'} the diagonal for p "
                     f"from {low:.3f} to {high:.3f} (1st to 99th percentile){where}")
    return mean, weak, moderate


def _verdict(levels: tuple[Level, ...]) -> str:
    """The highest level reached with every level below it, what fails, and a check that
    passes above a failed one (the hierarchy nests in theory; its tests need not agree)."""
    reached = None
    for level in levels:
        if not level.met:
            break
        reached = level.name
    failed = [level.name for level in levels if not level.met]
    above = [level.name for level in levels[levels.index(next(
        (level for level in levels if not level.met), levels[-1])):] if level.met]
    head = f"Consistent with {reached} calibration" if reached else "Not even mean calibration"
    if failed:
        head += f"; not with {' or '.join(failed)} calibration"
        if above:
            head += f" (the {' and '.join(above)} check passes on its own)"
        head += "."
    else:
        head += " (every level checked: mean, weak and moderate)."
    return (head + " Consistent means the 95% intervals hold the perfect values: no "
            "evidence against, not proof of; with many rows small departures are "
            "detected, with few large ones are missed (read the size in ICI and E90).")

__all__ = [
    "BAND_QUANTILES",
    "O_E_INTERVAL",
    "UNWEIGHTED_CURVE_NOTE",
    "UNWEIGHTED_QUANTITIES",
    "ClinicalCalibration",
    "Estimate",
    "FlexibleCurve",
    "Level",
    "clinical_calibration",
]
