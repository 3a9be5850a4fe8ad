"""Sorting the scores of many rows once for every measure that needs them sorted.

The overview's requests (measures, smooth reliability diagram, bin sensitivity) sort
the same scores of the same rows, often at the same time. :func:`sort_order` remembers
``np.argsort``'s order by the scores' bytes; :func:`stable_sort_order` derives the
stable order from it (ties in row order) with one sort of integer keys, several times
faster than a stable sort of the floats. Both are exactly NumPy's orders, so nothing
computed from them changes. :func:`sort_view_ahead` sorts a view's scores on a thread
of its own before anyone asks (a server does it while it stores an upload).
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from concurrent.futures import Future

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
    key = hashlib.blake2b(values.data, digest_size=32).digest()  # no copy of them
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
    """``np.argsort(scores, kind="stable")``: ties in row order. From
    :data:`SORT_MEMO_MIN_ROWS` scores on it is read off :func:`sort_order`'s (remembered)
    order: each row's key is the rank of its distinct score times n plus its row, and the
    sorted keys modulo n are the rows in stable order (the keys are distinct, so any sort
    of them gives that one order)."""
    if not SORT_MEMO_MIN_ROWS <= scores.size <= SORT_MEMO_MAX_ROWS:
        return np.argsort(scores, kind="stable")
    order = sort_order(scores)
    n = scores.size
    ordered = scores[order]
    rank = np.empty(n, dtype=np.int64)
    rank[0] = 0
    np.cumsum(ordered[1:] != ordered[:-1], out=rank[1:])  # equal scores (0.0, -0.0) tie
    key = np.empty(n, dtype=np.int64)
    key[order] = rank
    key *= n
    key += np.arange(n, dtype=np.int64)
    key.sort()
    return (key % n).astype(np.intp, copy=False)


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
           "stable_sort_order"]
