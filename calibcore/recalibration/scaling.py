"""Parametric scaling: Platt scaling and temperature scaling."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray
from scipy.optimize import minimize, minimize_scalar
from scipy.special import expit, log_expit

from calibcore.recalibration._base import (
    Recalibrator,
    combine_one_vs_rest,
    log_probabilities,
    one_vs_rest_columns,
    register,
    softmax,
)

_LOGIT_FLOOR = 1e-12


def logit(p: NDArray[np.float64]) -> NDArray[np.float64]:
    """log(p / (1 - p)) with p clipped to [1e-12, 1 - 1e-12] so it stays finite."""
    clipped = np.clip(p, _LOGIT_FLOOR, 1.0 - _LOGIT_FLOOR)
    return np.log(clipped) - np.log1p(-clipped)


def platt_targets(is_positive: NDArray[np.bool_]) -> NDArray[np.float64]:
    """Platt's (1999) smoothed targets: (N+ + 1)/(N+ + 2) for positives, 1/(N- + 2) else."""
    n_pos = float(is_positive.sum())
    n_neg = float(is_positive.size - n_pos)
    return np.where(is_positive, (n_pos + 1.0) / (n_pos + 2.0), 1.0 / (n_neg + 2.0))


def fit_sigmoid(
    scores: NDArray[np.float64], targets: NDArray[np.float64]
) -> tuple[float, float]:
    """Slope and intercept of sigmoid(a * score + b) minimizing cross-entropy to ``targets``."""

    def loss_and_grad(params: NDArray[np.float64]) -> tuple[float, NDArray[np.float64]]:
        z = params[0] * scores + params[1]
        loss = -np.sum(targets * log_expit(z) + (1.0 - targets) * log_expit(-z))
        residual = expit(z) - targets
        return float(loss), np.array([np.dot(residual, scores), residual.sum()])

    result = minimize(loss_and_grad, x0=np.array([1.0, 0.0]), jac=True, method="L-BFGS-B")
    # L-BFGS-B stops at its default tolerances; Newton steps (the loss is convex in two
    # parameters, its Hessian is explicit) finish the job to machine precision.
    params = result.x
    loss, grad = loss_and_grad(params)
    for _ in range(50):
        fitted = expit(params[0] * scores + params[1])
        curvature = fitted * (1.0 - fitted)
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

    def _fit(
        self,
        proba: NDArray[np.float64],
        labels: NDArray[np.intp],
        features: NDArray[np.float64] | None,
    ) -> None:
        columns = one_vs_rest_columns(proba.shape[1])
        fits = [
            fit_sigmoid(logit(proba[:, k]), platt_targets(labels == k)) for k in columns
        ]
        self.slopes_ = np.array([a for a, _ in fits])
        self.intercepts_ = np.array([b for _, b in fits])

    def _predict(
        self, proba: NDArray[np.float64], features: NDArray[np.float64] | None
    ) -> NDArray[np.float64]:
        columns = one_vs_rest_columns(proba.shape[1])
        return combine_one_vs_rest(proba, list(
            expit(self.slopes_ * logit(proba[:, columns]) + self.intercepts_).T))


@register
class TemperatureScaling(Recalibrator):
    """Temperature scaling: softmax(log p / T) with one temperature T > 0.

    The log-probabilities act as logits (they differ from the logits by a
    per-row constant, which softmax ignores). T is fitted by minimizing the
    negative log-likelihood over log T in [-5, 5].

    Attributes
    ----------
    temperature_ : float
    """

    method = "temperature"
    display_name = "Temperature scaling"
    fitted_attributes = ("temperature_",)

    def _fit(
        self,
        proba: NDArray[np.float64],
        labels: NDArray[np.intp],
        features: NDArray[np.float64] | None,
    ) -> None:
        logits = log_probabilities(proba)
        rows = np.arange(labels.size)

        def nll(log_temperature: float) -> float:
            scaled = logits / np.exp(log_temperature)
            shifted = scaled - scaled.max(axis=1, keepdims=True)
            log_norm = np.log(np.exp(shifted).sum(axis=1))
            return float(np.mean(log_norm - shifted[rows, labels]))

        result = minimize_scalar(nll, bounds=(-5.0, 5.0), method="bounded",
                                 options={"xatol": 1e-8})
        self.temperature_ = float(np.exp(result.x))

    def _predict(
        self, proba: NDArray[np.float64], features: NDArray[np.float64] | None
    ) -> NDArray[np.float64]:
        return softmax(log_probabilities(proba) / self.temperature_)
