"""Permutation test of VECE: is a variable's miscalibration more than noise?

Shuffling V against the (confidence, error) pairs keeps the bin sizes (equal-mass
bins over the same multiset of values, or the same categories) and sends a
uniformly random subset of rows of each size to each bin. So one permutation is
a shuffle of the residuals ``predicted error - error`` cut into consecutive
segments of the bin sizes, and the null distribution depends only on the
residuals and the bin sizes: variables sharing both (e.g. complete numeric
columns) share one null, computed once per :class:`NullCache`. Variables sharing only the
rows (complete numeric columns whose ties move a bin edge by a row or two) share the
shuffles: each permutation is drawn once and cut by every variable's bin sizes, giving
each variable the null it would get alone, to the last bit.

With row weights the null is the same permutation of V against the rows, each row keeping
its (confidence, error, weight): the weight that lands in each value of V changes, so the
equal-weight bins of a numeric variable are found again for each permutation
(:func:`weighted_permuted_vece`); a categorical one keeps its bins' row counts. The null
then depends on the residuals, the weights and where V ties (its sorted values' runs).

The shuffle itself is compiled in :mod:`calibcore.variable._shuffle`.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import Executor, Future, ThreadPoolExecutor

import numba
import numpy as np
from numpy.typing import NDArray

from calibcore.variable._binning import integer_weights, qcut_levels
from calibcore.variable._pcg64 import pcg64_words
from calibcore.variable._shuffle import descending_segment_sums, shuffle_segment_sums

#: Relative slack when comparing permuted with observed statistics, so that
#: permutations equal to the observed value up to summation order count as ">=".
_TIE_TOLERANCE = 1e-9
#: numpy draws swap targets from 32-bit words up to this many rows.
_MAX_32_BIT_ROWS = 1 << 32
#: From this many rows a null's permutations are drawn on every core (one shuffle of
#: 1.5M rows takes 0.12 s; 200 of them on one core were most of a ranking's time).
PARALLEL_MIN_ROWS = 200_000
#: Permutations per chunk (per stream) when drawn on every core.
PARALLEL_CHUNK = 25


class NullCache:
    """Permutation nulls of one ranking, keyed by rows and bin sizes, each drawn once.

    The draws run on ``pool`` (a single background thread: in the order submitted),
    so the caller can smooth curves meanwhile; the compiled shuffle releases the GIL.
    Unweighted nulls are held until :meth:`start`: nulls of the same rows are then drawn
    together, one shuffle per permutation cut by each one's bin sizes
    (:func:`permuted_veces`). ``drawn()`` is called after each permutation of each null
    (for progress; it may raise to stop, and so does setting ``stop``).
    """

    def __init__(self, pool: Executor, stop: threading.Event,
                 drawn: Callable[[], None]) -> None:
        self._pool = pool
        self._stop = stop
        self._drawn = drawn
        self._nulls: dict[tuple[bytes, tuple[object, ...]], Future[NDArray[np.float64]]] = {}
        self._held: dict[tuple[bytes, int, int | None], _HeldNulls] = {}

    def submit(
        self,
        residual: NDArray[np.float64],
        used: NDArray[np.bool_],
        sizes: NDArray[np.intp],
        n_permutations: int,
        random_state: int | None,
    ) -> Future[NDArray[np.float64]]:
        """Null VECE values for ``residual`` (the used rows) cut into bins of ``sizes``,
        drawn once :meth:`start` is called."""
        rows = np.packbits(used).tobytes()
        key = (rows, tuple(int(size) for size in sizes))
        if key not in self._nulls:
            held = self._held.setdefault((rows, n_permutations, random_state),
                                         _HeldNulls(residual, n_permutations, random_state))
            self._nulls[key] = held.add(sizes)
        return self._nulls[key]

    def start(self) -> None:
        """Draw the held nulls, those of the same rows together, in the order submitted."""
        for held in self._held.values():
            drawing = self._pool.submit(held.draw, self._heartbeat)
            drawing.add_done_callback(held.cancel_if_cancelled)
        self._held = {}

    def submit_weighted(
        self,
        residual: NDArray[np.float64],
        weights: NDArray[np.float64],
        used: NDArray[np.bool_],
        sorted_values: NDArray[np.float64] | None,
        sizes: NDArray[np.intp] | None,
        n_bins: int,
        n_permutations: int,
        random_state: int | None,
    ) -> Future[NDArray[np.float64]]:
        """Null weighted VECE values (:func:`weighted_permuted_vece`) of the used rows:
        equal-weight bins over ``sorted_values`` (numeric) or fixed bins of ``sizes``
        rows (categorical, ``sorted_values`` None); drawn at once."""
        if sorted_values is not None:
            runs = np.flatnonzero(np.diff(sorted_values) > 0)
            shape: tuple[object, ...] = ("numeric", n_bins, runs.tobytes())
        else:
            shape = ("categorical", tuple(int(size) for size in np.asarray(sizes)))
        key = (np.packbits(used).tobytes(), shape)
        if key not in self._nulls:
            self._nulls[key] = self._pool.submit(
                weighted_permuted_vece, residual, weights, sorted_values, sizes, n_bins,
                n_permutations, random_state, self._heartbeat)
        return self._nulls[key]

    @property
    def n_nulls(self) -> int:
        return len(self._nulls)

    def _heartbeat(self) -> None:
        if self._stop.is_set():
            raise NullStopped
        self._drawn()


class _HeldNulls:
    """Nulls of the same rows waiting to be drawn together, and their futures."""

    def __init__(self, residual: NDArray[np.float64], n_permutations: int,
                 random_state: int | None) -> None:
        self.residual = residual
        self.n_permutations = n_permutations
        self.random_state = random_state
        self.sizes: list[NDArray[np.intp]] = []
        self.futures: list[Future[NDArray[np.float64]]] = []

    def add(self, sizes: NDArray[np.intp]) -> Future[NDArray[np.float64]]:
        self.sizes.append(sizes)
        self.futures.append(Future())
        return self.futures[-1]

    def draw(self, heartbeat: Callable[[], None]) -> None:
        try:
            nulls = permuted_veces(self.residual, self.sizes, self.n_permutations,
                                   self.random_state, heartbeat)
        except BaseException as error:
            for future in self.futures:
                future.set_exception(error)
            raise
        for future, null in zip(self.futures, nulls, strict=True):
            future.set_result(null)

    def cancel_if_cancelled(self, drawing: Future[None]) -> None:
        """A draw cancelled before it started (the pool shut down): so are its nulls."""
        if drawing.cancelled():
            for future in self.futures:
                future.cancel()


def compile_shuffle() -> None:
    """Compile the shuffle kernels (once per process; a tiny call afterwards): two cuts,
    so the second cut's sums are compiled too."""
    permuted_veces(np.zeros(2), [np.array([1, 1]), np.array([2])], 1, 0)


