"""Isotonic regression calibration (one-vs-rest, renormalized)."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray
from sklearn.isotonic import IsotonicRegression

from calibcore._progress import Heartbeat
from calibcore.recalibration._base import (
    Recalibrator,
    combine_one_vs_rest,
    one_vs_rest_columns,
    register,
)
from calibcore.recalibration.scaling import platt_targets

__all__ = ["IsotonicCalibration"]


@register
class IsotonicCalibration(Recalibrator):
    """Non-decreasing step-linear map of each class probability, fitted by isotonic
    regression (pool adjacent violators); rows renormalized for multiclass.

    The fitted maps are stored as their knots and applied with linear
    interpolation (constant beyond the end knots), as scikit-learn does.

    By default the regression targets are Platt's (1999) smoothed ones, (N+ + 1)/(N+ + 2)
    for the rows of the class and 1/(N- + 2) for the others, as Platt scaling uses. The map
    stays monotone and lies strictly inside (0, 1): a block of calibration rows that held
    no row of the class (a whole class ends up in one block on separable data) gets a
    small probability instead of an exact 0, so no held-out row of that class has an
    infinite log-loss.

    Parameters
    ----------
    smoothed_targets : bool, default=True
        Fit to Platt's smoothed targets; False fits the 0/1 labels (scikit-learn's
        ``CalibratedClassifierCV(method="isotonic")``), whose maps reach 0 and 1.

    Attributes
    ----------
    knots_x_, knots_y_ : list of ndarray
        Knots of each class's map (one map, for P(class 1), when binary).
    """

    method = "isotonic"
    display_name = "Isotonic regression"
    fitted_attributes = ("knots_x_", "knots_y_")
    supports_weights = True

    def __init__(self, *, smoothed_targets: bool = True) -> None:
        self.smoothed_targets = smoothed_targets

    def _fit(
        self,
        proba: NDArray[np.float64],
        labels: NDArray[np.intp],
        features: NDArray[np.float64] | None,
        heartbeat: Heartbeat,
        weights: NDArray[np.float64] | None = None,
    ) -> None:
        columns = one_vs_rest_columns(proba.shape[1])
        self.knots_x_, self.knots_y_ = [], []
        for k in columns:
            model = IsotonicRegression(y_min=0.0, y_max=1.0, out_of_bounds="clip")
            is_k = labels == k
            targets = (platt_targets(is_k, weights) if self.smoothed_targets
                       else is_k.astype(np.float64))
            model.fit(proba[:, k], targets, sample_weight=weights)
            self.knots_x_.append(np.asarray(model.X_thresholds_, dtype=np.float64))
            self.knots_y_.append(np.asarray(model.y_thresholds_, dtype=np.float64))

    def _predict(
        self,
        proba: NDArray[np.float64],
        features: NDArray[np.float64] | None,
        heartbeat: Heartbeat,
    ) -> NDArray[np.float64]:
        columns = one_vs_rest_columns(proba.shape[1])
        return combine_one_vs_rest(proba, [
            np.interp(proba[:, k], x, y)
            for k, x, y in zip(columns, self.knots_x_, self.knots_y_, strict=True)])
