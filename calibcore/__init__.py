"""calibcore: the numeric core of calibdash.

Calibration measures are plain functions, recalibrators are scikit-learn
estimators. Nothing here imports a web or plotting library.
"""

from calibcore import binning, metrics, recalibration, reliability, views
from calibcore.exceptions import CalibrationInputError, RoleInferenceError

__all__ = [
    "CalibrationInputError",
    "RoleInferenceError",
    "binning",
    "metrics",
    "recalibration",
    "reliability",
    "views",
]
__version__ = "0.1.0"
