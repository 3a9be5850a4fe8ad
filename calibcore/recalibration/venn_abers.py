"""Venn-Abers predictors: inductive and cross, binary and multiclass.

References
----------
Vovk, V. and Petej, I. (2014). Venn-Abers predictors. UAI. (Isotonic regression of the
calibration rows plus the test row labelled 0 and labelled 1: the multiprobability
prediction (p0, p1), well calibrated whatever the data distribution.)

Vovk, V., Petej, I. and Fedorova, V. (2015). Large-scale probabilistic predictors with
and without guarantees of validity. NeurIPS. (Inductive Venn-Abers predictors and their
O(n log n) Algorithms 1-4, Section 2; cross Venn-Abers predictors, Section 3; the merged
probabilities p = p1 / (1 - p0 + p1) and, for K folds,
p = GM(p1) / (GM(1 - p0) + GM(p1)), minimax for log loss, Section 4.)

Manokhin, V. (2017). Multi-class probabilistic classification using inductive and cross
Venn-Abers predictors. COPA, PMLR 60. (One Venn-Abers predictor per pair of classes,
coupled as Price, Knerr, Personnaz & Dreyfus 1995 couple pairwise classifiers; or one per
class against the rest, renormalized.)
"""

from __future__ import annotations

from itertools import combinations
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.model_selection import KFold, StratifiedKFold
from sklearn.utils.validation import check_is_fitted

from calibcore._progress import Heartbeat
from calibcore._validation import check_positive_int
from calibcore.exceptions import CalibrationInputError
from calibcore.recalibration._base import ProgressCallback, Recalibrator, register
from calibcore.recalibration._isotonic_ends import ends_at, isotonic_ends

__all__ = ["VennAbers", "problem_scores"]


#: One binary problem: (first, second) is the pair of classes i < j, scored
#: p_j / (p_i + p_j) on the rows of the two; (REST, k) is class k against the rest, scored
#: p_k on every row. The problem's "class 1" is always ``second``.
Problem = tuple[int, int]
REST = -1
Multiclass = Literal["one_vs_rest", "one_vs_one"]
_MULTICLASS = ("one_vs_rest", "one_vs_one")


def problem_scores(proba: NDArray[np.float64], problem: Problem) -> NDArray[np.float64]:
    """The binary score of a problem, shape (n,): p_k against the rest, p_j / (p_i + p_j)
    for a pair (P(class 1) itself when the data are binary).

    A row giving both classes of a pair probability 0 says nothing about which is
    likelier: its score is 1/2.
    """
    first, second = problem
    if first == REST or proba.shape[1] == 2:
        return proba[:, second]
    total = proba[:, first] + proba[:, second]
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0.0, proba[:, second] / total, 0.5)


def binary_problems(n_classes: int, multiclass: str) -> list[Problem]:
    """The problems fitted: (0, 1) when binary, else every pair or every class vs the rest."""
    if multiclass not in _MULTICLASS:
        raise CalibrationInputError(f"multiclass must be one of {', '.join(_MULTICLASS)}; "
                                    f"got {multiclass!r}.", code="invalid_parameters")
    if n_classes == 2:
        return [(0, 1)]
    if multiclass == "one_vs_one":
        return list(combinations(range(n_classes), 2))
    return [(REST, k) for k in range(n_classes)]


