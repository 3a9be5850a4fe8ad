"""Bagged full-feature trees along a cost-complexity pruning path.

Hidden heterogeneity (Wagstaff & Dietterich 2023, Algorithm 1) fits, for every
probability neighbourhood, the reference's
``RandomForestClassifier(n_estimators=100, max_features=None, oob_score=True,
ccp_alpha=a, random_state=seed)`` for seven values of ``a`` and keeps the best
out-of-bag (OOB) accuracy. The seven forests share their bootstrap samples and
their unpruned trees (scikit-learn grows the ``ccp_alpha=0`` tree and then
prunes it), so this module grows each tree once and derives every pruned
forest from it:

* bootstrap counts are drawn as the forest draws them (legacy
  ``RandomState(seed).randint(0, n, n)``), for all trees at once from the raw
  32-bit stream of each tree seed (masked rejection sampling, as numpy does);
* trees are grown by scikit-learn's own tree builder, so splits, tie-breaks and
  thresholds are the forest's; the private builder objects skip the per-fit
  Python validation, and the public ``DecisionTreeClassifier`` is the fallback;
* minimal cost-complexity pruning (Breiman et al., 1984) runs scikit-learn's
  weakest-link sequence once per tree, with its floating-point operations in its
  order, recording the alpha at which each branch collapses; every alpha's
  pruned tree follows from those thresholds. (Solving "R(t) + alpha <= the best
  cost of the branches" bottom-up is the same in exact arithmetic, but keeps one
  leaf more or fewer than scikit-learn when an effective alpha ties with a
  requested alpha up to rounding: Gini risks of small bootstrap samples are
  ratios of small integers, so such ties are common);
* probabilities are averaged over trees in the forest's order, so OOB
  accuracies and in-sample predictions equal the forest's to the last bit.

Private: callers validate inputs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numba
import numpy as np
from numpy.typing import NDArray
from sklearn.tree import DecisionTreeClassifier

from calibcore._progress import Heartbeat, silent

try:  # scikit-learn's tree builder without the per-fit validation (fallback below)
    from sklearn.tree._criterion import Gini
    from sklearn.tree._splitter import BestSplitter
    from sklearn.tree._tree import DepthFirstTreeBuilder, Tree
except ImportError:  # pragma: no cover - depends on the installed scikit-learn
    Gini = BestSplitter = DepthFirstTreeBuilder = Tree = None

_INT32_MAX = int(np.iinfo(np.int32).max)
#: ``sklearn.tree._utils.RAND_R_MAX``: the splitter seeds its generator with
#: ``random_state.randint(0, RAND_R_MAX)``.
_RAND_R_MAX = 2**31 - 1


@dataclass(frozen=True)
class TreeSeeds:
    """The integer seeds a ``RandomForestClassifier`` gives its trees, with their streams.

    Attributes
    ----------
    seeds : ndarray of shape (n_trees,)
        ``random_state.randint(2**31 - 1)`` drawn once per tree, in order.
    raw : ndarray of shape (n_trees, n_raw), uint32
        The first raw 32-bit outputs of ``RandomState(seed)`` for each tree.
    splitter_seeds : ndarray of shape (n_trees,)
        The seed each tree's splitter draws first from ``RandomState(seed)``.
    """

    seeds: NDArray[np.int64]
    raw: NDArray[np.uint32]
    splitter_seeds: NDArray[np.int64]

    @classmethod
    def draw(cls, random_state: int, n_trees: int, n_raw: int) -> TreeSeeds:
        """Seeds of a forest with ``random_state`` and ``n_raw`` raw outputs per tree."""
        generator = np.random.RandomState(random_state)
        seeds = np.array([generator.randint(_INT32_MAX) for _ in range(n_trees)], dtype=np.int64)
        raw = np.empty((n_trees, n_raw), dtype=np.uint32)
        for tree, seed in enumerate(seeds):
            generator.seed(int(seed))
            raw[tree] = generator.randint(0, 2**32, size=n_raw, dtype=np.uint32)
        splitter_seeds = _bounded(raw, seeds, _RAND_R_MAX, 1)[:, 0]
        return cls(seeds=seeds, raw=raw, splitter_seeds=splitter_seeds)

    def bootstrap_counts(self, n_rows: int) -> NDArray[np.float64]:
        """How often each row is drawn into each tree's bootstrap sample, (n_trees, n_rows)."""
        draws = _bounded(self.raw, self.seeds, n_rows, n_rows)
        offsets = (np.arange(self.seeds.size) * n_rows)[:, None]
        counts = np.bincount((draws + offsets).ravel(), minlength=self.seeds.size * n_rows)
        return counts.reshape(self.seeds.size, n_rows).astype(np.float64)


