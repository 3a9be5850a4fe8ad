"""calibcore: the numeric core of calibdash.

Calibration measures are plain functions, recalibrators are scikit-learn
estimators. Nothing here imports a web or plotting library.
"""

from calibcore import (
    binning,
    calibration_test,
    consistent,
    data,
    embedding,
    heterogeneity,
    local,
    metrics,
    neighbourhoods,
    proximity,
    recalibration,
    reliability,
    smoothing,
    support,
    uncertainty,
    variable,
    views,
)
from calibcore.calibration_test import CalibrationTestResult, consistency_resampling_test
from calibcore.exceptions import CalibrationInputError, RoleInferenceError

__all__ = [
    "CalibrationInputError",
    "CalibrationTestResult",
    "RoleInferenceError",
    "binning",
    "calibration_test",
    "consistency_resampling_test",
    "consistent",
    "data",
    "embedding",
    "heterogeneity",
    "local",
    "metrics",
    "neighbourhoods",
    "proximity",
    "recalibration",
    "reliability",
    "smoothing",
    "support",
    "uncertainty",
    "variable",
    "views",
]
__version__ = "0.1.0"
