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

The distances are one matrix product per block of query rows,
KL(p || p') = sum_j p_j log p_j - p . log p' (the first term is constant per
query row, so the ranking uses the product alone), and neighbours are selected
with ``argpartition``. With row weights w_i (``sample_weight``) the neighbourhood is the
k = int(q W) units of weight nearest to p (W = sum_i w_i), the row at its edge counting
with the part of its weight that fits, and the means are weighted:
c(p) = w p + sum_i a_i (y_i - w p_i) / k with a_i the weight taken from row i. For
integer weights that is the neighbourhood of the rows repeated by their weights (up to
how ties between distinct rows at the same distance are broken). Choosing q and t by
cross-validation computes the distances
once per fold, sorts each validation row's nearest neighbours once and reads
every q off prefix sums of the sorted neighbours' targets.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar, Literal

import numpy as np
from numpy.typing import NDArray
from scipy import sparse
from sklearn.base import clone
from sklearn.model_selection import KFold
from threadpoolctl import threadpool_limits

from calibcore._progress import Heartbeat
from calibcore._validation import check_in_range, check_positive_int
from calibcore.exceptions import CalibrationInputError
from calibcore.metrics.measures import NLL_CLIP
from calibcore.recalibration._base import Recalibrator, register
from calibcore.recalibration._binary_neighbours import binary_neighbour_sums, on_binary_curve
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

#: The paper's cross-validation grid for the neighbourhood size q = k / n (Section 4.2.2).
NEIGHBORHOOD_SIZE_GRID: tuple[float, ...] = (
    0.01, 0.02, 0.03, 0.04, 0.05, 0.06, 0.07, 0.1, 0.2, 1.0,
)
#: The paper's cross-validation grid for the threshold t (t = 1 is the identity map).
THRESHOLD_GRID: tuple[float, ...] = (
    0.0, 0.00125, 0.0025, 0.005, 0.01, 0.02, 0.04, 0.05, 0.1, 1.0,
)

#: Probabilities are clipped here before taking logs, as in the authors' code, so a
#: zero in the calibration prediction gives a large but finite divergence.
KL_CLIP = 1e-30
#: Entries of one block of the (query x calibration) distance matrix (16 MiB of float64).
_BLOCK_ENTRIES = 2**21

Assumption = Literal["errors", "distributions"]
FloatArray = NDArray[np.float64]


def kl_divergence_matrix(query: FloatArray, reference: FloatArray) -> FloatArray:
    """KL(query_i || reference_j) for every pair of rows, as one matrix product.

    Parameters
    ----------
    query : ndarray of shape (n_query, K)
    reference : ndarray of shape (n_reference, K)

    Returns
    -------
    ndarray of shape (n_query, n_reference)
        sum_c q_c log q_c - q . log r, with both clipped at :data:`KL_CLIP`
        (Valk & Kull 2023, Section 3.2: d_KL(p, p') = sum_i p_i log(p_i / p'_i)).
    """
    query = np.clip(query, KL_CLIP, 1.0)
    entropy_term = np.einsum("ij,ij->i", query, np.log(query))
    return entropy_term[:, None] + _cross_entropy(query, _negative_log(reference))


def _negative_log(proba: FloatArray) -> FloatArray:
    return -np.log(np.clip(proba, KL_CLIP, 1.0))


def _cross_entropy(query: FloatArray, negative_log_reference: FloatArray) -> FloatArray:
    """-sum_c q_c log r_c for every pair of rows: KL(q || r) minus a per-query-row constant.

    The neighbour search ranks each query row's reference rows by this, which
    orders them exactly as KL(q || r) does without the extra pass adding the
    entropy term.
    """
    return np.clip(query, KL_CLIP, 1.0) @ negative_log_reference.T


def neighbour_count(neighborhood_size: float, n_reference: int) -> int:
    """k = int(q * n), at least one neighbour (the authors' code has no floor)."""
    return max(1, int(n_reference * neighborhood_size))


def _segment_sums(
    nearest: NDArray[np.intp], targets: FloatArray, start: int, stop: int
) -> FloatArray:
    """Sum of ``targets`` over columns start:stop of ``nearest``, as a sparse product."""
    columns = nearest[:, start:stop]
    n_rows, width = columns.shape
    selector = sparse.csr_matrix(
        (np.ones(n_rows * width), columns.ravel(), np.arange(0, n_rows * width + 1, width)),
        shape=(n_rows, targets.shape[0]),
    )
    return np.asarray(selector @ targets)


def _nearest_sums(
    distances: FloatArray, targets: FloatArray, counts: NDArray[np.intp]
) -> FloatArray:
    """Sums of ``targets`` over each row's counts[j] nearest columns of ``distances``.

    ``counts`` is strictly increasing and below the number of columns. With one
    count the neighbours are only selected; with several they are also sorted
    once and the sums for every count are prefix sums over the sorted order.

    Returns
    -------
    ndarray of shape (len(counts), n_rows, n_targets)
    """
    largest = int(counts[-1])
    nearest = np.argpartition(distances, largest - 1, axis=1)[:, :largest]
    if counts.size > 1:
        order = np.argsort(np.take_along_axis(distances, nearest, axis=1), axis=1, kind="stable")
        nearest = np.take_along_axis(nearest, order, axis=1)
    starts = np.concatenate([[0], counts[:-1]])
    segments = [
        _segment_sums(nearest, targets, int(lo), int(hi))
        for lo, hi in zip(starts, counts, strict=True)
    ]
    return np.cumsum(np.stack(segments), axis=0)


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
    count_array = np.asarray(counts, dtype=np.intp)
    n_reference = reference.shape[0]
    partial = count_array[count_array < n_reference]
    negative_log_reference = _negative_log(reference)
    sums = np.empty((count_array.size, query.shape[0], targets.shape[1]))
    sums[partial.size:] = targets.sum(axis=0)
    if partial.size == 0:
        return sums / count_array[:, None, None]
    if on_binary_curve(reference):
        sums[: partial.size] = binary_neighbour_sums(query, reference, targets, partial,
                                                     clip=KL_CLIP, heartbeat=heartbeat)
        return sums / count_array[:, None, None]
    block = max(1, _BLOCK_ENTRIES // n_reference)
    # The per-block products are small; multithreaded BLAS only spins on them
    # (about twice the CPU time for the same wall time on two cores).
    with threadpool_limits(limits=1, user_api="blas"):
        for start in range(0, query.shape[0], block):
            if heartbeat is not None:
                heartbeat(start / query.shape[0])
            rows = slice(start, start + block)
            distances = _cross_entropy(query[rows], negative_log_reference)
            sums[: partial.size, rows] = _nearest_sums(distances, targets, partial)
    return sums / count_array[:, None, None]


def neighbour_mass(neighborhood_size: float, total_weight: float) -> float:
    """k = int(q W) units of weight, at least 1 and at most W (the weighted
    :func:`neighbour_count`: what the rows repeated by integer weights would take)."""
    return min(float(total_weight), float(max(1, int(total_weight * neighborhood_size))))


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
    at worst, where the unweighted search only selects.
    """
    mass_array = np.asarray(masses, dtype=np.float64)
    n_reference = reference.shape[0]
    total = float(weights.sum())
    partial = mass_array[mass_array < total]
    sums = np.empty((mass_array.size, query.shape[0], targets.shape[1]))
    sums[partial.size:] = weights @ targets  # the whole reference: no search
    if partial.size == 0:
        return sums / mass_array[:, None, None]
    largest = min(n_reference, int(np.ceil(partial.max() / weights.min())))
    negative_log_reference = _negative_log(reference)
    block = max(1, _BLOCK_ENTRIES // n_reference)
    with threadpool_limits(limits=1, user_api="blas"):
        for start in range(0, query.shape[0], block):
            if heartbeat is not None:
                heartbeat(start / query.shape[0])
            rows = slice(start, start + block)
            distances = _cross_entropy(query[rows], negative_log_reference)
            if largest < n_reference:
                nearest = np.argpartition(distances, largest - 1, axis=1)[:, :largest]
                # the partition's order is arbitrary: index order first, then a stable sort
                nearest = np.sort(nearest, axis=1)
            else:
                nearest = np.broadcast_to(np.arange(n_reference), distances.shape)
            order = np.argsort(np.take_along_axis(distances, nearest, axis=1), axis=1,
                               kind="stable")
            nearest = np.take_along_axis(nearest, order, axis=1)
            taken_weights = weights[nearest]
            before = np.cumsum(taken_weights, axis=1) - taken_weights
            share = np.zeros(distances.shape)
            for position, mass in enumerate(partial):
                taken = np.clip(mass - before, 0.0, taken_weights)
                share[:] = 0.0
                np.put_along_axis(share, nearest, taken, axis=1)
                sums[position, rows] = share @ targets
    return sums / mass_array[:, None, None]


def apply_threshold(proba: FloatArray, calibrated: FloatArray, threshold: float) -> FloatArray:
    """Algorithm 1, lines 7-12: keep p_j where p_j <= t or c_j <= t, then renormalize rows.

    ``calibrated`` may carry leading axes (one per hyperparameter value); the
    last two axes match ``proba``.
    """
    kept = np.where((proba <= threshold) | (calibrated <= threshold), proba, calibrated)
    return kept / kept.sum(axis=-1, keepdims=True)


#: LECE averages the neighbours' errors y_i - p_i and adds the mean to p; LECD
#: averages their labels y_i and uses the mean alone. Both are
#: c(p) = w p + mean_i (y_i - w p_i), with w the weight below.
_PREDICTION_WEIGHT: dict[Assumption, float] = {"errors": 1.0, "distributions": 0.0}


def _neighbourhood_targets(
    proba: FloatArray, labels: NDArray[np.intp], assumption: Assumption
) -> FloatArray:
    """y_i - w p_i for every calibration row (see :data:`_PREDICTION_WEIGHT`)."""
    return np.eye(proba.shape[1])[labels] - _PREDICTION_WEIGHT[assumption] * proba


def cross_validated_log_loss(
    proba: FloatArray,
    labels: NDArray[np.intp],
    *,
    assumption: Assumption,
    neighborhood_sizes: Sequence[float],
    thresholds: Sequence[float],
    n_folds: int,
    random_state: int | np.random.RandomState | None,
    heartbeat: Callable[[float, str], None] | None = None,
    sample_weight: FloatArray | None = None,
) -> FloatArray:
    """Mean over folds of the held-out log-loss for every (q, t) pair.

    Folds are ``KFold(n_folds, shuffle=True, random_state)``, as in the authors'
    code; k = int(q * n_fold_train). Probabilities are clipped at 1e-12 in the loss.
    With ``sample_weight`` (positive) the folds split the rows with their weights, the
    neighbourhoods are weighted (:func:`weighted_neighbour_means`, k = int(q W_train))
    and each fold's held-out loss is the weighted mean.
    ``heartbeat(fraction done, message)`` is called between blocks of the neighbour
    searches (see :func:`neighbour_means`).

    Returns
    -------
    ndarray of shape (len(neighborhood_sizes), len(thresholds))
    """
    targets = _neighbourhood_targets(proba, labels, assumption)
    weight = _PREDICTION_WEIGHT[assumption]
    losses = np.zeros((len(neighborhood_sizes), len(thresholds)))
    folds = KFold(n_splits=n_folds, shuffle=True, random_state=random_state)
    for fold, (train, held_out) in enumerate(folds.split(proba)):
        fold_heartbeat = None if heartbeat is None else _fold_heartbeat(heartbeat, fold, n_folds)
        if sample_weight is None:
            counts = [neighbour_count(q, train.size) for q in neighborhood_sizes]
            unique_counts, position = np.unique(counts, return_inverse=True)
            means = neighbour_means(proba[held_out], proba[train], targets[train],
                                    unique_counts, heartbeat=fold_heartbeat)
        else:
            total = float(sample_weight[train].sum())
            masses = [neighbour_mass(q, total) for q in neighborhood_sizes]
            unique_masses, position = np.unique(masses, return_inverse=True)
            means = weighted_neighbour_means(proba[held_out], proba[train], targets[train],
                                             sample_weight[train], unique_masses,
                                             heartbeat=fold_heartbeat)
        calibrated = weight * proba[held_out] + means[position]
        rows = np.arange(held_out.size)
        for column, threshold in enumerate(thresholds):
            output = apply_threshold(proba[held_out], calibrated, threshold)
            true_class = np.clip(output[:, rows, labels[held_out]], NLL_CLIP, 1.0)
            if sample_weight is None:
                losses[:, column] -= np.log(true_class).mean(axis=1)
            else:
                losses[:, column] -= np.average(np.log(true_class), axis=1,
                                                weights=sample_weight[held_out])
    return losses / n_folds


def _fold_heartbeat(
    heartbeat: Callable[[float, str], None], fold: int, n_folds: int
) -> Callable[[float], None]:
    """The heartbeat of one fold's neighbour search, as a fraction of the whole search."""
    message = f"cross-validating q and t: fold {fold + 1} of {n_folds}"

    def beat(done: float) -> None:
        heartbeat((fold + done) / n_folds, message)

    return beat


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
        if weights is not None:  # rows of weight 0 are absent
            present = weights > 0
            proba, labels, weights = proba[present], labels[present], weights[present]
        sizes = _search_grid(self.neighborhood_size, NEIGHBORHOOD_SIZE_GRID,
                             "neighborhood_size", allow_zero=False)
        thresholds = _search_grid(self.threshold, THRESHOLD_GRID, "threshold", allow_zero=True)
        self.cv_log_loss_ = None
        best_size, best_threshold = 0, 0
        if len(sizes) * len(thresholds) > 1:
            n_folds = check_positive_int(self.n_folds, "n_folds", minimum=2)
            if labels.size < n_folds:
                raise CalibrationInputError(
                    f"choosing neighborhood_size and threshold by {n_folds}-fold "
                    f"cross-validation needs at least {n_folds} calibration rows, got "
                    f"{labels.size}; pass both parameters explicitly or use more rows."
                )
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
        reference = self.calibration_proba_
        targets = _neighbourhood_targets(reference, self.calibration_labels_, self.assumption)
        weights = self.calibration_weights_
        if weights is not None:
            weights = np.asarray(weights, dtype=np.float64)
            mass = neighbour_mass(self.neighborhood_size_, float(weights.sum()))

            def weighed(done: float) -> None:
                heartbeat(done, f"averaging the nearest {mass:,g} units of weight")

            means = weighted_neighbour_means(proba, reference, targets, weights, [mass],
                                             heartbeat=weighed)[0]
            calibrated = _PREDICTION_WEIGHT[self.assumption] * proba + means
            return apply_threshold(proba, calibrated, self.threshold_)
        count = neighbour_count(self.neighborhood_size_, reference.shape[0])
        def beat(done: float) -> None:
            heartbeat(done, f"averaging the {count:,} nearest calibration rows")

        means = neighbour_means(proba, reference, targets, [count], heartbeat=beat)[0]
        calibrated = _PREDICTION_WEIGHT[self.assumption] * proba + means
        return apply_threshold(proba, calibrated, self.threshold_)


def _search_grid(
    value: float | None, grid: tuple[float, ...], name: str, *, allow_zero: bool
) -> tuple[float, ...]:
    """The paper's grid when ``value`` is None, else the validated value alone."""
    if value is None:
        return grid
    number = check_in_range(value, name, low=0.0, high=1.0)
    if number == 0.0 and not allow_zero:
        raise CalibrationInputError(f"{name} must be in (0, 1], got {value!r}.")
    return (number,)


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