@register
class VennAbers(Recalibrator):
    """Venn-Abers predictor (Vovk & Petej 2014; Vovk, Petej & Fedorova 2015).

    For a test score s, isotonic regression of the calibration rows plus (s, 0) gives p0
    at s, and plus (s, 1) gives p1; the probability of class 1 lies in [p0, p1] and the
    prediction is their log-loss merge p = p1 / (1 - p0 + p1). The fits for every place
    of s among the calibration scores are computed once at fitting time (the greatest
    convex minorant of the cumulative sum diagram, Algorithms 1-4 of Vovk, Petej &
    Fedorova 2015), so a fit costs O(n log n) and a prediction O(m log n).

    With ``cross_folds`` = K >= 2 the calibration rows are split into K stratified folds
    and one inductive predictor is fitted per fold (cross Venn-Abers: the scores come from
    one fixed model here, so the folds only split the calibration rows); the K pairs
    (p0_k, p1_k) are merged as p = GM(p1) / (GM(1 - p0) + GM(p1)), geometric means over
    the folds, and the interval is the smallest one holding every fold's [p0_k, p1_k].

    Multiclass data fit, as the ``venn-abers`` package does (``va_type``), either one
    predictor per class against the rest, on score p_k, with the merged probabilities
    renormalized (the default), or one per pair of classes i < j on the rows of the two,
    on score p_j / (p_i + p_j) (Manokhin 2017), the pairs' P(k | k or l) coupled as
    P(k) = 1 / (sum over l != k of 1 / P(k | k or l) - (K - 2)) and renormalized. On the
    digits example (573 calibration rows, 10 classes) one-vs-one raised the held-out NLL
    from 0.171 to 0.412 and one-vs-rest lowered it to 0.134; on simulated sets the two
    were within 0.02 of each other. A class's interval is its problem's interval (or the
    coupling of its pairs' lower and upper ends) divided by the same row total as the
    probabilities, so it holds the reported probability.

    With ``sample_weight`` both isotonic fits are weighted isotonic regressions (pool
    adjacent violators with weights: a block's value is its weighted label mean), the
    test row weighing 1; rows of weight 0 are left out. Integer weights give bit for bit
    what the rows repeated by their weights give for the inductive predictor; cross
    Venn-Abers splits the weighted rows into folds, so there it is the same only in
    distribution (the repeated rows would be split copy by copy).

    Parameters
    ----------
    cross_folds : int, default=1
        1: the inductive predictor on all calibration rows; K >= 2: cross Venn-Abers.
    multiclass : {"one_vs_rest", "one_vs_one"}, default="one_vs_rest"
        The binary problems of multiclass data (binary data have one).
    random_state : int, default=0
        Seed of the fold shuffle (``cross_folds`` >= 2).

    Attributes
    ----------
    grids_ : list of ndarray
        Distinct calibration scores of each fitted predictor: fold-major, one per binary
        problem within a fold.
    lower_, upper_ : list of ndarray
        p0 and p1 at every place of a test score among them (``len(grid) + 1`` each).

    Examples
    --------
    >>> import numpy as np
    >>> scores = np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6])
    >>> labels = np.array([0, 0, 1, 0, 1, 1])
    >>> model = VennAbers().fit(scores, labels)
    >>> lower, upper = model.predict_interval(np.array([0.35]))
    >>> print(lower[0, 1], upper[0, 1])
    0.3333333333333333 0.6666666666666666
    >>> print(round(model.predict_proba(np.array([0.35]))[0, 1], 12))  # (2/3) / (1 - 1/3 + 2/3)
    0.5
    """

    method = "venn_abers"
    display_name = "Venn-Abers"
    fitted_attributes = ("grids_", "lower_", "upper_")
    supports_weights = True

    def __init__(self, *, cross_folds: int = 1, multiclass: Multiclass = "one_vs_rest",
                 random_state: int = 0) -> None:
        self.cross_folds = cross_folds
        self.multiclass = multiclass
        self.random_state = random_state

    def _fit(self, proba: NDArray[np.float64], labels: NDArray[np.intp],
             features: NDArray[np.float64] | None, heartbeat: Heartbeat,
             weights: NDArray[np.float64] | None = None) -> None:
        problems = binary_problems(proba.shape[1], self.multiclass)
        folds = self._fold_rows(labels)
        self.grids_, self.lower_, self.upper_ = [], [], []
        for number, rows in enumerate(folds):
            heartbeat(number / len(folds), f"fold {number + 1}/{len(folds)}")
            for problem in problems:
                first, second = problem
                mine = rows if first == REST else rows[
                    (labels[rows] == first) | (labels[rows] == second)]
                grid, lower, upper = isotonic_ends(
                    problem_scores(proba[mine], problem),
                    (labels[mine] == second).astype(np.float64),
                    None if weights is None else weights[mine])
                self.grids_.append(grid)
                self.lower_.append(lower)
                self.upper_.append(upper)

    def _fold_rows(self, labels: NDArray[np.intp]) -> list[NDArray[np.intp]]:
        """Calibration rows of each fold: all of them once when inductive."""
        n_folds = check_positive_int(self.cross_folds, "cross_folds")
        if n_folds == 1:
            return [np.arange(labels.size)]
        if n_folds > labels.size:
            raise CalibrationInputError(
                f"cross_folds={n_folds} is more folds than the {labels.size} calibration "
                "rows; use fewer folds.", code="invalid_parameters")
        counts = np.bincount(labels)
        stratify = counts[counts > 0].min() >= n_folds
        splitter = (StratifiedKFold if stratify else KFold)(
            n_splits=n_folds, shuffle=True, random_state=self.random_state)
        return [held for _, held in splitter.split(np.zeros(labels.size), labels)]

    def _problem_ends(self, proba: NDArray[np.float64]
                      ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
        """Merged probability and interval of each problem: three arrays (n, n_problems)."""
        problems = binary_problems(proba.shape[1], self.multiclass)
        n_folds = len(self.grids_) // len(problems)
        if n_folds * len(problems) != len(self.grids_) or n_folds < 1:
            raise ValueError(f"{len(self.grids_)} fitted predictors do not make whole folds "
                             f"of {len(problems)} binary problem(s).")
        lows = np.empty((proba.shape[0], len(problems), n_folds))
        highs = np.empty_like(lows)
        for index, (grid, lower, upper) in enumerate(
                zip(self.grids_, self.lower_, self.upper_, strict=True)):
            fold, problem = divmod(index, len(problems))
            lows[:, problem, fold], highs[:, problem, fold] = ends_at(
                grid, lower, upper, problem_scores(proba, problems[problem]))
        if n_folds == 1:
            low, high = lows[:, :, 0], highs[:, :, 0]
            return high / (1.0 - low + high), low, high
        with np.errstate(divide="ignore"):
            spread = np.exp(np.log(highs).mean(axis=2))
            stay = np.exp(np.log1p(-lows).mean(axis=2))
        return spread / (stay + spread), lows.min(axis=2), highs.max(axis=2)

    def _predict(self, proba: NDArray[np.float64], features: NDArray[np.float64] | None,
                 heartbeat: Heartbeat) -> NDArray[np.float64]:
        return self._classes(proba)[0]

    def _classes(self, proba: NDArray[np.float64]
                 ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
        """Class probabilities and their intervals' lower and upper ends, each (n, K)."""
        merged, low, high = self._problem_ends(proba)
        n_classes = proba.shape[1]
        if n_classes == 2:
            p, low, high = merged[:, 0], low[:, 0], high[:, 0]
            return (np.column_stack([1.0 - p, p]), np.column_stack([1.0 - high, low]),
                    np.column_stack([1.0 - low, high]))
        if self.multiclass == "one_vs_one":
            # a class's lower end couples the lower ends of P(k | k or l): p0 when k is
            # the pair's second class, 1 - p1 when it is the first (the upper end likewise)
            merged, low, high = (_coupled(merged, n_classes), _coupled(low, n_classes, high),
                                 _coupled(high, n_classes, low))
        total = merged.sum(axis=1, keepdims=True)
        return (merged / total, np.clip(low / total, 0.0, 1.0),
                np.clip(high / total, 0.0, 1.0))

    def predict_interval(self, y_prob: ArrayLike, features: ArrayLike | None = None, *,
                         progress: ProgressCallback | None = None
                         ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Lower and upper ends of each class's probability, two arrays of shape (n, K).

        Binary: class 1's interval is [p0, p1] and class 0's [1 - p1, 1 - p0]; every
        ``predict_proba`` value lies within its interval. ``features`` and ``progress``
        are accepted for the common signature and not used.
        """
        check_is_fitted(self, "n_classes_")
        proba = self._checked_proba(y_prob)
        _, low, high = self._classes(proba)
        return low, high


def _coupled(pair_values: NDArray[np.float64], n_classes: int,
             opposite: NDArray[np.float64] | None = None) -> NDArray[np.float64]:
    """Pairwise coupling of Price et al. (1995), shape (n, K):
    P(k) = 1 / (sum over l != k of 1 / P(k | k or l) - (K - 2)).

    ``pair_values[:, m]`` is P(j | i or j) of the m-th pair (i, j); class i takes
    1 - ``opposite[:, m]`` (``pair_values`` itself when not given).
    """
    other = pair_values if opposite is None else opposite
    reciprocal = np.zeros((pair_values.shape[0], n_classes))
    with np.errstate(divide="ignore"):
        for m, (first, second) in enumerate(combinations(range(n_classes), 2)):
            reciprocal[:, first] += 1.0 / (1.0 - other[:, m])
            reciprocal[:, second] += 1.0 / pair_values[:, m]
        return 1.0 / (reciprocal - (n_classes - 2))
