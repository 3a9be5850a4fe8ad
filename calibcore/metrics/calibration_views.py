"""One verdict, checked in every view: the test of calibration where views can disagree.

A view can hide miscalibration that another shows, so a verdict read from one view is
checked against a second:

- **Two classes.** The headline is the positive view (P(class 1) against 1[y = 1]),
  checked against the top-label view. The top-label view folds the problem at 1/2: at a
  confidence c it pools rows predicted positive with P(class 1) = c and rows predicted
  negative with P(class 1) = 1 - c. A model whose P(class 1) runs high everywhere is
  over-confident on the first and under-confident on the second, and at equal
  confidence the two errors cancel: for y ~ Bernoulli(p^1.3) with p ~ Beta(2, 2) the
  top-label ECE is about 0.01 while the positive-class ECE is 0.08. The converse cannot
  happen in the population (calibrated P(class 1) gives a calibrated confidence), so a
  top-label rejection beside a positive-view acceptance is a matter of power.
- **More classes.** The headline is the top-label view, checked against the classwise
  one: each class's probability against its own frequency, tested like a positive view
  and combined by Bonferroni's inequality, p = min(1, K min_k p_k). With B resamples
  the smallest p-value of one class is 1 / (1 + B), so the combination can reject at
  ``level`` only while K <= level (1 + B); beyond that the classwise check is not run,
  and the result says so.

The headline's verdict alone decides ``rejected``, so its level stays the test's.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import get_args

import numpy as np
from numpy.typing import ArrayLike

from calibcore._validation import check_in_range, check_positive_int, check_predictions
from calibcore.data.views import score_outcome
from calibcore.data.weights import check_sample_weight
from calibcore.exceptions import CalibrationInputError
from calibcore.metrics.calibration_test import (
    LEVEL,
    CalibrationTestResult,
    Statistic,
    TestView,
    group_scores,
    group_weighted_scores,
    grouped_scores_tests,
    scores_test,
)

#: The statistics of :func:`cumulative_tests_by_view`, in the order of its results.
CUMULATIVE_STATISTICS: tuple[Statistic, ...] = ("ks", "kuiper")


#: Per-class seeds of the classwise check step by this much from the headline's seed.
_CLASS_SEED_STEP = 7919
#: From this many rows the views' tests run side by side (:func:`_tests_of_views`).
PARALLEL_VIEWS_MIN_ROWS = 100_000


@dataclass(frozen=True)
class ViewedCalibrationTest:
    """The test of calibration in the default view, checked in another.

    Attributes
    ----------
    headline : CalibrationTestResult
        The default view's test (positive for two classes, top label for more).
    others : tuple of CalibrationTestResult
        The second view's test (top label for two classes, classwise for more), or
        nothing when it was not run.
    disagreement : str or None
        When the views reach different verdicts at ``level``: what each says and why
        they can differ; None when they agree.
    note : str or None
        Why the second view was not run, when it was not.
    level : float
        The level of every verdict.
    """

    headline: CalibrationTestResult
    others: tuple[CalibrationTestResult, ...]
    disagreement: str | None
    note: str | None
    level: float

    @property
    def rejected(self) -> bool:
        """The headline's verdict: calibration rejected at ``level``."""
        return self.headline.rejects(self.level)


