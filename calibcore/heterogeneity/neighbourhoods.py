"""Hellinger neighbourhoods in the probability simplex.

Step 1 of hidden heterogeneity (Wagstaff & Dietterich 2023, Algorithm 1).

Many query rows share the same neighbourhood; :func:`group_identical_sets`
finds them exactly so that each distinct neighbourhood is processed once.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray
from sklearn.neighbors import KDTree

__all__ = ["group_identical_sets", "hellinger_neighbourhoods", "neighbour_counts"]

#: The reference's NearestNeighbors switches from a k-d tree to brute force
#: (rows in index order) above 15 probability columns or at <= 11 rows.
_KD_TREE_MAX_COLUMNS = 15
_KD_TREE_MIN_ROWS = 12
#: Items (row, neighbour pairs) sorted per block: bounds the time between heartbeats.
_SORT_BLOCK_ITEMS = 1 << 20


def hellinger_neighbourhoods(
    proba_cal: NDArray[np.float64],
    proba_test: NDArray[np.float64],
    radius: float,
    heartbeat: Callable[[], None] | None = None,
) -> tuple[list[NDArray[np.intp]], NDArray[np.intp]]:
    """Calibration rows within Hellinger distance ``radius`` of each query row (inclusive).

    Hellinger distance H(p, q) = ||sqrt(p) - sqrt(q)||_2 / sqrt(2) (Wagstaff & Dietterich 2023,
    eq. 2), so the neighbours are found by a k-d tree on sqrt(p) with radius
    ``radius * sqrt(2)``, as the reference does.

    Parameters
    ----------
    proba_cal : ndarray of shape (n_cal, K)
    proba_test : ndarray of shape (n, K)
    radius : float
    heartbeat : callable, optional
        Called with no arguments between steps (it may raise to stop).

    Returns
    -------
    members : list of ndarray
        The calibration rows of each distinct neighbourhood, ordered as the
        reference's ``NearestNeighbors`` returns them (k-d tree order, or index
        order where it would use brute force).
    groups : ndarray of shape (n,)
        The distinct neighbourhood of each query row.
    """
    heartbeat = heartbeat or _nothing
    index = KDTree(np.sqrt(proba_cal), leaf_size=30)
    found = index.query_radius(np.sqrt(proba_test), r=radius * np.sqrt(2))
    sizes = np.array([rows.size for rows in found], dtype=np.intp)
    flat = np.concatenate([*found, np.empty(0, dtype=np.intp)]).astype(np.intp)
    heartbeat()
    canonical = _sorted_within_rows(flat, sizes, heartbeat)
    heartbeat()
    groups, first = group_identical_sets(canonical, sizes, proba_cal.shape[0], heartbeat)
    n_cal, n_classes = proba_cal.shape
    kd_order = n_classes <= _KD_TREE_MAX_COLUMNS and n_cal >= _KD_TREE_MIN_ROWS
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.intp)
    ordered = flat if kd_order else canonical
    members = [ordered[starts[row]:starts[row] + sizes[row]] for row in first]
    return members, groups


def neighbour_counts(
    proba_cal: NDArray[np.float64], proba_test: NDArray[np.float64], radius: float
) -> NDArray[np.intp]:
    """How many calibration rows lie within Hellinger distance ``radius`` of each query
    row (what :func:`hellinger_neighbourhoods` would list, without listing them)."""
    index = KDTree(np.sqrt(proba_cal), leaf_size=30)
    counts = index.query_radius(np.sqrt(proba_test), r=radius * np.sqrt(2), count_only=True)
    return np.asarray(counts, dtype=np.intp)


def _nothing() -> None:
    """The default heartbeat."""


def _sorted_within_rows(
    flat: NDArray[np.intp], sizes: NDArray[np.intp], heartbeat: Callable[[], None]
) -> NDArray[np.intp]:
    """Each row's items sorted (rows laid end to end), in blocks of whole rows."""
    out = np.empty_like(flat)
    ends = np.cumsum(sizes)
    start_row, start = 0, 0
    while start_row < sizes.size:
        # whole rows up to about _SORT_BLOCK_ITEMS items (at least one row)
        stop_row = max(start_row + 1,
                       int(np.searchsorted(ends, start + _SORT_BLOCK_ITEMS, side="right")))
        stop = int(ends[stop_row - 1])
        owner = np.repeat(np.arange(stop_row - start_row, dtype=np.int64),
                          sizes[start_row:stop_row])
        span = int(flat[start:stop].max(initial=0)) + 1
        keys = np.sort(owner * span + flat[start:stop])
        out[start:stop] = keys - owner * span
        start_row, start = stop_row, stop
        heartbeat()
    return out


def group_identical_sets(
    canonical: NDArray[np.intp],
    sizes: NDArray[np.intp],
    n_items: int,
    heartbeat: Callable[[], None] | None = None,
) -> tuple[NDArray[np.intp], NDArray[np.intp]]:
    """Group rows whose sets of items are identical, exactly.

    Parameters
    ----------
    canonical : ndarray of shape (sizes.sum(),)
        Each row's items, sorted, rows laid end to end.
    sizes : ndarray of shape (n,)
    n_items : int
    heartbeat : callable, optional
        Called with no arguments between steps (it may raise to stop).

    Returns
    -------
    groups : ndarray of shape (n,)
        Group id of each row.
    first : ndarray of shape (n_groups,)
        A row of each group.

    Notes
    -----
    Rows are bucketed by (size, two random 64-bit set hashes); every row is then
    compared item by item with its bucket's first row, and any row that
    differs (a hash collision) gets a group of its own, so grouping is exact.
    """
    heartbeat = heartbeat or _nothing
    n_rows = sizes.size
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.intp)
    digests = _set_digests(canonical, starts, sizes, n_items)
    heartbeat()
    table = np.column_stack([sizes.astype(np.uint64), digests])
    _, first, groups = np.unique(table, axis=0, return_index=True, return_inverse=True)
    groups = groups.ravel().astype(np.intp)
    within = np.arange(canonical.size) - np.repeat(starts, sizes)
    owner = np.repeat(np.arange(n_rows), sizes)
    heartbeat()
    mine = canonical
    theirs = canonical[np.repeat(starts[first[groups]], sizes) + within]
    heartbeat()
    differs = np.bincount(owner[mine != theirs], minlength=n_rows) > 0
    if differs.any():
        extra = np.flatnonzero(differs)
        groups[extra] = first.size + np.arange(extra.size)
        first = np.concatenate([first, extra])
    return groups, first.astype(np.intp)


def _set_digests(
    canonical: NDArray[np.intp], starts: NDArray[np.intp], sizes: NDArray[np.intp], n_items: int
) -> NDArray[np.uint64]:
    """Two order-free 64-bit hashes per set: sums (mod 2**64) of fixed random item keys."""
    keys = np.random.default_rng(20_240_601).integers(0, 2**63, size=(n_items, 2), dtype=np.uint64)
    digests = np.zeros((sizes.size, 2), dtype=np.uint64)
    filled = sizes > 0
    if canonical.size:
        digests[filled] = np.add.reduceat(keys[canonical], starts[filled], axis=0)
    return digests
