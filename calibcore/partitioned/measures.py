"""Exact global measures of a partitioned table on Dask.

Each partition of a ``dask.dataframe.DataFrame`` is reduced where it lies to a
:class:`calibcore.partitioned.BinnedSummary` (O(K x bins) numbers) and the summaries
are merged, so only summaries travel and the measures equal the in-memory ones on all
rows to about 1e-15, on any partitioning. Dask schedules the partitions: on the
distributed client in use (``dask.distributed.Client(address)``), or on its local
scheduler without one.

The functions take a ``progress(fraction)`` callback, called as each partition of each
of their passes is done (:mod:`calibcore.partitioned._dask_progress`); raising from it stops the
pass and cancels what it has left to compute. The pass finding the classes when they
are not given reports nothing: give them (as the report does) to follow every pass.

:func:`partitioned_equal_mass` (:mod:`calibcore.partitioned.equal_mass`) and
:func:`partition_classes` (:mod:`calibcore.partitioned.partitions`) are importable from
here too, with the other global measures.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from calibcore._validation import check_predictions, check_probabilities
from calibcore.data.views import View, score_outcome
from calibcore.exceptions import CalibrationInputError
from calibcore.metrics.uncertainty import MEASURES, GlobalMeasures, measure_estimates
from calibcore.partitioned._dask_progress import compute_reporting
from calibcore.partitioned.binned_summaries import BinnedSummary
from calibcore.partitioned.equal_mass import partitioned_equal_mass
from calibcore.partitioned.partitions import (
    checked_roles,
    checked_weighting,
    each_partition,
    partition_classes,
    partition_rows,
)
from calibcore.partitioned.score_summaries import ScoreSummary, merge_within
from calibcore.partitioned.summaries import FROM_CELLS, CellSummary, check_summary_view
from calibcore.partitioned.weighting import Weighting, checked_negative_rate

if TYPE_CHECKING:
    import dask.dataframe as dd

#: Most resampling cells a partition, or all of them, may hold (beyond, no intervals).
MAX_CELLS = 2_000_000

_Sums = TypeVar("_Sums", CellSummary, ScoreSummary)


def summarize_partition(part: pd.DataFrame, label: str, probabilities: Sequence[str],
                        classes: Sequence[str], n_bins: int,
                        weighting: Weighting | None = None) -> BinnedSummary:
    """The summary of one partition. Labels are named as uploads name them
    (:func:`calibcore.data.label_value_names`) and mapped to ``classes`` (the class of
    each probability column); a single column holds P(``classes[1]``). ``weighting``
    (a :class:`calibcore.partitioned.weighting.Weighting` of :func:`partitioned_summary`'s
    ``weight`` and ``negative_rate``) weighs its rows."""
    weighting = weighting or Weighting()
    if part.shape[0] == 0:
        return BinnedSummary.empty(max(len(probabilities), 2), n_bins,
                                   weighted=weighting.weighted)
    labels, proba = partition_rows(part, label, probabilities, classes)
    return BinnedSummary.of(labels, proba, n_bins=n_bins,
                            sample_weight=weighting.of(part, labels))


def partition_cells(part: pd.DataFrame, label: str, probabilities: Sequence[str],
                    classes: Sequence[str], n_bins: int) -> CellSummary | None:
    """The resampling cells of one partition (as :func:`summarize_partition` reads it), or
    None above :data:`MAX_CELLS` (rows with distinct probability vectors, many classes:
    the cells would be as large as the rows)."""
    if part.shape[0] == 0:
        return CellSummary.empty(max(len(probabilities), 2), n_bins)
    cells = CellSummary.of(*partition_rows(part, label, probabilities, classes),
                           n_bins=n_bins)
    return _bounded(cells)


def merge_cells(first: CellSummary | None, second: CellSummary | None) -> CellSummary | None:
    """Both partitions' cells, or None when either was too many or together they are."""
    if first is None or second is None:
        return None
    return _bounded(first.merge(second))


def _bounded(summary: _Sums) -> _Sums | None:
    """``summary``, or None when it holds more than :data:`MAX_CELLS` cells or scores."""
    return summary if summary.sums.shape[0] <= MAX_CELLS else None