def calibration_tests_by_view(
    y_true: ArrayLike,
    y_prob: ArrayLike,
    *,
    statistic: Statistic = "kce",
    n_resamples: int = 200,
    level: float = LEVEL,
    random_state: int = 0,
    sample_weight: ArrayLike | None = None,
) -> ViewedCalibrationTest:
    """Test calibration in the default view and check the verdict in a second view.

    Parameters
    ----------
    y_true : array-like of shape (n,)
        Class indices 0..K-1.
    y_prob : array-like of shape (n,) or (n, K)
        P(class 1) for a binary problem, or class probabilities.
    statistic : {"kce", "smooth_ece"}, default="kce"
        As in :func:`calibcore.metrics.consistency_resampling_test`.
    n_resamples : int, default=200
        Resamples of each test.
    level : float, default=0.05
        Level of the verdicts.
    random_state : int, default=0
        Seed of the headline's resamples; the other view's derive from it.
    sample_weight : array-like of shape (n,), optional
        Row weights, kept by each row in every resample.

    Returns
    -------
    ViewedCalibrationTest

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> p = rng.beta(2, 2, 5000)
    >>> y = (rng.random(5000) < p**1.3).astype(int)   # P(class 1) runs high
    >>> result = calibration_tests_by_view(y, p)
    >>> result.headline.view, result.rejected
    ('positive', True)
    """
    return calibration_and_cumulative_tests(
        y_true, y_prob, statistic=statistic, n_resamples=n_resamples, level=level,
        random_state=random_state, sample_weight=sample_weight, cumulative=False)[0]


def calibration_and_cumulative_tests(
    y_true: ArrayLike,
    y_prob: ArrayLike,
    *,
    statistic: Statistic = "kce",
    n_resamples: int = 200,
    level: float = LEVEL,
    random_state: int = 0,
    sample_weight: ArrayLike | None = None,
    cumulative: bool = True,
) -> tuple[ViewedCalibrationTest, tuple[CalibrationTestResult, ...]]:
    """:func:`calibration_tests_by_view` and :func:`cumulative_tests_by_view` (with
    ``cumulative``; else no cumulative tests) on one set of draws per view: each view's
    scores are grouped once and its resamples drawn once for the three statistics, so
    every result equals that of the function that gives it alone, at the cost of one
    test per view instead of two."""
    labels, proba = check_predictions(y_true, y_prob)
    weights = check_sample_weight(sample_weight, labels.size)
    n_resamples = check_positive_int(n_resamples, "n_resamples")
    level = check_in_range(level, "level", low=0, high=1, inclusive=False)
    if statistic not in get_args(Statistic):
        raise CalibrationInputError(
            f"statistic must be one of {', '.join(get_args(Statistic))}; got {statistic!r}.")
    n_classes = proba.shape[1]
    statistics = (statistic, *(CUMULATIVE_STATISTICS if cumulative else ()))
    # the positive view on the seed, the top-label view on the next one for two classes
    views: tuple[TestView, ...] = ("positive", "top_label") if n_classes == 2 else ("top_label",)
    tests = _tests_of_views(labels, proba, weights, views, statistics, n_resamples,
                            random_state)
    headline = tests[0][0]
    cumulative_results = tuple(result for results in tests for result in results[1:])
    if n_classes == 2:
        return checked_in_views(headline, (tests[1][0],), level), cumulative_results
    if n_classes > level * (1 + n_resamples):
        note = (f"classwise check not run: with {n_resamples} resamples per class, "
                f"Bonferroni over {n_classes} classes cannot reject at the {level:.0%} level "
                f"(it needs at least {int(np.ceil(n_classes / level)) - 1} resamples)")
        return checked_in_views(headline, (), level, note=note), cumulative_results
    other = _classwise_test(labels, proba, statistic, n_resamples, random_state, weights)
    return checked_in_views(headline, (other,), level), cumulative_results


def _tests_of_views(labels: np.ndarray, proba: np.ndarray, weights: np.ndarray | None,
                    views: tuple[TestView, ...], statistics: tuple[Statistic, ...],
                    n_resamples: int, random_state: int
                    ) -> list[tuple[CalibrationTestResult, ...]]:
    """:func:`_view_tests` of each view, the view numbered k on ``random_state + k``. From
    :data:`PARALLEL_VIEWS_MIN_ROWS` rows the second view runs on a thread of its own
    beside the first: each view draws from its own seeded stream, so the results are
    the same; the draws (1.5M rows: 0.15 s and 0.07 s of binomials) release the GIL."""
    if len(views) < 2 or labels.size < PARALLEL_VIEWS_MIN_ROWS:
        return [_view_tests(labels, proba, weights, view, statistics, n_resamples,
                            random_state + number) for number, view in enumerate(views)]
    with ThreadPoolExecutor(len(views) - 1, thread_name_prefix="test-view") as pool:
        others = [pool.submit(_view_tests, labels, proba, weights, view, statistics,
                              n_resamples, random_state + number)
                  for number, view in enumerate(views) if number]
        first = _view_tests(labels, proba, weights, views[0], statistics, n_resamples,
                            random_state)
        return [first, *(other.result() for other in others)]


