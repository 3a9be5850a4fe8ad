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

from calibcore.data import ColumnRoles, class_names_of, label_value_names
from calibcore.exceptions import CalibrationInputError
from calibcore.summaries import BinnedSummary, merge_all

if TYPE_CHECKING:
    import dask.dataframe as dd


def summarize_partition(part: pd.DataFrame, label: str, probabilities: Sequence[str],
                        classes: Sequence[str], n_bins: int) -> BinnedSummary:
    """The summary of one partition. Labels are named as uploads name them
    (:func:`calibcore.data.label_value_names`) and mapped to ``classes`` (the class of
    each probability column); a single column holds P(``classes[1]``)."""
    n_classes = max(len(probabilities), 2)
    if part.shape[0] == 0:
        return BinnedSummary.empty(n_classes, n_bins)
    names = label_value_names(part[label])
    labels = pd.Index(list(classes)).get_indexer(names)
    if (labels < 0).any():
        unknown = names[labels < 0].unique()[:5]
        raise CalibrationInputError(
            f"label column {label!r} holds values that are not classes "
            f"({', '.join(map(repr, unknown))}); the classes are "
            f"{', '.join(map(repr, classes))}.", code="unknown_class", column=label)
    try:
        proba = part[list(probabilities)].to_numpy(dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise CalibrationInputError(f"probability columns must be numeric: {exc}") from exc
    return BinnedSummary.of(labels, proba[:, 0] if proba.shape[1] == 1 else proba,
                            n_bins=n_bins)


def partition_classes(frame: dd.DataFrame, label: str,
                      probabilities: Sequence[str]) -> list[str]:
    """The class of each probability column (two for one column), as an upload names
    them, from the column names and the distinct labels (one pass over the labels)."""
    distinct = label_value_names(frame[label].drop_duplicates().compute())
    return list(class_names_of(ColumnRoles(label, tuple(probabilities)), distinct.dropna()))


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
        One probability column per class, or one column holding P(positive).
    classes : sequence, optional
        The class (label value) of each probability column; by default found as an
        upload finds them, from the column names and the distinct labels (one more
        pass over the label column).
    n_bins : int, default=15
    """
    import dask

    missing = [c for c in (label, *probabilities) if c not in frame.columns]
    if missing:
        raise CalibrationInputError(
            f"no column named {', '.join(map(repr, missing))}; the columns are "
            f"{', '.join(map(repr, frame.columns))}.", code="unknown_column",
            column=str(missing[0]))
    classes = (partition_classes(frame, label, probabilities) if classes is None
               else [str(c) for c in classes])
    if len(classes) != max(len(probabilities), 2):
        raise CalibrationInputError(
            f"{len(classes)} classes for {len(probabilities)} probability columns.")
    parts = [dask.delayed(summarize_partition)(part, label, list(probabilities), classes,
                                               n_bins)
             for part in frame[[label, *probabilities]].to_delayed()]
    (summary,) = dask.compute(dask.delayed(merge_all)(parts))
    return summary


__all__ = ["partition_classes", "partitioned_summary", "summarize_partition"]
