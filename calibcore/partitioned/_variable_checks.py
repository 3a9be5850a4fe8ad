"""The arguments of :func:`calibcore.partitioned.partitioned_variables`, checked, and how
the first pass reads each feature."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from calibcore._validation import check_in_range, check_positive_int
from calibcore.exceptions import CalibrationInputError
from calibcore.partitioned._numeric_variables import VariableSettings
from calibcore.partitioned._variable_summaries import FeatureSpec


def _checked_settings(n_bins: int, max_categories: int, span: float, n_points: int,
                      confidence_level: float, n_histogram_bins: int,
                      random_state: int | None, curves: bool) -> VariableSettings:
    return VariableSettings(
        n_bins=check_positive_int(n_bins, "n_bins"),
        max_categories=check_positive_int(max_categories, "max_categories", minimum=0),
        span=check_in_range(span, "span", low=0.0, high=np.inf, inclusive=False),
        n_points=check_positive_int(n_points, "n_points"),
        confidence_level=check_in_range(confidence_level, "confidence_level", low=0, high=1,
                                        inclusive=False),
        n_histogram_bins=check_positive_int(n_histogram_bins, "n_histogram_bins"),
        random_state=random_state, curves=bool(curves))


def _checked_features(columns: Any, label: str, probabilities: list[str],
                      features: Sequence[str] | None) -> list[str]:
    roles = {label, *probabilities}
    if features is None:
        return [str(c) for c in columns if c not in roles]
    names = [str(name) for name in features]
    unknown = [name for name in names if name not in columns]
    if unknown:
        raise CalibrationInputError(
            f"no feature column named {', '.join(map(repr, unknown))}; the columns are "
            f"{', '.join(map(repr, columns))}.", code="unknown_column", column=unknown[0])
    taken = [name for name in names if name in roles]
    if taken:
        raise CalibrationInputError(
            f"{taken[0]!r} is the label or a probability column, not a feature.",
            column=taken[0])
    return names


def _spec(name: str, dtype: Any, max_categories: int) -> FeatureSpec:
    """Numeric (by the dtype, as :func:`calibcore.variable._binning.prepare_variable`
    decides): keep the sums of at most ``max_categories`` finite values and +/-inf."""
    numeric = pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_bool_dtype(dtype)
    return FeatureSpec(name, numeric, max_categories + 2 if numeric else None)


__all__: list[str] = []
