"""Local calibration (Luo et al. 2022): LCE, MLCE and their curves, and the embeddings
(encodings, PCA, t-SNE, UMAP) they are measured in.

The public names of its modules, re-exported here:

- :mod:`calibcore.local.embedding`: The representation phi on which local calibration is
  measured (Luo et al. 2022, §3.2).
- :mod:`calibcore.local.lce`: Local calibration error (LCE), MLCE and their bandwidth curves
  (Luo et al. 2022, §3).
"""

from calibcore.local.embedding import (
    DEFAULT_SAMPLE_SIZE,
    PLACEMENT_NEIGHBORS,
    PLACEMENTS,
    REDUCERS,
    UMAP_TRANSFORM_ROWS,
    Embedding,
    Representation,
    embed,
    fit_representation,
    warm_up,
)
from calibcore.local.lce import (
    DEFAULT_GAMMAS,
    EXACT_ROW_LIMIT,
    LCEBinSummary,
    LCEDistribution,
    LocalCalibration,
    MLCECurve,
    check_embedding,
    local_calibration,
    local_calibration_error,
    maximum_local_calibration_error,
    mean_local_calibration_error,
    mlce_curve,
    signed_local_calibration_error,
    summarize_bins,
)

__all__ = [
    "DEFAULT_GAMMAS",
    "DEFAULT_SAMPLE_SIZE",
    "EXACT_ROW_LIMIT",
    "PLACEMENTS",
    "PLACEMENT_NEIGHBORS",
    "REDUCERS",
    "UMAP_TRANSFORM_ROWS",
    "Embedding",
    "LCEBinSummary",
    "LCEDistribution",
    "LocalCalibration",
    "MLCECurve",
    "Representation",
    "check_embedding",
    "embed",
    "fit_representation",
    "local_calibration",
    "local_calibration_error",
    "maximum_local_calibration_error",
    "mean_local_calibration_error",
    "mlce_curve",
    "signed_local_calibration_error",
    "summarize_bins",
    "warm_up",
]