def _bounded(
    raw: NDArray[np.uint32], seeds: NDArray[np.int64], high: int, count: int
) -> NDArray[np.int64]:
    """``RandomState(seed).randint(0, high, count)`` for every tree, shape (n_trees, count).

    numpy's legacy generator masks each raw output with the smallest all-ones
    mask covering ``high - 1`` and rejects values above ``high - 1``.
    """
    largest = high - 1
    mask = np.uint32((1 << largest.bit_length()) - 1)
    width = min(raw.shape[1], 2 * count + 8 * int(np.sqrt(count)) + 64)
    values = raw[:, :width] & mask
    accepted = values <= largest
    rank = np.cumsum(accepted, axis=1)
    enough = rank[:, -1] >= count
    out = np.empty((seeds.size, count), dtype=np.int64)
    keep = accepted[enough] & (rank[enough] <= count)
    out[enough] = values[enough][keep].reshape(-1, count)
    for tree in np.flatnonzero(~enough):  # rare: the stream ran short
        out[tree] = np.random.RandomState(int(seeds[tree])).randint(0, high, count)
    return out


class _PresetDraw:
    """Stands in for the ``RandomState`` a splitter draws its seed from at each build."""

    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = 0

    def randint(self, low: int, high: int) -> int:
        return self.value


def _grow_private(
    features: NDArray[np.float32],
    targets: NDArray[np.float64],
    n_classes: int,
    weights: NDArray[np.float64],
    splitter_seeds: NDArray[np.int64],
    heartbeat: Heartbeat,
) -> list[Any]:
    classes = np.array([n_classes], dtype=np.intp)
    draw = _PresetDraw()
    # One splitter and builder serve every tree: each build re-initializes them
    # and draws the splitter's seed afresh from ``draw``.
    splitter = BestSplitter(Gini(1, classes), features.shape[1], 1, 0.0, draw, None)
    builder = DepthFirstTreeBuilder(splitter, 2, 1, 0.0, _INT32_MAX, 0.0)
    trees = []
    for tree_weights, seed in zip(weights, splitter_seeds, strict=True):
        heartbeat()
        draw.value = int(seed)
        tree = Tree(features.shape[1], classes, 1)
        builder.build(tree, features, targets, tree_weights, None)
        trees.append(tree)
    return trees


def _grow_public(
    features: NDArray[np.float32],
    labels: NDArray[np.intp],
    weights: NDArray[np.float64],
    seeds: NDArray[np.int64],
    heartbeat: Heartbeat,
) -> list[Any]:
    trees = []
    for tree_weights, seed in zip(weights, seeds, strict=True):
        heartbeat()
        tree = DecisionTreeClassifier(max_features=None, random_state=int(seed))
        trees.append(tree.fit(features, labels, sample_weight=tree_weights).tree_)
    return trees


def grow_trees(
    features: NDArray[np.float32],
    labels: NDArray[np.intp],
    n_classes: int,
    weights: NDArray[np.float64],
    seeds: TreeSeeds,
    *,
    use_private_builder: bool = True,
    heartbeat: Heartbeat | None = None,
) -> list[Any]:
    """Grow one unpruned full-feature Gini tree per row of ``weights``.

    Parameters
    ----------
    features : ndarray of shape (n, d), float32, C-contiguous
    labels : ndarray of shape (n,)
        Class indices ``0 .. n_classes - 1``, every class present.
    n_classes : int
    weights : ndarray of shape (n_trees, n)
        Bootstrap counts (the forest passes them as sample weights).
    seeds : TreeSeeds
    use_private_builder : bool, default=True
        False forces the public ``DecisionTreeClassifier`` path (same trees).
    heartbeat : Heartbeat, optional
        Called before each tree (its callback may raise to cancel).

    Returns
    -------
    list of sklearn ``Tree`` objects, identical to the forest's ``estimators_[i].tree_``.
    """
    heartbeat = heartbeat or silent()
    if use_private_builder and Tree is not None:
        targets = labels.astype(np.float64).reshape(-1, 1)
        try:
            return _grow_private(features, targets, n_classes, weights, seeds.splitter_seeds,
                                 heartbeat)
        except TypeError:  # pragma: no cover - private signatures changed
            pass
    return _grow_public(features, labels, weights, seeds.seeds, heartbeat)


