"""Logistic recalibration fits by Newton-Raphson: ``logit P(y = 1) = a + b logit(p)``.

Two fits of the same model (Cox 1958): with the slope free (the calibration intercept
and slope) and with it fixed at 1, the logit entering as an offset (calibration-in-the-
large). Newton's steps on the exact log-likelihood with the observed information (the
same as the expected one for the logit link) converge in a handful of steps; each is one
fused numba pass over the rows, which keeps a fit on millions of rows to tens of
milliseconds, where a general GLM solver spends seconds in a least-squares solve per
step. The Wald covariance is the inverse information at the optimum, as R's ``glm`` and
``rms::lrm`` report it.
"""

from __future__ import annotations

import math

import numba
import numpy as np
from numpy.typing import NDArray

Vector = NDArray[np.float64]
#: Newton stops when no parameter moves by more than this.
TOLERANCE = 1e-12
MAX_STEPS = 100


@numba.njit(nogil=True, cache=True)
def _sums(logit: Vector, y: Vector, weight: Vector, intercept: float,
          slope: float) -> tuple[float, float, float, float, float]:
    """Score (2) and information (3 entries) at (intercept, slope), each row counted
    ``weight`` times (frequency weights): one exp per row."""
    g0 = g1 = h00 = h01 = h11 = 0.0
    for i in range(logit.size):
        eta = intercept + slope * logit[i]
        e = math.exp(-abs(eta))
        mu = 1.0 / (1.0 + e) if eta >= 0 else e / (1.0 + e)
        r = weight[i] * (y[i] - mu)
        w = weight[i] * mu * (1.0 - mu)
        g0 += r
        g1 += r * logit[i]
        h00 += w
        h01 += w * logit[i]
        h11 += w * logit[i] * logit[i]
    return g0, g1, h00, h01, h11


def fit_recalibration(logit: Vector, y: Vector, *, free_slope: bool,
                      start: float = 0.0, weight: Vector | None = None
                      ) -> tuple[Vector, NDArray[np.float64], bool]:
    """Maximum-likelihood (intercept, slope) of ``y`` on ``logit`` (slope fixed at 1 when
    not ``free_slope``) from (``start``, 1), its Wald covariance (2 x 2; only [0, 0] with a
    fixed slope) and whether Newton converged (a separated or constant outcome does not).
    The information is the one of the last step's start, a step of less than 1e-12 away
    from the optimum. With ``weight`` each row counts that many times (statsmodels'
    ``GLM(..., freq_weights=weight)``): integer weights fit the rows repeated."""
    intercept, slope = start, 1.0
    weights = np.ones(logit.size) if weight is None else weight
    for _ in range(MAX_STEPS):
        g0, g1, h00, h01, h11 = _sums(logit, y, weights, intercept, slope)
        if free_slope:
            determinant = h00 * h11 - h01 * h01
            if not determinant > 0.0:
                break
            step0 = (h11 * g0 - h01 * g1) / determinant
            step1 = (h00 * g1 - h01 * g0) / determinant
        else:
            if not h00 > 0.0:
                break
            step0, step1 = g0 / h00, 0.0
        intercept += step0
        slope += step1
        if max(abs(step0), abs(step1)) < TOLERANCE * (1.0 + abs(intercept) + abs(slope)):
            if free_slope:
                covariance = np.array([[h11, -h01], [-h01, h00]]) / determinant
            else:
                covariance = np.array([[1.0 / h00, 0.0], [0.0, 0.0]])
            return np.array([intercept, slope]), covariance, True
    return np.array([intercept, slope]), np.full((2, 2), np.nan), False


__all__ = ["fit_recalibration"]