class NullStopped(Exception):
    """The ranking ended (an error or a cancel elsewhere): the draws stop too."""


def permuted_vece(
    residual: NDArray[np.float64],
    sizes: NDArray[np.intp],
    n_permutations: int,
    random_state: int | None,
    heartbeat: Callable[[], None] | None = None,
) -> NDArray[np.float64]:
    """VECE of ``n_permutations`` random assignments of rows to bins of ``sizes``.

    Each permutation is one in-place shuffle of the residuals, exactly
    ``numpy.random.Generator.shuffle`` (same swaps from the same stream, so the same
    null), cut into consecutive segments of the bin sizes. On large inputs the
    shuffle waits on memory (each swap touches a random row); the compiled shuffle
    loads the targets of the next swaps early and sums the segments as rows settle.
    From :data:`PARALLEL_MIN_ROWS` rows the permutations are drawn in chunks of
    :data:`PARALLEL_CHUNK` on every core, chunk c shuffling with the c-th stream
    spawned from ``random_state`` (so the null depends on the seed, not on the cores).
    ``heartbeat`` is called after each permutation (it may raise to stop).
    """
    return permuted_veces(residual, [sizes], n_permutations, random_state, heartbeat)[0]


def permuted_veces(
    residual: NDArray[np.float64],
    all_sizes: list[NDArray[np.intp]],
    n_permutations: int,
    random_state: int | None,
    heartbeat: Callable[[], None] | None = None,
) -> NDArray[np.float64]:
    """:func:`permuted_vece` for several cuts of the same rows, from the same shuffles:
    row k of the result (shape (len(all_sizes), n_permutations)) equals
    ``permuted_vece(residual, all_sizes[k], ...)`` bit for bit, for one shuffle per
    permutation instead of one per cut. ``heartbeat`` is called after each permutation
    of each cut."""
    return _drawn_in_chunks(_permuted_veces, (residual, all_sizes), residual.size,
                            n_permutations, random_state, heartbeat)


