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
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from calibcore._validation import check_predictions
from calibcore.data.tables import ColumnRoles, class_names_of, label_value_names
from calibcore.data.views import View, score_outcome
from calibcore.data.weights import check_sample_weight, negative_rate_weights
from calibcore.exceptions import CalibrationInputError
from calibcore.metrics.binning import bin_sums
from calibcore.metrics.uncertainty import MEASURES, GlobalMeasures, measure_estimates
from calibcore.partitioned._dask_progress import compute_reporting, within
from calibcore.partitioned.exact_quantiles import (
    cell_counts,
    cell_values,
    merge_values,
    merged_equal_mass_edges,
    target_cells,
)
from calibcore.partitioned.score_summaries import ScoreSummary, merge_within
from calibcore.partitioned.summaries import (
    FROM_CELLS,
    BinnedSummary,
    CellSummary,
    check_summary_view,
)

if TYPE_CHECKING:
    import dask.dataframe as dd

#: Most resampling cells a partition, or all of them, may hold (beyond, no intervals).
MAX_CELLS = 2_000_000


def summarize_partition(part: pd.DataFrame, label: str, probabilities: Sequence[str],
                        classes: Sequence[str], n_bins: int,
                        weighting: _Weighting | None = None) -> BinnedSummary:
    """The summary of one partition. Labels are named as uploads name them
    (:func:`calibcore.data.label_value_names`) and mapped to ``classes`` (the class of
    each probability column); a single column holds P(``classes[1]``). ``weighting``
    (:func:`partitioned_summary`'s ``weight`` and ``negative_rate``) weighs its rows."""
    weighting = weighting or _Weighting()
    if part.shape[0] == 0:
        return BinnedSummary.empty(max(len(probabilities), 2), n_bins,
                                   weighted=weighting.weighted)
    labels, proba = _partition_rows(part, label, probabilities, classes)
    return BinnedSummary.of(labels, proba, n_bins=n_bins,
                            sample_weight=weighting.of(part, labels))


def partition_cells(part: pd.DataFrame, label: str, probabilities: Sequence[str],
                    classes: Sequence[str], n_bins: int) -> CellSummary | None:
    """The resampling cells of one partition (as :func:`summarize_partition` reads it), or
    None above :data:`MAX_CELLS` (rows with distinct probability vectors, many classes:
    the cells would be as large as the rows)."""
    if part.shape[0] == 0:
        return CellSummary.empty(max(len(probabilities), 2), n_bins)
    cells = CellSummary.of(*_partition_rows(part, label, probabilities, classes),
                           n_bins=n_bins)
    return cells if cells.sums.shape[0] <= MAX_CELLS else None


def merge_cells(first: CellSummary | None, second: CellSummary | None) -> CellSummary | None:
    """Both partitions' cells, or None when either was too many or together they are."""
    if first is None or second is None:
        return None
    merged = first.merge(second)
    return merged if merged.sums.shape[0] <= MAX_CELLS else None


def _tree(merge: Any, items: list[Any]) -> Any:
    """Delayed pairwise merges of ``items`` (depth log2 of their number), so no task
    folds every partition's result into a growing one."""
    import dask

    while len(items) > 1:
        pairs = [dask.delayed(merge)(items[i], items[i + 1])
                 for i in range(0, len(items) - 1, 2)]
        items = pairs + items[len(pairs) * 2:]
    return items[0]


