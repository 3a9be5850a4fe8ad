"""The partitions of a table on Dask as the engine reads them: the roles checked once, the
classes found as an upload finds them, each partition's class indices and probabilities,
and one delayed task per partition.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from calibcore.data.tables import ColumnRoles, class_names_of, label_value_names
from calibcore.exceptions import CalibrationInputError
from calibcore.partitioned._dask_progress import compute_reporting
from calibcore.partitioned.weighting import Weighting, checked_negative_rate

if TYPE_CHECKING:
    import dask.dataframe as dd


def checked_roles(frame: dd.DataFrame, label: str, probabilities: Sequence[str],
                  classes: Sequence[Any] | None, others: Sequence[str] = ()
                  ) -> tuple[list[str], list[str]]:
    """The classes (found as an upload finds them when not given) and the probability
    columns, after checking that the columns (and ``others``) exist and match the
    classes."""
    missing = [c for c in (label, *probabilities, *others) if c not in frame.columns]
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
    return list(classes), list(probabilities)


def checked_weighting(frame: dd.DataFrame, label: str, probabilities: Sequence[str],
                      classes: Sequence[Any] | None, weight: str | None,
                      negative_rate: float | None
                      ) -> tuple[list[str], list[str], Weighting]:
    """:func:`checked_roles` (the weight column among the columns checked) and the
    :class:`Weighting` of ``weight`` and ``negative_rate`` (checked for these classes)."""
    classes, columns = checked_roles(frame, label, probabilities, classes,
                                     () if weight is None else (weight,))
    return classes, columns, Weighting(weight, checked_negative_rate(negative_rate, classes))


def partition_classes(frame: dd.DataFrame, label: str, probabilities: Sequence[str], *,
                      progress: Callable[[float], None] | None = None) -> list[str]:
    """The class of each probability column (two for one column), as an upload names
    them, from the column names and the distinct labels (one pass over the labels;
    ``progress(fraction)`` as each partition's are found)."""
    import dask

    distinct = [dask.delayed(pd.Series.drop_duplicates)(part)
                for part in frame[label].to_delayed()]
    (labels,) = compute_reporting([dask.delayed(_distinct)(distinct)], distinct, progress)
    names = label_value_names(labels)
    return list(class_names_of(ColumnRoles(label, tuple(probabilities)), names.dropna()))


def _distinct(parts: list[pd.Series]) -> pd.Series:
    return pd.concat(parts).drop_duplicates()


def partition_rows(part: pd.DataFrame, label: str, probabilities: Sequence[str],
                   classes: Sequence[str]) -> tuple[NDArray[np.intp], NDArray[np.float64]]:
    """The class index of each row and its probabilities (one column: P(classes[1])).

    Examples
    --------
    >>> part = pd.DataFrame({"y": ["no", "yes"], "p": [0.2, 0.9]})
    >>> labels, proba = partition_rows(part, "y", ["p"], ["no", "yes"])
    >>> labels.tolist(), proba.tolist()
    ([0, 1], [0.2, 0.9])
    """
    # each distinct label named and looked up once (its class), then spread to the rows
    # by its code: the classes label_value_names + get_indexer give every row
    codes, uniques = pd.factorize(part[label], use_na_sentinel=True)
    named = label_value_names(pd.Series(uniques))
    of_unique = pd.Index(list(classes)).get_indexer(named)
    labels = np.append(of_unique, -1).astype(np.intp)[codes]  # code -1 (missing): none
    if (labels < 0).any():
        names = label_value_names(part[label])
        unknown = names[labels < 0].unique()[:5]
        raise CalibrationInputError(
            f"label column {label!r} holds values that are not classes "
            f"({', '.join(map(repr, unknown))}); the classes are "
            f"{', '.join(map(repr, classes))}.", code="unknown_class", column=label)
    try:
        proba = part[list(probabilities)].to_numpy(dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise CalibrationInputError(f"probability columns must be numeric: {exc}") from exc
    return labels, proba[:, 0] if proba.shape[1] == 1 else proba


def each_partition(parts: list[Any], function: Any, label: str, columns: list[str],
                   classes: list[str], *args: Any) -> list[Any]:
    """``function(part, label, columns, classes, *args)`` delayed on every partition
    (the same delayed ``parts`` for every reduction, so each partition is read once)."""
    import dask

    return [dask.delayed(function)(part, label, columns, classes, *args) for part in parts]


__all__ = ["checked_roles", "checked_weighting", "each_partition", "partition_classes",
           "partition_rows"]
