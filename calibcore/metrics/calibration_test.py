"""Is it calibrated at all? A test of calibration by consistency resampling.

The null hypothesis is that the scores of a view are calibrated: P(outcome | score) =
score. Consistency resampling (Bröcker & Smith 2007) draws the labels from the model's
own probabilities, y* ~ Categorical(p), so each resample is what a perfectly calibrated
model with exactly these probabilities would produce; the test statistic is recomputed
on every resample and the p-value is the Monte Carlo one,
``(1 + #{T* >= T}) / (1 + B)``, which is exact at any number of resamples B: under the
null, T and the B values T* are exchangeable (conditionally on the scores).

On the top-label view the outcome of y* is 1[argmax p = y*], which is Bernoulli(max_k
p_k); on the positive view it is Bernoulli(p_1). Rows with the same score are therefore
interchangeable and their number of positive outcomes is Binomial(rows, score), so a
resample is drawn as one binomial count per distinct score and every statistic is
evaluated on the grouped data, as rows of count weights through the ``*_rows`` kernels
of :mod:`calibcore.metrics.consistent` (the same implementation as the measures). Tables of
more than :data:`SORT_MAX_ROWS` rows are grouped into :data:`POOLING_CELLS` equal-width
cells of the score instead (no sort of every row); when some cell holds different scores
(a continuous score) its rows are pooled at their mean score: the cell's count is then
drawn as Binomial(rows, mean score), whose mean is that of the exact (Poisson-binomial)
count and whose variance exceeds it by at most rows / (4 * cells^2), and the statistic
is evaluated on the same cells, with scores moved by less than one cell width. The
result says which was done.

With row weights (``sample_weight``) the statistic is the weighted measure and each row
keeps its weight in every resample: small tables are grouped by score and weight and a
group's hits drawn as above, each weighing the group's weight (exact); large ones are
pooled into the same cells, each cell's weighted hits drawn with their mean and
variance (see :func:`group_weighted_scores`), so a weighted test costs what an
unweighted one does. This tests calibration of the weighted population when the
weights do not depend on the label; downsampling weights that do (1 / rate on the
negatives) are held at each row's observed label, an approximation.

The statistic is the Laplace kernel calibration error kCE by default: a consistent
calibration measure (Błasiok et al. 2023, §8: zero only for calibrated scores, within polynomial
factors of the distance to calibration), computed exactly, and its square is the
(biased) squared kernel calibration error SKCE of Widmann, Lindsten & Zachariah (2019)
with a Laplace kernel on the score, whose calibration tests it therefore shares. Its wide
kernel gives it the most power against over- and under-confidence (the tempered family);
the smooth ECE (``statistic="smooth_ece"``) adapts its bandwidth and has more power
against miscalibration that oscillates along the score, at about six times the cost.
The KS calibration error and the Kuiper statistic of the cumulative difference between
outcomes and scores (``statistic="ks"``, ``"kuiper"``; Gupta et al. 2021, see
:mod:`calibcore.metrics.cumulative`) need neither bins nor a bandwidth; on pooled cells
they read the curve at the cells' ends, where it is exact.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from calibcore._validation import check_positive_int, check_predictions
from calibcore.data.views import score_outcome
from calibcore.data.weights import check_sample_weight
from calibcore.exceptions import CalibrationInputError
from calibcore.metrics._resampling import GRID_CELLS, WEIGHT_LEVELS
from calibcore.metrics.consistent import RowKernel, laplace_kernel_rows
from calibcore.metrics.cumulative import (
    cumulative_curve,
    ks_of_curve,
    ks_rows,
    kuiper_of_curve,
    kuiper_rows,
)
from calibcore.metrics.kernel_smoothing import smooth_ece_rows

__all__ = [
    "LEVEL",
    "CalibrationTestResult",
    "ScoreGroups",
    "Statistic",
    "TestView",
    "consistency_resampling_test",
    "grouped_scores_test",
    "grouped_scores_tests",
    "pooled_groups",
    "scores_test",
]

Statistic = Literal["kce", "smooth_ece", "ks", "kuiper"]
TestView = Literal["top_label", "positive"]

#: Up to this many rows, rows are grouped by their distinct scores (a sort).
SORT_MAX_ROWS = GRID_CELLS
#: Larger tables are grouped into this many equal-width cells of [0, 1] (the bootstrap's).
POOLING_CELLS = GRID_CELLS
#: A cell whose scores lie this close to their mean (on average) holds one score: rounding
#: (1 - 0.388 = 0.6120000000000001) does not make a discrete score continuous.
SAME_SCORE_TOLERANCE = 1e-12
#: Resampled statistics within this relative distance below the observed one count as
#: ties (>=), so rounding can only make the p-value larger.
TIE_TOLERANCE = 1e-9
#: The null's resamples are evaluated in blocks of about this many weights: the kernels
#: keep a few arrays of a block's size, so 8 MiB each (four blocks of 64 resamples over
#: 8,192 cells, at the speed of one of 200) rather than the bootstrap's 32 MiB, which a
#: 1.5M-row overview's two views held at once (the server's high-water mark 1,200 ->
#: 1,081-1,109 MiB; memory a server has not used yet is the slowest it can use).
NULL_BLOCK_ELEMENTS = 1 << 20
#: The default level of :meth:`CalibrationTestResult.rejects` and of the verdict.
LEVEL = 0.05

TEST_NAME = "consistency resampling (Bröcker & Smith 2007)"


def _smooth_ece_kernel(
    scores: NDArray[np.float64], residuals: NDArray[np.float64], weights: NDArray[np.float64]
) -> NDArray[np.float64]:
    return smooth_ece_rows(scores, residuals, weights)[0]


@dataclass(frozen=True)
class _StatisticInfo:
    name: str
    kernel: RowKernel
    why: str


_STATISTICS: dict[Statistic, _StatisticInfo] = {
    "kce": _StatisticInfo(
        "kCE", laplace_kernel_rows,
        "kCE, the Laplace kernel calibration error, is a consistent calibration measure "
        "(zero only for calibrated scores) computed exactly; its square is the SKCE of "
        "Widmann et al. (2019) with a Laplace kernel, most sensitive to over- and "
        "under-confidence"),
    "smooth_ece": _StatisticInfo(
        "smooth ECE", _smooth_ece_kernel,
        "the smooth ECE (relplot's smECE, fixed-point bandwidth) is a consistent "
        "calibration measure whose bandwidth adapts to the data, so it also sees "
        "miscalibration that oscillates along the score"),
    "ks": _StatisticInfo(
        "KS calibration error", ks_rows,
        "the KS calibration error (Gupta et al. 2021) is the largest deviation from 0 of "
        "the cumulative difference between outcomes and scores over the rows sorted by "
        "score: no bins, no bandwidth"),
    "kuiper": _StatisticInfo(
        "Kuiper statistic", kuiper_rows,
        "the Kuiper statistic adds the largest excursions of the cumulative difference "
        "between outcomes and scores above and below 0, so it also sees a model "
        "over-confident at some scores and under-confident at others"),
}


@dataclass(frozen=True)
class CalibrationTestResult:
    """The outcome of :func:`consistency_resampling_test`.

    Attributes
    ----------
    test : str
        The test's name.
    statistic_name : str
        The calibration measure used as test statistic ("kCE", "smooth ECE").
    statistic : float
        Its value on the data (on the pooled cells when ``pooled``).
    p_value : float
        (1 + #{T* >= T}) / (1 + n_resamples), in [1 / (1 + n_resamples), 1].
    n_resamples : int
        Resamples B drawn from the null.
    null_quantile : float
        The 95th percentile of the resampled statistics T*: the observed value a
        calibrated model with these scores exceeds 5% of the time.
    n : int
        Rows tested.
    view : str
        The view whose scores are tested ("top_label" or "positive").
    pooled : bool
        Whether rows were pooled into cells of the score (otherwise the null is exact).
    n_groups : int
        Distinct scores (or non-empty cells when pooled) the resamples are drawn over.
    resampling : str
        One line saying how the null was drawn.
    description : str
        What the test tests and why this statistic.
    """

    test: str
    statistic_name: str
    statistic: float
    p_value: float
    n_resamples: int
    null_quantile: float
    n: int
    view: str
    pooled: bool
    n_groups: int
    resampling: str
    description: str

    @property
    def smallest_p_value(self) -> bool:
        """True when no resample reached the observed statistic (p = 1 / (1 + B))."""
        return self.p_value <= 1.0 / (1 + self.n_resamples)

    def rejects(self, level: float = LEVEL) -> bool:
        """Whether calibration is rejected at ``level`` (p-value <= level)."""
        return self.p_value <= level

    def verdict(self, level: float = LEVEL) -> str:
        """A few words a person can act on, at ``level``."""
        if self.rejects(level):
            return "the probabilities are unlikely to be calibrated"
        return f"no evidence of miscalibration at the {level:.0%} level"


@dataclass(frozen=True)
class ScoreGroups:
    """Rows grouped by score (exactly) or pooled into cells of the score.

    Attributes
    ----------
    scores : ndarray of shape (m,)
        Distinct scores (or the mean score of each non-empty cell), ascending.
    counts : ndarray of shape (m,)
        Rows per group.
    positives : ndarray of shape (m,)
        Rows per group whose outcome is 1.
    pooled : bool
        Whether some cell holds rows of different scores (otherwise the grouping is exact).
    weights : ndarray of shape (m,) or None
        With row weights: each group's (mean) weight, which every row of it carries.
    """

    scores: NDArray[np.float64]
    counts: NDArray[np.int64]
    positives: NDArray[np.float64]
    pooled: bool
    weights: NDArray[np.float64] | None = None


def group_scores(scores: NDArray[np.float64], outcomes: NDArray[np.float64]) -> ScoreGroups:
    """Group rows by distinct score, or pool them into cells (module docstring).

    Up to :data:`SORT_MAX_ROWS` rows the distinct scores are found by sorting. Larger
    tables go to the :data:`POOLING_CELLS` cells at once (two linear passes instead of a
    sort of every row); the grouping is still exact when no cell holds two different
    scores (scores closer than :data:`SAME_SCORE_TOLERANCE` count as one), as with
    rounded or discrete scores.
    """
    if scores.size <= SORT_MAX_ROWS:
        distinct, group = np.unique(scores, return_inverse=True)
        counts = np.bincount(group, minlength=distinct.size).astype(np.int64)
        positives = np.bincount(group, weights=outcomes, minlength=distinct.size)
        return ScoreGroups(distinct, counts, positives.astype(np.float64), False)
    cell = np.minimum((scores * POOLING_CELLS).astype(np.intp), POOLING_CELLS - 1)
    counts = np.bincount(cell, minlength=POOLING_CELLS)
    filled = np.flatnonzero(counts)
    means = np.zeros(POOLING_CELLS)
    # the mean of scores in [0, 1] can round a hair past 1, which binomial draws refuse
    means[filled] = np.clip(
        np.bincount(cell, weights=scores, minlength=POOLING_CELLS)[filled] / counts[filled],
        0.0, 1.0)
    spread = np.bincount(cell, weights=np.abs(scores - means[cell]), minlength=POOLING_CELLS)
    pooled = bool(np.any(spread[filled] > SAME_SCORE_TOLERANCE * counts[filled]))
    positives = np.bincount(cell, weights=outcomes, minlength=POOLING_CELLS)[filled]
    return ScoreGroups(means[filled], counts[filled].astype(np.int64),
                       positives.astype(np.float64), pooled)


def group_weighted_scores(scores: NDArray[np.float64], outcomes: NDArray[np.float64],
                          weights: NDArray[np.float64]) -> ScoreGroups:
    """:func:`group_scores` with row weights (module docstring).

    Up to :data:`SORT_MAX_ROWS` rows: groups of one score and one weight (exact; at
    most :data:`WEIGHT_LEVELS` distinct weights, else each row is a group). Larger
    tables: the :data:`POOLING_CELLS` cells of the score, each pooled at its weighted
    mean score s with its total weight W spread over m = round(W^2 / sum w^2) (its Kish
    effective size) rows of weight W / m: a cell's hits, drawn as Binomial(m, s) of
    weight W / m each, then have the mean, sum w_i s_i up to the score's spread in the
    cell, and about the variance, sum w_i^2 s_i (1 - s_i), of the weighted hits of its
    rows. ``positives`` are the observed weighted hits in units of the group's weight.
    """
    if scores.size <= SORT_MAX_ROWS:
        levels = np.unique(weights, return_inverse=True)[1].ravel()
        if levels.max() + 1 > WEIGHT_LEVELS:
            levels = np.arange(scores.size)
        key = np.unique(scores, return_inverse=True)[1].ravel().astype(np.int64) * (
            int(levels.max()) + 1) + levels
        cell = np.unique(key, return_inverse=True)[1].ravel()
    else:
        cell = np.minimum((scores * POOLING_CELLS).astype(np.intp), POOLING_CELLS - 1)
    size = int(cell.max()) + 1
    rows = np.bincount(cell, minlength=size)
    filled = np.flatnonzero(rows)
    mass = np.bincount(cell, weights=weights, minlength=size)[filled]
    squares = np.bincount(cell, weights=np.square(weights), minlength=size)[filled]
    score_mass = np.bincount(cell, weights=weights * scores, minlength=size)[filled]
    plain = np.bincount(cell, weights=scores, minlength=size)[filled] / rows[filled]
    means = np.clip(np.divide(score_mass, mass, out=plain, where=mass > 0), 0.0, 1.0)
    deviation = np.bincount(cell, weights=np.abs(scores - _expand(means, filled, size)[cell]),
                            minlength=size)[filled]
    same_weight = np.all(np.abs(weights - _expand(mass / rows[filled], filled, size)[cell])
                         <= SAME_SCORE_TOLERANCE * np.maximum(weights, 1.0))
    pooled = bool(np.any(deviation > SAME_SCORE_TOLERANCE * rows[filled])) or not same_weight
    effective = np.maximum(np.rint(np.divide(np.square(mass), squares, out=rows[filled]
                                             .astype(np.float64), where=squares > 0)), 1.0)
    unit = mass / effective
    hits = np.bincount(cell, weights=weights * outcomes, minlength=size)[filled]
    positives = np.divide(hits, unit, out=np.zeros_like(hits), where=unit > 0)
    order = np.argsort(means, kind="stable")
    return ScoreGroups(means[order], effective[order].astype(np.int64), positives[order],
                       pooled, unit[order])


def _expand(values: NDArray[np.float64], filled: NDArray[np.intp], size: int
            ) -> NDArray[np.float64]:
    """``values`` of the filled cells placed at their cell indices (0 elsewhere)."""
    out = np.zeros(size)
    out[filled] = values
    return out


def pooled_groups(scores: NDArray[np.float64], counts: NDArray[np.float64],
                  positives: NDArray[np.float64]) -> ScoreGroups:
    """:func:`group_scores` of rows given already grouped: ``counts`` rows at each distinct
    score in ``scores`` (ascending), ``positives`` of them with outcome 1. The groups
    are those :func:`group_scores` makes of the rows themselves: the distinct scores up
    to :data:`SORT_MAX_ROWS` rows, else the same cells, pooled by the same rule (up to
    the order of additions in the cell means, about 1e-16)."""
    n_rows = int(np.round(counts.sum()))
    if n_rows <= SORT_MAX_ROWS:
        return ScoreGroups(scores, np.round(counts).astype(np.int64), positives, False)
    cell = np.minimum((scores * POOLING_CELLS).astype(np.intp), POOLING_CELLS - 1)
    rows = np.bincount(cell, weights=counts, minlength=POOLING_CELLS)
    filled = np.flatnonzero(rows)
    means = np.zeros(POOLING_CELLS)
    means[filled] = np.clip(np.bincount(cell, weights=scores * counts,
                                        minlength=POOLING_CELLS)[filled] / rows[filled],
                            0.0, 1.0)
    spread = np.bincount(cell, weights=counts * np.abs(scores - means[cell]),
                         minlength=POOLING_CELLS)
    pooled = bool(np.any(spread[filled] > SAME_SCORE_TOLERANCE * rows[filled]))
    hits = np.bincount(cell, weights=positives, minlength=POOLING_CELLS)[filled].astype(np.float64)
    return ScoreGroups(means[filled], np.round(rows[filled]).astype(np.int64), hits, pooled)


def _statistics(
    groups: ScoreGroups, positives: NDArray[np.float64], kernel: RowKernel
) -> NDArray[np.float64]:
    """The statistic of each row of positive counts (shape (b, m)) over the groups.

    Each group becomes two weighted rows at its score, one with outcome 0 (residual
    = score, weight = negatives) and one with outcome 1 (residual = score - 1, weight
    = positives): exactly the rows of the group, so the kernel sees the data.
    """
    return kernel(*_group_rows(groups, positives))


def _group_rows(groups: ScoreGroups, positives: NDArray[np.float64]
                ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """The scores, residuals and (b, 2m) weights of :func:`_statistics`' two rows per group."""
    scores = np.repeat(groups.scores, 2)
    residuals = scores - np.tile([0.0, 1.0], groups.scores.size)
    weights = np.empty((positives.shape[0], scores.size))
    weights[:, 0::2] = groups.counts - positives
    weights[:, 1::2] = positives
    if groups.weights is not None:
        weights *= np.repeat(groups.weights, 2)
    return scores, residuals, weights


def _resampling_note(groups: ScoreGroups, n_rows: int) -> str:
    if groups.weights is not None and not groups.pooled:
        return (f"exact, weighted: {n_rows:,} rows grouped by score and weight into "
                f"{groups.scores.size:,} groups, each group's hits drawn as Binomial(rows, "
                "score), each hit weighing the group's weight")
    if groups.weights is not None:
        return (f"pooled, weighted: {n_rows:,} rows pooled into {groups.scores.size:,} "
                f"cells of the score of width 1/{POOLING_CELLS:,}, each cell's weighted "
                "hits drawn as Binomial(Kish size, weighted mean score) times weight / Kish "
                "size")
    if not groups.pooled:
        return (f"exact: {n_rows:,} rows grouped by their {groups.scores.size:,} distinct "
                "scores, each group's hits (outcome 1) drawn as Binomial(rows, score)")
    return (f"pooled: {n_rows:,} rows pooled into {groups.scores.size:,} cells of the score "
            f"of width 1/{POOLING_CELLS:,}, each cell's hits drawn as Binomial(rows, "
            "mean score)")


def consistency_resampling_test(
    y_true: ArrayLike,
    y_prob: ArrayLike,
    *,
    statistic: Statistic = "kce",
    view: TestView = "top_label",
    n_resamples: int = 200,
    random_state: int | np.random.Generator | None = 0,
    sample_weight: ArrayLike | None = None,
) -> CalibrationTestResult:
    """Test the null hypothesis "these probabilities are calibrated" (Bröcker & Smith 2007).

    Labels are redrawn from the probabilities themselves, y* ~ Categorical(p), and a
    consistent calibration measure T is recomputed on each of ``n_resamples``
    resamples B; the p-value is (1 + #{T* >= T}) / (1 + B), valid at every B and
    sample size (see the module docstring for why, for how resamples are drawn on
    grouped scores and when rows are pooled into cells).

    Parameters
    ----------
    y_true : array-like of shape (n,)
        Class indices 0..K-1.
    y_prob : array-like of shape (n,) or (n, K)
        P(class 1) for a binary problem, or class probabilities.
    statistic : {"kce", "smooth_ece", "ks", "kuiper"}, default="kce"
        The Laplace kernel calibration error (exact; Błasiok et al. 2023, §8; the SKCE of Widmann
        et al. 2019 squared), the smooth ECE (relplot's smECE), or the KS calibration
        error or Kuiper statistic of the cumulative curve (Gupta et al. 2021;
        :mod:`calibcore.metrics.cumulative`).
    view : {"top_label", "positive"}, default="top_label"
        Which scores are tested: the confidence against correctness, or P(class 1)
        against 1[y = 1] (binary only). Under y* ~ Categorical(p) each is a Bernoulli
        outcome with its score as probability.
    n_resamples : int, default=200
        Resamples B; the smallest possible p-value is 1 / (1 + B).
    random_state : int, Generator or None, default=0
        Seed of the resamples. Resample b draws, for every distinct score (or cell) in
        ascending order, ``rng.binomial(rows, score)``, so the draws are specified.
    sample_weight : array-like of shape (n,), optional
        Row weights: the statistic is the weighted measure and each row keeps its
        weight in the resamples (module docstring).

    Returns
    -------
    CalibrationTestResult

    Raises
    ------
    CalibrationInputError
        Invalid predictions, ``n_resamples`` < 1, an unknown statistic, or a view
        other than top_label and positive (the classwise view's outcomes are not
        independent across classes, so it has no test here).

    References
    ----------
    Bröcker, J. & Smith, L. A. (2007). Increasing the reliability of reliability
    diagrams. Weather and Forecasting 22(3). Widmann, D., Lindsten, F. & Zachariah, D.
    (2019). Calibration tests in multi-class classification: a unifying framework.
    NeurIPS.
    """
    labels, proba = check_predictions(y_true, y_prob)
    weights = check_sample_weight(sample_weight, labels.size)
    n_resamples = check_positive_int(n_resamples, "n_resamples")
    if statistic not in _STATISTICS:
        raise CalibrationInputError(
            f"statistic must be one of {', '.join(_STATISTICS)}; got {statistic!r}.")
    if view not in ("top_label", "positive"):
        raise CalibrationInputError(
            f"the calibration test runs on the top_label or positive view, not {view!r}: "
            "the classwise outcomes of one row are not independent. Use view='top_label'.")
    problem = score_outcome(labels, proba, view)
    return scores_test(problem.scores[0], problem.outcomes[0], view=view, statistic=statistic,
                       n_resamples=n_resamples, random_state=random_state,
                       sample_weight=weights)


def scores_test(
    scores: NDArray[np.float64],
    outcomes: NDArray[np.float64],
    *,
    view: str,
    statistic: Statistic = "kce",
    n_resamples: int = 200,
    random_state: int | np.random.Generator | None = 0,
    sample_weight: NDArray[np.float64] | None = None,
) -> CalibrationTestResult:
    """:func:`consistency_resampling_test` of one binary problem given as scores in [0, 1]
    and 0/1 outcomes (inputs trusted: checked by the caller); ``view`` names it."""
    groups = (group_scores(scores, outcomes) if sample_weight is None
              else group_weighted_scores(scores, outcomes, sample_weight))
    return grouped_scores_test(groups, int(scores.size), view=view, statistic=statistic,
                               n_resamples=n_resamples, random_state=random_state)


def grouped_scores_test(
    groups: ScoreGroups,
    n_rows: int,
    *,
    view: str,
    statistic: Statistic = "kce",
    n_resamples: int = 200,
    random_state: int | np.random.Generator | None = 0,
) -> CalibrationTestResult:
    """:func:`consistency_resampling_test` of ``n_rows`` rows given as their groups
    (:func:`group_scores`, or :func:`pooled_groups` of rows summarized elsewhere): the
    same groups and seed give the same resamples and the same p-value."""
    (result,) = grouped_scores_tests(groups, n_rows, view=view, statistics=(statistic,),
                                     n_resamples=n_resamples, random_state=random_state)
    return result


def grouped_scores_tests(
    groups: ScoreGroups,
    n_rows: int,
    *,
    view: str,
    statistics: tuple[Statistic, ...],
    n_resamples: int = 200,
    random_state: int | np.random.Generator | None = 0,
) -> tuple[CalibrationTestResult, ...]:
    """:func:`grouped_scores_test` of several statistics on one set of resamples: each
    result is the one :func:`grouped_scores_test` gives with the same seed, at the cost
    of drawing the resamples once."""
    infos = [_STATISTICS[statistic] for statistic in statistics]
    observed = [float(_statistics(groups, groups.positives[None, :], info.kernel)[0])
                for info in infos]
    nulls = _null_statistics(groups, [info.kernel for info in infos], n_resamples,
                             random_state)
    return tuple(_result(groups, n_rows, view, info, value, null)
                 for info, value, null in zip(infos, observed, nulls, strict=True))


def _result(groups: ScoreGroups, n_rows: int, view: str, info: _StatisticInfo,
            observed: float, null: NDArray[np.float64]) -> CalibrationTestResult:
    exceed = int(np.count_nonzero(null >= observed * (1.0 - TIE_TOLERANCE)))
    n_resamples = null.size
    return CalibrationTestResult(
        test=TEST_NAME,
        statistic_name=info.name,
        statistic=observed,
        p_value=(1 + exceed) / (1 + n_resamples),
        n_resamples=n_resamples,
        null_quantile=float(np.quantile(null, 0.95)),
        n=n_rows,
        view=view,
        pooled=groups.pooled,
        n_groups=groups.scores.size,
        resampling=_resampling_note(groups, n_rows),
        description=(
            "Tests whether the probabilities are calibrated: labels are redrawn from the "
            "model's own probabilities, which is what a calibrated model would produce, "
            f"and the p-value is the share of those resamples whose {info.name} is at least "
            f"the observed one. Why {info.name}: {info.why}."),
    )


def _null_statistics(
    groups: ScoreGroups,
    kernels: list[RowKernel],
    n_resamples: int,
    random_state: int | np.random.Generator | None,
) -> list[NDArray[np.float64]]:
    """Each kernel's statistic on the same ``n_resamples`` draws of the positives under the
    null, in blocks of about :data:`NULL_BLOCK_ELEMENTS` weights (one generator stream,
    drawn row by row, so the blocks do not change the draws)."""
    rng = np.random.default_rng(random_state)
    block = max(1, NULL_BLOCK_ELEMENTS // (2 * groups.scores.size))
    values: list[list[NDArray[np.float64]]] = [[] for _ in kernels]
    for start in range(0, n_resamples, block):
        size = min(block, n_resamples - start)
        positives = rng.binomial(groups.counts, groups.scores, size=(size, groups.scores.size))
        for statistic, found in zip(_block_statistics(groups, positives.astype(np.float64),
                                                      kernels), values, strict=True):
            found.append(statistic)
    return [np.concatenate(found) for found in values]


def _block_statistics(groups: ScoreGroups, positives: NDArray[np.float64],
                      kernels: list[RowKernel]) -> list[NDArray[np.float64]]:
    """Each kernel's :func:`_statistics` of one block of resamples: the groups' rows and
    weights are laid out once for all of them, and the statistics read off the
    cumulative curve (KS and Kuiper) share one curve."""
    scores, residuals, weights = _group_rows(groups, positives)
    curve: NDArray[np.float64] | None = None
    found = []
    for kernel in kernels:
        of_curve = _OF_CURVE.get(kernel)
        if of_curve is None:
            found.append(kernel(scores, residuals, weights))
            continue
        if curve is None:
            curve = cumulative_curve(scores, residuals, weights)
        found.append(of_curve(curve))
    return found


#: The row kernels that are a statistic of :func:`cumulative_curve`, and that statistic.
_OF_CURVE: dict[RowKernel, Callable[[NDArray[np.float64]], NDArray[np.float64]]] = {
    ks_rows: ks_of_curve, kuiper_rows: kuiper_of_curve}
