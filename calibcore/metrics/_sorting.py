"""Sorting the scores of many rows once for every measure that needs them sorted.

The overview's requests (measures, smooth reliability diagram, bin sensitivity) sort
the same scores of the same rows, often at the same time. :func:`sort_order` remembers
``np.argsort``'s order by the scores' bytes; :func:`stable_sort` derives the stable
order from it (ties in row order) by sorting the rows of each run of ties, several
times faster than a stable sort of the floats. Both are exactly NumPy's orders, so nothing
computed from them changes. :func:`sort_view_ahead` sorts a view's scores on a thread
of its own before anyone asks (a server does it while it stores an upload).
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from concurrent.futures import Future

import numba
import numpy as np
from numpy.typing import NDArray

from calibcore.data.views import View, score_outcome

#: From this many scores :func:`sort_order` remembers its orders (below, the sort costs
#: less than the hash that finds it again).
SORT_MEMO_MIN_ROWS = 100_000
#: Most positions :func:`sort_order` keeps, over its orders (the most recently used;
#: 64 MiB of int64); a longer order is not kept.
SORT_MEMO_MAX_ROWS = 8_000_000
_sort_memo: OrderedDict[bytes, tuple[Future[NDArray[np.intp]], int]] = OrderedDict()
_sort_memo_guard = threading.Lock()


def sort_order(scores: NDArray[np.float64]) -> NDArray[np.intp]:
    """``np.argsort(scores)``, remembered by the scores' bytes from
    :data:`SORT_MEMO_MIN_ROWS` scores on: the measures, the smooth reliability diagram and
    the other requests of one page sort the same scores of the same rows, often at the
    same time (a caller that finds the sort under way waits for it). The order is the
    very array ``np.argsort`` gives (the same default sort of the same values), read-only.
    """
    if not SORT_MEMO_MIN_ROWS <= scores.size <= SORT_MEMO_MAX_ROWS:
        return np.argsort(scores)
    values = np.ascontiguousarray(scores, dtype=np.float64)
    # SHA-256 of the bytes, without copying them (with the CPU's SHA instructions about
    # 1.4 GB/s, twice BLAKE2b's: 8 against 15 ms for 1.5M scores, on each lookup)
    key = hashlib.sha256(values.data).digest()
    with _sort_memo_guard:
        entry = _sort_memo.get(key)
        sorting = entry is None
        if entry is None:
            entry = _sort_memo[key] = (Future(), values.size)
            while sum(size for _, size in _sort_memo.values()) > SORT_MEMO_MAX_ROWS:
                _sort_memo.popitem(last=False)
        else:
            _sort_memo.move_to_end(key)
    found = entry[0]
    if not sorting:
        return found.result()
    try:
        order = np.argsort(values)
    except BaseException as error:
        found.set_exception(error)
        with _sort_memo_guard:
            if _sort_memo.get(key) is entry:
                del _sort_memo[key]
        raise
    order.flags.writeable = False
    found.set_result(order)
    return order


def stable_sort_order(scores: NDArray[np.float64]) -> NDArray[np.intp]:
    """``np.argsort(scores, kind="stable")``: ties in row order (:func:`stable_sort`)."""
    return stable_sort(scores)[0]


def stable_sort(scores: NDArray[np.float64]) -> tuple[NDArray[np.intp], NDArray[np.float64]]:
    """``np.argsort(scores, kind="stable")`` and the scores in that order. From
    :data:`SORT_MEMO_MIN_ROWS` scores on it is read off :func:`sort_order`'s (remembered)
    order: equal scores sit side by side there, in some order, so sorting the rows of
    each run of equal scores puts ties in row order, which is the stable order (runs of
    one need nothing). One compiled pass reads the sorted scores as it goes: 0.04-0.05 s
    on 1.5M scores with runs of every length, where ranking the scores, sorting
    rank-and-row keys and gathering the scores took 0.07 s."""
    if not SORT_MEMO_MIN_ROWS <= scores.size <= SORT_MEMO_MAX_ROWS:
        order = np.argsort(scores, kind="stable")
        return order, scores[order]
    values = np.ascontiguousarray(scores, dtype=np.float64)
    order, ordered, long_runs = _rows_of_ties_sorted(values, sort_order(values))
    for start, stop in long_runs.tolist():
        order[start:stop].sort()
        ordered[start:stop] = values[order[start:stop]]
    return order, ordered


#: Runs of ties up to this long are sorted by insertion in the compiled pass; longer
#: ones by NumPy (numba's quicksort took 0.85 s on one run of 750k rows that NumPy sorts
#: in 7 ms).
_INSERTION_MAX_RUN = 64


@numba.njit(nogil=True, cache=True)
def _rows_of_ties_sorted(scores: NDArray[np.float64], order: NDArray[np.intp]
                         ) -> tuple[NDArray[np.intp], NDArray[np.float64], NDArray[np.int64]]:
    """``order`` (an ascending order of ``scores``) with each run of equal scores (0.0
    and -0.0 are equal; NaN equals nothing) of at most :data:`_INSERTION_MAX_RUN` rows
    sorted by row, the scores in that order (a run's read again once sorted: its -0.0
    and 0.0 where the rows put them), and the (start, stop) of the longer runs, left for
    the caller."""
    n_rows = order.size
    stable = order.copy()
    ordered = np.empty(n_rows, dtype=np.float64)
    long_runs = np.empty((n_rows // (_INSERTION_MAX_RUN + 1) + 1, 2), dtype=np.int64)
    n_long = 0
    if n_rows == 0:
        return stable, ordered, long_runs[:0]
    start = 0
    first = scores[order[0]]
    for position in range(1, n_rows + 1):
        value = scores[order[position]] if position < n_rows else first
        if position < n_rows and value == first:
            continue
        if position - start > _INSERTION_MAX_RUN:
            long_runs[n_long, 0] = start
            long_runs[n_long, 1] = position
            n_long += 1
        elif position - start > 1:
            for placed in range(start + 1, position):
                row = stable[placed]
                into = placed
                while into > start and stable[into - 1] > row:
                    stable[into] = stable[into - 1]
                    into -= 1
                stable[into] = row
            for tied in range(start, position):
                ordered[tied] = scores[stable[tied]]
        else:
            ordered[start] = first
        start = position
        first = value
    return stable, ordered, long_runs[:n_long]


def sort_view_ahead(labels: NDArray[np.intp], proba: NDArray[np.float64],
                    view: View) -> threading.Thread | None:
    """Start sorting the scores of each of ``view``'s problems on a daemon thread (the
    sort :func:`sort_order` remembers, which the measures, the smooth reliability diagram
    and the bin-sensitivity curves of the view then find done or under way); the thread,
    or None when there are too few or too many rows for the sort to be remembered.

    Validated inputs. A server calls it once an upload's rows are read, so the sort runs
    on the core the rest of the upload (the table's write to the store) leaves idle."""
    if not SORT_MEMO_MIN_ROWS <= labels.size <= SORT_MEMO_MAX_ROWS:
        return None

    def sort() -> None:
        for scores in score_outcome(labels, proba, view).scores:
            sort_order(scores)

    thread = threading.Thread(target=sort, name="sort-ahead", daemon=True)
    thread.start()
    return thread


__all__ = ["SORT_MEMO_MAX_ROWS", "SORT_MEMO_MIN_ROWS", "sort_order", "sort_view_ahead",
           "stable_sort", "stable_sort_order"]
