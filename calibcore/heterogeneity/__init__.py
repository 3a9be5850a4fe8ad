"""Hidden heterogeneity (Wagstaff & Dietterich 2023): HH and the choice of calibration,
with the bagged local forests, Hellinger neighbourhoods and forest proximities.

The public names of its modules, re-exported here:

- :mod:`calibcore.heterogeneity.hidden`: Hidden heterogeneity (HH) and the choice between
  local and global calibration.
- :mod:`calibcore.heterogeneity.neighbourhoods`: Hellinger neighbourhoods in the probability
  simplex.
- :mod:`calibcore.heterogeneity.proximity`: Random-forest proximity in the augmented space
  [features, probabilities].
"""

from calibcore.heterogeneity.hidden import (
    AUTO_EXACT_ROWS,
    AUTO_GRID_PER_RADIUS,
    CCP_ALPHAS,
    MAX_NEIGHBOUR_PAIRS,
    CalibrationRecommendation,
    HiddenHeterogeneity,
    NeighbourhoodCache,
    ProgressCallback,
    check_calibration_rows,
    check_features,
    hidden_heterogeneity,
    hidden_heterogeneity_details,
    recommend_calibration,
)
from calibcore.heterogeneity.neighbourhoods import (
    group_identical_sets,
    hellinger_neighbourhoods,
    neighbour_counts,
)
from calibcore.heterogeneity.proximity import (
    ProximityForest,
    TreeEnsemble,
    fit_proximity_forest,
    forest_proximity,
    leaf_indicator,
    node_class_counts,
    shared_leaf_blocks,
)

__all__ = [
    "AUTO_EXACT_ROWS",
    "AUTO_GRID_PER_RADIUS",
    "CCP_ALPHAS",
    "MAX_NEIGHBOUR_PAIRS",
    "CalibrationRecommendation",
    "HiddenHeterogeneity",
    "NeighbourhoodCache",
    "ProgressCallback",
    "ProximityForest",
    "TreeEnsemble",
    "check_calibration_rows",
    "check_features",
    "fit_proximity_forest",
    "forest_proximity",
    "group_identical_sets",
    "hellinger_neighbourhoods",
    "hidden_heterogeneity",
    "hidden_heterogeneity_details",
    "leaf_indicator",
    "neighbour_counts",
    "node_class_counts",
    "recommend_calibration",
    "shared_leaf_blocks",
]