def _partition_rows(part: pd.DataFrame, label: str, probabilities: Sequence[str],
                    classes: Sequence[str]) -> tuple[NDArray[np.intp], NDArray[np.float64]]:
    """The class index of each row and its probabilities (one column: P(classes[1]))."""
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
    return labels, proba[:, 0] if proba.shape[1] == 1 else proba


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
                          weight: str | None = None, negative_rate: float | None = None
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
    classes, columns = _checked_roles(frame, label, probabilities, classes,
                                      () if weight is None else (weight,))
    views = list(dict.fromkeys(views))
    for view in views:
        check_summary_view(view, len(classes))
    weighting = _Weighting(weight, _checked_rate(negative_rate, classes))
    parts = frame[[label, *columns, *weighting.columns]].to_delayed()
    # one task a partition: its rows are read and checked once for every summary
    leaves = _each_partition(parts, _partition_summaries, label, columns, classes, n_bins,
                             tuple(views), weighting)
    merges = [BinnedSummary.merge, merge_cells, *(merge_scores for _ in views)]
    summary, merged, *merged_scores = compute_reporting(
        [_tree(merge, [leaf[i] for leaf in leaves]) for i, merge in enumerate(merges)],
        leaves, progress)
    return summary, merged, dict(zip(views, merged_scores, strict=True))


@dataclass(frozen=True)
class _Weighting:
    """Where a partition's row weights come from: a weight column, the negatives'
    1 / rate, both (multiplied) or neither."""

    column: str | None = None
    negative_rate: float | None = None

    @property
    def weighted(self) -> bool:
        return self.column is not None or self.negative_rate is not None

    @property
    def columns(self) -> tuple[str, ...]:
        return () if self.column is None else (self.column,)

    def of(self, part: pd.DataFrame, labels: NDArray[np.intp]) -> NDArray[np.float64] | None:
        """The weights of a partition's rows (checked as an upload checks its weight
        column; a partition of weight zero is allowed), or None when unweighted."""
        weights = None
        if self.column is not None:
            values = part[self.column]
            numbers = pd.to_numeric(values, errors="coerce")
            text = (numbers.isna() & values.notna()).to_numpy()
            if text.any() or pd.api.types.is_bool_dtype(values):
                raise CalibrationInputError(
                    f"column {self.column!r} (weight) has non-numeric values; weights must "
                    "be non-negative numbers.", code="invalid_weight", column=self.column)
            weights = numbers.to_numpy(dtype=np.float64, na_value=np.nan)
            if not np.all(np.isfinite(weights) & (weights >= 0)):
                check_sample_weight(weights, weights.size, column=self.column)  # raises
        if self.negative_rate is not None:
            rate_weights = negative_rate_weights(labels, self.negative_rate)
            weights = rate_weights if weights is None else weights * rate_weights
        return weights


def _checked_rate(negative_rate: float | None, classes: Sequence[str]) -> float | None:
    """``negative_rate``, refused unless the problem is binary and the rate in (0, 1]."""
    if negative_rate is None:
        return None
    if len(classes) != 2:
        raise CalibrationInputError(
            f"negative_rate weights the negatives of a binary problem; this one has "
            f"{len(classes)} classes. Give a weight column instead.",
            code="invalid_negative_rate")
    negative_rate_weights(np.zeros(0, dtype=np.intp), negative_rate)  # checks the rate
    return float(negative_rate)


def _partition_summaries(part: pd.DataFrame, label: str, probabilities: Sequence[str],
                         classes: Sequence[str], n_bins: int, views: tuple[View, ...],
                         weighting: _Weighting = _Weighting()) -> tuple[Any, ...]:
    """:func:`summarize_partition`, :func:`partition_cells` and :func:`partition_scores`
    of each of ``views`` on one partition, its rows read once (weighted by
    ``weighting``)."""
    weighted = weighting.weighted
    if part.shape[0] == 0:
        n_classes = max(len(probabilities), 2)
        return (BinnedSummary.empty(n_classes, n_bins, weighted=weighted),
                CellSummary.empty(n_classes, n_bins, weighted=weighted),
                *(ScoreSummary.empty(view, weighted=weighted) for view in views))
    labels, proba = check_predictions(*_partition_rows(part, label, probabilities, classes))
    weights = weighting.of(part, labels)
    cells = CellSummary.of(labels, proba, n_bins=n_bins, sample_weight=weights)
    scores = [ScoreSummary.of(labels, proba, view=view, sample_weight=weights)
              for view in views]
    return (BinnedSummary.of(labels, proba, n_bins=n_bins, sample_weight=weights),
            cells if cells.sums.shape[0] <= MAX_CELLS else None,
            *(score if score.sums.shape[0] <= MAX_CELLS else None for score in scores))


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
    scores = ScoreSummary.of(*_partition_rows(part, label, probabilities, classes), view=view)
    return scores if scores.sums.shape[0] <= MAX_CELLS else None


