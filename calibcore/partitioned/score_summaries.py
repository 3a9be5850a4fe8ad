"""The rows at each distinct score of one view: mergeable, and exact for the bin-free
measures (intCE, kCE, smooth ECE) and the test of calibration of a partitioned table.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from calibcore._validation import check_positive_int, check_predictions
from calibcore.data.views import View, default_view, score_outcome
from calibcore.exceptions import CalibrationInputError
from calibcore.metrics._weighted_measures import MeasureName
from calibcore.metrics.calibration_test import (
    LEVEL,
    CalibrationTestResult,
    Statistic,
    grouped_scores_test,
    pooled_groups,
)
from calibcore.metrics.calibration_views import ViewedCalibrationTest, checked_in_views
from calibcore.metrics.consistent import interval_rows, laplace_kernel_rows
from calibcore.metrics.kernel_smoothing import smooth_ece_rows
from calibcore.partitioned.summaries import check_summary_view

#: Measures that depend on a view's scores only through the rows at each score: exact
#: from :class:`ScoreSummary`.
FROM_SCORES: tuple[MeasureName, ...] = ("interval_calibration_error",
                                        "laplace_kernel_calibration_error", "smooth_ece")


@dataclass(frozen=True, eq=False)
class ScoreSummary:
    """The rows at each distinct score of one view (the top-label confidence, or P(class
    1) for the positive view), the sum of their residuals (score - outcome) and their
    outcomes: mergeable, and all that intCE, kCE, smooth ECE and the test of
    calibration read.

    Grouping rows that share a score changes none of those three (the step function of
    cumulative residuals, the kernel sums and the smoother see the same weighted points),
    so :meth:`measures` equals the in-memory values on the rows up to rounding; and
    consistency resampling draws the outcomes of a score's rows as one binomial count,
    so :meth:`calibration_test` is the in-memory test's, with the same draws.

    Attributes
    ----------
    n_rows : int
    sums : pandas.DataFrame
        Indexed by score (sorted): ``rows``, ``residual`` (their sum) and ``positives``
        (rows with outcome 1).
    view : {"top_label", "positive"}
    """

    n_rows: int
    sums: pd.DataFrame
    view: View = "top_label"

    @classmethod
    def of(cls, y_true: ArrayLike, y_prob: ArrayLike, *,
           view: View = "top_label") -> ScoreSummary:
        """The distinct scores of these rows in ``view``."""
        labels, proba = check_predictions(y_true, y_prob)
        check_summary_view(view, proba.shape[1])
        problem = score_outcome(labels, proba, view)
        scores, outcomes = problem.scores[0], problem.outcomes[0]
        order = np.argsort(scores, kind="stable")  # rows of a score keep their order
        sorted_scores = scores[order]
        return cls(int(labels.size), _sums_at_scores(
            sorted_scores, np.ones(scores.size), sorted_scores - outcomes[order],
            outcomes[order]), view)

    @classmethod
    def empty(cls, view: View = "top_label") -> ScoreSummary:
        return cls(0, pd.DataFrame({"rows": np.empty(0), "residual": np.empty(0),
                                    "positives": np.empty(0)},
                                   index=pd.Index(np.empty(0), dtype=np.float64)), view)

    def merge(self, other: ScoreSummary) -> ScoreSummary:
        merged = merge_within(self, other, None)
        assert merged is not None  # no limit
        return merged

    def _columns(self) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        counts = self.sums["rows"].to_numpy()
        if counts.size == 0:
            raise CalibrationInputError("no rows were summarized.")
        return self.sums.index.to_numpy(dtype=np.float64), counts

    def measures(self) -> dict[MeasureName, float]:
        """intCE, kCE and smooth ECE of the summarized rows (in the summary's view)."""
        scores, counts = self._columns()
        residuals = self.sums["residual"].to_numpy() / counts
        weights = counts[None, :]
        return {"interval_calibration_error": float(interval_rows(scores, residuals,
                                                                  weights)[0]),
                "laplace_kernel_calibration_error": float(
                    laplace_kernel_rows(scores, residuals, weights)[0]),
                "smooth_ece": float(smooth_ece_rows(scores, residuals, weights)[0][0])}

    def calibration_test(self, *, statistic: Statistic = "kce", n_resamples: int = 200,
                         random_state: int = 0) -> CalibrationTestResult:
        """The consistency-resampling test of calibration in the summary's view
        (:func:`calibcore.metrics.consistency_resampling_test`, Bröcker & Smith 2007) on
        the summarized rows: the same groups of scores, hence the same resamples and
        p-value as in memory for the same seed."""
        scores, counts = self._columns()
        n_resamples = check_positive_int(n_resamples, "n_resamples")
        groups = pooled_groups(scores, counts, np.round(self.sums["positives"].to_numpy()))
        return grouped_scores_test(groups, self.n_rows, view=self.view, statistic=statistic,
                                   n_resamples=n_resamples, random_state=random_state)



def merge_within(first: ScoreSummary, second: ScoreSummary,
                 limit: int | None) -> ScoreSummary | None:
    """The summary of both sets of rows, or None when they hold more than ``limit``
    distinct scores (counted before any sum is formed, so a merge past the limit costs
    one sort of the scores)."""
    if second.view != first.view:
        raise CalibrationInputError(f"score summaries of the {first.view} and "
                                    f"{second.view} views cannot merge.")
    keys = np.concatenate([first.sums.index.to_numpy(dtype=np.float64),
                           second.sums.index.to_numpy(dtype=np.float64)])
    # both halves are sorted: the stable sort merges two runs, and the rows at a score
    # keep the order first's then second's (as pandas.concat + groupby left them)
    order = np.argsort(keys, kind="stable")
    keys = keys[order]
    if limit is not None and keys.size > limit and _n_distinct(keys) > limit:
        return None
    columns = [np.concatenate([first.sums[name].to_numpy(dtype=np.float64),
                               second.sums[name].to_numpy(dtype=np.float64)])[order]
               for name in _SUMS]
    return ScoreSummary(first.n_rows + second.n_rows, _sums_at_scores(keys, *columns),
                        first.view)


#: The sums a score summary keeps at each score.
_SUMS = ("rows", "residual", "positives")


def _n_distinct(keys: NDArray[np.float64]) -> int:
    """Distinct values of sorted ``keys``."""
    return int(keys.size and np.count_nonzero(keys[1:] != keys[:-1]) + 1)


def _sums_at_scores(keys: NDArray[np.float64], *columns: NDArray[np.float64]) -> pd.DataFrame:
    """The sums of ``columns`` (named :data:`_SUMS`) at each distinct value of the sorted
    ``keys``, indexed by it: a group-by of sorted keys as cuts, no hashing."""
    if keys.size == 0:
        return ScoreSummary.empty().sums
    starts = np.flatnonzero(np.concatenate(([True], keys[1:] != keys[:-1])))
    sums = np.empty((len(_SUMS), starts.size))
    for row, column in zip(sums, columns, strict=True):
        np.add.reduceat(column, starts, out=row)
    # one block, not copied again into the frame
    return pd.DataFrame(sums.T, index=pd.Index(keys[starts], dtype=np.float64),
                        columns=list(_SUMS), copy=False)


def calibration_tests_of_scores(scores: Mapping[View, ScoreSummary | None], n_classes: int, *,
                                statistic: Statistic = "kce", n_resamples: int = 200,
                                level: float = LEVEL,
                                random_state: int = 0) -> ViewedCalibrationTest | str:
    """:func:`calibcore.metrics.calibration_tests_by_view` from the score summaries of a
    partitioned table: the headline in the positive view checked in the top-label one
    for two classes (the same seeds, hence the same p-values as in memory), the
    top-label one alone for more (the classwise check needs every class's distinct
    probabilities, which the summaries do not keep; the result's note says so). A
    sentence saying why no test was run when the headline's summary is missing (more
    distinct scores than a summary holds)."""
    headline_view = default_view(n_classes)
    headline = scores.get(headline_view)
    if headline is None:
        return (f"no calibration test: the {headline_view.replace('_', '-')} scores take too "
                "many distinct values to be gathered from the partitions")
    result = headline.calibration_test(statistic=statistic, n_resamples=n_resamples,
                                       random_state=random_state)
    if n_classes != 2:
        return checked_in_views(result, (), level, note=(
            "classwise check not run on the partitioned engine: it needs the distinct "
            "probabilities of every class, which are not gathered from the partitions"))
    other = scores.get("top_label")
    if other is None:
        return checked_in_views(result, (), level, note=(
            "top-label check not run: the confidences take too many distinct values to be "
            "gathered from the partitions"))
    return checked_in_views(result, (other.calibration_test(
        statistic=statistic, n_resamples=n_resamples, random_state=random_state + 1),), level)


__all__ = ["FROM_SCORES", "ScoreSummary", "calibration_tests_of_scores", "merge_within"]
