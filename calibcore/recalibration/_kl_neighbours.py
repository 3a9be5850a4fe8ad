"""The KL neighbourhoods of LECE and LECD (Valk & Kull 2023), weighted and not, and their map.

The owner is :mod:`calibcore.recalibration.lece`, which re-exports the public names and
documents the method. Here are the distances, the blocked searches and the map
c(p) = w p + mean_i (y_i - w p_i) thresholded (Valk & Kull 2023, Algorithm 1).

The distances are one matrix product per block of query rows,
KL(p || p') = sum_j p_j log p_j - p . log p' (the first term is constant per
query row, so the ranking uses the product alone), and neighbours are selected
with ``argpartition``. With row weights the rows are sorted by distance and each
takes the part of its weight that fits in the neighbourhood's mass.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Literal

import numpy as np
from numpy.typing import NDArray
from scipy import sparse
from threadpoolctl import threadpool_limits

from calibcore.recalibration._binary_neighbours import (
    binary_neighbour_sums,
    weighted_binary_neighbour_sums,
)

#: Probabilities are clipped here before taking logs, as in the authors' code, so a
#: zero in the calibration prediction gives a large but finite divergence.
KL_CLIP = 1e-30
#: Entries of one block of the (query x calibration) distance matrix (16 MiB of float64):
#: the cross-validation's; the owner's public searches read their own copy.
BLOCK_ENTRIES = 2**21

Assumption = Literal["errors", "distributions"]
FloatArray = NDArray[np.float64]
Heartbeat = Callable[[float], None]

#: LECE averages the neighbours' errors y_i - p_i and adds the mean to p; LECD
#: averages their labels y_i and uses the mean alone. Both are
#: c(p) = w p + mean_i (y_i - w p_i), with w the weight below.
PREDICTION_WEIGHT: dict[Assumption, float] = {"errors": 1.0, "distributions": 0.0}


def neighbourhood_targets(
    proba: FloatArray, labels: NDArray[np.intp], assumption: Assumption
) -> FloatArray:
    """y_i - w p_i for every calibration row (see :data:`PREDICTION_WEIGHT`)."""
    return np.eye(proba.shape[1])[labels] - PREDICTION_WEIGHT[assumption] * proba


def apply_threshold(proba: FloatArray, calibrated: FloatArray, threshold: float) -> FloatArray:
    """Algorithm 1, lines 7-12: keep p_j where p_j <= t or c_j <= t, then renormalize rows.

    ``calibrated`` may carry leading axes (one per hyperparameter value); the
    last two axes match ``proba``.
    """
    kept = np.where((proba <= threshold) | (calibrated <= threshold), proba, calibrated)
    return kept / kept.sum(axis=-1, keepdims=True)


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


def neighbour_mass(neighborhood_size: float, total_weight: float) -> float:
    """k = int(q W) units of weight, at least 1 and at most W (the weighted
    :func:`neighbour_count`: what the rows repeated by integer weights would take)."""
    return min(float(total_weight), float(max(1, int(total_weight * neighborhood_size))))


def _distance_blocks(
    query: FloatArray, reference: FloatArray, block_entries: int, heartbeat: Heartbeat | None
) -> Iterator[tuple[slice, FloatArray]]:
    """(query rows, their :func:`_cross_entropy` to every reference row), a block at a time.

    Each block holds at most ``block_entries`` distances; ``heartbeat`` is called with the
    fraction of query rows done before each block.
    """
    negative_log_reference = _negative_log(reference)
    block = max(1, block_entries // reference.shape[0])
    # The per-block products are small; multithreaded BLAS only spins on them
    # (about twice the CPU time for the same wall time on two cores).
    with threadpool_limits(limits=1, user_api="blas"):
        for start in range(0, query.shape[0], block):
            if heartbeat is not None:
                heartbeat(start / query.shape[0])
            rows = slice(start, start + block)
            yield rows, _cross_entropy(query[rows], negative_log_reference)


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


def _weighted_nearest_sums(
    distances: FloatArray, targets: FloatArray, weights: FloatArray, masses: FloatArray,
    largest: int,
) -> FloatArray:
    """Sums of w_i-weighted ``targets`` over each row's nearest ``mass`` units of weight.

    Columns are taken nearest first (ties by index, as a stable sort takes them) among
    the ``largest`` nearest, which must hold the largest mass; the last one taken counts
    with the part of its weight that fits.

    Returns
    -------
    ndarray of shape (len(masses), n_rows, n_targets)
    """
    n_reference = distances.shape[1]
    if largest < n_reference:
        nearest = np.argpartition(distances, largest - 1, axis=1)[:, :largest]
        # the partition's order is arbitrary: index order first, then a stable sort
        nearest = np.sort(nearest, axis=1)
    else:
        nearest = np.broadcast_to(np.arange(n_reference), distances.shape)
    order = np.argsort(np.take_along_axis(distances, nearest, axis=1), axis=1, kind="stable")
    nearest = np.take_along_axis(nearest, order, axis=1)
    taken_weights = weights[nearest]
    before = np.cumsum(taken_weights, axis=1) - taken_weights
    sums = np.empty((masses.size, distances.shape[0], targets.shape[1]))
    share = np.zeros(distances.shape)
    for position, mass in enumerate(masses):
        taken = np.clip(mass - before, 0.0, taken_weights)
        share[:] = 0.0
        np.put_along_axis(share, nearest, taken, axis=1)
        sums[position] = share @ targets
    return sums


def neighbour_means_in_blocks(
    query: FloatArray,
    reference: FloatArray,
    targets: FloatArray,
    counts: Sequence[int] | NDArray[np.intp],
    *,
    binary: bool,
    block_entries: int,
    heartbeat: Heartbeat | None = None,
) -> FloatArray:
    """:func:`calibcore.recalibration.lece.neighbour_means`, told whether ``reference`` is
    on the binary curve and how many distances a block holds."""
    count_array = np.asarray(counts, dtype=np.intp)
    partial = count_array[count_array < reference.shape[0]]
    sums = np.empty((count_array.size, query.shape[0], targets.shape[1]))
    sums[partial.size:] = targets.sum(axis=0)
    if partial.size == 0:
        return sums / count_array[:, None, None]
    if binary:
        sums[: partial.size] = binary_neighbour_sums(query, reference, targets, partial,
                                                     clip=KL_CLIP, heartbeat=heartbeat)
        return sums / count_array[:, None, None]
    for rows, distances in _distance_blocks(query, reference, block_entries, heartbeat):
        sums[: partial.size, rows] = _nearest_sums(distances, targets, partial)
    return sums / count_array[:, None, None]


def weighted_neighbour_means_in_blocks(
    query: FloatArray,
    reference: FloatArray,
    targets: FloatArray,
    weights: FloatArray,
    masses: Sequence[float] | FloatArray,
    *,
    binary: bool,
    block_entries: int,
    heartbeat: Heartbeat | None = None,
) -> FloatArray:
    """:func:`calibcore.recalibration.lece.weighted_neighbour_means`, told whether
    ``reference`` is on the binary curve and how many distances a block holds."""
    mass_array = np.asarray(masses, dtype=np.float64)
    total = float(weights.sum())
    partial = mass_array[mass_array < total]
    sums = np.empty((mass_array.size, query.shape[0], targets.shape[1]))
    sums[partial.size:] = weights @ targets  # the whole reference: no search
    if partial.size == 0:
        return sums / mass_array[:, None, None]
    if binary:
        sums[: partial.size] = weighted_binary_neighbour_sums(
            query, reference, targets, weights, partial, clip=KL_CLIP, heartbeat=heartbeat)
        return sums / mass_array[:, None, None]
    largest = min(reference.shape[0], int(np.ceil(partial.max() / weights.min())))
    for rows, distances in _distance_blocks(query, reference, block_entries, heartbeat):
        sums[: partial.size, rows] = _weighted_nearest_sums(distances, targets, weights,
                                                            partial, largest)
    return sums / mass_array[:, None, None]