def _tree(merge: Any, items: list[Any]) -> Any:
    """Delayed pairwise merges of ``items`` (depth log2 of their number), so no task
    folds every partition's result into a growing one."""
    import dask

    while len(items) > 1:
        pairs = [dask.delayed(merge)(items[i], items[i + 1])
                 for i in range(0, len(items) - 1, 2)]
        items = pairs + items[len(pairs) * 2:]
    return items[0]


def partitioned_measures(frame: dd.DataFrame, label: str, probabilities: Sequence[str],
                         classes: Sequence[Any] | None = None, *, view: View = "top_label",
                         n_bins: int = 15, n_bootstrap: int = 200, random_state: int = 0,
                         progress: Callable[[float], None] | None = None,
                         weight: str | None = None,
                         negative_rate: float | None = None) -> GlobalMeasures:
    """The measures of ``view`` ("top_label", or "positive" for two classes) on every
    partition of ``frame`` with their 95% intervals (:func:`partitioned_summaries`, with
    ``progress``, ``weight`` and ``negative_rate``, then :func:`measures_with_intervals`)."""
    summary, cells, scores = partitioned_summaries(frame, label, probabilities, classes,
                                                   views=(view,), n_bins=n_bins,
                                                   progress=progress, weight=weight,
                                                   negative_rate=negative_rate)
    return measures_with_intervals(summary, cells, scores[view], view=view,
                                   n_bootstrap=n_bootstrap, random_state=random_state)


def partitioned_summaries(frame: dd.DataFrame, label: str, probabilities: Sequence[str],
                          classes: Sequence[Any] | None = None, *,
                          views: Sequence[View] = ("top_label",), n_bins: int = 15,
                          progress: Callable[[float], None] | None = None,
                          weight: str | None = None, negative_rate: float | None = None,
                          crowded: Sequence[View] = ()
                          ) -> tuple[BinnedSummary, CellSummary | None,
                                     dict[View, ScoreSummary | None]]:
    """The merged bin sums, resampling cells and, for each of ``views``, distinct-score
    sums of every partition, in one Dask pass (each partition is read once and reduced
    to all of them where it lies); cells or a view's scores are None above
    :data:`MAX_CELLS`. The bin sums and cells serve both views; ``views`` name the score
    summaries wanted ("top_label", "positive" for two classes). ``progress(fraction)``
    is called as each partition's summaries are done.

    ``weight`` names a column of non-negative row weights and ``negative_rate`` (two
    classes) weighs the negatives by 1 / rate, times those weights: every summary then
    holds weight sums instead of row counts (:class:`BinnedSummary`), so the measures
    are the weighted ones of :mod:`calibcore.metrics` on all rows, and integer weights
    give what the rows repeated by them give. Without either, the weight column is not
    read."""
    classes, columns = checked_roles(frame, label, probabilities, classes,
                                     () if weight is None else (weight,))
    views = list(dict.fromkeys(views))
    for view in views:  # the views before the rate: a bad view is named first
        check_summary_view(view, len(classes))
    weighting = Weighting(weight, checked_negative_rate(negative_rate, classes))
    parts = frame[[label, *columns, *weighting.columns]].to_delayed()
    # one task a partition: its rows are read and checked once for every summary
    leaves = each_partition(parts, _partition_summaries, label, columns, classes, n_bins,
                            tuple(views), weighting, frozenset(crowded))
    merges = [BinnedSummary.merge, merge_cells, *(merge_scores for _ in views)]
    summary, merged, *merged_scores = compute_reporting(
        [_tree(merge, [leaf[i] for leaf in leaves]) for i, merge in enumerate(merges)],
        leaves, progress)
    return summary, merged, dict(zip(views, merged_scores, strict=True))


