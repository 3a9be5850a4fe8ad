"""Clinical calibration: the report of a risk model's calibration that clinical prediction
research asks for (Van Calster et al. 2016, 2019; Austin & Steyerberg 2019), reproducing
R's ``rms::val.prob``.

The public names of its modules, re-exported here:

- :mod:`calibcore.clinical.clinical`: O:E, calibration-in-the-large, calibration
  intercept and slope, Spiegelhalter's z, ICI/E50/E90/Emax of the lowess calibration
  curve with its band, and the level of the calibration hierarchy.
- :mod:`calibcore.clinical.hosmer_lemeshow`: the Hosmer-Lemeshow statistic over risk
  groups, with its caveats.
"""

from calibcore.clinical.clinical import (
    BAND_QUANTILES,
    O_E_INTERVAL,
    UNWEIGHTED_CURVE_NOTE,
    UNWEIGHTED_QUANTITIES,
    ClinicalCalibration,
    Estimate,
    FlexibleCurve,
    Level,
    clinical_calibration,
)
from calibcore.clinical.hosmer_lemeshow import (
    HOSMER_LEMESHOW_CAVEAT,
    HosmerLemeshow,
    hosmer_lemeshow,
)

__all__ = [
    "BAND_QUANTILES",
    "HOSMER_LEMESHOW_CAVEAT",
    "O_E_INTERVAL",
    "UNWEIGHTED_CURVE_NOTE",
    "UNWEIGHTED_QUANTITIES",
    "ClinicalCalibration",
    "Estimate",
    "FlexibleCurve",
    "HosmerLemeshow",
    "Level",
    "clinical_calibration",
    "hosmer_lemeshow",
]
