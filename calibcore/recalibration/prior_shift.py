"""Prior-shift correction: a model trained on a log that kept a fraction of its negatives.

A model fitted to data in which each negative was kept with probability ``r`` (negative
downsampling, common in ads, fraud and recommendation logs) estimates the class
probabilities of the downsampled population. By Bayes' rule the odds of the full
population are those odds times ``r`` (Elkan 2001, Theorem 2; Saerens, Latinne &
Decaestecker 2002, eq. 2.4 for any change of class priors)::

    p' = p / (p + (1 - p) / r),   i.e.   logit(p') = logit(p) + log(r).

For K classes the negative class's probability is divided by ``r`` and the row
renormalized, which is the same correction. With ``negative_rate`` given the correction
is known and nothing is learned from the calibration rows; left out, ``r`` is the
maximum-likelihood value on the calibration rows (an intercept on the negative class's
log-odds with slope fixed at 1: calibration-in-the-large, Van Calster et al. 2019).

References
----------
Elkan, C. (2001). The foundations of cost-sensitive learning. IJCAI.
Saerens, M., Latinne, P. and Decaestecker, C. (2002). Adjusting the outputs of a
classifier to new a priori probabilities: a simple procedure. Neural Computation 14(1).
"""

from __future__ import annotations

from math import isfinite

import numpy as np
from numpy.typing import NDArray
from scipy.optimize import minimize_scalar

from calibcore._progress import Heartbeat
from calibcore.exceptions import CalibrationInputError
from calibcore.recalibration._base import Recalibrator, register

__all__ = ["PriorShift", "shift_priors"]

#: Largest |log r| the fit searches: a rate from about 1e-13 to 1e13.
_MAX_LOG_RATE = 30.0
_FLOOR = 1e-300


def shift_priors(proba: NDArray[np.float64], rate: float,
                 negative_class: int = 0) -> NDArray[np.float64]:
    """Probabilities of a population whose class ``negative_class`` was kept at ``rate``.

    Examples
    --------
    >>> import numpy as np
    >>> shift_priors(np.array([[0.5, 0.5]]), 0.1)  # p / (p + (1 - p) / 0.1) = 1/11
    array([[0.90909091, 0.09090909]])
    """
    corrected = np.array(proba, dtype=np.float64, copy=True)
    corrected[:, negative_class] /= rate
    return corrected / corrected.sum(axis=1, keepdims=True)


@register
class PriorShift(Recalibrator):
    """The known correction of negative downsampling: p / (p + (1 - p) / r).

    Parameters
    ----------
    negative_rate : float, optional
        The fraction ``r`` of the negatives the model's training data kept (0.1: one in
        ten). Any positive number (above 1 for negatives that were oversampled). None:
        estimated from the calibration rows by maximum likelihood.
    negative_class : int, default 0
        The class index whose rows were downsampled (0 is the negative class of binary
        data).

    Attributes
    ----------
    rate_ : float
        The rate applied: ``negative_rate`` or its estimate.

    Examples
    --------
    >>> import numpy as np
    >>> from calibcore.recalibration import PriorShift
    >>> p = np.array([0.5, 0.9])
    >>> model = PriorShift(negative_rate=0.1).fit(p, np.array([0, 1]))
    >>> model.predict_proba(p)[:, 1].round(4)
    array([0.0909, 0.4737])
    """

    method = "prior_shift"
    display_name = "Prior shift (negative downsampling)"
    fitted_attributes = ("rate_",)
    supports_weights = True

    def __init__(self, negative_rate: float | None = None, negative_class: int = 0) -> None:
        self.negative_rate = negative_rate
        self.negative_class = negative_class

    def _check_class(self, n_classes: int) -> int:
        index = self.negative_class
        if isinstance(index, bool) or not isinstance(index, int | np.integer) or not (
                0 <= index < n_classes):
            raise CalibrationInputError(
                f"negative_class must be a class index from 0 to {n_classes - 1}; got "
                f"{index!r}.", code="invalid_parameters")
        return int(index)

    def _fit(
        self,
        proba: NDArray[np.float64],
        labels: NDArray[np.intp],
        features: NDArray[np.float64] | None,
        heartbeat: Heartbeat,
        weights: NDArray[np.float64] | None = None,
    ) -> None:
        negative = self._check_class(proba.shape[1])
        if self.negative_rate is not None:
            self.rate_ = _checked_rate(self.negative_rate, "negative_rate")
            return
        rows = np.ones(labels.size) if weights is None else weights
        logs = np.log(np.maximum(proba, _FLOOR))
        observed = logs[np.arange(labels.size), labels]
        is_negative = labels == negative

        def nll(log_rate: float) -> float:
            # class c's log-probability after the shift: log p_c - [c = negative] log r
            # minus the log of the row's normalizer; weighted mean over the rows
            shifted = logs.copy()
            shifted[:, negative] -= log_rate
            normalizer = np.logaddexp.reduce(shifted, axis=1)
            picked = observed - log_rate * is_negative
            return float(np.dot(rows, normalizer - picked) / rows.sum())

        # the negative log-likelihood is convex in log r (a multinomial logit with an
        # offset): a bounded scalar search finds its minimum
        result = minimize_scalar(nll, bounds=(-_MAX_LOG_RATE, _MAX_LOG_RATE), method="bounded",
                                 options={"xatol": 1e-10})
        self.rate_ = float(np.exp(_newton_polish(float(result.x), logs, is_negative, rows,
                                                 negative)))

    def _predict(
        self,
        proba: NDArray[np.float64],
        features: NDArray[np.float64] | None,
        heartbeat: Heartbeat,
    ) -> NDArray[np.float64]:
        # a stored document's state is checked here: it is never fitted
        rate = _checked_rate(self.rate_, "rate_")
        return shift_priors(proba, rate, self._check_class(proba.shape[1]))


def _newton_polish(log_rate: float, logs: NDArray[np.float64], is_negative: NDArray[np.bool_],
                   rows: NDArray[np.float64], negative: int) -> float:
    """Newton steps on log r from the bracketing search's answer, to machine precision:
    with q the shifted probability of the negative class, the gradient of the mean
    negative log-likelihood is mean(is_negative - q) and its curvature mean(q (1 - q))."""
    total = rows.sum()
    for _ in range(20):
        shifted = logs.copy()
        shifted[:, negative] -= log_rate
        q = np.exp(shifted[:, negative] - np.logaddexp.reduce(shifted, axis=1))
        curvature = float(np.dot(rows, q * (1.0 - q)) / total)
        if curvature <= 0.0:
            break
        step = float(np.dot(rows, is_negative - q) / total) / curvature
        log_rate = float(np.clip(log_rate - step, -_MAX_LOG_RATE, _MAX_LOG_RATE))
        if abs(step) < 1e-14:
            break
    return log_rate


def _checked_rate(value: object, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | np.number) or not (
            isfinite(float(value)) and float(value) > 0):
        raise CalibrationInputError(f"{name} must be a positive number (the fraction of "
                                    f"negatives kept, e.g. 0.1); got {value!r}.",
                                    code="invalid_parameters")
    return float(value)