def merge_scores(first: ScoreSummary | None,
                 second: ScoreSummary | None) -> ScoreSummary | None:
    """Both partitions' confidences, or None when either was too many or together they are."""
    if first is None or second is None:
        return None
    return merge_within(first, second, MAX_CELLS)


def partitioned_equal_mass(frame: dd.DataFrame, label: str, probabilities: Sequence[str],
                           classes: Sequence[Any] | None = None, *, n_bins: int = 15,
                           progress: Callable[[float], None] | None = None,
                           weight: str | None = None, negative_rate: float | None = None
                           ) -> dict[str, Any]:
    """ECE, MCE and classwise ECE with equal-mass bins, exactly, in three Dask passes.

    Bins are numpy's quantiles of the scores of all rows (top-label confidence; each
    class's probability for classwise ECE), found exactly by
    :mod:`calibcore.partitioned.exact_quantiles` (cell counts, then the scores of a few cells);
    a third pass sums each bin. The values equal :mod:`calibcore.metrics` with
    ``binning="equal_mass"`` on all rows; the edges are returned with them (the top
    label's, then each class's). ``ece`` and ``mce`` are the top-label view's;
    ``views`` holds ECE, MCE and the edges of each view the summaries serve (the
    positive view's, P(class 1), for two classes).
    ``progress(fraction)`` is called as each partition of each pass is done (a third of
    the fraction a pass).

    ``weight`` and ``negative_rate`` weigh the rows as in :func:`partitioned_summaries`:
    the passes sum weights where they counted rows, so the bins are at the weighted
    quantiles :func:`calibcore.metrics.binning.weighted_equal_mass_edges` gives (integer
    weights: the quantiles of the repeated rows) and the values equal
    :mod:`calibcore.metrics` with ``sample_weight``; ``n_rows`` is then the total weight.
    """
    import dask

    classes, columns = _checked_roles(frame, label, probabilities, classes,
                                      () if weight is None else (weight,))
    weighting = _Weighting(weight, _checked_rate(negative_rate, classes))
    parts = frame[[label, *probabilities, *weighting.columns]].to_delayed()

    def reduce(merge: Any, function: Any, *args: Any) -> Any:
        leaves = _each_partition(parts, function, label, columns, classes, *args, weighting)
        index = (_problem_counts, _problem_values, _problem_sums).index(function)
        (merged,) = compute_reporting([dask.delayed(merge)(leaves)], leaves,
                                      within(progress, index / 3, (index + 1) / 3))
        return merged

    counts = reduce(sum, _problem_counts)
    targets = [target_cells(problem, n_bins) for problem in counts]
    values = reduce(_merged_values, _problem_values, targets)
    edges = [merged_equal_mass_edges(problem, problem_values, n_bins)
             for problem, problem_values in zip(counts, values, strict=True)]
    sums = reduce(_added, _problem_sums, edges)
    n_rows = float(counts[0].sum()) if weighting.weighted else int(counts[0].sum())
    top, per_class = sums[0], sums[1:]
    if n_rows <= 0:
        raise CalibrationInputError("no rows (or no weight) were summarized.")
    views = {"top_label": _binned_errors(top, n_rows, edges[0])}
    if len(per_class) == 2:
        views["positive"] = _binned_errors(per_class[1], n_rows, edges[2])
    return {**{key: views["top_label"][key] for key in ("ece", "mce")},
            "classwise_ece": float(np.mean([np.abs(b[1] - b[2]).sum() / n_rows
                                            for b in per_class])),
            "n_rows": n_rows, "edges": [e.tolist() for e in edges], "views": views}


