"""calibcore: the numeric core of calibdash.

Calibration measures are plain functions, recalibrators are scikit-learn
estimators. Nothing here imports a web or plotting library.

One package per concept, each with its public names in ``__all__``:

- :mod:`calibcore.data`: Prediction tables: column roles and their inference, validation
  into a :class:`~calibcore.data.PredictionSet`, and the score views every measure reads.
- :mod:`calibcore.metrics`: Global calibration measures, their bootstrap intervals, the test
  of calibration and reliability diagrams, with the binning and kernels they rest on.
- :mod:`calibcore.variable`: Variable-based calibration (Kelly & Smyth 2023): VECE, LOESS
  curves with bands, the ranking of variables and its permutation test.
- :mod:`calibcore.local`: Local calibration (Luo et al. 2022): LCE, MLCE and their curves,
  and the embeddings (encodings, PCA, t-SNE, UMAP) they are measured in.
- :mod:`calibcore.heterogeneity`: Hidden heterogeneity (Wagstaff & Dietterich 2023): HH and
  the choice of calibration, with the bagged local forests, Hellinger neighbourhoods and
  forest proximities.
- :mod:`calibcore.partitioned`: Exact diagnostics of partitioned tables on Dask: mergeable
  summaries, exact quantiles, the global measures and the variables.
- :mod:`calibcore.clinical`: The clinical calibration report (Van Calster et al. 2016,
  2019): O:E, calibration-in-the-large, calibration intercept and slope, Spiegelhalter's
  z, ICI/E50/E90/Emax of the lowess curve, Hosmer-Lemeshow, as R's ``rms::val.prob``.
- :mod:`calibcore.insights`: Diagnostics built on the others: models compared on the same
  rows, calibration over time, the worst-calibrated subgroups and calibration support.
- :mod:`calibcore.decision`: Decision curves (Vickers & Elkin 2006): the net benefit of
  acting on the probabilities at each threshold, with bootstrap bands and paired
  differences.
"""

from calibcore import (
    clinical,
    data,
    decision,
    heterogeneity,
    insights,
    local,
    metrics,
    partitioned,
    recalibration,
    variable,
)
from calibcore.clinical import ClinicalCalibration, clinical_calibration
from calibcore.decision import decision_curve
from calibcore.exceptions import CalibrationInputError, RoleInferenceError
from calibcore.metrics.calibration_test import CalibrationTestResult, consistency_resampling_test

__all__ = [
    "CalibrationInputError",
    "CalibrationTestResult",
    "ClinicalCalibration",
    "RoleInferenceError",
    "clinical",
    "clinical_calibration",
    "consistency_resampling_test",
    "data",
    "decision",
    "decision_curve",
    "heterogeneity",
    "insights",
    "local",
    "metrics",
    "partitioned",
    "recalibration",
    "variable",
]
__version__ = "0.1.0"