@dataclass(frozen=True)
class GrownTrees:
    """Node arrays of many trees laid end to end (node ids are global).

    Attributes
    ----------
    left, right : ndarray of shape (n_nodes,)
        Global ids of the children, -1 at leaves.
    value : ndarray of shape (n_nodes, n_classes)
        Weighted class fractions of the training rows reaching each node.
    risk : ndarray of shape (n_nodes,)
        R(t) = weighted impurity of the node over the tree's total weight.
    levels : list of ndarray
        Node ids by depth (levels[0] are the roots).
    """

    left: NDArray[np.intp]
    right: NDArray[np.intp]
    value: NDArray[np.float64]
    risk: NDArray[np.float64]
    levels: list[NDArray[np.intp]]

    @classmethod
    def concatenate(
        cls, trees: list[Any], n_classes: int
    ) -> tuple[GrownTrees, NDArray[np.intp]]:
        """Lay ``trees`` end to end; also return each tree's first node id."""
        counts = np.array([tree.node_count for tree in trees], dtype=np.intp)
        offsets = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.intp)
        tree_of_node = np.repeat(np.arange(len(trees)), counts)
        shift = offsets[tree_of_node]
        left = np.concatenate([tree.children_left for tree in trees]).astype(np.intp)
        right = np.concatenate([tree.children_right for tree in trees]).astype(np.intp)
        internal = left >= 0
        left[internal] += shift[internal]
        right[internal] += shift[internal]
        value = np.zeros((counts.sum(), n_classes))
        for tree, offset in zip(trees, offsets, strict=True):
            value[offset:offset + tree.node_count, :tree.value.shape[2]] = tree.value[:, 0, :]
        totals = value.sum(axis=1, keepdims=True)
        if not np.allclose(totals, 1.0):  # scikit-learn < 1.4 stored weighted class counts
            value = value / totals
        weight = np.concatenate([tree.weighted_n_node_samples for tree in trees])
        impurity = np.concatenate([tree.impurity for tree in trees])
        risk = weight * impurity / weight[offsets][tree_of_node]
        return cls(left, right, value, risk, _levels(left, right, offsets)), offsets

    def pruned_leaves(self, alphas: NDArray[np.float64]) -> NDArray[np.intp]:
        """For each node and alpha, the node that is its leaf in the pruned tree.

        Parameters
        ----------
        alphas : ndarray of shape (m,)
            Complexity parameters; 0 leaves the tree unpruned (as scikit-learn).

        Returns
        -------
        ndarray of shape (n_nodes, m)
            The highest ancestor (or the node itself) that minimal cost-complexity
            pruning turns into a leaf, else the node itself.
        """
        alphas = np.asarray(alphas, dtype=np.float64)
        collapse_at = _collapse_alphas(self.left, self.right, self.risk, self.levels[0],
                                       float(alphas.max(initial=0.0)))
        becomes_leaf = (collapse_at[:, None] <= alphas) & (alphas > 0)
        leaf_of = np.repeat(np.arange(self.left.size)[:, None], alphas.size, axis=1)
        for nodes in self.levels:
            nodes = nodes[self.left[nodes] >= 0]
            inherited = leaf_of[nodes]
            absorbed = becomes_leaf[nodes] | (inherited != nodes[:, None])
            for children in (self.left[nodes], self.right[nodes]):
                leaf_of[children] = np.where(absorbed, inherited, children[:, None])
        return leaf_of