def _partition_summaries(part: pd.DataFrame, label: str, probabilities: Sequence[str],
                         classes: Sequence[str], n_bins: int, views: tuple[View, ...],
                         weighting: Weighting | None = None,
                         crowded: frozenset[View] = frozenset()) -> tuple[Any, ...]:
    """:func:`summarize_partition`, :func:`partition_cells` and :func:`partition_scores`
    of each of ``views`` on one partition, its rows read once (weighted by
    ``weighting``); None for the ``crowded`` views' scores."""
    weighting = weighting or Weighting()
    weighted = weighting.weighted
    if part.shape[0] == 0:
        n_classes = max(len(probabilities), 2)
        return (BinnedSummary.empty(n_classes, n_bins, weighted=weighted),
                CellSummary.empty(n_classes, n_bins, weighted=weighted),
                *(ScoreSummary.empty(view, weighted=weighted) for view in views))
    labels, proba = check_predictions(*partition_rows(part, label, probabilities, classes))
    weights = weighting.of(part, labels)
    cells = CellSummary.of(labels, proba, n_bins=n_bins, sample_weight=weights)
    scores = [None if view in crowded else
              ScoreSummary.of(labels, proba, view=view, sample_weight=weights)
              for view in views]
    return (BinnedSummary.of(labels, proba, n_bins=n_bins, sample_weight=weights),
            _bounded(cells), *(None if score is None else _bounded(score) for score in scores))


#: Partitions read together, and at most, when looking for crowded views.
CROWDED_BATCH, CROWDED_PARTS = 4, 16


def classes_and_crowded_views(frame: dd.DataFrame, label: str, probabilities: Sequence[str],
                              *, progress: Callable[[float], None] | None = None
                              ) -> tuple[list[str], list[View]]:
    """:func:`partition_classes`, and the views (of :func:`partitioned_summaries`: positive
    and top label for at most two probability columns, top label for more) whose scores
    are known to take more than :data:`MAX_CELLS` distinct values, so that their score
    summaries would end None: built on every partition and merged only to be dropped.

    The distinct scores (hashed, not sorted) of the first partitions, :data:`CROWDED_BATCH`
    at a time, are gathered until every view is crowded or :data:`CROWDED_PARTS` were read;
    a view is crowded only when the scores read already exceed :data:`MAX_CELLS` (then
    so do all the rows'), so the summaries are unchanged."""
    import dask

    classes = partition_classes(frame, label, probabilities, progress=progress)
    columns = list(probabilities)
    if any(c not in frame.columns for c in columns):
        return classes, []  # the summaries name the missing columns
    views: list[View] = ["positive", "top_label"] if len(columns) <= 2 else ["top_label"]
    parts = frame[columns].to_delayed()[:CROWDED_PARTS]
    distinct: dict[View, NDArray[np.float64] | None] = {view: np.empty(0) for view in views}
    for start in range(0, len(parts), CROWDED_BATCH):
        batch = dask.compute(*(dask.delayed(_distinct_scores)(part, columns, tuple(views))
                               for part in parts[start:start + CROWDED_BATCH]))
        if any(scores is None for scores in batch):
            return classes, []  # invalid probabilities: the summaries' pass says why
        for view in views:
            known = distinct[view]
            if known is not None:
                union = pd.unique(np.concatenate([known, *(s[view] for s in batch)]))
                distinct[view] = None if union.size > MAX_CELLS else union
        if all(values is None for values in distinct.values()):
            break
    return classes, [view for view, values in distinct.items() if values is None]


def _distinct_scores(part: pd.DataFrame, probabilities: list[str], views: tuple[View, ...]
                     ) -> dict[View, NDArray[np.float64]] | None:
    """The distinct scores of each view in a partition, as :class:`ScoreSummary` groups
    them (-0.0 as 0.0), or None when its probabilities are invalid."""
    try:
        values = part[probabilities].to_numpy(dtype=np.float64)
        proba = check_probabilities(values[:, 0] if len(probabilities) == 1 else values)
    except (CalibrationInputError, TypeError, ValueError):
        return None
    rows = np.zeros(proba.shape[0], dtype=np.intp)  # the scores do not depend on labels
    return {view: pd.unique(score_outcome(rows, proba, view).scores[0] + 0.0)
            for view in views}


