"""Leaves of many rows in a forest stored as node arrays, compiled (numba).

Private helper of :class:`calibcore.heterogeneity.TreeEnsemble`: the same walk as
scikit-learn's ``apply`` (a row goes left when its float32 feature value is <=
the node's float64 threshold), in compiled code with no temporaries.

Deep forests make this a memory-latency problem (a 150,000-row forest of 100
fully grown trees has ~5 million nodes), so the walk goes tree by tree, each
tree's nodes staying in cache while every row walks it, and a node's four
fields are packed in one row of a (n_nodes, 4) array, one cache access per
level rather than four. Within a tree, rows walk in blocks of :data:`_LANES` side by
side with no branch per level (leaves point to themselves), which overlaps their
steps and avoids mispredicted branches. Trees are split between threads (the compiled
walk releases the GIL); every (row, tree) ends at its own leaf whatever the blocks, so
the result does not depend on the number of threads or on how rows are blocked.
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
    """The node arrays as one (n_nodes, 4) array: threshold, left, right, feature.

    A leaf (``left < 0``) points to itself on both sides (feature 0, threshold +inf), so
    the walk can take one more step from a leaf without a branch and stay there.
    """
    leaf = left < 0
    own = np.arange(left.size)
    return np.ascontiguousarray(np.column_stack([
        np.where(leaf, np.inf, threshold), np.where(leaf, own, left),
        np.where(leaf, own, right), np.where(leaf, 0, feature)]), dtype=np.float64)


#: Rows walking a tree side by side, and levels they step between checks for the end:
#: independent steps overlap, and a step with no branch cannot be mispredicted (about
#: 13 ns per level before, a branch per level; 1.5 to 2.5 times faster).
_LANES = 8
_STEPS = 4


# Compiled on first use (under a second; loaded from numba's cache after the first time)
# rather than eagerly at import: an explicit signature would make every process that
# imports calibcore, the server's included, set up numba's compiler (0.4 s of CPU).
@numba.njit(nogil=True, cache=True)
def _walk(values: NDArray[np.float32], nodes: NDArray[np.float64], roots: NDArray[np.int64],
          first_tree: int, last_tree: int, out: NDArray[np.int64]) -> None:  # pragma: no cover
    current = np.empty(_LANES, dtype=np.int64)
    for tree in range(first_tree, last_tree):
        root = roots[tree]
        for start in range(0, values.shape[0], _LANES):
            width = min(_LANES, values.shape[0] - start)
            for lane in range(width):
                current[lane] = root
            moved = True
            while moved:
                moved = False
                for _ in range(_STEPS):
                    for lane in range(width):
                        node = current[lane]
                        left = values[start + lane, np.int64(nodes[node, 3])] <= nodes[node, 0]
                        step = np.int64(nodes[node, 1]) if left else np.int64(nodes[node, 2])
                        moved |= step != node
                        current[lane] = step
            for lane in range(width):
                out[start + lane, tree] = current[lane]


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