def _binned_errors(bins: NDArray[np.float64], n_rows: float,
                   edges: NDArray[np.float64]) -> dict[str, Any]:
    """ECE and MCE of one problem's bin sums (rows, scores, outcomes), with its edges."""
    filled = bins[0] > 0
    gaps = np.abs(bins[1] - bins[2])
    return {"ece": float(gaps.sum() / n_rows),
            "mce": float((gaps[filled] / bins[0][filled]).max()), "edges": edges.tolist()}


_Problem = tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64] | None]


def _problems(part: pd.DataFrame, label: str, probabilities: Sequence[str],
              classes: Sequence[str], weighting: _Weighting) -> list[_Problem]:
    """(scores, outcomes, row weights or None) of the top-label problem, then of each
    class's."""
    if part.shape[0] == 0:
        empty = np.empty(0)
        return [(empty, empty, empty if weighting.weighted else None)] * (
            1 + max(len(probabilities), 2))
    labels, proba = check_predictions(*_partition_rows(part, label, probabilities, classes))
    weights = weighting.of(part, labels)
    top, each_class = score_outcome(labels, proba, "top_label"), score_outcome(
        labels, proba, "classwise")
    return [(top.scores[0], top.outcomes[0], weights),
            *((scores, outcomes, weights) for scores, outcomes
              in zip(each_class.scores, each_class.outcomes, strict=True))]


def _problem_counts(part: pd.DataFrame, label: str, probabilities: Sequence[str],
                    classes: Sequence[str], weighting: _Weighting) -> NDArray[Any]:
    return np.stack([cell_counts(scores, weights) for scores, _, weights
                     in _problems(part, label, probabilities, classes, weighting)])


def _problem_values(part: pd.DataFrame, label: str, probabilities: Sequence[str],
                    classes: Sequence[str], targets: list[NDArray[np.int64]],
                    weighting: _Weighting) -> list[pd.Series]:
    return [cell_values(scores, cells, weights) for (scores, _, weights), cells in
            zip(_problems(part, label, probabilities, classes, weighting), targets,
                strict=True)]


def _merged_values(parts: list[list[pd.Series]]) -> list[pd.Series]:
    return [merge_values(list(problem)) for problem in zip(*parts, strict=True)]


def _problem_sums(part: pd.DataFrame, label: str, probabilities: Sequence[str],
                  classes: Sequence[str], edges: list[NDArray[np.float64]],
                  weighting: _Weighting) -> list[NDArray[np.float64]]:
    return [bin_sums(scores, outcomes, problem_edges, weights)
            for (scores, outcomes, weights), problem_edges
            in zip(_problems(part, label, probabilities, classes, weighting), edges,
                   strict=True)]


def _added(parts: list[list[NDArray[np.float64]]]) -> list[NDArray[np.float64]]:
    return [np.sum(problem, axis=0) for problem in zip(*parts, strict=True)]


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
    classes, columns = _checked_roles(frame, label, probabilities, classes,
                                      () if weight is None else (weight,))
    weighting = _Weighting(weight, _checked_rate(negative_rate, classes))
    parts = frame[[label, *columns, *weighting.columns]].to_delayed()
    summaries = _each_partition(parts, summarize_partition, label, columns, classes, n_bins,
                                weighting)
    (summary,) = compute_reporting([_tree(BinnedSummary.merge, summaries)], summaries,
                                   progress)
    return summary


def _each_partition(parts: list[Any], function: Any, label: str, columns: list[str],
                    classes: list[str], *args: Any) -> list[Any]:
    """``function(part, label, columns, classes, *args)`` delayed on every partition
    (the same delayed ``parts`` for every reduction, so each partition is read once)."""
    import dask

    return [dask.delayed(function)(part, label, columns, classes, *args) for part in parts]


def _checked_roles(frame: dd.DataFrame, label: str, probabilities: Sequence[str],
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


__all__ = [
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