def _drawn_in_chunks(
    draw: Callable[..., NDArray[np.float64]],
    arguments: tuple[object, ...],
    n_rows: int,
    n_permutations: int,
    random_state: int | None,
    heartbeat: Callable[[], None] | None,
) -> NDArray[np.float64]:
    """``draw(*arguments, n_permutations, random_state, heartbeat)``, a null drawn from one
    stream; from :data:`PARALLEL_MIN_ROWS` rows in chunks of :data:`PARALLEL_CHUNK`
    permutations on every core, chunk c from the c-th stream spawned from
    ``random_state``, concatenated in order."""
    if n_rows < PARALLEL_MIN_ROWS or n_permutations <= PARALLEL_CHUNK:
        return draw(*arguments, n_permutations, random_state, heartbeat)
    counts = [min(PARALLEL_CHUNK, n_permutations - start)
              for start in range(0, n_permutations, PARALLEL_CHUNK)]
    streams = np.random.SeedSequence(random_state).spawn(len(counts))
    pool = ThreadPoolExecutor(max_workers=os.cpu_count() or 1,
                              thread_name_prefix="calibcore-permutation-chunks")
    try:
        chunks = [pool.submit(draw, *arguments, count, stream, heartbeat)
                  for count, stream in zip(counts, streams, strict=True)]
        return np.concatenate([chunk.result() for chunk in chunks], axis=-1)
    finally:  # a raise stops the chunks not started; running ones stop at their heartbeat
        pool.shutdown(wait=True, cancel_futures=True)


Shuffle = Callable[[NDArray[np.float64], NDArray[np.intp], NDArray[np.float64]], None]


def _shuffler(rng: np.random.Generator, n_rows: int) -> tuple[Shuffle, Shuffle]:
    """``shuffle(values, starts, sums)``: ``rng.shuffle(values)`` (the same swaps from the
    same stream) that also fills ``sums`` with the sums of the segments of ``values``
    starting at ``starts``, and ``segment_sums(values, starts, sums)``, the same sums of
    values already shuffled, to the same bits. Compiled below 2^32 rows
    (:func:`calibcore.variable._shuffle.shuffle_segment_sums`, stepping numpy's PCG64
    inline when it can), numpy's own above."""
    next_uint32 = rng.bit_generator.ctypes.next_uint32
    state = rng.bit_generator.ctypes.state_address
    words = pcg64_words(rng)
    inline = words is not None
    if words is None:
        words = (np.zeros(4, dtype=np.uint64), np.zeros(2, dtype=np.uint32))

    def compiled(values: NDArray[np.float64], starts: NDArray[np.intp],
                 sums: NDArray[np.float64]) -> None:
        shuffle_segment_sums(values, starts, sums, next_uint32, state, *words, inline)

    def numpy_shuffle(values: NDArray[np.float64], starts: NDArray[np.intp],
                      sums: NDArray[np.float64]) -> None:
        rng.shuffle(values)
        numpy_sums(values, starts, sums)

    def numpy_sums(values: NDArray[np.float64], starts: NDArray[np.intp],
                   sums: NDArray[np.float64]) -> None:
        sums[:] = np.add.reduceat(values, starts)

    if n_rows < _MAX_32_BIT_ROWS:
        return compiled, descending_segment_sums
    return numpy_shuffle, numpy_sums


def _permuted_veces(
    residual: NDArray[np.float64],
    all_sizes: list[NDArray[np.intp]],
    n_permutations: int,
    random_state: int | np.random.SeedSequence | None,
    heartbeat: Callable[[], None] | None,
) -> NDArray[np.float64]:
    """:func:`permuted_veces` from one stream: the first cut summed by the shuffle as rows
    settle, the others afterwards in the same order."""
    rng = np.random.default_rng(random_state)
    all_starts = [np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.intp)
                  for sizes in all_sizes]
    shuffled = residual.copy()
    null = np.empty((len(all_sizes), n_permutations))
    all_sums = [np.empty(starts.size) for starts in all_starts]
    shuffle, segment_sums = _shuffler(rng, residual.size)
    for draw in range(n_permutations):
        shuffle(shuffled, all_starts[0], all_sums[0])
        for starts, sums in zip(all_starts[1:], all_sums[1:], strict=True):
            segment_sums(shuffled, starts, sums)
        for cut, sums in enumerate(all_sums):
            null[cut, draw] = np.abs(sums).sum()
            if heartbeat is not None:
                heartbeat()
    return null / residual.size


def weighted_permuted_vece(
    residual: NDArray[np.float64],
    weights: NDArray[np.float64],
    sorted_values: NDArray[np.float64] | None,
    sizes: NDArray[np.intp] | None,
    n_bins: int,
    n_permutations: int,
    random_state: int | None,
    heartbeat: Callable[[], None] | None = None,
) -> NDArray[np.float64]:
    """Weighted VECE of ``n_permutations`` random permutations of V against the rows.

    A permutation gives the sorted values of V (``sorted_values``, the rows' V sorted) to
    the rows (residual, weight; every weight positive) in a random order. A numeric
    variable's bins are then the equal-weight bins of that assignment: the edges are the
    weighted quantiles of V (:func:`calibcore.variable._binning.weighted_quantiles`, as the
    observed VECE's) and a bin holds the sorted positions whose value lies at or below its
    edge, so ties stay together. A categorical variable (``sorted_values`` None) keeps its
    bins of ``sizes`` rows. The statistic is ``(1/W) sum_b |sum_{i in b} w_i residual_i|``.
    From :data:`PARALLEL_MIN_ROWS` rows the permutations are drawn in chunks of
    :data:`PARALLEL_CHUNK` on every core, chunk c from the c-th stream spawned from
    ``random_state`` (as :func:`permuted_vece`).
    """
    return _drawn_in_chunks(_weighted_permuted_vece,
                            (residual, weights, sorted_values, sizes, n_bins), residual.size,
                            n_permutations, random_state, heartbeat)


