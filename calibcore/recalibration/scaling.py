"""Parametric scaling: Platt scaling and temperature scaling."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray
from scipy.optimize import minimize, minimize_scalar
from scipy.special import expit, log_expit

from calibcore._progress import Heartbeat
from calibcore.recalibration._base import (
    Recalibrator,
    combine_one_vs_rest,
    log_probabilities,
    one_vs_rest_columns,
    register,
    softmax,
)

__all__ = [
    "PlattScaling",
    "TemperatureScaling",
    "fit_sigmoid",
    "fit_temperature",
    "logit",
    "platt_targets",
]

_LOGIT_FLOOR = 1e-12


def logit(p: NDArray[np.float64]) -> NDArray[np.float64]:
    """log(p / (1 - p)) with p clipped to [1e-12, 1 - 1e-12] so it stays finite."""
    clipped = np.clip(p, _LOGIT_FLOOR, 1.0 - _LOGIT_FLOOR)
    return np.log(clipped) - np.log1p(-clipped)


def platt_targets(is_positive: NDArray[np.bool_],
                  weights: NDArray[np.float64] | None = None) -> NDArray[np.float64]:
    """Platt's (1999) smoothed targets: (N+ + 1)/(N+ + 2) for positives, 1/(N- + 2) else,
    N+ and N- being the total weights of the positives and negatives with row ``weights``."""
    if weights is None:
        n_pos = float(is_positive.sum())
        n_neg = float(is_positive.size - n_pos)
    else:
        n_pos = float(weights[is_positive].sum())
        n_neg = float(weights.sum()) - n_pos
    return np.where(is_positive, (n_pos + 1.0) / (n_pos + 2.0), 1.0 / (n_neg + 2.0))


def fit_sigmoid(
    scores: NDArray[np.float64], targets: NDArray[np.float64],
    weights: NDArray[np.float64] | None = None,
) -> tuple[float, float]:
    """Slope and intercept of sigmoid(a * score + b) minimizing cross-entropy to ``targets``
    (each row's term times its weight, with row ``weights``)."""
    rows = np.ones(scores.size) if weights is None else weights

    def loss_and_grad(params: NDArray[np.float64]) -> tuple[float, NDArray[np.float64]]:
        z = params[0] * scores + params[1]
        loss = -np.dot(rows, targets * log_expit(z) + (1.0 - targets) * log_expit(-z))
        residual = rows * (expit(z) - targets)
        return float(loss), np.array([np.dot(residual, scores), residual.sum()])

    result = minimize(loss_and_grad, x0=np.array([1.0, 0.0]), jac=True, method="L-BFGS-B")
    # L-BFGS-B stops at its default tolerances; Newton steps (the loss is convex in two
    # parameters, its Hessian is explicit) finish the job to machine precision.
    params = result.x
    loss, grad = loss_and_grad(params)
    for _ in range(50):
        fitted = expit(params[0] * scores + params[1])
        curvature = rows * fitted * (1.0 - fitted)
        hessian = np.array([[np.dot(curvature, scores * scores), np.dot(curvature, scores)],
                            [np.dot(curvature, scores), curvature.sum()]])
        try:
            step = np.linalg.solve(hessian, grad)
        except np.linalg.LinAlgError:
            break
        shrink = 1.0
        while shrink > 1e-6:
            trial = params - shrink * step
            trial_loss, trial_grad = loss_and_grad(trial)
            if trial_loss <= loss:
                break
            shrink /= 2.0
        else:
            break
        converged = loss - trial_loss <= 1e-15 * max(1.0, abs(loss))
        params, loss, grad = trial, trial_loss, trial_grad
        if converged:
            break
    return float(params[0]), float(params[1])


@register
class PlattScaling(Recalibrator):
    """Platt scaling: a sigmoid of the logit of each class probability.

    Binary problems fit one sigmoid to logit P(class 1); multiclass problems
    fit one per class (one-vs-rest) and renormalize rows. Targets are Platt's
    smoothed targets, which keep the fit away from 0/1 on separable data.

    Attributes
    ----------
    slopes_, intercepts_ : ndarray of shape (m,)
        One sigmoid per fitted problem (m = 1 for binary, K otherwise).
    """

    method = "platt"
    display_name = "Platt scaling"
    fitted_attributes = ("slopes_", "intercepts_")
    supports_weights = True

    def _fit(
        self,
        proba: NDArray[np.float64],
        labels: NDArray[np.intp],
        features: NDArray[np.float64] | None,
        heartbeat: Heartbeat,
        weights: NDArray[np.float64] | None = None,
    ) -> None:
        columns = one_vs_rest_columns(proba.shape[1])
        fits = [
            fit_sigmoid(logit(proba[:, k]), platt_targets(labels == k, weights), weights)
            for k in columns
        ]
        self.slopes_ = np.array([a for a, _ in fits])
        self.intercepts_ = np.array([b for _, b in fits])

    def _predict(
        self,
        proba: NDArray[np.float64],
        features: NDArray[np.float64] | None,
        heartbeat: Heartbeat,
    ) -> NDArray[np.float64]:
        columns = one_vs_rest_columns(proba.shape[1])
        return combine_one_vs_rest(proba, list(
            expit(self.slopes_ * logit(proba[:, columns]) + self.intercepts_).T))


#: Temperatures are searched in [exp(-5), exp(5)].
_LOG_TEMPERATURE_BOUND = 5.0


def fit_temperature(logits: NDArray[np.float64], labels: NDArray[np.intp],
                    weights: NDArray[np.float64] | None = None) -> float:
    """The temperature T minimizing the mean NLL of softmax(logits / T) (the weighted mean
    with row ``weights``).

    The NLL is convex in the inverse temperature beta = 1 / T, with derivative
    mean(E_p[l] - l_y) and second derivative mean(Var_p(l)) under p = softmax(beta l):
    Newton steps on beta (halved while they do not decrease the NLL) need one softmax
    pass each and converge in a handful, where a bracketing search needs dozens. A flat
    NLL (no curvature: every row's logits equal) falls back to the bounded search.
    """
    shares = None if weights is None else weights / weights.sum()
    state = (_binary_state(logits, labels, shares) if logits.shape[1] == 2
             else _multiclass_state(logits, labels, shares))
    low, high = np.exp(-_LOG_TEMPERATURE_BOUND), np.exp(_LOG_TEMPERATURE_BOUND)
    beta = 1.0
    loss, gradient, curvature = state(beta)
    for _ in range(100):
        if curvature <= 1e-300:
            break
        step, improved = gradient / curvature, False
        while abs(step) > 1e-15 * beta:
            trial = float(np.clip(beta - step, low, high))
            trial_loss, trial_gradient, trial_curvature = state(trial)
            if trial_loss <= loss:
                improved = True
                break
            step /= 2.0
        if not improved:
            break
        done = abs(trial - beta) <= 1e-12 * beta
        beta, loss, gradient, curvature = trial, trial_loss, trial_gradient, trial_curvature
        if done:
            break
    if curvature <= 1e-300:
        def nll(log_temperature: float) -> float:
            return state(float(np.exp(-log_temperature)))[0]

        result = minimize_scalar(nll, bounds=(-_LOG_TEMPERATURE_BOUND, _LOG_TEMPERATURE_BOUND),
                                 method="bounded", options={"xatol": 1e-8})
        return float(np.exp(result.x))
    return 1.0 / beta


#: ``state(beta) -> (mean NLL, its derivative, its second derivative)`` at beta = 1 / T.
_NllState = Callable[[float], tuple[float, float, float]]


def _multiclass_state(logits: NDArray[np.float64], labels: NDArray[np.intp],
                      shares: NDArray[np.float64] | None = None) -> _NllState:
    """Softmax moments of the logits under p = softmax(beta l), one pass per state (means
    weighted by ``shares``, row weights summing to one, when given)."""

    def mean_of(values: NDArray[np.float64]) -> float:
        return float(np.mean(values) if shares is None else np.dot(shares, values))

    true_logit = logits[np.arange(labels.size), labels]
    squared = logits * logits

    def state(beta: float) -> tuple[float, float, float]:
        scaled = beta * logits
        peak = scaled.max(axis=1, keepdims=True)
        weights = np.exp(scaled - peak)
        norm = weights.sum(axis=1)
        loss = mean_of(np.log(norm) + peak[:, 0] - beta * true_logit)
        weights /= norm[:, None]
        mean = np.einsum("ij,ij->i", weights, logits)
        second = np.einsum("ij,ij->i", weights, squared)
        return loss, mean_of(mean - true_logit), mean_of(second - mean * mean)

    return state


def _binary_state(logits: NDArray[np.float64], labels: NDArray[np.intp],
                  shares: NDArray[np.float64] | None = None) -> _NllState:
    """The two-class case on one margin per row, ``m = l_y - l_other``: NLL log(1 + e^(-beta m)),
    derivative -m sigma(-beta m), second derivative m^2 sigma(beta m) sigma(-beta m). Same
    values as the general case, in a third of its passes over the rows."""
    margin = logits[:, 1] - logits[:, 0]
    margin = np.where(labels == 1, margin, -margin)
    margin_squared = margin * margin
    if shares is not None:  # weighted means: every sum over rows weighted by its share
        return _weighted_binary_state(margin, shares)

    def state(beta: float) -> tuple[float, float, float]:
        # One exp for both: with e = exp(-|s|), log(1 + e^-s) = log1p(e) + max(-s, 0) and
        # sigma(-s) = (e if s >= 0 else 1) / (1 + e); half the time of logaddexp + expit.
        scaled = beta * margin
        small = np.exp(-np.abs(scaled))
        loss = (float(np.sum(np.log1p(small))) + float(np.sum(np.maximum(-scaled, 0.0)))
                ) / margin.size
        wrong = np.where(scaled >= 0.0, small, 1.0)
        wrong /= small + 1.0
        gradient = -float(np.dot(margin, wrong)) / margin.size
        curvature = float(np.dot(margin_squared, wrong * (1.0 - wrong))) / margin.size
        return loss, gradient, curvature

    return state


def _weighted_binary_state(margin: NDArray[np.float64],
                           shares: NDArray[np.float64]) -> _NllState:
    """:func:`_binary_state` with means weighted by ``shares`` (summing to one)."""
    margin_squared = margin * margin

    def state(beta: float) -> tuple[float, float, float]:
        scaled = beta * margin
        small = np.exp(-np.abs(scaled))
        loss = float(np.dot(shares, np.log1p(small) + np.maximum(-scaled, 0.0)))
        wrong = np.where(scaled >= 0.0, small, 1.0)
        wrong /= small + 1.0
        gradient = -float(np.dot(shares * margin, wrong))
        curvature = float(np.dot(shares * margin_squared, wrong * (1.0 - wrong)))
        return loss, gradient, curvature

    return state


@register
class TemperatureScaling(Recalibrator):
    """Temperature scaling: softmax(log p / T) with one temperature T > 0.

    The log-probabilities act as logits (they differ from the logits by a
    per-row constant, which softmax ignores). T is fitted by minimizing the
    negative log-likelihood over T in [exp(-5), exp(5)] (:func:`fit_temperature`).

    Attributes
    ----------
    temperature_ : float
    """

    method = "temperature"
    display_name = "Temperature scaling"
    fitted_attributes = ("temperature_",)
    supports_weights = True

    def _fit(
        self,
        proba: NDArray[np.float64],
        labels: NDArray[np.intp],
        features: NDArray[np.float64] | None,
        heartbeat: Heartbeat,
        weights: NDArray[np.float64] | None = None,
    ) -> None:
        self.temperature_ = fit_temperature(log_probabilities(proba), labels, weights)

    def _predict(
        self,
        proba: NDArray[np.float64],
        features: NDArray[np.float64] | None,
        heartbeat: Heartbeat,
    ) -> NDArray[np.float64]:
        return softmax(log_probabilities(proba) / self.temperature_)
