"""Prediction tables: column roles and their inference, validation into a
:class:`~calibcore.data.PredictionSet`, and the score views every measure reads.

The public names of its modules, re-exported here:

- :mod:`calibcore.data.roles`: Column roles of a prediction table, and their inference from
  names and values.
- :mod:`calibcore.data.tables`: Prediction tables: validation under column roles ->
  :class:`PredictionSet`.
- :mod:`calibcore.data.views`: Score views: how class probabilities become (score, outcome)
  pairs.
- :mod:`calibcore.data.weights`: Row weights: their validation, negative downsampling and
  Kish's effective sample size.
"""

from calibcore.data.roles import (
    BINARY_PROBABILITY_NAMES,
    BOOLEAN_LABELS,
    ID_NAMES,
    LABEL_NAMES,
    NO_LABEL,
    NO_PROBABILITIES,
    PROBABILITY_PREFIXES,
    PROBABILITY_SUFFIXES,
    SPLIT_NAMES,
    SPLIT_VALUES,
    WEIGHT_NAMES,
    ColumnRoles,
    RoleGuess,
    Split,
    column_class_parts,
    infer_roles,
    label_value_names,
    natural_order,
    normalize_name,
    role_problems,
    says_probability,
)
from calibcore.data.tables import (
    MAX_CATEGORICAL_INTEGERS,
    SUM_TOLERANCE,
    FeatureKind,
    PredictionSet,
    build_prediction_set,
    class_names_of,
    describe_rows,
    feature_kind,
    first_rows,
)
from calibcore.data.views import (
    VIEWS,
    ScoreOutcome,
    View,
    classwise,
    default_view,
    positive,
    score_outcome,
    top_class,
    top_label,
)
from calibcore.data.weights import (
    check_sample_weight,
    effective_sample_size,
    negative_rate_weights,
)

__all__ = [
    "BINARY_PROBABILITY_NAMES",
    "BOOLEAN_LABELS",
    "ID_NAMES",
    "LABEL_NAMES",
    "MAX_CATEGORICAL_INTEGERS",
    "NO_LABEL",
    "NO_PROBABILITIES",
    "PROBABILITY_PREFIXES",
    "PROBABILITY_SUFFIXES",
    "SPLIT_NAMES",
    "SPLIT_VALUES",
    "SUM_TOLERANCE",
    "VIEWS",
    "WEIGHT_NAMES",
    "ColumnRoles",
    "FeatureKind",
    "PredictionSet",
    "RoleGuess",
    "ScoreOutcome",
    "Split",
    "View",
    "build_prediction_set",
    "check_sample_weight",
    "class_names_of",
    "classwise",
    "column_class_parts",
    "default_view",
    "describe_rows",
    "effective_sample_size",
    "feature_kind",
    "first_rows",
    "infer_roles",
    "label_value_names",
    "natural_order",
    "negative_rate_weights",
    "normalize_name",
    "positive",
    "role_problems",
    "says_probability",
    "score_outcome",
    "top_class",
    "top_label",
]
