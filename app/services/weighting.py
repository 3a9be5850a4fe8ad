"""What every diagnostic says about the dataset's row weights.

A weighted dataset (a weight column or ``negative_rate``) is measured on its weighted
rows by the diagnostics that take weights (the global measures, reliability diagrams,
the test of calibration, the recalibrators, decision curves, the clinical report, the
subgroup audit, the model comparison, the timeline and the variables ranking with its
curves, in memory and on Dask, the recalibration comparison, local calibration with its
landscapes, hidden heterogeneity and calibration support): each adds :func:`weighting`'s
fields to its result, and the pages show its caption.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from calibcore.data import PredictionSet


def weighted_caption(n_eff: float, n_rows: int) -> str:
    """'weighted (Kish n_eff = 1,234 of 5,000 rows)'."""
    return f"weighted (Kish n_eff = {n_eff:,.0f} of {n_rows:,} rows)"


def weighting(prediction_set: PredictionSet,
              mask: NDArray[np.bool_] | None = None) -> dict[str, Any]:
    """The fields a weighted diagnostic adds to its result: ``weighted`` and, for a
    weighted dataset, Kish's ``n_eff`` of the rows of ``mask`` and the caption
    ``weights_note``."""
    if not prediction_set.weighted:
        return {"weighted": False}
    n_eff = prediction_set.n_eff(mask)
    n_rows = prediction_set.n_rows if mask is None else int(np.count_nonzero(mask))
    return {"weighted": True, "n_eff": n_eff, "weights_note": weighted_caption(n_eff, n_rows)}


__all__ = ["weighted_caption", "weighting"]
