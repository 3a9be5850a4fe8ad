"""Calibration support and a covariate-shift check built on it.

Wagstaff & Dietterich 2023, §5.5 and eq. 6.

S_t = sum_i s(t, i), the proximity mass the calibration rows lend to row t:
roughly how many calibration rows share its leaves in the SWC forest. Low
values flag rows the calibration set does not represent; a batch whose
support distribution differs from the calibration rows' own suggests covariate
shift (the paper's rotated-digits experiment, Figure 6). The check is
two-sided: rows moved beyond the data fall into the trees' unbounded edge
leaves, which can hold many calibration rows, so support can rise as well.

The calibration rows' own support cannot come from the forest they trained
(each row would count itself), so it is cross-fitted: K folds, each fold's
rows scored by a forest fitted on the other folds against those rows, scaled
by n_cal / n_train to the size of the full calibration set. To compare a new
batch like with like, each batch row is scored the same way by one fold's
forest, chosen at random; under no shift both samples then have the same
distribution, and a two-sample Kolmogorov-Smirnov test compares them.

With row weights w_i of the calibration rows, S_t = sum_i s(t, i) w_i: the weight of
the calibration rows sharing t's leaves, with the SWC forests grown with the weights
(:class:`calibcore.recalibration.SWC`); the cross-fitted support is scaled by
sum(w) / sum(w of the training folds). Rows of weight 0 add nothing, exactly as if left
out, given the forests; the forests themselves leave them out (SWC drops them before
fitting). Integer weights give the sums of the repeated rows exactly given the forest,
but the bootstrapped forest only approximately.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.stats import ks_2samp
from sklearn.model_selection import KFold

from calibcore._progress import Heartbeat
from calibcore._validation import check_in_range, check_positive_int, check_probabilities
from calibcore.data.weights import check_sample_weight
from calibcore.exceptions import CalibrationInputError
from calibcore.heterogeneity.hidden import check_calibration_rows, check_features
from calibcore.recalibration.similarity import SWC

__all__ = ["CalibrationSupport", "SupportShift", "calibration_support", "compare_support"]


@dataclass(frozen=True)
class CalibrationSupport:
    """Support of some rows and the cross-fitted support of the calibration rows.

    Attributes
    ----------
    values : ndarray of shape (n,)
        S_t of each given row against all calibration rows (eq. 6).
    held_out : ndarray of shape (n,)
        The same rows scored like ``reference`` (one random fold's forest, scaled),
        for comparison with it.
    reference : ndarray of shape (n_cal,)
        Cross-fitted support of the calibration rows.
    n_calibration, n_folds, n_estimators : int
    """

    values: NDArray[np.float64]
    held_out: NDArray[np.float64]
    reference: NDArray[np.float64]
    n_calibration: int
    n_folds: int
    n_estimators: int

    def lowest(self, count: int = 10) -> NDArray[np.intp]:
        """Positions of the ``count`` rows with the lowest support, lowest first."""
        return np.argsort(self.values, kind="stable")[:count]


@dataclass(frozen=True)
class SupportShift:
    """Two-sample comparison of a batch's support with the calibration rows' support.

    Attributes
    ----------
    test : str
        "two-sample Kolmogorov-Smirnov".
    statistic : float
        KS D: the largest gap between the two empirical CDFs.
    p_value : float
    alpha : float
        Significance level of the warning.
    shifted : bool
        ``p_value < alpha``: the batch is not represented like the calibration rows.
    n_reference, n_batch : int
    reference_median, batch_median : float
    message : str
    """

    test: str
    statistic: float
    p_value: float
    alpha: float
    shifted: bool
    n_reference: int
    n_batch: int
    reference_median: float
    batch_median: float
    message: str


def calibration_support(
    X_cal: ArrayLike,
    y_cal: ArrayLike,
    p_cal: ArrayLike,
    X: ArrayLike | None = None,
    p: ArrayLike | None = None,
    *,
    n_estimators: int = 100,
    n_folds: int = 5,
    random_state: int = 0,
    n_jobs: int | None = None,
    progress: Callable[[float, int], None] | None = None,
    sample_weight: ArrayLike | None = None,
) -> CalibrationSupport:
    """Calibration support S_t of rows (X, p) and of the calibration rows.

    Wagstaff & Dietterich 2023, eq. 6.

    Parameters
    ----------
    X_cal, y_cal, p_cal : array-like
        Calibration features (n_cal, d), labels (n_cal,), probabilities (n_cal, K).
    X, p : array-like, optional
        Rows to score (features (n, d), probabilities (n, K)); labels not needed.
    n_estimators : int, default=100
        Trees of each SWC proximity forest.
    n_folds : int, default=5
        Folds of the cross-fitted reference.
    random_state : int, default=0
        Seeds the forests, the folds and the fold assignment of the rows.
    n_jobs : int or None
        Threads for the forest fits.
    progress : callable, optional
        Called as ``progress(done, total)`` with counts of forests fitted, also while
        one grows (at most every 0.25 s; ``done`` is then fractional: the forests done
        plus the share of the growing one's trees); an exception raised by it stops the
        work and propagates.
    sample_weight : array-like of shape (n_cal,), optional
        Non-negative weights of the calibration rows: S_t = sum_i s(t, i) w_i (see the
        module docstring); weights all 1 give the unweighted support bit for bit.

    Returns
    -------
    CalibrationSupport
    """
    features_cal, labels, proba_cal = check_calibration_rows(X_cal, y_cal, p_cal)
    features, proba = _query_rows(X, p, features_cal.shape[1], proba_cal.shape[1])
    n_cal = labels.size
    n_folds = check_positive_int(n_folds, "n_folds", minimum=2)
    if n_folds > n_cal:
        raise CalibrationInputError(f"n_folds ({n_folds}) exceeds the {n_cal} calibration rows.")
    n_estimators = check_positive_int(n_estimators, "n_estimators")
    random_state = check_positive_int(random_state, "random_state", minimum=0)
    weights = check_sample_weight(sample_weight, n_cal)
    if weights is not None and bool(np.all(weights == 1.0)):
        weights = None

    def new_model() -> SWC:
        return SWC(n_estimators=n_estimators, random_state=random_state, n_jobs=n_jobs)

    n_forests = n_folds + (1 if proba.shape[0] else 0)
    heartbeat = Heartbeat(progress, 0, n_forests)
    fitted = [0]  # forests done, for the fraction of the one growing

    def beat(fraction: float = 0.0, *_: object) -> None:
        # the forest's own heartbeat already keeps time; a forest takes minutes on large
        # files, so its share of trees grown moves the count between two forests
        heartbeat.now(fitted[0] + min(max(float(fraction), 0.0), 1.0), n_forests)

    values = np.empty(proba.shape[0])
    if values.size:
        full = new_model().fit(proba_cal, labels, features=features_cal, progress=beat,
                               sample_weight=weights)
        values = full.calibration_support(proba, features)
        fitted[0] = 1
        heartbeat.now(1, n_forests)
    reference = np.empty(n_cal)
    held_out = np.empty(proba.shape[0])
    fold_of_row = np.random.default_rng(random_state).integers(n_folds, size=held_out.size)
    folds = KFold(n_splits=n_folds, shuffle=True, random_state=random_state)
    for fold, (train, test) in enumerate(folds.split(features_cal)):
        model = new_model().fit(proba_cal[train], labels[train], features=features_cal[train],
                                progress=beat,
                                sample_weight=None if weights is None else weights[train])
        scale = (n_cal / train.size if weights is None
                 else float(np.sum(weights)) / float(np.sum(weights[train])))
        reference[test] = scale * model.calibration_support(proba_cal[test], features_cal[test])
        mine = fold_of_row == fold
        if mine.any():
            held_out[mine] = scale * model.calibration_support(proba[mine], features[mine])
        fitted[0] = n_forests - n_folds + fold + 1
        heartbeat.now(fitted[0], n_forests)
    return CalibrationSupport(
        values=values, held_out=held_out, reference=reference, n_calibration=n_cal,
        n_folds=n_folds, n_estimators=n_estimators,
    )


def compare_support(support: CalibrationSupport, *, alpha: float = 0.01) -> SupportShift:
    """Does the scored batch have the calibration rows' support distribution?

    A two-sample Kolmogorov-Smirnov test of ``support.held_out`` against
    ``support.reference``; ``shifted`` when p < ``alpha``.
    """
    alpha = check_in_range(alpha, "alpha", low=0.0, high=1.0, inclusive=False)
    if support.held_out.size == 0:
        raise CalibrationInputError(
            "no batch rows to compare: pass X and p to calibration_support."
        )
    result = ks_2samp(support.reference, support.held_out)
    statistic, p_value = float(result.statistic), float(result.pvalue)
    reference_median = float(np.median(support.reference))
    batch_median = float(np.median(support.held_out))
    shifted = p_value < alpha
    numbers = (f"KS D = {statistic:.3f}, p = {p_value:.2g} (alpha {alpha:g}); median support "
               f"{batch_median:.1f} in the batch ({support.held_out.size} rows) vs "
               f"{reference_median:.1f} in the calibration rows ({support.reference.size})")
    if shifted:
        message = ("Covariate-shift warning: the batch's calibration support differs from the "
                   f"calibration rows' ({numbers}). The calibration set may not represent "
                   "these rows; recalibrated probabilities may be unreliable.")
    else:
        message = f"No evidence of a shift in calibration support ({numbers})."
    return SupportShift(
        test="two-sample Kolmogorov-Smirnov", statistic=statistic, p_value=p_value,
        alpha=alpha, shifted=shifted, n_reference=int(support.reference.size),
        n_batch=int(support.held_out.size), reference_median=reference_median,
        batch_median=batch_median, message=message,
    )


def _query_rows(
    X: ArrayLike | None, p: ArrayLike | None, n_features: int, n_classes: int
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    if (X is None) != (p is None):
        raise CalibrationInputError("pass both X and p (features and probabilities) or neither.")
    if X is None or p is None:
        return np.empty((0, n_features)), np.empty((0, n_classes))
    proba = check_probabilities(p, name="p")
    if proba.shape[1] != n_classes:
        raise CalibrationInputError(f"p has {proba.shape[1]} classes but p_cal has {n_classes}.")
    features = check_features(X, proba.shape[0], name="X")
    if features.shape[1] != n_features:
        raise CalibrationInputError(
            f"X has {features.shape[1]} features but X_cal has {n_features}."
        )
    return features, proba
