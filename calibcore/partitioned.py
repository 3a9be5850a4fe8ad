"""Exact global measures of a partitioned table on Dask (issue 14).

Each partition of a ``dask.dataframe.DataFrame`` is reduced where it lies to a
:class:`calibcore.summaries.BinnedSummary` (O(K x bins) numbers) and the summaries
are merged, so only summaries travel and the measures equal the in-memory ones on all
rows to about 1e-15, on any partitioning. Dask schedules the partitions: on the
distributed client in use (``dask.distributed.Client(address)``), or on its local
scheduler without one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from calibcore.exceptions import CalibrationInputError
from calibcore.summaries import BinnedSummary, merge_all

if TYPE_CHECKING:
    import dask.dataframe as dd


def summarize_partition(part: pd.DataFrame, label: str, probabilities: Sequence[str],
                        classes: Sequence[Any], n_bins: int) -> BinnedSummary:
    """The summary of one partition: its labels mapped to class indices by ``classes``
    (the class of each probability column, in order)."""
    index = pd.Index(list(classes))
    labels = index.get_indexer(part[label])
    if (labels < 0).any():
        unknown = part[label][labels < 0].unique()[:5]
        raise CalibrationInputError(
            f"label column {label!r} holds values that are not classes "
            f"({', '.join(map(repr, unknown))}); the classes are "
            f"{', '.join(map(repr, classes))}.", code="unknown_class", column=label)
    proba = part[list(probabilities)].to_numpy(dtype=np.float64)
    if proba.shape[0] == 0:
        return BinnedSummary.empty(len(probabilities), n_bins)
    return BinnedSummary.of(labels, proba, n_bins=n_bins)


def partitioned_summary(frame: dd.DataFrame, label: str, probabilities: Sequence[str],
                        classes: Sequence[Any] | None = None, *,
                        n_bins: int = 15) -> BinnedSummary:
    """The merged summary of every partition of ``frame`` (computed by Dask).

    Parameters
    ----------
    frame : dask.dataframe.DataFrame
    label : str
        The label column.
    probabilities : sequence of str
        One probability column per class, in class order.
    classes : sequence, optional
        The label value of each probability column (default: 0, 1, ..., K-1).
    n_bins : int, default=15
    """
    import dask

    missing = [c for c in (label, *probabilities) if c not in frame.columns]
    if missing:
        raise CalibrationInputError(
            f"no column named {', '.join(map(repr, missing))}; the columns are "
            f"{', '.join(map(repr, frame.columns))}.", code="unknown_column",
            column=str(missing[0]))
    if len(probabilities) < 2:
        raise CalibrationInputError("give one probability column per class (at least two).")
    classes = list(range(len(probabilities))) if classes is None else list(classes)
    if len(classes) != len(probabilities):
        raise CalibrationInputError(
            f"{len(classes)} classes for {len(probabilities)} probability columns.")
    parts = [dask.delayed(summarize_partition)(part, label, list(probabilities), classes,
                                               n_bins)
             for part in frame[[label, *probabilities]].to_delayed()]
    (summary,) = dask.compute(dask.delayed(merge_all)(parts))
    return summary


__all__ = ["partitioned_summary", "summarize_partition"]