@numba.njit(nogil=True, cache=True)
def _collapse_alphas(
    left: NDArray[np.intp],
    right: NDArray[np.intp],
    risk: NDArray[np.float64],
    roots: NDArray[np.intp],
    max_alpha: float,
) -> NDArray[np.float64]:
    """The smallest ``ccp_alpha`` at which scikit-learn's pruning collapses each node.

    Replays ``sklearn.tree._tree._cost_complexity_prune`` per tree: branch risks
    summed leaf by leaf in node order, the weakest link (first node with the
    smallest ``(R(t) - R(T_t)) / (|T_t| - 1)``) pruned one at a time, ancestors
    updated by differences. Pruning goes on while the effective alpha is at most
    ``ccp_alpha``, so node t collapses for every alpha >= the running maximum of the
    effective alphas up to its step; inf where that exceeds ``max_alpha``.
    """
    n_nodes = left.size
    collapse_at = np.full(n_nodes, np.inf)
    parent = np.full(n_nodes, -1, dtype=np.intp)
    for node in range(n_nodes):
        if left[node] >= 0:
            parent[left[node]] = node
            parent[right[node]] = node
    branch = np.zeros(n_nodes)
    n_leaves = np.zeros(n_nodes, dtype=np.intp)
    candidate = left >= 0
    for tree in range(roots.size):
        first = roots[tree]
        last = roots[tree + 1] if tree + 1 < roots.size else n_nodes
        for leaf in range(first, last):
            if left[leaf] >= 0:
                continue
            branch[leaf] = risk[leaf]
            node = leaf
            while node != first:
                node = parent[node]
                branch[node] += risk[leaf]
                n_leaves[node] += 1
        running_max = -np.inf
        while candidate[first]:
            effective = np.inf
            weakest = -1
            for node in range(first, last):
                if candidate[node]:
                    alpha = (risk[node] - branch[node]) / (n_leaves[node] - 1)
                    if alpha < effective:
                        effective, weakest = alpha, node
            running_max = max(running_max, effective)
            if running_max > max_alpha:
                break
            collapse_at[weakest] = running_max
            stack = [weakest]
            while len(stack) > 0:
                node = stack.pop()
                candidate[node] = False
                if left[node] >= 0:
                    stack.append(left[node])
                    stack.append(right[node])
            pruned = n_leaves[weakest] - 1
            n_leaves[weakest] = 0
            difference = risk[weakest] - branch[weakest]
            branch[weakest] = risk[weakest]
            node = weakest
            while node != first:
                node = parent[node]
                n_leaves[node] -= pruned
                branch[node] += difference
    return collapse_at


def _levels(
    left: NDArray[np.intp], right: NDArray[np.intp], roots: NDArray[np.intp]
) -> list[NDArray[np.intp]]:
    levels = [roots]
    frontier = roots
    while True:
        frontier = frontier[left[frontier] >= 0]
        if frontier.size == 0:
            return levels
        frontier = np.concatenate([left[frontier], right[frontier]])
        levels.append(frontier)


def oob_correct(
    value: NDArray[np.float64],
    leaf_of: NDArray[np.intp],
    leaves: NDArray[np.intp],
    out_of_bag: NDArray[np.bool_],
    labels: NDArray[np.intp],
    weights: NDArray[np.float64] | None = None,
) -> NDArray[np.int64] | NDArray[np.float64]:
    """Rows whose out-of-bag prediction is right (OOB accuracy x n), for every alpha;
    with ``weights`` (shape (n,)), the sum of those rows' weights.

    Parameters
    ----------
    value : ndarray of shape (n_nodes, n_classes)
    leaf_of : ndarray of shape (n_nodes, m)
        From :meth:`GrownTrees.pruned_leaves`.
    leaves : ndarray of shape (n_trees, n)
        Global id of the unpruned leaf of each training row in each tree.
    out_of_bag : ndarray of shape (n_trees, n)
        Rows left out of each tree's bootstrap sample.
    labels : ndarray of shape (n,)

    Returns
    -------
    ndarray of shape (m,)
    """
    n_rows = leaves.shape[1]
    n_alphas = leaf_of.shape[1]
    # (tree, row) pairs in tree-major order: bincount then adds each row's trees
    # one by one in the forest's order, as scikit-learn accumulates them.
    tree_index, row_index = np.nonzero(out_of_bag)
    per_pair = value[leaf_of[leaves[tree_index, row_index]]]
    bins = (np.arange(n_alphas)[:, None] * n_rows + row_index).ravel()
    totals = np.stack([
        np.bincount(bins, weights=per_pair[:, :, k].T.ravel(), minlength=n_alphas * n_rows)
        for k in range(value.shape[1])
    ], axis=1)
    n_oob = np.bincount(row_index, minlength=n_rows)
    n_oob[n_oob == 0] = 1  # as scikit-learn: rows never out of bag predict all zeros
    oob = totals.reshape(n_alphas, n_rows, -1) / n_oob[:, None]
    right = np.argmax(oob, axis=2) == labels
    if weights is None:
        return np.count_nonzero(right, axis=1)
    return right.astype(np.float64) @ weights


def forest_proba(
    value: NDArray[np.float64], leaf: NDArray[np.intp], leaves: NDArray[np.intp]
) -> NDArray[np.float64]:
    """The pruned forest's ``predict_proba`` on its training rows, shape (n, n_classes).

    ``leaf`` is one column of :meth:`GrownTrees.pruned_leaves`; summing over the
    leading (tree) axis adds trees one by one in the forest's order.
    """
    return value[leaf[leaves]].sum(axis=0) / leaves.shape[0]
