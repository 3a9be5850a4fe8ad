"""Beta calibration and Dirichlet calibration (with ODIR regularization).

References
----------
Kull, M., Silva Filho, T. and Flach, P. (2017). Beta calibration: a well-founded
and easily implemented improvement on logistic calibration for binary
classifiers. AISTATS. (The map of eq. 3 and its a, b >= 0 constraint.)

Kull, M., Perello-Nieto, M., Kängsepp, M., Silva Filho, T., Song, H. and
Flach, P. (2019). Beyond temperature scaling: obtaining well-calibrated
multiclass probabilities with Dirichlet calibration. NeurIPS. (The linear map
on log-probabilities and the ODIR penalty of their Section 4.)
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray
from scipy.optimize import minimize
from scipy.special import expit, log_expit, log_softmax
from threadpoolctl import threadpool_limits

from calibcore._progress import Heartbeat
from calibcore._validation import check_in_range
from calibcore.recalibration._base import (
    Recalibrator,
    combine_one_vs_rest,
    log_probabilities,
    one_vs_rest_columns,
    register,
)
from calibcore.recalibration.scaling import platt_targets

__all__ = ["BetaCalibration", "DirichletCalibration"]

_BETA_FLOOR = 1e-12
_OPTIMIZER_OPTIONS = {"maxiter": 1000, "ftol": 1e-11, "gtol": 1e-7}
# Many cheap iterations on small matrices: BLAS threads cost more than they save
# (10x slower on a busy 2-core machine), so the optimizers run single-threaded.


def fit_logistic(
    design: NDArray[np.float64],
    targets: NDArray[np.float64],
    nonnegative: NDArray[np.bool_],
    weights: NDArray[np.float64] | None = None,
) -> NDArray[np.float64]:
    """Unpenalized logistic regression with optional sign constraints.

    Minimizes the mean cross-entropy of sigmoid(design @ w + c) against
    ``targets`` with L-BFGS-B and the analytic gradient.

    Parameters
    ----------
    design : ndarray of shape (n, d)
        Inputs of the linear predictor.
    targets : ndarray of shape (n,)
        Targets in [0, 1].
    nonnegative : ndarray of shape (d,) of bool
        Coefficients constrained to be >= 0.
    weights : ndarray of shape (n,), optional
        Row weights: the weighted mean cross-entropy.

    Returns
    -------
    ndarray of shape (d + 1,)
        The coefficients w followed by the intercept c.
    """
    n_rows = design.shape[0]
    extended = np.column_stack([design, np.ones(n_rows)])
    shares = np.full(n_rows, 1.0 / n_rows) if weights is None else weights / weights.sum()

    def loss_and_grad(params: NDArray[np.float64]) -> tuple[float, NDArray[np.float64]]:
        z = extended @ params
        loss = -np.dot(shares, targets * log_expit(z) + (1.0 - targets) * log_expit(-z))
        return float(loss), extended.T @ (shares * (expit(z) - targets))

    bounds = [(0.0, None) if flag else (None, None) for flag in nonnegative] + [(None, None)]
    start = np.concatenate([np.where(nonnegative, 1.0, 0.0), [0.0]])
    with threadpool_limits(limits=1, user_api="blas"):
        result = minimize(loss_and_grad, x0=start, jac=True, method="L-BFGS-B", bounds=bounds,
                          options=_OPTIMIZER_OPTIONS)
    return np.asarray(result.x, dtype=np.float64)


def _beta_design(p: NDArray[np.float64]) -> NDArray[np.float64]:
    """Columns ln p and -ln(1 - p) of Kull et al. (2017), eq. 3, with p kept off 0 and 1."""
    clipped = np.clip(p, _BETA_FLOOR, 1.0 - _BETA_FLOOR)
    return np.column_stack([np.log(clipped), -np.log1p(-clipped)])


@register
class BetaCalibration(Recalibrator):
    """Three-parameter beta calibration (Kull, Silva Filho and Flach 2017).

    Maps a probability p to sigmoid(a ln p - b ln(1 - p) + c) with a, b >= 0
    (their eq. 3 and the constraint that keeps the map monotone), fitted by
    maximum likelihood. Binary problems fit one map, to P(class 1); multiclass
    problems fit one per class (one-vs-rest) and renormalize rows.

    The constrained maximum is found directly with bound-constrained L-BFGS-B,
    rather than by the reference implementation's refit-without-the-negative-
    feature heuristic; both give the same answer when at most one bound binds.
    The targets are Platt's smoothed ones, (N+ + 1)/(N+ + 2) and 1/(N- + 2), as for
    Platt scaling: on a class that the scores separate from the rest (one-vs-rest on
    digits: classes 0, 3 and 4), 0/1 targets send a and b to infinity and the map to a
    step (test NLL 0.209 against Platt's 0.088 on digits_svm); with smoothed targets the
    maximum is finite (0.086).

    Attributes
    ----------
    coefficients_ : ndarray of shape (m, 3)
        Rows (a, b, c), one per fitted problem (m = 1 when binary, K otherwise).
    """

    method = "beta"
    display_name = "Beta calibration"
    fitted_attributes = ("coefficients_",)
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
        nonnegative = np.array([True, True])
        self.coefficients_ = np.array([
            fit_logistic(_beta_design(proba[:, k]), platt_targets(labels == k, weights),
                         nonnegative, weights)
            for k in columns
        ])

    def _predict(
        self,
        proba: NDArray[np.float64],
        features: NDArray[np.float64] | None,
        heartbeat: Heartbeat,
    ) -> NDArray[np.float64]:
        columns = one_vs_rest_columns(proba.shape[1])
        return combine_one_vs_rest(proba, [
            self._map(proba[:, k], row)
            for k, row in zip(columns, self.coefficients_, strict=True)])

    @staticmethod
    def _map(p: NDArray[np.float64], coefficients: NDArray[np.float64]) -> NDArray[np.float64]:
        return expit(_beta_design(p) @ coefficients[:2] + coefficients[2])


@register
class DirichletCalibration(Recalibrator):
    """Dirichlet calibration with ODIR regularization (Kull et al. 2019).

    Maps class probabilities p to softmax(W ln p + b), W of shape (K, K) and b
    of shape (K,), fitted by minimizing

        mean NLL + reg_lambda / (K (K - 1)) * sum_{i != j} W_ij**2
                 + reg_mu / K * sum_j b_j**2,

    the Off-Diagonal and Intercept Regularization (ODIR) of their Section 4:
    the diagonal of W (a per-class temperature) is free, the class-to-class
    interactions and the intercepts are shrunk to zero. Fitted with L-BFGS-B
    and the analytic gradient, starting from the identity map (W = I, b = 0).
    Binary problems use K = 2.

    Parameters
    ----------
    reg_lambda : float, default=1.0
        Penalty on the off-diagonal weights (>= 0).
    reg_mu : float, default=0.01
        Penalty on the intercepts (>= 0).

    Notes
    -----
    The paper picks ``reg_lambda`` and ``reg_mu`` by cross-validation. The
    defaults are a compromise from held-out NLL on the digits example
    (where large ``reg_lambda`` wins) and on synthetic Dirichlet-calibration
    tasks (where small values win): strong enough to stop the K**2 weights
    overfitting a few hundred calibration rows, weak on the intercepts, which
    carry real class-prior shifts.

    Attributes
    ----------
    weights_ : ndarray of shape (K, K)
    intercepts_ : ndarray of shape (K,)
    """

    method = "dirichlet"
    display_name = "Dirichlet calibration"
    fitted_attributes = ("weights_", "intercepts_")
    supports_weights = True

    def __init__(self, *, reg_lambda: float = 1.0, reg_mu: float = 0.01) -> None:
        self.reg_lambda = reg_lambda
        self.reg_mu = reg_mu

    def _fit(
        self,
        proba: NDArray[np.float64],
        labels: NDArray[np.intp],
        features: NDArray[np.float64] | None,
        heartbeat: Heartbeat,
        weights: NDArray[np.float64] | None = None,
    ) -> None:
        reg_lambda = check_in_range(self.reg_lambda, "reg_lambda", low=0.0, high=np.inf)
        reg_mu = check_in_range(self.reg_mu, "reg_mu", low=0.0, high=np.inf)
        n_rows, n_classes = proba.shape
        log_p = log_probabilities(proba)
        one_hot = np.eye(n_classes)[labels]
        off_diagonal = 1.0 - np.eye(n_classes)
        lambda_scale = reg_lambda / (n_classes * (n_classes - 1))
        mu_scale = reg_mu / n_classes
        n_weights = n_classes * n_classes
        # the mean NLL over rows, weighted by the row weights when given
        shares = (np.full(n_rows, 1.0 / n_rows) if weights is None
                  else weights / weights.sum())[:, None]

        def loss_and_grad(params: NDArray[np.float64]) -> tuple[float, NDArray[np.float64]]:
            weights = params[:n_weights].reshape(n_classes, n_classes)
            intercepts = params[n_weights:]
            log_q = log_softmax(log_p @ weights.T + intercepts, axis=1)
            off = weights * off_diagonal
            loss = (-np.sum(shares * one_hot * log_q)
                    + lambda_scale * np.sum(off**2) + mu_scale * np.sum(intercepts**2))
            residual = (np.exp(log_q) - one_hot) * shares
            grad_weights = residual.T @ log_p + 2.0 * lambda_scale * off
            grad_intercepts = residual.sum(axis=0) + 2.0 * mu_scale * intercepts
            return float(loss), np.concatenate([grad_weights.ravel(), grad_intercepts])

        start = np.concatenate([np.eye(n_classes).ravel(), np.zeros(n_classes)])
        with threadpool_limits(limits=1, user_api="blas"):
            result = minimize(loss_and_grad, x0=start, jac=True, method="L-BFGS-B",
                              options=_OPTIMIZER_OPTIONS)
        self.weights_ = result.x[:n_weights].reshape(n_classes, n_classes).copy()
        self.intercepts_ = result.x[n_weights:].copy()

    def _predict(
        self,
        proba: NDArray[np.float64],
        features: NDArray[np.float64] | None,
        heartbeat: Heartbeat,
    ) -> NDArray[np.float64]:
        return np.exp(log_softmax(log_probabilities(proba) @ self.weights_.T + self.intercepts_,
                                  axis=1))