def _weighted_permuted_vece(
    residual: NDArray[np.float64],
    weights: NDArray[np.float64],
    sorted_values: NDArray[np.float64] | None,
    sizes: NDArray[np.intp] | None,
    n_bins: int,
    n_permutations: int,
    random_state: int | np.random.SeedSequence | None,
    heartbeat: Callable[[], None] | None,
) -> NDArray[np.float64]:
    """:func:`weighted_permuted_vece` from one stream."""
    rng = np.random.default_rng(random_state)
    weighted = weights * residual
    levels = qcut_levels(n_bins)
    integer = integer_weights(weights)
    if sorted_values is None:
        fixed = np.concatenate([[0], np.cumsum(np.asarray(sizes))]).astype(np.intp)
        values = np.empty(0)
    else:
        fixed, values = np.empty(0, dtype=np.intp), sorted_values
    cumulative = np.empty(residual.size)
    running = np.empty(residual.size)
    null = np.empty(n_permutations)
    # the rows' order, shuffled again for each permutation as Generator.shuffle does (the
    # compiled shuffle of permuted_vece, on row numbers held as floats: exact below 2^53)
    order = np.arange(residual.size, dtype=np.float64)
    starts, sums = np.zeros(1, dtype=np.intp), np.empty(1)
    shuffle = _shuffler(rng, residual.size)[0]
    for draw in range(n_permutations):
        shuffle(order, starts, sums)
        null[draw] = _permutation_vece(order, weights, weighted, values, fixed, levels,
                                       integer, cumulative, running)
        if heartbeat is not None:
            heartbeat()
    return null


@numba.njit(nogil=True, cache=True)
def _permutation_vece(
    order: NDArray[np.float64],
    weights: NDArray[np.float64],
    weighted: NDArray[np.float64],
    sorted_values: NDArray[np.float64],
    fixed: NDArray[np.intp],
    levels: NDArray[np.float64],
    integer: bool,
    cumulative: NDArray[np.float64],
    running: NDArray[np.float64],
) -> float:
    """The weighted VECE of one permutation: row ``order[k]`` (a row number; its weight and
    ``weighted`` = weight x residual) at sorted position k; bins at the positions ``fixed``
    (categorical) or the equal-weight bins over ``sorted_values`` (numeric, the arithmetic
    of :func:`calibcore.variable._binning.weighted_quantiles`, numpy's lerp included).
    ``cumulative`` and ``running`` are work space of one value per row."""
    n = order.size
    total = 0.0
    summed = 0.0
    for k in range(n):
        row = int(order[k])
        total += weights[row]
        summed += weighted[row]
        cumulative[k] = total
        running[k] = summed
    if fixed.size > 0:
        cuts = fixed
    else:
        last = n - 1
        edges = np.empty(levels.size)
        for j in range(levels.size):
            if integer:
                virtual = (total - 1.0) * levels[j]
                below = np.floor(virtual)
                above = min(below + 1.0, total - 1.0)
                gamma = virtual - below
                low = sorted_values[min(np.searchsorted(cumulative, below, side="right"), last)]
                high = sorted_values[min(np.searchsorted(cumulative, above, side="right"),
                                         last)]
                difference = high - low
                if gamma >= 0.5:
                    edges[j] = high - difference * (1.0 - gamma)
                else:
                    edges[j] = low + difference * gamma
            else:
                position = np.searchsorted(cumulative, levels[j] * total, side="left")
                edges[j] = sorted_values[min(position, last)]
        distinct = np.unique(edges)
        cuts = np.empty(max(distinct.size, 2), dtype=np.intp)
        cuts[0] = 0
        for j in range(1, distinct.size - 1):
            cuts[j] = np.searchsorted(sorted_values, distinct[j], side="right")
        cuts[cuts.size - 1] = n
    statistic = 0.0
    previous = 0.0
    for j in range(1, cuts.size):
        here = running[cuts[j] - 1] if cuts[j] > 0 else 0.0
        statistic += abs(here - previous)
        previous = here
    return statistic / total


def permutation_p_value(observed: float, null: NDArray[np.float64]) -> float:
    """``(1 + #{null >= observed}) / (1 + n_permutations)``."""
    exceed = np.count_nonzero(null >= observed * (1.0 - _TIE_TOLERANCE))
    return float((1 + exceed) / (1 + null.size))