def measures_with_intervals(summary: BinnedSummary, cells: CellSummary | None,
                            scores: ScoreSummary | None = None, *, view: View = "top_label",
                            n_bootstrap: int = 200, random_state: int = 0) -> GlobalMeasures:
    """The exact measures of ``summary`` in ``view`` with intervals from resampling
    ``cells`` (as :func:`calibcore.metrics.global_measures` resamples them in that view).

    intCE, kCE and smooth ECE are exact from ``scores`` (the rows at each distinct score
    of ``view``); without it (more than :data:`MAX_CELLS` distinct scores) they are
    computed on the cells, within :data:`calibcore.partitioned.CELL_ERROR_BOUND`. Without
    cells (more than :data:`MAX_CELLS`: many classes with distinct probability vectors),
    the binned values come without intervals, with a note saying so.
    """
    if scores is not None and scores.view != view:
        raise CalibrationInputError(f"the score summary is of the {scores.view} view, not "
                                    f"of the {view} view.")
    values = {key: value for key, value in summary.measures(view).items() if key in MEASURES}
    if scores is not None:
        values.update(scores.measures())
    keys = [key for key in MEASURES if key in values]
    if cells is not None:
        keys = [key for key in MEASURES if key in values or key in FROM_CELLS]
        return cells.measures(values, keys, view=view, n_bootstrap=n_bootstrap,
                              random_state=random_state)
    note = (f"no interval: the rows fall into more than {MAX_CELLS:,} cells of the "
            "probabilities (many classes with distinct probability vectors), too many to "
            "resample")
    estimates = measure_estimates(keys, values, {}, 0.95, "hybrid", missing="",
                                  unresampled=note)
    return GlobalMeasures(estimates, view, summary.n_rows, summary.classwise.shape[0],
                          summary.n_bins, "equal_width", 0, 0.95, note,
                          summary.n_eff if summary.weighted else None)


def partition_scores(part: pd.DataFrame, label: str, probabilities: Sequence[str],
                     classes: Sequence[str], view: View = "top_label") -> ScoreSummary | None:
    """The rows, residual and outcome sums at each distinct score of ``view`` in one
    partition, or None above :data:`MAX_CELLS` distinct scores."""
    if part.shape[0] == 0:
        return ScoreSummary.empty(view)
    return _bounded(ScoreSummary.of(*partition_rows(part, label, probabilities, classes),
                                    view=view))


def merge_scores(first: ScoreSummary | None,
                 second: ScoreSummary | None) -> ScoreSummary | None:
    """Both partitions' confidences, or None when either was too many or together they are."""
    if first is None or second is None:
        return None
    return merge_within(first, second, MAX_CELLS)


def partitioned_summary(frame: dd.DataFrame, label: str, probabilities: Sequence[str],
                        classes: Sequence[Any] | None = None, *, n_bins: int = 15,
                        progress: Callable[[float], None] | None = None,
                        weight: str | None = None,
                        negative_rate: float | None = None) -> BinnedSummary:
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
    progress : callable, optional
        ``progress(fraction)``, called as each partition is summarized; it may raise to
        stop the pass (what is left of it is cancelled).
    weight : str, optional
        A column of non-negative row weights: the summary of the weighted rows
        (:class:`BinnedSummary`; not read when not given).
    negative_rate : float, optional
        Two classes: the fraction of negatives a sampled log kept; they weigh 1 / rate
        (times ``weight``).
    """
    classes, columns, weighting = checked_weighting(frame, label, probabilities, classes,
                                                    weight, negative_rate)
    parts = frame[[label, *columns, *weighting.columns]].to_delayed()
    summaries = each_partition(parts, summarize_partition, label, columns, classes, n_bins,
                               weighting)
    (summary,) = compute_reporting([_tree(BinnedSummary.merge, summaries)], summaries,
                                   progress)
    return summary


__all__ = [
    "classes_and_crowded_views",
    "compute_reporting",
    "measures_with_intervals",
    "partition_cells",
    "partition_classes",
    "partitioned_equal_mass",
    "partitioned_measures",
    "partitioned_summaries",
    "partitioned_summary",
    "summarize_partition",
]
