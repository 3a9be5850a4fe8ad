"""Variable-based calibration (Kelly & Smyth 2023): VECE, LOESS curves with bands, the
ranking of variables and its permutation test.

The public names of its modules, re-exported here:

- :mod:`calibcore.variable.smoothing`: LOESS: local quadratic regression with pointwise
  confidence bands.
- :mod:`calibcore.variable.vece`: VECE and the LOESS calibration curves along a variable.
- :mod:`calibcore.variable.ranking`: the ranking of variables with permutation p-values.
"""

from calibcore.variable.ranking import rank_variables
from calibcore.variable.smoothing import (
    MAX_LEVERAGE,
    MIN_NEIGHBOURS,
    N_EXACT,
    LoessFit,
    loess,
    loess_fit,
    loess_leverage,
    loess_many,
)
from calibcore.variable.vece import (
    CURVE_RANGES,
    CurveRange,
    LoessCurves,
    VariableKind,
    VariableView,
    loess_curves,
    variable_bins,
    variable_ece,
    variable_eces,
)

__all__ = [
    "CURVE_RANGES",
    "MAX_LEVERAGE",
    "MIN_NEIGHBOURS",
    "N_EXACT",
    "CurveRange",
    "LoessCurves",
    "LoessFit",
    "VariableKind",
    "VariableView",
    "loess",
    "loess_curves",
    "loess_fit",
    "loess_leverage",
    "loess_many",
    "rank_variables",
    "variable_bins",
    "variable_ece",
    "variable_eces",
]
