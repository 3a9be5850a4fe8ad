"""What every diagnostic says about the dataset's row weights.

A weighted dataset (a weight column or ``negative_rate``) is measured on its weighted
rows by the diagnostics that take weights (the global measures, reliability diagrams,
the test of calibration, the recalibrators, decision curves, the clinical report, the
subgroup audit, the model comparison, the timeline and the variables ranking with its
curves, in memory and on Dask, the recalibration comparison but its MLCE, hidden
heterogeneity and calibration support); the others (local calibration) say, in the same
words everywhere, that they do not apply the weights yet, instead of silently ignoring them.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from calibcore.data import PredictionSet

#: What a diagnostic that does not take weights says on a weighted dataset.
NOT_WEIGHTED_NOTE = ("weights are not applied here yet: every row counts once, so these "
                     "numbers describe the rows as sampled, not the weighted population")


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


def unweighted(prediction_set: PredictionSet) -> dict[str, Any]:
    """The fields a diagnostic that does not take weights adds to its result:
    ``weighted: false`` and, for a weighted dataset, :data:`NOT_WEIGHTED_NOTE`."""
    if not prediction_set.weighted:
        return {"weighted": False}
    return {"weighted": False, "weights_note": NOT_WEIGHTED_NOTE}


def unweighted_meta(meta: dict[str, Any]) -> dict[str, Any]:
    """:func:`unweighted` from a dataset's stored summary (no prediction set needed)."""
    if not meta.get("weighted"):
        return {"weighted": False}
    return {"weighted": False, "weights_note": NOT_WEIGHTED_NOTE}


def mark_unweighted(result: dict[str, Any], prediction_set: PredictionSet) -> dict[str, Any]:
    """``result`` with :func:`unweighted`'s fields (the pages show ``weights_note``)."""
    return {**result, **unweighted(prediction_set)}


__all__ = ["NOT_WEIGHTED_NOTE", "mark_unweighted", "unweighted", "unweighted_meta",
           "weighted_caption", "weighting"]
