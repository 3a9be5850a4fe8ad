"""The remembered sorts are NumPy's own orders (so nothing computed from them changes)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from calibcore.metrics._sorting import (
    SORT_MEMO_MIN_ROWS,
    sort_order,
    stable_sort,
    stable_sort_order,
)


def test_sort_order_is_numpys_argsort_remembered_and_shared() -> None:
    rng = np.random.default_rng(11)
    proba = rng.uniform(size=(SORT_MEMO_MIN_ROWS + 1, 2)).round(3)  # many ties
    column = proba[:, 1]  # a strided view, as the positive view's scores are
    first = sort_order(column)
    assert first.tolist() == np.argsort(column).tolist()
    assert sort_order(column.copy()) is first  # the same values: found again
    assert not first.flags.writeable
    other = proba[:, 0]
    with ThreadPoolExecutor(3) as pool:  # concurrent callers: one sort, one answer
        orders = list(pool.map(lambda _: sort_order(other), range(3)))
    assert orders[0] is orders[1] is orders[2]
    assert orders[0].tolist() == np.argsort(other).tolist()
    small = column[:1000]
    assert sort_order(small).tolist() == np.argsort(small).tolist()


@pytest.mark.parametrize("decimals", [0, 1, 3, 4, 5, 12])
def test_stable_order_is_numpys_stable_argsort(decimals: int) -> None:
    # ties in row order, whichever order the quicksort left them in; 0.0 and -0.0 tie;
    # runs of ties of every length (decimals 0: ~50,000 rows, 4: ~10, 12: none)
    rng = np.random.default_rng(decimals)
    scores = rng.uniform(size=SORT_MEMO_MIN_ROWS + 7).round(decimals)
    scores[::97] = 0.0
    scores[::101] = -0.0
    expected = np.argsort(scores, kind="stable")
    assert stable_sort_order(scores).tolist() == expected.tolist()
    order, ordered = stable_sort(scores)
    assert order.tolist() == expected.tolist()
    # the scores in that order, bit for bit (each tie's own zero sign included)
    assert np.array_equal(ordered.view(np.int64), scores[expected].view(np.int64))
    assert stable_sort_order(scores[:500]).tolist() == np.argsort(scores[:500],
                                                                  kind="stable").tolist()


def test_a_view_sorted_ahead_is_found_by_the_measures() -> None:
    # the server sorts the default view's scores while it stores an upload; the measures'
    # sort of the same scores (view_problems) must then be that very order, numpy's
    from calibcore.data.views import score_outcome
    from calibcore.metrics import sort_view_ahead, view_problems

    rng = np.random.default_rng(5)
    positive = rng.uniform(size=SORT_MEMO_MIN_ROWS + 3).round(4)
    proba = np.column_stack([1.0 - positive, positive])
    labels = (rng.uniform(size=positive.size) < positive).astype(np.intp)
    thread = sort_view_ahead(labels, proba, "positive")
    assert thread is not None
    thread.join()
    scores = score_outcome(labels, proba, "positive").scores[0]
    ahead = sort_order(scores)
    assert ahead.tolist() == np.argsort(scores).tolist()
    problem = view_problems(labels, proba, "positive")[0]
    assert problem.order is ahead  # found, not sorted again
    assert sort_view_ahead(labels[:100], proba[:100], "positive") is None  # not remembered
