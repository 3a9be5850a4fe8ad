"""Diagnostics built on the others: models compared on the same rows, calibration over
time, the worst-calibrated subgroups and calibration support.

The public names of its modules, re-exported here:

- :mod:`calibcore.insights.model_comparison`: Several models' probabilities of the same
  rows, compared.
- :mod:`calibcore.insights.subgroups`: The worst-calibrated subgroups: slices of one or two
  feature conditions.
- :mod:`calibcore.insights.support`: Calibration support and a covariate-shift check built
  on it.
- :mod:`calibcore.insights.timeline`: Calibration over time: measures per time window and a
  change test.
"""

from calibcore.insights.model_comparison import (
    DIFFERENCES,
    Difference,
    ModelComparison,
    ModelResult,
    compare_models,
)
from calibcore.insights.subgroups import (
    Condition,
    Subgroup,
    SubgroupAudit,
    SubgroupView,
    worst_subgroups,
)
from calibcore.insights.support import (
    CalibrationSupport,
    SupportShift,
    calibration_support,
    compare_support,
)
from calibcore.insights.timeline import (
    PERIODS,
    TEST,
    Frequency,
    Timeline,
    TimelineView,
    Window,
    calibration_timeline,
)

__all__ = [
    "DIFFERENCES",
    "PERIODS",
    "TEST",
    "CalibrationSupport",
    "Condition",
    "Difference",
    "Frequency",
    "ModelComparison",
    "ModelResult",
    "Subgroup",
    "SubgroupAudit",
    "SubgroupView",
    "SupportShift",
    "Timeline",
    "TimelineView",
    "Window",
    "calibration_support",
    "calibration_timeline",
    "compare_models",
    "compare_support",
    "worst_subgroups",
]
