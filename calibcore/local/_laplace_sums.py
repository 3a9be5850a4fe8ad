"""Exact sums of the L1 Laplace kernel, ``sum_j exp(-||x_i - x_j||_1) w_j``.

The local calibration error (LCE) and LoRe (Luo et al. 2022, eqs. 4 and 6) both need, for
every target row i, kernel-weighted sums over source rows j of the same confidence bin. Forming the
n x n kernel matrix is out of the question for hundreds of thousands of rows, so
two exact evaluators are provided; coordinates arrive already divided by the
bandwidth ``d * gamma``.

* **Sweep** (low dimension, d <= 3). The L1 Laplace kernel factorizes over
  coordinates, ``exp(-|dx| - |dy|) = exp(-|dx|) exp(-|dy|)``, and in one dimension
  ``sum_j exp(-|x_i - x_j|) w_j`` is two linear scans over sorted positions: a
  running sum that decays by ``exp(-gap)`` between neighbours. In more
  dimensions a divide and conquer on the first coordinate (split at the median,
  recurse on both halves) leaves only the pairs across the split, for which
  ``|x_i - x_j| = |x_i - m| + |m - x_j|`` separates, so the cross term is the same
  problem in one dimension fewer with reweighted sources. Cost
  ``O(n log^d n)``; every factor applied is ``exp`` of a non-positive number, so
  nothing overflows and round-off stays at the level of the summands.
* **Direct** (any dimension): every source for every target, in compiled loops,
  memory O(n). Cost ``O(n_targets * n_sources * d)``.

Both are exact up to floating-point round-off; neither forms a matrix.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial

import numba
import numpy as np
from numpy.typing import NDArray

from calibcore._progress import INTERVAL, Heartbeat

#: Largest dimension for which the divide-and-conquer sweep beats direct sums.
SWEEP_MAX_DIMENSION = 3
#: Subproblems at most this large are summed pair by pair.
_LEAF_SIZE = 16
#: Targets per task of the direct evaluator (bounds the work of one thread).
_DIRECT_CHUNK = 2048


@numba.njit(nogil=True, cache=True)
def _scan_last_dimension(coords, ids, weights):
    """One-dimensional sums on the last coordinate: a forward and a backward decaying scan."""
    m = ids.size
    last = coords.shape[1] - 1
    n_columns = weights.shape[1]
    position = np.empty(m)
    for t in range(m):
        position[t] = coords[ids[t], last]
    order = np.argsort(position, kind="mergesort")
    sums = weights.copy()  # the row itself, at distance 0
    carry = np.zeros(n_columns)
    previous = position[order[0]]
    for t in range(m):
        i = order[t]
        decay = np.exp(previous - position[i])
        previous = position[i]
        for c in range(n_columns):
            carry[c] *= decay
            sums[i, c] += carry[c]
            carry[c] += weights[i, c]
    carry[:] = 0.0
    previous = position[order[m - 1]]
    for t in range(m - 1, -1, -1):
        i = order[t]
        decay = np.exp(position[i] - previous)
        previous = position[i]
        for c in range(n_columns):
            carry[c] *= decay
            sums[i, c] += carry[c]
            carry[c] += weights[i, c]
    return sums


@numba.njit(nogil=True, cache=True)
def _leaf_sums(coords, ids, weights, dim):
    """Pair-by-pair sums over coordinates ``dim..d-1`` of a small subproblem."""
    m = ids.size
    n_dims = coords.shape[1]
    n_columns = weights.shape[1]
    sums = np.zeros((m, n_columns))
    for i in range(m):
        for j in range(m):
            distance = 0.0
            for k in range(dim, n_dims):
                distance += abs(coords[ids[i], k] - coords[ids[j], k])
            kernel = np.exp(-distance)
            for c in range(n_columns):
                sums[i, c] += kernel * weights[j, c]
    return sums


@numba.njit(nogil=True, cache=True)
def _sweep(coords, ids, weights, dim):
    """``sum_j exp(-sum_{k >= dim} |x_ik - x_jk|) w_j`` for every row i of the subset ``ids``."""
    m = ids.size
    n_columns = weights.shape[1]
    if not np.any(weights.ravel() != 0.0):
        return np.zeros((m, n_columns))
    if dim == coords.shape[1] - 1:
        return _scan_last_dimension(coords, ids, weights)
    if m <= _LEAF_SIZE:
        return _leaf_sums(coords, ids, weights, dim)
    position = np.empty(m)
    for t in range(m):
        position[t] = coords[ids[t], dim]
    order = np.argsort(position, kind="mergesort")
    half = m // 2
    pivot = position[order[half]]
    sums = np.empty((m, n_columns))
    # Explicit loops, not fancy indexing (ids[left], sums[left] = ...): the same values,
    # and the recursive function compiles in half the time.
    for start, stop in ((0, half), (half, m)):
        part_ids = np.empty(stop - start, dtype=ids.dtype)
        part_weights = np.empty((stop - start, n_columns))
        for t in range(start, stop):
            part_ids[t - start] = ids[order[t]]
            for c in range(n_columns):
                part_weights[t - start, c] = weights[order[t], c]
        part = _sweep(coords, part_ids, part_weights, dim)
        for t in range(start, stop):
            for c in range(n_columns):
                sums[order[t], c] = part[t - start, c]
    # Across the split |x_i - x_j| = |x_i - pivot| + |pivot - x_j|: each side's factor
    # goes into its source weights (left sources in the first q columns, right ones in
    # the last q), the rest is the same problem on the remaining coordinates.
    factor = np.empty(m)
    for i in range(m):
        factor[i] = np.exp(-abs(position[i] - pivot))
    cross_weights = np.zeros((m, 2 * n_columns))
    for t in range(m):
        j = order[t]
        offset = 0 if t < half else n_columns
        for c in range(n_columns):
            cross_weights[j, offset + c] = weights[j, c] * factor[j]
    cross = _sweep(coords, ids, cross_weights, dim + 1)
    for t in range(m):
        i = order[t]
        offset = n_columns if t < half else 0
        for c in range(n_columns):
            sums[i, c] += factor[i] * cross[i, offset + c]
    return sums


@numba.njit(nogil=True, cache=True)
def _direct_sums(targets, sources, weights, out):
    """``out_i = sum_j exp(-||t_i - s_j||_1) w_j`` for every target and source."""
    n_dims = targets.shape[1]
    n_columns = weights.shape[1]
    for i in range(targets.shape[0]):
        for j in range(sources.shape[0]):
            distance = 0.0
            for k in range(n_dims):
                distance += abs(targets[i, k] - sources[j, k])
            kernel = np.exp(-distance)
            for c in range(n_columns):
                out[i, c] += kernel * weights[j, c]


def _sweep_sums(
    targets: NDArray[np.float64], sources: NDArray[np.float64], weights: NDArray[np.float64],
    same_rows: bool,
) -> NDArray[np.float64]:
    if same_rows:
        coords, source_weights = targets, weights
    else:
        # Targets join as rows of zero weight; the sums computed for sources are dropped.
        coords = np.concatenate([targets, sources])
        source_weights = np.concatenate([np.zeros((targets.shape[0], weights.shape[1])), weights])
    ids = np.arange(coords.shape[0])
    sums = _sweep(np.ascontiguousarray(coords), ids, np.ascontiguousarray(source_weights), 0)
    return sums[: targets.shape[0]]


def _direct_chunks(
    targets: NDArray[np.float64], sources: NDArray[np.float64], weights: NDArray[np.float64]
) -> list[Callable[[], NDArray[np.float64]]]:
    """One task per block of targets, all filling the same output array."""
    out = np.zeros((targets.shape[0], weights.shape[1]))

    def block_task(block: slice) -> Callable[[], NDArray[np.float64]]:
        def task() -> NDArray[np.float64]:
            _direct_sums(targets[block], sources, weights, out[block])
            return out

        return task

    return [block_task(slice(start, start + _DIRECT_CHUNK))
            for start in range(0, targets.shape[0], _DIRECT_CHUNK)]


def kernel_sums(
    problems: Sequence[tuple[NDArray[np.float64], NDArray[np.float64] | None, NDArray[np.float64]]],
    *,
    n_threads: int | None = None,
    progress: Callable[[int], None] | None = None,
) -> list[NDArray[np.float64]]:
    """Exact Laplace-kernel sums for several independent problems (e.g. one per confidence bin).

    Parameters
    ----------
    problems : sequence of (targets, sources, weights)
        ``targets`` (m_t, d) and ``sources`` (m_s, d) hold coordinates already
        divided by the bandwidth; ``sources=None`` means the targets are the
        sources (each row then counts itself, with kernel 1). ``weights`` is
        (m_s, q).
    n_threads : int, optional
        Worker threads (the compiled kernels release the GIL); default: CPU count.
    progress : callable, optional
        Called with the number of problems finished so far, when one finishes and
        every 0.25 s or so while waiting for one. If it raises, the queued work is
        dropped and the exception propagates at once (tasks already running finish
        in the background; their results are discarded).

    Returns
    -------
    list of ndarray of shape (m_t, q)
        ``sum_j exp(-||t_i - s_j||_1) w_j`` for each problem, in order.
    """
    tasks: list[tuple[int, float, Callable[[], NDArray[np.float64]]]] = []
    for index, (targets, sources, weights) in enumerate(problems):
        same_rows = sources is None
        source_coords = targets if sources is None else sources
        n_targets, n_sources = targets.shape[0], source_coords.shape[0]
        if n_targets == 0 or n_sources == 0:
            tasks.append((index, 0.0, partial(np.zeros, (n_targets, weights.shape[1]))))
        elif targets.shape[1] <= SWEEP_MAX_DIMENSION:
            size = float(n_targets + n_sources)
            cost = size * np.log2(size + 1.0) ** targets.shape[1]
            tasks.append((index, cost, partial(_sweep_sums, targets, source_coords, weights,
                                               same_rows)))
        else:
            chunks = _direct_chunks(np.ascontiguousarray(targets),
                                    np.ascontiguousarray(source_coords),
                                    np.ascontiguousarray(weights))
            cost = float(min(n_targets, _DIRECT_CHUNK) * n_sources * targets.shape[1])
            tasks.extend((index, cost, chunk) for chunk in chunks)
    # Largest tasks first keeps the threads evenly busy.
    tasks.sort(key=lambda task: -task[1])
    remaining = np.bincount([index for index, _, _ in tasks], minlength=len(problems))
    results: list[NDArray[np.float64]] = [np.empty((0, 0))] * len(problems)
    workers = n_threads or os.cpu_count() or 1
    heartbeat = Heartbeat(progress, 0)
    pool = ThreadPoolExecutor(max_workers=workers)
    futures = [(index, pool.submit(task)) for index, _, task in tasks]
    try:
        finished = 0
        for index, future in futures:
            while True:
                try:
                    results[index] = future.result(timeout=INTERVAL)
                    break
                except TimeoutError:
                    heartbeat()
            remaining[index] -= 1
            if remaining[index] == 0:
                finished += 1
                heartbeat.now(finished)
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown()
    return results
