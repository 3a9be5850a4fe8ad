"""Choosing LECE/LECD's neighbourhood size q and threshold t by cross-validated log-loss.

The owner is :mod:`calibcore.recalibration.lece` (Valk & Kull 2023, Section 4.2.2, with
the paper's grids). The distances are computed once per fold, each validation row's nearest
neighbours are sorted once and every q is read off prefix sums of the sorted neighbours'
targets (:mod:`calibcore.recalibration._kl_neighbours`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from numpy.typing import NDArray
from sklearn.model_selection import KFold

from calibcore._validation import check_in_range, check_positive_int
from calibcore.exceptions import CalibrationInputError
from calibcore.metrics.measures import NLL_CLIP
from calibcore.recalibration._binary_neighbours import on_binary_curve
from calibcore.recalibration._kl_neighbours import (
    BLOCK_ENTRIES,
    PREDICTION_WEIGHT,
    Assumption,
    FloatArray,
    apply_threshold,
    neighbour_count,
    neighbour_mass,
    neighbour_means_in_blocks,
    neighbourhood_targets,
    weighted_neighbour_means_in_blocks,
)

#: The paper's cross-validation grid for the neighbourhood size q = k / n (Section 4.2.2).
NEIGHBORHOOD_SIZE_GRID: tuple[float, ...] = (
    0.01, 0.02, 0.03, 0.04, 0.05, 0.06, 0.07, 0.1, 0.2, 1.0,
)
#: The paper's cross-validation grid for the threshold t (t = 1 is the identity map).
THRESHOLD_GRID: tuple[float, ...] = (
    0.0, 0.00125, 0.0025, 0.005, 0.01, 0.02, 0.04, 0.05, 0.1, 1.0,
)


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
    neighbourhoods are weighted
    (:func:`~calibcore.recalibration.lece.weighted_neighbour_means`, k = int(q W_train))
    and each fold's held-out loss is the weighted mean.
    ``heartbeat(fraction done, message)`` is called between blocks of the neighbour
    searches (see :func:`~calibcore.recalibration.lece.neighbour_means`).

    Returns
    -------
    ndarray of shape (len(neighborhood_sizes), len(thresholds))
    """
    targets = neighbourhood_targets(proba, labels, assumption)
    weight = PREDICTION_WEIGHT[assumption]
    losses = np.zeros((len(neighborhood_sizes), len(thresholds)))
    folds = KFold(n_splits=n_folds, shuffle=True, random_state=random_state)
    for fold, (train, held_out) in enumerate(folds.split(proba)):
        fold_heartbeat = None if heartbeat is None else _fold_heartbeat(heartbeat, fold, n_folds)
        query, reference = proba[held_out], proba[train]
        if sample_weight is None:
            counts = [neighbour_count(q, train.size) for q in neighborhood_sizes]
            unique_counts, position = np.unique(counts, return_inverse=True)
            means = neighbour_means_in_blocks(
                query, reference, targets[train], unique_counts,
                binary=on_binary_curve(reference), block_entries=BLOCK_ENTRIES,
                heartbeat=fold_heartbeat)
        else:
            total = float(sample_weight[train].sum())
            masses = [neighbour_mass(q, total) for q in neighborhood_sizes]
            unique_masses, position = np.unique(masses, return_inverse=True)
            means = weighted_neighbour_means_in_blocks(
                query, reference, targets[train], sample_weight[train], unique_masses,
                binary=on_binary_curve(reference), block_entries=BLOCK_ENTRIES,
                heartbeat=fold_heartbeat)
        calibrated = weight * proba[held_out] + means[position]
        rows = np.arange(held_out.size)
        held_out_weights = None if sample_weight is None else sample_weight[held_out]
        for column, threshold in enumerate(thresholds):
            output = apply_threshold(proba[held_out], calibrated, threshold)
            true_class = np.clip(output[:, rows, labels[held_out]], NLL_CLIP, 1.0)
            # without weights np.average is the plain mean, to the bit
            losses[:, column] -= np.average(np.log(true_class), axis=1,
                                            weights=held_out_weights)
    return losses / n_folds


def _fold_heartbeat(
    heartbeat: Callable[[float, str], None], fold: int, n_folds: int
) -> Callable[[float], None]:
    """The heartbeat of one fold's neighbour search, as a fraction of the whole search."""
    message = f"cross-validating q and t: fold {fold + 1} of {n_folds}"

    def beat(done: float) -> None:
        heartbeat((fold + done) / n_folds, message)

    return beat


def search_grid(
    value: float | None, grid: tuple[float, ...], name: str, *, allow_zero: bool
) -> tuple[float, ...]:
    """The paper's grid when ``value`` is None, else the validated value alone."""
    if value is None:
        return grid
    number = check_in_range(value, name, low=0.0, high=1.0)
    if number == 0.0 and not allow_zero:
        raise CalibrationInputError(f"{name} must be in (0, 1], got {value!r}.")
    return (number,)


def check_fold_count(n_folds: int, n_rows: int) -> int:
    """``n_folds`` validated (at least 2, and at most the number of calibration rows)."""
    folds = check_positive_int(n_folds, "n_folds", minimum=2)
    if n_rows < folds:
        raise CalibrationInputError(
            f"choosing neighborhood_size and threshold by {folds}-fold "
            f"cross-validation needs at least {folds} calibration rows, got "
            f"{n_rows}; pass both parameters explicitly or use more rows."
        )
    return folds
