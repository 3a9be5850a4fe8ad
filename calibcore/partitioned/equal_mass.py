"""ECE, MCE and classwise ECE of a partitioned table with equal-mass bins, exactly, on Dask.

Three passes over the partitions: the rows (or weight) in each cell of the scores, then
the scores of the few cells holding a quantile (:mod:`calibcore.partitioned.exact_quantiles`),
then each bin's sums at the edges so found. Only counts, a few scores and bin sums travel.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from calibcore._validation import check_predictions
from calibcore.data.views import score_outcome
from calibcore.exceptions import CalibrationInputError
from calibcore.metrics.binning import bin_sums
from calibcore.partitioned._dask_progress import compute_reporting, within
from calibcore.partitioned.binned_summaries import binned_ece, binned_mce
from calibcore.partitioned.exact_quantiles import (
    cell_counts,
    cell_values,
    merge_values,
    merged_equal_mass_edges,
    target_cells,
)
from calibcore.partitioned.partitions import checked_weighting, each_partition, partition_rows
from calibcore.partitioned.weighting import Weighting

if TYPE_CHECKING:
    import dask.dataframe as dd


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

    classes, columns, weighting = checked_weighting(frame, label, probabilities, classes,
                                                    weight, negative_rate)
    parts = frame[[label, *probabilities, *weighting.columns]].to_delayed()

    def reduce(merge: Any, function: Any, *args: Any) -> Any:
        leaves = each_partition(parts, function, label, columns, classes, *args, weighting)
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
            "classwise_ece": float(np.mean([binned_ece(bins, n_rows) for bins in per_class])),
            "n_rows": n_rows, "edges": [e.tolist() for e in edges], "views": views}


def _binned_errors(bins: NDArray[np.float64], n_rows: float,
                   edges: NDArray[np.float64]) -> dict[str, Any]:
    """ECE and MCE of one problem's bin sums (rows, scores, outcomes), with its edges."""
    return {"ece": binned_ece(bins, n_rows), "mce": binned_mce(bins), "edges": edges.tolist()}


_Problem = tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64] | None]


def _problems(part: pd.DataFrame, label: str, probabilities: Sequence[str],
              classes: Sequence[str], weighting: Weighting) -> list[_Problem]:
    """(scores, outcomes, row weights or None) of the top-label problem, then of each
    class's."""
    if part.shape[0] == 0:
        empty = np.empty(0)
        return [(empty, empty, empty if weighting.weighted else None)] * (
            1 + max(len(probabilities), 2))
    labels, proba = check_predictions(*partition_rows(part, label, probabilities, classes))
    weights = weighting.of(part, labels)
    top, each_class = score_outcome(labels, proba, "top_label"), score_outcome(
        labels, proba, "classwise")
    return [(top.scores[0], top.outcomes[0], weights),
            *((scores, outcomes, weights) for scores, outcomes
              in zip(each_class.scores, each_class.outcomes, strict=True))]


def _problem_counts(part: pd.DataFrame, label: str, probabilities: Sequence[str],
                    classes: Sequence[str], weighting: Weighting) -> NDArray[Any]:
    return np.stack([cell_counts(scores, weights) for scores, _, weights
                     in _problems(part, label, probabilities, classes, weighting)])


def _problem_values(part: pd.DataFrame, label: str, probabilities: Sequence[str],
                    classes: Sequence[str], targets: list[NDArray[np.int64]],
                    weighting: Weighting) -> list[pd.Series]:
    return [cell_values(scores, cells, weights) for (scores, _, weights), cells in
            zip(_problems(part, label, probabilities, classes, weighting), targets,
                strict=True)]


def _merged_values(parts: list[list[pd.Series]]) -> list[pd.Series]:
    return [merge_values(list(problem)) for problem in zip(*parts, strict=True)]


def _problem_sums(part: pd.DataFrame, label: str, probabilities: Sequence[str],
                  classes: Sequence[str], edges: list[NDArray[np.float64]],
                  weighting: Weighting) -> list[NDArray[np.float64]]:
    return [bin_sums(scores, outcomes, problem_edges, weights)
            for (scores, outcomes, weights), problem_edges
            in zip(_problems(part, label, probabilities, classes, weighting), edges,
                   strict=True)]


def _added(parts: list[list[NDArray[np.float64]]]) -> list[NDArray[np.float64]]:
    return [np.sum(problem, axis=0) for problem in zip(*parts, strict=True)]


__all__ = ["partitioned_equal_mass"]
