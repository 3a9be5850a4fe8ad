"""Leaves of many rows in a forest stored as node arrays, compiled (numba).

Private helper of :class:`calibcore.proximity.TreeEnsemble`: the same walk as
scikit-learn's ``apply`` (a row goes left when its float32 feature value is <=
the node's float64 threshold), in compiled code with no temporaries.

Deep forests make this a memory-latency problem (a 150,000-row forest of 100
fully grown trees has ~5 million nodes), so the walk goes tree by tree, each
tree's nodes staying in cache while every row walks it, and a node's four
fields are packed in one row of a (n_nodes, 4) array, one cache access per
level rather than four. Trees are split between threads (the compiled walk
releases the GIL); every (row, tree) is walked on its own, so the result does
not depend on the number of threads or on how rows are blocked.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numba
import numpy as np
from joblib import effective_n_jobs
from numpy.typing import NDArray

#: Node fields in the packed array (integers are exact in float64 up to 2**53).
_THRESHOLD, _LEFT, _RIGHT, _FEATURE = range(4)


def pack_nodes(left: NDArray[np.int64], right: NDArray[np.int64], feature: NDArray[np.int64],
               threshold: NDArray[np.float64]) -> NDArray[np.float64]:
    """The node arrays as one (n_nodes, 4) array: threshold, left, right, feature."""
    return np.ascontiguousarray(np.column_stack([threshold, left, right, feature]),
                                dtype=np.float64)


# Compiled when the module is imported (a signature makes numba compile eagerly; cached
# on disk after the first time), not in the middle of a job, where a compilation of
# seconds could not be interrupted by a cancel.
@numba.njit("void(float32[:, ::1], float64[:, ::1], int64[::1], int64, int64, int64[:, ::1])",
            nogil=True, cache=True)
def _walk(values: NDArray[np.float32], nodes: NDArray[np.float64], roots: NDArray[np.int64],
          first_tree: int, last_tree: int, out: NDArray[np.int64]) -> None:  # pragma: no cover
    for tree in range(first_tree, last_tree):
        root = roots[tree]
        for row in range(values.shape[0]):
            node = root
            while nodes[node, 1] >= 0:
                if values[row, np.int64(nodes[node, 3])] <= nodes[node, 0]:
                    node = np.int64(nodes[node, 1])
                else:
                    node = np.int64(nodes[node, 2])
            out[row, tree] = node


def forest_leaves(values: NDArray[np.float32], nodes: NDArray[np.float64],
                  roots: NDArray[np.int64], *, n_threads: int = -1) -> NDArray[np.int64]:
    """Global leaf id of every row in every tree, shape (n_rows, n_trees).

    ``nodes`` comes from :func:`pack_nodes`; ``n_threads`` as joblib's ``n_jobs``.
    """
    values = np.ascontiguousarray(values, dtype=np.float32)
    nodes = np.ascontiguousarray(nodes, dtype=np.float64)
    roots = np.ascontiguousarray(roots, dtype=np.int64)
    out = np.empty((values.shape[0], roots.size), dtype=np.int64)
    threads = max(1, min(effective_n_jobs(n_threads), roots.size))
    bounds = np.linspace(0, roots.size, threads + 1).astype(np.int64)
    if threads == 1:
        _walk(values, nodes, roots, 0, roots.size, out)
        return out
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(lambda span: _walk(values, nodes, roots, span[0], span[1], out),
                      zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True)))
    return out