def _view_tests(labels: np.ndarray, proba: np.ndarray, weights: np.ndarray | None,
                view: TestView, statistics: tuple[Statistic, ...], n_resamples: int,
                random_state: int) -> tuple[CalibrationTestResult, ...]:
    """The tests of ``statistics`` in ``view`` on one set of draws: each the one
    :func:`~calibcore.metrics.consistency_resampling_test` gives with this seed."""
    problem = score_outcome(labels, proba, view)
    scores, outcomes = problem.scores[0], problem.outcomes[0]
    groups = (group_scores(scores, outcomes) if weights is None
              else group_weighted_scores(scores, outcomes, weights))
    return grouped_scores_tests(groups, int(scores.size), view=view, statistics=statistics,
                                n_resamples=n_resamples, random_state=random_state)


def cumulative_tests_by_view(
    y_true: ArrayLike,
    y_prob: ArrayLike,
    *,
    n_resamples: int = 200,
    random_state: int = 0,
    sample_weight: ArrayLike | None = None,
) -> tuple[CalibrationTestResult, ...]:
    """The KS calibration error and the Kuiper statistic (Gupta et al. 2021, on the
    cumulative difference between outcomes and scores) with consistency-resampling
    p-values (Bröcker & Smith 2007), in the views where :func:`calibration_tests_by_view`
    tests: the positive and top-label views for two classes, the top-label view for more.

    Each view's resamples are those of :func:`calibration_tests_by_view` with the same
    seed (the positive view on ``random_state``, the top-label view on ``random_state +
    1`` for two classes), so both statistics are read on the very draws of the kCE test.

    Parameters
    ----------
    y_true : array-like of shape (n,)
        Class indices 0..K-1.
    y_prob : array-like of shape (n,) or (n, K)
        P(class 1) for a binary problem, or class probabilities.
    n_resamples : int, default=200
        Resamples of each test.
    random_state : int, default=0
        Seed of the first view's resamples; the second view's is ``random_state + 1``.
    sample_weight : array-like of shape (n,), optional
        Row weights, kept by each row in every resample.

    Returns
    -------
    tuple of CalibrationTestResult
        For each view (the default view first), the KS test then the Kuiper test.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> p = rng.beta(2, 2, 5000)
    >>> y = (rng.random(5000) < p**1.3).astype(int)   # P(class 1) runs high
    >>> results = cumulative_tests_by_view(y, p)
    >>> [(t.view, t.statistic_name, t.rejects()) for t in results[:2]]
    [('positive', 'KS calibration error', True), ('positive', 'Kuiper statistic', True)]
    >>> [t.view for t in results[2:]]      # the check in the top-label view
    ['top_label', 'top_label']
    """
    labels, proba = check_predictions(y_true, y_prob)
    weights = check_sample_weight(sample_weight, labels.size)
    n_resamples = check_positive_int(n_resamples, "n_resamples")
    views: tuple[TestView, ...] = (("positive", "top_label") if proba.shape[1] == 2
                                   else ("top_label",))
    # both statistics on one set of draws: those consistency_resampling_test makes
    # with this seed for either alone
    return tuple(result for number, view in enumerate(views)
                 for result in _view_tests(labels, proba, weights, view, CUMULATIVE_STATISTICS,
                                           n_resamples, random_state + number))


