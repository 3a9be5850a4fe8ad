"""Neighbourhood recalibration on the simplex: LECE and LECD (Valk & Kull 2023), and composition.

Valk & Kull, "Assuming Locally Equal Calibration Errors for Non-Parametric
Multiclass Calibration" (TMLR 2023), Section 3.2 and Algorithm 1. For a
prediction p, take its k nearest calibration predictions p_1..p_k by
KL(p || p_i) and

* LECE (locally equal calibration errors): c(p) = p - (1/k) sum_i (p_i - y_i);
* LECD (locally equal class distributions): c(p) = (1/k) sum_i y_i;

then keep p_j for every class j with p_j <= t or c_j(p) <= t (threshold t) and
divide the row by its sum. k = int(q * n) for a neighbourhood size q, a fraction
of the n calibration rows. Composing with temperature scaling first (TS+LECE,
:class:`Composed`) is what the paper recommends for many classes.

With row weights w_i (``sample_weight``) the neighbourhood is the k = int(q W) units of
weight nearest to p (W = sum_i w_i), the row at its edge counting with the part of its
weight that fits, and the means are weighted: c(p) = w p + sum_i a_i (y_i - w p_i) / k
with a_i the weight taken from row i. For integer weights that is the neighbourhood of
the rows repeated by their weights (up to how ties between distinct rows at the same
distance are broken).

Two-class rows are read as ``(1 - b, b)`` with b = P(class 1), which they are up to a
rounding (a softmax's two columns, as temperature scaling's in TS+LECE, can be a bit
off), so that two classes without weights always take the search along the sorted
calibration rows (:mod:`calibcore.recalibration._binary_neighbours`).

The neighbour search (one matrix product of distances per block of query rows) and the
map are in :mod:`calibcore.recalibration._kl_neighbours`, the cross-validation of q and
t in :mod:`calibcore.recalibration._lece_cross_validation`; their public names are
re-exported here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray
from sklearn.base import clone

from calibcore._progress import Heartbeat
from calibcore.exceptions import CalibrationInputError
from calibcore.recalibration._base import Recalibrator, register
from calibcore.recalibration._binary_neighbours import on_binary_curve, onto_binary_curve
from calibcore.recalibration._kl_neighbours import (
    BLOCK_ENTRIES,
    KL_CLIP,
    PREDICTION_WEIGHT,
    Assumption,
    FloatArray,
    apply_threshold,
    kl_divergence_matrix,
    neighbour_count,
    neighbour_mass,
    neighbour_means_in_blocks,
    neighbourhood_targets,
    weighted_neighbour_means_in_blocks,
)
from calibcore.recalibration._lece_cross_validation import (
    NEIGHBORHOOD_SIZE_GRID,
    THRESHOLD_GRID,
    check_fold_count,
    cross_validated_log_loss,
    search_grid,
)
from calibcore.recalibration.scaling import TemperatureScaling

__all__ = [
    "KL_CLIP",
    "LECD",
    "LECE",
    "NEIGHBORHOOD_SIZE_GRID",
    "THRESHOLD_GRID",
    "Composed",
    "apply_threshold",
    "cross_validated_log_loss",
    "kl_divergence_matrix",
    "neighbour_count",
    "neighbour_means",
    "weighted_neighbour_means",
]

#: Distances per block of the two searches below (16 MiB of float64).
_BLOCK_ENTRIES = BLOCK_ENTRIES


def neighbour_means(
    query: FloatArray,
    reference: FloatArray,
    targets: FloatArray,
    counts: Sequence[int] | NDArray[np.intp],
    *,
    heartbeat: Callable[[float], None] | None = None,
) -> FloatArray:
    """Mean of ``targets`` over the k nearest reference rows (by KL) for each k in ``counts``.

    Parameters
    ----------
    query : ndarray of shape (n_query, K)
        Probabilities whose neighbourhoods are wanted.
    reference : ndarray of shape (n_reference, K)
        Calibration probabilities.
    targets : ndarray of shape (n_reference, d)
        Values averaged over each neighbourhood.
    counts : sequence of int
        Neighbourhood sizes, strictly increasing, each in 1..n_reference.
    heartbeat : callable, optional
        Called with the fraction of query rows done before each block of them (it
        may raise to stop the search).

    Returns
    -------
    ndarray of shape (len(counts), n_query, d)

    Notes
    -----
    Blocked over query rows so one block of distances holds at most
    :data:`_BLOCK_ENTRIES` entries. Ties in distance are broken arbitrarily (by
    ``argpartition``), as in the authors' code. When every reference row is
    exactly ``(1 - b, b)`` (binary input), the neighbours are found in sorted order
    instead (:mod:`calibcore.recalibration._binary_neighbours`: the same
    neighbourhoods in O(n log n), identical rows taken lowest index first).
    """
    return neighbour_means_in_blocks(
        query, reference, targets, counts, binary=on_binary_curve(reference),
        block_entries=_BLOCK_ENTRIES, heartbeat=heartbeat)


def weighted_neighbour_means(
    query: FloatArray,
    reference: FloatArray,
    targets: FloatArray,
    weights: FloatArray,
    masses: Sequence[float] | FloatArray,
    *,
    heartbeat: Callable[[float], None] | None = None,
) -> FloatArray:
    """Weighted mean of ``targets`` over the nearest ``mass`` units of weight (by KL), for
    each mass in ``masses``: :func:`neighbour_means` with row weights.

    Reference rows are taken nearest first (ties by index, as a stable sort takes them)
    until their weights reach the mass; the last one taken counts with the part of its
    weight that fits. For integer weights and integer masses this is the mean over the
    nearest rows of the reference repeated by its weights.

    Parameters
    ----------
    query : ndarray of shape (n_query, K)
    reference : ndarray of shape (n_reference, K)
    targets : ndarray of shape (n_reference, d)
    weights : ndarray of shape (n_reference,)
        Positive row weights.
    masses : sequence of float
        Neighbourhood masses, increasing, each in (0, sum(weights)].
    heartbeat : callable, optional
        As in :func:`neighbour_means`.

    Returns
    -------
    ndarray of shape (len(masses), n_query, d)

    Notes
    -----
    Each query row's reference rows are partitioned to the fewest that surely hold the
    largest mass (mass / smallest weight) and those are sorted: O(n log n) per query row
    at worst, where the unweighted search only selects. When every reference row is
    exactly ``(1 - b, b)``, the nearest rows are a window of the rows sorted by b
    (:mod:`calibcore.recalibration._binary_neighbours`), and the fewest that reach the
    mass are found by a binary search over their count: O(log^2 n) per query row, ties
    as :func:`neighbour_means` takes them.
    """
    return weighted_neighbour_means_in_blocks(
        query, reference, targets, weights, masses, binary=on_binary_curve(reference),
        block_entries=_BLOCK_ENTRIES, heartbeat=heartbeat)


class _NeighbourhoodRecalibrator(Recalibrator):
    """Shared fit/predict of LECE and LECD; subclasses set ``assumption``.

    Parameters and attributes are documented on :class:`LECE`.
    """

    assumption: ClassVar[Assumption]
    supports_weights = True
    fitted_attributes = (
        "calibration_proba_",
        "calibration_labels_",
        "neighborhood_size_",
        "threshold_",
        "cv_log_loss_",
        "calibration_weights_",
    )
    #: documents written before weights were taken have none
    calibration_weights_: FloatArray | None = None

    def __init__(
        self,
        *,
        neighborhood_size: float | None = None,
        threshold: float | None = None,
        n_folds: int = 10,
        random_state: int | None = 0,
    ) -> None:
        self.neighborhood_size = neighborhood_size
        self.threshold = threshold
        self.n_folds = n_folds
        self.random_state = random_state

    def _fit(
        self,
        proba: FloatArray,
        labels: NDArray[np.intp],
        features: FloatArray | None,
        heartbeat: Heartbeat,
        weights: FloatArray | None = None,
    ) -> None:
        proba = onto_binary_curve(proba)
        if weights is not None:  # rows of weight 0 are absent
            present = weights > 0
            proba, labels, weights = proba[present], labels[present], weights[present]
        sizes = search_grid(self.neighborhood_size, NEIGHBORHOOD_SIZE_GRID,
                             "neighborhood_size", allow_zero=False)
        thresholds = search_grid(self.threshold, THRESHOLD_GRID, "threshold", allow_zero=True)
        self.cv_log_loss_ = None
        best_size, best_threshold = 0, 0
        if len(sizes) * len(thresholds) > 1:
            n_folds = check_fold_count(self.n_folds, labels.size)
            self.cv_log_loss_ = cross_validated_log_loss(
                proba, labels, assumption=self.assumption, neighborhood_sizes=sizes,
                thresholds=thresholds, n_folds=n_folds, random_state=self.random_state,
                heartbeat=heartbeat, sample_weight=weights,
            )
            # The first minimum in q-major order, as the authors' grid search takes it.
            best = np.unravel_index(int(np.argmin(self.cv_log_loss_)), self.cv_log_loss_.shape)
            best_size, best_threshold = int(best[0]), int(best[1])
        self.neighborhood_size_ = float(sizes[best_size])
        self.threshold_ = float(thresholds[best_threshold])
        self.calibration_proba_ = proba.copy()
        self.calibration_labels_ = labels.copy()
        self.calibration_weights_ = None if weights is None else weights.astype(np.float64)

    def _predict(
        self,
        proba: FloatArray,
        features: FloatArray | None,
        heartbeat: Heartbeat,
    ) -> FloatArray:
        proba = onto_binary_curve(proba)
        reference = onto_binary_curve(self.calibration_proba_)  # as fitted before, too
        targets = neighbourhood_targets(reference, self.calibration_labels_, self.assumption)
        weights = self.calibration_weights_
        if weights is None:
            count = neighbour_count(self.neighborhood_size_, reference.shape[0])
            message = f"averaging the {count:,} nearest calibration rows"
            means = neighbour_means(proba, reference, targets, [count],
                                    heartbeat=lambda done: heartbeat(done, message))
        else:
            weights = np.asarray(weights, dtype=np.float64)
            mass = neighbour_mass(self.neighborhood_size_, float(weights.sum()))
            message = f"averaging the nearest {mass:,g} units of weight"
            means = weighted_neighbour_means(proba, reference, targets, weights, [mass],
                                             heartbeat=lambda done: heartbeat(done, message))
        calibrated = PREDICTION_WEIGHT[self.assumption] * proba + means[0]
        return apply_threshold(proba, calibrated, self.threshold_)


@register
class LECE(_NeighbourhoodRecalibrator):
    """LECE calibration: subtract the mean calibration error of the k nearest calibration rows.

    Valk & Kull 2023, Algorithm 1: c(p) = p - (1/k) sum_{i in N_k(p)} (p_i - y_i), with
    N_k(p) the k calibration rows nearest to p in KL(p || p_i); classes with
    p_j <= t or c_j(p) <= t keep p_j, and rows are renormalized.

    Parameters
    ----------
    neighborhood_size : float in (0, 1] or None, default=None
        q, the neighbourhood as a fraction of the calibration rows (k = int(q n)).
        None chooses it by cross-validation over :data:`NEIGHBORHOOD_SIZE_GRID`.
    threshold : float in [0, 1] or None, default=None
        t; None chooses it by cross-validation over :data:`THRESHOLD_GRID`.
        t = 0 only keeps outputs non-negative; t = 1 is the identity map.
    n_folds : int, default=10
        Folds of the cross-validation on log-loss (used when either parameter is None).
    random_state : int or None, default=0
        Seeds the fold shuffle.

    Attributes
    ----------
    calibration_proba_ : ndarray of shape (n, K)
    calibration_labels_ : ndarray of shape (n,)
        The calibration rows, which are the fitted state of this method.
    calibration_weights_ : ndarray of shape (n,) or None
        Their weights (None: fitted without weights). With weights the neighbourhood is
        the k = int(q W) units of weight nearest to p and the means are weighted (see
        the module docstring); the folds of the cross-validation split the rows, and
        its held-out log-loss is weighted.
    neighborhood_size_, threshold_ : float
        The values used (given, or chosen by cross-validation).
    cv_log_loss_ : ndarray of shape (n_sizes, n_thresholds) or None
        Mean held-out log-loss over the grid searched (None when nothing was searched).
    """

    method = "lece"
    display_name = "LECE (locally equal calibration errors)"
    assumption = "errors"


@register
class LECD(_NeighbourhoodRecalibrator):
    """LECD calibration: the mean one-hot label of the k nearest calibration rows.

    Valk & Kull 2023, Section 3.2: c(p) = (1/k) sum_{i in N_k(p)} y_i, with the same
    KL neighbourhood, thresholding and renormalization as :class:`LECE`; the
    parameters and attributes are those of :class:`LECE`.
    """

    method = "lecd"
    display_name = "LECD (locally equal class distributions)"
    assumption = "distributions"


class _StepsTakeWeights:
    """``Composed.supports_weights``: on a composition, whether every one of its steps
    takes weights; on the class, whether the default steps (TS+LECE) do."""

    def __get__(self, instance: Composed | None, owner: type[Composed]) -> bool:
        steps = owner._DEFAULT_STEPS if instance is None else instance._template_steps()
        return all(step.supports_weights for step in steps)


@register
class Composed(Recalibrator):
    """Recalibrators applied in sequence, each fitted on the previous one's output.

    The paper's TS+LECE is ``Composed(steps=[TemperatureScaling(), LECE()])``,
    which is also what ``steps=None`` means.

    It takes ``sample_weight`` when every step does (each step is fitted with the
    weights); with a step that does not, the weights are refused naming that step.

    Parameters
    ----------
    steps : sequence of Recalibrator or None, default=None
        Unfitted recalibrators; they are cloned at fit, never modified.

    Attributes
    ----------
    steps_ : list of Recalibrator
        The fitted clones.
    """

    method = "composed"
    display_name = "Composition (e.g. TS+LECE)"
    fitted_attributes = ("steps_",)
    _DEFAULT_STEPS: ClassVar[tuple[Recalibrator, ...]] = (TemperatureScaling(), LECE())
    supports_weights = _StepsTakeWeights()

    def __init__(self, *, steps: Sequence[Recalibrator] | None = None) -> None:
        self.steps = steps

    def _template_steps(self) -> list[Recalibrator]:
        if self.steps is None:
            return [clone(step) for step in self._DEFAULT_STEPS]
        steps = list(self.steps)
        if not steps or not all(isinstance(step, Recalibrator) for step in steps):
            raise CalibrationInputError(
                "steps must be a non-empty list of calibcore recalibrators, got "
                f"{self.steps!r}."
            )
        return steps

    def _weights_refusal(self) -> str:
        refusing = [step.display_name or type(step).__name__
                    for step in self._template_steps() if not step.supports_weights]
        return (f"this composition does not take sample weights: its step(s) "
                f"{', '.join(refusing)} do not")

    def _check_features(self, features: Any, n_rows: int) -> FloatArray | None:
        needing = [step for step in self._template_steps() if step.needs_features]
        return needing[0]._check_features(features, n_rows) if needing else None

    def _fit(
        self,
        proba: FloatArray,
        labels: NDArray[np.intp],
        features: FloatArray | None,
        heartbeat: Heartbeat,
        weights: FloatArray | None = None,
    ) -> None:
        self.steps_ = [clone(step) for step in self._template_steps()]
        current = proba
        for position, step in enumerate(self.steps_):
            step_features = features if step.needs_features else None
            step.fit(current, labels, step_features, progress=heartbeat, sample_weight=weights)
            if position < len(self.steps_) - 1:
                current = step.predict_proba(current, step_features, progress=heartbeat)

    def _predict(
        self,
        proba: FloatArray,
        features: FloatArray | None,
        heartbeat: Heartbeat,
    ) -> FloatArray:
        current = proba
        for step in self.steps_:
            current = step.predict_proba(current, features if step.needs_features else None,
                                         progress=heartbeat)
        return current
