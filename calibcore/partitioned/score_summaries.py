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
    POOLING_CELLS,
    SAME_SCORE_TOLERANCE,
    CalibrationTestResult,
    ScoreGroups,
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
        (rows with outcome 1). Of weighted rows: ``rows`` is their weight, ``residual``
        and ``positives`` weighted sums, and ``count`` (their number) and ``squares``
        (their sum of squared weights) follow.
    view : {"top_label", "positive"}
    """

    n_rows: int
    sums: pd.DataFrame
    view: View = "top_label"

    @classmethod
    def of(cls, y_true: ArrayLike, y_prob: ArrayLike, *, view: View = "top_label",
           sample_weight: ArrayLike | None = None) -> ScoreSummary:
        """The distinct scores of these rows in ``view``; with ``sample_weight`` (row
        weights), the weight, weighted residual and outcome sums at each."""
        labels, proba = check_predictions(y_true, y_prob)
        check_summary_view(view, proba.shape[1])
        problem = score_outcome(labels, proba, view)
        scores, outcomes = problem.scores[0], problem.outcomes[0]
        order = np.argsort(scores, kind="stable")  # rows of a score keep their order
        sorted_scores = scores[order]
        if sample_weight is None:
            return cls(int(labels.size), _sums_at_scores(
                sorted_scores, np.ones(scores.size), sorted_scores - outcomes[order],
                outcomes[order]), view)
        weights = np.asarray(sample_weight, dtype=np.float64)[order]
        return cls(int(labels.size), _sums_at_scores(
            sorted_scores, weights, weights * (sorted_scores - outcomes[order]),
            weights * outcomes[order], np.ones(scores.size), np.square(weights)), view)

    @classmethod
    def empty(cls, view: View = "top_label", *, weighted: bool = False) -> ScoreSummary:
        names = _WEIGHTED_SUMS if weighted else _SUMS
        return cls(0, pd.DataFrame({name: np.empty(0) for name in names},
                                   index=pd.Index(np.empty(0), dtype=np.float64)), view)

    @property
    def weighted(self) -> bool:
        return "count" in self.sums.columns

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
        residuals = self.sums["residual"].to_numpy()
        if self.weighted:  # scores of weight zero weigh nothing
            keep = counts > 0
            scores, counts, residuals = scores[keep], counts[keep], residuals[keep]
            if counts.size == 0:
                raise CalibrationInputError("every summarized row has weight zero.")
        residuals = residuals / counts
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
        p-value as in memory for the same seed.

        Of weighted rows, the scores are pooled into the cells the in-memory test pools
        a table of more than 8,192 weighted rows into, each cell's weight W spread over
        its Kish effective size m = round(W^2 / sum w^2) of rows of weight W / m (the
        in-memory test's groups above that size; below it, the in-memory test groups
        rows by score and weight, which a partition's sums do not keep)."""
        scores, counts = self._columns()
        n_resamples = check_positive_int(n_resamples, "n_resamples")
        if self.weighted:
            groups = _pooled_weighted_groups(scores, self.sums)
        else:
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
    if second.weighted != first.weighted:
        raise CalibrationInputError("weighted and unweighted score summaries cannot merge.")
    names = _WEIGHTED_SUMS if first.weighted else _SUMS
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
               for name in names]
    return ScoreSummary(first.n_rows + second.n_rows, _sums_at_scores(keys, *columns),
                        first.view)


#: The sums a score summary keeps at each score.
_SUMS = ("rows", "residual", "positives")
#: Those of a weighted one: weight, weighted residual and outcome sums, rows, squared weights.
_WEIGHTED_SUMS = (*_SUMS, "count", "squares")


def _n_distinct(keys: NDArray[np.float64]) -> int:
    """Distinct values of sorted ``keys``."""
    return int(keys.size and np.count_nonzero(keys[1:] != keys[:-1]) + 1)


def _sums_at_scores(keys: NDArray[np.float64], *columns: NDArray[np.float64]) -> pd.DataFrame:
    """The sums of ``columns`` (named :data:`_SUMS`, or :data:`_WEIGHTED_SUMS`) at each
    distinct value of the sorted ``keys``, indexed by it: a group-by of sorted keys as
    cuts, no hashing."""
    names = _SUMS if len(columns) == len(_SUMS) else _WEIGHTED_SUMS
    if keys.size == 0:
        return ScoreSummary.empty(weighted=names == _WEIGHTED_SUMS).sums
    starts = np.flatnonzero(np.concatenate(([True], keys[1:] != keys[:-1])))
    sums = np.empty((len(names), starts.size))
    for row, column in zip(sums, columns, strict=True):
        np.add.reduceat(column, starts, out=row)
    # one block, not copied again into the frame
    return pd.DataFrame(sums.T, index=pd.Index(keys[starts], dtype=np.float64),
                        columns=list(names), copy=False)


def _pooled_weighted_groups(scores: NDArray[np.float64], sums: pd.DataFrame) -> ScoreGroups:
    """:func:`calibcore.metrics.calibration_test.group_weighted_scores`' pooling of a
    large table, from the weight, squared weight, rows and weighted hits at each distinct
    score: each cell's weighted mean score, its Kish effective size m (at least 1) and
    rows of weight W / m; pooled when a cell holds several scores or unequal weights."""
    mass_at, rows_at = sums["rows"].to_numpy(), sums["count"].to_numpy()
    cell = np.minimum((scores * POOLING_CELLS).astype(np.intp), POOLING_CELLS - 1)
    rows = np.bincount(cell, weights=rows_at, minlength=POOLING_CELLS)
    filled = np.flatnonzero(rows)
    mass = np.bincount(cell, weights=mass_at, minlength=POOLING_CELLS)[filled]
    squares = np.bincount(cell, weights=sums["squares"].to_numpy(),
                          minlength=POOLING_CELLS)[filled]
    plain = np.bincount(cell, weights=scores * rows_at, minlength=POOLING_CELLS)[filled] \
        / rows[filled]
    score_mass = np.bincount(cell, weights=scores * mass_at, minlength=POOLING_CELLS)[filled]
    means = np.clip(np.divide(score_mass, mass, out=plain, where=mass > 0), 0.0, 1.0)
    full = np.zeros(POOLING_CELLS)
    full[filled] = means
    deviation = np.bincount(cell, weights=rows_at * np.abs(scores - full[cell]),
                            minlength=POOLING_CELLS)[filled]
    # equal weights in a cell: rows x sum w^2 = (sum w)^2 (Cauchy-Schwarz, equality iff equal)
    same_weight = bool(np.all(rows[filled] * squares
                              <= np.square(mass) * (1.0 + 1e-9) + 1e-300))
    pooled = bool(np.any(deviation > SAME_SCORE_TOLERANCE * rows[filled])) or not same_weight
    effective = np.maximum(np.rint(np.divide(np.square(mass), squares, out=rows[filled].copy(),
                                             where=squares > 0)), 1.0)
    unit = mass / effective
    hits = np.bincount(cell, weights=sums["positives"].to_numpy(),
                       minlength=POOLING_CELLS)[filled]
    positives = np.divide(hits, unit, out=np.zeros_like(hits), where=unit > 0)
    order = np.argsort(means, kind="stable")
    return ScoreGroups(means[order], effective[order].astype(np.int64), positives[order],
                       pooled, unit[order])


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
