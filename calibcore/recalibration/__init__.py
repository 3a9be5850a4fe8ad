"""Recalibrators: scikit-learn estimators mapping probabilities to calibrated ones.

Every class is registered under its ``method`` name in :data:`REGISTRY`, which
the app and the JSON loader use; see :mod:`calibcore.recalibration._base` for
the contract.
"""

from calibcore.recalibration._base import (
    JSON_FORMAT_VERSION,
    REGISTRY,
    IntervalRecalibrator,
    Recalibrator,
)
from calibcore.recalibration.beta import BetaCalibration, DirichletCalibration
from calibcore.recalibration.binning import HistogramBinning, ScalingBinning
from calibcore.recalibration.isotonic import IsotonicCalibration
from calibcore.recalibration.lece import LECD, LECE, Composed
from calibcore.recalibration.lore import LoRe
from calibcore.recalibration.prior_shift import PriorShift
from calibcore.recalibration.scaling import PlattScaling, TemperatureScaling
from calibcore.recalibration.similarity import SWC, SWCHH
from calibcore.recalibration.variable_tree import VariableTreeCalibration
from calibcore.recalibration.venn_abers import VennAbers

__all__ = [
    "JSON_FORMAT_VERSION",
    "LECD",
    "LECE",
    "REGISTRY",
    "SWC",
    "SWCHH",
    "BetaCalibration",
    "Composed",
    "DirichletCalibration",
    "HistogramBinning",
    "IntervalRecalibrator",
    "IsotonicCalibration",
    "LoRe",
    "PlattScaling",
    "PriorShift",
    "Recalibrator",
    "ScalingBinning",
    "TemperatureScaling",
    "VariableTreeCalibration",
    "VennAbers",
]
