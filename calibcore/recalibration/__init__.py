"""Recalibrators: scikit-learn estimators mapping probabilities to calibrated ones.

Every class is registered under its ``method`` name in :data:`REGISTRY`, which
the app and the JSON loader use; see :mod:`calibcore.recalibration._base` for
the contract.
"""

from calibcore.recalibration._base import REGISTRY, Recalibrator
from calibcore.recalibration.isotonic import IsotonicCalibration
from calibcore.recalibration.scaling import PlattScaling, TemperatureScaling

__all__ = [
    "REGISTRY",
    "IsotonicCalibration",
    "PlattScaling",
    "Recalibrator",
    "TemperatureScaling",
]