def checked_in_views(headline: CalibrationTestResult,
                     others: tuple[CalibrationTestResult, ...], level: float = LEVEL, *,
                     note: str | None = None) -> ViewedCalibrationTest:
    """The headline's test with its checks in other views (run elsewhere, e.g. on
    summaries of a partitioned table), and the words for a disagreement: a positive-view
    headline checked in the top-label view, or a top-label one checked classwise.
    ``note`` says why a check was not run."""
    wording = (_binary_disagreement if headline.view == "positive"
               else _multiclass_disagreement)
    disagreement = next((text for other in others
                         if (text := wording(headline, other, level)) is not None), None)
    return ViewedCalibrationTest(headline, others, disagreement, note, level)


def _classwise_test(labels: np.ndarray, proba: np.ndarray, statistic: Statistic,
                    n_resamples: int, random_state: int,
                    weights: np.ndarray | None = None) -> CalibrationTestResult:
    """Each class's P(class k) against 1[y = k] (each marginally a positive-view test
    under y* ~ Categorical(p)), combined by Bonferroni over the classes; the result
    carries the statistic of the class with the smallest p-value."""
    results = [scores_test(proba[:, k], (labels == k).astype(np.float64), view="classwise",
                           statistic=statistic, n_resamples=n_resamples,
                           random_state=random_state + _CLASS_SEED_STEP * (k + 1),
                           sample_weight=weights)
               for k in range(proba.shape[1])]
    worst = int(np.argmin([result.p_value for result in results]))
    n_classes = len(results)
    return replace(
        results[worst],
        p_value=min(1.0, n_classes * results[worst].p_value),
        statistic_name=f"{results[worst].statistic_name} of class {worst}",
        resampling=f"one test per class ({n_classes}), Bonferroni-combined; class {worst}'s "
                   f"resamples: {results[worst].resampling}",
        description=("Tests each class's probability against that class's frequency "
                     "(consistency resampling, as in the positive view of a binary "
                     f"problem) and combines the {n_classes} p-values by Bonferroni's "
                     "inequality, p = min(1, K x the smallest)."))


def _p(result: CalibrationTestResult) -> str:
    return f"p = {result.p_value:.3f}"


def _binary_disagreement(headline: CalibrationTestResult, top: CalibrationTestResult,
                         level: float) -> str | None:
    if headline.rejects(level) == top.rejects(level):
        return None
    if headline.rejects(level):
        return (f"The views disagree: the top-label view finds no evidence of "
                f"miscalibration ({_p(top)}) where the positive-class view does "
                f"({_p(headline)}). At each confidence the top-label view pools rows "
                "predicted positive with rows predicted negative; when P(class 1) runs high "
                "(or low) everywhere, the first are over-confident and the second "
                "under-confident, and the errors cancel. Trust the positive-class view.")
    return (f"The views disagree: the top-label view finds miscalibration ({_p(top)}) that "
            f"the positive-class test does not ({_p(headline)}). Calibrated probabilities of "
            "class 1 would give a calibrated confidence, so this points to miscalibration "
            "the positive-class test had too little power to detect.")


def _multiclass_disagreement(headline: CalibrationTestResult,
                             classwise: CalibrationTestResult, level: float) -> str | None:
    if headline.rejects(level) == classwise.rejects(level):
        return None
    if classwise.rejects(level):
        return (f"The views disagree: the classwise check finds a class whose probability "
                f"is miscalibrated ({classwise.statistic_name}, {_p(classwise)} after "
                f"Bonferroni) where the top-label view finds no evidence ({_p(headline)}). "
                "The top-label view tests only the probability of the predicted class; the "
                "others can be wrong without moving it.")
    return (f"The views disagree: the top-label confidence is miscalibrated ({_p(headline)}) "
            f"while no single class's probability is detectably off ({_p(classwise)} after "
            "Bonferroni, which costs power): the errors lie in the probability given to the "
            "predicted class.")


__all__ = ["CUMULATIVE_STATISTICS", "ViewedCalibrationTest", "calibration_and_cumulative_tests",
           "calibration_tests_by_view", "checked_in_views", "cumulative_tests_by_view"]
